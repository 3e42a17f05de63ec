//! The rules, applied to every node of the parsed program (see the module doc of
//! [`crate::python`] for the list).

use super::fields::field_names;
use super::prepass::{last_name, Prepass};
use super::{push, LineIndex, ALWAYS_DENIED_CALLS, ALWAYS_DENIED_NAMES, DEFINABLE_DUNDERS};
use crate::stdlib::{self, module_attr_allowed, FIELD_NAME_FACTORIES};
use crate::CheckRules;
use crate::Violation;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Pattern, PythonVersion, Stmt};
use ruff_text_size::{Ranged, TextRange};
use std::collections::HashSet;

/// What an attribute name is read from, which decides the rules that apply to it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Base<'m> {
    /// `"...".format`: the one place `.format` is allowed.
    Literal,
    /// A module the checker can name (`json.loads`, `np.linalg.norm`).
    Module(&'m str),
    /// Any other object.
    Object,
    /// `case C(attr=x)`: read from the match subject with getattr; the subject is unknown.
    Pattern,
    /// A name bound in a class body or given to a field-name factory: it becomes an
    /// attribute (and an entry of `__match_args__`, which `case C(x)` reads with getattr).
    Binding,
    /// A keyword argument name (`f(name=...)`, `f(**{'name': ...})`): it becomes an
    /// attribute in `SimpleNamespace`-like callables and class keywords.
    Keyword,
}

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

pub(super) struct Checker<'a, 'o> {
    pub rules: &'a CheckRules,
    pub lines: &'a LineIndex<'a>,
    pub out: &'o mut Vec<Violation>,
    pub source: &'a str,
    pub version: PythonVersion,
    pub pre: Prepass,
    pub depth: u32,
    pub too_deep: bool,
    pub input_calls: u32,
    pub input_in_loop: bool,
    /// The `input()` rule applies (the JSON contract's one payload line on stdin).
    pub input_rule: bool,
    pub loop_depth: u32,
    /// Directly in a class body (not inside a function, lambda or comprehension defined
    /// there): an import binds a class attribute (`C.json`), a name binds an attribute.
    pub in_class_body: bool,
    /// Inside an annotation: string literals there are parsed and checked as code.
    pub in_annotation: u32,
    /// While checking the code of a string annotation: (offset of the string's text in the
    /// source, whether inner offsets map one to one onto it).
    pub shift: Option<(usize, bool)>,
    /// Ranges of names where a field-name factory may appear as a value (a class base, the
    /// second argument of isinstance/issubclass, a type hint), keyed by the text they are in
    /// (the source, or a string annotation at that offset).
    pub factory_ok: HashSet<(usize, TextRange)>,
    /// Names bound by def, class or import, and names bound any other way, for the
    /// string-dispatch rule (decided once every binding has been seen).
    pub bound_callable: HashSet<String>,
    pub bound_other: HashSet<String>,
    /// Names passed to a string-dispatching method, judged at the end.
    pub dispatch_names: Vec<(String, TextRange)>,
    /// The program imports pandas (whose methods look strings up as method names).
    pub pandas: bool,
}

impl<'a, 'o> Checker<'a, 'o> {
    pub fn new(
        rules: &'a CheckRules,
        lines: &'a LineIndex<'a>,
        out: &'o mut Vec<Violation>,
        source: &'a str,
        version: PythonVersion,
        pre: Prepass,
    ) -> Self {
        Checker {
            rules,
            lines,
            out,
            source,
            version,
            depth: 0,
            too_deep: false,
            input_calls: 0,
            input_in_loop: false,
            input_rule: true,
            loop_depth: 0,
            in_class_body: false,
            in_annotation: 0,
            shift: None,
            factory_ok: HashSet::new(),
            bound_callable: HashSet::new(),
            bound_other: HashSet::new(),
            dispatch_names: Vec::new(),
            pandas: pre
                .modules
                .values()
                .any(|m| m.split('.').next() == Some("pandas")),
            pre,
        }
    }

    pub(super) fn report(&mut self, rule: String, detail: impl Into<String>, range: TextRange) {
        let inner = range.start().to_usize();
        let offset = match self.shift {
            Some((base, true)) => base + inner,
            Some((base, false)) => base,
            None => inner,
        };
        push(self.out, self.lines, rule, detail.into(), offset);
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
        if self.is_denied_name(name)
            || self.is_denied_call(name)
            || (self.input_rule && name == "input")
        {
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
                let detail = denied_call_detail(name);
                self.report(format!("call_not_allowed:{name}"), detail, range);
            } else {
                self.report(
                    format!("name_not_allowed:{name}"),
                    "denied callable used as a value",
                    range,
                );
            }
        }
        if self.input_rule && name == "input" {
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
        if !as_base && self.pre.modules.contains_key(name) {
            self.report(
                format!("module_reference_not_allowed:{name}"),
                "a module may only be used as module.attribute",
                range,
            );
        }
        if !as_base && !in_call {
            self.check_factory_value(name, range);
        }
    }

    /// A field-name factory used as a value could be called under another name, with
    /// names the checker never sees (`f = namedtuple; f('P', names)`).
    fn check_factory_value(&mut self, name: &str, range: TextRange) {
        if self.pre.is_factory(name) && !self.factory_ok.contains(&self.ok_key(range)) {
            self.report(
                format!("name_not_allowed:{name}"),
                format!(
                    "{name} makes attributes from strings; call it directly with literal \
                     names, subclass it, or name it in isinstance(), but do not pass it \
                     around (the checker could not see the names it is given)"
                ),
                range,
            );
        }
    }

    /// Remember how a name is bound, for the string-dispatch rule (only programs that
    /// import pandas have string-dispatching methods to judge).
    fn record_binding(&mut self, callable: bool, name: &str) {
        if !self.pandas {
            return;
        }
        if callable {
            self.bound_callable.insert(name.to_string());
        } else {
            self.bound_other.insert(name.to_string());
        }
    }

    /// The key of a range in `factory_ok`: ranges inside a string annotation are relative
    /// to its text, so they are kept apart from the source's.
    fn ok_key(&self, range: TextRange) -> (usize, TextRange) {
        (self.shift.map_or(usize::MAX, |(base, _)| base), range)
    }

    /// Whether the policy allows importing `module` (dotted).
    fn import_allowed(&self, module: &str) -> bool {
        listed(&self.rules.allowed_imports, module)
    }

    /// Top-level third-party packages the policy allows (their object denials apply).
    fn package_denies(&self, attr: &str) -> bool {
        self.rules.allowed_imports.iter().any(|m| {
            let top = m.split('.').next().unwrap_or(m);
            stdlib::package_denied_attribute(top, attr)
        })
    }

    /// Every attribute rule, for an attribute named `attr` read from `base`.
    pub(super) fn check_attribute(&mut self, attr: &str, base: Base<'_>, range: TextRange) {
        let dunder = self.rules.deny_dunder && attr.starts_with("__");
        let module_edge = match base {
            Base::Module(m) => self.pre.tables.module_edge(m, attr),
            _ => None,
        };
        if base == Base::Keyword && (dunder || self.is_denied_name(attr)) {
            self.report(
                format!("name_not_allowed:{attr}"),
                "keyword argument with a denied name (keywords can become attributes)",
                range,
            );
        } else if dunder
            || stdlib::always_denied_attribute(attr)
            || listed(&self.rules.denied_attributes, attr)
            || (module_edge.is_none() && self.package_denies(attr))
            // A class pattern's subject may be a module: no dangerous module's name.
            || (base == Base::Pattern && stdlib::is_dangerous_module(attr))
        {
            self.report(
                format!("attr_not_allowed:{attr}"),
                attribute_detail(base),
                range,
            );
        }
        if attr == "format" && !matches!(base, Base::Literal | Base::Keyword) {
            self.report(
                "attr_not_allowed:format".into(),
                "str.format walks attributes named in the format string ({0.__class__}); \
                 it is allowed only as \"literal\".format(...); use an f-string",
                range,
            );
        }
        if let Base::Module(module) = base {
            self.check_module_attribute(module, attr, module_edge, range);
        }
    }

    /// `module.attr`: the module's own lists, then, when the attribute is itself a module,
    /// the policy's imports (a module reached by attribute is an import by another name).
    fn check_module_attribute(
        &mut self,
        module: &str,
        attr: &str,
        edge: Option<&str>,
        range: TextRange,
    ) {
        let rule = format!("module_attr_not_allowed:{module}.{attr}");
        if !module_attr_allowed(module, attr) {
            let detail = match (
                stdlib::module_denial(module, attr),
                stdlib::safe_attrs(module),
            ) {
                (Some(why), _) => format!("{module}.{attr} is denied: {why}"),
                (None, Some(list)) => format!(
                    "outside {module}'s safe list; {module} allows: {}",
                    list.join(", ")
                ),
                (None, None) => format!(
                    "{module}.{attr} is a private name, a dangerous module or a side door \
                     (a module re-exported by {module})"
                ),
            };
            self.report(rule, detail, range);
        } else if let Some(target) = edge {
            if !self.import_allowed(target) {
                let detail = format!(
                    "{module}.{attr} is the module {target}, which is not an allowed import; {}",
                    self.allowed_imports_hint()
                );
                self.report(rule, detail, range);
            }
        }
    }

    /// "allowed imports: a, b, ..." for a denial's detail, truncated.
    fn allowed_imports_hint(&self) -> String {
        const SHOWN: usize = 24;
        let list = &self.rules.allowed_imports;
        let mut text = list
            .iter()
            .take(SHOWN)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        if list.len() > SHOWN {
            text.push_str(&format!(" and {} more", list.len() - SHOWN));
        }
        format!("allowed imports: {text}")
    }

    /// The module an expression denotes, when the checker can name it: a module alias,
    /// or a chain of module-valued attributes from one (`np.linalg`).
    fn module_value(&self, expr: &Expr) -> Option<String> {
        let mut attrs = Vec::new();
        let mut node = expr;
        while let Expr::Attribute(a) = node {
            attrs.push(a.attr.id.as_str());
            node = &a.value;
        }
        let Expr::Name(name) = node else { return None };
        let mut module = self.pre.modules.get(name.id.as_str())?.clone();
        for attr in attrs.iter().rev() {
            module = self.pre.tables.module_edge(&module, attr)?.to_string();
        }
        Some(module)
    }

    /// `x.attr`, with `as_base` when it is itself the object of an attribute access and
    /// `callee` when it is called. Chains are walked iteratively by the caller's depth.
    fn visit_attribute(&mut self, node: &ast::ExprAttribute, as_base: bool, callee: bool) {
        let a = node.attr.id.as_str();
        let base_module = self.module_value(&node.value);
        let base = match (&base_module, &*node.value) {
            (Some(m), _) => Base::Module(m),
            (None, Expr::StringLiteral(_)) => Base::Literal,
            _ => Base::Object,
        };
        self.check_attribute(a, base, node.attr.range);
        if !as_base {
            if let Some(module) = base_module
                .as_deref()
                .and_then(|m| self.pre.tables.module_edge(m, a))
            {
                self.report(
                    format!("module_reference_not_allowed:{module}"),
                    "a module may only be used as module.attribute",
                    node.range,
                );
            }
            if !callee
                && self.pre.is_factory(a)
                && !self.factory_ok.contains(&self.ok_key(node.range))
            {
                self.check_factory_value(a, node.range);
            }
        }
        match &*node.value {
            Expr::Name(base) => self.check_name(base.id.as_str(), base.range, false, true),
            Expr::Attribute(inner) => {
                if self.enter(inner.range) {
                    self.visit_attribute(inner, true, false);
                }
                self.depth -= 1;
            }
            other => self.visit_expr(other),
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
}

fn listed(list: &[String], name: &str) -> bool {
    list.iter().any(|n| n == name)
}

fn attribute_detail(base: Base<'_>) -> &'static str {
    match base {
        Base::Pattern => {
            "denied attribute, read by a class pattern (case C(attr=...)) with getattr"
        }
        Base::Binding => {
            "a class attribute or field named like a denied attribute: dataclasses and \
             namedtuples put field names in __match_args__, which case C(x) reads with getattr"
        }
        Base::Keyword => "keyword argument named like a denied attribute",
        _ => "denied attribute",
    }
}

/// How to do without a denied call.
fn denied_call_detail(name: &str) -> String {
    match name {
        "open" => {
            "open is denied by this policy: the payload arrives on stdin (json.loads(input())) \
                   and results leave as printed JSON; a policy that allows open (data.toml) \
                   lets the jail bound it (read-only binds, writable /tmp)"
                .into()
        }
        "eval" | "exec" | "compile" | "__import__" => {
            format!("{name} runs code the checker cannot see; denied under every policy")
        }
        _ => "denied call".into(),
    }
}

/// `{0.attr}` or `{name[key]}`: a str.format field that walks attributes or items.
pub(super) fn has_format_field_access(s: &str) -> bool {
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

impl Checker<'_, '_> {
    /// A call: the callee's rules, then the rules on the arguments that name attributes.
    fn visit_call(&mut self, call: &ast::ExprCall) {
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
    fn allow_type_names(&mut self, expr: &Expr) {
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
    pub(super) fn finish_dispatch(&mut self) {
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
    fn check_string_annotation(&mut self, s: &ast::ExprStringLiteral) {
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

impl Checker<'_, '_> {
    fn deny_import(&mut self, module: &str, why: &str, range: TextRange) {
        let detail = format!("{why}; {}", self.allowed_imports_hint());
        self.report(format!("import_not_allowed:{module}"), detail, range);
    }

    fn check_import(&mut self, stmt: &Stmt) {
        match stmt {
            Stmt::Import(import) => {
                for alias in &import.names {
                    let name = alias.name.id.as_str();
                    let top = name.split('.').next().unwrap_or(name);
                    if !self.import_allowed(top) {
                        self.deny_import(top, "module not allowed", alias.range);
                    } else if name.contains('.') && !self.import_allowed(name) {
                        self.deny_import(name, "submodule not allowed", alias.range);
                    }
                    let bound = alias.asname.as_ref().map_or(top, |a| a.id.as_str());
                    if let Some(asname) = &alias.asname {
                        self.check_binding(asname.id.as_str(), asname.range);
                    }
                    self.record_binding(true, bound);
                }
            }
            Stmt::ImportFrom(import) => self.check_import_from(import),
            _ => {}
        }
    }

    fn check_import_from(&mut self, import: &ast::StmtImportFrom) {
        let module = import.module.as_ref().map(|m| m.id.as_str()).unwrap_or("");
        let top = module.split('.').next().unwrap_or(module);
        if import.level > 0 {
            self.deny_import("relative", "relative import", import.range);
            return;
        }
        if !self.import_allowed(top) {
            let top = if top.is_empty() { "relative" } else { top };
            self.deny_import(top, "module not allowed", import.range);
            return;
        }
        if module.contains('.') && !self.import_allowed(module) {
            self.deny_import(module, "submodule not allowed", import.range);
            return;
        }
        for alias in &import.names {
            let name = alias.name.id.as_str();
            if name == "*" {
                if let Err(why) = self.star_import(module, alias.range) {
                    self.report(
                        format!("import_star_not_allowed:{module}"),
                        why,
                        alias.range,
                    );
                }
                continue;
            }
            if !module_attr_allowed(module, name) {
                let detail = match (
                    stdlib::module_denial(module, name),
                    stdlib::safe_attrs(module),
                ) {
                    (Some(why), _) => format!("{module}.{name} is denied: {why}"),
                    (None, Some(list)) => format!("{module} allows: {}", list.join(", ")),
                    (None, None) => "name outside the module's safe list".to_string(),
                };
                self.report(
                    format!("import_not_allowed:{module}.{name}"),
                    detail,
                    alias.range,
                );
            } else if let Some(target) = self.pre.tables.module_edge(module, name) {
                if !self.import_allowed(target) {
                    self.deny_import(target, "submodule not allowed", alias.range);
                }
            }
            self.check_attribute(name, Base::Object, alias.name.range);
            let bound = alias.asname.as_ref().unwrap_or(&alias.name);
            self.check_binding(bound.id.as_str(), bound.range);
            self.record_binding(true, bound.id.as_str());
        }
    }

    /// `from module import *` (the module an allowed import): allowed only under
    /// `check.allow_star_imports`, for a module whose star exports the tables list, when
    /// every name it binds passes the rules an explicit `from module import name` and a
    /// `module.name` would (the module's lists, the policy's denied attributes, names and
    /// calls, the always-denied ones) and none is a module (the checker would not know the
    /// bound name is one). A star-bound name is never checked as an attribute again, so
    /// this is where a name the checker restricts as an attribute would slip through.
    fn star_import(&mut self, module: &str, range: TextRange) -> Result<(), String> {
        if !self.rules.allow_star_imports {
            return Err(
                "star import: import the names you use (check.allow_star_imports is off)".into(),
            );
        }
        let Some(names) = self.pre.tables.star_exports(module) else {
            return Err(format!(
                "star import of {module}: the checker has no list of the names it binds; \
                 import the names you use"
            ));
        };
        let mut refused: Vec<&str> = Vec::new();
        for name in names {
            let before = self.out.len();
            self.check_attribute(name, Base::Module(module), range);
            self.check_binding(name, range);
            let module_valued = self.pre.tables.module_edge(module, name).is_some();
            if self.out.len() > before || module_valued {
                refused.push(name);
            }
            self.out.truncate(before);
        }
        if refused.is_empty() {
            for name in names {
                self.record_binding(true, name);
            }
            return Ok(());
        }
        const SHOWN: usize = 8;
        let more = refused.len().saturating_sub(SHOWN);
        let mut list = refused[..refused.len().min(SHOWN)].join(", ");
        if more > 0 {
            list.push_str(&format!(" and {more} more"));
        }
        Err(format!(
            "star import of {module} binds names this policy refuses as {module}.<name> or \
             as a name ({list}); import the names you use"
        ))
    }
}
