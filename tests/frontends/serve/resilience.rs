//! `agentjail serve` under failure and load (tests/frontends/serve/mod.rs has the policy and
//! helpers): a pool that cannot start jails, SIGKILL and SIGTERM to the server, bad lines,
//! leftovers of a session that try to answer for it, a client that stops reading or floods,
//! and a soak of mixed jobs and sessions.

use super::*;

// ---------------------------------------------------------------------------------------
// 5. A pool that cannot be refilled

/// `prlimit` on the server, run as the server's own uid (this host's root has no
/// CAP_SYS_RESOURCE: only the soft limit moves, within the hard one).
fn set_soft_limit(who: Who, pid: i32, resource: &str, value: &str) {
    let prlimit = Path::new("/usr/bin/prlimit");
    let mut c = serve_harness::command(who, prlimit);
    let out = c
        .arg(format!("--pid={pid}"))
        .arg(format!("--{resource}={value}:"))
        .output()
        .unwrap();
    assert!(out.status.success(), "prlimit: {out:?}");
}

fn soft_limit(pid: i32, name: &str) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/limits"))
        .unwrap()
        .lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l[25..].split_whitespace().next().map(str::to_string))
        .unwrap()
}

#[test]
fn a_pool_that_cannot_start_jails_fails_closed_and_recovers() {
    for who in variants() {
        if who == Who::Root {
            // Root is exempt from RLIMIT_NPROC; the root launch is made to fail by fault
            // injection in tests/jail/faults.rs (serve_fails_closed_when_no_jail_can_start).
            eprintln!("note: the root variant of this attack is in tests/jail/faults.rs");
            continue;
        }
        let (m, p) = setup("fault", &Knobs::default());
        let (_d, cache) = cache_dir("fault");
        let mut s = Server::start(
            who,
            &p,
            &m,
            // A fixed pool of two: the count of warm jails before the fault is the point.
            &[
                "--pool",
                "2",
                "--pool-max",
                "2",
                "--cache",
                cache.to_str().unwrap(),
            ],
        );
        let ok = s.io().run(action("print('{\"n\": 0}')", json!({})));
        assert_eq!(ok["stop_reason"], "success");
        Server::wait_pool_ready(s.io(), 2);
        Server::wait_ready(s.io(), "session_pool", 1);
        let stored = entries(&cache).len();
        // No new process for this uid: every jail start (clone3) fails with EAGAIN.
        let orig = soft_limit(s.pid, "Max processes");
        set_soft_limit(who, s.pid, "nproc", "1");
        let mut failed = 0;
        for i in 1..=4 {
            let rec = s
                .io()
                .run(action(&format!("print('{{\"n\": {i}}}')"), json!({})));
            match rec["stop_reason"].as_str().unwrap() {
                "success" => assert_eq!(rec["jail_start"], "warm", "{who:?}: {rec:#}"),
                "sandbox_unavailable:setup" => {
                    failed += 1;
                    assert_eq!(rec["phase"], "execute");
                    assert!(rec.get("output").is_none() && rec["execution"].is_null());
                    let e = &rec["error"];
                    assert!(e["stage"].as_str().unwrap().contains("clone3"), "{e:#}");
                    assert_eq!(e["errno"], libc::EAGAIN);
                    let msg = e["message"].as_str().unwrap();
                    assert!(
                        msg.contains("process") && !msg.contains("user namespaces"),
                        "{who:?}: the message does not say what ran out: {msg}"
                    );
                }
                other => panic!("{who:?}: neither ran nor failed closed: {other}: {rec:#}"),
            }
        }
        assert!(failed >= 2, "{who:?}: only {failed} jobs failed");
        let st = s.io().stats();
        assert_eq!(st["pool"]["ready"], 0, "{who:?}: {st}");
        assert!(st["pool"]["refill_failures"].as_u64().unwrap() >= 1, "{st}");
        // The warm session jail started before the fault serves one session; the next
        // session's jail cannot start, and its start fails closed.
        let warm = s.io().start_session();
        let rec = s.io().exec_ok(&warm, "1");
        assert_eq!(rec["session"]["jail_start"], "warm", "{who:?}: {rec:#}");
        let resp = s.io().call(json!({"op": "session_start"}));
        assert_eq!(error_code(&resp), "unavailable", "{resp}");
        assert!(resp["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("sandbox_unavailable:setup"));
        assert_eq!(
            entries(&cache).len(),
            stored + 4 - failed,
            "{who:?}: a setup failure was stored"
        );
        // The fault goes away: jobs run again and the pool fills.
        set_soft_limit(who, s.pid, "nproc", &orig);
        let rec = s.io().run(action("print('{\"n\": 9}')", json!({})));
        assert_eq!(rec["stop_reason"], "success", "{who:?}: {rec:#}");
        Server::wait_pool_ready(s.io(), 2);
        let sid = s.io().start_session();
        s.io().exec_ok(&sid, "1");
        s.finish();
    }
}

// ---------------------------------------------------------------------------------------
// 6. Signals to serve

#[test]
fn sigkill_takes_every_warm_jail_and_session_down_within_100ms() {
    for who in variants() {
        let (m, p) = setup("kill", &Knobs::default());
        let mut s = Server::start(who, &p, &m, &["--pool", "2", "-j", "4"]);
        let mut sessions = Vec::new();
        for _ in 0..2 {
            let sid = s.io().start_session();
            s.io().exec_ok(
                &sid,
                "import os, time\nchild = os.fork()\nif child == 0:\n    while True:\n        time.sleep(60)",
            );
            sessions.push(sid);
        }
        // A job in flight too.
        let job = s.io().send(json!({"op": "run",
            "action": action("import time\ntime.sleep(30)", json!({}))}));
        let runners = |kind: &str| {
            live_with(&m)
                .iter()
                .filter(|p| {
                    serve_harness::cmdline(**p).contains(&format!("agentjail_runner.py {kind}"))
                })
                .count()
        };
        // The job took a warm jail and the pool is full again.
        let t = Instant::now();
        while runners("run") < 3 {
            assert!(t.elapsed() < Duration::from_secs(30), "{who:?}: no refill");
            std::thread::sleep(Duration::from_millis(20));
        }
        Server::wait_pool_ready(s.io(), 2);
        let procs = s.tracker.sample();
        // The server's own argv names the policy, whose path holds the marker too.
        let with_marker: Vec<i32> = live_with(&m).into_iter().filter(|p| *p != s.pid).collect();
        // 2 warm runners + the job's, 2 session runners and their children.
        assert!(
            runners("run") >= 3 && runners("session") >= 4,
            "{who:?}: not the expected jails: {with_marker:?}"
        );
        assert!(
            procs.len() >= with_marker.len() + 5,
            "{who:?}: inits missing: {:?} / {with_marker:?}",
            procs
                .iter()
                .map(|p| format!("{} {}", p.0, serve_harness::cmdline(p.0)))
                .collect::<Vec<_>>()
        );
        s.sigkill_takes_everything(&procs, &job);
        assert!(live_with(&m).is_empty());
    }
}

#[test]
fn sigterm_lets_running_jobs_finish_or_stops_them_with_records() {
    // The variants run side by side: a job that outlives serve's 10 s grace costs 10 s.
    std::thread::scope(|scope| {
        for who in variants() {
            scope.spawn(move || sigterm_case(who));
        }
    });
}

fn sigterm_case(who: Who) {
    let k = Knobs {
        wall_ms: Some(30_000),
        ..Default::default()
    };
    let (m, p) = setup("term", &k);
    let (_d, cache) = cache_dir("term");
    let mut s = Server::start(
        who,
        &p,
        &m,
        &["--pool", "2", "-j", "4", "--cache", cache.to_str().unwrap()],
    );
    let sid = s.io().start_session();
    s.io().exec_ok(&sid, "import time");
    let idle = s.io().start_session();
    s.io().exec_ok(&idle, "1");
    Server::wait_pool_ready(s.io(), 2);
    // 5 s: still sleeping while the other two start on a loaded machine (the wait below
    // counts all three), and done well inside serve's 10 s grace.
    let quick = s.io().send(json!({"op": "run", "action":
        action("import time\ntime.sleep(5)\nprint('{\"done\": 1}')", json!({}))}));
    let long = s.io().send(json!({"op": "run", "action":
        action("import time\ntime.sleep(60)\nprint('{}')", json!({}))}));
    let call = s.io().send(json!({"op": "session_exec", "session": sid,
        "code": "time.sleep(60)"}));
    // Both jobs and the call are running (each sleeps in its own jail).
    let t = Instant::now();
    loop {
        let sleeping = live_with(&m)
            .into_iter()
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/wchan"))
                    .is_ok_and(|w| w.contains("nanosleep"))
            })
            .count();
        if sleeping >= 3 {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{who:?}: jobs never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    s.send_signal(libc::SIGTERM);
    let quick = s.io().wait(&quick);
    assert_eq!(
        record(&quick)["stop_reason"],
        "success",
        "{who:?}: {quick:#}"
    );
    assert_eq!(record(&quick)["output"], json!({"done": 1}));
    let long = s.io().wait(&long);
    let rec = record(&long);
    assert_eq!(
        rec["stop_reason"], "interrupted:sigterm",
        "{who:?}: {rec:#}"
    );
    assert_eq!(rec["phase"], "execute");
    let call = s.io().wait(&call);
    let rec = record(&call);
    assert_eq!(
        rec["stop_reason"], "interrupted:sigterm",
        "{who:?}: {rec:#}"
    );
    assert_eq!(rec["session"]["ended"], true);
    // Only the finished job was stored.
    assert_eq!(entries(&cache).len(), 1, "{who:?}");
    s.finish_exit();
}

// ---------------------------------------------------------------------------------------
// Protocol

#[test]
fn bad_lines_get_errors_and_the_server_goes_on() {
    for who in variants() {
        let (m, p) = setup("proto", &Knobs::default());
        let mut s = Server::start(who, &p, &m, &["--pool", "1"]);
        let io = s.io();
        let null_errors: &[(&[u8], &str)] = &[
            (b"not json", "bad_json"),
            (b"[1, 2]", "bad_request"),
            (b"{\"id\": {\"a\": 1}, \"op\": \"stats\"}", "bad_request"),
            (
                b"{\"id\": \"x\", \"id\": \"y\", \"op\": \"stats\"}",
                "bad_json",
            ),
            (b"\xff\xfe{}", "bad_json"),
            (b"{\"op\": \"stats\", \"id\": \"", "bad_json"),
        ];
        for (line, _) in null_errors {
            io.send_bad_line(line);
        }
        let long_id = "i".repeat(200);
        io.send_bad_line(format!("{{\"id\": \"{long_id}\", \"op\": \"stats\"}}").as_bytes());
        // Bad lines are answered in order, each with what was wrong and no id.
        let codes: Vec<&str> = null_errors
            .iter()
            .map(|(_, c)| *c)
            .chain(["bad_request"])
            .collect();
        for (i, code) in codes.iter().enumerate() {
            let r = io.wait(&Value::Null);
            assert_eq!(error_code(&r), *code, "{who:?}: bad line {i}: {r}");
        }
        let tagged: Vec<(Value, &str)> = vec![
            (json!({"id": "u", "op": "fly"}), "unknown_op"),
            (json!({"id": "e", "op": "stats", "extra": 1}), "bad_request"),
            (json!({"id": "a", "op": "run"}), "bad_request"),
            (
                json!({"id": "a2", "op": "run", "action": "x"}),
                "bad_request",
            ),
            (
                json!({"id": "t", "op": "session_exec", "session": "s", "code": "1",
                    "timeout_s": -1}),
                "bad_request",
            ),
            (
                json!({"id": "n", "op": "session_exec", "session": "nope", "code": "1"}),
                "unknown_session",
            ),
            (
                json!({"id": "c", "op": "session_close", "session": "nope"}),
                "unknown_session",
            ),
            (
                json!({"id": 7, "op": "session_start", "policy_hints": {"network_access": "on"}}),
                "bad_request",
            ),
        ];
        for (req, code) in &tagged {
            let r = io.call(req.clone());
            assert_eq!(error_code(&r), *code, "{who:?}: {req} -> {r}");
            assert_eq!(r["id"], req["id"]);
        }
        // CRLF and blank lines are fine; the server answers as before.
        io.send_raw_with_id(
            b"\r\n\n{\"id\": \"crlf\", \"op\": \"stats\"}\r\n",
            &json!("crlf"),
        );
        let r = io.wait(&json!("crlf"));
        assert!(r["stats"].is_object());
        let rec = io.run(action("print('{\"still\": \"here\"}')", json!({})));
        assert_eq!(rec["output"], json!({"still": "here"}));
        let stderr = s.finish();
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// A request line of about `size` bytes: `head` (an object's opening members, ending in a
/// comma or a value), JSON whitespace up to `size`, then `tail` and a newline.
fn padded_line(head: &str, size: usize, tail: &str) -> Vec<u8> {
    let mut line = head.as_bytes().to_vec();
    line.resize(size - tail.len() - 1, b' ');
    line.extend_from_slice(tail.as_bytes());
    line.push(b'\n');
    line
}

#[test]
fn a_large_request_is_read_up_to_the_line_limit_and_every_error_keeps_its_id() {
    // The line limit is 32 MiB; the strict reader's own default is 16 MiB. A 20 MiB line
    // used to be answered bad_json with a null id, and a line over the limit always was: a
    // client waiting on its id waited for ever.
    const MIB: usize = 1024 * 1024;
    for who in variants() {
        let (m, p) = setup("bigline", &Knobs::default());
        let mut s = Server::start(who, &p, &m, &["--pool", "1"]);
        let io = s.io();
        let act = action("print('{\"big\": true}')", json!({}));
        // 20 MiB, malformed near its end (a bare word): bad_json, under its id.
        let head = format!(r#"{{"id": "bad20", "op": "run", "action": {act}, "x": "#);
        io.send_raw_with_id(&padded_line(&head, 20 * MIB, "tru}"), &json!("bad20"));
        // 20 MiB with a duplicate key at its end: bad_json, under its id (a number).
        let head = format!(r#"{{"id": 20, "op": "run", "action": {act},"#);
        io.send_raw_with_id(
            &padded_line(&head, 20 * MIB, r#""y": 1, "y": 2}"#),
            &json!(20),
        );
        // 33 MiB, past the limit, starting with its id: line_too_long, under its id.
        let head = r#"{"id": "huge", "op": "run", "action": {"pad": ""#;
        let mut over = padded_line(head, 33 * MIB, r#""}}"#);
        let pad = head.len()..over.len() - 4;
        over[pad].fill(b'a');
        io.send_raw_with_id(&over, &json!("huge"));
        // Errors are answered by the reader as it goes, before the next line is read: once
        // the stats request after them is answered, theirs are in.
        let stats = io.send(json!({"op": "stats"}));
        io.wait(&stats);
        for (id, code) in [
            (json!("bad20"), "bad_json"),
            (json!(20), "bad_json"),
            (json!("huge"), "line_too_long"),
        ] {
            let r = io.try_take(&id).unwrap_or_else(|| {
                let null = io.try_take(&Value::Null);
                panic!("{who:?}: no answer under the id {id}; under null: {null:?}")
            });
            assert_eq!(error_code(&r), code, "{who:?}: {id}: {r}");
        }
        // 20 MiB, well formed: served like any request.
        let head = format!(r#"{{"id": "ok20", "op": "run", "action": {act}"#);
        io.send_raw_with_id(&padded_line(&head, 20 * MIB, "}"), &json!("ok20"));
        let r = io.wait(&json!("ok20"));
        assert_eq!(record(&r)["output"], json!({"big": true}), "{who:?}: {r}");
        let stderr = s.finish();
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn a_forked_copy_of_the_session_runner_cannot_answer_for_it() {
    // The program forks; the copy leaves the call (raising, or running to the end) before the
    // runner does. It must exit there: never report a result in the runner's place, never
    // read the next call's code.
    for who in variants() {
        let (m, p) = setup("forged", &Knobs::default());
        let mut s = Server::start(who, &p, &m, &["--pool", "1"]);
        let sid = s.io().start_session();
        let raising = "import os, time\npid = os.fork()\nif pid == 0:\n    raise ValueError('forged by the copy')\ntime.sleep(0.3)\nos.waitpid(pid, 0)[1] >> 8";
        let rec = s.io().exec_ok(&sid, raising);
        assert!(
            rec["error"].is_null(),
            "{who:?}: the copy's error was reported: {rec:#}"
        );
        assert_eq!(
            rec["value"], "1",
            "{who:?}: the copy exited 1 after its traceback"
        );
        let stderr = rec["execution"]["stderr"].as_str().unwrap_or("");
        assert!(stderr.contains("forged by the copy"), "{who:?}: {rec:#}");
        let returning = "import os, time\npid = os.fork()\nif pid:\n    time.sleep(0.3)\n    os.waitpid(pid, 0)\n'parent' if pid else 'copy'";
        let rec = s.io().exec_ok(&sid, returning);
        assert_eq!(rec["value"], "'parent'", "{who:?}: {rec:#}");
        // The next call is the runner's own: its value, and the globals it kept.
        let rec = s.io().exec_ok(&sid, "(6 * 7, pid > 0)");
        assert_eq!(rec["value"], "(42, True)", "{who:?}: {rec:#}");
        s.finish();
    }
}

/// A process call 1 leaves running attacks call 2: it writes forged `done` reports (with
/// and without a guessed nonce) to the runner's report pipe and tries to read the job pipe
/// to steal call 2's frame, over and over while call 2 runs. Call 2 must end with its own
/// value after its own code ran whole; the leftover only ever got EBADF on fds 3 and 4, and
/// what it printed lands in call 2's stdout.
#[test]
fn a_process_left_from_call_1_cannot_answer_call_2_or_read_its_code() {
    const LEFTOVER: &str = r#"
import os, time, json
if os.fork() == 0:
    seen = {"forged": 0, "stolen": b"", "errors": set()}
    forged = [b'{"event": "done", "ok": true, "value": "\'forged\'"}\n',
              b'{"event": "done", "call": null, "ok": true, "value": "\'forged\'"}\n',
              b'{"event": "done", "call": "0000000000000000", "ok": true, "value": "\'forged\'"}\n']
    for i in range(300):
        for f in forged:
            try:
                os.write(4, f)
                seen["forged"] += 1
            except OSError as e:
                seen["errors"].add(("w", e.errno))
        try:
            os.set_blocking(3, False)
            seen["stolen"] += os.read(3, 1 << 16)
        except OSError as e:
            seen["errors"].add(("r", e.errno))
        time.sleep(0.005)
    print("LEFTOVER", json.dumps({"forged": seen["forged"], "stolen": seen["stolen"].decode("latin-1"),
                                  "errors": sorted(seen["errors"])}), flush=True)
    raise SystemExit(0)
leftover = 'started'
leftover
"#;
    for who in variants() {
        let (m, p) = setup("leftover", &Knobs::default());
        let mut s = Server::start(who, &p, &m, &["--pool", "1"]);
        let sid = s.io().start_session();
        let rec = s.io().exec_ok(&sid, LEFTOVER);
        assert_eq!(rec["value"], "'started'", "{who:?}: {rec:#}");
        // Call 2 runs for a while, so the leftover's loop overlaps it; its own code must run
        // to its end and answer.
        let rec = s.io().exec_ok(
            &sid,
            "import time\nmarks = []\nfor i in range(10):\n    time.sleep(0.1)\n    marks.append(i)\n'call 2 ran whole: %d' % len(marks)",
        );
        assert_eq!(
            rec["value"], "'call 2 ran whole: 10'",
            "{who:?}: a forged done answered call 2: {rec:#}"
        );
        // The next call is the runner's own, and call 2's globals are there.
        let rec = s
            .io()
            .exec_ok(&sid, "import time\ntime.sleep(2)\nlen(marks)");
        assert_eq!(rec["value"], "10", "{who:?}: {rec:#}");
        // The leftover's report, printed into whichever call ran when it finished.
        let mut out = rec["execution"]["stdout"]
            .as_str()
            .unwrap_or("")
            .to_string();
        for _ in 0..20 {
            if out.contains("LEFTOVER") {
                break;
            }
            let r = s.io().exec_ok(&sid, "import time\ntime.sleep(0.2)");
            out.push_str(r["execution"]["stdout"].as_str().unwrap_or(""));
        }
        let line = out
            .lines()
            .find_map(|l| l.strip_prefix("LEFTOVER "))
            .unwrap_or_else(|| panic!("{who:?}: the leftover never reported: {out}"));
        let seen: Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            seen["forged"], 0,
            "{who:?}: the leftover wrote reports: {seen}"
        );
        assert_eq!(
            seen["stolen"], "",
            "{who:?}: the leftover read a frame: {seen}"
        );
        assert_eq!(
            seen["errors"],
            json!([["r", libc::EBADF], ["w", libc::EBADF]]),
            "{who:?}: {seen}"
        );
        s.finish();
    }
}

/// The stronger leftover: before it forks, call 1 copies fds 3 and 4 (so the runner's
/// at-fork close leaves the copies open in the child), and the child also reopens the
/// runner's fds 3 and 4 through /proc over and over while call 2 runs, writing forged
/// `done` reports and reading for call 2's frame on every fd it gets. Call 2 must run whole
/// and answer with its own value; the copies are call 1's channel (dead once call 1 ended:
/// EPIPE), the reopens fail (a socket cannot be opened through /proc: ENXIO), and not one
/// byte of a frame reaches the leftover.
#[test]
fn a_leftover_holding_copies_of_fds_3_and_4_or_reopening_them_cannot_answer_or_read_call_2() {
    const LEFTOVER: &str = r#"
import os, time, json
d3, d4 = os.dup(3), os.dup(4)
runner = os.getpid()
if os.fork() == 0:
    time.sleep(0.5)
    seen = {"forged": 0, "stolen": b"", "errors": set(), "opened": 0}
    try:
        os.close(os.open("/proc/%d/mem" % runner, os.O_RDWR))
        seen["opened"] += 1
    except OSError as e:
        seen["errors"].add(("mem", e.errno))
    forged = [b'{"event": "done", "ok": true, "value": "\'forged\'"}\n',
              b'{"event": "done", "call": null, "ok": true, "value": "\'forged\'"}\n']
    for i in range(200):
        fds = [d3, d4]
        for n in (3, 4):
            try:
                fds.append(os.open("/proc/%d/fd/%d" % (runner, n), os.O_RDWR | os.O_NONBLOCK))
                seen["opened"] += 1
            except OSError as e:
                seen["errors"].add(("open", e.errno))
        for fd in fds:
            for f in forged:
                try:
                    os.write(fd, f)
                    seen["forged"] += 1
                except OSError as e:
                    seen["errors"].add(("w", e.errno))
            try:
                os.set_blocking(fd, False)
                seen["stolen"] += os.read(fd, 1 << 16)
            except OSError as e:
                seen["errors"].add(("r", e.errno))
        for fd in fds[2:]:
            os.close(fd)
        time.sleep(0.005)
    print("LEFTOVER", json.dumps({"forged": seen["forged"], "opened": seen["opened"],
                                  "stolen": seen["stolen"].decode("latin-1"),
                                  "errors": sorted(seen["errors"])}), flush=True)
    raise SystemExit(0)
os.close(d3)
os.close(d4)
leftover = 'started'
leftover
"#;
    for who in variants() {
        let (m, p) = setup("copies", &Knobs::default());
        let mut s = Server::start(who, &p, &m, &["--pool", "1"]);
        let sid = s.io().start_session();
        let rec = s.io().exec_ok(&sid, LEFTOVER);
        assert_eq!(rec["value"], "'started'", "{who:?}: {rec:#}");
        let rec = s.io().exec_ok(
            &sid,
            "import time\nmarks = []\nfor i in range(15):\n    time.sleep(0.1)\n    marks.append(i)\n'call 2 ran whole: %d' % len(marks)",
        );
        assert_eq!(
            rec["value"], "'call 2 ran whole: 15'",
            "{who:?}: a forged done answered call 2: {rec:#}"
        );
        let mut out = rec["execution"]["stdout"]
            .as_str()
            .unwrap_or("")
            .to_string();
        for _ in 0..40 {
            if out.contains("LEFTOVER") {
                break;
            }
            let r = s
                .io()
                .exec_ok(&sid, "import time\ntime.sleep(0.2)\nlen(marks)");
            assert_eq!(r["value"], "15", "{who:?}: {r:#}");
            out.push_str(r["execution"]["stdout"].as_str().unwrap_or(""));
        }
        let line = out
            .lines()
            .find_map(|l| l.strip_prefix("LEFTOVER "))
            .unwrap_or_else(|| panic!("{who:?}: the leftover never reported: {out}"));
        let seen: Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            seen["stolen"], "",
            "{who:?}: the leftover read a frame: {seen}"
        );
        assert_eq!(
            seen["opened"], 0,
            "{who:?}: the leftover reopened fd 3 or 4: {seen}"
        );
        assert_eq!(
            seen["forged"], 0,
            "{who:?}: a forged report was accepted by a live channel: {seen}"
        );
        let errors: Vec<(String, i64)> = serde_json::from_value(seen["errors"].clone()).unwrap();
        for (what, errno) in &errors {
            let expected: &[i32] = match what.as_str() {
                "open" => &[libc::ENXIO],
                // The jail's procfs is read-only: no patching the runner's memory.
                "mem" => &[libc::EROFS],
                "w" => &[libc::EPIPE],
                // A read of a socket whose other end is closed is EOF (b""), or ECONNRESET
                // when unread data was left in it.
                _ => &[libc::ECONNRESET],
            };
            assert!(
                expected.contains(&(*errno as i32)),
                "{who:?}: unexpected {what} errno {errno}: {seen}"
            );
        }
        for tried in ["open", "mem"] {
            assert!(
                errors.iter().any(|(w, _)| w == tried),
                "{who:?}: {tried} was never tried: {seen}"
            );
        }
        s.finish();
    }
}

/// A leftover that rings the runner's doorbell itself (ioctl(3, 0x4A410001) on a copy of
/// fd 3, or on any fd) is not the runner: the ring is a forbidden syscall and ends the
/// session; the call running then stops with `code_forbidden_syscall:ioctl`, and the ring
/// installs nothing.
#[test]
fn a_leftover_ringing_the_session_doorbell_ends_the_session() {
    const RINGER: &str = r#"
import os, time, fcntl
if os.fork() == 0:
    time.sleep(0.5)
    try:
        fcntl.ioctl(3, 0x4A410001, 0)
    except OSError as e:
        print("RING FAILED", e.errno, flush=True)
    print("RING RETURNED", flush=True)
    raise SystemExit(0)
'forked'
"#;
    for who in variants() {
        let (m, p) = setup("ringer", &Knobs::default());
        let mut s = Server::start(who, &p, &m, &["--pool", "1"]);
        let sid = s.io().start_session();
        let rec = s.io().exec_ok(&sid, RINGER);
        assert_eq!(rec["value"], "'forked'", "{who:?}: {rec:#}");
        let rec = record(&s.io().exec(&sid, "import time\ntime.sleep(3)\n'slept'")).clone();
        assert_eq!(
            rec["stop_reason"], "code_forbidden_syscall:ioctl",
            "{who:?}: {rec:#}"
        );
        let stdout = rec["execution"]["stdout"].as_str().unwrap_or("");
        assert!(
            !stdout.contains("RING"),
            "{who:?}: the ring returned: {rec:#}"
        );
        assert_eq!(rec["session"]["ended"], true, "{who:?}: {rec:#}");
        s.finish();
    }
}

/// The pool grows while jobs wait for jails and shrinks back to `--pool` when idle: with
/// `--pool 1 --pool-max 3`, a burst of four concurrent jobs raises the target to the
/// ceiling (never past it); two seconds (`--pool-idle 2`) after the last job waited, the
/// spawner threads end the surplus jails, one a second, down to the floor, and it still
/// serves.
#[test]
fn the_pool_grows_while_jobs_wait_and_shrinks_back_when_idle() {
    let who = Who::Root;
    let (m, p) = setup("sizing", &Knobs::default());
    let mut s = Server::start(
        who,
        &p,
        &m,
        &[
            "--pool",
            "1",
            "--pool-max",
            "3",
            "--pool-idle",
            "2",
            "-j",
            "4",
        ],
    );
    let pool = |s: &mut Server| s.io().call(json!({"op": "stats"}))["stats"]["pool"].clone();
    let first = pool(&mut s);
    assert_eq!(
        (&first["floor"], &first["ceiling"], &first["target"]),
        (&json!(1), &json!(3), &json!(1)),
        "{first}"
    );
    let mut peak = 0;
    for round in 0..3 {
        let ids: Vec<Value> = (0..4)
            .map(|i| {
                s.io().send(json!({"op": "run", "action":
                    action(&format!("import time\ntime.sleep(0.4)\nprint('{{\"n\": {i}}}')"), json!({}))}))
            })
            .collect();
        for id in &ids {
            let r = s.io().wait(id);
            assert_eq!(record(&r)["stop_reason"], "success", "round {round}: {r}");
        }
        let t = pool(&mut s)["target"].as_u64().unwrap();
        assert!(t <= 3, "the pool grew past its ceiling: {t}");
        peak = peak.max(t);
    }
    assert_eq!(
        peak, 3,
        "three rounds of four waiting jobs did not grow the pool to its ceiling"
    );
    // Idle: back to the floor within idle (2 s) + one second per surplus jail + slack.
    let t0 = Instant::now();
    let last = loop {
        let p = pool(&mut s);
        if p["target"] == 1 && p["ready"].as_u64().unwrap() <= 1 {
            break p;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(15),
            "the pool never shrank: {p}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(last["floor"], 1, "{last}");
    // And it still serves.
    let rec = s.io().run(action("print('{\"after\": true}')", json!({})));
    assert_eq!(rec["output"], json!({"after": true}));
    s.finish();
}

// ---------------------------------------------------------------------------------------
// 7. What one client can cost the others

/// The server's peak resident memory (VmHWM), in KiB.
fn peak_rss_kib(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// A client that sends jobs with ~2 MiB records and never reads, beside a client that
/// does: the second gets every answer (stats included) while the first is outstanding; the
/// first is dropped once 16 MiB of its responses wait (its connection shut down, its
/// session ended, its queued jobs never started); the server's memory stays bounded.
#[test]
fn a_client_that_stops_reading_costs_only_itself() {
    for who in variants() {
        let k = Knobs {
            stdout: Some("1MiB"),
            ..Default::default()
        };
        let (m, p) = setup("hog", &k);
        let dir = scratch("hog");
        let sock = dir.path().join("s.sock");
        let audit = dir.path().join("audit.jsonl");
        let s = Server::start(
            who,
            &p,
            &m,
            &[
                "--pool",
                "2",
                "-j",
                "4",
                "--socket",
                sock.to_str().unwrap(),
                "--audit-log",
                audit.to_str().unwrap(),
            ],
        );
        let mut good = s.connect("good");
        good.run(action("print('{}')", json!({})));
        let sid_good = good.start_session();
        let base = peak_rss_kib(s.pid);
        // The hog: a session, then 200 jobs that each print ~900 KiB of JSON (stdout and
        // output: ~2 MiB per record), all sent at once; it never reads a byte.
        let mut hog = std::os::unix::net::UnixStream::connect(&sock).unwrap();
        use std::io::Write as _;
        hog.write_all(b"{\"id\": \"hs\", \"op\": \"session_start\"}\n")
            .unwrap();
        let big = "import json\nprint(json.dumps({'x': 'y' * 900000}))";
        let mut lines = Vec::new();
        for i in 0..200 {
            let req = json!({"id": format!("h{i}"), "op": "run", "action": action(big, json!({}))});
            lines.extend(serde_json::to_vec(&req).unwrap());
            lines.push(b'\n');
        }
        hog.write_all(&lines).unwrap();
        // The good client is answered meanwhile, every time.
        for i in 0..10 {
            let rec = good.run(action(&format!("print('{{\"i\": {i}}}')"), json!({})));
            assert_eq!(rec["output"], json!({"i": i}), "{who:?}: {rec:#}");
            assert!(good.stats()["sessions"].is_number());
            good.exec_ok(&sid_good, "1");
        }
        // The hog is dropped: what it can still read ends in EOF, with far fewer than 200
        // answers.
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut hog, &mut got).unwrap();
        let answered = got.split(|b| *b == b'\n').filter(|l| !l.is_empty()).count();
        assert!(answered < 100, "{who:?}: the hog got {answered} answers");
        assert!(s.stderr().contains("dropped"), "{who:?}: {}", s.stderr());
        // Its session ended; the good client's lives on.
        let t = Instant::now();
        while good.stats()["sessions"] != 1 {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "{who:?}: the hog's session stays"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        good.exec_ok(&sid_good, "2");
        let grown = peak_rss_kib(s.pid).saturating_sub(base);
        // Unbounded, 200 queued 2 MiB records would be ~400 MiB; the queue holds 16 MiB,
        // the 4 workers a few records each.
        assert!(grown < 160 * 1024, "{who:?}: serve grew by {grown} KiB");
        // Every record of the hog's jobs that ran is in the audit log, whole.
        let text = std::fs::read_to_string(&audit).unwrap();
        let ran = text.lines().count();
        assert!(
            ran < 200,
            "{who:?}: {ran} of the hog's jobs ran after it was dropped"
        );
        for l in text.lines() {
            let _: Value = serde_json::from_str(l).unwrap();
        }
        eprintln!("{who:?}: hog answered {answered}, {ran} records, serve grew {grown} KiB");
        good.close();
        good.assert_all_answered();
        s.finish();
    }
}

/// Eight clients that never read, each asking for four records of ~3 MiB (under its own
/// 16 MiB bound, 96 MiB together), beside a client that reads: with
/// `--unread-budget 16MiB` the server drops the clients with the most unread until
/// the total is within it (at most one hog can stay: two would hold more), each drop is on
/// stderr and in `stats.responses`, the good client is answered (its requests wait behind
/// the hogs' for a worker, first come first served, so it is asked once they are dropped),
/// and the server's memory stays below what the hogs asked for.
#[test]
fn unread_responses_over_all_clients_stay_within_the_servers_budget() {
    const HOGS: usize = 8;
    for who in variants() {
        let k = Knobs {
            stdout: Some("4MiB"),
            ..Default::default()
        };
        let (m, p) = setup("budget", &k);
        let dir = scratch("budget");
        let sock = dir.path().join("s.sock");
        let s = Server::start(
            who,
            &p,
            &m,
            &[
                "--pool",
                "2",
                "-j",
                "4",
                "--socket",
                sock.to_str().unwrap(),
                "--unread-budget",
                "16MiB",
            ],
        );
        let mut good = s.connect("good");
        good.run(action("print('{}')", json!({})));
        let base = peak_rss_kib(s.pid);
        let big = "print('y' * 3000000)";
        let mut hogs = Vec::new();
        for h in 0..HOGS {
            let mut hog = std::os::unix::net::UnixStream::connect(&sock).unwrap();
            let mut lines = Vec::new();
            for i in 0..4 {
                let req = json!({"id": format!("h{h}-{i}"), "op": "run", "action": action(big, json!({}))});
                lines.extend(serde_json::to_vec(&req).unwrap());
                lines.push(b'\n');
            }
            std::io::Write::write_all(&mut hog, &lines).unwrap();
            hogs.push(hog);
        }
        // Every hog but at most one is dropped, each drop logged (bounded wait: the hogs'
        // jobs run first; the log, not a request, is watched, since a request would queue
        // behind them).
        let t = Instant::now();
        while s.stderr().matches("--unread-budget 16 MiB").count() < HOGS - 1 {
            assert!(
                t.elapsed() < Duration::from_secs(300),
                "{who:?}: hogs not dropped:\n{}",
                s.stderr()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        // The good client is answered, every time, with the drops in `stats`.
        for i in 0..5 {
            let rec = good.run(action(&format!("print('{{\"i\": {i}}}')"), json!({})));
            assert_eq!(rec["output"], json!({"i": i}), "{who:?}: {rec:#}");
        }
        let st = good.stats();
        let responses = st["responses"].clone();
        assert_eq!(
            responses["max_unread_bytes"],
            16 * 1024 * 1024,
            "{who:?}: {st}"
        );
        assert!(
            responses["clients_dropped"].as_u64() >= Some(HOGS as u64 - 1),
            "{who:?}: {st}"
        );
        assert!(
            responses["unread_bytes"].as_u64() <= Some(16 * 1024 * 1024),
            "{who:?}: {responses}"
        );
        // A dropped hog's connection is shut down: what it can read ends in EOF.
        let mut ended = 0;
        for hog in &mut hogs {
            hog.set_read_timeout(Some(Duration::from_millis(200)))
                .unwrap();
            let mut got = Vec::new();
            if std::io::Read::read_to_end(hog, &mut got).is_ok() {
                ended += 1;
            }
        }
        assert!(ended >= HOGS - 1, "{who:?}: {ended} hogs saw EOF");
        let grown = peak_rss_kib(s.pid).saturating_sub(base);
        // Unbounded, the hogs' 32 records of 3 MiB (96 MiB) would all wait in the server;
        // the budget holds 16 MiB, the 4 workers a few records each.
        assert!(grown < 100 * 1024, "{who:?}: serve grew by {grown} KiB");
        let rec = good.run(action("print('{\"still\": 1}')", json!({})));
        assert_eq!(rec["output"], json!({"still": 1}), "{who:?}: {rec:#}");
        eprintln!("{who:?}: {responses}, serve grew {grown} KiB");
        drop(hogs);
        good.close();
        good.assert_all_answered();
        s.finish();
    }
}

/// Per-client limits: requests in flight (one worker busy, 300 requests queued behind it:
/// the ones past the limit are answered `too_many_requests` at once, the rest are answered
/// in full) and open sessions (`[session] max_per_client`, counted per uid across
/// connections).
#[test]
fn a_flood_from_one_client_gets_clear_errors_and_the_server_goes_on() {
    for who in variants() {
        let k = Knobs {
            max_per_client: Some(2),
            ..Default::default()
        };
        let (m, p) = setup("flood", &k);
        let dir = scratch("flood");
        let sock = dir.path().join("s.sock");
        let s = Server::start(
            who,
            &p,
            &m,
            &["--pool", "1", "-j", "1", "--socket", sock.to_str().unwrap()],
        );
        let mut a = s.connect("A");
        let slow = a.send(json!({"op": "run", "action": action("import time\ntime.sleep(3)\nprint('{}')", json!({}))}));
        let ids: Vec<Value> = (0..300).map(|_| a.send(json!({"op": "stats"}))).collect();
        let mut refused = 0;
        for id in &ids {
            let r = a.wait(id);
            if r.get("error").is_some() {
                assert_eq!(error_code(&r), "too_many_requests", "{who:?}: {r}");
                assert!(r["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("unanswered"));
                refused += 1;
            } else {
                assert!(r["stats"].is_object(), "{who:?}: {r}");
            }
        }
        assert_eq!(record(&a.wait(&slow))["stop_reason"], "success");
        assert!(
            (40..=50).contains(&refused),
            "{who:?}: {refused} of 300 refused with 256 in flight"
        );
        // Sessions: two per client, whichever connection of the uid asks.
        let mut b = s.connect("B");
        let s1 = a.start_session();
        let _s2 = b.start_session();
        let third = b.call(json!({"op": "session_start"}));
        assert_eq!(error_code(&third), "too_many_sessions", "{who:?}: {third}");
        assert!(third["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_per_client"));
        a.call(json!({"op": "session_close", "session": s1}));
        let s3 = b.start_session();
        b.exec_ok(&s3, "1");
        a.close();
        b.close();
        a.assert_all_answered();
        b.assert_all_answered();
        s.finish();
    }
}

/// A client's unanswered request lines are bounded in bytes too (docs/SECURITY.md, "Memory,
/// bounded per client": 64 MiB): with the one worker busy on a call of the client's, two
/// 31 MiB lines are read and queued, and a 3 MiB one, past 64 MiB, is answered
/// `too_many_requests` at once, before the busy call or any queued line is answered.
/// SIGTERM then ends the server, its call stopped, nothing left.
#[test]
fn unanswered_request_lines_are_bounded_at_64_mib_per_client() {
    // One launch variant: the limit is serve's reader's, whoever runs the server, and
    // reading 65 MiB of lines costs the debug build most of a minute on a loaded machine.
    let who = variants()[0];
    let k = Knobs {
        wall_ms: Some(600_000),
        ..Default::default()
    };
    let (m, p) = setup("unanswered", &k);
    let dir = scratch("unanswered");
    let sock = dir.path().join("s.sock");
    let s = Server::start(
        who,
        &p,
        &m,
        &["--pool", "1", "-j", "1", "--socket", sock.to_str().unwrap()],
    );
    let mut a = s.connect("A");
    // A call of A's session holds the one worker until the server is told to exit (its
    // limit, 10 min, is never reached).
    let session = a.start_session();
    let busy = a.send(json!({"op": "session_exec", "session": session,
            "code": "import time\ntime.sleep(600)"}));
    // Two lines of 31 MiB are read and queued (62 MiB); one of 3 MiB more is past 64.
    let line = |mib: usize| action(&format!("#{}", "x".repeat(mib << 20)), json!({}));
    let queued: Vec<Value> = (0..2)
        .map(|_| a.send(json!({"op": "run", "action": line(31)})))
        .collect();
    let over = a.send(json!({"op": "run", "action": line(3)}));
    let r = a.wait(&over);
    assert_eq!(error_code(&r), "too_many_requests", "{who:?}: {r}");
    assert!(
        r["error"]["message"].as_str().unwrap().contains("64 MiB"),
        "{who:?}: {r}"
    );
    for id in queued.iter().chain([&busy]) {
        assert!(
            a.try_take(id).is_none(),
            "{who:?}: {id} was answered before the refusal: not queued"
        );
    }
    // EOF lets a client's requests finish; SIGTERM stops the call after serve's grace.
    a.close();
    s.sigterm_leaves_nothing_at_exit();
}

/// Parallel session starts from one client (one uid over eight connections at once) never
/// hold more than `[session] max_per_client`: a start under way holds its slot
/// (docs/SECURITY.md, "Memory, bounded per client"), so the ones past the count are
/// `too_many_sessions` however they interleave, and every session that started works.
#[test]
fn parallel_session_starts_from_one_client_stay_within_max_per_client() {
    for who in variants() {
        let k = Knobs {
            max_per_client: Some(2),
            ..Default::default()
        };
        let (m, p) = setup("sess-maxpc", &k);
        let dir = scratch("sess-maxpc");
        let sock = dir.path().join("s.sock");
        let s = Server::start(
            who,
            &p,
            &m,
            &["--pool", "1", "-j", "8", "--socket", sock.to_str().unwrap()],
        );
        let (answers, mut conns): (Vec<Value>, Vec<serve_harness::Conn>) =
            std::thread::scope(|scope| {
                let threads: Vec<_> = (0..8)
                    .map(|t| {
                        let mut c = s.connect(&format!("c{t}"));
                        scope.spawn(move || (c.call(json!({"op": "session_start"})), c))
                    })
                    .collect();
                threads.into_iter().map(|t| t.join().unwrap()).unzip()
            });
        let started: Vec<usize> = (0..answers.len())
            .filter(|&i| answers[i]["session"].is_string())
            .collect();
        assert_eq!(started.len(), 2, "{who:?}: {answers:#?}");
        for r in answers.iter().filter(|r| !r["session"].is_string()) {
            assert_eq!(error_code(r), "too_many_sessions", "{who:?}: {r}");
            assert!(
                r["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("max_per_client"),
                "{who:?}: {r}"
            );
        }
        assert_eq!(conns[0].stats()["sessions"], 2, "{who:?}");
        for &i in &started {
            let id = answers[i]["session"].as_str().unwrap().to_string();
            conns[i].exec_ok(&id, "1");
        }
        conns.iter_mut().for_each(serve_harness::Conn::close);
        for c in &conns {
            c.assert_all_answered();
        }
        s.finish();
    }
}

// ---------------------------------------------------------------------------------------
// Soak

/// One soak job: its action and the stop reason it must end with.
fn soak_job(i: usize) -> (Value, &'static str) {
    let id = format!("soak-{i}");
    let mut a = action(
        "import json\np = json.loads(input())\nprint(json.dumps({'n': p['n'] * 2}))",
        json!({"n": i}),
    );
    let expect = match i % 10 {
        0..=3 => "success",
        4 => {
            a["code"] = json!("raise SystemExit(3)");
            "code_runtime_error:3"
        }
        5 => {
            a["code"] = json!("print('x' * 200000)");
            "code_output_too_large"
        }
        6 => {
            a["code"] = json!("import socket\nprint(1)");
            "policy_block:static_policy_violation:import_not_allowed:socket"
        }
        7 => {
            a.as_object_mut().unwrap().remove("code");
            "invalid_action:code"
        }
        8 => {
            a["output_schema"] =
                json!({"type": "object", "required": ["m"], "properties": {"m": {}}});
            "invalid_code_output:m"
        }
        // Every 100th job waits out a 300 ms wall limit; the others print their payload
        // back through the runner's stdin.
        _ if i % 100 == 99 => {
            a["code"] = json!("import time\ntime.sleep(5)");
            a["policy_hints"] = json!({"exec_timeout_seconds": 0.3});
            "code_timeout"
        }
        _ => "success",
    };
    a["id"] = json!(id);
    (a, expect)
}

#[test]
fn a_thousand_mixed_jobs_and_a_hundred_sessions_leave_nothing_behind() {
    const JOBS: usize = 1000;
    const SESSIONS: usize = 100;
    for who in variants() {
        let t = Instant::now();
        // Half the sessions stay open until EOF: 50 on one client, past the default
        // [session] max_per_client (16).
        let k = Knobs {
            max_per_client: Some(SESSIONS as u64),
            ..Default::default()
        };
        let (m, p) = setup("soak", &k);
        let mut s = Server::start(who, &p, &m, &["--pool", "2", "-j", "4"]);
        let mut run_ids = std::collections::HashSet::new();
        let mut sessions_seen = std::collections::HashSet::new();
        // Batches of 20 jobs and 2 sessions in flight at once, answered in any order.
        for batch in 0..JOBS / 20 {
            let sent: Vec<(Value, usize, &str)> = (batch * 20..batch * 20 + 20)
                .map(|i| {
                    let (a, expect) = soak_job(i);
                    (s.io().send(json!({"op": "run", "action": a})), i, expect)
                })
                .collect();
            let mut open = Vec::new();
            for k in 0..SESSIONS / (JOBS / 20) {
                let n = batch * 2 + k;
                let sid = s.io().start_session();
                assert!(
                    sessions_seen.insert(sid.clone()),
                    "{who:?}: session id reused"
                );
                s.io().exec_ok(&sid, &format!("x = {n}"));
                let rec = s.io().exec_ok(&sid, "x * 2");
                assert_eq!(rec["value"], (2 * n).to_string(), "{who:?}: {rec:#}");
                open.push(sid);
            }
            for (req, i, expect) in sent {
                let resp = s.io().wait(&req);
                let rec = record(&resp);
                assert_eq!(rec["stop_reason"], expect, "{who:?} job {i}: {rec:#}");
                assert!(
                    run_ids.insert(rec["run_id"].as_str().unwrap().to_string()),
                    "{who:?}: a run_id came back twice"
                );
                if expect == "success" && i % 10 < 4 {
                    assert_eq!(rec["output"], json!({"n": i * 2}), "{who:?} job {i}");
                    assert_eq!(rec["action"]["id"], format!("soak-{i}"));
                }
            }
            // Half the sessions are closed by the client, the rest at EOF.
            if batch % 2 == 0 {
                for sid in open {
                    let closed = s.io().call(json!({"op": "session_close", "session": sid}));
                    assert_eq!(closed["closed"], true, "{who:?}");
                }
            }
        }
        assert_eq!(run_ids.len(), JOBS);
        assert_eq!(sessions_seen.len(), SESSIONS);
        // Exit 0, every request answered, no process, mount, cgroup or temp entry left.
        s.finish();
        eprintln!(
            "{who:?}: {JOBS} jobs and {SESSIONS} sessions through serve in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
}
