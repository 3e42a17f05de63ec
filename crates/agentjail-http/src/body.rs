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
pub fn strict(body: &[u8]) -> Result<Value, agentjail_json::JsonError> {
    let limits = agentjail_json::ReadLimits {
        max_bytes: MAX_BODY_BYTES,
        ..Default::default()
    };
    agentjail_json::parse_strict(body, &limits)
}

/// Why a JSON body is not the object a route reads. `Display` is the 4xx message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectError {
    /// Not an object; `shape` is what the route takes.
    NotObject { shape: String },
    /// A key outside `allowed` (the key as sent; shown shortened and escaped).
    UnknownField { field: String, allowed: Vec<String> },
}

impl std::fmt::Display for ObjectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ObjectError::NotObject { shape } => write!(f, "the body is a JSON object: {shape}"),
            ObjectError::UnknownField { field, allowed } => write!(
                f,
                "unknown field {}; allowed: {}",
                agentjail_json::safe_text(field, 64),
                allowed.join(", ")
            ),
        }
    }
}

impl std::error::Error for ObjectError {}

/// A strict JSON object body with only `allowed` keys.
pub fn object(v: Value, allowed: &[&str], shape: &str) -> Result<Map<String, Value>, ObjectError> {
    let Value::Object(o) = v else {
        return Err(ObjectError::NotObject {
            shape: shape.into(),
        });
    };
    if let Some(k) = o.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(ObjectError::UnknownField {
            field: k.clone(),
            allowed: allowed.iter().map(|a| a.to_string()).collect(),
        });
    }
    Ok(o)
}
