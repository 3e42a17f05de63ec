//! The static check: does the policy allow this action to run at all?
//!
//! Defence in depth, never the boundary. A static check of a dynamic language can be
//! defeated by code it does not understand; the namespace jail, seccomp filter and limits
//! must contain whatever slips past. What this check buys is an early, explainable "no"
//! for the obvious attempts (imports of `os`, `eval`, dunder walks, URLs) and a clean
//! rejection of inputs built to break tooling (deep nesting, source-encoding tricks).
//!
//! Order (the first failing step gives the reason):
//! 1. `language_denied_policy` — the language is not in `policy.languages.allowed`;
//! 2. `language_denied_execution` — the language is not in `policy.languages.execute` (the
//!    seed's second allowlist; a policy can only list [`EXECUTION_LANGUAGES`] there);
//! 3. `static_policy_violation:<rules>` — the language's rules ([`python`] with `[check]`,
//!    [`javascript`] with `[check.javascript]`), the first three sorted unique rule names
//!    joined by `,` (all violations are listed in `violations`);
//! 4. otherwise `policy_pass`.

pub mod javascript;
pub mod python;
pub mod stdlib;
pub mod tables;

use crate::contract::Action;
use crate::policy::Policy;
use serde::Serialize;

/// Languages this build of agentjail can execute (a policy chooses among them with
/// `languages.execute`).
pub const EXECUTION_LANGUAGES: [&str; 2] = ["python", "javascript"];

/// The verdict of the static check, printed by `agentjail check` and kept in the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// `allow` or `deny`.
    pub decision: String,
    /// `policy_pass`, `language_denied_policy`, `language_denied_execution` or
    /// `static_policy_violation:<rules>`.
    pub reason: String,
    /// Every violation found, sorted by position then rule.
    pub violations: Vec<Violation>,
}

impl Decision {
    pub fn is_allow(&self) -> bool {
        self.decision == "allow"
    }

    /// The record's stop reason for a denial (`success` for an allow, which never stops).
    pub fn stop_reason(&self) -> crate::record::StopReason {
        use crate::record::StopReason;
        match self.reason.as_str() {
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

    /// The decision of a source check alone (a session call: the language is the session's).
    pub fn from_violations(violations: Vec<Violation>) -> Self {
        if violations.is_empty() {
            return Decision {
                decision: "allow".into(),
                reason: "policy_pass".into(),
                violations,
            };
        }
        Decision::deny(static_reason(&violations), violations)
    }

    fn deny(reason: String, violations: Vec<Violation>) -> Self {
        Decision {
            decision: "deny".into(),
            reason,
            violations,
        }
    }
}

/// One rule that fired, where it fired (1-based line and column in characters; 0 when the
/// rule is about the whole source).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Violation {
    pub rule: String,
    pub detail: String,
    pub line: u32,
    pub column: u32,
}

impl Violation {
    /// The one violation of a source longer than a checker reads (`limit` bytes): nothing of
    /// it is parsed.
    pub fn source_too_large(len: usize, limit: usize) -> Violation {
        Violation {
            rule: "source_too_large".into(),
            detail: format!("{len} bytes; the checker reads at most {limit}"),
            line: 0,
            column: 0,
        }
    }
}

/// Decide whether `action` may run under `policy`. Apply the action's hints to the policy
/// first ([`crate::contract::apply_hints`]) so a tightened language list counts.
pub fn check_action(action: &Action, policy: &Policy) -> Decision {
    let language = action.language.trim().to_lowercase();
    let allowed = policy
        .languages
        .allowed
        .iter()
        .any(|l| l.trim().eq_ignore_ascii_case(&language));
    if !allowed {
        return Decision::deny("language_denied_policy".into(), Vec::new());
    }
    if !EXECUTION_LANGUAGES.contains(&language.as_str()) || !policy.executes(&language) {
        return Decision::deny("language_denied_execution".into(), Vec::new());
    }
    let violations = match language.as_str() {
        "javascript" => javascript::check_source(&action.code, &policy.check.javascript),
        _ => python::check_source_for_version(&action.code, &policy.check, policy.python_version()),
    };
    if violations.is_empty() {
        return Decision {
            decision: "allow".into(),
            reason: "policy_pass".into(),
            violations,
        };
    }
    Decision::deny(static_reason(&violations), violations)
}

/// `static_policy_violation:` and the first three sorted unique rule names, as the seed.
pub fn static_reason(violations: &[Violation]) -> String {
    let mut rules: Vec<&str> = violations.iter().map(|v| v.rule.as_str()).collect();
    rules.sort_unstable();
    rules.dedup();
    rules.truncate(3);
    format!("static_policy_violation:{}", rules.join(","))
}
