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
//! The parser is ruff's, targeting the policy's `interpreter.python_version` (detected from
//! the interpreter when the policy does not name it, `policy::python`);
//! syntax newer than that is a `syntax_error`, because ruff's 3.12 reading of e.g. nested
//! f-string quotes differs from 3.11's. ruff normalises identifiers with NFKC exactly as
//! CPython does, so `ｅｖａｌ` reaches the rules as `eval`.
//!
//! The visitor sees every node: decorators, defaults, annotations, keyword arguments,
//! comprehensions, f-string expressions and format specs, match patterns, type parameters,
//! with-items, handlers, walrus targets, global/nonlocal names.
//!
//! An attribute can be named without a `.`, and every such place gets every attribute rule
//! (one function, `Checker::check_attribute`, with what the name is read from):
//! class-pattern keywords (`case str(format=f)` is `subject.format`, read with getattr);
//! names bound in a class body and field names given to `namedtuple`, `make_dataclass`,
//! `NamedTuple` or enum's functional API (they become attributes and `__match_args__`,
//! which `case C(x)` reads with getattr); keyword names, including the string keys of a
//! `**{...}` literal (a `**` of anything else is not statically known); string arguments of
//! pandas' `apply`/`agg`/`aggregate`/`transform` (method names looked up with getattr);
//! and string annotations, parsed and checked as the code typing evaluates. Format fields
//! (`{0.attr}`) walk attributes too: literal format strings are checked, `.format` is
//! allowed only on a literal, `format_map`/`vformat`/`string.Formatter` are denied;
//! `%`-formatting does only mapping lookups (`%(key)s` is `mapping['key']`) and needs no
//! rule. `operator.attrgetter`/`methodcaller` are denied by name.
//!
//! Rules:
//!
//! * `import_not_allowed:<module>` (`relative` for `from . import`), and for an allowed module
//!   a submodule or a name outside its safe list: `import_not_allowed:json.decoder`;
//!   `import_star_not_allowed:<module>` unless `allow_star_imports` and every name the star
//!   import binds (the tables' exports) passes the rules `module.name` and an import by name
//!   would and is not a module (`Checker::star_import`); the detail lists the allowed imports;
//! * `name_not_allowed:<n>` for denied names, dunder names, and a denied callable used as a
//!   value (`e = eval`, `@eval`, `f(x=exec)`, `lambda f=eval: ...`); `call_not_allowed:<n>`
//!   when called; `input` may only be called, never referenced (JSON mode); a field-name factory may
//!   only be called, subclassed or named in isinstance (`f = namedtuple` is denied);
//! * `attr_not_allowed:<a>` for denied and dunder attributes, frame/code/generator
//!   internals (`gi_frame`, `f_globals`, `tb_frame`, `mro`, ...), string evaluators
//!   (`eval`, `query`, `get_type_hints`, `_evaluate`, `attrgetter`, ...), an allowed
//!   package's object side doors (`a.ctypes`, `df.style`), `format_map`, and `.format` on
//!   anything but a string literal;
//! * `module_attr_not_allowed:<module>.<a>` for attributes of an imported module outside its
//!   safe list or denied for it (the detail says why and what to use), and for a module
//!   reached as an attribute (`np.lib`, `json.codecs`) that is not itself an allowed import;
//!   `module_reference_not_allowed:<name>` when a module object (an alias, or a module
//!   reached as an attribute) is used other than as `module.attr`, so it cannot be aliased
//!   past the attribute check;
//! * `field_names_not_literal:<factory>` when the field names of a field-name factory are
//!   not literals; `dynamic_method_name` when pandas would look up a method name the
//!   checker cannot read; `string_annotation` when an annotation string breaks a rule (the
//!   inner violations are reported too, positioned inside the string when it has no
//!   escapes or implicit concatenation);
//! * `format_field_access` for string literals with `{0.attr}` / `{0[key]}` fields;
//! * `network_literal_blocked` for URLs (`scheme://`) in any string, bytes or f-string part
//!   (after escape decoding), and for `http://`/`https://` anywhere in the source as the seed;
//! * `too_many_input_reads` above `max_input_reads`, or `input()` inside a loop, function,
//!   lambda or comprehension (where one call can read many times); with `input` only
//!   called, never referenced or rebound, this rule holds for the JSON contract only
//!   ([`OutputMode::Json`]: one payload line on stdin); in judge mode `input` is a builtin
//!   like any other;
//! * `syntax_error`, `nesting_too_deep`, `source_too_large`.
//!
//! A few names are denied whatever the policy says ([`ALWAYS_DENIED_CALLS`],
//! [`ALWAYS_DENIED_NAMES`], [`crate::stdlib::always_denied_attribute`]): each one is a
//! direct way around this checker, so a policy cannot re-enable it by omission.
//!
//! Stack safety: ruff's parser grows its own stack; our visitor stops descending at
//! `max_nesting_depth`; and the whole parse-check-drop runs under `stacker::maybe_grow` with
//! room proportional to the source length, because dropping a long left-deep chain such as
//! `1+1+1+...` recurses once per operator.

mod fields;
mod prepass;
mod visit;

use crate::stdlib::Modules;
use crate::CheckRules;
use crate::OutputMode;
use crate::Violation;
use prepass::Prepass;
use ruff_python_ast::visitor::Visitor;
use ruff_python_ast::PythonVersion;
use ruff_python_parser::{Mode, ParseOptions};
use visit::Checker;

/// Sources above this many bytes are refused without parsing.
pub const MAX_SOURCE_BYTES: usize = 1024 * 1024;

/// Called or referenced, these are denied under every policy: each runs code the checker
/// cannot see (`eval`, `exec`, `compile`, `__import__`), stops in a debugger or pager
/// (`breakpoint`, `help`), or is a `site` helper no job needs. `open` is not among them: what
/// it can reach is bounded by the jail (read-only binds, landlock, a writable /tmp only), so
/// whether a program may open files is the policy's choice (`check.denied_calls`; the
/// default policy denies it, data.toml allows it).
pub const ALWAYS_DENIED_CALLS: [&str; 11] = [
    "eval",
    "exec",
    "compile",
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
pub(crate) const DEFINABLE_DUNDERS: [&str; 8] = [
    "__init__", "__repr__", "__str__", "__len__", "__eq__", "__lt__", "__iter__", "__next__",
];

const SEED_URL_MARKERS: [&str; 2] = ["http://", "https://"];

/// Stack reserved for everything but node-depth recursion.
const BASE_STACK: usize = 512 * 1024;
/// Stack reserved per source byte (an AST can be at most about one level deep per byte).
const STACK_PER_BYTE: usize = 256;

/// Check Python source against the policy's rules, for [`DEFAULT_PYTHON`]. Returns every
/// violation, sorted; empty means the check passes. Never panics and never overflows the
/// stack.
pub fn check_source(code: &str, rules: &CheckRules) -> Vec<Violation> {
    check_source_for_version(code, rules, "")
}

/// The version parsed for when the policy names none: only a `Policy` built in code (tests)
/// has none, since the policy loader fills in the interpreter's detected version
/// (`policy::python`).
pub const DEFAULT_PYTHON: PythonVersion = PythonVersion::PY311;

/// As [`check_source`], parsing for the interpreter's version (`policy.interpreter
/// .python_version`, e.g. "3.12") and judging with that version's module tables: syntax
/// newer than the interpreter is a `syntax_error`. A version without tables (the loader
/// refuses those) is denied as `python_version_unsupported`, never judged with another
/// version's tables.
pub fn check_source_for_version(
    code: &str,
    rules: &CheckRules,
    python_version: &str,
) -> Vec<Violation> {
    check_source_in_mode(code, rules, python_version, OutputMode::Json)
}

/// As [`check_source_for_version`], for a program run in `mode`: the `input()` rule
/// (`too_many_input_reads`, `name_not_allowed:input`) exists because the JSON contract gives
/// one payload line on stdin, and holds in [`OutputMode::Json`] only.
pub fn check_source_in_mode(
    code: &str,
    rules: &CheckRules,
    python_version: &str,
    mode: OutputMode,
) -> Vec<Violation> {
    let given = python_version.trim();
    let name = if given.is_empty() {
        DEFAULT_PYTHON.to_string()
    } else {
        given.to_string()
    };
    match (name.parse::<PythonVersion>(), Modules::for_version(&name)) {
        (Ok(version), Some(tables)) => check_source_for(code, rules, version, tables, mode),
        _ => vec![Violation {
            rule: "python_version_unsupported".into(),
            detail: format!(
                "the interpreter is Python {name:?}; the checker has module tables for {}",
                crate::stdlib::supported_versions().join(", ")
            ),
            line: 0,
            column: 0,
        }],
    }
}

fn check_source_for(
    code: &str,
    rules: &CheckRules,
    version: PythonVersion,
    tables: Modules,
    mode: OutputMode,
) -> Vec<Violation> {
    if code.len() > MAX_SOURCE_BYTES {
        return vec![Violation::source_too_large(code.len(), MAX_SOURCE_BYTES)];
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
        check_parsed(code, rules, version, tables, mode, &lines, &mut out)
    });
    finish(&mut out);
    out
}

fn finish(out: &mut Vec<Violation>) {
    out.sort_by(|a, b| (a.line, a.column, &a.rule).cmp(&(b.line, b.column, &b.rule)));
    out.dedup();
}

/// Byte offset to 1-based line and character column.
pub(crate) struct LineIndex<'a> {
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

pub(crate) fn push(
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
    tables: Modules,
    mode: OutputMode,
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
            format!("{err} (the interpreter is Python {version})"),
            err.range.start().to_usize(),
        );
        return;
    }
    let Some(module) = parsed.try_into_module() else {
        push(out, lines, "syntax_error".into(), "not a module".into(), 0);
        return;
    };
    let body = &module.syntax().body;
    let pre = Prepass::new(body, rules, tables);
    let mut checker = Checker::new(rules, lines, out, code, version, pre);
    checker.input_rule = mode == OutputMode::Json;
    checker.visit_body(body);
    checker.finish_dispatch();
    let input_calls = checker.input_calls;
    let input_in_loop = checker.input_in_loop;
    if mode == OutputMode::Json && input_calls > rules.max_input_reads
        || (input_in_loop && input_calls > 0)
    {
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
