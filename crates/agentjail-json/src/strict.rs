//! Strict JSON in, safe JSON out.
//!
//! # Why a reader of our own
//!
//! Actions and program output are hostile input, and serde_json's reader is built for
//! friendly input: the last copy of a duplicated key silently wins (a second
//! `policy_hints` removed a timeout, a second `output_schema` removed a `maximum`), and its
//! recursion limit (128) is the only depth bound. [`parse_strict`] reads RFC 8259 exactly
//! and refuses what a reviewer could miss:
//!
//! * duplicate keys in any object, compared after unescaping (`"a"` and `"\u0061"` are the
//!   same key), reported with the RFC 6901 pointer of the duplicated member;
//! * nesting deeper than [`ReadLimits::max_depth`];
//! * number literals that would make exact arithmetic expensive (too many characters, or a
//!   decimal exponent far out of range). Nothing is ever rounded: numbers are kept as the
//!   literal text (serde_json's `arbitrary_precision`), so a payload integer
//!   `123456789012345678901234567890` reaches the program with the same digits. The only
//!   change serde_json makes is to spell an exponent `e+N`/`e-N` (`1E2` is kept as `1e+2`);
//!   the digits are never touched;
//! * more than [`ReadLimits::max_bytes`] of input, or a parsed value estimated above
//!   [`ReadLimits::max_memory`] (serde_json values are up to ~100 times their text).
//!
//! The reader is iterative (an explicit stack, no recursion), so no input can overflow the
//! stack whatever the limits. Time is linear in the input apart from the duplicate-key
//! lookups (a B-tree: O(n log n) in the members of one object).
//!
//! # Why a writer of our own
//!
//! Records repeat what jailed code printed. serde_json escapes only `"`, `\` and C0
//! controls, so C1 controls (NEL U+0085), U+2028/U+2029 and bidi overrides reached the
//! printed record raw: line-based readers split one audit-log line into several, and a
//! terminal showed text in an order other than the bytes'. [`to_safe_string`] writes the
//! same JSON but escapes every character in [`needs_escape`] as `\uXXXX`, so the text is
//! plain printable UTF-8 that every JSON parser reads back to the same value.

mod read;
mod write;

pub use read::parse_strict;
pub use write::{needs_escape, safe_text, to_safe_string, to_safe_string_pretty};

use std::fmt;

/// Bounds for [`parse_strict`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadLimits {
    /// Deepest nesting of arrays and objects; the top-level container is depth 1.
    pub max_depth: usize,
    /// Largest input accepted, in bytes.
    pub max_bytes: usize,
    /// Longest number literal accepted, in characters.
    pub max_number_chars: usize,
    /// Largest magnitude of a number's normalised decimal exponent (the power of ten of its
    /// most significant digit): `1e1000` passes at the default, `1e1001` does not.
    pub max_exponent: u32,
    /// Largest estimated heap size of the parsed value, in bytes. serde_json's `Value` is
    /// far larger than its text: `{"a":0}` (7 bytes) becomes a B-tree node, a key and a
    /// number string of ~700 bytes, so 16 MiB of such text took 1.5 GB. The estimate
    /// (see `Parser::charge`) stops the reader before the supervisor pays for that.
    pub max_memory: usize,
}

impl Default for ReadLimits {
    /// Depth 64: every record agentjail writes nests an agent's or program's value at most a
    /// few levels below its top, so values accepted at depth ≤ 64 give records ≤ ~70 levels,
    /// which serde_json (recursion limit 128), Python's `json` and JavaScript's `JSON.parse`
    /// all read back. 16 MiB is the action size cap. 256 characters and exponents within
    /// ±1000 cover every number a real program prints, and keep exact decimal arithmetic on
    /// the literal (schema `multipleOf`, `maximum`, ...) cheap. 128 MiB of parsed value
    /// holds ordinary records of about 11 MiB of text (ten times the default payload cap).
    fn default() -> Self {
        ReadLimits {
            max_depth: 64,
            max_bytes: 16 * 1024 * 1024,
            max_number_chars: 256,
            max_exponent: 1000,
            max_memory: 128 * 1024 * 1024,
        }
    }
}

/// Why [`parse_strict`] refused its input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonError {
    /// Not RFC 8259 JSON (or not UTF-8). Line and column are 1-based; the column counts
    /// characters.
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    /// A key appears twice in one object; `pointer` names the second copy.
    DuplicateKey { pointer: String },
    /// An array or object at `pointer` would nest deeper than `limit`.
    TooDeep { pointer: String, limit: usize },
    /// The number at `pointer` is too long or its exponent is out of range.
    NumberOutOfRange { pointer: String },
    /// The input is longer than `limit` bytes.
    TooLarge { limit: usize },
    /// The parsed value would take more than `limit` bytes of memory (estimated).
    TooMuchMemory { limit: usize },
}

impl JsonError {
    /// A short fixed token for stop reasons (`invalid_action:<what>`).
    pub fn what(&self) -> &'static str {
        match self {
            JsonError::Syntax { .. } => "non_json",
            JsonError::DuplicateKey { .. } => "duplicate_key",
            JsonError::TooDeep { .. } => "too_deep",
            JsonError::NumberOutOfRange { .. } => "number_out_of_range",
            JsonError::TooLarge { .. } | JsonError::TooMuchMemory { .. } => "too_large",
        }
    }

    /// The RFC 6901 pointer of the offending value, when the error has one. It may contain
    /// any character the input had: print it with [`safe_text`] or [`to_safe_string`].
    pub fn pointer(&self) -> Option<&str> {
        match self {
            JsonError::DuplicateKey { pointer }
            | JsonError::TooDeep { pointer, .. }
            | JsonError::NumberOutOfRange { pointer } => Some(pointer),
            JsonError::Syntax { .. }
            | JsonError::TooLarge { .. }
            | JsonError::TooMuchMemory { .. } => None,
        }
    }
}

/// Pointers are echoed to humans: keep them one short printable line.
fn shown_pointer(p: &str) -> String {
    if p.is_empty() {
        "the top level".to_string()
    } else {
        format!("\"{}\"", safe_text(p, 120))
    }
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonError::Syntax {
                line,
                column,
                message,
            } => write!(
                f,
                "not valid JSON at line {line}, column {column}: {}",
                safe_text(message, 200)
            ),
            JsonError::DuplicateKey { pointer } => write!(
                f,
                "duplicate key at {}: send each key once per object",
                shown_pointer(pointer)
            ),
            JsonError::TooDeep { pointer, limit } => write!(
                f,
                "the value at {} nests deeper than {limit} levels of arrays and objects",
                shown_pointer(pointer)
            ),
            JsonError::NumberOutOfRange { pointer } => write!(
                f,
                "the number at {} is too long or its exponent is out of range; \
                 send at most 256 characters and an exponent within ±1000",
                shown_pointer(pointer)
            ),
            JsonError::TooLarge { limit } => {
                write!(f, "the JSON text is larger than {limit} bytes")
            }
            JsonError::TooMuchMemory { limit } => write!(
                f,
                "the JSON value would take more than {} MiB of memory once parsed; \
                 send fewer, larger values",
                limit / (1024 * 1024)
            ),
        }
    }
}

impl std::error::Error for JsonError {}

/// Append one RFC 6901 reference token (`~` → `~0`, `/` → `~1`).
pub fn push_pointer_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    for c in token.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

#[cfg(test)]
mod tests;
