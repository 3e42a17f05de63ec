//! The import rules: `import m`, `from m import name` against the policy's modules and the
//! module tables (a submodule reached through a name, a name a module denies), and
//! `from m import *` only where every name it binds would pass on its own. Separate because
//! imports are judged against the stdlib tables, not the expression rules.

use super::{Base, Checker};
use crate::stdlib::{self, module_attr_allowed};
use ruff_python_ast::{self as ast, Stmt};
use ruff_text_size::TextRange;

impl Checker<'_, '_> {
    fn deny_import(&mut self, module: &str, why: &str, range: TextRange) {
        let detail = format!("{why}; {}", self.allowed_imports_hint());
        self.report(format!("import_not_allowed:{module}"), detail, range);
    }

    pub(super) fn check_import(&mut self, stmt: &Stmt) {
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
