//! Arbitrary bytes into the strict reader: it must accept or refuse, never panic; whatever it
//! accepts, the safe writers must print as text the reader reads back to the same value.
#![no_main]

use agentjail_json::{
    needs_escape, parse_strict, to_safe_string, to_safe_string_pretty, ReadLimits,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = ReadLimits::default();
    if let Ok(value) = parse_strict(data, &limits) {
        let compact = to_safe_string(&value);
        assert!(!compact.contains('\n'));
        assert!(!compact.chars().any(needs_escape));
        assert_eq!(
            parse_strict(compact.as_bytes(), &limits).ok(),
            Some(value.clone())
        );
        let pretty = to_safe_string_pretty(&value);
        assert_eq!(parse_strict(pretty.as_bytes(), &limits).ok(), Some(value));
    }
});
