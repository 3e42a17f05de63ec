//! Red-team corpus for `agentjail check` on the embedded default policy: known Python
//! sandbox-bypass techniques, each run through the real binary (`agentjail check -` with the
//! action JSON on stdin). Every program here must be denied. The red team found 17 that
//! were allowed (CRLF hiding a coding declaration, format fields with non-identifier names,
//! imports in class bodies); the checker was fixed and they run as ordinary tests.
//!
//! None of these duplicates tests/check/corpus.rs. The deep/huge inputs are built at run time
//! and stay under the default policy's 2400-character limit, so they reach the parser.

use std::io::Write;
use std::process::{Command, Stdio};

/// Run `agentjail check -` on an action carrying `code`; returns (exit code, decision JSON).
fn check(code: &str) -> (i32, serde_json::Value) {
    let action = serde_json::json!({
        "id": "redteam",
        "language": "python",
        "entrypoint": "main.py",
        "code": code,
        "input_payload": {},
    });
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentjail"))
        .args(["check", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn agentjail check");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(action.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().expect("wait agentjail check");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "check printed no JSON ({e}) for {code:?}: stdout {:?} stderr {:?}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), v)
}

/// The decision must be a deny from the static check itself (exit 1, `decision: deny`, at
/// least one violation), not a contract error such as code_too_long.
fn denied_why(name: &str, code: &str) -> Result<String, String> {
    let (rc, v) = check(code);
    let decision = v.get("decision").and_then(|d| d.as_str()).unwrap_or("");
    let rules: Vec<String> = v
        .get("violations")
        .and_then(|x| x.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.get("rule").and_then(|r| r.as_str()).map(String::from))
                .collect()
        })
        .unwrap_or_default();
    if rc == 1 && decision == "deny" && !rules.is_empty() {
        Ok(rules.join(","))
    } else {
        Err(format!("{name}: NOT denied: exit {rc}, decision {v}"))
    }
}

#[track_caller]
fn assert_denied(name: &str, code: &str) {
    if let Err(e) = denied_why(name, code) {
        panic!("{e}\ncode: {code:?}");
    }
}

/// Bypass attempts the checker denies today (one test: every case runs before the assertion).
const DENIED: &[(&str, &str)] = &[
    ("cr_only_utf7", "#!x\r# coding: utf-7\rx = 1 # +AAo-eval(+ACI-1+ACI-)\r"),
    ("ff_before_coding", "\u{c}# coding: utf-7\nx = 1 # +AAo-eval(+ACI-1+ACI-)\n"),
    ("tab_before_coding", "\t# coding: utf-7\nx = 1 # +AAo-eval(+ACI-1+ACI-)\n"),
    ("vim_fileencoding_line2", "#!x\n# vim: fileencoding=utf-7\nx = 1 # +AAo-eval(+ACI-1+ACI-)\n"),
    ("coding_utf8_dash_variant", "# coding: utf-8-sig-x\nimport os\n"),
    ("format_unicode_space", "x = '{\u{3000}a.__class__}'.format(**{'\u{3000}a': 1})"),
    ("format_on_fstring", "x = f'{{0.__class__}}'.format(1)"),
    ("percent_mapping", "x = '%(a)s' % {'a': 1}\nx = '%(__class__)s' % {'__class__': 1}\nimport os"),
    ("fullwidth_lowline_dunder", "x = ()._\u{ff3f}class_\u{ff3f}"),
    ("fullwidth_gi_frame", "g = (i for i in [1])\nf = g.\u{ff47}i_frame"),
    ("math_italic_eval", "\u{1d452}val('1')"),
    ("script_e_exec", "\u{212f}xec('1')"),
    ("ligature_fi_name", "x = \u{fb01}\nimport os"),
    ("nfkc_getattr_fullwidth", "\u{ff47}etattr(1, 'real')"),
    ("nfkc_open_superscript", "op\u{1d49}n('/etc/passwd')"),
    ("nfkc_builtins_name", "_\u{ff3f}builtins__"),
    ("nfkc_import_os_fullwidth", "import \u{ff4f}s"),
    ("nfkc_sys_attr", "import statistics\nstatistics.\u{ff53}ys"),
    ("for_target_module", "import json\nfor m in [1]:\n    pass\nx = json.decoder"),
    ("with_as_module", "import json\nwith json as j:\n    pass"),
    ("except_as_module_alias", "import json\ntry:\n    pass\nexcept json.decoder.JSONDecodeError:\n    pass"),
    ("walrus_module", "import json\nx = (m := json)"),
    ("lambda_default_module", "import json\nf = lambda m=json: m.codecs"),
    ("dict_of_module", "import json\nd = {'m': json}"),
    ("starred_module", "import json\nx = [*[json]]"),
    ("module_in_fstring", "import json\nx = f'{json!r}'"),
    ("module_decorator", "import json\n@json.decoder.scanstring\ndef f():\n    pass"),
    ("module_match_capture", "import json\nmatch json:\n    case m:\n        m.codecs"),
    ("global_import_alias", "def f():\n    global j\n    import json as j\nf()\nj.codecs"),
    ("import_submodule_as", "import json.decoder as d"),
    ("from_json_underscore", "from json import _default_decoder"),
    ("from_statistics_random", "from statistics import random"),
    ("import_dunder_module", "import __main__"),
    ("hasattr_probe", "import os\nhasattr(1, 'real')"),
    ("super_thisclass", "class A:\n    def f(self):\n        return super().__thisclass__"),
    ("match_class_keyword_f_back", "match 1:\n    case object(f_back=x):\n        pass"),
    ("match_class_tb_next", "try:\n    1/0\nexcept Exception as e:\n    match e:\n        case BaseException(__traceback__=t):\n            pass"),
    ("gen_gi_yieldfrom", "g = (i for i in [1])\nx = g.gi_yieldfrom"),
    ("coroutine_cr_frame", "async def f():\n    pass\nx = f().cr_frame"),
    ("async_gen_ag_frame", "async def f():\n    yield 1\nx = f().ag_frame"),
    ("frame_f_trace", "def f(fr):\n    fr.f_trace = print"),
    ("code_replace", "def f(co):\n    return co.co_consts"),
    ("exc_traceback_with", "try:\n    1/0\nexcept Exception as e:\n    t = e.with_traceback(None).__traceback__"),
    ("class_kw_metaclass_eval", "class A(metaclass=eval):\n    pass"),
    ("class_kw_dunder", "class A(__x=1):\n    pass"),
    ("init_subclass_kw", "class A:\n    def __init_subclass__(cls, **k):\n        pass"),
    ("definable_dunder_getattribute", "class A:\n    def __getattribute__(self, n):\n        pass"),
    ("definable_dunder_set_name", "class A:\n    def __set_name__(self, o, n):\n        pass"),
    ("define_class_getitem", "class A:\n    def __class_getitem__(cls, x):\n        return x"),
    ("lambda_default_exec", "f = (lambda *a, k=exec: k)"),
    ("comprehension_builtins", "x = [__builtins__ for _ in [1]]"),
    ("dict_comp_key_eval", "x = {eval: 1 for _ in [1]}"),
    ("annotated_assign_target_attr", "class A: pass\nA.gi_frame: int = 1"),
    ("del_attr_denied", "class A: pass\ndel A.f_globals"),
    ("augassign_attr", "class A: pass\nA.f_locals += 1"),
    ("keyword_unpack_dunder", "dict(**{'__class__': 1})"),
    ("print_file_kw_open", "print('x', file=open('/tmp/x', 'w'))"),
    ("nested_fspec_eval", "x = f'{1:{2:{3:{eval}}}}'"),
    ("fstring_conversion_exec", "x = f'{exec!r}'"),
    ("fstring_debug_eval", "x = f'{eval=}'"),
    ("type_alias_stmt", "type X = eval"),
    ("star_import_json", "from json import *"),
    ("input_referenced_via_map", "x = list(map(input, ['a']))"),
    ("input_in_lambda", "f = lambda: input()\nf()"),
    ("input_in_def", "def r():\n    return input()\nr()\nr()"),
    ("input_in_while", "while True:\n    input()"),
    ("input_many", "a = input()\nb = input()\nc = input()\nd = input()"),
    ("input_in_class_body_loop", "class A:\n    x = [input() for _ in range(9)]"),
    ("input_in_generator", "x = (input() for _ in range(9))"),
    ("input_recursion_decorator", "@input\ndef f():\n    pass"),
    ("url_in_comment_code", "u = 'h' + 't' + 'tp://x'\nimport socket"),
    ("url_scheme_escaped_bytes", "u = b'file\\x3a//etc/passwd'"),
    ("url_raw_unicode_name", "u = 'gopher\\N{COLON}//x'"),
    ("url_octal_escape", "u = 'ftp\\072//x'"),
    ("http_in_comment", "# see HTTP://example.org\nx = 1"),
    ("relative_import", "from . import x"),
    ("import_dotted_relative_json", "from .json import loads"),
    ("nul_in_string", "x = '\u{0}'"),
    ("tabs_spaces_mixed", "if True:\n\t x = 1\n"),
    ("nonlocal_builtins", "def f():\n    __builtins__ = 1\n    def g():\n        nonlocal __builtins__"),
    ("except_star_eval", "try:\n    pass\nexcept* eval('E'):\n    pass"),
    ("global_eval_bind", "def f():\n    global eval\n    eval = print"),
    ("exit_call", "exit()"),
    ("quit_ref", "q = quit"),
    ("copyright_call", "copyright()"),
    ("memoryview_alias", "m = memoryview"),
    ("object_subclasses_via_bases_tuple", "x = object.__subclasses__()"),
    ("classmethod_getattr_string", "x = classmethod(getattr)"),
    ("string_module_formatter", "from string import Formatter"),
    ("import_json_tool", "import json.tool"),
    ("from_json_import_codecs_alias", "from json import codecs as c"),
    ("statistics_sys_alias_from", "from statistics import sys as s"),
    ("ctypes_import_in_try", "try:\n    import ctypes\nexcept ImportError:\n    pass"),
    ("importlib_via_name", "import importlib"),
    ("dunder_loader_spec", "x = __spec__"),
    ("dunder_loader", "x = __loader__.load_module"),
    ("builtin_module_attr_modules", "import json\njson.JSONDecoder.modules"),
    ("attr_modules_any", "class A: pass\nA.modules"),
    ("load_module_attr", "class A: pass\nA.load_module('os')"),
    ("decode_hook_object", "import json\njson.loads('{}', object_hook=eval)"),
    ("json_cls_kw", "import json\njson.loads('1', cls=json.decoder.JSONDecoder)"),
];

/// Robustness: deep nesting and huge literals (plus a denied import) must be parsed and denied,
/// never crash or skip the check.
fn generated() -> Vec<(&'static str, String)> {
    vec![
        (
            "deep_nesting_lists",
            format!("import os\nx = {}{}", "[".repeat(300), "]".repeat(300)),
        ),
        (
            "deep_nesting_parens_unary",
            format!("import os\nx = {}1", "-".repeat(2000)),
        ),
        (
            "deep_nesting_not",
            format!("import os\nx = {}1", "not ".repeat(550)),
        ),
        (
            "deep_nesting_lambda",
            format!("import os\nf = {}1", "lambda: ".repeat(280)),
        ),
        (
            "deep_attr_chain",
            format!("import os\nx = (1){}", ".real".repeat(450)),
        ),
        (
            "huge_int_literal",
            format!("import os\nx = {}", "9".repeat(2300)),
        ),
        (
            "huge_string_literal",
            format!("import os\nx = '{}'", "a".repeat(2300)),
        ),
    ]
}

#[test]
fn redteam_corpus_is_denied() {
    let mut failures = Vec::new();
    let mut n = 0;
    for (name, code) in DENIED {
        n += 1;
        match denied_why(name, code) {
            Ok(rules) => eprintln!("{name}: denied ({rules})"),
            Err(e) => failures.push(e),
        }
    }
    for (name, code) in generated() {
        n += 1;
        match denied_why(name, &code) {
            Ok(rules) => eprintln!("{name}: denied ({rules})"),
            Err(e) => failures.push(e),
        }
    }
    assert!(n >= 60, "corpus too small: {n}");
    assert!(
        failures.is_empty(),
        "bypasses allowed:\n{}",
        failures.join("\n")
    );
}

// ------------------------------------------------------------------ allowed today: BREACH

#[test]
fn breach_crlf_utf7_open() {
    assert_denied("crlf_utf7_open", "#!/usr/bin/python3\r\n# coding: utf-7\r\nprint(1) # +AAo-print(open(+ACI-/etc/passwd+ACI-).read())\r\n");
}

#[test]
fn breach_crlf_utf7_import_os() {
    assert_denied("crlf_utf7_import_os", "# hello\r\n# -*- coding: utf-7 -*-\r\nx = 1 # +AAo-import os+ADs- print(os.listdir(+ACI-/+ACI-))\r\n");
}

#[test]
fn breach_crlf_blank_first_line_utf7() {
    assert_denied(
        "crlf_blank_first_line_utf7",
        "\r\n# coding=utf-7\r\nx = 1 # +AAo-eval(+ACI-1+ACI-)\r\n",
    );
}

#[test]
fn breach_crlf_raw_unicode_escape() {
    assert_denied("crlf_raw_unicode_escape", "#!x\r\n# coding: raw_unicode_escape\r\nx = 1 # \\u000aprint(open('/etc/passwd').read())\r\n");
}

#[test]
fn breach_crlf_latin1() {
    assert_denied("crlf_latin1", "#!x\r\n# coding: latin-1\r\nx = 1\r\n");
}

#[test]
fn breach_format_space_field() {
    assert_denied(
        "format_space_field",
        "x = '{ a.__class__.__mro__}'.format(**{' a': 1})\nprint(x)",
    );
}

#[test]
fn breach_format_dash_field() {
    assert_denied(
        "format_dash_field",
        "x = '{a-b.__init__.__globals__}'.format(**{'a-b': print})\nprint(x)",
    );
}

#[test]
fn breach_format_space_index() {
    assert_denied("format_space_index", "x = '{ a[0]}'.format(**{' a': [1]})");
}

#[test]
fn breach_format_concat_space() {
    assert_denied(
        "format_concat_space",
        "x = ('{ a' '.__class__}').format(**{' a': 1})",
    );
}

#[test]
fn breach_format_nested_spec_space() {
    assert_denied(
        "format_nested_spec_space",
        "x = '{0:{ a.__class__}}'.format(1, **{' a': 1})",
    );
}

#[test]
fn breach_class_attr_module_random() {
    assert_denied(
        "class_attr_module_random",
        "class C:\n    import statistics\nC.statistics.random.seed(1)",
    );
}

#[test]
fn breach_class_attr_module_decoder() {
    assert_denied(
        "class_attr_module_decoder",
        "class C:\n    import json\nr = C.json.decoder.re",
    );
}

#[test]
fn breach_class_attr_module_as() {
    assert_denied(
        "class_attr_module_as",
        "class C:\n    import statistics as s\nm = C.s.math",
    );
}

#[test]
fn breach_class_attr_json_scanner() {
    assert_denied(
        "class_attr_json_scanner",
        "class C:\n    import json\nC.json.scanner",
    );
}

#[test]
fn breach_instance_module_attr() {
    assert_denied(
        "instance_module_attr",
        "class C:\n    import json\nC().json.decoder",
    );
}

#[test]
fn breach_crlf_only_on_line_one() {
    // Only line 1 needs the CRLF; the coding line itself may end in LF.
    assert_denied(
        "crlf_only_on_line_one",
        "#!x\r\n# coding: utf-7\n+AGU-val('1')\n",
    );
}

#[test]
fn breach_format_digit_then_space() {
    // `{0 .x}` is the keyword field "0 ", not positional 0: still an attribute walk.
    assert_denied(
        "format_digit_then_space",
        "x = '{0 .__class__}'.format(**{'0 ': 1})",
    );
}
