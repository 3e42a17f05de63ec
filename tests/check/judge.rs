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
