//! The static check: does the policy allow this code to run at all?
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
//!
//! Under rules with `enforce = false` step 3 refuses nothing: the decision is `allow`, its
//! reason `check_not_enforced:<rules>` (or `policy_pass` when nothing was found), and the
//! findings are in its `check` ([`Unenforced`]); steps 1 and 2 refuse as always.
//!
//! Its own crate: it reads the policy's rule types ([`CheckRules`], [`javascript::JsRules`],
//! defined here and held by the policy) and returns a [`Decision`] with its violations. It
//! knows nothing of actions, jails or records; the engine crate turns a decision into a stop
//! reason (`cargo xtask house`, rule 7, checks that this crate depends on no other agentjail crate).

pub mod javascript;
pub mod python;
mod rules;
pub mod stdlib;
mod table_types;
pub mod tables;

pub use rules::CheckRules;
use serde::Serialize;

/// What a program's stdin carries, which decides the `input()` rule (`too_many_input_reads`,
/// `name_not_allowed:input`): the action's `output_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputMode {
    /// The JSON contract: stdin is one payload line, so `input()` may be called at most
    /// `max_input_reads` times, never in a loop, function, lambda or comprehension, and the
    /// name `input` may not be rebound or passed around.
    #[default]
    Json,
    /// Judge mode: stdin is the raw bytes of `stdin`, read as the program likes; `input` is
    /// an ordinary builtin and the rule does not apply.
    Text,
}

/// Languages this build of agentjail can execute (a policy chooses among them with
/// `languages.execute`).
pub const EXECUTION_LANGUAGES: [&str; 8] = [
    "python",
    "javascript",
    "c",
    "cpp",
    "java",
    "go",
    "rust",
    "bash",
];

/// Executed languages no static check exists for: a policy that executes one says
/// `check = "none"` for it, and their decision is `not_checked` (the jail alone holds them).
pub const UNCHECKED_LANGUAGES: [&str; 6] = ["c", "cpp", "java", "go", "rust", "bash"];

/// The verdict of the static check, printed by `agentjail check` and kept in the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// `allow` or `deny`.
    pub decision: String,
    /// `policy_pass`, `check_not_enforced:<rules>` (an allow), `language_denied_policy`,
    /// `language_denied_execution` or `static_policy_violation:<rules>`.
    pub reason: String,
    /// Every violation found, sorted by position then rule (what refused the program:
    /// always empty in an `allow`).
    pub violations: Vec<Violation>,
    /// Present exactly when the rules ran with `enforce = false`: what they found, none of
    /// it refusing. Absent under an enforcing policy (those records are unchanged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<Unenforced>,
    /// Why there was nothing to check, where the code was not checked (a workspace
    /// command: a shell line is not Python); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The static rules' findings under `check.enforce = false`: reported, never refusing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unenforced {
    /// Always `false` (the key is there so a reader never has to infer it).
    pub enforced: bool,
    /// Every rule that fired, as `violations` would list them under an enforcing policy.
    pub findings: Vec<Violation>,
}

impl Decision {
    pub fn is_allow(&self) -> bool {
        self.decision == "allow"
    }

    /// Allowed without a check, and why (`reason: "not_checked"`).
    pub fn not_checked(detail: &str) -> Self {
        Decision {
            decision: "allow".into(),
            reason: "not_checked".into(),
            violations: Vec::new(),
            detail: Some(detail.into()),
            check: None,
        }
    }

    /// The decision of a source check alone (a session call: the language is the
    /// session's), under rules that refuse (`enforce`) or only report what they find.
    pub fn from_violations(violations: Vec<Violation>, enforce: bool) -> Self {
        if !enforce {
            let reason = if violations.is_empty() {
                "policy_pass".into()
            } else {
                format!("check_not_enforced:{}", rule_names(&violations))
            };
            return Decision {
                decision: "allow".into(),
                reason,
                violations: Vec::new(),
                detail: None,
                check: Some(Unenforced {
                    enforced: false,
                    findings: violations,
                }),
            };
        }
        if violations.is_empty() {
            return Decision {
                decision: "allow".into(),
                reason: "policy_pass".into(),
                violations,
                check: None,
                detail: None,
            };
        }
        Decision::deny(static_reason(&violations), violations)
    }

    fn deny(reason: String, violations: Vec<Violation>) -> Self {
        Decision {
            decision: "deny".into(),
            reason,
            violations,
            check: None,
            detail: None,
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

/// The languages a policy names for this check: `allowed` (accepted in an action) and
/// `execute` (run by this build), compared trimmed and in any case.
#[derive(Debug, Clone, Copy)]
pub struct Languages<'a> {
    pub allowed: &'a [String],
    pub execute: &'a [String],
}

/// Whether `list` names `language` (both trimmed, any case).
pub fn lists(list: &[String], language: &str) -> bool {
    let language = language.trim();
    list.iter().any(|l| l.trim().eq_ignore_ascii_case(language))
}

/// Decide whether `code` in `language` may run under a policy's `languages` and `rules`
/// (`python_version`: the interpreter's, "" for [`python::DEFAULT_PYTHON`]). The caller
/// applies an action's hints to the policy first, so a tightened language list counts.
/// `mode`: the action's output mode (the `input()` rule holds in [`OutputMode::Json`] only).
pub fn check_code(
    language: &str,
    code: &str,
    languages: Languages<'_>,
    rules: &CheckRules,
    python_version: &str,
    mode: OutputMode,
) -> Decision {
    let language = language.trim().to_lowercase();
    if !lists(languages.allowed, &language) {
        return Decision::deny("language_denied_policy".into(), Vec::new());
    }
    if !EXECUTION_LANGUAGES.contains(&language.as_str()) || !lists(languages.execute, &language) {
        return Decision::deny("language_denied_execution".into(), Vec::new());
    }
    if UNCHECKED_LANGUAGES.contains(&language.as_str()) {
        return Decision::not_checked(&format!(
            "no static check exists for {language} (the policy's languages.{language}.check = \"none\"): the jail alone holds the program"
        ));
    }
    let violations = match language.as_str() {
        "javascript" => javascript::check_source(code, &rules.javascript),
        _ => python::check_source_in_mode(code, rules, python_version, mode),
    };
    Decision::from_violations(violations, rules.enforce)
}

/// `static_policy_violation:` and the first three sorted unique rule names, as the seed.
pub fn static_reason(violations: &[Violation]) -> String {
    format!("static_policy_violation:{}", rule_names(violations))
}

/// The first three sorted unique rule names, joined by `,`.
fn rule_names(violations: &[Violation]) -> String {
    let mut rules: Vec<&str> = violations.iter().map(|v| v.rule.as_str()).collect();
    rules.sort_unstable();
    rules.dedup();
    rules.truncate(3);
    rules.join(",")
}
