//! What the checker must know before it visits a single node: which names are bound to
//! modules and which classes are field-name factories, wherever in the program they are
//! bound (a function defined above an import can use the module; a call inside a function
//! can reach a class defined further down).

use crate::stdlib::{Modules, ENUM_BASES, FIELD_NAME_FACTORIES};
use crate::CheckRules;
use ruff_python_ast::{self as ast, Expr, Stmt};
use std::collections::HashMap;

/// Facts gathered from every statement of the program.
pub(super) struct Prepass {
    /// The module tables of the interpreter's version.
    pub tables: Modules,
    /// Bound name -> dotted module it refers to (`np` -> `numpy`, `la` -> `numpy.linalg`).
    pub modules: HashMap<String, String>,
    /// Names of callables that make attributes from strings: [`FIELD_NAME_FACTORIES`] and
    /// every class of the program derived from an enum class without members of its own
    /// (`class Base(Enum): pass` makes `Base('E', names)` the functional API). A short list:
    /// it is asked about every name, and comparing a dozen strings beats hashing.
    pub factories: Vec<String>,
}

impl Prepass {
    pub fn new(body: &[Stmt], rules: &CheckRules, tables: Modules) -> Self {
        let mut p = Prepass {
            tables,
            modules: HashMap::new(),
            factories: FIELD_NAME_FACTORIES
                .iter()
                .map(|(n, _)| (*n).to_string())
                .collect(),
        };
        p.collect(body, rules, 0);
        p
    }

    fn collect(&mut self, body: &[Stmt], rules: &CheckRules, depth: u32) {
        if depth > rules.max_nesting_depth {
            return;
        }
        for stmt in body {
            match stmt {
                Stmt::Import(import) => self.import(import),
                Stmt::ImportFrom(import) => self.import_from(import),
                Stmt::ClassDef(c) => {
                    self.class(c);
                    self.collect(&c.body, rules, depth + 1);
                }
                _ => {
                    for inner in nested_bodies(stmt) {
                        self.collect(inner, rules, depth + 1);
                    }
                }
            }
        }
    }

    fn import(&mut self, import: &ast::StmtImport) {
        for alias in &import.names {
            let name = alias.name.id.as_str();
            let (bound, module) = match &alias.asname {
                Some(asname) => (asname.id.to_string(), name.to_string()),
                None => {
                    let top = name.split('.').next().unwrap_or(name).to_string();
                    (top.clone(), top)
                }
            };
            self.modules.insert(bound, module);
        }
    }

    /// `from numpy import linalg as la`: `la` is the module numpy.linalg.
    fn import_from(&mut self, import: &ast::StmtImportFrom) {
        let Some(module) = &import.module else { return };
        for alias in &import.names {
            if let Some(target) = self
                .tables
                .module_edge(module.id.as_str(), alias.name.id.as_str())
            {
                let bound = alias.asname.as_ref().unwrap_or(&alias.name);
                self.modules
                    .insert(bound.id.to_string(), target.to_string());
            }
        }
    }

    /// An enum class without members is a factory (`Base('E', names)`); with members its
    /// functional API raises "cannot extend enumerations".
    fn class(&mut self, c: &ast::StmtClassDef) {
        let enum_derived = c.bases().iter().any(|base| {
            last_name(base).is_some_and(|n| {
                ENUM_BASES.contains(&n) || self.is_factory(n) && !is_field_factory(n)
            })
        });
        if enum_derived && !has_enum_members(&c.body) && !self.is_factory(&c.name.id) {
            self.factories.push(c.name.id.to_string());
        }
    }

    /// Whether `name` is a field-name factory of this program.
    pub fn is_factory(&self, name: &str) -> bool {
        self.factories.iter().any(|f| f == name)
    }
}

fn is_field_factory(name: &str) -> bool {
    FIELD_NAME_FACTORIES.iter().any(|(n, _)| *n == name) && !ENUM_BASES.contains(&name)
}

/// Whether a class body assigns a public name (an enum member).
fn has_enum_members(body: &[Stmt]) -> bool {
    body.iter().any(|stmt| {
        let targets: Vec<&Expr> = match stmt {
            Stmt::Assign(a) => a.targets.iter().collect(),
            Stmt::AnnAssign(a) if a.value.is_some() => vec![&*a.target],
            _ => Vec::new(),
        };
        targets
            .iter()
            .any(|t| matches!(t, Expr::Name(n) if !n.id.starts_with('_')))
    })
}

/// The identifier a name or attribute expression ends in (`Enum`, `enum.Enum` -> `Enum`).
pub(super) fn last_name(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Name(n) => Some(n.id.as_str()),
        Expr::Attribute(a) => Some(a.attr.id.as_str()),
        _ => None,
    }
}

/// The statement bodies nested in `stmt` (not class bodies: those are handled apart).
fn nested_bodies(stmt: &Stmt) -> Vec<&[Stmt]> {
    match stmt {
        Stmt::FunctionDef(f) => vec![&f.body],
        Stmt::For(f) => vec![&f.body, &f.orelse],
        Stmt::While(w) => vec![&w.body, &w.orelse],
        Stmt::If(i) => {
            let mut v: Vec<&[Stmt]> = vec![&i.body];
            v.extend(i.elif_else_clauses.iter().map(|c| c.body.as_slice()));
            v
        }
        Stmt::With(w) => vec![&w.body],
        Stmt::Try(t) => {
            let mut v: Vec<&[Stmt]> = vec![&t.body, &t.orelse, &t.finalbody];
            for handler in &t.handlers {
                let ast::ExceptHandler::ExceptHandler(h) = handler;
                v.push(&h.body);
            }
            v
        }
        Stmt::Match(m) => m.cases.iter().map(|c| c.body.as_slice()).collect(),
        _ => Vec::new(),
    }
}
