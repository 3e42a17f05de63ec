//! What the server front ends share below their protocols: the listening unix socket
//! (`agentjail serve --socket`, and agentjail-http's `unix:PATH`: made safely, or systemd's
//! by socket activation), the termination signals' signalfd, and the grace running jobs
//! get after SIGTERM. `agentjail serve` (the binary's src/serve/) and agentjail-http use
//! it; it names no front end.

mod error;
pub use error::SocketError;

use agentjail_jail::os;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixListener;
use std::time::Duration;

/// How long running jobs may finish after SIGTERM before they are stopped.
pub const GRACE: Duration = Duration::from_secs(10);

/// Whether the signalfd has a termination signal (consumed); `timeout_ms` -1 waits.
pub fn signalled(sigfd: &OwnedFd, timeout_ms: i32) -> bool {
    os::fd::poll_one(sigfd, libc::POLLIN, timeout_ms).is_ok_and(|r| r & libc::POLLIN != 0)
        && os::fd::read_signalfd(sigfd).is_some()
}

/// The socket file we created: where it is (the directory's fd, its name) and which inode
/// it is, so that only that file is removed at exit.
pub struct Created {
    dir: OwnedFd,
    name: std::ffi::CString,
    ino: (u64, u64),
}

impl Drop for Created {
    fn drop(&mut self) {
        let ours =
            os::dir::stat_at(&self.dir, &self.name).is_ok_and(|st| (st.dev, st.ino) == self.ino);
        if ours {
            let _ = os::dir::unlink_at(&self.dir, &self.name, 0);
        }
    }
}

/// The listening socket and the file we created for it: systemd's (socket activation:
/// LISTEN_PID is us and LISTEN_FDS ≥ 1, fd 3; its file is the .socket unit's, None), or a
/// new one at `path`, 0600 (0660 with `group`). An existing socket file of ours is
/// replaced; any other file there is refused.
///
/// Nothing here follows a path another user can swap (crate::hostpath): the directory is
/// walked and checked once (ours or root's, and sticky if others may write it) and used by
/// its fd from then on; the socket is bound in a private 0700 directory made in it, given
/// its group and mode there, where no one else can reach it, and only then renamed into
/// place, whole.
pub fn listen(
    path: &std::path::Path,
    group: Option<&str>,
) -> Result<(UnixListener, Option<Created>), SocketError> {
    if socket_activated() {
        return activated_listener().map(|l| (l, None));
    }
    let gid = group.map(group_id).transpose()?;
    let (dir, name) = crate::hostpath::parent_and_name(path, "--socket")?;
    match os::dir::stat_at(&dir, &name) {
        Err(libc::ENOENT) => {}
        Ok(st) if st.mode & libc::S_IFMT == libc::S_IFSOCK && st.uid == os::process::geteuid() => {}
        Ok(_) => {
            return Err(SocketError::NotOurs {
                path: path.to_path_buf(),
            })
        }
        Err(errno) => {
            return Err(SocketError::Stat {
                path: path.to_path_buf(),
                errno,
            })
        }
    }
    let private =
        std::ffi::CString::new(format!(".agentjail-{}", agentjail_jail::ids::random_hex(8)))
            .map_err(|e| SocketError::Internal(e.to_string()))?;
    os::dir::mkdir_at(&dir, &private, 0o700).map_err(|errno| SocketError::Private {
        dir: path.parent().unwrap_or(path).to_path_buf(),
        errno,
    })?;
    let made = bind_in_private(&dir, &private, &name, path, gid);
    let _ = os::dir::unlink_at(&dir, &private, libc::AT_REMOVEDIR);
    let (listener, created) = made?;
    Ok((listener, Some(created)))
}

/// Whether systemd passed us a listening socket (LISTEN_PID is ours, LISTEN_FDS >= 1).
fn socket_activated() -> bool {
    let var = |k: &str| std::env::var(k).ok();
    var("LISTEN_PID").and_then(|p| p.parse::<i32>().ok()) == Some(os::process::getpid())
        && var("LISTEN_FDS")
            .and_then(|n| n.parse::<u32>().ok())
            .unwrap_or(0)
            >= 1
}

/// Bind and listen in the private directory `private` (0700, ours) under `dir`, give the
/// socket its group and mode there, then rename it to `name`: it appears at `path` whole,
/// already listening, with its final owner and mode, and no path another user can swap is
/// followed on the way.
fn bind_in_private(
    dir: &OwnedFd,
    private: &std::ffi::CStr,
    name: &std::ffi::CString,
    path: &std::path::Path,
    gid: Option<u32>,
) -> Result<(UnixListener, Created), SocketError> {
    let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;
    let pdir = os::dir::open_at(dir, private, flags, 0)
        .map_err(|errno| SocketError::PrivateErrno { errno })?;
    let st = os::dir::stat(&pdir).map_err(|errno| SocketError::PrivateErrno { errno })?;
    if st.uid != os::process::geteuid() || st.mode & 0o077 != 0 {
        return Err(SocketError::Replaced);
    }
    let inner = c"s";
    let at = format!("/proc/self/fd/{}/s", pdir.as_raw_fd());
    // Created 0600 (umask 0177 around bind), in a directory only we can reach.
    let old = os::process::umask(0o177);
    let bound = UnixListener::bind(&at);
    os::process::umask(old);
    let listener = bound.map_err(|e| SocketError::Listen {
        path: path.to_path_buf(),
        errno: e.raw_os_error(),
        detail: e.to_string(),
    })?;
    let cleanup = |e: SocketError| {
        let _ = os::dir::unlink_at(&pdir, inner, 0);
        e
    };
    if let Some(gid) = gid {
        os::dir::chown_at_nofollow(&pdir, inner, u32::MAX, gid)
            .and_then(|_| os::dir::chmod_at(&pdir, inner, 0o660))
            .map_err(|errno| {
                cleanup(SocketError::Chown {
                    path: path.to_path_buf(),
                    gid,
                    errno,
                })
            })?;
    }
    let st = os::dir::stat_at(&pdir, inner)
        .map_err(|errno| cleanup(SocketError::PrivateErrno { errno }))?;
    // In a sticky directory (the only kind others may write that we accept) a name another
    // user holds cannot be replaced: EPERM says someone else put it there (SocketError's
    // Display says so).
    os::dir::rename_at(&pdir, inner, dir, name).map_err(|errno| {
        cleanup(SocketError::Rename {
            path: path.to_path_buf(),
            errno,
        })
    })?;
    Ok((
        listener,
        Created {
            dir: dir
                .try_clone()
                .map_err(|e| SocketError::Internal(e.to_string()))?,
            name: name.clone(),
            ino: (st.dev, st.ino),
        },
    ))
}

/// fd 3 from systemd, checked to be what the .socket unit promises (a listening AF_UNIX
/// stream socket: anything else would be polled and never accepted), moved to a close-on-exec
/// fd (systemd passes it inheritable).
fn activated_listener() -> Result<UnixListener, SocketError> {
    // fd 3 is systemd's listening socket by the socket-activation protocol, passed to this
    // process alone (LISTEN_PID is ours); it is taken over exactly once, here.
    let passed = os::fd::take_socket_activation_fd();
    let listening = os::fd::is_listening_unix_stream(&passed);
    if !listening {
        return Err(SocketError::NotListening);
    }
    let fd = os::fd::dup_cloexec_above(&passed, 3)
        .map_err(|errno| SocketError::MoveActivated { errno })?;
    drop(passed);
    Ok(UnixListener::from(fd))
}

/// A group name (from /etc/group) or number.
fn group_id(g: &str) -> Result<u32, SocketError> {
    if let Ok(n) = g.parse() {
        return Ok(n);
    }
    std::fs::read_to_string("/etc/group")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                let mut f = l.split(':');
                (f.next() == Some(g))
                    .then(|| f.nth(1).and_then(|id| id.parse().ok()))
                    .flatten()
            })
        })
        .ok_or_else(|| SocketError::NoGroup {
            group: g.to_string(),
        })
}
