//! A workspace's background commands: `workspace_exec` with `background` starts one and
//! answers its id at once; `workspace_wait` answers its record once it ended (or, at the
//! wait's timeout, that it still runs and its output so far); `workspace_kill` ends its
//! processes (its process group, SIGKILL, sent by the workspace runner in the jail's own
//! pid namespace) and answers its record (docs/REFERENCE.md, "Workspaces").
//!
//! The ids are this workspace's: made here (random), kept here with the command's request,
//! and checked here before the runner is asked, so an id of another workspace is
//! `unknown_command`, whatever the runner would say. The runner keeps the command's output
//! under the policy's caps while it runs (a thread of the runner reads its pipes) and
//! forwards it on its stdout and stderr during the wait or kill call, where the supervisor
//! captures it under the same caps as a command's. A record is made once, when the command
//! is reported ended; its id is then forgotten.

use super::{bad, exec_frame, ExecRequest, Ran, Workspace};
use crate::engine::{ClientStop, Engine, EngineError, ErrorCode};
use crate::pipeline::record::Sealed;
use crate::pipeline::session::CallRecord;
use crate::pipeline::session::Owner;
use crate::pipeline::stream::OutputSink;
use agentjail_jail::launch::Teardown;
use agentjail_jail::supervise::Interrupt;
use serde_json::{json, Value};
use std::time::Instant;

/// The most background commands a workspace holds at once (started, not yet reported
/// ended by a wait or a kill).
pub const MAX_BACKGROUND: usize = 16;
/// How long a kill waits for the killed command to be reaped and its pipes read.
const KILL_MS: u64 = 2000;

/// A background command as the host keeps it: its request (for its record), when it
/// started, and the jail's OOM kill count then.
pub(super) struct Background {
    req: ExecRequest,
    started: Instant,
    ooms_at_start: Option<u64>,
}

/// What `workspace_exec` came to.
pub enum Started {
    /// A command's record: a foreground command's, or a background one that could not
    /// start (the workspace ended or its budget is spent).
    Record(Sealed),
    /// A background command's id.
    Command(String),
}

/// What `workspace_wait` or `workspace_kill` came to.
pub enum Waited {
    /// The command ended: its record.
    Ended(Sealed),
    /// It still runs: `{"command", "stdout", "stderr", "stdout_bytes", "stderr_bytes"}`,
    /// the output so far (at most the caps).
    Running(Value),
}

fn unknown(id: &str) -> EngineError {
    EngineError::new(
        ErrorCode::UnknownCommand,
        format!(
            "no background command {:?} in this workspace",
            crate::verdict::StopReason::suffix(id)
        ),
    )
}

impl Workspace {
    fn oom_count(&self) -> Option<u64> {
        self.jail
            .as_ref()
            .and_then(|j| j.cgroup())
            .map(|c| c.stats().oom_kills)
    }

    /// `workspace_exec`: a foreground command's record, or a background command started.
    pub fn exec_any(
        &mut self,
        req: &ExecRequest,
        interrupt: Option<Interrupt<'_>>,
        out: Option<&dyn OutputSink>,
    ) -> (Result<Started, EngineError>, Option<Teardown>) {
        if !req.background {
            let (record, teardown) = self.exec(req, interrupt, out);
            return (Ok(Started::Record(record)), teardown);
        }
        let c = CallRecord::new(self.policy_ref.clone());
        let t = Instant::now();
        if let Some(refused) = self.refusal() {
            let (record, teardown) = self.seal(c, t, req, refused);
            return (Ok(Started::Record(record)), teardown);
        }
        if self.background.len() >= MAX_BACKGROUND {
            let m = format!("this workspace holds {MAX_BACKGROUND} background commands, the most it may; wait for or kill one first");
            return (Err(bad(m)), None);
        }
        let id = agentjail_jail::ids::random_hex(16);
        let nonce = agentjail_jail::ids::random_hex(16);
        let timeout_ms = req.timeout_s.map(|_| self.timeout_ms(req));
        let frame = exec_frame(req, timeout_ms, &self.policy, &nonce, Some(&id));
        let ooms_at_start = self.oom_count();
        let wall = self.policy.limits.wall_time_ms;
        let ran = self.call(frame, &nonce, wall, interrupt, None);
        self.execs += 1;
        self.last_used = Instant::now();
        match ran {
            Ran::Done(report, _, _) if report.started == Some(true) => {
                let kept = Background {
                    req: req.clone(),
                    started: t,
                    ooms_at_start,
                };
                self.background.insert(id.clone(), kept);
                (Ok(Started::Command(id)), None)
            }
            other => {
                let (record, teardown) = self.seal(c, t, req, other);
                (Ok(Started::Record(record)), teardown)
            }
        }
    }

    /// `workspace_wait` (up to `timeout_ms`, at most the policy's wall time) or
    /// `workspace_kill` of the background command `id`.
    pub fn wait_background(
        &mut self,
        id: &str,
        timeout_ms: Option<u64>,
        kill: bool,
        interrupt: Option<Interrupt<'_>>,
    ) -> (Result<Waited, EngineError>, Option<Teardown>) {
        if let Err(e) = self.root() {
            return (Err(e), None);
        }
        if !self.background.contains_key(id) {
            return (Err(unknown(id)), None);
        }
        let wall = self.policy.limits.wall_time_ms;
        let wait_ms = if kill {
            KILL_MS
        } else {
            timeout_ms.unwrap_or(wall).min(wall)
        };
        let nonce = agentjail_jail::ids::random_hex(16);
        let body =
            serde_json::to_vec(&json!({"command": id, "timeout_ms": wait_ms})).unwrap_or_default();
        let verb = if kill { "kill" } else { "wait" };
        let mut frame = format!("AJ1 {verb} {} {nonce}\n", body.len()).into_bytes();
        frame.extend_from_slice(&body);
        let c = CallRecord::new(self.policy_ref.clone());
        let ran = self.call(frame, &nonce, wait_ms, interrupt, None);
        self.last_used = Instant::now();
        match ran {
            Ran::Done(report, call, _) if report.running == Some(true) => {
                let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                let so_far = json!({
                    "command": id,
                    "stdout": text(&call.stdout.data),
                    "stderr": text(&call.stderr.data),
                    "stdout_bytes": report.stdout_bytes.unwrap_or(call.stdout.total).max(call.stdout.total),
                    "stderr_bytes": report.stderr_bytes.unwrap_or(call.stderr.total).max(call.stderr.total),
                });
                (Ok(Waited::Running(so_far)), None)
            }
            Ran::Done(report, _, _) if report.unknown == Some(true) => {
                self.background.remove(id);
                (Err(unknown(id)), None)
            }
            Ran::Done(report, call, _) => {
                let Some(bg) = self.background.remove(id) else {
                    return (Err(unknown(id)), None);
                };
                let ooms = self
                    .oom_count()
                    .zip(bg.ooms_at_start)
                    .map(|(after, before)| after.saturating_sub(before));
                let ran = Ran::Done(report, call, ooms);
                let (record, teardown) = self.seal(c, bg.started, &bg.req, ran);
                (Ok(Waited::Ended(record)), teardown)
            }
            other => {
                let Some(bg) = self.background.remove(id) else {
                    return (Err(unknown(id)), None);
                };
                let (record, teardown) = self.seal(c, bg.started, &bg.req, other);
                (Ok(Waited::Ended(record)), teardown)
            }
        }
    }
}

impl Engine {
    /// `workspace_exec` of a client with its own stop: a record, or a background command's id.
    pub fn workspace_exec_any(
        &self,
        id: &str,
        req: &ExecRequest,
        (owner, stop): (Owner, Option<&ClientStop>),
        out: Option<&dyn OutputSink>,
    ) -> Result<Started, EngineError> {
        let interrupt = stop.map_or(Interrupt::Shutdown(&self.stop_read), ClientStop::interrupt);
        let (started, teardown) =
            self.hold(id, owner, |w| w.exec_any(req, Some(interrupt), out))?;
        if let Some(t) = teardown {
            self.teardown(t);
        }
        started
    }

    /// `workspace_wait` (`kill` false: up to `timeout_ms`) or `workspace_kill` of the
    /// background command `command` of `owner`'s workspace `id`.
    pub fn workspace_wait(
        &self,
        id: &str,
        command: &str,
        timeout_ms: Option<u64>,
        kill: bool,
        owner: Owner,
        stop: Option<&ClientStop>,
    ) -> Result<Waited, EngineError> {
        let interrupt = stop.map_or(Interrupt::Shutdown(&self.stop_read), ClientStop::interrupt);
        let (waited, teardown) = self.hold(id, owner, |w| {
            w.wait_background(command, timeout_ms, kill, Some(interrupt))
        })?;
        if let Some(t) = teardown {
            self.teardown(t);
        }
        waited
    }
}
