//! `POST /run_code`, as SandboxFusion answers it, so a verl (or any SandboxFusion) user
//! switches by changing one URL.
//!
//! The request (`RunCodeRequest`): `code`, `language` (required); `compile_timeout`,
//! `run_timeout` (seconds, default 10), `memory_limit_MB` (default -1), `stdin`, `files`
//! (path → base64 or null), `fetch_files` (paths), `args`; other fields are ignored, as
//! pydantic ignores them. A missing or mistyped field, or a language this server does not
//! run, is answered as FastAPI answers a request its model refuses: HTTP 422 with
//! `{"detail": [{"type", "loc", "msg", "input"}]}`.
//!
//! It runs as a judge-mode action (`output_mode: "text"`, `stdin`), `run_timeout` as the
//! `exec_timeout_seconds` hint (it may only lower the policy's), `files` as the action's
//! input files (under `/app/in`; the program's working directory is `/app/out`),
//! `fetch_files` answered from the record's artifacts (files the program left in
//! `/app/out`, by their path there). `memory_limit_MB` and `compile_timeout` are not
//! applied: the policy's memory limit holds (it cannot be raised by a request), and
//! nothing is compiled.
//!
//! The response (`RunCodeResponse`): `status` `Success` / `Failed` / `SandboxError`,
//! `message`, `compile_result` (null), `run_result` `{status: Finished | TimeLimitExceeded
//! | Error, execution_time, return_code, stdout, stderr}`, `executor_pod_name`, `files`.
//! The stop reason maps onto it ([`respond`]).

use serde_json::{json, Map, Value};

/// SandboxFusion's `Language` literal, in its order.
pub const LANGUAGES: [&str; 29] = [
    "python",
    "cpp",
    "nodejs",
    "go",
    "go_test",
    "java",
    "php",
    "csharp",
    "bash",
    "typescript",
    "sql",
    "rust",
    "cuda",
    "lua",
    "R",
    "perl",
    "D_ut",
    "ruby",
    "scala",
    "julia",
    "pytest",
    "junit",
    "kotlin_script",
    "jest",
    "verilog",
    "python_gpu",
    "lean",
    "swift",
    "racket",
];

/// SandboxFusion's name of a language → agentjail's language and entrypoint.
fn ours(language: &str) -> Option<(&'static str, &'static str)> {
    match language {
        "python" => Some(("python", "main.py")),
        "nodejs" => Some(("javascript", "main.js")),
        _ => None,
    }
}

/// A parsed request: the action to run and the files to fetch back.
pub struct Parsed {
    pub action: Value,
    pub fetch_files: Vec<String>,
}

/// A refused request: the 422 body.
pub fn unprocessable(detail: Vec<Value>) -> Value {
    json!({ "detail": detail })
}

fn field_error(kind: &str, field: &str, msg: &str, input: &Value) -> Value {
    json!({"type": kind, "loc": ["body", field], "msg": msg, "input": input})
}

/// Read the request; `executes(language)`: whether the policy runs agentjail's language.
pub fn parse(body: &Value, executes: &dyn Fn(&str) -> bool) -> Result<Parsed, Value> {
    let Some(o) = body.as_object() else {
        return Err(unprocessable(vec![json!({"type": "model_attributes_type",
            "loc": ["body"], "msg": "Input should be a valid dictionary or object to extract fields from",
            "input": body})]));
    };
    let mut errors = Vec::new();
    let string = |k: &str, errors: &mut Vec<Value>| match o.get(k) {
        Some(Value::String(s)) => Some(s.clone()),
        None => {
            errors.push(field_error("missing", k, "Field required", &Value::Null));
            None
        }
        Some(v) => {
            errors.push(field_error(
                "string_type",
                k,
                "Input should be a valid string",
                v,
            ));
            None
        }
    };
    let code = string("code", &mut errors);
    let language = string("language", &mut errors);
    let number = |k: &str, default: f64, errors: &mut Vec<Value>| match o.get(k) {
        None => Some(default),
        Some(v) => match v.as_f64() {
            Some(n) if n.is_finite() => Some(n),
            _ => {
                errors.push(field_error(
                    "float_parsing",
                    k,
                    "Input should be a valid number",
                    v,
                ));
                None
            }
        },
    };
    let run_timeout = number("run_timeout", 10.0, &mut errors);
    number("compile_timeout", 10.0, &mut errors);
    number("memory_limit_MB", -1.0, &mut errors);
    let stdin = stdin_of(o.get("stdin"), &mut errors);
    let files = input_files(o.get("files"), &mut errors);
    let fetch_files = fetch_list(o.get("fetch_files"), &mut errors);
    let target = language
        .as_deref()
        .and_then(|l| target(l, executes, &mut errors));
    let (Some(code), Some((language, entrypoint)), Some(run_timeout), true) =
        (code, target, run_timeout, errors.is_empty())
    else {
        return Err(unprocessable(errors));
    };
    let mut action = json!({
        "id": "run_code",
        "language": language,
        "entrypoint": entrypoint,
        "code": code,
        "output_mode": "text",
    });
    if let Some(s) = stdin {
        action["stdin"] = Value::String(s);
    }
    if !files.is_empty() {
        action["files"] = Value::Array(files);
    }
    if run_timeout > 0.0 {
        action["policy_hints"] = json!({ "exec_timeout_seconds": run_timeout });
    }
    Ok(Parsed {
        action,
        fetch_files,
    })
}

/// agentjail's language and entrypoint for SandboxFusion's `language`, if the policy runs
/// it; else FastAPI's literal error, naming the languages this server runs.
fn target(
    l: &str,
    executes: &dyn Fn(&str) -> bool,
    errors: &mut Vec<Value>,
) -> Option<(&'static str, &'static str)> {
    if let Some(t) = ours(l).filter(|(a, _)| executes(a)) {
        return Some(t);
    }
    let runs: Vec<&str> = LANGUAGES
        .iter()
        .copied()
        .filter(|l| ours(l).is_some_and(|(a, _)| executes(a)))
        .collect();
    let msg = if runs.is_empty() {
        "this server's policy executes none of the languages /run_code names".to_string()
    } else {
        format!(
            "Input should be {}",
            runs.iter()
                .map(|l| format!("'{l}'"))
                .collect::<Vec<_>>()
                .join(" or ")
        )
    };
    errors.push(json!({"type": "literal_error", "loc": ["body", "language"],
        "msg": msg, "input": l, "ctx": {"expected": runs.join(", ")}}));
    None
}

/// `stdin`: a string, or null.
fn stdin_of(v: Option<&Value>, errors: &mut Vec<Value>) -> Option<String> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(v) => {
            errors.push(field_error(
                "string_type",
                "stdin",
                "Input should be a valid string",
                v,
            ));
            None
        }
    }
}

/// `fetch_files`: a list of paths.
fn fetch_list(v: Option<&Value>, errors: &mut Vec<Value>) -> Vec<String> {
    match v {
        None => Vec::new(),
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        Some(v) => {
            errors.push(field_error(
                "list_type",
                "fetch_files",
                "Input should be a valid list of strings",
                v,
            ));
            Vec::new()
        }
    }
}

/// `files`: path → base64 (null: skipped) → the action's `files` entries. A leading `/` or
/// `./` is dropped (the files land under `/app/in`); anything else the contract refuses
/// comes back as the record's `invalid_action:files:*`.
fn input_files(v: Option<&Value>, errors: &mut Vec<Value>) -> Vec<Value> {
    let Some(v) = v else { return Vec::new() };
    let Some(m) = v.as_object() else {
        errors.push(field_error(
            "dict_type",
            "files",
            "Input should be a valid dictionary",
            v,
        ));
        return Vec::new();
    };
    let mut out = Vec::new();
    for (path, content) in m {
        match content {
            Value::Null => {}
            Value::String(b64) => {
                let p = path.trim_start_matches("./").trim_start_matches('/');
                out.push(json!({"path": p, "content_base64": b64}));
            }
            other => errors.push(
                json!({"type": "string_type", "loc": ["body", "files", path],
                "msg": "Input should be a valid string", "input": other}),
            ),
        }
    }
    out
}

/// `fetch_files` answered from the record's artifacts (by their path in `/app/out`; those
/// the record carries inline).
fn fetched(record: &Value, fetch_files: &[String]) -> Map<String, Value> {
    let mut files = Map::new();
    let Some(arts) = record["artifacts"].as_array() else {
        return files;
    };
    for want in fetch_files {
        let w = want
            .trim_start_matches("/app/out/")
            .trim_start_matches("./");
        let found = arts.iter().find(|a| a["path"].as_str() == Some(w));
        if let Some(b64) = found.and_then(|a| a["content_base64"].as_str()) {
            files.insert(want.clone(), Value::String(b64.to_string()));
        }
    }
    files
}

/// The number of the signal a record names (`"SIGSEGV"` → 11): the inverse of the record's
/// one number → name map (agentjail_engine::verdict::signal_name, `SIG<n>` past the named ones).
pub fn signal_number(name: &str) -> Option<i32> {
    (1..=64).find(|n| agentjail_engine::verdict::signal_name(*n) == name)
}

/// A program's return code as a Python subprocess reports it: its exit code, or the
/// negative number of the signal that killed it (the record names the signal, "SIGSEGV"),
/// else 1.
fn return_code(exec: &Value) -> i64 {
    exec["exit_code"]
        .as_i64()
        .or_else(|| {
            exec["signal"]
                .as_str()
                .and_then(signal_number)
                .map(|n| -i64::from(n))
        })
        .unwrap_or(1)
}

/// How a record answers: the HTTP status and the `RunCodeResponse`.
pub fn respond(record: &Value, fetch_files: &[String], pod: &str) -> (u16, Value) {
    let reason = record["stop_reason"].as_str().unwrap_or("");
    let exec = &record["execution"];
    let text = |k: &str| exec[k].as_str().unwrap_or("").to_string();
    let execution_time = exec["wall_ms"].as_f64().map(|ms| ms / 1000.0);
    let kind = reason.split_once(':').map_or(reason, |(k, _)| k);
    let ran = !exec.is_null();
    let run_result = |status: &str, rc: Option<i64>, stderr: String| {
        json!({"status": status, "execution_time": execution_time, "return_code": rc,
               "stdout": text("stdout"), "stderr": stderr})
    };
    let with_reason = |s: String| {
        if s.is_empty() || s.ends_with('\n') {
            format!("{s}agentjail: {reason}\n")
        } else {
            format!("{s}\nagentjail: {reason}\n")
        }
    };
    let (http, status, message, run) = match kind {
        "success" | "invalid_code_output" => (
            200,
            "Success",
            String::new(),
            Some(run_result("Finished", Some(0), text("stderr"))),
        ),
        "code_timeout" | "code_cpu_limit" | "max_seconds" if ran => (
            200,
            "Failed",
            reason.to_string(),
            Some(run_result("TimeLimitExceeded", None, text("stderr"))),
        ),
        "code_runtime_error"
        | "code_killed"
        | "code_memory_limit"
        | "code_pids_limit"
        | "code_output_too_large"
        | "code_stderr_too_large"
        | "code_forbidden_syscall" => {
            let rc = Some(return_code(exec));
            let stderr = if kind == "code_runtime_error" {
                text("stderr")
            } else {
                with_reason(text("stderr"))
            };
            (
                200,
                "Failed",
                reason.to_string(),
                Some(run_result("Finished", rc, stderr)),
            )
        }
        // The code never ran: the check refused it or the action broke the contract. The
        // program's fault, as a compile error is in SandboxFusion: Failed, with why.
        "policy_block" | "invalid_action" | "invalid_request" => (
            200,
            "Failed",
            reason.to_string(),
            Some(run_result("Finished", Some(1), with_reason(String::new()))),
        ),
        // agentjail could not run it, or was stopping: retryable, and verl retries 504.
        "sandbox_unavailable" | "interrupted" => (504, "SandboxError", reason.to_string(), None),
        _ => (200, "SandboxError", reason.to_string(), None),
    };
    let files = fetched(record, fetch_files);
    let body = json!({
        "status": status,
        "message": message,
        "compile_result": null,
        "run_result": run,
        "executor_pod_name": pod,
        "files": files,
    });
    (http, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    fn py(l: &str) -> bool {
        l == "python"
    }

    #[test]
    fn verls_request_becomes_a_judge_mode_action() {
        let req = json!({"compile_timeout": 10, "run_timeout": 3, "code": "print(input())",
            "stdin": "hi\n", "memory_limit_MB": 1024, "language": "python", "files": {}, "fetch_files": []});
        let p = parse(&req, &py).ok().unwrap();
        assert_eq!(p.action["output_mode"], "text");
        assert_eq!(p.action["stdin"], "hi\n");
        assert_eq!(p.action["entrypoint"], "main.py");
        assert_eq!(
            p.action["policy_hints"]["exec_timeout_seconds"].as_f64(),
            Some(3.0)
        );
        assert!(p.action.get("files").is_none());
        let f = parse(
            &json!({"code": "x", "language": "python", "files": {"/a.txt": b64(b"1"), "b": null}}),
            &py,
        )
        .ok()
        .unwrap();
        assert_eq!(
            f.action["files"],
            json!([{"path": "a.txt", "content_base64": "MQ=="}])
        );
    }

    #[test]
    fn refused_requests_are_fastapis_422() {
        let e = parse(&json!({"code": "x", "language": "cobol"}), &py)
            .err()
            .unwrap();
        assert_eq!(e["detail"][0]["type"], "literal_error");
        assert_eq!(e["detail"][0]["loc"], json!(["body", "language"]));
        let e = parse(&json!({"code": "x", "language": "nodejs"}), &py)
            .err()
            .unwrap();
        assert_eq!(
            e["detail"][0]["input"], "nodejs",
            "a language the policy does not run"
        );
        let none = parse(&json!({"code": "x", "language": "python"}), &|_| false)
            .err()
            .unwrap();
        assert!(none["detail"][0]["msg"].as_str().unwrap().contains("none"));
        let e = parse(&json!({"language": "python", "stdin": 3}), &py)
            .err()
            .unwrap();
        let types: Vec<&str> = e["detail"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["missing", "string_type"]);
        assert!(parse(&json!([1]), &py).is_err());
    }

    #[test]
    fn stop_reasons_map_onto_sandboxfusions_statuses() {
        let rec = |reason: &str, exec: Value| json!({"stop_reason": reason, "execution": exec});
        let ok = rec(
            "success",
            json!({"exit_code": 0, "wall_ms": 12, "stdout": "4\n", "stderr": ""}),
        );
        let (h, b) = respond(&ok, &[], "pod");
        assert_eq!((h, b["status"].as_str()), (200, Some("Success")));
        assert_eq!(b["run_result"]["stdout"], "4\n");
        assert_eq!(b["run_result"]["return_code"], 0);
        assert_eq!(b["run_result"]["execution_time"].as_f64(), Some(0.012));
        let (_, b) = respond(
            &rec("code_timeout", json!({"wall_ms": 1000, "stdout": ""})),
            &[],
            "p",
        );
        assert_eq!(
            (b["status"].as_str(), b["run_result"]["status"].as_str()),
            (Some("Failed"), Some("TimeLimitExceeded"))
        );
        let (_, b) = respond(
            &rec("code_runtime_error:3", json!({"exit_code": 3})),
            &[],
            "p",
        );
        assert_eq!(
            (
                b["status"].as_str(),
                b["run_result"]["return_code"].as_i64()
            ),
            (Some("Failed"), Some(3))
        );
        // As a real record has it: the signal by name, no exit code.
        for (name, rc) in [
            ("SIGSEGV", -11),
            ("SIGKILL", -9),
            ("SIGABRT", -6),
            ("SIGSYS", -31),
        ] {
            let (_, b) = respond(
                &rec(
                    &format!("code_killed:{name}"),
                    json!({"exit_code": null, "signal": name}),
                ),
                &[],
                "p",
            );
            assert_eq!(b["run_result"]["return_code"].as_i64(), Some(rc), "{name}");
        }
        let (_, b) = respond(
            &rec("policy_block:static_policy_violation:x", Value::Null),
            &[],
            "p",
        );
        assert_eq!(b["status"], "Failed");
        assert!(b["run_result"]["stderr"]
            .as_str()
            .unwrap()
            .contains("policy_block"));
        let (h, b) = respond(&rec("sandbox_unavailable:setup", Value::Null), &[], "p");
        assert_eq!((h, b["status"].as_str()), (504, Some("SandboxError")));
        assert!(b["run_result"].is_null());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        #[test]
        fn any_request_parses_or_gets_a_422_and_any_record_answers(
            code in proptest::option::of(".{0,20}"),
            language in proptest::option::of("(python|nodejs|cpp|R|\\PC{0,6})"),
            stdin in proptest::option::of(proptest::prelude::any::<i8>()),
            timeout in proptest::option::of(-5.0f64..1e6),
            files in proptest::collection::btree_map("[./a-z]{0,6}", proptest::option::of("[A-Za-z0-9+/=]{0,8}"), 0..3),
            reason in "(success|code_timeout|code_killed:SIGKILL|code_runtime_error:1|policy_block:x|sandbox_unavailable:setup|interrupted:sigterm|max_seconds|\\PC{0,10})",
        ) {
            let mut req = json!({});
            if let Some(c) = code { req["code"] = json!(c); }
            if let Some(l) = language { req["language"] = json!(l); }
            if let Some(s) = stdin { req["stdin"] = if s % 2 == 0 { json!(s) } else { json!(s.to_string()) }; }
            if let Some(t) = timeout { req["run_timeout"] = json!(t); }
            req["files"] = json!(files);
            match parse(&req, &|l| l == "python") {
                Ok(p) => {
                    proptest::prop_assert_eq!(&p.action["output_mode"], "text");
                    proptest::prop_assert_eq!(&p.action["language"], "python");
                }
                Err(e) => proptest::prop_assert!(!e["detail"].as_array().unwrap().is_empty()),
            }
            let rec = json!({"stop_reason": reason, "execution": {"exit_code": 1, "wall_ms": 3}});
            let (http, body) = respond(&rec, &["x".into()], "pod");
            proptest::prop_assert!(http == 200 || http == 504);
            let status = body["status"].as_str().unwrap();
            proptest::prop_assert!(["Success", "Failed", "SandboxError"].contains(&status));
            if let Some(rs) = body["run_result"]["status"].as_str() {
                proptest::prop_assert!(["Finished", "TimeLimitExceeded", "Error"].contains(&rs));
            }
        }
    }
}
