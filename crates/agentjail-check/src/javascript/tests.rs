use super::*;

fn rules_of(code: &str) -> Vec<String> {
    check_source(code, &JsRules::default())
        .into_iter()
        .map(|v| v.rule)
        .collect()
}

#[track_caller]
fn denied(code: &str, rule: &str) {
    let got = rules_of(code);
    assert!(
        got.iter().any(|r| r == rule),
        "expected {rule} for {code:?}, got {got:?}"
    );
}

#[track_caller]
fn allowed(code: &str) {
    let got = check_source(code, &JsRules::default());
    assert!(got.is_empty(), "expected allow for {code:?}, got {got:?}");
}

fn with(rules: JsRules, code: &str) -> Vec<String> {
    check_source(code, &rules)
        .into_iter()
        .map(|v| v.rule)
        .collect()
}

#[test]
fn names_and_strings_are_judged_cooked() {
    denied("\\u0065val('1')", "call_not_allowed:eval");
    denied("\\u{65}\\u{76}al('1')", "call_not_allowed:eval");
    denied("const p = \\u0070rocess;", "name_not_allowed:process");
    denied("x.\\u{63}onstructor", "attr_not_allowed:constructor");
    denied(
        "const c = []['\\x63onstructor'];",
        "attr_not_allowed:constructor",
    );
    denied(
        "const c = []['\\u0063onstructor'];",
        "attr_not_allowed:constructor",
    );
    denied(
        "const c = [][`\\u{63}onstructor`];",
        "attr_not_allowed:constructor",
    );
    denied("const u = 'http\\x3a//x';", "network_literal_blocked");
    denied("const u = `ht\\u0074p://x`;", "network_literal_blocked");
    // JavaScript does not normalise identifiers: a fullwidth name is another name.
    allowed("const ｅｖａｌ = 1;\nconsole.log(ｅｖａｌ);");
}

#[test]
fn numeric_keys_are_proved_or_denied() {
    allowed("const a = [1];\nfor (let i = 0; i < a.length; i++) console.log(a[i]);");
    allowed("const a = [1];\nlet i = 0;\ni += 1;\ni *= 2;\ni = i - 1;\nconsole.log(a[i]);");
    allowed("const a = [1];\nconst k = Math.floor(a.length / 2) | 0;\nconsole.log(a[k], a[-1], a[+k], a[k ? 1 : 0]);");
    allowed("const a = [1];\nconst n = parseInt('0', 10);\nconsole.log(a[n], a[Number('0')], a[Number.parseInt('0')]);");
    allowed("const a = [1];\nlet i;\ni = 0;\nconsole.log(a[i]);");
    let cases = [
        "const a = [];\nlet i = 0;\nconst f = () => { i = 'constructor'; };\nconsole.log(a[i]);",
        "const a = [];\nlet i = 0;\ni += 'x';\nconsole.log(a[i]);",
        "const a = [];\nlet i = 0;\n[i] = ['constructor'];\nconsole.log(a[i]);",
        "const a = [];\nlet i = 0;\n({ i } = { i: 'constructor' });\nconsole.log(a[i]);",
        "const a = [];\nfor (const i of ['constructor']) console.log(a[i]);",
        "const a = [];\nfor (const k in { constructor: 1 }) console.log(a[k]);",
        "const a = [];\nfunction f(i) { return a[i]; }",
        "const a = [];\nvar i = 0;\nvar i = 'constructor';\nconsole.log(a[i]);",
        "const a = [];\nconst Math = { floor: () => 'constructor' };\nconsole.log(a[Math.floor(1)]);",
        "const a = [];\nconst N = Number;\nconsole.log(a[Number.parseInt('1')]);",
        "const a = [];\nfunction parseInt() { return 'constructor'; }\nconsole.log(a[parseInt()]);",
        "const a = [];\nconst i = 1 + 'x';\nconsole.log(a[i]);",
        "const a = [];\nconst i = a.length;\nconsole.log(a[i]);",
        "const a = [];\nconsole.log(a[a.indexOf(1)]);",
        "const a = [];\nconsole.log(a[`${1}`]);",
        "const a = [];\nconst { [Math.random() > 2 ? 0 : 'x']: v } = a;",
    ];
    for code in cases {
        denied(code, "computed_member_not_allowed");
    }
}

#[test]
fn policy_knobs() {
    let computed = JsRules {
        allow_computed_member: true,
        ..JsRules::default()
    };
    assert!(with(
        computed.clone(),
        "const o = {};\nconst k = 'a';\nconsole.log(o[k]);"
    )
    .is_empty());
    assert!(with(computed, "const o = {};\no['constructor'];")
        .contains(&"attr_not_allowed:constructor".to_string()));
    let extra = JsRules {
        denied_globals: vec!["Date".into()],
        denied_members: vec!["toFixed".into()],
        ..JsRules::default()
    };
    let got = with(
        extra,
        "const d = Date.now();\nconsole.log((1).toFixed(2), new Date());",
    );
    assert!(
        got.contains(&"name_not_allowed:Date".to_string()),
        "{got:?}"
    );
    assert!(
        got.contains(&"call_not_allowed:Date".to_string()),
        "{got:?}"
    );
    assert!(
        got.contains(&"attr_not_allowed:toFixed".to_string()),
        "{got:?}"
    );
    let urls = JsRules {
        deny_url_literals: false,
        ..JsRules::default()
    };
    assert!(with(urls, "const u = 'https://x';").is_empty());
    let reads = JsRules {
        max_input_reads: 2,
        ..JsRules::default()
    };
    assert!(with(reads.clone(), "const a = input();\nconst b = input();").is_empty());
    assert_eq!(
        with(
            reads,
            "const a = input();\nconst b = input();\nconst c = input();"
        ),
        vec!["too_many_input_reads"]
    );
    let shallow = JsRules {
        max_nesting_depth: 8,
        ..JsRules::default()
    };
    let sum = format!("let x = 1{};", " + 1".repeat(20));
    assert_eq!(with(shallow.clone(), &sum), vec!["nesting_too_deep"]);
    assert_eq!(
        with(shallow, "let x = [[[[[[[[[1]]]]]]]]];"),
        vec!["nesting_too_deep"]
    );
    let json = serde_json::to_value(JsRules::default()).expect("serialize");
    assert_eq!(json["max_nesting_depth"], 64);
    assert!(serde_json::from_str::<JsRules>("{\"bogus\": 1}").is_err());
    let partial: JsRules =
        serde_json::from_str("{\"allowed_modules\": [\"lodash\"]}").expect("partial");
    assert_eq!(partial.max_input_reads, 1);
}

#[test]
fn this_arguments_and_exports() {
    allowed("class A { m() { const f = () => this; return f(); } static s() { return this; } }");
    allowed("'use strict';\nconst o = { m() { return this; } };");
    allowed("function f() { 'use strict'; return this; }");
    allowed("const self2 = this;\nconst g = () => this;");
    denied(
        "function f() { 'use\\x20strict'; return this; }",
        "name_not_allowed:this",
    );
    denied(
        "const o = { get x() { return this; } };",
        "name_not_allowed:this",
    );
    allowed("function f() { return arguments.length + arguments[0]; }");
    denied(
        "class A { static { const f = () => arguments; } }",
        "syntax_error",
    );
    allowed("module.exports = { a: 1 };\nmodule.exports.b = 2;\nexports.c = 3;");
    denied("const m = module;", "name_not_allowed:module");
    denied("const f = __filename;", "name_not_allowed:__filename");
    denied("module.children.x = 1;", "name_not_allowed:module");
    denied("let require = 1;", "name_not_allowed:require");
    denied("function f(input) {}", "name_not_allowed:input");
}

#[test]
fn syntax_node_20_lacks_or_es_modules() {
    for code in [
        "export const x = 1;",
        "const m = import.meta;",
        "await Promise.resolve(1);",
        "for await (const x of []) {}",
        "class A { accessor x = 1; }",
        "await using r = null;",
        "enum E { A }",
        "let x = 1; let x = 2;",
        "function f() { 'use strict'; with (a) {} }",
        "x = 1 +;",
    ] {
        denied(code, "syntax_error");
    }
    let v = check_source("import os from 'os';", &JsRules::default());
    let syntax = v
        .iter()
        .find(|v| v.rule == "syntax_error")
        .expect("syntax_error");
    assert!(syntax.detail.contains("CommonJS"), "{syntax:?}");
    assert!(v.iter().any(|v| v.rule == "import_not_allowed:os"), "{v:?}");
}

#[test]
fn positions_count_characters_and_js_line_terminators() {
    let v = check_source(
        "const s = 'é';\r\nconst t = 'ü'; eval('1');",
        &JsRules::default(),
    );
    assert_eq!(
        (v[0].rule.as_str(), v[0].line, v[0].column),
        ("call_not_allowed:eval", 2, 16)
    );
    let v = check_source(
        "let a = 1;\u{2029}let b = 2;\reval('1');",
        &JsRules::default(),
    );
    assert_eq!((v[0].line, v[0].column), (3, 1));
    let v = check_source("x = 1;\ny = 2;", &JsRules::default());
    assert_eq!(
        v.iter()
            .map(|v| (v.rule.as_str(), v.line))
            .collect::<Vec<_>>(),
        vec![("global_write:x", 1), ("global_write:y", 2)]
    );
}

#[test]
fn violations_are_sorted_and_deduplicated() {
    let v = check_source(
        "eval('1'); eval('1');\nprocess.abort();",
        &JsRules::default(),
    );
    let keys: Vec<_> = v.iter().map(|v| (v.line, v.column)).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    assert_eq!(v.len(), 3, "{v:?}");
}

#[test]
fn stdin_reads_pass_as_node_programs_write_them() {
    allowed("const s = require('fs').readFileSync(0, 'utf8');\nconsole.log(s);");
    allowed("const s = require(\"fs\").readFileSync('/dev/stdin').toString();\nconsole.log(s);");
    allowed("const s = require('node:fs').readFileSync(0, { encoding: 'utf8' });\nconsole.log(s);");
    allowed("const fs = require('fs');\nconst a = fs.readFileSync(0, 'utf8');\nconst b = fs.readFileSync('/dev/stdin');\nconsole.log(a, b);");
    allowed("const { readFileSync } = require('fs');\nconsole.log(readFileSync(0, 'utf8'));");
    allowed(
        "const { readFileSync: read } = require('fs');\nconsole.log(read('/dev/stdin', 'utf8'));",
    );
    allowed(concat!(
        "let data = '';\n",
        "process.stdin.resume();\n",
        "process.stdin.setEncoding('utf8');\n",
        "process.stdin.on('data', (c) => { data += c; });\n",
        "process.stdin.on('end', () => { console.log(data.trim()); });\n",
        "process.stdin.once('end', function () { console.log('done'); });\n",
    ));
    // Answering as judges' node programs do.
    allowed(concat!(
        "process.stdout.write('a\\n');\n",
        "process.stdout.write(String(42) + '\\n', 'utf8');\n",
        "process.exit();\n",
        "process.exit(0);\n",
        "if (1 > 2) process.exit(3);\n",
    ));
}

#[test]
fn fs_for_anything_but_stdin_stays_refused() {
    for code in [
        "require('fs').readFileSync('/etc/passwd', 'utf8');",
        "require('fs').readFileSync(3);",
        "require('fs').readFileSync(1 - 1);",
        "const p = 0;\nrequire('fs').readFileSync(p);",
        "require('fs').readFileSync(...[0]);",
        "require('fs').readFileSync(0, 'utf8', 1);",
        "const fs = require('fs');",
        "const { readFileSync } = require('fs');",
        "require('fs').readFileSync();",
        "require('fs').writeFileSync('/tmp/x', 'y');",
        "require('fs').writeSync(4, '{\"event\":\"error\"}');",
        "require('fs').readSync(3, Buffer.alloc(9));",
        "require('fs').readFileSync?.(0);",
        "const fs = require('fs');\nfs.readFileSync(0);\nfs.writeFileSync('/tmp/x', 'y');",
        "const fs = require('fs');\nconst r = fs.readFileSync;\nr(0);",
        "const fs = require('fs');\nconsole.log(fs);",
        "const fs = require('fs');\nfs.readFileSync('/proc/self/environ');",
        "const fs = require('fs');\nmodule.exports = fs;",
        "let fs = require('fs');\nfs.readFileSync(0);",
        "var fs = require('fs');\nfs.readFileSync(0);",
        "const fs = require('fs'), x = fs;",
        "const { readFileSync, writeFileSync } = require('fs');\nreadFileSync(0);",
        "const { readFileSync, ...rest } = require('fs');\nreadFileSync(0);",
        "const { readFileSync = null } = require('fs');\nreadFileSync(0);",
        "const { readFileSync } = require('fs');\nreadFileSync('/etc/shadow');",
        "const { readFileSync } = require('fs');\n[0].map(readFileSync);",
        "const { ['readFileSync']: r } = require('fs');\nr(0);",
        "const [r] = require('fs');",
        "console.log(require('fs'));",
        "require('fs')['readFileSync'](0);",
    ] {
        denied(code, "import_not_allowed:fs");
    }
    denied(
        "require('fs/promises').readFile(0);",
        "import_not_allowed:fs/promises",
    );
    denied(
        "require('node:fs').openSync('/tmp/x', 'w');",
        "import_not_allowed:node:fs",
    );
}

#[test]
fn process_for_anything_but_stdin_stays_refused() {
    for code in [
        "process.stdin.on('error', () => {});",
        "process.stdin.on('data');",
        "process.stdin.on(...['data', () => {}]);",
        "const e = 'data';\nprocess.stdin.on(e, () => {});",
        "process.stdin.fd;",
        "const s = process.stdin;\ns.on('data', () => {});",
        "process.stdin.pipe(process.stdout);",
        "process.stdin.setEncoding(x);",
        "process.stdin.resume(1);",
        "process.stdin.on?.('data', () => {});",
        "process.stdout.write();",
        "process.stdout.write('x', 'utf8', () => {}, 1);",
        "process.stdout.write(...['x']);",
        "process.stdout.write?.('x');",
        "const w = process.stdout.write;\nw('x');",
        "const o = process.stdout;\no.write('x');",
        "process.stdout.fd;",
        "process.stdout._handle.writeUtf8String(null, 'x');",
        "process.stderr.write('x');",
        "process.exit(1, 2);",
        "process.exit(...[0]);",
        "process.exit?.(0);",
        "const e = process.exit;\ne(0);",
        "process.exitCode = 3;",
        "process.binding('fs');",
        "process['stdin'].on('data', () => {});",
        "console.log(process);",
    ] {
        denied(code, "name_not_allowed:process");
    }
    denied("process.stdin._handle.open(4);", "attr_not_allowed:_handle");
    // A local named `process` cannot be declared, so the allowed shapes always name the global.
    denied(
        "function f(process) { process.stdin.on('data', () => {}); }",
        "name_not_allowed:process",
    );
}
