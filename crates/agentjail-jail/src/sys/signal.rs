//! Signal masks, dispositions and the supervisor's signalfd.

use super::{check, SysResult};
use std::os::fd::{OwnedFd, RawFd};

fn sigset(signals: &[i32]) -> libc::sigset_t {
    // SAFETY: an all-zero sigset_t is valid storage for sigemptyset.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is valid storage.
    unsafe { libc::sigemptyset(&mut set) };
    for &sig in signals {
        // SAFETY: set is initialised; callers pass valid signal numbers.
        unsafe { libc::sigaddset(&mut set, sig) };
    }
    set
}

/// Block `signals` for the calling thread (and every thread it starts afterwards) and return
/// a close-on-exec, non-blocking signalfd that receives them instead.
pub fn block_into_signalfd(signals: &[i32]) -> SysResult<OwnedFd> {
    let set = sigset(signals);
    // SAFETY: set is a valid initialised set; the old mask is not needed.
    check(unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) })?;
    // SAFETY: set is valid; -1 asks for a new signalfd.
    let fd = check(unsafe { libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) })?;
    Ok(super::owned(fd))
}

/// One pending signal from a signalfd: (signal number, sender pid), or None.
pub fn read_signalfd(fd: RawFd) -> Option<(i32, u32)> {
    // SAFETY: zeroed signalfd_siginfo is valid storage.
    let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::signalfd_siginfo>();
    // SAFETY: info is valid storage of `size` bytes.
    let n = unsafe { libc::read(fd, (&mut info as *mut libc::signalfd_siginfo).cast(), size) };
    (n == size as isize).then_some((info.ssi_signo as i32, info.ssi_pid))
}

pub fn sigprocmask_unblock_all() -> SysResult<()> {
    // SAFETY: an all-zero sigset_t is a valid empty set.
    let empty: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: empty is a valid sigset; old set is not requested.
    check(unsafe { libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()) }).map(drop)
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
