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
