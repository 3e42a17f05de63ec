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
    let mut child = Command::new(crate::common::built_binary("agentjail"))
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

/// The decision must be a deny from the static check itself (exit 1, `decision: deny`), and
/// among its violations the rule the technique is about (`rule`): a deny for another reason
/// (a stray `import os` beside the technique, a contract error such as code_too_long) proves
/// nothing about the technique and fails.
fn denied_why(name: &str, code: &str, rule: &str) -> Result<String, String> {
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
    if rc == 1 && decision == "deny" && rules.iter().any(|r| r == rule) {
        Ok(rules.join(","))
    } else {
        Err(format!(
            "{name}: NOT denied by {rule}: exit {rc}, decision {v}"
        ))
    }
}

#[track_caller]
fn assert_denied(name: &str, code: &str, rule: &str) {
    if let Err(e) = denied_why(name, code, rule) {
        panic!("{e}\ncode: {code:?}");
    }
}

/// Techniques from bypass lists that turn out harmless under the default policy: each is
/// allowed, and each line says why (were the checker to deny them, an earlier version of this
/// corpus counted them as bypasses "denied" only because of a trailing `import os`).
const HARMLESS: &[(&str, &str, &str)] = &[
    (
        "percent_mapping",
        "x = '%(a)s' % {'a': 1}\nx = '%(__class__)s' % {'__class__': 1}",
        "a %-mapping key is a dict key, never an attribute lookup",
    ),
    (
        "ligature_fi_name",
        "fi = 1\nx = \u{fb01}",
        "NFKC folds the ligature to `fi`, an ordinary name, as CPython does",
    ),
    (
        "hasattr_probe",
        "x = hasattr(1, 'real')",
        "hasattr with a literal, non-dunder name reads nothing the attribute rules deny",
    ),
];

#[test]
fn harmless_lookalikes_are_allowed() {
    for (name, code, why) in HARMLESS {
        let (rc, v) = check(code);
        assert_eq!(rc, 0, "{name} ({why}) should be allowed: {v}");
        assert_eq!(v["decision"], "allow", "{name}: {v}");
    }
}

/// Bypass attempts the checker denies today (one test: every case runs before the assertion).
const DENIED: &[(&str, &str, &str)] = &[
    ("cr_only_utf7", "#!x\r# coding: utf-7\rx = 1 # +AAo-eval(+ACI-1+ACI-)\r", "source_encoding_declared"),
    ("ff_before_coding", "\u{c}# coding: utf-7\nx = 1 # +AAo-eval(+ACI-1+ACI-)\n", "source_encoding_declared"),
    ("tab_before_coding", "\t# coding: utf-7\nx = 1 # +AAo-eval(+ACI-1+ACI-)\n", "source_encoding_declared"),
    ("vim_fileencoding_line2", "#!x\n# vim: fileencoding=utf-7\nx = 1 # +AAo-eval(+ACI-1+ACI-)\n", "source_encoding_declared"),
    ("coding_utf8_dash_variant", "# coding: utf-8-sig-x\nx = 1\n", "source_encoding_declared"),
    ("format_unicode_space", "x = '{\u{3000}a.__class__}'.format(**{'\u{3000}a': 1})", "format_field_access"),
    ("format_on_fstring", "x = f'{{0.__class__}}'.format(1)", "format_field_access"),
    ("fullwidth_lowline_dunder", "x = ()._\u{ff3f}class_\u{ff3f}", "attr_not_allowed:__class__"),
    ("fullwidth_gi_frame", "g = (i for i in [1])\nf = g.\u{ff47}i_frame", "attr_not_allowed:gi_frame"),
    ("math_italic_eval", "\u{1d452}val('1')", "call_not_allowed:eval"),
    ("script_e_exec", "\u{212f}xec('1')", "call_not_allowed:exec"),
    ("nfkc_getattr_fullwidth", "\u{ff47}etattr(1, 'real')", "name_not_allowed:getattr"),
    ("nfkc_open_superscript", "op\u{1d49}n('/etc/passwd')", "call_not_allowed:open"),
    ("nfkc_builtins_name", "_\u{ff3f}builtins__", "name_not_allowed:__builtins__"),
    ("nfkc_import_os_fullwidth", "import \u{ff4f}s", "import_not_allowed:os"),
    ("nfkc_sys_attr", "import statistics\nstatistics.\u{ff53}ys", "module_reference_not_allowed:sys"),
    ("for_target_module", "import json\nfor m in [1]:\n    pass\nx = json.decoder", "module_reference_not_allowed:json.decoder"),
    ("with_as_module", "import json\nwith json as j:\n    pass", "module_reference_not_allowed:json"),
    ("except_as_module_alias", "import json\ntry:\n    pass\nexcept json.decoder.JSONDecodeError:\n    pass", "module_attr_not_allowed:json.decoder"),
    ("walrus_module", "import json\nx = (m := json)", "module_reference_not_allowed:json"),
    ("lambda_default_module", "import json\nf = lambda m=json: m.codecs", "module_reference_not_allowed:json"),
    ("dict_of_module", "import json\nd = {'m': json}", "module_reference_not_allowed:json"),
    ("starred_module", "import json\nx = [*[json]]", "module_reference_not_allowed:json"),
    ("module_in_fstring", "import json\nx = f'{json!r}'", "module_reference_not_allowed:json"),
    ("module_decorator", "import json\n@json.decoder.scanstring\ndef f():\n    pass", "module_attr_not_allowed:json.decoder"),
    ("module_match_capture", "import json\nmatch json:\n    case m:\n        m.codecs", "module_reference_not_allowed:json"),
    ("global_import_alias", "def f():\n    global j\n    import json as j\nf()\nj.codecs", "module_reference_not_allowed:codecs"),
    ("import_submodule_as", "import json.decoder as d", "import_not_allowed:json.decoder"),
    ("from_json_underscore", "from json import _default_decoder", "import_not_allowed:json._default_decoder"),
    ("from_statistics_random", "from statistics import random", "import_not_allowed:statistics.random"),
    ("import_dunder_module", "import __main__", "import_not_allowed:__main__"),
    ("super_thisclass", "class A:\n    def f(self):\n        return super().__thisclass__", "attr_not_allowed:__thisclass__"),
    ("match_class_keyword_f_back", "match 1:\n    case object(f_back=x):\n        pass", "attr_not_allowed:f_back"),
    ("match_class_tb_next", "try:\n    1/0\nexcept Exception as e:\n    match e:\n        case BaseException(__traceback__=t):\n            pass", "attr_not_allowed:__traceback__"),
    ("gen_gi_yieldfrom", "g = (i for i in [1])\nx = g.gi_yieldfrom", "attr_not_allowed:gi_yieldfrom"),
    ("coroutine_cr_frame", "async def f():\n    pass\nx = f().cr_frame", "attr_not_allowed:cr_frame"),
    ("async_gen_ag_frame", "async def f():\n    yield 1\nx = f().ag_frame", "attr_not_allowed:ag_frame"),
    ("frame_f_trace", "def f(fr):\n    fr.f_trace = print", "attr_not_allowed:f_trace"),
    ("code_replace", "def f(co):\n    return co.co_consts", "attr_not_allowed:co_consts"),
    ("exc_traceback_with", "try:\n    1/0\nexcept Exception as e:\n    t = e.with_traceback(None).__traceback__", "attr_not_allowed:__traceback__"),
    ("class_kw_metaclass_eval", "class A(metaclass=eval):\n    pass", "name_not_allowed:eval"),
    ("class_kw_dunder", "class A(__x=1):\n    pass", "name_not_allowed:__x"),
    ("init_subclass_kw", "class A:\n    def __init_subclass__(cls, **k):\n        pass", "attr_not_allowed:__init_subclass__"),
    ("definable_dunder_getattribute", "class A:\n    def __getattribute__(self, n):\n        pass", "attr_not_allowed:__getattribute__"),
    ("definable_dunder_set_name", "class A:\n    def __set_name__(self, o, n):\n        pass", "attr_not_allowed:__set_name__"),
    ("define_class_getitem", "class A:\n    def __class_getitem__(cls, x):\n        return x", "attr_not_allowed:__class_getitem__"),
    ("lambda_default_exec", "f = (lambda *a, k=exec: k)", "name_not_allowed:exec"),
    ("comprehension_builtins", "x = [__builtins__ for _ in [1]]", "name_not_allowed:__builtins__"),
    ("dict_comp_key_eval", "x = {eval: 1 for _ in [1]}", "name_not_allowed:eval"),
    ("annotated_assign_target_attr", "class A: pass\nA.gi_frame: int = 1", "attr_not_allowed:gi_frame"),
    ("del_attr_denied", "class A: pass\ndel A.f_globals", "attr_not_allowed:f_globals"),
    ("augassign_attr", "class A: pass\nA.f_locals += 1", "attr_not_allowed:f_locals"),
    ("keyword_unpack_dunder", "dict(**{'__class__': 1})", "name_not_allowed:__class__"),
    ("print_file_kw_open", "print('x', file=open('/tmp/x', 'w'))", "call_not_allowed:open"),
    ("nested_fspec_eval", "x = f'{1:{2:{3:{eval}}}}'", "name_not_allowed:eval"),
    ("fstring_conversion_exec", "x = f'{exec!r}'", "name_not_allowed:exec"),
    ("fstring_debug_eval", "x = f'{eval=}'", "name_not_allowed:eval"),
    ("type_alias_stmt", "type X = eval", "syntax_error"),
    ("star_import_json", "from json import *", "import_star_not_allowed:json"),
    ("input_referenced_via_map", "x = list(map(input, ['a']))", "name_not_allowed:input"),
    ("input_in_lambda", "f = lambda: input()\nf()", "too_many_input_reads"),
    ("input_in_def", "def r():\n    return input()\nr()\nr()", "too_many_input_reads"),
    ("input_in_while", "while True:\n    input()", "too_many_input_reads"),
    ("input_many", "a = input()\nb = input()\nc = input()\nd = input()", "too_many_input_reads"),
    ("input_in_class_body_loop", "class A:\n    x = [input() for _ in range(9)]", "too_many_input_reads"),
    ("input_in_generator", "x = (input() for _ in range(9))", "too_many_input_reads"),
    ("input_recursion_decorator", "@input\ndef f():\n    pass", "name_not_allowed:input"),
    ("url_in_comment_code", "u = 'h' + 't' + 'tp://x'", "network_literal_blocked"),
    ("url_scheme_escaped_bytes", "u = b'file\\x3a//etc/passwd'", "network_literal_blocked"),
    ("url_raw_unicode_name", "u = 'gopher\\N{COLON}//x'", "network_literal_blocked"),
    ("url_octal_escape", "u = 'ftp\\072//x'", "network_literal_blocked"),
    ("http_in_comment", "# see HTTP://example.org\nx = 1", "network_literal_blocked"),
    ("relative_import", "from . import x", "import_not_allowed:relative"),
    ("import_dotted_relative_json", "from .json import loads", "import_not_allowed:relative"),
    ("nul_in_string", "x = '\u{0}'", "source_nul_byte"),
    ("tabs_spaces_mixed", "if True:\n\t x = 1\n", "source_indentation"),
    ("nonlocal_builtins", "def f():\n    __builtins__ = 1\n    def g():\n        nonlocal __builtins__", "name_not_allowed:__builtins__"),
    ("except_star_eval", "try:\n    pass\nexcept* eval('E'):\n    pass", "call_not_allowed:eval"),
    ("global_eval_bind", "def f():\n    global eval\n    eval = print", "name_not_allowed:eval"),
    ("exit_call", "exit()", "call_not_allowed:exit"),
    ("quit_ref", "q = quit", "name_not_allowed:quit"),
    ("copyright_call", "copyright()", "call_not_allowed:copyright"),
    ("memoryview_alias", "m = memoryview", "name_not_allowed:memoryview"),
    ("object_subclasses_via_bases_tuple", "x = object.__subclasses__()", "attr_not_allowed:__subclasses__"),
    ("classmethod_getattr_string", "x = classmethod(getattr)", "name_not_allowed:getattr"),
    ("string_module_formatter", "from string import Formatter", "import_not_allowed:string"),
    ("import_json_tool", "import json.tool", "import_not_allowed:json.tool"),
    ("from_json_import_codecs_alias", "from json import codecs as c", "attr_not_allowed:codecs"),
    ("statistics_sys_alias_from", "from statistics import sys as s", "attr_not_allowed:sys"),
    ("ctypes_import_in_try", "try:\n    import ctypes\nexcept ImportError:\n    pass", "import_not_allowed:ctypes"),
    ("importlib_via_name", "import importlib", "import_not_allowed:importlib"),
    ("dunder_loader_spec", "x = __spec__", "name_not_allowed:__spec__"),
    ("dunder_loader", "x = __loader__.load_module", "name_not_allowed:__loader__"),
    ("builtin_module_attr_modules", "import json\njson.JSONDecoder.modules", "attr_not_allowed:modules"),
    ("attr_modules_any", "class A: pass\nA.modules", "attr_not_allowed:modules"),
    ("load_module_attr", "class A: pass\nA.load_module('os')", "attr_not_allowed:load_module"),
    ("decode_hook_object", "import json\njson.loads('{}', object_hook=eval)", "name_not_allowed:eval"),
    ("json_cls_kw", "import json\njson.loads('1', cls=json.decoder.JSONDecoder)", "module_attr_not_allowed:json.decoder"),
];

/// Robustness: deep nesting and huge literals (plus a denied import) must be parsed and denied,
/// never crash or skip the check.
fn generated() -> Vec<(&'static str, String, &'static str)> {
    // The denied import comes AFTER the deep or huge part: the deny proves the checker parsed
    // through it rather than giving up early.
    vec![
        (
            "deep_nesting_lists",
            format!("x = {}{}\nimport os", "[".repeat(300), "]".repeat(300)),
            // Refused before the import is reached: the bracket depth is bounded.
            "nesting_too_deep",
        ),
        (
            "deep_nesting_parens_unary",
            format!("x = {}1\nimport os", "-".repeat(2000)),
            "import_not_allowed:os",
        ),
        (
            "deep_nesting_not",
            format!("x = {}1\nimport os", "not ".repeat(550)),
            "import_not_allowed:os",
        ),
        (
            "deep_nesting_lambda",
            format!("f = {}1\nimport os", "lambda: ".repeat(280)),
            "import_not_allowed:os",
        ),
        (
            "deep_attr_chain",
            format!("x = (1){}\nimport os", ".real".repeat(450)),
            "import_not_allowed:os",
        ),
        (
            "huge_int_literal",
            format!("x = {}\nimport os", "9".repeat(2300)),
            "import_not_allowed:os",
        ),
        (
            "huge_string_literal",
            format!("x = '{}'\nimport os", "a".repeat(2300)),
            "import_not_allowed:os",
        ),
    ]
}

#[test]
fn redteam_corpus_is_denied() {
    let mut failures = Vec::new();
    let mut n = 0;
    for (name, code, rule) in DENIED {
        n += 1;
        match denied_why(name, code, rule) {
            Ok(rules) => eprintln!("{name}: denied ({rules})"),
            Err(e) => failures.push(e),
        }
    }
    for (name, code, rule) in generated() {
        n += 1;
        match denied_why(name, &code, rule) {
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
    assert_denied("crlf_utf7_open", "#!/usr/bin/python3\r\n# coding: utf-7\r\nprint(1) # +AAo-print(open(+ACI-/etc/passwd+ACI-).read())\r\n", "source_encoding_declared");
}

#[test]
fn breach_crlf_utf7_import_os() {
    assert_denied("crlf_utf7_import_os", "# hello\r\n# -*- coding: utf-7 -*-\r\nx = 1 # +AAo-import os+ADs- print(os.listdir(+ACI-/+ACI-))\r\n", "source_encoding_declared");
}

#[test]
fn breach_crlf_blank_first_line_utf7() {
    assert_denied(
        "crlf_blank_first_line_utf7",
        "\r\n# coding=utf-7\r\nx = 1 # +AAo-eval(+ACI-1+ACI-)\r\n",
        "source_encoding_declared",
    );
}

#[test]
fn breach_crlf_raw_unicode_escape() {
    assert_denied("crlf_raw_unicode_escape", "#!x\r\n# coding: raw_unicode_escape\r\nx = 1 # \\u000aprint(open('/etc/passwd').read())\r\n", "source_encoding_declared");
}

#[test]
fn breach_crlf_latin1() {
    assert_denied(
        "crlf_latin1",
        "#!x\r\n# coding: latin-1\r\nx = 1\r\n",
        "source_encoding_declared",
    );
}

#[test]
fn breach_format_space_field() {
    assert_denied(
        "format_space_field",
        "x = '{ a.__class__.__mro__}'.format(**{' a': 1})\nprint(x)",
        "format_field_access",
    );
}

#[test]
fn breach_format_dash_field() {
    assert_denied(
        "format_dash_field",
        "x = '{a-b.__init__.__globals__}'.format(**{'a-b': print})\nprint(x)",
        "format_field_access",
    );
}

#[test]
fn breach_format_space_index() {
    assert_denied(
        "format_space_index",
        "x = '{ a[0]}'.format(**{' a': [1]})",
        "format_field_access",
    );
}

#[test]
fn breach_format_concat_space() {
    assert_denied(
        "format_concat_space",
        "x = ('{ a' '.__class__}').format(**{' a': 1})",
        "format_field_access",
    );
}

#[test]
fn breach_format_nested_spec_space() {
    assert_denied(
        "format_nested_spec_space",
        "x = '{0:{ a.__class__}}'.format(1, **{' a': 1})",
        "format_field_access",
    );
}

#[test]
fn breach_class_attr_module_random() {
    assert_denied(
        "class_attr_module_random",
        "class C:\n    import statistics\nC.statistics.random.seed(1)",
        "import_in_class_body",
    );
}

#[test]
fn breach_class_attr_module_decoder() {
    assert_denied(
        "class_attr_module_decoder",
        "class C:\n    import json\nr = C.json.decoder.re",
        "import_in_class_body",
    );
}

#[test]
fn breach_class_attr_module_as() {
    assert_denied(
        "class_attr_module_as",
        "class C:\n    import statistics as s\nm = C.s.math",
        "import_in_class_body",
    );
}

#[test]
fn breach_class_attr_json_scanner() {
    assert_denied(
        "class_attr_json_scanner",
        "class C:\n    import json\nC.json.scanner",
        "import_in_class_body",
    );
}

#[test]
fn breach_instance_module_attr() {
    assert_denied(
        "instance_module_attr",
        "class C:\n    import json\nC().json.decoder",
        "import_in_class_body",
    );
}

#[test]
fn breach_crlf_only_on_line_one() {
    // Only line 1 needs the CRLF; the coding line itself may end in LF.
    assert_denied(
        "crlf_only_on_line_one",
        "#!x\r\n# coding: utf-7\n+AGU-val('1')\n",
        "source_encoding_declared",
    );
}

#[test]
fn breach_format_digit_then_space() {
    // `{0 .x}` is the keyword field "0 ", not positional 0: still an attribute walk.
    assert_denied(
        "format_digit_then_space",
        "x = '{0 .__class__}'.format(**{'0 ': 1})",
        "format_field_access",
    );
}
