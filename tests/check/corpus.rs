//! The static check against a corpus: the seed's incident program must pass, every rule
//! must fire on its own example, and known sandbox-bypass programs must be denied.

use crate::common;
use crate::{checked_action as action, data_policy};
use agentjail_check::python::check_source;
use agentjail_check::stdlib;
use agentjail_check::Decision;
use agentjail_engine::contract::check_action;
use agentjail_engine::contract::parse_action;
use agentjail_engine::policy::Policy;
use serde_json::json;

const INCIDENT: &str = include_str!("../data/incident_main.py");

/// The default policy's verdict for Python 3.11 (what the corpus's expectations were
/// written for), after checking that every Python version the checker has tables for (3.10
/// to 3.13, the host's interpreter may be any) reaches the same decision by the same rules,
/// unless a version cannot parse the program (syntax newer than it: `syntax_error`).
fn check(code: &str) -> Decision {
    let mut policy = Policy::default();
    let mut verdicts = Vec::new();
    for version in stdlib::supported_versions() {
        policy.interpreter.python_version = Some(version.into());
        verdicts.push((version, check_action(&action(code), &policy)));
    }
    let rules =
        |d: &Decision| -> Vec<String> { d.violations.iter().map(|v| v.rule.clone()).collect() };
    let syntax = |d: &Decision| d.violations.iter().any(|v| v.rule == "syntax_error");
    let (_, reference) = verdicts
        .iter()
        .find(|(v, _)| *v == "3.11")
        .expect("a 3.11 table");
    for (version, d) in &verdicts {
        // Syntax one version refuses is judged by what another parses it as.
        if syntax(d) || syntax(reference) {
            continue;
        }
        assert_eq!(
            (&d.decision, rules(d)),
            (&reference.decision, rules(reference)),
            "{code:?}: Python {version} is judged unlike 3.11"
        );
    }
    reference.clone()
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
        agentjail_engine::contract::apply_hints(&policy, act.policy_hints.as_ref().expect("hints"));
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

/// A hostile program: denied with `rule` under its policy, and (when `proof` is given)
/// shown to really reach what `why` says when run unchecked: CPython prints `proof`. The
/// payloads only print (the environment's AJ_MARKER canary, bytes read from memory).
struct Hostile {
    name: &'static str,
    why: &'static str,
    /// Under policies/data.toml (else the embedded default).
    data: bool,
    rule: &'static str,
    proof: Option<&'static str>,
    /// Modules the unchecked run needs (numpy, pandas); skipped loudly without them.
    needs: &'static [&'static str],
    code: &'static str,
}

/// Every place a program can name an attribute without a `.`, each closed for every rule:
/// class-pattern keywords, `__match_args__` (class-body names, factory field names),
/// keyword names and `**` literal keys, getattr-by-string helpers (operator, string,
/// pandas' string method names), and strings evaluated as code (typing, singledispatch).
const ATTRIBUTE_WITHOUT_A_DOT: &[Hostile] = &[
    Hostile {
        name: "pattern_format_env",
        why: "the review's bypass, new spelling: a class-pattern keyword binds str.format of a format string built from innocent pieces, which walks NormalDist.__init__.__globals__ to sys.modules and prints the environment",
        data: false,
        rule: "attr_not_allowed:format",
        proof: Some(r#"canary-7f3e"#),
        needs: &[],
        code: r#"import statistics
s = '{0' + '.__init__.__globals__[sys].modules[os].environ}'
match s:
    case str(format=fmt):
        print(fmt(statistics.NormalDist()))
"#,
    },
    Hostile {
        name: "pattern_format_map",
        why: "the same walk through format_map bound by a pattern keyword",
        data: false,
        rule: "attr_not_allowed:format_map",
        proof: Some(r#"canary-7f3e"#),
        needs: &[],
        code: r#"import statistics
s = '{d' + '.__init__.__globals__[sys].modules[os].environ}'
match s:
    case str(format_map=fm):
        print(fm({'d': statistics.NormalDist()}))
"#,
    },
    Hostile {
        name: "pattern_mro",
        why: "a pattern keyword reads an internal attribute (the class graph)",
        data: false,
        rule: "attr_not_allowed:mro",
        proof: Some(r#"[<class 'int'>, <class 'object'>]"#),
        needs: &[],
        code: r#"match int:
    case object(mro=m):
        print(m())
"#,
    },
    Hostile {
        name: "pattern_module_name",
        why: "a pattern keyword named like a dangerous module: the subject could be a module",
        data: true,
        rule: "attr_not_allowed:inspect",
        proof: None,
        needs: &[],
        code: r#"match 1:
    case object(inspect=i):
        print(i)
"#,
    },
    Hostile {
        name: "pattern_gi_frame",
        why: "pattern keywords walk generator -> frame -> f_globals without a dot",
        data: false,
        rule: "attr_not_allowed:gi_frame",
        proof: Some(r#"dict f_globals"#),
        needs: &[],
        code: r#"def gen():
    yield 1
match gen():
    case object(gi_frame=fr):
        match fr:
            case object(f_globals=g):
                print(type(g).__name__, 'f_globals')
"#,
    },
    Hostile {
        name: "match_args_dataclass_field",
        why: "a dataclass field named gi_frame lands in __match_args__, which case D(x) reads with getattr",
        data: true,
        rule: "attr_not_allowed:gi_frame",
        proof: None,
        needs: &[],
        code: r#"from dataclasses import dataclass
@dataclass
class D:
    gi_frame: int
match D(1):
    case D(x):
        print(x)
"#,
    },
    Hostile {
        name: "class_body_format_method",
        why: "a class attribute named format (matches .format through __match_args__ or a pattern)",
        data: true,
        rule: "attr_not_allowed:format",
        proof: None,
        needs: &[],
        code: r#"class T:
    def format(self):
        return 1
"#,
    },
    Hostile {
        name: "namedtuple_class_field",
        why: "a NamedTuple field named format",
        data: true,
        rule: "attr_not_allowed:format",
        proof: None,
        needs: &[],
        code: r#"from typing import NamedTuple
class P(NamedTuple):
    format: str
"#,
    },
    Hostile {
        name: "kw_unpack_dunder",
        why: "the string keys of a ** literal are keyword names (proves the rule alone, no other violation)",
        data: false,
        rule: "name_not_allowed:__class__",
        proof: None,
        needs: &[],
        code: r#"dict(**{'__class__': 1})
"#,
    },
    Hostile {
        name: "kw_unpack_nested",
        why: "a ** literal nested in a ** literal",
        data: false,
        rule: "name_not_allowed:__init__",
        proof: None,
        needs: &[],
        code: r#"dict(**{**{'__init__': 1}})
"#,
    },
    Hostile {
        name: "kw_unpack_denied_name",
        why: "a ** key naming a denied name",
        data: false,
        rule: "name_not_allowed:getattr",
        proof: None,
        needs: &[],
        code: r#"dict(**{'getattr': 1})
"#,
    },
    Hostile {
        name: "kw_unpack_frame_attr",
        why: "a ** key naming a frame attribute (keywords can become attributes)",
        data: false,
        rule: "attr_not_allowed:f_globals",
        proof: None,
        needs: &[],
        code: r#"dict(**{'f_globals': 1})
"#,
    },
    Hostile {
        name: "kw_explicit_frame_attr",
        why: "an explicit keyword naming a frame attribute",
        data: false,
        rule: "attr_not_allowed:tb_frame",
        proof: None,
        needs: &[],
        code: r#"dict(tb_frame=1)
"#,
    },
    Hostile {
        name: "operator_attrgetter",
        why: "operator.attrgetter walks dunders by string to sys.modules and prints the environment",
        data: true,
        rule: "module_attr_not_allowed:operator.attrgetter",
        proof: Some(r#"canary-7f3e"#),
        needs: &[],
        code: r#"import operator
import statistics
walk = operator.attrgetter('__init__.__globals__')
print(walk(statistics.NormalDist())['sys'].modules['os'].environ['AJ_MARKER'])
"#,
    },
    Hostile {
        name: "operator_attrgetter_from",
        why: "the same through from-import",
        data: true,
        rule: "import_not_allowed:operator.attrgetter",
        proof: Some(r#"<class 'type'>"#),
        needs: &[],
        code: r#"from operator import attrgetter
print(attrgetter('__class__.__class__')(1))
"#,
    },
    Hostile {
        name: "operator_methodcaller",
        why: "operator.methodcaller calls a dunder by string",
        data: true,
        rule: "attr_not_allowed:methodcaller",
        proof: Some(r#"(<class 'int'>"#),
        needs: &[],
        code: r#"import operator
print(operator.methodcaller('__reduce_ex__', 2)(1))
"#,
    },
    Hostile {
        name: "string_formatter_get_field",
        why: "string.Formatter.get_field walks an attribute path by string",
        data: true,
        rule: "module_attr_not_allowed:string.Formatter",
        proof: Some(r#"<class 'int'>"#),
        needs: &[],
        code: r#"import string
print(string.Formatter().get_field('0.__class__', [1], {})[0])
"#,
    },
    Hostile {
        name: "get_type_hints_literal",
        why: "typing.get_type_hints evaluates a string annotation that imports os and prints the environment",
        data: true,
        rule: "string_annotation",
        proof: Some(r#"canary-7f3e"#),
        needs: &[],
        code: r#"import typing
def f(x: "print(__import__('os').environ['AJ_MARKER']) or int"):
    pass
typing.get_type_hints(f)
"#,
    },
    Hostile {
        name: "get_type_hints_runtime_string",
        why: "an annotation string built at run time: only denying the evaluator closes it",
        data: true,
        rule: "module_attr_not_allowed:typing.get_type_hints",
        proof: Some(r#"TYPE-HINT-RAN"#),
        needs: &[],
        code: r#"import typing
hint = 'print' + "('TYPE-HINT-RAN') or int"
def f(x: hint):
    pass
typing.get_type_hints(f)
"#,
    },
    Hostile {
        name: "get_type_hints_from_import",
        why: "the evaluator through from-import, under another name",
        data: true,
        rule: "import_not_allowed:typing.get_type_hints",
        proof: Some(r#"TYPE-HINT-RAN"#),
        needs: &[],
        code: r#"from typing import get_type_hints as hints
hint = 'print' + "('TYPE-HINT-RAN') or int"
def f(x: hint):
    pass
hints(f)
"#,
    },
    Hostile {
        name: "forwardref_evaluate",
        why: "a ForwardRef made implicitly by List['...'] evaluated with its _evaluate",
        data: true,
        rule: "attr_not_allowed:_evaluate",
        proof: Some(r#"FORWARD-REF-RAN"#),
        needs: &[],
        code: r#"import typing
ref = typing.get_args(typing.List["print('FORWARD-REF-RAN')"])[0]
ref._evaluate(None, None, frozenset())
"#,
    },
    Hostile {
        name: "forwardref_class",
        why: "typing.ForwardRef of a run-time string, evaluated",
        data: true,
        rule: "module_attr_not_allowed:typing.ForwardRef",
        proof: Some(r#"FORWARD-REF-RAN"#),
        needs: &[],
        code: r#"import typing
code = 'print(' + "'FORWARD-REF-RAN')"
typing.ForwardRef(code)._evaluate(None, None, frozenset())
"#,
    },
    Hostile {
        name: "singledispatch_string_annotation",
        why: "singledispatch.register evaluates the annotation with get_type_hints",
        data: true,
        rule: "module_attr_not_allowed:functools.singledispatch",
        proof: Some(r#"DISPATCH-RAN"#),
        needs: &[],
        code: r#"import functools
@functools.singledispatch
def f(x):
    return x
@f.register
def _(x: "print('DISPATCH-RAN') or int"):
    return x
"#,
    },
    Hostile {
        name: "singledispatch_runtime_annotation",
        why: "register() with an annotation string built at run time",
        data: true,
        rule: "import_not_allowed:functools.singledispatch",
        proof: Some(r#"DISPATCH-RAN"#),
        needs: &[],
        code: r#"from functools import singledispatch
hint = "print('DISPATCH" + "-RAN') or int"
@singledispatch
def f(x):
    return x
def g(x: hint):
    return x
f.register(g)
"#,
    },
    Hostile {
        name: "string_annotation_import",
        why: "a string annotation holding code the checker denies is checked as code",
        data: true,
        rule: "call_not_allowed:__import__",
        proof: None,
        needs: &[],
        code: r#"def f(x: "__import__('os').system('id')"):
    pass
"#,
    },
    Hostile {
        name: "make_dataclass_array_interface",
        why: "a make_dataclass field named __array_interface__ makes numpy read a pointer from a dict: arbitrary memory read",
        data: true,
        rule: "attr_not_allowed:__array_interface__",
        proof: Some(r#"SECRET-IN-MEMORY"#),
        needs: &["numpy"],
        code: r#"import dataclasses
import numpy as np
D = dataclasses.make_dataclass('D', ['__array_interface__'])
b = b'SECRET-IN-MEMORY'
a = np.asarray(D({'data': (id(b) + 32, False), 'shape': (16,), 'typestr': '|u1', 'version': 3}))
print(bytes(a))
"#,
    },
    Hostile {
        name: "make_dataclass_dynamic_names",
        why: "the same with the dunder built at run time: non-literal field names are denied",
        data: true,
        rule: "field_names_not_literal:make_dataclass",
        proof: Some(r#"SECRET-IN-MEMORY"#),
        needs: &["numpy"],
        code: r#"import dataclasses
import numpy as np
name = '_' + '_array_interface_' + '_'
D = dataclasses.make_dataclass('D', [name])
b = b'SECRET-IN-MEMORY'
a = np.asarray(D({'data': (id(b) + 32, False), 'shape': (16,), 'typestr': '|u1', 'version': 3}))
print(bytes(a))
"#,
    },
    Hostile {
        name: "make_dataclass_namespace",
        why: "make_dataclass(namespace=...) keys become class attributes",
        data: true,
        rule: "attr_not_allowed:__array_interface__",
        proof: None,
        needs: &[],
        code: r#"import dataclasses
D = dataclasses.make_dataclass('D', [], namespace={'__array_interface__': {}})
"#,
    },
    Hostile {
        name: "make_dataclass_alias",
        why: "an aliased factory could be called with names the checker never sees",
        data: true,
        rule: "name_not_allowed:make_dataclass",
        proof: None,
        needs: &[],
        code: r#"import dataclasses
mk = dataclasses.make_dataclass
"#,
    },
    Hostile {
        name: "enum_functional_dynamic",
        why: "enum's functional API sets a dunder from a run-time string: arbitrary memory read through numpy",
        data: true,
        rule: "field_names_not_literal:Enum",
        proof: Some(r#"SECRET-IN-MEMORY"#),
        needs: &["numpy"],
        code: r#"import enum
import numpy as np
b = b'SECRET-IN-MEMORY'
iface = {'data': (id(b) + 32, False), 'shape': (16,), 'typestr': '|u1', 'version': 3}
key = '_' + '_array_interface_' + '_'
E = enum.Enum('E', [(key, iface), ('a', 1)])
print(bytes(np.asarray(E.a)))
"#,
    },
    Hostile {
        name: "enum_memberless_subclass",
        why: "an enum class without members is a functional-API factory itself",
        data: true,
        rule: "field_names_not_literal:Base",
        proof: None,
        needs: &[],
        code: r#"import enum
class Base(enum.Enum):
    pass
names = ['_' + '_array_interface_' + '_']
E = Base('E', names)
"#,
    },
    Hostile {
        name: "namedtuple_frame_field",
        why: "a namedtuple field named gi_frame",
        data: true,
        rule: "attr_not_allowed:gi_frame",
        proof: None,
        needs: &[],
        code: r#"from collections import namedtuple
P = namedtuple('P', 'x gi_frame')
"#,
    },
    Hostile {
        name: "pandas_apply_eval",
        why: "pandas looks up 'eval' as a method name: DataFrame.eval runs without .eval in the source",
        data: true,
        rule: "attr_not_allowed:eval",
        proof: Some(r#"[101]"#),
        needs: &["pandas"],
        code: r#"import pandas as pd
df = pd.DataFrame({'a': [1]})
print(list(df.apply('eval', expr='a + 100')))
"#,
    },
    Hostile {
        name: "pandas_apply_dynamic_name",
        why: "the method name built at run time",
        data: true,
        rule: "dynamic_method_name",
        proof: Some(r#"[101]"#),
        needs: &["pandas"],
        code: r#"import pandas as pd
df = pd.DataFrame({'a': [1]})
how = 'ev' + 'al'
print(list(df.agg(how, expr='a + 100')))
"#,
    },
    Hostile {
        name: "pandas_agg_dunder",
        why: "pandas looks up a dunder by string (getattr on the frame)",
        data: true,
        rule: "attr_not_allowed:__getattribute__",
        proof: Some(r#"<class 'pandas.core.frame.DataFrame'>"#),
        needs: &["pandas"],
        code: r#"import pandas as pd
df = pd.DataFrame({'a': [1]})
print(df.agg('__getattribute__', 0, '__class__'))
"#,
    },
    Hostile {
        name: "pattern_eval_method",
        why: "a pattern keyword binds DataFrame.eval",
        data: true,
        rule: "attr_not_allowed:eval",
        proof: Some(r#"[101]"#),
        needs: &["pandas"],
        code: r#"import pandas as pd
df = pd.DataFrame({'a': [1]})
match df:
    case pd.DataFrame(eval=ev):
        print(list(ev('a + 100')))
"#,
    },
    Hostile {
        name: "pandas_pivot_aggfunc_dunder",
        why: "pivot_table looks aggfunc up on the GroupBy with getattr (here it calls the GroupBy class)",
        data: true,
        rule: "attr_not_allowed:__class__",
        proof: None,
        needs: &["pandas"],
        code: r#"import pandas as pd
df = pd.DataFrame({'k': [1, 1], 'a': [1, 2]})
df.pivot_table(index='k', values='a', aggfunc='__class__')
"#,
    },
    Hostile {
        name: "pandas_named_agg_dynamic",
        why: "the function of a named aggregation is a method name too",
        data: true,
        rule: "dynamic_method_name",
        proof: None,
        needs: &["pandas"],
        code: r#"import pandas as pd
df = pd.DataFrame({'k': [1, 1], 'a': [1, 2]})
how = 'su' + 'm'
print(df.groupby('k').agg(t=('a', how)))
"#,
    },
    Hostile {
        name: "hasattr_literal",
        why: "hasattr is getattr answering yes or no: a literal name gets the attribute rules",
        data: false,
        rule: "attr_not_allowed:gi_frame",
        proof: Some("True"),
        needs: &[],
        code: r#"print(hasattr((i for i in [1]), 'gi_frame'))
"#,
    },
    Hostile {
        name: "factory_alias_in_annotation_walrus",
        why: "a walrus in an annotation aliases a factory, which could then get run-time names",
        data: true,
        rule: "name_not_allowed:Enum",
        proof: None,
        needs: &[],
        code: r#"from enum import Enum
x: (mk := Enum) = 1
E = mk('E', ['_' + '_array_interface_' + '_'])
"#,
    },
];

#[test]
fn attributes_named_without_a_dot_are_denied_and_really_work_unchecked() {
    let data = data_policy();
    let default = Policy::default();
    let mut failures = Vec::new();
    for h in ATTRIBUTE_WITHOUT_A_DOT {
        let policy = if h.data { &data } else { &default };
        let d = check_action(&action(h.code), policy);
        if d.is_allow() || !d.violations.iter().any(|v| v.rule == h.rule) {
            failures.push(format!(
                "{} ({}): expected {}, got {:?}",
                h.name, h.why, h.rule, d.violations
            ));
        }
        let Some(proof) = h.proof else { continue };
        let dir = tempfile::tempdir().expect("tempdir");
        let args: Vec<&str> = policy
            .interpreter
            .python_args
            .iter()
            .map(String::as_str)
            .collect();
        let Some(run) = common::python::run(&args, h.code, dir.path(), h.needs) else {
            continue;
        };
        if !run.stdout.contains(proof) {
            failures.push(format!(
                "{}: the unchecked run did not print {proof:?} ({}):\n{}\n{}",
                h.name, h.why, run.stdout, run.stderr
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
