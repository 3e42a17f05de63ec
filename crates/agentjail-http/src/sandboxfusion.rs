//! `POST /run_code`, as SandboxFusion answers it, so a verl (or any SandboxFusion) user
//! switches by changing one URL.
//!
//! The request (`RunCodeRequest`): `code`, `language` (required); `compile_timeout`,
//! `run_timeout` (seconds, default 10), `memory_limit_MB` (default -1), `stdin`, `files`
//! (path → base64 or null), `fetch_files` (paths), `args`; other fields are ignored, as
//! pydantic ignores them. A missing or mistyped field is answered as FastAPI answers a
//! request its model refuses: HTTP 422 with `{"detail": [{"type", "loc", "msg", "input"}]}`.
//! A request this server understands but cannot serve — a language its policy does not run,
//! a file at a path the jail cannot offer — is HTTP 400 with the same `detail` list and, for a language,
//! `"languages"`: the SandboxFusion names it runs. (SandboxFusion's SDK retries every
//! answer but a 200, 400 and 422 alike, then raises with the body's text: the 400's text
//! says what to change.)
//!
//! It runs as a judge-mode action (`output_mode: "text"`, `stdin`), `language` mapped onto
//! agentjail's (`nodejs` → `javascript`; `cpp`, `go`, `java`, `rust`, `bash`, `python` and
//! agentjail's own `c` as they are), `run_timeout` as the `exec_timeout_seconds` hint and,
//! for a compiled language, `compile_timeout` as `compile_timeout_seconds` (each may only
//! lower the policy's), `files` placed where SandboxFusion puts them and `fetch_files`
//! answered from the record's artifacts (crate::sandboxfusion_files). `memory_limit_MB` is
//! not applied: the policy's memory limit holds (it cannot be raised by a request).
//!
//! The response (`RunCodeResponse`): `status` `Success` / `Failed` / `SandboxError`,
//! `message`, `compile_result` (crate::sandboxfusion_compile; null for an interpreted
//! language), `run_result` `{status: Finished | TimeLimitExceeded
//! | Error, execution_time, return_code, stdout, stderr, cpu_time}`, `executor_pod_name`,
//! `files` (and `missing_files` and `missing_reasons` when a fetched file was not there). The stop reason maps
//! onto it ([`respond`]). Code the static check refused never ran: its `stderr` says why as
//! the interpreter would, one finding a line (`File "main.py", line L` with the source line
//! and a caret at the column, then `SyntaxError: …` for a syntax error, `main.py:L:C: rule:
//! detail` for the others), then `agentjail: REASON`; `message` keeps the machine-readable
//! reason.

use serde_json::{json, Value};

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

/// The names /run_code takes beyond SandboxFusion's: `c` (SandboxFusion has none; a judge
/// of C programs sends it here), after SandboxFusion's in the `languages` lists.
pub const EXTRA_LANGUAGES: [&str; 1] = ["c"];

/// SandboxFusion's name of a language → agentjail's language and entrypoint.
fn ours(language: &str) -> Option<(&'static str, &'static str)> {
    match language {
        "python" => Some(("python", "main.py")),
        "nodejs" => Some(("javascript", "main.js")),
        "cpp" => Some(("cpp", "main.cpp")),
        "c" => Some(("c", "main.c")),
        "go" => Some(("go", "main.go")),
        "java" => Some(("java", "Main.java")),
        "rust" => Some(("rust", "main.rs")),
        "bash" => Some(("bash", "main.sh")),
        _ => None,
    }
}

/// A parsed request: the action to run and the files to fetch back.
pub struct Parsed {
    pub action: Value,
    pub fetch_files: Vec<String>,
}

/// A refused request: its HTTP status (422: the body is not a `RunCodeRequest`; 400: it is,
/// but this server cannot serve it) and body.
#[derive(Debug)]
pub struct Refused {
    pub status: u16,
    pub body: Value,
}

/// A refused request's body: FastAPI's `detail` list.
pub fn unprocessable(detail: Vec<Value>) -> Value {
    json!({ "detail": detail })
}

/// The detail types that are "well formed, not servable here" (a 400), not FastAPI's 422.
const NOT_SERVABLE: [&str; 4] = [
    "language_not_run",
    "path_not_offered",
    "path_invalid",
    "path_conflict",
];

fn field_error(kind: &str, field: &str, msg: &str, input: &Value) -> Value {
    json!({"type": kind, "loc": ["body", field], "msg": msg, "input": input})
}

/// Read the request; `executes(language)`: whether the policy runs agentjail's language.
pub fn parse(body: &Value, executes: &dyn Fn(&str) -> bool) -> Result<Parsed, Refused> {
    let Some(o) = body.as_object() else {
        return Err(Refused {
            status: 422,
            body: unprocessable(vec![json!({"type": "model_attributes_type",
            "loc": ["body"], "msg": "Input should be a valid dictionary or object to extract fields from",
            "input": body})]),
        });
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
    let compile_timeout = number("compile_timeout", 10.0, &mut errors);
    number("memory_limit_MB", -1.0, &mut errors);
    let stdin = stdin_of(o.get("stdin"), &mut errors);
    let files = crate::sandboxfusion_files::input_files(o.get("files"), &mut errors);
    let fetch_files = fetch_list(o.get("fetch_files"), &mut errors);
    let target = language
        .as_deref()
        .and_then(|l| target(l, executes, &mut errors));
    let (Some(code), Some((language, entrypoint)), Some(run_timeout), Some(compile_timeout), true) = (
        code,
        target,
        run_timeout,
        compile_timeout,
        errors.is_empty(),
    ) else {
        return Err(refused(errors, executes));
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
    timeouts(&mut action, language, run_timeout, compile_timeout);
    Ok(Parsed {
        action,
        fetch_files,
    })
}

/// `run_timeout` as the `exec_timeout_seconds` hint; for a compiled language,
/// `compile_timeout` as `compile_timeout_seconds` (each only lowers the policy's; 0 or less:
/// none, the policy's holds).
fn timeouts(action: &mut Value, language: &str, run: f64, compile: f64) {
    if run > 0.0 {
        action["policy_hints"]["exec_timeout_seconds"] = json!(run);
    }
    if compile > 0.0 && crate::sandboxfusion_compile::COMPILED.contains(&language) {
        action["policy_hints"]["compile_timeout_seconds"] = json!(compile);
    }
}

/// The refusal of a request with `errors`: a 422 when any is FastAPI's own (the body is not
/// a `RunCodeRequest`), else a 400 (SandboxFusion would run it; this server cannot), which
/// names the languages this server runs.
fn refused(errors: Vec<Value>, executes: &dyn Fn(&str) -> bool) -> Refused {
    let servable = errors
        .iter()
        .all(|e| NOT_SERVABLE.contains(&e["type"].as_str().unwrap_or("")));
    if !servable {
        return Refused {
            status: 422,
            body: unprocessable(errors),
        };
    }
    Refused {
        status: 400,
        body: json!({"detail": errors, "languages": runs(executes)}),
    }
}

/// The SandboxFusion names of the languages this server's policy runs, in its order.
fn runs(executes: &dyn Fn(&str) -> bool) -> Vec<&'static str> {
    LANGUAGES
        .iter()
        .chain(EXTRA_LANGUAGES.iter())
        .copied()
        .filter(|l| ours(l).is_some_and(|(a, _)| executes(a)))
        .collect()
}

/// agentjail's language and entrypoint for SandboxFusion's `language`, if the policy runs
/// it; else the refusal, naming the languages this server runs (FastAPI's literal error
/// for a name that is not SandboxFusion's, `language_not_run` for one that is).
fn target(
    l: &str,
    executes: &dyn Fn(&str) -> bool,
    errors: &mut Vec<Value>,
) -> Option<(&'static str, &'static str)> {
    if let Some(t) = ours(l).filter(|(a, _)| executes(a)) {
        return Some(t);
    }
    let runs = runs(executes);
    let quoted = runs
        .iter()
        .map(|l| format!("'{l}'"))
        .collect::<Vec<_>>()
        .join(" or ");
    if LANGUAGES.contains(&l) || EXTRA_LANGUAGES.contains(&l) {
        let msg = if runs.is_empty() {
            format!("this server's policy runs none of SandboxFusion's languages, so not '{l}'")
        } else {
            format!("this server's policy does not run '{l}'; it runs {quoted}")
        };
        errors.push(
            json!({"type": "language_not_run", "loc": ["body", "language"],
            "msg": msg, "input": l, "ctx": {"runs": runs.join(", ")}}),
        );
        return None;
    }
    let msg = if runs.is_empty() {
        "this server's policy executes none of the languages /run_code names".to_string()
    } else {
        format!("Input should be {quoted}")
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

/// Why the static check refused `code`, as the interpreter would say it: a syntax error as
/// Python prints one (file, line, the source line, a caret under the column) or, for
/// JavaScript, as node does (`main.js:LINE`, the line, a caret under the column, a blank
/// line, `SyntaxError: …`); every other finding as `main.py:LINE:COL: rule: detail`.
fn check_findings(record: &Value, action: &Value) -> String {
    let code = action["code"].as_str().unwrap_or("");
    let entrypoint = action["entrypoint"].as_str().unwrap_or("main.py");
    let mut out = String::new();
    let none = Vec::new();
    let violations = record["decision"]["violations"].as_array().unwrap_or(&none);
    for v in violations {
        let line = v["line"].as_u64().unwrap_or(0);
        let col = v["column"].as_u64().unwrap_or(0);
        let rule = v["rule"].as_str().unwrap_or("");
        let detail = v["detail"].as_str().unwrap_or("");
        let src = usize::try_from(line.max(1) - 1)
            .ok()
            .and_then(|n| code.lines().nth(n));
        if rule == "syntax_error" && line > 0 && entrypoint.ends_with(".js") {
            // As node prints it: FILE:LINE, the line, a caret under the column, a blank line.
            out.push_str(&format!("{entrypoint}:{line}\n"));
            if let Some(src) = src {
                let caret = usize::try_from(col.max(1) - 1).unwrap_or(0);
                out.push_str(&format!("{src}\n{}^\n\n", " ".repeat(caret)));
            }
            out.push_str(&format!("SyntaxError: {detail}\n"));
        } else if rule == "syntax_error" && line > 0 {
            out.push_str(&format!("  File \"{entrypoint}\", line {line}\n"));
            if let Some(src) = src {
                let trimmed = src.trim_start();
                let indent = src.chars().count() - trimmed.chars().count();
                let caret = usize::try_from(col.max(1) - 1)
                    .unwrap_or(0)
                    .saturating_sub(indent);
                out.push_str(&format!("    {trimmed}\n    {}^\n", " ".repeat(caret)));
            }
            out.push_str(&format!("SyntaxError: {detail}\n"));
        } else {
            out.push_str(&format!("{entrypoint}:{line}:{col}: {rule}: {detail}\n"));
        }
    }
    out
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
                .and_then(crate::sandboxfusion_compile::signal_number)
                .map(|n| -i64::from(n))
        })
        .unwrap_or(1)
}

/// `stderr` with `agentjail: REASON` as its last line.
fn with_reason(s: String, reason: &str) -> String {
    if s.is_empty() || s.ends_with('\n') {
        format!("{s}agentjail: {reason}\n")
    } else {
        format!("{s}\nagentjail: {reason}\n")
    }
}

/// How a record answers: the HTTP status and the `RunCodeResponse`. `action`: the action
/// [`parse`] made (its code and entrypoint name the check's findings).
pub fn respond(record: &Value, action: &Value, fetch_files: &[String], pod: &str) -> (u16, Value) {
    let reason = record["stop_reason"].as_str().unwrap_or("");
    let exec = &record["execution"];
    let text = |k: &str| exec[k].as_str().unwrap_or("").to_string();
    let execution_time = exec["wall_ms"].as_f64().map(|ms| ms / 1000.0);
    let cpu_time = exec["cpu_ms"].as_f64().map(|ms| ms / 1000.0);
    let kind = reason.split_once(':').map_or(reason, |(k, _)| k);
    let (ran, compile_failed) = (
        !exec.is_null(),
        crate::sandboxfusion_compile::failed(record),
    );
    let run_result = |status: &str, rc: Option<i64>, stderr: String| {
        json!({"status": status, "execution_time": execution_time, "return_code": rc,
               "stdout": text("stdout"), "stderr": stderr, "cpu_time": cpu_time})
    };
    let with_reason = |s: String| with_reason(s, reason);
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
            Some(run_result(
                "Finished",
                Some(1),
                with_reason(check_findings(record, action)),
            )),
        ),
        // agentjail could not run it, or was stopping: retryable, and verl retries 504.
        "sandbox_unavailable" | "interrupted" => (504, "SandboxError", reason.to_string(), None),
        // The compile failed: nothing ran (crate::sandboxfusion_compile).
        _ if compile_failed.is_some() => (200, "Failed", compile_failed.unwrap_or_default(), None),
        _ => (200, "SandboxError", reason.to_string(), None),
    };
    let mut body = json!({
        "status": status,
        "message": message,
        "compile_result": crate::sandboxfusion_compile::compile_result(record),
        "run_result": run,
        "executor_pod_name": pod,
    });
    add_files(&mut body, record, fetch_files);
    (http, body)
}

/// The answer's `files`, and `missing_files` and `missing_reasons` when a fetched one was
/// not there (crate::sandboxfusion_files).
fn add_files(body: &mut Value, record: &Value, fetch_files: &[String]) {
    let (files, missing, why) = crate::sandboxfusion_files::fetched(record, fetch_files);
    body["files"] = Value::Object(files);
    if !missing.is_empty() {
        body["missing_files"] = Value::Array(missing);
        body["missing_reasons"] = Value::Object(why);
    }
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
            &json!({"code": "x", "language": "python", "files": {"./a.txt": b64(b"1"), "b": null}}),
            &py,
        )
        .ok()
        .unwrap();
        assert_eq!(
            f.action["files"],
            json!([{"path": "a.txt", "content_base64": "MQ==", "link": "/app/out/a.txt"}])
        );
    }

    #[test]
    fn refused_requests_are_fastapis_422_and_unservable_ones_a_400() {
        let e = parse(&json!({"code": "x", "language": "cobol"}), &py)
            .err()
            .unwrap();
        assert_eq!(
            e.status, 422,
            "not a SandboxFusion language: FastAPI's refusal"
        );
        assert_eq!(e.body["detail"][0]["type"], "literal_error");
        assert_eq!(e.body["detail"][0]["loc"], json!(["body", "language"]));
        // SandboxFusion runs cpp; this server's policy does not: a 400 naming what it runs.
        for l in ["nodejs", "cpp"] {
            let e = parse(&json!({"code": "x", "language": l}), &py)
                .err()
                .unwrap();
            assert_eq!(e.status, 400, "{l}");
            assert_eq!(e.body["detail"][0]["type"], "language_not_run");
            assert_eq!(e.body["detail"][0]["input"], l);
            assert_eq!(e.body["languages"], json!(["python"]));
            let msg = e.body["detail"][0]["msg"].as_str().unwrap();
            assert!(
                msg.contains(&format!("'{l}'")) && msg.contains("'python'"),
                "{msg}"
            );
        }
        let none = parse(&json!({"code": "x", "language": "python"}), &|_| false)
            .err()
            .unwrap();
        assert_eq!(none.status, 400);
        assert!(none.body["detail"][0]["msg"]
            .as_str()
            .unwrap()
            .contains("none"));
        assert_eq!(none.body["languages"], json!([]));
        // One malformed field beside an unservable language: FastAPI's 422 first.
        let e = parse(&json!({"language": "python", "stdin": 3}), &py)
            .err()
            .unwrap();
        assert_eq!(e.status, 422);
        let types: Vec<&str> = e.body["detail"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["missing", "string_type"]);
        assert!(parse(&json!([1]), &py).is_err());
    }

    #[test]
    fn sandboxfusions_languages_map_onto_ours_and_compile_timeout_onto_a_hint() {
        let all = |_: &str| true;
        for (sf, lang, entry) in [
            ("python", "python", "main.py"),
            ("nodejs", "javascript", "main.js"),
            ("cpp", "cpp", "main.cpp"),
            ("c", "c", "main.c"),
            ("go", "go", "main.go"),
            ("java", "java", "Main.java"),
            ("rust", "rust", "main.rs"),
            ("bash", "bash", "main.sh"),
        ] {
            let p = parse(&json!({"code": "x", "language": sf}), &all)
                .ok()
                .unwrap();
            assert_eq!(
                (
                    p.action["language"].as_str(),
                    p.action["entrypoint"].as_str()
                ),
                (Some(lang), Some(entry)),
                "{sf}"
            );
            let hint = p.action["policy_hints"]["compile_timeout_seconds"].as_f64();
            let compiled = ["c", "cpp", "go", "java", "rust"].contains(&lang);
            assert_eq!(
                hint,
                compiled.then_some(10.0),
                "{sf}: SandboxFusion's default"
            );
        }
        let p = parse(
            &json!({"code": "x", "language": "cpp", "compile_timeout": 2.5, "run_timeout": 1}),
            &all,
        )
        .ok()
        .unwrap();
        assert_eq!(
            p.action["policy_hints"],
            json!({"exec_timeout_seconds": 1.0, "compile_timeout_seconds": 2.5})
        );
        let e = parse(
            &json!({"code": "x", "language": "cpp", "compile_timeout": "soon"}),
            &all,
        )
        .err()
        .unwrap();
        assert_eq!(e.status, 422);
        assert_eq!(
            e.body["detail"][0]["loc"],
            json!(["body", "compile_timeout"])
        );
        // `c` is agentjail's addition: named after SandboxFusion's languages, refused as they are.
        let e = parse(&json!({"code": "x", "language": "c"}), &|l| l != "c")
            .err()
            .unwrap();
        assert_eq!(
            (e.status, e.body["detail"][0]["type"].as_str()),
            (400, Some("language_not_run"))
        );
        assert_eq!(
            e.body["languages"],
            json!(["python", "cpp", "nodejs", "go", "java", "bash", "rust"])
        );
        let e = parse(&json!({"code": "x", "language": "cpp"}), &|l| l == "c")
            .err()
            .unwrap();
        assert_eq!(e.body["languages"], json!(["c"]));
    }

    #[test]
    fn an_absolute_file_path_is_a_400_never_a_file_elsewhere() {
        let e = parse(
            &json!({"code": "x", "language": "python", "files": {"/usr/flag.txt": b64(b"1"), "ok.txt": b64(b"2")}}),
            &py,
        )
        .err()
        .unwrap();
        assert_eq!(e.status, 400);
        assert_eq!(e.body["detail"][0]["type"], "path_not_offered");
        assert_eq!(
            e.body["detail"][0]["loc"],
            json!(["body", "files", "/usr/flag.txt"])
        );
        assert_eq!(e.body["detail"].as_array().unwrap().len(), 1);
        let ok = parse(
            &json!({"code": "x", "language": "python", "files": {"./a/b.txt": b64(b"1")}}),
            &py,
        )
        .ok()
        .unwrap();
        assert_eq!(ok.action["files"][0]["path"], "a/b.txt");
        assert_eq!(ok.action["files"][0]["link"], "/app/out/a/b.txt");
    }

    #[test]
    fn fetched_files_come_back_and_missing_ones_are_named() {
        let rec = json!({"stop_reason": "success",
            "execution": {"exit_code": 0, "wall_ms": 5, "cpu_ms": 3, "stdout": "", "stderr": ""},
            "artifacts": [{"path": "o.txt", "content_base64": "MQ=="}]});
        let want = [
            "o.txt".to_string(),
            "/app/out/o.txt".into(),
            "missing.txt".into(),
            "/tmp/o.txt".into(),
        ];
        let (_, b) = respond(&rec, &Value::Null, &want, "p");
        assert_eq!(
            b["files"],
            json!({"o.txt": "MQ==", "/app/out/o.txt": "MQ=="})
        );
        assert_eq!(b["missing_files"], json!(["missing.txt", "/tmp/o.txt"]));
        assert_eq!(
            b["missing_reasons"],
            json!({"missing.txt": "not_found", "/tmp/o.txt": "outside_working_directory"})
        );
        assert_eq!(b["run_result"]["cpu_time"].as_f64(), Some(0.003));
        let (_, b) = respond(&rec, &Value::Null, &want[..1], "p");
        assert!(b.get("missing_files").is_none(), "none missing: no key");
        assert!(b.get("missing_reasons").is_none(), "none missing: no key");
    }

    #[test]
    fn a_refused_programs_stderr_says_why_as_the_interpreter_would() {
        let action = json!({"code": "x = 1\n    def f(:\n  pass\n", "entrypoint": "main.py"});
        let rec = json!({"stop_reason": "policy_block:static_policy_violation:syntax_error",
            "decision": {"violations": [{"rule": "syntax_error", "line": 2, "column": 11,
                "detail": "Expected a parameter"}]}});
        let (_, b) = respond(&rec, &action, &[], "p");
        assert_eq!(
            b["message"],
            "policy_block:static_policy_violation:syntax_error"
        );
        assert_eq!(
            b["run_result"]["stderr"],
            "  File \"main.py\", line 2\n    def f(:\n          ^\nSyntaxError: Expected a parameter\nagentjail: policy_block:static_policy_violation:syntax_error\n"
        );
        let js =
            json!({"code": "let x = 1;\nfunction f( {\n  return 2;\n}\n", "entrypoint": "main.js"});
        let rec = json!({"stop_reason": "policy_block:static_policy_violation:syntax_error",
            "decision": {"violations": [{"rule": "syntax_error", "line": 3, "column": 10,
                "detail": "Expected `:` but found `decimal`"}]}});
        let (_, b) = respond(&rec, &js, &[], "p");
        assert_eq!(
            b["run_result"]["stderr"],
            "main.js:3\n  return 2;\n         ^\n\nSyntaxError: Expected `:` but found `decimal`\nagentjail: policy_block:static_policy_violation:syntax_error\n"
        );
        let rec = json!({"stop_reason": "policy_block:static_policy_violation:import_denied",
            "decision": {"violations": [{"rule": "import_denied", "line": 1, "column": 1,
                "detail": "socket"}]}});
        let (_, b) = respond(
            &rec,
            &json!({"code": "import socket", "entrypoint": "main.py"}),
            &[],
            "p",
        );
        assert_eq!(
            b["run_result"]["stderr"],
            "main.py:1:1: import_denied: socket\nagentjail: policy_block:static_policy_violation:import_denied\n"
        );
    }

    #[test]
    fn stop_reasons_map_onto_sandboxfusions_statuses() {
        let rec = |reason: &str, exec: Value| json!({"stop_reason": reason, "execution": exec});
        let ok = rec(
            "success",
            json!({"exit_code": 0, "wall_ms": 12, "stdout": "4\n", "stderr": ""}),
        );
        let (h, b) = respond(&ok, &Value::Null, &[], "pod");
        assert_eq!((h, b["status"].as_str()), (200, Some("Success")));
        assert_eq!(b["run_result"]["stdout"], "4\n");
        assert_eq!(b["run_result"]["return_code"], 0);
        assert_eq!(b["run_result"]["execution_time"].as_f64(), Some(0.012));
        let (_, b) = respond(
            &rec("code_timeout", json!({"wall_ms": 1000, "stdout": ""})),
            &Value::Null,
            &[],
            "p",
        );
        assert_eq!(
            (b["status"].as_str(), b["run_result"]["status"].as_str()),
            (Some("Failed"), Some("TimeLimitExceeded"))
        );
        let (_, b) = respond(
            &rec("code_runtime_error:3", json!({"exit_code": 3})),
            &Value::Null,
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
                &Value::Null,
                &[],
                "p",
            );
            assert_eq!(b["run_result"]["return_code"].as_i64(), Some(rc), "{name}");
        }
        let (_, b) = respond(
            &rec("policy_block:static_policy_violation:x", Value::Null),
            &Value::Null,
            &[],
            "p",
        );
        assert_eq!(b["status"], "Failed");
        assert!(b["run_result"]["stderr"]
            .as_str()
            .unwrap()
            .contains("policy_block"));
        let (h, b) = respond(
            &rec("sandbox_unavailable:setup", Value::Null),
            &Value::Null,
            &[],
            "p",
        );
        assert_eq!((h, b["status"].as_str()), (504, Some("SandboxError")));
        assert!(b["run_result"].is_null());
    }

    #[test]
    fn a_compiled_run_answers_both_steps_and_a_failed_compile_no_run() {
        let compile = |status: &str, exit: Value| {
            json!({"status": status, "exit_code": exit, "wall_ms": 800, "cpu_ms": 600,
                   "stdout": "", "stderr": "main.cpp:1:1: e\n"})
        };
        let rec = json!({"stop_reason": "success", "compile": compile("ok", json!(0)),
            "execution": {"exit_code": 0, "wall_ms": 5, "stdout": "7\n", "stderr": ""}});
        let (h, b) = respond(&rec, &Value::Null, &[], "p");
        assert_eq!((h, b["status"].as_str()), (200, Some("Success")));
        assert_eq!(
            (
                b["compile_result"]["status"].as_str(),
                b["compile_result"]["return_code"].as_i64()
            ),
            (Some("Finished"), Some(0))
        );
        assert_eq!(b["run_result"]["stdout"], "7\n");
        for reason in [
            "compile_error",
            "compile_timeout",
            "compile_memory_limit",
            "max_seconds",
        ] {
            let rec = json!({"stop_reason": reason, "compile": compile(reason, json!(1))});
            let (h, b) = respond(&rec, &Value::Null, &["o.txt".into()], "p");
            assert_eq!((h, b["status"].as_str()), (200, Some("Failed")), "{reason}");
            assert_eq!(b["message"], reason);
            assert!(
                b["run_result"].is_null() && b["compile_result"].is_object(),
                "{reason}"
            );
            assert_eq!(b["missing_files"], json!(["o.txt"]));
        }
        // agentjail could not start the compile: retryable, as any run's.
        let rec = json!({"stop_reason": "sandbox_unavailable:setup",
                         "compile": compile("sandbox_unavailable", Value::Null)});
        let (h, b) = respond(&rec, &Value::Null, &[], "p");
        assert_eq!((h, b["status"].as_str()), (504, Some("SandboxError")));
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
                Err(e) => {
                    proptest::prop_assert!(e.status == 400 || e.status == 422);
                    proptest::prop_assert!(!e.body["detail"].as_array().unwrap().is_empty());
                }
            }
            let rec = json!({"stop_reason": reason, "execution": {"exit_code": 1, "wall_ms": 3}});
            let (http, body) = respond(&rec, &Value::Null, &["x".into()], "pod");
            proptest::prop_assert!(http == 200 || http == 504);
            let status = body["status"].as_str().unwrap();
            proptest::prop_assert!(["Success", "Failed", "SandboxError"].contains(&status));
            if let Some(rs) = body["run_result"]["status"].as_str() {
                proptest::prop_assert!(["Finished", "TimeLimitExceeded", "Error"].contains(&rs));
            }
        }
    }
}
