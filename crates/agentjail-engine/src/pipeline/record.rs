//! The record: one JSON object that says what happened, built the same way by every front end
//! (`run`, `exec`, and the engine's jobs and sessions). [`Record`] is typed: its fields are
//! the record's keys (docs/REFERENCE.md, "The record"); the stages set its [`Sections`]
//! through a [`Recorder`], whose `finish` adds the verdict fields. It is serialised once
//! ([`Record::to_value`]; keys sorted, as the contract has always printed them) and sealed
//! ([`Sealed`]: the printed copy and the audit log's, redacted per the policy).

use crate::pipeline::source::Start;
pub use crate::verdict::{signal_name, Phase, StopReason};
use agentjail_jail::supervise::Outcome;
use agentjail_jail::Control;
use serde::Serialize;
use serde_json::{json, Value};
use std::time::Instant;

/// A stage ended the run: the verdict and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    pub reason: StopReason,
    pub phase: Phase,
}

pub fn stopped(reason: StopReason, phase: Phase) -> Stopped {
    Stopped { reason, phase }
}

/// The record's `compile`: the compile step of a compiled language as the kernel and the
/// supervisor saw it (crate::pipeline::compile).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct CompileRecord {
    pub language: String,
    pub toolchain: ToolchainRef,
    /// The argv as run in the compile jail.
    pub argv: Vec<String>,
    /// `ok`, or the stop reason of the compile (`compile_error`, `compile_timeout`,
    /// `compile_memory_limit`, `max_seconds`, `interrupted:...`, `sandbox_unavailable:...`).
    pub status: String,
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub wall_ms: u64,
    pub cpu_ms: Option<u64>,
    pub peak_memory_bytes: Option<u64>,
    pub stdout: String,
    pub stderr: String,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    /// What ended the compiler when it was not its own exit: the supervisor's stop
    /// (`code_forbidden_syscall:...`, `code_stderr_too_large`, ...), else null.
    pub stopped_by: Option<String>,
    /// The files handed to the run jail (relative to its /app/bin): path, bytes, sha256.
    pub outputs: Vec<Value>,
    /// True when the outcome came from the compile cache (crate::pipeline::compile_cache):
    /// no compile ran for this job; the figures are the stored compile's.
    pub cached: bool,
    /// How the compile jail was started: `warm` (before the job, by `serve`'s engine),
    /// `cold` (for this job); null when no compile jail ran (a cached outcome).
    #[serde(default)]
    pub jail_start: Option<crate::pipeline::source::Start>,
}

/// The toolchain of a `compile` section: the compiler's resolved path and its version.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ToolchainRef {
    pub path: String,
    pub version: String,
}

/// The record's `error`: why a stage failed, in one of the shapes the contract fixes.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum RecordError {
    /// A stage's refusal in words (`invalid_action`, `invalid_code_output`, a session's).
    Message { message: String },
    /// A control the policy requires is missing on this host.
    Unavailable { control: String, detail: String },
    /// The jail's set-up failed: the child's stage, its errno and the fix.
    Setup {
        stage: String,
        errno: Option<i32>,
        message: String,
        hint: String,
    },
    /// The runner's report of the program's exception (crate::runner::error_report);
    /// null when the program failed without one.
    Runner(Value),
}

impl RecordError {
    pub fn message(message: impl Into<String>) -> RecordError {
        RecordError::Message {
            message: message.into(),
        }
    }

    /// A jail that could not run: the control and why, or the stage, errno and hint.
    pub fn of_jail(e: &agentjail_jail::JailError) -> RecordError {
        use agentjail_jail::JailError;
        match e {
            JailError::Unavailable { control, detail } => RecordError::Unavailable {
                control: control.to_string(),
                detail: detail.to_string(),
            },
            JailError::Setup(s) => RecordError::Setup {
                stage: s.stage.to_string(),
                errno: s.errno,
                message: s.to_string(),
                hint: s.hint.to_string(),
            },
        }
    }
}

/// The record's `execution`: what the supervisor and the kernel saw of the program. A
/// session call that ended with `done` has no exit status, no cgroup peak and no counters:
/// those keys are absent from its record (the `Option<Option<_>>` ones are null when the
/// kernel had no figure, absent when the call had none to give).
#[derive(Debug, Clone, Serialize)]
pub struct Execution {
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub wall_ms: u64,
    pub cpu_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_memory_bytes: Option<Option<u64>>,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    pub stdout: String,
    pub stderr: String,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oom_kills: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pids_limit_hits: Option<u64>,
    /// A workspace command the runner stopped at its timeout (the workspace lives on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timed_out: Option<bool>,
    /// Whose figures these are, where not all the supervisor's (a workspace command's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<ExecutionSource>,
    /// The jail ended during a workspace command: the workspace is over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace_ended: Option<bool>,
    /// `agentjail learn`'s observe mode only: the syscalls outside the allowlist that were
    /// refused with ENOSYS (never run) instead of stopping the run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub observed_syscalls: Vec<String>,
    /// `agentjail learn`'s observe mode only (absent otherwise): the paths the program
    /// opened (open, openat, openat2 as the allowlist allows them), which the kernel then
    /// opened or refused as in any run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_opens: Option<ObservedOpens>,
}

/// The record's `execution.observed_opens`.
#[derive(Debug, Clone, Serialize)]
pub struct ObservedOpens {
    /// Each distinct path once, in the order first opened; at most
    /// `agentjail_jail::supervise::OPENS_CAP`.
    pub paths: Vec<ObservedOpen>,
    /// More distinct paths were opened than the list holds.
    pub truncated: bool,
}

/// One path of [`ObservedOpens`].
#[derive(Debug, Clone, Serialize)]
pub struct ObservedOpen {
    /// As the jail names it: absolute (a relative one resolved against the program's cwd
    /// or directory fd), or as given when that directory could not be read.
    pub path: String,
    pub syscall: &'static str,
    /// The directory fd a path that stayed relative was relative to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dirfd: Option<i32>,
}

impl ObservedOpens {
    fn of(o: &agentjail_jail::supervise::ObservedOpens) -> ObservedOpens {
        ObservedOpens {
            paths: o
                .opens
                .iter()
                .map(|x| ObservedOpen {
                    path: x.path.clone(),
                    syscall: x.syscall,
                    dirfd: x.dirfd,
                })
                .collect(),
            truncated: o.truncated,
        }
    }
}

/// The record's `execution.source`: who measured what.
#[derive(Debug, Clone, Serialize)]
pub struct ExecutionSource {
    pub exit_code: &'static str,
    pub peak_memory_bytes: &'static str,
    pub cpu_ms: &'static str,
}

impl Execution {
    /// A jail that ended (a run, `exec`, a session call the jail did not survive).
    pub fn of(o: &Outcome) -> Execution {
        Execution {
            exit_code: o.exit_code,
            signal: o.signal.map(signal_name),
            wall_ms: o.wall_ms,
            cpu_ms: o.cpu_ms,
            peak_memory_bytes: Some(o.peak_memory_bytes),
            stdout_bytes: o.stdout.total,
            stderr_bytes: o.stderr.total,
            stdout: String::from_utf8_lossy(&o.stdout.data).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr.data).into_owned(),
            stdout_truncated: o.stdout.truncated,
            stderr_truncated: o.stderr.truncated,
            oom_kills: Some(o.oom_kills),
            pids_limit_hits: Some(o.pids_limit_hits),
            timed_out: None,
            source: None,
            workspace_ended: None,
            observed_syscalls: o.observed_syscalls.clone(),
            observed_opens: o.observed_opens.as_ref().map(ObservedOpens::of),
        }
    }

    /// A session call that ended with done: the interpreter lives on, so there is no exit
    /// status to read.
    pub fn of_call(c: &agentjail_jail::supervise::CallOutcome) -> Execution {
        Execution {
            exit_code: None,
            signal: None,
            wall_ms: c.wall_us / 1000,
            cpu_ms: Some(c.cpu_us / 1000),
            peak_memory_bytes: None,
            stdout_bytes: c.stdout.total,
            stderr_bytes: c.stderr.total,
            stdout: String::from_utf8_lossy(&c.stdout.data).into_owned(),
            stderr: String::from_utf8_lossy(&c.stderr.data).into_owned(),
            stdout_truncated: c.stdout.truncated,
            stderr_truncated: c.stderr.truncated,
            oom_kills: None,
            pids_limit_hits: None,
            timed_out: None,
            source: None,
            workspace_ended: None,
            observed_syscalls: Vec::new(),
            observed_opens: None,
        }
    }
}

/// The record's `action`: what was run, never the code itself. A session call has no
/// action of its own: only the call's hash and size.
#[derive(Debug, Clone, Serialize)]
pub struct ActionRef {
    #[serde(flatten)]
    pub named: Option<ActionName>,
    pub code_hash: String,
    pub chars: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct ActionName {
    pub id: String,
    pub language: String,
    pub entrypoint: String,
}

/// The record's `policy`: which policy file (or `<embedded default>`) and its hash.
#[derive(Debug, Clone, Serialize)]
pub struct PolicyRef {
    pub path: String,
    pub sha256: String,
}

impl PolicyRef {
    pub fn of(p: &crate::policy::LoadedPolicy) -> PolicyRef {
        PolicyRef {
            path: p.path.clone(),
            sha256: p.sha256.clone(),
        }
    }
}

/// The record's `caller`: the peer's uid where the front end knows it.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Caller {
    pub uid: u32,
}

/// The record's `session`: the session after this call.
#[derive(Debug, Clone, Serialize)]
pub struct SessionRef {
    pub id: String,
    pub calls: u64,
    pub exec_ms: u64,
    pub jail_start: Start,
    pub ended: bool,
    pub ended_reason: Option<String>,
}

/// The record's `workspace`: the workspace after this command.
#[derive(Debug, Clone, Serialize)]
pub struct WorkspaceRef {
    pub id: String,
    pub execs: u64,
    pub jail_start: Start,
    pub ended: bool,
    pub ended_reason: Option<String>,
    /// The host directory bound at /workspace (`host_dir`), or null for a tmpfs.
    pub host_dir: Option<String>,
}

/// The record's `command`: `exec`'s command line, or what a workspace command ran.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum CommandRef {
    Argv(Vec<String>),
    Workspace(WorkspaceCommand),
}

/// A workspace command as the client sent it (never its stdin or env values).
#[derive(Debug, Clone, Serialize)]
pub struct WorkspaceCommand {
    /// The argv, when one was sent (null for a shell line).
    pub argv: Option<Vec<String>>,
    /// The shell line, when one was sent.
    pub command: Option<String>,
    pub cwd: String,
    pub background: bool,
    pub stdin_bytes: usize,
    pub env_names: Vec<String>,
}

/// The record's `cache` on a hit: which stored run it cites.
#[derive(Debug, Clone, Serialize)]
pub struct CacheRef {
    pub hit: bool,
    pub key: String,
    pub stored_at: u64,
    pub original_run_id: Value,
}

/// What the stages found, each section a key of the record; a section no stage set is
/// absent. Key order on the wire is the JSON writer's (sorted), not this declaration's.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Sections {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<ActionRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifacts_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifacts_skipped: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caller: Option<Caller>,
    /// `exec`'s command line, or a workspace command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandRef>,
    /// The compile step of a compiled language (crate::pipeline::compile).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compile: Option<CompileRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<agentjail_check::Decision>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enforcement: Option<Vec<Control>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub environment: Option<crate::environment::Environment>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<RecordError>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution: Option<Execution>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jail_start: Option<Start>,
    /// The validated output object (json mode).
    /// The network allowlist's requests (src/netproxy.rs: `record_json`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicyRef>,
    /// The rich results (MIME bundles) the program displayed, typed from their content
    /// (crate::pipeline::results), and what was dropped or retyped; absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub results: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub results_skipped: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionRef>,
    /// A session call's value (the trailing expression, as text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<WorkspaceRef>,
    /// A cache hit's: the stored run's outcome sections, as stored (cached records are
    /// agentjail's own, written from this type).
    #[serde(flatten)]
    pub cited: serde_json::Map<String, Value>,
}

/// `status`: ok only when the stop reason is success.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Stopped,
}

#[derive(Debug, Clone, Serialize)]
pub struct TraceEntry {
    pub phase: Phase,
    pub ok: bool,
    pub duration_us: u64,
    #[serde(skip_serializing_if = "serde_json::Value::is_null")]
    pub detail: Value,
}

/// The record: its verdict fields and the sections the stages set. Made by
/// [`Recorder::finish`] (a run, a session call, `exec`) or [`Record::refused`] (agentjail
/// could not work); serialised once, with [`Record::to_value`].
#[derive(Debug, Clone, Serialize)]
pub struct Record {
    pub run_id: String,
    pub status: Status,
    pub stop_reason: StopReason,
    pub phase: Phase,
    pub agentjail_version: &'static str,
    pub trace: Vec<TraceEntry>,
    #[serde(flatten)]
    pub sections: Sections,
}

impl Record {
    /// The record printed when agentjail itself cannot work (exit 2): still valid JSON with
    /// the record's keys, so a caller parsing stdout never has to special-case it.
    pub fn refused(reason: StopReason, message: &str) -> Record {
        Record {
            run_id: agentjail_jail::ids::run_id(),
            status: Status::Stopped,
            stop_reason: reason,
            phase: Phase::Plan,
            agentjail_version: env!("CARGO_PKG_VERSION"),
            trace: Vec::new(),
            sections: Sections {
                error: Some(RecordError::message(message)),
                ..Default::default()
            },
        }
    }

    /// The record as JSON (objects' keys sorted: the wire order).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|e| {
            json!({"run_id": self.run_id, "status": "stopped",
                   "stop_reason": StopReason::AgentjailError("record".into()),
                   "error": {"message": e.to_string()}})
        })
    }

    pub fn is_ok(&self) -> bool {
        self.stop_reason.is_success()
    }

    /// Serialise and redact per the policy (crate::redact): what is printed and audited.
    pub fn seal(&self, policy: &crate::policy::Redaction) -> Sealed {
        Sealed::of(self.stop_reason.clone(), self.to_value(), policy)
    }
}

/// A finished record as JSON, sealed: the printed copy and the audit log's.
#[derive(Debug, Clone)]
pub struct Sealed {
    pub stop_reason: StopReason,
    /// The record as printed (or returned by serve, mcp and http).
    pub value: Value,
    /// The copy for the audit log (crate::redact).
    pub audit: Option<Value>,
}

impl Sealed {
    /// Redact per the policy (crate::redact): the audit copy always, the printed one when
    /// the policy says so; both get the `redaction` section. A redactor that cannot be
    /// built leaves no unredacted audit copy: the audit copy then says so instead.
    pub fn of(
        stop_reason: StopReason,
        mut value: Value,
        policy: &crate::policy::Redaction,
    ) -> Sealed {
        let audit = match crate::redact::Redactor::of(policy) {
            Ok(r) => r.seal(&mut value),
            Err(e) => {
                let stub = json!({
                    "run_id": value.get("run_id"),
                    "stop_reason": value.get("stop_reason"),
                    "redaction": {"error": e.to_string()},
                });
                // The printed copy holds a brokered credential's value whenever the
                // upstream echoed it: with no redactor, it is the stub too.
                if !policy.secrets.is_empty() {
                    value = stub.clone();
                }
                stub
            }
        };
        Sealed {
            stop_reason,
            value,
            audit: Some(audit),
        }
    }

    /// What the audit log stores.
    pub fn audit_value(&self) -> &Value {
        self.audit.as_ref().unwrap_or(&self.value)
    }

    pub fn is_ok(&self) -> bool {
        self.stop_reason.is_success()
    }

    /// The front end's caller (http: the token's name, the peer): in the printed record,
    /// and in the audit copy when `audit`.
    pub fn set_caller(&mut self, who: Value, audit: bool) {
        self.value["caller"] = who.clone();
        if let Some(a) = self.audit.as_mut().filter(|a| audit && a.is_object()) {
            a["caller"] = who;
        }
    }
}

/// Builds one record: sections are set as the stages produce them, phases are timed as they
/// end, and `finish` adds the verdict fields.
pub struct Recorder {
    run_id: String,
    started: Instant,
    trace: Vec<TraceEntry>,
    /// The sections so far; the stages set them.
    pub sections: Sections,
}

impl Recorder {
    pub fn new() -> Recorder {
        Recorder {
            run_id: agentjail_jail::ids::run_id(),
            started: Instant::now(),
            trace: Vec::new(),
            sections: Sections::default(),
        }
    }

    /// A recorder whose record names its policy and, when known, its caller.
    pub fn for_job(policy: PolicyRef, caller: Option<u32>) -> Recorder {
        let mut r = Recorder::new();
        r.sections.policy = Some(policy);
        r.sections.caller = caller.map(|uid| Caller { uid });
        r
    }

    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// When the run started (the whole-run budget counts from here).
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Set the record's `error`.
    pub fn error(&mut self, e: RecordError) {
        self.sections.error = Some(e);
    }

    /// Record the end of a phase that began at `t`.
    pub fn phase(&mut self, phase: Phase, ok: bool, t: Instant, detail: Value) {
        self.trace.push(TraceEntry {
            phase,
            ok,
            duration_us: t.elapsed().as_micros() as u64,
            detail,
        });
    }

    pub fn set_enforcement(&mut self, controls: &[Control]) {
        self.sections.enforcement = Some(controls.to_vec());
    }

    /// The verdict fields and the finalize phase; the record is complete.
    pub fn finish(mut self, reason: StopReason, phase: Phase) -> Record {
        let t = Instant::now();
        let ok = reason.is_success();
        let total_us = self.started.elapsed().as_micros() as u64;
        self.phase(Phase::Finalize, ok, t, json!({ "total_us": total_us }));
        Record {
            run_id: self.run_id,
            status: if ok { Status::Ok } else { Status::Stopped },
            stop_reason: reason,
            phase,
            agentjail_version: env!("CARGO_PKG_VERSION"),
            trace: self.trace,
            sections: self.sections,
        }
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new()
    }
}
