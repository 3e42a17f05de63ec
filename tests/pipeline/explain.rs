//! `agentjail explain RECORD`, tested by applying what it says: for each stop reason a policy
//! key can lift, a small program stopped for it, the record explained, the proposed edits
//! applied to the policy file, and the same action run again under the edited policy until it
//! succeeds (at most three rounds: a first edit can uncover a second need). Where no policy
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
    for (reason, mut policy, code) in cases {
        // code_memory_limit is the memory cgroup's word, which only root's jails have.
        if reason == "code_memory_limit"
            && !common::require_feature("a memory cgroup (root)", common::is_root())
        {
            continue;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("policy.toml");
        std::fs::write(&path, toml::to_string(&policy).unwrap()).unwrap();
        let rec = run(&action(code), &path);
        assert_eq!(rec["stop_reason"], reason, "the plant: {rec:#}");
        let mut rec = rec;
        for round in 0..3 {
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
            rec = run(&action(code), &path);
            if rec["stop_reason"] == "success" {
                break;
            }
        }
        assert_eq!(
            rec["stop_reason"], "success",
            "{reason}: edits applied, still {rec:#}"
        );
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
