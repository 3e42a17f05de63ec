//! Workspaces: a jail kept across commands, with a writable /workspace, for coding agents
//! (`serve`'s `workspace_*` ops; docs/REFERENCE.md, "Workspaces").
//!
//! A workspace's jail is started like a session's (the policy's plan, from the workspace
//! pool or cold) with two differences: its working directory is /workspace, a tmpfs capped
//! in bytes and inodes by the policy's `[workspace]` (size=, nr_inodes=; noexec, nosuid,
//! nodev like every writable mount), which the host holds open from the jail's start (as
//! /app/out); and its first program is the workspace runner (src/runner/workspace.py), which
//! waits in the session doorbell between commands. Each command (`workspace_exec`) is a
//! frame on a socket the kernel installs in the runner alone (supervise::call, as a session
//! call); the runner forks the command in its own process group with fresh pipes, forwards
//! its output under the caps, enforces its timeout, and kills what it started when it exits
//! (unless `background`). The supervisor holds the hard limits of each command (the
//! timeout plus a grace, the CPU limit, the output caps): one broken ends the workspace.
//!
//! Files go in and out from the host through the held /workspace fd, with openat2
//! (RESOLVE_BENEATH | NO_SYMLINKS | NO_MAGICLINKS | NO_XDEV) at every step: a symlink,
//! a `..` or a mount the code planted is refused, a FIFO or device is never read or
//! written, and a read stops at the cap whatever the file's size says (sparse files).
//!
//! Commands are not statically checked (a shell line is not Python): the jail is the
//! boundary, and every record says so (`decision.reason`: `not_checked`).

mod background;
mod files;

pub use background::{Started, Waited, MAX_BACKGROUND};
pub use files::{MAX_DEPTH, MAX_LIST_ENTRIES};

use super::session::Owner;
use super::{pool, ClientStop, Engine, EngineError, ErrorCode};
use crate::pipeline::record::{
    CommandRef, Execution, ExecutionSource, Phase, PolicyRef, RecordError, Recorder, Sealed,
    StopReason, WorkspaceCommand, WorkspaceRef,
};
use crate::pipeline::session::CallRecord;
use crate::pipeline::stages::Stopped;
use crate::pipeline::stream::{OutputSink, Tap};
use crate::policy::Policy;
use crate::runner::{command_report, CommandReport};
use agentjail_jail::launch::{StartedJail, Teardown};
use agentjail_jail::supervise::{self, CallEnd, Interrupt};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The workspace runner's source and where it sits in the jail (read-only, like /app).
pub const RUNNER: &str = include_str!("../runner/workspace.py");
pub const RUNNER_PATH: &str = "/app/agentjail_workspace.py";
pub use crate::plan::WORKSPACE;

/// How long past its timeout a command may run before the supervisor ends the whole
/// workspace (the runner kills a command at its timeout; this is the backstop).
const GRACE: Duration = Duration::from_secs(2);
/// After a command's forbidden syscall, how long the runner has to kill the jail's other
/// processes and forward what the command printed before the workspace ends (it takes a
/// few milliseconds; past this the jail ends without it).
const FORBIDDEN_REPORT: Duration = Duration::from_millis(500);
/// The longest command line, argv or cwd accepted (bytes).
const MAX_COMMAND_BYTES: usize = 256 * 1024;
const MAX_ARGS: usize = 4096;
const MAX_ENV: usize = 256;
const MAX_ENV_VALUE_BYTES: usize = 32 * 1024;

/// The jail plan of a workspace: the policy's jail, the workspace runner as its program,
/// /workspace a capped tmpfs and its working directory (held open by the host).
pub fn plan(policy: &Policy) -> Result<crate::plan::JailPlan, crate::plan::BuildError> {
    let files = [crate::plan::JailFile {
        path: RUNNER_PATH.into(),
        contents: RUNNER.into(),
    }];
    let contents = crate::plan::Contents {
        files: &files,
        inputs: &[],
        out: None,
    };
    let i = &policy.interpreter;
    let mut argv = vec![i.python.clone()];
    argv.extend(i.python_args.iter().cloned());
    argv.push(RUNNER_PATH.into());
    let mut plan = crate::plan::build(policy, argv, &contents, &agentjail_jail::mount::RealHost)?;
    let w = &policy.workspace;
    plan.mounts.push(crate::plan::MountOp::Tmpfs {
        target: WORKSPACE.into(),
        size_bytes: w.size.0,
        inodes: w.inodes,
        mode: 0o755,
    });
    plan.landlock.read_write.push(WORKSPACE.into());
    plan.cwd = WORKSPACE.into();
    plan.runner_fds = true;
    Ok(plan)
}

/// The plan of a workspace whose /workspace is the host directory `dir`: the workspace
/// plan with its tmpfs replaced by a read-write bind of the directory (nosuid, nodev,
/// noexec, as the tmpfs), and no chmod or create with a set-id mode (seccomp: the files stay
/// on the host, where the mount's nosuid no longer holds).
pub fn host_dir_plan(
    base: &crate::plan::JailPlan,
    dir: &super::hostdir::HostDir,
) -> crate::plan::JailPlan {
    let mut plan = base.clone();
    for op in &mut plan.mounts {
        if matches!(op, crate::plan::MountOp::Tmpfs { target, .. } if target == WORKSPACE) {
            *op = crate::plan::MountOp::BindHostDir {
                root: dir.root.clone(),
                relative: dir.relative.clone(),
                target: WORKSPACE.into(),
            };
        }
    }
    plan.seccomp.deny_setid_modes = true;
    plan
}

/// One `workspace_exec` request, as every front end sends it (serve's op fields; the HTTP
/// and MCP front ends build the same object).
#[derive(Debug, Clone, PartialEq)]
pub struct ExecRequest {
    /// The program and its arguments, or `/bin/sh -c LINE` for a `command`.
    pub argv: Vec<String>,
    /// A shell line (kept for the record), when that is what was sent.
    pub command: Option<String>,
    /// The working directory, /workspace or a directory beneath it.
    pub cwd: String,
    pub stdin: Vec<u8>,
    pub env: Vec<(String, String)>,
    pub timeout_s: Option<f64>,
    pub background: bool,
}

fn bad(message: impl Into<String>) -> EngineError {
    EngineError::new(ErrorCode::BadRequest, message)
}

impl ExecRequest {
    /// From a request object's fields: `command` (a shell line) or `argv` (a list), and
    /// optional `cwd`, `stdin` (text) or `stdin_base64`, `env` (an object of strings),
    /// `timeout_s`, `background`. Unknown fields are the caller's to refuse.
    pub fn from_fields(o: &Map<String, Value>) -> Result<ExecRequest, EngineError> {
        let (argv, command) = match (o.get("command"), o.get("argv")) {
            (Some(Value::String(c)), None) => {
                if c.trim().is_empty() || c.len() > MAX_COMMAND_BYTES || c.contains('\0') {
                    return Err(bad(format!("\"command\" must be a non-blank shell line of at most {MAX_COMMAND_BYTES} bytes without NUL")));
                }
                (
                    vec!["/bin/sh".into(), "-c".into(), c.clone()],
                    Some(c.clone()),
                )
            }
            (None, Some(Value::Array(items))) => (argv_of(items)?, None),
            _ => return Err(bad(
                "send exactly one of \"command\" (a shell line) or \"argv\" (a list of strings)",
            )),
        };
        let cwd = match o.get("cwd") {
            None | Some(Value::Null) => WORKSPACE.to_string(),
            Some(Value::String(c)) => workspace_path(c)
                .map(|rel| match rel.as_str() {
                    "" => WORKSPACE.to_string(),
                    r => format!("{WORKSPACE}/{r}"),
                })
                .ok_or_else(|| {
                    bad(format!(
                        "\"cwd\" {:?} must be /workspace or a normalised path beneath it (no `..`)",
                        agentjail_json::safe_text(c, 200)
                    ))
                })?,
            Some(_) => return Err(bad("\"cwd\" must be a string")),
        };
        Ok(ExecRequest {
            argv,
            command,
            cwd,
            stdin: stdin_of(o)?,
            env: env_of(o.get("env"))?,
            timeout_s: timeout_of(o.get("timeout_s"))?,
            background: match o.get("background") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err(bad("\"background\" must be true or false")),
            },
        })
    }
}

fn argv_of(items: &[Value]) -> Result<Vec<String>, EngineError> {
    let mut argv = Vec::with_capacity(items.len());
    let mut total = 0;
    for a in items {
        let Value::String(s) = a else {
            return Err(bad("\"argv\" must be a list of strings"));
        };
        total += s.len() + 1;
        if s.contains('\0') {
            return Err(bad("an argv string contains NUL"));
        }
        argv.push(s.clone());
    }
    if argv.is_empty() || argv[0].is_empty() || argv.len() > MAX_ARGS || total > MAX_COMMAND_BYTES {
        return Err(bad(format!("\"argv\" must name a program and hold at most {MAX_ARGS} strings, {MAX_COMMAND_BYTES} bytes in all")));
    }
    Ok(argv)
}

fn stdin_of(o: &Map<String, Value>) -> Result<Vec<u8>, EngineError> {
    use base64::Engine as _;
    match (o.get("stdin"), o.get("stdin_base64")) {
        (None | Some(Value::Null), None | Some(Value::Null)) => Ok(Vec::new()),
        (Some(Value::String(s)), None) => Ok(s.as_bytes().to_vec()),
        (None, Some(Value::String(b))) => base64::engine::general_purpose::STANDARD
            .decode(b)
            .map_err(|e| bad(format!("\"stdin_base64\" is not standard base64: {e}"))),
        _ => Err(bad(
            "\"stdin\" must be a string (or \"stdin_base64\" base64), not both",
        )),
    }
}

fn timeout_of(v: Option<&Value>) -> Result<Option<f64>, EngineError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(t) if t.is_finite() && t > 0.0 => Ok(Some(t)),
            _ => Err(bad("\"timeout_s\" must be a positive number")),
        },
        Some(_) => Err(bad("\"timeout_s\" must be a positive number")),
    }
}

/// Why an environment name may not be given to a command, if it may not: only when it is not
/// a name a shell can set. There is no list of refused names. `env` is part of the caller's
/// command, as much the caller's code as the command line: `LD_PRELOAD`, `BASH_ENV`, `HOME`
/// with a planted `.gitconfig` or `TAR_OPTIONS` make programs run what the caller chose, which
/// the caller could have run as the command itself. What contains it is the jail, and what
/// keeps it from reaching anything else is where it goes: only into this command's
/// environment (the runner's `spawn`), never into the runner's, a later command's, or the
/// host's `workspace_put`/`workspace_get` (which take no environment). Nothing the jail sets
/// is needed by the boundary (PATH, HOME, LANG and the proxy variables are conveniences
/// the command may replace for itself), so no name is reserved.
pub fn env_name_problem(name: &str) -> Option<String> {
    let well_formed = !name.is_empty()
        && name.len() <= 128
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !well_formed {
        return Some(format!(
            "env name {:?} is not a name ([A-Za-z_][A-Za-z0-9_]*, at most 128 characters)",
            agentjail_json::safe_text(name, 64)
        ));
    }
    None
}

fn env_of(v: Option<&Value>) -> Result<Vec<(String, String)>, EngineError> {
    let o = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(o)) if o.len() <= MAX_ENV => o,
        Some(_) => {
            return Err(bad(format!(
                "\"env\" must be an object of at most {MAX_ENV} names to strings"
            )))
        }
    };
    let mut env = Vec::with_capacity(o.len());
    for (k, v) in o {
        if let Some(problem) = env_name_problem(k) {
            return Err(EngineError::new(ErrorCode::BadEnv, problem));
        }
        match v {
            Value::String(s) if s.len() <= MAX_ENV_VALUE_BYTES && !s.contains('\0') => {
                env.push((k.clone(), s.clone()))
            }
            _ => {
                return Err(bad(format!(
                    "env {k} must be a string of at most {MAX_ENV_VALUE_BYTES} bytes without NUL"
                )))
            }
        }
    }
    Ok(env)
}

/// A path a client names in the workspace: relative, or absolute under /workspace; the
/// normalised relative path ("" for /workspace itself), or None when it is not one
/// (`..`, `.`, empty components, control characters).
pub fn workspace_path(p: &str) -> Option<String> {
    let rel = if p == WORKSPACE || p == "/workspace/" {
        return Some(String::new());
    } else if let Some(r) = p.strip_prefix("/workspace/") {
        r
    } else if p.starts_with('/') {
        return None;
    } else {
        p
    };
    let rel = rel.strip_suffix('/').unwrap_or(rel);
    if rel.is_empty() || rel.len() > 4096 {
        return None;
    }
    crate::contract::file_path_problem(rel)
        .is_none()
        .then(|| rel.to_string())
}

/// One workspace: its jail, its owner, its timers.
pub struct Workspace {
    pub id: String,
    pub owner: Owner,
    jail: Option<StartedJail>,
    start: crate::pipeline::source::Start,
    policy: Policy,
    policy_ref: PolicyRef,
    started: Instant,
    last_used: Instant,
    execs: u64,
    ended: Option<String>,
    ended_at: Option<Instant>,
    /// The runner's ring after its last command, answered by the next.
    rung: Option<supervise::Rung>,
    /// The network allowlist's proxy for this workspace's jail (src/netproxy.rs), if any:
    /// it lives until the workspace ends, and its limits count over the whole workspace.
    net: Option<crate::netproxy::NetSession>,
    /// The host directory bound at /workspace (`host_dir`), claimed until the jail is gone.
    host_dir: Option<super::hostdir::HostDir>,
    /// Its path, for the records (kept after the claim is let go at the end).
    host_path: Option<String>,
    /// Background commands started and not yet reported ended, by id (background.rs).
    background: HashMap<String, background::Background>,
}

/// What one command came to, as the runner and the supervisor tell it: the input of the
/// one function that makes a command's record ([`exec_record`]).
enum Ran {
    /// The runner reported the command done: its report, the call as supervised, and how
    /// many OOM kills the jail's memory cgroup counted during it (None: no cgroup).
    Done(CommandReport, supervise::CallOutcome, Option<u64>),
    /// The jail ended during the command: the workspace is over.
    Ended(supervise::Outcome),
    /// Refused before it ran (the workspace ended, its budget spent): the reason and why.
    Refused(StopReason, String),
}

impl Workspace {
    fn new(
        id: String,
        owner: Owner,
        (jail, start): (StartedJail, crate::pipeline::source::Start),
        policy: Policy,
        policy_ref: PolicyRef,
        net: Option<crate::netproxy::NetSession>,
    ) -> Workspace {
        let now = Instant::now();
        Workspace {
            id,
            owner,
            jail: Some(jail),
            start,
            policy,
            policy_ref,
            started: now,
            last_used: now,
            execs: 0,
            ended: None,
            ended_at: None,
            rung: None,
            net,
            host_dir: None,
            host_path: None,
            background: HashMap::new(),
        }
    }

    /// Why the workspace should be closed now (idle too long, too old), if it should.
    pub fn expired(&self) -> Option<&'static str> {
        let w = &self.policy.workspace;
        if self.last_used.elapsed() >= Duration::from_secs(w.idle_timeout_seconds) {
            return Some("idle_timeout");
        }
        if self.started.elapsed() >= Duration::from_secs(w.lifetime_seconds) {
            return Some("lifetime");
        }
        None
    }

    /// An ended workspace is forgotten (`unknown_workspace`) this long after it ended.
    pub fn forgotten(&self) -> bool {
        self.ended_at
            .is_some_and(|t| t.elapsed() >= super::session::ENDED_KEPT)
    }

    pub fn is_ended(&self) -> bool {
        self.jail.is_none()
    }

    /// End the workspace: kill its jail (every process in it, background ones included);
    /// the cgroup goes to the caller's teardown.
    pub fn end(&mut self, why: &str) -> Option<Teardown> {
        self.ended.get_or_insert_with(|| why.to_string());
        self.ended_at.get_or_insert_with(Instant::now);
        let teardown = self.jail.take().map(|j| j.end().1);
        self.net = None;
        self.background.clear();
        // Every process of the jail is gone (its init reaped with the pid namespace): the
        // directory may now be another workspace's.
        self.host_dir = None;
        teardown
    }

    fn describe(&self) -> WorkspaceRef {
        WorkspaceRef {
            id: self.id.clone(),
            execs: self.execs,
            jail_start: self.start,
            ended: self.ended.is_some(),
            ended_reason: self.ended.clone(),
            host_dir: self.host_path.clone(),
        }
    }

    /// One command; its record, and the teardown when the workspace ended with it. `out`:
    /// where its output goes as it is read, when the request streams.
    pub fn exec(
        &mut self,
        req: &ExecRequest,
        interrupt: Option<Interrupt<'_>>,
        out: Option<&dyn OutputSink>,
    ) -> (Sealed, Option<Teardown>) {
        let c = CallRecord::new(self.policy_ref.clone());
        let t = Instant::now();
        let ran = self.run(req, interrupt, out);
        self.seal(c, t, req, ran)
    }

    /// The record of a command that came to `ran` (begun at `t`), and the teardown when the
    /// workspace ended with it.
    fn seal(
        &mut self,
        mut c: CallRecord,
        t: Instant,
        req: &ExecRequest,
        ran: Ran,
    ) -> (Sealed, Option<Teardown>) {
        self.last_used = Instant::now();
        // Before the jail may go with the workspace's end below.
        if let Some(j) = &self.jail {
            c.r.set_enforcement(j.enforcement());
        }
        // The requests that ended since the last command (a background process's included)
        // go in this command's record; under deny_is_stop a denial has killed the jail (the
        // proxy's doing, during this command or before it) and ends the workspace.
        let denied = c.network(self.net.as_ref(), &self.policy);
        let mut result = exec_sections(&mut c.r, req, ran, &self.policy, t);
        let teardown = match (&denied, &result) {
            (Some(reason), _) => self.end(&reason.to_string()),
            (None, Err((s, true))) => self.end(&s.reason.to_string()),
            (
                None,
                Err((
                    Stopped {
                        reason: StopReason::InvalidRequest(w),
                        ..
                    },
                    false,
                )),
            ) if w != "workspace_ended" => self.end(w.trim_start_matches("workspace_")),
            _ => None,
        };
        if let Some(reason) = denied {
            let phase = Phase::Execute;
            result = Err((Stopped { reason, phase }, true));
        }
        c.r.sections.workspace = Some(self.describe());
        let record = c.finish(result.map_err(|(stop, _)| stop), &self.policy);
        (record, teardown)
    }

    fn run(
        &mut self,
        req: &ExecRequest,
        interrupt: Option<Interrupt<'_>>,
        out: Option<&dyn OutputSink>,
    ) -> Ran {
        if let Some(refused) = self.refusal() {
            return refused;
        }
        let timeout_ms = self.timeout_ms(req);
        let nonce = agentjail_jail::ids::random_hex(16);
        let frame = exec_frame(req, Some(timeout_ms), &self.policy, &nonce, None);
        let ran = self.call(frame, &nonce, timeout_ms, interrupt, out);
        self.execs += 1;
        ran
    }

    /// A command's timeout: its own `timeout_s`, at most the policy's wall time.
    fn timeout_ms(&self, req: &ExecRequest) -> u64 {
        let lim = &self.policy.limits;
        match req.timeout_s {
            Some(t) => lim.wall_time_ms.min(((t * 1000.0).floor() as u64).max(1)),
            None => lim.wall_time_ms,
        }
    }

    /// Why no command may start now (the workspace ended, its budget spent), if so.
    fn refusal(&self) -> Option<Ran> {
        if let Some(why) = &self.ended {
            return Some(Ran::Refused(
                StopReason::InvalidRequest("workspace_ended".into()),
                format!("the workspace has ended ({why}); start a new one"),
            ));
        }
        if self.execs >= self.policy.workspace.max_execs {
            return Some(Ran::Refused(
                StopReason::InvalidRequest("workspace_max_execs".into()),
                "the workspace ran the most commands its policy allows ([workspace] max_execs)"
                    .into(),
            ));
        }
        if let Some(why) = self.expired() {
            return Some(Ran::Refused(
                StopReason::InvalidRequest(format!("workspace_{why}")),
                format!("the workspace is closed ({why})"),
            ));
        }
        None
    }

    /// One call to the runner (a command, or a wait on a background one) that the runner
    /// should end within `timeout_ms`: the frame sent, the `done` report of `nonce` awaited
    /// under the supervisor's limits.
    fn call(
        &mut self,
        frame: Vec<u8>,
        nonce: &str,
        timeout_ms: u64,
        interrupt: Option<Interrupt<'_>>,
        out: Option<&dyn OutputSink>,
    ) -> Ran {
        let Some(jail) = self.jail.as_ref() else {
            return Ran::Refused(
                StopReason::InvalidRequest("workspace_ended".into()),
                "the workspace has ended".into(),
            );
        };
        let lim = &self.policy.limits;
        // The supervisor's limits are the backstop: the runner stops the command at its
        // timeout and forwards at most the caps.
        let mut limits = crate::pipeline::stages::limits_of(&self.policy);
        limits.wall_time_ms = timeout_ms + GRACE.as_millis() as u64;
        limits.stdout_bytes = lim.stdout.0 + 1;
        limits.stderr_bytes = lim.stderr.0 + 1;
        let ooms = || jail.cgroup().map(|c| c.stats().oom_kills);
        let ooms_before = ooms();
        let mut tap = Tap::new(out);
        let end = supervise::call(
            jail.spawned(),
            frame,
            &|line: &[u8]| crate::runner::is_done_of(line, nonce),
            (
                self.rung.take(),
                supervise::OnForbidden::RunnerReportsFirst(FORBIDDEN_REPORT),
            ),
            &limits,
            jail.cgroup(),
            (interrupt, tap.sinks()),
        );
        drop(tap);
        match end {
            CallEnd::Done(c) => {
                self.rung = c.rung;
                let report = command_report(&c.replies.data, nonce).unwrap_or_default();
                let oom_kills = ooms()
                    .zip(ooms_before)
                    .map(|(after, before)| after.saturating_sub(before));
                Ran::Done(report, c, oom_kills)
            }
            CallEnd::Ended(o) => Ran::Ended(o),
        }
    }
}

/// The frame the runner reads: `AJ1 exec <len> <nonce>` and the request as JSON (a
/// background command's with its id, and no timeout unless it was given one).
fn exec_frame(
    req: &ExecRequest,
    timeout_ms: Option<u64>,
    policy: &Policy,
    nonce: &str,
    command: Option<&str>,
) -> Vec<u8> {
    use base64::Engine as _;
    let env: Map<String, Value> = req
        .env
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let body = json!({
        "argv": req.argv,
        "cwd": req.cwd,
        "env": env,
        "stdin_b64": base64::engine::general_purpose::STANDARD.encode(&req.stdin),
        "timeout_ms": timeout_ms,
        "background": req.background,
        "stdout_cap": policy.limits.stdout.0,
        "stderr_cap": policy.limits.stderr.0,
        "command": command,
    });
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    crate::runner::call_frame(&bytes, nonce)
}

/// The sections of one command's record (the rest is [`CallRecord`]'s, as for a session
/// call): its stop, and whether the jail ended with it (true: the workspace is over).
///
/// `execution` holds the command's exit code or signal and its peak memory (the runner's
/// wait4 of the command: `"source": "runner"`), its wall time and output totals (the
/// runner's), the output itself (as the supervisor captured it) and the CPU time of the
/// whole jail during the command (the kernel's). The stop reason: `success` for exit 0,
/// `code_runtime_error:<n>`, `code_killed:<signal>`, `code_timeout` (the runner stopped it;
/// the workspace lives on), `code_memory_limit` whenever the memory cgroup counted an OOM
/// kill during the command (whatever the exit status or the timeout says), or, when the jail
/// ended, the supervisor's verdict.
fn exec_sections(
    r: &mut Recorder,
    req: &ExecRequest,
    ran: Ran,
    policy: &Policy,
    t: Instant,
) -> Result<(), (Stopped, bool)> {
    r.sections.command = Some(CommandRef::Workspace(WorkspaceCommand {
        argv: req.command.is_none().then(|| req.argv.clone()),
        command: req.command.clone(),
        cwd: req.cwd.clone(),
        background: req.background,
        stdin_bytes: req.stdin.len(),
        env_names: req.env.iter().map(|(k, _)| k.clone()).collect(),
    }));
    r.sections.decision = Some(agentjail_check::Decision::not_checked(
        "workspace commands are not statically checked: the jail is the boundary",
    ));
    let stop = |reason, phase| Stopped { reason, phase };
    match ran {
        Ran::Refused(reason, message) => {
            r.error(RecordError::message(message));
            r.phase(Phase::Plan, false, t, Value::Null);
            Err((stop(reason, Phase::Plan), false))
        }
        Ran::Done(report, c, oom_kills) => {
            let reason = done_reason(&report, oom_kills.unwrap_or(0) > 0);
            let mut execution = done_execution(&report, &c);
            execution.oom_kills = oom_kills;
            if req.background {
                // Its own CPU time (the runner's wait4): the wait's call is not its life.
                execution.cpu_ms = report.cpu_us.map(|us| us / 1000);
                if let Some(s) = &mut execution.source {
                    s.cpu_ms = "runner";
                }
            }
            r.sections.execution = Some(execution);
            let ok = reason.is_success();
            r.phase(Phase::Execute, ok, t, json!({"program_wall_us": c.wall_us}));
            if ok {
                return Ok(());
            }
            Err((stop(reason, Phase::Execute), false))
        }
        Ran::Ended(o) => {
            let reason = crate::verdict::jail_verdict(&o, policy.limits.memory.0)
                .unwrap_or_else(|| StopReason::from_exit(o.exit_code, o.signal));
            let mut execution = Execution::of(&o);
            execution.workspace_ended = Some(true);
            r.sections.execution = Some(execution);
            r.phase(
                Phase::Execute,
                false,
                t,
                json!({"program_wall_us": o.wall_us}),
            );
            Err((stop(reason, Phase::Execute), true))
        }
    }
}

fn done_reason(report: &CommandReport, oom_killed: bool) -> StopReason {
    // The kernel's evidence first: the memory cgroup killed a process of this jail during
    // the command. What the runner saw of it is only the exit status of the command's top
    // process, which says little: a shell whose child was killed exits 137 (or goes on and
    // exits 0), a killed child of a program may surface as any error, a command that hung
    // on the killed process reaches its timeout. The cap stopped it whatever it shows.
    if oom_killed {
        return StopReason::CodeMemoryLimit;
    }
    if report.timed_out == Some(true) {
        return StopReason::CodeTimeout;
    }
    if let Some(sig) = report.signal {
        return StopReason::CodeKilled(crate::verdict::signal_name(sig as i32));
    }
    match report.exit_code {
        Some(0) => StopReason::Success,
        Some(n) => StopReason::CodeRuntimeError(n as i32),
        // No well-formed report: the runner's word is missing, which is the runner's fault.
        None => StopReason::AgentjailError("workspace_runner_report".into()),
    }
}

fn done_execution(report: &CommandReport, c: &supervise::CallOutcome) -> Execution {
    let stdout_total = report
        .stdout_bytes
        .unwrap_or(c.stdout.total)
        .max(c.stdout.total);
    let stderr_total = report
        .stderr_bytes
        .unwrap_or(c.stderr.total)
        .max(c.stderr.total);
    Execution {
        exit_code: report.exit_code.and_then(|n| i32::try_from(n).ok()),
        signal: report.signal.map(|s| crate::verdict::signal_name(s as i32)),
        wall_ms: report.wall_us.unwrap_or(c.wall_us) / 1000,
        cpu_ms: Some(c.cpu_us / 1000),
        // The runner's number: saturating, so a forged one cannot overflow.
        peak_memory_bytes: Some(report.maxrss_kb.map(|k| k.saturating_mul(1024))),
        stdout_bytes: stdout_total,
        stderr_bytes: stderr_total,
        stdout: String::from_utf8_lossy(&c.stdout.data).into_owned(),
        stderr: String::from_utf8_lossy(&c.stderr.data).into_owned(),
        stdout_truncated: stdout_total > c.stdout.data.len() as u64,
        stderr_truncated: stderr_total > c.stderr.data.len() as u64,
        oom_kills: None,
        pids_limit_hits: None,
        timed_out: Some(report.timed_out.unwrap_or(false)),
        source: Some(ExecutionSource {
            exit_code: "runner",
            peak_memory_bytes: "runner",
            cpu_ms: "kernel",
        }),
        workspace_ended: None,
        observed_syscalls: Vec::new(),
        observed_opens: None,
    }
}

fn errno_text(e: i32) -> &'static str {
    match e {
        libc::ELOOP => "symlink",
        libc::EXDEV => "outside",
        libc::ENOENT => "not_found",
        libc::ENOTDIR => "not_a_directory",
        libc::EISDIR => "is_a_directory",
        libc::ENOSPC | libc::EDQUOT => "workspace_full",
        libc::ENXIO | libc::ENODEV => "not_regular",
        libc::EACCES | libc::EPERM => "permission_denied",
        libc::EOVERFLOW => "not_the_jail_user",
        _ => "io_error",
    }
}

fn cpath(s: &str) -> Result<std::ffi::CString, &'static str> {
    std::ffi::CString::new(s).map_err(|_| "bad_path")
}

/// Write `contents` at `rel` beneath the workspace directory `root`: each directory on the
/// way made if missing and opened without following anything (openat2), the file created
/// or truncated only if it is a regular file (O_NONBLOCK: a FIFO planted there is never
/// waited on, and is refused before a byte is written).
fn put_file(root: &OwnedFd, rel: &str, contents: &[u8]) -> Result<(), &'static str> {
    use agentjail_jail::os::{dir, fd};
    let mut parts: Vec<&str> = rel.split('/').collect();
    let leaf = parts.pop().ok_or("bad_path")?;
    let mut at: Option<OwnedFd> = None;
    for part in parts {
        let here = at.as_ref().unwrap_or(root);
        let name = cpath(part)?;
        match dir::mkdir_at(here, &name, 0o755) {
            Ok(()) | Err(libc::EEXIST) => {}
            Err(e) => return Err(errno_text(e)),
        }
        // No O_NOFOLLOW: a symlink here is then RESOLVE_NO_SYMLINKS's ELOOP (`symlink`).
        let flags = libc::O_PATH | libc::O_DIRECTORY;
        at = Some(dir::open_beneath(here, &name, flags, 0).map_err(errno_text)?);
    }
    let here = at.as_ref().unwrap_or(root);
    let flags = libc::O_WRONLY
        | libc::O_CREAT
        | libc::O_TRUNC
        | libc::O_NOFOLLOW
        | libc::O_NONBLOCK
        | libc::O_NOCTTY;
    let file = dir::open_beneath(here, &cpath(leaf)?, flags, 0o644).map_err(errno_text)?;
    let st = dir::stat(&file).map_err(errno_text)?;
    if st.mode & libc::S_IFMT != libc::S_IFREG {
        return Err("not_regular");
    }
    fd::write_all(&file, contents).map_err(errno_text)
}

/// Read `rel` beneath `root`: a regular file only, opened without following anything, at
/// most `cap` bytes read (a sparse file's size is not what bounds the read).
fn get_file(root: &OwnedFd, rel: &str, cap: u64) -> Result<Vec<u8>, &'static str> {
    use agentjail_jail::os::{dir, fd};
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY;
    let file = dir::open_beneath(root, &cpath(rel)?, flags, 0).map_err(errno_text)?;
    let st = dir::stat(&file).map_err(errno_text)?;
    match st.mode & libc::S_IFMT {
        libc::S_IFREG => {}
        libc::S_IFDIR => return Err("is_a_directory"),
        _ => return Err("not_regular"),
    }
    if st.size > cap {
        return Err("too_large");
    }
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    while (out.len() as u64) <= cap {
        match fd::read(&file, &mut buf) {
            Ok(0) => return Ok(out),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => return Err(errno_text(e)),
        }
    }
    Err("too_large")
}

/// Run `f` as the jail's user on the host's side of its files: on a thread whose filesystem
/// uid and gid are the ones the jail's user maps to (agentjail_jail::userns: nobody when
/// agentjail runs as root, else agentjail's own). What the host writes in /workspace is then
/// the jail user's (a file root created would be unmapped there: EOVERFLOW), and the host
/// touches that tree with no more right than the code in the jail has.
fn as_jail_user<T: Send>(f: impl FnOnce() -> T + Send) -> Result<T, EngineError> {
    use agentjail_jail::os::process;
    if process::geteuid() != 0 {
        return Ok(f());
    }
    let (uid, gid) = (
        crate::plan::ROOT_LAUNCH_HOST_UID,
        crate::plan::ROOT_LAUNCH_HOST_GID,
    );
    std::thread::scope(|s| {
        s.spawn(|| {
            process::set_thread_fs_ids(uid, gid)
                .map(|()| f())
                .map_err(|e| {
                    EngineError::new(
                        ErrorCode::Unavailable,
                        format!("cannot take the jail user's file ids: errno {e}"),
                    )
                })
        })
        .join()
        .unwrap_or_else(|_| {
            Err(EngineError::new(
                ErrorCode::Unavailable,
                "the file thread panicked",
            ))
        })
    })
}

impl Workspace {
    fn root(&self) -> Result<&OwnedFd, EngineError> {
        let why = self.ended.as_deref().unwrap_or("ended");
        self.jail.as_ref().and_then(|j| j.out()).ok_or_else(|| {
            EngineError::new(
                ErrorCode::WorkspaceEnded,
                format!("the workspace has ended ({why}); start a new one"),
            )
        })
    }

    /// `workspace_put`: `files` as an action's (`{path, content | content_base64}`, the
    /// policy's [files] caps and path rules; a path may also start with /workspace/). All
    /// are checked before any is written; the first that cannot be written stops the rest.
    pub fn put(&mut self, files: &Value) -> Result<Value, EngineError> {
        let root = self.root()?;
        let mut files = files.clone();
        if let Value::Array(items) = &mut files {
            for f in items.iter_mut() {
                if let Some(Value::String(p)) = f.get_mut("path") {
                    if let Some(rel) = p.strip_prefix("/workspace/") {
                        *p = rel.to_string();
                    }
                }
            }
        }
        let parsed = crate::contract::parse_files(&files, &self.policy.files).map_err(|e| {
            EngineError::new(
                ErrorCode::BadFiles,
                format!("{}: {}", e.reason(), e.message()),
            )
        })?;
        if parsed.iter().any(|f| f.link.is_some()) {
            return Err(EngineError::new(
                ErrorCode::BadFiles,
                "invalid_action:files:link: a workspace's files are written where their path says; link is for a job's input files",
            ));
        }
        let write_all = || {
            let mut written = Vec::with_capacity(parsed.len());
            for f in &parsed {
                put_file(root, &f.path, &f.contents).map_err(|why| {
                    EngineError::new(
                        ErrorCode::PutRefused,
                        format!(
                            "{} ({why}); files before it were written: {}",
                            agentjail_json::safe_text(&f.path, 200),
                            written.len()
                        ),
                    )
                })?;
                written.push(json!({"path": f.path, "bytes": f.contents.len(),
                                    "sha256": crate::digest::sha256_hex(&f.contents)}));
            }
            Ok(written)
        };
        let written = as_jail_user(write_all)??;
        self.last_used = Instant::now();
        Ok(json!({ "files": written }))
    }

    /// `workspace_get`: each path's content, or its `error` (`not_found`, `symlink`,
    /// `is_a_directory`, `not_regular`, `too_large`, `over_budget`, ...), under the policy's
    /// [artifacts] caps.
    pub fn get(&mut self, paths: &Value) -> Result<Value, EngineError> {
        use base64::Engine as _;
        let root = self.root()?;
        let caps = &self.policy.artifacts;
        let list: Vec<&str> = match paths {
            Value::Array(a) if a.len() as u64 <= caps.max_count && !a.is_empty() => {
                a.iter().filter_map(Value::as_str).collect()
            }
            _ => Vec::new(),
        };
        if list.is_empty() || list.len() != paths.as_array().map_or(0, Vec::len) {
            return Err(bad(format!(
                "\"paths\" must be a list of 1 to {} path strings",
                caps.max_count
            )));
        }
        let mut total = 0u64;
        let mut out = Vec::with_capacity(list.len());
        for p in list {
            let Some(rel) = workspace_path(p).filter(|r| !r.is_empty()) else {
                out.push(json!({"path": p, "error": "bad_path"}));
                continue;
            };
            let cap = caps
                .max_file_bytes
                .0
                .min(caps.max_total_bytes.0 - total.min(caps.max_total_bytes.0));
            match as_jail_user(|| get_file(root, &rel, cap))? {
                Ok(content) => {
                    total += content.len() as u64;
                    // A brokered credential's value an upstream echoed into a file leaves
                    // as its marker, as from an artifact (bytes and sha256: what is sent).
                    let secrets = &self.policy.redaction.secrets;
                    let (content, redacted) = crate::redact::scrub_bytes(&content, secrets);
                    let mut f = json!({"path": rel, "bytes": content.len(),
                        "sha256": crate::digest::sha256_hex(&content),
                        "content_base64": base64::engine::general_purpose::STANDARD.encode(&content)});
                    if redacted > 0 {
                        f["redacted"] = json!(redacted);
                    }
                    out.push(f);
                }
                Err("too_large") if cap < caps.max_file_bytes.0 => {
                    out.push(json!({"path": rel, "error": "over_budget"}))
                }
                Err(why) => out.push(json!({"path": rel, "error": why})),
            }
        }
        self.last_used = Instant::now();
        Ok(json!({ "files": out }))
    }
}

/// Every workspace with its owner, kept outside the workspace's lock (a command holds it).
pub(super) type Workspaces = HashMap<String, (Owner, Arc<Mutex<Workspace>>)>;

/// A workspace plan and its warm pool.
pub(super) type PlanAndPool = (Option<Arc<crate::plan::JailPlan>>, Option<Arc<pool::Pool>>);

/// The engine's workspace plan and pool, when the policy enables workspaces.
pub(super) fn start_plan(
    policy: &Policy,
    warm: usize,
    spawner: &Arc<pool::Spawner>,
) -> Result<PlanAndPool, super::StartError> {
    if !policy.workspace.enabled {
        return Ok((None, None));
    }
    let plan = Arc::new(plan(policy).map_err(super::StartError::Workspace)?);
    let pool = (warm > 0).then(|| pool::Pool::holding_refills(Arc::clone(&plan), warm, spawner));
    Ok((Some(plan), pool))
}

impl Engine {
    fn lock_workspaces(&self) -> std::sync::MutexGuard<'_, Workspaces> {
        self.workspaces.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new workspace for `owner`, its policy tightened by `hints`; its id.
    pub fn workspace_start(
        &self,
        hints: Option<&Value>,
        owner: Owner,
    ) -> Result<String, EngineError> {
        self.workspace_start_in(hints, None, owner)
    }

    /// As [`workspace_start`](Self::workspace_start), with /workspace the host directory
    /// `host_dir` (beneath a `[workspace] host_roots` entry; src/engine/hostdir.rs) when
    /// given: always a cold jail (the pool's hold a tmpfs).
    pub fn workspace_start_in(
        &self,
        hints: Option<&Value>,
        host_dir: Option<&str>,
        owner: Owner,
    ) -> Result<String, EngineError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(EngineError::new(
                ErrorCode::Unavailable,
                "agentjail is shutting down",
            ));
        }
        let Some(plan) = &self.workspace_plan else {
            return Err(bad("this policy has no workspaces ([workspace] enabled = false); serve a policy that enables them, such as policies/workspace.toml"));
        };
        let (policy, net_narrowed) = self.hinted(hints)?;
        // As the jail's user: the jail reopens the path with no more right than that (a
        // directory on the way it cannot search is refused here, not at the jail's setup).
        let roots = &self.policy.policy.workspace.host_roots;
        let claimed = match host_dir {
            Some(d) => Some(as_jail_user(|| super::hostdir::claim(d, roots))??),
            None => None,
        };
        let max = policy.workspace.max_per_client;
        let open = |same: &dyn Fn(&Owner) -> bool| {
            let live =
                |w: &Arc<Mutex<Workspace>>| w.try_lock().map(|w| !w.is_ended()).unwrap_or(true);
            let all = self.lock_workspaces();
            all.values().filter(|(o, w)| same(o) && live(w)).count() as u64
        };
        // Held until the workspace is in the map (or the start fails): parallel starts count
        // it (slots.rs).
        let _slot = self
            .workspace_starts
            .reserve(owner, open, max)
            .map_err(|open| EngineError::new(
                ErrorCode::TooManyWorkspaces,
                format!("this client holds {open} open workspaces, the most the policy allows ([workspace] max_per_client); close one first"),
            ))?;
        let (mut jail, start) = self.workspace_jail(plan, claimed.as_ref())?;
        // The allowlist's proxy lives as long as the workspace's jail (src/netproxy.rs).
        let net = crate::netproxy::start(&policy, net_narrowed, &mut jail).map_err(|e| {
            let control = e.unavailable_control();
            EngineError::new(
                ErrorCode::Unavailable,
                format!("sandbox_unavailable:{control}: {e}"),
            )
        })?;
        let id = agentjail_jail::ids::random_hex(16);
        let mut w = Workspace::new(
            id.clone(),
            owner,
            (jail, start),
            policy,
            self.policy_ref.clone(),
            net,
        );
        w.host_path = claimed.as_ref().map(|h| h.path());
        w.host_dir = claimed;
        self.lock_workspaces()
            .insert(id.clone(), (owner, Arc::new(Mutex::new(w))));
        Ok(id)
    }

    /// A started jail for a workspace: warm from the pool for a tmpfs one, cold with its
    /// own plan for a host directory (checked, once started, to hold the claimed directory).
    fn workspace_jail(
        &self,
        plan: &Arc<crate::plan::JailPlan>,
        claimed: Option<&super::hostdir::HostDir>,
    ) -> Result<(StartedJail, crate::pipeline::source::Start), EngineError> {
        let warm = self
            .workspace_pool
            .as_ref()
            .filter(|_| claimed.is_none())
            .and_then(|p| p.take_or_wait(pool::READY_TIMEOUT));
        if let Some((jail, _)) = warm {
            return Ok((jail, crate::pipeline::source::Start::Warm));
        }
        let plan = match claimed {
            Some(dir) => Arc::new(host_dir_plan(plan, dir)),
            None => Arc::clone(plan),
        };
        let jail = self.spawner.start(plan).map_err(|e| {
            EngineError::new(
                ErrorCode::Unavailable,
                format!("sandbox_unavailable:{}: {e}", e.unavailable_control()),
            )
        })?;
        if let Some(dir) = claimed {
            // The bind went through a second open (the jail's own, in its mount namespace):
            // it must have found the directory that was checked and locked.
            let same = jail
                .out()
                .and_then(|fd| agentjail_jail::os::dir::stat(fd).ok())
                .is_some_and(|st| (st.dev, st.ino) == dir.id);
            if !same {
                self.teardown(jail.end().1);
                return Err(EngineError::new(
                    ErrorCode::BadHostDir,
                    format!(
                        "host_dir {:?} changed while the jail was being set up; try again",
                        dir.path()
                    ),
                ));
            }
        }
        Ok((jail, crate::pipeline::source::Start::Cold))
    }

    /// The workspace `id`, if `owner` started it (another client's ids are unknown to it).
    fn workspace(&self, id: &str, owner: Owner) -> Result<Arc<Mutex<Workspace>>, EngineError> {
        let unknown = || {
            EngineError::new(
                ErrorCode::UnknownWorkspace,
                format!(
                    "no workspace {:?} for this caller (its connection on serve, its token over HTTP)",
                    StopReason::suffix(id)
                ),
            )
        };
        let (o, w) = self
            .lock_workspaces()
            .get(id)
            .cloned()
            .ok_or_else(unknown)?;
        if o.connection != owner.connection || o.uid != owner.uid {
            return Err(unknown());
        }
        Ok(w)
    }

    /// Hold the workspace for one request: a command holds it for its whole run; one more
    /// request meanwhile is `workspace_busy` (after a short grace).
    fn hold<T>(
        &self,
        id: &str,
        owner: Owner,
        f: impl FnOnce(&mut Workspace) -> T,
    ) -> Result<T, EngineError> {
        let w = self.workspace(id, owner)?;
        let Some(mut guard) = super::lock_within_grace(&w) else {
            return Err(EngineError::new(
                ErrorCode::WorkspaceBusy,
                "a command is running in this workspace; wait for its response",
            ));
        };
        Ok(f(&mut guard))
    }

    /// One command in a workspace of a client with its own stop (serve's connections).
    pub fn workspace_exec_for(
        &self,
        id: &str,
        req: &ExecRequest,
        owner: Owner,
        stop: Option<&ClientStop>,
    ) -> Result<Sealed, EngineError> {
        self.workspace_exec_streaming(id, req, (owner, stop), None)
    }

    /// As [`Engine::workspace_exec_for`], the command's output handed to `out` as it is read
    /// (crate::pipeline::stream).
    pub fn workspace_exec_streaming(
        &self,
        id: &str,
        req: &ExecRequest,
        (owner, stop): (Owner, Option<&ClientStop>),
        out: Option<&dyn OutputSink>,
    ) -> Result<Sealed, EngineError> {
        let interrupt = stop.map_or(Interrupt::Shutdown(&self.stop_read), ClientStop::interrupt);
        let (record, teardown) = self.hold(id, owner, |w| w.exec(req, Some(interrupt), out))?;
        if let Some(t) = teardown {
            self.teardown(t);
        }
        Ok(record)
    }

    pub fn workspace_put(
        &self,
        id: &str,
        files: &Value,
        owner: Owner,
    ) -> Result<Value, EngineError> {
        self.hold(id, owner, |w| w.put(files))?
    }

    pub fn workspace_get(
        &self,
        id: &str,
        paths: &Value,
        owner: Owner,
    ) -> Result<Value, EngineError> {
        self.hold(id, owner, |w| w.get(paths))?
    }

    pub fn workspace_list(&self, id: &str, path: &str, owner: Owner) -> Result<Value, EngineError> {
        self.hold(id, owner, |w| w.list(path))?
    }

    pub fn workspace_exists(
        &self,
        id: &str,
        path: &str,
        owner: Owner,
    ) -> Result<Value, EngineError> {
        self.hold(id, owner, |w| w.exists(path))?
    }

    pub fn workspace_remove(
        &self,
        id: &str,
        path: &str,
        recursive: bool,
        owner: Owner,
    ) -> Result<Value, EngineError> {
        self.hold(id, owner, |w| w.remove(path, recursive))?
    }

    /// Whether `owner`'s workspace `id` is open; never waits (one running a command is).
    pub fn workspace_open(&self, id: &str, owner: Owner) -> bool {
        self.workspace(id, owner)
            .is_ok_and(|w| w.try_lock().map(|w| !w.is_ended()).unwrap_or(true))
    }

    /// Close a workspace: every process in it is killed, its /workspace is gone.
    pub fn workspace_close(&self, id: &str, owner: Owner) -> Result<bool, EngineError> {
        let w = self.workspace(id, owner)?;
        let _closing = self.closing();
        self.lock_workspaces().remove(id);
        if let Some(t) = w.lock().unwrap_or_else(|e| e.into_inner()).end("closed") {
            self.teardown(t);
        }
        Ok(true)
    }

    /// End every workspace a connection started (it closed), or every one (`None`: the
    /// engine shuts down).
    pub(super) fn end_workspaces(&self, connection: Option<u64>, why: &str) {
        let mine: Vec<Arc<Mutex<Workspace>>> = {
            let mut all = self.lock_workspaces();
            let ids: Vec<String> = all
                .iter()
                .filter(|(_, (o, _))| connection.is_none_or(|c| o.connection == c))
                .map(|(k, _)| k.clone())
                .collect();
            ids.iter()
                .filter_map(|k| all.remove(k))
                .map(|(_, w)| w)
                .collect()
        };
        for w in mine {
            if let Some(t) = w.lock().unwrap_or_else(|e| e.into_inner()).end(why) {
                self.teardown(t);
            }
        }
    }

    /// The janitor's round: close workspaces that idled or lived too long, forget ended
    /// ones after a while.
    pub(super) fn expire_workspaces(&self) {
        let _closing = self.closing();
        let mut forget = Vec::new();
        let mut expired = Vec::new();
        for (k, (_, w)) in self.lock_workspaces().iter() {
            let Ok(guard) = w.try_lock() else { continue };
            if guard.is_ended() {
                if guard.forgotten() {
                    forget.push(k.clone());
                }
            } else if let Some(why) = guard.expired() {
                expired.push((Arc::clone(w), why));
            }
        }
        for id in forget {
            self.lock_workspaces().remove(&id);
        }
        for (w, why) in expired {
            if let Some(t) = w.lock().unwrap_or_else(|x| x.into_inner()).end(why) {
                self.teardown(t);
            }
        }
    }

    /// Open workspaces (for stats).
    pub(super) fn workspace_count(&self) -> usize {
        self.lock_workspaces()
            .values()
            .filter(|(_, w)| w.try_lock().map(|w| !w.is_ended()).unwrap_or(true))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(v: Value) -> Result<ExecRequest, EngineError> {
        ExecRequest::from_fields(v.as_object().unwrap())
    }

    #[test]
    fn a_command_is_a_shell_line_or_an_argv_in_the_workspace() {
        let r = req(json!({"command": "ls -l", "cwd": "/workspace/src/"})).unwrap();
        assert_eq!(r.argv, ["/bin/sh", "-c", "ls -l"]);
        assert_eq!(r.cwd, "/workspace/src");
        let r = req(json!({"argv": ["python3", "-c", "pass"], "stdin_base64": "AAE="})).unwrap();
        assert_eq!(
            (r.cwd.as_str(), r.stdin.as_slice()),
            ("/workspace", &[0u8, 1][..])
        );
        for bad in [
            json!({}),
            json!({"command": "x", "argv": ["x"]}),
            json!({"command": "  "}),
            json!({"argv": []}),
            json!({"argv": [""]}),
            json!({"argv": ["a\u{0}b"]}),
            json!({"command": "x", "cwd": "../etc"}),
            json!({"command": "x", "cwd": "/etc"}),
            json!({"command": "x", "cwd": "a/./b"}),
            json!({"command": "x", "timeout_s": 0}),
            json!({"command": "x", "background": "yes"}),
            json!({"command": "x", "stdin": "a", "stdin_base64": "YQ=="}),
        ] {
            assert!(req(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn env_names_are_checked_for_syntax_only() {
        for name in [
            "",
            "1A",
            "A-B",
            "A=B",
            "BASH_FUNC_f%%",
            "a b",
            &"N".repeat(129),
        ] {
            assert!(env_name_problem(name).is_some(), "{name:?}");
        }
        // The caller's code, like the command: the jail contains what they make run.
        for name in [
            "FOO",
            "my_var",
            "HOME",
            "LANG",
            "PATH",
            "LD_PRELOAD",
            "BASH_ENV",
            "TAR_OPTIONS",
            "GIT_DIR",
            "XDG_CONFIG_HOME",
            "PYTHONSTARTUP",
        ] {
            assert_eq!(env_name_problem(name), None, "{name}");
        }
        let e = req(json!({"command": "x", "env": {"A=B": "/x"}})).unwrap_err();
        assert_eq!(e.code, ErrorCode::BadEnv);
    }

    #[test]
    fn workspace_paths_stay_beneath_it() {
        assert_eq!(workspace_path("/workspace").as_deref(), Some(""));
        assert_eq!(workspace_path("/workspace/a/b").as_deref(), Some("a/b"));
        assert_eq!(workspace_path("a/b/").as_deref(), Some("a/b"));
        for bad in [
            "/etc/passwd",
            "..",
            "a/../b",
            "/workspace/../etc",
            "a//b",
            "/workspacex/a",
        ] {
            assert_eq!(workspace_path(bad), None, "{bad}");
        }
    }

    /// get and put on a host directory standing in for /workspace: a FIFO is neither waited
    /// on nor written, a sparse file is refused on its size and never read past the cap,
    /// a symlink anywhere on the way is refused.
    #[test]
    fn files_are_moved_without_following_or_waiting() {
        use std::os::unix::fs::symlink;
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::File::open(d.path()).map(OwnedFd::from).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(d.path().join("fifo"))
            .status()
            .unwrap();
        assert!(made.success());
        assert_eq!(get_file(&root, "fifo", 1 << 20), Err("not_regular"));
        assert_eq!(put_file(&root, "fifo", b"x"), Err("not_regular"));
        let sparse = std::fs::File::create(d.path().join("sparse")).unwrap();
        sparse.set_len(1 << 40).unwrap();
        assert_eq!(get_file(&root, "sparse", 1 << 20), Err("too_large"));
        symlink("/etc", d.path().join("link")).unwrap();
        assert_eq!(put_file(&root, "link/x", b"x"), Err("symlink"));
        assert_eq!(get_file(&root, "link/passwd", 1 << 20), Err("symlink"));
        assert_eq!(put_file(&root, "a/b/c.txt", b"abc"), Ok(()));
        assert_eq!(get_file(&root, "a/b/c.txt", 3), Ok(b"abc".to_vec()));
        assert_eq!(get_file(&root, "a/b/c.txt", 2), Err("too_large"));
    }
}
