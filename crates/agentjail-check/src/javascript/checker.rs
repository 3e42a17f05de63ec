//! The checker's state over one program and the judgements behind each rule: what a name,
//! a member, a string, a module specifier, a write target or a timer call is allowed to be.
//! Separate from the walk (`visit.rs`), which only decides which AST node reaches which
//! judgement: a rule's logic reads in one place, and a new node kind cannot change it.

use super::numeric::NumericFacts;
use super::stdin::StdinReads;
use super::{
    push, JsRules, LineIndex, ALWAYS_DENIED_GLOBALS, ALWAYS_DENIED_MEMBERS, ALWAYS_DENIED_MODULES,
    WRAPPER_NAMES,
};
use crate::Violation;
use oxc_ast::ast::*;
use oxc_ast_visit::Visit;
use oxc_semantic::Semantic;
use oxc_span::{GetSpan, Span};

/// Where a name is used: its context decides which rule applies.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Use {
    /// Read or written as a value.
    Value,
    /// The callee of a call, `new` or tagged template.
    Call,
    /// The object of a static member access (`Math.floor`).
    MemberBase,
}

pub(super) struct Checker<'a, 'o, 's> {
    rules: &'a JsRules,
    lines: &'a LineIndex<'a>,
    out: &'o mut Vec<Violation>,
    semantic: &'s Semantic<'s>,
    pub(super) depth: u32,
    max_depth: u32,
    too_deep: bool,
    /// Inside a loop, function, arrow or class body: one `input()` there can read many lines.
    pub(super) repeat_depth: u32,
    input_calls: Vec<(u32, bool)>,
    /// Strict code here (a `"use strict"` directive or a class body).
    pub(super) strict: bool,
    /// `this` here is a receiver or `module.exports`, never the global object.
    pub(super) this_safe: bool,
    /// Inside a non-arrow function: `arguments` is that function's own, not the CommonJS
    /// wrapper's (whose `arguments[1]` is `require`).
    pub(super) own_arguments: bool,
    /// The member expression currently being visited as the object of another member
    /// (`X.prototype` in `X.prototype.slice`), or as a write target.
    pub(super) member_object: Option<Span>,
    /// The span of a `module`/`exports` identifier that roots an export assignment target.
    pub(super) export_root: Option<Span>,
    numeric: NumericFacts,
    /// The `require("fs")` calls and `process` references that only read stdin.
    stdin: StdinReads,
}

impl<'a, 'o, 's> Checker<'a, 'o, 's> {
    pub(super) fn new(
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
            stdin: StdinReads::new(semantic),
        }
    }

    pub(super) fn report(&mut self, rule: String, detail: impl Into<String>, span: Span) {
        push(self.out, self.lines, rule, detail.into(), span.start);
    }

    /// Report `input()` reads once the whole program has been seen.
    pub(super) fn finish(&mut self) {
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
    pub(super) fn enter(&mut self, span: Span) -> bool {
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
    pub(super) fn check_binding(&mut self, name: &str, span: Span) {
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
    pub(super) fn check_name(&mut self, name: &str, span: Span, how: Use) {
        if name == "process" && how == Use::MemberBase && self.stdin.allows_process(span) {
            return;
        }
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

    pub(super) fn check_member(&mut self, name: &str, span: Span) {
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
    pub(super) fn check_text(&mut self, text: &str, span: Span) {
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
    pub(super) fn check_module(&mut self, spec: &str, span: Span) {
        let bare = spec.strip_prefix("node:").unwrap_or(spec);
        let top = bare.split('/').next().unwrap_or(bare);
        let always = ALWAYS_DENIED_MODULES.contains(&top) || top.starts_with('_');
        if always || !listed(&self.rules.allowed_modules, spec) {
            let allowed = if self.rules.allowed_modules.is_empty() {
                "no module is allowed under this policy".to_string()
            } else {
                format!("allowed: {}", self.rules.allowed_modules.join(", "))
            };
            let extra = if top == "fs" {
                "; this built-in is denied under every policy, except to read stdin: \
                 require(\"fs\").readFileSync(0, \"utf8\") or readFileSync(\"/dev/stdin\"), \
                 called directly or through a const binding used only that way"
            } else if always {
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
    pub(super) fn check_require(&mut self, call: &CallExpression<'_>, callee: Span) {
        let spec = match call.arguments.as_slice() {
            [arg] => arg.as_expression().and_then(literal_text),
            _ => None,
        };
        match spec {
            Some(_) if self.stdin.allows_require(call.span) => {}
            Some((text, span)) => self.check_module(&text, span),
            None => self.report(
                "name_not_allowed:require".into(),
                "`require` may only be called with one string literal: require(\"name\")",
                callee,
            ),
        }
    }

    /// `setTimeout("code")`: the string form of a timer is `eval`.
    pub(super) fn check_timer(&mut self, name: &str, call: &CallExpression<'_>, callee: Span) {
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
    pub(super) fn check_property_key(
        &mut self,
        key: &PropertyKey<'_>,
        computed: bool,
        defines: bool,
    ) {
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
    pub(super) fn check_computed_key(&mut self, key: &Expression<'_>) {
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
    pub(super) fn check_write_target(&mut self, target: &SimpleAssignmentTarget<'_>) {
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

    pub(super) fn check_member_write(&mut self, member: &MemberExpression<'_>) {
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
    pub(super) fn check_global_write(&mut self, root: &IdentifierReference<'_>, span: Span) {
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
    pub(super) fn export_root_of(&self, target: &SimpleAssignmentTarget<'_>) -> Option<Span> {
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
    pub(super) fn check_object_assign(&mut self, call: &CallExpression<'_>) {
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
    pub(super) fn check_prototype_use(&mut self, member: Span, property: Span) {
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
    pub(super) fn check_this(&mut self, span: Span) {
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

    pub(super) fn visit_callee(&mut self, callee: &Expression<'_>) {
        match callee {
            Expression::Identifier(id) => self.check_name(&id.name, id.span, Use::Call),
            other => self.visit_expression(other),
        }
    }

    /// Run `f` inside a function-like scope (`this_safe` and `own_arguments` as given,
    /// strictness inherited or set), where `input()` counts as repeated.
    pub(super) fn in_function(
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

    pub(super) fn deny_syntax(&mut self, what: &str, span: Span) {
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
pub(super) fn literal_text(expr: &Expression<'_>) -> Option<(String, Span)> {
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
