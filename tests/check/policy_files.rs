//! Policy files: every shipped policy loads, the embedded default is the shipped file, bad
//! input fails with file/line/key and never panics, show round-trips, lint is specific.

use agentjail_engine::policy::{
    lint, load_default, load_file, load_str, show, Policy, PolicyError, DEFAULT_POLICY_TOML,
};
use proptest::prelude::*;
use sha2::{Digest, Sha256};
use std::path::Path;

const BASE: &str = "version = 1\n";

pub(crate) fn policies_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("policies")
}

fn err(text: &str) -> PolicyError {
    match load_str(text, "test.toml") {
        Ok(p) => panic!("accepted:\n{text}\n{:?}", p.policy),
        Err(e) => e,
    }
}

/// The error names the key and the line, and its Display carries both and a hint.
fn assert_err(text: &str, key: &str, line: usize) -> PolicyError {
    let e = err(text);
    assert_eq!(e.key.as_deref(), Some(key), "{e}");
    assert_eq!(e.position.map(|p| p.0), Some(line), "{e}");
    let shown = e.to_string();
    assert!(shown.contains(&format!("test.toml:{line}:")), "{shown}");
    assert!(shown.contains(key), "{shown}");
    assert!(shown.contains("hint:"), "{shown}");
    e
}

#[test]
fn every_shipped_policy_loads_and_round_trips() {
    let mut n = 0;
    for entry in std::fs::read_dir(policies_dir()).expect("policies/") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let loaded = load_file(&path).unwrap_or_else(|e| panic!("{e}"));
        let bytes = std::fs::read(&path).expect("read");
        assert_eq!(loaded.sha256, format!("{:x}", Sha256::digest(&bytes)));
        let again = load_str(&show(&loaded), "show").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again.policy, loaded.policy, "{}", path.display());
        n += 1;
    }
    assert!(n >= 2, "default.toml and data.toml at least");
}

/// `policy show` names every syscall the groups resolve to, the count the record's seccomp
/// entry gives, and docs/SECURITY.md's figure for the default policy is that count.
#[test]
fn policy_show_lists_the_syscalls_the_record_counts() {
    for name in ["default.toml", "data.toml", "workspace.toml", "judge.toml"] {
        let loaded = load_file(&policies_dir().join(name)).unwrap_or_else(|e| panic!("{e}"));
        let s = &loaded.policy.seccomp;
        let plan = agentjail_jail::syscall_groups::resolve(
            s.requirement,
            &s.allow_groups,
            &s.errno_syscalls,
        )
        .unwrap();
        let shown = show(&loaded);
        let head = format!(
            "# [seccomp] allow_groups resolve to {} syscalls:\n",
            plan.allowed.len()
        );
        let at = shown
            .find(&head)
            .unwrap_or_else(|| panic!("{name}: no {head:?} in\n{shown}"));
        let listed: Vec<&str> = shown[at + head.len()..]
            .lines()
            .take_while(|l| l.starts_with("#   "))
            .flat_map(|l| l[1..].split_whitespace())
            .collect();
        assert_eq!(listed, plan.allowed, "{name}");
        if name == "default.toml" {
            let security = std::fs::read_to_string(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/SECURITY.md"),
            )
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
            let claim = format!(
                "({} syscalls in the default policy's groups",
                plan.allowed.len()
            );
            assert!(
                security.contains(&claim),
                "docs/SECURITY.md must say {claim:?}"
            );
        }
    }
}

#[test]
fn embedded_default_is_the_shipped_file() {
    let file = std::fs::read(policies_dir().join("default.toml")).expect("read");
    assert_eq!(DEFAULT_POLICY_TOML.as_bytes(), &file[..]);
    let d = load_default().expect("the default loads on this host");
    assert_eq!(d.sha256, format!("{:x}", Sha256::digest(&file)));
    assert_eq!(d.sha256, load_default().expect("default").sha256, "stable");
    assert_eq!(d.path, "<embedded default>");
    let shown = show(&d);
    assert!(shown.contains(&d.sha256));
    assert!(shown.contains("defence in depth"));
    assert!(shown.contains("memory = \"256MiB\""));
}

#[test]
fn minimal_file_gets_every_default() {
    let mut p = load_str(BASE, "min").expect("loads").policy;
    // What the loader found the interpreter to be is the one thing added.
    let found = p
        .interpreter
        .found
        .take()
        .expect("the interpreter was detected");
    assert_eq!(p, Policy::default());
    assert!(found.how.contains("/usr/bin/python3"), "{found:?}");
}

/// The interpreter's version is detected when the policy does not give it, must match when
/// it does, and an interpreter that is not Python, or a version without module tables, is
/// refused with the key, the reason and the fix (`agentjail` exits 2; nothing is started).
#[test]
fn python_version_is_detected_or_refused() {
    let d = load_str(BASE, "min").expect("loads");
    let found = d.policy.interpreter.found.clone().expect("detected");
    assert!(["3.10", "3.11", "3.12", "3.13"].contains(&found.version.as_str()));
    assert_eq!(d.policy.python_version(), found.version);
    assert!(show(&d).contains(&format!(
        "# interpreter.python_version = \"{}\": detected from /usr/bin/python3",
        found.version
    )));
    // Named and right: loads, and says it was given.
    let named = format!(
        "version = 1\n[interpreter]\npython_version = \"{}\"\n",
        found.version
    );
    let p = load_str(&named, "named").expect("loads").policy;
    assert!(p
        .python_version_source()
        .starts_with("given by the policy; detected"));
    // Named and wrong.
    let other = if found.version == "3.12" {
        "3.13"
    } else {
        "3.12"
    };
    let e = assert_err(
        &format!("version = 1\n[interpreter]\npython_version = \"{other}\"\n"),
        "interpreter.python_version",
        3,
    );
    assert!(
        e.message.contains(&format!("is Python {}", found.version)),
        "{e}"
    );
    // No tables for it.
    let e = assert_err(
        "version = 1\n[interpreter]\npython_version = \"3.9\"\n",
        "interpreter.python_version",
        3,
    );
    assert!(e.message.contains("3.10, 3.11, 3.12, 3.13"), "{e}");
    // Not Python: a shell, a script.
    let e = assert_err(
        "version = 1\n[interpreter]\npython = \"/usr/bin/sh\"\n",
        "interpreter.python",
        3,
    );
    assert!(e.message.contains("not a Python interpreter"), "{e}");
}

#[test]
fn unknown_keys() {
    assert_err("version = 1\nbogus = 2\n", "bogus", 2);
    assert_err(
        "version = 1\n[limits]\nmemroy = \"1GiB\"\n",
        "limits.memroy",
        3,
    );
    assert_err("version = 1\n[nope]\nx = 1\n", "nope", 2);
    let e = assert_err(
        "version = 1\n\n[check]\ndeny_dunder = true\nallowed_import = []\n",
        "check.allowed_import",
        5,
    );
    assert!(e.message.contains("unknown field"), "{e}");
}

#[test]
fn wrong_types_and_bad_sizes() {
    assert_err("version = 1\n[limits]\npids = \"many\"\n", "limits.pids", 3);
    assert_err(
        "version = 1\n[network]\nenabled = \"no\"\n",
        "network.enabled",
        3,
    );
    assert_err(
        "version = 1\n[limits]\nwall_time_ms = -5\n",
        "limits.wall_time_ms",
        3,
    );
    assert_err("version = 1\n[limits]\nmemory = -1\n", "limits.memory", 3);
    assert_err(
        "version = 1\n[limits]\nmemory = \"12XB\"\n",
        "limits.memory",
        3,
    );
    assert_err(
        "version = 1\n[limits]\nmemory = \"99999999999999999999GiB\"\n",
        "limits.memory",
        3,
    );
    assert_err(
        "version = 1\n[limits]\npids = 99999999999999999999999\n",
        "limits.pids",
        3,
    );
    assert_err(
        "version = 1\n[seccomp]\nrequirement = \"maybe\"\n",
        "seccomp.requirement",
        3,
    );
}

#[test]
fn impossible_values() {
    assert_err("version = 2\n", "version", 1);
    assert_err(
        "version = 1\n[limits]\nwall_time_ms = 0\n",
        "limits.wall_time_ms",
        3,
    );
    assert_err(
        "version = 1\n[limits]\ncpu_time_ms = 3600001\n",
        "limits.cpu_time_ms",
        3,
    );
    let e = assert_err(
        "version = 1\n[limits]\nmemory = \"16MiB\"\n",
        "limits.memory",
        3,
    );
    assert!(e.message.contains("cannot start"), "{e}");
    assert_err(
        "version = 1\n[limits]\nmemory = \"64MiB\"\ntmp_size = \"128MiB\"\n",
        "limits.tmp_size",
        4,
    );
    assert_err(
        "version = 1\n[limits]\nstdout = \"65MiB\"\n",
        "limits.stdout",
        3,
    );
    assert_err("version = 1\n[limits]\npids = 0\n", "limits.pids", 3);
    assert_err(
        "version = 1\n[budget]\nmax_seconds = 1\n",
        "budget.max_seconds",
        3,
    );
    assert_err(
        "version = 1\n[seccomp]\nallow_groups = [\"basic_io\", \"exec\", \"raw_io\"]\n",
        "seccomp.allow_groups",
        3,
    );
    assert_err(
        "version = 1\n[seccomp]\nallow_groups = [\"basic_io\"]\n",
        "seccomp.allow_groups",
        3,
    );
    assert_err(
        "version = 1\n[interpreter]\npython = \"python3\"\n",
        "interpreter.python",
        3,
    );
    assert_err(
        "version = 1\n[interpreter]\npython = \"/opt/py/bin/python3\"\n",
        "interpreter.python",
        3,
    );
    assert_err(
        "version = 1\n[landlock]\nmin_abi = 0\n",
        "landlock.min_abi",
        3,
    );
}

/// A policy that executes javascript: the default's groups plus `javascript`.
const JS: &str = "version = 1\n[languages]\nexecute = [\"python\", \"javascript\"]\n[seccomp]\nallow_groups = [\"basic_io\", \"files_read\", \"memory\", \"process_self\", \"threads\", \"signals\", \"time\", \"poll\", \"pipes\", \"exec\", \"system_info\", \"javascript\"]\n";

#[test]
fn javascript_settings_are_validated_strictly() {
    let p = load_str(JS, "js").expect("loads").policy;
    assert!(p.executes("javascript") && p.executes("python"));
    assert_eq!(p.interpreter.node, "/usr/bin/node");
    assert_eq!(
        p.interpreter.node_args,
        agentjail_engine::policy::DEFAULT_NODE_ARGS
    );
    // languages.execute: only what the binary runs, once each.
    assert_err(
        "version = 1\n[languages]\nexecute = [\"python\", \"ruby\"]\n",
        "languages.execute",
        3,
    );
    assert_err(
        "version = 1\n[languages]\nexecute = [\"python\", \"python\"]\n",
        "languages.execute",
        3,
    );
    // javascript needs its syscall group and room for node.
    // (allow_groups is not in the file: the error names the key, with no position.)
    let e = err("version = 1\n[languages]\nexecute = [\"javascript\"]\n");
    assert_eq!(e.key.as_deref(), Some("seccomp.allow_groups"), "{e}");
    assert!(
        e.message.contains("eventfd2") && e.hint.contains("javascript"),
        "{e}"
    );
    // ... and eventfd2 left to it: refused with an errno, node aborts at start.
    let e = err(&format!("{JS}errno_syscalls = [\"eventfd2\"]\n"));
    assert_eq!(e.key.as_deref(), Some("seccomp.errno_syscalls"), "{e}");
    assert!(e.message.contains("uv_loop_init"), "{e}");
    let e = assert_err(
        &format!("{JS}[limits]\nmemory = \"64MiB\"\n"),
        "limits.memory",
        7,
    );
    assert!(e.message.contains("node"), "{e}");
    assert_err(
        &format!("{JS}[interpreter]\nnode = \"/opt/node/bin/node\"\n"),
        "interpreter.node",
        7,
    );
    // node_args: flags that take away or tune, nothing that loads code or grants access.
    for (flag, hint) in [
        ("--require=/tmp/x.js", "accepted flags"),
        ("-e", "accepted flags"),
        ("--import=data:text/javascript,1", "accepted flags"),
        ("--inspect=0.0.0.0:9229", "accepted flags"),
        ("--expose-internals", "accepted flags"),
        ("--env-file=/etc/passwd", "accepted flags"),
        ("--allow-fs-read=*", "grants the runner's read itself"),
        (
            "--max-old-space-size=100000",
            "derives --max-old-space-size",
        ),
        ("--disable-proto=", "accepted flags"),
        ("--v8-pool-size=2 --expose-internals", "accepted flags"),
    ] {
        let text = format!("{JS}[interpreter]\nnode_args = [\"--no-expose-wasm\", \"{flag}\"]\n");
        let e = assert_err(&text, "interpreter.node_args", 7);
        assert!(e.hint.contains(hint), "{flag}: {e}");
    }
    load_str(
        &format!("{JS}[interpreter]\nnode_args = [\"--v8-pool-size=2\", \"--disable-proto=delete\", \"--jitless\"]\n"),
        "t",
    )
    .expect("tuning flags are accepted");
    // [check.javascript]: strict keys, module specifiers, identifiers, depth.
    assert_err(
        "version = 1\n[check.javascript]\nallowed_module = []\n",
        "check.javascript.allowed_module",
        3,
    );
    for m in [
        "fs",
        "node:child_process",
        "vm/x",
        "../lib",
        "/abs",
        "_http_client",
        "a b",
        "",
    ] {
        let text = format!("version = 1\n[check.javascript]\nallowed_modules = [\"{m}\"]\n");
        assert_err(&text, "check.javascript.allowed_modules", 3);
    }
    load_str(
        "version = 1\n[check.javascript]\nallowed_modules = [\"util\", \"node:assert\", \"@scope/pkg\", \"lodash/fp\"]\n",
        "t",
    )
    .expect("module names");
    assert_err(
        "version = 1\n[check.javascript]\ndenied_globals = [\"a-b\"]\n",
        "check.javascript.denied_globals",
        3,
    );
    assert_err(
        "version = 1\n[check.javascript]\nmax_nesting_depth = 0\n",
        "check.javascript.max_nesting_depth",
        3,
    );
}

#[test]
fn data_policy_executes_javascript() {
    let p = load_file(&policies_dir().join("data.toml"))
        .expect("data")
        .policy;
    assert_eq!(p.languages.execute, ["python", "javascript"]);
    assert!(p.seccomp.allow_groups.iter().any(|g| g == "javascript"));
    assert_eq!(
        p.interpreter.node_args,
        agentjail_engine::policy::DEFAULT_NODE_ARGS
    );
    assert_eq!(
        p.check.javascript,
        agentjail_check::javascript::JsRules::default()
    );
    // The test policy the JavaScript jail tests use loads too, and round-trips.
    let t = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/policies/javascript.toml");
    let loaded = load_file(&t).expect("tests/policies/javascript.toml");
    let again = load_str(&show(&loaded), "show").expect("show loads");
    assert_eq!(again.policy, loaded.policy);
    assert!(show(&loaded).contains("[check.javascript]"));
}

#[test]
fn secret_and_malformed_binds() {
    for (bind, line) in [
        ("/etc", 4),
        ("/home", 4),
        ("/", 4),
        ("/etc/ssl", 4),
        ("/var/lib", 4),
        ("/proc", 4),
        ("/tmp", 4),
    ] {
        let text =
            format!("version = 1\n[filesystem]\nread_only = [\n  \"{bind}\",\n  \"/usr\",\n]\n");
        let e = assert_err(&text, "filesystem.read_only", line);
        assert_eq!(e.position.map(|p| p.1), Some(3), "{e}");
    }
    assert_err(
        "version = 1\n[filesystem]\nread_only = [\"/usr\", \"lib\"]\n",
        "filesystem.read_only",
        3,
    );
    assert_err(
        "version = 1\n[filesystem]\nread_only = [\"/usr\", \"/usr/../etc\"]\n",
        "filesystem.read_only",
        3,
    );
    assert_err(
        "version = 1\n[filesystem]\noptional = [\"/root\"]\n",
        "filesystem.optional",
        3,
    );
}

#[test]
fn forbidden_environment() {
    for name in [
        "LD_PRELOAD",
        "PYTHONPATH",
        "PATH",
        "HOME",
        "GLIBC_TUNABLES",
        "pythonstartup",
    ] {
        let text = format!("version = 1\n[environment.extra]\nOK = \"1\"\n{name} = \"x\"\n");
        assert_err(&text, "environment.extra", 4);
    }
    load_str(
        "version = 1\n[environment.extra]\nOMP_NUM_THREADS = \"1\"\n",
        "t",
    )
    .expect("allowed");
}

#[test]
fn empty_garbage_and_non_utf8() {
    assert_err("", "version", 1);
    assert_err("# only a comment\n", "version", 1);
    let e = err("\0\u{1}\u{2}garbage\u{7f}");
    assert!(e.position.is_some(), "{e}");
    let e = err("version = 1\n[limits\n");
    assert_eq!(e.position.map(|p| p.0), Some(2), "{e}");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, b"version = 1\nname = \"\xff\xfe\"\n").expect("write");
    let e = load_file(&path).expect_err("invalid utf-8");
    assert_eq!(e.position, Some((2, 9)), "{e}");
    assert!(e.to_string().contains("bad.toml:2:9"), "{e}");
    let e = load_file(&dir.path().join("missing.toml")).expect_err("missing");
    assert!(e.to_string().contains("missing.toml"), "{e}");
}

fn lint_keys(text: &str) -> Vec<(String, String)> {
    let p = load_str(text, "lint")
        .unwrap_or_else(|e| panic!("{e}"))
        .policy;
    lint(&p).into_iter().map(|w| (w.key, w.message)).collect()
}

/// The warnings default.toml keeps on purpose (explained in its comments).
const DEFAULT_WARNINGS: [&str; 2] = ["cgroup.requirement", "landlock.requirement"];

#[test]
fn lint_default_only_explained_warnings() {
    let w = lint(&load_default().expect("default").policy);
    let keys: Vec<&str> = w.iter().map(|w| w.key.as_str()).collect();
    assert_eq!(keys, DEFAULT_WARNINGS, "{w:?}");
}

#[test]
fn lint_data_policy() {
    let loaded = load_file(&policies_dir().join("data.toml")).expect("data");
    let w = lint(&loaded.policy);
    // Only the deliberate process_spawn opt-in, best-effort landlock and `open` (bounded by
    // the jail); no import path reaches a dangerous module.
    let keys: Vec<&str> = w.iter().map(|w| w.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "seccomp.allow_groups",
            "landlock.requirement",
            "check.denied_calls"
        ],
        "{w:?}"
    );
    assert!(w[0].message.starts_with("process_spawn"));
    assert!(w[2].message.starts_with("open is allowed"));
}

#[test]
fn lint_flags_each_weak_choice() {
    let strict = "version = 1\n[cgroup]\nrequirement = \"required\"\n[landlock]\nrequirement = \"required\"\n";
    assert!(lint_keys(strict).is_empty(), "{:?}", lint_keys(strict));
    let cases: &[(&str, &str, &str)] = &[
        (
            "[network]\nenabled = true\n",
            "network.enabled",
            "network is on",
        ),
        (
            "[seccomp]\nallow_groups = [\"exec\", \"network\"]\n",
            "seccomp.allow_groups",
            "network",
        ),
        (
            "[seccomp]\nallow_groups = [\"exec\", \"sockets_local\"]\n",
            "seccomp.allow_groups",
            "sockets_local",
        ),
        (
            "[seccomp]\nallow_groups = [\"exec\", \"process_spawn\"]\n",
            "seccomp.allow_groups",
            "process_spawn",
        ),
        (
            "[seccomp]\nrequirement = \"best_effort\"\n",
            "seccomp.requirement",
            "best_effort",
        ),
        (
            "[limits]\nmemory = \"8GiB\"\ntmp_size = \"64MiB\"\n",
            "limits.memory",
            "very large",
        ),
        (
            "[limits]\nwall_time_ms = 600000\n[budget]\nmax_seconds = 700\n",
            "limits.wall_time_ms",
            "5 minutes",
        ),
        (
            "[limits]\ncpu_time_ms = 600000\n",
            "limits.cpu_time_ms",
            "5 minutes",
        ),
        ("[limits]\nstdout = \"8MiB\"\n", "limits.stdout", "8MiB"),
        ("[limits]\nstderr = \"8MiB\"\n", "limits.stderr", "8MiB"),
        (
            "[check]\ndeny_dunder = false\n",
            "check.deny_dunder",
            "__subclasses__",
        ),
        (
            "[check]\ndenied_calls = [\"open\"]\n",
            "check.denied_calls",
            "eval, exec, compile, __import__",
        ),
        (
            "[check]\nallowed_imports = [\"os\"]\n",
            "check.allowed_imports",
            "directly",
        ),
        (
            "[check]\nallowed_imports = [\"statistics\"]\ndenied_attributes = []\n",
            "check.allowed_imports",
            "statistics.random._os",
        ),
        (
            "[check]\nallowed_imports = [\"json\"]\ndenied_attributes = [\"sys\"]\n",
            "check.allowed_imports",
            "json.codecs.builtins",
        ),
        (
            "[check]\nallowed_imports = [\"uuid\"]\ndenied_attributes = [\"os\", \"sys\"]\n",
            "check.allowed_imports",
            "uuid.platform",
        ),
        (
            "[check]\nallowed_imports = [\"scipy\"]\n",
            "check.allowed_imports",
            "audit by hand",
        ),
        (
            "[check]\nallowed_imports = [\"numpy\"]\n",
            "check.allowed_imports",
            "numpy reaches ctypes",
        ),
        (
            "[check]\ndenied_calls = [\"eval\"]\n",
            "check.denied_calls",
            "open is allowed",
        ),
        (
            "[check]\ndenied_attributes = [\"sys\"]\n",
            "check.denied_attributes",
            "gi_frame",
        ),
        (
            "[interpreter]\npython_args = [\"-S\"]\n",
            "interpreter.python_args",
            "-I",
        ),
        (
            "[filesystem]\nread_only = [\"/usr\", \"/opt/tool\"]\n",
            "filesystem.read_only",
            "/opt/tool",
        ),
        (
            "[seccomp]\nallow_groups = [\"exec\", \"javascript\"]\n",
            "seccomp.allow_groups",
            "javascript: the group is on",
        ),
        (
            "[languages]\nallowed = [\"python\"]\nexecute = [\"python\", \"javascript\"]\n[seccomp]\nallow_groups = [\"exec\", \"javascript\"]\n",
            "languages.execute",
            "javascript is executed but not in languages.allowed",
        ),
        (
            "[languages]\nexecute = [\"javascript\"]\n[seccomp]\nallow_groups = [\"exec\", \"javascript\"]\n[interpreter]\nnode_args = [\"--disable-proto=delete\"]\n",
            "interpreter.node_args",
            "--disallow-code-generation-from-strings is missing",
        ),
        (
            "[languages]\nexecute = [\"javascript\"]\n[seccomp]\nallow_groups = [\"exec\", \"javascript\"]\n[interpreter]\nnode_args = []\n",
            "interpreter.node_args",
            "--experimental-permission is missing",
        ),
        (
            "[languages]\nexecute = [\"javascript\"]\n[seccomp]\nallow_groups = [\"exec\", \"javascript\"]\n[check.javascript]\nallow_computed_member = true\n",
            "check.javascript.allow_computed_member",
            "Function",
        ),
    ];
    for (extra, key, needle) in cases {
        let text = format!("{strict}{extra}");
        let w = lint_keys(&text);
        assert!(
            w.iter().any(|(k, m)| k == key && m.contains(needle)),
            "{extra}: expected {key} containing {needle:?}, got {w:?}"
        );
    }
}

// -- check.enforce = false: the check reports, the jail alone holds -----------------------

/// The jail's full controls, as a policy that may turn the check off must have them.
const FULL_JAIL: &str =
    "version = 1\n[landlock]\nrequirement = \"required\"\n[check]\nenforce = false\n";

#[test]
fn an_unenforced_check_needs_the_jails_full_controls() {
    let p = load_str(FULL_JAIL, "test.toml").unwrap_or_else(|e| panic!("{e}"));
    assert!(!p.policy.check.enforce);
    let line = |text: &str| text.lines().position(|l| l == "enforce = false").unwrap() + 1;
    // Each control missing (or widened) is refused at load, the error on check.enforce.
    let cases: &[(&str, &str)] = &[
        ("[landlock]\nrequirement = \"best_effort\"\n", "landlock.requirement"),
        ("[seccomp]\nrequirement = \"best_effort\"\n", "seccomp.requirement"),
        ("[network]\nenabled = true\n", "network.enabled"),
        (
            "[network]\nmode = \"allowlist\"\nallow = [\"pypi.org:443\"]\n[seccomp]\nallow_groups = [\"exec\", \"network\"]\n",
            "allowlist",
        ),
        ("[seccomp]\nallow_groups = [\"exec\", \"network\"]\n", "\"network\""),
        ("[seccomp]\nallow_groups = [\"exec\", \"sockets_local\"]\n", "sockets_local"),
        ("[seccomp]\nallow_groups = [\"exec\", \"process_spawn\"]\n", "process_spawn"),
        (
            "[workspace]\nenabled = true\nhost_roots = [\"/srv/aj\"]\nhost_quota_acknowledged = true\n",
            "workspace.host_roots",
        ),
    ];
    for (extra, needle) in cases {
        // A later table of the same name would be a TOML error: replace the one above.
        let base = if extra.starts_with("[landlock]") {
            FULL_JAIL.replace("[landlock]\nrequirement = \"required\"\n", "")
        } else {
            FULL_JAIL.to_string()
        };
        let text = format!("{base}{extra}");
        let e = assert_err(&text, "check.enforce", line(&text));
        assert!(e.to_string().contains(needle), "{extra}: {e}");
    }
    // Without landlock required (the default is best-effort), `enforce = false` alone is refused.
    let e = assert_err(
        "version = 1\n[check]\nenforce = false\n",
        "check.enforce",
        3,
    );
    assert!(e.to_string().contains("landlock"), "{e}");
    // A wrong type is the loader's usual error.
    assert_err(
        "version = 1\n[check]\nenforce = \"no\"\n",
        "check.enforce",
        3,
    );
}

#[test]
fn every_shipped_policy_but_judge_open_enforces_its_check() {
    assert!(load_default().expect("default").policy.check.enforce);
    let mut open = Vec::new();
    for entry in std::fs::read_dir(policies_dir()).expect("policies/") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) == Some("toml")
            && !load_file(&path)
                .unwrap_or_else(|e| panic!("{e}"))
                .policy
                .check
                .enforce
        {
            open.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    assert_eq!(open, ["judge-open.toml"]);
}

/// judge-open.toml is judge.toml's Python with the check reported instead of enforced and
/// its own name: nothing else differs (judge.toml also executes JavaScript, with node's
/// seccomp group and its computed-member rule off, and the languages without a static
/// check, which judge-open.toml does not), so its findings are exactly judge.toml's
/// refusals.
#[test]
fn judge_open_is_judge_with_the_check_reported() {
    let judge = load_file(&policies_dir().join("judge.toml"))
        .expect("judge")
        .policy;
    let open = load_file(&policies_dir().join("judge-open.toml"))
        .expect("judge-open")
        .policy;
    assert!(judge.check.enforce && !open.check.enforce);
    assert_eq!(open.name, "judge-open");
    assert_eq!(
        open.landlock.requirement,
        agentjail_engine::policy::Requirement::Required
    );
    let mut same = open.clone();
    same.name = judge.name.clone();
    same.description = judge.description.clone();
    same.check.enforce = true;
    same.landlock.requirement = judge.landlock.requirement;
    let mut python_judge = judge.clone();
    python_judge.languages = agentjail_engine::policy::Languages {
        allowed: vec!["python".into()],
        execute: vec!["python".into()],
        output_modes: judge.languages.output_modes.clone(),
        ..Default::default()
    };
    python_judge
        .seccomp
        .allow_groups
        .retain(|g| g != "javascript");
    assert!(judge.check.javascript.allow_computed_member);
    python_judge.check.javascript = open.check.javascript.clone();
    assert_eq!(same, python_judge);
}

#[test]
fn lint_says_first_and_loudly_that_the_check_refuses_nothing() {
    // First, whatever else is weak (here the default best-effort cgroup, which the check
    // never stood in for: it refuses no memory or CPU hog).
    let w = lint_keys(FULL_JAIL);
    let keys: Vec<&str> = w.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["check.enforce", "cgroup.requirement"], "{w:?}");
    assert!(w[0].1.contains("REFUSES NOTHING"), "{w:?}");
    let open = load_file(&policies_dir().join("judge-open.toml")).expect("judge-open");
    let w = lint(&open.policy);
    assert_eq!(w[0].key, "check.enforce", "{w:?}");
    // The enforcing judge policy has no such warning.
    let judge = load_file(&policies_dir().join("judge.toml")).expect("judge");
    assert!(lint(&judge.policy).iter().all(|w| w.key != "check.enforce"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn load_str_never_panics(text in ".{0,400}") {
        let _ = load_str(&text, "fuzz");
    }

    #[test]
    fn load_str_never_panics_on_policy_like_text(
        lines in proptest::collection::vec(
            prop_oneof![
                Just("version = 1".to_string()),
                Just("[limits]".to_string()),
                Just("[filesystem]".to_string()),
                Just("[environment.extra]".to_string()),
                "[a-z_.]{1,12} = [-0-9\"a-zA-Z/\\[\\], ]{0,20}",
                "\\[[a-z_.]{0,12}\\]?",
            ],
            0..12,
        )
    ) {
        let text = lines.join("\n");
        if let Err(e) = load_str(&text, "fuzz") {
            let _ = e.to_string();
        }
    }

    #[test]
    fn byte_sizes_round_trip(n in any::<u64>()) {
        let b = agentjail_engine::policy::Bytes(n);
        prop_assert_eq!(agentjail_engine::policy::parse_bytes(&b.to_string()), Ok(n));
    }
}

/// `--policy NAME` (no `/`, no `.toml`) names a shipped policy from any directory: the
/// checkout's `policies/` for a cargo build, `BIN/../share/agentjail/policies` for an
/// install, `$AGENTJAIL_POLICY_DIR` before both; a path still works, and an unknown name is
/// exit 2 with every place looked.
#[test]
fn a_policy_is_named_by_name_from_any_directory() {
    use std::process::Command;
    let bin = crate::common::built_binary("agentjail");
    let elsewhere = tempfile::tempdir().unwrap();
    let show = |bin: &Path, arg: &str, env: Option<&Path>| {
        let mut c = Command::new(bin);
        c.args(["policy", "show", arg])
            .current_dir(elsewhere.path());
        c.env_remove("AGENTJAIL_POLICY_DIR");
        if let Some(d) = env {
            c.env("AGENTJAIL_POLICY_DIR", d);
        }
        c.output().unwrap()
    };
    // A cargo build: CHECKOUT/target/TRIPLE/PROFILE/agentjail finds CHECKOUT/policies.
    // Made here, because the tested binary's own target/ may live outside the checkout
    // (.ci/run links target/ to its build cache).
    let checkout = tempfile::tempdir().unwrap();
    let built = checkout
        .path()
        .join("target/x86_64-unknown-linux-gnu/release/agentjail");
    std::fs::create_dir_all(built.parent().unwrap()).unwrap();
    std::fs::create_dir_all(checkout.path().join("policies")).unwrap();
    std::fs::write(checkout.path().join("Cargo.toml"), "").unwrap();
    std::fs::copy(
        policies_dir().join("python.toml"),
        checkout.path().join("policies/python.toml"),
    )
    .unwrap();
    if std::fs::hard_link(&bin, &built).is_err() {
        std::fs::copy(&bin, &built).unwrap();
    }
    let out = show(&built, "python", None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("policies/python.toml"), "{text}");
    assert!(text.contains("name = \"python\""), "{text}");

    let out = show(&bin, "no-such-policy", None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no policy named \"no-such-policy\""), "{err}");
    assert!(err.contains("/usr/share/agentjail/policies"), "{err}");
    assert!(err.contains("AGENTJAIL_POLICY_DIR"), "{err}");

    // A path is a path: `data.toml` here is this directory's, not the shipped one.
    let out = show(&bin, "data.toml", None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("data.toml"));

    // An install: PREFIX/bin/agentjail finds PREFIX/share/agentjail/policies/NAME.toml.
    let prefix = tempfile::tempdir().unwrap();
    let shared = prefix.path().join("share/agentjail/policies");
    std::fs::create_dir_all(prefix.path().join("bin")).unwrap();
    std::fs::create_dir_all(&shared).unwrap();
    let installed = prefix.path().join("bin/agentjail");
    if std::fs::hard_link(&bin, &installed).is_err() {
        std::fs::copy(&bin, &installed).unwrap();
    }
    let mine = std::fs::read_to_string(policies_dir().join("default.toml"))
        .unwrap()
        .replace("name = \"default\"", "name = \"mine\"");
    std::fs::write(shared.join("mine.toml"), &mine).unwrap();
    let out = show(&installed, "mine", None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("name = \"mine\""));
    // $AGENTJAIL_POLICY_DIR comes first.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mine.toml"),
        mine.replace("name = \"mine\"", "name = \"from-env\""),
    )
    .unwrap();
    let out = show(&installed, "mine", Some(dir.path()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("name = \"from-env\""));
}

/// policies/net.toml: `urllib.request`, `http.client` and `requests` fetches pass the check
/// (the loader lifted `connect`, `request`, `urlopen` because [network] is on), the modules
/// they expose as attributes stay refused, and a policy without network refuses the three
/// network names even where its file leaves them out.
#[test]
fn the_network_names_follow_the_policys_network() {
    use agentjail_check::python::check_source;
    let rules_of = |text: &str| -> Vec<String> {
        let net = load_file(&policies_dir().join("net.toml")).expect("net.toml");
        check_source(text, &net.policy.check)
            .into_iter()
            .map(|v| v.rule)
            .collect()
    };
    let net = load_file(&policies_dir().join("net.toml"))
        .expect("net.toml")
        .policy;
    for name in ["connect", "request", "urlopen"] {
        assert!(
            !net.check.denied_attributes.iter().any(|a| a == name),
            "{name}"
        );
    }
    assert!(!show(&load_file(&policies_dir().join("net.toml")).unwrap()).contains("\"urlopen\""));
    for ok in [
        "import urllib.request\nprint(urllib.request.urlopen('https://example.com/', timeout=5).read())",
        "from urllib.request import urlopen, Request\nurlopen(Request('https://example.com', data=b'x')).read()",
        "import http.client\nc = http.client.HTTPConnection('127.0.0.1', 3128)\nc.request('GET', 'http://x/')\nprint(c.getresponse().read())",
        "import requests\nprint(requests.get('https://example.com', timeout=5).text)",
        "import urllib.parse\nprint(urllib.parse.urlencode({'a': 1}))",
    ] {
        assert_eq!(rules_of(ok), Vec::<String>::new(), "{ok}");
    }
    for (bad, rule) in [
        (
            "import urllib.request\nurllib.request.os",
            "module_attr_not_allowed:urllib.request.os",
        ),
        (
            "import urllib.request\nurllib.request.socket.socket",
            "module_attr_not_allowed:urllib.request.socket",
        ),
        (
            "import http.client\nhttp.client.ssl.SSLContext",
            "module_attr_not_allowed:http.client.ssl",
        ),
        (
            "import requests\nrequests.utils",
            "module_attr_not_allowed:requests.utils",
        ),
        (
            "import urllib.request\nurllib.request.tempfile",
            "module_attr_not_allowed:urllib.request.tempfile",
        ),
    ] {
        let rules = rules_of(bad);
        assert!(rules.iter().any(|r| r == rule), "{bad}: {rules:?}");
    }
    // Network off: the names are denied whatever the file lists.
    let python = std::fs::read_to_string(policies_dir().join("python.toml")).unwrap();
    let without = python.replacen("\"connect\", \"request\", \"urlopen\",", "", 1);
    assert_ne!(without, python, "python.toml's denied_attributes moved");
    let off = load_str(&without, "off.toml").expect("loads").policy;
    for name in ["connect", "request", "urlopen"] {
        assert!(
            off.check.denied_attributes.iter().any(|a| a == name),
            "{name}"
        );
        let code = format!("x = 1\nx.{name}()");
        let found: Vec<String> = check_source(&code, &off.check)
            .into_iter()
            .map(|v| v.rule)
            .collect();
        assert_eq!(found, [format!("attr_not_allowed:{name}")], "{name}");
    }
}

/// `agentjail policy diff OLD NEW`: planted weakenings of a shipped policy (network on,
/// `process_spawn`, a bind of `/opt` (the loader refuses `/var` itself: the unit test
/// plants that one), `enforce = false`) each load, come out `weaker` with
/// exit 1 and first in the report, and undone are exit 0; the same policy twice exits 0; a
/// missing policy exits 2; `--json` says what the text says.
#[test]
fn policy_diff_gates_on_weakenings() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The default policy: judge.toml executes languages without a static check, which the
    // loader takes only with every control, so network on or process_spawn would not load.
    let base = policies_dir().join("default.toml");
    let text = std::fs::read_to_string(&base).expect("default.toml");
    let diff = |args: &[&str]| {
        let out = std::process::Command::new(crate::common::agentjail_path())
            .args(["policy", "diff"])
            .args(args)
            .output()
            .expect("run agentjail");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let b = base.to_str().unwrap();
    let (code, out, _) = diff(&[b, b]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.ends_with("0 change(s): 0 weaker, 0 stronger, 0 neutral\n"),
        "{out}"
    );
    type Plant = fn(&mut toml::Table);
    let plants: [(&str, &str, Plant); 4] = [
        ("network.enabled", "network", |t| {
            set(t, "network", "enabled", true.into())
        }),
        ("seccomp.allow_groups", "syscalls", |t| {
            push(t, "seccomp", "allow_groups", "process_spawn")
        }),
        ("filesystem.read_only", "filesystem", |t| {
            push(t, "filesystem", "read_only", "/opt")
        }),
        // The loader takes enforce = false only with every control required: landlock
        // too (a stronger change beside the weaker one).
        ("check.enforce", "check", |t| {
            set(t, "check", "enforce", false.into());
            set(t, "landlock", "requirement", "required".into());
        }),
    ];
    for (key, exposure, plant) in plants {
        let mut t: toml::Table = toml::from_str(&text).expect("default.toml parses");
        plant(&mut t);
        let path = dir.path().join(format!("{}.toml", key.replace('.', "_")));
        std::fs::write(&path, toml::to_string(&t).expect("toml")).expect("write");
        let p = path.to_str().unwrap();
        let (code, out, err) = diff(&[b, p]);
        assert_eq!(code, Some(1), "{key}: {out}{err}");
        let first = out.lines().nth(2).unwrap_or("");
        assert!(
            first.starts_with(&format!("weaker   {exposure:<10} {key}:")),
            "{key}: {out}"
        );
        let (code, json, _) = diff(&["--json", b, p]);
        assert_eq!(code, Some(1));
        let v: serde_json::Value = serde_json::from_str(&json).expect("json");
        assert_eq!(v["changes"][0]["key"], key, "{v}");
        assert_eq!(v["changes"][0]["direction"], "weaker");
        // Network on also lifts the check's network names (connect, request, urlopen) from
        // check.denied_attributes (Policy::settle_network_attributes): a second weakening,
        // and the diff says so.
        let weakenings = if key == "network.enabled" { 2 } else { 1 };
        assert_eq!(
            v["weaker"], weakenings,
            "{key}: one plant, its weakenings: {v}"
        );
        if key == "network.enabled" {
            assert_eq!(v["changes"][1]["key"], "check.denied_attributes", "{v}");
            assert_eq!(v["changes"][1]["direction"], "weaker", "{v}");
        }
        // Back the other way: stronger, exit 0 (but for the landlock the enforce plant
        // needed, which undone is a weakening of its own).
        let (code, out, _) = diff(&[p, b]);
        if key == "check.enforce" {
            assert_eq!(code, Some(1), "{out}");
            assert!(
                out.contains("\nweaker   isolation  landlock.requirement:"),
                "{out}"
            );
            assert!(
                out.contains("\nstronger check      check.enforce:"),
                "{out}"
            );
        } else {
            assert_eq!(code, Some(0), "{key} undone: {out}");
        }
    }
    let (code, _, err) = diff(&[b, "/nonexistent/policy.toml"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("/nonexistent/policy.toml"), "{err}");
}

/// `[section] key += [item]` in a policy's TOML.
fn push(t: &mut toml::Table, section: &str, key: &str, item: &str) {
    let mut items = t
        .get(section)
        .and_then(|s| s.get(key))
        .and_then(|v| v.as_array())
        .cloned()
        .unwrap_or_default();
    items.push(item.into());
    set(t, section, key, toml::Value::Array(items));
}

/// `[section] key = value` in a policy's TOML.
fn set(t: &mut toml::Table, section: &str, key: &str, value: toml::Value) {
    t.entry(section)
        .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        .as_table_mut()
        .expect("a section")
        .insert(key.to_string(), value);
}
