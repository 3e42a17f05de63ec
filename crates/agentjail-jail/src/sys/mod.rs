//! The kernel module: every `libc` call and every `unsafe` block of agentjail lives here, one
//! small `unsafe` block per syscall, each with its `SAFETY:` argument (house rule 4 in
//! docs/ARCHITECTURE.md). The rest of the crate calls these safe wrappers.
//!
//! Split by subject: [`fs`] (paths and mounts), [`io`] (fds, pipes, polling, locks),
//! [`process`] (clone3, fork, exec, wait, pidfds, credentials, rlimits), [`signal`] (masks,
//! dispositions, signalfd), [`security`] (capabilities, no_new_privs, landlock, seccomp) and
//! [`net`] (the allowlist's loopback listener).
//!
//! Everything the jail's child calls between clone3 and execve is callable there: no
//! allocation, no locks, no panics. Arguments are pre-built NUL-terminated strings (`&CStr`)
//! prepared in the parent. Errors are the raw errno (one helper reads it: [`errno`]) so the
//! child can report them as (stage, errno).

pub(crate) mod fs;
pub(crate) mod io;
pub(crate) mod net;
pub(crate) mod process;
pub(crate) mod security;
pub(crate) mod signal;

pub use fs::*;
pub use io::*;
pub use net::*;
pub use process::*;
pub use security::*;
pub use signal::*;

pub type SysResult<T> = Result<T, i32>;

/// The calling thread's errno, read right after a failed call.
pub fn errno() -> i32 {
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
