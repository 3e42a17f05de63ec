//! The Python check's rules: the policy's `[check]` table (`[check.javascript]` is
//! [`JsRules`]). The policy loads and validates them; the checker only reads them.

use crate::javascript::JsRules;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CheckRules {
    /// Whether a finding refuses the program (`true` under the embedded default and every
    /// shipped policy but `policies/judge-open.toml`). `false`: the rules still run and
    /// their findings go into the decision (`check: {enforced: false, findings}`), but
    /// nothing is refused by them; the policy loader accepts it only together with the
    /// jail's full controls (crates/agentjail-engine/src/policy/validate.rs), and `policy
    /// lint` warns.
    pub enforce: bool,
    /// Top-level modules the code may import.
    pub allowed_imports: Vec<String>,
    /// Names that may not be called (`eval(...)`), also blocked when referenced.
    pub denied_calls: Vec<String>,
    /// Names that may not be referenced at all.
    pub denied_names: Vec<String>,
    /// Attribute names that may not be accessed on any object.
    pub denied_attributes: Vec<String>,
    /// Reject any identifier or attribute starting with `__`.
    pub deny_dunder: bool,
    /// Reject string literals containing `http://` or `https://` (and other URL schemes).
    pub deny_url_literals: bool,
    /// Allow `from M import *` of an allowed module M whose every bound name passes the
    /// checks an import by name would (the module's star exports are in the tables).
    pub allow_star_imports: bool,
    /// How many `input()` calls the code may contain (JSON mode only).
    pub max_input_reads: u32,
    /// Deepest expression/statement nesting accepted (protects the checker's stack).
    pub max_nesting_depth: u32,
    /// The JavaScript check's rules (`[check.javascript]`); the keys above are Python's.
    pub javascript: JsRules,
}

impl Default for CheckRules {
    fn default() -> Self {
        CheckRules {
            enforce: true,
            allowed_imports: strings(&["json", "statistics"]),
            denied_calls: strings(&[
                "exec",
                "eval",
                "compile",
                "__import__",
                "open",
                "breakpoint",
                "input_raw",
            ]),
            denied_names: strings(&[
                "builtins",
                "getattr",
                "setattr",
                "delattr",
                "globals",
                "locals",
                "vars",
                "dir",
                "os",
                "sys",
                "subprocess",
                "socket",
                "pathlib",
                "importlib",
            ]),
            denied_attributes: strings(&[
                "system",
                "popen",
                "fork",
                "spawn",
                "connect",
                "request",
                "urlopen",
                // modules reachable as plain attributes of allowed modules
                // (json.codecs.sys, statistics.sys, statistics.random._os, re.enum.bltns)
                "sys",
                "_sys",
                "os",
                "_os",
                "builtins",
                "bltns",
                "io",
                "importlib",
                "codecs",
            ])
            .into_iter()
            // frame walking: generator/traceback -> frame -> globals/builtins
            .chain(strings(crate::stdlib::FRAME_ATTRIBUTES))
            .collect(),
            deny_dunder: true,
            deny_url_literals: true,
            allow_star_imports: false,
            max_input_reads: 1,
            max_nesting_depth: 64,
            javascript: JsRules::default(),
        }
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_string()).collect()
}
