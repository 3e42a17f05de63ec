//! `agentjail exec`: the jail alone, for shells and systemd units.

use crate::jail::JailError;
use crate::plan::JailPlan;
use crate::policy::{parse_bytes, Bytes, Policy};
use crate::record::TraceEntry;
use crate::supervise::{Io, Outcome, Stop};
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
    pub print_plan: bool,
    pub cmd: Vec<String>,
}

/// Exit codes fixed by DESIGN.md.
pub const EXIT_STOPPED: i32 = 124;
pub const EXIT_SETUP: i32 = 125;

/// Apply the operator's flags. They replace the policy's values (the operator may loosen).
pub fn apply_flags(policy: &mut Policy, a: &ExecArgs) -> Result<(), String> {
    if let Some(t) = a.time_limit {
        if !t.is_finite() || t <= 0.0 || t > 86_400.0 {
            return Err(format!(
                "--time-limit {t}: give seconds between 0.001 and 86400"
            ));
        }
        let ms = (t * 1000.0).round().max(1.0) as u64;
        policy.limits.wall_time_ms = ms;
        policy.limits.cpu_time_ms = ms;
    }
    if let Some(m) = &a.memory_limit {
        let b = parse_bytes(m).map_err(|e| format!("--memory-limit: {e}"))?;
        if b < 16 * 1024 * 1024 {
            return Err(format!(
                "--memory-limit {m}: below 16MiB nothing starts; give at least 16MiB"
            ));
        }
        policy.limits.memory = Bytes(b);
    }
    if let Some(o) = a.output_limit {
        policy.limits.stdout = Bytes(o);
        policy.limits.stderr = Bytes(o);
    }
    Ok(())
}

/// The stop reason for a finished jail run, in DESIGN.md's spelling; None when the program
/// simply exited or was killed by a signal nobody asked for.
pub fn stop_reason(o: &Outcome, memory_limit: u64) -> Option<String> {
    if let Some(stop) = &o.stop {
        return Some(match stop {
            Stop::WallTimeout => "code_timeout".into(),
            Stop::CpuLimit => "code_cpu_limit".into(),
            Stop::StdoutCap => "code_output_too_large".into(),
            Stop::StderrCap => "code_stderr_too_large".into(),
            Stop::ForbiddenSyscall { name, .. } => format!("code_forbidden_syscall:{name}"),
            Stop::Interrupted { signal } => {
                format!("interrupted:{}", signal_name(*signal).to_lowercase())
            }
        });
    }
    if o.oom_kills > 0 {
        return Some("code_memory_limit".into());
    }
    if o.signal == Some(libc::SIGXCPU) {
        return Some("code_cpu_limit".into());
    }
    if o.signal == Some(libc::SIGKILL)
        && o.peak_memory_bytes
            .is_some_and(|p| p >= memory_limit.saturating_sub(memory_limit / 16))
    {
        return Some("code_memory_limit".into());
    }
    if o.pids_limit_hits > 0 && o.exit_code != Some(0) {
        return Some("code_pids_limit".into());
    }
    None
}

pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("SIG{sig}"),
    };
    name.to_string()
}

pub fn execution_json(o: &Outcome) -> serde_json::Value {
    json!({
        "exit_code": o.exit_code,
        "signal": o.signal.map(signal_name),
        "wall_ms": o.wall_ms,
        "cpu_ms": o.cpu_ms,
        "peak_memory_bytes": o.peak_memory_bytes,
        "stdout_bytes": o.stdout.total,
        "stderr_bytes": o.stderr.total,
        "stdout": String::from_utf8_lossy(&o.stdout.data),
        "stderr": String::from_utf8_lossy(&o.stderr.data),
        "stdout_truncated": o.stdout.truncated,
        "stderr_truncated": o.stderr.truncated,
        "oom_kills": o.oom_kills,
        "pids_limit_hits": o.pids_limit_hits,
    })
}

/// Run `exec`; returns the process exit code.
pub fn exec(mut a: ExecArgs) -> i32 {
    let mut policy = a.policy.clone();
    if let Err(e) = apply_flags(&mut policy, &a) {
        eprintln!("agentjail: {e}");
        return 2;
    }
    let t0 = std::time::Instant::now();
    let plan = match JailPlan::build(
        &policy,
        std::mem::take(&mut a.cmd),
        &[],
        &crate::jail::mount::probe_host,
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
    let sigfd = crate::supervise::block_termination_signals();
    let mut out = std::io::stdout();
    let mut err = std::io::stderr();
    let io = Io {
        stdin_bytes: None,
        stdin_passthrough: Some(0),
        stdout_sink: Some(&mut out),
        stderr_sink: Some(&mut err),
    };
    let result = crate::launch::execute(&plan, io, sigfd.as_ref());
    let run_id = crate::record::run_id();
    let mut record = json!({
        "run_id": run_id,
        "agentjail_version": env!("CARGO_PKG_VERSION"),
        "policy": {"path": a.policy_path, "sha256": a.policy_sha256},
        "command": plan.argv,
        "phase": "execute",
    });
    let code = match result {
        Err(e) => {
            // Display says the stage/control, errno and fix in one line.
            match &e {
                JailError::Unavailable { control, detail } => {
                    eprintln!("agentjail: sandbox_unavailable:{control}: {detail}")
                }
                JailError::Setup(setup) => eprintln!("agentjail: {setup}"),
            }
            record["status"] = json!("stopped");
            record["stop_reason"] = json!(e.stop_reason());
            record["error"] = e.to_json();
            EXIT_SETUP
        }
        Ok(run) => {
            let o = &run.outcome;
            let reason = stop_reason(o, policy.limits.memory.0);
            record["execution"] = execution_json(o);
            record["enforcement"] = json!(run.enforcement);
            record["trace"] = json!([TraceEntry {
                phase: "execute".into(),
                ok: reason.is_none(),
                duration_us: t0.elapsed().as_micros() as u64,
                detail: json!({"setup_us": run.setup_us}),
            }]);
            match reason {
                Some(r) => {
                    eprintln!("agentjail: stopped: {r}");
                    record["status"] = json!("stopped");
                    record["stop_reason"] = json!(r);
                    EXIT_STOPPED
                }
                None => {
                    let code = match (o.exit_code, o.signal) {
                        (Some(c), _) => c,
                        (None, Some(s)) => 128 + s,
                        _ => EXIT_SETUP,
                    };
                    let ok = code == 0;
                    record["status"] = json!(if ok { "ok" } else { "stopped" });
                    record["stop_reason"] = json!(match (o.exit_code, o.signal) {
                        (Some(0), _) => "success".to_string(),
                        (Some(c), _) => format!("code_runtime_error:{c}"),
                        (None, Some(s)) => format!("code_killed:{}", signal_name(s)),
                        _ => "code_killed:unknown".to_string(),
                    });
                    code
                }
            }
        }
    };
    if let Some(path) = &a.record {
        let text = serde_json::to_string_pretty(&record).unwrap_or_default();
        if let Err(e) = std::fs::write(path, text + "\n") {
            eprintln!(
                "agentjail: cannot write the record to {}: {e}",
                path.display()
            );
        }
    }
    code
}
