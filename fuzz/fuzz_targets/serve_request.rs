//! Arbitrary bytes as one `agentjail serve` request line: parse_request must return a
//! request or a protocol error, never panic; an error's response must serialise to a single
//! line (a client reads one JSON object per line) that echoes only an id that was valid; a
//! run or check request's action must go through the contract and the check without panic.
#![no_main]

use agentjail_engine::contract::check_action;
use agentjail_engine::contract::parse_action;
use agentjail_engine::policy::Policy;
use agentjail_engine::protocol::{error_response, parse_request, Op, MAX_ID_CHARS};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn id_ok(id: &Value) -> bool {
    match id {
        Value::Null | Value::Number(_) => true,
        Value::String(s) => s.chars().count() <= MAX_ID_CHARS,
        _ => false,
    }
}

fuzz_target!(|data: &[u8]| {
    match parse_request(data) {
        Err(e) => {
            assert!(id_ok(&e.id), "an error echoes an id it refused: {:?}", e.id);
            let line = serde_json::to_string(&error_response(&e)).unwrap();
            assert!(!line.contains('\n'), "a response is one line");
        }
        Ok(r) => {
            assert!(
                id_ok(&r.id),
                "a request carries an id it should refuse: {:?}",
                r.id
            );
            if let Op::Run { action, .. } | Op::Check { action } = &r.op {
                let policy = Policy::default();
                if let Ok(a) = parse_action(action, &policy) {
                    let _ = check_action(&a, &policy);
                }
            }
        }
    }
});
