//! A bounded JSON Schema validator: a strict subset of draft 2020-12 for `output_schema`.
//!
//! # Why our own validator
//!
//! The agent's `output_schema` is hostile input evaluated in the unconfined supervisor. With
//! the jsonschema crate, an adversarial review found: 20 nested `oneOf` sharing `$defs`
//! (doubling per level) used 1.35 GB; backreference-heavy `pattern`s hung for 45 s+; a
//! 200 000-step `$ref` chain compiled quadratically for 40 s at 380 MB; numbers were
//! compared through f64 (an odd integer above 2^64 passed `multipleOf 2`). This module
//! trades breadth for guarantees:
//!
//! * **bounded work**: every bound below is checked before the work it bounds; validation
//!   counts steps and stops with [`ValidationFailure::Budget`], and polls an interrupt;
//! * **bounded memory**: no error trees (`anyOf`/`oneOf`/`not`/`if` evaluate branches as
//!   booleans; only the first failure is reported), `$ref`s are node indices (never copied
//!   or inlined), so memory is the compiled schema plus the validator's recursion, which is
//!   bounded by instance depth times in-place nesting and capped ([`MAX_EVAL_DEPTH`]);
//!   `uniqueItems` adds one hash and index per array element;
//! * **exact numbers**: decimal arithmetic on the literal digits, never f64;
//! * **no remote references**: `$ref` resolves local JSON pointers only, nothing is fetched;
//! * **strict keywords**: an unknown keyword is refused, so a typo like `maxium` can never
//!   silently drop a bound; what is not supported is refused rather than ignored;
//! * **linear-time patterns**: see [`pattern`](self::pattern).
//!
//! # Supported keywords
//!
//! `$schema` (the 2020-12 URI only), `$id` (root only, an ignored annotation: never
//! fetched), `$ref` (`#`, `#/$defs/...`, `#/definitions/...`, any `#/...` pointer to a
//! subschema of this document, percent-decoded then RFC 6901), `$defs`, `definitions`,
//! `$comment`; applicators `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`,
//! `dependentSchemas`, `prefixItems`, `items`, `contains` (+ `minContains`,
//! `maxContains`), `properties`, `patternProperties`, `additionalProperties`,
//! `propertyNames`; assertions `type` (`integer` = any number with a zero fractional part,
//! decided exactly), `enum`, `const` (JSON equality: `1 == 1.0`), `multipleOf` (> 0),
//! `maximum`, `exclusiveMaximum`, `minimum`, `exclusiveMinimum`, `maxLength`/`minLength`
//! (Unicode code points), `pattern`, `maxItems`, `minItems`, `uniqueItems`,
//! `maxProperties`, `minProperties`, `required`, `dependentRequired`; boolean schemas.
//! Annotations accepted and ignored on purpose: `title`, `description`, `default`,
//! `examples`, `deprecated`, `readOnly`, `writeOnly`, `format` (annotation only, as
//! 2020-12's default vocabulary says), `contentEncoding`, `contentMediaType`,
//! `contentSchema` (not compiled, so not a `$ref` target).
//!
//! Refused as `unsupported_keyword:<kw>`: `$dynamicRef`, `$dynamicAnchor`, `$anchor`,
//! `$recursiveRef`, `$vocabulary`, `unevaluatedProperties`, `unevaluatedItems`, and `$id`
//! below the root (each changes how references or evaluation work across the document).
//! Any other key in a schema object is `unknown_keyword:<kw>`.
//!
//! # Bounds ([`SchemaLimits`], defaults in brackets)
//!
//! * `max_bytes` [64 KiB]: the schema serialized compactly. Real output schemas are a few
//!   KiB; this also bounds everything proportional to the document.
//! * `max_depth` [32]: JSON nesting of the whole schema document (arrays and objects,
//!   including `const`/`enum` values). Bounds the compiler's recursion and makes a deep
//!   `const` cheap to compare.
//! * `max_nodes` [2048]: subschemas (each object or boolean in a schema position).
//! * `max_refs` [128]: `$ref` keywords. A 200 000-step chain is refused long before.
//! * `max_patterns` [64] and `max_pattern_chars` [512]: `pattern` plus `patternProperties`
//!   keys; each compiles to at most 256 KiB of program and 256 KiB of DFA cache.
//! * `max_in_place_closure` [4096]: subschema evaluations one instance value can cost
//!   through `$ref` and in-place applicators, computed statically with memoisation.
//!   Sharing `$defs` makes this grow exponentially with nesting (24 levels of `oneOf` over
//!   the same definition are 2^24 evaluations per value); such a schema is refused as
//!   `too_complex` at compile time. A cycle made only of in-place applicators is
//!   `ref_cycle` (it would recurse forever on one value); cycles through `properties`,
//!   `items`, ... are fine, as they consume instance depth.
//! * `max_steps` [2 000 000]: validation work units: one per keyword evaluated, per element
//!   compared (`enum`, `const`, `uniqueItems`), and per 64 bytes × NFA states scanned by a
//!   pattern (its worst case). About 0.1 s of work in a release build; past it, `Budget`.
//!   The interrupt callback is polled every 1024 steps. A number literal longer than 4096
//!   characters (the strict reader allows 256) is beyond this bound too: `Budget`.
//!
//! The instance is expected to come from [`crate::parse_strict`] (depth ≤ 64, numbers ≤ 256
//! characters, no duplicate keys); any `Value` is handled safely, deeper ones end in
//! `Budget` at the recursion cap.

mod bounds;
mod compile;
mod number;
pub mod pattern;
mod validate;

use serde_json::Value;
use std::fmt;

pub use compile::SUPPORTED as SUPPORTED_KEYWORDS;
pub use number::Decimal;

/// Deepest recursion of the validator (subschema applications on the stack at once). The
/// strict reader bounds instance depth at 64 and in-place nesting is bounded by the
/// schema's depth and refs; past this, validation stops with `Budget` instead of
/// exhausting the stack (which also grows on the heap as needed, via `stacker`).
pub const MAX_EVAL_DEPTH: usize = 2048;

/// Hard bounds on a schema and on the work of validating against it. See the module docs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaLimits {
    pub max_bytes: usize,
    pub max_depth: usize,
    pub max_nodes: usize,
    pub max_refs: usize,
    pub max_patterns: usize,
    pub max_pattern_chars: usize,
    pub max_in_place_closure: usize,
    pub max_steps: u64,
}

impl Default for SchemaLimits {
    /// Generous for real output schemas, small enough that compiling and validating cost
    /// milliseconds and a few MiB at most (module docs say why each).
    fn default() -> Self {
        SchemaLimits {
            max_bytes: 64 * 1024,
            max_depth: 32,
            max_nodes: 2048,
            max_refs: 128,
            max_patterns: 64,
            max_pattern_chars: 512,
            max_in_place_closure: 4096,
            max_steps: 2_000_000,
        }
    }
}

/// Why a schema was refused. [`SchemaError::what`] is a stop-reason suffix from a closed
/// set; Display is a sentence telling the agent what to send instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    what: String,
    message: String,
}

impl SchemaError {
    fn new(what: impl Into<String>, message: impl Into<String>) -> Self {
        SchemaError {
            what: what.into(),
            message: message.into(),
        }
    }

    /// `invalid_keyword:<kw>` for a known keyword with a value of the wrong type or range.
    fn invalid(kw: &str, here: &str, why: &str) -> Self {
        let kw = compile::sanitize_keyword(kw);
        let place = crate::strict::safe_text(here, 120);
        SchemaError::new(
            format!("invalid_keyword:{kw}"),
            format!("output_schema keyword {kw} at \"{place}\" {why}"),
        )
    }

    /// One of `not_a_schema`, `too_large`, `too_deep`, `too_many_nodes`, `too_many_refs`,
    /// `too_many_patterns`, `too_complex`, `ref_cycle`, `bad_ref`, `pattern`,
    /// `unsupported_draft`, `unsupported_keyword:<kw>`, `unknown_keyword:<kw>`,
    /// `invalid_keyword:<kw>` (kw: `[A-Za-z0-9_$-]`, at most 32 characters).
    pub fn what(&self) -> String {
        self.what.clone()
    }
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SchemaError {}

/// Why an instance did not validate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValidationFailure {
    /// The first failing assertion. `pointer` is the RFC 6901 pointer of the failing value
    /// (for `required` and `dependentRequired`, of the missing property). `message` may
    /// quote instance text: print it with the json module's safe writers.
    Invalid {
        pointer: String,
        keyword: &'static str,
        message: String,
    },
    /// `max_steps` work units were spent (or the recursion cap was reached).
    Budget,
    /// The interrupt callback asked to stop.
    Interrupted,
}

/// A schema that passed every bound, ready to validate many instances.
#[derive(Debug, Clone)]
pub struct CompiledSchema {
    nodes: Vec<compile::Node>,
    root: usize,
    max_steps: u64,
}

/// Compile `schema` under `limits`: bounds first, then keywords, `$ref`s, and the in-place
/// closure. Time and memory are linear in the schema's size.
pub fn compile(schema: &Value, limits: &SchemaLimits) -> Result<CompiledSchema, SchemaError> {
    if !schema.is_object() && !schema.is_boolean() {
        return Err(SchemaError::new(
            "not_a_schema",
            "output_schema must be a JSON Schema object or a boolean",
        ));
    }
    let too_large = || {
        SchemaError::new(
            "too_large",
            format!(
                "output_schema is larger than {} bytes serialized; send a smaller schema",
                limits.max_bytes
            ),
        )
    };
    match bounds::shape(schema, limits.max_depth, limits.max_bytes) {
        bounds::Shape::TooDeep => {
            return Err(SchemaError::new(
                "too_deep",
                format!(
                    "output_schema nests deeper than {} levels of arrays and objects; send a flatter schema (use $defs and $ref)",
                    limits.max_depth
                ),
            ))
        }
        bounds::Shape::TooLarge => return Err(too_large()),
        bounds::Shape::Ok => {}
    }
    if bounds::serialized_exceeds(schema, limits.max_bytes) {
        return Err(too_large());
    }
    let mut compiler = compile::Compiler::new(schema, limits);
    let root = compiler.run()?;
    let nodes = std::mem::take(&mut compiler.nodes);
    match bounds::in_place_closure(&nodes) {
        Err(_) => Err(SchemaError::new(
            "ref_cycle",
            "output_schema has a $ref cycle through in-place keywords only ($ref, allOf, anyOf, \
             oneOf, not, if/then/else, dependentSchemas): it would apply itself to the same \
             value forever; recurse only through properties, items or similar",
        )),
        Ok(closure) if closure > limits.max_in_place_closure as u64 => Err(SchemaError::new(
            "too_complex",
            format!(
                "output_schema can apply more than {} subschemas to a single value through \
                 $ref and allOf/anyOf/oneOf/not/if/then/else/dependentSchemas (shared $defs \
                 multiply); send a simpler schema",
                limits.max_in_place_closure
            ),
        )),
        Ok(_) => Ok(CompiledSchema {
            nodes,
            root,
            max_steps: limits.max_steps,
        }),
    }
}

impl CompiledSchema {
    /// Validate `instance`. Stops at the first failure, at `max_steps` work units, or when
    /// `interrupt()` (polled every 1024 steps) returns true. Never panics, never recurses
    /// past [`MAX_EVAL_DEPTH`].
    pub fn validate(
        &self,
        instance: &Value,
        interrupt: &mut dyn FnMut() -> bool,
    ) -> Result<(), ValidationFailure> {
        validate::run(&self.nodes, self.root, self.max_steps, instance, interrupt)
    }
}

#[cfg(test)]
mod tests;
