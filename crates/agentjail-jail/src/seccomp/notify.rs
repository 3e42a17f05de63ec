//! The supervisor's side of the listener: reading a notification (a forbidden syscall,
//! never answered, so it never runs) and the session doorbell, the one notification that
//! is answered: for the runner's own thread, with a fresh socket at its fds 3 and 4.
//! Separate from building and installing the filter because it runs in the supervisor, for
//! the jail's whole life, not in the child before exec.

use crate::sys;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Supervisor side: read one pending notification from the listener (the calling thread's
/// id in the supervisor's pid namespace, the syscall and its arguments). For anything but
/// the session doorbell the caller then kills the jail and never answers, so the syscall
/// does not run.
pub fn receive_notification(listener: BorrowedFd<'_>) -> std::io::Result<sys::Notification> {
    sys::seccomp_notif_recv(listener.as_raw_fd()).map_err(std::io::Error::from_raw_os_error)
}

/// The session runner's doorbell: `ioctl(3, SESSION_DOORBELL, 0)`, made by the runner
/// between two calls of a session (crates/agentjail-engine/src/runner/python.py). The filter sends it to the
/// supervisor whatever the policy says of ioctl; the supervisor answers it only for the
/// runner's own thread (the notification's pid is the kernel's, not the program's word), and
/// only when a call is waiting: it installs a fresh socket, made for that one call, at the
/// runner's fds 3 and 4 and lets the ioctl return 0. Rung by anyone else, or out of turn, it
/// is a forbidden syscall like any other.
pub const SESSION_DOORBELL: u32 = 0x4a41_0001;

/// Whether a notification is the session doorbell rung by the thread `runner` (the
/// runner's main thread: its tid is its pid).
pub fn is_doorbell(n: &sys::Notification, runner: i32) -> bool {
    n.nr as i64 == libc::SYS_ioctl
        && n.args[0] as u32 == 3
        && n.args[1] as u32 == SESSION_DOORBELL
        && i64::from(n.pid) == i64::from(runner)
}

/// Answer the runner's doorbell: `channel` becomes its fds 3 and 4 (replacing the last
/// call's; close-on-exec), then its ioctl returns 0. An error: the runner is gone or the
/// kernel has no SECCOMP_IOCTL_NOTIF_ADDFD (before 5.9).
pub fn answer_doorbell(
    listener: BorrowedFd<'_>,
    n: &sys::Notification,
    channel: BorrowedFd<'_>,
) -> Result<(), i32> {
    let l = listener.as_raw_fd();
    sys::seccomp_notif_addfd(l, n.id, channel.as_raw_fd(), 3)?;
    sys::seccomp_notif_addfd(l, n.id, channel.as_raw_fd(), 4)?;
    sys::seccomp_notif_send(l, n.id, 0, 0)
}

/// Fail the runner's doorbell with `errno` (no channel could be made or installed).
pub fn refuse_doorbell(listener: BorrowedFd<'_>, n: &sys::Notification, errno: i32) {
    let _ = sys::seccomp_notif_send(listener.as_raw_fd(), n.id, 0, errno);
}

/// Observe mode (`agentjail learn`): fail a notified syscall with `errno`. The syscall never
/// runs: an errno answer has no "continue" flag. A thread that is gone meanwhile is nothing
/// to answer (the error is dropped).
pub fn answer_errno(listener: BorrowedFd<'_>, n: &sys::Notification, errno: i32) {
    let _ = sys::seccomp_notif_send(listener.as_raw_fd(), n.id, 0, errno);
}

/// One open seen in observe mode: the path as the program named it, made absolute where
/// that is cheap and sure (against its cwd, or the directory fd it named), the syscall, and
/// the directory fd when the path stayed relative.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedOpen {
    pub path: String,
    pub syscall: &'static str,
    /// A relative path whose directory could not be read (`/proc/<tid>/fd/<dirfd>` gone or
    /// not a path): the dirfd it was relative to. None for an absolute path.
    pub dirfd: Option<i32>,
}

/// Longest path read from the program (PATH_MAX, its NUL included).
const PATH_MAX: usize = libc::PATH_MAX as usize;

/// Observe mode: note an allowed open of a path the jail does not have (`n` is one of the
/// plan's [`super::observed_opens`]) and let it run. The path is read from the calling
/// thread's memory (at most PATH_MAX bytes, up to its NUL); a relative one is resolved
/// through `/proc/<tid>/cwd` or `/proc/<tid>/fd/<dirfd>`. It is noted only when the jail's
/// own tree lacks it (looked up under `/proc/<tid>/root`, symlinks resolved inside that
/// root: ENOENT or ENOTDIR) and the open does not create (O_CREAT, O_TMPFILE: no read-only
/// bind could give that). Only then is the notification checked to be still pending: if
/// the thread went away meanwhile, its id may be another task's, and nothing is noted.
/// Then the syscall continues (SECCOMP_USER_NOTIF_FLAG_CONTINUE): the kernel runs it as
/// allowed and the mounts, landlock and permissions decide as always.
///
/// The program can change the path between our read and the kernel's (another thread):
/// what is noted is evidence only, never a decision, and the kernel's own read is the one
/// that counts. `read` false: the caller wants nothing noted (its list is full); the open
/// still continues.
pub fn observe_open(
    listener: BorrowedFd<'_>,
    n: &sys::Notification,
    read: bool,
) -> Option<ObservedOpen> {
    let l = listener.as_raw_fd();
    let seen = if read {
        read_open(n).filter(|o| !creates(n) && missing_in_jail(n.pid, o))
    } else {
        None
    };
    let valid = sys::seccomp_notif_id_valid(l, n.id).is_ok();
    let _ = sys::seccomp_notif_continue(l, n.id);
    seen.filter(|_| valid)
}

/// The path argument of an open-family notification, resolved where it is relative.
fn read_open(n: &sys::Notification) -> Option<ObservedOpen> {
    let nr = i64::from(n.nr);
    let (syscall, dirfd, addr) = if nr == libc::SYS_open {
        ("open", libc::AT_FDCWD, n.args[0])
    } else if nr == libc::SYS_openat {
        ("openat", n.args[0] as i32, n.args[1])
    } else if nr == libc::SYS_openat2 {
        ("openat2", n.args[0] as i32, n.args[1])
    } else {
        return None;
    };
    let tid = i32::try_from(n.pid).ok()?;
    let mut buf = vec![0u8; PATH_MAX];
    let got = sys::process_vm_read(tid, addr, &mut buf).ok()?;
    let raw = &buf[..got];
    let end = raw.iter().position(|b| *b == 0)?;
    let given = String::from_utf8_lossy(&raw[..end]).into_owned();
    if given.starts_with('/') {
        return Some(ObservedOpen {
            path: given,
            syscall,
            dirfd: None,
        });
    }
    let dir = if dirfd == libc::AT_FDCWD {
        format!("/proc/{tid}/cwd")
    } else {
        format!("/proc/{tid}/fd/{dirfd}")
    };
    match std::fs::read_link(dir) {
        Ok(d) if d.to_string_lossy().starts_with('/') => {
            let d = d.to_string_lossy();
            let sep = if d.ends_with('/') { "" } else { "/" };
            Some(ObservedOpen {
                path: format!("{d}{sep}{given}"),
                syscall,
                dirfd: None,
            })
        }
        _ => Some(ObservedOpen {
            path: given,
            syscall,
            dirfd: Some(dirfd),
        }),
    }
}

/// Whether an open or openat asks to create (openat2's flags are behind a pointer: never).
fn creates(n: &sys::Notification) -> bool {
    let flags = match i64::from(n.nr) {
        libc::SYS_open => n.args[1],
        libc::SYS_openat => n.args[2],
        _ => return false,
    } as i32;
    flags & libc::O_CREAT != 0 || flags & libc::O_TMPFILE == libc::O_TMPFILE
}

/// Whether the jail of thread `tid` lacks `o.path` (a path that stayed relative is kept:
/// it cannot be looked up).
fn missing_in_jail(tid: u32, o: &ObservedOpen) -> bool {
    if o.dirfd.is_some() {
        return true;
    }
    let Ok(root) = std::fs::File::open(format!("/proc/{tid}/root")) else {
        return false;
    };
    let Ok(path) = std::ffi::CString::new(o.path.as_bytes()) else {
        return false;
    };
    matches!(
        sys::exists_in_root(root.as_raw_fd(), &path),
        Err(libc::ENOENT | libc::ENOTDIR)
    )
}
