//! Workspaces over HTTP: the `/v1/workspaces` routes (the `serve` ops' fields as JSON
//! bodies), and the dispatch of those and, with `--pod-workspace`, of the agent-sandbox
//! in-pod runtime's routes (crate::pod) on a job thread.
//!
//! Every body is read strictly (agentjail-json); every path a client names is the engine's to
//! judge (relative or under /workspace, no `..`, no symlink followed).

// A refusal is the HTTP response itself, made once per request and returned at once.
#![allow(clippy::result_large_err)]

use crate::answer::{blocking, finish, outcome_resp};
use crate::body::{object, strict};
use crate::paths::Route;
use crate::pod::pod_route;
use crate::respond::{bad_request, engine_error, error, Resp};
use crate::state::{Caller, State};
use agentjail_engine::engine::workspace::ExecRequest;
use agentjail_engine::engine::Request as EngineRequest;
use agentjail_engine::pipeline::record::Sealed as Record;
use bytes::Bytes;
use hyper::StatusCode;
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

/// Answer a workspace route (on a job thread: bodies are parsed there too).
pub async fn dispatch(
    st: &Arc<State>,
    r: Route,
    caller: &Caller,
    body: Bytes,
    content_type: String,
) -> Resp {
    let started = Instant::now();
    let owner = st.owner(&caller.key());
    let s = Arc::clone(st);
    let caller = caller.clone();
    let answer = blocking(st, move || {
        let done = |rec: &mut Record| finish(&s, rec, &caller, started);
        match s.pod_workspace.as_ref() {
            _ if !r.is_pod() => {
                workspace_route(&s, r, &caller.engine(owner, false), &body, started, None)
            }
            Some(pod) => pod_route(&s.engine, pod, r, &content_type, &body, &done),
            None => error(
                StatusCode::NOT_FOUND,
                "not_found",
                "no such route (the agent-sandbox runtime routes need --pod-workspace)",
            ),
        }
    })
    .await;
    answer.unwrap_or_else(|resp| resp)
}

/// `POST /v1/workspaces`: empty, or `{"policy_hints": {...}?, "host_dir": "/srv/ws/x"?}`.
fn start_body(body: &[u8]) -> Result<(Option<Value>, Option<String>), String> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok((None, None));
    }
    let v = strict(body).map_err(|e| e.to_string())?;
    let Some(o) = v.as_object() else {
        return Err(
            "the body is a JSON object: {\"policy_hints\": {...}, \"host_dir\": \"...\"} or empty"
                .into(),
        );
    };
    if let Some(k) = o
        .keys()
        .find(|k| !["policy_hints", "host_dir"].contains(&k.as_str()))
    {
        return Err(format!(
            "unknown field {}",
            agentjail_json::safe_text(k, 64)
        ));
    }
    let dir = match o.get("host_dir") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("\"host_dir\" must be a string (an absolute host path)".into()),
    };
    Ok((o.get("policy_hints").cloned().filter(|h| !h.is_null()), dir))
}

/// `/v1/workspaces...`, through the engine's one door (Engine::handle stamps and audits a
/// command's record); a command's call goes on if its connection goes.
pub(crate) fn workspace_route(
    st: &State,
    r: Route,
    caller: &agentjail_engine::engine::Caller,
    body: &[u8],
    started: Instant,
    out: Option<&dyn agentjail_engine::engine::OutputSink>,
) -> Resp {
    let json_body = || strict(body).map_err(|e| bad_request(&e.to_string()));
    let e = &st.engine;
    let result = match r {
        Route::WorkspaceStart => match start_body(body) {
            Ok((hints, dir)) => e.handle(
                caller,
                EngineRequest::WorkspaceStart {
                    hints: hints.as_ref(),
                    host_dir: dir.as_deref(),
                },
            ),
            Err(m) => return bad_request(&m),
        },
        Route::WorkspaceExec(id) => {
            let req = match json_body().and_then(exec_request) {
                Ok(r) => r,
                Err(resp) => return resp,
            };
            let exec = EngineRequest::WorkspaceExec {
                workspace: &id,
                request: &req,
            };
            e.handle_streaming(caller, exec, out)
        }
        Route::WorkspacePut(id) => match json_body().and_then(|v| list_field(v, "files")) {
            Ok(files) => e.handle(
                caller,
                EngineRequest::WorkspacePut {
                    workspace: &id,
                    files: &files,
                },
            ),
            Err(resp) => return resp,
        },
        Route::WorkspaceGet(id) => match json_body().and_then(|v| list_field(v, "paths")) {
            Ok(paths) => e.handle(
                caller,
                EngineRequest::WorkspaceGet {
                    workspace: &id,
                    paths: &paths,
                },
            ),
            Err(resp) => return resp,
        },
        Route::WorkspaceClose(id) => {
            e.handle(caller, EngineRequest::WorkspaceClose { workspace: &id })
        }
        Route::WorkspaceOp(id, op) => match op_request(op, &id, body) {
            Ok(parsed) => match parsed.workspace_op_request() {
                Some(request) => e.handle(caller, request),
                None => return error(StatusCode::NOT_FOUND, "not_found", "no such route"),
            },
            Err(resp) => return resp,
        },
        _ => return error(StatusCode::NOT_FOUND, "not_found", "no such route"),
    };
    outcome_resp(st, result, started)
}

/// `POST /v1/workspaces/{id}/list|exists|remove|wait|kill`: the body (an object, or empty)
/// read as the serve op `op`'s fields, with the id from the path: one parser for both
/// front ends (agentjail_engine::protocol), so their fields and refusals are the same.
pub fn op_request(op: &str, id: &str, body: &[u8]) -> Result<agentjail_engine::protocol::Op, Resp> {
    let mut o = if body.iter().all(u8::is_ascii_whitespace) {
        serde_json::Map::new()
    } else {
        match strict(body).map_err(|e| bad_request(&e.to_string()))? {
            Value::Object(o) => o,
            _ => return Err(bad_request("the body is a JSON object of the op's fields")),
        }
    };
    for k in ["id", "op", "workspace"] {
        if o.contains_key(k) {
            return Err(bad_request(&format!("unknown field {k}")));
        }
    }
    o.insert("op".into(), Value::String(op.into()));
    o.insert("workspace".into(), Value::String(id.into()));
    let line = serde_json::to_vec(&Value::Object(o)).unwrap_or_default();
    agentjail_engine::protocol::parse_request(&line)
        .map(|r| r.op)
        .map_err(|e| error(StatusCode::BAD_REQUEST, "bad_request", &e.message))
}

/// The fields a `POST /v1/workspaces/{id}/exec` body may hold (the `workspace_exec` op's).
pub const EXEC_FIELDS: &[&str] = &[
    "command",
    "argv",
    "cwd",
    "stdin",
    "stdin_base64",
    "env",
    "timeout_s",
    "background",
];

/// `POST /v1/workspaces/{id}/exec`: the exec op's fields.
pub fn exec_request(v: Value) -> Result<ExecRequest, Resp> {
    let o = object(
        v,
        EXEC_FIELDS,
        "{\"command\": \"...\"} or {\"argv\": [...]}",
    )
    .map_err(|e| error(StatusCode::BAD_REQUEST, "bad_request", &e.to_string()))?;
    ExecRequest::from_fields(&o).map_err(engine_error)
}

/// `POST /v1/workspaces/{id}/put` (`{"files": [...]}`) or `/get` (`{"paths": [...]}`): the
/// one list.
pub fn list_field(v: Value, field: &'static str) -> Result<Value, Resp> {
    let shape = format!("{{\"{field}\": [...]}}");
    let mut o = object(v, &[field], &shape)
        .map_err(|e| error(StatusCode::BAD_REQUEST, "bad_request", &e.to_string()))?;
    match o.remove(field) {
        Some(list @ Value::Array(_)) => Ok(list),
        _ => Err(error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            &format!("{field} must be a list"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bodies_are_strict() {
        assert!(exec_request(json!({"command": "ls"})).is_ok());
        assert!(exec_request(json!({"command": "ls", "x": 1})).is_err());
        assert!(exec_request(json!({"argv": []})).is_err());
        assert!(exec_request(json!([1])).is_err());
        assert!(list_field(json!({"paths": ["a"]}), "paths").is_ok());
        assert!(list_field(json!({"paths": "a"}), "paths").is_err());
        assert!(list_field(json!({"files": []}), "paths").is_err());
    }
}
