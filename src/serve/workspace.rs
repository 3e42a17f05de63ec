//! `serve`'s workspace ops (protocol.rs spells them; src/engine/workspace.rs runs them).

use super::{Conn, Op};
use crate::engine::{Engine, EngineError};
use serde_json::{json, Value};

/// One workspace request's response.
pub(super) fn handle(
    engine: &Engine,
    op: Op,
    conn: &Conn,
    id: Value,
    audited: &dyn Fn(&crate::pipeline::record::Sealed),
) -> Value {
    let engine_err = |e: EngineError| json!({"id": id, "error": {"code": e.code.as_str(), "message": e.message}});
    let owner = conn.owner;
    let answer = |r: Result<Value, EngineError>, key: &str| match r {
        Ok(v) => json!({"id": id, key: v}),
        Err(e) => engine_err(e),
    };
    match op {
        Op::WorkspaceStart {
            policy_hints,
            host_dir,
        } => answer(
            engine
                .workspace_start_in(policy_hints.as_ref(), host_dir.as_deref(), owner)
                .map(Value::String),
            "workspace",
        ),
        Op::WorkspaceExec { workspace, request } => {
            match engine.workspace_exec_for(&workspace, &request, owner, conn.stop.as_deref()) {
                Ok(mut record) => {
                    if let Some(uid) = owner.uid {
                        record.set_caller(json!({ "uid": uid }), false);
                    }
                    audited(&record);
                    json!({"id": id, "record": record.value})
                }
                Err(e) => engine_err(e),
            }
        }
        Op::WorkspacePut { workspace, files } => {
            match engine.workspace_put(&workspace, &files, owner) {
                Ok(v) => json!({"id": id, "files": v["files"]}),
                Err(e) => engine_err(e),
            }
        }
        Op::WorkspaceGet { workspace, paths } => {
            match engine.workspace_get(&workspace, &paths, owner) {
                Ok(v) => json!({"id": id, "files": v["files"]}),
                Err(e) => engine_err(e),
            }
        }
        Op::WorkspaceClose { workspace } => answer(
            engine.workspace_close(&workspace, owner).map(Value::Bool),
            "closed",
        ),
        _ => json!({"id": id, "error": {"code": "bad_request", "message": "not a workspace op"}}),
    }
}
