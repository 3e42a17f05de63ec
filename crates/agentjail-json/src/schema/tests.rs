//! Keyword semantics, failure pointers, refusals and bounds of the schema module.

use super::*;
use serde_json::json;
use std::time::{Duration, Instant};

fn compiled(schema: &Value) -> CompiledSchema {
    compile(schema, &SchemaLimits::default())
        .unwrap_or_else(|e| panic!("{schema} did not compile: {} ({e})", e.what()))
}

fn check(schema: &Value, instance: &Value) -> Result<(), ValidationFailure> {
    compiled(schema).validate(instance, &mut || false)
}

fn refused(schema: &Value) -> String {
    match compile(schema, &SchemaLimits::default()) {
        Ok(_) => panic!("{schema} compiled"),
        Err(e) => e.what(),
    }
}

/// Parse with serde_json (arbitrary_precision keeps the digits).
fn v(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn failure(schema: &Value, instance: &Value) -> (String, &'static str) {
    match check(schema, instance) {
        Err(ValidationFailure::Invalid {
            pointer, keyword, ..
        }) => (pointer, keyword),
        other => panic!("{schema} on {instance}: {other:?}"),
    }
}

/// The first error the jsonschema crate reports, as output.rs turns it into a pointer.
fn jsonschema_pointer(schema: &Value, instance: &Value) -> Option<String> {
    let validator = jsonschema::draft202012::new(schema).ok()?;
    let err = validator.iter_errors(instance).next()?;
    let mut path = err.instance_path().to_string();
    if let jsonschema::error::ValidationErrorKind::Required { property } = err.kind() {
        let prop = property.as_str().map(str::to_string)?;
        crate::strict::push_pointer_token(&mut path, &prop);
    }
    Some(path)
}

/// (schema, instance, valid, compare with the jsonschema crate)
// long because: one row per keyword behaviour, a table reads best in one place.
fn table() -> Vec<(Value, Value, bool, bool)> {
    let props = json!({
        "properties": {"a": {"type": "integer"}},
        "patternProperties": {"^x": {"type": "string"}},
        "additionalProperties": false
    });
    let tuple = json!({"prefixItems": [{"type": "integer"}], "items": {"type": "string"}});
    let tree = json!({
        "$defs": {"node": {"type": "object", "properties": {
            "value": {"type": "integer"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
        "$ref": "#/$defs/node"
    });
    let cond = json!({"if": {"properties": {"k": {"const": "n"}}}, "then": {"required": ["n"]}, "else": {"required": ["s"]}});
    vec![
        (json!({"type": "integer"}), v("1"), true, true),
        (json!({"type": "integer"}), v("1.0"), true, true),
        (json!({"type": "integer"}), v("1.5"), false, true),
        (json!({"type": "integer"}), json!("1"), false, true),
        (json!({"type": ["string", "null"]}), json!(null), true, true),
        (json!({"type": ["string", "null"]}), json!(1), false, true),
        (json!({"type": "number"}), v("1e-400"), true, false),
        (
            json!({"enum": [1, "a", null, {"x": [1]}]}),
            v("1.0"),
            true,
            true,
        ),
        (
            json!({"enum": [1, "a", null, {"x": [1]}]}),
            v(r#"{"x":[1.0]}"#),
            true,
            true,
        ),
        (
            json!({"enum": [1, "a", null, {"x": [1]}]}),
            json!("b"),
            false,
            true,
        ),
        (
            json!({"const": {"a": [1, 2]}}),
            json!({"a": [1, 2]}),
            true,
            true,
        ),
        (
            json!({"const": {"a": [1, 2]}}),
            json!({"a": [2, 1]}),
            false,
            true,
        ),
        (json!({"const": 0}), v("1e-400"), false, false),
        (json!({"minimum": 1, "maximum": 3}), json!(3), true, true),
        (
            json!({"minimum": 1, "maximum": 3}),
            v("3.0000000000000000000001"),
            false,
            false,
        ),
        (json!({"exclusiveMinimum": 1}), json!(1), false, true),
        (json!({"exclusiveMaximum": 1}), v("0.99"), true, true),
        (json!({"multipleOf": 0.01}), v("0.07"), true, false),
        (
            json!({"multipleOf": 2}),
            v("36893488147419103233"),
            false,
            false,
        ),
        (json!({"minLength": 2}), json!("é"), false, true),
        (json!({"minLength": 2}), json!("日本"), true, true),
        (json!({"maxLength": 1}), json!("😀"), true, true),
        (json!({"pattern": "^a+$"}), json!("aaa"), true, true),
        (json!({"pattern": "^a+$"}), json!("ab"), false, true),
        (json!({"pattern": "b"}), json!("abc"), true, true),
        (json!({"pattern": "^a+$"}), json!(5), true, true),
        (tuple.clone(), json!([1, "a"]), true, true),
        (tuple.clone(), json!([1, 2]), false, true),
        (tuple.clone(), json!(["a"]), false, true),
        (tuple, json!([]), true, true),
        (
            json!({"prefixItems": [{}], "items": false}),
            json!([1]),
            true,
            true,
        ),
        (
            json!({"prefixItems": [{}], "items": false}),
            json!([1, 2]),
            false,
            true,
        ),
        (
            json!({"contains": {"type": "integer"}}),
            json!(["a", 1]),
            true,
            true,
        ),
        (
            json!({"contains": {"type": "integer"}}),
            json!(["a"]),
            false,
            true,
        ),
        (
            json!({"contains": {"type": "integer"}, "minContains": 2, "maxContains": 3}),
            json!([1, 2, "a"]),
            true,
            true,
        ),
        (
            json!({"contains": {"type": "integer"}, "minContains": 2, "maxContains": 3}),
            json!([1, "a"]),
            false,
            true,
        ),
        (
            json!({"contains": {"type": "integer"}, "minContains": 2, "maxContains": 3}),
            json!([1, 2, 3, 4]),
            false,
            true,
        ),
        (
            json!({"contains": {"type": "integer"}, "minContains": 0}),
            json!([]),
            true,
            true,
        ),
        (json!({"uniqueItems": true}), v("[1, 1.0]"), false, true),
        (json!({"uniqueItems": true}), json!([[1], [1]]), false, true),
        (
            json!({"uniqueItems": true}),
            json!([{"a": 1, "b": 2}, {"b": 2, "a": 1}]),
            false,
            true,
        ),
        (
            json!({"uniqueItems": true}),
            json!([1, "1", [1], {"1": 1}, true, null]),
            true,
            true,
        ),
        (json!({"uniqueItems": true}), json!([]), true, true),
        (
            json!({"minItems": 1, "maxItems": 2}),
            json!([]),
            false,
            true,
        ),
        (
            json!({"minItems": 1, "maxItems": 2}),
            json!([1, 2, 3]),
            false,
            true,
        ),
        (props.clone(), json!({"a": 1, "x1": "s"}), true, true),
        (props.clone(), json!({"b": 1}), false, true),
        (props, json!({"x1": 1}), false, true),
        (
            json!({"additionalProperties": {"type": "integer"}}),
            json!({"q": "s"}),
            false,
            true,
        ),
        (
            json!({"propertyNames": {"maxLength": 3}}),
            json!({"abc": 1}),
            true,
            true,
        ),
        (
            json!({"propertyNames": {"maxLength": 3}}),
            json!({"abcd": 1}),
            false,
            true,
        ),
        (json!({"required": ["a"]}), json!({}), false, true),
        (json!({"required": ["a"]}), json!([]), true, true),
        (
            json!({"dependentRequired": {"a": ["b"]}}),
            json!({"a": 1}),
            false,
            true,
        ),
        (
            json!({"dependentRequired": {"a": ["b"]}}),
            json!({"b": 1}),
            true,
            true,
        ),
        (
            json!({"dependentSchemas": {"a": {"required": ["b"]}}}),
            json!({"a": 1}),
            false,
            true,
        ),
        (
            json!({"minProperties": 1, "maxProperties": 1}),
            json!({}),
            false,
            true,
        ),
        (
            json!({"minProperties": 1, "maxProperties": 1}),
            json!({"a": 1, "b": 2}),
            false,
            true,
        ),
        (
            json!({"allOf": [{"type": "integer"}, {"minimum": 2}]}),
            json!(1),
            false,
            true,
        ),
        (
            json!({"anyOf": [{"type": "integer"}, {"type": "string"}]}),
            json!("s"),
            true,
            true,
        ),
        (
            json!({"anyOf": [{"type": "integer"}, {"type": "string"}]}),
            json!(null),
            false,
            true,
        ),
        (
            json!({"oneOf": [{"type": "integer"}, {"minimum": 2}]}),
            json!(1),
            true,
            true,
        ),
        (
            json!({"oneOf": [{"type": "integer"}, {"minimum": 2}]}),
            json!(3),
            false,
            true,
        ),
        (
            json!({"oneOf": [{"type": "integer"}, {"minimum": 2}]}),
            json!(1.5),
            false,
            true,
        ),
        (json!({"not": {"type": "string"}}), json!("s"), false, true),
        (cond.clone(), json!({"k": "n", "n": 1}), true, true),
        (cond.clone(), json!({"k": "n", "s": 1}), false, true),
        (cond, json!({"k": "x", "s": 1}), true, true),
        (
            tree.clone(),
            json!({"value": 1, "children": [{"value": 2, "children": []}]}),
            true,
            true,
        ),
        (
            tree,
            json!({"value": 1, "children": [{"value": "x"}]}),
            false,
            true,
        ),
        (
            json!({"$defs": {"a b": {"type": "string"}}, "$ref": "#/$defs/a%20b"}),
            json!(1),
            false,
            true,
        ),
        (
            json!({"definitions": {"a/b": {"type": "string"}}, "$ref": "#/definitions/a~1b"}),
            json!("s"),
            true,
            true,
        ),
        (
            json!({"properties": {"next": {"$ref": "#"}}, "type": "object"}),
            json!({"next": {"next": 1}}),
            false,
            true,
        ),
        (json!(true), json!({"anything": [1]}), true, true),
        (json!(false), json!(null), false, true),
        (
            json!({"format": "email", "title": "t", "description": "d", "default": 1, "examples": [1]}),
            json!("not an email"),
            true,
            true,
        ),
    ]
}

#[test]
fn ordinary_schemas_agree_with_the_table_and_the_jsonschema_crate() {
    for (schema, instance, valid, compare) in table() {
        let got = check(&schema, &instance);
        assert_eq!(got.is_ok(), valid, "{schema} on {instance}: {got:?}");
        if compare {
            let theirs = jsonschema::draft202012::new(&schema)
                .unwrap()
                .is_valid(&instance);
            assert_eq!(
                theirs, valid,
                "jsonschema disagrees on {schema} / {instance}"
            );
        }
    }
}

#[test]
fn failure_pointers_match_the_jsonschema_based_code() {
    let seed = json!({
        "type": "object",
        "required": ["sample_size", "incident_severity"],
        "properties": {
            "sample_size": {"type": "integer", "minimum": 1},
            "incident_severity": {"enum": ["P1", "P2", "P3"]}
        }
    });
    let nested = json!({"properties": {"a": {"properties": {"b": {"type": "string"}}}}});
    let cases = [
        (
            &seed,
            json!({"sample_size": 0, "incident_severity": "P1"}),
            "/sample_size",
            "minimum",
        ),
        (
            &seed,
            json!({"sample_size": 3, "incident_severity": "P0"}),
            "/incident_severity",
            "enum",
        ),
        (
            &seed,
            json!({"sample_size": 3}),
            "/incident_severity",
            "required",
        ),
        (&nested, json!({"a": {"b": 1}}), "/a/b", "type"),
    ];
    for (schema, instance, pointer, keyword) in cases {
        assert_eq!(failure(schema, &instance), (pointer.to_string(), keyword));
        assert_eq!(
            jsonschema_pointer(schema, &instance).as_deref(),
            Some(pointer)
        );
    }
}

#[test]
fn failure_pointers_of_other_keywords() {
    let more = [
        (
            json!({"items": {"type": "integer"}}),
            json!([1, 2, "x"]),
            "/2",
            "type",
        ),
        (
            json!({"additionalProperties": false}),
            json!({"b~/": 1}),
            "/b~0~1",
            "additionalProperties",
        ),
        (
            json!({"dependentRequired": {"a": ["b"]}}),
            json!({"a": 1}),
            "/b",
            "dependentRequired",
        ),
        (
            json!({"uniqueItems": true}),
            json!([1, 2, 1]),
            "",
            "uniqueItems",
        ),
        (
            json!({"properties": {"a": {"items": {"required": ["z"]}}}}),
            json!({"a": [{}, {"q": 1}]}),
            "/a/0/z",
            "required",
        ),
        (
            json!({"propertyNames": {"pattern": "^[a-z]+$"}}),
            json!({"ok": 1, "NO": 2}),
            "/NO",
            "propertyNames",
        ),
        (
            json!({"contains": {"const": 1}}),
            json!([2]),
            "",
            "contains",
        ),
        (
            json!({"anyOf": [{"type": "string"}]}),
            json!({"k": 1}),
            "",
            "anyOf",
        ),
    ];
    for (schema, instance, pointer, keyword) in more {
        assert_eq!(
            failure(&schema, &instance),
            (pointer.to_string(), keyword),
            "{schema}"
        );
    }
}

#[test]
fn the_seed_incident_schema_accepts_the_seed_output_and_names_the_failing_field() {
    let action: Value = v(include_str!("../../../../examples/incident/action.json"));
    let schema = &action["output_schema"];
    let c = compiled(schema);
    let seed = v(
        r#"{"failed_payment_rate":0.03333333333333333,"chargeback_alerts":1,"incident_severity":"P1","eta_minutes":45,"affected_checkout_share":0.03333333333333333,"avg_latency_ms":167.0,"p95_latency_ms":187.0,"sample_size":60,"incident_id":"inc_payments_20260307","region":"US"}"#,
    );
    assert_eq!(c.validate(&seed, &mut || false), Ok(()));
    let mut zero = seed.clone();
    zero["sample_size"] = json!(0);
    let mut p0 = seed.clone();
    p0["incident_severity"] = json!("P0");
    let mut missing = seed.clone();
    if let Some(o) = missing.as_object_mut() {
        o.remove("region");
    }
    for (bad, pointer) in [
        (zero, "/sample_size"),
        (p0, "/incident_severity"),
        (missing, "/region"),
    ] {
        match c.validate(&bad, &mut || false) {
            Err(ValidationFailure::Invalid { pointer: p, .. }) => assert_eq!(p, pointer),
            other => panic!("{other:?}"),
        }
        assert_eq!(jsonschema_pointer(schema, &bad).as_deref(), Some(pointer));
    }
}

#[test]
fn exact_numbers_from_the_review() {
    let odd = v("36893488147419103233"); // 2^65 + 1
    assert_eq!(failure(&json!({"multipleOf": 2}), &odd).1, "multipleOf");
    assert!(check(&json!({"multipleOf": 2}), &v("36893488147419103234")).is_ok());
    assert_eq!(failure(&json!({"const": 0}), &v("1e-400")).1, "const");
    assert_eq!(failure(&json!({"enum": [0]}), &v("1e-400")).1, "enum");
    let max = json!({"maximum": v("9007199254740992")});
    assert_eq!(failure(&max, &v("9007199254740993.0")).1, "maximum");
    assert!(check(&max, &v("9007199254740992.0")).is_ok());
    assert!(check(&json!({"multipleOf": v("0.1")}), &v("0.3")).is_ok());
    assert!(check(&json!({"type": "integer"}), &v("1.0")).is_ok());
    assert!(check(&json!({"type": "integer"}), &v("1e400")).is_ok());
    assert_eq!(
        failure(
            &json!({"type": "integer"}),
            &v("1.0000000000000000000000001")
        )
        .1,
        "type"
    );
    assert!(check(
        &json!({"const": v("123456789012345678901234567890")}),
        &v("1.2345678901234567890123456789e29")
    )
    .is_ok());
    assert!(check(&json!({"multipleOf": v("1e-1000")}), &v("1e1000")).is_ok());
    assert!(check(
        &json!({"uniqueItems": true}),
        &v("[9007199254740993, 9007199254740992]")
    )
    .is_ok());
}

#[test]
// long because: one row per refusal reason, a table reads best in one place.
fn refusals_have_closed_reasons() {
    let long_key = "k".repeat(100);
    let cases: Vec<(Value, &str)> = vec![
        (json!(1), "not_a_schema"),
        (json!("x"), "not_a_schema"),
        (json!([]), "not_a_schema"),
        (json!({"maxium": 3}), "unknown_keyword:maxium"),
        (json!({"a b\u{202e}!": 1}), "unknown_keyword:ab"),
        (json!({"€": 1}), "unknown_keyword:_"),
        (
            json!({ long_key: 1 }),
            "unknown_keyword:kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk",
        ),
        (
            json!({"properties": {"a": {"minimun": 1}}}),
            "unknown_keyword:minimun",
        ),
        (
            json!({"$dynamicRef": "#a"}),
            "unsupported_keyword:$dynamicRef",
        ),
        (
            json!({"unevaluatedProperties": false}),
            "unsupported_keyword:unevaluatedProperties",
        ),
        (json!({"$anchor": "a"}), "unsupported_keyword:$anchor"),
        (
            json!({"properties": {"a": {"$id": "x"}}}),
            "unsupported_keyword:$id",
        ),
        (
            json!({"$schema": "http://json-schema.org/draft-07/schema#"}),
            "unsupported_draft",
        ),
        (json!({"type": "int"}), "invalid_keyword:type"),
        (json!({"type": []}), "invalid_keyword:type"),
        (
            json!({"type": ["string", "string"]}),
            "invalid_keyword:type",
        ),
        (json!({"minimum": "1"}), "invalid_keyword:minimum"),
        (json!({"multipleOf": 0}), "invalid_keyword:multipleOf"),
        (json!({"multipleOf": -1}), "invalid_keyword:multipleOf"),
        (json!({"required": ["a", "a"]}), "invalid_keyword:required"),
        (json!({"items": [{}]}), "invalid_keyword:items"),
        (json!({"allOf": []}), "invalid_keyword:allOf"),
        (json!({"maxLength": -1}), "invalid_keyword:maxLength"),
        (json!({"maxLength": 1.5}), "invalid_keyword:maxLength"),
        (
            json!({"properties": {"a": 1}}),
            "invalid_keyword:properties",
        ),
        (json!({"title": 1}), "invalid_keyword:title"),
        (json!({"enum": 1}), "invalid_keyword:enum"),
        (json!({"$ref": "http://example.com/s.json"}), "bad_ref"),
        (json!({"$ref": "other.json#/a"}), "bad_ref"),
        (json!({"$ref": "#/$defs/missing"}), "bad_ref"),
        (json!({"$ref": "#anchor"}), "bad_ref"),
        (json!({"$ref": "#/%zz"}), "bad_ref"),
        (
            json!({"properties": {"a": {}}, "$ref": "#/properties"}),
            "bad_ref",
        ),
        (json!({"const": {"a": 1}, "$ref": "#/const"}), "bad_ref"),
        (
            json!({"contentSchema": {}, "$ref": "#/contentSchema"}),
            "bad_ref",
        ),
        (json!({"$ref": "#"}), "ref_cycle"),
        (
            json!({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"not": {"$ref": "#/$defs/a"}}}}),
            "ref_cycle",
        ),
        (json!({"pattern": "(a)\\1"}), "pattern"),
        (json!({"pattern": "(?=a)"}), "pattern"),
        (json!({"patternProperties": {"(?<!a)b": {}}}), "pattern"),
        (json!({"pattern": "a".repeat(513)}), "pattern"),
    ];
    for (schema, what) in cases {
        assert_eq!(refused(&schema), what, "{schema}");
    }
    // Suffixes are short and printable.
    let e = compile(&json!({"x\u{85}\n": 1}), &SchemaLimits::default()).unwrap_err();
    assert!(e.what().chars().all(|c| c.is_ascii_graphic()));
    assert!(!e.to_string().contains('\n') && !e.to_string().contains('\u{85}'));
    // Messages say what to send instead.
    let e = compile(&json!({"maxium": 3}), &SchemaLimits::default()).unwrap_err();
    assert!(e.to_string().contains("maximum"), "{e}");
    assert!(e.to_string().contains("supported keywords"), "{e}");
}

#[test]
fn accepted_shapes() {
    for schema in [
        json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://example.com/x"}),
        json!({"$schema": "https://json-schema.org/draft/2020-12/schema#"}),
        json!({"properties": {"next": {"$ref": "#"}}}),
        json!({"items": {"$ref": "#"}}),
        json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"type": "string"}}, "$ref": "#/$defs/a"}),
        json!({"allOf": [{"$ref": "#/allOf/1"}, {"type": "string"}]}),
        json!({"maxLength": 1e300}),
        json!({"maxLength": 2.0}),
        json!({"pattern": "a".repeat(512)}),
        json!({"contentSchema": {"whatever": 1}, "contentMediaType": "application/json"}),
    ] {
        compiled(&schema);
    }
}

fn nest(limit: usize, key: &str) -> Value {
    let mut s = json!({});
    for _ in 0..limit {
        s = json!({ key: s });
    }
    s
}

#[test]
fn size_bounds_are_refused_at_compile() {
    // depth: 32 levels of `not` nest the document 32 deep (accepted), 33 is refused.
    assert!(compile(&nest(31, "not"), &SchemaLimits::default()).is_ok());
    assert_eq!(refused(&nest(32, "not")), "too_deep");
    assert_eq!(refused(&json!({"const": nest(40, "a")})), "too_deep");
    let big: Vec<String> = (0..20_000).map(|i| format!("value{i}")).collect();
    assert_eq!(refused(&json!({ "enum": big })), "too_large");
    let many: serde_json::Map<String, Value> =
        (0..2048).map(|i| (format!("p{i}"), json!({}))).collect();
    assert_eq!(refused(&json!({ "properties": many })), "too_many_nodes");
    let refs: Vec<Value> = (0..129).map(|_| json!({"$ref": "#/$defs/a"})).collect();
    assert_eq!(
        refused(&json!({"$defs": {"a": {}}, "anyOf": refs})),
        "too_many_refs"
    );
    let pats: serde_json::Map<String, Value> =
        (0..65).map(|i| (format!("^p{i}"), json!({}))).collect();
    assert_eq!(
        refused(&json!({ "patternProperties": pats })),
        "too_many_patterns"
    );
}

/// `d0 = oneOf[d1, d1]`, `d1 = oneOf[d2, d2]`, ...: 2^levels evaluations per value.
pub(crate) fn doubling_one_of(levels: usize) -> Value {
    let mut defs = serde_json::Map::new();
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
fn shared_defs_blowup_is_too_complex_at_compile() {
    let t = Instant::now();
    assert_eq!(refused(&doubling_one_of(24)), "too_complex");
    assert!(t.elapsed() < Duration::from_secs(1));
    // 2^9 evaluations per value are within the closure bound, and validates.
    assert!(check(&doubling_one_of(9), &json!(1)).is_ok());
}

/// `n = anyOf[8 × {items: n, contains: const "never"}]`: each branch recurses into every
/// item and then fails, so nested arrays cost 8^depth while the closure stays 9.
fn exponential_over_depth() -> Value {
    let branch = json!({"items": {"$ref": "#/$defs/n"}, "contains": {"const": "never"}});
    json!({"$defs": {"n": {"anyOf": vec![branch; 8]}}, "$ref": "#/$defs/n"})
}

fn nested_arrays(depth: usize) -> Value {
    let mut v = json!([]);
    for _ in 0..depth {
        v = Value::Array(vec![v]); // not json!: it would copy the value every time
    }
    v
}

#[test]
fn work_is_bounded_by_steps_and_interrupt() {
    let c = compiled(&exponential_over_depth());
    let deep = nested_arrays(12);
    let t = Instant::now();
    assert_eq!(
        c.validate(&deep, &mut || false),
        Err(ValidationFailure::Budget)
    );
    // A bound against a hang, not a speed target (a loaded CI host took 6 s once; 8^12
    // steps unbounded would take hours): the budget is what stopped it.
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
    let mut calls = 0;
    let r = c.validate(&deep, &mut || {
        calls += 1;
        calls == 3
    });
    assert_eq!(r, Err(ValidationFailure::Interrupted));
    assert_eq!(calls, 3);
    // A small budget stops early.
    let small = SchemaLimits {
        max_steps: 10,
        ..SchemaLimits::default()
    };
    let c = compile(&json!({"items": {"type": "integer"}}), &small).unwrap();
    assert_eq!(
        c.validate(&json!(vec![1; 20]), &mut || false),
        Err(ValidationFailure::Budget)
    );
}

#[test]
fn recursion_is_capped_not_overflowed() {
    // Far deeper than the strict reader allows: the validator stops with Budget.
    let c = compiled(&json!({"items": {"$ref": "#"}}));
    let deep = nested_arrays(5000);
    assert_eq!(
        c.validate(&deep, &mut || false),
        Err(ValidationFailure::Budget)
    );
    let c = compiled(&json!({"uniqueItems": true}));
    let pair = Value::Array(vec![nested_arrays(4000), nested_arrays(4000)]);
    assert_eq!(
        c.validate(&pair, &mut || false),
        Err(ValidationFailure::Budget)
    );
    // Depth 64 (the strict reader's limit) validates.
    let c = compiled(&json!({"items": {"$ref": "#"}}));
    assert_eq!(c.validate(&nested_arrays(64), &mut || false), Ok(()));
    for v in [deep, pair] {
        drop_iteratively(v);
    }
}

/// Values nested thousands deep would recurse when dropped; take them apart in a loop.
fn drop_iteratively(v: Value) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(a) => stack.extend(a),
            Value::Object(o) => stack.extend(o.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

#[test]
fn unique_items_is_near_linear() {
    let c = compiled(&json!({"uniqueItems": true}));
    let items: Vec<Value> = (0..50_000)
        .map(|i| json!({"id": i, "tag": format!("t{i}")}))
        .collect();
    let t = Instant::now();
    assert_eq!(c.validate(&Value::Array(items), &mut || false), Ok(()));
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

#[test]
fn hostile_patterns_are_linear_or_refused() {
    for p in ["(a+)+$", "(a|aa)*b", "^(a|a?)+$", "(x+x+)+y"] {
        let c = compiled(&json!({ "pattern": p }));
        let text = json!("a".repeat(20_000) + "!");
        let t = Instant::now();
        let _ = c.validate(&text, &mut || false);
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "{p}: {:?}",
            t.elapsed()
        );
    }
    for p in ["(a)\\1", "^(?=(a+))\\1b", "\\k<x>"] {
        assert_eq!(refused(&json!({ "pattern": p })), "pattern");
    }
}
