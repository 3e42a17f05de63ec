//! The workspace tools for looking at and tidying files (`workspace_list`,
//! `workspace_exists`, `workspace_remove`) and for background commands (`workspace_wait`,
//! `workspace_kill`): each is the serve op of the same name, its
//! arguments that op's fields read by the same parser (agentjail_engine::protocol), its
//! answer the op's. Listed with the other workspace tools (handler/workspace.rs).

use super::{Handler, Progress};
use crate::result;
use rmcp::model::{CallToolResult, JsonObject, Tool, ToolAnnotations};
use rmcp::ErrorData as McpError;
use serde_json::{json, Value};
use std::sync::Arc;

pub const LIST: &str = "workspace_list";
pub const EXISTS: &str = "workspace_exists";
pub const REMOVE: &str = "workspace_remove";
pub const WAIT: &str = "workspace_wait";
pub const KILL: &str = "workspace_kill";
pub const NAMES: [&str; 5] = [LIST, EXISTS, REMOVE, WAIT, KILL];

fn tool(name: &'static str, title: &str, description: &str, props: Value, read_only: bool) -> Tool {
    let required: Vec<&str> = match name {
        LIST => vec!["workspace"],
        WAIT | KILL => vec!["workspace", "command"],
        _ => vec!["workspace", "path"],
    };
    let schema = json!({
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": false
    });
    let Value::Object(schema) = schema else {
        unreachable!("a JSON object literal")
    };
    let mut t = Tool::new(name, description.to_string(), Arc::new(schema));
    let mut a = ToolAnnotations::with_title(title);
    a.read_only_hint = Some(read_only);
    a.destructive_hint = Some(!read_only);
    a.open_world_hint = Some(false);
    t.annotations = Some(a);
    t
}

/// The five tools (listed where workspaces are).
pub fn tools() -> Vec<Tool> {
    let id = json!({"type": "string", "description": "The id workspace_start returned."});
    let path = |what: &str| json!({"type": "string", "description": what});
    let cmd = json!({"type": "string", "description": "The id workspace_exec returned for a background command."});
    vec![
        tool(
            LIST,
            "List a workspace directory",
            "List a directory of a workspace: {listing: {path, entries: [{name, type (file|dir|symlink|other), size}], truncated}}, sorted by name, at most 1000 entries. A symlink is listed as a symlink and never followed; listing through one, or a path with `..`, is refused (error path_refused).",
            json!({"workspace": id, "path": path("A directory: relative to /workspace, or under /workspace (default: /workspace).")}),
            true,
        ),
        tool(
            EXISTS,
            "Check whether a workspace path exists",
            "Whether something is at a path in a workspace: {stat: {path, exists, type (file|dir|symlink|other, or null)}}. A symlink is reported as one, never followed; a path through a symlink or with `..` is refused (error path_refused).",
            json!({"workspace": id, "path": path("Relative to /workspace, or under /workspace.")}),
            true,
        ),
        tool(
            REMOVE,
            "Remove a workspace file or directory",
            "Remove a file or symlink (the link itself, never what it points at) from a workspace, or a directory with everything in it when recursive is true: {removed: true}. Refused (error path_refused, the reason in the message): a directory without recursive (is_a_directory), a missing path (not_found), a path through a symlink (symlink) or with `..` (bad_path), /workspace itself.",
            json!({"workspace": id, "path": path("Relative to /workspace, or under /workspace."),
                   "recursive": {"type": "boolean", "description": "Remove a directory and everything beneath it (default false)."}}),
            false,
        ),
        tool(
            WAIT,
            "Wait for a background command",
            "Wait for a background command (workspace_exec with background: true) to end, at most timeout_s seconds (default and most: the policy's wall time; 0 answers at once). Ended: its record, as workspace_exec's (exit code, stdout, stderr, stop_reason); the id is then forgotten. Still running: {running: {command, stdout, stderr, stdout_bytes, stderr_bytes}}, its output so far.",
            json!({"workspace": id, "command": cmd,
                   "timeout_s": {"type": "number", "minimum": 0, "description": "Seconds to wait at most (0: the output so far, at once)."}}),
            true,
        ),
        tool(
            KILL,
            "Kill a background command",
            "End a background command's processes (its process group, SIGKILL; the workspace and its other commands go on) and return its record.",
            json!({"workspace": id, "command": cmd}),
            false,
        ),
    ]
}

impl Handler {
    /// One of the three tools: the op parsed as serve parses it, handled by the engine.
    pub(super) async fn workspace_fs(
        &self,
        name: &str,
        args: JsonObject,
        progress: Option<Progress>,
    ) -> Result<CallToolResult, McpError> {
        let mut o = args;
        if o.contains_key("op") || o.contains_key("id") {
            return Ok(result::error("bad_request", "unknown argument"));
        }
        o.insert("op".into(), Value::String(name.into()));
        let line = serde_json::to_vec(&Value::Object(o)).unwrap_or_default();
        let op = match agentjail_engine::protocol::parse_request(&line) {
            Ok(r) => r.op,
            Err(e) => return Ok(result::error(e.code, &e.message)),
        };
        let (e, caller) = (self.engine(), self.caller());
        let done = self
            .blocking(progress, move || match op.workspace_op_request() {
                Some(request) => e.handle(&caller, request),
                None => Err(agentjail_engine::engine::EngineError {
                    code: agentjail_engine::engine::ErrorCode::BadRequest,
                    message: "not a workspace file op".into(),
                }),
            })
            .await?;
        Ok(match done {
            Ok(agentjail_engine::engine::Outcome::Answer(key, v)) => {
                result::from_value(json!({ key: v }), false)
            }
            Ok(agentjail_engine::engine::Outcome::Record(r)) => result::from_record(&r.value),
            Ok(_) => result::error("internal", "not an answer"),
            Err(e) => result::error(e.code.as_str(), &e.message),
        })
    }
}
