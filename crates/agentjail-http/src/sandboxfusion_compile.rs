//! `/run_code`'s compiled languages: SandboxFusion's `compile_result` from the record's
//! `compile` section, and how a failed compile answers.
//!
//! SandboxFusion compiles `cpp`, `go`, `java` and `rust` (and agentjail `c`) in a step of
//! their own and reports it as `compile_result`, with `run_result`'s shape: `status`
//! (`Finished` when the compiler exited, whatever its code; `TimeLimitExceeded` at the
//! compile's time limit, `return_code` null then), `execution_time` (s), `return_code`,
//! `stdout`, `stderr` (the compiler's own messages, `main.cpp:3:5: error: …`), and agentjail's
//! `cpu_time`. An interpreted language has none (`null`). When the compile fails nothing runs:
//! `run_result` is null and `status` is `Failed`, `message` the record's stop reason
//! (`compile_error`, `compile_timeout`, `compile_memory_limit`, or `max_seconds` when the
//! job's whole budget ran out first). A compiler stopped by a limit or a signal rather than by
//! its own exit gets `agentjail: REASON` as the last line of its `stderr`, as a run does.

use serde_json::{json, Value};

/// The number of the signal a record names (`"SIGSEGV"` → 11): the inverse of the record's
/// one number → name map (agentjail_engine::verdict::signal_name, `SIG<n>` past the named ones).
pub fn signal_number(name: &str) -> Option<i32> {
    (1..=64).find(|n| agentjail_engine::verdict::signal_name(*n) == name)
}

/// agentjail's languages with a compile step: `compile_timeout` applies to them only.
pub const COMPILED: [&str; 5] = ["c", "cpp", "java", "go", "rust"];

/// `compile_result` from the record's `compile` section (None: no compile step ran).
pub fn compile_result(record: &Value) -> Option<Value> {
    let c = record.get("compile").filter(|c| c.is_object())?;
    let status = c["status"].as_str().unwrap_or("");
    let timed_out = matches!(status, "compile_timeout" | "max_seconds");
    let return_code = if timed_out {
        None
    } else {
        c["exit_code"].as_i64().or_else(|| {
            c["signal"]
                .as_str()
                .and_then(signal_number)
                .map(|n| -i64::from(n))
        })
    };
    let mut stderr = c["stderr"].as_str().unwrap_or("").to_string();
    // The compiler's own failure speaks for itself; anything agentjail stopped says why.
    let own_exit = status == "ok" || (status == "compile_error" && c["exit_code"].is_i64());
    if !own_exit {
        if !stderr.is_empty() && !stderr.ends_with('\n') {
            stderr.push('\n');
        }
        stderr.push_str(&format!("agentjail: {status}\n"));
    }
    Some(json!({
        "status": if timed_out { "TimeLimitExceeded" } else { "Finished" },
        "execution_time": c["wall_ms"].as_f64().map(|ms| ms / 1000.0),
        "return_code": return_code,
        "stdout": c["stdout"].as_str().unwrap_or(""),
        "stderr": stderr,
        "cpu_time": c["cpu_ms"].as_f64().map(|ms| ms / 1000.0),
    }))
}

/// The compile failed (the record has a `compile` section whose status is not `ok`): the
/// message for a `Failed` answer with no `run_result`.
pub fn failed(record: &Value) -> Option<String> {
    let status = record["compile"]["status"].as_str()?;
    (status != "ok").then(|| {
        record["stop_reason"]
            .as_str()
            .filter(|r| !r.is_empty())
            .unwrap_or(status)
            .to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record's `compile` section as languages.md specifies it.
    pub fn compile(status: &str, extra: Value) -> Value {
        let mut c = json!({"language": "cpp", "status": status, "exit_code": 0, "signal": null,
            "wall_ms": 812, "cpu_ms": 640, "memory_peak_bytes": 1, "stdout": "",
            "stderr": "", "stderr_truncated": false, "cached": false,
            "toolchain": {"path": "/usr/bin/g++-12", "version": "12.2.0"}, "argv": ["g++"]});
        for (k, v) in extra.as_object().unwrap() {
            c[k] = v.clone();
        }
        c
    }

    #[test]
    fn a_compile_that_succeeded_is_finished_and_nothing_failed() {
        let rec = json!({"stop_reason": "code_runtime_error:1",
            "compile": compile("ok", json!({"stderr": "main.cpp:1:1: warning: w\n"}))});
        assert_eq!(
            compile_result(&rec),
            Some(
                json!({"status": "Finished", "execution_time": 0.812, "return_code": 0,
                   "stdout": "", "stderr": "main.cpp:1:1: warning: w\n", "cpu_time": 0.64})
            )
        );
        assert_eq!(failed(&rec), None, "the run's failure is the run's");
        // An interpreted language has no compile step: null, as SandboxFusion's.
        let rec = json!({"stop_reason": "success", "execution": {"exit_code": 0}});
        assert_eq!((compile_result(&rec), failed(&rec)), (None, None));
    }

    #[test]
    fn a_failed_compile_says_how_and_why() {
        let err = "main.cpp:3:5: error: 'x' was not declared in this scope\n";
        let cases = [
            (
                json!({"stop_reason": "compile_error",
                       "compile": compile("compile_error", json!({"exit_code": 1, "stderr": err}))}),
                "compile_error",
                json!({"status": "Finished", "execution_time": 0.812, "return_code": 1,
                       "stdout": "", "stderr": err, "cpu_time": 0.64}),
            ),
            (
                json!({"stop_reason": "compile_timeout",
                       "compile": compile("compile_timeout", json!({"exit_code": null, "signal": "SIGKILL", "wall_ms": 2000}))}),
                "compile_timeout",
                json!({"status": "TimeLimitExceeded", "execution_time": 2.0, "return_code": null,
                       "stdout": "", "stderr": "agentjail: compile_timeout\n", "cpu_time": 0.64}),
            ),
            (
                json!({"stop_reason": "compile_memory_limit",
                       "compile": compile("compile_memory_limit", json!({"exit_code": null, "signal": "SIGKILL", "stderr": "cc1plus"}))}),
                "compile_memory_limit",
                json!({"status": "Finished", "execution_time": 0.812, "return_code": -9,
                       "stdout": "", "stderr": "cc1plus\nagentjail: compile_memory_limit\n", "cpu_time": 0.64}),
            ),
            (
                json!({"stop_reason": "compile_error",
                       "compile": compile("compile_error", json!({"exit_code": null, "signal": "SIGSYS"}))}),
                "compile_error",
                json!({"status": "Finished", "execution_time": 0.812, "return_code": -31,
                       "stdout": "", "stderr": "agentjail: compile_error\n", "cpu_time": 0.64}),
            ),
            (
                json!({"stop_reason": "max_seconds",
                       "compile": compile("max_seconds", json!({"exit_code": null, "signal": "SIGKILL"}))}),
                "max_seconds",
                json!({"status": "TimeLimitExceeded", "execution_time": 0.812, "return_code": null,
                       "stdout": "", "stderr": "agentjail: max_seconds\n", "cpu_time": 0.64}),
            ),
        ];
        for (rec, message, result) in cases {
            assert_eq!(failed(&rec).as_deref(), Some(message), "{rec}");
            assert_eq!(compile_result(&rec), Some(result), "{rec}");
        }
    }
}
