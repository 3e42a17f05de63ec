//! The workspace tools (`workspace_start`, `workspace_exec`, `workspace_put`,
//! `workspace_get`, `workspace_close`), listed where the policy enables workspaces
//! (`[workspace] enabled`): a shell and a filesystem that last across calls, for agents that
//! have no shell of their own. Each maps onto the engine's op of the same name; a
//! workspace belongs to this connection. Methods of the handler in their own file (a child
//! module of handler.rs: the handler lists and dispatches them, they use its job slots).

use super::{Handler, Progress};
use crate::result;
use agentjail_engine::engine::workspace::ExecRequest;
use agentjail_engine::engine::{Outcome, Request as EngineRequest};
use agentjail_engine::policy::Policy;
use rmcp::model::{CallToolResult, JsonObject, Tool, ToolAnnotations};
use rmcp::ErrorData as McpError;
use serde_json::{json, Map, Value};
use std::sync::Arc;

pub const START: &str = "workspace_start";
pub const EXEC: &str = "workspace_exec";
pub const PUT: &str = "workspace_put";
pub const GET: &str = "workspace_get";
pub const CLOSE: &str = "workspace_close";
pub const NAMES: [&str; 10] = [
    START,
    EXEC,
    PUT,
    GET,
    CLOSE,
    super::workspace_fs::LIST,
    super::workspace_fs::EXISTS,
    super::workspace_fs::REMOVE,
    super::workspace_fs::WAIT,
    super::workspace_fs::KILL,
];

const EXEC_ARGS: &[&str] = &[
    "workspace",
    "command",
    "argv",
    "cwd",
    "stdin",
    "env",
    "timeout_s",
    "background",
];

fn object(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(JsonObject::new()),
    }
}

fn annotations(title: &str, read_only: bool, destructive: bool) -> ToolAnnotations {
    let mut a = ToolAnnotations::with_title(title);
    a.read_only_hint = Some(read_only);
    a.destructive_hint = Some(destructive);
    a.open_world_hint = Some(false);
    a
}

fn seconds(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.3} s", ms as f64 / 1000.0)
    }
}

/// The five tools, or none where the policy does not enable workspaces.
pub fn tools(p: &Policy) -> Vec<Tool> {
    if !p.workspace.enabled {
        return Vec::new();
    }
    let mut all = vec![
        start_tool(p),
        exec_tool(p),
        put_tool(p),
        get_tool(p),
        close_tool(),
    ];
    all.extend(super::workspace_fs::tools());
    all
}

fn id_schema() -> Value {
    json!({"type": "string", "description": "The id workspace_start returned."})
}

fn start_tool(p: &Policy) -> Tool {
    let w = &p.workspace;
    let mut start = Tool::new(
        START,
        format!(
            "Start a workspace: one isolated Linux jail with a writable /workspace directory ({size}, {inodes} files) that lasts across calls, for working like in a terminal: write files, run commands (pytest, python3 x.py, ls, sed, git where installed) one after another, read results. Returns {{workspace: <id>}}; the id works only on this connection. {network} The host's programs are read-only; only /workspace (and /tmp) can be written. A workspace runs at most {execs} commands, is closed after {idle} s without a call or {life} s after it started; close it with workspace_close when done.",
            size = w.size,
            inodes = w.inodes,
            execs = w.max_execs,
            idle = w.idle_timeout_seconds,
            life = w.lifetime_seconds,
            network = crate::tools::network_sentence(p),
        ),
        object(start_schema(p)),
    );
    start.output_schema = Some(object(json!({
        "type": "object",
        "properties": {"workspace": {"type": "string"}, "error": {"type": "object"}}
    })));
    start.annotations = Some(annotations("Start a workspace", false, false));
    start
}

/// workspace_start's arguments: `host_dir` only where the policy lists host roots.
fn start_schema(p: &Policy) -> Value {
    let mut props = json!({"policy_hints": {
        "type": "object",
        "description": "Optional, may only tighten the policy (e.g. exec_timeout_seconds)."
    }});
    let roots = &p.workspace.host_roots;
    if !roots.is_empty() {
        props["host_dir"] = json!({
            "type": "string",
            "description": format!("Optional: an existing host directory beneath {} to use as /workspace instead of a fresh empty one; what the commands write stays there after close. One workspace per directory.", roots.join(", ")),
        });
    }
    json!({"type": "object", "properties": props, "additionalProperties": false})
}

fn exec_tool(p: &Policy) -> Tool {
    let l = &p.limits;
    let id = id_schema();
    let mut exec = Tool::new(
        EXEC,
        format!(
            "Run one command in a workspace, in /workspace (or `cwd` beneath it): `command` is a shell line run by /bin/sh -c (pipes, &&, redirections work), or `argv` a program and its arguments. Files and directories persist between calls; processes a command started are killed when it ends unless `background` is true. Limits per command: wall {wall} (timeout_s may only lower it), CPU {cpu}, memory {mem}, stdout {out}, stderr {err}. Result: agentjail's record: status (ok|stopped), stop_reason (success, code_runtime_error:<exit code>, code_timeout, code_output_too_large, ...), execution.exit_code, execution.stdout and execution.stderr (what the command printed, kept even when it was stopped), wall_ms, cpu_ms. isError is true when the command did not exit 0.",
            wall = seconds(l.wall_time_ms),
            cpu = seconds(l.cpu_time_ms),
            mem = l.memory,
            out = l.stdout,
            err = l.stderr,
        ),
        object(json!({
            "type": "object",
            "properties": {
                "workspace": id,
                "command": {"type": "string", "description": "A shell line for /bin/sh -c."},
                "argv": {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "A program and its arguments, instead of command."},
                "cwd": {"type": "string", "description": "Working directory: /workspace (default) or a directory beneath it."},
                "stdin": {"type": "string", "description": "Text given to the command on stdin (default: empty)."},
                "env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Extra environment variables for this command only (names must be [A-Za-z_][A-Za-z0-9_]*); what they make programs run runs in the jail like the command."},
                "timeout_s": {"type": "number", "exclusiveMinimum": 0, "description": "Wall-clock limit in seconds; may only lower the policy's."},
                "background": {"type": "boolean", "description": "Start the command in the background and return {command: <id>} at once; workspace_wait gives its record (or its output so far), workspace_kill ends it. Its processes run until it is killed or the workspace closes."}
            },
            "required": ["workspace"],
            "additionalProperties": false
        })),
    );
    exec.output_schema = Some(object(exec_output_schema()));
    exec.annotations = Some(annotations("Run a command in a workspace", false, true));
    exec
}

/// workspace_exec's result: a record, or a background command's `{command}` (so the
/// record's fields are not required here, as they are in a run's).
fn exec_output_schema() -> Value {
    let mut schema = crate::tools::record_schema();
    if let Some(o) = schema.as_object_mut() {
        o.remove("required");
    }
    schema["properties"]["command"] = json!({"type": ["string", "object"]});
    schema
}

fn put_tool(p: &Policy) -> Tool {
    let id = id_schema();
    let files = &p.files;
    let mut put = Tool::new(
        PUT,
        format!(
            "Write files into a workspace: each {{path, content}} for text or {{path, content_base64}} for bytes, path relative to /workspace (directories are made; an existing file is replaced; at most {count} files, {each} each, {total} in all per call). A symlink is never followed.",
            count = files.max_count,
            each = files.max_file_bytes,
            total = files.max_total_bytes,
        ),
        object(json!({
            "type": "object",
            "properties": {
                "workspace": id,
                "files": {"type": "array", "minItems": 1, "items": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "content": {"type": "string"}, "content_base64": {"type": "string"}},
                    "required": ["path"],
                    "additionalProperties": false
                }}
            },
            "required": ["workspace", "files"],
            "additionalProperties": false
        })),
    );
    put.annotations = Some(annotations("Write files into a workspace", false, true));
    put
}

fn get_tool(p: &Policy) -> Tool {
    let id = id_schema();
    let a = &p.artifacts;
    let mut get = Tool::new(
        GET,
        format!(
            "Read files out of a workspace: paths relative to /workspace. Each comes back as {{path, bytes, sha256, content}} (UTF-8 text) or {{path, bytes, sha256, content_base64}} (other bytes), or {{path, error}} (not_found, not_regular, symlink, too_large, ...); at most {count} files, {each} each, {total} in all per call.",
            count = a.max_count,
            each = a.max_file_bytes,
            total = a.max_total_bytes,
        ),
        object(json!({
            "type": "object",
            "properties": {
                "workspace": id,
                "paths": {"type": "array", "minItems": 1, "items": {"type": "string"}}
            },
            "required": ["workspace", "paths"],
            "additionalProperties": false
        })),
    );
    get.annotations = Some(annotations("Read files from a workspace", true, false));
    get
}

fn close_tool() -> Tool {
    let id = id_schema();
    let mut close = Tool::new(
        CLOSE,
        "Close a workspace: its jail, its files and every process in it end. Workspaces also end on their own when idle or too old, and all of this connection's end when it closes.",
        object(json!({
            "type": "object",
            "properties": {"workspace": id},
            "required": ["workspace"],
            "additionalProperties": false
        })),
    );
    close.output_schema = Some(object(json!({
        "type": "object",
        "properties": {"closed": {"type": "boolean"}, "error": {"type": "object"}}
    })));
    close.annotations = Some(annotations("Close a workspace", false, true));
    close
}

/// Only the names a tool knows (a typo must not be dropped silently).
fn known(args: &JsonObject, names: &[&str]) -> Result<(), String> {
    match args.keys().find(|k| !names.contains(&k.as_str())) {
        Some(k) => Err(format!(
            "unknown argument {:?}; this tool takes {}",
            agentjail_json::safe_text(k, 60),
            names.join(", ")
        )),
        None => Ok(()),
    }
}

fn workspace_id(args: &mut JsonObject) -> Result<String, String> {
    match args.remove("workspace") {
        Some(Value::String(s)) => Ok(s),
        None | Some(Value::Null) => {
            Err("\"workspace\" is required (the id workspace_start returned)".into())
        }
        Some(_) => Err("\"workspace\" must be a string".into()),
    }
}

/// `workspace_get`'s answer for a model: text files as `content`, other bytes as base64.
pub fn readable(mut got: Value) -> Value {
    use base64::Engine as _;
    if let Some(files) = got.get_mut("files").and_then(Value::as_array_mut) {
        for f in files {
            let Some(b) = f.get("content_base64").and_then(Value::as_str) else {
                continue;
            };
            let text = base64::engine::general_purpose::STANDARD
                .decode(b)
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok());
            if let (Some(t), Some(o)) = (text, f.as_object_mut()) {
                o.remove("content_base64");
                o.insert("content".into(), Value::String(t));
            }
        }
    }
    got
}

/// A result from an engine answer: its value, or its error as a tool error.
fn answer(r: Result<Value, agentjail_engine::engine::EngineError>) -> CallToolResult {
    match r {
        Ok(v) => result::from_value(v, false),
        Err(e) => result::error(e.code.as_str(), &e.message),
    }
}

impl Handler {
    /// One of the workspace tools.
    pub async fn workspace_call(
        &self,
        name: &str,
        args: JsonObject,
        progress: Option<Progress>,
    ) -> Result<CallToolResult, McpError> {
        match name {
            START => self.workspace_start(args, progress).await,
            EXEC => self.workspace_exec(args, progress).await,
            PUT | GET => self.workspace_files(name == PUT, args, progress).await,
            n if super::workspace_fs::NAMES.contains(&n) => {
                self.workspace_fs(n, args, progress).await
            }
            _ => self.workspace_close(args).await,
        }
    }

    async fn workspace_start(
        &self,
        mut args: JsonObject,
        progress: Option<Progress>,
    ) -> Result<CallToolResult, McpError> {
        if let Err(e) = known(&args, &["policy_hints", "host_dir"]) {
            return Ok(result::error("bad_request", &e));
        }
        let hints = args.remove("policy_hints").filter(|h| !h.is_null());
        let dir = match args.remove("host_dir") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s),
            Some(_) => {
                return Ok(result::error(
                    "bad_request",
                    "\"host_dir\" must be a string (an absolute host path)",
                ))
            }
        };
        let (e, owner) = (self.engine(), self.owner());
        let started = self
            .blocking(progress, move || {
                e.workspace_start_in(hints.as_ref(), dir.as_deref(), owner)
            })
            .await?;
        Ok(answer(started.map(|id| json!({ "workspace": id }))))
    }

    async fn workspace_exec(
        &self,
        mut args: JsonObject,
        mut progress: Option<Progress>,
    ) -> Result<CallToolResult, McpError> {
        let parsed = known(&args, EXEC_ARGS).and_then(|()| {
            let id = workspace_id(&mut args)?;
            let fields: Map<String, Value> = args;
            let req = ExecRequest::from_fields(&fields).map_err(|e| e.message)?;
            Ok((id, req))
        });
        let (id, req) = match parsed {
            Ok(p) => p,
            Err(e) => return Ok(result::refused_record("arguments", &e)),
        };
        let (e, caller) = (self.engine(), self.caller());
        let out = progress.as_mut().and_then(|p| p.stream(&e));
        let done = self
            .blocking(progress, move || {
                let exec = EngineRequest::WorkspaceExec {
                    workspace: &id,
                    request: &req,
                };
                e.handle_streaming(&caller, exec, super::sink(&out))
            })
            .await?;
        Ok(match done {
            Ok(Outcome::Record(record)) => result::from_record(&record.value),
            // A background command started: its id, for workspace_wait / workspace_kill.
            Ok(Outcome::Answer(key, started)) => result::from_value(json!({ key: started }), false),
            Ok(_) => result::error("internal", "not a record"),
            Err(e) => result::refused_record(e.code.as_str(), &e.message),
        })
    }

    /// `workspace_put` (`files`) or `workspace_get` (`paths`).
    async fn workspace_files(
        &self,
        put: bool,
        mut args: JsonObject,
        progress: Option<Progress>,
    ) -> Result<CallToolResult, McpError> {
        let field = if put { "files" } else { "paths" };
        let parsed = known(&args, &["workspace", field]).and_then(|()| {
            let id = workspace_id(&mut args)?;
            match args.remove(field) {
                Some(list @ Value::Array(_)) => Ok((id, list)),
                _ => Err(format!("\"{field}\" is required (a list)")),
            }
        });
        let (id, list) = match parsed {
            Ok(p) => p,
            Err(e) => return Ok(result::error("bad_request", &e)),
        };
        let (e, owner) = (self.engine(), self.owner());
        let done = self
            .blocking(progress, move || match put {
                true => e.workspace_put(&id, &list, owner),
                false => e.workspace_get(&id, &list, owner).map(readable),
            })
            .await?;
        Ok(answer(done))
    }

    async fn workspace_close(&self, mut args: JsonObject) -> Result<CallToolResult, McpError> {
        let id = match known(&args, &["workspace"]).and_then(|()| workspace_id(&mut args)) {
            Ok(id) => id,
            Err(e) => return Ok(result::error("bad_request", &e)),
        };
        let (e, owner) = (self.engine(), self.owner());
        let closed = tokio::task::spawn_blocking(move || e.workspace_close(&id, owner))
            .await
            .map_err(|e| McpError::internal_error(format!("closing failed: {e}"), None))?;
        Ok(answer(closed.map(|c| json!({ "closed": c }))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_comes_back_as_text_and_bytes_as_base64() {
        let got = json!({"files": [
            {"path": "a.txt", "bytes": 2, "sha256": "x", "content_base64": "aGk="},
            {"path": "b.bin", "bytes": 2, "sha256": "y", "content_base64": "/wA="},
            {"path": "c", "error": "not_found"}
        ]});
        let r = readable(got);
        assert_eq!(r["files"][0]["content"], "hi");
        assert!(r["files"][0].get("content_base64").is_none());
        assert_eq!(r["files"][1]["content_base64"], "/wA=");
        assert_eq!(r["files"][2]["error"], "not_found");
    }

    #[test]
    fn the_tools_are_listed_only_where_workspaces_are_enabled() {
        let mut p = agentjail_engine::policy::load_default()
            .expect("default")
            .policy;
        p.workspace.enabled = false;
        assert!(tools(&p).is_empty());
        p.workspace.enabled = true;
        let names: Vec<String> = tools(&p).iter().map(|t| t.name.to_string()).collect();
        assert_eq!(names, NAMES);
    }

    #[test]
    fn host_dir_is_offered_only_where_the_policy_lists_roots() {
        let mut p = agentjail_engine::policy::load_default()
            .expect("default")
            .policy;
        assert!(start_schema(&p)["properties"].get("host_dir").is_none());
        p.workspace.host_roots = vec!["/srv/ws".into()];
        let s = start_schema(&p);
        assert_eq!(s["properties"]["host_dir"]["type"], "string");
        assert!(s["properties"]["host_dir"]["description"]
            .as_str()
            .unwrap()
            .contains("/srv/ws"));
    }
}
