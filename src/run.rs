//! The stages of `agentjail run`, each one a function the pipeline in lib.rs calls in order:
//! [`contract`] (phase `plan`) → [`check`] (`policy_check`) → [`execute`] (`execute`) →
//! [`validate`] (`validate`). A stage records its phase and either returns what the next one
//! needs or ends the run with a [`Stopped`].

use crate::check::{self, Decision};
use crate::contract::{self, Action};
use crate::launch::JailRun;
use crate::output;
use crate::plan::{JailFile, JailPlan};
use crate::policy::Policy;
use crate::record::{self, Phase, Recorder, StopReason};
use crate::runner;
use crate::supervise::{Io, Outcome};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::time::Instant;

/// Largest action file read (the contract then applies the policy's tighter caps).
pub const MAX_ACTION_BYTES: u64 = 16 * 1024 * 1024;

/// A stage ended the run: the verdict and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    pub reason: StopReason,
    pub phase: Phase,
}

fn stopped(reason: StopReason, phase: Phase) -> Stopped {
    Stopped { reason, phase }
}

pub fn sha256_hex(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

pub fn read_action(spec: &str) -> Result<Vec<u8>, String> {
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

/// Phase `plan`: read the action, validate it against the contract, apply its hints
/// (tighten only). Returns the action and the effective policy.
pub fn contract(
    r: &mut Recorder,
    spec: &str,
    policy: &Policy,
) -> Result<(Action, Policy), Stopped> {
    let t = Instant::now();
    let fail = |r: &mut Recorder, reason: StopReason, message: &str, detail: Value| {
        r.set("error", json!({ "message": message }));
        r.phase(Phase::Plan, false, t, detail);
        stopped(reason, Phase::Plan)
    };
    let raw = read_action(spec).map_err(|e| {
        fail(
            r,
            StopReason::InvalidAction("unreadable".into()),
            &e,
            Value::Null,
        )
    })?;
    let action = contract::parse_action(&raw, policy).map_err(|e| {
        let reason = e.stop_reason();
        fail(r, reason, e.message(), json!({"reason": e.reason()}))
    })?;
    let (effective, notes) = match &action.policy_hints {
        Some(h) => contract::apply_hints(policy, h),
        None => (policy.clone(), Vec::new()),
    };
    r.set(
        "action",
        json!({"id": action.id, "language": action.language, "entrypoint": action.entrypoint,
               "code_hash": sha256_hex(action.code.as_bytes()), "chars": action.code.chars().count()}),
    );
    r.phase(Phase::Plan, true, t, json!({ "policy_hints": notes }));
    Ok((action, effective))
}

/// Phase `policy_check`: the languages, then the static check.
pub fn check(r: &mut Recorder, action: &Action, policy: &Policy) -> Result<Decision, Stopped> {
    let t = Instant::now();
    let decision = check::check_action(action, policy);
    r.set("decision", json!(decision));
    let allowed = decision.is_allow();
    r.phase(
        Phase::PolicyCheck,
        allowed,
        t,
        json!({ "reason": decision.reason }),
    );
    if !allowed {
        return Err(stopped(decision.stop_reason(), Phase::PolicyCheck));
    }
    Ok(decision)
}

/// The plan of a single-use runner jail for `policy`: the interpreter runs agentjail's
/// runner, which takes the program from the job pipe.
pub fn runner_plan(policy: &Policy) -> Result<JailPlan, String> {
    let files = [JailFile {
        path: runner::PATH.into(),
        contents: runner::PYTHON.into(),
    }];
    let i = &policy.interpreter;
    let argv = runner::argv(&i.python, &i.python_args, runner::Mode::Run, &[]);
    let mut plan = JailPlan::build(policy, argv, &files, &crate::jail::mount::probe_host)?;
    plan.runner_fds = true;
    Ok(plan)
}

/// Phase `execute`: the jail, within what is left of the run's budget. The program gets the
/// smaller of its wall limit and the budget left; when the budget is the smaller, running
/// out of it is `max_seconds`, not a timeout.
pub fn execute(r: &mut Recorder, action: &Action, policy: &Policy) -> Result<JailRun, Stopped> {
    let t = Instant::now();
    let budget_us = policy.budget.max_seconds.saturating_mul(1_000_000);
    let spent_us = r.started().elapsed().as_micros() as u64;
    if spent_us >= budget_us {
        return Err(stopped(StopReason::MaxSeconds, Phase::Execute));
    }
    let mut jail_policy = policy.clone();
    let left_ms = (budget_us - spent_us) / 1000;
    let budget_bound = left_ms < jail_policy.limits.wall_time_ms;
    if budget_bound {
        jail_policy.limits.wall_time_ms = left_ms.max(1);
    }
    let plan = runner_plan(&jail_policy).map_err(|e| {
        r.set("error", json!({ "message": e }));
        r.phase(Phase::Execute, false, t, Value::Null);
        stopped(
            StopReason::SandboxUnavailable("plan".into()),
            Phase::Execute,
        )
    })?;
    let mut stdin = serde_json::to_vec(&action.input_payload).unwrap_or_default();
    stdin.push(b'\n');
    let sigfd = crate::supervise::block_termination_signals();
    let io = Io {
        stdin_bytes: Some(stdin),
        job_bytes: Some(runner::frame("run", action.code.as_bytes())),
        stdin_passthrough: None,
        stdout_sink: None,
        stderr_sink: None,
    };
    let run = crate::launch::execute(&plan, io, sigfd.as_ref()).map_err(|e| {
        r.set("error", e.to_json());
        r.phase(Phase::Execute, false, t, Value::Null);
        stopped(
            StopReason::SandboxUnavailable(e.unavailable_control().into()),
            Phase::Execute,
        )
    })?;
    let o = &run.outcome;
    r.set("execution", record::execution_json(o));
    r.set_enforcement(&run.enforcement);
    let detail = json!({"setup_us": run.setup_us, "program_wall_us": o.wall_us});
    if let Some(mut reason) = record::jail_verdict(o, jail_policy.limits.memory.0) {
        if reason == StopReason::CodeTimeout && budget_bound {
            reason = StopReason::MaxSeconds;
        }
        r.phase(Phase::Execute, false, t, detail);
        return Err(stopped(reason, Phase::Execute));
    }
    if o.exit_code != Some(0) {
        let (reason, err) = runtime_failure(o);
        r.set("error", err);
        r.phase(Phase::Execute, false, t, detail);
        return Err(stopped(reason, Phase::Execute));
    }
    r.phase(Phase::Execute, true, t, detail);
    Ok(run)
}

/// A program that agentjail did not stop and that failed: the stop reason from its wait
/// status alone, and the runner's report of the exception, if any, as the record's `error`.
///
/// Nothing the program printed or reported changes the verdict: a `MemoryError` or a fork
/// `EAGAIN` is a runtime error unless the kernel's counters say a limit was hit (that is
/// `record::jail_verdict`, already applied).
fn runtime_failure(o: &Outcome) -> (StopReason, Value) {
    let error = runner::error_report(&o.replies.data).unwrap_or(Value::Null);
    (StopReason::from_exit(o.exit_code, o.signal), error)
}

/// Phase `validate`: one JSON object, matching the action's schema; then the whole-run
/// budget once more.
pub fn validate(
    r: &mut Recorder,
    action: &Action,
    policy: &Policy,
    run: &JailRun,
) -> Result<(), Stopped> {
    let t = Instant::now();
    match output::validate(&run.outcome.stdout.data, action.output_schema.as_ref()) {
        Ok(value) => {
            r.set("output", value);
            r.phase(Phase::Validate, true, t, Value::Null);
        }
        Err((what, message)) => {
            r.set("error", json!({ "message": message }));
            r.phase(Phase::Validate, false, t, json!({ "failed": what }));
            return Err(stopped(
                StopReason::InvalidCodeOutput(what),
                Phase::Validate,
            ));
        }
    }
    let budget_us = policy.budget.max_seconds.saturating_mul(1_000_000);
    if r.started().elapsed().as_micros() as u64 > budget_us {
        return Err(stopped(StopReason::MaxSeconds, Phase::Validate));
    }
    Ok(())
}

/// `agentjail check`: contract and static check only. Returns (decision JSON, exit code).
pub fn check_only(policy: &Policy, action_spec: &str) -> (Value, i32) {
    let deny = |reason: String, message: &str| {
        (
            json!({"decision": "deny", "reason": reason, "message": message, "violations": []}),
            1,
        )
    };
    let raw = match read_action(action_spec) {
        Ok(b) => b,
        Err(e) => return deny("invalid_action:unreadable".into(), &e),
    };
    let action = match contract::parse_action(&raw, policy) {
        Ok(a) => a,
        Err(e) => return deny(e.reason(), e.message()),
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
