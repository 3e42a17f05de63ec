//! Hostile output schemas and documents against the library's bounds.
//!
//! Each hostile case is an `#[ignore]`d test that a wrapper test re-runs in a child process
//! of this test binary under `prlimit --as=512MiB`: a regression (exponential memory, a
//! runaway compile) then fails the wrapper instead of taking the machine down. The child
//! prints one `MEASURE` line (wall time, peak RSS, outcome) that the wrapper echoes.

use crate::common;
use agentjail_json::schema::{compile, SchemaLimits, ValidationFailure};
use agentjail_json::{parse_strict, to_safe_string, ReadLimits};
use serde_json::{json, Map, Value};
use std::process::Command;
use std::time::{Duration, Instant};

const ADDRESS_SPACE: u64 = 512 * 1024 * 1024;

/// Only an unbounded (exponential) validation reaches this; the bounded cases take
/// milliseconds in release (the MEASURE lines print how long each took: speed belongs to the
/// benchmarks, not to these assertions).
const SLOW: Duration = Duration::from_secs(60);

/// Re-run test `name` of this binary under RLIMIT_AS and demand it passed.
fn under_rlimit(name: &str) {
    let exe = std::env::current_exe().expect("test binary path");
    let out = Command::new("prlimit")
        .arg(format!("--as={ADDRESS_SPACE}"))
        .arg("--")
        .arg(&exe)
        .arg("--exact")
        .arg(common::test_name(module_path!(), name))
        .args(["--ignored", "--nocapture", "--test-threads=1"])
        .output()
        .expect("prlimit (util-linux) must be installed to run the bounded schema tests");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for line in stdout.lines().chain(stderr.lines()) {
        // libtest prints "test name ... " on the line the first MEASURE continues.
        if let Some(at) = line.find("MEASURE") {
            println!("{}", &line[at..]);
        }
    }
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{name} failed under RLIMIT_AS={ADDRESS_SPACE}: {}\n{stdout}\n{stderr}",
        out.status
    );
}

/// Peak resident memory of this process, KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn measure<T: std::fmt::Debug>(name: &str, f: impl FnOnce() -> T) -> (T, Duration) {
    let t = Instant::now();
    let out = f();
    let took = t.elapsed();
    println!(
        "MEASURE {name}: {:.1} ms, peak RSS {} KiB, outcome {out:?}",
        took.as_secs_f64() * 1000.0,
        peak_rss_kib()
    );
    (out, took)
}

fn defaults() -> SchemaLimits {
    SchemaLimits::default()
}

/// `d0 = oneOf[d1, d1 & not integer]`, ...: the shared-`$defs` doubling from the review.
/// Both branches walk the whole chain below them (`$ref` before `not`), so one value costs
/// 2^levels evaluations, and exactly one branch matches an integer.
fn doubling_one_of(levels: usize) -> Value {
    let mut defs = Map::new();
    for i in 0..levels {
        let next = format!("#/$defs/d{}", i + 1);
        defs.insert(
            format!("d{i}"),
            json!({"oneOf": [{"$ref": next}, {"$ref": next, "not": {"type": "integer"}}]}),
        );
    }
    defs.insert(format!("d{levels}"), json!({"type": "integer"}));
    json!({"$defs": defs, "$ref": "#/$defs/d0"})
}

#[test]
fn nested_one_of_24_is_refused_or_budgeted() {
    under_rlimit("hostile_nested_one_of_24");
}

#[test]
#[ignore = "run by nested_one_of_24_is_refused_or_budgeted under RLIMIT_AS"]
fn hostile_nested_one_of_24() {
    let schema = doubling_one_of(24);
    let text = to_safe_string(&schema);
    let (what, took) = measure("nested_oneOf_24_compile", || {
        let parsed =
            parse_strict(text.as_bytes(), &ReadLimits::default()).map_err(|e| e.to_string())?;
        compile(&parsed, &defaults())
            .map(|_| ())
            .map_err(|e| e.what())
    });
    assert_eq!(what, Err("too_complex".to_string()));
    assert!(took < SLOW);
    // Just under the closure bound, applied to every item of a long array: Budget.
    let mut schema = doubling_one_of(9);
    schema["items"] = json!({"$ref": "#/$defs/d0"});
    if let Some(o) = schema.as_object_mut() {
        o.remove("$ref");
    }
    let c = compile(&schema, &defaults()).expect("within bounds");
    let items = Value::Array(vec![json!(1); 10_000]);
    let (r, took) = measure("nested_oneOf_9_x_10k_items", || {
        c.validate(&items, &mut || false)
    });
    assert_eq!(r, Err(ValidationFailure::Budget));
    assert!(took < SLOW);
    assert!(peak_rss_kib() < 128 * 1024);
}

#[test]
fn ref_chain_200k_is_refused_fast() {
    under_rlimit("hostile_ref_chain_200k");
}

#[test]
#[ignore = "run by ref_chain_200k_is_refused_fast under RLIMIT_AS"]
fn hostile_ref_chain_200k() {
    let mut text = String::from(r##"{"$ref":"#/$defs/a0","$defs":{"##);
    for i in 0..200_000 {
        text.push_str(&format!(r##""a{i}":{{"$ref":"#/$defs/a{}"}},"##, i + 1));
    }
    text.push_str(r#""a200000":{"type":"integer"}}}"#);
    // The strict reader already refuses the 5 MB document (its parsed form is too big).
    let (what, took) = measure("ref_chain_200k_strict_read", || {
        parse_strict(text.as_bytes(), &ReadLimits::default())
            .map(|_| ())
            .map_err(|e| e.what())
    });
    assert_eq!(what, Err("too_large"));
    assert!(took < SLOW);
    // Read without bounds, the compiler refuses it by size before any work...
    let parsed: Value = serde_json::from_str(&text).expect("valid JSON");
    let (what, took) = measure("ref_chain_200k_compile", || {
        compile(&parsed, &defaults())
            .map(|_| ())
            .map_err(|e| e.what())
    });
    assert_eq!(what, Err("too_large".to_string()));
    assert!(took < SLOW);
    // ...and with the size bound lifted, the ref count stops it after 128.
    let unbounded_size = SchemaLimits {
        max_bytes: usize::MAX,
        max_nodes: usize::MAX,
        ..defaults()
    };
    let (what, took) = measure("ref_chain_200k_compile_size_unbounded", || {
        compile(&parsed, &unbounded_size)
            .map(|_| ())
            .map_err(|e| e.what())
    });
    assert_eq!(what, Err("too_many_refs".to_string()));
    assert!(took < SLOW);
}

#[test]
fn catastrophic_patterns_are_linear_or_refused() {
    under_rlimit("hostile_patterns");
}

#[test]
#[ignore = "run by catastrophic_patterns_are_linear_or_refused under RLIMIT_AS"]
fn hostile_patterns() {
    for p in [
        r"(a)\1",
        r"^(?=(a+))\1b$",
        r"(?<x>a)\k<x>",
        r"(?!a)",
        r"(?<=a)b",
    ] {
        let what = compile(&json!({ "pattern": p }), &defaults())
            .map(|_| ())
            .map_err(|e| e.what());
        assert_eq!(what, Err("pattern".to_string()), "{p}");
    }
    let text = json!("a".repeat(200_000) + "!");
    for p in [
        r"(a+)+$",
        r"(a|aa)*b",
        r"^(a|a?)+$",
        r"(x+x+)+y",
        r"^(\w+\s?)*$",
        r"[01]*1[01]{20}$",
    ] {
        let c = compile(&json!({ "pattern": p }), &defaults()).expect("linear pattern compiles");
        let (r, took) = measure(&format!("pattern {p} on 200k chars"), || {
            c.validate(&text, &mut || false)
        });
        assert!(
            r.is_ok()
                || matches!(
                    r,
                    Err(ValidationFailure::Invalid { .. } | ValidationFailure::Budget)
                )
        );
        assert!(took < SLOW, "{p}: {took:?}");
    }
    // Many patterns over many property names: charged per byte scanned, so Budget.
    let pats: Map<String, Value> = (0..64)
        .map(|i| (format!("^(a|aa)*{i}$"), json!({})))
        .collect();
    let c = compile(&json!({ "patternProperties": pats }), &defaults()).expect("64 patterns");
    let wide: Map<String, Value> = (0..20_000)
        .map(|i| (format!("{}{i}", "a".repeat(100)), json!(1)))
        .collect();
    let (r, took) = measure("64 patterns x 20k names", || {
        c.validate(&Value::Object(wide), &mut || false)
    });
    assert_eq!(r, Err(ValidationFailure::Budget));
    assert!(took < SLOW);
}

#[test]
fn exponential_work_over_depth_hits_the_budget() {
    under_rlimit("hostile_exponential_over_depth");
}

#[test]
#[ignore = "run by exponential_work_over_depth_hits_the_budget under RLIMIT_AS"]
fn hostile_exponential_over_depth() {
    // Closure 9, but every branch walks every item and then fails: 8^depth evaluations.
    let branch = json!({"items": {"$ref": "#/$defs/n"}, "contains": {"const": "never"}});
    let schema = json!({"$defs": {"n": {"anyOf": vec![branch; 8]}}, "$ref": "#/$defs/n"});
    let c = compile(&schema, &defaults()).expect("small closure");
    let text = format!("{}{}", "[".repeat(64), "]".repeat(64));
    let deep = parse_strict(text.as_bytes(), &ReadLimits::default()).expect("depth 64 is accepted");
    let (r, took) = measure("anyOf_8_over_depth_64", || c.validate(&deep, &mut || false));
    assert_eq!(r, Err(ValidationFailure::Budget));
    assert!(took < SLOW);
    // The interrupt is honoured between steps.
    let start = Instant::now();
    let (r, _) = measure("anyOf_8_over_depth_64_interrupted", || {
        c.validate(&deep, &mut || start.elapsed() > Duration::from_millis(20))
    });
    assert!(matches!(
        r,
        Err(ValidationFailure::Interrupted | ValidationFailure::Budget)
    ));
    assert!(peak_rss_kib() < 128 * 1024);
}

#[test]
fn huge_documents_are_refused_without_recursion() {
    under_rlimit("hostile_documents");
}

#[test]
#[ignore = "run by huge_documents_are_refused_without_recursion under RLIMIT_AS"]
fn hostile_documents() {
    let deep = "[".repeat(16 * 1024 * 1024 - 1);
    let (r, took) = measure("16MiB of [", || {
        parse_strict(deep.as_bytes(), &ReadLimits::default()).map_err(|e| e.what())
    });
    assert_eq!(r, Err("too_deep"));
    assert!(took < SLOW);
    // 16 MiB of 7-byte objects would be ~1.5 GB of serde_json values: the estimate stops it.
    let objects = format!("[{}{{\"a\":0}}]", "{\"a\":0},".repeat(2_000_000));
    let (r, took) = measure("16MiB of {\"a\":0}", || {
        parse_strict(objects.as_bytes(), &ReadLimits::default())
            .map(|_| ())
            .map_err(|e| e.what())
    });
    assert_eq!(r, Err("too_large"));
    assert!(took < SLOW);
    assert!(peak_rss_kib() < 256 * 1024);
    let dup = format!(
        "{{{}\"k\":1}}",
        (0..200_000)
            .map(|i| format!("\"k{i}\":1,"))
            .collect::<String>()
    );
    let (r, _) = measure("200k members, duplicate last", || {
        parse_strict(dup.as_bytes(), &ReadLimits::default())
            .map(|_| ())
            .map_err(|e| e.what())
    });
    assert_eq!(r, Ok(()));
    let dup = format!(
        "{{{}\"k0\":1}}",
        (0..200_000)
            .map(|i| format!("\"k{i}\":1,"))
            .collect::<String>()
    );
    let (r, _) = measure("200k members, duplicate of the first", || {
        parse_strict(dup.as_bytes(), &ReadLimits::default())
            .map(|_| ())
            .map_err(|e| e.what())
    });
    assert_eq!(r, Err("duplicate_key"));
    // Huge exponents stay cheap: modular arithmetic, never expansion.
    let c = compile(
        &json!({"multipleOf": serde_json::from_str::<Value>("7e-1000").unwrap()}),
        &defaults(),
    )
    .unwrap();
    let items: Vec<Value> = (0..1000)
        .map(|i| serde_json::from_str(&format!("{}e1000", 7 * (i + 1))).unwrap())
        .collect();
    let c_items = compile(
        &json!({"items": {"multipleOf": serde_json::from_str::<Value>("7e-1000").unwrap()}}),
        &defaults(),
    )
    .unwrap();
    let (r, took) = measure("1000 x multipleOf 7e-1000 on Ne1000", || {
        c_items.validate(&Value::Array(items), &mut || false)
    });
    assert_eq!(r, Ok(()));
    assert!(took < SLOW);
    let odd = serde_json::from_str::<Value>("1e1000").unwrap();
    assert!(matches!(
        c.validate(&odd, &mut || false),
        Err(ValidationFailure::Invalid { .. })
    ));
    // uniqueItems on a long array: hashing, not pairwise.
    let c = compile(&json!({"uniqueItems": true}), &defaults()).unwrap();
    let items = Value::Array((0..100_000).map(|i| json!([i, format!("s{i}")])).collect());
    let (r, took) = measure("uniqueItems 100k", || c.validate(&items, &mut || false));
    assert_eq!(r, Ok(()));
    assert!(took < SLOW);
}

/// The seed incident schema on the seed's output: what a normal run costs.
#[test]
fn seed_schema_validation_cost() {
    let action: Value = serde_json::from_str(include_str!("../../examples/incident/action.json"))
        .expect("seed action");
    let schema = &action["output_schema"];
    let output = parse_strict(
        br#"{"failed_payment_rate":0.03333333333333333,"chargeback_alerts":1,"incident_severity":"P1","eta_minutes":45,"affected_checkout_share":0.03333333333333333,"avg_latency_ms":167.0,"p95_latency_ms":187.0,"sample_size":60,"incident_id":"inc_payments_20260307","region":"US"}"#,
        &ReadLimits::default(),
    )
    .expect("seed output");
    let runs = 1000u32;
    let t = Instant::now();
    for _ in 0..runs {
        let c = compile(schema, &defaults()).expect("seed schema compiles");
        assert_eq!(c.validate(&output, &mut || false), Ok(()));
    }
    let per_compile_and_validate = t.elapsed() / runs;
    let c = compile(schema, &defaults()).expect("seed schema compiles");
    let t = Instant::now();
    for _ in 0..runs {
        assert_eq!(c.validate(&output, &mut || false), Ok(()));
    }
    let per_validate = t.elapsed() / runs;
    println!("MEASURE seed schema: compile+validate {per_compile_and_validate:?}, validate {per_validate:?}");
}
