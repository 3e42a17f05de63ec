//! The operating system as the rest of agentjail may use it: small, safe, typed
//! functions over the crate-private kernel module (`sys`), for the engine's and the
//! front ends' host-side work (the operator's paths, the server's socket, the cache,
//! the audit log, the artifacts, doctor's probes, the zygote's control socket).
//! Descriptors go in as `impl AsFd` and come back as [`OwnedFd`], so no caller handles
//! a raw fd number; errors are the raw errno, as `sys` reports them. Nothing here is
//! `unsafe`: every `unsafe` block stays in `sys/`.

use crate::sys;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

/// An errno.
pub type Errno = i32;

/// Symlink-safe file access beneath a directory: every name is one component looked up in
/// an open directory (`*at` calls), and nothing here follows a link unless said so.
pub mod dir {
    use super::*;
    use std::ffi::CStr;

    pub use crate::sys::FileStat;

    /// open(2) of an absolute path, close-on-exec (the caller passes `O_NOFOLLOW` and
    /// `O_DIRECTORY` as it needs).
    pub fn open(path: &CStr, flags: libc::c_int, mode: u32) -> Result<OwnedFd, Errno> {
        sys::open(path, flags, mode).map(sys::owned)
    }

    /// openat(2) of `name` in `dir`, close-on-exec.
    pub fn open_at(
        dir: impl AsFd,
        name: &CStr,
        flags: libc::c_int,
        mode: u32,
    ) -> Result<OwnedFd, Errno> {
        sys::openat(dir.as_fd().as_raw_fd(), name, flags, mode).map(sys::owned)
    }

    /// fstat(2) of an open file.
    pub fn stat(fd: impl AsFd) -> Result<FileStat, Errno> {
        sys::fstat_file(fd.as_fd().as_raw_fd())
    }

    /// fstatat(2) of `name` in `dir`, never following it.
    pub fn stat_at(dir: impl AsFd, name: &CStr) -> Result<FileStat, Errno> {
        sys::fstatat_file(dir.as_fd().as_raw_fd(), name)
    }

    /// mkdirat(2).
    pub fn mkdir_at(dir: impl AsFd, name: &CStr, mode: u32) -> Result<(), Errno> {
        sys::mkdirat(dir.as_fd().as_raw_fd(), name, mode)
    }

    /// unlinkat(2) (`AT_REMOVEDIR` in `flags` for a directory).
    pub fn unlink_at(dir: impl AsFd, name: &CStr, flags: libc::c_int) -> Result<(), Errno> {
        sys::unlinkat(dir.as_fd().as_raw_fd(), name, flags)
    }

    /// renameat(2): `from` in `from_dir` replaces `to` in `to_dir` (neither is followed).
    pub fn rename_at(
        from_dir: impl AsFd,
        from: &CStr,
        to_dir: impl AsFd,
        to: &CStr,
    ) -> Result<(), Errno> {
        let (f, t) = (from_dir.as_fd().as_raw_fd(), to_dir.as_fd().as_raw_fd());
        sys::renameat(f, from, t, to)
    }

    /// fchownat(2) of `name` in `dir`, never following it.
    pub fn chown_at_nofollow(dir: impl AsFd, name: &CStr, uid: u32, gid: u32) -> Result<(), Errno> {
        sys::fchownat_nofollow(dir.as_fd().as_raw_fd(), name, uid, gid)
    }

    /// fchmodat(2) of `name` in `dir` (the caller knows it is no symlink: Linux follows one
    /// here).
    pub fn chmod_at(dir: impl AsFd, name: &CStr, mode: u32) -> Result<(), Errno> {
        sys::fchmodat(dir.as_fd().as_raw_fd(), name, mode)
    }

    /// openat2(2) of the relative path `path` beneath `dir`, following no symlink and no
    /// magic link, crossing no mount and never climbing above `dir` (a tree jailed code
    /// writes: a workspace's files), close-on-exec.
    pub fn open_beneath(
        dir: impl AsFd,
        path: &CStr,
        flags: libc::c_int,
        mode: u32,
    ) -> Result<OwnedFd, Errno> {
        sys::openat2_beneath(dir.as_fd().as_raw_fd(), path, flags, mode).map(sys::owned)
    }
}

/// Descriptor helpers: reads, writes, polls, pipes, sockets and descriptors passed over them.
pub mod fd {
    use super::*;

    /// read(2) once.
    pub fn read(fd: impl AsFd, buf: &mut [u8]) -> Result<usize, Errno> {
        sys::read(fd.as_fd().as_raw_fd(), buf)
    }

    /// write(2) once.
    pub fn write(fd: impl AsFd, buf: &[u8]) -> Result<usize, Errno> {
        sys::write(fd.as_fd().as_raw_fd(), buf)
    }

    /// Write all of `buf` (retrying short writes and EINTR).
    pub fn write_all(fd: impl AsFd, buf: &[u8]) -> Result<(), Errno> {
        sys::write_all(fd.as_fd().as_raw_fd(), buf)
    }

    /// poll(2) one descriptor for `events` for up to `timeout_ms` (-1: forever); its revents.
    pub fn poll_one(
        fd: impl AsFd,
        events: libc::c_short,
        timeout_ms: i32,
    ) -> Result<libc::c_short, Errno> {
        sys::poll_one(fd.as_fd().as_raw_fd(), events, timeout_ms)
    }

    /// ppoll(2) over `fds` (None: wait forever); an interrupted wait counts as nothing ready.
    pub fn ppoll(fds: &mut [libc::pollfd], timeout: Option<std::time::Duration>) {
        sys::ppoll(fds, timeout)
    }

    /// A close-on-exec pipe: (read end, write end).
    pub fn pipe() -> Result<(OwnedFd, OwnedFd), Errno> {
        sys::pipe2()
    }

    /// A close-on-exec SOCK_SEQPACKET unix socket pair.
    pub fn socketpair_seqpacket() -> Result<(OwnedFd, OwnedFd), Errno> {
        sys::socketpair_seqpacket()
    }

    /// One message on a unix socket with `fds` passed along (SCM_RIGHTS).
    pub fn send_with_fds(
        sock: impl AsFd,
        data: &[u8],
        fds: &[BorrowedFd<'_>],
    ) -> Result<(), Errno> {
        let raw: Vec<_> = fds.iter().map(|f| f.as_raw_fd()).collect();
        sys::send_with_fds(sock.as_fd().as_raw_fd(), data, &raw)
    }

    /// One message into `buf` and the descriptors that came with it (0 bytes: EOF).
    pub fn recv_with_fds(sock: impl AsFd, buf: &mut [u8]) -> Result<(usize, Vec<OwnedFd>), Errno> {
        sys::recv_with_fds(sock.as_fd().as_raw_fd(), buf)
    }

    /// A close-on-exec duplicate of `fd` numbered at least `min`.
    pub fn dup_cloexec_above(fd: impl AsFd, min: i32) -> Result<OwnedFd, Errno> {
        sys::dup_cloexec_above(fd.as_fd().as_raw_fd(), min).map(sys::owned)
    }

    /// Whether `fd` is a listening unix stream socket.
    pub fn is_listening_unix_stream(fd: impl AsFd) -> bool {
        sys::is_listening_unix_stream(fd.as_fd().as_raw_fd())
    }

    /// Take over fd 3, the listening socket systemd passes by the socket-activation
    /// protocol (`LISTEN_FDS`, `LISTEN_PID` naming this process). Call it once, and only
    /// when that protocol says fd 3 is ours: nothing else may own fd 3 then.
    pub fn take_socket_activation_fd() -> OwnedFd {
        sys::owned(3)
    }

    /// One pending signal from a signalfd: (signal number, sender pid), or None.
    pub fn read_signalfd(fd: impl AsFd) -> Option<(i32, u32)> {
        sys::read_signalfd(fd.as_fd().as_raw_fd())
    }

    /// An exclusive flock, waited for; released when the file closes.
    pub fn lock_exclusive(fd: impl AsFd) -> Result<(), Errno> {
        sys::flock_exclusive(fd.as_fd().as_raw_fd())
    }

    /// A shared or exclusive flock taken now or never (EWOULDBLOCK: another open file holds
    /// a conflicting one); released when the file closes.
    pub fn try_lock(fd: impl AsFd, exclusive: bool) -> Result<(), Errno> {
        sys::flock_now(fd.as_fd().as_raw_fd(), exclusive)
    }

    /// shutdown(2) both ways: wakes a thread blocked in accept on a listening socket (the
    /// network allowlist's proxy, at the end of a job).
    pub fn shutdown_socket(sock: impl AsFd) -> Result<(), Errno> {
        sys::shutdown_both(sock.as_fd().as_raw_fd())
    }

    /// A new listen backlog for a listening socket (the network allowlist's proxy sizes
    /// it to the policy's connection limit, so a burst of connects is never dropped).
    pub fn set_listen_backlog(sock: impl AsFd, backlog: u32) -> Result<(), Errno> {
        let n = libc::c_int::try_from(backlog).unwrap_or(libc::c_int::MAX);
        sys::relisten(sock.as_fd().as_raw_fd(), n)
    }

    /// The uid of the process at the other end of a connected unix socket (SO_PEERCRED).
    pub fn peer_uid(sock: impl AsFd) -> Result<u32, Errno> {
        sys::peer_uid(sock.as_fd().as_raw_fd())
    }
}

/// This process: its ids, umask, CPUs and limits.
pub mod process {
    use super::*;

    pub fn geteuid() -> u32 {
        sys::geteuid()
    }

    /// Set the calling thread's filesystem uid and gid (this thread only).
    pub fn set_thread_fs_ids(uid: u32, gid: u32) -> Result<(), Errno> {
        sys::set_thread_fs_ids(uid, gid)
    }

    pub fn getpid() -> i32 {
        sys::getpid()
    }

    /// Set the umask; returns the previous one.
    pub fn umask(mask: u32) -> u32 {
        sys::umask(mask)
    }

    /// CPUs in this thread's affinity mask (0 if the call fails).
    pub fn affinity_cpus() -> u64 {
        sys::affinity_cpus()
    }

    /// setrlimit(2) of this process.
    pub fn setrlimit(resource: u32, soft: u64, hard: u64) -> Result<(), Errno> {
        sys::setrlimit(resource, soft, hard)
    }

    /// Be killed (SIGKILL) when the parent dies (PR_SET_PDEATHSIG).
    pub fn die_with_parent() -> Result<(), Errno> {
        sys::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong).map(drop)
    }

    /// SIGKILL the process behind a pidfd.
    pub fn kill_pidfd(pidfd: impl AsFd) -> Result<(), Errno> {
        sys::pidfd_send_signal(pidfd.as_fd().as_raw_fd(), libc::SIGKILL)
    }
}

/// What `agentjail doctor` tries: kernel features probed for real, in a forked child when
/// trying would change this process.
pub mod probe {
    use super::*;

    /// unshare(flags) in a forked child, then (`remount_private`) make its root's mounts
    /// private, as a jail's child does: Ok or the child's errno.
    pub fn unshare_in_child(flags: libc::c_int, remount_private: bool) -> Result<(), Errno> {
        sys::probe_in_child(&move || {
            let r = sys::unshare(flags).and_then(|()| {
                if remount_private {
                    sys::mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE, None)
                } else {
                    Ok(())
                }
            });
            r.err().unwrap_or(0)
        })
    }

    /// prctl(PR_SET_NO_NEW_PRIVS) in a forked child: Ok or its errno.
    pub fn no_new_privs_in_child() -> Result<(), Errno> {
        sys::probe_in_child(&|| sys::no_new_privs().err().unwrap_or(0))
    }

    /// The landlock ABI version, or the errno (ENOSYS: not built; EOPNOTSUPP: disabled).
    pub fn landlock_abi() -> Result<u32, Errno> {
        sys::landlock_abi()
    }

    /// Whether the kernel knows a seccomp return action (SECCOMP_GET_ACTION_AVAIL).
    pub fn seccomp_action_available(action: u32) -> Result<(), Errno> {
        sys::seccomp_action_available(action)
    }

    /// A pidfd of this process.
    pub fn pidfd_open_self() -> Result<OwnedFd, Errno> {
        sys::pidfd_open(sys::getpid()).map(sys::owned)
    }

    /// pidfd_getfd(2): a copy of the process's `target_fd`.
    pub fn pidfd_getfd(pidfd: impl AsFd, target_fd: i32) -> Result<OwnedFd, Errno> {
        sys::pidfd_getfd(pidfd.as_fd().as_raw_fd(), target_fd).map(sys::owned)
    }
}
