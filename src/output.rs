//! What the program printed: one JSON object, validated against the action's schema.

use serde_json::Value;

/// Validate stdout. Err is the suffix of `invalid_code_output:<what>`: `empty_stdout`,
/// `non_json`, `not_object`, or the failing field's path without the leading slash.
pub fn validate(stdout: &[u8], schema: Option<&Value>) -> Result<Value, (String, String)> {
    let text = std::str::from_utf8(stdout)
        .map_err(|_| ("non_json".to_string(), "stdout is not UTF-8".to_string()))?;
    let text = text.trim();
    if text.is_empty() {
        return Err(("empty_stdout".into(), "the program printed nothing".into()));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| {
        (
            "non_json".to_string(),
            format!("stdout is not one JSON value: {e}"),
        )
    })?;
    if !value.is_object() {
        return Err(("not_object".into(), "stdout must be one JSON object".into()));
    }
    if let Some(schema) = schema {
        let validator = jsonschema::draft202012::new(schema).map_err(|e| {
            (
                "schema".to_string(),
                format!("the output_schema does not compile: {e}"),
            )
        })?;
        let first = validator.iter_errors(&value).next().map(|err| {
            let path = err.instance_path().to_string();
            let mut field = path.trim_start_matches('/').to_string();
            if let jsonschema::error::ValidationErrorKind::Required { property } = err.kind() {
                let prop = property
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| property.to_string());
                field = if field.is_empty() {
                    prop
                } else {
                    format!("{field}/{prop}")
                };
            }
            if field.is_empty() {
                field = "root".into();
            }
            (field, err.to_string())
        });
        if let Some(e) = first {
            return Err(e);
        }
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stdout_shapes() {
        assert_eq!(validate(b"  \n", None).unwrap_err().0, "empty_stdout");
        assert_eq!(validate(b"not json", None).unwrap_err().0, "non_json");
        assert_eq!(validate(b"[1,2]", None).unwrap_err().0, "not_object");
        assert_eq!(validate(b"{\"a\":1}\n", None).unwrap(), json!({"a": 1}));
        assert_eq!(validate(b"{} {}", None).unwrap_err().0, "non_json");
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
        assert_eq!(validate(bad, Some(&schema)).unwrap_err().0, "sample_size");
        let bad = br#"{"sample_size": 3, "incident_severity": "P0"}"#;
        assert_eq!(
            validate(bad, Some(&schema)).unwrap_err().0,
            "incident_severity"
        );
        let missing = br#"{"sample_size": 3}"#;
        assert_eq!(
            validate(missing, Some(&schema)).unwrap_err().0,
            "incident_severity"
        );
        let nested = json!({"properties": {"a": {"properties": {"b": {"type": "string"}}}}});
        assert_eq!(
            validate(br#"{"a": {"b": 1}}"#, Some(&nested))
                .unwrap_err()
                .0,
            "a/b"
        );
    }
}
