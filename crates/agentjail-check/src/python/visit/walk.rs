//! The walk over ruff's AST: the statement- and expression-level rules run before a node's
//! children are visited, the nesting depth, the class-body and loop state, and the
//! `Visitor` impl that routes each node kind to its rules. Separate so the rules themselves
//! (`visit.rs`, `calls.rs`, `imports.rs`) stay free of traversal order.

use super::{Base, Checker};
use crate::python::prepass::last_name;
use crate::python::DEFINABLE_DUNDERS;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Pattern, Stmt};
use ruff_text_size::Ranged;

impl Checker<'_, '_> {
    /// Statement-level rules before the statement's children are walked.
    fn enter_stmt(&mut self, stmt: &Stmt) {
        match stmt {
            Stmt::FunctionDef(f) => {
                let name = f.name.id.as_str();
                if !DEFINABLE_DUNDERS.contains(&name) {
                    self.check_binding(name, f.name.range);
                    if self.in_class_body {
                        self.check_attribute(name, Base::Binding, f.name.range);
                    }
                }
                self.record_binding(true, name);
            }
            Stmt::ClassDef(c) => {
                self.check_binding(c.name.id.as_str(), c.name.range);
                if self.in_class_body {
                    self.check_attribute(c.name.id.as_str(), Base::Binding, c.name.range);
                }
                self.record_binding(true, c.name.id.as_str());
                for base in c.bases() {
                    if matches!(base, Expr::Name(_) | Expr::Attribute(_)) {
                        self.factory_ok.insert(self.ok_key(base.range()));
                    }
                }
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
            Stmt::Global(ast::StmtGlobal { names, .. })
            | Stmt::Nonlocal(ast::StmtNonlocal { names, .. }) => {
                for name in names {
                    self.check_binding(name.id.as_str(), name.range);
                }
            }
            _ => {}
        }
    }

    /// Expression-level rules; true when the children were already visited.
    fn enter_expr(&mut self, expr: &Expr) -> bool {
        match expr {
            Expr::Name(name) => {
                let id = name.id.as_str();
                self.check_name(id, name.range, false, false);
                if !name.ctx.is_load() {
                    self.record_binding(false, id);
                    if self.in_class_body && name.ctx.is_store() {
                        self.check_attribute(id, Base::Binding, name.range);
                    }
                }
            }
            Expr::Attribute(attr) => {
                self.visit_attribute(attr, false, false);
                return true;
            }
            Expr::Call(call) => {
                self.visit_call(call);
                return true;
            }
            Expr::StringLiteral(s) => {
                self.check_text(s.value.to_str(), s.range);
                if self.in_annotation > 0 {
                    self.check_string_annotation(s);
                }
            }
            Expr::Subscript(sub) if self.in_annotation > 0 => {
                if let Some(kind @ ("Literal" | "Annotated")) = last_name(&sub.value) {
                    self.visit_data_subscript(sub, kind == "Annotated");
                    return true;
                }
            }
            Expr::FString(f) => self.check_text(&fstring_text(f), f.range),
            Expr::BytesLiteral(b) => {
                let bytes: Vec<u8> = b.value.bytes().collect();
                self.check_text(&String::from_utf8_lossy(&bytes), b.range);
            }
            _ => {}
        }
        false
    }

    /// `Literal['a b']` and the metadata of `Annotated[T, 'unit']` are data, not types:
    /// typing never evaluates those strings, so they are checked as plain strings.
    fn visit_data_subscript(&mut self, sub: &ast::ExprSubscript, annotated: bool) {
        self.visit_expr(&sub.value);
        let outer = self.in_annotation;
        match (&*sub.slice, annotated) {
            (Expr::Tuple(t), true) => {
                for (i, elt) in t.elts.iter().enumerate() {
                    self.in_annotation = if i == 0 { outer } else { 0 };
                    self.visit_expr(elt);
                }
            }
            (slice, _) => {
                self.in_annotation = if annotated { outer } else { 0 };
                self.visit_expr(slice);
            }
        }
        self.in_annotation = outer;
    }

    /// `f(**{'name': v})`: the literal keys are keyword names; `**{**{...}}` nests.
    fn check_unpacked_keywords(&mut self, expr: &Expr) {
        if let Expr::Dict(dict) = expr {
            for item in &dict.items {
                match &item.key {
                    Some(Expr::StringLiteral(s)) => {
                        self.check_attribute(s.value.to_str(), Base::Keyword, s.range)
                    }
                    Some(_) => {}
                    None => self.check_unpacked_keywords(&item.value),
                }
            }
        }
    }
}

/// The literal text of all parts of an f-string, joined (`"ht" f"tp://{x}"` is one URL).
fn fstring_text(f: &ast::ExprFString) -> String {
    let mut text = String::new();
    for part in &f.value {
        match part {
            ast::FStringPart::Literal(lit) => text.push_str(lit.as_str()),
            ast::FStringPart::FString(fs) => {
                for element in &fs.elements {
                    match element {
                        ast::InterpolatedStringElement::Literal(lit) => text.push_str(&lit.value),
                        ast::InterpolatedStringElement::Interpolation(_) => text.push('\u{0}'),
                    }
                }
            }
        }
    }
    text
}

/// A comprehension, lambda or function body: its own scope, not the class body's.
fn is_scope(expr: &Expr) -> bool {
    matches!(
        expr,
        Expr::Lambda(_)
            | Expr::ListComp(_)
            | Expr::SetComp(_)
            | Expr::DictComp(_)
            | Expr::Generator(_)
    )
}

impl<'a> Visitor<'a> for Checker<'_, '_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if !self.enter(stmt.range()) {
            self.depth -= 1;
            return;
        }
        self.enter_stmt(stmt);
        let looping = matches!(stmt, Stmt::FunctionDef(_) | Stmt::For(_) | Stmt::While(_));
        let outer_in_class = self.in_class_body;
        match stmt {
            Stmt::FunctionDef(_) => self.in_class_body = false,
            Stmt::ClassDef(_) => self.in_class_body = true,
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
        if self.enter_expr(expr) {
            self.depth -= 1;
            return;
        }
        let scope = is_scope(expr);
        let outer_in_class = self.in_class_body;
        if scope {
            self.loop_depth += 1;
            self.in_class_body = false;
        }
        visitor::walk_expr(self, expr);
        if scope {
            self.loop_depth -= 1;
            self.in_class_body = outer_in_class;
        }
        self.depth -= 1;
    }

    fn visit_annotation(&mut self, expr: &'a Expr) {
        self.allow_type_names(expr);
        self.in_annotation += 1;
        visitor::walk_annotation(self, expr);
        self.in_annotation -= 1;
    }

    fn visit_pattern(&mut self, pattern: &'a Pattern) {
        if !self.enter(pattern.range()) {
            self.depth -= 1;
            return;
        }
        let captured = match pattern {
            Pattern::MatchAs(p) => p.name.as_ref(),
            Pattern::MatchStar(p) => p.name.as_ref(),
            Pattern::MatchMapping(p) => p.rest.as_ref(),
            _ => None,
        };
        if let Some(name) = captured {
            self.check_binding(name.id.as_str(), name.range);
            self.record_binding(false, name.id.as_str());
        }
        visitor::walk_pattern(self, pattern);
        self.depth -= 1;
    }

    fn visit_pattern_keyword(&mut self, keyword: &'a ast::PatternKeyword) {
        // `case C(attr=x)` reads `subject.attr` with getattr: an attribute access with no
        // `.` in the source, so every attribute rule applies (`case str(format=f)`).
        self.check_attribute(keyword.attr.id.as_str(), Base::Pattern, keyword.attr.range);
        visitor::walk_pattern_keyword(self, keyword);
    }

    fn visit_parameter(&mut self, parameter: &'a ast::Parameter) {
        self.check_binding(parameter.name.id.as_str(), parameter.name.range);
        self.record_binding(false, parameter.name.id.as_str());
        visitor::walk_parameter(self, parameter);
    }

    fn visit_keyword(&mut self, keyword: &'a ast::Keyword) {
        match &keyword.arg {
            Some(arg) => self.check_attribute(arg.id.as_str(), Base::Keyword, arg.range),
            // A `**` of a literal dict names its keywords; of anything else they are not
            // statically known (the jail contains what they reach).
            None => self.check_unpacked_keywords(&keyword.value),
        }
        visitor::walk_keyword(self, keyword);
    }

    fn visit_except_handler(&mut self, handler: &'a ast::ExceptHandler) {
        let ast::ExceptHandler::ExceptHandler(h) = handler;
        if let Some(name) = &h.name {
            self.check_binding(name.id.as_str(), name.range);
            self.record_binding(false, name.id.as_str());
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
