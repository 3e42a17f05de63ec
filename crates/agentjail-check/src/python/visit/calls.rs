//! The rules on calls: a factory's field names (`namedtuple`, `Enum`, `NamedTuple`), where a
//! factory may stand as a plain value, pandas' string dispatch (`df.apply('eval')`,
//! `aggfunc=`) and string annotations that typing evaluates as code. Separate from the
//! name and attribute rules (`visit.rs`) because each of these reads a call's arguments as
//! attribute names or code the program never spells as such.

use super::{Base, Checker};
use crate::python::fields::field_names;
use crate::python::prepass::last_name;
use crate::stdlib::FIELD_NAME_FACTORIES;
use ruff_python_ast::visitor::Visitor;
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::{Ranged, TextRange};

/// Methods that look a string argument up as a method name: pandas' `apply`, `agg`,
/// `aggregate` and `transform` call `getattr(frame, name)` for a string, so
/// `df.apply('eval', expr=...)` runs `DataFrame.eval` with no `.eval` in the source. Their
/// first argument, `func=`, and the function of a named aggregation (`agg(t=('a', 'sum'))`)
/// are method names.
const STRING_DISPATCH_METHODS: [&str; 4] = ["apply", "agg", "aggregate", "transform"];

/// Callables whose `aggfunc` (pandas' `pivot_table`, `crosstab`, `NamedAgg`) is looked up
/// the same way (`aggfunc='__class__'` calls the GroupBy class).
const AGGFUNC_CALLS: [&str; 3] = ["pivot_table", "crosstab", "NamedAgg"];

/// Builtin callables a program may pass to a string-dispatching method by name.
const BUILTIN_FUNCTIONS: [&str; 20] = [
    "abs",
    "all",
    "any",
    "bool",
    "float",
    "int",
    "len",
    "list",
    "max",
    "min",
    "repr",
    "round",
    "set",
    "sorted",
    "str",
    "sum",
    "tuple",
    "dict",
    "frozenset",
    "bytes",
];

impl Checker<'_, '_> {
    /// A call: the callee's rules, then the rules on the arguments that name attributes.
    pub(super) fn visit_call(&mut self, call: &ast::ExprCall) {
        match &*call.func {
            Expr::Name(func) => {
                let name = func.id.as_str();
                self.check_name(name, func.range, true, false);
                if matches!(name, "isinstance" | "issubclass") {
                    if let Some(types) = call.arguments.args.get(1) {
                        self.allow_factory_values(types);
                    }
                }
            }
            Expr::Attribute(attr) => {
                if self.enter(attr.range) {
                    self.visit_attribute(attr, false, true);
                }
                self.depth -= 1;
            }
            other => self.visit_expr(other),
        }
        if let Some(name) = last_name(&call.func) {
            if self.pre.is_factory(name) {
                self.check_factory_call(call, name);
            }
            if self.imports_pandas() {
                if matches!(&*call.func, Expr::Attribute(_))
                    && STRING_DISPATCH_METHODS.contains(&name)
                {
                    self.check_dispatch_call(call);
                }
                if AGGFUNC_CALLS.contains(&name) {
                    self.check_aggfunc_call(call, name == "NamedAgg");
                }
            }
            if name == "hasattr" {
                // hasattr(x, 'name') is getattr answering only yes or no; a literal name
                // gets the attribute rules (a run-time one can only learn a boolean).
                if let Some(Expr::StringLiteral(s)) = call.arguments.args.get(1) {
                    self.check_attribute(s.value.to_str(), Base::Object, s.range);
                }
            }
        }
        self.visit_arguments(&call.arguments);
    }

    /// The names of a type expression (`Enum`, `Optional[Enum]`, `Enum | None`): naming a
    /// factory as a type hands it to no one. Not inside calls, walruses or lambdas.
    pub(super) fn allow_type_names(&mut self, expr: &Expr) {
        match expr {
            Expr::Name(_) | Expr::Attribute(_) => {
                self.factory_ok.insert(self.ok_key(expr.range()));
            }
            Expr::Subscript(sub) => {
                self.allow_type_names(&sub.value);
                self.allow_type_names(&sub.slice);
            }
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                for elt in elts {
                    self.allow_type_names(elt);
                }
            }
            Expr::BinOp(op) if op.op == ast::Operator::BitOr => {
                self.allow_type_names(&op.left);
                self.allow_type_names(&op.right);
            }
            _ => {}
        }
    }

    /// Names (and tuples of names) where a factory may stand as a plain value.
    fn allow_factory_values(&mut self, expr: &Expr) {
        match expr {
            Expr::Name(_) | Expr::Attribute(_) => {
                self.factory_ok.insert(self.ok_key(expr.range()));
            }
            Expr::Tuple(t) => {
                for elt in &t.elts {
                    if matches!(elt, Expr::Name(_) | Expr::Attribute(_)) {
                        self.factory_ok.insert(self.ok_key(elt.range()));
                    }
                }
            }
            _ => {}
        }
    }

    /// The field names of a factory call must be literals, each allowed as an attribute.
    fn check_factory_call(&mut self, call: &ast::ExprCall, name: &str) {
        let index = FIELD_NAME_FACTORIES
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(1, |(_, i)| *i);
        let fields = field_names(call, index);
        for (field, range) in &fields.names {
            self.check_attribute(field, Base::Binding, *range);
        }
        if name == "NamedTuple" {
            // NamedTuple('P', x=int): the keyword names are the fields.
            for keyword in &call.arguments.keywords {
                if let Some(arg) = &keyword.arg {
                    self.check_attribute(arg.id.as_str(), Base::Binding, arg.range);
                }
            }
        }
        for range in fields.dynamic {
            self.report(
                format!("field_names_not_literal:{name}"),
                format!(
                    "{name} turns these strings into attribute names the checker cannot \
                     see (a dunder such as __array_interface__ makes numpy read raw memory); \
                     write the names as string literals"
                ),
                range,
            );
        }
    }

    fn imports_pandas(&self) -> bool {
        self.pandas
    }

    /// `df.apply(f)`, `df.agg(['sum', 'mean'])`: a string argument is a method name.
    fn check_dispatch_call(&mut self, call: &ast::ExprCall) {
        let args = &call.arguments;
        if let Some(first) = args.args.first() {
            self.check_dispatch_arg(first);
        }
        for keyword in &args.keywords {
            match (keyword.arg.as_ref().map(|a| a.id.as_str()), &keyword.value) {
                (Some("func"), value) => self.check_dispatch_arg(value),
                // Named aggregation: `agg(total=('amount', 'sum'))`.
                (Some(_), Expr::Tuple(t)) if t.elts.len() == 2 => {
                    self.check_dispatch_arg(&t.elts[1])
                }
                _ => {}
            }
        }
    }

    /// `pivot_table(aggfunc=...)`, `NamedAgg('col', 'sum')`.
    fn check_aggfunc_call(&mut self, call: &ast::ExprCall, named_agg: bool) {
        if named_agg {
            if let Some(func) = call.arguments.args.get(1) {
                self.check_dispatch_arg(func);
            }
        }
        for keyword in &call.arguments.keywords {
            if keyword
                .arg
                .as_ref()
                .is_some_and(|a| a.id.as_str() == "aggfunc")
            {
                self.check_dispatch_arg(&keyword.value);
            }
        }
    }

    fn check_dispatch_arg(&mut self, expr: &Expr) {
        match expr {
            Expr::StringLiteral(s) => {
                self.check_attribute(s.value.to_str(), Base::Object, s.range);
            }
            Expr::List(ast::ExprList { elts, .. }) | Expr::Tuple(ast::ExprTuple { elts, .. }) => {
                for elt in elts {
                    self.check_dispatch_arg(elt);
                }
            }
            Expr::Dict(d) => {
                for item in &d.items {
                    self.check_dispatch_arg(&item.value);
                }
            }
            Expr::Lambda(_) => {}
            Expr::Name(n) => self.dispatch_names.push((n.id.to_string(), n.range)),
            Expr::Attribute(a) if self.is_function_reference(&a.value) => {}
            Expr::Call(c) if last_name(&c.func) == Some("partial") => {}
            other => self.report_dynamic_dispatch(other.range()),
        }
    }

    /// `np.mean`, `math.sqrt`, `str.upper`: attributes of a module or a builtin type.
    fn is_function_reference(&self, base: &Expr) -> bool {
        self.module_value(base).is_some()
            || matches!(base, Expr::Name(n) if BUILTIN_FUNCTIONS.contains(&n.id.as_str()))
    }

    fn report_dynamic_dispatch(&mut self, range: TextRange) {
        self.report(
            "dynamic_method_name".into(),
            "pandas looks a string argument up as a method name (df.apply('eval', expr=...) \
             runs DataFrame.eval); pass a function defined with def, a lambda, a module \
             function (np.mean) or a string literal",
            range,
        );
    }

    /// After the visit, when every binding is known: names passed to a dispatching method
    /// must be functions (def/class/import, never rebound) or builtins.
    pub(in crate::python) fn finish_dispatch(&mut self) {
        for (name, range) in std::mem::take(&mut self.dispatch_names) {
            let function = self.bound_callable.contains(&name) && !self.bound_other.contains(&name);
            let builtin = !self.bound_callable.contains(&name)
                && !self.bound_other.contains(&name)
                && BUILTIN_FUNCTIONS.contains(&name.as_str());
            if !function && !builtin {
                self.report_dynamic_dispatch(range);
            }
        }
    }

    /// A string inside an annotation: typing evaluates it (get_type_hints, ForwardRef,
    /// singledispatch), so it is parsed and checked as code. Text that does not parse as
    /// an expression cannot be evaluated either (`Literal['a b']` data): skipped.
    pub(super) fn check_string_annotation(&mut self, s: &ast::ExprStringLiteral) {
        let value = s.value.to_str();
        let trimmed_start = value.len() - value.trim_start().len();
        let text = value.trim();
        let (text, star) = match text.strip_prefix('*') {
            Some(rest) => (rest, 1),
            None => (text, 0),
        };
        let options = ruff_python_parser::ParseOptions::from(
            ruff_python_parser::Mode::ParenthesizedExpression,
        )
        .with_target_version(self.version);
        let Ok(parsed) = ruff_python_parser::parse(text, options) else {
            return;
        };
        let ast::Mod::Expression(expr) = parsed.syntax() else {
            return;
        };
        if !parsed.unsupported_syntax_errors().is_empty() {
            // Syntax newer than the interpreter: CPython refuses to compile it.
            return;
        }
        let start = s.range.start().to_usize();
        let exact_content = match (self.shift, s.as_single_part_string()) {
            (None, Some(part)) => {
                let content = part.content_range().start().to_usize();
                let raw = self.source.get(content..content + value.len());
                (raw == Some(value)).then_some(content + trimmed_start + star)
            }
            _ => None,
        };
        let outer = self.shift;
        self.shift = Some(match (exact_content, outer) {
            (Some(content), _) => (content, true),
            (None, None) => (start, false),
            (None, Some((b, true))) => (b + start, false),
            (None, Some((b, false))) => (b, false),
        });
        let before = self.out.len();
        self.allow_type_names(&expr.body);
        self.visit_expr(&expr.body);
        self.shift = outer;
        if self.out.len() > before {
            let mut inner: Vec<String> =
                self.out[before..].iter().map(|v| v.rule.clone()).collect();
            inner.sort();
            inner.dedup();
            self.report(
                "string_annotation".into(),
                format!(
                    "this annotation string is code that typing evaluates; it breaks: {}",
                    inner.join(", ")
                ),
                s.range,
            );
        }
    }
}
