//! The session framing, both ways, on arbitrary bytes. A call's frame (`AJ1 exec <len>
//! <nonce>\n<source>`) must read back as the runner reads it
//! (crates/agentjail-engine/src/runner/python.py,
//! `read_frame`: a header of at most 64 bytes, four fields, then exactly <len> bytes) for any
//! source. What comes back from the jail is untrusted text: no reply line may make
//! `is_done_of` or `done_report` accept a `done` whose `call` is not this call's nonce, and the error report
//! taken from the replies must keep its bounds (a non-empty type of at most 200 characters,
//! a message of at most 2000), without a panic.
#![no_main]

use agentjail_engine::runner::{call_frame, done_report, error_report, is_done_of, Event};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    // A nonce like the engine's (32 lowercase hex digits), derived from the input.
    let nonce: String = (0..32)
        .map(|i| {
            let b = data.get(i % data.len().max(1)).copied().unwrap_or(0) as usize;
            char::from(b"0123456789abcdef"[(b + i) % 16])
        })
        .collect();

    let frame = call_frame(data, &nonce);
    let nl = frame
        .iter()
        .position(|b| *b == b'\n')
        .expect("a header line");
    assert!(nl < 64, "the runner refuses a header over 64 bytes");
    let header = std::str::from_utf8(&frame[..nl]).expect("an ASCII header");
    let fields: Vec<&str> = header.split(' ').collect();
    assert_eq!(fields.len(), 4);
    assert_eq!(
        (fields[0], fields[1], fields[3]),
        ("AJ1", "exec", nonce.as_str())
    );
    assert_eq!(fields[2].parse::<usize>().ok(), Some(data.len()));
    assert_eq!(&frame[nl + 1..], data);

    for line in data.split(|b| *b == b'\n') {
        if is_done_of(line, &nonce) {
            match Event::parse(line) {
                Some(Event::Done { call, .. }) => assert_eq!(call.as_deref(), Some(nonce.as_str())),
                other => panic!("an accepted done reads back as {other:?}"),
            }
        }
        assert!(
            !is_done_of(line, ""),
            "an empty nonce matches nothing the runner sends"
        );
    }
    if let Some(d) = done_report(data, &nonce) {
        // A done is only ever this call's, and its value keeps its bound.
        assert!(data.split(|b| *b == b'\n').any(|l| is_done_of(l, &nonce)));
        assert!(d.value.as_str().is_none_or(|v| v.chars().count() <= 10_000));
        if let Some(e) = d.error.as_object() {
            assert_eq!(e["source"], Value::from("runner"));
        }
    }
    if let Some(e) = error_report(data) {
        let kind = e["type"].as_str().expect("a type");
        assert!(!kind.is_empty() && kind.chars().count() <= 200);
        assert!(e["message"].as_str().expect("a message").chars().count() <= 2000);
        assert_eq!(e["source"], Value::from("runner"));
    }
});
