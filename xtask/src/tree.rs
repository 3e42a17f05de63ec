//! The source tree: every `.rs` file the rules read, parsed once (on all cores).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::facts::{self, FileFacts};

/// The top-level directories whose Rust files the rules read.
pub const RUST_ROOTS: [&str; 7] = [
    "src", "crates", "zygote", "tests", "fuzz", "benches", "xtask",
];

pub struct SourceFile {
    pub text: String,
    /// `None` when syn cannot parse it (a finding: the rules cannot read it).
    pub facts: Option<FileFacts>,
    /// Rules 10-12, for the tests' files (the AST cannot leave its parser thread).
    pub shapes: Vec<crate::shapes::Hit>,
    pub parse_error: Option<(usize, String)>,
}

impl SourceFile {
    pub fn lines(&self) -> Vec<&str> {
        self.text.lines().collect()
    }
}

pub struct Tree {
    /// By path relative to the root, with `/` separators.
    pub files: BTreeMap<String, SourceFile>,
}

fn walk(dir: &Path, rel: &str, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let rel = format!("{rel}/{name}");
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() && name != "target" && !name.starts_with('.') {
            walk(&e.path(), &rel, out);
        } else if kind.is_file() && name.ends_with(".rs") {
            out.push(rel);
        }
    }
}

/// The files rules 10-12 read: tests/ and crates/*/tests/.
pub fn is_test_file(rel: &str) -> bool {
    rel.starts_with("tests/")
        || (rel.starts_with("crates/") && rel.split('/').nth(2) == Some("tests"))
}

fn parse(rel: &str, text: String) -> SourceFile {
    match syn::parse_file(&text) {
        Ok(ast) => {
            let facts = facts::collect(&ast);
            let shapes = if is_test_file(rel) {
                crate::shapes::check(&ast, &text, &facts)
            } else {
                Vec::new()
            };
            SourceFile {
                facts: Some(facts),
                shapes,
                parse_error: None,
                text,
            }
        }
        Err(e) => {
            let at = e.span().start().line;
            SourceFile {
                facts: None,
                shapes: Vec::new(),
                parse_error: Some((at, e.to_string())),
                text,
            }
        }
    }
}

impl Tree {
    pub fn load(root: &Path) -> std::io::Result<Tree> {
        let mut paths = Vec::new();
        for top in RUST_ROOTS {
            walk(&root.join(top), top, &mut paths);
        }
        let texts: Vec<(String, String)> = paths
            .into_iter()
            .map(|p| std::fs::read_to_string(root.join(&p)).map(|t| (p, t)))
            .collect::<Result<_, _>>()?;
        // Largest first, taken from one queue, so no core waits on another's big file.
        let mut texts = texts;
        texts.sort_by_key(|(_, t)| std::cmp::Reverse(t.len()));
        let next = AtomicUsize::new(0);
        let workers = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .min(16);
        let mut files = BTreeMap::new();
        std::thread::scope(|s| {
            let take = || {
                let mut done = Vec::new();
                while let Some((p, t)) = texts.get(next.fetch_add(1, Ordering::Relaxed)) {
                    done.push((p.clone(), parse(p, t.clone())));
                }
                done
            };
            let handles: Vec<_> = (0..workers).map(|_| s.spawn(take)).collect();
            for h in handles {
                files.extend(h.join().expect("a parser thread panicked"));
            }
        });
        Ok(Tree { files })
    }

    pub fn facts(&self, rel: &str) -> Option<&FileFacts> {
        self.files.get(rel).and_then(|f| f.facts.as_ref())
    }
}
