//! The check in judge mode (`"output_mode": "text"`) and under policies/judge.toml: the
//! `input()` rule belongs to the JSON contract only, and star imports
//! (`check.allow_star_imports`) bind nothing an explicit import would be refused.

use crate::checked_action;
use agentjail_check::stdlib;
use agentjail_check::Decision;
use agentjail_engine::contract::{check_action, Action, OutputMode};
use agentjail_engine::policy::Policy;

fn judge_policy() -> Policy {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/judge.toml");
    agentjail_engine::policy::load_file(&path)
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

// -- star imports (check.allow_star_imports) --------------------------------------------

fn detail_of<'d>(d: &'d Decision, rule: &str) -> &'d str {
    d.violations
        .iter()
        .find(|v| v.rule == rule)
        .map(|v| v.detail.as_str())
        .unwrap_or_else(|| panic!("no {rule}: {d:?}"))
}

#[test]
fn judge_policy_allows_star_imports_of_modules_that_bind_nothing_restricted() {
    let judge = judge_policy();
    assert!(
        judge.check.allow_star_imports,
        "judge.toml turns star imports on"
    );
    let code = "from math import *\nfrom collections import *\nfrom heapq import *\n\
                from itertools import *\nfrom bisect import *\nfrom statistics import *\n\
                from fractions import *\nfrom json import *\nfrom datetime import *\n\
                from random import *\nfrom copy import *\nfrom decimal import *\n\
                from dataclasses import *\nfrom textwrap import *\nfrom cmath import *\n\
                print(gcd(4, 6), floor(2.5), deque([1]), Counter('aab'), mean([1, 2]))\n\
                print(list(accumulate([1, 2])), bisect_left([1, 2], 2), heappop([1]))\n\
                print(Fraction(1, 2), dumps([1]))\n";
    for mode in [OutputMode::Text, OutputMode::Json] {
        let d = decide(code, mode, &judge);
        assert!(d.is_allow(), "{mode:?}: {d:?}");
    }
    // A star-bound field-name factory is still one (judged by its name).
    let d = decide(
        "from collections import *\nnames = input().split()\nP = namedtuple('P', names)\n",
        OutputMode::Text,
        &judge,
    );
    assert!(
        rules(&d).contains(&"field_names_not_literal:namedtuple"),
        "{d:?}"
    );
}

#[test]
fn star_imports_stay_refused_where_the_key_is_off() {
    let default = Policy::default();
    assert!(!default.check.allow_star_imports);
    for mode in [OutputMode::Json, OutputMode::Text] {
        let d = decide("from json import *\nprint(dumps([1]))", mode, &default);
        assert_eq!(rules(&d), ["import_star_not_allowed:json"], "{d:?}");
        assert!(detail_of(&d, "import_star_not_allowed:json").contains("allow_star_imports"));
    }
}

/// Each of these star imports would bind a name the policy refuses as an attribute or as a
/// name, and a bare name is never checked as an attribute: all refused, in both modes.
/// Each program really reaches what it names when run unchecked (`python3 -I`).
const STAR_ATTACKS: &[(&str, &str, &str)] = &[
    // sys: the tables list no exports for it (it is a dangerous module): sys.modules.
    (
        "from sys import *\nprint(type(modules['os']).__name__)",
        "import_star_not_allowed:sys",
        "",
    ),
    // string.Formatter walks attributes named in a format string.
    (
        "from string import *\nprint(Formatter().vformat('{0.real}', [1], {}))",
        "import_star_not_allowed:string",
        "Formatter",
    ),
    // operator.attrgetter reads an attribute named by a string.
    (
        "from operator import *\nprint(attrgetter('real')(1))",
        "import_star_not_allowed:operator",
        "attrgetter",
    ),
    // typing.get_type_hints evaluates strings.
    (
        "from typing import *\nprint(get_type_hints(int))",
        "import_star_not_allowed:typing",
        "get_type_hints",
    ),
    // re.compile is a name every policy denies (it shadows the builtin).
    (
        "from re import *\nprint(compile('a'))",
        "import_star_not_allowed:re",
        "compile",
    ),
];

#[test]
fn star_imports_binding_restricted_names_are_refused() {
    let judge = judge_policy();
    for (code, rule, name) in STAR_ATTACKS {
        for mode in [OutputMode::Text, OutputMode::Json] {
            let d = decide(code, mode, &judge);
            assert!(rules(&d).contains(rule), "{mode:?} {code:?}: {d:?}");
            assert!(detail_of(&d, rule).contains(name), "{code:?}: {d:?}");
        }
        let out = std::process::Command::new("/usr/bin/python3")
            .args(["-I", "-c", code])
            .output()
            .expect("run python3");
        assert!(
            out.status.success(),
            "{code:?} does not run unchecked: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The policy's own denied attributes count: a name it denies as `math.<name>`.
    let mut tight = judge.clone();
    tight.check.denied_attributes.push("floor".into());
    let d = decide(
        "from math import *\nprint(floor(1.5))",
        OutputMode::Text,
        &tight,
    );
    assert!(
        detail_of(&d, "import_star_not_allowed:math").contains("floor"),
        "{d:?}"
    );
    // A module-valued name (`platform.re`, `platform.collections`): the checker would not
    // know the bound name is a module, so it is refused even when that module is allowed.
    let mut with_platform = judge.clone();
    with_platform.check.allowed_imports.push("platform".into());
    let d = decide(
        "from platform import *\nprint(re.escape('a'))",
        OutputMode::Text,
        &with_platform,
    );
    let detail = detail_of(&d, "import_star_not_allowed:platform");
    assert!(
        detail.contains("collections") && detail.contains("re"),
        "{d:?}"
    );
    // A module the tables list no exports for is refused whatever it binds.
    let mut with_sched = judge.clone();
    with_sched.check.allowed_imports.push("sched".into());
    let d = decide("from sched import *", OutputMode::Text, &with_sched);
    assert!(
        detail_of(&d, "import_star_not_allowed:sched").contains("no list"),
        "{d:?}"
    );
}

// -- policies/judge-open.toml: check.enforce = false ----------------------------------------

fn shipped(name: &str) -> Policy {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("policies")
        .join(name);
    agentjail_engine::policy::load_file(&path)
        .unwrap_or_else(|e| panic!("policies/{name}: {e}"))
        .policy
}

/// A harness in the shape RL pipelines wrap call-based solutions in (written here, not
/// verl's text): star imports of `sys`, `io` and `builtins`, `traceback`, `globals()`,
/// `getattr`, `if __name__`. judge.toml refuses it whatever the solution inside.
const HARNESS: &str = "import traceback\nfrom sys import *\nfrom io import *\n\
from builtins import *\nimport sys\nimport json\n\n\
def add(a, b):\n    return a + b\n\n\
def _call(name):\n    args = [json.loads(l) for l in sys.stdin.read().splitlines()]\n    \
f = globals()[name] if name in globals() else getattr(globals()['Solution'](), name)\n    \
try:\n        return f(*args)\n    except Exception:\n        traceback.print_exc()\n\n\
if __name__ == '__main__':\n    print(_call('add'))\n";

#[test]
fn judge_open_reports_what_judge_refuses_and_refuses_nothing() {
    let judge = decide(HARNESS, OutputMode::Text, &judge_policy());
    assert_eq!(judge.decision, "deny", "{judge:?}");
    assert!(judge.check.is_none());
    let open = decide(HARNESS, OutputMode::Text, &shipped("judge-open.toml"));
    assert_eq!(open.decision, "allow", "{open:?}");
    assert!(open.violations.is_empty(), "nothing refused it: {open:?}");
    assert_eq!(
        open.reason,
        judge
            .reason
            .replace("static_policy_violation:", "check_not_enforced:")
    );
    let c = open.check.as_ref().expect("the findings");
    assert!(!c.enforced);
    // The findings are exactly what the enforcing twin refused it for.
    assert_eq!(c.findings, judge.violations);
    for r in [
        "import_not_allowed:builtins",
        "import_not_allowed:traceback",
    ] {
        assert!(c.findings.iter().any(|v| v.rule == r), "{r}: {c:?}");
    }
    // The record's shape: decision.check {enforced: false, findings: [{rule, detail, line,
    // column}]}, decision.violations [].
    let v = serde_json::to_value(&open).unwrap();
    assert_eq!(v["decision"], "allow");
    assert_eq!(v["violations"], serde_json::json!([]));
    assert_eq!(v["check"]["enforced"], false);
    assert_eq!(
        v["check"]["findings"][0]["rule"],
        c.findings[0].rule.as_str()
    );
    assert!(v["check"]["findings"][0]["line"].as_u64().unwrap() >= 1);
    // Nothing found: policy_pass, and the record still says the check was not enforced.
    let clean = decide("print(1)\n", OutputMode::Text, &shipped("judge-open.toml"));
    assert_eq!(clean.reason, "policy_pass");
    let v = serde_json::to_value(&clean).unwrap();
    assert_eq!(
        v["check"],
        serde_json::json!({"enforced": false, "findings": []})
    );
    // Under an enforcing policy the key is absent: those records are as they were.
    for name in ["default.toml", "data.toml", "judge.toml"] {
        let d = decide("print(1)\n", OutputMode::Text, &shipped(name));
        assert!(
            serde_json::to_value(&d).unwrap().get("check").is_none(),
            "{name}"
        );
    }
}

#[test]
fn judge_open_keeps_the_contracts_refusals() {
    let open = shipped("judge-open.toml");
    // Languages: the policy's lists still decide, before any rule runs.
    let mut a = action("console.log(1)", OutputMode::Text);
    a.language = "javascript".into();
    let d = check_action(&a, &open);
    assert_eq!(
        (d.decision.as_str(), d.reason.as_str()),
        ("deny", "language_denied_policy")
    );
    assert!(d.check.is_none());
    // Code length and hints are the contract's (parse_action): judge-open holds a
    // harness plus a long solution, and refuses past its budget as judge.toml does.
    assert_eq!(
        open.budget.max_code_chars,
        judge_policy().budget.max_code_chars
    );
    let long = format!("{HARNESS}{}", "x = 1\n".repeat(2500));
    assert!(long.chars().count() < open.budget.max_code_chars);
    let body = |code: &str| {
        serde_json::to_vec(&serde_json::json!({"id": "t", "language": "python",
            "entrypoint": "main.py", "code": code, "stdin": "", "output_mode": "text"}))
        .unwrap()
    };
    assert!(agentjail_engine::contract::parse_action(&body(&long), &open).is_ok());
    let too_long = "x = 1\n".repeat(open.budget.max_code_chars / 6 + 1);
    let e =
        agentjail_engine::contract::parse_action(&body(&too_long), &open).expect_err("too long");
    assert_eq!(e.reason(), "invalid_action:code_too_long");
}

/// Attacks the check refuses under the embedded default and data.toml: under judge-open
/// they pass with findings (the jail contains them: tests/pipeline/judge_mode.rs runs them).
const HOST_ATTACKS: &[(&str, &str)] = &[
    (
        "import os\nprint(os.read(os.open('/etc/shadow', os.O_RDONLY), 100))\n",
        "import_not_allowed:os",
    ),
    (
        "import socket\nsocket.create_connection(('127.0.0.1', 22), 2)\n",
        "import_not_allowed:socket",
    ),
    (
        "import os\nos.open('/usr/agentjail-x', os.O_WRONLY | os.O_CREAT, 0o644)\n",
        "import_not_allowed:os",
    ),
];

#[test]
fn attacks_refused_by_enforcing_policies_are_findings_under_judge_open() {
    let default = agentjail_engine::policy::load_default()
        .expect("default")
        .policy;
    let open = shipped("judge-open.toml");
    for (code, rule) in HOST_ATTACKS {
        for (name, p) in [
            ("default", &default),
            ("data.toml", &shipped("data.toml")),
            ("judge.toml", &judge_policy()),
        ] {
            for mode in [OutputMode::Json, OutputMode::Text] {
                let d = decide(code, mode, p);
                assert_eq!(d.decision, "deny", "{name} {mode:?}: {code:?} {d:?}");
                assert!(rules(&d).contains(rule), "{name}: {code:?} {d:?}");
            }
        }
        let d = decide(code, OutputMode::Text, &open);
        assert_eq!(d.decision, "allow", "{code:?}");
        let c = d.check.expect("findings");
        assert!(
            c.findings.iter().any(|v| v.rule == *rule),
            "{code:?}: {c:?}"
        );
    }
}
