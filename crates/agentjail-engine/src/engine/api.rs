//! The engine's one typed door: a [`Request`] from a [`Caller`], handled by
//! [`Engine::handle`], answered with an [`Outcome`] or an [`EngineError`]. What every front
//! end would otherwise redo is done here once: a record is stamped with its caller and
//! appended to the audit log before it is returned. A front end only translates: its wire
//! format into a `Request`, the `Outcome` or the error's code into its wire format (serve:
//! JSON lines; the error codes' tables stay in the front ends, crate::engine::ErrorCode).
//!
//! Every front end's jobs and calls go through it (serve for every op; HTTP's `/v1` routes
//! and `/run_code`; MCP's run, session and workspace commands), so a record is stamped and
//! audited in one place. Still on the engine's methods, to move here next (issue 37): the
//! HTTP pod runtime's routes (a command retried on a new workspace when its workspace ended
//! must not leave the first attempt's record in the audit log) and MCP's record-less calls.

use super::session::Owner;
use super::workspace::ExecRequest;
use super::{ClientStop, Engine, EngineError, ErrorCode};
use crate::pipeline::record::Sealed;
use crate::pipeline::stream::OutputSink;
use serde_json::Value;

/// Who asks. `owner` is whom sessions and workspaces belong to and are counted against
/// (`max_per_client`); `uid` is the peer's uid a job's record names (`caller.uid`) where
/// the front end knows it (a unix socket's SO_PEERCRED); `stop` ends the caller's running
/// jobs when its connection goes (`interrupted:sighup`); `named` is how records name the
/// caller (serve: `{"uid"}`; HTTP: the token's name and the uid) and whether the audit
/// log's copy names it too.
pub struct Caller<'a> {
    pub owner: Owner,
    pub uid: Option<u32>,
    pub stop: Option<&'a ClientStop>,
    pub named: Option<(Value, bool)>,
}

impl Caller<'_> {
    /// A caller the engine knows only as `owner` (MCP's one client): no peer uid, no stop of
    /// its own, records not stamped.
    pub fn owner(owner: Owner) -> Caller<'static> {
        Caller {
            owner,
            uid: None,
            stop: None,
            named: None,
        }
    }
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
    /// A directory's entries (`path`: relative, or under /workspace).
    WorkspaceList {
        workspace: &'a str,
        path: &'a str,
    },
    WorkspaceExists {
        workspace: &'a str,
        path: &'a str,
    },
    WorkspaceRemove {
        workspace: &'a str,
        path: &'a str,
        recursive: bool,
    },
    /// Wait up to `timeout_ms` (None: the policy's wall time) for a background command.
    WorkspaceWait {
        workspace: &'a str,
        command: &'a str,
        timeout_ms: Option<u64>,
    },
    /// End a background command's processes.
    WorkspaceKill {
        workspace: &'a str,
        command: &'a str,
    },
    Stats,
    /// Learn the smallest policy over the server's own that lets these actions run
    /// (engine/learn.rs); answered `Answer("learned", {policy, evidence, complete})`.
    Learn {
        actions: &'a [Vec<u8>],
    },
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
    /// A workspace's answer under its one key (a front end sends `{key: value}`, serve
    /// with the id beside it): `listing` (list), `stat` (exists), `removed` (remove),
    /// `command` (a background command's id), `running` (a background command's output so
    /// far), `learned` (a learn request's policy and evidence).
    Answer(&'static str, Value),
    Stats(Value),
}

impl Engine {
    /// Handle one request for `caller`. A record is stamped and audited here, whichever
    /// front end asked; a refused request is an [`EngineError`] and leaves no record.
    pub fn handle(&self, caller: &Caller, request: Request) -> Result<Outcome, EngineError> {
        self.handle_streaming(caller, request, None)
    }

    // long because it is the table of requests, one arm each, then the one place a record
    // is stamped and audited: split, a request could bypass the stamp.
    /// As [`Engine::handle`], a job's, a session call's or a workspace command's output
    /// handed to `out` as the supervisor reads it, before the record (crate::pipeline::stream;
    /// other requests ignore `out`). Refused (`bad_request`) under a policy that redacts the
    /// printed record (`redaction.printed`, or brokered credentials whose values are redacted
    /// from every record): a chunk cannot be redacted as the whole record is (a key may span
    /// two chunks), so no output of such a policy is streamed.
    pub fn handle_streaming(
        &self,
        caller: &Caller,
        request: Request,
        out: Option<&dyn OutputSink>,
    ) -> Result<Outcome, EngineError> {
        let streams = matches!(
            request,
            Request::Run { .. } | Request::SessionExec { .. } | Request::WorkspaceExec { .. }
        );
        if out.is_some() && streams {
            let r = &self.policy().policy.redaction;
            if r.printed || !r.secrets.is_empty() {
                return Err(EngineError::new(
                    ErrorCode::BadRequest,
                    "this policy redacts the printed record (redaction.printed or network credentials): its output is not streamed; ask without stream",
                ));
            }
        }
        let owner = caller.owner;
        let outcome = match request {
            Request::Run { action, inputs } => {
                Outcome::Record(self.run_for_client(action, owner.uid, inputs, (caller.stop, out)))
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
                (owner, caller.stop),
                out,
            )?),
            Request::SessionClose { session } => {
                Outcome::Closed(self.session_close(session, owner)?)
            }
            Request::WorkspaceStart { hints, host_dir } => {
                Outcome::Workspace(self.workspace_start_in(hints, host_dir, owner)?)
            }
            Request::WorkspaceExec { workspace, request } => {
                use super::workspace::Started;
                match self.workspace_exec_any(workspace, request, (owner, caller.stop), out)? {
                    Started::Record(record) => Outcome::Record(record),
                    Started::Command(id) => Outcome::Answer("command", Value::String(id)),
                }
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
            r @ (Request::WorkspaceList { .. }
            | Request::WorkspaceExists { .. }
            | Request::WorkspaceRemove { .. }
            | Request::WorkspaceWait { .. }
            | Request::WorkspaceKill { .. }) => self.workspace_agent_op(r, owner, caller.stop)?,
            Request::Stats => Outcome::Stats(self.stats()),
            Request::Learn { actions } => {
                Outcome::Answer("learned", self.learn(actions, caller.stop)?)
            }
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

impl Engine {
    /// A workspace's list, exists or remove, or a background command's wait or kill.
    fn workspace_agent_op(
        &self,
        request: Request,
        owner: Owner,
        stop: Option<&ClientStop>,
    ) -> Result<Outcome, EngineError> {
        Ok(match request {
            Request::WorkspaceList { workspace, path } => {
                Outcome::Answer("listing", self.workspace_list(workspace, path, owner)?)
            }
            Request::WorkspaceExists { workspace, path } => {
                Outcome::Answer("stat", self.workspace_exists(workspace, path, owner)?)
            }
            Request::WorkspaceRemove {
                workspace,
                path,
                recursive,
            } => Outcome::Answer(
                "removed",
                self.workspace_remove(workspace, path, recursive, owner)?,
            ),
            Request::WorkspaceWait {
                workspace,
                command,
                timeout_ms,
            } => waited(self.workspace_wait(workspace, command, timeout_ms, false, owner, stop)?),
            Request::WorkspaceKill { workspace, command } => {
                waited(self.workspace_wait(workspace, command, None, true, owner, stop)?)
            }
            _ => {
                return Err(EngineError::new(
                    super::ErrorCode::BadRequest,
                    "not a workspace op",
                ))
            }
        })
    }
}

/// A background command's record once it ended, else what it printed so far.
fn waited(w: super::workspace::Waited) -> Outcome {
    match w {
        super::workspace::Waited::Ended(record) => Outcome::Record(record),
        super::workspace::Waited::Running(so_far) => Outcome::Answer("running", so_far),
    }
}

/// The `files` list of a workspace's put or get answer.
fn files_of(mut answer: Value) -> Value {
    answer.get_mut("files").map(Value::take).unwrap_or_default()
}
