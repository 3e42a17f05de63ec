//! `agentjail run`: contract → policy → static check → jail → supervise → validate → record.

use crate::check::{self, Decision};
use crate::contract::{self, Action};
use crate::exec::{execution_json, signal_name, stop_reason};
use crate::jail::{Control, ControlState};
use crate::output;
use crate::plan::{JailFile, JailPlan};
use crate::policy::Policy;
use crate::record::{self, TraceEntry};
use crate::supervise::Io;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::time::Instant;

/// Where the checked program sits in the jail: a read-only file in the root tmpfs, byte
/// for byte the source the checker parsed.
pub const SCRIPT_PATH: &str = "/app/main.py";
/// Largest action file read (the contract then applies the policy's tighter caps).
pub const MAX_ACTION_BYTES: u64 = 16 * 1024 * 1024;

pub struct RunArgs {
    pub policy: Policy,
    pub policy_path: String,
    pub policy_sha256: String,
    pub audit_log: Option<PathBuf>,
    pub action: String,
}

/// The finished record and the exit code (0 ok, 1 stopped).
pub struct RunResult {
    pub record: Value,
    pub exit_code: i32,
}

struct Run {
    run_id: String,
    started: Instant,
    trace: Vec<TraceEntry>,
    record: serde_json::Map<String, Value>,
}

impl Run {
    fn phase(&mut self, phase: &str, ok: bool, t: Instant, detail: Value) {
        self.trace.push(TraceEntry {
            phase: phase.into(),
            ok,
            duration_us: t.elapsed().as_micros() as u64,
            detail,
        });
    }

    fn finish(mut self, status: &str, stop_reason: &str, phase: &str) -> RunResult {
        let t = Instant::now();
        self.record.insert("run_id".into(), json!(self.run_id));
        self.record.insert("status".into(), json!(status));
        self.record.insert("stop_reason".into(), json!(stop_reason));
        self.record.insert("phase".into(), json!(phase));
        self.record
            .insert("agentjail_version".into(), json!(env!("CARGO_PKG_VERSION")));
        self.phase(
            "finalize",
            status == "ok",
            t,
            json!({"total_us": self.started.elapsed().as_micros() as u64}),
        );
        self.record.insert("trace".into(), json!(self.trace));
        RunResult {
            record: Value::Object(self.record),
            exit_code: if status == "ok" { 0 } else { 1 },
        }
    }

    fn stop(self, reason: &str, phase: &str) -> RunResult {
        self.finish("stopped", reason, phase)
    }
}

fn sha256_hex(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

fn read_action(spec: &str) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut buf = Vec::new();
    let res = if spec == "-" {
        std::io::stdin()
            .lock()
            .take(MAX_ACTION_BYTES + 1)
            .read_to_end(&mut buf)
    } else {
        std::fs::File::open(spec).and_then(|f| f.take(MAX_ACTION_BYTES + 1).read_to_end(&mut buf))
    };
    res.map_err(|e| format!("cannot read the action {spec}: {e}"))?;
    Ok(buf)
}

/// The interpreter's argv for the checked script.
fn python_argv(policy: &Policy) -> Vec<String> {
    let mut argv = vec![policy.interpreter.python.clone()];
    argv.extend(policy.interpreter.python_args.iter().cloned());
    argv.push(SCRIPT_PATH.into());
    argv
}

/// Classify a finished program that agentjail did not stop itself.
///
/// A resource stop reason rests on evidence the program cannot forge. With a memory or
/// pids cgroup that is the kernel's counter (oom kills, pids.events), already turned into a
/// stop reason by `exec::stop_reason`; a traceback alone (`raise MemoryError`) is just a
/// runtime error. Under rlimits only, a MemoryError counts when peak memory really neared
/// the limit, and a fork EAGAIN only when the policy lets the program fork at all.
fn runtime_failure(
    o: &crate::supervise::Outcome,
    enforcement: &[Control],
    policy: &Policy,
) -> (String, Value) {
    let stderr = String::from_utf8_lossy(&o.stderr.data);
    let err = output::parse_traceback(&stderr, SCRIPT_PATH);
    let detail = json!(err);
    let cgroup = |name: &str| {
        enforcement
            .iter()
            .any(|c| c.control == name && c.state == ControlState::Enforced)
    };
    if let Some(e) = &err {
        let limit = policy.limits.memory.0;
        let near_limit = o.peak_memory_bytes.is_some_and(|p| p >= limit / 2);
        if e.kind == "MemoryError" && !cgroup("cgroup_memory") && near_limit {
            return ("code_memory_limit".into(), detail);
        }
        let can_fork = policy
            .seccomp
            .allow_groups
            .iter()
            .any(|g| g == "process_spawn");
        if e.kind == "BlockingIOError"
            && e.message.contains("Errno 11")
            && !cgroup("cgroup_pids")
            && can_fork
        {
            return ("code_pids_limit".into(), detail);
        }
    }
    match (o.exit_code, o.signal) {
        (Some(c), _) => (format!("code_runtime_error:{c}"), detail),
        (None, Some(libc::SIGSYS)) => ("code_forbidden_syscall:foreign_abi".into(), detail),
        (None, Some(s)) => (format!("code_killed:{}", signal_name(s)), detail),
        _ => ("code_killed:unknown".into(), detail),
    }
}

pub fn run(args: RunArgs) -> RunResult {
    let mut r = Run {
        run_id: record::run_id(),
        started: Instant::now(),
        trace: Vec::new(),
        record: serde_json::Map::new(),
    };
    r.record.insert(
        "policy".into(),
        json!({"path": args.policy_path, "sha256": args.policy_sha256}),
    );

    // plan: read and validate the action; apply hints (tighten only).
    let t = Instant::now();
    let raw = match read_action(&args.action) {
        Ok(b) => b,
        Err(e) => {
            r.record.insert("error".into(), json!({"message": e}));
            r.phase("plan", false, t, Value::Null);
            return r.stop("invalid_action:unreadable", "plan");
        }
    };
    let parsed = contract::parse_action(&raw, &args.policy).map(|action| {
        let (policy, notes) = match &action.policy_hints {
            Some(h) => contract::apply_hints(&args.policy, h),
            None => (args.policy.clone(), Vec::new()),
        };
        (action, policy, json!(notes))
    });
    let (action, policy, notes): (Action, Policy, Value) = match parsed {
        Ok(x) => x,
        Err(e) => {
            r.record
                .insert("error".into(), json!({"message": e.message()}));
            r.phase("plan", false, t, json!({"reason": e.reason()}));
            let reason = e.reason().to_string();
            return r.stop(&reason, "plan");
        }
    };
    let code_hash = sha256_hex(action.code.as_bytes());
    r.record.insert(
        "action".into(),
        json!({"id": action.id, "language": action.language, "entrypoint": action.entrypoint,
               "code_hash": code_hash, "chars": action.code.chars().count()}),
    );
    r.phase("plan", true, t, json!({"policy_hints": notes}));

    // policy_check: languages, then the static check.
    let t = Instant::now();
    let decision: Decision = check::check_action(&action, &policy);
    r.record.insert("decision".into(), json!(decision));
    let allowed = decision.is_allow();
    r.phase(
        "policy_check",
        allowed,
        t,
        json!({"reason": decision.reason}),
    );
    if !allowed {
        let reason = format!("policy_block:{}", decision.reason);
        return r.stop(&reason, "policy_check");
    }

    // execute: the jail, within what is left of the run's budget.
    let t = Instant::now();
    let budget_us = policy.budget.max_seconds.saturating_mul(1_000_000);
    let spent_us = r.started.elapsed().as_micros() as u64;
    if spent_us >= budget_us {
        return r.stop("max_seconds", "execute");
    }
    let mut jail_policy = policy.clone();
    // The program gets the smaller of its wall limit and what is left of the run's budget;
    // when the budget is the smaller, running out of it is `max_seconds`, not a timeout.
    let left_ms = (budget_us - spent_us) / 1000;
    let budget_bound = left_ms < jail_policy.limits.wall_time_ms;
    if budget_bound {
        jail_policy.limits.wall_time_ms = left_ms.max(1);
    }
    let files = [JailFile {
        path: SCRIPT_PATH.into(),
        contents: action.code.clone(),
    }];
    let plan = match JailPlan::build(
        &jail_policy,
        python_argv(&jail_policy),
        &files,
        &crate::jail::mount::probe_host,
    ) {
        Ok(p) => p,
        Err(e) => {
            r.record.insert("error".into(), json!({"message": e}));
            r.phase("execute", false, t, Value::Null);
            return r.stop("sandbox_unavailable:plan", "execute");
        }
    };
    let mut stdin = serde_json::to_vec(&action.input_payload).unwrap_or_default();
    stdin.push(b'\n');
    let sigfd = crate::supervise::block_termination_signals();
    let io = Io {
        stdin_bytes: Some(stdin),
        stdin_passthrough: None,
        stdout_sink: None,
        stderr_sink: None,
    };
    let run = match crate::launch::execute(&plan, io, sigfd.as_ref()) {
        Ok(run) => run,
        Err(e) => {
            r.record.insert("error".into(), e.to_json());
            r.phase("execute", false, t, Value::Null);
            return r.stop(&e.stop_reason(), "execute");
        }
    };
    let o = &run.outcome;
    r.record.insert("execution".into(), execution_json(o));
    r.record
        .insert("enforcement".into(), json!(run.enforcement));
    let exec_detail = json!({"setup_us": run.setup_us, "program_wall_us": o.wall_us});
    if let Some(mut reason) = stop_reason(o, jail_policy.limits.memory.0) {
        if reason == "code_timeout" && budget_bound {
            reason = "max_seconds".into();
        }
        r.phase("execute", false, t, exec_detail);
        return r.stop(&reason, "execute");
    }
    if o.exit_code != Some(0) {
        let (reason, err) = runtime_failure(o, &run.enforcement, &jail_policy);
        r.record.insert("error".into(), err);
        r.phase("execute", false, t, exec_detail);
        return r.stop(&reason, "execute");
    }
    r.phase("execute", true, t, exec_detail);

    // validate: one JSON object, matching the action's schema.
    let t = Instant::now();
    match output::validate(&o.stdout.data, action.output_schema.as_ref()) {
        Ok(value) => {
            r.record.insert("output".into(), value);
            r.phase("validate", true, t, Value::Null);
        }
        Err((what, message)) => {
            r.record.insert("error".into(), json!({"message": message}));
            r.phase("validate", false, t, json!({"failed": what}));
            return r.stop(&format!("invalid_code_output:{what}"), "validate");
        }
    }
    if r.started.elapsed().as_micros() as u64 > budget_us {
        return r.stop("max_seconds", "validate");
    }
    r.finish("ok", "success", "finalize")
}

/// Append one record as one line: O_APPEND, a single write under an exclusive lock, fsync.
/// Concurrent runs never interleave lines.
pub fn append_audit(path: &std::path::Path, record: &Value) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let mut line = serde_json::to_vec(record).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC)
        .open(path)?;
    // Released when the file closes.
    crate::jail::sys::flock_exclusive(f.as_raw_fd()).map_err(std::io::Error::from_raw_os_error)?;
    f.write_all(&line)?;
    f.sync_data()
}

/// `agentjail check`: contract and static check only. Returns (decision JSON, exit code).
pub fn check_only(policy: &Policy, action_spec: &str) -> (Value, i32) {
    let raw = match read_action(action_spec) {
        Ok(b) => b,
        Err(e) => {
            return (
                json!({"decision": "deny", "reason": "invalid_action:unreadable", "message": e, "violations": []}),
                1,
            )
        }
    };
    let action = match contract::parse_action(&raw, policy) {
        Ok(a) => a,
        Err(e) => {
            return (
                json!({"decision": "deny", "reason": e.reason(), "message": e.message(), "violations": []}),
                1,
            )
        }
    };
    let effective = match &action.policy_hints {
        Some(h) => contract::apply_hints(policy, h).0,
        None => policy.clone(),
    };
    let d = check::check_action(&action, &effective);
    let code = if d.is_allow() { 0 } else { 1 };
    let mut v = json!(d);
    v["code_hash"] = json!(sha256_hex(action.code.as_bytes()));
    (v, code)
}

/// The record printed when agentjail itself cannot work (exit 2): still valid JSON with the
/// record's keys, so a caller parsing stdout never has to special-case it.
pub fn error_record(stop_reason: &str, message: &str) -> Value {
    json!({
        "run_id": record::run_id(),
        "status": "stopped",
        "stop_reason": stop_reason,
        "phase": "plan",
        "error": {"message": message},
        "trace": [],
        "agentjail_version": env!("CARGO_PKG_VERSION"),
    })
}
