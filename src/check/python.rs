//! The static check for Python source, over ruff's AST.
//!
//! Defence in depth, not the boundary: the jail contains whatever this misses. The aim is
//! to judge the program CPython will actually run, so before anything else the source is
//! screened for ways CPython could read different bytes or tokens than we parse:
//!
//! * a PEP 263 coding declaration on line 1 or 2 naming anything but UTF-8
//!   (`# -*- coding: utf-7 -*-` makes CPython decode `+AGU-` as `e`): `source_encoding_declared`;
//! * NUL bytes (`source_nul_byte`), form feeds in indentation (CPython resets the column
//!   count on them) and indentation mixing tabs and spaces: `source_indentation`;
//! * bracket depth above `max_nesting_depth`, counted on the raw text before parsing
//!   (strings and comments included, which only errs towards denying): `nesting_too_deep`.
//!
//! The parser is ruff's, targeting the policy's `interpreter.python_version` (3.11 by default);
//! syntax newer than that is a `syntax_error`, because ruff's 3.12 reading of e.g. nested
//! f-string quotes differs from 3.11's. ruff normalises identifiers with NFKC exactly as
//! CPython does, so `ｅｖａｌ` reaches the rules as `eval`.
//!
//! The visitor sees every node: decorators, defaults, annotations, keyword arguments,
//! comprehensions, f-string expressions and format specs, match patterns (including the
//! attribute names of class patterns, which CPython looks up with `getattr`), type
//! parameters, with-items, handlers, walrus targets, global/nonlocal names. Rules:
//!
//! * `import_not_allowed:<top>` (`relative` for `from . import`), and for an allowed module
//!   a submodule or a name outside its safe list: `import_not_allowed:json.decoder`;
//!   `import_star_not_allowed:<module>`;
//! * `name_not_allowed:<n>` for denied names, dunder names, and a denied callable used as a
//!   value (`e = eval`, `@eval`, `f(x=exec)`, `lambda f=eval: ...`); `call_not_allowed:<n>`
//!   when called; `input` may only be called, never referenced;
//! * `attr_not_allowed:<a>` for denied and dunder attributes, frame/code/generator
//!   internals (`gi_frame`, `f_globals`, `tb_frame`, `mro`, ...), `format_map`, and
//!   `.format` on anything but a string literal;
//! * `module_attr_not_allowed:<module>.<a>` for attributes of an imported module that are
//!   not on its safe list (json and statistics re-export `codecs`, `sys`, `random`, ...);
//!   for modules without a list, re-exported dangerous modules and `_private` names;
//!   `module_reference_not_allowed:<name>` when a module object is used other than as
//!   `module.attr` (so it cannot be aliased past the attribute check);
//! * `format_field_access` for string literals with `{0.attr}` / `{0[key]}` fields;
//! * `network_literal_blocked` for URLs (`scheme://`) in any string, bytes or f-string part
//!   (after escape decoding), and for `http://`/`https://` anywhere in the source as the seed;
//! * `too_many_input_reads` above `max_input_reads`, or `input()` inside a loop, function,
//!   lambda or comprehension (where one call can read many times);
//! * `syntax_error`, `nesting_too_deep`, `source_too_large`.
//!
//! A few names are denied whatever the policy says ([`ALWAYS_DENIED_CALLS`],
//! [`ALWAYS_DENIED_NAMES`], [`stdlib::always_denied_attribute`]): each one is a direct way around
//! this checker, so a policy cannot re-enable it by omission.
//!
//! Stack safety: ruff's parser grows its own stack; our visitor stops descending at
//! `max_nesting_depth`; and the whole parse-check-drop runs under `stacker::maybe_grow` with
//! room proportional to the source length, because dropping a long left-deep chain such as
//! `1+1+1+...` recurses once per operator.

use crate::check::stdlib::{self, module_attr_allowed};
use crate::check::Violation;
use crate::policy::CheckRules;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Pattern, PythonVersion, Stmt};
use ruff_python_parser::{Mode, ParseOptions};
use ruff_text_size::{Ranged, TextRange};
use std::collections::HashMap;

/// Sources above this many bytes are refused without parsing.
pub const MAX_SOURCE_BYTES: usize = 1024 * 1024;

/// Called or referenced, these are denied under every policy.
pub const ALWAYS_DENIED_CALLS: [&str; 12] = [
    "eval",
    "exec",
    "compile",
    "open",
    "__import__",
    "breakpoint",
    "help",
    "exit",
    "quit",
    "license",
    "credits",
    "copyright",
];

/// Referenced at all, these are denied under every policy.
pub const ALWAYS_DENIED_NAMES: [&str; 10] = [
    "getattr",
    "setattr",
    "delattr",
    "globals",
    "locals",
    "vars",
    "dir",
    "builtins",
    "type",
    "memoryview",
];

/// Dunder method names a class may define: CPython calls them only with ordinary
/// arguments, so defining one reaches nothing (reading dunder attributes stays denied).
const DEFINABLE_DUNDERS: [&str; 8] = [
    "__init__", "__repr__", "__str__", "__len__", "__eq__", "__lt__", "__iter__", "__next__",
];

const SEED_URL_MARKERS: [&str; 2] = ["http://", "https://"];

/// Stack reserved for everything but node-depth recursion.
const BASE_STACK: usize = 512 * 1024;
/// Stack reserved per source byte (an AST can be at most about one level deep per byte).
const STACK_PER_BYTE: usize = 256;

/// Check Python source against the policy's rules. Returns every violation, sorted;
/// empty means the check passes. Never panics and never overflows the stack.
pub fn check_source(code: &str, rules: &CheckRules) -> Vec<Violation> {
    check_source_for(code, rules, DEFAULT_PYTHON)
}

/// The version parsed for when the policy names none we understand.
pub const DEFAULT_PYTHON: PythonVersion = PythonVersion::PY311;

/// As [`check_source`], parsing for the interpreter's version (`policy.interpreter
/// .python_version`, e.g. "3.11"): syntax newer than the interpreter is a `syntax_error`.
pub fn check_source_for_version(
    code: &str,
    rules: &CheckRules,
    python_version: &str,
) -> Vec<Violation> {
    let version = python_version.trim().parse().unwrap_or(DEFAULT_PYTHON);
    check_source_for(code, rules, version)
}

fn check_source_for(code: &str, rules: &CheckRules, version: PythonVersion) -> Vec<Violation> {
    if code.len() > MAX_SOURCE_BYTES {
        return vec![Violation {
            rule: "source_too_large".into(),
            detail: format!(
                "{} bytes; the checker reads at most {MAX_SOURCE_BYTES}",
                code.len()
            ),
            line: 0,
            column: 0,
        }];
    }
    let lines = LineIndex::new(code);
    let mut out = Vec::new();
    screen_source(code, rules, &lines, &mut out);
    if out
        .iter()
        .any(|v| v.rule == "nesting_too_deep" || v.rule == "source_nul_byte")
    {
        finish(&mut out);
        return out;
    }
    let needed = BASE_STACK.saturating_add(code.len().saturating_mul(STACK_PER_BYTE));
    stacker::maybe_grow(needed, needed, || {
        check_parsed(code, rules, version, &lines, &mut out)
    });
    finish(&mut out);
    out
}

fn finish(out: &mut Vec<Violation>) {
    out.sort_by(|a, b| (a.line, a.column, &a.rule).cmp(&(b.line, b.column, &b.rule)));
    out.dedup();
}

/// Byte offset to 1-based line and character column.
struct LineIndex<'a> {
    src: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    fn new(src: &'a str) -> Self {
        let mut starts = vec![0];
        let bytes = src.as_bytes();
        for (i, b) in bytes.iter().enumerate() {
            match b {
                b'\n' => starts.push(i + 1),
                b'\r' if bytes.get(i + 1) != Some(&b'\n') => starts.push(i + 1),
                _ => {}
            }
        }
        LineIndex { src, starts }
    }

    fn position(&self, offset: usize) -> (u32, u32) {
        let offset = offset.min(self.src.len());
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        let start = self.starts[line - 1];
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

fn push(
    out: &mut Vec<Violation>,
    lines: &LineIndex<'_>,
    rule: String,
    detail: String,
    offset: usize,
) {
    let (line, column) = lines.position(offset);
    out.push(Violation {
        rule,
        detail,
        line,
        column,
    });
}

/// The first two lines of `code` (with their offsets) under three line splittings: `\n`
/// only, a lone `\r` only, and CPython's universal newlines (`\r\n`, `\r`, `\n`).
fn first_two_lines_every_way(code: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    for sep in [&['\n'][..], &['\r'][..]] {
        let mut offset = 0;
        for line in code.split_inclusive(sep).take(2) {
            out.push((offset, line));
            offset += line.len();
        }
    }
    let bytes = code.as_bytes();
    let (mut start, mut i, mut taken) = (0, 0, 0);
    while i < bytes.len() && taken < 2 {
        let end = match bytes[i] {
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => Some(i + 2),
            b'\r' | b'\n' => Some(i + 1),
            _ => None,
        };
        if let Some(e) = end {
            out.push((start, &code[start..e]));
            taken += 1;
            start = e;
            i = e;
        } else {
            i += 1;
        }
    }
    if taken < 2 && start < code.len() {
        out.push((start, &code[start..]));
    }
    out
}

/// Checks on the raw text, before and independent of parsing.
fn screen_source(code: &str, rules: &CheckRules, lines: &LineIndex<'_>, out: &mut Vec<Violation>) {
    if let Some(pos) = code.find('\0') {
        push(
            out,
            lines,
            "source_nul_byte".into(),
            "NUL byte in source (CPython refuses it)".into(),
            pos,
        );
    }
    // PEP 263: CPython looks for a coding declaration in the first two lines. Which bytes
    // end a line differs between its decoder and tokenizer (\n only, \r\n, a lone \r), so
    // every splitting is tried: a declaration any of them sees is one CPython might honour.
    let mut seen = std::collections::BTreeSet::new();
    for (offset, line) in first_two_lines_every_way(code) {
        if let Some(enc) = coding_declaration(line) {
            let norm = enc.to_ascii_lowercase().replace('_', "-");
            if norm != "utf-8" && norm != "utf8" && seen.insert(offset) {
                push(
                    out,
                    lines,
                    "source_encoding_declared".into(),
                    format!(
                        "coding declaration {enc:?}: CPython would decode the source differently"
                    ),
                    offset,
                );
            }
        }
    }
    // Indentation CPython could read differently from our parser.
    let mut offset = 0;
    for line in code.split_inclusive(['\n', '\r']) {
        let indent: &str = &line[..line.len() - line.trim_start_matches([' ', '\t', '\x0c']).len()];
        if indent.contains('\x0c') || (indent.contains('\t') && indent.contains(' ')) {
            push(
                out,
                lines,
                "source_indentation".into(),
                "form feed or mixed tabs and spaces in indentation".into(),
                offset,
            );
        }
        offset += line.len();
    }
    if rules.deny_url_literals {
        for marker in SEED_URL_MARKERS {
            if let Some(pos) = find_ignore_ascii_case(code.as_bytes(), marker.as_bytes()) {
                push(
                    out,
                    lines,
                    "network_literal_blocked".into(),
                    format!("{marker} in source"),
                    pos,
                );
            }
        }
    }
    let max = rules.max_nesting_depth as usize;
    let mut depth: usize = 0;
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
                        i,
                    );
                    return;
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
}

/// Byte offset of the first ASCII-case-insensitive occurrence of `needle`.
fn find_ignore_ascii_case(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

/// The encoding named by a PEP 263 comment line (`^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)`).
fn coding_declaration(line: &str) -> Option<&str> {
    let rest = line.trim_start_matches([' ', '\t', '\x0c']);
    let comment = rest.strip_prefix('#')?;
    let mut search = comment;
    while let Some(pos) = search.find("coding") {
        let after = &search[pos + "coding".len()..];
        if let Some(value) = after.strip_prefix([':', '=']) {
            let value = value.trim_start_matches([' ', '\t']);
            let end = value
                .find(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_' || c == '.'))
                .unwrap_or(value.len());
            if end > 0 {
                return Some(&value[..end]);
            }
        }
        search = after;
    }
    None
}

fn check_parsed(
    code: &str,
    rules: &CheckRules,
    version: PythonVersion,
    lines: &LineIndex<'_>,
    out: &mut Vec<Violation>,
) {
    let options = ParseOptions::from(Mode::Module).with_target_version(version);
    let parsed = match ruff_python_parser::parse(code, options) {
        Ok(parsed) => parsed,
        Err(err) => {
            push(
                out,
                lines,
                "syntax_error".into(),
                err.error.to_string(),
                err.location.start().to_usize(),
            );
            return;
        }
    };
    if let Some(err) = parsed.unsupported_syntax_errors().first() {
        push(
            out,
            lines,
            "syntax_error".into(),
            format!("{err} (the interpreter is Python 3.11)"),
            err.range.start().to_usize(),
        );
        return;
    }
    let Some(module) = parsed.try_into_module() else {
        push(out, lines, "syntax_error".into(), "not a module".into(), 0);
        return;
    };
    let body = &module.syntax().body;
    let mut checker = Checker {
        rules,
        lines,
        out,
        modules: HashMap::new(),
        depth: 0,
        too_deep: false,
        input_calls: 0,
        input_in_loop: false,
        loop_depth: 0,
        in_class_body: false,
    };
    collect_module_aliases(body, rules, &mut checker.modules, 0);
    checker.visit_body(body);
    let input_calls = checker.input_calls;
    let input_in_loop = checker.input_in_loop;
    if input_calls > rules.max_input_reads || (input_in_loop && input_calls > 0) {
        out.push(Violation {
            rule: "too_many_input_reads".into(),
            detail: format!(
                "{input_calls} input() call(s){}; at most {} allowed",
                if input_in_loop {
                    ", one inside a loop, function or comprehension"
                } else {
                    ""
                },
                rules.max_input_reads
            ),
            line: 0,
            column: 0,
        });
    }
}

/// Every name an allowed module is bound to (`import json`, `import json as j`), anywhere
/// in the module, so uses before the import statement are checked too.
fn collect_module_aliases(
    body: &[Stmt],
    rules: &CheckRules,
    map: &mut HashMap<String, String>,
    depth: u32,
) {
    if depth > rules.max_nesting_depth {
        return;
    }
    for stmt in body {
        match stmt {
            Stmt::Import(import) => {
                for alias in &import.names {
                    let name = alias.name.id.as_str();
                    let bound = match &alias.asname {
                        Some(asname) => asname.id.to_string(),
                        None => name.split('.').next().unwrap_or(name).to_string(),
                    };
                    let module = match &alias.asname {
                        Some(_) => name.to_string(),
                        None => bound.clone(),
                    };
                    map.insert(bound, module);
                }
            }
            Stmt::FunctionDef(f) => collect_module_aliases(&f.body, rules, map, depth + 1),
            Stmt::ClassDef(c) => collect_module_aliases(&c.body, rules, map, depth + 1),
            Stmt::For(f) => {
                collect_module_aliases(&f.body, rules, map, depth + 1);
                collect_module_aliases(&f.orelse, rules, map, depth + 1);
            }
            Stmt::While(w) => {
                collect_module_aliases(&w.body, rules, map, depth + 1);
                collect_module_aliases(&w.orelse, rules, map, depth + 1);
            }
            Stmt::If(i) => {
                collect_module_aliases(&i.body, rules, map, depth + 1);
                for clause in &i.elif_else_clauses {
                    collect_module_aliases(&clause.body, rules, map, depth + 1);
                }
            }
            Stmt::With(w) => collect_module_aliases(&w.body, rules, map, depth + 1),
            Stmt::Try(t) => {
                collect_module_aliases(&t.body, rules, map, depth + 1);
                for handler in &t.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = handler;
                    collect_module_aliases(&h.body, rules, map, depth + 1);
                }
                collect_module_aliases(&t.orelse, rules, map, depth + 1);
                collect_module_aliases(&t.finalbody, rules, map, depth + 1);
            }
            Stmt::Match(m) => {
                for case in &m.cases {
                    collect_module_aliases(&case.body, rules, map, depth + 1);
                }
            }
            _ => {}
        }
    }
}

fn listed(list: &[String], name: &str) -> bool {
    list.iter().any(|n| n == name)
}

/// `{0.attr}` or `{name[key]}`: a str.format field that walks attributes or items.
fn has_format_field_access(s: &str) -> bool {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'{' {
            if bytes.get(i + 1) == Some(&b'{') {
                i += 2;
                continue;
            }
            // CPython's field name is every character up to the first of . [ ! : }
            // (`{ a.x}` and `{a-b.x}` are fields named " a" and "a-b"), so scan to that.
            let mut j = i + 1;
            while j < bytes.len() && !matches!(bytes[j], b'.' | b'[' | b'!' | b':' | b'}') {
                j += 1;
            }
            if matches!(bytes.get(j), Some(b'.') | Some(b'[')) {
                return true;
            }
        }
        i += 1;
    }
    false
}

fn has_url(s: &str) -> bool {
    s.contains("://")
}

struct Checker<'a, 'o> {
    rules: &'a CheckRules,
    lines: &'a LineIndex<'a>,
    out: &'o mut Vec<Violation>,
    /// Bound name -> module it refers to.
    modules: HashMap<String, String>,
    depth: u32,
    too_deep: bool,
    input_calls: u32,
    input_in_loop: bool,
    loop_depth: u32,
    /// Directly in a class body (not inside a function defined there): an import here binds
    /// a class attribute (`C.json`), which the module-attribute rules would not see.
    in_class_body: bool,
}

impl Checker<'_, '_> {
    fn report(&mut self, rule: String, detail: impl Into<String>, range: TextRange) {
        push(
            self.out,
            self.lines,
            rule,
            detail.into(),
            range.start().to_usize(),
        );
    }

    /// Enter one node level; false (and a violation, once) when too deep to descend.
    fn enter(&mut self, range: TextRange) -> bool {
        self.depth += 1;
        if self.depth > self.rules.max_nesting_depth {
            if !self.too_deep {
                self.too_deep = true;
                let max = self.rules.max_nesting_depth;
                self.report(
                    "nesting_too_deep".into(),
                    format!("syntax nests deeper than {max}"),
                    range,
                );
            }
            return false;
        }
        true
    }

    fn is_denied_call(&self, name: &str) -> bool {
        ALWAYS_DENIED_CALLS.contains(&name) || listed(&self.rules.denied_calls, name)
    }

    fn is_denied_name(&self, name: &str) -> bool {
        (self.rules.deny_dunder && name.starts_with("__"))
            || ALWAYS_DENIED_NAMES.contains(&name)
            || listed(&self.rules.denied_names, name)
    }

    /// A name being bound (def, class, parameter, alias, handler, pattern capture, global).
    fn check_binding(&mut self, name: &str, range: TextRange) {
        if self.is_denied_name(name) || self.is_denied_call(name) || name == "input" {
            self.report(
                format!("name_not_allowed:{name}"),
                "binding a denied name",
                range,
            );
        }
    }

    /// A name being read or stored. `in_call`: it is the callee of a call expression.
    /// `as_base`: it is the object of an attribute access (`json.loads`).
    fn check_name(&mut self, name: &str, range: TextRange, in_call: bool, as_base: bool) {
        if self.is_denied_name(name) {
            self.report(format!("name_not_allowed:{name}"), "denied name", range);
        }
        if self.is_denied_call(name) {
            if in_call {
                self.report(format!("call_not_allowed:{name}"), "denied call", range);
            } else {
                self.report(
                    format!("name_not_allowed:{name}"),
                    "denied callable used as a value",
                    range,
                );
            }
        }
        if name == "input" {
            if in_call {
                self.input_calls += 1;
                if self.loop_depth > 0 {
                    self.input_in_loop = true;
                }
            } else {
                self.report(
                    "name_not_allowed:input".into(),
                    "input may only be called directly",
                    range,
                );
            }
        }
        if !as_base && self.modules.contains_key(name) {
            self.report(
                format!("module_reference_not_allowed:{name}"),
                "a module may only be used as module.attribute",
                range,
            );
        }
    }

    fn check_attr(&mut self, attr: &str, range: TextRange) {
        if (self.rules.deny_dunder && attr.starts_with("__"))
            || stdlib::always_denied_attribute(attr)
            || listed(&self.rules.denied_attributes, attr)
        {
            self.report(
                format!("attr_not_allowed:{attr}"),
                "denied attribute",
                range,
            );
        }
    }

    fn check_text(&mut self, text: &str, range: TextRange) {
        if self.rules.deny_url_literals && has_url(text) {
            self.report(
                "network_literal_blocked".into(),
                "URL in a string literal",
                range,
            );
        }
        if has_format_field_access(text) {
            self.report(
                "format_field_access".into(),
                "str.format field with attribute or index access",
                range,
            );
        }
    }

    fn check_import(&mut self, stmt: &Stmt) {
        match stmt {
            Stmt::Import(import) => {
                for alias in &import.names {
                    let name = alias.name.id.as_str();
                    let top = name.split('.').next().unwrap_or(name);
                    if !listed(&self.rules.allowed_imports, top) {
                        self.report(
                            format!("import_not_allowed:{top}"),
                            "module not allowed",
                            alias.range,
                        );
                    } else if name.contains('.') && !listed(&self.rules.allowed_imports, name) {
                        self.report(
                            format!("import_not_allowed:{name}"),
                            "submodule not allowed",
                            alias.range,
                        );
                    }
                    if let Some(asname) = &alias.asname {
                        self.check_binding(asname.id.as_str(), asname.range);
                    }
                }
            }
            Stmt::ImportFrom(import) => {
                let module = import.module.as_ref().map(|m| m.id.as_str()).unwrap_or("");
                let top = module.split('.').next().unwrap_or(module);
                if import.level > 0 {
                    self.report(
                        "import_not_allowed:relative".into(),
                        "relative import",
                        import.range,
                    );
                    return;
                }
                if !listed(&self.rules.allowed_imports, top) {
                    let top = if top.is_empty() { "relative" } else { top };
                    self.report(
                        format!("import_not_allowed:{top}"),
                        "module not allowed",
                        import.range,
                    );
                    return;
                }
                if module.contains('.') && !listed(&self.rules.allowed_imports, module) {
                    self.report(
                        format!("import_not_allowed:{module}"),
                        "submodule not allowed",
                        import.range,
                    );
                    return;
                }
                for alias in &import.names {
                    let name = alias.name.id.as_str();
                    if name == "*" {
                        self.report(
                            format!("import_star_not_allowed:{module}"),
                            "star import",
                            alias.range,
                        );
                        continue;
                    }
                    if !module_attr_allowed(module, name) {
                        self.report(
                            format!("import_not_allowed:{module}.{name}"),
                            "name outside the module's safe list",
                            alias.range,
                        );
                    }
                    self.check_attr(name, alias.name.range);
                    let bound = alias.asname.as_ref().unwrap_or(&alias.name);
                    self.check_binding(bound.id.as_str(), bound.range);
                }
            }
            _ => {}
        }
    }
}

impl<'a> Visitor<'a> for Checker<'_, '_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if !self.enter(stmt.range()) {
            self.depth -= 1;
            return;
        }
        let mut looping = false;
        let outer_in_class = self.in_class_body;
        match stmt {
            Stmt::FunctionDef(f) => {
                if !DEFINABLE_DUNDERS.contains(&f.name.id.as_str()) {
                    self.check_binding(f.name.id.as_str(), f.name.range);
                }
                looping = true;
                self.in_class_body = false;
            }
            Stmt::ClassDef(c) => {
                self.check_binding(c.name.id.as_str(), c.name.range);
                self.in_class_body = true;
            }
            Stmt::Import(_) | Stmt::ImportFrom(_) => {
                if self.in_class_body {
                    self.report(
                        "import_in_class_body".into(),
                        "an import in a class body makes the module a class attribute (C.json.decoder ...), out of reach of the module rules; import at module level",
                        stmt.range(),
                    );
                }
                self.check_import(stmt)
            }
            Stmt::Global(g) => {
                for name in &g.names {
                    self.check_binding(name.id.as_str(), name.range);
                }
            }
            Stmt::Nonlocal(n) => {
                for name in &n.names {
                    self.check_binding(name.id.as_str(), name.range);
                }
            }
            Stmt::For(_) | Stmt::While(_) => looping = true,
            _ => {}
        }
        if looping {
            self.loop_depth += 1;
        }
        visitor::walk_stmt(self, stmt);
        self.in_class_body = outer_in_class;
        if looping {
            self.loop_depth -= 1;
        }
        self.depth -= 1;
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if !self.enter(expr.range()) {
            self.depth -= 1;
            return;
        }
        let mut looping = false;
        match expr {
            Expr::Name(name) => self.check_name(name.id.as_str(), name.range, false, false),
            Expr::Attribute(attr) => {
                let a = attr.attr.id.as_str();
                self.check_attr(a, attr.attr.range);
                if a == "format" && !matches!(*attr.value, Expr::StringLiteral(_)) {
                    self.report(
                        "attr_not_allowed:format".into(),
                        ".format is allowed only on a string literal",
                        attr.attr.range,
                    );
                }
                if let Expr::Name(base) = &*attr.value {
                    if let Some(module) = self.modules.get(base.id.as_str()).cloned() {
                        if !module_attr_allowed(&module, a) {
                            self.report(
                                format!("module_attr_not_allowed:{module}.{a}"),
                                "attribute outside the module's safe list",
                                attr.attr.range,
                            );
                        }
                    }
                    self.check_name(base.id.as_str(), base.range, false, true);
                    self.depth -= 1;
                    return;
                }
            }
            Expr::Call(call) => {
                if let Expr::Name(func) = &*call.func {
                    self.check_name(func.id.as_str(), func.range, true, false);
                    self.visit_arguments(&call.arguments);
                    self.depth -= 1;
                    return;
                }
            }
            Expr::StringLiteral(s) => self.check_text(s.value.to_str(), s.range),
            Expr::FString(f) => {
                // The literal text of all parts, joined, so `"ht" f"tp://{x}"` is one URL.
                let mut text = String::new();
                for part in &f.value {
                    match part {
                        ast::FStringPart::Literal(lit) => text.push_str(lit.as_str()),
                        ast::FStringPart::FString(fs) => {
                            for element in &fs.elements {
                                match element {
                                    ast::InterpolatedStringElement::Literal(lit) => {
                                        text.push_str(&lit.value)
                                    }
                                    ast::InterpolatedStringElement::Interpolation(_) => {
                                        text.push('\u{0}')
                                    }
                                }
                            }
                        }
                    }
                }
                self.check_text(&text, f.range);
            }
            Expr::BytesLiteral(b) => {
                let bytes: Vec<u8> = b.value.bytes().collect();
                self.check_text(&String::from_utf8_lossy(&bytes), b.range);
            }
            Expr::Lambda(_)
            | Expr::ListComp(_)
            | Expr::SetComp(_)
            | Expr::DictComp(_)
            | Expr::Generator(_) => looping = true,
            _ => {}
        }
        if looping {
            self.loop_depth += 1;
        }
        visitor::walk_expr(self, expr);
        if looping {
            self.loop_depth -= 1;
        }
        self.depth -= 1;
    }

    fn visit_pattern(&mut self, pattern: &'a Pattern) {
        if !self.enter(pattern.range()) {
            self.depth -= 1;
            return;
        }
        match pattern {
            Pattern::MatchAs(p) => {
                if let Some(name) = &p.name {
                    self.check_binding(name.id.as_str(), name.range);
                }
            }
            Pattern::MatchStar(p) => {
                if let Some(name) = &p.name {
                    self.check_binding(name.id.as_str(), name.range);
                }
            }
            Pattern::MatchMapping(p) => {
                if let Some(name) = &p.rest {
                    self.check_binding(name.id.as_str(), name.range);
                }
            }
            _ => {}
        }
        visitor::walk_pattern(self, pattern);
        self.depth -= 1;
    }

    fn visit_pattern_keyword(&mut self, keyword: &'a ast::PatternKeyword) {
        // `case C(attr=x)` reads `subject.attr` with getattr.
        self.check_attr(keyword.attr.id.as_str(), keyword.attr.range);
        visitor::walk_pattern_keyword(self, keyword);
    }

    fn visit_parameter(&mut self, parameter: &'a ast::Parameter) {
        self.check_binding(parameter.name.id.as_str(), parameter.name.range);
        visitor::walk_parameter(self, parameter);
    }

    fn visit_keyword(&mut self, keyword: &'a ast::Keyword) {
        if let Some(arg) = &keyword.arg {
            if self.rules.deny_dunder && arg.id.starts_with("__") {
                self.report(
                    format!("name_not_allowed:{}", arg.id),
                    "dunder keyword argument",
                    arg.range,
                );
            }
        }
        visitor::walk_keyword(self, keyword);
    }

    fn visit_except_handler(&mut self, handler: &'a ast::ExceptHandler) {
        let ast::ExceptHandler::ExceptHandler(h) = handler;
        if let Some(name) = &h.name {
            self.check_binding(name.id.as_str(), name.range);
        }
        visitor::walk_except_handler(self, handler);
    }

    fn visit_type_param(&mut self, type_param: &'a ast::TypeParam) {
        let name = match type_param {
            ast::TypeParam::TypeVar(t) => &t.name,
            ast::TypeParam::TypeVarTuple(t) => &t.name,
            ast::TypeParam::ParamSpec(t) => &t.name,
        };
        self.check_binding(name.id.as_str(), name.range);
        visitor::walk_type_param(self, type_param);
    }

    fn visit_interpolated_string_element(&mut self, element: &'a ast::InterpolatedStringElement) {
        if let ast::InterpolatedStringElement::Literal(lit) = element {
            self.check_text(&lit.value, lit.range);
        }
        visitor::walk_interpolated_string_element(self, element);
    }
}
