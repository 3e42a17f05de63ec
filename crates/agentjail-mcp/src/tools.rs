//! The tools, as a model sees them (five; six with `run_javascript` where the policy executes
//! JavaScript): names (fixed), input schemas, output schemas, and descriptions generated from
//! the loaded policy.
//!
//! The descriptions are written for the model that will call the tools: they say which
//! imports pass the check, which names are refused, the limits, how input arrives and how
//! output must leave, and what a result looks like, all read from the policy this server
//! loaded, so code written from them passes the first time. They only state what is true
//! of this build: input files are described as supported only when the contract accepts
//! them ([`Capabilities::probe`]).

use agentjail_engine::policy::Policy;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{json, Value};
use std::sync::Arc;

pub const RUN_PYTHON: &str = "run_python";
/// Listed only when the policy executes javascript (`languages.execute`).
pub const RUN_JAVASCRIPT: &str = "run_javascript";
pub const CHECK_PYTHON: &str = "check_python";
pub const SESSION_START: &str = "python_session_start";
pub const SESSION_EXEC: &str = "python_session_exec";
pub const SESSION_CLOSE: &str = "python_session_close";

/// What this build's engine accepts beyond the seed's action, found by asking the contract
/// rather than assumed, so a description never promises a feature the engine refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The action's `files` list (input files placed in the jail).
    pub files: bool,
}

impl Capabilities {
    /// Ask the contract whether an action with an empty `files` list is well formed.
    pub fn probe(policy: &Policy) -> Capabilities {
        let probe = br#"{"id":"probe","language":"python","entrypoint":"main.py","code":"pass","input_payload":{},"files":[]}"#;
        let files = match agentjail_engine::contract::parse_action(probe, policy) {
            Ok(_) => true,
            Err(e) => e.reason() != "invalid_action:unknown_field:files",
        };
        Capabilities { files }
    }
}

fn object(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(JsonObject::new()),
    }
}

/// Every tool of this server, for `tools/list`.
pub fn all(policy: &Policy, caps: Capabilities) -> Vec<Tool> {
    let record = object(record_schema());
    let mut run = Tool::new(
        RUN_PYTHON,
        run_description(policy, caps),
        object(run_input_schema()),
    );
    run.output_schema = Some(Arc::clone(&record));
    run.annotations = Some(annotations("Run Python in a jail", false));
    let mut check = Tool::new(
        CHECK_PYTHON,
        check_description(policy),
        object(json!({
            "type": "object",
            "properties": {"code": {"type": "string", "description": "The Python source to check."}},
            "required": ["code"],
            "additionalProperties": false
        })),
    );
    check.output_schema = Some(object(decision_schema()));
    check.annotations = Some(annotations("Check Python against the policy", true));
    let mut start = Tool::new(
        SESSION_START,
        session_start_description(policy),
        object(json!({
            "type": "object",
            "properties": {"policy_hints": {
                "type": "object",
                "description": "Optional, may only tighten the policy: exec_timeout_seconds (per call), max_code_chars, allowed_languages, network_access (\"denied\" only).",
            }},
            "additionalProperties": false
        })),
    );
    start.output_schema = Some(object(json!({
        "type": "object",
        "properties": {
            "session": {"type": "string"},
            "limits": {"type": "object"},
            "error": {"type": "object"}
        }
    })));
    start.annotations = Some(annotations("Start a Python session", false));
    let mut exec = Tool::new(
        SESSION_EXEC,
        session_exec_description(policy),
        object(json!({
            "type": "object",
            "properties": {
                "session": {"type": "string", "description": "The id python_session_start returned."},
                "code": {"type": "string", "description": "Python source for this call (a notebook cell)."},
                "timeout_s": {"type": "number", "exclusiveMinimum": 0, "description": "Wall-clock limit for this call in seconds; may only lower the policy's."}
            },
            "required": ["session", "code"],
            "additionalProperties": false
        })),
    );
    exec.output_schema = Some(record);
    exec.annotations = Some(annotations("Run code in a Python session", false));
    let mut close = Tool::new(
        SESSION_CLOSE,
        "Close a Python session and free its jail. Sessions also end on their own when they idle or live too long, and all of this connection's sessions end when it closes.",
        object(json!({
            "type": "object",
            "properties": {"session": {"type": "string"}},
            "required": ["session"],
            "additionalProperties": false
        })),
    );
    close.output_schema = Some(object(json!({
        "type": "object",
        "properties": {"closed": {"type": "boolean"}, "error": {"type": "object"}}
    })));
    close.annotations = Some(annotations("Close a Python session", false));
    let mut tools = vec![run, check, start, exec, close];
    tools.extend(run_javascript_tool(policy));
    tools
}

/// The last touch on every tool of the server (this module's and the workspace's): each
/// optional argument is marked `"nullable": true` (clients built on smolagents' tool
/// validation, mcpadapt's `ToolCollection.from_mcp`, treat an argument without it as
/// required, and some send `null` for an absent one: [`without_nulls`] reads that as
/// absent), and under a policy with network the tools that run Python (`run_python`,
/// `python_session_exec`, `workspace_exec`) say they reach an open world.
pub fn finish(policy: &Policy, tools: &mut [Tool]) {
    for tool in tools.iter_mut() {
        let mut schema = (*tool.input_schema).clone();
        mark_optional_nullable(&mut schema);
        tool.input_schema = Arc::new(schema);
        // The tools whose Python can open a connection (JavaScript has no network module).
        let runs_code = [RUN_PYTHON, SESSION_EXEC, "workspace_exec"].contains(&tool.name.as_ref());
        if let Some(a) = tool.annotations.as_mut() {
            if runs_code && policy.has_network() {
                a.open_world_hint = Some(true);
            }
        }
    }
}

/// Every property a schema does not list in `required` gets `"nullable": true`.
fn mark_optional_nullable(schema: &mut JsonObject) {
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            if let (false, Value::Object(p)) = (required.contains(name), prop) {
                p.insert("nullable".into(), Value::Bool(true));
            }
        }
    }
}

/// A call's arguments with every `null` dropped: a null argument is an absent one (a
/// required one is then missing, and the tool says so).
pub fn without_nulls(mut args: JsonObject) -> JsonObject {
    args.retain(|_, v| !v.is_null());
    args
}

/// `run_javascript`, where the policy executes JavaScript.
fn run_javascript_tool(policy: &Policy) -> Option<Tool> {
    if !policy.executes("javascript") {
        return None;
    }
    let mut js = Tool::new(
        RUN_JAVASCRIPT,
        run_javascript_description(policy),
        object(run_javascript_input_schema()),
    );
    js.output_schema = Some(object(record_schema()));
    js.annotations = Some(annotations("Run JavaScript in a jail", false));
    Some(js)
}

fn run_javascript_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "The JavaScript program (a CommonJS script, runs as main.js under node)."},
            "input": {"type": "object", "description": "JSON object given to the program on stdin as one line; read it with JSON.parse(input()). Default {}."},
            "stdin": {"type": "string", "description": "Raw text for the program's stdin instead of `input` (judge mode: plain-text programs)."},
            "output_mode": {"enum": ["json", "text"], "description": "json (default): print one JSON object, the result. text: exit 0 is success and stdout is the result (no output object)."},
            "output_schema": {"type": ["object", "boolean"], "description": "JSON Schema (2020-12) the printed JSON object must match."},
            "timeout_s": {"type": "number", "exclusiveMinimum": 0, "description": "Wall-clock limit in seconds; may only lower the policy's."}
        },
        "required": ["code"],
        "additionalProperties": false
    })
}

fn run_javascript_description(p: &Policy) -> String {
    let j = &p.check.javascript;
    let modules = if j.allowed_modules.is_empty() {
        "none: use the language's built-ins (JSON, Math, Map, Set, Intl, Date, ...)".to_string()
    } else {
        j.allowed_modules.join(", ")
    };
    let computed = if j.allow_computed_member {
        ""
    } else {
        " o[k] with a key that is not provably a number is refused: use a Map for data-keyed lookups, a.at(i) for positions."
    };
    let l = &p.limits;
    format!(
        "Run a JavaScript program (node, CommonJS script) once in a fresh, isolated jail and get one JSON record of what happened. How to write it: `input` (a JSON object, up to {payload}) arrives on stdin as one line, read with the global input(): `const data = JSON.parse(input());` (there is no process and no fs). Print exactly one JSON object on stdout as the result: `console.log(JSON.stringify(result))`; it is parsed and, when you pass `output_schema`, validated. require() may load: {modules}. Refused before anything runs (with rule, line and column): other modules, import and import(), eval, Function, process, globalThis, Reflect, Proxy, WebAssembly, constructor, __proto__, prototype writes, writes to globals, `with`, string timers.{computed} Limits per run: wall {wall} (timeout_s may only lower it), CPU {cpu}, memory {mem}, stdout {out}. No network, no files. {result}",
        payload = p.budget.max_payload_bytes,
        wall = seconds(l.wall_time_ms),
        cpu = seconds(l.cpu_time_ms),
        mem = l.memory,
        out = l.stdout,
        result = RESULT_SHAPE,
    )
}

fn annotations(title: &str, read_only: bool) -> ToolAnnotations {
    let mut a = ToolAnnotations::with_title(title);
    a.read_only_hint = Some(read_only);
    a.destructive_hint = Some(false);
    // Nothing reaches the network or the host: the jail's world is closed.
    a.open_world_hint = Some(false);
    a
}

fn run_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "The Python program (runs as main.py)."},
            "input": {"type": "object", "description": "JSON object given to the program on stdin as one line; read it with json.loads(input()). Default {}."},
            "stdin": {"type": "string", "description": "Raw text for the program's stdin instead of `input` (judge mode: plain-text programs)."},
            "output_mode": {"enum": ["json", "text"], "description": "json (default): print one JSON object, the result. text: exit 0 is success and stdout is the result (no output object)."},
            "files": {
                "type": "array",
                "description": "Input files for the program: {path, content} for text or {path, content_base64} for bytes.",
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "content": {"type": "string"},
                        "content_base64": {"type": "string"}
                    },
                    "required": ["path"],
                    "additionalProperties": false
                }
            },
            "output_schema": {"type": ["object", "boolean"], "description": "JSON Schema (2020-12) the printed JSON object must match."},
            "timeout_s": {"type": "number", "exclusiveMinimum": 0, "description": "Wall-clock limit in seconds; may only lower the policy's."}
        },
        "required": ["code"],
        "additionalProperties": false
    })
}

/// The record's top-level keys, loosely typed where a key's inside may grow: a client
/// validates every successful result against this, and the record gains fields over time.
pub fn record_schema() -> Value {
    json!({
        "type": "object",
        "required": ["run_id", "status", "stop_reason", "phase", "trace", "agentjail_version"],
        "properties": {
            "run_id": {"type": "string"},
            "status": {"enum": ["ok", "stopped"]},
            "stop_reason": {"type": "string"},
            "phase": {"enum": ["plan", "policy_check", "execute", "validate", "finalize"]},
            "action": {"type": "object"},
            "policy": {"type": "object"},
            "decision": {"type": "object"},
            "execution": {"type": "object"},
            "output": {"type": "object"},
            "value": {"type": ["string", "null"]},
            "error": {"type": ["object", "null"]},
            "enforcement": {"type": "array"},
            "trace": {"type": "array"},
            "session": {"type": "object"},
            "environment": {"type": "object"},
            "caller": {"type": "object"},
            "artifacts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["path", "bytes", "sha256", "media_type"],
                    "properties": {
                        "path": {"type": "string"},
                        "bytes": {"type": "integer"},
                        "sha256": {"type": "string"},
                        "media_type": {"type": "string"},
                        "content_base64": {"type": "string"},
                        "uri": {"type": "string"}
                    }
                }
            },
            "results": {
                "type": "array",
                "items": {"type": "object", "additionalProperties": {"type": "string"}}
            },
            "results_skipped": {"type": "array"},
            "hint": {
                "type": "object",
                "description": "A stop this server's policy could lift: which key its operator would change, what that exposes, the safer way (absent where no policy could)",
                "required": ["text", "edits"],
                "properties": {
                    "text": {"type": "string"},
                    "edits": {"type": "array"},
                    "alternative": {"type": "string"}
                }
            },
            "agentjail_version": {"type": "string"}
        }
    })
}

fn decision_schema() -> Value {
    json!({
        "type": "object",
        "required": ["decision", "reason", "violations"],
        "properties": {
            "decision": {"enum": ["allow", "deny"]},
            "reason": {"type": "string"},
            "violations": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "rule": {"type": "string"},
                        "detail": {"type": "string"},
                        "line": {"type": "integer"},
                        "column": {"type": "integer"}
                    }
                }
            },
            "check": {
                "type": "object",
                "description": "only under a policy whose check is not enforced: what it found, refusing nothing",
                "properties": {
                    "enforced": {"type": "boolean"},
                    "findings": {"type": "array"}
                }
            },
            "code_hash": {"type": "string"},
            "message": {"type": "string"}
        }
    })
}

fn seconds(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.3} s", ms as f64 / 1000.0)
    }
}

/// At most `n` items of a list, and how many were left out.
fn some_of(items: &[String], n: usize) -> String {
    let shown: Vec<&str> = items.iter().take(n).map(String::as_str).collect();
    if items.len() > n {
        format!("{} (and {} more)", shown.join(", "), items.len() - n)
    } else {
        shown.join(", ")
    }
}

/// The rules and limits every Python tool shares, from the policy.
pub fn policy_rules(p: &Policy) -> String {
    let c = &p.check;
    let l = &p.limits;
    let open = if c.denied_calls.iter().any(|d| d == "open") {
        "open() is refused: read your data from stdin (the input) instead."
    } else {
        "open() works, bounded by the jail: the host is read-only and only /tmp is writable (a fresh, empty /tmp per jail)."
    };
    let dunder = if c.deny_dunder {
        " Any name or attribute starting with `__` is refused."
    } else {
        ""
    };
    let urls = if c.deny_url_literals {
        " String literals holding a URL are refused."
    } else {
        ""
    };
    format!(
        "Policy \"{name}\" (Python {pyver}). Imports allowed: {imports}; any other import is refused before anything runs (policy_block:static_policy_violation:import_not_allowed:<module>, with line and column). Calls refused: {calls}. Names refused: {names}. Attributes refused: {attrs}.{dunder}{urls} {open} Limits per run: wall {wall} (timeout_s may only lower it), CPU {cpu}, memory {mem}, {pids} processes/threads, stdout {out}, stderr {err}, code {chars} characters. {network} The static check is not the boundary: the program also runs inside a Linux namespace jail with seccomp, landlock and cgroup limits.",
        name = p.name,
        pyver = p.python_version(),
        imports = c.allowed_imports.join(", "),
        calls = c.denied_calls.join(", "),
        names = c.denied_names.join(", "),
        attrs = some_of(&c.denied_attributes, 16),
        wall = seconds(l.wall_time_ms),
        cpu = seconds(l.cpu_time_ms),
        mem = l.memory,
        pids = l.pids,
        out = l.stdout,
        err = l.stderr,
        chars = p.budget.max_code_chars,
        network = network_sentence(p),
    )
}

/// What the policy's `[network]` gives a program, in one or two sentences.
pub fn network_sentence(p: &Policy) -> String {
    let n = &p.network;
    if n.allowlist() {
        let plain = if n.allow_http {
            "plain http:// URLs and https:// both work"
        } else {
            "https:// only (plain http:// is refused)"
        };
        format!(
            "Network: only the hosts {hosts}, through agentjail's proxy ({plain}); urllib.request and requests use it by themselves (HTTPS_PROXY/HTTP_PROXY), http.client connects to 127.0.0.1:3128; any other host is refused (HTTP 403) and every request is listed in the record's network.requests.",
            hosts = some_of(&n.allow, 12),
        )
    } else if n.enabled {
        "Network: the host's network (the policy shares it).".to_string()
    } else {
        "No network.".to_string()
    }
}

const RESULT_SHAPE: &str = "Result: structuredContent is agentjail's record: status (ok|stopped), stop_reason (success, code_timeout, code_runtime_error:<n>, policy_block:static_policy_violation:<rules>, invalid_code_output:<what>, code_memory_limit, code_output_too_large, ...), output (the validated object, only when ok), execution (exit_code, wall_ms, stdout, stderr: what the program printed, kept even when it was stopped by a timeout or a cap), error (exception type, message, line), decision.violations (rule, detail, line, column). isError is true whenever status is not ok; a text block carries the same record as compact JSON.";

/// Whether the policy lets a program open files at all (input files, artifacts).
fn open_allowed(p: &Policy) -> bool {
    !p.check.denied_calls.iter().any(|d| d == "open")
}

/// Where input files are and where artifacts go, from the policy.
fn files_and_artifacts(p: &Policy, caps: Capabilities) -> String {
    if !caps.files {
        return " `files` is not accepted by this agentjail build (the call stops with invalid_action:unknown_field:files): put the data in `input`.".into();
    }
    if !open_allowed(p) {
        return " This policy refuses open(): input files cannot be read and nothing can be saved as an artifact; put the data in `input` and print the result.".into();
    }
    let (f, a) = (&p.files, &p.artifacts);
    format!(
        " Input files: each entry of `files` ({{path, content}} for text or {{path, content_base64}} for bytes; at most {fc} files, {fb} each, {ft} in all) is placed read-only at /app/in/<path>: open('/app/in/data.csv'). Artifacts: the working directory is /app/out ({at} in all); every file the program leaves there comes back with the result (at most {ac} files, {ab} each): images (savefig('plot.png')) as image content, other files up to {ai} inline, larger ones as links with their size and sha256.",
        fc = f.max_count,
        fb = f.max_file_bytes,
        ft = f.max_total_bytes,
        at = a.max_total_bytes,
        ac = a.max_count,
        ab = a.max_file_bytes,
        ai = a.inline_max_bytes,
    )
}

fn run_description(p: &Policy, caps: Capabilities) -> String {
    format!(
        "Run a Python program once in a fresh, isolated jail and get one JSON record of what happened. How to write it: `input` (a JSON object, up to {payload}) arrives on stdin as one line: `import json; data = json.loads(input())`. Print exactly one JSON object on stdout as the result (`print(json.dumps(result))`); it is parsed and, when you pass `output_schema`, validated; anything else on stdout stops the run with invalid_code_output. Use stderr for logs.{files} {rules} {result}",
        payload = p.budget.max_payload_bytes,
        files = files_and_artifacts(p, caps),
        rules = policy_rules(p),
        result = RESULT_SHAPE,
    )
}

fn check_description(p: &Policy) -> String {
    format!(
        "Check Python code against the policy without running it: the same static check run_python applies first. Returns the decision (allow|deny), the reason, and every violation with rule, detail, line and column. Cheap (no jail); use it to pre-flight code. {}",
        policy_rules(p)
    )
}

fn session_start_description(p: &Policy) -> String {
    let s = &p.session;
    format!(
        "Start a persistent Python session: one jail and one interpreter kept across calls, so variables, imports and functions survive from one python_session_exec to the next (like a notebook kernel). Returns {{session: <id>}}; the id works only on this connection. A session allows {calls} calls and {exec} s of execution in all, and is closed after {idle} s without a call or {life} s after it started. Close it with python_session_close when done.",
        calls = s.max_calls,
        exec = s.max_exec_seconds,
        idle = s.idle_timeout_seconds,
        life = s.lifetime_seconds,
    )
}

fn session_exec_description(p: &Policy) -> String {
    let artifacts = if open_allowed(p) {
        " The working directory is /app/out: files a call creates or changes there come back with that call's result (images as image content)."
    } else {
        ""
    };
    format!(
        "Run Python code in a session started by python_session_start, like a notebook cell: globals, imports and functions from earlier calls are kept; the value of a trailing expression comes back as text in the record's `value`; print() output is in execution.stdout. There is no stdin input in a session.{artifacts} Each call is checked together with the session's earlier calls and has the per-run limits below. A Python exception fails only that call; a call that breaks a limit (timeout, CPU, memory, output cap) ends the session, and stop_reason says which. {rules} {result}",
        rules = policy_rules(p),
        result = RESULT_SHAPE,
    )
}

/// The server's `instructions`: what it is and which tool to reach for.
pub fn instructions(p: &Policy) -> String {
    format!(
        "agentjail runs Python code an agent wrote inside a Linux namespace jail under the policy \"{name}\" ({desc}) and returns one JSON record per run that says exactly what happened. run_python: one program, input on stdin, one JSON object printed as the result. python_session_start/exec/close: a persistent interpreter across calls. check_python: the static check alone. Every tool description lists the allowed imports and the limits.",
        name = p.name,
        desc = p.description,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_come_from_the_policy() {
        let p = agentjail_engine::policy::load_default()
            .expect("default")
            .policy;
        let tools = all(&p, Capabilities::probe(&p));
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                RUN_PYTHON,
                CHECK_PYTHON,
                SESSION_START,
                SESSION_EXEC,
                SESSION_CLOSE
            ]
        );
        let run = tools[0].description.as_deref().unwrap_or_default();
        assert!(run.contains("Imports allowed: json, statistics;"), "{run}");
        assert!(run.contains("wall 2 s"), "{run}");
        assert!(run.contains("memory 256MiB"), "{run}");
        assert!(run.contains("stdout 4KiB"), "{run}");
        assert!(run.contains("code 2400 characters"), "{run}");
        assert!(run.contains("open() is refused"), "{run}");
        assert!(
            run.contains("This policy refuses open(): input files cannot be read"),
            "{run}"
        );
        let old = all(&p, Capabilities { files: false });
        let old = old[0].description.as_deref().unwrap_or_default();
        assert!(old.contains("unknown_field:files"), "{old}");
        assert!(tools[0].output_schema.is_some() && tools[3].output_schema.is_some());
    }

    #[test]
    fn a_policy_that_allows_open_says_so() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../policies/data.toml");
        let p = agentjail_engine::policy::load_file(std::path::Path::new(path))
            .unwrap()
            .policy;
        let text = policy_rules(&p);
        assert!(text.contains("open() works"), "{text}");
        assert!(text.contains("matplotlib.pyplot"), "{text}");
        assert!(text.contains("wall 30 s"), "{text}");
        let io = files_and_artifacts(&p, Capabilities::probe(&p));
        assert!(io.contains("read-only at /app/in/<path>"), "{io}");
        assert!(
            io.contains("the working directory is /app/out (16MiB in all)"),
            "{io}"
        );
        assert!(io.contains("other files up to 1MiB inline"), "{io}");
    }

    fn shipped(name: &str) -> Policy {
        let path = format!("{}/../../policies/{name}.toml", env!("CARGO_MANIFEST_DIR"));
        agentjail_engine::policy::load_file(std::path::Path::new(&path))
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .policy
    }

    /// The "Imports allowed: ...;" list of a description.
    fn imports_of(text: &str) -> Vec<&str> {
        let start = text.find("Imports allowed: ").expect("imports") + "Imports allowed: ".len();
        let end = start + text[start..].find(';').expect("end of the list");
        text[start..end].split(", ").collect()
    }

    #[test]
    fn every_python_tool_lists_the_policys_imports_and_network() {
        let p = shipped("python");
        let mut tools = all(&p, Capabilities::probe(&p));
        finish(&p, &mut tools);
        for t in tools
            .iter()
            .filter(|t| t.name != SESSION_START && t.name != SESSION_CLOSE)
        {
            let d = t.description.as_deref().unwrap_or_default();
            let imports = imports_of(d);
            assert!(
                imports.contains(&"math") && imports.contains(&"re"),
                "{}: {d}",
                t.name
            );
            // A module the policy refuses is not listed.
            assert!(
                !imports
                    .iter()
                    .any(|m| m.starts_with("urllib") || *m == "os"),
                "{d}"
            );
            assert!(
                d.contains("wall 10 s") && d.contains("memory 512MiB"),
                "{d}"
            );
            assert!(d.contains("No network."), "{d}");
            let open = t.annotations.as_ref().and_then(|a| a.open_world_hint);
            assert_eq!(open, Some(false), "{}", t.name);
        }
        let net = shipped("net");
        let mut tools = all(&net, Capabilities::probe(&net));
        finish(&net, &mut tools);
        let run = tools[0].description.as_deref().unwrap_or_default();
        let imports = imports_of(run);
        assert!(imports.contains(&"urllib.request") && imports.contains(&"http.client"));
        assert!(!run.contains("No network."), "{run}");
        assert!(
            run.contains(
                "Network: only the hosts example.com:443, through agentjail's proxy (https:// only"
            ),
            "{run}"
        );
        // The network names are lifted from the refused attributes under a network policy.
        assert!(!run.contains("urlopen"), "{run}");
        let open = |name: &str| {
            let t = tools.iter().find(|t| t.name == name).expect(name);
            t.annotations.as_ref().and_then(|a| a.open_world_hint)
        };
        assert_eq!(open(RUN_PYTHON), Some(true));
        assert_eq!(open(SESSION_EXEC), Some(true));
        assert_eq!(open(CHECK_PYTHON), Some(false));
        assert_eq!(open(SESSION_CLOSE), Some(false));
    }

    #[test]
    fn optional_arguments_are_nullable_and_nulls_are_absent() {
        let p = shipped("python");
        let mut tools = all(&p, Capabilities::probe(&p));
        finish(&p, &mut tools);
        let props = tools[0].input_schema["properties"].as_object().unwrap();
        assert_eq!(props["code"].get("nullable"), None);
        for optional in [
            "input",
            "stdin",
            "output_mode",
            "files",
            "output_schema",
            "timeout_s",
        ] {
            assert_eq!(props[optional]["nullable"], true, "{optional}");
        }
        let exec = tools.iter().find(|t| t.name == SESSION_EXEC).unwrap();
        let props = exec.input_schema["properties"].as_object().unwrap();
        assert_eq!(props["timeout_s"]["nullable"], true);
        assert_eq!(props["session"].get("nullable"), None);
        let args = json!({"code": "x", "files": null, "timeout_s": null});
        let Value::Object(args) = args else {
            unreachable!()
        };
        let kept = without_nulls(args);
        assert_eq!(kept.keys().collect::<Vec<_>>(), ["code"]);
    }

    #[test]
    fn the_files_probe_reads_the_contract() {
        let p = agentjail_engine::policy::load_default()
            .expect("default")
            .policy;
        // Today's contract refuses the field; the probe must say so rather than assume.
        let caps = Capabilities::probe(&p);
        let accepted = agentjail_engine::contract::parse_action(
            br#"{"id":"p","language":"python","entrypoint":"main.py","code":"pass","input_payload":{},"files":[]}"#,
            &p,
        )
        .is_ok();
        assert_eq!(caps.files, accepted);
    }
}
