//! `cargo xtask house` (xtask/, docs/ARCHITECTURE.md "The house rules"): the real tree
//! passes, and a copy of it with one violation of every rule planted fails, each plant
//! reported with its own rule at its own file, and nothing else reported. The test shapes
//! (rules 10-12) also have an honest twin, which stays quiet.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The xtask's binary, built once by cargo (the lint stage has usually built it already).
fn xtask() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let out = Command::new(env!("CARGO"))
            .args([
                "build",
                "--quiet",
                "--package",
                "xtask",
                "--message-format=json",
            ])
            .current_dir(ROOT)
            .output()
            .expect("cargo build --package xtask");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let exe = stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|m| m["target"]["name"] == "xtask")
            .find_map(|m| m["executable"].as_str().map(PathBuf::from));
        exe.expect("cargo named no xtask executable")
    })
}

fn house(root: &Path) -> Output {
    Command::new(xtask())
        .args(["house", "--root"])
        .arg(root)
        .output()
        .expect("run the xtask")
}

/// One rule's plant: the rule's tag, the file it goes in (appended to the copy, or a new
/// file), its text, and what the finding names (the file, or the crates or circle). The
/// shrink-only lists are empty since issue 37's typed errors, so no plant empties a file to
/// make a known debt disappear: a line added to one is a finding on the real tree.
struct Plant {
    rule: &'static str,
    file: &'static str,
    text: String,
    shows: &'static str,
}

fn plant(rule: &'static str, file: &'static str, text: &str) -> Plant {
    Plant {
        rule,
        file,
        text: text.to_string(),
        shows: file,
    }
}

fn showing(mut p: Plant, shows: &'static str) -> Plant {
    p.shows = shows;
    p
}

const SHAPES: &str = r#"
#[test]
fn planted() {
    if std::env::var("CI").is_ok() {
        return;
    }
    let p = "try:\n    f()\nexcept Exception as e:\n    print('BLOCKED', e)";
    std::thread::sleep(std::time::Duration::from_millis(5));
}
"#;

const HONEST: &str = r#"
#[test]
fn honest() {
    if !require_feature("x", false) {
        return;
    }
    let p = "try:\n    f()\nexcept OSError as e:\n    print('BLOCKED', e.errno)";
    while !done() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}
"#;

const NEW_CIRCLE: &str = "agentjail-engine: 2 files: crates/agentjail-engine/src/hostpath.rs \
    crates/agentjail-engine/src/verdict.rs";

fn plants() -> Vec<Plant> {
    let long_fn = format!(
        "\nfn planted_long() {{\n{}}}\n",
        "    let _ = 1;\n".repeat(85)
    );
    vec![
        plant("rule 0 ", "tests/jail/planted_broken.rs", "fn (\n"),
        // A mechanism of the jail naming another agentjail crate.
        plant(
            "rule 1 ",
            "crates/agentjail-jail/src/caps.rs",
            "\nfn planted() { agentjail_json::to_safe_string(&()); }\n",
        ),
        plant(
            "rule 2 ",
            "crates/agentjail-engine/src/policy/lint.rs",
            "\nfn planted() { agentjail_jail::launch::prepare(); }\n",
        ),
        plant(
            "rule 3 ",
            "crates/agentjail-engine/src/plan/seccomp.rs",
            "\nfn planted() { let _ = std::fs::read(\"x\"); }\n",
        ),
        plant(
            "rule 4 ",
            "crates/agentjail-engine/src/redact.rs",
            "\nfn planted() { unsafe { libc::getpid() }; }\n",
        ),
        plant("rule 5 ", "src/main.rs", "\nuse serde_json::Value;\n"),
        plant("rule 6 ", "crates/agentjail-engine/src/environment.rs", &long_fn),
        // The async stack in the JSON crate.
        showing(
            plant(
                "rule 7 ",
                "crates/agentjail-json/Cargo.toml",
                "\n[dependencies.tokio]\nversion = \"1\"\n",
            ),
            "agentjail-json -> tokio",
        ),
        // A front end depending on the binary instead of the engine crate.
        showing(
            plant(
                "rule 7 ",
                "crates/agentjail-http/Cargo.toml",
                "\n[dev-dependencies.agentjail]\npath = \"../..\"\n",
            ),
            "agentjail-http -> agentjail (dev): an arrow the architecture does not draw: agentjail is the binary",
        ),
        plant(
            "rule 8 ",
            "tests/jail/planted_long.rs",
            &"// a line\n".repeat(1501),
        ),
        // The kernel module named from the engine crate.
        plant(
            "rule 9 ",
            "crates/agentjail-engine/src/cache.rs",
            "\nfn planted() { agentjail_jail::sys::getpid(); }\n",
        ),
        plant("rule 10 ", "tests/jail/planted.rs", SHAPES),
        plant("rule 11 ", "tests/jail/planted.rs", ""),
        plant("rule 12 ", "tests/jail/planted.rs", ""),
        // A new circle: two leaves naming each other.
        showing(
            plant(
                "rule 13 ",
                "crates/agentjail-engine/src/verdict.rs",
                "\npub fn planted_a() { crate::hostpath::planted_b() }\n",
            ),
            NEW_CIRCLE,
        ),
        showing(
            plant(
                "rule 13 ",
                "crates/agentjail-engine/src/hostpath.rs",
                "\npub fn planted_b() { crate::verdict::planted_a() }\n",
            ),
            NEW_CIRCLE,
        ),
        // The engine importing what the front ends share (the socket and signals).
        plant(
            "rule 14 ",
            "crates/agentjail-engine/src/engine/pool.rs",
            "\nfn planted() { crate::listen::signalled(); }\n",
        ),
        // The engine crate naming a front end, the binary's (cargo would refuse it too).
        showing(
            plant(
                "rule 14 ",
                "crates/agentjail-engine/src/pipeline/stages.rs",
                "\nfn planted() { agentjail::mcp::exec_server_binary(); }\n",
            ),
            "crates/agentjail-engine/src/pipeline/stages.rs:",
        ),
        // A module of the engine crate, and one of the binary, in no layer of its crate.
        showing(
            plant(
                "rule 14 ",
                "crates/agentjail-engine/src/lib.rs",
                "\npub mod planted_layerless;\n",
            ),
            "crates/agentjail-engine/src/planted_layerless.rs: a module of agentjail-engine in no layer",
        ),
        plant(
            "rule 14 ",
            "crates/agentjail-engine/src/planted_layerless.rs",
            "",
        ),
        showing(
            plant("rule 14 ", "src/main.rs", "\nmod planted_unlayered;\n"),
            "src/planted_unlayered.rs: a module of agentjail in no layer",
        ),
        plant("rule 14 ", "src/planted_unlayered.rs", ""),
        plant(
            "rule 15 ",
            "crates/agentjail-engine/src/inputs.rs",
            "\npub fn planted() -> Result<(), String> { Ok(()) }\n",
        ),
        plant("rule 16 ", "README.md", "\nSee `src/planted_missing.rs`.\n"),
    ]
}

/// A copy of the tree to plant in: the directories plants go in are copied, the rest are
/// symlinks to the real ones (the xtask does not walk a symlinked directory).
fn scratch() -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix("house-rules-test-")
        .tempdir()
        .unwrap();
    for entry in std::fs::read_dir(ROOT).unwrap().flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if matches!(name.as_ref(), "target" | ".git") {
            continue;
        }
        let copy = matches!(
            name.as_ref(),
            "src" | "crates" | "tests" | "README.md" | "Cargo.toml" | "Cargo.lock"
        );
        if copy {
            copy_tree(&entry.path(), &d.path().join(name.as_ref()));
        } else {
            std::os::unix::fs::symlink(entry.path(), d.path().join(name.as_ref())).unwrap();
        }
    }
    d
}

fn copy_tree(from: &Path, to: &Path) {
    if from.is_file() {
        std::fs::copy(from, to).unwrap();
        return;
    }
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.file_name() != "target" {
            copy_tree(&e.path(), &to.join(e.file_name()));
        }
    }
}

#[test]
fn the_real_tree_keeps_the_house_rules() {
    let out = house(Path::new(ROOT));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("house rules: 0 findings"), "{stdout}");
}

#[test]
fn every_rule_fails_on_its_plant_and_only_there() {
    assert_only_plants_fire(plants(), true);
}

/// Plant `plants` (and, with `honest`, the test shapes' honest twin) in a copy of the tree:
/// the xtask fails, each plant is reported with its rule at its place, and nothing else is.
fn assert_only_plants_fire(plants: Vec<Plant>, honest: bool) {
    let d = scratch();
    for p in &plants {
        let path = d.path().join(p.file);
        let mut text = std::fs::read_to_string(&path).unwrap_or_default();
        text.push_str(&p.text);
        std::fs::write(&path, text).unwrap();
    }
    if honest {
        std::fs::write(d.path().join("tests/jail/honest.rs"), HONEST).unwrap();
    }
    let out = house(d.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let findings: Vec<&str> = stdout.lines().filter(|l| l.starts_with("rule ")).collect();
    for p in &plants {
        let fired = findings
            .iter()
            .any(|f| f.starts_with(p.rule) && f.contains(p.shows));
        assert!(fired, "{} did not fire at {}:\n{stdout}", p.rule, p.shows);
    }
    for f in &findings {
        let planted = plants
            .iter()
            .any(|p| f.starts_with(p.rule) && f.contains(p.shows));
        assert!(planted, "a finding no plant made:\n{f}\n{stdout}");
    }
    assert!(
        !stdout.contains("honest.rs"),
        "an honest test was flagged:\n{stdout}"
    );
}
