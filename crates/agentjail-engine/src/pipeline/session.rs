//! Sessions: one jail and one interpreter kept across the calls of one conversation.
//!
//! Each call is checked like a run (the static check sees the call together with every
//! earlier call of the session, so a module bound in call 1 is still a module in call 5) and
//! capped like a run (the policy's wall, CPU and output limits, per call); a call that breaks
//! one of them ends the session and its record says so. Globals survive between calls; the
//! value of a trailing expression comes back as text, Jupyter-style.
//!
//! What bounds a session as a whole ([session] in the policy): a number of calls, a total of
//! execution time, an idle timeout and a lifetime. Its jail is its own: nothing of one
//! session is visible to another (their own namespaces, root, /tmp, cgroup and processes).
//!
//! A call's success and its exception come from the runner inside the jail (the interpreter
//! did not exit, so there is no wait status to read): the record marks them
//! `"source": "runner"`. A call's resource verdicts — timeout, CPU, output caps, memory,
//! forbidden syscalls — are the supervisor's and the kernel's, as in a run.

use crate::pipeline::record::{self, Execution, Phase, RecordError, Recorder, Sealed, StopReason};
use crate::pipeline::source::Start;
use crate::pipeline::stages::{self, stopped, Stopped};
use crate::pipeline::{artifacts, results};
use crate::policy::Policy;
use crate::runner;
use agentjail_check::{python, Violation};
use agentjail_jail::launch::{StartedJail, Teardown};
use agentjail_jail::supervise::{self, CallEnd, Interrupt};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The record of one call in a jail kept across calls: a session's call or a workspace's
/// command (src/engine/workspace.rs). One builder for both, so they carry the same parts the
/// same way — the policy, the requests the network allowlist's proxy logged since the
/// previous record (with the counters so far), the session or workspace after the call —
/// and end the same way: a denial under `deny_is_stop` is the stop reason; success
/// finishes in `finalize`, a stop in the phase it happened in.
pub struct CallRecord {
    pub r: Recorder,
}

impl CallRecord {
    pub fn new(policy: record::PolicyRef) -> CallRecord {
        let mut r = Recorder::new();
        r.sections.policy = Some(policy);
        CallRecord { r }
    }

    /// The requests that ended since the previous record into `network`; the stop reason
    /// a denial makes under `deny_is_stop` (the proxy has killed the jail's program).
    pub fn network(
        &mut self,
        net: Option<&crate::netproxy::NetSession>,
        policy: &Policy,
    ) -> Option<StopReason> {
        net?.drain_into(&mut self.r, policy)
            .map(StopReason::CodeNetworkDenied)
    }

    /// The finished record, sealed per the policy's redaction.
    pub fn finish(self, result: Result<(), Stopped>, policy: &Policy) -> Sealed {
        let record = match result {
            Ok(()) => self.r.finish(StopReason::Success, Phase::Finalize),
            Err(s) if s.reason.is_success() => self.r.finish(s.reason, Phase::Finalize),
            Err(s) => self.r.finish(s.reason, s.phase),
        };
        record.seal(&policy.redaction)
    }
}

/// Who may use a session: the connection that started it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub connection: u64,
    pub uid: Option<u32>,
}

/// How long an ended session still answers its owner's calls with a record saying why it
/// ended, before its id is forgotten (`unknown_session`).
pub const ENDED_KEPT: Duration = Duration::from_secs(600);

/// The most source a session's check reads (all calls so far); past it a call is refused.
pub const MAX_SESSION_SOURCE_BYTES: usize = python::MAX_SOURCE_BYTES;

pub struct Session {
    pub id: String,
    pub owner: Owner,
    jail: Option<StartedJail>,
    /// Whether the jail was a warm one from the session pool or started for this session.
    start: Start,
    policy: Policy,
    policy_ref: record::PolicyRef,
    started: Instant,
    last_used: Instant,
    calls: u64,
    exec: Duration,
    /// Every allowed call so far, in order (what the check reads before a new call).
    source: String,
    ended: Option<String>,
    /// When it ended (however: a call's hard limit, its budget, a timer, a close).
    ended_at: Option<Instant>,
    /// Artifacts already reported, by path, with the (size, mtime) they had: a call reports
    /// what is new or changed since.
    reported: std::collections::HashMap<String, (u64, i64, i64)>,
    skipped_reported: std::collections::HashSet<(String, &'static str)>,
    /// The runner's ring of the session doorbell after its last call, answered by the next
    /// (see supervise::CallChannel).
    rung: Option<supervise::Rung>,
    /// The network allowlist's proxy for this session's jail (src/netproxy.rs), if any.
    net: Option<crate::netproxy::NetSession>,
}

impl Session {
    pub fn new(
        id: String,
        owner: Owner,
        (jail, start): (StartedJail, Start),
        policy: Policy,
        policy_ref: record::PolicyRef,
    ) -> Session {
        let now = Instant::now();
        Session {
            id,
            owner,
            jail: Some(jail),
            start,
            policy,
            policy_ref,
            started: now,
            last_used: now,
            calls: 0,
            exec: Duration::ZERO,
            source: String::new(),
            ended: None,
            ended_at: None,
            reported: Default::default(),
            skipped_reported: Default::default(),
            rung: None,
            net: None,
        }
    }

    /// Give the session the proxy started for its jail.
    pub fn with_net(mut self, net: Option<crate::netproxy::NetSession>) -> Session {
        self.net = net;
        self
    }

    /// Why the session should be closed now (idle too long, too old), if it should.
    pub fn expired(&self) -> Option<&'static str> {
        let l = &self.policy.session;
        if self.last_used.elapsed() >= Duration::from_secs(l.idle_timeout_seconds) {
            return Some("idle_timeout");
        }
        if self.started.elapsed() >= Duration::from_secs(l.lifetime_seconds) {
            return Some("lifetime");
        }
        None
    }

    /// Whether an ended session may be forgotten: its owner has had [`ENDED_KEPT`] since it
    /// ended, however it ended, to learn why (`invalid_request:session_ended`).
    pub fn forgotten(&self) -> bool {
        self.ended_at.is_some_and(|t| t.elapsed() >= ENDED_KEPT)
    }

    pub fn is_ended(&self) -> bool {
        self.jail.is_none()
    }

    /// End the session: kill its jail; the cgroup goes to the caller's teardown.
    pub fn end(&mut self, why: &str) -> Option<Teardown> {
        self.ended.get_or_insert_with(|| why.to_string());
        self.ended_at.get_or_insert_with(Instant::now);
        let teardown = self.jail.take().map(|j| j.end().1);
        self.net = None;
        teardown
    }

    /// One call: check, run, record. `timeout_s` may only tighten the policy's wall limit.
    pub fn call(
        &mut self,
        code: &str,
        timeout_s: Option<f64>,
        interrupt: Option<Interrupt<'_>>,
    ) -> (Sealed, Option<Teardown>) {
        let mut c = CallRecord::new(self.policy_ref.clone());
        let mut result = self.checked_call(&mut c.r, code, timeout_s, interrupt);
        if let Some(reason) = c.network(self.net.as_ref(), &self.policy) {
            // deny_is_stop: the proxy killed the program, and the session with it.
            let stopped = Stopped {
                reason,
                phase: Phase::Execute,
            };
            result = Err((stopped, Some("network_denied".into())));
        }
        let teardown = match &result {
            Err((_, Some(why))) => self.end(why),
            _ => None,
        };
        self.last_used = Instant::now();
        c.r.sections.session = Some(self.describe());
        let record = c.finish(result.map_err(|(stop, _)| stop), &self.policy);
        (record, teardown)
    }

    fn describe(&self) -> record::SessionRef {
        record::SessionRef {
            id: self.id.clone(),
            calls: self.calls,
            exec_ms: self.exec.as_millis() as u64,
            jail_start: self.start,
            ended: self.ended.is_some(),
            ended_reason: self.ended.clone(),
        }
    }

    /// The call's stages; Err carries the stop and, when the session must end, why.
    fn checked_call(
        &mut self,
        r: &mut Recorder,
        code: &str,
        timeout_s: Option<f64>,
        interrupt: Option<Interrupt<'_>>,
    ) -> Result<(), (Stopped, Option<String>)> {
        let t = Instant::now();
        if let Some(why) = &self.ended {
            r.error(RecordError::message(format!(
                "the session has ended ({why}); start a new one"
            )));
            return Err((
                stopped(
                    StopReason::InvalidRequest("session_ended".into()),
                    Phase::Plan,
                ),
                None,
            ));
        }
        self.budget_left().map_err(|why| {
            r.error(RecordError::message(format!(
                "the session's budget is spent ({why})"
            )));
            (
                stopped(
                    StopReason::InvalidRequest(format!("session_{why}")),
                    Phase::Plan,
                ),
                Some(why.to_string()),
            )
        })?;
        let limits = self
            .call_limits(r, code, timeout_s)
            .map_err(|s| (s, None))?;
        r.phase(Phase::Plan, true, t, Value::Null);
        self.check(r, code).map_err(|s| (s, None))?;
        self.run_call(r, code, &limits, interrupt)
    }

    fn budget_left(&self) -> Result<(), &'static str> {
        let l = &self.policy.session;
        if self.calls >= l.max_calls {
            return Err("max_calls");
        }
        if self.exec >= Duration::from_secs(l.max_exec_seconds) {
            return Err("max_exec_seconds");
        }
        if let Some(why) = self.expired() {
            return Err(why);
        }
        Ok(())
    }

    /// The call's contract: non-blank code within the size cap; the limits (a timeout may
    /// only tighten the policy's wall time, and never past the session's execution budget).
    fn call_limits(
        &self,
        r: &mut Recorder,
        code: &str,
        timeout_s: Option<f64>,
    ) -> Result<crate::plan::SuperviseLimits, Stopped> {
        let invalid = |r: &mut Recorder, what: &str, message: String| {
            r.error(RecordError::message(message));
            stopped(StopReason::InvalidAction(what.into()), Phase::Plan)
        };
        if code.trim().is_empty() {
            return Err(invalid(
                r,
                "code",
                "code is blank; send a non-empty string".into(),
            ));
        }
        let chars = code.chars().count();
        if chars > self.policy.budget.max_code_chars {
            let max = self.policy.budget.max_code_chars;
            return Err(invalid(
                r,
                "code_too_long",
                format!("code is {chars} characters; the limit is {max}"),
            ));
        }
        let mut limits = stages::limits_of(&self.policy);
        if let Some(t) = timeout_s {
            if !t.is_finite() || t <= 0.0 {
                return Err(invalid(
                    r,
                    "timeout_s",
                    "timeout_s must be a positive number of seconds".into(),
                ));
            }
            limits.wall_time_ms = limits
                .wall_time_ms
                .min(((t * 1000.0).floor() as u64).max(1));
        }
        let left =
            Duration::from_secs(self.policy.session.max_exec_seconds).saturating_sub(self.exec);
        limits.wall_time_ms = limits.wall_time_ms.min((left.as_millis() as u64).max(1));
        Ok(limits)
    }

    /// The static check of this call, in the context of every earlier call: the session's
    /// source so far and this call are checked together (a module bound earlier is still a
    /// module now), and the violations that point into this call are reported. This call
    /// alone is checked too, for what only it can say (syntax, input reads). Under a
    /// policy whose check is not enforced (`check.enforce = false`) the findings, of this
    /// call alone, are reported and refuse nothing, and no source is kept.
    fn check(&mut self, r: &mut Recorder, code: &str) -> Result<(), Stopped> {
        let t = Instant::now();
        let rules = &self.policy.check;
        let version = self.policy.python_version();
        let mut violations = python::check_source_for_version(code, rules, version);
        if rules.enforce && violations.is_empty() && !self.source.is_empty() {
            let prefix = format!("{}\n", self.source);
            if prefix.len() + code.len() > MAX_SESSION_SOURCE_BYTES {
                violations.push(Violation {
                    rule: "session_source_too_large".into(),
                    detail: format!("the session's calls exceed {MAX_SESSION_SOURCE_BYTES} bytes of source; start a new session"),
                    line: 0,
                    column: 0,
                });
            } else {
                violations = in_call(&prefix, code, rules, version);
            }
        }
        r.sections.action = Some(record::ActionRef {
            named: None,
            code_hash: crate::digest::sha256_hex(code.as_bytes()),
            chars: code.chars().count(),
        });
        let enforce = rules.enforce;
        let decision = agentjail_check::Decision::from_violations(violations, enforce);
        stages::decided(r, decision, t)?;
        if !enforce {
            return Ok(());
        }
        if !self.source.is_empty() {
            self.source.push('\n');
        }
        self.source.push_str(code);
        Ok(())
    }

    fn run_call(
        &mut self,
        r: &mut Recorder,
        code: &str,
        limits: &crate::plan::SuperviseLimits,
        interrupt: Option<Interrupt<'_>>,
    ) -> Result<(), (Stopped, Option<String>)> {
        let t = Instant::now();
        let Some(jail) = self.jail.as_ref() else {
            let s = stopped(
                StopReason::InvalidRequest("session_ended".into()),
                Phase::Execute,
            );
            return Err((s, None));
        };
        // Each call's frame and reports travel on a socket made for that call and installed
        // by the kernel in the runner alone (supervise::CallChannel); the nonce besides ties
        // the `done` to this frame.
        let nonce = agentjail_jail::ids::random_hex(16);
        let frame = runner::call_frame(code.as_bytes(), &nonce);
        let end = supervise::call(
            jail.spawned(),
            frame,
            &|line: &[u8]| runner::is_done_of(line, &nonce),
            (self.rung.take(), supervise::OnForbidden::EndAtOnce),
            limits,
            jail.cgroup(),
            interrupt,
        );
        self.calls += 1;
        r.set_enforcement(jail.enforcement());
        match end {
            CallEnd::Done(c) => self.call_done(r, &c, &nonce, t),
            CallEnd::Ended(o) => self.call_ended(r, &o, t),
        }
    }

    /// The interpreter reported done: the call's value or its exception (the runner's
    /// report, marked source: runner); the session lives on.
    fn call_done(
        &mut self,
        r: &mut Recorder,
        c: &supervise::CallOutcome,
        nonce: &str,
        t: Instant,
    ) -> Result<(), (Stopped, Option<String>)> {
        self.exec += Duration::from_micros(c.wall_us);
        self.rung = c.rung;
        r.sections.execution = Some(Execution::of_call(c));
        self.call_artifacts(r);
        let found = results::from_replies(&c.replies.data, &self.policy.results);
        results::into_record(r, found);
        let detail = json!({"program_wall_us": c.wall_us});
        match done_report(&c.replies.data, nonce) {
            Some((true, value, _)) => {
                r.sections.value = Some(value);
                r.phase(Phase::Execute, true, t, detail);
                return Ok(());
            }
            Some((false, _, error)) => r.error(RecordError::Runner(error)),
            None => {}
        }
        r.phase(Phase::Execute, false, t, detail);
        let stop = stopped(StopReason::CodeRuntimeError(1), Phase::Execute);
        Err((stop, None))
    }

    /// The jail ended during the call (a limit, a forbidden syscall, an exit): the verdict
    /// is the kernel's and the supervisor's, and the session ends with its jail.
    fn call_ended(
        &mut self,
        r: &mut Recorder,
        o: &supervise::Outcome,
        t: Instant,
    ) -> Result<(), (Stopped, Option<String>)> {
        self.exec += Duration::from_micros(o.wall_us);
        r.sections.execution = Some(Execution::of(o));
        results::into_record(
            r,
            results::from_replies(&o.replies.data, &self.policy.results),
        );
        let reason = crate::verdict::jail_verdict(o, self.policy.limits.memory.0)
            .unwrap_or_else(|| StopReason::from_exit(o.exit_code, o.signal));
        if let Some(e) = runner::error_report(&o.replies.data) {
            r.error(RecordError::Runner(e));
        }
        r.phase(
            Phase::Execute,
            false,
            t,
            json!({"program_wall_us": o.wall_us}),
        );
        let why = reason.to_string();
        let stop = Stopped {
            reason,
            phase: Phase::Execute,
        };
        Err((stop, Some(why)))
    }
}

impl Session {
    /// The files in /app/out that are new or changed since the last report (the interpreter
    /// lives on, so they are read while it idles between calls; crate::artifacts' caps and
    /// rules hold as in a run). Skipped files are reported once per reason.
    fn call_artifacts(&mut self, r: &mut Recorder) {
        let Some(out) = self.jail.as_ref().and_then(|j| j.out()) else {
            return;
        };
        let mut c = artifacts::collect(out, &self.policy);
        c.artifacts
            .retain(|a| self.reported.get(&a.path) != Some(&a.stamp));
        for a in &c.artifacts {
            self.reported.insert(a.path.clone(), a.stamp);
        }
        c.skipped
            .retain(|k| self.skipped_reported.insert((k.path.clone(), k.reason)));
        let inline = self.policy.artifacts.inline_max_bytes.0;
        // No directory: nothing to fail.
        let _ = artifacts::into_record(r, &c, inline, None, artifacts::Unsaved::Inline);
    }
}

/// Check `prefix + code` and keep the violations that point into `code`, with positions
/// made relative to it. The rule about input() reads counts per call, so it is left to the
/// call alone.
fn in_call(
    prefix: &str,
    code: &str,
    rules: &crate::policy::CheckRules,
    version: &str,
) -> Vec<Violation> {
    let whole = format!("{prefix}{code}");
    let offset_lines = prefix.matches('\n').count() as u32;
    python::check_source_for_version(&whole, rules, version)
        .into_iter()
        .filter(|v| v.rule != "too_many_input_reads")
        .filter(|v| v.line > offset_lines || (v.line == 0 && v.rule != "syntax_error"))
        .map(|mut v| {
            if v.line > offset_lines {
                v.line -= offset_lines;
            }
            v
        })
        .collect()
}

/// The runner's done report of the call with nonce `call`: (ok, value text, error object
/// marked source: runner).
fn done_report(replies: &[u8], call: &str) -> Option<(bool, Value, Value)> {
    runner::done_report(replies, call).map(|d| (d.ok, d.value, d.error))
}
