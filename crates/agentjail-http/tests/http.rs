//! `agentjail serve --http` through the real binaries against the real jail: the native
//! routes, the SandboxFusion route with the exact body verl sends, and attacks on every door
//! (no token, a wrong token, a token file others can read, an address reachable from other
//! hosts without tokens, an oversized body, a slow request head, injection and path tricks
//! in route ids, another token's session, 10,000 connections at once). The client is
//! a plain socket writing HTTP/1.1 by hand, so nothing a library would fix up is fixed up.
//! No assertion is timed: the read timeouts only bound how long a broken server can hang
//! the test.

/// The network allowlist's test site (an HTTP server on the host's loopback).
#[path = "../../../tests/common/site.rs"]
mod site;

mod support;

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use support::*;

/// `--no-zygote` (a flag of serve's that agentjail-http parses too) reaches its engine.
#[test]
fn no_zygote_reaches_the_http_server() {
    let s = start("unix:{dir}/http.sock", &["--no-zygote", "--pool", "1"]);
    let st = get(&s.target, "/v1/stats").json();
    assert_eq!(
        st["zygote"],
        json!({"in_use": false, "why": "--no-zygote"}),
        "{st}"
    );
}

#[test]
fn the_native_routes_run_check_sessions_stats_and_metrics() {
    let s = start("unix:{dir}/http.sock", &[]);
    let t = &s.target;
    assert_eq!(get(t, "/healthz").json(), json!({"ok": true}));

    let r = post(t, "/v1/run", &action("print('{\"a\": 1}')"));
    assert_eq!(r.status, 200);
    let rec = r.json();
    assert_eq!(rec["status"], "ok", "{rec}");
    assert_eq!(rec["output"], json!({"a": 1}));
    assert_eq!(
        r.header("content-type").as_deref(),
        Some("application/json")
    );

    let text = json!({"id": "t", "language": "python", "entrypoint": "main.py",
                      "code": "print(int(input())*2)", "stdin": "21\n", "output_mode": "text"});
    let rec = post(t, "/v1/run", &text).json();
    assert_eq!(rec["status"], "ok", "{rec}");
    assert_eq!(rec["execution"]["stdout"], "42\n");

    // A stop the policy could lift carries a hint naming the key and the safer way; one no
    // policy lifts (the program's own error, a syntax error) carries none.
    let rec = post(t, "/v1/run", &action("import pickle\nprint('{}')")).json();
    assert_eq!(
        rec["stop_reason"],
        "policy_block:static_policy_violation:import_not_allowed:pickle"
    );
    let hint = rec["hint"]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{rec}"));
    assert!(
        hint.contains("check.allowed_imports += \"pickle\"")
            && hint.contains("safer: `json` instead of `pickle`"),
        "{hint}"
    );
    for code in ["raise ValueError('x')", "x = ("] {
        let rec = post(t, "/v1/run", &action(code)).json();
        assert_eq!(rec["status"], "stopped", "{rec}");
        assert!(rec.get("hint").is_none(), "{rec}");
    }

    let d = post(t, "/v1/check", &action("import socket")).json();
    assert_eq!(d["decision"], "deny", "{d}");
    assert_eq!(
        post(t, "/v1/check", &action("x = 1")).json()["decision"],
        "allow"
    );

    let r = request(t, "POST", "/v1/sessions", &[], b"");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let id = r.json()["session"].as_str().unwrap().to_string();
    let exec = format!("/v1/sessions/{id}/exec");
    let r1 = post(t, &exec, &json!({"code": "x = 41"})).json();
    assert_eq!(r1["status"], "ok", "{r1}");
    let r2 = post(t, &exec, &json!({"code": "x + 1", "timeout_s": 5})).json();
    assert_eq!(r2["value"], "42", "state is kept across calls: {r2}");
    let st = get(t, "/v1/stats").json();
    assert_eq!(st["sessions"], 1, "{st}");
    // serve's default reaches agentjail-http: the zygote wherever its template lies beside.
    let beside = Path::new(bin())
        .with_file_name("agentjail-zygote")
        .is_file();
    assert_eq!(st["zygote"]["in_use"], beside, "{st}");
    let r = request(t, "DELETE", &format!("/v1/sessions/{id}"), &[], b"");
    assert_eq!(r.json(), json!({"closed": true}));
    assert_eq!(
        post(t, &exec, &json!({"code": "x"})).status,
        404,
        "closed is gone"
    );

    let m = get(t, "/metrics");
    assert_eq!(m.status, 200);
    assert!(m.header("content-type").unwrap().starts_with("text/plain"));
    let m = String::from_utf8(m.body).unwrap();
    for want in [
        "agentjail_jobs_total{stop_reason=\"success\"}",
        "agentjail_job_duration_seconds_bucket{le=\"+Inf\"}",
        "agentjail_pool_jails{pool=\"python\",state=\"ready\"}",
        "agentjail_sessions_open 0",
        "agentjail_jail_start_failures_total 0",
    ] {
        assert!(m.contains(want), "{want} in\n{m}");
    }

    // Malformed requests get a JSON error and the server goes on.
    let r = request(t, "POST", &exec, &[], b"{\"code\": ");
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], "bad_request");
    let r = request(t, "GET", "/v1/run", &[], b"");
    assert_eq!(
        (r.status, r.header("allow").as_deref()),
        (405, Some("POST"))
    );
    assert_eq!(get(t, "/nope").json()["error"]["code"], "not_found");
    assert_eq!(get(t, "/healthz").status, 200);
}

#[test]
fn run_code_answers_verls_golden_request_as_sandboxfusion_does() {
    let s = start("127.0.0.1:0", &[]);
    let t = &s.target;
    let r = post(t, "/run_code", &verl_request("print(2+2)", "", 10));
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["status"], "Success", "{v}");
    assert_eq!(v["run_result"]["status"], "Finished");
    assert_eq!(v["run_result"]["stdout"], "4\n");
    assert_eq!(v["run_result"]["return_code"], 0);
    assert!(v["run_result"]["execution_time"].as_f64().is_some());
    assert_eq!(v["compile_result"], Value::Null);
    assert_eq!(v["files"], json!({}));
    assert!(v["executor_pod_name"].is_string());
    assert_eq!(v["message"], "");

    let v = post(
        t,
        "/run_code",
        &verl_request("print(input()[::-1])", "abc\n", 10),
    )
    .json();
    assert_eq!(v["run_result"]["stdout"], "cba\n", "{v}");
    // /run_code is text mode, where the input() rule (at most one call) does not apply.
    let v = post(
        t,
        "/run_code",
        &verl_request("a = input()\nb = input()\nprint(b + a)", "x\ny\n", 10),
    )
    .json();
    assert_eq!(v["status"], "Success", "{v}");
    assert_eq!(v["run_result"]["stdout"], "yx\n", "{v}");

    // verl sends `"stdin": null` when a test case has none.
    let mut no_stdin = verl_request("print(2+2)", "", 10);
    no_stdin["stdin"] = Value::Null;
    assert_eq!(post(t, "/run_code", &no_stdin).json()["status"], "Success");

    let v = post(t, "/run_code", &verl_request("raise SystemExit(3)", "", 10)).json();
    assert_eq!(v["status"], "Failed", "{v}");
    assert_eq!(v["run_result"]["return_code"], 3);

    let v = post(
        t,
        "/run_code",
        &verl_request("while True:\n    pass", "", 1),
    )
    .json();
    assert_eq!(v["status"], "Failed", "{v}");
    assert_eq!(v["run_result"]["status"], "TimeLimitExceeded");

    let mut req = verl_request("print(1)", "", 10);
    req["language"] = json!("cpp");
    let r = post(t, "/run_code", &req);
    assert_eq!(
        r.status, 400,
        "SandboxFusion's language, not run by this server's policy"
    );
    let d = r.json();
    assert_eq!(d["detail"][0]["type"], "language_not_run", "{d}");
    assert_eq!(d["detail"][0]["loc"], json!(["body", "language"]));
    assert_eq!(d["languages"], json!(["python"]), "{d}");
    req["language"] = json!("klingon");
    let r = post(t, "/run_code", &req);
    assert_eq!(r.status, 422, "not SandboxFusion's language: FastAPI's 422");
    assert_eq!(r.json()["detail"][0]["type"], "literal_error");
    let r = request(t, "POST", "/run_code", &[], b"{not json");
    assert_eq!(r.status, 422);
    assert_eq!(r.json()["detail"][0]["type"], "json_invalid");

    // A syntax error: refused by the check, its stderr as Python's own (line, caret).
    let v = post(
        t,
        "/run_code",
        &verl_request("x = 1\ndef f(:\n  pass\n", "", 10),
    )
    .json();
    assert_eq!(v["status"], "Failed", "{v}");
    assert_eq!(
        v["message"],
        "policy_block:static_policy_violation:syntax_error"
    );
    let stderr = v["run_result"]["stderr"].as_str().unwrap();
    assert!(
        stderr.starts_with("  File \"main.py\", line 2\n    def f(:\n          ^\nSyntaxError: "),
        "{stderr}"
    );
    assert!(stderr.ends_with("agentjail: policy_block:static_policy_violation:syntax_error\n"));

    // SandboxFusion's ping, and its routes this server does not offer, each saying why.
    let r = request(t, "GET", "/v1/ping", &[], b"");
    assert_eq!((r.status, r.json()), (200, json!("pong")));
    for (path, says) in [
        ("/run_jupyter", "sessions"),
        ("/get_prompts", "out of scope"),
        ("/submit", "out of scope"),
    ] {
        let r = request(t, "POST", path, &[], b"{}");
        assert_eq!(r.status, 404, "{path}");
        let e = r.json();
        assert_eq!(e["error"]["code"], "not_served", "{path}");
        assert!(
            e["error"]["message"].as_str().unwrap().contains(says),
            "{path}: {e}"
        );
    }
}

/// `files` and `fetch_files` under a policy that lets a program open files (python.toml:
/// judge.toml denies `open`): relative files read-only under /app/in, an absolute path
/// outside /tmp a 400, fetched files back and the missing ones named.
#[test]
fn run_code_files_land_where_it_says_and_missing_fetches_are_named() {
    let policy = concat!(env!("CARGO_MANIFEST_DIR"), "/../../policies/python.toml");
    let s = start("127.0.0.1:0", &["--policy", policy]);
    let t = &s.target;
    // A file at an absolute path the jail cannot offer (SandboxFusion would write it
    // there): a 400 that says where files go, never a file elsewhere.
    let mut req = verl_request("print(open('/app/in/flag.txt').read())", "", 10);
    req["files"] = json!({"/etc/flag.txt": "MQ=="});
    let r = post(t, "/run_code", &req);
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["detail"][0]["type"], "path_not_offered");
    req["files"] = json!({"flag.txt": "MQ=="});
    req["fetch_files"] = json!(["o.txt", "missing.txt"]);
    req["code"] = json!("print(open('/app/in/flag.txt').read())\nopen('o.txt', 'w').write('2')\n");
    let v = post(t, "/run_code", &req).json();
    assert_eq!(v["status"], "Success", "{v}");
    assert_eq!(v["run_result"]["stdout"], "1\n");
    assert!(v["run_result"]["cpu_time"].as_f64().is_some(), "{v}");
    assert_eq!(v["files"], json!({"o.txt": "Mg=="}), "{v}");
    assert_eq!(v["missing_files"], json!(["missing.txt"]), "{v}");
}

#[test]
fn tokens_are_required_checked_and_own_their_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = token_file(dir.path(), 0o600);
    let tf = tokens.display().to_string();
    let audit = dir.path().join("audit.jsonl");
    let s = start(
        "127.0.0.1:0",
        &[
            "--token-file",
            &tf,
            "--audit-log",
            &audit.display().to_string(),
        ],
    );
    let t = &s.target;
    let alice = [("Authorization", "Bearer aaaaaaaaaaaaaaaaaaaaaaaa")];
    let bob = [("Authorization", "Bearer bbbbbbbbbbbbbbbbbbbbbbbb")];
    let body = action("print('{}')").to_string();

    for headers in [
        vec![],
        vec![("Authorization", "Bearer aaaaaaaaaaaaaaaaaaaaaaab")],
        vec![("Authorization", "Bearer  aaaaaaaaaaaaaaaaaaaaaaaa")],
        vec![("Authorization", "Basic YWxpY2U6YQ==")],
        vec![("Authorization", "aaaaaaaaaaaaaaaaaaaaaaaa")],
    ] {
        let r = request(t, "POST", "/v1/run", &headers, body.as_bytes());
        assert_eq!(r.status, 401, "{headers:?}");
        assert_eq!(r.json()["error"]["code"], "unauthorized");
        assert_eq!(r.header("www-authenticate").as_deref(), Some("Bearer"));
        assert_eq!(request(t, "GET", "/metrics", &headers, b"").status, 401);
        assert_eq!(request(t, "POST", "/run_code", &headers, b"{}").status, 401);
    }
    let r = request(t, "POST", "/v1/run", &alice, body.as_bytes());
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["caller"], json!({"token": "alice"}));

    let r = request(t, "POST", "/v1/sessions", &alice, b"");
    let id = r.json()["session"].as_str().unwrap().to_string();
    let exec = format!("/v1/sessions/{id}/exec");
    let call = br#"{"code": "1 + 1"}"#;
    let r = request(t, "POST", &exec, &bob, call);
    assert_eq!(r.status, 404, "another token's session is unknown to it");
    assert_eq!(r.json()["error"]["code"], "unknown_session");
    let r = request(t, "DELETE", &format!("/v1/sessions/{id}"), &bob, b"");
    assert_eq!(r.status, 404, "nor can it close it");
    let r = request(t, "POST", &exec, &alice, call);
    assert_eq!(r.status, 200);
    let rec = r.json();
    assert_eq!(rec["value"], "2", "{rec}");
    assert_eq!(rec["caller"], json!({"token": "alice"}));

    // The audit log names the caller of each record, and only authenticated calls are in it.
    let lines: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "the run and the session call");
    for l in &lines {
        assert_eq!(l["caller"], json!({"token": "alice"}), "{l}");
    }
}

#[test]
fn what_must_not_start_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let open = token_file(dir.path(), 0o644);
    let (code, err) = refused(&[
        "serve",
        "--http",
        "127.0.0.1:0",
        "--token-file",
        &open.display().to_string(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("chmod 600"), "{err}");
    let (code, err) = refused(&["serve", "--http", "0.0.0.0:0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--token-file"), "{err}");
    let (code, err) = refused(&["serve", "--http", "[::]:0"]);
    assert_eq!(code, 2, "{err}");
    let (code, err) = refused(&["serve", "--http", "localhost:8080"]);
    assert_eq!(code, 2, "{err}");
    let (code, err) = refused(&["serve", "--token-file", "/nonexistent"]);
    assert_eq!(code, 2, "--token-file needs --http: {err}");
    let (code, err) = refused(&["serve", "--http", "127.0.0.1:0", "--socket", "/tmp/x"]);
    assert_eq!(code, 2, "--http and --socket exclude each other: {err}");
    let (code, _) = refused(&["run", "-"]);
    assert_eq!(code, 2, "the binary serves serve --http only");
}

#[test]
fn bounds_hold_and_path_tricks_match_nothing() {
    let s = start("127.0.0.1:0", &[]);
    let t = &s.target;

    // A body declared past the limit is refused before it is read.
    let mut c = connect(t);
    c.write_all(
        b"POST /v1/run HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 1073741824\r\n\r\n",
    )
    .unwrap();
    let r = read_response(&mut *c);
    assert_eq!(r.status, 413);
    assert_eq!(r.json()["error"]["code"], "body_too_large");
    // Sent in chunks, it is cut off where it passes the limit.
    let mut c = connect(t);
    c.write_all(b"POST /v1/run HTTP/1.1\r\nHost: t\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n")
        .unwrap();
    let chunk = vec![b'x'; 1 << 20];
    let mut answered = false;
    for _ in 0..40 {
        let head = format!("{:x}\r\n", chunk.len());
        if c.write_all(head.as_bytes()).is_err()
            || c.write_all(&chunk).is_err()
            || c.write_all(b"\r\n").is_err()
        {
            answered = true;
            break;
        }
    }
    if !answered {
        let _ = c.write_all(b"0\r\n\r\n");
    }
    assert_eq!(read_response(&mut *c).status, 413);

    // A request head larger than the limit: 431, the connection closed.
    let mut c = connect(t);
    let big = format!(
        "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n",
        "a".repeat(200_000)
    );
    let _ = c.write_all(big.as_bytes());
    let mut raw = Vec::new();
    let _ = c.read_to_end(&mut raw);
    let head = String::from_utf8_lossy(&raw);
    assert!(
        head.is_empty() || head.starts_with("HTTP/1.1 431"),
        "{head}"
    );

    // Injection and path tricks in route ids: nothing matches, nothing is echoed.
    for path in [
        "/v1/sessions/../stats",
        "/v1/sessions/..%2Fstats",
        "/v1/sessions/%2e%2e/v1/stats",
        "/v1/sessions/abc%0d%0aSet-Cookie:%20x=1/exec",
        "/v1/sessions/abc%2Fdef/exec",
        "/v1/sessions/0123456789abcdef0123456789abcdef/exec/../../../stats",
        "/v1//stats",
        "//v1/stats",
    ] {
        let r = request(t, "POST", path, &[], b"{\"code\": \"1\"}");
        assert_eq!(r.status, 404, "{path}");
        assert!(
            !r.head.to_ascii_lowercase().contains("set-cookie"),
            "{path}: {}",
            r.head
        );
        assert!(!String::from_utf8_lossy(&r.body).contains("Set-Cookie"));
    }
    // A raw CR LF in the request line is not HTTP: refused, and the server goes on.
    let mut c = connect(t);
    let _ = c.write_all(b"POST /v1/sessions/ab\r\nSet-Cookie: x/exec HTTP/1.1\r\nHost: t\r\n\r\n");
    let mut raw = Vec::new();
    let _ = c.read_to_end(&mut raw);
    assert!(!String::from_utf8_lossy(&raw).contains("HTTP/1.1 200"));
    assert_eq!(get(t, "/healthz").status, 200);
}

#[test]
fn a_saturated_server_answers_429_with_retry_after_then_recovers() {
    let s = start("127.0.0.1:0", &["-j", "1"]);
    let Target::Tcp(addr) = &s.target else {
        unreachable!()
    };
    // Each of these is admitted and waits for a body that does not come: 512 of them fill
    // the admission bound (at least 512, whatever -j).
    let mut held = Vec::new();
    for _ in 0..600 {
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        c.write_all(b"POST /v1/run HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{")
            .unwrap();
        held.push(c);
    }
    // Until the server has read them all, a request may still be admitted; once it is
    // saturated, every request that needs a slot is refused at once.
    let check = action("x = 1");
    let refused = loop {
        let r = post(&s.target, "/v1/check", &check);
        if r.status == 429 {
            break r;
        }
        assert_eq!(r.status, 200);
    };
    assert_eq!(refused.header("retry-after").as_deref(), Some("1"));
    assert_eq!(refused.json()["error"]["code"], "too_many_requests");
    let r = post(&s.target, "/v1/run", &action("print('{}')"));
    assert_eq!(r.status, 429);
    assert_eq!(
        get(&s.target, "/healthz").status,
        200,
        "health needs no slot"
    );
    let st = get(&s.target, "/v1/stats");
    assert_eq!(st.status, 200, "nor do the stats");
    assert!(st.json()["http"]["requests_in_flight"].as_u64().unwrap() >= 512);
    let m = String::from_utf8(get(&s.target, "/metrics").body).unwrap();
    assert!(
        !m.contains("agentjail_http_refused_total{why=\"saturated\"} 0\n"),
        "the refusals are counted: {m}"
    );

    // The stalled clients go: their slots come back and the server answers again.
    drop(held);
    loop {
        let r = post(&s.target, "/v1/check", &check);
        if r.status == 200 {
            break;
        }
        assert_eq!(r.status, 429);
    }
    let rec = post(&s.target, "/v1/run", &action("print('{\"ok\": 1}')")).json();
    assert_eq!(rec["output"], json!({"ok": 1}), "{rec}");
}

#[test]
fn a_slow_request_head_is_cut_off() {
    let s = start("127.0.0.1:0", &[]);
    let mut c = connect(&s.target);
    c.write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\n")
        .unwrap();
    // Never finished: the server closes the connection (after its header timeout) instead
    // of holding it; the read ends with EOF (or a reset), not with our patience running out.
    let mut raw = Vec::new();
    match c.read_to_end(&mut raw) {
        Ok(_) => assert!(!String::from_utf8_lossy(&raw).contains(" 200 "), "{raw:?}"),
        Err(e) => assert_ne!(
            e.kind(),
            std::io::ErrorKind::WouldBlock,
            "the server held a slow client open"
        ),
    }
}

/// Connections the test holds at once.
const CONNECTIONS: usize = 10_000;
/// The server's connection bound in that test: under CONNECTIONS, so some are shed.
const BOUND: usize = 8_000;

/// This process's open-file limits (soft, hard).
fn nofile() -> (u64, u64) {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
    let l = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let f: Vec<&str> = l.split_whitespace().collect();
    let n = |s: &str| s.parse::<u64>().unwrap_or(u64::MAX);
    (n(f[3]), n(f[4]))
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// One request on a fresh TCP connection (`Connection: close`): the status and body, or
/// None when the server closed the connection without answering (shed at accept).
fn try_request(addr: &str, method: &str, path: &str, body: &str) -> Option<(u16, Vec<u8>)> {
    let mut c = std::net::TcpStream::connect(addr).ok()?;
    c.set_read_timeout(Some(PATIENCE)).unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    c.write_all(req.as_bytes()).ok()?;
    let mut raw = Vec::new();
    let _ = c.read_to_end(&mut raw);
    let at = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let status = String::from_utf8_lossy(&raw[..at])
        .split(' ')
        .nth(1)?
        .parse()
        .ok()?;
    Some((status, raw[at + 4..].to_vec()))
}

/// Whether every pool in a `/v1/stats` answer is full and starting nothing.
fn settled(st: &Value) -> bool {
    let mut pools: Vec<&Value> = st["pools"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(_, p)| p)
        .collect();
    pools.extend([&st["session_pool"], &st["workspace_pool"]]);
    pools
        .iter()
        .filter(|p| p.is_object())
        .all(|p| p["ready"] == p["target"] && p["starting"] == 0)
}

/// 10,000 connections at once against a server bounded at 8,000: half stall in a request
/// head, half send nothing. The server stays up; it sheds what is past its bound at accept
/// and cuts every held one at its header timeout (docs/REFERENCE.md "HTTP"), so a real
/// client is answered while all 10,000 are still open on our side; every one of them ends
/// closed by the server, never answered 200; afterwards it answers again, and its
/// connections, file descriptors and processes are back to where they were.
#[test]
fn ten_thousand_connections_are_bounded_shed_and_leave_nothing() {
    // Our 10,000 sockets and the server's bound need open files: raise our soft limit.
    let need = (CONNECTIONS + 512) as u64;
    let (soft, hard) = nofile();
    if hard < need {
        let msg = format!(
            "ten_thousand_connections: RLIMIT_NOFILE hard limit {hard} < {need}: raise it (ulimit -Hn) to run this test"
        );
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{msg}");
        eprintln!("SKIPPED (LOUDLY): {msg}");
        return;
    }
    if soft < need {
        agentjail_jail::os::process::setrlimit(libc::RLIMIT_NOFILE, hard, hard).unwrap();
    }
    // The server's bound: its open-file limit less the 512 it keeps for jails and pipes.
    let limit = format!("--nofile={0}:{0}", BOUND + 512);
    let s = start_cmd(&["prlimit", &limit, "--", bin()], "127.0.0.1:0", &[]);
    let Target::Tcp(addr) = &s.target else {
        unreachable!()
    };
    let st = get(&s.target, "/v1/stats").json();
    assert_eq!(st["http"]["connections"], 1, "{st}");
    let rec = post(&s.target, "/v1/run", &action("print('{\"n\": 1}')")).json();
    assert_eq!(rec["output"], json!({"n": 1}), "{rec}");
    let (mut fds_before, mut procs_before) = (0, 0);
    eventually("the pools refill", || {
        let st = get(&s.target, "/v1/stats").json();
        (fds_before, procs_before) = (open_fds(s.pid()), descendants(s.pid()).len());
        (!settled(&st)).then(|| st.to_string())
    });

    let mut held = Vec::with_capacity(CONNECTIONS);
    for i in 0..CONNECTIONS {
        let mut c = std::net::TcpStream::connect(addr.as_str()).unwrap();
        c.set_read_timeout(Some(PATIENCE)).unwrap();
        if i % 2 == 0 {
            // A request head that never ends; a shed connection may already be closed.
            let _ = c.write_all(b"POST /v1/run HTTP/1.1\r\nHost: t\r\n");
        }
        held.push(c);
    }
    // All 10,000 are open on our side: a real client is answered (once the held ones the
    // bound let in have met the header timeout, if they fill it).
    let mut shed = 0;
    let mut answer = |method: &str, path: &str, body: &str| {
        let mut got = Vec::new();
        eventually(
            "a client is answered while 10,000 are held",
            || match try_request(addr, method, path, body) {
                Some((200, b)) => {
                    got = b;
                    None
                }
                other => {
                    shed += 1;
                    Some(format!("{other:?}"))
                }
            },
        );
        serde_json::from_slice::<Value>(&got).unwrap()
    };
    assert_eq!(answer("GET", "/healthz", ""), json!({"ok": true}));
    let rec = answer(
        "POST",
        "/v1/run",
        &action("print('{\"n\": 7}')").to_string(),
    );
    assert_eq!(rec["output"], json!({"n": 7}), "{rec}");
    let st = answer("GET", "/v1/stats", "");
    let open = st["http"]["connections"].as_u64().unwrap();
    assert!(open as usize <= BOUND, "over the bound: {st}");
    eprintln!("10,000 held: the server held {open} (bound {BOUND}); {shed} tries shed first");

    // Every one of ours ends closed by the server (shed, or cut at the header timeout):
    // never answered, never held for good.
    for (i, mut c) in held.into_iter().enumerate() {
        let mut raw = Vec::new();
        match c.read_to_end(&mut raw) {
            Ok(_) => assert!(
                !String::from_utf8_lossy(&raw).contains(" 200 "),
                "{i}: {raw:?}"
            ),
            Err(e) => assert!(
                !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
                "connection {i} was held open past the header timeout"
            ),
        }
    }

    // After: it answers, and holds no connection, fd or process more than before.
    let rec = post(&s.target, "/v1/run", &action("print('{\"n\": 9}')")).json();
    assert_eq!(rec["output"], json!({"n": 9}), "{rec}");
    eventually("nothing is left behind", || {
        let st = get(&s.target, "/v1/stats").json();
        let (fds, procs) = (open_fds(s.pid()), descendants(s.pid()).len());
        let left = st["http"]["connections"] != 1
            || !settled(&st)
            || fds > fds_before
            || procs > procs_before;
        left.then(|| {
            format!(
                "{st}; fds {fds} (before {fds_before}), processes {procs} (before {procs_before})"
            )
        })
    });
}

/// Each process under `root` (by parent pid), with its start time.
fn descendants(root: u32) -> Vec<(u32, String)> {
    let mut parent = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Some((ppid, start)) = stat(pid) {
            parent.push((pid, ppid, start));
        }
    }
    let mut out: Vec<(u32, String)> = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (pid, ppid, start) in &parent {
            if *ppid == p && !out.iter().any(|(q, _)| q == pid) {
                out.push((*pid, start.clone()));
                frontier.push(*pid);
            }
        }
    }
    out
}

/// A process's parent pid and start time (fields 4 and 22 of /proc/PID/stat).
fn stat(pid: u32) -> Option<(u32, String)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = after.split(' ').collect();
    Some((f[1].parse().ok()?, f[19].to_string()))
}

#[test]
fn a_unix_socket_names_the_caller_and_sigterm_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    // Jobs may run past SIGTERM's grace (10 s), so the server must stop them itself.
    let policy = dir.path().join("long.toml");
    std::fs::write(
        &policy,
        "version = 1\nname = \"http-test\"\ndescription = \"jobs outlive the grace\"\n[budget]\nmax_seconds = 120\n[limits]\nwall_time_ms = 60000\ncpu_time_ms = 60000\n",
    )
    .unwrap();
    let policy = policy.display().to_string();
    let mut s = start("unix:{dir}/http.sock", &["--policy", &policy]);
    let Target::Unix(path) = s.target.clone() else {
        unreachable!()
    };
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the socket is its owner's alone");
    let rec = post(&s.target, "/v1/run", &action("print('{}')")).json();
    let me = std::fs::metadata("/proc/self").map(|m| {
        use std::os::unix::fs::MetadataExt;
        m.uid()
    });
    assert_eq!(rec["caller"], json!({"uid": me.unwrap()}), "{rec}");

    // A job is running when SIGTERM comes: it still gets its record, then the server exits
    // 0, its socket file is gone and so is every process it started.
    let target = s.target.clone();
    let job = std::thread::spawn(move || {
        post(
            &target,
            "/v1/run",
            &json!({"id": "t", "language": "python", "entrypoint": "main.py",
                    "code": "while True:\n    pass", "output_mode": "text"}),
        )
    });
    // Wait until the job is admitted (the stats say so; they need no slot themselves).
    loop {
        let st = get(&s.target, "/v1/stats").json();
        if st["http"]["requests_in_flight"].as_u64().unwrap_or(0) >= 1 {
            break;
        }
        std::thread::yield_now();
    }
    let started = descendants(s.pid());
    assert!(
        !started.is_empty(),
        "the server's jails are its descendants"
    );
    let kill = Command::new("kill")
        .args(["-TERM", &s.pid().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let r = job.join().unwrap();
    assert_eq!(r.status, 200);
    let rec = r.json();
    assert_eq!(rec["stop_reason"], "interrupted:sigterm", "{rec}");
    let status = s.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(!path.exists(), "the socket file is removed");
    for (pid, start) in started {
        let same = stat(pid).is_some_and(|(_, st)| st == start);
        assert!(!same, "process {pid} of the server outlived it");
    }
}

#[test]
fn agentjail_serve_http_execs_this_binary() {
    let main = Path::new(bin()).with_file_name("agentjail");
    if !main.exists() {
        let msg = format!(
            "{} is not built (cargo build --bin agentjail): the exec from `agentjail serve --http` is not tested",
            main.display()
        );
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{msg}");
        eprintln!("SKIPPED LOUDLY: {msg}");
        return;
    }
    let s = start_with(main.to_str().unwrap(), "unix:{dir}/a.sock", &[]);
    assert_eq!(get(&s.target, "/healthz").json(), json!({"ok": true}));
}

#[test]
fn workspaces_keep_files_and_run_commands_across_requests() {
    let s = start(
        "unix:{dir}/http.sock",
        &["--policy", WORKSPACE_POLICY, "--pool", "1"],
    );
    let t = &s.target;
    let r = request(t, "POST", "/v1/workspaces", &[], b"");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let id = r.json()["workspace"].as_str().unwrap().to_string();
    let url = |tail: &str| format!("/v1/workspaces/{id}/{tail}");

    let put = post(
        t,
        &url("put"),
        &json!({"files": [{"path": "src/calc.py", "content": "def add(a, b):\n    return a + b\n"},
                          {"path": "/workspace/raw.bin", "content_base64": "AP8="}]}),
    );
    assert_eq!(put.status, 200, "{}", String::from_utf8_lossy(&put.body));
    assert_eq!(put.json()["files"][0]["path"], "src/calc.py");

    let rec = post(
        t,
        &url("exec"),
        &json!({"command": "cd src && python3 -c 'import calc; print(calc.add(2, 3))' | tee ../out.txt"}),
    )
    .json();
    assert_eq!(rec["status"], "ok", "{rec}");
    assert_eq!(rec["execution"]["stdout"], "5\n");
    let rec = post(
        t,
        &url("exec"),
        &json!({"argv": ["cat"], "stdin": "piped", "cwd": "src"}),
    )
    .json();
    assert_eq!(rec["execution"]["stdout"], "piped", "{rec}");
    let rec = post(t, &url("exec"), &json!({"command": "exit 3"})).json();
    assert_eq!(rec["execution"]["exit_code"], 3, "{rec}");

    let got = post(
        t,
        &url("get"),
        &json!({"paths": ["out.txt", "raw.bin", "nope"]}),
    )
    .json();
    assert_eq!(got["files"][0]["content_base64"], "NQo=", "{got}");
    assert_eq!(got["files"][1]["bytes"], 2);
    assert_eq!(got["files"][2]["error"], "not_found");

    // Bad bodies and paths are refused with the route's error, and the workspace goes on.
    for (tail, body) in [
        ("exec", json!({"command": "true", "shell": "bash"})),
        ("exec", json!({"argv": []})),
        (
            "exec",
            json!({"command": "true", "env": {"A=B": "/workspace/x.so"}}),
        ),
        ("exec", json!({"command": "true", "cwd": "../etc"})),
        (
            "put",
            json!({"files": [{"path": "../escape", "content": "x"}]}),
        ),
        ("get", json!({"paths": "out.txt"})),
    ] {
        let r = post(t, &url(tail), &body);
        assert_eq!(
            r.status,
            400,
            "{tail} {body}: {}",
            String::from_utf8_lossy(&r.body)
        );
        assert!(r.json()["error"]["code"].is_string());
    }
    let got = post(
        t,
        &url("get"),
        &json!({"paths": ["../etc/passwd", "/etc/passwd"]}),
    )
    .json();
    assert_eq!(got["files"][0]["error"], "bad_path", "{got}");
    assert_eq!(got["files"][1]["error"], "bad_path", "{got}");
    assert_eq!(
        request(t, "GET", &url("exec"), &[], b"").status,
        405,
        "exec is POST"
    );

    let r = request(t, "DELETE", &format!("/v1/workspaces/{id}"), &[], b"");
    assert_eq!(r.json(), json!({"closed": true}));
    let r = post(t, &url("exec"), &json!({"command": "true"}));
    assert_eq!(
        r.status,
        404,
        "closed is gone: {}",
        String::from_utf8_lossy(&r.body)
    );
    assert_eq!(
        post(t, "/v1/workspaces/zz/exec", &json!({"command": "true"})).status,
        404
    );
}

/// A multipart/form-data body as the agent-sandbox client (requests) sends it.
fn multipart(filename: &str, content: &[u8]) -> (String, Vec<u8>) {
    let boundary = "agentjail-test-boundary";
    let mut b = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n\r\n"
    )
    .into_bytes();
    b.extend_from_slice(content);
    b.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), b)
}

#[test]
fn the_pod_workspace_speaks_the_agent_sandbox_runtime() {
    let s = start(
        "unix:{dir}/http.sock",
        &[
            "--policy",
            WORKSPACE_POLICY,
            "--pool",
            "1",
            "--pod-workspace",
        ],
    );
    let t = &s.target;
    assert_eq!(get(t, "/").json()["status"], "ok");

    let (ct, body) = multipart("src/hello.py", b"print('hello from the pod')\n");
    let r = request(t, "POST", "/upload", &[("Content-Type", &ct)], &body);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.json()["message"]
        .as_str()
        .unwrap()
        .contains("src/hello.py"));

    let r = post(
        t,
        "/execute",
        &json!({"command": "python3 src/hello.py && echo oops >&2; exit 4"}),
    );
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        json!({"stdout": "hello from the pod\n", "stderr": "oops\n", "exit_code": 4})
    );
    // State lasts: a file a command wrote is there for the next request.
    post(
        t,
        "/execute",
        &json!({"command": "echo kept > src/state.txt"}),
    );
    let r = get(t, "/download/src%2Fstate.txt");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"kept\n");
    assert_eq!(
        r.header("content-type").as_deref(),
        Some("application/octet-stream")
    );
    assert_eq!(get(t, "/download/src%2Fnone").status, 404);
    for bad in ["%2e%2e%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd", "%zz", "a%00b"] {
        let r = get(t, &format!("/download/{bad}"));
        assert_eq!(r.status, 400, "{bad}: {}", String::from_utf8_lossy(&r.body));
    }
    // A symlink the code planted is not followed out of /workspace.
    post(t, "/execute", &json!({"command": "ln -s /etc/passwd link"}));
    let r = get(t, "/download/link");
    assert_ne!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));

    let list = get(t, "/list/src").json();
    let mut names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["hello.py", "state.txt"], "{list}");
    assert_eq!(list[0]["type"], "file");
    assert_eq!(get(t, "/exists/src%2Fhello.py").json()["exists"], true);
    assert_eq!(get(t, "/exists/nope").json()["exists"], false);
    assert_eq!(post(t, "/execute", &json!({"cmd": "ls"})).status, 422);

    // A command that ends the workspace (every process killed) does not end the pod: the
    // next request gets a new workspace (what the old one held is gone).
    post(t, "/execute", &json!({"command": "kill -9 -1"}));
    let r = post(
        t,
        "/execute",
        &json!({"command": "echo again; ls src 2>&1 | wc -l"}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["stdout"], "again\n1\n", "{}", r.json());
    let r = request(t, "POST", "/upload", &[("Content-Type", &ct)], &body);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    post(t, "/execute", &json!({"command": "kill -9 -1"}));
    assert_eq!(get(t, "/").json()["status"], "ok");
    assert_eq!(get(t, "/exists/src%2Fhello.py").json()["exists"], false);

    // Without --pod-workspace the runtime's routes are not there.
    let plain = start(
        "127.0.0.1:0",
        &["--policy", WORKSPACE_POLICY, "--pool", "0"],
    );
    assert_eq!(
        post(&plain.target, "/execute", &json!({"command": "true"})).status,
        404
    );
}

/// A network allowlist through the HTTP front end (the policy names the test site,
/// tests/common/site.rs): `/v1/run` and a session's exec return records whose
/// `network.requests` hold the allowed fetch and the denied host; SIGTERM then leaves no
/// process of the server behind.
#[test]
fn the_allowlist_holds_through_run_and_sessions() {
    let default = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../policies/default.toml"
    ))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("net.toml");
    std::fs::write(&policy, site::default_policy_text(&default, "http-net")).unwrap();
    let policy = policy.display().to_string();
    let mut s = start("unix:{dir}/http.sock", &["--policy", &policy]);
    let t = &s.target;
    let want = [
        ("localhost".to_string(), true, "ok".to_string()),
        (
            "evil.test".to_string(),
            false,
            "not_allowlisted".to_string(),
        ),
    ];
    let verdicts = |rec: &Value| -> Vec<(String, bool, String)> {
        let reqs = rec["network"]["requests"].as_array().cloned();
        reqs.unwrap_or_else(|| panic!("no network.requests: {rec}"))
            .iter()
            .map(|e| {
                let s = |k: &str| e[k].as_str().unwrap_or("").to_string();
                (s("host"), e["allowed"] == true, s("reason"))
            })
            .collect()
    };
    let rec = post(t, "/v1/run", &action(&site::fetch_both_code())).json();
    assert_eq!(rec["status"], "ok", "{rec}");
    assert_eq!(
        rec["output"],
        json!({"ok": "OK-BODY", "other": "HTTP Error 403: Forbidden"})
    );
    assert_eq!(verdicts(&rec), want, "{rec}");

    let r = request(t, "POST", "/v1/sessions", &[], b"");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let id = r.json()["session"].as_str().unwrap().to_string();
    let code = format!(
        "import urllib.request as u\nb = u.urlopen('http://localhost:{}/ok', timeout=20).read().decode()\ntry:\n    u.urlopen('http://evil.test/', timeout=20)\nexcept Exception as e:\n    b += ' ' + str(e)\nb",
        site::port()
    );
    let rec = post(
        t,
        &format!("/v1/sessions/{id}/exec"),
        &json!({"code": code}),
    )
    .json();
    assert_eq!(rec["status"], "ok", "{rec}");
    assert_eq!(rec["value"], "'OK-BODY HTTP Error 403: Forbidden'", "{rec}");
    assert_eq!(verdicts(&rec), want, "{rec}");

    let started = descendants(s.pid());
    let kill = Command::new("kill")
        .args(["-TERM", &s.pid().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    assert_eq!(s.child.wait().unwrap().code(), Some(0));
    for (pid, start) in started {
        let same = stat(pid).is_some_and(|(_, st)| st == start);
        assert!(!same, "process {pid} of the server outlived it");
    }
}
