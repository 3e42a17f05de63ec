//! What the program printed: one JSON object, read strictly and validated against the
//! action's schema under a work budget.
//!
//! stdout is hostile input: it is read with the strict reader (a duplicate key, nesting
//! deeper than 64 or a number beyond the exact range is refused, never resolved or rounded)
//! and validated by agentjail's bounded validator, which stops at its step budget and polls
//! `interrupt` (the run's deadline, SIGTERM) while it works.

use crate::verdict::StopReason;
use serde_json::Value;

/// Why the output was refused: the stop reason and a message for the agent.
pub type Refusal = (StopReason, String);

/// Why validation was interrupted, as the interrupt callback decides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// The run's budget (`budget.max_seconds`) ran out.
    Deadline,
    /// agentjail was asked to stop (`interrupted:<signal>`).
    Signal(i32),
}

/// Validate stdout: one JSON object that matches `schema`. `interrupt` is polled while the
/// schema is evaluated and says why to stop, if it should.
pub fn validate(
    stdout: &[u8],
    schema: Option<&Value>,
    interrupt: &mut dyn FnMut() -> Option<Stopped>,
) -> Result<Value, Refusal> {
    let out = |what: &str, message: String| (StopReason::InvalidCodeOutput(what.into()), message);
    let text =
        std::str::from_utf8(stdout).map_err(|_| out("non_json", "stdout is not UTF-8".into()))?;
    let text = text.trim();
    if text.is_empty() {
        return Err(out("empty_stdout", "the program printed nothing".into()));
    }
    let value =
        agentjail_json::parse_strict(text.as_bytes(), &agentjail_json::ReadLimits::default())
            .map_err(|e| {
                let what = match (e.what(), e.pointer()) {
                    ("duplicate_key", Some(p)) => {
                        format!("duplicate_key:{}", p.trim_start_matches('/'))
                    }
                    (w, _) => w.to_string(),
                };
                out(
                    &what,
                    format!("stdout is not one acceptable JSON value: {e}"),
                )
            })?;
    if !value.is_object() {
        return Err(out("not_object", "stdout must be one JSON object".into()));
    }
    if let Some(schema) = schema {
        check_schema(&value, schema, interrupt)?;
    }
    Ok(value)
}

/// The first failure of `value` against `schema`, as a stop reason: the failing field's
/// path without the leading slash (`root` for the whole object); a schema whose evaluation
/// on this output exceeds the step budget is `invalid_action:output_schema:too_complex`.
fn check_schema(
    value: &Value,
    schema: &Value,
    interrupt: &mut dyn FnMut() -> Option<Stopped>,
) -> Result<(), Refusal> {
    use agentjail_json::schema::{compile, SchemaLimits, ValidationFailure};
    let compiled = compile(schema, &SchemaLimits::default()).map_err(|e| {
        let reason = StopReason::InvalidAction(format!("output_schema:{}", e.what()));
        (reason, format!("output_schema is refused: {e}"))
    })?;
    let mut why = None;
    let mut poll = || {
        why = interrupt();
        why.is_some()
    };
    match compiled.validate(value, &mut poll) {
        Ok(()) => Ok(()),
        Err(ValidationFailure::Invalid { pointer, message, .. }) => {
            let field = pointer.trim_start_matches('/');
            let field = if field.is_empty() { "root" } else { field };
            Err((StopReason::InvalidCodeOutput(field.into()), message))
        }
        Err(ValidationFailure::Budget) => Err((
            StopReason::InvalidAction("output_schema:too_complex".into()),
            "evaluating the output_schema on this output exceeded agentjail's work budget; simplify the schema".into(),
        )),
        Err(ValidationFailure::Interrupted) => Err(match why {
            Some(Stopped::Signal(sig)) => (
                StopReason::Interrupted(crate::verdict::signal_name(sig).to_lowercase()),
                "agentjail was asked to stop".into(),
            ),
            _ => (StopReason::MaxSeconds, "the run's time budget ran out during validation".into()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stdout_shapes() {
        assert_eq!(
            validate(b"  \n", None, &mut || None)
                .unwrap_err()
                .0
                .to_string(),
            "invalid_code_output:empty_stdout"
        );
        assert_eq!(
            validate(b"not json", None, &mut || None)
                .unwrap_err()
                .0
                .to_string(),
            "invalid_code_output:non_json"
        );
        assert_eq!(
            validate(b"[1,2]", None, &mut || None)
                .unwrap_err()
                .0
                .to_string(),
            "invalid_code_output:not_object"
        );
        assert_eq!(
            validate(b"{\"a\":1}\n", None, &mut || None).unwrap(),
            json!({"a": 1})
        );
        assert_eq!(
            validate(b"{} {}", None, &mut || None)
                .unwrap_err()
                .0
                .to_string(),
            "invalid_code_output:non_json"
        );
    }

    #[test]
    fn schema_names_the_failing_field() {
        let schema = json!({
            "type": "object",
            "required": ["sample_size", "incident_severity"],
            "properties": {
                "sample_size": {"type": "integer", "minimum": 1},
                "incident_severity": {"enum": ["P1", "P2", "P3"]}
            }
        });
        let bad = br#"{"sample_size": 0, "incident_severity": "P1"}"#;
        assert_eq!(
            validate(bad, Some(&schema), &mut || None)
                .unwrap_err()
                .0
                .to_string(),
            "invalid_code_output:sample_size"
        );
        let bad = br#"{"sample_size": 3, "incident_severity": "P0"}"#;
        assert_eq!(
            validate(bad, Some(&schema), &mut || None)
                .unwrap_err()
                .0
                .to_string(),
            "invalid_code_output:incident_severity"
        );
        let missing = br#"{"sample_size": 3}"#;
        assert_eq!(
            validate(missing, Some(&schema), &mut || None)
                .unwrap_err()
                .0
                .to_string(),
            "invalid_code_output:incident_severity"
        );
        let nested = json!({"properties": {"a": {"properties": {"b": {"type": "string"}}}}});
        assert_eq!(
            validate(br#"{"a": {"b": 1}}"#, Some(&nested), &mut || None)
                .unwrap_err()
                .0
                .to_string(),
            "invalid_code_output:a/b"
        );
    }
}
