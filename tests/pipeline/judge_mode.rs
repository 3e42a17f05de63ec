//! Judge mode: `"stdin"` (raw bytes on the program's stdin) and `"output_mode": "text"` (exit
//! 0 is success, stdout and stderr are the result), as RL and evaluation pipelines run plain
//! programs. Every stop reason, cap and limit must hold exactly as in JSON mode, and the
//! verdict still comes from the kernel's wait status, never from what was printed. Through
//! the real binary, as root and as nobody.

use crate::common::{run_as, shared_file, variants, RunRecord, Who};
use serde_json::{json, Value};

fn action(code: &str, mut extra: Value) -> Vec<u8> {
    if extra.get("id").is_none() {
        extra["id"] = json!("judge");
    }
    serde_json::to_vec(&crate::common::action_json(code, extra)).unwrap()
}

fn text(code: &str, stdin: &str) -> Vec<u8> {
    action(code, json!({"stdin": stdin, "output_mode": "text"}))
}

/// tests/policies/spawn.toml (16 MiB payloads, 1 MiB stdout), readable by nobody.
fn big_policy() -> String {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/policies/spawn.toml"
    ))
    .unwrap();
    shared_file("judge-big.toml", &text)
        .to_str()
        .unwrap()
        .to_string()
}

fn assert_stop(who: Who, r: &RunRecord, reason: &str) {
    assert_eq!(r.stop_reason(), reason, "{who:?}: {}", r.record);
}

#[test]
fn print_two_plus_two_in_text_mode_is_success_with_its_stdout() {
    for who in variants() {
        let r = run_as(who, &[], &text("print(2+2)", ""), None);
        assert_stop(who, &r, "success");
        assert_eq!(r.code, 0, "{who:?}: {}", r.record);
        assert_eq!(r.record["status"], "ok");
        assert_eq!(r.record["execution"]["stdout"], "4\n");
        assert!(
            r.record.get("output").is_none(),
            "text mode has no output: {}",
            r.record
        );
        // In text mode, no input at all is an empty stdin.
        let r = run_as(
            who,
            &[],
            &action("print(2+2)", json!({"output_mode": "text"})),
            None,
        );
        assert_stop(who, &r, "success");
        assert_eq!(r.record["execution"]["stdout"], "4\n");
        // JSON mode, the seed's contract, is unchanged: the same program is refused there.
        let r = run_as(
            who,
            &[],
            &action("print(2+2)", json!({"input_payload": {}})),
            None,
        );
        assert_stop(who, &r, "invalid_code_output:not_object");
    }
}

#[test]
fn stdin_arrives_byte_for_byte() {
    let policy = big_policy();
    let report = "s = input()\nprint(len(s), s.count('x'), repr(s[:4]), repr(s[-1]))";
    let mib_line = format!("a{}z", "x".repeat((1 << 20) - 2));
    for who in variants() {
        let r = run_as(who, &[], &text(report, "a\u{0}b\u{7f}\nsecond line"), None);
        assert_stop(who, &r, "success");
        assert_eq!(
            r.record["execution"]["stdout"],
            "4 0 'a\\x00b\\x7f' '\\x7f'\n"
        );

        let r = run_as(
            who,
            &["--policy", &policy],
            &text(report, &(mib_line.clone() + "\n")),
            None,
        );
        assert_stop(who, &r, "success");
        let expected = format!("{} {} 'axxx' 'z'\n", 1 << 20, (1 << 20) - 2);
        assert_eq!(
            r.record["execution"]["stdout"],
            expected.as_str(),
            "{who:?}"
        );
    }
}

#[test]
fn every_stop_and_cap_holds_in_text_mode() {
    for who in variants() {
        // The static check still judges the code.
        let r = run_as(who, &[], &text("import os", ""), None);
        assert_stop(
            who,
            &r,
            "policy_block:static_policy_violation:import_not_allowed:os",
        );
        // A non-zero exit is a runtime error whatever was printed.
        let r = run_as(
            who,
            &[],
            &text("print('ok, all tests passed')\nraise SystemExit(3)", ""),
            None,
        );
        assert_stop(who, &r, "code_runtime_error:3");
        assert_eq!(r.record["status"], "stopped");
        // The stdout cap (4 KiB in the default policy) stops the run.
        let r = run_as(who, &[], &text("print('x' * 100000)", ""), None);
        assert_stop(who, &r, "code_output_too_large");
        // The wall clock.
        let r = run_as(who, &[], &text("while True:\n    pass", ""), None);
        assert_stop(who, &r, "code_timeout");
        // Memory: the kernel's counters (cgroup) or the address-space rlimit decide; a
        // MemoryError the program reports is not evidence on its own.
        let r = run_as(
            who,
            &[],
            &text("b = bytearray(1 << 30)\nprint(len(b))", ""),
            None,
        );
        assert_ne!(r.stop_reason(), "success", "{who:?}: {}", r.record);
    }
}

#[test]
fn bad_judge_fields_are_clear_contract_errors() {
    let cases: &[(Value, &str)] = &[
        (
            json!({"stdin": "x", "input_payload": {}}),
            "invalid_action:stdin",
        ),
        (json!({"stdin": 42}), "invalid_action:stdin"),
        (
            json!({"input_payload": {}, "output_mode": "xml"}),
            "invalid_action:output_mode",
        ),
        (
            json!({"input_payload": {}, "output_mode": 1}),
            "invalid_action:output_mode",
        ),
        (
            json!({"stdin": "", "output_mode": "text", "output_schema": {"type": "object"}}),
            "invalid_action:output_schema",
        ),
        (
            json!({"stdin": "y".repeat((1 << 20) + 1)}),
            "invalid_action:payload_too_large",
        ),
        (json!({}), "invalid_action:input_payload"),
    ];
    for who in variants() {
        for (extra, reason) in cases {
            let r = run_as(who, &[], &action("print(1)", extra.clone()), None);
            assert_stop(who, &r, reason);
            assert_eq!(r.code, 1, "{who:?}: {}", r.record);
            assert_eq!(r.record["phase"], "plan", "{who:?}: {}", r.record);
            assert!(r.record["execution"].is_null(), "nothing ran: {}", r.record);
        }
    }
}

#[test]
fn a_policy_may_refuse_text_mode() {
    let policy = shared_file(
        "json-only.toml",
        "version = 1\nname = \"json-only\"\n[languages]\noutput_modes = [\"json\"]\n",
    );
    let policy = policy.to_str().unwrap();
    for who in variants() {
        let r = run_as(who, &["--policy", policy], &text("print(2+2)", ""), None);
        assert_stop(who, &r, "invalid_request:output_mode_denied");
        let r = run_as(
            who,
            &["--policy", policy],
            &action("print('{}')", json!({"input_payload": {}})),
            None,
        );
        assert_stop(who, &r, "success");
    }
    // A policy naming an unknown mode is refused at load.
    let bad = shared_file(
        "bad-mode.toml",
        "version = 1\nname = \"bad\"\n[languages]\noutput_modes = [\"yaml\"]\n",
    );
    let r = run_as(
        Who::Current,
        &["--policy", bad.to_str().unwrap()],
        &text("print(1)", ""),
        None,
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
}

/// Under policies/judge.toml, `input()` inside `main()` and `input = sys.stdin.readline` run
/// in text mode (the check's input() rule is the JSON contract's) and are refused in JSON
/// mode; a star import judge.toml allows runs. `agentjail check` says the same as `run`.
#[test]
fn input_in_main_and_star_imports_run_in_text_mode_and_check_agrees() {
    let text_of = |p: &str| std::fs::read_to_string(format!("{}/{p}", env!("CARGO_MANIFEST_DIR")));
    let judge = shared_file("judge-input.toml", &text_of("policies/judge.toml").unwrap());
    let judge = judge.to_str().unwrap();
    let code = "import sys\ninput = sys.stdin.readline\nfrom math import *\n\ndef main():\n    \
                n = int(input())\n    print(floor(sum(int(input()) for _ in range(n)) / 2))\n\n\
                main()\n";
    let as_text = text(code, "2\n3\n4\n");
    let as_json = action(code, json!({"input_payload": {}}));
    for who in variants() {
        let r = run_as(who, &["--policy", judge], &as_text, None);
        assert_stop(who, &r, "success");
        assert_eq!(r.record["execution"]["stdout"], "3\n", "{who:?}");
        let r = run_as(who, &["--policy", judge], &as_json, None);
        let reason = r.stop_reason();
        assert!(
            reason.starts_with("policy_block:static_policy_violation:")
                && reason.contains("name_not_allowed:input"),
            "{who:?}: {}",
            r.record
        );
    }
    for (body, allow) in [(&as_text, true), (&as_json, false)] {
        let mut c = std::process::Command::new(crate::common::agentjail_path())
            .args(["check", "--policy", judge, "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("agentjail check");
        std::io::Write::write_all(&mut c.stdin.take().unwrap(), body).unwrap();
        let out = c.wait_with_output().unwrap();
        let d: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(out.status.code(), Some(if allow { 0 } else { 1 }), "{d}");
        assert_eq!(d["decision"], if allow { "allow" } else { "deny" }, "{d}");
    }
}

/// policies/judge-open.toml (`check.enforce = false`): what the check finds runs, with the
/// findings in the record, and the jail alone contains it. A program that reaches for the
/// host through plain imports (refused by the embedded default, data.toml and judge.toml
/// before it runs) reads no /etc/shadow, writes nothing outside its own /tmp and opens no
/// socket (seccomp stops the run). A call-based harness judge.toml refuses runs and answers.
#[test]
fn judge_open_runs_what_the_check_finds_and_the_jail_contains_it() {
    let text_of = |p: &str| {
        std::fs::read_to_string(format!("{}/policies/{p}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    };
    let open = shared_file("judge-open.toml", &text_of("judge-open.toml"));
    let open = open.to_str().unwrap();
    let judge = shared_file("judge-enforced.toml", &text_of("judge.toml"));
    let judge = judge.to_str().unwrap();
    let data = shared_file("judge-data.toml", &text_of("data.toml"));
    let data = data.to_str().unwrap();
    let mark = format!("agentjail-open-{}", std::process::id());
    let usr = format!("/usr/{mark}");
    let attack = format!(
        "import os\nimport socket\nout = []\n\
def attempt(label, f):\n    try:\n        f()\n        out.append(label + ':DONE')\n    \
except Exception as e:\n        out.append(label + ':' + type(e).__name__)\n\
attempt('shadow', lambda: os.read(os.open('/etc/shadow', os.O_RDONLY), 64))\n\
attempt('usr', lambda: os.open('{usr}', os.O_WRONLY | os.O_CREAT, 0o644))\n\
attempt('root', lambda: os.open('/root/{mark}', os.O_WRONLY | os.O_CREAT, 0o644))\n\
attempt('tmp', lambda: os.open('/tmp/{mark}', os.O_WRONLY | os.O_CREAT, 0o644))\n\
print(' '.join(out), flush=True)\n\
socket.socket(socket.AF_INET, socket.SOCK_STREAM).connect(('127.0.0.1', 22))\n"
    );
    let body = text(&attack, "");
    for who in variants() {
        let r = run_as(who, &["--policy", open], &body, None);
        assert_stop(who, &r, "code_forbidden_syscall:socket");
        let d = &r.record["decision"];
        assert_eq!(d["decision"], "allow", "{who:?}: {d}");
        assert_eq!(d["violations"], json!([]), "{who:?}: {d}");
        assert_eq!(d["check"]["enforced"], false, "{who:?}: {d}");
        let found: Vec<&str> = d["check"]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["rule"].as_str().unwrap())
            .collect();
        for rule in ["import_not_allowed:os", "import_not_allowed:socket"] {
            assert!(found.contains(&rule), "{who:?}: {rule} not in {d}");
        }
        let stdout = r.record["execution"]["stdout"].as_str().unwrap_or("");
        let got: std::collections::HashMap<&str, &str> = stdout
            .split_whitespace()
            .filter_map(|x| x.split_once(':'))
            .collect();
        assert_eq!(got.len(), 4, "{who:?}: {}", r.record);
        for (k, ok) in [
            ("shadow", &["FileNotFoundError", "PermissionError"][..]),
            ("usr", &["OSError", "PermissionError"][..]),
            (
                "root",
                &["FileNotFoundError", "PermissionError", "OSError"][..],
            ),
        ] {
            assert!(ok.contains(&got[k]), "{who:?}: {k}: {stdout}");
        }
        assert_eq!(got["tmp"], "DONE", "{who:?}: the jail's own /tmp: {stdout}");
        assert!(!std::path::Path::new(&usr).exists(), "{who:?}");
        assert!(
            !std::path::Path::new("/tmp").join(&mark).exists(),
            "{who:?}: the host's /tmp"
        );
        assert!(
            !std::path::Path::new("/root").join(&mark).exists(),
            "{who:?}"
        );
        // Every enforcing policy refuses the same program before it runs.
        for args in [&[][..], &["--policy", data][..], &["--policy", judge][..]] {
            let r = run_as(who, args, &body, None);
            let refused = r.record["decision"]["violations"]
                .as_array()
                .is_some_and(|v| v.iter().any(|v| v["rule"] == "import_not_allowed:os"));
            assert!(
                r.stop_reason()
                    .starts_with("policy_block:static_policy_violation:")
                    && refused,
                "{who:?} {args:?}: {}",
                r.record
            );
            assert!(r.record["decision"].get("check").is_none(), "{}", r.record);
        }
    }
    // A call-based harness (star imports of sys, io and builtins, traceback, globals(),
    // getattr): refused by judge.toml whatever the solution, answered under judge-open.
    let harness = "import traceback\nfrom sys import *\nfrom io import *\nfrom builtins import *\n\
import sys\nimport json\n\ndef add(a, b):\n    return a + b\n\n\
def _call(name):\n    args = [json.loads(l) for l in sys.stdin.read().splitlines()]\n    \
f = globals()[name] if name in globals() else getattr(globals()['Solution'](), name)\n    \
try:\n        return f(*args)\n    except Exception:\n        traceback.print_exc()\n\n\
if __name__ == '__main__':\n    print(_call('add'))\n";
    let body = text(harness, "1\n2\n");
    for who in variants() {
        let r = run_as(who, &["--policy", open], &body, None);
        assert_stop(who, &r, "success");
        assert_eq!(r.record["execution"]["stdout"], "3\n", "{who:?}");
        let r = run_as(who, &["--policy", judge], &body, None);
        assert!(
            r.stop_reason()
                .starts_with("policy_block:static_policy_violation:"),
            "{who:?}: {}",
            r.record
        );
    }
}
