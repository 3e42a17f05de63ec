//! Rule 16: every path README.md and docs/*.md name in backticks (`src/x.rs`,
//! `scripts/y.sh`, `tests/...`) exists. A path counts when it starts with one of the tree's
//! top-level directories (DOC_PATH_ROOTS); paths inside the jail (`/app/out`), globs and
//! placeholders (`*`, `<name>`, `...`) are not the tree's.

use std::path::Path;

use crate::data;
use crate::report::{Report, Rule};

/// The backticked spans of a Markdown text, outside fenced code blocks, with their lines.
fn code_spans(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, l) in text.lines().enumerate() {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let parts: Vec<&str> = l.split('`').collect();
        out.extend(
            parts
                .iter()
                .skip(1)
                .step_by(2)
                .take(parts.len() / 2)
                .map(|s| (i + 1, s.to_string())),
        );
    }
    out
}

/// The tree path a span names, if it names one: `src/x.rs`, `src/x.rs:12`, `fuzz/`.
fn tree_path(span: &str) -> Option<&str> {
    let path = span.split(':').next()?;
    let first = path.split('/').next()?;
    let shaped = path.contains('/')
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
    (shaped && !path.contains("...") && data::DOC_PATH_ROOTS.contains(&first)).then_some(path)
}

pub fn check(root: &Path, r: &mut Report) {
    let mut docs = vec!["README.md".to_string()];
    if let Ok(entries) = std::fs::read_dir(root.join("docs")) {
        let mut md: Vec<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".md"))
            .collect();
        md.sort();
        docs.extend(md.into_iter().map(|n| format!("docs/{n}")));
    }
    for doc in docs {
        let Ok(text) = std::fs::read_to_string(root.join(&doc)) else {
            r.find(Rule::DocPath, &doc, "cannot be read");
            continue;
        };
        for (line, span) in code_spans(&text) {
            if let Some(p) = tree_path(&span) {
                if !root.join(p).exists() {
                    r.find(
                        Rule::DocPath,
                        format!("{doc}:{line}"),
                        format!("`{span}` is not in the tree"),
                    );
                }
            }
        }
    }
}
