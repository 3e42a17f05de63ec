//! `agentjail serve --http` attacked where an independent attack found it broken (issue 35),
//! through the real binary: callers told apart on every transport (uid 65534 against root's
//! session and workspace, tokenless TCP, another token), the exact request head limits, a
//! token file that is not a regular file, `/run_code`'s answer for a program a signal
//! killed and for a stdin past the action limits, a non-JSON action, and one budget for
//! unread responses over all connections. No assertion is timed.

mod support;

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;
use support::*;

/// A program a signal killed answers `return_code` −signal, as a Python subprocess reports
/// it (and as SandboxFusion does): a real segfault, a real abort, a real SIGKILL, with the
/// server run as root and as nobody (uid 65534: no delegated cgroup, other controls).
#[test]
fn run_code_answers_a_program_killed_by_a_signal_with_minus_the_signal() {
    let root = [bin()];
    let nobody = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--",
        bin(),
    ];
    for who in [&root[..], &nobody[..]] {
        let s = start_cmd(who, "127.0.0.1:0", &["--policy", JUDGE_OPEN_POLICY]);
        killed_programs_answer_minus_the_signal(&s.target);
    }
}

fn killed_programs_answer_minus_the_signal(t: &Target) {
    for (code, reason, rc) in [
        (
            "import ctypes\nctypes.string_at(0)",
            "code_killed:SIGSEGV",
            -11,
        ),
        ("import os\nos.abort()", "code_killed:SIGABRT", -6),
        (
            "import os\nos.kill(os.getpid(), 9)",
            "code_killed:SIGKILL",
            -9,
        ),
    ] {
        let r = post(t, "/run_code", &verl_request(code, "", 10));
        assert_eq!(r.status, 200, "{code}");
        let v = r.json();
        assert_eq!(v["status"], "Failed", "{code}: {v}");
        assert_eq!(v["message"], reason, "{code}: {v}");
        assert_eq!(v["run_result"]["status"], "Finished", "{code}: {v}");
        assert_eq!(v["run_result"]["return_code"], rc, "{code}: {v}");
    }
}

/// Run the binary expecting it to refuse to start; a server that hangs instead is killed
/// after PATIENCE and the test fails saying so.
fn refused_in_time(args: &[&str]) -> (i32, String) {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        let _ = tx.send(s);
    });
    let Ok(err) = rx.recv_timeout(PATIENCE) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("{args:?}: the server hung at start instead of refusing");
    };
    (child.wait().unwrap().code().unwrap_or(-1), err)
}

/// A token file that is not a regular file is refused before it is opened for reading: a
/// FIFO must not hang the server at start (open(2) would wait for a writer).
#[test]
fn a_token_file_that_is_not_a_regular_file_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("tokens.fifo");
    let made = Command::new("mkfifo")
        .arg("-m")
        .arg("600")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let sub = dir.path().join("tokens.d");
    std::fs::create_dir(&sub).unwrap();
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o700)).unwrap();
    for (path, kind) in [
        (fifo.as_path(), "a FIFO"),
        (sub.as_path(), "a directory"),
        (Path::new("/dev/zero"), "a character device"),
    ] {
        let shown = path.display().to_string();
        let (code, err) =
            refused_in_time(&["serve", "--http", "127.0.0.1:0", "--token-file", &shown]);
        assert_eq!(code, 2, "{shown}: {err}");
        assert!(
            err.contains(&format!(
                "--token-file {shown} is {kind}, not a regular file"
            )),
            "{shown}: {err}"
        );
        assert!(err.contains("NAME TOKEN"), "the fix: {err}");
    }
}

/// `curl` as uid 65534 (setpriv): the status and the JSON body of one request. `target`:
/// the URL, after `--unix-socket PATH` where the server is on one.
fn curl_as_nobody(method: &str, target: &[&str], body: &str) -> (u16, Value) {
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .args(["curl", "-sS", "--max-time", "120", "-X", method])
        .args([
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            body,
        ])
        .args(["-w", "\n%{http_code}"])
        .args(target)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text
        .rsplit_once('\n')
        .unwrap_or_else(|| panic!("curl: {text} {}", String::from_utf8_lossy(&out.stderr)));
    let v = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    (code.trim().parse().unwrap(), v)
}

/// Callers are told apart on every transport. Over TCP without tokens every local user is
/// one caller, so nothing that outlives a request is served there: 403
/// `caller_unidentified` for every session and workspace route, for root and for uid 65534
/// alike, while run and check are served.
#[test]
fn no_local_user_reaches_another_users_session_or_workspace() {
    let hex = "0123456789abcdef0123456789abcdef";
    // Tokenless TCP: state is refused to everyone; stateless routes are served.
    let s = start(
        "127.0.0.1:0",
        &["--policy", WORKSPACE_POLICY, "--pool", "1"],
    );
    let t = &s.target;
    let ws_exec = format!("/v1/workspaces/{hex}/exec");
    let ws_del = format!("/v1/workspaces/{hex}");
    let sess_exec = format!("/v1/sessions/{hex}/exec");
    for (method, path, body) in [
        ("POST", "/v1/sessions", ""),
        ("POST", sess_exec.as_str(), r#"{"code": "1"}"#),
        ("DELETE", &format!("/v1/sessions/{hex}"), ""),
        ("POST", "/v1/workspaces", ""),
        ("POST", ws_exec.as_str(), r#"{"command": "true"}"#),
        ("DELETE", ws_del.as_str(), ""),
    ] {
        let r = request(t, method, path, &[], body.as_bytes());
        assert_eq!(r.status, 403, "{method} {path}");
        let e = r.json();
        assert_eq!(e["error"]["code"], "caller_unidentified", "{e}");
        let m = e["error"]["message"].as_str().unwrap();
        assert!(m.contains("--token-file") && m.contains("unix:PATH"), "{m}");
        let Target::Tcp(addr) = t else { unreachable!() };
        let (code, e) = curl_as_nobody(method, &[&format!("http://{addr}{path}")], body);
        assert_eq!(code, 403, "uid 65534: {method} {path}");
        assert_eq!(e["error"]["code"], "caller_unidentified", "{e}");
    }
    let rec = post(t, "/v1/run", &action("print('{}')")).json();
    assert_eq!(rec["status"], "ok", "{rec}");
    assert_eq!(
        post(t, "/v1/check", &action("x = 1")).json()["decision"],
        "allow"
    );
    let m = String::from_utf8(get(t, "/metrics").body).unwrap();
    assert!(
        m.lines()
            .any(|l| l == "agentjail_http_refused_total{why=\"unidentified\"} 12"),
        "{m}"
    );
}

/// On a unix socket the peer's uid is the caller: uid 65534, let in by a world-writable
/// socket, cannot run in, read from or close root's session or workspace.
/// (It is long because each of its five attacks is a route with its own exact refusal.)
#[test]
fn on_a_unix_socket_uid_65534_cannot_reach_roots_session_or_workspace() {
    // A unix socket others may connect to: the peer's uid is the caller.
    let s = start(
        "unix:{dir}/http.sock",
        &["--policy", WORKSPACE_POLICY, "--pool", "1"],
    );
    let Target::Unix(sock) = s.target.clone() else {
        unreachable!()
    };
    std::fs::set_permissions(
        sock.parent().unwrap(),
        std::fs::Permissions::from_mode(0o711),
    )
    .unwrap();
    std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o666)).unwrap();
    let t = &s.target;
    let r = request(t, "POST", "/v1/sessions", &[], b"");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let sid = r.json()["session"].as_str().unwrap().to_string();
    assert_eq!(
        post(
            t,
            &format!("/v1/sessions/{sid}/exec"),
            &json!({"code": "secret = 42"})
        )
        .status,
        200
    );
    let r = request(t, "POST", "/v1/workspaces", &[], b"");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let wid = r.json()["workspace"].as_str().unwrap().to_string();
    let put = post(
        t,
        &format!("/v1/workspaces/{wid}/put"),
        &json!({"files": [{"path": "secret.txt", "content": "root's"}]}),
    );
    assert_eq!(put.status, 200, "{}", String::from_utf8_lossy(&put.body));
    let sock_s = sock.display().to_string();
    let on = |path: &str| format!("http://localhost{path}");
    for (method, path, body, code) in [
        (
            "POST",
            format!("/v1/sessions/{sid}/exec"),
            r#"{"code": "secret"}"#,
            "unknown_session",
        ),
        (
            "DELETE",
            format!("/v1/sessions/{sid}"),
            "",
            "unknown_session",
        ),
        (
            "POST",
            format!("/v1/workspaces/{wid}/get"),
            r#"{"paths": ["secret.txt"]}"#,
            "unknown_workspace",
        ),
        (
            "POST",
            format!("/v1/workspaces/{wid}/exec"),
            r#"{"command": "cat secret.txt"}"#,
            "unknown_workspace",
        ),
        (
            "DELETE",
            format!("/v1/workspaces/{wid}"),
            "",
            "unknown_workspace",
        ),
    ] {
        let (status, e) = curl_as_nobody(method, &["--unix-socket", &sock_s, &on(&path)], body);
        assert_eq!(
            (status, e["error"]["code"].as_str()),
            (404, Some(code)),
            "uid 65534: {method} {path}: {e}"
        );
    }
    // ...and both are still root's, untouched.
    let r = post(
        t,
        &format!("/v1/sessions/{sid}/exec"),
        &json!({"code": "secret"}),
    )
    .json();
    assert_eq!(r["value"], "42", "{r}");
    let got = post(
        t,
        &format!("/v1/workspaces/{wid}/get"),
        &json!({"paths": ["secret.txt"]}),
    )
    .json();
    assert_eq!(got["files"][0]["content_base64"], "cm9vdCdz", "{got}");
}

/// With tokens, another token's caller gets `unknown_workspace` for a workspace.
#[test]
fn another_tokens_caller_cannot_reach_a_workspace() {
    // With tokens: another token's caller gets unknown_session / unknown_workspace.
    let dir = tempfile::tempdir().unwrap();
    let tf = token_file(dir.path(), 0o600).display().to_string();
    let s = start(
        "127.0.0.1:0",
        &[
            "--policy",
            WORKSPACE_POLICY,
            "--pool",
            "1",
            "--token-file",
            &tf,
        ],
    );
    let t = &s.target;
    let alice = [("Authorization", "Bearer aaaaaaaaaaaaaaaaaaaaaaaa")];
    let bob = [("Authorization", "Bearer bbbbbbbbbbbbbbbbbbbbbbbb")];
    let r = request(t, "POST", "/v1/workspaces", &alice, b"");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let wid = r.json()["workspace"].as_str().unwrap().to_string();
    let r = request(
        t,
        "POST",
        &format!("/v1/workspaces/{wid}/get"),
        &bob,
        br#"{"paths": ["x"]}"#,
    );
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (404, json!("unknown_workspace"))
    );
    let r = request(t, "DELETE", &format!("/v1/workspaces/{wid}"), &alice, b"");
    assert_eq!(r.json(), json!({"closed": true}));
}

/// A GET /healthz whose head (request line, header lines, blank line) is exactly `bytes`
/// long and has `fields` header fields (Host and Connection among them), the padding in the
/// last one; on a keep-alive connection when `close` is false.
fn head_of(bytes: usize, fields: usize, close: bool) -> Vec<u8> {
    let conn = if close { "close" } else { "keep-alive" };
    let mut h = format!("GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: {conn}\r\n");
    for i in 0..fields - 3 {
        h.push_str(&format!("X-F{i}: 1\r\n"));
    }
    let fixed = h.len() + "X-Pad: \r\n\r\n".len();
    assert!(bytes > fixed, "{bytes} bytes cannot hold {fields} fields");
    h.push_str(&format!("X-Pad: {}\r\n\r\n", "a".repeat(bytes - fixed)));
    assert_eq!(h.len(), bytes);
    h.into_bytes()
}

/// The status a raw request gets (the server closes after it).
fn status_of(t: &Target, raw: &[u8]) -> u16 {
    let mut c = connect(t);
    c.write_all(raw).unwrap();
    read_response(&mut *c).status
}

/// The head limits are exactly REFERENCE's: 64 KiB (65,536 bytes with its blank line) and
/// 100 header fields; one byte or one field more is 431. Measured per request: a second
/// request on a kept-alive connection has the whole limit again, and no more.
#[test]
fn the_request_head_limits_are_exact() {
    let s = start("127.0.0.1:0", &[]);
    let t = &s.target;
    assert_eq!(
        status_of(t, &head_of(65536, 10, true)),
        200,
        "64 KiB exactly"
    );
    assert_eq!(
        status_of(t, &head_of(65537, 10, true)),
        431,
        "one byte over"
    );
    assert_eq!(status_of(t, &head_of(70_000, 10, true)), 431);
    assert_eq!(status_of(t, &head_of(100_000, 10, true)), 431);
    assert_eq!(status_of(t, &head_of(4096, 100, true)), 200, "100 fields");
    assert_eq!(
        status_of(t, &head_of(4096, 101, true)),
        431,
        "one field over"
    );
    // Two requests on one connection, the first with a body: each head is held to the
    // limit on its own.
    for (second, want) in [(65536, 200), (65537, 431)] {
        let mut c = connect(t);
        let body = action("print('{}')").to_string();
        let first = format!(
            "POST /v1/check HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        c.write_all(first.as_bytes()).unwrap();
        c.write_all(&head_of(second, 10, true)).unwrap();
        let mut raw = Vec::new();
        c.read_to_end(&mut raw).unwrap();
        let text = String::from_utf8_lossy(&raw);
        let statuses: Vec<&str> = text
            .match_indices("HTTP/1.1 ")
            .map(|(i, _)| &text[i + 9..i + 12])
            .collect();
        assert_eq!(statuses, ["200", &want.to_string()], "second head {second}");
    }
    assert_eq!(get(t, "/healthz").status, 200, "the server goes on");
}

/// A `/v1/run` or `/v1/check` body is an action, judged by the action contract: one that is
/// not JSON is the record `invalid_action:non_json` (200, as REFERENCE says), the same
/// answer `agentjail run` gives, not a 400.
#[test]
fn a_body_that_is_not_json_is_judged_as_an_action() {
    let s = start("127.0.0.1:0", &[]);
    let t = &s.target;
    for body in [&b"{not json"[..], b"", b"\xff\xfe", b"[1]"] {
        let r = request(t, "POST", "/v1/run", &[], body);
        assert_eq!(r.status, 200, "{body:?}");
        let rec = r.json();
        let want = if body == b"[1]" {
            "invalid_action:not_object"
        } else {
            "invalid_action:non_json"
        };
        assert_eq!(rec["stop_reason"], want, "{body:?}: {rec}");
        let r = request(t, "POST", "/v1/check", &[], body);
        assert_eq!(r.status, 200, "{body:?}");
        let d = r.json();
        assert_eq!(
            (d["decision"].as_str(), d["reason"].as_str()),
            (Some("deny"), Some(want)),
            "{d}"
        );
    }
}

/// `/run_code`'s body may be 32 MiB, but it becomes one action: the action's 16 MiB and the
/// policy's `max_payload_bytes` for stdin hold, each answered as REFERENCE says (200
/// `Failed`, the reason as `message` and on stderr's last line, return code 1).
#[test]
fn run_code_stdin_is_held_to_the_action_limits_with_their_reason() {
    let s = start("127.0.0.1:0", &["--policy", JUDGE_OPEN_POLICY]);
    let t = &s.target;
    for (stdin_bytes, reason) in [
        (17 << 20, "invalid_action:too_large"),
        ((16 << 20) - 4096, "success"),
    ] {
        let stdin = "x".repeat(stdin_bytes);
        let body = verl_request("import sys\nprint(len(sys.stdin.read()))", &stdin, 20).to_string();
        assert!(body.len() < 32 << 20, "within the body limit");
        let r = request(t, "POST", "/run_code", &[], body.as_bytes());
        assert_eq!(r.status, 200, "{stdin_bytes}");
        let v = r.json();
        if reason == "success" {
            assert_eq!(v["status"], "Success", "{v}");
            assert_eq!(v["run_result"]["stdout"], format!("{stdin_bytes}\n"));
            continue;
        }
        assert_eq!(
            (v["status"].as_str(), v["message"].as_str()),
            (Some("Failed"), Some(reason)),
            "{v}"
        );
        assert_eq!(v["run_result"]["return_code"], 1, "{v}");
        let stderr = v["run_result"]["stderr"].as_str().unwrap();
        assert!(
            stderr.ends_with(&format!("agentjail: {reason}\n")),
            "{stderr}"
        );
    }
    drop(s);
    // The default policy's stdin budget is 1 MiB.
    let s = start("127.0.0.1:0", &[]);
    let v = post(
        &s.target,
        "/run_code",
        &verl_request("print(1)", &"x".repeat(2 << 20), 10),
    )
    .json();
    assert_eq!(v["message"], "invalid_action:payload_too_large", "{v}");
    assert_eq!(v["run_result"]["return_code"], 1, "{v}");
}

/// The server's resident memory, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap();
    kb * 1024
}

/// Jobs answered, whatever their stop reason (a job a loaded machine slows past a limit
/// must not leave the wait below hanging).
fn jobs_total(t: &Target) -> u64 {
    let m = String::from_utf8(get(t, "/metrics").body).unwrap();
    m.lines()
        .filter(|l| l.starts_with("agentjail_jobs_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// One `/metrics` value by its exact name and labels.
fn metric(t: &Target, name: &str) -> u64 {
    let m = String::from_utf8(get(t, "/metrics").body).unwrap();
    m.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{m}"))
}

/// The unread-response budget is the server's, not a connection's: 16 clients that each
/// ask for an 8 MiB record and never read it hold no more than the budget (4 MiB here) and
/// one response, not 128 MiB; each but the newest is dropped (counted in /metrics, a line
/// on stderr), and a client that reads is still answered.
#[test]
fn unread_responses_are_bounded_by_one_budget_over_all_connections() {
    const N: usize = 16;
    const BIG: usize = 8 << 20;
    const BUDGET: u64 = 4 << 20;
    let text = std::fs::read_to_string(JUDGE_OPEN_POLICY).unwrap();
    // Room for 8 MiB of stdout, and time for 16 such jobs on a loaded machine.
    let text = text
        .replace("stdout = \"1MiB\"", "stdout = \"9MiB\"")
        .replace("wall_time_ms = 10000", "wall_time_ms = 120000")
        .replace("cpu_time_ms = 10000", "cpu_time_ms = 120000")
        .replace("max_seconds = 30", "max_seconds = 150");
    for k in [
        "wall_time_ms = 120000",
        "cpu_time_ms = 120000",
        "max_seconds = 150",
    ] {
        assert!(text.contains(k), "judge-open.toml changed: {k}");
    }
    assert!(text.contains("stdout = \"9MiB\""));
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("big.toml");
    std::fs::write(&policy, text).unwrap();
    let policy = policy.display().to_string();
    // A unix socket: its buffers take ~200 KiB, so a client that does not read leaves nearly
    // all of its 8 MiB with the server (loopback TCP buffers could take several MiB).
    // A fixed mmap threshold: a freed 8 MiB buffer goes back to the kernel at once, so RSS
    // shows what the server holds rather than what glibc's heap keeps for later.
    let s = start_cmd(
        &[
            "env",
            "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1048576",
            "MALLOC_MMAP_THRESHOLD_=1048576",
            bin(),
        ],
        "unix:{dir}/http.sock",
        &["--policy", &policy, "--unread-budget", "4MiB", "-j", "2"],
    );
    let t = &s.target;
    let big = json!({"id": "t", "language": "python", "entrypoint": "main.py",
                     "code": format!("import sys\nsys.stdout.write('x' * {BIG})"),
                     "output_mode": "text"})
    .to_string();
    // Warm up: one big record read whole, so the baseline has its allocations in it.
    let r = request(t, "POST", "/v1/run", &[], big.as_bytes());
    assert_eq!(
        r.json()["execution"]["stdout_bytes"],
        BIG,
        "the record is big"
    );
    let base = rss(s.pid());

    let raw = format!(
        "POST /v1/run HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{big}",
        big.len()
    );
    let mut silent = Vec::new();
    for _ in 0..N {
        let mut c = connect(t);
        c.write_all(raw.as_bytes()).unwrap();
        silent.push(c);
    }
    // 16 jobs of 8 MiB on two job slots: on the shared 2-core machine under a load of 15
    // they took over 120 s, so the bound here is one only a hang reaches.
    let patience = Duration::from_secs(900);
    eventually_within(patience, "every job has its record", || {
        let done = jobs_total(t);
        (done < 1 + N as u64).then(|| format!("{done} of {}", 1 + N))
    });
    // A job's record is counted before its response is handed over: wait for the drops.
    eventually_within(
        patience,
        "all but the newest silent client are dropped",
        || {
            let dropped = metric(t, "agentjail_http_unread_dropped_total");
            (dropped < N as u64 - 1).then(|| format!("{dropped} dropped"))
        },
    );
    let dropped = metric(t, "agentjail_http_unread_dropped_total");
    let grown = rss(s.pid()).saturating_sub(base);
    eprintln!("{N} silent clients: the server grew {grown} bytes, {dropped} dropped");
    let bound = BUDGET + BIG as u64 + (48 << 20);
    assert!(
        grown < bound,
        "{N} unread {BIG}-byte records grew the server by {grown} bytes (bound {bound})"
    );
    // The newest may go too: the test's own /metrics answers push the total past the
    // budget while it still holds 8 MiB.
    assert!(
        dropped >= N as u64 - 1,
        "all but the newest are dropped: {dropped}"
    );
    // A client that reads is answered (and its answer drops the last silent one).
    let r = request(t, "POST", "/v1/run", &[], big.as_bytes());
    assert_eq!(r.json()["execution"]["stdout_bytes"], BIG);
    assert_eq!(metric(t, "agentjail_http_unread_dropped_total"), N as u64);
    // Every silent client finds its connection closed: it never gets a whole record.
    for mut c in silent {
        let mut got = Vec::new();
        let _ = c.read_to_end(&mut got);
        assert!(
            got.len() < BIG,
            "a dropped connection was still sent its record"
        );
    }
    assert_eq!(get(t, "/healthz").status, 200);
}

/// A budget too small to send ordinary answers, or not a size, stops the server at start.
#[test]
fn a_bad_unread_budget_is_refused_at_start() {
    for (budget, says) in [
        ("1000", "--unread-budget 1000 is below the least"),
        ("lots", "--unread-budget:"),
    ] {
        let (code, err) = refused(&["serve", "--http", "127.0.0.1:0", "--unread-budget", budget]);
        assert_eq!(code, 2, "{budget}: {err}");
        assert!(err.contains(says), "{budget}: {err}");
    }
}

/// A connection that goes away takes its running job with it: the job ends at once as
/// `interrupted:sighup` (its record in the audit log), not at its own time limit, since its
/// answer could no longer be delivered. The same stop ends the jobs of a connection the
/// unread budget drops.
#[test]
fn a_connection_that_goes_away_takes_its_job_with_it() {
    let s = start(
        "unix:{dir}/http.sock",
        &[
            "--policy",
            JUDGE_OPEN_POLICY,
            "--audit-log",
            "{dir}/audit.jsonl",
        ],
    );
    let audit = s._dir.path().join("audit.jsonl");
    let body = json!({"id": "left", "language": "python", "entrypoint": "main.py",
                      "code": "import time\ntime.sleep(100)", "output_mode": "text"})
    .to_string();
    let raw = format!(
        "POST /v1/run HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut c = connect(&s.target);
    c.write_all(raw.as_bytes()).unwrap();
    // The promise is about a *running* job: close once the program sits in its sleep (a
    // process below the server in clock_nanosleep, x86_64 230, in /proc/PID/syscall). A
    // connection closed before its request reached the engine runs nothing, and leaves no
    // record to find.
    eventually("the job's program is running", || {
        (!descendants(s.pid()).iter().any(|p| in_syscall(*p, 230)))
            .then(|| "not yet in its sleep".into())
    });
    drop(c);
    eventually(
        "the job of the closed connection is in the audit log",
        || {
            let text = std::fs::read_to_string(&audit).unwrap_or_default();
            // Only whole lines: the server's one write of a long record lands page by page,
            // and a reader without the writer's lock can catch the first page alone.
            let mut whole = text.split_inclusive('\n').filter(|l| l.ends_with('\n'));
            let Some(line) = whole.find(|l| l.contains("\"left\"")) else {
                return Some("no record yet".into());
            };
            let rec: Value = serde_json::from_str(line).unwrap();
            assert_eq!(rec["stop_reason"], "interrupted:sighup", "{rec:#}");
            None
        },
    );
}

/// Every process below `pid` (its children, theirs, ...), from /proc's parent links.
fn descendants(pid: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            // The fields after the command's closing parenthesis: state, then the parent.
            let ppid = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((p, ppid))
        })
        .collect();
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let of = found[i];
        found.extend(parents.iter().filter(|(_, pp)| *pp == of).map(|(p, _)| *p));
        i += 1;
    }
    found.split_off(1)
}

/// Whether `pid` is blocked in syscall number `nr` (the first field of /proc/PID/syscall).
fn in_syscall(pid: u32, nr: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/syscall"))
        .is_ok_and(|l| l.split(' ').next() == Some(nr.to_string().as_str()))
}
