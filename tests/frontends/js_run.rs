//! JavaScript through the whole pipeline (`agentjail run`, `agentjail serve`), launched as
//! root and as nobody: the incident example with the seed's numbers, the language and
//! entrypoint gates, the runner's error reports (thrown, asynchronous, syntax), and every
//! limit a JavaScript job can hit.
//!
//! The jailed runs use tests/policies/javascript.toml (the default policy with javascript
//! executed and cgroups best-effort, so nobody can run node without cgroup delegation) and
//! policies/data.toml (cgroups required: it fails closed where there is no delegation).

use crate::common::{self, run_as, shared_file, variants, RunRecord, Who};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

fn root_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The JavaScript test policy and policies/data.toml, copied where nobody can read them.
fn policies() -> &'static (String, String) {
    static P: OnceLock<(String, String)> = OnceLock::new();
    P.get_or_init(|| {
        let read = |p: &str| std::fs::read_to_string(root_dir().join(p)).expect("policy");
        let js = shared_file(
            "js-run-javascript.toml",
            &read("tests/policies/javascript.toml"),
        );
        let data = shared_file("js-run-data.toml", &read("policies/data.toml"));
        (js.display().to_string(), data.display().to_string())
    })
}

fn js_policy() -> &'static str {
    &policies().0
}

fn data_policy() -> &'static str {
    &policies().1
}

fn example(name: &str) -> Value {
    let text =
        std::fs::read_to_string(root_dir().join("examples/incident").join(name)).expect("example");
    serde_json::from_str(&text).expect("example json")
}

fn js_action(code: &str, payload: Value) -> Value {
    let extra = json!({"id": "js", "language": "javascript", "entrypoint": "main.js",
                       "input_payload": payload});
    crate::common::action_json(code, extra)
}

fn run(who: Who, policy: &str, action: &Value) -> RunRecord {
    run_as(
        who,
        &["--policy", policy],
        &serde_json::to_vec(action).unwrap(),
        None,
    )
}

fn assert_stop(r: &RunRecord, reason: &str, phase: &str) {
    assert_eq!(r.stop_reason(), reason, "{:#}", r.record);
    assert_eq!(r.record["phase"], phase, "{:#}", r.record);
    assert_eq!(r.record["status"], "stopped", "{:#}", r.record);
    assert_eq!(r.code, 1, "{:#}", r.record);
}

/// The seed's numbers, as the JavaScript program prints them (JSON has one number type:
/// 167 and 167.0 are the same value).
fn assert_seed_numbers(out: &Value) {
    assert_eq!(out["incident_severity"], "P1", "{out:#}");
    assert_eq!(out["chargeback_alerts"], 1, "{out:#}");
    assert_eq!(out["eta_minutes"], 45, "{out:#}");
    assert_eq!(out["sample_size"], 60, "{out:#}");
    assert_eq!(out["incident_id"], "inc_payments_20260307", "{out:#}");
    assert_eq!(out["region"], "US", "{out:#}");
    let num = |k: &str| out[k].as_f64().unwrap_or_else(|| panic!("{k}: {out:#}"));
    assert!(
        (num("failed_payment_rate") - 1.0 / 30.0).abs() < 1e-12,
        "{out:#}"
    );
    assert!(
        (num("affected_checkout_share") - 1.0 / 30.0).abs() < 1e-12,
        "{out:#}"
    );
    assert_eq!(num("avg_latency_ms"), 167.0, "{out:#}");
    assert_eq!(num("p95_latency_ms"), 187.0, "{out:#}");
}

#[test]
fn incident_in_javascript_gives_the_seed_numbers() {
    let action = example("action.js.json");
    assert_eq!(action["language"], "javascript");
    assert_eq!(
        action["code"].as_str().unwrap(),
        include_str!("../data/incident_main.js"),
        "the example runs tests/data/incident_main.js"
    );
    for who in variants() {
        let r = run(who, js_policy(), &action);
        assert_eq!(r.stop_reason(), "success", "{who:?}: {:#}", r.record);
        assert_eq!(r.code, 0);
        assert_seed_numbers(&r.record["output"]);
        let env = &r.record["environment"];
        assert_eq!(env["language"], "javascript", "{:#}", r.record);
        assert_eq!(env["interpreter"], "/usr/bin/node", "{:#}", r.record);
        assert_eq!(r.record["execution"]["exit_code"], 0);
        assert_eq!(r.record["execution"]["stderr"], "", "{:#}", r.record);

        // policies/data.toml requires cgroups: as root it runs; without delegation (nobody
        // on most hosts) it fails closed instead of running node unbounded.
        let r = run(who, data_policy(), &action);
        match r.stop_reason() {
            "success" => assert_seed_numbers(&r.record["output"]),
            reason => {
                assert_ne!(who, Who::Root, "root has cgroups: {:#}", r.record);
                assert!(
                    reason.starts_with("sandbox_unavailable:cgroup"),
                    "{who:?}: {:#}",
                    r.record
                );
            }
        }
    }
}

#[test]
fn python_and_javascript_incidents_agree() {
    let who = variants()[0];
    let py = run(who, js_policy(), &example("action.json"));
    let js = run(who, js_policy(), &example("action.js.json"));
    assert_eq!(py.stop_reason(), "success", "{:#}", py.record);
    assert_eq!(js.stop_reason(), "success", "{:#}", js.record);
    let (p, j) = (&py.record["output"], &js.record["output"]);
    for (k, v) in p.as_object().unwrap() {
        match v.as_f64() {
            Some(x) => assert_eq!(Some(x), j[k].as_f64(), "{k}"),
            None => assert_eq!(v, &j[k], "{k}"),
        }
    }
}

#[test]
fn language_and_entrypoint_gates() {
    let who = variants()[0];
    let js = example("action.js.json");
    // The embedded default executes python only: the seed's second allowlist.
    let r = run_as(who, &[], &serde_json::to_vec(&js).unwrap(), None);
    assert_stop(&r, "policy_block:language_denied_execution", "policy_check");
    // The seed's variant (javascript, entrypoint still main.py) keeps its seed reason.
    let variant = example("variants/javascript.json");
    let r = run_as(who, &[], &serde_json::to_vec(&variant).unwrap(), None);
    assert_stop(&r, "policy_block:language_denied_execution", "policy_check");
    // Where javascript is executed, its entrypoint is main.js, and main.js is not Python's.
    let r = run(who, js_policy(), &variant);
    assert_stop(&r, "invalid_action:entrypoint_denied", "plan");
    let mut py = example("action.json");
    py["entrypoint"] = json!("main.js");
    let r = run(who, js_policy(), &py);
    assert_stop(&r, "invalid_action:entrypoint_denied", "plan");
    // A hint may still take javascript away.
    let mut hinted = js.clone();
    hinted["policy_hints"]["allowed_languages"] = json!(["python"]);
    let r = run(who, js_policy(), &hinted);
    assert_stop(&r, "policy_block:language_denied_policy", "policy_check");
    // The JavaScript check, not Python's, judges the code.
    let r = run(
        who,
        js_policy(),
        &js_action("const fs = require('fs');\nconsole.log('{}');", json!({})),
    );
    assert_stop(
        &r,
        "policy_block:static_policy_violation:import_not_allowed:fs",
        "policy_check",
    );
}

fn error_of(r: &RunRecord) -> &Value {
    &r.record["error"]
}

#[test]
fn uncaught_errors_are_runtime_errors_with_the_runners_report() {
    let cases: &[(&str, &str, Value, Value)] = &[
        (
            "const p = JSON.parse(input());\nfunction f(n) {\n  throw new TypeError(\"bad row \" + n);\n}\nf(p.n);\n",
            "TypeError",
            json!("bad row 3"),
            json!([3, 9]),
        ),
        (
            "setTimeout(() => {\n  null.x;\n}, 1);\n",
            "TypeError",
            json!("Cannot read properties of null (reading 'x')"),
            json!([2, 8]),
        ),
        (
            "Promise.reject(new RangeError(\"nope\"));\n",
            "RangeError",
            json!("nope"),
            json!([1, 16]),
        ),
        ("throw \"plain text\";\n", "<string>", json!("plain text"), json!([null, null])),
        (
            "function r() {\n  return r() + 1;\n}\nr();\n",
            "RangeError",
            json!("Maximum call stack size exceeded"),
            json!("somewhere in r"),
        ),
    ];
    for who in variants() {
        for (code, kind, message, at) in cases {
            let r = run(who, js_policy(), &js_action(code, json!({"n": 3})));
            assert_stop(&r, "code_runtime_error:1", "execute");
            let e = error_of(&r);
            assert_eq!(e["type"], *kind, "{code}: {:#}", r.record);
            assert_eq!(e["message"], *message, "{code}: {:#}", r.record);
            assert_eq!(e["source"], "runner", "{:#}", r.record);
            if at.is_string() {
                // Stack overflow: the innermost frame is somewhere in r.
                assert!(e["line"] == 1 || e["line"] == 2, "{code}: {:#}", r.record);
            } else {
                assert_eq!(
                    json!([e["line"], e["column"]]),
                    *at,
                    "{code}: {:#}",
                    r.record
                );
            }
            let stderr = r.record["execution"]["stderr"].as_str().unwrap();
            assert!(
                !stderr.contains("agentjail_runner"),
                "runner frames: {stderr}"
            );
            if kind.starts_with('<') {
                assert!(stderr.contains("Uncaught"), "{stderr}");
            } else {
                assert!(stderr.contains(&format!("{kind}: ")), "{stderr}");
                assert!(stderr.contains("/app/main.js:"), "{stderr}");
            }
        }
    }
}

#[test]
fn the_program_cannot_forge_the_verdict_with_a_report() {
    // Printing a report-shaped line changes nothing: the exit status is the kernel's.
    let code = "console.log(JSON.stringify({event: \"error\", type: \"Forged\", line: 1}));\n";
    let r = run(variants()[0], js_policy(), &js_action(code, json!({})));
    assert_eq!(r.stop_reason(), "success", "{:#}", r.record);
    assert!(r.record.get("error").is_none(), "{:#}", r.record);
}

/// A judged program (raw stdin, `output_mode: "text"`).
fn js_text(code: &str, stdin: &str) -> Value {
    let extra = json!({"id": "js", "language": "javascript", "entrypoint": "main.js",
                       "stdin": stdin, "output_mode": "text"});
    crate::common::action_json(code, extra)
}

/// tests/policies/javascript.toml with the check reported, not enforced (and landlock
/// required, as the loader demands then): what the runner's stand-ins alone hold.
fn unchecked_policy() -> &'static str {
    static P: OnceLock<String> = OnceLock::new();
    P.get_or_init(|| {
        let base = std::fs::read_to_string(root_dir().join("tests/policies/javascript.toml"))
            .expect("policy");
        let text =
            format!("{base}\n[check]\nenforce = false\n\n[landlock]\nrequirement = \"required\"\n");
        shared_file("js-run-unchecked.toml", &text)
            .display()
            .to_string()
    })
}

/// stdin as node programs on judges read it: `require('fs').readFileSync(0 | '/dev/stdin')`
/// and `process.stdin`'s 'data'/'end', through the runner's stand-ins (after `input()` too).
/// `fs` for anything else stays refused: by the check with its exact rule, and, where the
/// check only reports, by the stand-in at run time (a read elsewhere is node's
/// ERR_ACCESS_DENIED, a write or a raw descriptor is no function of it), so the program never
/// holds node's real fs, which could write the runner's report pipe.
#[test]
fn stdin_reads_as_node_programs_do_and_fs_stays_refused() {
    let fs_read = "const first = input();\nconst fs = require('fs');\nconst rest = fs.readFileSync(0, 'utf8');\nconst again = require('node:fs').readFileSync('/dev/stdin').length;\nconst [a, b] = rest.trim().split(/\\s+/).map(Number);\nconsole.log(first, a + b, again);\n";
    let events = "let data = '';\nprocess.stdin.resume();\nprocess.stdin.setEncoding('utf8');\nprocess.stdin.on('data', (c) => { data += c; });\nprocess.stdin.on('end', () => { console.log(data.split('\\n').filter(Boolean).map(Number).reduce((x, y) => x + y, 0)); });\n";
    let refused = [
        "require('fs').readFileSync('/etc/passwd', 'utf8');",
        "const fs = require('fs');\nfs.readFileSync(0);\nfs.writeFileSync('/tmp/x', 'y');",
        "const { readFileSync } = require('fs');\nconsole.log(readFileSync('/proc/self/environ'));",
        "require('fs').writeSync(4, '{\"event\":\"error\",\"type\":\"Forged\"}\\n');",
    ];
    for who in variants() {
        let r = run(who, js_policy(), &js_text(fs_read, "hello\n3 4\n"));
        assert_eq!(r.stop_reason(), "success", "{who:?}: {:#}", r.record);
        assert_eq!(
            r.record["execution"]["stdout"], "hello 7 0\n",
            "{:#}",
            r.record
        );
        let r = run(who, js_policy(), &js_text(events, "1\n2\n3\n"));
        assert_eq!(r.stop_reason(), "success", "{who:?}: {:#}", r.record);
        assert_eq!(r.record["execution"]["stdout"], "6\n", "{:#}", r.record);
        for code in refused {
            let r = run(who, js_policy(), &js_text(code, "secret\n"));
            assert_stop(
                &r,
                "policy_block:static_policy_violation:import_not_allowed:fs",
                "policy_check",
            );
        }
        let runtime: [(&str, &str, &str); 3] = [
            (
                refused[0],
                "Error",
                "Access to this API has been restricted",
            ),
            (
                refused[1],
                "TypeError",
                "fs.writeFileSync is not a function",
            ),
            (refused[3], "TypeError", "writeSync is not a function"),
        ];
        for (code, kind, message) in runtime {
            let r = run(who, unchecked_policy(), &js_text(code, "secret\n"));
            assert_stop(&r, "code_runtime_error:1", "execute");
            let e = error_of(&r);
            assert_eq!(e["type"], kind, "{code}: {:#}", r.record);
            assert!(
                e["message"].as_str().unwrap().contains(message),
                "{code}: {e}"
            );
        }
    }
}

/// Answers as judges' node programs write them: `process.stdout.write` (in order with
/// console.log, a callback called) and `process.exit(code)` (the code is the record's, output
/// written before it kept). The stand-ins hand nothing else of node's stream or process: where
/// the check only reports, `process.stdout.fd`, its `_handle` and `process.stderr` are absent.
#[test]
fn stdout_write_and_exit_as_node_programs_do() {
    let write = "const out = [];\nfor (let i = 0; i < 3; i++) out.push(i * i);\nprocess.stdout.write(out.join(' '));\nconsole.log('');\nprocess.stdout.write('b\\n', 'utf8', () => console.log('c'));\n";
    let exit =
        "process.stdout.write('partial\\n');\nif (1 < 2) process.exit(4);\nconsole.log('never');\n";
    let probe = "console.log([typeof process.stdout.fd, typeof process.stdout._handle, typeof process.stderr, typeof process.argv, typeof process.binding].join(' '));\n";
    for who in variants() {
        let r = run(who, js_policy(), &js_text(write, ""));
        assert_eq!(r.stop_reason(), "success", "{who:?}: {:#}", r.record);
        assert_eq!(
            r.record["execution"]["stdout"], "0 1 4\nb\nc\n",
            "{:#}",
            r.record
        );
        let r = run(who, js_policy(), &js_text(exit, ""));
        assert_stop(&r, "code_runtime_error:4", "execute");
        assert_eq!(
            r.record["execution"]["stdout"], "partial\n",
            "{:#}",
            r.record
        );
        let r = run(who, unchecked_policy(), &js_text(probe, ""));
        assert_eq!(r.stop_reason(), "success", "{who:?}: {:#}", r.record);
        assert_eq!(
            r.record["execution"]["stdout"], "undefined undefined undefined undefined undefined\n",
            "{:#}",
            r.record
        );
    }
}

#[test]
fn syntax_errors_carry_line_and_column() {
    let who = variants()[0];
    // What the check's parser rejects stops before any jail, with the position.
    let r = run(
        who,
        js_policy(),
        &js_action("let a = 1;\nlet b = a c;\n", json!({})),
    );
    assert_stop(
        &r,
        "policy_block:static_policy_violation:syntax_error",
        "policy_check",
    );
    let v = &r.record["decision"]["violations"][0];
    assert_eq!(
        (v["line"].as_u64(), v["column"].as_u64()),
        (Some(2), Some(10)),
        "{v}"
    );
    // What the check accepts and V8 11.3 rejects (duplicate named capture groups) is a
    // SyntaxError from node's compiler, before any program code runs: the runner reports
    // the compiler's position.
    for who in variants() {
        let code = "const ok = 1;\nconst r = /(?<a>x)|(?<a>y)/;\n";
        let r = run(who, js_policy(), &js_action(code, json!({})));
        assert_stop(&r, "code_runtime_error:1", "execute");
        let e = error_of(&r);
        assert_eq!(e["type"], "SyntaxError", "{:#}", r.record);
        assert_eq!(
            (e["line"].as_u64(), e["column"].as_u64()),
            (Some(2), Some(11)),
            "{e}"
        );
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("Duplicate capture group name"),
            "{e}"
        );
    }
}

#[test]
fn limits_stop_javascript() {
    for who in variants() {
        let mut spin = js_action("console.log(\"start\");\nwhile (true) {}\n", json!({}));
        spin["policy_hints"] = json!({"exec_timeout_seconds": 1});
        let t = Instant::now();
        let r = run(who, js_policy(), &spin);
        assert_stop(&r, "code_timeout", "execute");
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());

        let flood =
            "const s = \"x\".repeat(1000);\nfor (let i = 0; i < 100; i++) console.log(s);\n";
        let r = run(who, js_policy(), &js_action(flood, json!({})));
        assert_stop(&r, "code_output_too_large", "execute");
        assert!(r.record["execution"]["stdout"].as_str().unwrap().len() <= 4096);

        let flood =
            "const s = \"x\".repeat(1000);\nfor (let i = 0; i < 100; i++) console.error(s);\n";
        let r = run(who, js_policy(), &js_action(flood, json!({})));
        assert_stop(&r, "code_stderr_too_large", "execute");

        let r = run(
            who,
            js_policy(),
            &js_action("console.log(\"[1, 2]\");\n", json!({})),
        );
        assert_stop(&r, "invalid_code_output:not_object", "validate");
    }
}

/// With a memory cgroup (root), a job past limits.memory is stopped by the kernel:
/// code_memory_limit. Without one (nobody on a host without delegation) node's address space
/// is limits.memory + 1GiB and its heap limits.memory: the job dies by V8's own abort or
/// trap, or burns its CPU in garbage collection; it is stopped either way, never past the
/// address-space bound, and the record says memory was degraded.
#[test]
fn memory_bombs_are_stopped() {
    let bomb = "const a = [];\nwhile (true) a.push(new Array(1e6).fill(1));\n";
    let buffers = "const a = [];\nwhile (true) a.push(new Uint8Array(1 << 20).fill(1));\n";
    for who in variants() {
        for code in [bomb, buffers] {
            let r = run(who, js_policy(), &js_action(code, json!({})));
            assert_eq!(r.record["status"], "stopped", "{:#}", r.record);
            assert_eq!(r.record["phase"], "execute", "{:#}", r.record);
            let reason = r.stop_reason();
            let enforcement = r.record["enforcement"].as_array().unwrap();
            let cgroup_memory = enforcement
                .iter()
                .any(|c| c["control"] == "cgroup_memory" && c["state"] == "enforced");
            if cgroup_memory {
                assert_eq!(reason, "code_memory_limit", "{who:?}: {:#}", r.record);
            } else {
                assert!(
                    reason == "code_memory_limit"
                        || reason == "code_cpu_limit"
                        || reason == "code_timeout"
                        || reason == "code_runtime_error:1"
                        || reason.starts_with("code_killed:"),
                    "{who:?}: {:#}",
                    r.record
                );
                let memory = enforcement
                    .iter()
                    .find(|c| c["control"] == "memory")
                    .expect("memory control");
                assert_eq!(memory["state"], "degraded", "{:#}", r.record);
                let peak = r.record["execution"]["peak_memory_bytes"]
                    .as_u64()
                    .unwrap_or(0);
                assert!(peak <= (256 + 1024) << 20, "{peak}: {:#}", r.record);
            }
        }
    }
}

/// `agentjail serve` keeps warm node jails of its own beside the Python pool.
#[test]
fn serve_keeps_a_warm_javascript_pool() {
    for who in variants() {
        let mut c = match who {
            Who::Nobody => {
                let mut c = Command::new("/usr/bin/setpriv");
                c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
                c.arg(common::agentjail_path());
                c
            }
            _ => Command::new(common::agentjail_path()),
        };
        c.args(["serve", "--pool", "2", "--policy", js_policy()])
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = c.spawn().expect("serve");
        let mut input = child.stdin.take().unwrap();
        let mut output = BufReader::new(child.stdout.take().unwrap());
        let mut ask = |line: Value| -> Value {
            writeln!(input, "{line}").unwrap();
            input.flush().unwrap();
            let mut reply = String::new();
            output.read_line(&mut reply).unwrap();
            serde_json::from_str(&reply).unwrap_or_else(|e| panic!("{e}: {reply}"))
        };
        let t = Instant::now();
        loop {
            let s = ask(json!({"id": "s", "op": "stats"}));
            let js = &s["stats"]["pools"]["javascript"];
            assert_eq!(js["target"], 1, "{s}");
            if js["ready"] == 1 {
                break;
            }
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "no warm node jail: {s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let r = ask(json!({"id": "j", "op": "run", "action": example("action.js.json")}));
        let rec = &r["record"];
        assert_eq!(rec["stop_reason"], "success", "{who:?}: {rec:#}");
        assert_eq!(rec["jail_start"], "warm", "{rec:#}");
        assert_seed_numbers(&rec["output"]);
        let r = ask(json!({"id": "p", "op": "run", "action": example("action.json")}));
        assert_eq!(r["record"]["stop_reason"], "success", "{r:#}");
        assert_eq!(r["record"]["environment"]["language"], "python", "{r:#}");
        drop(input);
        assert!(child.wait().unwrap().success());
    }
}
