//! Reading stdin "as any node program does", and nothing more: the exact shapes in which the
//! always-denied `fs` module and `process` global may appear because they read the program's
//! stdin. agentjail's runner gives the program an `fs` whose only member is a `readFileSync`
//! that reads fd 0, and a `process` whose only members are a `stdin` with `on`/`once`,
//! `setEncoding` and `resume`, a `stdout` with `write` (to fd 1) and `exit`
//! (crates/agentjail-engine/src/runner/node.cjs); the real module
//! and object never reach the program. Everything else about `fs` stays
//! `import_not_allowed:fs` and everything else about `process` stays
//! `name_not_allowed:process`.
//!
//! Allowed, with `A` the literal `0` or the literal `"/dev/stdin"` (and an optional second
//! argument, the encoding or options):
//!
//! * `require("fs").readFileSync(A, ...)` (also `"node:fs"`);
//! * `const fs = require("fs")` when `fs` is used, and every use is a call
//!   `fs.readFileSync(A, ...)`;
//! * `const { readFileSync } = require("fs")` (or `{ readFileSync: r }`) when every use of the
//!   binding is a call `readFileSync(A, ...)` (and there is one);
//! * `process.stdin.on(E, f)` / `.once(E, f)` with `E` the literal `"data"` or `"end"`,
//!   `process.stdin.setEncoding(S)` with a string literal `S`, `process.stdin.resume()`;
//! * and to answer as node programs on judges do: `process.stdout.write(chunk)` (then optionally
//!   the encoding and a callback) and `process.exit()` / `process.exit(code)`.
//!
//! A flat pass over oxc's node list (no recursion), run once before the walk; the walk asks
//! only "is this `require(...)` call / this `process` reference one of them".

use oxc_ast::ast::*;
use oxc_ast::AstKind;
use oxc_semantic::Semantic;
use oxc_span::{GetSpan, Span};
use oxc_syntax::node::NodeId;
use oxc_syntax::symbol::SymbolId;
use std::collections::HashSet;

/// The `require("fs")` calls and `process` references that only read stdin.
#[derive(Default)]
pub(super) struct StdinReads {
    requires: HashSet<Span>,
    process_refs: HashSet<Span>,
}

impl StdinReads {
    pub(super) fn new(semantic: &Semantic<'_>) -> Self {
        let mut found = StdinReads::default();
        let nodes = semantic.nodes();
        for node in nodes.iter() {
            match node.kind() {
                AstKind::CallExpression(call)
                    if is_require_fs(semantic, call)
                        && require_reads_only_stdin(semantic, node.id(), call) =>
                {
                    found.requires.insert(call.span);
                }
                AstKind::IdentifierReference(id)
                    if id.name == "process"
                        && is_global(semantic, id)
                        && process_is_stand_in_call(semantic, node.id(), id) =>
                {
                    found.process_refs.insert(id.span);
                }
                _ => {}
            }
        }
        found
    }

    /// Is this `require(...)` call one that only reads stdin?
    pub(super) fn allows_require(&self, call: Span) -> bool {
        self.requires.contains(&call)
    }

    /// Is this `process` reference the root of an allowed `process.stdin.<method>(...)`?
    pub(super) fn allows_process(&self, reference: Span) -> bool {
        self.process_refs.contains(&reference)
    }
}

/// A name that resolves to no declaration of the program (a global).
fn is_global(semantic: &Semantic<'_>, id: &IdentifierReference<'_>) -> bool {
    id.reference_id.get().is_none_or(|reference| {
        semantic
            .scoping()
            .get_reference(reference)
            .symbol_id()
            .is_none()
    })
}

/// `require("fs")` / `require("node:fs")`, with the global `require` (binding a name
/// `require` is denied anyway).
fn is_require_fs(semantic: &Semantic<'_>, call: &CallExpression<'_>) -> bool {
    let Expression::Identifier(callee) = &call.callee else {
        return false;
    };
    if callee.name != "require" || !is_global(semantic, callee) || call.optional {
        return false;
    }
    matches!(call.arguments.as_slice(),
        [Argument::StringLiteral(s)] if s.value == "fs" || s.value == "node:fs")
}

/// The arguments of a stdin read: the literal `0` or `"/dev/stdin"`, then at most one more
/// argument (the encoding or an options object), no spread.
fn is_stdin_read_call(call: &CallExpression<'_>) -> bool {
    if call.optional {
        return false;
    }
    let first_ok = |a: &Argument<'_>| match a {
        Argument::NumericLiteral(n) => n.value == 0.0,
        Argument::StringLiteral(s) => s.value == "/dev/stdin",
        _ => false,
    };
    match call.arguments.as_slice() {
        [first] => first_ok(first),
        [first, second] => first_ok(first) && !matches!(second, Argument::SpreadElement(_)),
        _ => false,
    }
}

/// `node` (a `require("fs")` call) is used only to read stdin: called through directly, or
/// bound by a `const` whose every use is a stdin read.
fn require_reads_only_stdin(
    semantic: &Semantic<'_>,
    node: NodeId,
    call: &CallExpression<'_>,
) -> bool {
    let nodes = semantic.nodes();
    let parent = nodes.parent_id(node);
    match nodes.kind(parent) {
        // require("fs").readFileSync(A, ...)
        AstKind::StaticMemberExpression(m) => {
            m.object.span() == call.span
                && m.property.name == "readFileSync"
                && matches!(nodes.parent_kind(parent),
                    AstKind::CallExpression(c) if c.callee.span() == m.span && is_stdin_read_call(c))
        }
        AstKind::VariableDeclarator(d) => {
            let is_init = d.init.as_ref().is_some_and(|e| e.span() == call.span);
            let is_const = matches!(nodes.parent_kind(parent),
                AstKind::VariableDeclaration(v) if v.kind == VariableDeclarationKind::Const);
            is_init && is_const && binding_reads_only_stdin(semantic, &d.id)
        }
        _ => false,
    }
}

/// `const fs = ...` used only as `fs.readFileSync(A, ...)`, or `const { readFileSync } = ...`
/// (no other key, no rest, no default) used only as `readFileSync(A, ...)`.
fn binding_reads_only_stdin(semantic: &Semantic<'_>, pattern: &BindingPattern<'_>) -> bool {
    match pattern {
        BindingPattern::BindingIdentifier(b) => b
            .symbol_id
            .get()
            .is_some_and(|s| every_use(semantic, s, Shape::Namespace)),
        BindingPattern::ObjectPattern(p) => {
            p.rest.is_none()
                && !p.properties.is_empty()
                && p.properties.iter().all(|prop| {
                    let key_ok = !prop.computed
                        && matches!(&prop.key,
                            PropertyKey::StaticIdentifier(k) if k.name == "readFileSync");
                    let BindingPattern::BindingIdentifier(b) = &prop.value else {
                        return false;
                    };
                    key_ok
                        && b.symbol_id
                            .get()
                            .is_some_and(|s| every_use(semantic, s, Shape::Function))
                })
        }
        _ => false,
    }
}

#[derive(Clone, Copy)]
enum Shape {
    /// `x.readFileSync(A, ...)`
    Namespace,
    /// `x(A, ...)`
    Function,
}

/// `symbol` is declared once, used at least once (a `require("fs")` that reads nothing is no
/// stdin read), and every reference is a read in `shape`.
fn every_use(semantic: &Semantic<'_>, symbol: SymbolId, shape: Shape) -> bool {
    let scoping = semantic.scoping();
    let nodes = semantic.nodes();
    if !scoping.symbol_redeclarations(symbol).is_empty() {
        return false;
    }
    let mut uses = scoping.get_resolved_references(symbol).peekable();
    uses.peek().is_some() && uses.all(|reference| {
        if reference.is_write() {
            return false;
        }
        let at = reference.node_id();
        let span = nodes.kind(at).span();
        let parent = nodes.parent_id(at);
        match (shape, nodes.kind(parent)) {
            (Shape::Namespace, AstKind::StaticMemberExpression(m)) => {
                m.object.span() == span
                    && m.property.name == "readFileSync"
                    && matches!(nodes.parent_kind(parent),
                        AstKind::CallExpression(c) if c.callee.span() == m.span && is_stdin_read_call(c))
            }
            (Shape::Function, AstKind::CallExpression(c)) => {
                c.callee.span() == span && is_stdin_read_call(c)
            }
            _ => false,
        }
    })
}

/// `process` (the global) as the root of one of the stand-in's calls: stdin's
/// `process.stdin.on|once("data"|"end", f)`, `process.stdin.setEncoding("...")`,
/// `process.stdin.resume()`; stdout's `process.stdout.write(chunk[, encoding][, callback])`;
/// and
/// `process.exit([code])`. Always a direct call (no `?.`, no spread, the member never taken
/// as a value), so nothing of the stand-in but these calls is ever named.
fn process_is_stand_in_call(
    semantic: &Semantic<'_>,
    node: NodeId,
    id: &IdentifierReference<'_>,
) -> bool {
    let nodes = semantic.nodes();
    let member_id = nodes.parent_id(node);
    let AstKind::StaticMemberExpression(member) = nodes.kind(member_id) else {
        return false;
    };
    if member.object.span() != id.span {
        return false;
    }
    let no_spread =
        |args: &[Argument<'_>]| !args.iter().any(|a| matches!(a, Argument::SpreadElement(_)));
    if member.property.name == "exit" {
        let AstKind::CallExpression(call) = nodes.parent_kind(member_id) else {
            return false;
        };
        return call.callee.span() == member.span
            && !call.optional
            && call.arguments.len() <= 1
            && no_spread(&call.arguments);
    }
    let stream = member.property.name.as_str();
    if stream != "stdin" && stream != "stdout" {
        return false;
    }
    let method_id = nodes.parent_id(member_id);
    let AstKind::StaticMemberExpression(method) = nodes.kind(method_id) else {
        return false;
    };
    if method.object.span() != member.span {
        return false;
    }
    let AstKind::CallExpression(call) = nodes.parent_kind(method_id) else {
        return false;
    };
    if call.callee.span() != method.span || call.optional {
        return false;
    }
    match (
        stream,
        method.property.name.as_str(),
        call.arguments.as_slice(),
    ) {
        ("stdin", "on" | "once", [Argument::StringLiteral(event), listener]) => {
            matches!(event.value.as_str(), "data" | "end")
                && !matches!(listener, Argument::SpreadElement(_))
        }
        ("stdin", "setEncoding", [Argument::StringLiteral(_)]) => true,
        ("stdin", "resume", []) => true,
        ("stdout", "write", args) => (1..=3).contains(&args.len()) && no_spread(args),
        _ => false,
    }
}
