//! `agentjail exec`: the jail alone, for shells and systemd units.

use agentjail_engine::pipeline::record::{
    self, Execution, Phase, RecordError, Recorder, StopReason,
};
use agentjail_engine::plan::JailPlan;
use agentjail_engine::policy::{parse_bytes, Bytes, Policy};
use agentjail_jail::supervise::{Io, Outcome};
use agentjail_jail::JailError;
use serde_json::json;
use std::path::PathBuf;

pub struct ExecArgs {
    pub policy: Policy,
    pub policy_path: String,
    pub policy_sha256: String,
    pub record: Option<PathBuf>,
    pub time_limit: Option<f64>,
    pub memory_limit: Option<String>,
    pub output_limit: Option<u64>,
    /// `--artifacts-dir`: the command runs in /app/out, whose files are copied here.
    pub artifacts_dir: Option<agentjail_engine::artifacts::ArtifactsDir>,
    pub print_plan: bool,
    pub cmd: Vec<String>,
}

/// Exit codes of the fixed command-line contract (docs/ARCHITECTURE.md, docs/REFERENCE.md).
pub const EXIT_STOPPED: i32 = 124;
pub const EXIT_SETUP: i32 = 125;

/// A flag of `exec` that cannot be honoured (exit 125, before any jail).
#[derive(Debug, Clone, PartialEq)]
pub enum FlagError {
    /// `--time-limit` outside (0, 86400] seconds.
    TimeLimit(f64),
    /// `--memory-limit` that is not a size (the parser's reason).
    MemoryLimit(agentjail_engine::policy::BytesError),
    /// `--memory-limit` below 16 MiB.
    MemoryTooSmall(String),
}

impl std::fmt::Display for FlagError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FlagError::TimeLimit(t) => {
                write!(f, "--time-limit {t}: give seconds between 0.001 and 86400")
            }
            FlagError::MemoryLimit(e) => write!(f, "--memory-limit: {e}"),
            FlagError::MemoryTooSmall(m) => write!(
                f,
                "--memory-limit {m}: below 16MiB nothing starts; give at least 16MiB"
            ),
        }
    }
}

impl std::error::Error for FlagError {}

/// Apply the operator's flags. They replace the policy's values (the operator may loosen).
pub fn apply_flags(policy: &mut Policy, a: &ExecArgs) -> Result<(), FlagError> {
    if let Some(t) = a.time_limit {
        if !t.is_finite() || t <= 0.0 || t > 86_400.0 {
            return Err(FlagError::TimeLimit(t));
        }
        let ms = (t * 1000.0).round().max(1.0) as u64;
        policy.limits.wall_time_ms = ms;
        policy.limits.cpu_time_ms = ms;
    }
    if let Some(m) = &a.memory_limit {
        let b = parse_bytes(m).map_err(FlagError::MemoryLimit)?;
        if b < 16 * 1024 * 1024 {
            return Err(FlagError::MemoryTooSmall(m.clone()));
        }
        policy.limits.memory = Bytes(b);
    }
    if let Some(o) = a.output_limit {
        policy.limits.stdout = Bytes(o);
        policy.limits.stderr = Bytes(o);
    }
    Ok(())
}

/// The exit code and the record's verdict for a jail that ran: the supervisor's or the
/// kernel's verdict (124), else the command's own status (128+N for a signal).
fn verdict(o: &Outcome, memory_limit: u64) -> (i32, StopReason) {
    if let Some(reason) = agentjail_engine::verdict::jail_verdict(o, memory_limit) {
        eprintln!("agentjail: stopped: {reason}");
        return (EXIT_STOPPED, reason);
    }
    let code = match (o.exit_code, o.signal) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        _ => EXIT_SETUP,
    };
    (code, StopReason::from_exit(o.exit_code, o.signal))
}

/// Run `exec`; returns the process exit code.
pub fn exec(mut a: ExecArgs) -> i32 {
    let mut policy = a.policy.clone();
    if let Err(e) = apply_flags(&mut policy, &a) {
        eprintln!("agentjail: {e}");
        return EXIT_SETUP;
    }
    let caps = &policy.artifacts;
    let contents = agentjail_engine::plan::Contents {
        out: a.artifacts_dir.as_ref().map(|_| {
            (
                caps.max_total_bytes.0,
                caps.max_count.saturating_mul(2).saturating_add(16),
            )
        }),
        ..Default::default()
    };
    let plan = match agentjail_engine::plan::build(
        &policy,
        std::mem::take(&mut a.cmd),
        &contents,
        &agentjail_jail::mount::RealHost,
    ) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("agentjail: cannot plan the jail: {e}");
            return EXIT_SETUP;
        }
    };
    if a.print_plan {
        match serde_json::to_string_pretty(&plan) {
            Ok(s) => println!("{s}"),
            Err(e) => eprintln!("agentjail: {e}"),
        }
        return 0;
    }
    let mut r = Recorder::new();
    r.sections.policy = Some(record::PolicyRef {
        path: a.policy_path.clone(),
        sha256: a.policy_sha256.clone(),
    });
    r.sections.command = Some(record::CommandRef::Argv(plan.argv.clone()));
    let (code, reason) = launch(&mut r, &plan, &policy, a.artifacts_dir.as_ref());
    let record = r.finish(reason, Phase::Execute);
    if let Some(path) = &a.record {
        let text = agentjail_json::to_safe_string_pretty(&record.to_value());
        if let Err(e) = std::fs::write(path, text + "\n") {
            eprintln!(
                "agentjail: cannot write the record to {}: {e}",
                path.display()
            );
        }
    }
    code
}

/// The jail with agentjail's stdin passed through and its output passed out under the caps.
fn launch(
    r: &mut Recorder,
    plan: &JailPlan,
    policy: &Policy,
    artifacts_dir: Option<&agentjail_engine::artifacts::ArtifactsDir>,
) -> (i32, StopReason) {
    let t0 = std::time::Instant::now();
    let sigfd = agentjail_jail::supervise::block_termination_signals();
    let mut out = std::io::stdout();
    let mut err = std::io::stderr();
    let io = Io {
        stdin_bytes: None,
        job_bytes: None,
        stdin_passthrough: Some(0),
        stdout_sink: Some(&mut out),
        stderr_sink: Some(&mut err),
    };
    let started = agentjail_jail::launch::prepare(plan)
        .and_then(|p| p.start())
        .and_then(|mut jail| {
            let net = agentjail_engine::netproxy::start(policy, false, &mut jail)?;
            Ok((jail, net))
        });
    match started {
        Err(e) => {
            // Display says the stage/control, errno and fix in one line.
            match &e {
                JailError::Unavailable { control, detail } => {
                    eprintln!("agentjail: sandbox_unavailable:{control}: {detail}")
                }
                JailError::Setup(setup) => eprintln!("agentjail: {setup}"),
            }
            r.error(RecordError::of_jail(&e));
            let reason = StopReason::SandboxUnavailable(e.unavailable_control().into());
            (EXIT_SETUP, reason)
        }
        Ok((jail, net)) => {
            let run = jail.run(
                io,
                sigfd
                    .as_ref()
                    .map(agentjail_jail::supervise::Interrupt::Signals),
            );
            let net_stop = agentjail_engine::netproxy::finish(r, policy, net);
            let o = &run.outcome;
            let (mut code, mut reason) = verdict(o, policy.limits.memory.0);
            if let Some(stop) = net_stop {
                eprintln!("agentjail: stopped: {stop}");
                (code, reason) = (EXIT_STOPPED, stop);
            }
            r.sections.execution = Some(Execution::of(o));
            r.set_enforcement(&run.enforcement);
            if let (Some(dir), Some(out)) = (artifacts_dir, &run.out) {
                save_artifacts(r, dir, out, policy);
            }
            let detail = json!({ "setup_us": run.setup_us });
            r.phase(Phase::Execute, reason.is_success(), t0, detail);
            (code, reason)
        }
    }
}

/// The files the command left in /app/out, copied into the artifacts directory (collected
/// by the same rules as a run's: agentjail_engine::pipeline::artifacts) and listed in the record.
fn save_artifacts(
    r: &mut Recorder,
    dir: &agentjail_engine::artifacts::ArtifactsDir,
    out: &std::os::fd::OwnedFd,
    policy: &Policy,
) {
    use agentjail_engine::pipeline::artifacts::{self, Unsaved};
    let collected = artifacts::collect(out, policy);
    if let Err(e) = artifacts::into_record(r, &collected, 0, Some(dir), Unsaved::Listed) {
        eprintln!("agentjail: artifacts: {e}");
    }
}

/// `exec`: load the policy, open the artifacts directory (unless only printing the plan),
/// run. A flag that cannot be honoured, a policy that cannot be used or an artifacts
/// directory that cannot be opened stops it with exit 125 before any jail: `exec`'s own
/// errors never read as the command's exit 2 (the convention of `env`, `timeout` and
/// `docker run`).
pub fn command(
    policy: Option<&std::path::Path>,
    mut args: ExecArgs,
    artifacts_dir: Option<std::path::PathBuf>,
) -> i32 {
    let Ok(loaded) = super::load(policy) else {
        return EXIT_SETUP;
    };
    args.policy = loaded.policy;
    args.policy_path = loaded.path;
    args.policy_sha256 = loaded.sha256;
    if let Some(d) = artifacts_dir.filter(|_| !args.print_plan) {
        match agentjail_engine::artifacts::ArtifactsDir::open(&d) {
            Ok(d) => args.artifacts_dir = Some(d),
            Err(e) => {
                eprintln!("agentjail: {e}");
                return EXIT_SETUP;
            }
        }
    }
    exec(args)
}
