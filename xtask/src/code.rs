//! The rules about the library code: 1-6, 8, 9, 13-15.

use std::collections::BTreeSet;

use crate::data;
use crate::facts::{FileFacts, RefKind};
use crate::modules::{Crate, FileMod, Graph, Target};
use crate::report::{Report, Rule};
use crate::tree::Tree;

const JAIL: &str = "crates/agentjail-jail/";
const SYS: &str = "crates/agentjail-jail/src/sys/";

fn starts(p: &[String], prefix: &[&str]) -> bool {
    p.len() >= prefix.len() && p.iter().zip(prefix).all(|(a, b)| a == b)
}

fn find_crate<'a>(crates: &'a [Crate], package: &str, kind: &str) -> Option<&'a Crate> {
    crates
        .iter()
        .find(|c| c.package == package && c.kind == kind)
}

/// The engine crate: the library, whose policy and plan rules 2 and 3 hold.
const ENGINE: &str = "agentjail-engine";

/// Rules 1-3 and 5: what the jail, the policy, the plan and main.rs may name.
pub fn imports(tree: &Tree, crates: &[Crate], r: &mut Report) {
    if let Some(jail) = find_crate(crates, "agentjail-jail", "lib") {
        for m in &jail.files {
            let mechanism = !m.file.ends_with("/launch.rs") && !m.file.contains("/supervise/");
            for (re, t) in jail.resolved_refs(tree, m) {
                let bad = match &t {
                    Target::Extern(p) => p[0].starts_with("agentjail"),
                    Target::Local(p) => {
                        mechanism && (starts(p, &["supervise"]) || starts(p, &["launch"]))
                    }
                };
                if bad {
                    r.find(
                        Rule::JailUpward,
                        format!("{}:{}", m.file, re.line),
                        format!("names {}", re.segs.join("::")),
                    );
                }
            }
        }
    }
    let Some(main) = find_crate(crates, ENGINE, "lib") else {
        return;
    };
    for m in &main.files {
        let policy = starts(&m.path, &["policy"]);
        let plan = starts(&m.path, &["plan"]);
        for (re, t) in main
            .resolved_refs(tree, m)
            .into_iter()
            .filter(|_| policy || plan)
        {
            let Target::Extern(p) = t else { continue };
            let at = format!("{}:{}", m.file, re.line);
            let allowed = starts(&p, &["agentjail_jail", "plan", "Requirement"])
                || starts(&p, &["agentjail_jail", "syscall_groups"]);
            if policy && p[0] == "agentjail_jail" && !allowed {
                r.find(Rule::PolicyJail, &at, format!("names {}", p.join("::")));
            }
            let io = [
                &["libc"][..],
                &["std", "fs"],
                &["std", "process"],
                &["std", "net"],
                &["agentjail_jail", "os"],
            ];
            if plan && io.iter().any(|pre| starts(&p, pre)) {
                r.find(Rule::PlanIo, &at, format!("names {}", p.join("::")));
            }
        }
        if plan {
            for u in tree
                .facts(&m.file)
                .map(|f| f.unsafes.as_slice())
                .unwrap_or_default()
            {
                r.find(Rule::PlanIo, format!("{}:{}", m.file, u.line), u.what);
            }
        }
    }
    thin_main(tree, crates, r);
}

/// Rule 5: src/main.rs, the binary's root, names clap, std, the agentjail crates and the
/// front-end modules it declares, nothing else (its front ends are modules of their own).
fn thin_main(tree: &Tree, crates: &[Crate], r: &mut Report) {
    let Some(bin) = find_crate(crates, data::BINARY_CRATE, "bin") else {
        return;
    };
    let ok = |root: &str| {
        root.starts_with("agentjail") || matches!(root, "clap" | "std" | "core" | "alloc")
    };
    for m in bin.files.iter().filter(|m| m.path.is_empty()) {
        for (re, t) in bin.resolved_refs(tree, m) {
            let Target::Extern(p) = &t else { continue };
            if !ok(&p[0]) {
                r.find(
                    Rule::ThinMain,
                    format!("{}:{}", m.file, re.line),
                    format!("names {}", re.segs.join("::")),
                );
            }
        }
    }
}

fn under(file: &str, roots: &[&str]) -> bool {
    roots.iter().any(|r| file.starts_with(&format!("{r}/")))
}

fn is_crate_test(file: &str) -> bool {
    file.starts_with("crates/") && file.split('/').nth(2) == Some("tests")
}

/// Rule 4: `unsafe` (blocks, functions, impls, traits, extern blocks) and libc calls.
pub fn unsafe_code(tree: &Tree, r: &mut Report) {
    for (file, facts) in tree
        .files
        .iter()
        .filter_map(|(f, s)| s.facts.as_ref().map(|x| (f, x)))
    {
        if !under(file, &["src", "crates", "xtask"]) || file.starts_with(SYS) || is_crate_test(file)
        {
            continue;
        }
        for u in &facts.unsafes {
            r.find(Rule::Unsafe, format!("{file}:{}", u.line), u.what);
        }
        let aliases = plain_aliases(facts);
        for re in facts.refs.iter().filter(|re| re.kind == RefKind::Call) {
            let p = expand(&re.segs, &aliases);
            let libc_fn = p.len() == 2
                && p[0] == "libc"
                && p[1].starts_with(|c: char| c.is_ascii_lowercase());
            if libc_fn {
                r.find(
                    Rule::Unsafe,
                    format!("{file}:{}", re.line),
                    format!("calls {}", p.join("::")),
                );
            }
        }
    }
}

/// A file's `use` bindings as written (for files outside any crate's tree too).
fn plain_aliases(facts: &FileFacts) -> Vec<(String, Vec<String>)> {
    let uses = facts.refs.iter().filter(|r| r.kind == RefKind::Use);
    uses.filter_map(|r| Some((r.alias.clone()?, r.segs.clone())))
        .collect()
}

fn expand(segs: &[String], aliases: &[(String, Vec<String>)]) -> Vec<String> {
    match aliases
        .iter()
        .find(|(a, p)| Some(a) == segs.first() && p.len() > 1)
    {
        Some((_, p)) => [p.as_slice(), &segs[1..]].concat(),
        None => segs.to_vec(),
    }
}

/// Rule 9: a path through a `sys` module, outside the jail crate (other crates' own `sys`
/// modules, such as nix's, are theirs).
pub fn sys_paths(tree: &Tree, r: &mut Report) {
    let foreign = ["nix", "libc", "std", "core", "rustix"];
    for (file, facts) in tree
        .files
        .iter()
        .filter_map(|(f, s)| s.facts.as_ref().map(|x| (f, x)))
    {
        if file.starts_with(JAIL) {
            continue;
        }
        let aliases = plain_aliases(facts);
        for re in &facts.refs {
            let p = expand(&re.segs, &aliases);
            let through_sys = p.iter().rev().skip(1).any(|s| s == "sys")
                || (re.kind == RefKind::Glob && p.last().is_some_and(|s| s == "sys"));
            let via_use = re.kind == RefKind::Use && p.last().is_some_and(|s| s == "sys");
            if (through_sys || via_use) && !foreign.contains(&p[0].as_str()) {
                r.find(
                    Rule::Sys,
                    format!("{file}:{}", re.line),
                    format!("names {}", p.join("::")),
                );
            }
        }
    }
}

/// Rule 6: functions of the library code (src/, crates/*/src/, xtask/; test modules and
/// test directories aside) over MAX_FN_LINES lines without a "long because" comment right
/// above them.
pub fn long_fns(tree: &Tree, test_files: &BTreeSet<String>, r: &mut Report) {
    for (file, src) in &tree.files {
        let Some(facts) = &src.facts else { continue };
        if !under(file, &["src", "crates", "xtask"])
            || test_files.contains(file)
            || is_crate_test(file)
        {
            continue;
        }
        let lines = src.lines();
        for f in facts.fns.iter().filter(|f| !f.cfg_test) {
            let len = f.end_line + 1 - f.fn_line;
            let from = f.first_line.saturating_sub(5);
            let why = lines
                .get(from..f.fn_line)
                .is_some_and(|ls| ls.iter().any(|l| l.contains("long because")));
            if len > data::MAX_FN_LINES && !why {
                r.find(
                    Rule::LongFn,
                    format!("{file}:{}", f.fn_line),
                    format!(
                        "fn {} is {len} lines (at most {})",
                        f.name,
                        data::MAX_FN_LINES
                    ),
                );
            }
        }
    }
}

/// Rule 8: files over MAX_FILE_LINES lines.
pub fn long_files(tree: &Tree, r: &mut Report) {
    for (file, src) in &tree.files {
        let n = src.text.lines().count();
        let exempt = data::GENERATED.contains(&file.as_str());
        if under(file, &["src", "crates", "zygote", "tests", "xtask"])
            && n > data::MAX_FILE_LINES
            && !exempt
        {
            r.find(
                Rule::LongFile,
                file,
                format!("{n} lines (at most {})", data::MAX_FILE_LINES),
            );
        }
    }
}

/// Rule 13: no circle between a crate's file modules (the last known ones, issue 37's, are
/// opened: every circle is a finding).
pub fn circles(tree: &Tree, crates: &[Crate], r: &mut Report) {
    for c in crates {
        let graph = c.graph(tree);
        for circle in crate::modules::circles(&graph) {
            let members: Vec<&str> = circle.iter().map(String::as_str).collect();
            r.find(
                Rule::Circle,
                c.package.as_str(),
                format!("{} files: {}", members.len(), members.join(" ")),
            );
            print_edges(&graph, &members, r);
        }
    }
}

/// `--edges`: each import inside a circle, as a note.
fn print_edges(graph: &Graph, members: &[&str], r: &mut Report) {
    if !r.edges {
        return;
    }
    for from in members {
        let tos = graph.get(*from).into_iter().flatten();
        for (to, line) in tos.filter(|(to, _)| members.contains(&to.as_str())) {
            r.note(format!("  in the circle: {from}:{line} -> {to}"));
        }
    }
}

fn layer_of(c: &Crate, m: &FileMod) -> Option<usize> {
    let top = m.path.first()?;
    data::LAYERS
        .iter()
        .position(|(_, krate, mods)| *krate == c.package && mods.contains(&top.as_str()))
}

/// Rule 14: the layers of the binary and the engine crate: an import from a module to one
/// of a higher layer, a module in no layer of its crate, and any crate's code naming the
/// binary (whose front ends nothing may import).
pub fn layers(tree: &Tree, crates: &[Crate], r: &mut Report) {
    let mut known: Vec<&str> = data::KNOWN_LAYER_BREAKS.to_vec();
    let layered = crates.iter().filter(|c| {
        data::LAYERS.iter().any(|(_, k, _)| *k == c.package)
            && (c.kind == "lib" || c.package == data::BINARY_CRATE)
    });
    for c in layered {
        layers_of(tree, c, &mut known, r);
    }
    for c in crates.iter().filter(|c| c.package != data::BINARY_CRATE) {
        names_the_binary(tree, c, r);
    }
    for k in known {
        r.find(Rule::Layer, k, "this known layer break is no more: remove its line from xtask/src/data.rs KNOWN_LAYER_BREAKS");
    }
}

/// Rule 14 in one crate: its modules each in a layer of that crate, no import upward.
fn layers_of(tree: &Tree, c: &Crate, known: &mut Vec<&str>, r: &mut Report) {
    for m in c
        .files
        .iter()
        .filter(|m| !m.test && !m.path.is_empty() && layer_of(c, m).is_none())
    {
        let what = format!("a module of {} in no layer of its crate: add it to xtask/src/data.rs LAYERS and docs/ARCHITECTURE.md", c.package);
        r.find(Rule::Layer, &m.file, what);
    }
    for (from, tos) in c.graph(tree) {
        let Some(fm) = c.files.iter().find(|m| m.file == from) else {
            continue;
        };
        for (to, line) in tos {
            let Some(tm) = c.files.iter().find(|m| m.file == to) else {
                continue;
            };
            let (Some(lf), Some(lt)) = (layer_of(c, fm), layer_of(c, tm)) else {
                continue;
            };
            if lt >= lf {
                continue;
            }
            let pair = format!("{from} -> {to}");
            let (name_f, name_t) = (data::LAYERS[lf].0, data::LAYERS[lt].0);
            if let Some(i) = known.iter().position(|k| *k == pair) {
                known.remove(i);
                r.note(format!("known layer break (issue 37: to be removed, never to grow): {pair} ({name_f} imports {name_t})"));
            } else {
                r.find(
                    Rule::Layer,
                    format!("{from}:{line}"),
                    format!("the {name_f} layer names {to}, of the {name_t} layer"),
                );
            }
        }
    }
}

/// Rule 14 across crates: code that names the binary's crate (`agentjail::...`), whose
/// front ends no other crate may import (cargo would refuse it too: the binary has no
/// library; this says why, and where).
fn names_the_binary(tree: &Tree, c: &Crate, r: &mut Report) {
    let binary = data::BINARY_CRATE.replace('-', "_");
    for m in c.files.iter().filter(|m| !m.test) {
        for (re, t) in c.resolved_refs(tree, m) {
            if matches!(&t, Target::Extern(p) if p[0] == binary) && !re.test {
                r.find(
                    Rule::Layer,
                    format!("{}:{}", m.file, re.line),
                    format!("names {}, the agentjail binary's front ends: {} may import only what they share with it, in the engine crate", re.segs.join("::"), c.package),
                );
            }
        }
    }
}

/// Rule 15: `pub fn ... -> Result<_, String>` in a library crate's public modules.
pub fn string_errors(tree: &Tree, crates: &[Crate], r: &mut Report) -> usize {
    let mut known: Vec<&str> = data::KNOWN_STRING_ERRORS.to_vec();
    let mut count = 0;
    for c in crates.iter().filter(|c| c.kind == "lib") {
        for m in c.files.iter().filter(|m| m.public && !m.test) {
            let Some(facts) = tree.facts(&m.file) else {
                continue;
            };
            for f in facts
                .fns
                .iter()
                .filter(|f| f.api && f.returns_string_err && !f.test)
            {
                count += 1;
                let key = format!("{} {}", m.file, f.name);
                match known.iter().position(|k| *k == key) {
                    Some(i) => drop(known.remove(i)),
                    None => r.find(
                        Rule::StringError,
                        format!("{}:{}", m.file, f.fn_line),
                        format!("pub fn {} returns Result<_, String>", f.name),
                    ),
                }
            }
        }
    }
    for k in known {
        r.find(Rule::StringError, k, "is in KNOWN_STRING_ERRORS but returns a typed error now (or is gone): remove its line from xtask/src/data.rs");
    }
    if count > 0 {
        r.note(format!("{count} public functions of the library crates return Result<_, String> (KNOWN_STRING_ERRORS, issue 37: to shrink)"));
    }
    count
}
