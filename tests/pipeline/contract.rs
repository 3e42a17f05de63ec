//! The action contract: every malformed action gets its own `invalid_action:*` reason,
//! hints only tighten, and nothing panics on arbitrary bytes.

use agentjail_engine::contract::check_action;
use agentjail_engine::contract::{apply_hints, parse_action, ContractError, PolicyHints};
use agentjail_engine::policy::Policy;
use proptest::prelude::*;
use serde_json::{json, Value};

fn good() -> Value {
    json!({"id": "a1", "language": " Python ", "entrypoint": "main.py",
           "code": "print(1)", "input_payload": {"k": 1}})
}

fn with(key: &str, value: Value) -> Vec<u8> {
    let mut v = good();
    v[key] = value;
    v.to_string().into_bytes()
}

fn without(key: &str) -> Vec<u8> {
    let mut v = good();
    v.as_object_mut().expect("object").remove(key);
    v.to_string().into_bytes()
}

fn reason(bytes: &[u8]) -> String {
    match parse_action(bytes, &Policy::default()) {
        Ok(a) => format!("ok:{}", a.id),
        Err(e) => e.reason(),
    }
}

#[test]
fn valid_action_is_normalised() {
    let a = parse_action(good().to_string().as_bytes(), &Policy::default()).expect("valid");
    assert_eq!(a.language, "python");
    assert_eq!(a.entrypoint, "main.py");
    assert_eq!(a.input_payload, json!({"k": 1}));
    assert!(a.output_schema.is_none() && a.policy_hints.is_none());
}

#[test]
fn malformed_actions_get_their_reason() {
    let ten_mb = "x".repeat(10 * 1024 * 1024);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"{not json".to_vec(), "invalid_action:non_json"),
        (b"".to_vec(), "invalid_action:non_json"),
        (vec![0xff, 0xfe, 0x00, 0x7b], "invalid_action:non_json"),
        (
            b"{\"id\": \"\xc3\x28\"}".to_vec(),
            "invalid_action:non_json",
        ),
        (
            (0u8..=255).cycle().take(4096).collect(),
            "invalid_action:non_json",
        ),
        (b"[1, 2]".to_vec(), "invalid_action:not_object"),
        (b"\"code\"".to_vec(), "invalid_action:not_object"),
        (b"null".to_vec(), "invalid_action:not_object"),
        (without("id"), "invalid_action:id"),
        (with("id", json!("  ")), "invalid_action:id"),
        (with("id", json!(7)), "invalid_action:id"),
        (without("language"), "invalid_action:language"),
        (
            with("language", json!(["python"])),
            "invalid_action:language",
        ),
        (without("entrypoint"), "invalid_action:entrypoint"),
        (without("code"), "invalid_action:code"),
        (with("code", json!(" \n ")), "invalid_action:code"),
        (
            with("code", json!("x".repeat(2401))),
            "invalid_action:code_too_long",
        ),
        (with("code", json!(ten_mb)), "invalid_action:code_too_long"),
        (without("input_payload"), "invalid_action:input_payload"),
        (
            with("input_payload", json!([1])),
            "invalid_action:input_payload",
        ),
        (
            with("input_payload", json!({"big": "y".repeat(2 * 1024 * 1024)})),
            "invalid_action:payload_too_large",
        ),
        (
            with("entrypoint", json!("../main.py")),
            "invalid_action:entrypoint_path",
        ),
        (
            with("entrypoint", json!("a\\main.py")),
            "invalid_action:entrypoint_path",
        ),
        (
            with("entrypoint", json!("run.py")),
            "invalid_action:entrypoint_denied",
        ),
        (
            with("output_schema", json!(3)),
            "invalid_action:output_schema:not_a_schema",
        ),
        (
            with("output_schema", json!({"type": "nonsense"})),
            "invalid_action:output_schema:invalid_keyword:type",
        ),
        (
            with("output_schema", json!({"minimum": "x"})),
            "invalid_action:output_schema:invalid_keyword:minimum",
        ),
        (
            with("policy_hints", json!([])),
            "invalid_action:policy_hints",
        ),
        (
            with("policy_hints", json!({"max_code_chars": -1})),
            "invalid_action:policy_hints",
        ),
        (
            with("policy_hints", json!({"exec_timeout_seconds": 0})),
            "invalid_action:policy_hints",
        ),
        (
            with("policy_hints", json!({"allowed_languages": "python"})),
            "invalid_action:policy_hints",
        ),
        (
            with("policy_hints", json!({"bogus": 1})),
            "invalid_action:policy_hints",
        ),
        (
            with("policy_hints", json!({"network_access": "full"})),
            "invalid_request:network_access_must_be_denied",
        ),
        (
            with("policy_hints", json!({"network_access": "allowed"})),
            "invalid_request:network_access_must_be_denied",
        ),
        (
            with("extra", json!(1)),
            "invalid_action:unknown_field:extra",
        ),
        (
            with("policy_hint", json!({})),
            "invalid_action:unknown_field:policy_hint",
        ),
        // REFERENCE's suffix rule: other bytes as %XX, cut at 96 characters with `~`.
        (
            with("a b\u{e9}\"<", json!(1)),
            "invalid_action:unknown_field:a%20b%C3%A9%22%3C",
        ),
        (
            with(&"k".repeat(200), json!(1)),
            &*Box::leak(
                format!("invalid_action:unknown_field:{}~", "k".repeat(95 - 14)).into_boxed_str(),
            ),
        ),
        (vec![b' '; 17 * 1024 * 1024], "invalid_action:too_large"),
        (
            format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes(),
            "invalid_action:too_deep",
        ),
    ];
    for (bytes, want) in cases {
        let got = reason(&bytes);
        assert_eq!(
            got,
            want,
            "input starting {:?}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(60)])
        );
    }
}

#[test]
fn seed_order_is_kept() {
    // Several faults: the seed's order decides which one is reported.
    let v = json!({"id": "", "language": "", "entrypoint": "x/y", "code": "", "input_payload": 1});
    assert_eq!(reason(v.to_string().as_bytes()), "invalid_action:id");
    let v = json!({"id": "a", "language": "python", "entrypoint": "x/y", "code": "1", "input_payload": 1});
    assert_eq!(
        reason(v.to_string().as_bytes()),
        "invalid_action:input_payload"
    );
}

#[test]
fn network_error_is_detectable() {
    let err = parse_action(
        &with("policy_hints", json!({"network_access": "on"})),
        &Policy::default(),
    )
    .expect_err("must refuse");
    assert!(err.is_invalid_request());
    assert!(matches!(err, ContractError::InvalidRequest { .. }));
    assert!(!err.message().is_empty());
    for ok in ["denied", "none", "OFF"] {
        assert!(parse_action(
            &with("policy_hints", json!({"network_access": ok})),
            &Policy::default()
        )
        .is_ok());
    }
}

#[test]
fn tighter_code_hint_applies_before_size_check() {
    let mut v = good();
    v["code"] = json!("print(123456)");
    v["policy_hints"] = json!({"max_code_chars": 5});
    assert_eq!(
        reason(v.to_string().as_bytes()),
        "invalid_action:code_too_long"
    );
    // A looser hint does not raise the policy's limit.
    v["code"] = json!("x".repeat(3000));
    v["policy_hints"] = json!({"max_code_chars": 100000});
    assert_eq!(
        reason(v.to_string().as_bytes()),
        "invalid_action:code_too_long"
    );
}

#[test]
fn code_length_counts_characters() {
    // 2400 three-byte characters: within 2400 chars though 7200 bytes.
    let code = format!("#{}", "é".repeat(2399));
    assert_eq!(reason(&with("code", json!(code))), "ok:a1");
}

#[test]
fn valid_schemas_are_kept() {
    for schema in [
        json!(true),
        json!({"type": "object", "required": ["a"]}),
        json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}),
    ] {
        let a = parse_action(&with("output_schema", schema.clone()), &Policy::default())
            .expect("valid schema");
        assert_eq!(a.output_schema, Some(schema));
    }
}

#[test]
fn hints_only_tighten() {
    let policy = Policy::default();
    let hints = PolicyHints {
        allowed_languages: Some(vec!["python".into(), "ruby".into()]),
        max_code_chars: Some(100),
        exec_timeout_seconds: Some(0.5),
        network_access: Some("denied".into()),
        ..Default::default()
    };
    let (p, notes) = apply_hints(&policy, &hints);
    assert_eq!(p.languages.allowed, vec!["python".to_string()]);
    assert_eq!(p.budget.max_code_chars, 100);
    assert_eq!(p.limits.wall_time_ms, 500);
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].hint, "allowed_languages");
    assert_eq!(notes[0].note, "ignored: would loosen");

    let loose = PolicyHints {
        max_code_chars: Some(1 << 30),
        exec_timeout_seconds: Some(60.0),
        ..Default::default()
    };
    let (p, notes) = apply_hints(&policy, &loose);
    assert_eq!(p, policy);
    let names: Vec<_> = notes.iter().map(|n| n.hint.as_str()).collect();
    assert_eq!(names, ["max_code_chars", "exec_timeout_seconds"]);

    // Narrowing languages to javascript makes python a policy denial.
    let js_only = PolicyHints {
        allowed_languages: Some(vec!["javascript".into()]),
        ..Default::default()
    };
    let (p, _) = apply_hints(&policy, &js_only);
    let a = parse_action(good().to_string().as_bytes(), &policy).expect("valid");
    assert_eq!(check_action(&a, &p).reason, "language_denied_policy");
}

/// `/run_code`'s `compile_timeout`: a cap on every compiled language's compile wall time,
/// never a raise, never touching the run's limits.
#[test]
fn the_compile_timeout_hint_only_lowers_the_compile_wall_time() {
    let mut policy = Policy::default();
    let tc = |wall: u64| {
        serde_json::from_value(
            json!({"check": "none", "compile": ["/usr/bin/g++", "{source}"],
            "run": ["{binary}"], "compile_limits": {"wall_time_ms": wall}}),
        )
        .unwrap()
    };
    policy.languages.cpp = Some(tc(10_000));
    policy.languages.java = Some(tc(2_000));
    let hints =
        agentjail_engine::contract::parse_hints(&json!({"compile_timeout_seconds": 2.5})).unwrap();
    let (p, notes) = apply_hints(&policy, &hints);
    let wall = |p: &Policy, l: &str| {
        p.languages
            .toolchain(l)
            .unwrap()
            .compile_limits
            .wall_time_ms
    };
    assert_eq!((wall(&p, "cpp"), wall(&p, "java")), (2_500, 2_000));
    assert_eq!(p.limits, policy.limits, "the run's limits are the run's");
    assert!(notes.is_empty());
    for bad in [json!(0), json!(-1), json!("1"), json!(null)] {
        let r = agentjail_engine::contract::parse_hints(&json!({"compile_timeout_seconds": bad}));
        assert_eq!(r.is_err(), !bad.is_null(), "{bad}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn parse_action_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = parse_action(&bytes, &Policy::default());
    }

    #[test]
    fn parse_action_never_panics_on_jsonish(s in r#"[{}\[\]":,a-z0-9 \\_.-]{0,400}"#) {
        let _ = parse_action(s.as_bytes(), &Policy::default());
    }

    #[test]
    fn checker_never_panics(code in r"[a-z_()\[\]{}:=+\-*/.,'\x22#@ \n\t0-9ｅ\\]{0,300}") {
        let policy = Policy::default();
        let _ = agentjail_check::python::check_source(&code, &policy.check);
    }

    #[test]
    fn checker_never_panics_on_any_text(code in any::<String>()) {
        let policy = Policy::default();
        let _ = agentjail_check::python::check_source(&code, &policy.check);
    }

    #[test]
    fn checker_never_panics_on_python_fragments(parts in proptest::collection::vec(prop_oneof![
        Just("import json\n"), Just("def f(x=1):\n"), Just("    "), Just("return x\n"), Just("lambda: "),
        Just("f'{x!r:>{w}}'"), Just("match x:\n"), Just("case [a, *b]:\n"), Just("("), Just(")"),
        Just("["), Just("]"), Just("eval"), Just("json.loads(input())"), Just("\n"), Just("class A:\n"),
        Just("async "), Just("await "), Just("yield "), Just("x := 1"), Just("\"\"\""), Just("\\\n"),
    ], 0..60)) {
        let code: String = parts.concat();
        let policy = Policy::default();
        let _ = agentjail_check::python::check_source(&code, &policy.check);
    }
}

#[test]
fn the_entrypoint_is_the_languages_file() {
    let mut js_policy = Policy::default();
    js_policy.languages.execute = vec!["python".into(), "javascript".into()];
    let action = |language: &str, entrypoint: &str| {
        let mut v = good();
        v["language"] = json!(language);
        v["entrypoint"] = json!(entrypoint);
        serde_json::to_vec(&v).unwrap()
    };
    let outcome = |bytes: &[u8], policy: &Policy| match parse_action(bytes, policy) {
        Ok(a) => format!("ok {}", a.entrypoint),
        Err(e) => e.reason(),
    };
    let cases = [
        ("python", "main.py", "ok main.py", "ok main.py"),
        (
            "python",
            "main.js",
            "invalid_action:entrypoint_denied",
            "invalid_action:entrypoint_denied",
        ),
        ("javascript", "main.js", "ok main.js", "ok main.js"),
        // Not executed by the default: either name passes, the check then says why not
        // (the seed's javascript variant keeps its entrypoint main.py and its reason).
        (
            "javascript",
            "main.py",
            "ok main.py",
            "invalid_action:entrypoint_denied",
        ),
        ("ruby", "main.js", "ok main.js", "ok main.js"),
        (
            "ruby",
            "main.rb",
            "invalid_action:entrypoint_denied",
            "invalid_action:entrypoint_denied",
        ),
        (
            "javascript",
            "lib/main.js",
            "invalid_action:entrypoint_path",
            "invalid_action:entrypoint_path",
        ),
    ];
    for (language, entrypoint, under_default, under_js) in cases {
        let bytes = action(language, entrypoint);
        assert_eq!(
            outcome(&bytes, &Policy::default()),
            under_default,
            "{language} {entrypoint}"
        );
        assert_eq!(
            outcome(&bytes, &js_policy),
            under_js,
            "{language} {entrypoint}"
        );
    }
    let e = parse_action(&action("javascript", "main.py"), &js_policy).unwrap_err();
    assert!(e.message().contains("main.js"), "{e}");
}
