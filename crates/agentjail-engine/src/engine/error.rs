//! The engine's errors, typed: why it did not start ([`StartError`]: the part that failed
//! and the error it gave; the front ends print it and exit 2), and why it refused a
//! request ([`EngineError`]: an [`ErrorCode`] and a message). Each front end maps the codes
//! in one exhaustive table of its own (serve and MCP print the spelling, HTTP adds a
//! status), so a new code does not build until every front end has said what it means.

use crate::cache::CacheError;
use crate::pipeline::source::PlanError;
use crate::plan::BuildError;
use crate::zygote::ZygoteError;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartError {
    /// A language's runner plan (or the session plan) cannot be made.
    Plan(PlanError),
    /// `--zygote` did not start.
    Zygote(ZygoteError),
    /// The `[workspace]` plan cannot be made.
    Workspace(BuildError),
    /// `--cache` cannot be opened.
    Cache(CacheError),
    /// The audit log cannot be opened for appending: the I/O error's text.
    AuditLog {
        path: PathBuf,
        errno: Option<i32>,
        detail: String,
    },
    /// A pipe or socket pair (`what`) could not be made.
    Os { what: &'static str, errno: i32 },
    /// A thread (`what`: `the reaper thread`, `a spawner thread`) did not start.
    Thread { what: &'static str, detail: String },
}

impl StartError {
    /// For `map_err`: `what` (a thread) did not start.
    pub(super) fn thread(what: &'static str) -> impl FnOnce(std::io::Error) -> StartError {
        move |e| StartError::Thread {
            what,
            detail: e.to_string(),
        }
    }

    /// For `map_err`: `what` (a pipe, a socket pair) could not be made.
    pub(super) fn os(what: &'static str) -> impl FnOnce(i32) -> StartError {
        move |errno| StartError::Os { what, errno }
    }

    /// The errno of the call that failed, where one did.
    pub fn errno(&self) -> Option<i32> {
        match self {
            StartError::Cache(e) => e.errno(),
            StartError::AuditLog { errno, .. } => *errno,
            StartError::Os { errno, .. } => Some(*errno),
            _ => None,
        }
    }
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Plan(e) => e.fmt(f),
            StartError::Zygote(e) => write!(f, "--zygote: {e}"),
            StartError::Workspace(e) => write!(f, "[workspace]: {e}"),
            StartError::Cache(e) => e.fmt(f),
            StartError::AuditLog { path, detail, .. } => {
                write!(f, "the audit log {}: {detail}", path.display())
            }
            StartError::Os { what, errno } => write!(f, "cannot create {what}: errno {errno}"),
            StartError::Thread { what, detail } => write!(f, "cannot start {what}: {detail}"),
        }
    }
}

impl std::error::Error for StartError {}

impl From<PlanError> for StartError {
    fn from(e: PlanError) -> Self {
        StartError::Plan(e)
    }
}

impl From<ZygoteError> for StartError {
    fn from(e: ZygoteError) -> Self {
        StartError::Zygote(e)
    }
}

impl From<CacheError> for StartError {
    fn from(e: CacheError) -> Self {
        StartError::Cache(e)
    }
}

/// A request the engine refuses (as opposed to a job that runs and stops), by code: the
/// spellings are a fixed contract (docs/REFERENCE.md lists them per front end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// The request's shape or a value in it is wrong.
    BadRequest,
    /// A workspace command's `env` is refused.
    BadEnv,
    /// A workspace's files (put/get paths, sizes) are refused.
    BadFiles,
    /// A workspace's host directory cannot be used.
    BadHostDir,
    /// A file cannot be written into the workspace.
    PutRefused,
    /// A path cannot be listed, looked up or removed in the workspace (`..`, a symlink on
    /// the way, not found, ...: the reason in the message).
    PathRefused,
    /// No such background command in this workspace.
    UnknownCommand,
    /// No such session for this caller.
    UnknownSession,
    /// No such workspace for this caller.
    UnknownWorkspace,
    /// The session is running another call.
    SessionBusy,
    /// The workspace is running another command.
    WorkspaceBusy,
    /// Another workspace (of this or another server) holds the host directory.
    HostDirInUse,
    /// The workspace has ended (closed, expired or its jail died).
    WorkspaceEnded,
    /// The server's or the caller's session limit is reached.
    TooManySessions,
    /// The server's or the caller's workspace limit is reached.
    TooManyWorkspaces,
    /// No jail can be started or reached now (`sandbox_unavailable:*` in the message).
    Unavailable,
}

impl ErrorCode {
    /// Every code, for the front ends' table tests.
    pub const ALL: [ErrorCode; 16] = [
        ErrorCode::BadRequest,
        ErrorCode::BadEnv,
        ErrorCode::BadFiles,
        ErrorCode::BadHostDir,
        ErrorCode::PutRefused,
        ErrorCode::PathRefused,
        ErrorCode::UnknownCommand,
        ErrorCode::UnknownSession,
        ErrorCode::UnknownWorkspace,
        ErrorCode::SessionBusy,
        ErrorCode::WorkspaceBusy,
        ErrorCode::HostDirInUse,
        ErrorCode::WorkspaceEnded,
        ErrorCode::TooManySessions,
        ErrorCode::TooManyWorkspaces,
        ErrorCode::Unavailable,
    ];

    /// The stable spelling serve, HTTP and MCP print.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::BadEnv => "bad_env",
            ErrorCode::BadFiles => "bad_files",
            ErrorCode::BadHostDir => "bad_host_dir",
            ErrorCode::PutRefused => "put_refused",
            ErrorCode::PathRefused => "path_refused",
            ErrorCode::UnknownCommand => "unknown_command",
            ErrorCode::UnknownSession => "unknown_session",
            ErrorCode::UnknownWorkspace => "unknown_workspace",
            ErrorCode::SessionBusy => "session_busy",
            ErrorCode::WorkspaceBusy => "workspace_busy",
            ErrorCode::HostDirInUse => "host_dir_in_use",
            ErrorCode::WorkspaceEnded => "workspace_ended",
            ErrorCode::TooManySessions => "too_many_sessions",
            ErrorCode::TooManyWorkspaces => "too_many_workspaces",
            ErrorCode::Unavailable => "unavailable",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A request the engine refuses: serve, HTTP and MCP turn it into an error response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineError {
    pub code: ErrorCode,
    pub message: String,
}

impl EngineError {
    pub(super) fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        EngineError {
            code,
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapped_error_keeps_its_kind_and_prints_as_before() {
        let e: StartError = ZygoteError::NoBinary {
            exe: "/opt/aj/agentjail-zygote".into(),
        }
        .into();
        assert_eq!(
            e.to_string(),
            "--zygote: no /opt/aj/agentjail-zygote next to agentjail; build it with \
             scripts/build-zygote.sh"
        );
        let w = StartError::Workspace(BuildError::MissingReadOnly {
            path: "/opt/x".into(),
        });
        assert_eq!(
            w.to_string(),
            "[workspace]: filesystem.read_only: /opt/x does not exist on this host; remove it \
             or list it in filesystem.optional"
        );
        let p = StartError::os("a pipe")(libc::EMFILE);
        assert_eq!(p.to_string(), "cannot create a pipe: errno 24");
        assert_eq!(p.errno(), Some(libc::EMFILE));
    }
}
