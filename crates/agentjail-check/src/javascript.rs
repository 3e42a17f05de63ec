//! The static check for JavaScript source, over oxc's AST, judging the program node 20
//! (V8 11.3, ECMAScript 2023) runs as `node /app/main.js`: a CommonJS script.
//!
//! Defence in depth, not the boundary: the jail contains whatever this misses. A dynamic
//! language hands any program that can build a string and reach `Function` the whole
//! engine, so the rules below close the known roads to `Function`, `process` and the module
//! loader, and refuse inputs that would make this checker read a different program than V8.
//!
//! # Reading what V8 reads
//!
//! * The source is parsed as a CommonJS script (`SourceType::cjs()`): script goal, so
//!   Annex-B HTML-like comments (`<!--` anywhere, `-->` at the start of a line) are comments,
//!   a leading `#!` line is allowed, and a top-level `return` is allowed as in node's module
//!   wrapper. tests/check/js_corpus.rs runs tricky comment sources through the real node and
//!   asserts the checker never sees less code than V8 executes.
//! * Any parse error, and any early error from oxc's semantic pass, is a `syntax_error`, and
//!   nothing else is judged. Syntax oxc accepts but node 20 lacks is refused too: `using` /
//!   `await using` declarations, decorators, `accessor` fields, `import.source`/`import.defer`.
//! * ES-module syntax (`import`/`export` declarations, `import.meta`, top-level `await`) is a
//!   `syntax_error` even though node 20.19+ would run such a file: its module-syntax detection
//!   re-runs a `.js` file that fails as CommonJS as an ES module, which is a different grammar
//!   (no HTML comments, strict mode, no `require`) from the one judged. The module-goal AST is
//!   still walked so the denial also names the modules (`import_not_allowed:fs`).
//! * Identifiers and strings are judged by their cooked value (`\u0065val` is `eval`,
//!   `"\x63onstructor"` is `constructor`): oxc's AST carries cooked names, as V8 resolves them.
//!
//! # Rules (rule names are part of the contract)
//!
//! * `import_not_allowed:<spec>` — `require("x")`, `import ... from "x"`, `export ... from "x"`,
//!   `import("x")` unless `x` is in `allowed_modules` (exactly as written); the
//!   [`ALWAYS_DENIED_MODULES`] (with or without `node:`, and their subpaths) and every
//!   `_`-prefixed specifier (`_http_client`) are denied whatever the policy says, except
//!   `require("fs")` in the exact shapes that read stdin (`stdin.rs`; the runner's `fs`
//!   stand-in reads only fd 0). Likewise `process` is allowed only as
//!   `process.stdin.on|once("data"|"end", f)`, `.setEncoding("...")`, `.resume()`.
//! * `call_not_allowed:import` — any dynamic `import()`, whatever its argument.
//! * `name_not_allowed:require` — `require` other than called with one literal specifier
//!   (`const r = require`, `require(x)`, `require.main`, `require.resolve`).
//! * `name_not_allowed:<n>` / `call_not_allowed:<n>` — [`ALWAYS_DENIED_GLOBALS`] plus
//!   `denied_globals`, referenced / called (also `new X()` and `` X`...` ``); binding such a
//!   name (`const process = ...`, a parameter named `eval`) is `name_not_allowed` too. The
//!   CommonJS wrapper's `module`, `exports`, `__filename`, `__dirname` are denied except as
//!   the root of an assignment target `module.exports... = ` / `exports.x = `.
//! * `call_not_allowed:setTimeout|setInterval|setImmediate` — unless the first argument is a
//!   function, arrow, identifier or member expression (the string form is `eval` in browsers;
//!   node throws, but the intent is an escape).
//! * `name_not_allowed:this` — `this` inside a non-arrow function that is not strict code
//!   (not in a class, no `"use strict"`): a sloppy function called without a receiver gets the
//!   global object as `this`, which is `globalThis` under another name.
//! * `name_not_allowed:arguments` — `arguments` outside a non-arrow function: at CommonJS top
//!   level (and in top-level arrows) it is node's module wrapper's, and `arguments[1]` is
//!   `require`.
//! * `attr_not_allowed:<m>` — member `<m>` in [`ALWAYS_DENIED_MEMBERS`] plus `denied_members`
//!   (`constructor`, `__proto__`, `caller`, `callee`, `prepareStackTrace`, `mainModule`,
//!   `binding`, `_load`, `defineProperty`, ...) reached by `o.m`, `o?.m`, `o["m"]`,
//!   `` o[`m`] ``, a destructuring key (`const {m} = o`, `({m: x} = o)`), an object-literal or
//!   class key (`{__proto__: p}`, `{["constructor"]: 1}`), or `super.m`. A class's own
//!   `constructor() {}` method is allowed. Any string or template text containing
//!   `__proto__` is `attr_not_allowed:__proto__` (`JSON.parse('{"__proto__": ...}')`).
//! * `prototype_write` — an assignment, compound assignment, `++`/`--`, destructuring or
//!   `for-in/of` target, or `delete`, whose member chain names `prototype` or `__proto__`;
//!   and `Object.assign(<chain naming prototype>, ...)`. `attr_not_allowed:prototype` when
//!   `X.prototype` is held or passed rather than read through (`const P = Object.prototype`
//!   would be written under another name); `X.prototype.slice.call(...)` is fine.
//! * `global_write:<n>` — writing a global (a name with no declaration in the program, so an
//!   implicit global or a built-in) or any member of one (`Math.floor = f`, `Error.x = 1`,
//!   `Object.assign(Math, ...)`): patching built-ins is how a value the checker trusts (a
//!   `Math.floor(...)` result as an index) turns into `"constructor"`.
//! * `computed_member_not_allowed` — `o[k]` where the key is not a string/number literal and
//!   cannot be proved numeric (unless `allow_computed_member`). Proved numeric: numeric
//!   literals; arithmetic (`- * / % ** | & ^ << >> >>>`, unary `- + ~ !`, `++`/`--`,
//!   comparisons); `+`, `?:`, `||`, `&&`, `??` of numeric operands; `Math.*` and `Number.*`
//!   and `parseInt`/`parseFloat` when those globals are never rebound or used other than as
//!   `Math.name`; `Symbol.iterator`/`Symbol.asyncIterator`; and a variable declared once with
//!   `let`/`const`/`var` (not in a `for-in/of` head, not a parameter) whose initialiser and
//!   every later write (`=`, compound assignment, `++`/`--`) are numeric by the same rules.
//!   So `for (let i = 0; i < a.length; i++) a[i]` and `s[Math.floor(n * 0.95)]` pass, while
//!   `o[k]` with `k` from data, a parameter or `"con" + "structor"` is denied: a string key
//!   is exactly how `x[k][k]("return process")()` reaches `Function`. Data-keyed lookups use
//!   a `Map`; array positions from data use `a.at(i)`.
//! * `syntax_not_allowed:with` (hides names from every rule) and `syntax_not_allowed:debugger`.
//! * `network_literal_blocked` — `scheme://` in any string, template part (cooked and raw)
//!   or directive, when `deny_url_literals`.
//! * `too_many_input_reads` — more than `max_input_reads` calls of `input()`, or any call
//!   inside a loop, function, arrow or class body (one call there can read many lines);
//!   `name_not_allowed:input` for `input` used other than called.
//! * `syntax_error`, `source_too_large` (over [`MAX_SOURCE_BYTES`]), `nesting_too_deep`
//!   (bracket depth on the raw text before parsing, strings and comments included, and
//!   expression/statement depth in the visitor, above `max_nesting_depth`).
//!
//! # Not covered (the jail is)
//!
//! Anything reached through an allowed module's API; prototype pollution of the program's
//! own objects by data (`merge(target, JSON.parse(input()))`) — it cannot leave the process;
//! resource exhaustion (loops, allocation, catastrophic regexes); timing; what `console.log`
//! prints. Regular-expression syntax newer than V8 11.3 (duplicate named groups, modifiers)
//! is accepted here but rejected by V8 before anything runs.
//!
//! Stack safety: oxc's parser and semantic pass recurse once per nesting level with no limit
//! of their own (`!!!!...1` nests once per byte), so parse, semantic pass and visit run under
//! `stacker::maybe_grow` with room proportional to the source length; the visitor also stops
//! descending at `max_nesting_depth`. The AST lives in an arena, so dropping it never recurses.

mod checker;
mod numeric;
mod stdin;
mod visit;

use crate::Violation;
use checker::Checker;
use oxc_allocator::Allocator;
use oxc_ast_visit::Visit;
use oxc_parser::{ParseOptions, Parser};
use oxc_semantic::SemanticBuilder;
use oxc_span::SourceType;
use serde::{Deserialize, Serialize};

/// Sources above this many bytes are refused without parsing.
pub const MAX_SOURCE_BYTES: usize = 1024 * 1024;

/// Policy keys under `[check.javascript]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct JsRules {
    /// `require()`/`import` specifiers allowed, exactly as written (never the
    /// [`ALWAYS_DENIED_MODULES`]).
    pub allowed_modules: Vec<String>,
    /// Added to [`ALWAYS_DENIED_GLOBALS`].
    pub denied_globals: Vec<String>,
    /// Property names denied on any object, added to [`ALWAYS_DENIED_MEMBERS`].
    pub denied_members: Vec<String>,
    /// Allow `o[k]` with keys the checker cannot prove numeric (literal keys are still judged).
    pub allow_computed_member: bool,
    /// Deny `scheme://` in string and template literals.
    pub deny_url_literals: bool,
    /// Calls of `input()` allowed (each reads one stdin line).
    pub max_input_reads: u32,
    /// Deepest bracket / expression / statement nesting accepted (protects the checker).
    pub max_nesting_depth: u32,
}

impl Default for JsRules {
    fn default() -> Self {
        JsRules {
            allowed_modules: Vec::new(),
            denied_globals: Vec::new(),
            denied_members: Vec::new(),
            allow_computed_member: false,
            deny_url_literals: true,
            max_input_reads: 1,
            max_nesting_depth: 64,
        }
    }
}

/// Node built-ins that reach files, processes, the network, other isolates, the engine or
/// the loader (`tty` streams are sockets on raw descriptors). Denied under every policy,
/// with or without `node:` and with any subpath; so is every `_`-prefixed specifier, node's
/// legacy public internals (`_http_client`, `_tls_wrap`, `_stream_*`).
pub const ALWAYS_DENIED_MODULES: [&str; 26] = [
    "fs",
    "child_process",
    "net",
    "tls",
    "dgram",
    "dns",
    "http",
    "http2",
    "https",
    "worker_threads",
    "cluster",
    "vm",
    "module",
    "process",
    "os",
    "v8",
    "inspector",
    "perf_hooks",
    "async_hooks",
    "repl",
    "readline",
    "wasi",
    "trace_events",
    "diagnostics_channel",
    "test",
    "tty",
];

/// Globals denied under every policy: code evaluators and their constructors, the process
/// object, every name of the global object, reflection and proxies that defeat name-based
/// rules, shared memory, and the network.
pub const ALWAYS_DENIED_GLOBALS: [&str; 19] = [
    "eval",
    "Function",
    "AsyncFunction",
    "GeneratorFunction",
    "AsyncGeneratorFunction",
    "process",
    "globalThis",
    "global",
    "self",
    "window",
    "Reflect",
    "Proxy",
    "WebAssembly",
    "SharedArrayBuffer",
    "Atomics",
    "importScripts",
    "fetch",
    "WebSocket",
    "XMLHttpRequest",
];

/// The CommonJS wrapper's own parameters (besides `require`): allowed only as the root of
/// an export assignment.
const WRAPPER_NAMES: [&str; 4] = ["module", "exports", "__filename", "__dirname"];

/// Members denied on any object: the roads to `Function` (`constructor`), to prototypes
/// (`__proto__`, the `Object.*` reflection calls), to callers' frames (`caller`, `callee`,
/// `arguments`, V8's CallSite `getThis`/`getFunction` via `prepareStackTrace`), to the
/// loader and native bindings (`mainModule`, `binding`, `_load`, `dlopen`, ...) and to
/// engine hooks (`species`, `hasInstance`, `unscopables`).
pub const ALWAYS_DENIED_MEMBERS: [&str; 43] = [
    "constructor",
    "__proto__",
    "__defineGetter__",
    "__defineSetter__",
    "__lookupGetter__",
    "__lookupSetter__",
    "caller",
    "callee",
    "arguments",
    "getPrototypeOf",
    "setPrototypeOf",
    "defineProperty",
    "defineProperties",
    "getOwnPropertyDescriptor",
    "getOwnPropertyDescriptors",
    "prepareStackTrace",
    "getThis",
    "getFunction",
    "mainModule",
    "binding",
    "_linkedBinding",
    "linkedBinding",
    "_load",
    "_compile",
    "_resolveFilename",
    "_extensions",
    "_cache",
    "_nodeModulePaths",
    "createRequire",
    "builtinModules",
    "dlopen",
    "_handle",
    "_stdin",
    "_stdout",
    "_stderr",
    "getBuiltinModule",
    "runInThisContext",
    "runInNewContext",
    "runInContext",
    "compileFunction",
    "species",
    "hasInstance",
    "unscopables",
];

/// Timer functions whose string form evaluates code.
const TIMERS: [&str; 3] = ["setTimeout", "setInterval", "setImmediate"];

/// Globals whose members are trusted to produce numbers in a computed key, while pristine.
const NUMERIC_NAMESPACES: [&str; 2] = ["Math", "Number"];
/// Global functions trusted to return numbers (they can only be replaced by a global write,
/// which is denied).
const NUMERIC_FUNCTIONS: [&str; 3] = ["parseInt", "parseFloat", "Number"];

/// Stack reserved for everything but node-depth recursion.
const BASE_STACK: usize = 1024 * 1024;
/// Stack reserved per source byte: oxc's parser and semantic pass recurse once per nesting
/// level, and one byte (`!`, `~`) or a few (`a = a = ...`, `l: l: ...`) open a level.
/// Measured with tests/check/js_corpus.rs's deep inputs on a 256 KiB thread: the release
/// profile crashes at 96 bytes per source byte and passes at 256 (worst: `a = a = ...`);
/// the dev profile, with its larger frames, crashes at 1024 and passes at 1280 (worst:
/// `!!!...`). Both constants leave at least 3x that. The reservation is virtual: only the
/// depth a source actually reaches is touched.
const STACK_PER_BYTE: usize = if cfg!(debug_assertions) {
    4 * 1024
} else {
    1024
};

/// Check JavaScript source against `rules`. Returns every violation, sorted and deduplicated;
/// empty means the check passes. Never panics and never overflows the stack.
pub fn check_source(code: &str, rules: &JsRules) -> Vec<Violation> {
    if code.len() > MAX_SOURCE_BYTES {
        return vec![Violation::source_too_large(code.len(), MAX_SOURCE_BYTES)];
    }
    let lines = LineIndex::new(code);
    let mut out = Vec::new();
    screen_nesting(code, rules, &lines, &mut out);
    if out.is_empty() {
        let needed = BASE_STACK.saturating_add(code.len().saturating_mul(STACK_PER_BYTE));
        stacker::maybe_grow(needed, needed, || {
            check_parsed(code, rules, &lines, &mut out)
        });
    }
    out.sort_by(|a, b| (a.line, a.column, &a.rule).cmp(&(b.line, b.column, &b.rule)));
    out.dedup();
    out
}

/// Byte offset to 1-based line and character column, with ECMAScript's line terminators
/// (LF, CR, CRLF, U+2028, U+2029), so positions match what an editor of JS shows.
struct LineIndex<'a> {
    src: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    fn new(src: &'a str) -> Self {
        let mut starts = vec![0];
        let mut chars = src.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '\n' | '\u{2028}' | '\u{2029}' => starts.push(i + c.len_utf8()),
                '\r' if chars.peek().map(|&(_, n)| n) != Some('\n') => starts.push(i + 1),
                _ => {}
            }
        }
        LineIndex { src, starts }
    }

    fn position(&self, offset: usize) -> (u32, u32) {
        let offset = offset.min(self.src.len());
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        let start = self.starts.get(line - 1).copied().unwrap_or(0);
        let column = self
            .src
            .get(start..offset)
            .map(|s| s.chars().count())
            .unwrap_or(0)
            + 1;
        (
            u32::try_from(line).unwrap_or(u32::MAX),
            u32::try_from(column).unwrap_or(u32::MAX),
        )
    }
}

fn push(out: &mut Vec<Violation>, lines: &LineIndex<'_>, rule: String, detail: String, at: u32) {
    let (line, column) = lines.position(at as usize);
    out.push(Violation {
        rule,
        detail,
        line,
        column,
    });
}

/// Bracket depth on the raw text, before the parser sees it (strings and comments included,
/// which only errs towards denying).
fn screen_nesting(code: &str, rules: &JsRules, lines: &LineIndex<'_>, out: &mut Vec<Violation>) {
    let max = rules.max_nesting_depth;
    let mut depth: u32 = 0;
    for (i, b) in code.bytes().enumerate() {
        match b {
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    push(
                        out,
                        lines,
                        "nesting_too_deep".into(),
                        format!("brackets nest deeper than {max}"),
                        u32::try_from(i).unwrap_or(u32::MAX),
                    );
                    return;
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
}

fn parse_options() -> ParseOptions {
    ParseOptions {
        parse_regular_expression: true,
        preserve_parens: false,
        ..ParseOptions::default()
    }
}

/// Parse as node's CommonJS script, refuse what node 20 would not run, then walk the AST.
fn check_parsed(code: &str, rules: &JsRules, lines: &LineIndex<'_>, out: &mut Vec<Violation>) {
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, code, SourceType::cjs())
        .with_options(parse_options())
        .parse();
    let mut errors: Vec<(u32, String)> = parsed
        .diagnostics
        .errors()
        .map(|d| (diagnostic_offset(d), d.message.to_string()))
        .collect();
    if parsed.panicked && errors.is_empty() {
        errors.push((0, "the parser gave up".into()));
    }
    let semantic = if errors.is_empty() {
        let built = SemanticBuilder::new()
            .with_build_nodes(true)
            .with_check_syntax_error(true)
            .build(&parsed.program);
        errors.extend(
            built
                .diagnostics
                .errors()
                .map(|d| (diagnostic_offset(d), d.message.to_string())),
        );
        Some(built.semantic)
    } else {
        None
    };
    if let Some((at, message)) = errors.into_iter().min_by_key(|(at, _)| *at) {
        let detail = format!(
            "{message}; the program runs as `node main.js` with node 20: a CommonJS script in \
             ECMAScript 2023, no TypeScript, JSX or ES-module syntax"
        );
        push(out, lines, "syntax_error".into(), detail, at);
        check_as_module(code, rules, lines, out);
        return;
    }
    let Some(semantic) = semantic else {
        return;
    };
    let mut checker = Checker::new(rules, lines, out, &semantic, &parsed.program);
    checker.visit_program(&parsed.program);
    checker.finish();
}

fn diagnostic_offset(d: &oxc_diagnostics::OxcDiagnostic) -> u32 {
    d.labels.iter().map(|l| l.offset()).min().unwrap_or(0)
}

/// After a CommonJS parse failed: if the source is an ES module, node 20.19+ would run it
/// as one (module-syntax detection). Deny that whole (the `syntax_error` is already pushed)
/// and walk the module so the denial also names what it imports.
fn check_as_module(code: &str, rules: &JsRules, lines: &LineIndex<'_>, out: &mut Vec<Violation>) {
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, code, SourceType::mjs())
        .with_options(parse_options())
        .parse();
    if parsed.panicked || parsed.diagnostics.has_errors() {
        return;
    }
    if let Some(first) = out.iter_mut().rev().find(|v| v.rule == "syntax_error") {
        let message = first
            .detail
            .split("; the program runs")
            .next()
            .unwrap_or("");
        first.detail = format!(
            "{message}: this is ES-module syntax (import/export, import.meta or top-level \
             await), which node would run as a different program from the CommonJS script \
             checked; write CommonJS: const x = require(\"x\") for an allowed module, no \
             top-level await"
        );
    }
    let built = SemanticBuilder::new()
        .with_build_nodes(true)
        .build(&parsed.program);
    let mut checker = Checker::new(rules, lines, out, &built.semantic, &parsed.program);
    checker.visit_program(&parsed.program);
    checker.finish();
}

#[cfg(test)]
mod tests;
