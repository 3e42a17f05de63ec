//! The check in judge mode (`"output_mode": "text"`) and under policies/judge.toml: the
//! `input()` rule belongs to the JSON contract only, and star imports
//! (`check.allow_star_imports`) bind nothing an explicit import would be refused.

use crate::checked_action;
use agentjail::contract::{check_action, Action, OutputMode};
use agentjail::policy::Policy;
use agentjail_check::stdlib;
use agentjail_check::Decision;

fn judge_policy() -> Policy {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/judge.toml");
    agentjail::policy::load_file(&path)
        .unwrap_or_else(|e| panic!("policies/judge.toml: {e}"))
        .policy
}

fn action(code: &str, mode: OutputMode) -> Action {
    let mut a = checked_action(code);
    if mode == OutputMode::Text {
        a.input_payload = serde_json::Value::Null;
        a.stdin = Some(String::new());
    }
    a.output_mode = mode;
    a
}

/// The decision for every Python version the checker has tables for; they must agree.
fn decide(code: &str, mode: OutputMode, policy: &Policy) -> Decision {
    let mut policy = policy.clone();
    let mut first: Option<Decision> = None;
    for version in stdlib::supported_versions() {
        policy.interpreter.python_version = Some(version.into());
        let d = check_action(&action(code, mode), &policy);
        match &first {
            None => first = Some(d),
            Some(f) => assert_eq!(f.reason, d.reason, "{code:?}: Python {version} differs"),
        }
    }
    first.expect("at least one version")
}

fn rules(d: &Decision) -> Vec<&str> {
    d.violations.iter().map(|v| v.rule.as_str()).collect()
}

/// The ways competitive programming reads stdin with input(): refused in JSON mode (one
/// payload line), allowed in judge mode under both policies (the default denies `sys`, so
/// its examples avoid it).
const INPUT_STYLES: &[&str] = &[
    "def main():\n    n = int(input())\n    print(n * 2)\n\nmain()\n",
    "n = int(input())\nfor _ in range(n):\n    a, b = map(int, input().split())\n    print(a + b)\n",
    "rows = [input() for _ in range(3)]\nprint(rows)\n",
    "f = lambda: list(map(int, input().split()))\nprint(f())\n",
    "read = input\nprint(read())\n",
    "def solve(input=input):\n    return input()\n\nprint(solve())\n",
    // Over the default policy's max_input_reads (judge.toml allows 100000 calls).
    "a = input()\nb = input()\nc = input()\nprint(a, b, c)\n",
];

#[test]
fn input_rule_is_the_json_contracts_only() {
    let default = Policy::default();
    let judge = judge_policy();
    for code in INPUT_STYLES {
        for policy in [&default, &judge] {
            let d = decide(code, OutputMode::Text, policy);
            assert!(d.is_allow(), "text mode, {}: {code:?}: {d:?}", policy.name);
            if code.starts_with("a = input()") && policy.name == "judge" {
                continue;
            }
            let d = decide(code, OutputMode::Json, policy);
            assert!(!d.is_allow(), "json mode, {}: {code:?} passed", policy.name);
            assert!(
                rules(&d)
                    .iter()
                    .any(|r| *r == "too_many_input_reads" || *r == "name_not_allowed:input"),
                "json mode, {}: {code:?}: {d:?}",
                policy.name
            );
        }
    }
}

#[test]
fn input_rebinding_is_refused_in_json_mode_allowed_in_text_mode() {
    let judge = judge_policy();
    let code = "import sys\ninput = sys.stdin.readline\nn = int(input())\nprint(n)\n";
    let d = decide(code, OutputMode::Json, &judge);
    assert_eq!(rules(&d), ["name_not_allowed:input"], "{d:?}");
    assert!(decide(code, OutputMode::Text, &judge).is_allow());
    // The rest of the check holds in text mode: the mode loosens the input() rule only.
    for (code, rule) in [
        ("eval(input())", "call_not_allowed:eval"),
        ("import os\nprint(input())", "import_not_allowed:os"),
        ("import sys\nprint(sys.modules)", "attr_not_allowed:modules"),
        (
            "input = open\nprint(input('x').read())",
            "name_not_allowed:open",
        ),
    ] {
        let d = decide(code, OutputMode::Text, &judge);
        assert!(rules(&d).contains(&rule), "{code:?}: {d:?}");
    }
}
