//! Streaming (`"stream": true`): a run's output comes as `{"id", "event", "data"}` lines
//! before its record, the events of a stream concatenated are the record's output, what the
//! program prints cannot forge an event line or another id, a flood streams at most the cap,
//! a request without `stream` gets no event lines, and a client that does not read its
//! events costs only itself (its job is not held by the unread socket; another client's job
//! runs and is answered meanwhile). One server, raw socket clients (the harness's `Conn`
//! reads one response per id; events are several lines per id).

use super::{serve_harness, setup, Knobs};
use crate::common::{self, Who};
use serde_json::{json, Value};
use serve_harness::{scratch, Server};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// Prints a line every 100 ms for 1 s (flushed), a line trying to forge another request's
/// event, then one line on stderr.
const TICKS: &str = "import time, os\nfor i in range(10):\n    print('tick', i, 'é', flush=True)\n    time.sleep(0.1)\nprint('\"}\\n{\"id\": \"other\", \"event\": \"stdout\", \"data\": \"forged\"}', flush=True)\nos.write(2, b'done\\n')\n";

/// Every line answering `id` up to and including its final one, each with when it came.
fn until_final(r: &mut BufReader<UnixStream>, id: &str) -> Vec<(Instant, Value)> {
    let mut got = Vec::new();
    loop {
        let mut line = String::new();
        let n = r.read_line(&mut line).expect("read from serve");
        assert!(n > 0, "serve closed the connection; got {got:?}");
        let v: Value = serde_json::from_str(&line).expect("a JSON line");
        assert_eq!(v["id"], id, "a line of another id: {v}");
        let last = v.get("event").is_none();
        got.push((Instant::now(), v));
        if last {
            return got;
        }
    }
}

/// The events of `lines` (all but the last), checked for their shape; and their data per
/// stream concatenated.
fn events(lines: &[(Instant, Value)]) -> (String, String) {
    let (mut out, mut err) = (String::new(), String::new());
    for (_, e) in &lines[..lines.len() - 1] {
        let o = e.as_object().unwrap();
        assert_eq!(o.len(), 3, "an event is {{id, event, data}}: {e}");
        let data = e["data"].as_str().expect("data is a string");
        match e["event"].as_str() {
            Some("stdout") => out.push_str(data),
            Some("stderr") => err.push_str(data),
            _ => panic!("not an event: {e}"),
        }
    }
    (out, err)
}

/// A text-mode action (stdout is the result, not JSON).
fn action(code: &str, _: Value) -> Value {
    common::action_json(code, json!({"id": "s", "output_mode": "text"}))
}

fn send(w: &mut UnixStream, req: Value) {
    let mut line = serde_json::to_vec(&req).unwrap();
    line.push(b'\n');
    w.write_all(&line).unwrap();
}

#[test]
fn streamed_output_comes_before_the_record_is_the_record_and_a_stalled_reader_costs_only_itself() {
    let who = Who::Root;
    // A cap large enough that the flood's events cannot fit in the stalled client's socket.
    let (m, p) = setup(
        "stream",
        &Knobs {
            stdout: Some("2MiB"),
            ..Knobs::default()
        },
    );
    let dir = scratch("stream");
    let sock = dir.path().join("s.sock");
    let s = Server::start(
        who,
        &p,
        &m,
        &["--pool", "2", "--socket", sock.to_str().unwrap()],
    );
    // B asks for a flood past the cap, streamed, and does not read.
    let mut b = UnixStream::connect(&sock).unwrap();
    let flood = "import os\nchunk = b'x' * 65536\nfor i in range(48):\n    os.write(1, chunk)\n";
    let b_sent = Instant::now();
    send(
        &mut b,
        json!({"id": "b1", "op": "run", "stream": true, "action": action(flood, json!({}))}),
    );

    // A: the ticking program, streamed.
    let mut a = UnixStream::connect(&sock).unwrap();
    let mut ar = BufReader::new(a.try_clone().unwrap());
    let sent = Instant::now();
    send(
        &mut a,
        json!({"id": "a1", "op": "run", "stream": true, "action": action(TICKS, json!({}))}),
    );
    let lines = until_final(&mut ar, "a1");
    let (rec_at, resp) = lines.last().unwrap();
    let rec = &resp["record"];
    assert_eq!(rec["stop_reason"], "success", "{rec:#}");
    let first = lines[0].0;
    let (first_ms, before_ms) = ((first - sent).as_millis(), (*rec_at - first).as_millis());
    eprintln!(
        "stream: first event {first_ms} ms after the request, {before_ms} ms before the record"
    );
    assert!(lines[0].1.get("event").is_some(), "no event came first");
    // The program ticks for 1 s: its first line must arrive long before its record (a
    // margin a loaded 2-core box keeps; the absolute figure is logged above).
    assert!(
        before_ms >= 500,
        "the first event came {before_ms} ms before the record"
    );
    let (out, err) = events(&lines);
    assert_eq!(out, rec["execution"]["stdout"].as_str().unwrap());
    assert_eq!(err, rec["execution"]["stderr"].as_str().unwrap());
    assert_eq!(err, "done\n");
    assert!(
        out.starts_with("tick 0 é\n") && out.contains("tick 9 é\n"),
        "{out:?}"
    );
    // The forged line is data inside A's own event: no line of id "other" came (until_final
    // asserts every line's id), and the text is in the output as printed.
    assert!(out.contains(r#"{"id": "other", "event": "stdout", "data": "forged"}"#));
    assert!(
        lines.len() >= 3,
        "one event per tick expected, got {}",
        lines.len() - 1
    );

    // Without "stream": the record alone, as before.
    send(
        &mut a,
        json!({"id": "a2", "op": "run", "action": action("print('quiet')", json!({}))}),
    );
    let lines = until_final(&mut ar, "a2");
    assert_eq!(lines.len(), 1, "events without stream: {lines:?}");
    assert_eq!(lines[0].1["record"]["execution"]["stdout"], "quiet\n");

    // B has not read a byte: its job ended all the same (its record's wall time is short of
    // the time since it was sent), and it gets every event and its record now.
    while b_sent.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let unread_ms = b_sent.elapsed().as_millis() as u64;
    let mut br = BufReader::new(b.try_clone().unwrap());
    let lines = until_final(&mut br, "b1");
    let rec = &lines.last().unwrap().1["record"];
    assert_eq!(
        rec["stop_reason"], "code_output_too_large",
        "{}",
        rec["stop_reason"]
    );
    assert_eq!(rec["execution"]["stdout_truncated"], true);
    let wall = rec["execution"]["wall_ms"].as_u64().unwrap();
    assert!(
        wall < unread_ms,
        "B's job took {wall} ms of the {unread_ms} ms it went unread"
    );
    let (out, _) = events(&lines);
    assert_eq!(
        out.len(),
        2 * 1024 * 1024,
        "the events are the cap's bytes, no more"
    );
    assert_eq!(out, rec["execution"]["stdout"].as_str().unwrap());
    drop((a, ar, b, br));
    s.finish();
}
