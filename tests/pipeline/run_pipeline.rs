//! End to end through the real binary and the real jail: every stop reason
//! docs/REFERENCE.md lists, forced by a small program; the seed's example and its five
//! variants; malformed actions; the audit log under concurrent runs.

use crate::common;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The agentjail under test (common::built_binary: the release build under scripts/test.sh).
fn bin() -> std::path::PathBuf {
    crate::common::built_binary("agentjail")
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn incident() -> Value {
    let text =
        std::fs::read_to_string(root().join("examples/incident/action.json")).expect("example");
    serde_json::from_str(&text).expect("example json")
}

/// Run `agentjail run` on an action given as bytes on stdin; returns (exit code, record).
fn run_bytes(action: &[u8], policy: Option<&Path>, extra: &[&str]) -> (i32, Value) {
    let _running = common::jail_running();
    let mut cmd = Command::new(bin());
    cmd.arg("run");
    if let Some(p) = policy {
        cmd.arg("--policy").arg(p);
    }
    cmd.args(extra)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn agentjail");
    let mut stdin = child.stdin.take().expect("stdin");
    let data = action.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let out = child.wait_with_output().expect("wait");
    let _ = writer.join();
    let text = String::from_utf8_lossy(&out.stdout);
    let record: Value = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "record is not JSON ({e}); stdout={text:?} stderr={:?}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), record)
}

fn run_action(action: &Value, policy: Option<&Path>) -> (i32, Value) {
    run_bytes(&serde_json::to_vec(action).expect("ser"), policy, &[])
}

fn forcing() -> PathBuf {
    root().join("tests/policies/forcing.toml")
}

fn action_with(code: &str) -> Value {
    common::action_json(code, json!({"input_payload": {}}))
}

fn assert_stop(rec: &Value, code: i32, reason: &str, want_phase: &str) {
    // What decides the case first, on one line: CI shows only the start of a long message.
    assert_eq!(
        rec["stop_reason"],
        json!(reason),
        "stop_reason {} (want {reason}), execution {}; record: {rec:#}",
        rec["stop_reason"],
        rec["execution"]
    );
    assert_eq!(
        rec["status"],
        json!(if reason == "success" { "ok" } else { "stopped" })
    );
    assert_eq!(rec["phase"], json!(want_phase), "record: {rec:#}");
    assert_eq!(code, if reason == "success" { 0 } else { 1 });
}

#[test]
fn incident_example_succeeds_with_the_seeds_numbers() {
    let (code, rec) = run_action(&incident(), None);
    assert_stop(&rec, code, "success", "finalize");
    let out = &rec["output"];
    assert_eq!(out["incident_severity"], "P1");
    assert!((out["failed_payment_rate"].as_f64().unwrap() - 1.0 / 30.0).abs() < 1e-12);
    assert_eq!(out["chargeback_alerts"], 1);
    assert_eq!(out["avg_latency_ms"], 167.0);
    assert_eq!(out["p95_latency_ms"], 187.0);
    assert_eq!(out["sample_size"], 60);
    for key in [
        "run_id",
        "action",
        "policy",
        "decision",
        "execution",
        "enforcement",
        "trace",
        "agentjail_version",
    ] {
        assert!(rec.get(key).is_some(), "record lacks {key}: {rec:#}");
    }
    let phases: Vec<&str> = rec["trace"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["phase"].as_str().unwrap())
        .collect();
    assert_eq!(
        phases,
        ["plan", "policy_check", "execute", "validate", "finalize"]
    );
    assert_eq!(rec["action"]["code_hash"].as_str().unwrap().len(), 64);
    assert_eq!(rec["policy"]["sha256"].as_str().unwrap().len(), 64);
}

#[test]
fn seed_try_next_variants() {
    for (file, reason, phase) in [
        (
            "javascript",
            "policy_block:language_denied_execution",
            "policy_check",
        ),
        (
            "import_os",
            "policy_block:static_policy_violation:import_not_allowed:os",
            "policy_check",
        ),
        ("infinite_loop", "code_timeout", "execute"),
        (
            "sample_size_zero",
            "invalid_code_output:sample_size",
            "validate",
        ),
        (
            "severity_p0",
            "invalid_code_output:incident_severity",
            "validate",
        ),
    ] {
        let path = root().join(format!("examples/incident/variants/{file}.json"));
        let action: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let (code, rec) = run_action(&action, None);
        assert_stop(&rec, code, reason, phase);
    }
}

#[test]
fn language_denied_by_policy() {
    let mut a = action_with("print(1)");
    a["language"] = json!("ruby");
    let (code, rec) = run_action(&a, None);
    assert_stop(
        &rec,
        code,
        "policy_block:language_denied_policy",
        "policy_check",
    );
}

#[test]
fn network_hint_must_be_denied() {
    let mut a = incident();
    a["policy_hints"]["network_access"] = json!("allowed");
    let (code, rec) = run_action(&a, None);
    assert_stop(
        &rec,
        code,
        "invalid_request:network_access_must_be_denied",
        "plan",
    );
}

#[test]
fn runtime_error_carries_type_message_and_line() {
    let (code, rec) = run_action(&action_with("x = 1\ny = x / 0\n"), None);
    assert_stop(&rec, code, "code_runtime_error:1", "execute");
    assert_eq!(rec["error"]["type"], "ZeroDivisionError");
    assert_eq!(rec["error"]["line"], 2);
    let stderr = rec["execution"]["stderr"].as_str().unwrap();
    assert!(
        stderr.contains("/app/main.py"),
        "jail paths, not host paths: {stderr}"
    );
}

#[test]
fn output_caps() {
    let (code, rec) = run_action(&action_with("print('x' * 100000)"), None);
    assert_stop(&rec, code, "code_output_too_large", "execute");
    assert!(rec["execution"]["stdout"].as_str().unwrap().len() <= 4096);
    let (code, rec) = run_action(&action_with("raise ValueError('y' * 100000)"), None);
    assert_stop(&rec, code, "code_stderr_too_large", "execute");
}

#[test]
fn output_shapes() {
    for (src, what) in [
        ("pass", "empty_stdout"),
        ("print('hello')", "non_json"),
        ("print('[1, 2]')", "not_object"),
    ] {
        let (code, rec) = run_action(&action_with(src), None);
        assert_stop(
            &rec,
            code,
            &format!("invalid_code_output:{what}"),
            "validate",
        );
    }
}

#[test]
fn cpu_limit() {
    let (code, rec) = run_action(&action_with("while True:\n    pass\n"), Some(&forcing()));
    assert_stop(&rec, code, "code_cpu_limit", "execute");
}

#[test]
fn memory_limit() {
    let src = "b = []\nwhile True:\n    b.append(bytearray(8 << 20))\n";
    let (code, rec) = run_action(&action_with(src), Some(&forcing()));
    assert_stop(&rec, code, "code_memory_limit", "execute");
}

#[test]
fn pids_limit() {
    let src = "import os, time\nfor i in range(64):\n    if os.fork() == 0:\n        time.sleep(5)\n        raise SystemExit(0)\n";
    let (code, rec) = run_action(&action_with(src), Some(&forcing()));
    assert_stop(&rec, code, "code_pids_limit", "execute");
}

#[test]
fn forbidden_syscall_is_named() {
    // setuid is outside every seccomp group: the jail uid is fixed.
    let src = "import os\nos.setuid(0)\nprint('{}')\n";
    let (code, rec) = run_action(&action_with(src), Some(&forcing()));
    assert_stop(&rec, code, "code_forbidden_syscall:setuid", "execute");
}

#[test]
fn killed_by_signal() {
    let src = "import ctypes\nctypes.string_at(0)\n";
    let (code, rec) = run_action(&action_with(src), Some(&forcing()));
    assert_stop(&rec, code, "code_killed:SIGSEGV", "execute");
}

#[test]
fn total_budget_max_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("budget.toml");
    std::fs::write(
        &p,
        // CPU has headroom: it also counts the jail's own setup, and must not be the limit
        // that ends this run.
        "version = 1\n[budget]\nmax_seconds = 1\n[limits]\nwall_time_ms = 1000\ncpu_time_ms = 5000\n",
    )
    .unwrap();
    let (code, rec) = run_action(&action_with("while True:\n    pass\n"), Some(&p));
    assert_stop(&rec, code, "max_seconds", "execute");
}

#[test]
fn malformed_actions_name_the_field() {
    let good = incident();
    let mut cases: Vec<(Vec<u8>, &str)> = vec![
        (b"{not json".to_vec(), "invalid_action:non_json"),
        (b"[1,2,3]".to_vec(), "invalid_action:not_object"),
        (vec![0xff, 0xfe, 0x00, 0x80], "invalid_action:non_json"),
    ];
    for (field, reason) in [
        ("id", "invalid_action:id"),
        ("language", "invalid_action:language"),
        ("entrypoint", "invalid_action:entrypoint"),
        ("code", "invalid_action:code"),
        ("input_payload", "invalid_action:input_payload"),
    ] {
        let mut a = good.clone();
        a.as_object_mut().unwrap().remove(field);
        cases.push((serde_json::to_vec(&a).unwrap(), reason));
    }
    let mut a = good.clone();
    a["entrypoint"] = json!("../main.py");
    cases.push((
        serde_json::to_vec(&a).unwrap(),
        "invalid_action:entrypoint_path",
    ));
    let mut a = good.clone();
    a["entrypoint"] = json!("run.py");
    cases.push((
        serde_json::to_vec(&a).unwrap(),
        "invalid_action:entrypoint_denied",
    ));
    let mut a = good.clone();
    a["code"] = json!("x = 1\n".repeat(2_000_000));
    cases.push((
        serde_json::to_vec(&a).unwrap(),
        "invalid_action:code_too_long",
    ));
    for (bytes, reason) in cases {
        let (code, rec) = run_bytes(&bytes, None, &[]);
        assert_eq!(code, 1, "{reason}: {rec:#}");
        assert_eq!(rec["stop_reason"], json!(reason));
        assert_eq!(rec["phase"], "plan");
        assert_eq!(rec["status"], "stopped");
    }
}

#[test]
fn unreadable_policy_is_exit_2() {
    let out = Command::new(bin())
        .args(["run", "--policy", "/nonexistent/policy.toml", "-"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/policy.toml"));
    let rec: Value =
        serde_json::from_slice(&out.stdout).expect("a record even when agentjail cannot work");
    assert_eq!(rec["status"], "stopped");
    assert_eq!(rec["stop_reason"], "agentjail_error:policy");
}

#[test]
fn audit_log_holds_whole_lines_under_fifty_concurrent_runs() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    // The default policy's 2 s wall and CPU, raised: 50 jails started at once on a small
    // machine each get a sliver of it, and this test is about the log's lines, not limits.
    let policy = dir.path().join("patient.toml");
    std::fs::write(
        &policy,
        "version = 1\n[limits]\nwall_time_ms = 20000\ncpu_time_ms = 20000\n",
    )
    .unwrap();
    let action = serde_json::to_vec(&incident()).unwrap();
    let n = 50; // issue 5: 50 concurrent runs, exactly 50 whole lines
    let handles: Vec<_> = (0..n)
        .map(|_| {
            let log = log.clone();
            let action = action.clone();
            let policy = policy.clone();
            std::thread::spawn(move || {
                run_bytes(
                    &action,
                    Some(&policy),
                    &["--audit-log", log.to_str().unwrap()],
                )
            })
        })
        .collect();
    let mut ids = std::collections::HashSet::new();
    for h in handles {
        let (code, rec) = h.join().unwrap();
        assert_eq!(code, 0, "{rec:#}");
        ids.insert(rec["run_id"].as_str().unwrap().to_string());
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), n);
    for l in lines {
        let v: Value = serde_json::from_str(l).expect("whole JSON line");
        assert!(ids.contains(v["run_id"].as_str().unwrap()));
    }
}
