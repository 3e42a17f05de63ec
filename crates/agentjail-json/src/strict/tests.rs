use super::*;
use proptest::prelude::*;
use serde_json::json;
use serde_json::{Number, Value};
use std::str::FromStr;

fn strict(s: &str) -> Result<Value, JsonError> {
    parse_strict(s.as_bytes(), &ReadLimits::default())
}

#[test]
fn accepts_rfc8259() {
    assert_eq!(
        strict(" {\"a\" : [1, -2.5e3, true, false, null, \"x\"]}\r\n\t").unwrap(),
        serde_json::from_str::<Value>(r#"{"a":[1,-2.5e3,true,false,null,"x"]}"#).unwrap()
    );
    assert_eq!(
        strict("\"\\u00e9\\ud83d\\ude00\\/\\b\\f\\n\\r\\t\"").unwrap(),
        json!("é😀/\u{8}\u{c}\n\r\t")
    );
    assert_eq!(strict("0").unwrap(), json!(0));
    assert_eq!(strict("[]").unwrap(), json!([]));
    assert_eq!(strict("{}").unwrap(), json!({}));
    assert_eq!(strict("-0").unwrap().to_string(), "-0");
}

#[test]
fn syntax_errors_are_non_json_with_positions() {
    for bad in [
        "",
        " ",
        "{",
        "[1,]",
        "{\"a\":1,}",
        "[1 2]",
        "01",
        "+1",
        "1.",
        ".5",
        "1e",
        "-",
        "NaN",
        "Infinity",
        "-Infinity",
        "// c\n1",
        "/* c */1",
        "'a'",
        "{a:1}",
        "\"\\x41\"",
        "\"a\nb\"",
        "\"\\ud800\"",
        "\"\\udc00\"",
        "\"\\ud800\\u0041\"",
        "tru",
        "nul",
        "1 2",
        "{} {}",
        "\u{feff}{}",
        "\u{a0}1",
        "\u{b}1",
        "[1]]",
        "[",
        "{\"a\"}",
        "\"\\u12\"",
    ] {
        let e = strict(bad).unwrap_err();
        assert_eq!(e.what(), "non_json", "{bad:?} gave {e:?}");
        assert_eq!(e.pointer(), None);
    }
    let e = strict("{\n  \"a\": [1,]\n}").unwrap_err();
    assert!(
        matches!(
            e,
            JsonError::Syntax {
                line: 2,
                column: 11,
                ..
            }
        ),
        "{e:?}"
    );
    let e = parse_strict(b"[\"a\xff\"]", &ReadLimits::default()).unwrap_err();
    assert!(
        matches!(
            e,
            JsonError::Syntax {
                line: 1,
                column: 4,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("UTF-8"));
}

#[test]
fn duplicate_keys_are_refused_after_unescaping() {
    let e = strict(r#"{"policy_hints":{"exec_timeout_seconds":1,"exec_timeout_seconds":9}}"#)
        .unwrap_err();
    assert_eq!(
        e,
        JsonError::DuplicateKey {
            pointer: "/policy_hints/exec_timeout_seconds".into()
        }
    );
    assert_eq!(e.what(), "duplicate_key");
    let e = strict(r#"{"a":1,"\u0061":2}"#).unwrap_err();
    assert_eq!(e.pointer(), Some("/a"));
    let e = strict(r#"[{"x":[{}]},{"a/b~":1,"a/b~":1}]"#).unwrap_err();
    assert_eq!(e.pointer(), Some("/1/a~1b~0"));
    assert!(strict(r#"{"a":{"a":1},"b":{"a":1}}"#).is_ok());
}

#[test]
fn depth_is_bounded() {
    let limits = ReadLimits::default();
    let ok = format!("{}{}", "[".repeat(64), "]".repeat(64));
    assert!(strict(&ok).is_ok());
    let deep = format!("{}{}", "[".repeat(65), "]".repeat(65));
    let e = strict(&deep).unwrap_err();
    assert_eq!(e.what(), "too_deep");
    assert_eq!(
        e,
        JsonError::TooDeep {
            pointer: "/0".repeat(64),
            limit: 64
        }
    );
    // Far deeper than any stack: refused without recursion.
    let huge = "[".repeat(10_000_000);
    let e = parse_strict(
        huge.as_bytes(),
        &ReadLimits {
            max_bytes: usize::MAX,
            ..limits.clone()
        },
    )
    .unwrap_err();
    assert_eq!(e.what(), "too_deep");
    let obj = format!("{}1{}", "{\"k\":".repeat(3), "}".repeat(3));
    let e = parse_strict(
        obj.as_bytes(),
        &ReadLimits {
            max_depth: 2,
            ..limits
        },
    )
    .unwrap_err();
    assert_eq!(e.pointer(), Some("/k/k"));
}

#[test]
fn numbers_are_exact_and_bounded() {
    let v = strict(r#"{"n":123456789012345678901234567890,"f":9007199254740993.0,"t":1e-400}"#)
        .unwrap();
    assert_eq!(v["n"].to_string(), "123456789012345678901234567890");
    assert_eq!(v["f"].to_string(), "9007199254740993.0");
    assert_eq!(v["t"].to_string(), "1e-400");
    assert_eq!(
        to_safe_string(&v),
        r#"{"f":9007199254740993.0,"n":123456789012345678901234567890,"t":1e-400}"#
    );
    assert!(strict("1e1000").is_ok());
    assert!(strict("-1e-1000").is_ok());
    assert!(strict("0.01e1002").is_ok());
    assert!(strict("0e99999999999999999999999").is_ok());
    for bad in [
        "1e1001",
        "1e-1001",
        "[10e1000]",
        "0.001e-998",
        "1e99999999999999999999999999",
    ] {
        let e = strict(bad).unwrap_err();
        assert_eq!(e.what(), "number_out_of_range", "{bad}");
    }
    let long = format!("{{\"a\":[{}]}}", "1".repeat(257));
    assert_eq!(
        strict(&long).unwrap_err(),
        JsonError::NumberOutOfRange {
            pointer: "/a/0".into()
        }
    );
    assert!(strict(&"1".repeat(256)).is_ok());
}

#[test]
fn size_is_bounded() {
    let limits = ReadLimits {
        max_bytes: 4,
        ..ReadLimits::default()
    };
    assert!(parse_strict(b"[12]", &limits).is_ok());
    let e = parse_strict(b"[123]", &limits).unwrap_err();
    assert_eq!(e, JsonError::TooLarge { limit: 4 });
    assert_eq!(e.what(), "too_large");
}

#[test]
fn memory_is_bounded() {
    // 7-byte objects cost ~800 bytes each once parsed: refused by the estimate.
    let many = format!("[{}{{\"a\":0}}]", "{\"a\":0},".repeat(200_000));
    let limits = ReadLimits {
        max_memory: 64 * 1024 * 1024,
        ..ReadLimits::default()
    };
    let e = parse_strict(many.as_bytes(), &limits).err();
    let e = e.unwrap_or(JsonError::TooLarge { limit: 0 });
    assert_eq!(
        e,
        JsonError::TooMuchMemory {
            limit: 64 * 1024 * 1024
        }
    );
    assert_eq!(e.what(), "too_large");
    assert!(e.to_string().contains("64 MiB"), "{e}");
    let numbers = format!("[{}0]", "0,".repeat(1_000_000));
    let e = parse_strict(numbers.as_bytes(), &limits).err();
    assert_eq!(e.map(|e| e.what()), Some("too_large"));
    // Ordinary records well within the default.
    let row = r#"{"transaction_id":"txn_001","status":"paid","chargeback":false,"latency_ms":150}"#;
    let rows = format!("[{}{row}]", format!("{row},").repeat(10_000));
    assert!(strict(&rows).is_ok());
}

#[test]
fn display_is_one_safe_line() {
    let e = strict("{\"\u{2028}\u{202e}\":1,\"\u{2028}\u{202e}\":2}").unwrap_err();
    let s = e.to_string();
    assert!(
        !s.contains('\u{2028}') && !s.contains('\u{202e}') && !s.contains('\n'),
        "{s}"
    );
    assert!(s.contains("\\u{2028}"), "{s}");
}

#[test]
fn safe_writer_escapes_the_whole_set() {
    let nasty = "a\u{85}b\u{2028}c\u{2029}d\u{202e}e\u{7f}\u{9b}\u{feff}\u{e0041}\n\u{ad}";
    let v = json!({ nasty: [nasty] });
    let s = to_safe_string(&v);
    assert!(s.is_ascii(), "{s}");
    assert!(
        s.contains("\\u0085") && s.contains("\\u2028") && s.contains("\\udb40\\udc41"),
        "{s}"
    );
    assert_eq!(serde_json::from_str::<Value>(&s).unwrap(), v);
    let p = to_safe_string_pretty(&v);
    assert_eq!(
        p,
        format!(
            "{{\n  {s0}: [\n    {s0}\n  ]\n}}",
            s0 = to_safe_string(&json!(nasty))
        )
    );
    assert_eq!(strict(&p).unwrap(), v);
    // Ordinary text is untouched.
    assert_eq!(
        to_safe_string(&json!({"é": "日本 \"q\" \\"})),
        r#"{"é":"日本 \"q\" \\"}"#
    );
}

#[test]
fn safe_text_is_visible_and_bounded() {
    assert_eq!(
        safe_text("a\nb\u{202e}c\u{85}", 100),
        "a\\nb\\u{202E}c\\u{0085}"
    );
    assert_eq!(safe_text("abcdef", 3), "abc…");
    assert_eq!(safe_text("ab\u{2028}", 5), "ab…");
    assert_eq!(safe_text("", 0), "");
}

/// Strings from every escaped class, plus arbitrary Unicode.
fn nasty_string() -> impl Strategy<Value = String> {
    let pool: Vec<char> = vec![
        '\0',
        '\u{1}',
        '\t',
        '\n',
        '\r',
        '\u{1f}',
        '"',
        '\\',
        '/',
        '\u{7f}',
        '\u{80}',
        '\u{85}',
        '\u{9f}',
        '\u{a0}',
        '\u{ad}',
        '\u{61c}',
        '\u{180e}',
        '\u{200b}',
        '\u{200f}',
        '\u{2028}',
        '\u{2029}',
        '\u{202a}',
        '\u{202e}',
        '\u{2060}',
        '\u{2064}',
        '\u{2066}',
        '\u{206f}',
        '\u{feff}',
        '\u{fff9}',
        '\u{fffb}',
        '\u{e0000}',
        '\u{e007f}',
        'a',
        'é',
        '😀',
        '\u{10ffff}',
        '~',
    ];
    let from_pool = proptest::collection::vec(proptest::sample::select(pool), 0..8)
        .prop_map(|cs| cs.into_iter().collect::<String>());
    prop_oneof![from_pool, any::<String>()]
}

fn number_literal() -> impl Strategy<Value = Number> {
    (
        any::<bool>(),
        "(0|[1-9][0-9]{0,40})",
        proptest::option::of("[0-9]{1,30}"),
        proptest::option::of((
            prop_oneof![Just("e"), Just("E")],
            prop_oneof![Just(""), Just("+"), Just("-")],
            0u32..900,
        )),
    )
        .prop_map(|(neg, int, frac, exp)| {
            let mut s = String::new();
            if neg {
                s.push('-');
            }
            s.push_str(&int);
            if let Some(f) = frac {
                s.push('.');
                s.push_str(&f);
            }
            if let Some((e, sign, n)) = exp {
                s.push_str(&format!("{e}{sign}{n}"));
            }
            Number::from_str(&s).unwrap_or_else(|_| Number::from(0))
        })
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number_literal().prop_map(Value::Number),
        nasty_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(64, 256, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec((nasty_string(), inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// A random value wrapped in a chain of arrays and objects up to the depth limit, so
/// the deep end of the range is exercised as well as the wide one.
fn deep_value() -> impl Strategy<Value = Value> {
    (
        value(),
        proptest::collection::vec((any::<bool>(), nasty_string()), 0..64),
    )
        .prop_map(|(mut v, wraps)| {
            let room = 64usize.saturating_sub(depth(&v));
            for (is_array, key) in wraps.into_iter().take(room) {
                v = if is_array {
                    json!([v])
                } else {
                    json!({ key: v })
                };
            }
            v
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn safe_writer_round_trips(v in prop_oneof![value(), deep_value()]) {
        prop_assert!(depth(&v) <= 64);
        for text in [to_safe_string(&v), to_safe_string_pretty(&v)] {
            prop_assert_eq!(&parse_strict(text.as_bytes(), &ReadLimits::default()).unwrap(), &v);
            prop_assert_eq!(&serde_json::from_str::<Value>(&text).unwrap(), &v);
            prop_assert!(!text.chars().any(|c| needs_escape(c) && c != '\n'));
            prop_assert!(std::str::from_utf8(text.as_bytes()).is_ok());
        }
        prop_assert!(!to_safe_string(&v).contains('\n'));
    }

    #[test]
    fn strict_reader_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = parse_strict(&bytes, &ReadLimits::default());
    }

    #[test]
    fn strict_agrees_with_serde_on_valid_json(v in value()) {
        let text = serde_json::to_string(&v).unwrap();
        prop_assert_eq!(parse_strict(text.as_bytes(), &ReadLimits::default()).unwrap(), v);
    }
}

#[test]
fn deep_proptest_values_are_readable() {
    // A value at the strict reader's depth limit still reads back through serde_json.
    let mut v = json!("\u{2028}");
    for _ in 0..63 {
        v = json!([v]);
    }
    let text = to_safe_string(&v);
    assert_eq!(strict(&text).unwrap(), v);
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), v);
}
