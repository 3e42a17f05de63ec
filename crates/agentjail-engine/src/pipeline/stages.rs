//! The stages of a job, each one a function [`super::job`] calls in order: [`contract`]
//! (phase `plan`) → [`check`] (`policy_check`) → [`execute`] (`execute`) → [`validate`]
//! (`validate`). A stage records its phase and either returns what the next one needs or
//! ends the run with a [`Stopped`]. A session call (super::session) walks the same phases
//! with its own contract and runs, and shares [`decided`] and [`limits_of`].

use crate::contract::{self, Action};
use crate::output;
use crate::pipeline::artifacts;
use crate::pipeline::record::{self, Execution, Phase, RecordError, Recorder, StopReason};
use crate::pipeline::source::{Acquired, JailSource, JobInputs, Start};
use crate::plan::SuperviseLimits;
use crate::policy::Policy;
use crate::runner::{self, Language};
use agentjail_check::Decision;
use agentjail_jail::launch::JailRun;
use agentjail_jail::supervise::{Delivery, Interrupt, Io, Outcome};
use serde_json::{json, Value};
use std::time::Instant;

pub use crate::pipeline::record::{stopped, Stopped};

/// Phase `plan` when the action cannot even be read (a file that is not there).
pub fn unreadable(r: &mut Recorder, message: &str) -> Stopped {
    r.error(RecordError::message(message));
    r.phase(Phase::Plan, false, Instant::now(), Value::Null);
    stopped(StopReason::InvalidAction("unreadable".into()), Phase::Plan)
}

/// Phase `plan`: validate the action's bytes against the contract, apply its hints (tighten
/// only). Returns the action and the effective policy.
pub fn contract(
    r: &mut Recorder,
    raw: &[u8],
    policy: &Policy,
) -> Result<(Action, Policy), Stopped> {
    let t = Instant::now();
    let fail = |r: &mut Recorder, reason: StopReason, message: &str, detail: Value| {
        r.error(RecordError::message(message));
        r.phase(Phase::Plan, false, t, detail);
        stopped(reason, Phase::Plan)
    };
    let action = contract::parse_action(raw, policy).map_err(|e| {
        let reason = e.stop_reason();
        fail(r, reason, e.message(), json!({"reason": e.reason()}))
    })?;
    let (effective, notes) = match &action.policy_hints {
        Some(h) => contract::apply_hints(policy, h),
        None => (policy.clone(), Vec::new()),
    };
    r.sections.action = Some(record::ActionRef {
        named: Some(record::ActionName {
            id: action.id.clone(),
            language: action.language.clone(),
            entrypoint: action.entrypoint.clone(),
        }),
        code_hash: crate::digest::sha256_hex(action.code.as_bytes()),
        chars: action.code.chars().count(),
    });
    r.phase(Phase::Plan, true, t, json!({ "policy_hints": notes }));
    Ok((action, effective))
}

/// Phase `policy_check`: the languages, then the static check.
pub fn check(r: &mut Recorder, action: &Action, policy: &Policy) -> Result<Decision, Stopped> {
    let t = Instant::now();
    decided(r, contract::check_action(action, policy), t)
}

/// The end of phase `policy_check` that began at `t`, for a job and a session call alike:
/// the decision in the record, the phase timed, a denial the end of the run.
pub fn decided(r: &mut Recorder, decision: Decision, t: Instant) -> Result<Decision, Stopped> {
    r.sections.decision = Some(decision.clone());
    let allowed = decision.is_allow();
    r.phase(
        Phase::PolicyCheck,
        allowed,
        t,
        json!({ "reason": decision.reason }),
    );
    if !allowed {
        return Err(stopped(StopReason::of_check(&decision), Phase::PolicyCheck));
    }
    Ok(decision)
}

/// Phase `execute`: a jail from `source`, the job delivered, supervised within what is left
/// of the run's budget. The program gets the smaller of its wall limit and the budget left;
/// when the budget is the smaller, running out of it is `max_seconds`, not a timeout.
pub fn execute(
    r: &mut Recorder,
    action: &Action,
    policy: &Policy,
    source: &dyn JailSource,
) -> Result<JailRun, Stopped> {
    let t = Instant::now();
    let budget_us = policy.budget.max_seconds.saturating_mul(1_000_000);
    let spent_us = r.started().elapsed().as_micros() as u64;
    if spent_us >= budget_us {
        return Err(stopped(StopReason::MaxSeconds, Phase::Execute));
    }
    let mut jail_policy = policy.clone();
    let left_ms = (budget_us - spent_us) / 1000;
    let mut budget_bound = left_ms < jail_policy.limits.wall_time_ms;
    if budget_bound {
        jail_policy.limits.wall_time_ms = left_ms.max(1);
    }
    let runner_language = Language::of(&action.language);
    let toolchain = runner_language.is_none();
    let (run, start, net) = if let Some(language) = runner_language {
        let job = JobInputs {
            files: action.files.clone(),
            inputs: source.inputs().to_vec(),
        };
        let (acquired, net) = acquire(r, (&jail_policy, action, language), &job, source, t)?;
        let frame = runner::frame("run", action.code.as_bytes());
        let (run, start) = deliver(action, &jail_policy, acquired, source, Some(frame));
        (run, start, net)
    } else {
        // c, cpp, java, go, rust, bash: the compile jail, then the run jail with only its
        // output (crate::pipeline::compile).
        let rj = crate::pipeline::compile::prepare_run(r, action, &jail_policy, source, t)?;
        jail_policy = rj.policy;
        budget_bound = rj.budget_bound;
        let acquired = Acquired {
            jail: rj.jail,
            start: rj.start.0,
            ready: false,
            wait_us: rj.start.1,
        };
        let (run, start) = deliver(action, &jail_policy, acquired, source, None);
        (run, start, rj.net)
    };
    let net_stop = crate::netproxy::finish(r, &jail_policy, net);
    let o = &run.outcome;
    r.sections.execution = Some(Execution::of(o));
    r.set_enforcement(&run.enforcement);
    r.sections.jail_start = Some(start.0);
    collect_artifacts(r, &run, policy, source);
    let found = crate::pipeline::results::from_replies(&o.replies.data, &policy.results);
    crate::pipeline::results::into_record(r, found);
    let detail = json!({"setup_us": run.setup_us, "program_wall_us": o.wall_us,
                        "jail_start": start.0, "jail_wait_us": start.1});
    if let Some(reason) = net_stop {
        r.phase(Phase::Execute, false, t, detail);
        return Err(stopped(reason, Phase::Execute));
    }
    if let Some(mut reason) = crate::verdict::jail_verdict(o, jail_policy.limits.memory.0) {
        if reason == StopReason::CodeTimeout && budget_bound {
            reason = StopReason::MaxSeconds;
        }
        r.phase(Phase::Execute, false, t, detail);
        return Err(stopped(reason, Phase::Execute));
    }
    if o.exit_code != Some(0) {
        let (reason, err) = runtime_failure(o, !toolchain);
        r.error(err);
        r.phase(Phase::Execute, false, t, detail);
        return Err(stopped(reason, Phase::Execute));
    }
    r.phase(Phase::Execute, true, t, detail);
    Ok(run)
}

/// A jail from `source`, with the network allowlist's proxy started on it when the policy
/// has one (src/netproxy.rs): failing either is failing to start the jail.
fn acquire(
    r: &mut Recorder,
    (policy, action, language): (&Policy, &Action, Language),
    job: &JobInputs,
    source: &dyn JailSource,
    t: Instant,
) -> Result<(Acquired, Option<crate::netproxy::NetSession>), Stopped> {
    let narrowed = crate::netproxy::narrowed_by(action);
    let started = source.acquire(policy, language, job).and_then(|mut a| {
        let net = crate::netproxy::start(policy, narrowed, &mut a.jail)?;
        Ok((a, net))
    });
    started.map_err(|e| {
        r.error(RecordError::of_jail(&e));
        r.phase(Phase::Execute, false, t, Value::Null);
        let reason = StopReason::SandboxUnavailable(e.unavailable_control().into());
        stopped(reason, Phase::Execute)
    })
}

/// The artifacts of a finished jail (every process gone): into the record, inline or
/// written to the source's artifacts directory.
fn collect_artifacts(r: &mut Recorder, run: &JailRun, policy: &Policy, source: &dyn JailSource) {
    let Some(out) = &run.out else { return };
    let collected = artifacts::collect(out, policy);
    let inline = policy.artifacts.inline_max_bytes.0;
    let dir = source.artifacts_dir();
    // A failure to write is in the record (`artifacts_error`); the run's verdict stands.
    let _ = artifacts::into_record(r, &collected, inline, dir, artifacts::Unsaved::Inline);
}

/// Hand the job to its jail: the payload on stdin, the exact checked bytes on the job pipe;
/// supervise to the end under the job's limits; the jail's cgroup goes to the source's
/// teardown.
fn deliver(
    action: &Action,
    policy: &Policy,
    acquired: Acquired,
    source: &dyn JailSource,
    job: Option<Vec<u8>>,
) -> (JailRun, (Start, u64)) {
    let stdin = match &action.stdin {
        Some(text) => text.as_bytes().to_vec(),
        None => {
            let mut line = serde_json::to_vec(&action.input_payload).unwrap_or_default();
            line.push(b'\n');
            line
        }
    };
    let mut tap = crate::pipeline::stream::Tap::new(source.output());
    let sinks = tap.sinks();
    let io = Io {
        stdin_bytes: Some(stdin),
        job_bytes: job,
        stdin_passthrough: None,
        stdout_sink: sinks.stdout,
        stderr_sink: sinks.stderr,
    };
    let Acquired {
        jail,
        start,
        ready,
        wait_us,
    } = acquired;
    let delivery = if ready {
        Delivery {
            at: Instant::now(),
            cpu_base_us: Some(jail.cpu_used_us()),
        }
    } else {
        Delivery::now()
    };
    let limits = limits_of(policy);
    let (run, teardown) = jail.deliver(&limits, io, source.interrupt(), delivery);
    source.teardown(teardown);
    (run, (start, wait_us))
}

/// What the supervisor enforces for a job under `policy` (the same values a plan holds).
pub fn limits_of(policy: &Policy) -> SuperviseLimits {
    let l = &policy.limits;
    SuperviseLimits {
        wall_time_ms: l.wall_time_ms,
        cpu_time_ms: l.cpu_time_ms,
        stdout_bytes: l.stdout.0,
        stderr_bytes: l.stderr.0,
        reply_bytes: agentjail_jail::supervise::REPLY_CAP + policy.results.max_bytes.0,
        observe_syscalls: policy.seccomp.observe,
        observe_opens: crate::plan::seccomp::observe_opens(&policy.seccomp),
    }
}

/// A program that agentjail did not stop and that failed: the stop reason from its wait
/// status alone, and the runner's report of the exception, if any, as the record's `error`.
///
/// Nothing the program printed or reported changes the verdict: a `MemoryError` or a fork
/// `EAGAIN` is a runtime error unless the kernel's counters say a limit was hit (that is
/// `verdict::jail_verdict`, already applied).
fn runtime_failure(o: &Outcome, runner: bool) -> (StopReason, RecordError) {
    // Without agentjail's runner (a compiled program, bash) the program's stderr is its own
    // from the first instruction: no text of it may turn its exit into the jail's failure.
    if let Some(message) = loader_failure(o).filter(|_| runner) {
        return (
            StopReason::SandboxUnavailable("interpreter".into()),
            RecordError::Unavailable {
                control: "interpreter".into(),
                detail: format!(
                    "the interpreter could not start in the jail (exit 127 before the runner was ready, no user code ran): the loader said \"{message}\"; add the directory of that library to filesystem.read_only (`agentjail policy show` names the libraries it can find on the host)"
                ),
            },
        );
    }
    let error = runner::error_report(&o.replies.data).unwrap_or(Value::Null);
    (
        StopReason::from_exit(o.exit_code, o.signal),
        RecordError::Runner(error),
    )
}

/// The dynamic loader's refusal to start the interpreter: exit 127, the runner never
/// reported `ready` (which it does before it reads the job, so no user code ran), and
/// ld.so's "error while loading shared libraries" on stderr; its line, or None. A library
/// the policy loader could not find on the host (`policy::elfdeps`) lands here, and is the
/// jail's failure, not the agent's code's.
fn loader_failure(o: &Outcome) -> Option<String> {
    // `ready` is the runner's first report, written before it reads the job.
    let ready = String::from_utf8_lossy(&o.replies.data).lines().any(|l| {
        matches!(
            runner::Event::parse(l.as_bytes()),
            Some(runner::Event::Ready)
        )
    });
    if o.exit_code != Some(127) || ready {
        return None;
    }
    let stderr = String::from_utf8_lossy(&o.stderr.data);
    let line = stderr
        .lines()
        .find(|l| l.contains(": error while loading shared libraries: "))?;
    Some(line.chars().take(400).collect())
}

/// Phase `validate`: one JSON object, read strictly, matching the action's schema under the
/// validator's work budget; the run's deadline and agentjail's own interrupt are polled
/// while it works. Then the whole-run budget once more.
pub fn validate(
    r: &mut Recorder,
    action: &Action,
    policy: &Policy,
    run: &JailRun,
    interrupt: Option<Interrupt<'_>>,
) -> Result<(), Stopped> {
    let t = Instant::now();
    let budget = std::time::Duration::from_secs(policy.budget.max_seconds);
    if !action.output_mode.is_json() {
        // Judge mode: the exit status was the verdict; stdout and stderr are the result.
        r.phase(Phase::Validate, true, t, json!({ "output_mode": "text" }));
        if r.started().elapsed() > budget {
            return Err(stopped(StopReason::MaxSeconds, Phase::Validate));
        }
        return Ok(());
    }
    let deadline = r.started() + budget;
    let mut poll = || {
        if Instant::now() >= deadline {
            return Some(output::Stopped::Deadline);
        }
        interrupt
            .and_then(|i| i.pending())
            .map(output::Stopped::Signal)
    };
    match output::validate(
        &run.outcome.stdout.data,
        action.output_schema.as_ref(),
        &mut poll,
    ) {
        Ok(value) => {
            r.sections.output = Some(value);
            r.phase(Phase::Validate, true, t, Value::Null);
        }
        Err((reason, message)) => {
            r.error(RecordError::message(message));
            r.phase(Phase::Validate, false, t, json!({ "failed": reason }));
            return Err(stopped(reason, Phase::Validate));
        }
    }
    if r.started().elapsed() > budget {
        return Err(stopped(StopReason::MaxSeconds, Phase::Validate));
    }
    Ok(())
}
