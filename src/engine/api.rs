//! The engine's one typed door: a [`Request`] from a [`Caller`], handled by
//! [`Engine::handle`], answered with an [`Outcome`] or an [`EngineError`]. What every front
//! end would otherwise redo is done here once: a record is stamped with its caller and
//! appended to the audit log before it is returned. A front end only translates: its wire
//! format into a `Request`, the `Outcome` or the error's code into its wire format (serve:
//! JSON lines; the error codes' tables stay in the front ends, crate::engine::ErrorCode).
//!
//! `serve` speaks through it; HTTP and MCP still call the engine's methods one by one
//! (issue 37 moves them here next).

use super::session::Owner;
use super::workspace::ExecRequest;
use super::{ClientStop, Engine, EngineError};
use crate::pipeline::record::Sealed;
use serde_json::Value;

/// Who asks. `owner` is whom sessions and workspaces belong to and are counted against
/// (`max_per_client`); `stop` ends the caller's running jobs when its connection goes
/// (`interrupted:sighup`); `named` is how records name the caller (serve: `{"uid"}` of a
/// socket's peer) and whether the audit log's copy names it too.
pub struct Caller<'a> {
    pub owner: Owner,
    pub stop: Option<&'a ClientStop>,
    pub named: Option<(Value, bool)>,
}

/// One request, as every front end can ask it.
pub enum Request<'a> {
    /// A job: the whole pipeline over these action bytes, host inputs (already resolved
    /// against the policy's host roots: crate::inputs) bound at /app/in.
    Run {
        action: &'a [u8],
        inputs: Vec<crate::plan::HostInput>,
    },
    /// The contract and the static check only.
    Check {
        action: &'a [u8],
    },
    SessionStart {
        hints: Option<&'a Value>,
    },
    SessionExec {
        session: &'a str,
        code: &'a str,
        timeout_s: Option<f64>,
    },
    SessionClose {
        session: &'a str,
    },
    WorkspaceStart {
        hints: Option<&'a Value>,
        host_dir: Option<&'a str>,
    },
    WorkspaceExec {
        workspace: &'a str,
        request: &'a ExecRequest,
    },
    WorkspacePut {
        workspace: &'a str,
        files: &'a Value,
    },
    WorkspaceGet {
        workspace: &'a str,
        paths: &'a Value,
    },
    WorkspaceClose {
        workspace: &'a str,
    },
    Stats,
}

/// What a request produced.
pub enum Outcome {
    /// A job's or a call's record: stamped with its caller and already in the audit log.
    Record(Sealed),
    /// `check`'s decision, and whether it allows.
    Decision(Value, bool),
    /// A new session's id.
    Session(String),
    /// A new workspace's id.
    Workspace(String),
    /// Whether a session or workspace was closed by this request.
    Closed(bool),
    /// A workspace's files, as put (their sizes and digests) or got (their contents).
    Files(Value),
    Stats(Value),
}

impl Engine {
    /// Handle one request for `caller`. A record is stamped and audited here, whichever
    /// front end asked; a refused request is an [`EngineError`] and leaves no record.
    pub fn handle(&self, caller: &Caller, request: Request) -> Result<Outcome, EngineError> {
        let owner = caller.owner;
        let outcome = match request {
            Request::Run { action, inputs } => {
                Outcome::Record(self.run_for_client(action, owner.uid, inputs, caller.stop))
            }
            Request::Check { action } => {
                let (decision, allow) = self.check(action);
                Outcome::Decision(decision, allow)
            }
            Request::SessionStart { hints } => Outcome::Session(self.session_start(hints, owner)?),
            Request::SessionExec {
                session,
                code,
                timeout_s,
            } => Outcome::Record(self.session_exec_for(
                session,
                code,
                timeout_s,
                owner,
                caller.stop,
            )?),
            Request::SessionClose { session } => {
                Outcome::Closed(self.session_close(session, owner)?)
            }
            Request::WorkspaceStart { hints, host_dir } => {
                Outcome::Workspace(self.workspace_start_in(hints, host_dir, owner)?)
            }
            Request::WorkspaceExec { workspace, request } => {
                Outcome::Record(self.workspace_exec_for(workspace, request, owner, caller.stop)?)
            }
            Request::WorkspacePut { workspace, files } => {
                Outcome::Files(files_of(self.workspace_put(workspace, files, owner)?))
            }
            Request::WorkspaceGet { workspace, paths } => {
                Outcome::Files(files_of(self.workspace_get(workspace, paths, owner)?))
            }
            Request::WorkspaceClose { workspace } => {
                Outcome::Closed(self.workspace_close(workspace, owner)?)
            }
            Request::Stats => Outcome::Stats(self.stats()),
        };
        Ok(match outcome {
            Outcome::Record(mut record) => {
                if let Some((who, in_audit)) = &caller.named {
                    record.set_caller(who.clone(), *in_audit);
                }
                crate::pipeline::audit::append(self.audit.as_deref(), &record);
                Outcome::Record(record)
            }
            other => other,
        })
    }
}

/// The `files` list of a workspace's put or get answer.
fn files_of(mut answer: Value) -> Value {
    answer.get_mut("files").map(Value::take).unwrap_or_default()
}
