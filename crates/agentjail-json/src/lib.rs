//! agentjail's JSON: the strict reader and the safe writer ([`strict`], re-exported at the
//! root) and the bounded JSON Schema validator ([`schema`]).
//!
//! Its own crate because it is generic (it knows nothing of jails, policies or records) and
//! because it reads hostile input in the unconfined supervisor: it is fuzzed on its own
//! (fuzz/fuzz_targets/strict_json.rs, schema.rs) and depends on no other agentjail crate
//! (`cargo xtask house`, rule 7, checks the direction).

pub mod schema;
pub mod strict;

pub use strict::{
    needs_escape, parse_strict, push_pointer_token, safe_text, to_safe_string,
    to_safe_string_pretty, JsonError, ReadLimits,
};
