//! `agentjail serve`'s wire protocol: one JSON request per line, one JSON response per line,
//! each response tagged with its request's `id`. These spellings are fixed (fields may be
//! added):
//!
//! ```text
//! {"id": "r1", "op": "run", "action": {...}}                → {"id": "r1", "record": {...}}
//! {"id": "r1", "op": "run", "action": {...}, "inputs": ["/srv/data/x.csv:x.csv"]}
//!                                            (host inputs, as `run --input`; policy host_roots)
//! {"id": "r2", "op": "check", "action": {...}}              → {"id": "r2", "decision": {...}}
//! {"id": "r3", "op": "session_start", "policy_hints": {...}} → {"id": "r3", "session": "<id>"}
//! {"id": "r4", "op": "session_exec", "session": "<id>", "code": "...", "timeout_s": 2}
//!                                                            → {"id": "r4", "record": {...}}
//! {"id": "r5", "op": "session_close", "session": "<id>"}     → {"id": "r5", "closed": true}
//! {"id": "r6", "op": "stats"}                                → {"id": "r6", "stats": {...}}
//! {"id": "w1", "op": "workspace_start", "policy_hints": {...}} → {"id": "w1", "workspace": "<id>"}
//!      (optional "host_dir": "/srv/ws/x": /workspace is that host directory; policy
//!       [workspace] host_roots)
//! {"id": "w2", "op": "workspace_exec", "workspace": "<id>", "command": "sh line"}
//!      (or "argv": [...]; optional cwd, stdin | stdin_base64, env, timeout_s, background)
//!                                                            → {"id": "w2", "record": {...}}
//! {"id": "w3", "op": "workspace_put", "workspace": "<id>", "files": [{path, content | content_base64}]}
//!                                                            → {"id": "w3", "files": [{path, bytes, sha256}]}
//! {"id": "w4", "op": "workspace_get", "workspace": "<id>", "paths": ["a.txt"]}
//!                                  → {"id": "w4", "files": [{path, bytes, sha256, content_base64} | {path, error}]}
//! {"id": "w5", "op": "workspace_close", "workspace": "<id>"}  → {"id": "w5", "closed": true}
//! {"id": "w6", "op": "workspace_list", "workspace": "<id>", "path": "src"}   (path optional: /workspace)
//!      → {"id": "w6", "listing": {"path": "src", "entries": [{name, type, size}], "truncated": false}}
//!        (type file | dir | symlink | other; at most 1000 entries, sorted by name)
//! {"id": "w7", "op": "workspace_exists", "workspace": "<id>", "path": "a.txt"}
//!      → {"id": "w7", "stat": {"path": "a.txt", "exists": true, "type": "file"}}  (type null when absent)
//! {"id": "w8", "op": "workspace_remove", "workspace": "<id>", "path": "build", "recursive": true}
//!      → {"id": "w8", "removed": true}
//!      (a directory only with recursive; a symlink is removed, never followed; a path
//!       refused is the error `path_refused`, its reason in the message: bad_path, symlink,
//!       outside, not_found, not_a_directory, is_a_directory, not_empty, too_deep, ...)
//! {"id": "w9", "op": "workspace_exec", "workspace": "<id>", "command": "make", "background": true}
//!      → {"id": "w9", "command": "<command id>"}   (started; no timeout unless timeout_s)
//! {"id": "wa", "op": "workspace_wait", "workspace": "<id>", "command": "<command id>", "timeout_s": 5}
//!      → {"id": "wa", "record": {...}} once it ended (the id is then forgotten), or at the
//!        timeout {"id": "wa", "running": {"command", "stdout", "stderr", "stdout_bytes",
//!        "stderr_bytes"}} (its output so far; timeout_s 0 answers at once; absent: the
//!        policy's wall time, the most a wait lasts)
//! {"id": "wb", "op": "workspace_kill", "workspace": "<id>", "command": "<command id>"}
//!      → {"id": "wb", "record": {...}}  (its process group killed; another workspace's
//!        command id, or one already reported ended, is `unknown_command`)
//! {"id": "l1", "op": "learn", "actions": [{...}, {...}]}   (1 to 8 action objects)
//!      → {"id": "l1", "learned": {"policy": "<TOML text>", "evidence": {...}, "complete": true}}
//!        (the smallest policy over the server's own that lets exactly these actions run, as
//!         `agentjail learn` writes it, and `learn --json`'s object; nothing is applied)
//! a bad line → {"id": <its id, or null>, "error": {"code": "...", "message": "..."}}
//! ```
//!
//! Streaming: `run`, `session_exec` and `workspace_exec` take `"stream": true` (a boolean;
//! absent, null or false: no event lines, as before). The program's output then comes as it
//! is read, in lines `{"id": ID, "event": "stdout" | "stderr", "data": TEXT}` before the
//! request's final line, which is the same whole record as without it. The events of one
//! stream concatenated are the record's `stdout` (or `stderr`) exactly: the same bytes, the
//! same caps, decoded at character boundaries (crate::pipeline::stream). `data` is a JSON
//! string: what the program prints can never end an event line, nor name another id.
//!
//! An error answer carries the request's id whenever one can be read ([`readable_id`]): the
//! line is a JSON object whose structure (strings, brackets, colons, commas) is well formed
//! up to the end of its one `"id"` member,
//! and that id is a string of at most [`MAX_ID_CHARS`] characters or a number. A line over
//! [`MAX_LINE_BYTES`] is not read whole: its id is echoed only when `"id"` is its first
//! member and ends within its first [`LEADING_ID_BYTES`] bytes.
//!
//! [`parse_request`] is pure (no I/O) and total: any bytes give a request or an error that
//! names what was wrong; it is fuzzed (fuzz/fuzz_targets/serve_request.rs).
//!
//! The server that speaks it is the agentjail binary's (src/serve/); the protocol is here,
//! in the engine crate, because more than that server uses it: the fuzz target, and the
//! other front ends' line bound (agentjail-http's request body, agentjail-mcp's lines).

use serde_json::{json, Value};

/// Longest request line accepted (an action may carry a 16 MiB payload).
pub const MAX_LINE_BYTES: usize = 32 * 1024 * 1024;
/// Most host inputs one run request may name.
pub const MAX_INPUTS: usize = 16;
/// Longest request id echoed back.
pub const MAX_ID_CHARS: usize = 128;
/// How much of a line over [`MAX_LINE_BYTES`] is kept to look for a leading id: room for
/// `{"id": ` and an id of [`MAX_ID_CHARS`] characters each written as a `\uXXXX` pair.
pub const LEADING_ID_BYTES: usize = 2048;

/// The strict reader's bounds for a request line: the line limit (the reader's own default,
/// 16 MiB, is the action cap, smaller than a line that carries an action and more), and the
/// reader's defaults for depth, numbers and memory.
fn read_limits() -> agentjail_json::ReadLimits {
    agentjail_json::ReadLimits {
        max_bytes: MAX_LINE_BYTES,
        ..agentjail_json::ReadLimits::default()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Run {
        action: Vec<u8>,
        /// Host inputs, `HOST_PATH[:NAME]` as `run --input` takes them (resolved against the
        /// policy's files.host_roots by the server, not here).
        inputs: Vec<String>,
    },
    Check {
        action: Vec<u8>,
    },
    SessionStart {
        policy_hints: Option<Value>,
    },
    SessionExec {
        session: String,
        code: String,
        timeout_s: Option<f64>,
    },
    SessionClose {
        session: String,
    },
    Stats,
    WorkspaceStart {
        policy_hints: Option<Value>,
        /// A host directory beneath `[workspace] host_roots` for /workspace (checked by the
        /// engine, src/engine/hostdir.rs, not here).
        host_dir: Option<String>,
    },
    WorkspaceExec {
        workspace: String,
        request: crate::engine::workspace::ExecRequest,
    },
    WorkspacePut {
        workspace: String,
        files: Value,
    },
    WorkspaceGet {
        workspace: String,
        paths: Value,
    },
    WorkspaceClose {
        workspace: String,
    },
    WorkspaceList {
        workspace: String,
        /// Absent: /workspace.
        path: String,
    },
    WorkspaceExists {
        workspace: String,
        path: String,
    },
    WorkspaceRemove {
        workspace: String,
        path: String,
        recursive: bool,
    },
    WorkspaceWait {
        workspace: String,
        command: String,
        /// Absent: the policy's wall time; 0: the output so far, at once.
        timeout_ms: Option<u64>,
    },
    WorkspaceKill {
        workspace: String,
        command: String,
    },
    Learn {
        /// Each action object's bytes (1 to engine::MAX_LEARN_ACTIONS, counted by the engine).
        actions: Vec<Vec<u8>>,
    },
}

impl Op {
    /// The engine's request for a workspace op that HTTP and MCP reach through this parser
    /// too (`workspace_list`, `workspace_exists`, `workspace_remove`, `workspace_wait`,
    /// `workspace_kill`); None for another op.
    pub fn workspace_op_request(&self) -> Option<crate::engine::Request<'_>> {
        use crate::engine::Request as R;
        Some(match self {
            Op::WorkspaceList { workspace, path } => R::WorkspaceList { workspace, path },
            Op::WorkspaceExists { workspace, path } => R::WorkspaceExists { workspace, path },
            Op::WorkspaceRemove {
                workspace,
                path,
                recursive,
            } => R::WorkspaceRemove {
                workspace,
                path,
                recursive: *recursive,
            },
            Op::WorkspaceWait {
                workspace,
                command,
                timeout_ms,
            } => R::WorkspaceWait {
                workspace,
                command,
                timeout_ms: *timeout_ms,
            },
            Op::WorkspaceKill { workspace, command } => R::WorkspaceKill { workspace, command },
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// A string or a number, echoed back as sent (null when absent).
    pub id: Value,
    pub op: Op,
    /// `"stream": true`: the output as events before the record (run, session_exec,
    /// workspace_exec only).
    pub stream: bool,
}

/// Why a line is not a request: the response's `error.code` and `message`, and the id when
/// the line had a usable one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError {
    pub id: Value,
    pub code: &'static str,
    pub message: String,
}

fn err(id: &Value, code: &'static str, message: impl Into<String>) -> ProtocolError {
    ProtocolError {
        id: id.clone(),
        code,
        message: message.into(),
    }
}

/// workspace_start's optional `host_dir`: a string, or absent (or null).
fn host_dir(v: Option<Value>) -> Result<Option<String>, &'static str> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err("\"host_dir\" must be a string (an absolute host path)"),
    }
}

/// A request's `"stream"`: a boolean (absent or null: false), of run, session_exec and
/// workspace_exec only.
fn stream_field(v: Option<Value>, op: &str, id: &Value) -> Result<bool, ProtocolError> {
    let streams = matches!(op, "run" | "session_exec" | "workspace_exec");
    match v {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) if streams => Ok(b),
        Some(Value::Bool(_)) => Err(err(
            id,
            "bad_request",
            format!("\"stream\" is for run, session_exec and workspace_exec, not {op}"),
        )),
        Some(_) => Err(err(id, "bad_request", "\"stream\" must be true or false")),
    }
}

/// What a request with no known `op` is told.
const ONE_OF: &str = "\"op\" must be one of run, check, session_start, session_exec, session_close, stats, workspace_start, workspace_exec, workspace_put, workspace_get, workspace_close, workspace_list, workspace_exists, workspace_remove, workspace_wait, workspace_kill, learn";

/// Parse one request line (without its newline).
pub fn parse_request(line: &[u8]) -> Result<Request, ProtocolError> {
    let null = Value::Null;
    if line.len() > MAX_LINE_BYTES {
        return Err(line_too_long(leading_id(line)));
    }
    let v = agentjail_json::parse_strict(line, &read_limits())
        .map_err(|e| err(&readable_id(line), "bad_json", e.to_string()))?;
    let Value::Object(mut obj) = v else {
        return Err(err(
            &null,
            "bad_request",
            "a request is a JSON object with \"id\" and \"op\"",
        ));
    };
    let id = match obj.remove("id") {
        None | Some(Value::Null) => Value::Null,
        Some(Value::String(s)) if s.chars().count() <= MAX_ID_CHARS => Value::String(s),
        Some(Value::Number(n)) => Value::Number(n),
        Some(_) => {
            return Err(err(
                &null,
                "bad_request",
                format!("\"id\" must be a string of at most {MAX_ID_CHARS} characters or a number"),
            ))
        }
    };
    let op = match obj.remove("op") {
        Some(Value::String(s)) => s,
        _ => return Err(err(&id, "bad_request", ONE_OF)),
    };
    let allowed: &[&str] = match op.as_str() {
        "run" => &["action", "inputs"],
        "check" => &["action"],
        "session_start" => &["policy_hints"],
        "session_exec" => &["session", "code", "timeout_s"],
        "session_close" => &["session"],
        "stats" => &[],
        "workspace_start" => &["policy_hints", "host_dir"],
        "workspace_exec" => &[
            "workspace",
            "command",
            "argv",
            "cwd",
            "stdin",
            "stdin_base64",
            "env",
            "timeout_s",
            "background",
        ],
        "workspace_put" => &["workspace", "files"],
        "workspace_get" => &["workspace", "paths"],
        "workspace_close" => &["workspace"],
        "workspace_list" => &["workspace", "path"],
        "workspace_exists" => &["workspace", "path"],
        "workspace_remove" => &["workspace", "path", "recursive"],
        "workspace_wait" => &["workspace", "command", "timeout_s"],
        "workspace_kill" => &["workspace", "command"],
        "learn" => &["actions"],
        _ => return Err(err(&id, "unknown_op", ONE_OF)),
    };
    let stream = stream_field(obj.remove("stream"), &op, &id)?;
    if let Some(k) = obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        let k = crate::verdict::StopReason::suffix(k);
        return Err(err(
            &id,
            "bad_request",
            format!(
                "unknown field {k:?} for op {op}; allowed: {}",
                allowed.join(", ")
            ),
        ));
    }
    let op = build_op(&op, obj, &id)?;
    Ok(Request { id, op, stream })
}

fn build_op(
    op: &str,
    mut obj: serde_json::Map<String, Value>,
    id: &Value,
) -> Result<Op, ProtocolError> {
    let string = |obj: &mut serde_json::Map<String, Value>, key: &str| take_string(obj, key, id);
    Ok(match op {
        "run" | "check" => {
            let action = match obj.remove("action") {
                Some(a @ Value::Object(_)) => serde_json::to_vec(&a).unwrap_or_default(),
                _ => {
                    return Err(err(
                        id,
                        "bad_request",
                        "\"action\" must be the action object",
                    ))
                }
            };
            if op == "run" {
                let inputs = run_inputs(obj.remove("inputs"), id)?;
                Op::Run { action, inputs }
            } else {
                Op::Check { action }
            }
        }
        "session_start" => Op::SessionStart {
            policy_hints: obj.remove("policy_hints").filter(|h| !h.is_null()),
        },
        "session_exec" => {
            let session = string(&mut obj, "session")?;
            let code = string(&mut obj, "code")?;
            let timeout_s = timeout(obj.remove("timeout_s"), id)?;
            Op::SessionExec {
                session,
                code,
                timeout_s,
            }
        }
        "session_close" => Op::SessionClose {
            session: string(&mut obj, "session")?,
        },
        "workspace_start" => Op::WorkspaceStart {
            policy_hints: obj.remove("policy_hints").filter(|h| !h.is_null()),
            host_dir: host_dir(obj.remove("host_dir")).map_err(|m| err(id, "bad_request", m))?,
        },
        "workspace_exec" => {
            let workspace = string(&mut obj, "workspace")?;
            let request = crate::engine::workspace::ExecRequest::from_fields(&obj)
                .map_err(|e| err(id, e.code.as_str(), e.message))?;
            Op::WorkspaceExec { workspace, request }
        }
        "workspace_put" => Op::WorkspacePut {
            workspace: string(&mut obj, "workspace")?,
            files: obj.remove("files").unwrap_or(Value::Null),
        },
        "workspace_get" => Op::WorkspaceGet {
            workspace: string(&mut obj, "workspace")?,
            paths: obj.remove("paths").unwrap_or(Value::Null),
        },
        "workspace_close" => Op::WorkspaceClose {
            workspace: string(&mut obj, "workspace")?,
        },
        "workspace_list" | "workspace_exists" | "workspace_remove" | "workspace_wait"
        | "workspace_kill" => return build_agent_op(op, obj, id),
        "learn" => Op::Learn {
            actions: learn_actions(obj.remove("actions"), id)?,
        },
        _ => Op::Stats,
    })
}

/// learn's `actions`: a non-empty list of action objects, each kept as its bytes.
fn learn_actions(v: Option<Value>, id: &Value) -> Result<Vec<Vec<u8>>, ProtocolError> {
    let bad = || {
        err(
            id,
            "bad_request",
            "\"actions\" must be a non-empty list of action objects",
        )
    };
    match v {
        Some(Value::Array(items)) if !items.is_empty() => items
            .into_iter()
            .map(|a| match a {
                a @ Value::Object(_) => Ok(serde_json::to_vec(&a).unwrap_or_default()),
                _ => Err(bad()),
            })
            .collect(),
        _ => Err(bad()),
    }
}

/// `obj[key]`, which must be a string, taken out.
fn take_string(
    obj: &mut serde_json::Map<String, Value>,
    key: &str,
    id: &Value,
) -> Result<String, ProtocolError> {
    match obj.remove(key) {
        Some(Value::String(s)) => Ok(s),
        _ => Err(err(
            id,
            "bad_request",
            format!("\"{key}\" must be a string"),
        )),
    }
}

/// The workspace ops a coding agent uses beside exec, put and get (list, exists, remove,
/// and a background command's wait and kill).
fn build_agent_op(
    op: &str,
    mut obj: serde_json::Map<String, Value>,
    id: &Value,
) -> Result<Op, ProtocolError> {
    let string = |obj: &mut serde_json::Map<String, Value>, key: &str| take_string(obj, key, id);
    Ok(match op {
        "workspace_list" => Op::WorkspaceList {
            workspace: string(&mut obj, "workspace")?,
            path: match obj.get("path") {
                None | Some(Value::Null) => crate::engine::workspace::WORKSPACE.to_string(),
                _ => string(&mut obj, "path")?,
            },
        },
        "workspace_exists" => Op::WorkspaceExists {
            workspace: string(&mut obj, "workspace")?,
            path: string(&mut obj, "path")?,
        },
        "workspace_remove" => Op::WorkspaceRemove {
            workspace: string(&mut obj, "workspace")?,
            path: string(&mut obj, "path")?,
            recursive: match obj.remove("recursive") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => b,
                Some(_) => {
                    return Err(err(
                        id,
                        "bad_request",
                        "\"recursive\" must be true or false",
                    ))
                }
            },
        },
        "workspace_wait" => Op::WorkspaceWait {
            workspace: string(&mut obj, "workspace")?,
            command: string(&mut obj, "command")?,
            timeout_ms: match obj.remove("timeout_s") {
                None | Some(Value::Null) => None,
                Some(Value::Number(n)) => match n.as_f64() {
                    Some(t) if t.is_finite() && t >= 0.0 => Some((t * 1000.0).min(1e12) as u64),
                    _ => {
                        return Err(err(
                            id,
                            "bad_request",
                            "\"timeout_s\" must be a number of seconds, 0 or more",
                        ))
                    }
                },
                Some(_) => {
                    return Err(err(
                        id,
                        "bad_request",
                        "\"timeout_s\" must be a number of seconds, 0 or more",
                    ))
                }
            },
        },
        _ => Op::WorkspaceKill {
            workspace: string(&mut obj, "workspace")?,
            command: string(&mut obj, "command")?,
        },
    })
}

/// A run request's `inputs`: at most MAX_INPUTS non-empty strings (resolved by the server).
fn run_inputs(v: Option<Value>, id: &Value) -> Result<Vec<String>, ProtocolError> {
    let ok = |s: &str| !s.is_empty() && s.len() <= 4096;
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items))
            if items.len() <= MAX_INPUTS && items.iter().all(|i| i.as_str().is_some_and(ok)) =>
        {
            Ok(items
                .into_iter()
                .filter_map(|i| i.as_str().map(str::to_string))
                .collect())
        }
        Some(_) => Err(err(
            id,
            "bad_request",
            format!(
                "\"inputs\" must be a list of at most {MAX_INPUTS} \"HOST_PATH[:NAME]\" strings"
            ),
        )),
    }
}

/// A session call's `timeout_s`: absent, or a positive finite number of seconds.
fn timeout(v: Option<Value>, id: &Value) -> Result<Option<f64>, ProtocolError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(t) if t.is_finite() && t > 0.0 => Ok(Some(t)),
            _ => Err(err(
                id,
                "bad_request",
                "\"timeout_s\" must be a positive number",
            )),
        },
        Some(_) => Err(err(
            id,
            "bad_request",
            "\"timeout_s\" must be a positive number",
        )),
    }
}

/// The answer to a line over [`MAX_LINE_BYTES`], with the id read from its start.
pub fn line_too_long(id: Value) -> ProtocolError {
    err(
        &id,
        "line_too_long",
        format!("a request line is at most {MAX_LINE_BYTES} bytes"),
    )
}

/// The id of a line that is not a valid request, when it can be read: the line is an object
/// whose structure (strings, brackets, colons and commas) is well formed up to the end of
/// its `"id"` member, there is no second `"id"`
/// member before the text goes wrong, and the id is one the protocol echoes (a string of at
/// most [`MAX_ID_CHARS`] characters, or a number). Otherwise null. One pass over the text,
/// no value built but the id's.
pub fn readable_id(line: &[u8]) -> Value {
    scan_id(line, false)
}

/// The id of a line too long to read whole, from its first [`LEADING_ID_BYTES`] bytes: only
/// when `"id"` is the object's first member and ends within them. Null otherwise.
pub fn leading_id(line: &[u8]) -> Value {
    scan_id(&line[..line.len().min(LEADING_ID_BYTES)], true)
}

/// A brace as a named byte (the grep-based house rules this tree once had counted braces,
/// and an unpaired brace literal in a function made them lose their place).
const OBJECT_OPEN: u8 = b'{';

/// Walk the top-level object's members in `text`; see [`readable_id`] and [`leading_id`].
fn scan_id(text: &[u8], first_only: bool) -> Value {
    let mut s = Scan { text, at: 0 };
    let mut found: Option<Value> = None;
    s.ws();
    if !s.eat(OBJECT_OPEN) {
        return Value::Null;
    }
    loop {
        s.ws();
        let Some(key) = s.string() else { break };
        s.ws();
        if !s.eat(b':') {
            break;
        }
        s.ws();
        let value_at = s.at;
        if !s.value() {
            break;
        }
        let is_id = serde_json::from_slice::<String>(key).is_ok_and(|k| k == "id");
        if is_id {
            if found.is_some() {
                // Two ids: the strict reader refuses the line, and neither is the one.
                return Value::Null;
            }
            found = Some(echoable(&text[value_at..s.at]));
        }
        if first_only {
            break;
        }
        s.ws();
        if !s.eat(b',') {
            break;
        }
    }
    found.unwrap_or(Value::Null)
}

/// An id's text as the protocol echoes it, or null (see `parse_request`).
fn echoable(text: &[u8]) -> Value {
    match serde_json::from_slice::<Value>(text) {
        Ok(Value::String(s)) if s.chars().count() <= MAX_ID_CHARS => Value::String(s),
        Ok(n @ Value::Number(_)) => n,
        _ => Value::Null,
    }
}

/// A cursor over JSON text that recognises tokens without building values: only as much
/// as finding a member's end needs (strings with their escapes, brackets outside strings).
struct Scan<'a> {
    text: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        let ok = self.peek() == Some(b);
        if ok {
            self.at += 1;
        }
        ok
    }

    /// A string token, quotes included; None when there is none here or it never ends.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        if !self.eat(b'"') {
            return None;
        }
        loop {
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    let text: &'a [u8] = self.text;
                    return Some(&text[start..self.at]);
                }
                b'\\' => self.at += 2,
                _ => self.at += 1,
            }
        }
    }

    /// Skip one value; false when the text ends or its structure goes wrong first. A
    /// container is skipped by matching brackets outside strings; scalars are not checked
    /// (the strict reader names what is wrong with them).
    fn value(&mut self) -> bool {
        match self.peek() {
            Some(b'"') => self.string().is_some(),
            Some(b'{' | b'[') => {
                // The closers expected, innermost last.
                let mut open: Vec<u8> = Vec::new();
                loop {
                    match self.peek() {
                        None => return false,
                        Some(b'"') => {
                            if self.string().is_none() {
                                return false;
                            }
                            continue;
                        }
                        Some(b'{') => open.push(b'}'),
                        Some(b'[') => open.push(b']'),
                        Some(c @ (b'}' | b']')) => {
                            if open.pop() != Some(c) {
                                return false;
                            }
                            if open.is_empty() {
                                self.at += 1;
                                return true;
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
            }
            Some(_) => {
                let start = self.at;
                while let Some(b) = self.peek() {
                    if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.at += 1;
                }
                self.at > start
            }
            None => false,
        }
    }
}

/// The error response line's value.
pub fn error_response(e: &ProtocolError) -> Value {
    json!({"id": e.id, "error": {"code": e.code, "message": e.message}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_is_an_opt_in_boolean_of_the_three_running_ops() {
        for line in [
            &br#"{"id": 1, "op": "run", "action": {}, "stream": true}"#[..],
            br#"{"id": 1, "op": "session_exec", "session": "s", "code": "1", "stream": true}"#,
            br#"{"id": 1, "op": "workspace_exec", "workspace": "w", "command": "ls", "stream": true}"#,
        ] {
            assert!(parse_request(line).unwrap().stream);
        }
        let plain = parse_request(br#"{"id": 1, "op": "run", "action": {}}"#).unwrap();
        assert!(!plain.stream);
        let off = br#"{"id": 1, "op": "run", "action": {}, "stream": null}"#;
        assert!(!parse_request(off).unwrap().stream);
        let e = parse_request(br#"{"id": 2, "op": "check", "action": {}, "stream": true}"#)
            .unwrap_err();
        assert_eq!((e.code, e.id), ("bad_request", json!(2)));
        let e =
            parse_request(br#"{"id": 3, "op": "run", "action": {}, "stream": "yes"}"#).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("bad_request", "\"stream\" must be true or false")
        );
    }

    #[test]
    fn the_fixed_spellings_parse() {
        let r = parse_request(br#"{"id": "r1", "op": "run", "action": {"id": "a"}}"#).unwrap();
        assert_eq!(r.id, json!("r1"));
        assert!(matches!(r.op, Op::Run { .. }));
        let r = parse_request(
            br#"{"id": 7, "op": "session_exec", "session": "s", "code": "1", "timeout_s": 0.5}"#,
        )
        .unwrap();
        assert_eq!(
            r.op,
            Op::SessionExec {
                session: "s".into(),
                code: "1".into(),
                timeout_s: Some(0.5)
            }
        );
        let r = parse_request(br#"{"id": "r5", "op": "session_close", "session": "s"}"#).unwrap();
        assert_eq!(
            r.op,
            Op::SessionClose {
                session: "s".into()
            }
        );
    }

    #[test]
    fn the_workspace_ops_parse() {
        let r = parse_request(br#"{"id": "w", "op": "workspace_exec", "workspace": "a", "command": "ls", "env": {"X": "1"}, "background": true}"#).unwrap();
        let Op::WorkspaceExec { workspace, request } = r.op else {
            panic!("{:?}", r.op)
        };
        assert_eq!((workspace.as_str(), request.background), ("a", true));
        assert_eq!(request.env, [("X".to_string(), "1".to_string())]);
        let e = parse_request(br#"{"id": "w", "op": "workspace_exec", "workspace": "a", "command": "ls", "env": {"A=B": "x"}}"#).unwrap_err();
        assert_eq!((e.code, e.id), ("bad_env", json!("w")));
        let e =
            parse_request(br#"{"id": "w", "op": "workspace_get", "workspace": "a", "files": []}"#)
                .unwrap_err();
        assert_eq!(e.code, "bad_request");
        for line in [
            &br#"{"op": "workspace_start"}"#[..],
            br#"{"op": "workspace_put", "workspace": "a", "files": []}"#,
            br#"{"op": "workspace_get", "workspace": "a", "paths": ["x"]}"#,
            br#"{"op": "workspace_close", "workspace": "a"}"#,
            br#"{"op": "workspace_start", "host_dir": "/srv/ws/a"}"#,
            br#"{"op": "workspace_start", "host_dir": null}"#,
        ] {
            assert!(
                parse_request(line).is_ok(),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        let e = parse_request(br#"{"op": "workspace_start", "host_dir": ["/srv"]}"#).unwrap_err();
        assert_eq!(e.code, "bad_request");
        let r = parse_request(br#"{"op": "workspace_start", "host_dir": "/srv/ws/a"}"#).unwrap();
        assert!(
            matches!(r.op, Op::WorkspaceStart { host_dir: Some(ref d), .. } if d == "/srv/ws/a")
        );
    }

    /// The agent ops: list's path defaults to /workspace, remove's recursive to false, a
    /// wait's timeout may be 0; anything of the wrong type is a bad_request.
    #[test]
    fn the_agent_workspace_ops_parse() {
        let op = |line: &[u8]| parse_request(line).map(|r| r.op);
        assert_eq!(
            op(br#"{"op": "workspace_list", "workspace": "a"}"#),
            Ok(Op::WorkspaceList {
                workspace: "a".into(),
                path: "/workspace".into()
            })
        );
        assert_eq!(
            op(br#"{"op": "workspace_remove", "workspace": "a", "path": "b"}"#),
            Ok(Op::WorkspaceRemove {
                workspace: "a".into(),
                path: "b".into(),
                recursive: false
            })
        );
        assert_eq!(
            op(br#"{"op": "workspace_wait", "workspace": "a", "command": "c", "timeout_s": 0}"#),
            Ok(Op::WorkspaceWait {
                workspace: "a".into(),
                command: "c".into(),
                timeout_ms: Some(0)
            })
        );
        assert!(matches!(
            op(br#"{"op": "workspace_kill", "workspace": "a", "command": "c"}"#),
            Ok(Op::WorkspaceKill { .. })
        ));
        for bad in [
            &br#"{"op": "workspace_exists", "workspace": "a"}"#[..],
            br#"{"op": "workspace_remove", "workspace": "a", "path": "b", "recursive": 1}"#,
            br#"{"op": "workspace_wait", "workspace": "a", "command": "c", "timeout_s": -1}"#,
            br#"{"op": "workspace_wait", "workspace": "a"}"#,
            br#"{"op": "workspace_kill", "workspace": "a", "command": "c", "signal": 9}"#,
            br#"{"op": "workspace_list", "workspace": "a", "path": 3}"#,
        ] {
            let e = op(bad).unwrap_err();
            assert_eq!(e.code, "bad_request", "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn bad_lines_name_what_is_wrong() {
        assert_eq!(parse_request(b"not json").unwrap_err().code, "bad_json");
        assert_eq!(parse_request(b"[1]").unwrap_err().code, "bad_request");
        let e = parse_request(br#"{"id": "x", "op": "fly"}"#).unwrap_err();
        assert_eq!((e.code, e.id), ("unknown_op", json!("x")));
        let e =
            parse_request(br#"{"id": "x", "op": "run", "action": {}, "extra": 1}"#).unwrap_err();
        assert_eq!(e.code, "bad_request");
        // A duplicate key anywhere is refused, never resolved silently.
        let e = parse_request(br#"{"id": "x", "op": "run", "action": {"code": "a", "code": "b"}}"#)
            .unwrap_err();
        assert_eq!(e.code, "bad_json");
        let e = parse_request(br#"{"id": {"a": 1}, "op": "stats"}"#).unwrap_err();
        assert_eq!((e.code, e.id), ("bad_request", Value::Null));
    }

    #[test]
    fn an_error_answer_carries_the_id_whenever_it_can_be_read() {
        let id_of = |line: &[u8]| parse_request(line).unwrap_err().id;
        // Malformed after the id, in a value before it, with an escaped key, numbers.
        assert_eq!(
            id_of(br#"{"id": "a", "op": "run", "action": {"x": }}"#),
            json!("a")
        );
        assert_eq!(
            id_of(br#"{"op": "run", "action": {"s": "}\"{"}, "id": "b", "x": tru}"#),
            json!("b")
        );
        assert_eq!(
            id_of(br#"{"\u0069d": 7, "op": "stats", "op": "stats"}"#),
            json!(7)
        );
        assert_eq!(
            id_of(br#"{"id": 1.5e3, "op": "run", "action": {"a": 1, "a": 2}}"#),
            serde_json::from_str::<Value>("1.5e3").unwrap()
        );
        // Unreadable: before the id the text goes wrong; two ids; an id never echoed.
        assert_eq!(
            id_of(br#"{"op": "run", "action": {"x": ]], "id": "c"}"#),
            Value::Null
        );
        assert_eq!(
            id_of(br#"{"op": "run", "action": {"x": 1], "id": "c"}"#),
            Value::Null
        );
        assert_eq!(
            id_of(br#"{"id": "d", "id": "e", "op": "stats"}"#),
            Value::Null
        );
        assert_eq!(id_of(br#"{"id": {"n": 1}, "op": "stats"#), Value::Null);
        assert_eq!(id_of(br#"{"op": "stats", "id": "#), Value::Null);
        let long = format!(r#"{{"id": "{}", "op": "#, "i".repeat(MAX_ID_CHARS + 1));
        assert_eq!(id_of(long.as_bytes()), Value::Null);
        // A line too long to read: only a leading id, within LEADING_ID_BYTES.
        assert_eq!(
            leading_id(br#" {"id":"f","op":"run","action":{"#),
            json!("f")
        );
        assert_eq!(leading_id(br#"{"op":"run","id":"g"}"#), Value::Null);
        let far = format!(r#"{{"id": {}"h"}}"#, " ".repeat(LEADING_ID_BYTES));
        assert_eq!(leading_id(far.as_bytes()), Value::Null);
        let widest = format!(r#"{{"id": "{}"}}"#, "\\ud83d\\ude00".repeat(MAX_ID_CHARS));
        assert!(widest.len() < LEADING_ID_BYTES);
        assert_eq!(
            leading_id(widest.as_bytes()),
            json!("\u{1F600}".repeat(MAX_ID_CHARS))
        );
    }

    #[test]
    fn a_line_up_to_the_line_limit_is_read_past_the_readers_default() {
        let payload = "x".repeat(agentjail_json::ReadLimits::default().max_bytes);
        let line = format!(r#"{{"id": "big", "op": "check", "action": {{"p": "{payload}"}}}}"#);
        assert!(line.len() > agentjail_json::ReadLimits::default().max_bytes);
        let r = parse_request(line.as_bytes()).unwrap();
        assert_eq!(r.id, json!("big"));
    }
}
