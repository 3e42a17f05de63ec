//! `cargo xtask house [--root DIR]`: agentjail's house rules (docs/ARCHITECTURE.md, "The
//! house rules"), checked on the parsed code. Prints each finding (file:line, the rule, the
//! fix) and the known debts as notes, then the time it took; exits 1 when anything is
//! found, 2 when it cannot run, 0 otherwise.

mod code;
mod data;
mod deps;
mod docs;
mod facts;
mod metadata;
mod modules;
mod report;
mod shapes;
mod tree;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use report::{Report, Rule};

const USAGE: &str = "usage: cargo xtask house [--edges] [--root DIR]
  --edges     print the imports inside each circle (file:line -> file), to open it
  --root DIR  check the tree at DIR (default: this workspace)";

/// The tree to check, and whether to print the circles' edges.
fn args() -> Result<(PathBuf, bool), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut edges = false;
    let mut rest = args.iter().map(String::as_str);
    if rest.next() != Some("house") {
        return Err(USAGE.into());
    }
    while let Some(a) = rest.next() {
        match (a, rest.clone().next()) {
            ("--edges", _) => edges = true,
            ("--root", Some(dir)) => {
                root = PathBuf::from(dir);
                rest.next();
            }
            _ => return Err(USAGE.into()),
        }
    }
    Ok((root, edges))
}

/// Checks the tree at `root`; returns how many files it read and how long parsing took.
fn house(root: &std::path::Path, r: &mut Report) -> Result<(usize, f64), String> {
    if !root.join("src").is_dir() {
        return Err(format!("{}: no src/ here", root.display()));
    }
    let t0 = Instant::now();
    let tree = tree::Tree::load(root).map_err(|e| format!("{}: {e}", root.display()))?;
    let parse = t0.elapsed().as_secs_f64();
    for (file, src) in &tree.files {
        if let Some((line, e)) = &src.parse_error {
            r.find(Rule::Unreadable, format!("{file}:{line}"), e);
        }
        if file != data::SHAPE_RULES_TEST {
            src.shapes
                .iter()
                .for_each(|h| r.find(h.rule, format!("{file}:{}", h.line), &h.what));
        }
    }
    let packages = metadata::packages(root).unwrap_or_else(|e| {
        r.find(Rule::CrateDeps, "cargo metadata", e);
        Vec::new()
    });
    deps::check(&packages, r);
    let crates = modules::crates(&tree, &packages);
    let test_files: BTreeSet<String> = crates
        .iter()
        .flat_map(|c| &c.files)
        .filter(|m| m.test)
        .map(|m| m.file.clone())
        .collect();
    code::imports(&tree, &crates, r);
    code::unsafe_code(&tree, r);
    code::sys_paths(&tree, r);
    code::long_fns(&tree, &test_files, r);
    code::long_files(&tree, r);
    code::circles(&tree, &crates, r);
    code::layers(&tree, &crates, r);
    code::string_errors(&tree, &crates, r);
    docs::check(root, r);
    Ok((tree.files.len(), parse))
}

fn main() -> ExitCode {
    let t0 = Instant::now();
    let (root, edges) = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let mut r = Report {
        edges,
        ..Report::default()
    };
    let (files, parse) = match house(&root, &mut r) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("house rules: {e}");
            return ExitCode::from(2);
        }
    };
    r.findings.sort();
    r.findings.dedup();
    for n in &r.notes {
        println!("note: {n}");
    }
    for (_, f) in &r.findings {
        println!("{f}");
    }
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "house rules: {} findings in {files} files, {secs:.1} s ({parse:.1} s parsing)",
        r.findings.len()
    );
    if r.findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
