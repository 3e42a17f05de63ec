//! Processes and identity: clone3, fork, exec, wait, pidfds, credentials, prctl, rlimits.

use super::{check, check_long, errno, SysResult};
use std::ffi::CStr;
use std::os::fd::RawFd;

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
        // With CLONE_PARENT the kernel requires 0: the child then takes the caller's own
        // exit signal (SIGCHLD for a process started by fork or spawn) to our parent.
        exit_signal: if flags & libc::CLONE_PARENT as u64 != 0 {
            0
        } else {
            libc::SIGCHLD as u64
        },
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

/// A raw fork (clone with SIGCHLD): no atfork handlers, no locks. glibc's fork takes the
/// malloc arena locks first; in a jail child cloned from a multi-threaded agentjail, a lock
/// another thread held at clone time stays held forever, and glibc's fork would hang on it.
/// The child makes only raw syscalls on prepared data.
pub fn raw_fork() -> SysResult<libc::pid_t> {
    // SAFETY: clone without CLONE_VM gives the child a copy of this address space and
    // continues on the same stack (fork semantics); flags and the null pointers are valid.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::SIGCHLD as libc::c_ulong,
            0usize,
            std::ptr::null_mut::<libc::c_int>(),
            std::ptr::null_mut::<libc::c_int>(),
            0usize,
        )
    };
    check_long(rc).map(|v| v as libc::pid_t)
}

/// fork(2). Returns 0 in the child. Callers make only raw syscalls on prepared data in the
/// child (no allocation, no locks), so this is sound even with other threads running.
pub fn fork() -> SysResult<libc::pid_t> {
    // SAFETY: fork has no memory-safety preconditions; the callers' children follow the rule
    // above.
    check(unsafe { libc::fork() })
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

/// A child's end as waitid reports it, with the resource usage the kernel kept for it (its
/// own and every descendant it reaped).
#[derive(Debug, Clone, Copy)]
pub struct Waited {
    /// CLD_EXITED, CLD_KILLED, CLD_DUMPED.
    pub code: i32,
    /// The exit status or the signal number.
    pub status: i32,
    /// ru_utime + ru_stime in microseconds.
    pub cpu_us: u64,
    /// ru_maxrss in bytes.
    pub max_rss_bytes: u64,
}

/// waitid(P_PIDFD) through the raw syscall, whose fifth argument returns the child's rusage
/// (glibc's wrapper drops it). `None` when WNOHANG found the child still running.
pub fn waitid_pidfd(pidfd: RawFd, options: i32) -> SysResult<Option<Waited>> {
    // SAFETY: zeroed siginfo_t and rusage are valid storage for the kernel to fill.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: info and ru are valid storage; P_PIDFD with an fd the caller owns.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_waitid,
                libc::P_PIDFD,
                pidfd as libc::c_long,
                &mut info as *mut libc::siginfo_t,
                options as libc::c_long,
                &mut ru as *mut libc::rusage,
            )
        };
        if rc == 0 {
            break;
        }
        let e = errno();
        if e != libc::EINTR {
            return Err(e);
        }
    }
    // SAFETY: waitid filled info; si_pid is 0 when WNOHANG found no state change.
    if unsafe { info.si_pid() } == 0 {
        return Ok(None);
    }
    let tv_us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Ok(Some(Waited {
        code: info.si_code,
        // SAFETY: info holds a SIGCHLD-style record, for which si_status is valid.
        status: unsafe { info.si_status() },
        cpu_us: tv_us(ru.ru_utime) + tv_us(ru.ru_stime),
        max_rss_bytes: (ru.ru_maxrss.max(0) as u64).saturating_mul(1024),
    }))
}

/// One child reaped by [`wait_any`]: its pid, raw wait status, and the kernel's account of
/// it (its own usage and that of every descendant it reaped).
#[derive(Debug, Clone, Copy)]
pub struct Reaped {
    pub pid: libc::pid_t,
    pub status: libc::c_int,
    /// ru_utime + ru_stime in microseconds.
    pub cpu_us: u64,
    /// ru_maxrss in bytes.
    pub max_rss_bytes: u64,
}

/// wait4(-1, __WALL) for any child, with its rusage. The jail's init reaps with it.
pub fn wait_any() -> SysResult<Reaped> {
    let mut status: libc::c_int = 0;
    // SAFETY: a zeroed rusage is valid storage for the kernel to fill.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 with valid storage for the status and the rusage.
    let r = unsafe { libc::wait4(-1, &mut status, libc::__WALL, &mut ru) };
    let tv_us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    check(r).map(|pid| Reaped {
        pid,
        status,
        cpu_us: tv_us(ru.ru_utime) + tv_us(ru.ru_stime),
        max_rss_bytes: (ru.ru_maxrss.max(0) as u64).saturating_mul(1024),
    })
}

/// Fork, run `probe` in the child (it must make only raw syscalls and return 0 or an errno),
/// and return Ok(()) or the child's errno. Used by `agentjail doctor` to try what would change
/// process state without changing ours.
pub fn probe_in_child(probe: &dyn Fn() -> i32) -> Result<(), i32> {
    let pid = fork()?;
    if pid == 0 {
        exit_now(probe());
    }
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: waitpid on our own child with valid storage for the status.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            break;
        }
        if r < 0 && errno() != libc::EINTR {
            return Err(errno());
        }
    }
    match (libc::WIFEXITED(status), libc::WEXITSTATUS(status)) {
        (true, 0) => Ok(()),
        (true, e) => Err(e),
        _ => Err(libc::ECHILD),
    }
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

/// kill(2): the jail's init uses it with pid -1 to end everything else in its namespace.
pub fn kill(pid: libc::pid_t, sig: i32) -> SysResult<()> {
    // SAFETY: integer arguments only.
    check(unsafe { libc::kill(pid, sig) }).map(drop)
}

pub fn unshare(flags: libc::c_int) -> SysResult<()> {
    // SAFETY: unshare takes only flags and changes only this process.
    check(unsafe { libc::unshare(flags) }).map(drop)
}

pub fn sethostname(name: &CStr) -> SysResult<()> {
    let bytes = name.to_bytes();
    // SAFETY: bytes is valid for its length.
    check(unsafe { libc::sethostname(bytes.as_ptr().cast(), bytes.len()) }).map(drop)
}

/// setresgid for the calling thread only: the raw syscall. glibc's wrapper, in a process it
/// believes multi-threaded, signals every other thread and waits for them (POSIX wants ids
/// per process); in a jail child cloned from a multi-threaded agentjail (serve, mcp) those
/// threads do not exist, and it would wait forever.
pub fn setresgid(gid: u32) -> SysResult<()> {
    // SAFETY: plain syscall with integer arguments.
    check_long(unsafe { libc::syscall(libc::SYS_setresgid, gid, gid, gid) }).map(drop)
}

/// setresuid for the calling thread only (see [`setresgid`] for why not glibc's).
pub fn setresuid(uid: u32) -> SysResult<()> {
    // SAFETY: plain syscall with integer arguments.
    check_long(unsafe { libc::syscall(libc::SYS_setresuid, uid, uid, uid) }).map(drop)
}

/// The calling thread's filesystem uid and gid (raw setfsgid/setfsuid: they act on the
/// calling thread only, unlike glibc's set*id broadcasts). Ok when the kernel reports the
/// new ids in effect (both calls answer with the previous id, so each is asked again).
pub fn set_thread_fs_ids(uid: u32, gid: u32) -> SysResult<()> {
    // SAFETY: plain syscalls with integer arguments; they change this thread's fs ids only.
    let (g, u) = unsafe {
        libc::syscall(libc::SYS_setfsgid, gid);
        libc::syscall(libc::SYS_setfsuid, uid);
        (
            libc::syscall(libc::SYS_setfsgid, gid),
            libc::syscall(libc::SYS_setfsuid, uid),
        )
    };
    if g == gid as libc::c_long && u == uid as libc::c_long {
        Ok(())
    } else {
        Err(libc::EPERM)
    }
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

pub fn geteuid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

pub fn getegid() -> u32 {
    // SAFETY: getegid cannot fail.
    unsafe { libc::getegid() }
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

/// The CPUs in this thread's affinity mask, ascending (empty if the call fails).
pub fn affinity_list() -> Vec<usize> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is valid storage of the size passed.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: CPU_ISSET reads the set we own; the index is below CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Set the affinity of process `pid` (its main thread; threads and children made later
/// inherit it) to `cpus`, each below CPU_SETSIZE.
pub fn set_affinity(pid: i32, cpus: &[usize]) -> SysResult<()> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
        // SAFETY: CPU_SET writes the set we own; the index is below CPU_SETSIZE.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: set is a valid, initialised cpu_set_t of the size passed.
    let r = unsafe { libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r != 0 {
        return Err(errno());
    }
    Ok(())
}

/// The CPU time of process `pid`, all its threads live and ended, in µs, from its process
/// CPU clock: counted in ns, where /proc/<pid>/stat rounds down to clock ticks (10 ms), too
/// coarse to subtract a delivery's base from. None when the process is gone.
pub fn process_cpu_us(pid: i32) -> Option<u64> {
    // The kernel's id of a process CPU clock (MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED) in
    // include/linux/posix-timers.h): the pid inverted, shifted past the 3 type bits.
    let clock = (!pid).wrapping_shl(3) | 2;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is valid storage for one timespec; the kernel checks the clock id.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return None;
    }
    Some(ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000)
}

/// Clock ticks per second (procfs times are in these units).
pub fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no memory effects.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).max(1) as u64
}

/// Fill `buf` from the kernel's random pool (getrandom, blocking until it is initialised).
pub fn getrandom(buf: &mut [u8]) -> SysResult<()> {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: the pointer and length describe the unfilled tail of `buf`.
        let rc = unsafe { libc::getrandom(buf[done..].as_mut_ptr().cast(), buf.len() - done, 0) };
        if rc < 0 {
            let e = errno();
            if e == libc::EINTR {
                continue;
            }
            return Err(e);
        }
        done += rc as usize;
    }
    Ok(())
}

/// Zero `[start, end)` of this process's own memory: the jail's init blanks its inherited
/// argv area so /proc/1/cmdline does not show agentjail's host command line.
///
/// Callers pass the argv string area read from /proc/self/stat before fork (fork keeps the
/// addresses), which is writable stack memory nothing reads afterwards.
pub fn blank_own_memory(start: usize, end: usize) {
    if end <= start {
        return;
    }
    // SAFETY: by this function's contract [start, end) is writable memory of this process
    // that nothing reads again; zeroing it only changes what /proc/<pid>/cmdline shows.
    unsafe { std::ptr::write_bytes(start as *mut u8, 0, end - start) };
}

/// process_vm_readv of one range: copy up to `buf.len()` bytes at `addr` in the memory of
/// task `pid` into `buf`. The bytes copied: fewer when the range runs into memory that is
/// not mapped (the kernel copies page by page and stops there); an error when none could be
/// read. Needs ptrace access to `pid` (the supervisor has it to its own jail's tasks).
pub fn process_vm_read(pid: i32, addr: u64, buf: &mut [u8]) -> SysResult<usize> {
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as usize as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: `local` describes `buf`, exclusively borrowed and valid for `buf.len()` bytes,
    // the only memory of ours the kernel writes; `remote` is an address in the other task,
    // which the kernel checks (EFAULT) and never dereferences in ours. One iovec each.
    let r = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    check_long(r as libc::c_long).map(|n| n as usize)
}
