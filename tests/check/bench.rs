//! A tiny timing harness for the static check (no criterion): run with
//! `scripts/bench-check.sh`, which also times CPython's `ast.parse` on the same source.
//! Ignored by default so `cargo test` stays fast.

use agentjail_engine::contract::check_action;
use agentjail_engine::contract::parse_action;
use agentjail_engine::policy::Policy;
use std::time::Instant;

#[test]
#[ignore = "timing harness; run scripts/bench-check.sh"]
fn bench_check() {
    let path = std::env::var("BENCH_SOURCE").unwrap_or_else(|_| "tests/data/bench_main.py".into());
    let code = std::fs::read_to_string(&path).expect("bench source");
    let iters: usize = std::env::var("BENCH_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let raw = serde_json::json!({"id": "b", "language": "python", "entrypoint": "main.py",
                                 "code": code, "input_payload": {}});
    let policy = Policy::default();
    let action = parse_action(raw.to_string().as_bytes(), &policy).expect("valid action");
    assert!(
        check_action(&action, &policy).is_allow(),
        "bench source must pass the check"
    );
    for _ in 0..iters / 10 {
        std::hint::black_box(check_action(std::hint::black_box(&action), &policy));
    }
    let mut samples = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = Instant::now();
        std::hint::black_box(check_action(std::hint::black_box(&action), &policy));
        samples.push(t.elapsed().as_nanos());
    }
    samples.sort_unstable();
    let median = samples[samples.len() / 2];
    println!(
        "BENCH source_bytes={} iters={iters} median_ns={median} p90_ns={}",
        code.len(),
        samples[samples.len() * 9 / 10]
    );
}

/// The JavaScript check on the JS incident program (median of BENCH_ITERS runs, 1000 by
/// default). Compare with `node --check` of the same file, which is dominated by process
/// start: `time node --check tests/data/incident_main.js`.
#[test]
#[ignore = "timing harness; run with --release -- --ignored --nocapture"]
fn bench_js_check() {
    use agentjail_check::javascript::{check_source, JsRules};
    let code = std::fs::read_to_string("tests/data/incident_main.js").expect("incident_main.js");
    let iters: usize = std::env::var("BENCH_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let rules = JsRules::default();
    assert!(
        check_source(&code, &rules).is_empty(),
        "bench source must pass"
    );
    for _ in 0..iters / 10 {
        std::hint::black_box(check_source(std::hint::black_box(&code), &rules));
    }
    let mut samples = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = Instant::now();
        std::hint::black_box(check_source(std::hint::black_box(&code), &rules));
        samples.push(t.elapsed().as_nanos());
    }
    samples.sort_unstable();
    println!(
        "BENCH_JS source_bytes={} iters={iters} median_ns={} p90_ns={}",
        code.len(),
        samples[samples.len() / 2],
        samples[samples.len() * 9 / 10]
    );
}
