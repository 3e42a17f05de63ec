//! The record: one JSON object that says what happened, built the same way by every front end
//! (`run`, `exec`, and the engine's jobs and sessions).
//!
//! Its verdict fields are typed: [`StopReason`] (its `Display` is the wire spelling fixed by
//! docs/ARCHITECTURE.md) and [`Phase`]. A resource verdict comes only from evidence the program
//! cannot forge: the supervisor's own stops, the kernel's wait status and the cgroup's
//! counters ([`jail_verdict`]); see docs/ARCHITECTURE.md, "Verdicts come from the kernel".

use agentjail_jail::supervise::{Outcome, Stop};
use agentjail_jail::Control;
use serde::{Serialize, Serializer};
use serde_json::{json, Value};
use std::fmt;
use std::time::Instant;

/// Where a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
    /// The network allowlist's proxy denied a request and the policy says that stops the
    /// run (`network.deny_is_stop`): the host asked for.
    CodeNetworkDenied(String),
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
            CodeNetworkDenied(h) => s(f, "code_network_denied", h),
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

/// The record's `error` object for a jail that could not run: the control and why, or the
/// stage, errno and hint.
pub fn jail_error_json(e: &agentjail_jail::JailError) -> Value {
    use agentjail_jail::JailError;
    match e {
        JailError::Unavailable { control, detail } => {
            json!({"control": control, "detail": detail})
        }
        JailError::Setup(e) => json!({
            "stage": e.stage, "errno": e.errno, "message": e.to_string(), "hint": e.hint
        }),
    }
}

/// The record's `execution` section.
pub fn execution_json(o: &Outcome) -> Value {
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

#[derive(Debug, Clone, Serialize)]
pub struct TraceEntry {
    pub phase: Phase,
    pub ok: bool,
    pub duration_us: u64,
    #[serde(skip_serializing_if = "serde_json::Value::is_null")]
    pub detail: Value,
}

/// A finished record and its verdict.
#[derive(Debug, Clone)]
pub struct Record {
    pub stop_reason: StopReason,
    /// The record as printed (or returned by serve and mcp).
    pub value: Value,
    /// The copy for the audit log, once sealed (crate::redact); `value` until then.
    pub audit: Option<Value>,
}

impl Record {
    pub fn new(stop_reason: StopReason, value: Value) -> Record {
        Record {
            stop_reason,
            value,
            audit: None,
        }
    }

    /// Redact per the policy (crate::redact): the audit copy always, the printed one when
    /// the policy says so; both get the `redaction` section. A redactor that cannot be
    /// built leaves no unredacted audit copy: the audit copy then says so instead.
    pub fn seal(&mut self, policy: &crate::policy::Redaction) {
        match crate::redact::Redactor::of(policy) {
            Ok(r) => self.audit = Some(r.seal(&mut self.value)),
            Err(e) => {
                self.audit = Some(json!({
                    "run_id": self.value.get("run_id"),
                    "stop_reason": self.value.get("stop_reason"),
                    "redaction": {"error": e},
                }))
            }
        }
    }

    /// What the audit log stores.
    pub fn audit_value(&self) -> &Value {
        self.audit.as_ref().unwrap_or(&self.value)
    }

    pub fn is_ok(&self) -> bool {
        self.stop_reason.is_success()
    }
}

/// Builds one record: sections are set as the stages produce them, phases are timed as they
/// end, and `finish` adds the verdict fields.
pub struct Recorder {
    run_id: String,
    started: Instant,
    trace: Vec<TraceEntry>,
    fields: serde_json::Map<String, Value>,
}

impl Recorder {
    pub fn new() -> Recorder {
        Recorder {
            run_id: agentjail_jail::ids::run_id(),
            started: Instant::now(),
            trace: Vec::new(),
            fields: serde_json::Map::new(),
        }
    }

    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// When the run started (the whole-run budget counts from here).
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Set a top-level section (`action`, `decision`, `execution`, `error`, ...).
    pub fn set(&mut self, key: &str, value: Value) {
        self.fields.insert(key.to_string(), value);
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
        self.set("enforcement", json!(controls));
    }

    /// The verdict fields and the finalize phase; the record is complete.
    pub fn finish(mut self, reason: StopReason, phase: Phase) -> Record {
        let t = Instant::now();
        let ok = reason.is_success();
        self.set("run_id", json!(self.run_id));
        self.set("status", json!(if ok { "ok" } else { "stopped" }));
        self.set("stop_reason", json!(reason));
        self.set("phase", json!(phase));
        self.set("agentjail_version", json!(env!("CARGO_PKG_VERSION")));
        let total_us = self.started.elapsed().as_micros() as u64;
        self.phase(Phase::Finalize, ok, t, json!({ "total_us": total_us }));
        let trace = json!(self.trace);
        self.set("trace", trace);
        Record::new(reason, Value::Object(self.fields))
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new()
    }
}

/// The record printed when agentjail itself cannot work (exit 2): still valid JSON with the
/// record's keys, so a caller parsing stdout never has to special-case it.
pub fn error_record(reason: StopReason, message: &str) -> Value {
    json!({
        "run_id": agentjail_jail::ids::run_id(),
        "status": "stopped",
        "stop_reason": reason,
        "phase": Phase::Plan,
        "error": {"message": message},
        "trace": [],
        "agentjail_version": env!("CARGO_PKG_VERSION"),
    })
}

/// The audit log, opened for appending (created 0600 if missing), reached without following
/// anything another user can swap (crate::hostpath): the directory walked and checked, the
/// file opened under its fd with O_NOFOLLOW, and it must be a regular file of ours with one
/// name that only we can write. Servers call it once at start, so a bad path is refused
/// before any job.
pub fn open_audit(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    let (dir, name) =
        crate::hostpath::parent_and_name(path, "the audit log").map_err(std::io::Error::other)?;
    let flags = libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_NONBLOCK;
    let f = std::fs::File::from(crate::hostpath::openat(&dir, &name, flags, 0o600)?);
    let st = agentjail_jail::os::dir::stat(&f).map_err(std::io::Error::from_raw_os_error)?;
    if st.mode & libc::S_IFMT != libc::S_IFREG
        || st.uid != agentjail_jail::os::process::geteuid()
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

    // Safe JSON: no raw C0/C1 control, U+2028/2029, NEL or bidi override can split this line
    // for a line-based reader or steer a terminal.
    let mut line = agentjail_json::to_safe_string(record).into_bytes();
    line.push(b'\n');
    let mut f = open_audit(path)?;
    // Released when the file closes.
    agentjail_jail::os::fd::lock_exclusive(&f).map_err(std::io::Error::from_raw_os_error)?;
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
