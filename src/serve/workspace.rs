//! `serve`'s workspace ops (agentjail_engine::protocol spells them;
//! crates/agentjail-engine/src/engine/workspace.rs runs them) as
//! the engine's requests.

use super::Op;
use agentjail_engine::engine::Request;

/// The engine request of a workspace op; None for another op.
pub(super) fn request(op: &Op) -> Option<Request<'_>> {
    Some(match op {
        Op::WorkspaceStart {
            policy_hints,
            host_dir,
        } => Request::WorkspaceStart {
            hints: policy_hints.as_ref(),
            host_dir: host_dir.as_deref(),
        },
        Op::WorkspaceExec { workspace, request } => Request::WorkspaceExec { workspace, request },
        Op::WorkspacePut { workspace, files } => Request::WorkspacePut { workspace, files },
        Op::WorkspaceGet { workspace, paths } => Request::WorkspaceGet { workspace, paths },
        Op::WorkspaceClose { workspace } => Request::WorkspaceClose { workspace },
        _ => return op.workspace_op_request(),
    })
}
