//! Why the engine did not start: the part that failed and the error it gave, kept typed
//! (the front ends print it and exit 2). Display is the message agentjail prints.

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
            "--zygote: --zygote needs /opt/aj/agentjail-zygote next to agentjail; build it \
             with scripts/build-zygote.sh"
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
