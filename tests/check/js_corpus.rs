//! The JavaScript static check against corpora: known JS sandbox escapes must be denied
//! with the named rule at the construct, ordinary agent programs must pass, and for tricky
//! comment syntax the checker must never see less code than node (V8) actually runs.

use agentjail_check::javascript::{check_source, JsRules};
use agentjail_check::Violation;
use std::path::Path;
use std::process::Command;

const INCIDENT: &str = include_str!("../data/incident_main.js");
const NODE: &str = "/usr/bin/node";

fn check(code: &str) -> Vec<Violation> {
    check_source(code, &JsRules::default())
}

/// 1-based line and character column of the first occurrence of `marker` in `code`, lines
/// ending at ECMAScript's line terminators (LF, CR, CRLF, U+2028, U+2029) as V8 counts them.
fn position_of(code: &str, marker: &str) -> (u32, u32) {
    let offset = code
        .find(marker)
        .unwrap_or_else(|| panic!("marker {marker:?} not in {code:?}"));
    let (mut line, mut column) = (1, 1);
    let mut chars = code[..offset].chars().peekable();
    while let Some(c) = chars.next() {
        let ends_line = match c {
            '\n' | '\u{2028}' | '\u{2029}' => true,
            '\r' => chars.peek() != Some(&'\n'),
            _ => false,
        };
        if ends_line {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
    }
    (line, column)
}

/// Sandbox escapes and checker bypasses: (name, code, rule that must fire, text the
/// violation must point at).
const ESCAPES: &[(&str, &str, &str, &str)] = &[
    // vm2 CVE-2023-29017: a host Promise's species constructor gets the host error.
    (
        "vm2_cve_2023_29017_species",
        "async function fn() { (function stack() { new Error().stack; stack(); })(); }\nconst p = fn();\np.constructor = { [Symbol.species]: class F { constructor(ex) { ex((x) => x, (err) => err.constructor.constructor('return process')()); } } };\np.then();",
        "attr_not_allowed:constructor",
        "constructor =",
    ),
    (
        "vm2_cve_2023_29017_species_symbol",
        "const p = {};\np.x = { [Symbol.species]: 1 };",
        "attr_not_allowed:species",
        "species",
    ),
    (
        "vm2_prepare_stack_trace_hook",
        "Error.prepareStackTrace = (e, frames) => frames[0].getThis();\nnew Error().stack;",
        "attr_not_allowed:prepareStackTrace",
        "prepareStackTrace",
    ),
    (
        "vm2_callsite_getthis",
        "function f(frames) { return frames[0].getThis(); }",
        "attr_not_allowed:getThis",
        "getThis",
    ),
    (
        "vm2_cve_2022_36067_error_replaced",
        "Error = {};\nError.prepareStackTrace = (e, s) => s;",
        "global_write:Error",
        "Error = {}",
    ),
    // vm2 CVE-2023-30547: a Proxy as err.name.toString reaches host arguments.
    (
        "vm2_cve_2023_30547_proxy",
        "const err = new Error();\nerr.name = { toString: new Proxy(() => '', { apply(t, thiz, args) { return args.constructor.constructor('return process')(); } }) };\ntry { err.stack; } catch (stdout) { stdout; }",
        "call_not_allowed:Proxy",
        "Proxy",
    ),
    (
        "vm2_cve_2023_30547_args_constructor",
        "const h = { apply(t, thiz, args) { return args.constructor.constructor('return process')(); } };",
        "attr_not_allowed:constructor",
        "constructor",
    ),
    // vm2 CVE-2023-32314: getPrototypeOf trap + destructured host constructor.
    (
        "vm2_cve_2023_32314_trap",
        "const handler = { getPrototypeOf(target) { (function stack() { new Error().stack; stack(); })(); } };",
        "attr_not_allowed:getPrototypeOf",
        "getPrototypeOf",
    ),
    (
        "vm2_cve_2023_32314_catch_destructure",
        "try { throw 1; } catch ({constructor: c}) { c.constructor('return process')(); }",
        "attr_not_allowed:constructor",
        "constructor: c",
    ),
    (
        "inspect_custom_symbol_key",
        "const s = Symbol.for('nodejs.util.inspect.custom');\nconst obj = {};\nobj[s] = (d, o, inspect) => inspect;",
        "computed_member_not_allowed",
        "s] =",
    ),
    // vm / isolated-vm context escapes.
    (
        "this_constructor_constructor",
        "const p = this.constructor.constructor('return process')();",
        "attr_not_allowed:constructor",
        "constructor",
    ),
    (
        "array_constructor_constructor",
        "[].constructor.constructor('return process')()",
        "attr_not_allowed:constructor",
        "constructor",
    ),
    (
        "arrow_constructor",
        "(() => {}).constructor('return process')()",
        "attr_not_allowed:constructor",
        "constructor",
    ),
    (
        "async_arrow_constructor",
        "(async () => {}).constructor('return process')()",
        "attr_not_allowed:constructor",
        "constructor",
    ),
    (
        "generator_constructor",
        "(function* () {}).constructor('yield process')().next()",
        "attr_not_allowed:constructor",
        "constructor",
    ),
    (
        "function_prototype_call_call",
        "Function.prototype.call.call(Function, null, 'return process')()",
        "name_not_allowed:Function",
        "Function",
    ),
    (
        "reflect_construct_function",
        "Reflect.construct(Function, ['return process'])()",
        "name_not_allowed:Reflect",
        "Reflect",
    ),
    (
        "new_proxy",
        "const p = new Proxy({}, { get: () => 1 });",
        "call_not_allowed:Proxy",
        "Proxy",
    ),
    (
        "function_call",
        "Function('return process')()",
        "call_not_allowed:Function",
        "Function",
    ),
    (
        "new_function",
        "new Function('return this')()",
        "call_not_allowed:Function",
        "Function",
    ),
    (
        "function_as_tag",
        "Function`return process```",
        "call_not_allowed:Function",
        "Function",
    ),
    (
        "eval_tag",
        "eval`1`",
        "call_not_allowed:eval",
        "eval",
    ),
    // Prototype pollution.
    (
        "object_prototype_write",
        "Object.prototype.polluted = 1;",
        "prototype_write",
        "Object.prototype",
    ),
    (
        "proto_member_write",
        "({}).__proto__.polluted = 1;",
        "attr_not_allowed:__proto__",
        "__proto__",
    ),
    (
        "object_assign_prototype",
        "Object.assign(Object.prototype, { polluted: 1 });",
        "prototype_write",
        "Object.prototype",
    ),
    (
        "proto_computed_string",
        "const a = {};\na['__proto__'].x = 1;",
        "attr_not_allowed:__proto__",
        "'__proto__'",
    ),
    (
        "json_proto_then_assign",
        "const bad = JSON.parse('{\"__proto__\": {\"admin\": true}}');\nconst merged = Object.assign({}, bad);",
        "attr_not_allowed:__proto__",
        "'{",
    ),
    (
        "proto_literal_key",
        "const o = { __proto__: null, x: 1 };",
        "attr_not_allowed:__proto__",
        "__proto__",
    ),
    (
        "proto_computed_literal_key",
        "const o = { ['__proto__']: 1 };",
        "attr_not_allowed:__proto__",
        "'__proto__'",
    ),
    (
        "delete_prototype_member",
        "delete Array.prototype.map;",
        "prototype_write",
        "Array.prototype",
    ),
    (
        "prototype_nullish_assign",
        "String.prototype.shout ??= function () { return 1; };",
        "prototype_write",
        "String.prototype",
    ),
    (
        "prototype_destructuring_target",
        "[Object.prototype.x] = [1];",
        "prototype_write",
        "Object.prototype",
    ),
    (
        "prototype_for_of_target",
        "for (Object.prototype.x of [1]) {}",
        "prototype_write",
        "Object.prototype",
    ),
    // Scope tricks and name spelling.
    (
        "with_statement",
        "const obj = { a: 1 };\nwith (obj) { console.log(a); }",
        "syntax_not_allowed:with",
        "with",
    ),
    (
        "unicode_escaped_eval",
        "\\u0065val('1')",
        "call_not_allowed:eval",
        "\\u0065val",
    ),
    (
        "unicode_brace_escaped_eval",
        "\\u{65}val('1')",
        "call_not_allowed:eval",
        "\\u{65}val",
    ),
    (
        "escaped_member_name",
        "const c = [].\\u0063onstructor;",
        "attr_not_allowed:constructor",
        "\\u0063onstructor",
    ),
    (
        "hex_escaped_string_key",
        "const c = []['\\x63onstructor'];",
        "attr_not_allowed:constructor",
        "'\\x63",
    ),
    (
        "template_key",
        "const c = [][`constructor`];",
        "attr_not_allowed:constructor",
        "`constructor`",
    ),
    (
        "optional_chain_member",
        "const x = {};\nconst c = x?.constructor;",
        "attr_not_allowed:constructor",
        "constructor",
    ),
    (
        "optional_chain_computed",
        "const x = {};\nconst c = x?.['constructor'];",
        "attr_not_allowed:constructor",
        "'constructor'",
    ),
    (
        "globalthis_built_name",
        "globalThis['ev' + 'al']('1')",
        "name_not_allowed:globalThis",
        "globalThis",
    ),
    (
        "string_built_member",
        "const x = [];\nconst F = x['con' + 'structor'];",
        "computed_member_not_allowed",
        "'con'",
    ),
    (
        "string_variable_member",
        "const k = 'con' + 'structor';\nconst F = [][k][k];",
        "computed_member_not_allowed",
        "k][k]",
    ),
    (
        "math_alias_patch",
        "const M = Math;\nM.floor = () => 'constructor';\nconst a = [];\nconst F = a[Math.floor(1)];",
        "computed_member_not_allowed",
        "Math.floor(1)",
    ),
    (
        "math_patch",
        "Math.floor = () => 'constructor';",
        "global_write:Math",
        "Math.floor",
    ),
    (
        "destructure_constructor",
        "const { constructor: C } = () => 1;",
        "attr_not_allowed:constructor",
        "constructor",
    ),
    (
        "destructure_assign_constructor",
        "let constructor;\n({ constructor } = []);",
        "attr_not_allowed:constructor",
        "constructor }",
    ),
    (
        "eval_alias",
        "const e = eval;\ne('1');",
        "name_not_allowed:eval",
        "eval",
    ),
    (
        "indirect_eval",
        "(0, eval)('1')",
        "name_not_allowed:eval",
        "eval",
    ),
    (
        "sloppy_this_is_global",
        "function g() { return this; }\nconst p = g().process;",
        "name_not_allowed:this",
        "this",
    ),
    (
        "callback_this",
        "[1].map(function () { return this; });",
        "name_not_allowed:this",
        "this",
    ),
    (
        "object_method_this",
        "const o = { m() { return this; } };\nconst m = o.m;\nm();",
        "name_not_allowed:this",
        "this",
    ),
    (
        "global_alias",
        "const p = global.process;",
        "name_not_allowed:global",
        "global",
    ),
    (
        "bind_denied",
        "const f = Function.bind(null, 'return 1');",
        "name_not_allowed:Function",
        "Function",
    ),
    (
        "set_timeout_string",
        "setTimeout('console.log(1)', 0);",
        "call_not_allowed:setTimeout",
        "setTimeout",
    ),
    (
        "set_interval_template",
        "setInterval(`x`, 10);",
        "call_not_allowed:setInterval",
        "setInterval",
    ),
    // Modules and the loader.
    (
        "dynamic_import_fs",
        "import('fs').then((m) => m.readFileSync('/etc/passwd'));",
        "call_not_allowed:import",
        "import(",
    ),
    (
        "dynamic_import_names_module",
        "import('fs');",
        "import_not_allowed:fs",
        "'fs'",
    ),
    (
        "require_child_process",
        "require('child_process').execSync('id');",
        "import_not_allowed:child_process",
        "'child_process'",
    ),
    (
        "require_node_fs",
        "const fs = require('node:fs');",
        "import_not_allowed:node:fs",
        "'node:fs'",
    ),
    (
        "require_fs_promises",
        "const fs = require('fs/promises');",
        "import_not_allowed:fs/promises",
        "'fs/promises'",
    ),
    (
        "require_legacy_internal_http",
        "const c = require('_http_client');",
        "import_not_allowed:_http_client",
        "'_http_client'",
    ),
    (
        "require_tty_fd_socket",
        "const { ReadStream } = require('node:tty');",
        "import_not_allowed:node:tty",
        "'node:tty'",
    ),
    (
        "implicit_global_by_destructuring",
        "({ leaked } = { leaked: 1 });",
        "global_write:leaked",
        "leaked }",
    ),
    (
        "require_template",
        "const cp = require(`child_process`);",
        "import_not_allowed:child_process",
        "`child_process`",
    ),
    (
        "require_built",
        "const m = require(['child', 'process'].join('_'));",
        "name_not_allowed:require",
        "require",
    ),
    (
        "require_alias",
        "const r = require;\nr('fs');",
        "name_not_allowed:require",
        "require",
    ),
    (
        "require_main",
        "require.main.require('fs');",
        "name_not_allowed:require",
        "require",
    ),
    (
        "process_binding",
        "process.binding('spawn_sync');",
        "name_not_allowed:process",
        "process",
    ),
    (
        "binding_member",
        "function f(p) { return p.binding('spawn_sync'); }",
        "attr_not_allowed:binding",
        "binding",
    ),
    (
        "process_main_module",
        "process.mainModule.require('fs');",
        "attr_not_allowed:mainModule",
        "mainModule",
    ),
    (
        "module_constructor_load",
        "module.constructor._load('fs');",
        "name_not_allowed:module",
        "module",
    ),
    (
        "module_load_member",
        "function f(m) { return m._load('fs'); }",
        "attr_not_allowed:_load",
        "_load",
    ),
    (
        "wrapper_arguments_require",
        "const r = arguments[1];\nr('child_process').execSync('id');",
        "name_not_allowed:arguments",
        "arguments",
    ),
    (
        "wrapper_arguments_in_arrow",
        "const f = () => arguments[2];\nconst m = f();",
        "name_not_allowed:arguments",
        "arguments",
    ),
    (
        "prototype_alias_write",
        "const P = Object.prototype;\nP.polluted = 1;",
        "attr_not_allowed:prototype",
        "prototype",
    ),
    (
        "prototype_passed",
        "const o = {};\nObject.assign(Array.prototype, o);",
        "prototype_write",
        "Array.prototype",
    ),
    (
        "arguments_callee_caller",
        "function f() { return arguments.callee.caller; }",
        "attr_not_allowed:callee",
        "callee",
    ),
    (
        "define_getter",
        "const o = {};\no.__defineGetter__('x', () => 1);",
        "attr_not_allowed:__defineGetter__",
        "__defineGetter__",
    ),
    (
        "own_property_descriptor",
        "const d = Object.getOwnPropertyDescriptor(Object.prototype, 'x');",
        "attr_not_allowed:getOwnPropertyDescriptor",
        "getOwnPropertyDescriptor",
    ),
    (
        "set_prototype_of",
        "Object.setPrototypeOf({}, null);",
        "attr_not_allowed:setPrototypeOf",
        "setPrototypeOf",
    ),
    (
        "declare_process",
        "const process = 1;",
        "name_not_allowed:process",
        "process",
    ),
    (
        "es_module_import_declaration",
        "import { execSync } from 'child_process';\nexecSync('id');",
        "import_not_allowed:child_process",
        "'child_process'",
    ),
    (
        "es_module_is_syntax_error",
        "import { execSync } from 'child_process';",
        "syntax_error",
        "import",
    ),
    (
        "export_from",
        "export * from 'fs';",
        "import_not_allowed:fs",
        "'fs'",
    ),
    (
        "top_level_await_runs_as_module",
        "const x = 1;\nawait 0;",
        "syntax_error",
        "await",
    ),
    // Engine features and the network.
    (
        "webassembly",
        "WebAssembly.compile(new Uint8Array(8));",
        "name_not_allowed:WebAssembly",
        "WebAssembly",
    ),
    (
        "shared_array_buffer",
        "const s = new SharedArrayBuffer(8);",
        "call_not_allowed:SharedArrayBuffer",
        "SharedArrayBuffer",
    ),
    (
        "atomics_wait",
        "Atomics.wait(new Int32Array(4), 0, 0);",
        "name_not_allowed:Atomics",
        "Atomics",
    ),
    (
        "fetch_url",
        "fetch('http://169.254.169.254/latest/meta-data/');",
        "call_not_allowed:fetch",
        "fetch",
    ),
    (
        "url_literal",
        "const u = 'https://evil.example/x';",
        "network_literal_blocked",
        "'https",
    ),
    (
        "url_template_part",
        "const h = 'x';\nconst u = `ftp://${h}/file`;",
        "network_literal_blocked",
        "`ftp",
    ),
    (
        "url_string_raw",
        "const u = String.raw`gopher://x`;",
        "network_literal_blocked",
        "`gopher",
    ),
    (
        "debugger_statement",
        "debugger;",
        "syntax_not_allowed:debugger",
        "debugger",
    ),
    (
        "two_input_reads",
        "const a = input();\nconst b = JSON.parse(input());",
        "too_many_input_reads",
        "input());",
    ),
    (
        "input_in_loop",
        "for (const x of [1, 2]) { console.log(input()); }",
        "too_many_input_reads",
        "input()",
    ),
    (
        "input_in_callback",
        "const rows = [1, 2].map(() => input());",
        "too_many_input_reads",
        "input()",
    ),
    (
        "input_as_value",
        "const read = input;",
        "name_not_allowed:input",
        "input",
    ),
    // Syntax node 20 lacks, or that is not JavaScript.
    (
        "using_declaration",
        "using res = { [Symbol.dispose]() {} };",
        "syntax_error",
        "using",
    ),
    (
        "decorator",
        "@sealed class A {}",
        "syntax_error",
        "@sealed",
    ),
    (
        "typescript_annotation",
        "let x: number = 1;",
        "syntax_error",
        ":",
    ),
    ("jsx", "const el = <div />;", "syntax_error", "<"),
    (
        "v8_intrinsic",
        "%DebugPrint(1);",
        "syntax_error",
        "%",
    ),
    // HTML-like comments: what follows them on later lines is code and is judged.
    (
        "html_open_comment_then_code",
        "let x = 1 <!-- hidden\neval('1');",
        "call_not_allowed:eval",
        "eval",
    ),
    (
        "html_close_comment_then_code",
        "--> hidden\neval('1');",
        "call_not_allowed:eval",
        "eval",
    ),
    (
        "line_separator_ends_comment",
        "// comment\u{2028}eval('1');",
        "call_not_allowed:eval",
        "eval",
    ),
];

#[test]
fn escapes_are_denied_with_rule_and_position() {
    assert!(ESCAPES.len() >= 50, "corpus has {}", ESCAPES.len());
    let mut failures = Vec::new();
    for (name, code, rule, marker) in ESCAPES {
        let violations = check(code);
        let want = position_of(code, marker);
        let hit = violations
            .iter()
            .any(|v| v.rule == *rule && (v.line, v.column) == want);
        if !hit {
            failures.push(format!(
                "{name}: want {rule} at {want:?}, got {:?}",
                violations
                    .iter()
                    .map(|v| (v.rule.as_str(), v.line, v.column))
                    .collect::<Vec<_>>()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_denial_says_what_to_do_instead() {
    for (_, code, _, _) in ESCAPES {
        for v in check(code) {
            assert!(
                v.detail.len() > 20 && v.line >= 1 && v.column >= 1,
                "{code:?}: {v:?}"
            );
        }
    }
    let none = check("require('lodash');");
    assert!(
        none[0].detail.contains("no module is allowed") && none[0].detail.contains("input()"),
        "{none:?}"
    );
    let rules = JsRules {
        allowed_modules: vec!["lodash".into(), "fs".into()],
        ..JsRules::default()
    };
    let some = check_source("require('left-pad');", &rules);
    assert!(some[0].detail.contains("allowed: lodash, fs"), "{some:?}");
    // A policy cannot re-enable an always-denied built-in.
    let fs = check_source("require('fs');", &rules);
    assert_eq!(fs[0].rule, "import_not_allowed:fs");
    assert!(check_source("const _ = require('lodash');", &rules).is_empty());
}

/// Programs agents write. Each must pass, and each must run under node (see below).
const BENIGN: &[(&str, &str)] = &[
    ("incident", INCIDENT),
    (
        "array_methods",
        "const xs = [3, 1, 2];\nconst total = xs.map((x) => x * 2).filter((x) => x > 2).reduce((a, b) => a + b, 0);\nconsole.log(JSON.stringify({ total, sorted: [...xs].sort((a, b) => a - b) }));",
    ),
    (
        "flat_map_sort",
        "const words = ['b a', 'c'];\nconsole.log(words.flatMap((w) => w.split(' ')).sort().join(','));",
    ),
    (
        "class_getters_private",
        "class Stats {\n  #values = [];\n  constructor(values) { this.#values = values; }\n  get count() { return this.#values.length; }\n  mean() { return this.count ? this.#values.reduce((a, b) => a + b, 0) / this.count : 0; }\n  static of(...xs) { return new Stats(xs); }\n}\nconsole.log(Stats.of(1, 2, 3).mean());",
    ),
    (
        "destructuring_spread",
        "const { a, b: { c = 3 } = {}, ...rest } = { a: 1, b: {}, d: 4 };\nconst arr = [...[1, 2], 3];\nconst [first, , third] = arr;\nconsole.log(a, c, rest, first, third);",
    ),
    (
        "template_literals",
        "const name = 'x';\nconsole.log(`hello ${name.toUpperCase()} ${1 + 2}`);",
    ),
    (
        "map_set_counts",
        "const counts = new Map();\nfor (const s of ['a', 'b', 'a']) counts.set(s, (counts.get(s) ?? 0) + 1);\nconsole.log(JSON.stringify(Object.fromEntries(counts)), new Set([1, 1, 2]).size);",
    ),
    (
        "math",
        "console.log(Math.max(...[1, 5, 3]), Math.round(2.5), Math.sqrt(16), Math.PI.toFixed(2));",
    ),
    (
        "date_formatting",
        "const d = new Date(Date.UTC(2024, 0, 15));\nconsole.log(d.toISOString().slice(0, 10), d.getUTCFullYear(), Date.now() > 0);",
    ),
    (
        "json_roundtrip",
        "const o = JSON.parse('{\"a\": [1, 2]}');\nconsole.log(JSON.stringify(o, null, 2));",
    ),
    (
        "regex",
        "const m = /(\\d+)-(\\d+)/.exec('10-20');\nconsole.log(m[1], 'a,b;c'.split(/[,;]/), 'x1y2'.replace(/\\d/g, '#'), /^\\p{L}+$/u.test('abc'));",
    ),
    (
        "generators",
        "function* range(n) { for (let i = 0; i < n; i++) yield i; }\nconsole.log([...range(3)]);",
    ),
    (
        "async_promise_all",
        "async function sq(x) { return x * x; }\n(async () => {\n  const r = await Promise.all([1, 2, 3].map(sq));\n  console.log(r);\n})();",
    ),
    (
        "closures",
        "function counter() { let n = 0; return () => ++n; }\nconst c = counter();\nc();\nconsole.log(c());",
    ),
    (
        "try_catch_finally",
        "try { JSON.parse('{'); } catch (err) { console.log('bad json:', err.message); } finally { console.log('done'); }",
    ),
    (
        "labelled_loops",
        "outer: for (let i = 0; i < 3; i++) {\n  for (let j = 0; j < 3; j++) {\n    if (j === 1) continue outer;\n    if (i === 2) break outer;\n    console.log(i, j);\n  }\n}",
    ),
    (
        "string_raw",
        "console.log(String.raw`C:\\temp\\new`);",
    ),
    (
        "bigint",
        "const big = 2n ** 64n;\nconsole.log(big.toString(), BigInt(10) * 3n);",
    ),
    (
        "typed_arrays",
        "const buf = new Float64Array([1.5, 2.5]);\nconst u = new Uint8Array(4);\nu[0] = 255;\nconsole.log(buf[1], u[0], u.length);",
    ),
    (
        "number_helpers",
        "console.log(Number.isInteger(5), Number.parseFloat('1.5'), (12.345).toFixed(1), parseInt('42', 10));",
    ),
    (
        "optional_chaining_nullish",
        "const cfg = { a: { b: null } };\nconsole.log(cfg?.a?.b ?? 'default', cfg.x?.y, cfg.a?.['b']);",
    ),
    (
        "object_helpers",
        "const o = { x: 1, y: 2 };\nconsole.log(Object.keys(o), Object.values(o), Object.fromEntries(Object.entries(o).map(([k, v]) => [k, v * 10])));",
    ),
    (
        "array_from_length",
        "const squares = Array.from({ length: 5 }, (_, i) => i * i);\nconsole.log(squares);",
    ),
    (
        "for_of_entries",
        "const totals = { a: 1, b: 2 };\nfor (const [k, v] of Object.entries(totals)) console.log(`${k}=${v}`);",
    ),
    (
        "index_with_loop_variables",
        "const a = [1, 2, 3];\nconst b = [];\nfor (let i = 0; i < a.length; i++) {\n  b[i] = a[i] * 2;\n}\nfor (let i = a.length - 1; i >= 0; i -= 1) console.log(a[i]);\nlet j = 0;\nwhile (j < b.length) { console.log(b[j]); j++; }\nconsole.log(b[b.length - 1], a[0]);",
    ),
    (
        "matrix_nested_loops",
        "const m = [[1, 2], [3, 4]];\nlet s = 0;\nfor (let r = 0; r < m.length; r++) for (let c = 0; c < m[r].length; c++) s += m[r][c];\nconsole.log(s);",
    ),
    (
        "module_exports",
        "function main(p) { return p; }\nmodule.exports = { main };\nexports.version = 1;\nconsole.log(JSON.stringify(main({ ok: true })));",
    ),
    (
        "use_strict_constructor_function",
        "'use strict';\nfunction Point(x) { this.x = x; }\nconsole.log(new Point(1).x);",
    ),
    (
        "switch_severity",
        "const sev = (r) => {\n  switch (true) {\n    case r >= 0.05: return 'P0';\n    case r >= 0.03: return 'P1';\n    default: return 'P2';\n  }\n};\nconsole.log(sev(0.04));",
    ),
    (
        "hashbang",
        "#!/usr/bin/env node\nconsole.log(1);",
    ),
    (
        "top_level_return",
        "const data = [];\nif (data.length === 0) {\n  console.log('{}');\n  return;\n}\nconsole.log(data);",
    ),
    (
        "p95_with_math_index",
        "const l = [5, 1, 4];\nl.sort((a, b) => a - b);\nconst p95 = l[Math.min(l.length - 1, Math.ceil(l.length * 0.95) - 1)];\nconst mid = l[Math.floor(l.length / 2)];\nconsole.log(p95, mid, l.at(-1));",
    ),
    (
        "intl_formatting",
        "console.log((1234.5).toLocaleString('en-US'), new Intl.NumberFormat('en-US', { style: 'percent' }).format(0.25));",
    ),
    (
        "class_inheritance_super",
        "class A { greet() { return 'a'; } }\nclass B extends A { constructor() { super(); this.n = 1; } greet() { return super.greet() + 'b'; } }\nconsole.log(new B().greet());",
    ),
    (
        "set_timeout_arrow",
        "setTimeout(() => console.log('later'), 0);\nqueueMicrotask(() => console.log('soon'));",
    ),
    (
        "symbol_iterator",
        "class R { *[Symbol.iterator]() { yield 1; } }\nconst it = [5][Symbol.iterator]();\nconsole.log([...new R()], it.next().value);",
    ),
    (
        "string_methods",
        "console.log('a-b'.padStart(5, '*'), 'abc'.at(-1), ' x '.trim(), 'abc'.includes('b'), 'a,b'.split(',').length);",
    ),
    (
        "group_by_with_map",
        "const txs = [{ s: 'paid', v: 1 }, { s: 'failed', v: 2 }, { s: 'paid', v: 3 }];\nconst by = new Map();\nfor (const t of txs) {\n  const list = by.get(t.s) ?? [];\n  list.push(t.v);\n  by.set(t.s, list);\n}\nconsole.log(JSON.stringify([...by.entries()]));",
    ),
    (
        "object_getter_no_this",
        "const o = { get two() { return 2; }, three: () => 3 };\nconsole.log(o.two, o.three());",
    ),
    (
        "comment_with_url",
        "// docs: https://example.com/api\nconsole.log(1); /* see http://x */",
    ),
    (
        "error_subclass",
        "class AppError extends Error {\n  constructor(msg, code) { super(msg); this.name = 'AppError'; this.code = code; }\n}\ntry { throw new AppError('boom', 7); } catch (e) { console.log(e instanceof AppError, e.message, e.code, e.stack.length > 0); }",
    ),
    (
        "own_arguments_and_prototype_method",
        "function sum() { let t = 0; for (let i = 0; i < arguments.length; i++) t += arguments[i]; return t; }\nconst args = Array.prototype.slice.call([1, 2], 0);\nconsole.log(sum(1, 2, 3), args, Number('4') + 1);",
    ),
    (
        "reduce_object_accumulator_with_spread",
        "const pairs = [['a', 1], ['b', 2]];\nconst obj = pairs.reduce((acc, [k, v]) => ({ ...acc, [k]: v }), {});\nconsole.log(obj, 'a' in obj);",
    ),
];

#[test]
fn seed_incident_program_is_allowed() {
    let v = check(INCIDENT);
    assert!(v.is_empty(), "{v:?}");
}

#[test]
fn benign_programs_are_allowed() {
    assert!(BENIGN.len() >= 30, "corpus has {}", BENIGN.len());
    let mut failures = Vec::new();
    for (name, code) in BENIGN {
        let v = check(code);
        if !v.is_empty() {
            failures.push(format!("{name}: {v:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn node_available() -> bool {
    if Path::new(NODE).exists() {
        return true;
    }
    eprintln!("!!!!!!!! {NODE} is absent: SKIPPING the node cross-checks !!!!!!!!");
    false
}

/// Run `code` as node runs /app/main.js (a .js file, CommonJS), with a trusted `input()`
/// returning one payload line, as agentjail's runner defines it. Returns (exit ok, stdout,
/// stderr).
fn run_node(code: &str) -> (bool, String, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let main = dir.path().join("main.js");
    let preload = dir.path().join("runner.js");
    std::fs::write(&main, code).expect("write main.js");
    std::fs::write(
        &preload,
        "globalThis.input = () => JSON.stringify({ incident_id: 'inc_1', region: 'US', \
         transactions: [{ status: 'paid', chargeback: false, latency_ms: 120 }, \
         { status: 'failed', chargeback: true, latency_ms: 340 }] });\n",
    )
    .expect("write runner.js");
    let out = Command::new(NODE)
        .arg("--require")
        .arg(&preload)
        .arg(&main)
        .output()
        .expect("run node");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The benign corpus is real JavaScript: node runs every program to completion.
#[test]
fn benign_programs_run_under_node() {
    if !node_available() {
        return;
    }
    for (name, code) in BENIGN {
        let (ok, _, stderr) = run_node(code);
        assert!(ok, "{name} failed under node: {stderr}");
    }
    let (_, stdout, _) = run_node(INCIDENT);
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).expect("incident JSON");
    assert_eq!(v["sample_size"], 2);
    assert_eq!(v["p95_latency_ms"], 340);
}

/// For sources where comment syntax is tricky (Annex-B HTML-like comments, hashbang, line
/// and paragraph separators), run node and the checker on the SAME text: whenever V8 runs
/// the `eval`, the checker must have seen (and flagged) it. The checker may see more.
#[test]
fn checker_never_sees_less_code_than_node_runs() {
    if !node_available() {
        return;
    }
    const EVAL: &str = "eval('console.log(\"RAN\")')";
    let shapes: &[&str] = &[
        "x = 1 <!-- EVAL",
        "let x = 1 <!-- EVAL",
        "--> EVAL",
        " --> EVAL",
        "/* */ --> EVAL",
        "let y = 2; /* */ --> EVAL",
        "let y = 2 /*\n*/ --> EVAL",
        "let y = 2;\n/* a */ /* b */ --> EVAL",
        "let y = 2;\n/*\n*/ /* b */ --> EVAL",
        "let y = 3;\ny\n--> EVAL",
        "let y = 3;\ny\n-->EVAL",
        "let y = 3; y --> EVAL",
        "let y = 3;\ny-->EVAL",
        "'use strict';\n--> EVAL",
        "'use strict';\nlet x = 1 <!-- EVAL",
        "let x = 1 <!--\nEVAL",
        "let x = `${1}<!--`; EVAL",
        "let x = '<!--'; EVAL",
        "let a = 1, b = 2; a\n<!--b; EVAL",
        "let a = 1, b = 2; a <! --b; EVAL",
        "// c \u{2028} EVAL",
        "// c \u{2029} EVAL",
        "let y = 1 \u{2028}--> EVAL",
        "let y = 1 \u{2029}--> EVAL",
        "let y = 1\r--> EVAL",
        "let y = 1\r\n--> EVAL",
        "#!/usr/bin/env node\nEVAL",
        "#!/usr/bin/env node \u{2028} EVAL",
        "#!/usr/bin/env node\r EVAL",
        "\u{feff}#!/x\nEVAL",
        "\u{feff}EVAL",
        "/*\u{2028}*/ --> EVAL",
        "let z = 1 /*\u{2029}*/ --> EVAL",
        "let y = 1 <!-- x\n--> y\nEVAL",
        "let r = /<!--/; EVAL",
        "let r = 1 / 2 /<!--/; EVAL",
        "let q = 1\n/*\n*/-->EVAL",
        "x = 1 <!-- \u{2028} EVAL",
        "let x = 1 --> 0; EVAL",
    ];
    let mut checked = 0;
    for shape in shapes {
        let code = shape.replace("EVAL", EVAL);
        let (_, stdout, _) = run_node(&code);
        let node_ran_eval = stdout.contains("RAN");
        let flagged = check(&code)
            .iter()
            .any(|v| v.rule.ends_with(":eval") || v.rule == "syntax_error");
        let saw_eval = check(&code).iter().any(|v| v.rule.ends_with(":eval"));
        if node_ran_eval {
            checked += 1;
            assert!(
                saw_eval,
                "node ran the eval in {code:?} but the checker did not flag it: {:?}",
                check(&code)
            );
        } else {
            // Not required, but report where the checker is stricter than V8.
            if flagged {
                eprintln!("stricter than node (fine): {code:?}");
            }
        }
    }
    assert!(
        checked >= 10,
        "only {checked} shapes ran the eval under node"
    );
}

/// Deep inputs must be refused cleanly on a small stack: no overflow in oxc's parser, its
/// semantic pass or the visitor.
#[test]
fn deep_nesting_is_rejected_on_a_small_stack() {
    let inputs: Vec<String> = vec![
        format!("x = {}1{}", "(".repeat(100_000), ")".repeat(100_000)),
        format!("x = {}{}", "[".repeat(100_000), "]".repeat(100_000)),
        format!("x = {}{}", "{".repeat(100_000), "}".repeat(100_000)),
        format!("let x = {}1;", "!".repeat(100_000)),
        format!("let x = {}1;", "- ".repeat(100_000)),
        format!("let x = {}1;", "~".repeat(100_000)),
        format!("let x = {}1;", "typeof ".repeat(30_000)),
        format!("let x = 1{};", "+1".repeat(100_000)),
        format!("let x = 2{};", "**2".repeat(100_000)),
        format!("let a; a{}1;", " = a".repeat(50_000)),
        format!("let a; let x = {}1;", "a ? 1 : ".repeat(30_000)),
        format!("let x = {}1;", "y => ".repeat(30_000)),
        format!("let x = a{};", ".b".repeat(100_000)),
        format!("let x = f{};", "()".repeat(60_000)),
        format!("{}x;", "if (1) ".repeat(30_000)),
        format!("{}x;", "l: ".repeat(30_000)),
        format!("let x = {}1;", "new ".repeat(30_000)),
        format!("let x = `{}{}`;", "${`".repeat(50_000), "`}".repeat(50_000)),
        format!("let x = {}1;", "void ".repeat(30_000)),
    ];
    let handle = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            inputs
                .iter()
                .map(|code| {
                    check_source(code, &JsRules::default())
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
fn oversized_source_is_refused() {
    let code = "x;".repeat(600 * 1024);
    let v = check(&code);
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].rule, "source_too_large");
}
