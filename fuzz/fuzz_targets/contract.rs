//! Arbitrary bytes as an action: parse_action must return Ok or a reason, never panic;
//! when it accepts, the checker must not panic on the result either.
#![no_main]

use agentjail_engine::contract::check_action;
use agentjail_engine::contract::{apply_hints, parse_action};
use agentjail_engine::policy::Policy;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let policy = Policy::default();
    if let Ok(action) = parse_action(data, &policy) {
        let effective = match &action.policy_hints {
            Some(h) => apply_hints(&policy, h).0,
            None => policy,
        };
        let _ = check_action(&action, &effective);
    }
});
