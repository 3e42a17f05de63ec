//! The numeric proof behind `computed_member_not_allowed`: which computed keys can only be
//! numbers (literals, arithmetic, pristine `Math.*`/`Number.*`, and variables every write of
//! which is numeric). Separate from the rules because it is a small fixed-point analysis
//! over oxc's semantic data (symbols, references), with its own depth bound, that the
//! checker only asks one question of.

use super::{NUMERIC_FUNCTIONS, NUMERIC_NAMESPACES};
use oxc_ast::ast::*;
use oxc_ast::AstKind;
use oxc_semantic::Semantic;
use oxc_syntax::operator::{AssignmentOperator, BinaryOperator, LogicalOperator, UnaryOperator};
use oxc_syntax::symbol::SymbolId;
use std::collections::{HashMap, HashSet};

/// What the program lets the checker assume about numbers, for computed member keys.
pub(super) struct NumericFacts {
    /// Variables proved to hold only numbers (computed once, on first need).
    numeric_symbols: Option<HashSet<SymbolId>>,
    /// Per global in [`NUMERIC_NAMESPACES`]: used only as `Name.member` and never declared.
    pristine: HashMap<&'static str, bool>,
}

/// Deepest expression the numeric proof looks into before giving up (and denying).
const NUMERIC_DEPTH: u32 = 32;

impl NumericFacts {
    pub(super) fn new(semantic: &Semantic<'_>) -> Self {
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

    pub(super) fn is_unresolved(
        &self,
        semantic: &Semantic<'_>,
        id: &IdentifierReference<'_>,
    ) -> bool {
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
    pub(super) fn is_key_safe(
        &mut self,
        semantic: &Semantic<'_>,
        key: &Expression<'_>,
        depth: u32,
    ) -> bool {
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
