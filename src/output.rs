//! What the program printed: one JSON object, validated against the action's schema.
//! Also: turning a Python traceback into (type, message, line, column) for the record.

use serde::Serialize;
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

/// A Python exception as the agent needs it to fix its code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PyError {
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
    pub line: Option<u32>,
    pub column: Option<u32>,
}

/// Parse the last traceback in `stderr` for frames in `script` (the jail path).
pub fn parse_traceback(stderr: &str, script: &str) -> Option<PyError> {
    let lines: Vec<&str> = stderr.lines().collect();
    let needle = format!("File \"{script}\", line ");
    let mut line_no = None;
    let mut frame_idx = None;
    for (i, l) in lines.iter().enumerate() {
        if let Some(pos) = l.find(&needle) {
            let rest = &l[pos + needle.len()..];
            let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            line_no = digits.parse().ok();
            frame_idx = Some(i);
        }
    }
    // The exception line is the last non-indented line with a type name.
    let last = lines
        .iter()
        .rev()
        .find(|l| !l.starts_with(' ') && !l.trim().is_empty())?;
    let (kind, message) = match last.split_once(": ") {
        Some((k, m)) => (k.trim(), m.trim()),
        None => (last.trim(), ""),
    };
    let is_type = !kind.is_empty()
        && kind
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.');
    if !is_type {
        return None;
    }
    // Syntax errors point at the column with a caret under the source line.
    let mut column = None;
    if let Some(fi) = frame_idx {
        if let (Some(src), Some(caret)) = (lines.get(fi + 1), lines.get(fi + 2)) {
            if caret.trim_start().starts_with('^') {
                let src_indent = src.len() - src.trim_start().len();
                let caret_col = caret.find('^').unwrap_or(0);
                let offset_in_src = caret_col.saturating_sub(src_indent);
                // the displayed line is dedented; the original indentation is unknown here,
                // so report the column within the stripped line (1-based)
                column = Some(offset_in_src as u32 + 1);
            }
        }
    }
    Some(PyError {
        kind: kind.to_string(),
        message: message.to_string(),
        line: line_no,
        column,
    })
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

    #[test]
    fn traceback_runtime_error() {
        let tb = "Traceback (most recent call last):\n  File \"/app/main.py\", line 3, in <module>\n    x = 1/0\n        ~^~\nZeroDivisionError: division by zero\n";
        let e = parse_traceback(tb, "/app/main.py").unwrap();
        assert_eq!(e.kind, "ZeroDivisionError");
        assert_eq!(e.message, "division by zero");
        assert_eq!(e.line, Some(3));
    }

    #[test]
    fn traceback_syntax_error() {
        let tb = "  File \"/app/main.py\", line 2\n    x = (1,\n        ^\nSyntaxError: '(' was never closed\n";
        let e = parse_traceback(tb, "/app/main.py").unwrap();
        assert_eq!(e.kind, "SyntaxError");
        assert_eq!(e.line, Some(2));
        assert_eq!(e.column, Some(5));
    }

    #[test]
    fn garbage_is_not_a_traceback() {
        assert_eq!(parse_traceback("", "/app/main.py"), None);
        assert_eq!(
            parse_traceback("hello world: it broke\n", "/app/main.py"),
            None
        );
    }
}
