//! `agentjail explain RECORD`, tested by applying what it says: for each stop reason a policy
//! key can lift, a small program stopped for it, the record explained, the proposed edits
//! applied to the policy file, and the same action run again under the edited policy until it
//! succeeds (a few rounds: a first edit can uncover a second need, a doubled limit may need
//! doubling again). Where no policy
//! can let the action through (a syntax error, the program's own error, an edit the loader
//! refuses), explain proposes nothing and says why.

use crate::common;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

fn bin() -> std::path::PathBuf {
    common::built_binary("agentjail")
}

fn shipped(name: &str) -> toml::Table {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("policies/{name}.toml"));
    toml::from_str(&std::fs::read_to_string(path).expect("policy")).expect("toml")
}

fn run(action: &Value, policy: &Path) -> Value {
    let _running = common::jail_running();
    let dir = policy.parent().expect("dir");
    let a = dir.join("action.json");
    std::fs::write(&a, action.to_string()).expect("write action");
    let out = Command::new(bin())
        .args(["run", "--policy"])
        .arg(policy)
        .arg(&a)
        .output()
        .expect("run");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no record ({e}): {}", String::from_utf8_lossy(&out.stderr)))
}

fn explain(record: &Value, dir: &Path) -> Value {
    let r = dir.join("record.json");
    std::fs::write(&r, record.to_string()).expect("write record");
    let out = Command::new(bin())
        .args(["explain", "--json"])
        .arg(&r)
        .output()
        .expect("explain");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("explain json")
}

/// Apply explain's edits (dotted keys; add, remove or set) to a policy's TOML.
fn apply(t: &mut toml::Table, edits: &Value) {
    for e in edits.as_array().expect("edits") {
        let key = e["key"].as_str().expect("key");
        let (path, last) = key.rsplit_once('.').expect("section.key");
        let mut at = &mut *t;
        for part in path.split('.') {
            at = at
                .entry(part)
                .or_insert_with(|| toml::Value::Table(toml::Table::new()))
                .as_table_mut()
                .expect("table");
        }
        let to_toml = |v: &Value| match v {
            Value::String(s) => toml::Value::String(s.clone()),
            Value::Number(n) => toml::Value::Integer(n.as_i64().expect("integer")),
            Value::Bool(b) => toml::Value::Boolean(*b),
            other => panic!("{key}: {other}"),
        };
        if let Some(v) = e.get("set") {
            at.insert(last.to_string(), to_toml(v));
            continue;
        }
        let mut list = at
            .get(last)
            .and_then(|v| v.as_array())
            .cloned()
            .unwrap_or_default();
        if let Some(add) = e["add"].as_array() {
            list.extend(add.iter().map(to_toml));
        }
        if let Some(rm) = e["remove"].as_array() {
            list.retain(|x| !rm.iter().any(|r| x.as_str() == r.as_str()));
        }
        at.insert(last.to_string(), toml::Value::Array(list));
    }
}

fn action(code: &str) -> Value {
    json!({"id": "explain", "language": "python", "entrypoint": "main.py", "code": code,
           "output_mode": "text"})
}

#[test]
fn each_explained_edit_applied_lets_the_action_run() {
    let mut python_no_sleep = shipped("python");
    python_no_sleep["seccomp"]["allow_groups"]
        .as_array_mut()
        .unwrap()
        .retain(|g| g.as_str() != Some("sleep"));
    let mut python_short = shipped("python");
    python_short["limits"]["wall_time_ms"] = 1000.into();
    let cases: Vec<(&str, toml::Table, &str)> = vec![
        (
            "policy_block:static_policy_violation:import_not_allowed:re",
            shipped("default"),
            "import re\nprint(re.sub('a', 'b', 'aa'))\n",
        ),
        (
            "policy_block:static_policy_violation:call_not_allowed:open",
            shipped("default"),
            "f = open('/tmp/x', 'w')\nf.write('1')\nf.close()\nprint(1)\n",
        ),
        (
            "code_output_too_large",
            shipped("default"),
            "print('x' * 6000)\n",
        ),
        (
            "code_memory_limit",
            shipped("default"),
            "x = bytearray(300 * 1024 * 1024)\nprint(len(x))\n",
        ),
        (
            "code_timeout",
            python_short,
            "import time\ntime.sleep(1.2)\nprint(1)\n",
        ),
        (
            "code_forbidden_syscall:clock_nanosleep",
            python_no_sleep,
            "import time\ntime.sleep(0.01)\nprint(1)\n",
        ),
    ];
    for (reason, policy, code) in cases {
        // code_memory_limit is the memory cgroup's word, which only root's jails have.
        if reason == "code_memory_limit"
            && !common::require_feature("a memory cgroup (root)", common::is_root())
        {
            continue;
        }
        lifted(reason, policy, &action(code), 3);
    }
}

/// Run `action` under `policy`, expect it stopped for `reason`, then explain, apply and
/// rerun until it succeeds, at most `rounds` times.
fn lifted(reason: &str, mut policy: toml::Table, action: &Value, rounds: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("policy.toml");
    std::fs::write(&path, toml::to_string(&policy).unwrap()).unwrap();
    let mut rec = run(action, &path);
    assert_eq!(rec["stop_reason"], reason, "the plant: {rec:#}");
    let mut seen = vec![reason.to_string()];
    for round in 0..rounds {
        let e = explain(&rec, dir.path());
        assert!(e["no_edit"].is_null(), "{reason}, round {round}: {e:#}");
        let edits = &e["edits"];
        assert!(!edits.as_array().unwrap().is_empty(), "{reason}: {e:#}");
        assert!(
            !e["risks"].as_array().unwrap().is_empty(),
            "{reason}: no risk named: {e:#}"
        );
        apply(&mut policy, edits);
        std::fs::write(&path, toml::to_string(&policy).unwrap()).unwrap();
        rec = run(action, &path);
        if rec["stop_reason"] == "success" {
            break;
        }
        seen.push(rec["stop_reason"].as_str().unwrap_or("").to_string());
    }
    assert_eq!(
        rec["stop_reason"], "success",
        "{reason}: edits applied {rounds} times ({seen:?}), still {rec:#}"
    );
}

fn set_key(t: &mut toml::Table, path: &str, v: toml::Value) {
    let (path, last) = path.rsplit_once('.').expect("section.key");
    let mut at = &mut *t;
    for part in path.split('.') {
        at = at[part].as_table_mut().expect("table");
    }
    at.insert(last.to_string(), v);
}

fn with(name: &str, edits: &[(&str, toml::Value)]) -> toml::Table {
    let mut t = shipped(name);
    for (k, v) in edits {
        set_key(&mut t, k, v.clone());
    }
    t
}

fn job(language: &str, entrypoint: &str, code: &str) -> Value {
    json!({"id": "explain", "language": language, "entrypoint": entrypoint, "code": code,
           "output_mode": "text"})
}

/// The rest of the stop-reason table's reasons that a key lifts (docs/REFERENCE.md "Stop
/// reasons"): the contract's budgets, the other limits, the languages' lists, a denied host
/// and the compile step's own limits.
#[test]
fn every_other_reason_a_key_lifts_is_lifted_by_its_edit() {
    let s = |v: &str| toml::Value::String(v.to_string());
    let i = toml::Value::Integer;
    let python = |code: &str| job("python", "main.py", code);
    let bash = |code: &str| job("bash", "main.sh", code);
    let mut cases: Vec<(&str, toml::Table, Value, usize)> = vec![
        (
            "policy_block:language_denied_policy",
            with("data", &[("languages.allowed", toml::Value::Array(vec![s("python")])),
                           ("languages.execute", toml::Value::Array(vec![s("python")]))]),
            job("javascript", "main.js", "console.log(1 + 1);\n"),
            3,
        ),
        (
            "policy_block:language_denied_execution",
            with("data", &[("languages.execute", toml::Value::Array(vec![s("python")]))]),
            job("javascript", "main.js", "console.log(1 + 1);\n"),
            3,
        ),
        (
            "invalid_request:output_mode_denied",
            with("python", &[("languages.output_modes", toml::Value::Array(vec![s("json")]))]),
            python("print(1)\n"),
            3,
        ),
        (
            "invalid_action:code_too_long",
            shipped("default"),
            python(&format!("{}print(1)\n", "x = 1\n".repeat(500))),
            3,
        ),
        (
            "code_cpu_limit",
            with("python", &[("limits.cpu_time_ms", i(100))]),
            python("s = 0\nfor k in range(3_000_000):\n    s += k\nprint(s)\n"),
            6,
        ),
        (
            "max_seconds",
            with("python", &[("limits.wall_time_ms", i(2000)), ("budget.max_seconds", i(2))]),
            python("import time\ntime.sleep(3)\nprint(1)\n"),
            3,
        ),
        (
            "code_stderr_too_large",
            with("judge", &[("limits.stderr", s("16KiB"))]),
            bash("printf '%*s' 40000 x >&2\necho ok\n"),
            3,
        ),
        (
            "compile_timeout",
            with("judge", &[("languages.cpp.compile_limits.wall_time_ms", i(100))]),
            job("cpp", "main.cpp", "#include <bits/stdc++.h>\nint main() { std::vector<int> v{1}; std::cout << v[0] << std::endl; }\n"),
            8,
        ),
    ];
    // A host the allowlist lacks, with denial a stop: explain adds it to network.allow.
    let port = common::site::serve_http(|_, _| {
        b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\nConnection: close\r\n\r\nfetched".to_vec()
    });
    cases.push((
        "code_network_denied:localhost",
        with("net", &[("network.deny_is_stop", toml::Value::Boolean(true))]),
        python(&format!(
            "import urllib.request\nprint(urllib.request.urlopen('http://localhost:{port}/', timeout=10).read().decode())\n"
        )),
        3,
    ));
    let mut payload = python("print(1)\n");
    payload["input_payload"] = json!({"blob": "x".repeat(4096)});
    cases.push((
        "invalid_action:payload_too_large",
        with("python", &[("budget.max_payload_bytes", s("1KiB"))]),
        payload,
        3,
    ));
    // The pids and memory cgroups' words: root's jails have them.
    if common::require_feature("pids and memory cgroups (root)", common::is_root()) {
        cases.push((
            "code_pids_limit",
            // Bash retries a refused fork until it succeeds: the JVM gives up (an
            // OutOfMemoryError for the thread) and exits 1.
            with("judge", &[("limits.pids", i(24))]),
            job("java", "Main.java", "public class Main { public static void main(String[] a) throws Exception { Thread[] t = new Thread[20]; for (int i = 0; i < 20; i++) { t[i] = new Thread(() -> { try { Thread.sleep(300); } catch (InterruptedException e) { } }); t[i].start(); } for (Thread x : t) x.join(); System.out.println(\"ok\"); } }\n"),
            3,
        ));
        cases.push((
            "compile_memory_limit",
            with("judge", &[("languages.cpp.compile_limits.memory", s("64MiB"))]),
            job("cpp", "main.cpp", "#include <bits/stdc++.h>\nint main() { std::map<int, int> m{{1, 2}}; std::cout << m[1] << std::endl; }\n"),
            6,
        ));
    }
    for (reason, policy, action, rounds) in cases {
        lifted(reason, policy, &action, rounds);
    }
}

#[test]
fn where_no_policy_can_help_explain_says_why_and_proposes_nothing() {
    // judge-open's check reports and does not enforce: the program reaches the syscall, and
    // the loader refuses process_spawn to a policy whose check is not enforced.
    let open = shipped("judge-open");
    let cases: Vec<(&str, toml::Table, &str, &str)> = vec![
        (
            "policy_block:static_policy_violation:syntax_error",
            shipped("default"),
            "def f(:\n  pass\n",
            "change the program",
        ),
        (
            "code_runtime_error:3",
            shipped("default"),
            "raise SystemExit(3)\n",
            "fix the program",
        ),
        (
            "code_forbidden_syscall:clone",
            open.clone(),
            "import os\nos.fork()\n",
            "loader refuses",
        ),
        (
            "code_forbidden_syscall:setuid",
            open,
            "import os\nos.setuid(0)\n",
            "in no group a policy may allow",
        ),
    ];
    for (reason, policy, code, says) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("policy.toml");
        std::fs::write(&path, toml::to_string(&policy).unwrap()).unwrap();
        let rec = run(&action(code), &path);
        assert_eq!(rec["stop_reason"], reason, "the plant: {rec:#}");
        let e = explain(&rec, dir.path());
        assert_eq!(e["edits"], json!([]), "{reason}: {e:#}");
        let why = e["no_edit"].as_str().unwrap_or("");
        assert!(why.contains(says), "{reason}: {e:#}");
    }
}
