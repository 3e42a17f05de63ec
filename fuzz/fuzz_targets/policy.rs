//! Arbitrary text as a policy file: loading must succeed or fail with an error, never panic.
//! (Uses serde via toml::from_str until policy.rs grows a loader with its own checks.)
#![no_main]

use agentjail::policy::Policy;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(policy) = toml::from_str::<Policy>(text) {
            let _ = toml::to_string(&policy);
        }
    }
});
