//! The verdict vocabulary: why a run ended ([`StopReason`], its `Display` the wire spelling
//! fixed by docs/ARCHITECTURE.md) and where ([`Phase`]). A leaf: the contract, the output
//! validator, the cache and every front end name these without the pipeline.
//!
//! A resource verdict comes only from evidence the program cannot forge: the supervisor's own
//! stops, the kernel's wait status and the cgroup's counters ([`jail_verdict`]); see
//! docs/ARCHITECTURE.md, "Verdicts come from the kernel".

use agentjail_jail::supervise::{Outcome, Stop};
use serde::{Serialize, Serializer};
use std::fmt;

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
    /// The compile step failed: the compiler exited non-zero, or ended any other way that
    /// is not one of the two limits below (the detail is in the record's `compile`).
    CompileError,
    /// The compile step ran past its wall or CPU limit.
    CompileTimeout,
    /// The compile step ran out of its memory limit.
    CompileMemoryLimit,
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
            "compile_error" if tail.is_empty() => Some(StopReason::CompileError),
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
            CompileError => f.write_str("compile_error"),
            CompileTimeout => f.write_str("compile_timeout"),
            CompileMemoryLimit => f.write_str("compile_memory_limit"),
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
