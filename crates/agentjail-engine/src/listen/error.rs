//! Why `serve --socket` could not listen: the path, the errno where a call failed, and what
//! to do. Display is the message agentjail prints (and exits 2 with).

use crate::hostpath::HostPathError;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SocketError {
    /// `--socket-group` names no group.
    NoGroup { group: String },
    /// A directory on the way was refused (crate::hostpath).
    HostPath(HostPathError),
    /// Something other than a socket of ours is at the path.
    NotOurs { path: PathBuf },
    /// The path could not be stat'ed.
    Stat { path: PathBuf, errno: i32 },
    /// The private directory could not be made in `dir`.
    Private { dir: PathBuf, errno: i32 },
    /// The private directory could not be opened or stat'ed.
    PrivateErrno { errno: i32 },
    /// The private directory is no longer the one we made.
    Replaced,
    /// `bind`/`listen` failed: the I/O error's text.
    Listen {
        path: PathBuf,
        errno: Option<i32>,
        detail: String,
    },
    /// The socket could not be given to `--socket-group`.
    Chown { path: PathBuf, gid: u32, errno: i32 },
    /// The socket could not be renamed into place (EPERM: another user's name is there).
    Rename { path: PathBuf, errno: i32 },
    /// Socket activation passed an fd 3 that is not a listening unix stream socket.
    NotListening,
    /// Socket activation's fd 3 could not be moved.
    MoveActivated { errno: i32 },
    /// An internal failure with no path to name.
    Internal(String),
}

impl SocketError {
    /// The errno of the call that failed, where one did.
    pub fn errno(&self) -> Option<i32> {
        match self {
            SocketError::HostPath(e) => e.errno(),
            SocketError::Stat { errno, .. }
            | SocketError::Private { errno, .. }
            | SocketError::PrivateErrno { errno }
            | SocketError::Chown { errno, .. }
            | SocketError::Rename { errno, .. }
            | SocketError::MoveActivated { errno } => Some(*errno),
            SocketError::Listen { errno, .. } => *errno,
            _ => None,
        }
    }
}

impl std::fmt::Display for SocketError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let io = |e: &i32| std::io::Error::from_raw_os_error(*e);
        match self {
            SocketError::NoGroup { group } => write!(f, "--socket-group {group:?}: no such group"),
            SocketError::HostPath(e) => e.fmt(f),
            SocketError::NotOurs { path } => write!(
                f,
                "{} exists and is not a socket of ours; remove it or choose another path",
                path.display()
            ),
            SocketError::Stat { path, errno } => {
                write!(f, "--socket {}: errno {errno}", path.display())
            }
            SocketError::Private { dir, errno } => write!(
                f,
                "--socket: cannot make a private directory in {}: {}",
                dir.display(),
                io(errno)
            ),
            SocketError::PrivateErrno { errno } => write!(f, "--socket: errno {errno}"),
            SocketError::Replaced => f.write_str("--socket: the private directory was replaced"),
            SocketError::Listen { path, detail, .. } => {
                write!(f, "cannot listen on {}: {detail}", path.display())
            }
            SocketError::Chown { path, gid, errno } => write!(
                f,
                "cannot give {} to group {gid}: {}",
                path.display(),
                io(errno)
            ),
            SocketError::Rename { path, errno } if *errno == libc::EPERM => write!(
                f,
                "cannot put the socket at {}: another user's file or link is at that name ({})",
                path.display(),
                io(errno)
            ),
            SocketError::Rename { path, errno } => {
                write!(
                    f,
                    "cannot put the socket at {}: {}",
                    path.display(),
                    io(errno)
                )
            }
            SocketError::NotListening => f.write_str(
                "socket activation (LISTEN_FDS): fd 3 is not a listening unix stream socket; \
                 the .socket unit must have one ListenStream= with a path",
            ),
            SocketError::MoveActivated { errno } => {
                write!(f, "socket activation: cannot move fd 3: errno {errno}")
            }
            SocketError::Internal(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for SocketError {}

impl From<HostPathError> for SocketError {
    fn from(e: HostPathError) -> Self {
        SocketError::HostPath(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_another_user_holds_is_named_as_such() {
        let e = |errno| SocketError::Rename {
            path: "/run/aj.sock".into(),
            errno,
        };
        assert_eq!(
            e(libc::EPERM).to_string(),
            "cannot put the socket at /run/aj.sock: another user's file or link is at that \
             name (Operation not permitted (os error 1))"
        );
        assert_eq!(
            e(libc::ENOSPC).to_string(),
            "cannot put the socket at /run/aj.sock: No space left on device (os error 28)"
        );
        assert_eq!(e(libc::EPERM).errno(), Some(libc::EPERM));
    }
}
