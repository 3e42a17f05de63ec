//! Each crate's module tree (from its root file through `mod` declarations), the paths its
//! files name resolved to a module of the crate or to another crate, and the graph of its
//! file modules: a module depends on another when it names an item in it. A module declared
//! inline in a file (`mod tests { .. }`) counts as that file's module; test-only code
//! (`#[cfg(test)]`, `#[test]`) adds no edge, and neither does a module naming one of its
//! ancestors (`super::X`, `crate::X` from below: a submodule is part of its parent, whose
//! items are its enclosing scope), so a parent and the children it declares are no circle.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::facts::{FileFacts, Ref, RefKind};
use crate::metadata::Package;
use crate::tree::Tree;

/// A file module of a crate.
pub struct FileMod {
    pub file: String,
    /// Its path from the crate root (`engine::workspace` is `["engine", "workspace"]`).
    pub path: Vec<String>,
    /// Every declaration from the root to it is `pub`.
    pub public: bool,
    /// Declared under `#[cfg(test)]`.
    pub test: bool,
}

pub struct Crate {
    pub package: String,
    /// "lib" or "bin".
    pub kind: String,
    pub files: Vec<FileMod>,
    /// Every module path (file and inline).
    pub all_mods: BTreeSet<Vec<String>>,
    /// The crates its code may name (dependencies, std, its own library for a binary).
    pub externs: BTreeSet<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A module path of this crate (possibly followed by an item's name).
    Local(Vec<String>),
    /// Another crate: its code name first.
    Extern(Vec<String>),
}

fn dir_of(file: &str) -> &str {
    file.rsplit_once('/').map_or("", |(d, _)| d)
}

/// Where `mod name;` declared in `file` (inside the inline modules `scope`) lives.
fn child_file(
    tree: &Tree,
    file: &str,
    scope: &[String],
    name: &str,
    path_attr: Option<&str>,
) -> Option<String> {
    if let Some(p) = path_attr {
        let f = format!("{}/{p}", dir_of(file));
        return tree.files.contains_key(&f).then_some(f);
    }
    let stem = file
        .rsplit('/')
        .next()
        .unwrap_or("")
        .trim_end_matches(".rs");
    let mut base = dir_of(file).to_string();
    if !matches!(stem, "mod" | "lib" | "main") {
        base = format!("{base}/{stem}");
    }
    for s in scope {
        base = format!("{base}/{s}");
    }
    [format!("{base}/{name}.rs"), format!("{base}/{name}/mod.rs")]
        .into_iter()
        .find(|f| tree.files.contains_key(f))
}

fn walk_mods(tree: &Tree, c: &mut Crate, file: &str, path: Vec<String>, public: bool, test: bool) {
    let Some(facts) = tree.facts(file) else {
        return;
    };
    for m in &facts.mods {
        let mut child = path.clone();
        child.extend(m.scope.iter().cloned());
        child.push(m.name.clone());
        c.all_mods.insert(child.clone());
        if m.inline {
            continue;
        }
        if let Some(f) = child_file(tree, file, &m.scope, &m.name, m.path_attr.as_deref()) {
            walk_mods(tree, c, &f, child, public && m.public, test || m.test);
        }
    }
    c.files.push(FileMod {
        file: file.to_string(),
        path,
        public,
        test,
    });
}

/// The crates of the workspace's packages (libraries and binaries; not tests, benches,
/// examples or build scripts).
pub fn crates(tree: &Tree, packages: &[Package]) -> Vec<Crate> {
    let mut out = Vec::new();
    for p in packages {
        let lib_name = p
            .targets
            .iter()
            .find(|t| t.kind == "lib")
            .map(|t| t.code_name.clone());
        for t in p
            .targets
            .iter()
            .filter(|t| t.kind == "lib" || t.kind == "bin")
        {
            let mut externs: BTreeSet<String> =
                p.deps.iter().map(|d| d.code_name.clone()).collect();
            externs.extend(["std", "core", "alloc"].map(String::from));
            if t.kind == "bin" {
                externs.extend(lib_name.clone());
            }
            let mut c = Crate {
                package: p.name.clone(),
                kind: t.kind.clone(),
                files: Vec::new(),
                all_mods: BTreeSet::from([Vec::new()]),
                externs,
            };
            walk_mods(tree, &mut c, &t.src, Vec::new(), true, false);
            out.push(c);
        }
    }
    out
}

/// Edges between file modules: from → to → the first line naming it.
pub type Graph = BTreeMap<String, BTreeMap<String, usize>>;

/// A file's `use` bindings: name → what it names.
pub type Aliases = HashMap<String, Target>;

impl Crate {
    /// The file module a local path falls in: the longest file module it starts with.
    pub fn file_mod_of(&self, path: &[String]) -> Option<&FileMod> {
        self.files
            .iter()
            .filter(|m| path.starts_with(&m.path))
            .max_by_key(|m| m.path.len())
    }

    fn resolve_plain(&self, scope: &[String], segs: &[String]) -> Option<Target> {
        let first = segs.first()?;
        match first.as_str() {
            "crate" => Some(Target::Local(segs[1..].to_vec())),
            "self" => Some(Target::Local([scope, &segs[1..]].concat())),
            "super" => {
                let ups = segs.iter().take_while(|s| *s == "super").count();
                let base = scope.get(..scope.len().checked_sub(ups)?)?;
                Some(Target::Local([base, &segs[ups..]].concat()))
            }
            _ => {
                let child = [scope, &segs[..1]].concat();
                if self.all_mods.contains(&child) {
                    Some(Target::Local([scope, segs].concat()))
                } else if self.externs.contains(first) || first.starts_with("agentjail") {
                    Some(Target::Extern(segs.to_vec()))
                } else {
                    None
                }
            }
        }
    }

    /// What a path written in module `scope` names, through the file's `use` bindings.
    pub fn resolve(&self, scope: &[String], segs: &[String], aliases: &Aliases) -> Option<Target> {
        if let Some(t) = self.resolve_plain(scope, segs) {
            return Some(t);
        }
        let rest = &segs[1..];
        match aliases.get(segs.first()?)? {
            Target::Local(p) => Some(Target::Local([p, rest].concat())),
            Target::Extern(p) => Some(Target::Extern([p, rest].concat())),
        }
    }

    /// A file's `use` bindings, resolved.
    pub fn aliases(&self, module: &[String], facts: &FileFacts) -> Aliases {
        let mut out = Aliases::new();
        for r in facts.refs.iter().filter(|r| r.kind == RefKind::Use) {
            let scope = [module, &r.scope].concat();
            if let (Some(alias), Some(t)) = (&r.alias, self.resolve_plain(&scope, &r.segs)) {
                out.insert(alias.clone(), t);
            }
        }
        out
    }

    /// Every path a file names, resolved (the unresolved ones, local items and type
    /// parameters, are left out).
    pub fn resolved_refs<'a>(&self, tree: &'a Tree, m: &FileMod) -> Vec<(&'a Ref, Target)> {
        let Some(facts) = tree.facts(&m.file) else {
            return Vec::new();
        };
        let aliases = self.aliases(&m.path, facts);
        facts
            .refs
            .iter()
            .filter_map(|r| {
                let scope = [m.path.as_slice(), &r.scope].concat();
                self.resolve(&scope, &r.segs, &aliases).map(|t| (r, t))
            })
            .collect()
    }

    /// Edges between file modules (non-test code only): from → to → the first line naming it.
    pub fn graph(&self, tree: &Tree) -> Graph {
        let mut g = Graph::new();
        for m in self.files.iter().filter(|m| !m.test) {
            g.entry(m.file.clone()).or_default();
            for (r, t) in self.resolved_refs(tree, m) {
                let Target::Local(p) = t else { continue };
                if r.test {
                    continue;
                }
                let counts =
                    |to: &&FileMod| to.file != m.file && !to.test && !m.path.starts_with(&to.path);
                if let Some(to) = self.file_mod_of(&p).filter(counts) {
                    let e = g
                        .entry(m.file.clone())
                        .or_default()
                        .entry(to.file.clone())
                        .or_insert(r.line);
                    *e = (*e).min(r.line);
                }
            }
        }
        g
    }
}

/// Strongly connected components with more than one member (Tarjan), each sorted.
pub fn circles(g: &Graph) -> Vec<Vec<String>> {
    struct St<'a> {
        g: &'a Graph,
        index: HashMap<&'a str, usize>,
        low: HashMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut St<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on.insert(v);
        let g = s.g;
        for w in g.get(v).into_iter().flat_map(|e| e.keys()) {
            if !s.index.contains_key(w.as_str()) {
                visit(s, w);
                let lw = s.low[w.as_str()];
                s.low.insert(v, s.low[v].min(lw));
            } else if s.on.contains(w.as_str()) {
                let iw = s.index[w.as_str()];
                s.low.insert(v, s.low[v].min(iw));
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = St {
        g,
        index: HashMap::new(),
        low: HashMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out.sort();
    s.out
}
