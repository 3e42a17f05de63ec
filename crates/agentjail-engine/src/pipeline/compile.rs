//! A language with a toolchain (`[languages.<lang>]`, crate::policy::toolchain): the
//! compile step in a jail of its own, then the run step in the policy's jail with only the
//! compile's output.
//!
//! ```text
//! compile jail: /app/main.cpp (read-only) → compiler → /app/out (a capped tmpfs)
//!                          collected from the held fd of /app/out (never a link, a device,
//!                          a second name of a file; within the output cap)
//! run jail:     /app/bin/<each collected file> (read-only, in the jail's read-only root)
//!               argv from `run`; stdin as any job's
//! ```
//!
//! The compile jail is fresh for its job and has the policy's root, binds, landlock and
//! seccomp base, plus process spawning (a compiler driver starts its passes), a bigger /tmp
//! and the language's compile limits; no network whatever the policy says. Nothing else of
//! it crosses: its /tmp and everything else go with its mount namespace. In the run jail the
//! artifact is a file of the root tmpfs, which is read-only once the root is built and is
//! not mounted noexec (its other files are 0444): the artifact is written 0555, so exactly
//! it is executable; /tmp and /app/out stay noexec. Landlock already grants read and
//! execute beneath /app (agentjail's own read-only files).
//!
//! Interpreted toolchain languages (bash) have no compile step: the program file is placed
//! read-only at /app/<entrypoint> and the run argv names it (`{source}`).
//!
//! Both jails take the job's files late (agentjail_jail::plan::LateFiles): each step's plan
//! holds none of the job's bytes, only room for them under /app; the jail builds its whole
//! root, waits with it still writable, the files are written into it, and only then is the
//! root sealed and the program started. So a step's plan is the same for every job of its
//! language (unless the job brings input files or hints), and `serve`'s engine can start
//! the jail before the job exists ([`JailSource::warm`]); `run` starts it for the job, the
//! same way. The record says which (`compile.jail_start`, `jail_start`).

use crate::contract::Action;
use crate::pipeline::compile_cache::{CompileStore, Stored, StoredFile};
use crate::pipeline::record::{
    stopped, CompileRecord, Phase, RecordError, Recorder, StopReason, Stopped, ToolchainRef,
};
use crate::pipeline::source::{JailSource, Start};
use crate::plan::{JailPlan, LateFile, LateFiles, MountOp};
use crate::policy::toolchain::{Found, Toolchain, COMPILE_GROUPS};
use crate::policy::{ArtifactsPolicy, Bytes, Policy};
use agentjail_jail::launch::{JailRun, StartedJail};
use agentjail_jail::supervise::{Delivery, Io, Outcome};
use serde_json::{json, Value};
use std::time::Instant;

/// Where the compile step writes, in its jail (`{out}`), and the artifact (`{binary}`).
pub const COMPILE_OUT: &str = "/app/out";
/// Where the run jail holds the compile step's output (`{out}` there).
pub const RUN_BIN: &str = crate::pipeline::compile_cache::RUN_DIR;
/// The artifact's name in both directories.
pub const BINARY: &str = "main";

/// Address space Go's runtime reserves beyond the memory limit when RLIMIT_AS, not a memory
/// cgroup, bounds the jail (dropped at launch with a memory cgroup), as node's
/// (crate::pipeline::source::JS_ADDRESS_SPACE_HEADROOM). Measured here: Go 1.19's page
/// allocator reserves ~650 MiB at start (it cannot start under 704 MiB). 1 GiB covers it and
/// bounds what a Go program can hold without a memory cgroup to the memory limit plus 1 GiB
/// (4 GiB let a Go balloon reach 5 GiB of host memory under a 1 GiB limit as nobody:
/// tests/pipeline/lang_attacks.rs).
pub const GO_ADDRESS_SPACE_HEADROOM: u64 = 1024 * 1024 * 1024;
/// The JVM's (javac's too): its reservations are its flags' (heap `-Xmx`, every Java
/// thread's `-Xss`, metaspace, class space, code cache) beyond what it touches; judge.toml's
/// run flags (`-Xss64m`, `-Xmx640m`) reserve ~2 GiB with a 1 GiB limit (measured: at limit
/// plus 1 GiB the JVM cannot start its threads, `pthread_create` EAGAIN). The heap itself is
/// held by `-Xmx`; native memory a program allocates (`Unsafe.allocateMemory`) by this cap.
pub const JVM_ADDRESS_SPACE_HEADROOM: u64 = 2 * 1024 * 1024 * 1024;

/// A file the run jail gets: its path under /app, contents and mode.
struct Handed {
    path: String,
    contents: Vec<u8>,
    mode: u32,
}

/// What the run step starts from: its started jail and how it started.
pub struct RunJail {
    pub jail: StartedJail,
    pub start: (Start, u64),
    pub net: Option<crate::netproxy::NetSession>,
    /// The policy the run jail was built with (the budget left after the compile).
    pub policy: Policy,
    pub budget_bound: bool,
}

/// Compile (when the language has a compile step) and start the run jail. `policy` is the
/// job's effective policy, its wall limit already bounded by the run's budget as it stood
/// before the compile; the run jail's is bounded again by what the compile left.
pub fn prepare_run(
    r: &mut Recorder,
    action: &Action,
    policy: &Policy,
    source: &dyn JailSource,
    t: Instant,
) -> Result<RunJail, Stopped> {
    let fail = |r: &mut Recorder, reason: StopReason, message: String| {
        r.error(RecordError::message(message));
        r.phase(
            Phase::Execute,
            false,
            t,
            json!({"language": action.language}),
        );
        stopped(reason, Phase::Execute)
    };
    let language = action.language.as_str();
    let (Some(tc), true) = (
        policy.languages.toolchain(language),
        policy.executes(language),
    ) else {
        return Err(fail(
            r,
            StopReason::LanguageDeniedExecution,
            format!("this policy does not execute {language}"),
        ));
    };
    let Some(found) = tc.found.clone() else {
        // A policy built in code, not loaded: its toolchain was never resolved.
        return Err(fail(
            r,
            StopReason::SandboxUnavailable("toolchain".into()),
            format!("the {language} toolchain was not resolved by the policy loader"),
        ));
    };
    let source_path = format!("/app/{}", action.entrypoint);
    let handed = if tc.has_compile() {
        compile(r, action, policy, tc, &found, source, t)?
    } else {
        vec![Handed {
            path: source_path.clone(),
            contents: action.code.as_bytes().to_vec(),
            mode: 0o444,
        }]
    };
    let mut run_policy = policy.clone();
    let left_ms = budget_left_ms(r, policy)?;
    let budget_bound = left_ms < run_policy.limits.wall_time_ms;
    run_policy.limits.wall_time_ms = run_policy.limits.wall_time_ms.min(left_ms);
    let paths = Paths {
        source: &source_path,
        binary: &format!("{RUN_BIN}/{BINARY}"),
        out: RUN_BIN,
    };
    let argv = paths.substitute(&found.run);
    let (jail, net, start) = start_run(r, (action, source), &run_policy, tc, (argv, handed), t)?;
    Ok(RunJail {
        jail,
        start: (start, t.elapsed().as_micros() as u64),
        net,
        policy: run_policy,
        budget_bound,
    })
}

/// What is left of the run's whole budget, ms (at least 1); `max_seconds` when nothing is.
fn budget_left_ms(r: &Recorder, policy: &Policy) -> Result<u64, Stopped> {
    let budget_us = policy.budget.max_seconds.saturating_mul(1_000_000);
    let spent_us = r.started().elapsed().as_micros() as u64;
    if spent_us >= budget_us {
        return Err(stopped(StopReason::MaxSeconds, Phase::Execute));
    }
    Ok(((budget_us - spent_us) / 1000).max(1))
}

/// The run jail, started (warm when the source has one for its plan), the handed files in
/// it, with the allowlist's proxy when the policy has one.
fn start_run(
    r: &mut Recorder,
    (action, source): (&Action, &dyn JailSource),
    run_policy: &Policy,
    tc: &Toolchain,
    (argv, handed): (Vec<String>, Vec<Handed>),
    t: Instant,
) -> Result<(StartedJail, Option<crate::netproxy::NetSession>, Start), Stopped> {
    let files = late_files(handed);
    let plan = run_plan(run_policy, tc, action, argv).map_err(|e| {
        r.error(RecordError::message(e.to_string()));
        r.phase(Phase::Execute, false, t, Value::Null);
        stopped(
            StopReason::SandboxUnavailable("plan".into()),
            Phase::Execute,
        )
    })?;
    let started = start_step(source, &plan, &files).and_then(|(mut jail, start)| {
        let narrowed = crate::netproxy::narrowed_by(action);
        let net = crate::netproxy::start(run_policy, narrowed, &mut jail)?;
        Ok((jail, net, start))
    });
    started.map_err(|e| {
        r.error(RecordError::of_jail(&e));
        r.phase(Phase::Execute, false, t, Value::Null);
        stopped(
            StopReason::SandboxUnavailable(e.unavailable_control().into()),
            Phase::Execute,
        )
    })
}

/// The placeholders' values in one jail.
struct Paths<'a> {
    source: &'a str,
    binary: &'a str,
    out: &'a str,
}

impl Paths<'_> {
    fn substitute(&self, argv: &[String]) -> Vec<String> {
        argv.iter()
            .map(|a| {
                a.replace("{source}", self.source)
                    .replace("{binary}", self.binary)
                    .replace("{out}", self.out)
            })
            .collect()
    }
}

/// The compile step: its jail, supervised to the end; the record's `compile`; the files it
/// hands on, or the run's end.
fn compile(
    r: &mut Recorder,
    action: &Action,
    policy: &Policy,
    tc: &Toolchain,
    found: &Found,
    source: &dyn JailSource,
    t: Instant,
) -> Result<Vec<Handed>, Stopped> {
    let cl = &tc.compile_limits;
    let left_ms = budget_left_ms(r, policy)?;
    let budget_bound = left_ms < cl.wall_time_ms;
    let source_path = format!("/app/{}", action.entrypoint);
    let paths = Paths {
        source: &source_path,
        binary: &format!("{COMPILE_OUT}/{BINARY}"),
        out: COMPILE_OUT,
    };
    let argv = paths.substitute(&found.compile);
    let mut record = blank_record(action, found, argv.clone());
    let end = |r: &mut Recorder, mut record: CompileRecord, reason: StopReason, detail: Value| {
        record.status = reason.to_string();
        r.sections.compile = Some(record);
        r.phase(Phase::Execute, false, t, detail);
        stopped(reason, Phase::Execute)
    };
    let store = source.compile_store();
    let key = store.map(|_| cache_key(action, tc, found));
    if let Some(hit) = lookup(store, &key) {
        return cached(r, hit, &end);
    }
    let cpolicy = compile_policy(policy, tc, left_ms);
    let widen = address_space_headroom(&action.language);
    let file = source_file(action);
    let (jail, limits) =
        match start_compile((&cpolicy, tc, widen), argv, file, (cl.output.0, source)) {
            Ok((jail, limits, start)) => {
                record.jail_start = Some(start);
                (jail, limits)
            }
            Err((error, reason)) => {
                r.error(error);
                return Err(end(r, record, reason, Value::Null));
            }
        };
    let io = Io {
        stdin_bytes: Some(Vec::new()),
        job_bytes: None,
        stdin_passthrough: None,
        stdout_sink: None,
        stderr_sink: None,
    };
    let (run, teardown) = jail.deliver(&limits, io, source.interrupt(), Delivery::now());
    source.teardown(teardown);
    let o = &run.outcome;
    fill(&mut record, o);
    let detail = json!({"compile_wall_us": o.wall_us, "compile_setup_us": run.setup_us});
    if let Some(reason) = verdict(o, cl.memory.0, budget_bound) {
        return Err(end(r, record, reason, detail));
    }
    if o.exit_code != Some(0) {
        record.status = StopReason::CompileError.to_string();
        remember((store, &key), &record, &[]);
        return Err(end(r, record, StopReason::CompileError, detail));
    }
    let handed = collect(&run, cl.output, &mut record);
    let needs_binary = tc.compile.iter().any(|a| a.contains("{binary}"));
    if handed.is_empty() || (needs_binary && !handed.iter().any(|h| h.mode == 0o555)) {
        r.error(RecordError::message(
            "the compiler exited 0 but left nothing to run in its output directory",
        ));
        return Err(end(r, record, StopReason::CompileError, detail));
    }
    record.status = "ok".into();
    remember((store, &key), &record, &handed);
    r.sections.compile = Some(record);
    Ok(handed)
}

/// The compile cache's key for this job's compile (crate::pipeline::compile_cache): the
/// language's table as loaded, the resolved toolchain and argv, the entrypoint, the bytes.
fn cache_key(action: &Action, tc: &Toolchain, found: &Found) -> String {
    let table = json!({
        "table": serde_json::to_value(tc).unwrap_or(Value::Null),
        "etc_binds": tc.etc_binds,
        "path": found.path,
        "version": found.version,
        "compile": found.compile,
        "run": found.run,
    });
    crate::pipeline::compile_cache::key(
        &action.language,
        &action.entrypoint,
        &table,
        action.code.as_bytes(),
    )
}

/// Keep a compile's outcome when the compiler ended it on its own.
fn remember(
    (store, key): (Option<&dyn CompileStore>, &Option<String>),
    record: &CompileRecord,
    handed: &[Handed],
) {
    let (Some(store), Some(key)) = (store, key) else {
        return;
    };
    let Ok(value) = serde_json::to_value(record) else {
        return;
    };
    if !Stored::storable(&value) {
        return;
    }
    let files = handed
        .iter()
        .map(|h| StoredFile {
            path: h.path.clone(),
            mode: h.mode,
            contents: h.contents.clone(),
        })
        .collect();
    store.put(
        key,
        &Stored {
            record: value,
            files,
        },
    );
}

/// The stored compile under `key`; a stored section that does not read back is a miss
/// (the compile runs).
fn lookup(
    store: Option<&dyn CompileStore>,
    key: &Option<String>,
) -> Option<(CompileRecord, Vec<StoredFile>)> {
    let h = store?.get(key.as_ref()?)?;
    let record = serde_json::from_value::<CompileRecord>(h.record).ok()?;
    Some((record, h.files))
}

/// A stored compile as this job's: its `compile` section marked `cached`, its files handed
/// on, or its compile error as this job's end.
fn cached(
    r: &mut Recorder,
    (mut record, files): (CompileRecord, Vec<StoredFile>),
    end: &dyn Fn(&mut Recorder, CompileRecord, StopReason, Value) -> Stopped,
) -> Result<Vec<Handed>, Stopped> {
    record.cached = true;
    record.jail_start = None;
    if record.status != "ok" {
        let detail = json!({"compile_cached": true});
        return Err(end(r, record, StopReason::CompileError, detail));
    }
    r.sections.compile = Some(record);
    Ok(files
        .into_iter()
        .map(|f| Handed {
            path: f.path,
            contents: f.contents,
            mode: f.mode,
        })
        .collect())
}

/// A `compile` section before the compile ran.
fn blank_record(action: &Action, found: &Found, argv: Vec<String>) -> CompileRecord {
    CompileRecord {
        language: action.language.clone(),
        toolchain: ToolchainRef {
            path: found.path.clone(),
            version: found.version.clone(),
        },
        argv,
        status: String::new(),
        exit_code: None,
        signal: None,
        wall_ms: 0,
        cpu_ms: None,
        peak_memory_bytes: None,
        stdout: String::new(),
        stderr: String::new(),
        stdout_truncated: false,
        stderr_truncated: false,
        stopped_by: None,
        outputs: Vec::new(),
        cached: false,
        jail_start: None,
    }
}

/// The address space the language's runtime (the JVM, also javac's; Go's, also the go
/// tool's) reserves beyond what it uses: its jails' RLIMIT_AS gets it on top of the memory
/// limit where no memory cgroup holds them (0: none).
fn address_space_headroom(language: &str) -> u64 {
    match language {
        "java" => JVM_ADDRESS_SPACE_HEADROOM,
        "go" => GO_ADDRESS_SPACE_HEADROOM,
        _ => 0,
    }
}

/// The compile jail, started (warm when the source has one for its plan): the program file
/// read-only, /app/out of `output` bytes. Returns the jail, the limits it is supervised
/// under and how it started, or the record's error and stop.
fn start_compile(
    (cpolicy, tc, widen): (&Policy, &Toolchain, u64),
    argv: Vec<String>,
    file: LateFile,
    (output, source): (u64, &dyn JailSource),
) -> Result<(StartedJail, crate::plan::SuperviseLimits, Start), (RecordError, StopReason)> {
    let contents = crate::plan::Contents {
        files: &[],
        inputs: &[],
        out: Some((output, 1024)),
    };
    let mut plan = crate::plan::build(cpolicy, argv, &contents, &agentjail_jail::mount::RealHost)
        .map_err(|e| {
        (
            RecordError::message(e.to_string()),
            StopReason::SandboxUnavailable("plan".into()),
        )
    })?;
    bind_etc(&mut plan, tc);
    if widen > 0 {
        plan.widen_address_space(widen);
    }
    plan.late_files = Some(LateFiles {
        dir: APP.into(),
        bytes: code_room(cpolicy),
        inodes: 64,
    });
    let (jail, start) = start_step(source, &plan, &[file]).map_err(|e| {
        (
            RecordError::of_jail(&e),
            StopReason::SandboxUnavailable(e.unavailable_control().into()),
        )
    })?;
    Ok((jail, plan.limits, start))
}

/// The compile jail's late file: the program, read-only at /app/<entrypoint>.
fn source_file(action: &Action) -> LateFile {
    LateFile {
        path: action.entrypoint.clone(),
        contents: action.code.as_bytes().to_vec(),
        mode: 0o444,
    }
}

/// Where both steps take the job's files late (crate::plan::LateFiles).
const APP: &str = "/app";

/// Room for the program file in the root tmpfs: the longest program the policy accepts,
/// at four bytes a character, and a margin.
fn code_room(policy: &Policy) -> u64 {
    (policy.budget.max_code_chars as u64)
        .saturating_mul(4)
        .saturating_add(64 * 1024)
}

/// A step's jail for `plan` (its `late_files` set): one the source started before the job
/// for this very plan (`warm`), else one started now (`cold`); `files` placed in it, then
/// its root sealed and its program started. A warm jail that cannot take the files is
/// ended and a cold one started.
fn start_step(
    source: &dyn JailSource,
    plan: &JailPlan,
    files: &[LateFile],
) -> Result<(StartedJail, Start), agentjail_jail::JailError> {
    if let Some(jail) = source.warm(plan) {
        if let Ok(jail) = jail.place_late(files) {
            return Ok((jail, Start::Warm));
        }
    }
    let jail = agentjail_jail::launch::prepare(plan)?.start()?;
    Ok((jail.place_late(files)?, Start::Cold))
}

/// The handed files as late files beneath /app (their paths are /app/...).
fn late_files(handed: Vec<Handed>) -> Vec<LateFile> {
    handed
        .into_iter()
        .map(|h| LateFile {
            path: h.path.strip_prefix("/app/").unwrap_or(&h.path).to_string(),
            contents: h.contents,
            mode: h.mode,
        })
        .collect()
}

/// The compile jail's policy: the job's, with the compile limits, process spawning, the
/// language's variables, and no network.
fn compile_policy(policy: &Policy, tc: &Toolchain, left_ms: u64) -> Policy {
    let cl = &tc.compile_limits;
    let mut p = policy.clone();
    let l = &mut p.limits;
    l.wall_time_ms = cl.wall_time_ms.min(left_ms);
    l.cpu_time_ms = cl.cpu_time_ms;
    l.memory = cl.memory;
    l.pids = cl.pids;
    l.stdout = cl.stderr;
    l.stderr = cl.stderr;
    l.tmp_size = cl.tmp_size;
    l.tmp_inodes = l.tmp_inodes.max(16_384);
    l.file_size = Bytes(cl.output.0.max(cl.tmp_size.0));
    l.open_files = l.open_files.max(256);
    p.network = crate::policy::Network::default();
    for g in COMPILE_GROUPS {
        if !p.seccomp.allow_groups.iter().any(|a| a == g) {
            p.seccomp.allow_groups.push(g.to_string());
        }
    }
    add_language(&mut p, tc);
    p
}

/// The language's /etc directories (policy::toolchain::Toolchain::etc_binds, checked at
/// load), bound read-only at their place.
fn bind_etc(plan: &mut JailPlan, tc: &Toolchain) {
    for dir in &tc.etc_binds {
        plan.mounts.push(MountOp::BindReadOnly {
            source: dir.clone(),
            target: dir.clone(),
        });
    }
}

/// What a language adds to both its jails: its seccomp groups, its errno syscalls, its
/// variables.
fn add_language(p: &mut Policy, tc: &Toolchain) {
    for g in &tc.allow_groups {
        if !p.seccomp.allow_groups.contains(g) {
            p.seccomp.allow_groups.push(g.clone());
        }
    }
    for n in &tc.errno_syscalls {
        if !p.seccomp.errno_syscalls.contains(n) {
            p.seccomp.errno_syscalls.push(n.clone());
        }
    }
    for (k, v) in &tc.environment {
        p.environment.extra.insert(k.clone(), v.clone());
    }
}

/// The compile's verdict from the kernel's and the supervisor's evidence alone: its wall
/// or CPU limit (`compile_timeout`; `max_seconds` when the run's budget was the smaller),
/// its memory limit, an interrupt of agentjail's; any other stop of the compiler is a
/// `compile_error` (the detail in `stopped_by`). None: the compiler exited on its own.
fn verdict(o: &Outcome, memory: u64, budget_bound: bool) -> Option<StopReason> {
    let reason = crate::verdict::jail_verdict(o, memory)?;
    Some(match reason {
        StopReason::CodeTimeout if budget_bound => StopReason::MaxSeconds,
        StopReason::CodeTimeout | StopReason::CodeCpuLimit => StopReason::CompileTimeout,
        StopReason::CodeMemoryLimit => StopReason::CompileMemoryLimit,
        StopReason::Interrupted(s) => StopReason::Interrupted(s),
        _ => StopReason::CompileError,
    })
}

fn fill(record: &mut CompileRecord, o: &Outcome) {
    record.exit_code = o.exit_code;
    record.signal = o.signal.map(crate::verdict::signal_name);
    record.wall_ms = o.wall_ms;
    record.cpu_ms = o.cpu_ms;
    record.peak_memory_bytes = o.peak_memory_bytes;
    record.stdout = String::from_utf8_lossy(&o.stdout.data).into_owned();
    record.stderr = String::from_utf8_lossy(&o.stderr.data).into_owned();
    record.stdout_truncated = o.stdout.truncated;
    record.stderr_truncated = o.stderr.truncated;
    record.stopped_by = o
        .stop
        .as_ref()
        .map(|s| StopReason::from_stop(s).to_string());
}

/// The compile's output directory, walked from the fd held since its jail started (never
/// a link, a device or a file with a second name; within the output cap): the run jail's
/// files under /app/bin. The artifact `main` is executable; every other file read-only.
fn collect(run: &JailRun, cap: Bytes, record: &mut CompileRecord) -> Vec<Handed> {
    let Some(out) = &run.out else {
        return Vec::new();
    };
    let caps = ArtifactsPolicy {
        max_count: 1000,
        max_file_bytes: cap,
        max_total_bytes: cap,
        inline_max_bytes: Bytes(0),
    };
    let c = crate::artifacts::collect(out, &caps);
    c.artifacts
        .into_iter()
        .map(|a| {
            record
                .outputs
                .push(json!({"path": a.path, "bytes": a.bytes, "sha256": a.sha256}));
            Handed {
                mode: if a.path == BINARY { 0o555 } else { 0o444 },
                path: format!("{RUN_BIN}/{}", a.path),
                contents: a.content,
            }
        })
        .collect()
}

/// The run jail's plan: the policy's jail with the language's groups and variables, the
/// action's input files under /app/in, room for the handed files (late files beneath /app,
/// in the read-only root once it is sealed), argv `run`.
fn run_plan(
    policy: &Policy,
    tc: &Toolchain,
    action: &Action,
    argv: Vec<String>,
) -> Result<JailPlan, crate::plan::BuildError> {
    let mut p = policy.clone();
    add_language(&mut p, tc);
    let files: Vec<crate::plan::JailFile> = action
        .files
        .iter()
        .map(|f| crate::plan::JailFile {
            path: format!("{}/{}", crate::plan::APP_IN, f.path),
            contents: f.contents.clone(),
        })
        .collect();
    let a = &p.artifacts;
    let contents = crate::plan::Contents {
        files: &files,
        inputs: &[],
        out: Some((
            a.max_total_bytes.0,
            a.max_count.saturating_mul(2).saturating_add(16),
        )),
    };
    let mut plan = crate::plan::build(&p, argv, &contents, &agentjail_jail::mount::RealHost)?;
    bind_etc(&mut plan, tc);
    // The compile's output (within its cap) or the program file, and up to 1000 artifacts
    // in their directories (crate::artifacts::collect's count for the compile step).
    let output = tc.compile_limits.output.0.max(code_room(&p));
    plan.late_files = Some(LateFiles {
        dir: APP.into(),
        bytes: output.saturating_add(8 * 1024 * 1024),
        inodes: 2048,
    });
    let links = action
        .files
        .iter()
        .filter_map(|f| Some((f.path.as_str(), f.link.as_deref()?)));
    plan.mounts.extend(crate::plan::link_ops(links));
    let widen = address_space_headroom(&action.language);
    if widen > 0 {
        plan.widen_address_space(widen);
    }
    Ok(plan)
}
