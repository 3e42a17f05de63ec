//! The stages of `agentjail run`, each one a function the pipeline in lib.rs calls in order:
//! [`contract`] (phase `plan`) → [`check`] (`policy_check`) → [`execute`] (`execute`) →
//! [`validate`] (`validate`). A stage records its phase and either returns what the next one
//! needs or ends the run with a [`Stopped`].

use crate::cache::Cache;
use crate::contract::{self, Action};
use crate::output;
use crate::plan::{JailFile, JailPlan, SuperviseLimits};
use crate::policy::LoadedPolicy;
use crate::policy::Policy;
use crate::record::{self, Phase, Record, Recorder, StopReason};
use crate::runner::{self, Language};
use agentjail_check::Decision;
use agentjail_jail::launch::{JailRun, StartedJail, Teardown};
use agentjail_jail::supervise::{Delivery, Interrupt, Io, Outcome};
use agentjail_jail::JailError;
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

/// Phase `plan` when the action cannot even be read (a file that is not there).
pub fn unreadable(r: &mut Recorder, message: &str) -> Stopped {
    r.set("error", json!({ "message": message }));
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
        r.set("error", json!({ "message": message }));
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
    let decision = contract::check_action(action, policy);
    r.set("decision", json!(decision));
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

/// Address space node needs beyond the memory limit when RLIMIT_AS, not a memory cgroup,
/// bounds the jail (with a memory cgroup the rlimit is dropped at launch). V8 reserves its
/// whole code range (512 MiB) and more up front: measured with node 20.20, the runner and
/// the default flags, node aborts at start ("Failed to reserve virtual memory for
/// CodeRange", SIGTRAP) at 704 MiB and starts at 736 MiB; below ~192 MiB it can also hang in
/// start-up. 1 GiB on top of `limits.memory` covers the reservations and the libuv
/// thread pool's stacks; the heap itself is held to `limits.memory` by
/// `--max-old-space-size`.
pub const JS_ADDRESS_SPACE_HEADROOM: u64 = 1024 * 1024 * 1024;

/// The plan of a runner jail for `policy` and `language`: the interpreter runs agentjail's
/// runner for that language, which takes the program from the job pipe. `preload`: the jail
/// starts ahead of its job (Python's warm jails, sessions): import the policy's preload
/// modules and warm the interpreter before the job arrives.
/// JavaScript has only the `run` mode. `job`: the files and host inputs of one job (empty
/// for a pooled jail).
pub fn runner_plan(
    policy: &Policy,
    language: Language,
    mode: runner::Mode,
    preload: bool,
    job: &JobInputs,
) -> Result<JailPlan, String> {
    let (path, source) = language.runner();
    let mut files = vec![JailFile {
        path: path.into(),
        contents: source.into(),
    }];
    files.extend(job.files.iter().map(|f| JailFile {
        path: format!("{}/{}", crate::plan::APP_IN, f.path),
        contents: f.contents.clone(),
    }));
    let a = &policy.artifacts;
    let contents = crate::plan::Contents {
        files: &files,
        inputs: &job.inputs,
        // Room for every artifact plus the directories around them.
        out: Some((
            a.max_total_bytes.0,
            a.max_count.saturating_mul(2).saturating_add(16),
        )),
    };
    let i = &policy.interpreter;
    let argv = match language {
        Language::Python => {
            let modules = if preload {
                policy.preload_modules()
            } else {
                Vec::new()
            };
            runner::argv(&i.python, &i.python_args, mode, preload, &modules)
        }
        Language::JavaScript if mode == runner::Mode::Run => {
            runner::node_argv(&i.node, &i.node_args, policy.limits.memory.0)
        }
        Language::JavaScript => return Err("javascript has no session mode".into()),
    };
    let mut plan = crate::plan::build(policy, argv, &contents, &agentjail_jail::mount::RealHost)?;
    plan.runner_fds = true;
    if language == Language::JavaScript {
        plan.widen_address_space(JS_ADDRESS_SPACE_HEADROOM);
    }
    Ok(plan)
}

/// What a job brings into its jail besides its code: the action's `files` and the host
/// inputs (`run --input`). A jail with inputs is built for its job (never a warm one).
#[derive(Debug, Clone, Default)]
pub struct JobInputs {
    pub files: Vec<crate::contract::InputFile>,
    pub inputs: Vec<crate::plan::HostInput>,
}

impl JobInputs {
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.inputs.is_empty()
    }
}

/// How a job's jail was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Start {
    /// Started before the job existed, its interpreter warm (a pool's).
    Warm,
    /// Started for this job.
    Cold,
}

/// A jail handed to one job.
pub struct Acquired {
    pub jail: StartedJail,
    pub start: Start,
    /// The runner already reported ready: its start-up and preloads are not the job's (the
    /// limits count from delivery and its CPU time so far is subtracted).
    pub ready: bool,
    /// How long the job waited for it, µs.
    pub wait_us: u64,
}

/// Where the jobs of a front end get their jails, and what may interrupt them.
pub trait JailSource {
    /// A started runner jail (mode `run`) for `policy` and `language`, holding `job`'s files
    /// and host inputs. `policy` is the job's effective policy; a pool may hand out a jail
    /// built for the policy it tightens (the job's tighter limits are applied at delivery).
    fn acquire(
        &self,
        policy: &Policy,
        language: Language,
        job: &JobInputs,
    ) -> Result<Acquired, JailError>;
    /// What stops a running job from agentjail's side.
    fn interrupt(&self) -> Option<Interrupt<'_>>;
    /// Host inputs every job of this source gets (`run --input`).
    fn inputs(&self) -> &[crate::plan::HostInput] {
        &[]
    }
    /// Where artifacts are written on the host (`run --artifacts-dir`); None: inline.
    fn artifacts_dir(&self) -> Option<&crate::artifacts::ArtifactsDir> {
        None
    }
    /// Where a finished jail's cgroup goes to be removed (dropped here by default).
    fn teardown(&self, t: Teardown) {
        drop(t);
    }
}

/// `agentjail run`'s source: one jail started on this thread, for this job.
pub struct ColdStart {
    sigfd: Option<std::os::fd::OwnedFd>,
    /// Host inputs from the command line (`--input`).
    pub inputs: Vec<crate::plan::HostInput>,
    /// `--artifacts-dir`.
    pub artifacts_dir: Option<crate::artifacts::ArtifactsDir>,
}

impl ColdStart {
    /// Blocks SIGTERM, SIGINT and SIGHUP into a signalfd: they stop the job with a record.
    pub fn new() -> ColdStart {
        ColdStart {
            sigfd: agentjail_jail::supervise::block_termination_signals(),
            inputs: Vec::new(),
            artifacts_dir: None,
        }
    }
}

impl Default for ColdStart {
    fn default() -> Self {
        ColdStart::new()
    }
}

impl JailSource for ColdStart {
    fn acquire(
        &self,
        policy: &Policy,
        language: Language,
        job: &JobInputs,
    ) -> Result<Acquired, JailError> {
        let t = Instant::now();
        let plan = runner_plan(policy, language, runner::Mode::Run, false, job)
            .map_err(JailError::plan)?;
        let jail = agentjail_jail::launch::prepare(&plan)?.start()?;
        Ok(Acquired {
            jail,
            start: Start::Cold,
            ready: false,
            wait_us: t.elapsed().as_micros() as u64,
        })
    }

    fn interrupt(&self) -> Option<Interrupt<'_>> {
        self.sigfd.as_ref().map(Interrupt::Signals)
    }

    fn inputs(&self) -> &[crate::plan::HostInput] {
        &self.inputs
    }

    fn artifacts_dir(&self) -> Option<&crate::artifacts::ArtifactsDir> {
        self.artifacts_dir.as_ref()
    }
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
    let budget_bound = left_ms < jail_policy.limits.wall_time_ms;
    if budget_bound {
        jail_policy.limits.wall_time_ms = left_ms.max(1);
    }
    let Some(language) = Language::of(&action.language) else {
        // The check lets only executed languages through; this is a guard, not a path.
        r.phase(
            Phase::Execute,
            false,
            t,
            json!({"language": action.language}),
        );
        return Err(stopped(StopReason::LanguageDeniedExecution, Phase::Execute));
    };
    let job = JobInputs {
        files: action.files.clone(),
        inputs: source.inputs().to_vec(),
    };
    // The allowlist's proxy, when the policy has one, starts with the jail: failing to
    // start it is failing to start the jail.
    let narrowed = crate::netproxy::narrowed_by(action);
    let started = source
        .acquire(&jail_policy, language, &job)
        .and_then(|mut a| {
            let net = crate::netproxy::start(&jail_policy, narrowed, &mut a.jail)?;
            Ok((a, net))
        });
    let (acquired, net) = started.map_err(|e| {
        r.set("error", crate::record::jail_error_json(&e));
        r.phase(Phase::Execute, false, t, Value::Null);
        let reason = StopReason::SandboxUnavailable(e.unavailable_control().into());
        stopped(reason, Phase::Execute)
    })?;
    let (run, start) = deliver(action, &jail_policy, acquired, source);
    let net_stop = crate::netproxy::finish(r, &jail_policy, net);
    let o = &run.outcome;
    r.set("execution", record::execution_json(o));
    r.set_enforcement(&run.enforcement);
    r.set("jail_start", json!(start.0));
    collect_artifacts(r, &run, policy, source);
    let detail = json!({"setup_us": run.setup_us, "program_wall_us": o.wall_us,
                        "jail_start": start.0, "jail_wait_us": start.1});
    if let Some(reason) = net_stop {
        r.phase(Phase::Execute, false, t, detail);
        return Err(stopped(reason, Phase::Execute));
    }
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

/// The artifacts of a finished jail (every process gone): into the record, inline or
/// written to the source's artifacts directory.
fn collect_artifacts(r: &mut Recorder, run: &JailRun, policy: &Policy, source: &dyn JailSource) {
    let Some(out) = &run.out else { return };
    let collected = crate::artifacts::collect(out, &policy.artifacts);
    let written = match source.artifacts_dir() {
        Some(dir) => match dir.write(&collected) {
            Ok(w) => Some(w),
            Err(e) => {
                r.set("artifacts_error", json!(agentjail_json::safe_text(&e, 500)));
                None
            }
        },
        None => None,
    };
    let inline = policy.artifacts.inline_max_bytes.0;
    let (artifacts, skipped) =
        crate::artifacts::record_fields(&collected, inline, written.as_deref());
    r.set("artifacts", artifacts);
    r.set("artifacts_skipped", skipped);
}

/// Hand the job to its jail: the payload on stdin, the exact checked bytes on the job pipe;
/// supervise to the end under the job's limits; the jail's cgroup goes to the source's
/// teardown.
fn deliver(
    action: &Action,
    policy: &Policy,
    acquired: Acquired,
    source: &dyn JailSource,
) -> (JailRun, (Start, u64)) {
    let stdin = match &action.stdin {
        Some(text) => text.as_bytes().to_vec(),
        None => {
            let mut line = serde_json::to_vec(&action.input_payload).unwrap_or_default();
            line.push(b'\n');
            line
        }
    };
    let io = Io {
        stdin_bytes: Some(stdin),
        job_bytes: Some(runner::frame("run", action.code.as_bytes())),
        stdin_passthrough: None,
        stdout_sink: None,
        stderr_sink: None,
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
    }
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
            r.set("output", value);
            r.phase(Phase::Validate, true, t, Value::Null);
        }
        Err((reason, message)) => {
            r.set("error", json!({ "message": message }));
            r.phase(Phase::Validate, false, t, json!({ "failed": reason }));
            return Err(stopped(reason, Phase::Validate));
        }
    }
    if r.started().elapsed() > budget {
        return Err(stopped(StopReason::MaxSeconds, Phase::Validate));
    }
    Ok(())
}

/// One job through every stage, from the action's bytes to its record: contract, check, the
/// environment, the cache (a hit ends here), the jail from `source`, validation; a
/// cacheable outcome is stored. `r` may already hold front-end fields (the caller).
pub fn job(
    mut r: Recorder,
    raw: &[u8],
    policy: &LoadedPolicy,
    source: &dyn JailSource,
    cache: Option<&Cache>,
) -> Record {
    r.set(
        "policy",
        json!({"path": policy.path, "sha256": policy.sha256}),
    );
    // Host inputs are not in the action, so no key could cover them; and a stored record
    // cannot write artifacts into a directory: such jobs never use the cache.
    // A job with network access depends on what the network answered: never cached either.
    let cache = cache.filter(|_| {
        source.inputs().is_empty()
            && source.artifacts_dir().is_none()
            && !policy.policy.network.allowlist()
    });
    let mut key: Option<String> = None;
    let ended = (|| -> Result<Option<crate::cache::Hit>, Stopped> {
        let (action, effective) = contract(&mut r, raw, &policy.policy)?;
        check(&mut r, &action, &effective)?;
        let env = crate::environment::of(&effective, &action.language);
        r.set("environment", json!(env));
        if let Some(c) = cache {
            let canonical = serde_json::to_value(&action).unwrap_or(Value::Null);
            let k = Cache::key(&policy.sha256, &env.digest, &canonical);
            if let Some(hit) = c.get(&k) {
                return Ok(Some(hit));
            }
            key = Some(k);
        }
        let jail = execute(&mut r, &action, &effective, source)?;
        validate(&mut r, &action, &effective, &jail, source.interrupt())?;
        Ok(None)
    })();
    let mut record = match ended {
        Ok(Some(hit)) => hit_record(r, hit),
        Ok(None) => r.finish(StopReason::Success, Phase::Finalize),
        Err(stop) => r.finish(stop.reason, stop.phase),
    };
    if let (Some(c), Some(k)) = (cache, &key) {
        if Cache::cacheable(&record.stop_reason) {
            if let Err(e) = c.put(k, &record.value) {
                eprintln!("agentjail: {e}");
            }
        }
    }
    record.seal(&policy.policy.redaction);
    record
}

/// The fields of a record that belong to the request that asked, never to the stored run a
/// cache hit cites: who asked, which action (its `id`), under which policy and environment,
/// when and how long, and the verdict fields `finish` writes.
const REQUEST_FIELDS: &[&str] = &[
    "run_id",
    "caller",
    "action",
    "decision",
    "policy",
    "environment",
    "trace",
    "status",
    "stop_reason",
    "phase",
    "agentjail_version",
    "cache",
];

/// A cache hit as a new record of this request: its own `run_id`, `caller`, `action` (with
/// this request's `id`), decision and timing, citing the stored run's outcome (output,
/// streams, error, execution, artifacts) and verdict; `cache.original_run_id` names the
/// stored run. Nothing of the first caller's request travels to this one.
fn hit_record(r: Recorder, hit: crate::cache::Hit) -> Record {
    let stored = hit.record;
    let reason = stored
        .get("stop_reason")
        .and_then(Value::as_str)
        .and_then(StopReason::parse_stored)
        .unwrap_or(StopReason::Success);
    let phase = stored.get("phase").cloned().unwrap_or(Value::Null);
    let mut record = r.finish(reason, Phase::Finalize);
    if let (Some(out), Some(from)) = (record.value.as_object_mut(), stored.as_object()) {
        for (k, v) in from {
            if !REQUEST_FIELDS.contains(&k.as_str()) {
                out.insert(k.clone(), v.clone());
            }
        }
        out.insert("phase".into(), phase);
        out.insert(
            "cache".into(),
            json!({"hit": true, "key": hit.key, "stored_at": hit.stored_at,
                   "original_run_id": stored.get("run_id").cloned().unwrap_or(Value::Null)}),
        );
    }
    record
}

/// `agentjail check`: contract and static check only. Returns (decision JSON, exit code).
pub fn check_only(policy: &Policy, action_spec: &str) -> (Value, i32) {
    match read_action(action_spec) {
        Ok(raw) => {
            let (v, allow) = check_bytes(policy, &raw);
            (v, if allow { 0 } else { 1 })
        }
        Err(e) => (
            json!({"decision": "deny", "reason": "invalid_action:unreadable", "message": e, "violations": []}),
            1,
        ),
    }
}

/// The contract and the static check of action bytes: the decision JSON and whether it
/// allows.
pub fn check_bytes(policy: &Policy, raw: &[u8]) -> (Value, bool) {
    let action = match contract::parse_action(raw, policy) {
        Ok(a) => a,
        Err(e) => {
            return (
                json!({"decision": "deny", "reason": e.reason(), "message": e.message(), "violations": []}),
                false,
            )
        }
    };
    let effective = match &action.policy_hints {
        Some(h) => contract::apply_hints(policy, h).0,
        None => policy.clone(),
    };
    let d = contract::check_action(&action, &effective);
    let allow = d.is_allow();
    let mut v = json!(d);
    v["code_hash"] = json!(sha256_hex(action.code.as_bytes()));
    (v, allow)
}
