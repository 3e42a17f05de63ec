//! Arbitrary bytes as a schema and an instance (split at the first 0xFF byte, which valid
//! UTF-8 never holds): reading, compiling and validating under a small step budget must
//! return, never panic.
#![no_main]

use agentjail_json::schema::{compile, SchemaLimits};
use agentjail_json::{parse_strict, ReadLimits};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (schema, instance) = match data.iter().position(|&b| b == 0xFF) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b"null"[..]),
    };
    let limits = ReadLimits::default();
    let Ok(schema) = parse_strict(schema, &limits) else {
        return;
    };
    let small = SchemaLimits {
        max_steps: 20_000,
        ..SchemaLimits::default()
    };
    let Ok(compiled) = compile(&schema, &small) else {
        return;
    };
    if let Ok(instance) = parse_strict(instance, &limits) {
        let _ = compiled.validate(&instance, &mut || false);
        let mut polls = 0;
        let _ = compiled.validate(&instance, &mut || {
            polls += 1;
            polls > 3
        });
    }
});
