//! The walk over oxc's AST: which node reaches which of the checker's judgements
//! (`checker.rs`), the nesting depth, and the scopes that change what `this`, `arguments`
//! and strict code mean (functions, arrows, classes). Separate so the judgements stay free
//! of traversal order, and the traversal reads as one table of node kinds.

use super::checker::{literal_text, Checker, Use};
use super::TIMERS;
use oxc_ast::ast::*;
use oxc_ast_visit::{walk, Visit};
use oxc_span::GetSpan;
use oxc_syntax::scope::ScopeFlags;

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
