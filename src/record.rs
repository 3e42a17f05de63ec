//! The record: one JSON object that says what happened, built the same way by every front end
//! (`run`, `exec`, and the engine's jobs and sessions).
//!
//! Its verdict fields are typed: [`StopReason`] (its `Display` is the wire spelling fixed by
//! docs/ARCHITECTURE.md) and [`Phase`]. A resource verdict comes only from evidence the program
//! cannot forge: the supervisor's own stops, the kernel's wait status and the cgroup's
//! counters ([`jail_verdict`]); see docs/ARCHITECTURE.md, "Verdicts come from the kernel".

use crate::jail::Control;
use crate::supervise::{Outcome, Stop};
use serde::{Serialize, Serializer};
use serde_json::{json, Value};
use std::fmt;
use std::time::Instant;

/// Where a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Plan,
    PolicyCheck,
    Execute,
    Validate,
    Finalize,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::Plan => "plan",
            Phase::PolicyCheck => "policy_check",
            Phase::Execute => "execute",
            Phase::Validate => "validate",
            Phase::Finalize => "finalize",
        })
    }
}

/// Why a run ended: a closed set. Suffixes that carry text (`invalid_action:<what>`, a
/// field path, a syscall or rule name) are made printable and bounded by
/// [`StopReason::suffix`], so a stop reason is always one short line of ASCII.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    Success,
    InvalidAction(String),
    InvalidRequest(String),
    LanguageDeniedPolicy,
    LanguageDeniedExecution,
    StaticPolicyViolation(String),
    CodeTimeout,
    CodeCpuLimit,
    CodeMemoryLimit,
    CodePidsLimit,
    CodeOutputTooLarge,
    CodeStderrTooLarge,
    CodeForbiddenSyscall(String),
    CodeRuntimeError(i32),
    CodeKilled(String),
    InvalidCodeOutput(String),
    AgentjailError(String),
    SandboxUnavailable(String),
    MaxSeconds,
    Interrupted(String),
}

/// Longest suffix kept in a stop reason.
pub const MAX_SUFFIX_CHARS: usize = 96;

impl StopReason {
    /// The stop reason of the static check's decision (`success` for an allow, which never
    /// stops): the check crate decides, the record names the verdict.
    pub fn of_check(decision: &agentjail_check::Decision) -> StopReason {
        match decision.reason.as_str() {
            "policy_pass" => StopReason::Success,
            "language_denied_policy" => StopReason::LanguageDeniedPolicy,
            "language_denied_execution" => StopReason::LanguageDeniedExecution,
            other => StopReason::StaticPolicyViolation(
                other
                    .strip_prefix("static_policy_violation:")
                    .unwrap_or(other)
                    .to_string(),
            ),
        }
    }

    /// A printable, bounded suffix: ASCII letters, digits and `_ - . / , ~ :` are kept, every
    /// other byte becomes `%XX`; longer than [`MAX_SUFFIX_CHARS`], it is cut and ends in `~`.
    pub fn suffix(text: &str) -> String {
        let mut out = String::new();
        for b in text.bytes() {
            if b.is_ascii_alphanumeric() || b"_-./,~:".contains(&b) {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
            if out.len() > MAX_SUFFIX_CHARS {
                out.truncate(MAX_SUFFIX_CHARS - 1);
                out.push('~');
                break;
            }
        }
        out
    }

    /// Read back a stop reason agentjail wrote (a cached record's). Only the kinds that can
    /// be cached, plus `success`; anything else is None.
    pub fn parse_stored(s: &str) -> Option<StopReason> {
        let (head, tail) = s.split_once(':').unwrap_or((s, ""));
        match head {
            "success" if tail.is_empty() => Some(StopReason::Success),
            "code_runtime_error" => tail.parse().ok().map(StopReason::CodeRuntimeError),
            "invalid_code_output" if !tail.is_empty() => {
                Some(StopReason::InvalidCodeOutput(tail.into()))
            }
            "code_forbidden_syscall" if !tail.is_empty() => {
                Some(StopReason::CodeForbiddenSyscall(tail.into()))
            }
            _ => None,
        }
    }

    pub fn is_success(&self) -> bool {
        *self == StopReason::Success
    }

    /// The supervisor's own stop, as a stop reason.
    pub fn from_stop(stop: &Stop) -> StopReason {
        match stop {
            Stop::WallTimeout => StopReason::CodeTimeout,
            Stop::CpuLimit => StopReason::CodeCpuLimit,
            Stop::StdoutCap => StopReason::CodeOutputTooLarge,
            Stop::StderrCap => StopReason::CodeStderrTooLarge,
            Stop::ForbiddenSyscall { name, .. } => StopReason::CodeForbiddenSyscall(name.clone()),
            Stop::Interrupted { signal } => {
                StopReason::Interrupted(signal_name(*signal).to_lowercase())
            }
        }
    }

    /// How a program that agentjail did not stop ended, from its wait status alone.
    pub fn from_exit(exit_code: Option<i32>, signal: Option<i32>) -> StopReason {
        match (exit_code, signal) {
            (Some(0), _) => StopReason::Success,
            (Some(c), _) => StopReason::CodeRuntimeError(c),
            (None, Some(s)) => StopReason::CodeKilled(signal_name(s)),
            _ => StopReason::CodeKilled("unknown".into()),
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use StopReason::*;
        let s = |f: &mut fmt::Formatter<'_>, head: &str, tail: &str| {
            write!(f, "{head}:{}", StopReason::suffix(tail))
        };
        match self {
            Success => f.write_str("success"),
            InvalidAction(w) => s(f, "invalid_action", w),
            InvalidRequest(w) => s(f, "invalid_request", w),
            LanguageDeniedPolicy => f.write_str("policy_block:language_denied_policy"),
            LanguageDeniedExecution => f.write_str("policy_block:language_denied_execution"),
            StaticPolicyViolation(r) => s(f, "policy_block:static_policy_violation", r),
            CodeTimeout => f.write_str("code_timeout"),
            CodeCpuLimit => f.write_str("code_cpu_limit"),
            CodeMemoryLimit => f.write_str("code_memory_limit"),
            CodePidsLimit => f.write_str("code_pids_limit"),
            CodeOutputTooLarge => f.write_str("code_output_too_large"),
            CodeStderrTooLarge => f.write_str("code_stderr_too_large"),
            CodeForbiddenSyscall(n) => s(f, "code_forbidden_syscall", n),
            CodeRuntimeError(c) => write!(f, "code_runtime_error:{c}"),
            CodeKilled(sig) => s(f, "code_killed", sig),
            InvalidCodeOutput(w) => s(f, "invalid_code_output", w),
            AgentjailError(w) => s(f, "agentjail_error", w),
            SandboxUnavailable(c) => s(f, "sandbox_unavailable", c),
            MaxSeconds => f.write_str("max_seconds"),
            Interrupted(sig) => s(f, "interrupted", sig),
        }
    }
}

impl Serialize for StopReason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The one signal-number → name map (`SIGKILL`, `SIGSEGV`, ...; `SIG<n>` for the rest).
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

/// The verdict on a finished jail from evidence the program cannot forge; None when the
/// program simply exited or died of a signal nobody attributes to a limit.
///
/// Evidence: the supervisor's own stop (deadline, cap, seccomp notification, interrupt);
/// the memory cgroup's oom_kill counter; SIGXCPU (the CPU rlimit backstop, sent by the
/// kernel); SIGKILL with the cgroup's peak within 1/16 of the limit; the pids cgroup's
/// refusal counter with a failed exit.
pub fn jail_verdict(o: &Outcome, memory_limit: u64) -> Option<StopReason> {
    if let Some(stop) = &o.stop {
        return Some(StopReason::from_stop(stop));
    }
    if o.oom_kills > 0 {
        return Some(StopReason::CodeMemoryLimit);
    }
    if o.signal == Some(libc::SIGXCPU) {
        return Some(StopReason::CodeCpuLimit);
    }
    if o.signal == Some(libc::SIGKILL)
        && o.peak_memory_bytes
            .is_some_and(|p| p >= memory_limit.saturating_sub(memory_limit / 16))
    {
        return Some(StopReason::CodeMemoryLimit);
    }
    if o.pids_limit_hits > 0 && o.exit_code != Some(0) {
        return Some(StopReason::CodePidsLimit);
    }
    None
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
    pub fn of_jail(e: &crate::jail::JailError) -> RecordError {
        use crate::jail::JailError;
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
        }
    }

    /// A session call that ended with done: the interpreter lives on, so there is no exit
    /// status to read.
    pub fn of_call(c: &crate::supervise::CallOutcome) -> Execution {
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
    pub jail_start: crate::run::Start,
    pub ended: bool,
    pub ended_reason: Option<String>,
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
    /// `exec`'s command line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
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
    pub jail_start: Option<crate::run::Start>,
    /// The validated output object (json mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicyRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionRef>,
    /// A session call's value (the trailing expression, as text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
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
            run_id: crate::ids::run_id(),
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
            Err(e) => json!({
                "run_id": value.get("run_id"),
                "stop_reason": value.get("stop_reason"),
                "redaction": {"error": e},
            }),
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
            run_id: crate::ids::run_id(),
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
/// The audit log, opened for appending (created 0600 if missing), reached without following
/// anything another user can swap (crate::hostpath): the directory walked and checked, the
/// file opened under its fd with O_NOFOLLOW, and it must be a regular file of ours with one
/// name that only we can write. Servers call it once at start, so a bad path is refused
/// before any job.
pub fn open_audit(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    let (dir, name) =
        crate::hostpath::parent_and_name(path, "the audit log").map_err(std::io::Error::other)?;
    let flags = libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_NONBLOCK;
    let f = std::fs::File::from(crate::hostpath::openat(&dir, &name, flags, 0o600)?);
    let st =
        crate::jail::sys::fstat_file(f.as_raw_fd()).map_err(std::io::Error::from_raw_os_error)?;
    if st.mode & libc::S_IFMT != libc::S_IFREG
        || st.uid != crate::jail::sys::geteuid()
        || st.nlink != 1
        || st.mode & 0o022 != 0
    {
        return Err(std::io::Error::other(
            "not a regular file of ours with one name that only we can write",
        ));
    }
    Ok(f)
}

/// Append one record as one line: O_APPEND, a single write under an exclusive lock, fsync.
/// Concurrent runs never interleave lines.
pub fn append_audit(path: &std::path::Path, record: &Value) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    // Safe JSON: no raw C0/C1 control, U+2028/2029, NEL or bidi override can split this line
    // for a line-based reader or steer a terminal.
    let mut line = agentjail_json::to_safe_string(record).into_bytes();
    line.push(b'\n');
    let mut f = open_audit(path)?;
    // Released when the file closes.
    crate::jail::sys::flock_exclusive(f.as_raw_fd()).map_err(std::io::Error::from_raw_os_error)?;
    f.write_all(&line)?;
    f.sync_data()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_reasons_keep_the_seed_spelling() {
        assert_eq!(StopReason::Success.to_string(), "success");
        assert_eq!(
            StopReason::InvalidAction("code_too_long".into()).to_string(),
            "invalid_action:code_too_long"
        );
        assert_eq!(
            StopReason::StaticPolicyViolation("import_not_allowed:os".into()).to_string(),
            "policy_block:static_policy_violation:import_not_allowed:os"
        );
        assert_eq!(
            StopReason::CodeRuntimeError(3).to_string(),
            "code_runtime_error:3"
        );
        assert_eq!(
            StopReason::InvalidCodeOutput("a/b".into()).to_string(),
            "invalid_code_output:a/b"
        );
    }

    #[test]
    fn suffixes_are_printable_and_bounded() {
        let hostile = "x\n\u{202e}y\u{2028}".repeat(100);
        let s = StopReason::InvalidCodeOutput(hostile).to_string();
        assert!(s.len() <= "invalid_code_output:".len() + MAX_SUFFIX_CHARS);
        assert!(s.bytes().all(|b| b.is_ascii_graphic()), "{s}");
        assert!(s.ends_with('~'));
    }
}
