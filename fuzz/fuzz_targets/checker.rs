//! Arbitrary text as Python source: the static check must return, never panic or overflow.
#![no_main]

use agentjail_check::python::check_source;
use agentjail_engine::policy::Policy;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(code) = std::str::from_utf8(data) {
        let policy = Policy::default();
        let _ = check_source(code, &policy.check);
    }
});
