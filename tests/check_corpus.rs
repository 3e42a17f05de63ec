//! The static check against a corpus: the seed's incident program must pass, every rule
//! must fire on its own example, and known sandbox-bypass programs must be denied.

use agentjail::check::python::check_source;
use agentjail::check::{check_action, Decision};
use agentjail::contract::{parse_action, Action};
use agentjail::policy::Policy;
use serde_json::json;

const INCIDENT: &str = include_str!("data/incident_main.py");

fn action(code: &str) -> Action {
    Action {
        id: "t".into(),
        language: "python".into(),
        entrypoint: "main.py".into(),
        code: code.into(),
        input_payload: json!({}),
        output_schema: None,
        policy_hints: None,
    }
}

fn check(code: &str) -> Decision {
    check_action(&action(code), &Policy::default())
}

fn rules(code: &str) -> Vec<String> {
    check(code).violations.into_iter().map(|v| v.rule).collect()
}

#[track_caller]
fn assert_denied_with(code: &str, rule: &str) {
    let d = check(code);
    assert_eq!(d.decision, "deny", "expected deny for {code:?}, got {d:?}");
    assert!(
        d.violations.iter().any(|v| v.rule == rule),
        "expected rule {rule} for {code:?}, got {:?}",
        d.violations
    );
}

#[test]
fn seed_incident_program_is_allowed() {
    let transactions: Vec<_> = (0..60)
        .map(|i| {
            json!({"transaction_id": format!("txn_{:03}", i + 1),
                   "status": if i == 7 || i == 34 { "failed" } else { "paid" },
                   "chargeback": i == 34, "latency_ms": 150 + (i % 40)})
        })
        .collect();
    let raw = json!({
        "id": "c1", "language": "python", "entrypoint": "main.py", "code": INCIDENT.trim(),
        "input_payload": {"incident_id": "inc_1", "region": "US", "transactions": transactions},
        "policy_hints": {"allowed_languages": ["python", "javascript"], "max_code_chars": 2400,
                         "exec_timeout_seconds": 2.0, "network_access": "denied"}
    });
    let policy = Policy::default();
    let act = parse_action(raw.to_string().as_bytes(), &policy).expect("valid action");
    let (tight, notes) =
        agentjail::contract::apply_hints(&policy, act.policy_hints.as_ref().expect("hints"));
    assert!(notes.is_empty(), "{notes:?}");
    let d = check_action(&act, &tight);
    assert_eq!(d.decision, "allow", "{d:?}");
    assert_eq!(d.reason, "policy_pass");
    assert!(d.violations.is_empty());
}

#[test]
fn ordinary_programs_are_allowed() {
    for code in [
        "from statistics import mean, median\nprint(mean([1, 2]), median([1]))",
        "import json as j\nprint(j.dumps({'a.b': 1}))",
        "x = '{}: {}'.format(1, 2)\nprint(f'{x:>10} {3.14159:.2f}')",
        "import json\nd = json.loads(input())\nmatch d:\n    case {'k': v}:\n        print(v)\n    case _:\n        pass",
        "def f(a, b=2, *args, **kw):\n    return [x * b for x in range(a) if x]\nprint(f(3))",
        "class Box:\n    def total(self, xs):\n        return sum(xs)\nprint(Box().total([1]))",
        "s = '{\"a\": [1, 2]}'\nprint(s)",
        "# -*- coding: utf-8 -*-\nprint(1)",
        "try:\n    x = 1 / 0\nexcept ZeroDivisionError as err:\n    print(str(err))",
        "x = 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8\nprint(x)",
        "class P:\n    def __init__(self, v):\n        self.v = v\n    def __repr__(self):\n        return str(self.v)\nprint(P(1))",
    ] {
        let d = check(code);
        assert_eq!(d.decision, "allow", "expected allow for {code:?}: {d:?}");
    }
}

#[test]
fn language_reasons() {
    let mut a = action("print(1)");
    a.language = "javascript".into();
    assert_eq!(
        check_action(&a, &Policy::default()).reason,
        "language_denied_execution"
    );
    a.language = "ruby".into();
    assert_eq!(
        check_action(&a, &Policy::default()).reason,
        "language_denied_policy"
    );
}

#[test]
fn reason_lists_first_three_sorted_rules() {
    let d = check("import os\nimport sys\nimport socket\nimport json");
    assert_eq!(
        d.reason,
        "static_policy_violation:import_not_allowed:os,import_not_allowed:socket,import_not_allowed:sys"
    );
    assert_eq!(
        check("import os").reason,
        "static_policy_violation:import_not_allowed:os"
    );
}

#[test]
fn each_rule_fires_on_its_own_example() {
    let cases: &[(&str, &str)] = &[
        ("import os", "import_not_allowed:os"),
        ("from . import x", "import_not_allowed:relative"),
        ("x = __name__", "name_not_allowed:__name__"),
        ("x = 1\nx.system", "attr_not_allowed:system"),
        ("eval('1')", "call_not_allowed:eval"),
        ("x = 'https://example.com'", "network_literal_blocked"),
        ("a = input()\nb = input()", "too_many_input_reads"),
        ("def (:", "syntax_error"),
        (
            &format!("x = {}1{}", "(".repeat(80), ")".repeat(80)),
            "nesting_too_deep",
        ),
        (
            "# -*- coding: latin-1 -*-\nx = 1",
            "source_encoding_declared",
        ),
        ("x = 1\0", "source_nul_byte"),
        ("if 1:\n\t x = 1", "source_indentation"),
        (
            "import json\njson.codecs",
            "module_attr_not_allowed:json.codecs",
        ),
        ("import json\nx = json", "module_reference_not_allowed:json"),
        ("from json import *", "import_star_not_allowed:json"),
        ("x = '{0.real}'.format(1)", "format_field_access"),
    ];
    for (code, rule) in cases {
        assert_denied_with(code, rule);
    }
}

#[test]
fn syntax_error_has_position() {
    let d = check("x = 1\ndef (:\n");
    let v = d
        .violations
        .iter()
        .find(|v| v.rule == "syntax_error")
        .expect("syntax_error");
    assert_eq!(v.line, 2);
    assert!(v.column >= 1);
}

/// Known ways around Python sandboxes. Every one must be denied, with the named rule.
#[test]
fn sandbox_bypasses_are_denied() {
    let cases: &[(&str, &str)] = &[
        ("import subprocess", "import_not_allowed:subprocess"),
        ("from os import system", "import_not_allowed:os"),
        ("import json.decoder", "import_not_allowed:json.decoder"),
        (
            "from json import decoder",
            "import_not_allowed:json.decoder",
        ),
        (
            "from json.decoder import scanstring",
            "import_not_allowed:json.decoder",
        ),
        (
            "from statistics import sys",
            "import_not_allowed:statistics.sys",
        ),
        (
            "import json\njson.codecs.open('/etc/passwd')",
            "module_attr_not_allowed:json.codecs",
        ),
        (
            "import json\nr = json.decoder.re",
            "module_attr_not_allowed:json.decoder",
        ),
        (
            "import json\nj = json.scanner",
            "module_attr_not_allowed:json.scanner",
        ),
        (
            "import statistics\nm = statistics.sys.modules",
            "module_attr_not_allowed:statistics.sys",
        ),
        (
            "import statistics\nstatistics.random.seed(1)",
            "module_attr_not_allowed:statistics.random",
        ),
        (
            "import statistics as s\ns.numbers",
            "module_attr_not_allowed:statistics.numbers",
        ),
        (
            "import json as j\nx = j\nx.codecs",
            "module_reference_not_allowed:j",
        ),
        (
            "import json\nm = [json][0]",
            "module_reference_not_allowed:json",
        ),
        ("import json as os", "name_not_allowed:os"),
        ("from json import loads as eval", "name_not_allowed:eval"),
        ("ｅｖａｌ('1')", "call_not_allowed:eval"),
        ("ｅｘｅｃ('1')", "call_not_allowed:exec"),
        ("x = ().__ｃｌａｓｓ__", "attr_not_allowed:__class__"),
        ("e = eval\ne('1')", "name_not_allowed:eval"),
        ("print('x', sep=exec)", "name_not_allowed:exec"),
        ("f = lambda g=eval: g('1')", "name_not_allowed:eval"),
        ("def f(g=exec):\n    g('1')", "name_not_allowed:exec"),
        ("@eval\ndef f():\n    pass", "name_not_allowed:eval"),
        ("@print\n@exec\nclass A:\n    pass", "name_not_allowed:exec"),
        (
            "x = ().__class__.__bases__[0].__subclasses__()",
            "attr_not_allowed:__class__",
        ),
        ("g = globals()", "name_not_allowed:globals"),
        ("x = getattr(1, 're' + 'al')", "name_not_allowed:getattr"),
        ("x = f'{().__class__}'", "attr_not_allowed:__class__"),
        ("x = f'{1:{().__class__}}'", "attr_not_allowed:__class__"),
        ("x = f'{1:{2:{eval}}}'", "name_not_allowed:eval"),
        (
            "match 1:\n    case int(__class__=c):\n        pass",
            "attr_not_allowed:__class__",
        ),
        (
            "match 1:\n    case int(gi_frame=c):\n        pass",
            "attr_not_allowed:gi_frame",
        ),
        (
            "match {}:\n    case {'k': __builtins__}:\n        pass",
            "name_not_allowed:__builtins__",
        ),
        (
            "# -*- coding: utf-7 -*-\nx = '+AGU-'",
            "source_encoding_declared",
        ),
        (
            "#!/usr/bin/python\n# vim: set fileencoding=rot13 :\nx = 1",
            "source_encoding_declared",
        ),
        ("breakpoint()", "call_not_allowed:breakpoint"),
        ("help()", "call_not_allowed:help"),
        ("open('/etc/passwd')", "call_not_allowed:open"),
        (
            "with open('/etc/passwd') as fh:\n    pass",
            "call_not_allowed:open",
        ),
        ("compile('1', 'f', 'eval')", "call_not_allowed:compile"),
        ("t = type(1)", "name_not_allowed:type"),
        (
            "class A(metaclass=type):\n    pass",
            "name_not_allowed:type",
        ),
        ("v = vars()", "name_not_allowed:vars"),
        ("d = dir()", "name_not_allowed:dir"),
        (
            "g = (i for i in [1])\nf = g.gi_frame.f_back",
            "attr_not_allowed:gi_frame",
        ),
        (
            "def f(g):\n    return g.f_globals",
            "attr_not_allowed:f_globals",
        ),
        (
            "try:\n    1 / 0\nexcept Exception as e:\n    t = e.__traceback__",
            "attr_not_allowed:__traceback__",
        ),
        (
            "def f(t):\n    return t.tb_frame",
            "attr_not_allowed:tb_frame",
        ),
        ("b = __builtins__['eval']", "name_not_allowed:__builtins__"),
        ("m = int.mro()", "attr_not_allowed:mro"),
        ("x = '{0.__class__}'.format(1)", "format_field_access"),
        ("x = '{0[0]}'.format([1])", "format_field_access"),
        (
            "fmt = '{0' + '.real}'\nfmt.format(1)",
            "attr_not_allowed:format",
        ),
        ("x = str.format('{0.real}', 1)", "attr_not_allowed:format"),
        ("x = '{a}'.format_map({})", "attr_not_allowed:format_map"),
        (
            "import string\nstring.Formatter().vformat('{0.x}', [1], {})",
            "import_not_allowed:string",
        ),
        ("u = 'ftp://files'", "network_literal_blocked"),
        ("u = b'gopher://x'", "network_literal_blocked"),
        ("u = 'ht' 'tp://x'", "network_literal_blocked"),
        ("u = 'http\\x3a//x'", "network_literal_blocked"),
        ("h = 'evil'\nu = f'file://{h}'", "network_literal_blocked"),
        ("for _ in range(3):\n    input()", "too_many_input_reads"),
        ("rows = [input() for _ in range(3)]", "too_many_input_reads"),
        ("r = input\nr()", "name_not_allowed:input"),
        (
            "class A:\n    __getattr__ = 1",
            "name_not_allowed:__getattr__",
        ),
        (
            "def __getattr__(name):\n    pass",
            "name_not_allowed:__getattr__",
        ),
        ("x = (e := eval)", "name_not_allowed:eval"),
        ("x = [*map(eval, ['1'])]", "name_not_allowed:eval"),
        ("x = [1][eval('0'):]", "call_not_allowed:eval"),
        (
            "def f():\n    global __builtins__",
            "name_not_allowed:__builtins__",
        ),
        ("x: eval = 1", "name_not_allowed:eval"),
        ("def f(x: exec) -> eval:\n    pass", "name_not_allowed:exec"),
        (
            "async def f():\n    async with eval('x') as y:\n        pass",
            "call_not_allowed:eval",
        ),
        (
            "try:\n    pass\nexcept eval('E'):\n    pass",
            "call_not_allowed:eval",
        ),
        ("x = {k: eval(k) for k in 'a'}", "call_not_allowed:eval"),
        (
            "x = license._Printer__filenames",
            "name_not_allowed:license",
        ),
        (
            "import statistics\nstatistics.mean.__globals__",
            "attr_not_allowed:__globals__",
        ),
        ("x = memoryview(b'')", "name_not_allowed:memoryview"),
        ("import sys", "import_not_allowed:sys"),
        ("def f[T: eval]():\n    pass", "syntax_error"),
        ("x = f'{'a'}'\ny = f\"{x!r:{'{'}}\"", "syntax_error"),
        ("if True:\n\x0c    x = 1", "source_indentation"),
    ];
    assert!(cases.len() >= 40);
    for (code, rule) in cases {
        assert_denied_with(code, rule);
    }
}

/// Deep inputs must be refused cleanly on a small stack: no overflow in the parser, the
/// visitor or the drop of a deep tree.
#[test]
fn deep_nesting_is_rejected_on_a_small_stack() {
    let inputs: Vec<String> = vec![
        format!("x = {}1{}", "(".repeat(100_000), ")".repeat(100_000)),
        format!("x = {}{}", "[".repeat(100_000), "]".repeat(100_000)),
        format!("x = {}1", "-".repeat(100_000)),
        format!("x = {}1", "not ".repeat(50_000)),
        format!("x = 1{}", "+1".repeat(100_000)),
        format!("x = a{}", ".b".repeat(100_000)),
        format!("x = f{}", "()".repeat(60_000)),
        format!("x = {}1", "lambda: ".repeat(30_000)),
        format!("x = 1{}", " if 1 else 1".repeat(30_000)),
        format!("x = 2{}", "**2".repeat(100_000)),
        (0..200)
            .map(|i| format!("{}if x:\n", " ".repeat(i)))
            .collect::<String>()
            + &" ".repeat(200)
            + "pass\n",
    ];
    let handle = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            let policy = Policy::default();
            inputs
                .iter()
                .map(|code| {
                    check_source(code, &policy.check)
                        .into_iter()
                        .map(|v| v.rule)
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
        })
        .expect("spawn");
    let results = handle.join().expect("checker thread must not crash");
    for (i, rules) in results.iter().enumerate() {
        assert!(
            rules
                .iter()
                .any(|r| r == "nesting_too_deep" || r == "syntax_error"),
            "input {i}: {rules:?}"
        );
    }
}

#[test]
fn violations_are_sorted_and_positioned() {
    let v = check("x = 1\nimport os\ny = eval('1')").violations;
    assert_eq!(v[0].rule, "import_not_allowed:os");
    assert_eq!((v[0].line, v[0].column), (2, 8));
    assert_eq!(v[1].rule, "call_not_allowed:eval");
    assert_eq!((v[1].line, v[1].column), (3, 5));
    assert!(rules("print(1)").is_empty());
}
