//! File descriptors: reads, writes, pipes, polling and locks.

use super::{check, check_long, errno, SysResult};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

pub fn close(fd: RawFd) {
    // SAFETY: closing an fd this process owns; errors are irrelevant here.
    unsafe { libc::close(fd) };
}

pub fn write(fd: RawFd, buf: &[u8]) -> SysResult<usize> {
    // SAFETY: buf is a valid slice for its length.
    let rc = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if rc < 0 {
        Err(errno())
    } else {
        Ok(rc as usize)
    }
}

/// Write all of `buf`, retrying on EINTR and short writes.
pub fn write_all(fd: RawFd, mut buf: &[u8]) -> SysResult<()> {
    while !buf.is_empty() {
        match write(fd, buf) {
            Ok(n) => buf = &buf[n..],
            Err(libc::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// read(2), retried on EINTR.
pub fn read(fd: RawFd, buf: &mut [u8]) -> SysResult<usize> {
    loop {
        // SAFETY: buf is a valid mutable slice for its length.
        let rc = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if rc >= 0 {
            return Ok(rc as usize);
        }
        let e = errno();
        if e != libc::EINTR {
            return Err(e);
        }
    }
}

/// pread(2): read at `offset` without moving the file position.
pub fn pread(fd: RawFd, buf: &mut [u8], offset: i64) -> SysResult<usize> {
    // SAFETY: buf is a valid mutable slice for its length.
    let rc = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), offset) };
    if rc < 0 {
        Err(errno())
    } else {
        Ok(rc as usize)
    }
}

/// Take ownership of a raw fd the kernel just returned to us.
///
/// Callers pass only fds returned by a syscall a moment earlier and never shared.
pub fn owned(fd: RawFd) -> OwnedFd {
    // SAFETY: by this function's contract the fd is open, ours, and owned by nothing else.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// A close-on-exec pipe: (read end, write end).
pub fn pipe2() -> SysResult<(OwnedFd, OwnedFd)> {
    let mut fds = [-1; 2];
    // SAFETY: fds is a valid two-element array.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    Ok((owned(fds[0]), owned(fds[1])))
}

pub fn dup2(old: RawFd, new: RawFd) -> SysResult<()> {
    // SAFETY: plain syscall on fds; dup2 clears CLOEXEC on the new fd, which is intended.
    check(unsafe { libc::dup2(old, new) }).map(drop)
}

/// dup3(old, new, O_CLOEXEC): `new` closes at execve.
pub fn dup3_cloexec(old: RawFd, new: RawFd) -> SysResult<()> {
    // SAFETY: plain syscall on fds this process owns.
    check(unsafe { libc::dup3(old, new, libc::O_CLOEXEC) }).map(drop)
}

/// A close-on-exec copy of `fd` at the lowest free number >= `min`.
pub fn dup_cloexec_above(fd: RawFd, min: RawFd) -> SysResult<RawFd> {
    // SAFETY: F_DUPFD_CLOEXEC on an fd we own; returns a new fd >= min.
    check(unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, min) })
}

/// Close every fd from `first` to `last`, both included.
pub fn close_range(first: u32, last: u32) -> SysResult<()> {
    // SAFETY: close_range with integer arguments; closes only fds of this process.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0u32) };
    check_long(rc).map(drop)
}

/// Close every fd from `first` upward.
pub fn close_range_from(first: u32) -> SysResult<()> {
    // SAFETY: close_range with integer arguments; closes only fds of this process.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, first, u32::MAX, 0u32) };
    check_long(rc).map(drop)
}

/// poll a single fd with a timeout in ms; returns revents.
pub fn poll_one(fd: RawFd, events: libc::c_short, timeout_ms: i32) -> SysResult<libc::c_short> {
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    // SAFETY: p is a valid pollfd for the call.
    let rc = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    check(rc).map(|_| p.revents)
}

/// ppoll(2) with a nanosecond timeout (None: wait forever). Errors (EINTR) count as "nothing
/// ready": the caller's loop looks again.
pub fn ppoll(fds: &mut [libc::pollfd], timeout: Option<Duration>) {
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: fds is a valid slice of pollfd; tsp is NULL or points to a live timespec.
    unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            tsp,
            std::ptr::null(),
        )
    };
}

pub fn set_nonblocking(fd: RawFd) -> SysResult<()> {
    // SAFETY: F_GETFL on an owned fd.
    let flags = check(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    // SAFETY: F_SETFL on an owned fd with integer flags.
    check(unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) }).map(drop)
}

/// An exclusive flock on `fd`, waiting for it; released when the file closes.
pub fn flock_exclusive(fd: RawFd) -> SysResult<()> {
    loop {
        // SAFETY: flock on an fd the caller owns.
        match check(unsafe { libc::flock(fd, libc::LOCK_EX) }) {
            Err(libc::EINTR) => continue,
            r => return r.map(drop),
        }
    }
}

/// A shared or exclusive flock on `fd`, never waited for: EWOULDBLOCK when another open
/// file holds a conflicting one.
pub fn flock_now(fd: RawFd, exclusive: bool) -> SysResult<()> {
    let op = if exclusive {
        libc::LOCK_EX
    } else {
        libc::LOCK_SH
    } | libc::LOCK_NB;
    loop {
        // SAFETY: flock on an fd the caller owns, with integer flags.
        match check(unsafe { libc::flock(fd, op) }) {
            Err(libc::EINTR) => continue,
            r => return r.map(drop),
        }
    }
}

/// The uid of the process at the other end of a connected unix socket (SO_PEERCRED).
pub fn peer_uid(fd: RawFd) -> SysResult<u32> {
    // SAFETY: an all-zero ucred is valid storage for getsockopt to fill.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: cred and len are valid storage of the sizes passed.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    check(rc).map(|_| cred.uid)
}

/// Whether `fd` is a listening unix stream socket (what a systemd `.socket` unit with one
/// `ListenStream=` path passes as fd 3).
pub fn is_listening_unix_stream(fd: RawFd) -> bool {
    let opt = |name: libc::c_int| -> Option<libc::c_int> {
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: v and len are valid storage of the sizes passed; a bad fd is EBADF.
        let rc = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                name,
                (&mut v as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        (rc == 0).then_some(v)
    };
    opt(libc::SO_DOMAIN) == Some(libc::AF_UNIX)
        && opt(libc::SO_TYPE) == Some(libc::SOCK_STREAM)
        && opt(libc::SO_ACCEPTCONN) == Some(1)
}

/// Set the process's umask; returns the previous one.
pub fn umask(mask: u32) -> u32 {
    // SAFETY: umask cannot fail and touches no memory.
    unsafe { libc::umask(mask as libc::mode_t) as u32 }
}

/// This process's pid.
pub fn getpid() -> i32 {
    // SAFETY: getpid cannot fail.
    unsafe { libc::getpid() }
}

/// A connected pair of unix SOCK_STREAM sockets, close-on-exec. Unlike a pipe, neither end
/// can be opened again through /proc/<pid>/fd (the kernel refuses, ENXIO).
pub fn socketpair_stream() -> SysResult<(OwnedFd, OwnedFd)> {
    let mut fds = [-1 as RawFd; 2];
    // SAFETY: fds is valid storage for the two descriptors socketpair returns.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    check(rc).map(|_| (owned(fds[0]), owned(fds[1])))
}

/// A connected pair of unix SOCK_SEQPACKET sockets (message boundaries kept), close-on-exec.
pub fn socketpair_seqpacket() -> SysResult<(OwnedFd, OwnedFd)> {
    let mut fds = [-1 as RawFd; 2];
    // SAFETY: fds is valid storage for the two descriptors socketpair returns.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    check(rc).map(|_| (owned(fds[0]), owned(fds[1])))
}

/// Most descriptors one message carries (the kernel's SCM_MAX_FD is 253).
pub const MAX_PASSED_FDS: usize = 16;

/// Send one message with `fds` attached (SCM_RIGHTS); the receiver gets copies.
pub fn send_with_fds(sock: RawFd, data: &[u8], fds: &[RawFd]) -> SysResult<()> {
    if fds.len() > MAX_PASSED_FDS {
        return Err(libc::EINVAL);
    }
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    let payload = std::mem::size_of_val(fds) as u32;
    // u64 storage keeps the control buffer aligned for cmsghdr.
    let mut control = [0u64; 24];
    // SAFETY: an all-zero msghdr is valid; its pointers are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        msg.msg_control = control.as_mut_ptr().cast();
        // SAFETY: CMSG_SPACE only computes a size.
        msg.msg_controllen = unsafe { libc::CMSG_SPACE(payload) } as usize;
        // SAFETY: msg_control points at a buffer of at least msg_controllen bytes (24 * 8 >=
        // CMSG_SPACE(16 * 4)), so the first header and its data fit in it.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(payload) as usize;
            std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(c).cast(), fds.len());
        }
    }
    loop {
        // SAFETY: msg and everything it points to live across the call.
        let rc = unsafe { libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL) };
        match check_long(rc as libc::c_long) {
            Err(libc::EINTR) => continue,
            Err(e) => return Err(e),
            Ok(n) if n as usize != data.len() => return Err(libc::EMSGSIZE),
            Ok(_) => return Ok(()),
        }
    }
}

/// Receive one message into `buf` and the descriptors attached to it (close-on-exec).
/// Returns the message length (0 at EOF). A truncated message or control part is EMSGSIZE
/// (the descriptors that did arrive are closed).
pub fn recv_with_fds(sock: RawFd, buf: &mut [u8]) -> SysResult<(usize, Vec<OwnedFd>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u64; 24];
    // SAFETY: an all-zero msghdr is valid; its pointers are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    let n = loop {
        // SAFETY: msg points at buf and control, which outlive the call.
        let rc = unsafe { libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC) };
        match check_long(rc as libc::c_long) {
            Err(libc::EINTR) => continue,
            r => break r? as usize,
        }
    };
    let mut fds = Vec::new();
    // SAFETY: the kernel filled msg_control with well-formed headers within msg_controllen;
    // CMSG_FIRSTHDR/NXTHDR stay inside it and each SCM_RIGHTS payload holds whole ints.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let bytes = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let data = libc::CMSG_DATA(c) as *const RawFd;
                for i in 0..bytes / std::mem::size_of::<RawFd>() {
                    fds.push(owned(std::ptr::read_unaligned(data.add(i))));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    if msg.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 {
        return Err(libc::EMSGSIZE);
    }
    Ok((n, fds))
}

/// The first byte waiting on a socket, left there (recv with MSG_PEEK | MSG_DONTWAIT); None
/// when nothing waits.
pub fn peek_byte(sock: RawFd) -> Option<u8> {
    let mut b = [0u8; 1];
    // SAFETY: b is valid storage for one byte for the call.
    let n = unsafe {
        libc::recv(
            sock,
            b.as_mut_ptr().cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    (n == 1).then_some(b[0])
}
