//! Raw syscalls used by the jail, one `unsafe` block each.
//!
//! Everything here is callable in the forked child: no allocation, no locks, no panics.
//! Arguments are pre-built NUL-terminated strings (`&CStr`) prepared in the parent.
//! Errors are the raw errno so the child can report them as (stage, errno).

use std::ffi::CStr;
use std::os::fd::RawFd;

pub type SysResult<T> = Result<T, i32>;

fn errno() -> i32 {
    // SAFETY: __errno_location returns a valid pointer to this thread's errno.
    unsafe { *libc::__errno_location() }
}

fn check(rc: libc::c_int) -> SysResult<libc::c_int> {
    if rc < 0 {
        Err(errno())
    } else {
        Ok(rc)
    }
}

fn check_long(rc: libc::c_long) -> SysResult<libc::c_long> {
    if rc < 0 {
        Err(errno())
    } else {
        Ok(rc)
    }
}

fn opt_ptr(s: Option<&CStr>) -> *const libc::c_char {
    s.map_or(std::ptr::null(), |s| s.as_ptr())
}

pub fn mount(
    source: Option<&CStr>,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
    data: Option<&CStr>,
) -> SysResult<()> {
    // SAFETY: all pointers are NUL-terminated strings or NULL, valid for the call.
    let rc = unsafe {
        libc::mount(
            opt_ptr(source),
            target.as_ptr(),
            opt_ptr(fstype),
            flags,
            opt_ptr(data).cast(),
        )
    };
    check(rc).map(drop)
}

pub fn umount2(target: &CStr, flags: libc::c_int) -> SysResult<()> {
    // SAFETY: target is a valid NUL-terminated path.
    check(unsafe { libc::umount2(target.as_ptr(), flags) }).map(drop)
}

pub fn pivot_root(new_root: &CStr, put_old: &CStr) -> SysResult<()> {
    // SAFETY: both arguments are valid NUL-terminated paths; pivot_root has no libc wrapper.
    let rc = unsafe { libc::syscall(libc::SYS_pivot_root, new_root.as_ptr(), put_old.as_ptr()) };
    check_long(rc).map(drop)
}

pub fn chdir(path: &CStr) -> SysResult<()> {
    // SAFETY: path is a valid NUL-terminated string.
    check(unsafe { libc::chdir(path.as_ptr()) }).map(drop)
}

pub fn mkdir(path: &CStr, mode: u32) -> SysResult<()> {
    // SAFETY: path is a valid NUL-terminated string.
    match check(unsafe { libc::mkdir(path.as_ptr(), mode) }) {
        Ok(_) | Err(libc::EEXIST) => Ok(()),
        Err(e) => Err(e),
    }
}

pub fn symlink(target: &CStr, link: &CStr) -> SysResult<()> {
    // SAFETY: both are valid NUL-terminated strings.
    check(unsafe { libc::symlink(target.as_ptr(), link.as_ptr()) }).map(drop)
}

pub fn open(path: &CStr, flags: libc::c_int, mode: u32) -> SysResult<RawFd> {
    // SAFETY: path is a valid NUL-terminated string; mode is used only with O_CREAT.
    check(unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC, mode) })
}

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

pub fn fchmod(fd: RawFd, mode: u32) -> SysResult<()> {
    // SAFETY: plain syscall on an owned fd.
    check(unsafe { libc::fchmod(fd, mode) }).map(drop)
}

pub fn sethostname(name: &CStr) -> SysResult<()> {
    let bytes = name.to_bytes();
    // SAFETY: bytes is valid for its length.
    check(unsafe { libc::sethostname(bytes.as_ptr().cast(), bytes.len()) }).map(drop)
}

pub fn setresgid(gid: u32) -> SysResult<()> {
    // SAFETY: plain syscall with integer arguments.
    check(unsafe { libc::setresgid(gid, gid, gid) }).map(drop)
}

pub fn setresuid(uid: u32) -> SysResult<()> {
    // SAFETY: plain syscall with integer arguments.
    check(unsafe { libc::setresuid(uid, uid, uid) }).map(drop)
}

pub fn prctl(option: libc::c_int, arg2: libc::c_ulong) -> SysResult<libc::c_int> {
    // SAFETY: the prctl options used here take integer arguments only.
    check(unsafe {
        libc::prctl(
            option,
            arg2,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    })
}

pub fn setsid() -> SysResult<()> {
    // SAFETY: plain syscall.
    check(unsafe { libc::setsid() }).map(drop)
}

pub fn setrlimit(resource: u32, soft: u64, hard: u64) -> SysResult<()> {
    let lim = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: lim is a valid rlimit struct for the duration of the call.
    check(unsafe { libc::setrlimit(resource, &lim) }).map(drop)
}

/// Close every fd from `first` upward.
pub fn close_range_from(first: u32) -> SysResult<()> {
    // SAFETY: close_range with integer arguments; closes only fds of this process.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, first, u32::MAX, 0u32) };
    check_long(rc).map(drop)
}

/// Drop every capability from the effective, permitted and inheritable sets.
pub fn capset_zero() -> SysResult<()> {
    let mut header = libc_cap_header {
        version: 0x2008_0522,
        pid: 0,
    };
    let data = [libc_cap_data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: header and data are valid, correctly sized for _LINUX_CAPABILITY_VERSION_3.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &mut header as *mut _, data.as_ptr()) };
    check_long(rc).map(drop)
}

#[repr(C)]
struct libc_cap_header {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct libc_cap_data {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

pub fn sigprocmask_unblock_all() -> SysResult<()> {
    // SAFETY: an all-zero sigset_t is a valid empty set.
    let empty: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: empty is a valid sigset; old set is not requested.
    check(unsafe { libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()) }).map(drop)
}

/// Number of CPUs in this thread's affinity mask (0 if the call fails).
pub fn affinity_cpus() -> u64 {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is valid storage of the size passed.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return 0;
    }
    // SAFETY: CPU_COUNT reads the set we own.
    (unsafe { libc::CPU_COUNT(&set) }) as u64
}

/// Reset every catchable signal's disposition to default (the parent may have handlers, and
/// ignored dispositions survive execve). The raw syscall, not glibc's `signal`: glibc
/// refuses signals 32 and 33 (its internal ones) with EINVAL, so an ignore on those
/// inherited by agentjail would have reached the program.
pub fn reset_signal_dispositions() {
    // The kernel's struct sigaction (x86_64: handler, flags, restorer, mask; the generic
    // one has no restorer). Every field is zero, so it reads the same on either layout.
    #[repr(C)]
    struct KernelSigaction {
        handler: usize,
        flags: u64,
        restorer: usize,
        mask: u64,
    }
    let dfl = KernelSigaction {
        handler: libc::SIG_DFL,
        flags: 0,
        restorer: 0,
        mask: 0,
    };
    for sig in 1..65 {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        // SAFETY: rt_sigaction with a valid kernel sigaction (SIG_DFL, no restorer needed)
        // and no old-action storage; sigsetsize 8 is the kernel's.
        unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                sig as libc::c_long,
                &dfl as *const KernelSigaction,
                std::ptr::null_mut::<KernelSigaction>(),
                8 as libc::size_t,
            )
        };
    }
}

pub fn execve(path: &CStr, argv: &[*const libc::c_char], envp: &[*const libc::c_char]) -> i32 {
    // SAFETY: argv and envp are NULL-terminated arrays of pointers to NUL-terminated strings
    // that live in the (copied) parent memory for the whole call.
    unsafe { libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
    errno()
}

pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit never returns and runs no destructors or atexit handlers, which is what
    // a forked child that failed setup needs.
    unsafe { libc::_exit(code) }
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

pub fn pidfd_open(pid: i32) -> SysResult<RawFd> {
    // SAFETY: pidfd_open takes integer arguments.
    let rc = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    check_long(rc).map(|fd| fd as RawFd)
}

pub fn pidfd_getfd(pidfd: RawFd, target_fd: i32) -> SysResult<RawFd> {
    // SAFETY: pidfd_getfd takes integer arguments; the new fd is close-on-exec.
    let rc = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd, target_fd, 0) };
    check_long(rc).map(|fd| fd as RawFd)
}

pub fn pidfd_send_signal(pidfd: RawFd, sig: i32) -> SysResult<()> {
    // SAFETY: integer arguments; a NULL siginfo means "as kill(2)".
    let rc = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd,
            sig,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    check_long(rc).map(drop)
}

pub fn pipe2() -> SysResult<(RawFd, RawFd)> {
    let mut fds = [-1; 2];
    // SAFETY: fds is a valid two-element array.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    Ok((fds[0], fds[1]))
}

pub fn dup2(old: RawFd, new: RawFd) -> SysResult<()> {
    // SAFETY: plain syscall on fds; dup2 clears CLOEXEC on the new fd, which is intended.
    check(unsafe { libc::dup2(old, new) }).map(drop)
}

/// clone3 with the given flags, like fork(2) otherwise. Returns 0 in the child.
pub fn clone3(flags: u64, pidfd_out: &mut RawFd, cgroup_fd: Option<RawFd>) -> SysResult<i32> {
    #[repr(C)]
    struct CloneArgs {
        flags: u64,
        pidfd: u64,
        child_tid: u64,
        parent_tid: u64,
        exit_signal: u64,
        stack: u64,
        stack_size: u64,
        tls: u64,
        set_tid: u64,
        set_tid_size: u64,
        cgroup: u64,
    }
    const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;
    let mut flags = flags | libc::CLONE_PIDFD as u64;
    let mut cgroup = 0;
    if let Some(fd) = cgroup_fd {
        flags |= CLONE_INTO_CGROUP;
        cgroup = fd as u64;
    }
    let args = CloneArgs {
        flags,
        pidfd: pidfd_out as *mut RawFd as u64,
        child_tid: 0,
        parent_tid: 0,
        exit_signal: libc::SIGCHLD as u64,
        stack: 0,
        stack_size: 0,
        tls: 0,
        set_tid: 0,
        set_tid_size: 0,
        cgroup,
    };
    // SAFETY: args is a valid clone_args struct; without CLONE_VM the child gets a copy of
    // this address space, so continuing on the same stack is sound (fork semantics).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &args as *const CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    check_long(rc).map(|v| v as i32)
}

/// waitid on a pidfd. Returns (si_code, si_status), or None if still running with WNOHANG.
pub fn waitid_pidfd(pidfd: RawFd, options: i32) -> SysResult<Option<(i32, i32)>> {
    // SAFETY: zeroed siginfo_t is valid storage for waitid to fill.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: info is valid storage; P_PIDFD with an owned pidfd.
        let rc = unsafe { libc::waitid(libc::P_PIDFD, pidfd as libc::id_t, &mut info, options) };
        if rc == 0 {
            break;
        }
        let e = errno();
        if e != libc::EINTR {
            return Err(e);
        }
    }
    // SAFETY: waitid filled info; si_pid is 0 when WNOHANG found no state change.
    let pid = unsafe { info.si_pid() };
    if pid == 0 {
        return Ok(None);
    }
    // SAFETY: info holds a SIGCHLD-style record, for which si_status is valid.
    let status = unsafe { info.si_status() };
    Ok(Some((info.si_code, status)))
}

/// Resource usage of waited-for children (for cpu time and peak RSS without cgroups).
pub fn rusage_children() -> libc::rusage {
    // SAFETY: zeroed rusage is valid storage.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is valid storage for getrusage.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    ru
}

pub fn set_nonblocking(fd: RawFd) -> SysResult<()> {
    // SAFETY: F_GETFL on an owned fd.
    let flags = check(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    // SAFETY: F_SETFL on an owned fd with integer flags.
    check(unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) }).map(drop)
}

pub fn geteuid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

pub fn getegid() -> u32 {
    // SAFETY: getegid cannot fail.
    unsafe { libc::getegid() }
}
