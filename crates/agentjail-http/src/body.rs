//! A request body's bounds (the routes read it within them: crate::routes) and its strict
//! reading as JSON (agentjail-json: no duplicate key, no trailing bytes), which every
//! route's body reader starts from. A leaf.

use serde_json::{Map, Value};
use std::time::Duration;

/// A request body's most bytes (413 past it).
pub const MAX_BODY_BYTES: usize = agentjail_engine::protocol::MAX_LINE_BYTES;
/// How long a request body may take to arrive (408 past it).
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// The body as one JSON value, read strictly within [`MAX_BODY_BYTES`].
pub fn strict(body: &[u8]) -> Result<Value, String> {
    let limits = agentjail_json::ReadLimits {
        max_bytes: MAX_BODY_BYTES,
        ..Default::default()
    };
    agentjail_json::parse_strict(body, &limits).map_err(|e| e.to_string())
}

/// A strict JSON object body with only `allowed` keys.
pub fn object(v: Value, allowed: &[&str], shape: &str) -> Result<Map<String, Value>, String> {
    let Value::Object(o) = v else {
        return Err(format!("the body is a JSON object: {shape}"));
    };
    if let Some(k) = o.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!(
            "unknown field {}; allowed: {}",
            agentjail_json::safe_text(k, 64),
            allowed.join(", ")
        ));
    }
    Ok(o)
}
