//! The rules, applied to every node of the parsed program (see the module doc of
//! [`crate::python`] for the list). This file holds the checker's state and the rules on
//! names, attributes and string text that every other part calls; the walk over the AST
//! (`walk.rs`), the rules on calls (`calls.rs`) and on imports (`imports.rs`) are its
//! submodules, each a seam the others only call into.

mod calls;
mod imports;
mod walk;

use super::prepass::Prepass;
use super::{push, LineIndex, ALWAYS_DENIED_CALLS, ALWAYS_DENIED_NAMES};
use crate::stdlib::{self, module_attr_allowed};
use crate::CheckRules;
use crate::Violation;
use ruff_python_ast::visitor::Visitor;
use ruff_python_ast::{self as ast, Expr, PythonVersion};
use ruff_text_size::TextRange;
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
