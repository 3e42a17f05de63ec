//! Arbitrary text as JavaScript source: the static check must return, never panic or overflow.
#![no_main]

use agentjail_check::javascript::{check_source, JsRules};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(code) = std::str::from_utf8(data) {
        let _ = check_source(code, &JsRules::default());
        // The permissive knobs walk other paths (computed keys, URLs).
        let loose = JsRules {
            allow_computed_member: true,
            deny_url_literals: false,
            max_input_reads: 3,
            ..JsRules::default()
        };
        let _ = check_source(code, &loose);
    }
});
