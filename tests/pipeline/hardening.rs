//! Nothing around the jail trusts the agent: the schema, the action's JSON, the numbers, the
//! record and the verdicts, each attacked through the real binary, launched as root and as
//! nobody. Every case must end in its named outcome with a record that is valid, readable
//! back by agentjail's strict reader, serde_json and Python, safe to print as one line, and
//! nothing left behind (no process, no cgroup).

use crate::common::{self, run_as, shared_file, variants, RunRecord, Who};
use serde_json::{json, Value};
use std::time::Duration;

/// These runs are serialised, and no other test of this binary starts a jail meanwhile, so
/// "nothing left behind" can be checked after each one.
fn serial() -> common::Alone {
    common::alone()
}

/// 512 MiB of address space for agentjail itself: a schema that explodes must fail the test,
/// not the machine.
const AS_LIMIT: u64 = 512 * 1024 * 1024;

fn action(code: &str, payload: Value, schema: Option<Value>) -> Vec<u8> {
    let mut extra = json!({"id": "h", "input_payload": payload});
    if let Some(s) = schema {
        extra["output_schema"] = s;
    }
    serde_json::to_vec(&common::action_json(code, extra)).unwrap()
}

/// Every check a record must pass, whatever the case: readable by three parsers, no raw
/// character a line-based reader or a terminal would act on, and no leftovers.
fn assert_sound(r: &RunRecord) {
    let text = std::str::from_utf8(&r.raw).expect("the record is UTF-8");
    for c in text.chars() {
        assert!(
            c == '\n' || !agentjail_json::needs_escape(c),
            "raw U+{:04X} in the printed record: {text}",
            c as u32
        );
    }
    let strict = agentjail_json::ReadLimits {
        max_depth: 128,
        ..Default::default()
    };
    agentjail_json::parse_strict(&r.raw, &strict).expect("strict reader reads the record back");
    let py = std::process::Command::new(common::PY)
        .args([
            "-I",
            "-S",
            "-c",
            "import json,sys; json.loads(sys.stdin.buffer.read())",
        ])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(&r.raw)?;
            c.wait()
        })
        .expect("python3");
    assert!(py.success(), "Python's json cannot read the record");
    assert!(
        common::survivors("agentjail_runner.py", Duration::from_secs(2)).is_empty(),
        "a jail process outlived its run"
    );
    let pid = r.launcher_pid;
    let out = std::process::Command::new("find")
        .args(["/sys/fs/cgroup", "-name", &format!("agentjail-{pid}-*")])
        .output()
        .unwrap();
    assert!(
        out.stdout.is_empty(),
        "cgroups left: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

fn each(f: impl Fn(Who)) {
    let _g = serial();
    for who in variants() {
        f(who);
    }
}

fn expect(r: &RunRecord, reason: &str) {
    // What decides the case first, on one line: CI shows only the start of a long message.
    assert_eq!(
        r.stop_reason(),
        reason,
        "stop_reason {} (want {reason}), execution {}; record: {:#}",
        r.stop_reason(),
        r.record["execution"],
        r.record
    );
    assert_sound(r);
}

const PRINT_OK: &str = "print('{\"n\": 1}')";

#[test]
fn a_schema_that_doubles_per_level_is_refused_before_it_costs_anything() {
    // 24 levels of oneOf over one shared definition: 2^24 evaluations per value.
    let mut defs = serde_json::Map::new();
    for i in 0..24 {
        let next = format!("#/$defs/d{}", i + 1);
        defs.insert(
            format!("d{i}"),
            json!({"oneOf": [{"$ref": next}, {"$ref": next}]}),
        );
    }
    defs.insert("d24".into(), json!({"type": "object"}));
    let schema = json!({"$defs": defs, "$ref": "#/$defs/d0"});
    each(|who| {
        let r = run_as(
            who,
            &[],
            &action(PRINT_OK, json!({}), Some(schema.clone())),
            Some(AS_LIMIT),
        );
        expect(&r, "invalid_action:output_schema:too_complex");
        assert!(r.wall < common::HANG, "{:?}", r.wall);
    });
}

#[test]
fn a_schema_that_explodes_on_this_output_runs_out_of_budget() {
    // Compiles (one definition), but every array level doubles the work: 2^40 on this output.
    let schema = json!({"$defs": {"t": {"allOf": [{"items": {"$ref": "#/$defs/t"}},
                                                  {"items": {"$ref": "#/$defs/t"}}]}},
                        "properties": {"a": {"$ref": "#/$defs/t"}}});
    let code = "print('{\"a\": ' + '[' * 40 + ']' * 40 + '}')";
    each(|who| {
        let r = run_as(
            who,
            &[],
            &action(code, json!({}), Some(schema.clone())),
            Some(AS_LIMIT),
        );
        expect(&r, "invalid_action:output_schema:too_complex");
        assert_eq!(r.record["phase"], "validate");
        assert!(r.wall < common::HANG, "{:?}", r.wall);
    });
}

#[test]
fn backtracking_and_backreference_patterns_cannot_hang_the_supervisor() {
    each(|who| {
        let schema = json!({"properties": {"s": {"pattern": "(a)\\1"}}});
        let r = run_as(
            who,
            &[],
            &action(PRINT_OK, json!({}), Some(schema)),
            Some(AS_LIMIT),
        );
        expect(&r, "invalid_action:output_schema:pattern");
        // Catastrophic for a backtracking engine, linear here: 4000 a's and a '!'.
        let schema = json!({"properties": {"s": {"pattern": "^(a+)+$"}}});
        let code = "print('{\"s\": \"' + 'a' * 4000 + '!\"}')";
        let r = run_as(
            who,
            &[],
            &action(code, json!({}), Some(schema)),
            Some(AS_LIMIT),
        );
        expect(&r, "invalid_code_output:s");
        assert!(r.wall < common::HANG, "{:?}", r.wall);
    });
}

#[test]
fn a_200k_ref_chain_is_refused_fast() {
    let mut defs = String::from("{");
    for i in 0..200_000 {
        defs.push_str(&format!("\"d{i}\":{{\"$ref\":\"#/$defs/d{}\"}},", i + 1));
    }
    defs.push_str("\"d200000\":true}");
    let schema: Value =
        serde_json::from_str(&format!("{{\"$defs\":{defs},\"$ref\":\"#/$defs/d0\"}}")).unwrap();
    each(|who| {
        let r = run_as(
            who,
            &[],
            &action(PRINT_OK, json!({}), Some(schema.clone())),
            Some(AS_LIMIT),
        );
        let reason = r.stop_reason().to_string();
        assert!(
            [
                "invalid_action:too_large",
                "invalid_action:output_schema:too_large",
                "invalid_action:output_schema:too_many_refs"
            ]
            .contains(&reason.as_str()),
            "{reason}"
        );
        assert_sound(&r);
        assert!(r.wall < common::HANG, "{:?}", r.wall);
    });
}

#[test]
fn duplicate_keys_never_drop_a_restriction() {
    let base = r#""id":"h","language":"python","entrypoint":"main.py","input_payload":{}"#;
    let cases = [
        // A second policy_hints would have removed a 0.1 s timeout.
        (
            format!(
                r#"{{{base},"code":"print(1)","policy_hints":{{"exec_timeout_seconds":0.1}},"policy_hints":{{}}}}"#
            ),
            "invalid_action:duplicate_key:policy_hints",
        ),
        // A second maximum inside the schema.
        (
            format!(
                r#"{{{base},"code":"print(1)","output_schema":{{"properties":{{"n":{{"maximum":1,"maximum":100}}}}}}}}"#
            ),
            "invalid_action:duplicate_key:output_schema/properties/n/maximum",
        ),
        // A second code, the same key escaped differently.
        (
            format!(r#"{{{base},"code":"print(1)","\u0063ode":"import os"}}"#),
            "invalid_action:duplicate_key:code",
        ),
    ];
    each(|who| {
        for (text, reason) in &cases {
            let r = run_as(who, &[], text.as_bytes(), None);
            expect(&r, reason);
        }
        // The program's own output: a duplicate key is not resolved either.
        let code = "print('{\"ok\": true, \"ok\": false}')";
        let r = run_as(who, &[], &action(code, json!({}), None), None);
        expect(&r, "invalid_code_output:duplicate_key:ok");
        // The policy file: exit 2, a record, and the key named.
        let p = shared_file(
            "dup.toml",
            "version = 1\nname = \"d\"\n[limits]\nwall_time_ms = 100\nwall_time_ms = 5000\n",
        );
        let r = run_as(
            who,
            &["--policy", p.to_str().unwrap()],
            &action(PRINT_OK, json!({}), None),
            None,
        );
        assert_eq!(
            (r.code, r.stop_reason()),
            (2, "agentjail_error:policy"),
            "{}",
            r.stderr
        );
        assert!(r.stderr.contains("duplicate key"), "{}", r.stderr);
        assert_sound(&r);
    });
}

#[test]
fn numbers_are_never_rounded() {
    let cases = [
        // 2^64 + 1 is odd.
        (
            "18446744073709551617",
            json!({"properties": {"n": {"multipleOf": 2}}}),
            "invalid_code_output:n",
        ),
        (
            "1e-400",
            json!({"properties": {"n": {"const": 0}}}),
            "invalid_code_output:n",
        ),
        (
            "9007199254740993.0",
            json!({"properties": {"n": {"maximum": 9007199254740992u64}}}),
            "invalid_code_output:n",
        ),
    ];
    each(|who| {
        for (n, schema, reason) in &cases {
            let code = format!("print('{{\"n\": {n}}}')");
            let r = run_as(
                who,
                &[],
                &action(&code, json!({}), Some(schema.clone())),
                None,
            );
            expect(&r, reason);
        }
        // A payload integer beyond f64 reaches the program as that integer, digit for digit.
        let payload: Value =
            serde_json::from_str(r#"{"n": 123456789012345678901234567890}"#).unwrap();
        let code = "import json\np = json.loads(input())\nprint(json.dumps({'int': isinstance(p['n'], int), 'n': p['n']}))";
        let r = run_as(who, &[], &action(code, payload, None), None);
        expect(&r, "success");
        assert_eq!(r.record["output"]["int"], true);
        let text = String::from_utf8_lossy(&r.raw);
        assert!(text.contains("123456789012345678901234567890"), "{text}");
    });
}

#[test]
fn the_error_comes_from_the_exception_not_from_what_it_says() {
    let forged = "x = 1\ny = 2\nraise ValueError('bad\\n  File \"/app/main.py\", line 99, in <module>\\nKeyError: forged')\n";
    each(|who| {
        let r = run_as(who, &[], &action(forged, json!({}), None), None);
        expect(&r, "code_runtime_error:1");
        let e = &r.record["error"];
        assert_eq!(
            (e["type"].as_str(), e["line"].as_u64(), e["source"].as_str()),
            (Some("ValueError"), Some(3), Some("runner")),
            "{e}"
        );
    });
}

#[test]
fn printing_or_raising_memory_error_is_not_a_memory_limit() {
    let cases = [
        "print('Traceback (most recent call last):\\nMemoryError', file=__import__)",
        "raise MemoryError('forged')",
        "raise BlockingIOError(11, 'Resource temporarily unavailable')",
    ];
    each(|who| {
        // The first is denied by the check (a dunder name); the others run and exit 1.
        let r = run_as(who, &[], &action(cases[0], json!({}), None), None);
        assert!(
            r.stop_reason().starts_with("policy_block:"),
            "{}",
            r.stop_reason()
        );
        for code in &cases[1..] {
            let r = run_as(who, &[], &action(code, json!({}), None), None);
            expect(&r, "code_runtime_error:1");
        }
    });
}

#[test]
fn output_text_cannot_shape_the_stop_reason_or_the_record() {
    // A failing key full of newlines, bidi overrides and length.
    let key = format!("a\\nb\\u202e\\u2028{}", "x".repeat(300));
    let code = format!("import json\nprint(json.dumps({{'{key}': 1}}))");
    let schema = json!({"additionalProperties": {"type": "string"}});
    each(|who| {
        let r = run_as(
            who,
            &[],
            &action(&code, json!({}), Some(schema.clone())),
            None,
        );
        let reason = r.stop_reason();
        assert!(reason.starts_with("invalid_code_output:"), "{reason}");
        assert!(reason.bytes().all(|b| b.is_ascii_graphic()), "{reason:?}");
        assert!(
            reason.len() <= "invalid_code_output:".len() + 96,
            "{reason}"
        );
        assert_sound(&r);
    });
}

#[test]
fn raw_controls_in_output_never_reach_the_record_or_split_the_audit_log() {
    let code = "print('\\x85\\u2028\\u2029\\u202e\\x1b[31m\\x07end')";
    each(|who| {
        let dir = tempfile::Builder::new()
            .prefix("aj-audit-")
            .tempdir_in("/tmp")
            .unwrap();
        use std::os::unix::fs::PermissionsExt;
        // Sticky: agentjail refuses an audit log in a directory others can change.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
        let log = dir.path().join("audit.jsonl");
        let r = run_as(
            who,
            &["--audit-log", log.to_str().unwrap()],
            &action(code, json!({}), None),
            None,
        );
        expect(&r, "invalid_code_output:non_json");
        let lines = std::fs::read_to_string(&log).unwrap();
        assert_eq!(lines.lines().count(), 1, "one record, one line: {lines:?}");
        for c in lines.chars() {
            assert!(
                c == '\n' || !agentjail_json::needs_escape(c),
                "raw U+{:04X} in the audit log",
                c as u32
            );
        }
    });
}

#[test]
fn deep_output_is_refused_and_the_record_reads_back() {
    let code = "print('{\"a\": ' + '[' * 127 + ']' * 127 + '}')";
    each(|who| {
        let r = run_as(who, &[], &action(code, json!({}), None), None);
        expect(&r, "invalid_code_output:too_deep");
    });
}

#[test]
fn usage_after_a_timeout_kill_is_the_kernels_account() {
    // Holds 16 MiB and burns CPU until the 2 s wall limit kills it.
    let code = "x = bytearray(16 * 1024 * 1024)\nfor i in range(0, len(x), 4096):\n    x[i] = 1\nwhile True:\n    pass\n";
    each(|who| {
        let r = run_as(who, &[], &action(code, json!({}), None), None);
        expect(&r, "code_timeout");
        let e = &r.record["execution"];
        let cpu = e["cpu_ms"].as_u64().unwrap();
        let peak = e["peak_memory_bytes"].as_u64().unwrap();
        // On a shared 2-core host the program gets at least a quarter of its 2 s.
        assert!(cpu >= 500, "cpu_ms {cpu} — {e}");
        assert!(peak >= 16 * 1024 * 1024, "peak {peak} — {e}");
    });
}

/// Pin the calling thread, and so every process it spawns from now on, to the first CPU it
/// may run on; returns the old mask.
fn pin_to_one_cpu() -> nix::sched::CpuSet {
    use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
    let me = nix::unistd::Pid::from_raw(0);
    let old = sched_getaffinity(me).expect("sched_getaffinity");
    let first = (0..CpuSet::count())
        .find(|&i| old.is_set(i).unwrap_or(false))
        .expect("some CPU");
    let mut one = CpuSet::new();
    one.set(first).expect("cpu index");
    sched_setaffinity(me, &one).expect("sched_setaffinity");
    old
}

#[test]
fn one_thread_never_reports_more_cpu_than_wall_time() {
    // CPU and wall time count from the same instant (the delivery). When the CPU counter
    // started at the clone instead, the jail's own setup (mounts, landlock, seccomp, all in
    // the job's cgroup) was billed to the program: a single-threaded program showed up to
    // 4 ms more CPU than wall time, and the seed's infinite loop (wall 2 s, CPU 2 s) was
    // reported as `code_cpu_limit` instead of `code_timeout`, now and then on a busy host
    // and 3 times in 4 on one CPU. Pinned to one CPU, agentjail and its jail share it: the
    // setup runs while the launcher waits, and the program can never run faster than the
    // clock, so the old count failed here every time. Both numbers come from the kernel;
    // the program can forge neither. One ms of slack covers the two roundings to ms.
    let old = pin_to_one_cpu();
    let code = "x = 0\nfor i in range(3_000_000):\n    x += i\nprint('{\"n\": 1}')\n";
    let spin = "while True:\n    pass\n";
    each(|who| {
        for _ in 0..3 {
            let r = run_as(who, &[], &action(code, json!({}), None), None);
            expect(&r, "success");
            let e = &r.record["execution"];
            let cpu = e["cpu_ms"].as_u64().unwrap();
            let wall = e["wall_ms"].as_u64().unwrap();
            assert!(
                cpu <= wall + 1,
                "{who:?}: cpu_ms {cpu} > wall_ms {wall}: {e}"
            );
        }
        for _ in 0..2 {
            let r = run_as(who, &[], &action(spin, json!({}), None), None);
            expect(&r, "code_timeout");
        }
    });
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &old).expect("restore");
}

#[test]
fn any_output_the_program_prints_makes_a_record_every_parser_reads() {
    use proptest::prelude::*;
    let _g = serial();
    let strings = prop::sample::select(vec![
        "\u{0}",
        "\u{7f}",
        "\u{85}",
        "\u{2028}",
        "\u{2029}",
        "\u{202e}",
        "\u{2066}",
        "\u{feff}",
        "\u{1b}[2J",
        "\u{e0041}",
        "é",
        "\u{10ffff}",
        "\"",
        "\\",
        "x",
    ]);
    let leaf = prop::collection::vec(strings, 0..6).prop_map(|v| Value::String(v.concat()));
    let value = leaf.prop_recursive(64, 256, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map("[a-z\u{202e}\u{85}]{0,3}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases: 8,
        ..Default::default()
    });
    let code = "import json\np = json.loads(input())\nprint(json.dumps({'v': p['v']}, ensure_ascii=False))";
    runner
        .run(&value, |v| {
            for who in variants() {
                let r = run_as(who, &[], &action(code, json!({"v": v}), None), None);
                assert_sound(&r);
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn a_wait_interrupted_by_an_ignored_signal_resumes_instead_of_stopping_the_run() {
    // A thread waiting with a relative timeout (poll, or futex under a lock acquired with a
    // timeout) is woken when a signal it does not block arrives; when that signal's
    // disposition is "ignore", the kernel resumes the wait by making the thread call
    // `restart_syscall`, which the filter sees like any other syscall. The signal reaches
    // the waiting thread only because another thread has it blocked: exactly what CPython's
    // subprocess does around its vfork (every signal blocked), so a child's SIGCHLD landing
    // then woke a waiting thread of matplotlib's and the seed's plot example was stopped as
    // `code_forbidden_syscall:restart_syscall` (every time on one CPU, now and then on two).
    // restart_syscall continues only the call the filter already let through (the kernel's
    // own restart block; without one it returns EINTR), so it is allowed with the basics.
    let code = r#"
import os, select, signal, sys, threading, time
lock = threading.Lock()
lock.acquire()
waits = {"futex": lambda: lock.acquire(timeout=0.4), "poll": lambda: select.poll().poll(400)}
for kind, wait in waits.items():
    t = threading.Thread(target=wait)
    t.start()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGCHLD)
    t.join()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
    print("resumed", kind, flush=True)
# Called directly, with no interrupted call to continue, it only fails with EINTR.
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
print("direct", libc.syscall(219), ctypes.get_errno(), flush=True)
"#;
    let _g = serial();
    for who in variants() {
        let r = common::python(who, &[], code);
        assert_eq!(r.code, 0, "{who:?}: {r:#?}");
        assert_eq!(r.stop_reason(), Some("success"), "{who:?}: {r:#?}");
        r.assert_ran("resumed futex\nresumed poll\ndirect -1 4\n");
    }
}
