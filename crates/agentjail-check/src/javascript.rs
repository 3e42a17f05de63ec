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
//!   `_`-prefixed specifier (`_http_client`) are denied whatever the policy says.
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

use crate::Violation;
use oxc_allocator::Allocator;
use oxc_ast::ast::*;
use oxc_ast::AstKind;
use oxc_ast_visit::{walk, Visit};
use oxc_parser::{ParseOptions, Parser};
use oxc_semantic::{Semantic, SemanticBuilder};
use oxc_span::{GetSpan, SourceType, Span};
use oxc_syntax::operator::{AssignmentOperator, BinaryOperator, LogicalOperator, UnaryOperator};
use oxc_syntax::scope::ScopeFlags;
use oxc_syntax::symbol::SymbolId;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

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

/// Where a name is used: its context decides which rule applies.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Use {
    /// Read or written as a value.
    Value,
    /// The callee of a call, `new` or tagged template.
    Call,
    /// The object of a static member access (`Math.floor`).
    MemberBase,
}

struct Checker<'a, 'o, 's> {
    rules: &'a JsRules,
    lines: &'a LineIndex<'a>,
    out: &'o mut Vec<Violation>,
    semantic: &'s Semantic<'s>,
    depth: u32,
    max_depth: u32,
    too_deep: bool,
    /// Inside a loop, function, arrow or class body: one `input()` there can read many lines.
    repeat_depth: u32,
    input_calls: Vec<(u32, bool)>,
    /// Strict code here (a `"use strict"` directive or a class body).
    strict: bool,
    /// `this` here is a receiver or `module.exports`, never the global object.
    this_safe: bool,
    /// Inside a non-arrow function: `arguments` is that function's own, not the CommonJS
    /// wrapper's (whose `arguments[1]` is `require`).
    own_arguments: bool,
    /// The member expression currently being visited as the object of another member
    /// (`X.prototype` in `X.prototype.slice`), or as a write target.
    member_object: Option<Span>,
    /// The span of a `module`/`exports` identifier that roots an export assignment target.
    export_root: Option<Span>,
    numeric: NumericFacts,
}

impl<'a, 'o, 's> Checker<'a, 'o, 's> {
    fn new(
        rules: &'a JsRules,
        lines: &'a LineIndex<'a>,
        out: &'o mut Vec<Violation>,
        semantic: &'s Semantic<'s>,
        program: &Program<'_>,
    ) -> Self {
        let strict = program.directives.iter().any(Directive::is_use_strict);
        Checker {
            rules,
            lines,
            out,
            semantic,
            depth: 0,
            max_depth: rules.max_nesting_depth.clamp(1, 1024),
            too_deep: false,
            repeat_depth: 0,
            input_calls: Vec::new(),
            strict,
            this_safe: true,
            own_arguments: false,
            member_object: None,
            export_root: None,
            numeric: NumericFacts::new(semantic),
        }
    }

    fn report(&mut self, rule: String, detail: impl Into<String>, span: Span) {
        push(self.out, self.lines, rule, detail.into(), span.start);
    }

    /// Report `input()` reads once the whole program has been seen.
    fn finish(&mut self) {
        let max = self.rules.max_input_reads;
        let calls = std::mem::take(&mut self.input_calls);
        let total = calls.len();
        for (i, (at, repeated)) in calls.into_iter().enumerate() {
            let over = u32::try_from(i).unwrap_or(u32::MAX) >= max;
            if repeated || over {
                let why = if repeated {
                    "input() inside a loop, function, arrow or class body can read many lines"
                } else {
                    "more input() calls than the policy allows"
                };
                push(
                    self.out,
                    self.lines,
                    "too_many_input_reads".into(),
                    format!(
                        "{why} ({total} call(s), at most {max}); read the payload once at top \
                         level: const payload = JSON.parse(input())"
                    ),
                    at,
                );
            }
        }
    }

    /// Enter one expression or statement level; false (and one violation) when too deep.
    fn enter(&mut self, span: Span) -> bool {
        self.depth += 1;
        if self.depth > self.max_depth {
            if !self.too_deep {
                self.too_deep = true;
                let max = self.max_depth;
                self.report(
                    "nesting_too_deep".into(),
                    format!("expressions and statements nest deeper than {max}"),
                    span,
                );
            }
            return false;
        }
        true
    }

    fn is_denied_global(&self, name: &str) -> bool {
        ALWAYS_DENIED_GLOBALS.contains(&name) || listed(&self.rules.denied_globals, name)
    }

    fn is_denied_member(&self, name: &str) -> bool {
        ALWAYS_DENIED_MEMBERS.contains(&name) || listed(&self.rules.denied_members, name)
    }

    /// A name being declared (variable, function, class, parameter, catch, import binding).
    fn check_binding(&mut self, name: &str, span: Span) {
        if self.is_denied_global(name)
            || WRAPPER_NAMES.contains(&name)
            || name == "require"
            || name == "input"
        {
            self.report(
                format!("name_not_allowed:{name}"),
                format!(
                    "`{name}` may not be declared: it would shadow or stand in for a denied \
                     global; choose another name"
                ),
                span,
            );
        }
    }

    /// A name being used (read, written, called, or as the object of `name.member`).
    fn check_name(&mut self, name: &str, span: Span, how: Use) {
        if self.is_denied_global(name) {
            let (rule, what) = match how {
                Use::Call => ("call_not_allowed", "called"),
                _ => ("name_not_allowed", "used"),
            };
            self.report(
                format!("{rule}:{name}"),
                format!(
                    "`{name}` may not be {what}: it evaluates code or reaches the process, the \
                     global object or the engine; plain data work needs none of it"
                ),
                span,
            );
            return;
        }
        match name {
            "input" if how == Use::Call => {
                let repeated = self.repeat_depth > 0;
                self.input_calls.push((span.start, repeated));
            }
            "input" => self.report(
                "name_not_allowed:input".into(),
                "`input` may only be called: const payload = JSON.parse(input())",
                span,
            ),
            "require" => self.report(
                "name_not_allowed:require".into(),
                "`require` may only be called with one string literal: require(\"name\")",
                span,
            ),
            "arguments" if !self.own_arguments => self.report(
                "name_not_allowed:arguments".into(),
                "outside a function, `arguments` is node's module wrapper's (exports, require, \
                 module, ...); use rest parameters: function f(...args)",
                span,
            ),
            n if WRAPPER_NAMES.contains(&n) && self.export_root != Some(span) => self.report(
                format!("name_not_allowed:{n}"),
                format!(
                    "`{n}` is allowed only as `module.exports = ...` / `exports.x = ...`; print \
                     results with console.log(JSON.stringify(result))"
                ),
                span,
            ),
            _ => {}
        }
    }

    fn check_member(&mut self, name: &str, span: Span) {
        if self.is_denied_member(name) {
            self.report(
                format!("attr_not_allowed:{name}"),
                format!(
                    "the property `{name}` reaches constructors, prototypes, caller frames, \
                     the module loader or engine hooks; work on your data's own fields"
                ),
                span,
            );
        }
    }

    /// Text of a string literal, template part or directive (cooked).
    fn check_text(&mut self, text: &str, span: Span) {
        if self.rules.deny_url_literals && text.contains("://") {
            self.report(
                "network_literal_blocked".into(),
                "URLs are blocked: the jail has no network; pass data in through input()",
                span,
            );
        }
        if text.contains("__proto__") {
            self.report(
                "attr_not_allowed:__proto__".into(),
                "`__proto__` in a string is how JSON.parse + Object.assign pollutes prototypes; \
                 use a Map for data keys",
                span,
            );
        }
    }

    /// A module specifier from `require`, `import`, `export ... from` or `import()`.
    fn check_module(&mut self, spec: &str, span: Span) {
        let bare = spec.strip_prefix("node:").unwrap_or(spec);
        let top = bare.split('/').next().unwrap_or(bare);
        let always = ALWAYS_DENIED_MODULES.contains(&top) || top.starts_with('_');
        if always || !listed(&self.rules.allowed_modules, spec) {
            let allowed = if self.rules.allowed_modules.is_empty() {
                "no module is allowed under this policy".to_string()
            } else {
                format!("allowed: {}", self.rules.allowed_modules.join(", "))
            };
            let extra = if always {
                "; this built-in is denied under every policy"
            } else {
                ""
            };
            self.report(
                format!("import_not_allowed:{spec}"),
                format!(
                    "module `{spec}` is not allowed ({allowed}{extra}); input(), console.log, \
                     JSON, Math, Map and Set need no module"
                ),
                span,
            );
        }
    }

    /// `require(...)`: one literal specifier is judged as a module, anything else is denied.
    fn check_require(&mut self, call: &CallExpression<'_>, callee: Span) {
        let spec = match call.arguments.as_slice() {
            [arg] => arg.as_expression().and_then(literal_text),
            _ => None,
        };
        match spec {
            Some((text, span)) => self.check_module(&text, span),
            None => self.report(
                "name_not_allowed:require".into(),
                "`require` may only be called with one string literal: require(\"name\")",
                callee,
            ),
        }
    }

    /// `setTimeout("code")`: the string form of a timer is `eval`.
    fn check_timer(&mut self, name: &str, call: &CallExpression<'_>, callee: Span) {
        let ok = match call.arguments.first() {
            None => true,
            Some(arg) => matches!(
                arg.as_expression(),
                Some(
                    Expression::ArrowFunctionExpression(_)
                        | Expression::FunctionExpression(_)
                        | Expression::Identifier(_)
                        | Expression::StaticMemberExpression(_)
                        | Expression::PrivateFieldExpression(_)
                )
            ),
        };
        if !ok {
            self.report(
                format!("call_not_allowed:{name}"),
                format!("{name} takes a function, never code in a string: {name}(() => ..., ms)"),
                callee,
            );
        }
    }

    /// The key of an object literal, class element or destructuring property.
    fn check_property_key(&mut self, key: &PropertyKey<'_>, computed: bool, defines: bool) {
        match key {
            PropertyKey::StaticIdentifier(id) => self.check_member(&id.name, id.span),
            PropertyKey::PrivateIdentifier(_) => {}
            _ => {
                let Some(expr) = key.as_expression() else {
                    return;
                };
                if let Some((text, span)) = literal_text(expr) {
                    self.check_member(&text, span);
                } else if computed && !defines {
                    // `const {[k]: v} = o` reads o[k].
                    self.check_computed_key(expr);
                }
                self.visit_expression(expr);
            }
        }
    }

    /// `o[key]` (and `const {[key]: v} = o`): literal keys are judged as member names; other
    /// keys must be provably numeric unless the policy allows computed members.
    fn check_computed_key(&mut self, key: &Expression<'_>) {
        if let Some((text, span)) = literal_text(key) {
            self.check_member(&text, span);
            return;
        }
        if self.rules.allow_computed_member || self.numeric.is_key_safe(self.semantic, key, 0) {
            return;
        }
        self.report(
            "computed_member_not_allowed".into(),
            "o[key] is allowed only with a string/number literal or a provably numeric key (a \
             number literal, arithmetic, Math.*, a for-loop counter); for data keys use a Map \
             (m.get(k), m.set(k, v)), for array positions from data use a.at(i)",
            key.span(),
        );
    }

    /// Writes to a member chain: `prototype_write`, `global_write:<root>`.
    fn check_write_target(&mut self, target: &SimpleAssignmentTarget<'_>) {
        match target {
            SimpleAssignmentTarget::AssignmentTargetIdentifier(id) => {
                self.check_global_write(id, id.span);
            }
            _ => {
                if let Some(member) = target.as_member_expression() {
                    self.check_member_write(member);
                }
            }
        }
    }

    fn check_member_write(&mut self, member: &MemberExpression<'_>) {
        if chain_names_prototype(member) {
            self.report(
                "prototype_write".into(),
                "writing through a prototype changes every object of that type; put the \
                 data or method on your own object or class",
                member.span(),
            );
        }
        if let Some(root) = chain_root(member.object()) {
            if self.export_root != Some(root.span) {
                self.check_global_write(root, member.span());
            }
        }
    }

    /// `root` is written to (itself or a member of it): deny when it names no declaration.
    fn check_global_write(&mut self, root: &IdentifierReference<'_>, span: Span) {
        if root.name == "arguments" || !self.numeric.is_unresolved(self.semantic, root) {
            return;
        }
        let name = root.name.as_str();
        self.report(
            format!("global_write:{name}"),
            format!(
                "`{name}` is not declared in this program, so this writes a global or patches a \
                 built-in; declare your own variable (let/const) or object"
            ),
            span,
        );
    }

    /// `module.exports... = ` / `exports.x = `: remember the root so it is not denied.
    fn export_root_of(&self, target: &SimpleAssignmentTarget<'_>) -> Option<Span> {
        let member = target.as_member_expression()?;
        let mut object = member.object();
        let mut first_property = member.static_property_name();
        while let Some(inner) = object.as_member_expression() {
            first_property = inner.static_property_name();
            object = inner.object();
        }
        let Expression::Identifier(root) = object else {
            return None;
        };
        let ok = match root.name.as_str() {
            "exports" => true,
            "module" => first_property == Some("exports"),
            _ => false,
        };
        ok.then_some(root.span)
    }

    /// `Object.assign(target, ...)`: a prototype or a built-in as the target is a write.
    fn check_object_assign(&mut self, call: &CallExpression<'_>) {
        let Some(member) = call.callee.as_member_expression() else {
            return;
        };
        let is_assign = member.static_property_name() == Some("assign")
            && matches!(member.object(), Expression::Identifier(o) if o.name == "Object");
        if !is_assign {
            return;
        }
        let Some(target) = call.arguments.first().and_then(Argument::as_expression) else {
            return;
        };
        if let Some(m) = target.as_member_expression() {
            self.check_member_write(m);
        } else if let Expression::Identifier(id) = target {
            self.check_global_write(id, id.span);
        }
    }

    /// `X.prototype` may only be read through (`X.prototype.slice.call(...)`): held in a
    /// variable or passed on, it is written to under another name (`const P =
    /// Object.prototype; P.x = 1`, `Object.assign(P, ...)`).
    fn check_prototype_use(&mut self, member: Span, property: Span) {
        if self.member_object != Some(member) {
            self.report(
                "attr_not_allowed:prototype".into(),
                "a prototype may only be read through (X.prototype.method), never held, passed \
                 or assigned; put shared behaviour in a class",
                property,
            );
        }
    }

    /// `this` in sloppy non-arrow functions is the global object when called bare.
    fn check_this(&mut self, span: Span) {
        if !self.this_safe {
            self.report(
                "name_not_allowed:this".into(),
                "`this` in a plain function or object method is the global object when the \
                 function is called without a receiver; use a class, or put \"use strict\"; at \
                 the top of the program",
                span,
            );
        }
    }

    fn visit_callee(&mut self, callee: &Expression<'_>) {
        match callee {
            Expression::Identifier(id) => self.check_name(&id.name, id.span, Use::Call),
            other => self.visit_expression(other),
        }
    }

    /// Run `f` inside a function-like scope (`this_safe` and `own_arguments` as given,
    /// strictness inherited or set), where `input()` counts as repeated.
    fn in_function(
        &mut self,
        strict: bool,
        (this_safe, own_arguments): (bool, bool),
        f: impl FnOnce(&mut Self),
    ) {
        let outer = (self.strict, self.this_safe, self.own_arguments);
        self.strict = outer.0 || strict;
        self.this_safe = this_safe;
        self.own_arguments = own_arguments;
        self.repeat_depth += 1;
        f(self);
        self.repeat_depth -= 1;
        (self.strict, self.this_safe, self.own_arguments) = outer;
    }

    fn deny_syntax(&mut self, what: &str, span: Span) {
        self.report(
            "syntax_error".into(),
            format!("{what} is not supported by node 20 (ECMAScript 2023)"),
            span,
        );
    }
}

fn listed(list: &[String], name: &str) -> bool {
    list.iter().any(|n| n == name)
}

/// The cooked text of a string literal or a template literal without substitutions.
fn literal_text(expr: &Expression<'_>) -> Option<(String, Span)> {
    match expr {
        Expression::StringLiteral(s) => Some((s.value.to_string(), s.span)),
        Expression::TemplateLiteral(t) if t.expressions.is_empty() => {
            let quasi = t.quasis.first()?;
            let cooked = quasi.value.cooked?;
            Some((cooked.to_string(), t.span))
        }
        _ => None,
    }
}

/// The identifier at the root of a member chain (`a` in `a.b[c].d`), if any.
fn chain_root<'e, 'a>(mut expr: &'e Expression<'a>) -> Option<&'e IdentifierReference<'a>> {
    loop {
        match expr {
            Expression::Identifier(id) => return Some(id),
            Expression::ChainExpression(chain) => {
                expr = chain.expression.as_member_expression()?.object();
            }
            other => expr = other.as_member_expression()?.object(),
        }
    }
}

/// Does this member chain name `prototype` or `__proto__` anywhere (as a static name or a
/// literal key)?
fn chain_names_prototype(member: &MemberExpression<'_>) -> bool {
    let mut current = Some(member);
    while let Some(m) = current {
        let name = match m {
            MemberExpression::ComputedMemberExpression(c) => {
                literal_text(&c.expression).map(|(t, _)| t)
            }
            other => other.static_property_name().map(str::to_string),
        };
        if matches!(name.as_deref(), Some("prototype" | "__proto__")) {
            return true;
        }
        current = m.object().as_member_expression();
    }
    false
}

impl<'a> Visit<'a> for Checker<'_, '_, '_> {
    fn visit_program(&mut self, it: &Program<'a>) {
        if let Some(h) = &it.hashbang {
            self.check_text(&h.value, h.span);
        }
        walk::walk_program(self, it);
    }

    fn visit_statement(&mut self, it: &Statement<'a>) {
        if !self.enter(it.span()) {
            self.depth -= 1;
            return;
        }
        let repeats = matches!(
            it,
            Statement::ForStatement(_)
                | Statement::ForInStatement(_)
                | Statement::ForOfStatement(_)
                | Statement::WhileStatement(_)
                | Statement::DoWhileStatement(_)
        );
        match it {
            Statement::WithStatement(w) => self.report(
                "syntax_not_allowed:with".into(),
                "`with` changes how every name inside it resolves and hides names from the \
                 checker; name the object: obj.field",
                w.span,
            ),
            Statement::DebuggerStatement(d) => self.report(
                "syntax_not_allowed:debugger".into(),
                "`debugger` is not allowed; remove it",
                d.span,
            ),
            _ => {}
        }
        self.repeat_depth += u32::from(repeats);
        walk::walk_statement(self, it);
        self.repeat_depth -= u32::from(repeats);
        self.depth -= 1;
    }

    fn visit_expression(&mut self, it: &Expression<'a>) {
        if self.enter(it.span()) {
            walk::walk_expression(self, it);
        }
        self.depth -= 1;
    }

    fn visit_variable_declaration(&mut self, it: &VariableDeclaration<'a>) {
        if matches!(
            it.kind,
            VariableDeclarationKind::Using | VariableDeclarationKind::AwaitUsing
        ) {
            self.deny_syntax("a `using` declaration", it.span);
        }
        walk::walk_variable_declaration(self, it);
    }

    fn visit_decorator(&mut self, it: &Decorator<'a>) {
        self.deny_syntax("a decorator", it.span);
        walk::walk_decorator(self, it);
    }

    fn visit_identifier_reference(&mut self, it: &IdentifierReference<'a>) {
        self.check_name(&it.name, it.span, Use::Value);
    }

    fn visit_binding_identifier(&mut self, it: &BindingIdentifier<'a>) {
        self.check_binding(&it.name, it.span);
    }

    fn visit_this_expression(&mut self, it: &ThisExpression) {
        self.check_this(it.span);
    }

    fn visit_string_literal(&mut self, it: &StringLiteral<'a>) {
        self.check_text(&it.value, it.span);
    }

    fn visit_directive(&mut self, it: &Directive<'a>) {
        self.check_text(&it.expression.value, it.span);
    }

    fn visit_template_literal(&mut self, it: &TemplateLiteral<'a>) {
        // All parts joined (a NUL for each substitution), cooked and raw: `String.raw` sees
        // the raw text, everything else the cooked.
        let mut cooked = String::new();
        let mut raw = String::new();
        for (i, quasi) in it.quasis.iter().enumerate() {
            if i > 0 {
                cooked.push('\0');
                raw.push('\0');
            }
            cooked.push_str(quasi.value.cooked.as_deref().unwrap_or(""));
            raw.push_str(&quasi.value.raw);
        }
        self.check_text(&cooked, it.span);
        self.check_text(&raw, it.span);
        for expr in &it.expressions {
            self.visit_expression(expr);
        }
    }

    fn visit_static_member_expression(&mut self, it: &StaticMemberExpression<'a>) {
        self.check_member(&it.property.name, it.property.span);
        if it.property.name == "prototype" {
            self.check_prototype_use(it.span, it.property.span);
        }
        self.member_object = Some(it.object.span());
        match &it.object {
            Expression::Identifier(id) => self.check_name(&id.name, id.span, Use::MemberBase),
            other => self.visit_expression(other),
        }
    }

    fn visit_computed_member_expression(&mut self, it: &ComputedMemberExpression<'a>) {
        if let Some((name, span)) = literal_text(&it.expression) {
            if name == "prototype" {
                self.check_prototype_use(it.span, span);
            }
        }
        self.check_computed_key(&it.expression);
        self.member_object = Some(it.object.span());
        self.visit_expression(&it.object);
        self.visit_expression(&it.expression);
    }

    fn visit_super(&mut self, _it: &Super) {}

    fn visit_call_expression(&mut self, it: &CallExpression<'a>) {
        if let Expression::Identifier(id) = &it.callee {
            match id.name.as_str() {
                "require" => self.check_require(it, id.span),
                n if TIMERS.contains(&n) => self.check_timer(n, it, id.span),
                _ => {}
            }
            if id.name != "require" {
                self.check_name(&id.name, id.span, Use::Call);
            }
        } else {
            self.check_object_assign(it);
            self.visit_expression(&it.callee);
        }
        self.visit_arguments(&it.arguments);
    }

    fn visit_new_expression(&mut self, it: &NewExpression<'a>) {
        self.visit_callee(&it.callee);
        self.visit_arguments(&it.arguments);
    }

    fn visit_tagged_template_expression(&mut self, it: &TaggedTemplateExpression<'a>) {
        self.visit_callee(&it.tag);
        self.visit_template_literal(&it.quasi);
    }

    fn visit_import_expression(&mut self, it: &ImportExpression<'a>) {
        self.report(
            "call_not_allowed:import".into(),
            "dynamic import() is not allowed; use require(\"name\") for an allowed module",
            it.span,
        );
        if it.phase.is_some() {
            self.deny_syntax("import.source / import.defer", it.span);
        }
        if let Some((spec, span)) = literal_text(&it.source) {
            self.check_module(&spec, span);
        }
        walk::walk_import_expression(self, it);
    }

    fn visit_import_declaration(&mut self, it: &ImportDeclaration<'a>) {
        self.check_module(&it.source.value, it.source.span);
        walk::walk_import_declaration(self, it);
    }

    fn visit_export_from_declaration(&mut self, it: &ExportFromDeclaration<'a>) {
        self.check_module(&it.source.value, it.source.span);
        walk::walk_export_from_declaration(self, it);
    }

    fn visit_export_all_declaration(&mut self, it: &ExportAllDeclaration<'a>) {
        self.check_module(&it.source.value, it.source.span);
        walk::walk_export_all_declaration(self, it);
    }

    fn visit_simple_assignment_target(&mut self, it: &SimpleAssignmentTarget<'a>) {
        let outer = self.export_root;
        self.export_root = self.export_root_of(it).or(outer);
        self.check_write_target(it);
        // A write target naming `prototype` is already a `prototype_write`.
        self.member_object = Some(it.span());
        walk::walk_simple_assignment_target(self, it);
        self.export_root = outer;
    }

    fn visit_unary_expression(&mut self, it: &UnaryExpression<'a>) {
        if it.operator == UnaryOperator::Delete {
            if let Some(member) = it.argument.as_member_expression() {
                self.check_member_write(member);
            }
        }
        walk::walk_unary_expression(self, it);
    }

    fn visit_object_property(&mut self, it: &ObjectProperty<'a>) {
        self.check_property_key(&it.key, it.computed, true);
        self.visit_expression(&it.value);
    }

    fn visit_binding_property(&mut self, it: &BindingProperty<'a>) {
        self.check_property_key(&it.key, it.computed, false);
        self.visit_binding_pattern(&it.value);
    }

    fn visit_assignment_target_property_identifier(
        &mut self,
        it: &AssignmentTargetPropertyIdentifier<'a>,
    ) {
        // `({constructor} = o)` reads o.constructor into a variable of that name, and
        // `({x} = o)` with `x` undeclared writes a global.
        self.check_member(&it.binding.name, it.binding.span);
        self.check_global_write(&it.binding, it.binding.span);
        walk::walk_assignment_target_property_identifier(self, it);
    }

    fn visit_assignment_target_property_property(
        &mut self,
        it: &AssignmentTargetPropertyProperty<'a>,
    ) {
        self.check_property_key(&it.name, it.computed, false);
        self.visit_assignment_target_maybe_default(&it.binding);
    }

    fn visit_method_definition(&mut self, it: &MethodDefinition<'a>) {
        if it.kind != MethodDefinitionKind::Constructor {
            self.check_property_key(&it.key, it.computed, true);
        } else if let Some(expr) = it.key.as_expression() {
            self.visit_expression(expr);
        }
        self.visit_function(&it.value, ScopeFlags::Function);
    }

    fn visit_property_definition(&mut self, it: &PropertyDefinition<'a>) {
        self.check_property_key(&it.key, it.computed, true);
        if let Some(value) = &it.value {
            self.visit_expression(value);
        }
    }

    fn visit_accessor_property(&mut self, it: &AccessorProperty<'a>) {
        self.deny_syntax("an `accessor` class field", it.span);
        walk::walk_accessor_property(self, it);
    }

    fn visit_function(&mut self, it: &Function<'a>, flags: ScopeFlags) {
        let strict = it.has_use_strict_directive();
        let this_safe = self.strict || strict;
        self.in_function(strict, (this_safe, true), |me| {
            walk::walk_function(me, it, flags)
        });
    }

    fn visit_arrow_function_expression(&mut self, it: &ArrowFunctionExpression<'a>) {
        let strict = it.has_use_strict_directive();
        let inherited = (self.this_safe, self.own_arguments);
        self.in_function(strict, inherited, |me| {
            walk::walk_arrow_function_expression(me, it)
        });
    }

    fn visit_class(&mut self, it: &Class<'a>) {
        // `arguments` in a class field or static block is an early error; the heritage
        // (`extends ...`) is evaluated outside, so keep the enclosing function's answer.
        let own_arguments = self.own_arguments;
        self.in_function(true, (true, own_arguments), |me| walk::walk_class(me, it));
    }
}

/// What the program lets the checker assume about numbers, for computed member keys.
struct NumericFacts {
    /// Variables proved to hold only numbers (computed once, on first need).
    numeric_symbols: Option<HashSet<SymbolId>>,
    /// Per global in [`NUMERIC_NAMESPACES`]: used only as `Name.member` and never declared.
    pristine: HashMap<&'static str, bool>,
}

/// Deepest expression the numeric proof looks into before giving up (and denying).
const NUMERIC_DEPTH: u32 = 32;

impl NumericFacts {
    fn new(semantic: &Semantic<'_>) -> Self {
        let scoping = semantic.scoping();
        let nodes = semantic.nodes();
        let unresolved = scoping.root_unresolved_references();
        let mut pristine = HashMap::new();
        for name in NUMERIC_NAMESPACES {
            let ok = unresolved
                .iter()
                .filter(|(n, _)| n.as_str() == name)
                .flat_map(|(_, ids)| ids.iter())
                .all(|&reference| {
                    let node = scoping.get_reference(reference).node_id();
                    match nodes.parent_kind(node) {
                        AstKind::StaticMemberExpression(m) => {
                            matches!(&m.object, Expression::Identifier(id) if id.name == name)
                        }
                        AstKind::CallExpression(c) => {
                            matches!(&c.callee, Expression::Identifier(id) if id.name == name)
                        }
                        _ => false,
                    }
                });
            let declared = scoping
                .symbol_ids()
                .any(|symbol| scoping.symbol_name(symbol) == name);
            pristine.insert(name, ok && !declared);
        }
        NumericFacts {
            numeric_symbols: None,
            pristine,
        }
    }

    fn is_unresolved(&self, semantic: &Semantic<'_>, id: &IdentifierReference<'_>) -> bool {
        match id.reference_id.get() {
            Some(reference) => semantic
                .scoping()
                .get_reference(reference)
                .symbol_id()
                .is_none(),
            None => true,
        }
    }

    /// Is this computed key provably a number (or a well-known symbol)?
    fn is_key_safe(&mut self, semantic: &Semantic<'_>, key: &Expression<'_>, depth: u32) -> bool {
        if let Expression::StaticMemberExpression(m) = key {
            if let Expression::Identifier(id) = &m.object {
                if id.name == "Symbol"
                    && self.is_unresolved(semantic, id)
                    && matches!(m.property.name.as_str(), "iterator" | "asyncIterator")
                {
                    return true;
                }
            }
        }
        if self.numeric_symbols.is_none() {
            self.numeric_symbols = Some(numeric_symbols(semantic, self));
        }
        let proved = self.numeric_symbols.take().unwrap_or_default();
        let safe = is_numeric(semantic, self, &proved, key, depth);
        self.numeric_symbols = Some(proved);
        safe
    }
}

/// The greatest set of variables that can be proved numeric together: start from every
/// candidate (declared once by a plain declarator, written only by `=`, compound assignment
/// or `++`/`--`), then drop any whose initialiser or written value is not numeric under the
/// current set, until nothing changes.
fn numeric_symbols(semantic: &Semantic<'_>, facts: &NumericFacts) -> HashSet<SymbolId> {
    let scoping = semantic.scoping();
    let mut defs: HashMap<SymbolId, Vec<&Expression<'_>>> = HashMap::new();
    for symbol in scoping.symbol_ids() {
        if let Some(exprs) = symbol_definitions(semantic, symbol) {
            defs.insert(symbol, exprs);
        }
    }
    let mut set: HashSet<SymbolId> = defs.keys().copied().collect();
    loop {
        let before = set.len();
        let dropped: Vec<SymbolId> = set
            .iter()
            .copied()
            .filter(|symbol| {
                defs.get(symbol).is_none_or(|exprs| {
                    !exprs
                        .iter()
                        .all(|e| is_numeric(semantic, facts, &set, e, 0))
                })
            })
            .collect();
        for symbol in dropped {
            set.remove(&symbol);
        }
        if set.len() == before {
            return set;
        }
    }
}

/// The expressions a candidate variable can hold, or `None` when it is not a candidate.
fn symbol_definitions<'s>(
    semantic: &'s Semantic<'_>,
    symbol: SymbolId,
) -> Option<Vec<&'s Expression<'s>>> {
    let scoping = semantic.scoping();
    let nodes = semantic.nodes();
    if !scoping.symbol_redeclarations(symbol).is_empty() {
        return None;
    }
    let declaration = scoping.symbol_declaration(symbol);
    let AstKind::VariableDeclarator(declarator) = nodes.kind(declaration) else {
        return None;
    };
    if !matches!(declarator.id, BindingPattern::BindingIdentifier(_)) {
        return None;
    }
    let list = nodes.parent_id(declaration);
    if matches!(
        nodes.parent_kind(list),
        AstKind::ForInStatement(_) | AstKind::ForOfStatement(_)
    ) {
        return None;
    }
    let mut exprs: Vec<&Expression<'_>> = declarator.init.iter().collect();
    for reference in scoping.get_resolved_references(symbol) {
        if !reference.is_write() {
            continue;
        }
        match nodes.parent_kind(reference.node_id()) {
            AstKind::UpdateExpression(_) => {}
            AstKind::AssignmentExpression(a) => {
                let target_is_symbol = matches!(&a.left,
                    AssignmentTarget::AssignmentTargetIdentifier(id)
                        if id.node_id.get() == reference.node_id());
                if !target_is_symbol {
                    return None;
                }
                if !always_numeric_assignment(a.operator) {
                    exprs.push(&a.right);
                }
            }
            _ => return None,
        }
    }
    Some(exprs)
}

/// Compound assignments whose result is a number whatever the right side is.
fn always_numeric_assignment(op: AssignmentOperator) -> bool {
    !matches!(
        op,
        AssignmentOperator::Assign
            | AssignmentOperator::Addition
            | AssignmentOperator::LogicalAnd
            | AssignmentOperator::LogicalOr
            | AssignmentOperator::LogicalNullish
    )
}

/// Is `expr` a number (or boolean / BigInt) under the proved set `proved`?
fn is_numeric(
    semantic: &Semantic<'_>,
    facts: &NumericFacts,
    proved: &HashSet<SymbolId>,
    expr: &Expression<'_>,
    depth: u32,
) -> bool {
    if depth > NUMERIC_DEPTH {
        return false;
    }
    let rec = |e: &Expression<'_>| is_numeric(semantic, facts, proved, e, depth + 1);
    match expr {
        Expression::NumericLiteral(_) | Expression::BigIntLiteral(_) => true,
        Expression::BooleanLiteral(_) | Expression::UpdateExpression(_) => true,
        Expression::UnaryExpression(u) => matches!(
            u.operator,
            UnaryOperator::UnaryNegation
                | UnaryOperator::UnaryPlus
                | UnaryOperator::BitwiseNot
                | UnaryOperator::LogicalNot
        ),
        Expression::BinaryExpression(b) => {
            b.operator != BinaryOperator::Addition || (rec(&b.left) && rec(&b.right))
        }
        Expression::LogicalExpression(l) => {
            matches!(
                l.operator,
                LogicalOperator::Or | LogicalOperator::And | LogicalOperator::Coalesce
            ) && rec(&l.left)
                && rec(&l.right)
        }
        Expression::ConditionalExpression(c) => rec(&c.consequent) && rec(&c.alternate),
        Expression::SequenceExpression(s) => s.expressions.last().is_some_and(rec),
        Expression::AssignmentExpression(a) => {
            always_numeric_assignment(a.operator) || rec(&a.right)
        }
        Expression::Identifier(id) => match id.reference_id.get() {
            Some(reference) => semantic
                .scoping()
                .get_reference(reference)
                .symbol_id()
                .is_some_and(|symbol| proved.contains(&symbol)),
            None => false,
        },
        Expression::CallExpression(call) => is_numeric_call(semantic, facts, &call.callee),
        Expression::StaticMemberExpression(m) => is_pristine_namespace(semantic, facts, &m.object),
        _ => false,
    }
}

/// `Math.f(...)`, `Number.f(...)`, `parseInt(...)`, `parseFloat(...)` on untouched globals.
fn is_numeric_call(semantic: &Semantic<'_>, facts: &NumericFacts, callee: &Expression<'_>) -> bool {
    match callee {
        Expression::StaticMemberExpression(m) => is_pristine_namespace(semantic, facts, &m.object),
        Expression::Identifier(id) => {
            NUMERIC_FUNCTIONS.contains(&id.name.as_str()) && facts.is_unresolved(semantic, id)
        }
        _ => false,
    }
}

fn is_pristine_namespace(
    semantic: &Semantic<'_>,
    facts: &NumericFacts,
    object: &Expression<'_>,
) -> bool {
    let Expression::Identifier(id) = object else {
        return false;
    };
    facts
        .pristine
        .get(id.name.as_str())
        .copied()
        .unwrap_or(false)
        && facts.is_unresolved(semantic, id)
}

#[cfg(test)]
mod tests {
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
        allowed(
            "class A { m() { const f = () => this; return f(); } static s() { return this; } }",
        );
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
            "eval('1'); eval('1');\nprocess.exit();",
            &JsRules::default(),
        );
        let keys: Vec<_> = v.iter().map(|v| (v.line, v.column)).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert_eq!(v.len(), 3, "{v:?}");
    }
}
