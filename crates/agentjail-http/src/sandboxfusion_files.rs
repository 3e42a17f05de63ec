//! `/run_code`'s `files` and `fetch_files`, where SandboxFusion puts and finds them.
//!
//! SandboxFusion writes `files[NAME]` at `os.path.join(cwd, NAME)`: a relative name in the
//! program's working directory, an absolute one at that very path; it reads `fetch_files`
//! back from the same place. Here the working directory is `/app/out` and the rest of the
//! root is read-only, so:
//!
//! | `files` name         | the file                      | also at (a read-only symlink) |
//! |----------------------|-------------------------------|-------------------------------|
//! | `NAME`, `./NAME`     | `/app/in/NAME`                | `/app/out/NAME` (the cwd)     |
//! | `/app/out/NAME`      | `/app/in/NAME`                | `/app/out/NAME`               |
//! | `/app/in/NAME`       | `/app/in/NAME`                | —                             |
//! | `/tmp/NAME`          | `/app/in/tmp/NAME`            | `/tmp/NAME`                   |
//! | any other absolute   | refused: 400 `path_not_offered` |                             |
//!
//! A name with a `..`, `.` or empty component, a control character or a backslash, or over
//! the length caps is a 400 `path_invalid` (SandboxFusion would write it outside its
//! directory: never here); two names that land on one file, or one beneath the other, a
//! 400 `path_conflict`. Anything else the action contract refuses (too many, too large)
//! comes back as the record's `invalid_action:files:*`.
//!
//! `fetch_files`: a name is looked up as SandboxFusion does (joined to the working
//! directory, `.` and `..` resolved) among the files the program left in `/app/out` (the
//! record's artifacts). Those that come back are in `files` by the name asked; the others
//! are named in `missing_files`, and `missing_reasons` says why for each: `not_found`,
//! `outside_working_directory` (only `/app/out` is collected), `not_inline` (larger than
//! `artifacts.inline_max_bytes`), or the collector's own reason for a file it skipped
//! (`symlink` — an input file's link, unless the program wrote the file anew —,
//! `too_large`, `over_budget`, `not_regular`, `hardlink`, `bad_name`).

use agentjail_engine::contract::file_path_problem;
use serde_json::{json, Map, Value};

const OUT: &str = "/app/out/";
const IN: &str = "/app/in/";
const TMP: &str = "/tmp/";

/// Where a `files` name lands: the path beneath /app/in and the link, if any; or the refusal's
/// detail type and why.
fn place(name: &str) -> Result<(String, Option<String>), (&'static str, String)> {
    let (rel, under) = if let Some(r) = name.strip_prefix(OUT) {
        (r, Some(OUT))
    } else if let Some(r) = name.strip_prefix(IN) {
        (r, None)
    } else if let Some(r) = name.strip_prefix(TMP) {
        (r, Some(TMP))
    } else if name.starts_with('/') {
        return Err(("path_not_offered", format!(
            "{name:?} is outside what this jail offers (its root is read-only): a file lands in the program's working directory /app/out by a relative name, or at /app/out/…, /app/in/… or /tmp/…"
        )));
    } else {
        let mut r = name;
        while let Some(rest) = r.strip_prefix("./") {
            r = rest;
        }
        (r, Some(OUT))
    };
    if let Some(problem) = file_path_problem(rel) {
        return Err(("path_invalid", format!(
            "{name:?} is not a normalised path of printable characters ({problem}): no `..`, `.` or empty component, no backslash"
        )));
    }
    let path = if under == Some(TMP) {
        format!("tmp/{rel}")
    } else {
        rel.to_string()
    };
    Ok((path, under.map(|d| format!("{d}{rel}"))))
}

/// `files`: name → base64 (null: skipped, as SandboxFusion skips it) → the action's `files`
/// entries (`{path, content_base64, link}`), or the refusals pushed onto `errors`.
pub fn input_files(v: Option<&Value>, errors: &mut Vec<Value>) -> Vec<Value> {
    let Some(v) = v else { return Vec::new() };
    let Some(m) = v.as_object() else {
        errors.push(json!({"type": "dict_type", "loc": ["body", "files"],
            "msg": "Input should be a valid dictionary", "input": v}));
        return Vec::new();
    };
    let mut out: Vec<Value> = Vec::new();
    let mut placed: Vec<String> = Vec::new();
    for (name, content) in m {
        let refuse = |kind: &str, msg: String| json!({"type": kind, "loc": ["body", "files", name], "msg": msg, "input": name});
        let b64 = match content {
            Value::Null => continue,
            Value::String(s) => s,
            other => {
                errors.push(
                    json!({"type": "string_type", "loc": ["body", "files", name],
                    "msg": "Input should be a valid string", "input": other}),
                );
                continue;
            }
        };
        let (path, link) = match place(name) {
            Ok(p) => p,
            Err((kind, msg)) => {
                errors.push(refuse(kind, msg));
                continue;
            }
        };
        let clash = placed.iter().find(|o| {
            **o == path || path.starts_with(&format!("{o}/")) || o.starts_with(&format!("{path}/"))
        });
        if let Some(o) = clash {
            errors.push(refuse("path_conflict", format!(
                "{name:?} lands on /app/in/{path}, which another name's file /app/in/{o} is, holds or lies in"
            )));
            continue;
        }
        placed.push(path.clone());
        let mut entry = json!({"path": path, "content_base64": b64});
        if let Some(l) = link {
            entry["link"] = Value::String(l);
        }
        out.push(entry);
    }
    out
}

/// A `fetch_files` name as a path relative to /app/out (SandboxFusion's
/// `abspath(join(cwd, name))`), or None when that is outside it.
fn in_out(name: &str) -> Option<String> {
    let joined = if name.starts_with('/') {
        name.to_string()
    } else {
        format!("{OUT}{name}")
    };
    let mut parts: Vec<&str> = Vec::new();
    for c in joined.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    let rel = parts.strip_prefix(&["app", "out"][..])?;
    (!rel.is_empty()).then(|| rel.join("/"))
}

/// The answer's `files` (by the name asked), the names not there, and why for each.
pub fn fetched(
    record: &Value,
    fetch_files: &[String],
) -> (Map<String, Value>, Vec<Value>, Map<String, Value>) {
    let mut files = Map::new();
    let mut missing = Vec::new();
    let mut why = Map::new();
    let none = Vec::new();
    let arts = record["artifacts"].as_array().unwrap_or(&none);
    let skipped = record["artifacts_skipped"].as_array().unwrap_or(&none);
    for want in fetch_files {
        let reason = match in_out(want) {
            None => "outside_working_directory",
            Some(rel) => {
                let found = arts.iter().find(|a| a["path"].as_str() == Some(&rel));
                match found.map(|a| a["content_base64"].as_str()) {
                    Some(Some(b64)) => {
                        files.insert(want.clone(), Value::String(b64.to_string()));
                        continue;
                    }
                    Some(None) => "not_inline",
                    None => skipped
                        .iter()
                        .find(|s| s["path"].as_str() == Some(&rel))
                        .and_then(|s| s["reason"].as_str())
                        .unwrap_or("not_found"),
                }
            }
        };
        missing.push(Value::String(want.clone()));
        why.insert(want.clone(), Value::String(reason.to_string()));
    }
    (files, missing, why)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(v: Value) -> (Vec<Value>, Vec<Value>) {
        let mut errors = Vec::new();
        let out = input_files(Some(&v), &mut errors);
        (out, errors)
    }

    #[test]
    fn names_land_where_sandboxfusion_puts_them() {
        let (out, errors) = files(json!({
            "flag.txt": "MQ==", "./././d/x.txt": "Mg==", "/app/out/o.txt": "Mw==",
            "/app/in/i.txt": "NA==", "/tmp/t/x.txt": "NQ==", "skipped": null}));
        assert!(errors.is_empty(), "{errors:?}");
        let by: Map<String, Value> = out
            .iter()
            .map(|e| (e["path"].as_str().unwrap().to_string(), e["link"].clone()))
            .collect();
        assert_eq!(
            Value::Object(by),
            json!({"flag.txt": "/app/out/flag.txt", "d/x.txt": "/app/out/d/x.txt",
                   "o.txt": "/app/out/o.txt", "i.txt": null, "tmp/t/x.txt": "/tmp/t/x.txt"})
        );
        assert_eq!(out.len(), 5, "a null content is skipped");
    }

    #[test]
    fn a_name_that_would_escape_or_land_elsewhere_is_refused_by_its_type() {
        let cases = [
            ("/usr/lib/x.so", "path_not_offered"),
            ("/etc/passwd", "path_not_offered"),
            ("/app/x", "path_not_offered"),
            ("/", "path_not_offered"),
            ("../x", "path_invalid"),
            ("a/../../x", "path_invalid"),
            ("/app/out/../../usr/x", "path_invalid"),
            ("/tmp/../etc/x", "path_invalid"),
            ("/app/in/../out/x", "path_invalid"),
            ("a//b", "path_invalid"),
            ("", "path_invalid"),
            ("./", "path_invalid"),
            ("/tmp/", "path_invalid"),
            ("a\nb", "path_invalid"),
            ("a\\..\\b", "path_invalid"),
        ];
        for (name, kind) in cases {
            let (out, errors) = files(json!({ name: "MQ==" }));
            assert!(out.is_empty(), "{name:?}");
            assert_eq!(errors.len(), 1, "{name:?}");
            assert_eq!(errors[0]["type"], kind, "{name:?}: {errors:?}");
            assert_eq!(errors[0]["loc"], json!(["body", "files", name]));
        }
        for pair in [
            ["a", "/app/out/a"],
            ["a", "/app/in/a"],
            ["tmp/x", "/tmp/x"],
            ["d", "d/x"],
        ] {
            let (_, errors) = files(json!({pair[0]: "MQ==", pair[1]: "Mg=="}));
            assert_eq!(errors.len(), 1, "{pair:?}");
            assert_eq!(errors[0]["type"], "path_conflict", "{pair:?}");
        }
    }

    #[test]
    fn fetched_names_resolve_as_sandboxfusion_joins_them() {
        for (name, rel) in [
            ("o.txt", Some("o.txt")),
            ("./o.txt", Some("o.txt")),
            ("d/../o.txt", Some("o.txt")),
            ("/app/out/d/o.txt", Some("d/o.txt")),
            ("../out/o.txt", Some("o.txt")),
            ("../in/flag.txt", None),
            ("../../etc/passwd", None),
            ("/tmp/o.txt", None),
            ("/app/in/x", None),
            (".", None),
        ] {
            assert_eq!(in_out(name).as_deref(), rel, "{name:?}");
        }
        let rec = json!({
            "artifacts": [{"path": "o.txt", "content_base64": "MQ=="},
                          {"path": "big.bin", "bytes": 9_000_000}],
            "artifacts_skipped": [{"path": "flag.txt", "reason": "symlink"}]});
        let want: Vec<String> = [
            "o.txt",
            "./o.txt",
            "big.bin",
            "flag.txt",
            "gone",
            "/tmp/o.txt",
        ]
        .map(String::from)
        .to_vec();
        let (got, missing, why) = fetched(&rec, &want);
        assert_eq!(
            Value::Object(got),
            json!({"o.txt": "MQ==", "./o.txt": "MQ=="})
        );
        assert_eq!(
            missing,
            json!(["big.bin", "flag.txt", "gone", "/tmp/o.txt"])
                .as_array()
                .unwrap()
                .clone()
        );
        assert_eq!(
            Value::Object(why),
            json!({"big.bin": "not_inline", "flag.txt": "symlink", "gone": "not_found",
                   "/tmp/o.txt": "outside_working_directory"})
        );
    }
}
