//! Arbitrary text as a policy file: the strict loader (parse, validate, locate the key) must
//! accept or refuse it with an error, never panic; an accepted policy must show and lint.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(loaded) = agentjail_engine::policy::load_str(text, "fuzz.toml") {
            let _ = agentjail_engine::policy::show(&loaded);
            let _ = agentjail_engine::policy::lint(&loaded.policy);
        }
    }
});
