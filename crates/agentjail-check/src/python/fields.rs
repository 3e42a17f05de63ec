//! Field names handed to a field-name factory ([`stdlib::FIELD_NAME_FACTORIES`]): the
//! attribute names a `namedtuple`, `make_dataclass`, `NamedTuple` or functional-API enum
//! will have, read from the call's literals.
//!
//! [`stdlib::FIELD_NAME_FACTORIES`]: crate::stdlib::FIELD_NAME_FACTORIES

use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::{Ranged, TextRange};

/// Names read from the call, each with the range of the literal it came from, and the
/// ranges of arguments that are not literals (their names cannot be known).
#[derive(Default)]
pub(super) struct FieldNames {
    pub names: Vec<(String, TextRange)>,
    pub dynamic: Vec<TextRange>,
}

/// The keyword that may carry the names instead of the positional argument.
const NAME_KEYWORDS: [&str; 3] = ["field_names", "fields", "names"];

/// Read the field names of a factory call whose names are positional argument `index`.
/// A call with neither that argument nor a names keyword is a value lookup
/// (`Color(1)`) or a class with keyword fields (`NamedTuple('P', x=int)`, whose keyword
/// names the keyword rule checks): nothing to read.
pub(super) fn field_names(call: &ast::ExprCall, index: usize) -> FieldNames {
    let mut out = FieldNames::default();
    let args = &call.arguments;
    if args.args.iter().any(|a| matches!(a, Expr::Starred(_))) {
        out.dynamic.push(call.range());
        return out;
    }
    if let Some(arg) = args.args.get(index) {
        read(arg, &mut out);
    }
    for keyword in &args.keywords {
        match keyword.arg.as_ref().map(|a| a.id.as_str()) {
            Some(k) if NAME_KEYWORDS.contains(&k) => read(&keyword.value, &mut out),
            // make_dataclass(namespace={...}): every key becomes a class attribute.
            Some("namespace") => read_keys(&keyword.value, &mut out),
            // `**options` could carry field_names/names/namespace.
            None => out.dynamic.push(keyword.range()),
            _ => {}
        }
    }
    out
}

/// `'a b'`, `'a, b'`, `['a', ('b', int)]`, `{'a': 1}`: each name; anything else is dynamic.
fn read(expr: &Expr, out: &mut FieldNames) {
    match expr {
        Expr::StringLiteral(s) => split_names(s.value.to_str(), s.range(), out),
        Expr::List(ast::ExprList { elts, .. })
        | Expr::Tuple(ast::ExprTuple { elts, .. })
        | Expr::Set(ast::ExprSet { elts, .. }) => {
            for elt in elts {
                match elt {
                    Expr::StringLiteral(s) => out
                        .names
                        .push((s.value.to_str().trim().to_string(), s.range())),
                    Expr::Tuple(ast::ExprTuple { elts: pair, .. })
                    | Expr::List(ast::ExprList { elts: pair, .. }) => match pair.first() {
                        Some(Expr::StringLiteral(s)) => out
                            .names
                            .push((s.value.to_str().trim().to_string(), s.range())),
                        _ => out.dynamic.push(elt.range()),
                    },
                    _ => out.dynamic.push(elt.range()),
                }
            }
        }
        Expr::Dict(_) => read_keys(expr, out),
        Expr::NoneLiteral(_) => {}
        _ => out.dynamic.push(expr.range()),
    }
}

/// The string keys of a dict literal; `**` entries and other keys are dynamic.
fn read_keys(expr: &Expr, out: &mut FieldNames) {
    let Expr::Dict(dict) = expr else {
        if !matches!(expr, Expr::NoneLiteral(_)) {
            out.dynamic.push(expr.range());
        }
        return;
    };
    for item in &dict.items {
        match &item.key {
            Some(Expr::StringLiteral(s)) => out
                .names
                .push((s.value.to_str().trim().to_string(), s.range())),
            Some(other) => out.dynamic.push(other.range()),
            None => out.dynamic.push(item.value.range()),
        }
    }
}

/// namedtuple and Enum split a names string on commas and whitespace.
fn split_names(text: &str, range: TextRange, out: &mut FieldNames) {
    for name in text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|n| !n.is_empty())
    {
        out.names.push((name.to_string(), range));
    }
}
