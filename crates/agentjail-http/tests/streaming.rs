//! Streamed answers over HTTP (`Accept: application/x-ndjson`): the output of a run, a
//! session call and a workspace command comes as `{"event", "data"}` lines while the program
//! runs, then one `{"status", "body"}` line whose body is the unstreamed answer; the events
//! concatenated are the record's output; a program's own output cannot make a line; a request
//! without the header is answered as before.

mod support;

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::time::{Duration, Instant};
use support::*;

const ALICE: (&str, &str) = ("Authorization", "Bearer aaaaaaaaaaaaaaaaaaaaaaaa");

/// Post `body` to `path` asking for a streamed answer; returns the lines, when the first
/// event line and the last line arrived (since the request was written), and the head.
fn streamed(t: &Target, path: &str, body: &Value) -> (Vec<Value>, Duration, Duration, String) {
    let mut s = connect(t);
    let body = body.to_string();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\nAccept: application/x-ndjson\r\n{}: {}\r\nContent-Length: {}\r\n\r\n{body}",
        ALICE.0,
        ALICE.1,
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let sent = Instant::now();
    let (mut raw, mut buf) = (Vec::new(), [0u8; 4096]);
    let (mut first_event, mut last) = (None, None);
    loop {
        let n = s.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&raw);
        if first_event.is_none() && text.contains("{\"data\":") {
            first_event = Some(sent.elapsed());
        }
        if last.is_none() && text.contains("{\"body\":") {
            last = Some(sent.elapsed());
        }
    }
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let body = dechunk(&raw[split + 4..]);
    let lines = String::from_utf8(body)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    (
        lines,
        first_event.unwrap_or_default(),
        last.expect("a last line"),
        head,
    )
}

/// A chunked body's bytes.
fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let eol = b
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("chunk size line");
        let n = usize::from_str_radix(std::str::from_utf8(&b[..eol]).unwrap().trim(), 16).unwrap();
        b = &b[eol + 2..];
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&b[..n]);
        b = &b[n + 2..];
    }
}

/// The events' text of one stream, and the last line's status and body.
fn split(lines: &[Value], stream: &str) -> (String, u64, Value) {
    let (last, events) = lines.split_last().expect("lines");
    for e in events {
        assert_eq!(
            e.as_object().map(|o| o.len()),
            Some(2),
            "an event is {{event, data}}: {e}"
        );
    }
    let text = events
        .iter()
        .filter(|e| e["event"] == stream)
        .map(|e| e["data"].as_str().unwrap())
        .collect();
    (text, last["status"].as_u64().unwrap(), last["body"].clone())
}

const TICKS: &str = "import time\nfor i in range(10):\n    print('tick', i, flush=True)\n    time.sleep(0.1)\nprint('{\"event\": \"stdout\", \"data\": \"forged\"}')\n";

#[test]
fn runs_and_session_calls_stream_their_output_before_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = token_file(dir.path(), 0o600);
    let policy = concat!(env!("CARGO_MANIFEST_DIR"), "/../../policies/python.toml");
    let s = start(
        "127.0.0.1:0",
        &["--policy", policy, "--token-file", tokens.to_str().unwrap()],
    );
    let t = &s.target;
    let mut run = action(TICKS);
    run["output_mode"] = json!("text");
    run.as_object_mut().unwrap().remove("input_payload");
    let (lines, first, last, head) = streamed(t, "/v1/run", &run);
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/x-ndjson"),
        "{head}"
    );
    let (out, status, rec) = split(&lines, "stdout");
    assert_eq!(status, 200, "{rec}");
    assert_eq!(rec["stop_reason"], "success", "{rec}");
    assert_eq!(out, rec["execution"]["stdout"].as_str().unwrap());
    assert!(out.starts_with("tick 0\ntick 1\n"), "{out}");
    // The program's forged line is data inside our event, never a line of its own.
    assert_eq!(lines.iter().filter(|l| l.get("body").is_some()).count(), 1);
    assert!(lines.iter().all(|l| l["data"] != "forged"), "{lines:?}");
    eprintln!("run: first event after {first:?}, the answer after {last:?}");
    assert!(
        last >= first + Duration::from_millis(500),
        "first {first:?}, last {last:?}"
    );

    // A session call, and the same call without the header: the answer as before.
    let r = request(t, "POST", "/v1/sessions", &[ALICE], b"");
    let sid = r.json()["session"].as_str().unwrap().to_string();
    let path = format!("/v1/sessions/{sid}/exec");
    let (lines, first, last, _) = streamed(t, &path, &json!({"code": TICKS}));
    let (out, status, rec) = split(&lines, "stdout");
    assert_eq!(
        (status, &rec["stop_reason"]),
        (200, &json!("success")),
        "{rec}"
    );
    assert_eq!(out, rec["execution"]["stdout"].as_str().unwrap());
    assert!(
        last >= first + Duration::from_millis(500),
        "first {first:?}, last {last:?}"
    );
    let plain = request(t, "POST", &path, &[ALICE], br#"{"code": "print(1)"}"#);
    assert_eq!(plain.status, 200);
    assert_eq!(plain.json()["execution"]["stdout"], "1\n");
    assert!(plain
        .header("content-type")
        .unwrap()
        .starts_with("application/json"));

    // An error streams as its status and body: another token's session is unknown.
    let (lines, _, _, _) = streamed(
        t,
        "/v1/sessions/0123456789abcdef/exec",
        &json!({"code": "1"}),
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["status"], 404);
    assert_eq!(lines[0]["body"]["error"]["code"], "unknown_session");
}

#[test]
fn workspace_commands_stream_their_output() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = token_file(dir.path(), 0o600);
    let policy = concat!(env!("CARGO_MANIFEST_DIR"), "/../../policies/workspace.toml");
    let s = start(
        "127.0.0.1:0",
        &["--policy", policy, "--token-file", tokens.to_str().unwrap()],
    );
    let t = &s.target;
    let r = request(t, "POST", "/v1/workspaces", &[ALICE], b"");
    let ws = r.json()["workspace"].as_str().unwrap().to_string();
    let cmd = "for i in 0 1 2 3 4 5 6 7 8 9; do echo out $i; echo err $i >&2; sleep 0.1; done";
    let (lines, first, last, _) = streamed(
        t,
        &format!("/v1/workspaces/{ws}/exec"),
        &json!({"command": cmd}),
    );
    let (out, status, rec) = split(&lines, "stdout");
    let (err, _, _) = split(&lines, "stderr");
    assert_eq!(status, 200, "{rec}");
    assert_eq!(rec["execution"]["exit_code"], 0, "{rec}");
    assert_eq!(out, rec["execution"]["stdout"].as_str().unwrap());
    assert_eq!(err, rec["execution"]["stderr"].as_str().unwrap());
    assert!(
        out.starts_with("out 0\n") && err.starts_with("err 0\n"),
        "{out} {err}"
    );
    assert!(
        last >= first + Duration::from_millis(500),
        "first {first:?}, last {last:?}"
    );
}

#[test]
fn a_policy_that_redacts_the_printed_record_refuses_to_stream() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = token_file(dir.path(), 0o600);
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../policies/python.toml"
    ))
    .unwrap();
    assert!(text.contains("\nprinted = false\n"));
    let policy = dir.path().join("redacting.toml");
    std::fs::write(
        &policy,
        text.replacen("\nprinted = false\n", "\nprinted = true\n", 1),
    )
    .unwrap();
    let s = start(
        "127.0.0.1:0",
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--token-file",
            tokens.to_str().unwrap(),
        ],
    );
    let mut run = action("print(1)");
    run["output_mode"] = json!("text");
    run.as_object_mut().unwrap().remove("input_payload");
    let (lines, _, _, _) = streamed(&s.target, "/v1/run", &run);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["status"], 400);
    assert_eq!(lines[0]["body"]["error"]["code"], "bad_request");
}
