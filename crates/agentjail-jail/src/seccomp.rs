//! The seccomp allowlist: the last thing the child does before `execve`.
//!
//! # What the filter does, in order
//! 1. `seccomp_data.arch != AUDIT_ARCH_X86_64` (an `int 0x80` i386 syscall, or any other
//!    ABI) → `SECCOMP_RET_KILL_PROCESS`. The run ends with SIGSYS; no syscall number is
//!    reported because the number belongs to another table.
//! 2. The syscall number has bit `0x40000000` set (the x32 ABI) → `SECCOMP_RET_KILL_PROCESS`.
//!    x32 numbers would not match the allowlist anyway; killing them outright keeps them from
//!    ever reaching the notifier with a number `syscall_name` cannot name.
//! 3. Syscalls refused with an errno: the built-in probes (`clone3` → `ENOSYS`, because its
//!    flags live behind a pointer seccomp cannot read; glibc then falls back to `clone`, whose
//!    flags *are* filtered; `pkey_alloc` → `ENOSYS`, V8's memory-protection-key probe) and
//!    the policy's `errno_syscalls` (→ `EPERM`). These return the
//!    errno and the program goes on; they take precedence over the allowlist.
//! 4. The allowlist: the syscalls of the policy's groups ([`groups`]). A few are allowed only
//!    with certain arguments ([`ARGUMENT_FILTERS`]): `ioctl` only for a fixed list of request
//!    numbers, compared on the low 32 bits (the kernel truncates the request to `unsigned
//!    int`, so setting high bits cannot smuggle `TIOCSTI` past the filter); `clone` never with
//!    a `CLONE_NEW*` flag; `socket` only for the address families of the enabled groups;
//!    `prlimit64` only on the calling process.
//! 5. Anything else → `SECCOMP_RET_USER_NOTIF`. The calling thread blocks; the supervisor,
//!    which holds the listener fd, reads the syscall number ([`receive_notification`]), kills
//!    the whole jail and records `code_forbidden_syscall:<name>`. The supervisor never
//!    answers a notification, so the syscall never executes. If the listener is gone (the
//!    supervisor died or closed it), the kernel fails the syscall with `ENOSYS`: still closed.
//!
//! Observe mode (`agentjail learn` only, [`SeccompPlan::observe_opens`]): step 4's open,
//! openat and openat2, where allowed (and after their set-id mode checks), notify too; the
//! supervisor notes the path and answers SECCOMP_USER_NOTIF_FLAG_CONTINUE, so the kernel
//! runs them as allowed ([`observe_open`]). Every other answer is the normal filter's.
//!
//! Some syscalls are in no group, not even an opt-in one ([`NEVER`]): namespace creation,
//! mounts, BPF, keyrings, perf, userfaultfd, io_uring, ptrace and cross-process memory,
//! personality, modules, kexec, reboot, clock setting, uid/gid changes, a second seccomp
//! filter, and so on. [`plan`] refuses a plan that would allow one of them.
//!
//! The BPF program is generated here ([`compile`]): the two ABI checks, then a binary search
//! over the syscall numbers that have a verdict (allow, errno, or argument checks), and
//! `SECCOMP_RET_USER_NOTIF` for every number the search does not hold. A tree rather than a
//! row of compares because the kernel emulates the filter for every syscall number when it
//! is installed (to cache the always-allowed ones): a row costs ~0.3 ms per launch there, a
//! tree a few microseconds. A unit test runs the program through a BPF interpreter for
//! every syscall number and the arguments that matter, against the plan. All allocation
//! happens in [`compile`], in the parent; [`install`] makes two syscalls on prepared data.
//!
//! Each number's verdict is `verdicts.rs`, the program's layout `bpf.rs`, the supervisor's
//! side of the listener (notifications, the session doorbell) `notify.rs`; this file builds,
//! installs and describes the filter.

mod bpf;
mod notify;
mod verdicts;

use super::{sys, Control, ControlState, SetupError};
pub use crate::plan::SeccompPlan;
pub use crate::syscalls::{syscall_name, syscall_number};
use bpf::program;
pub use notify::{
    answer_doorbell, answer_errno, is_doorbell, observe_open, receive_notification,
    refuse_doorbell, ObservedOpen, SESSION_DOORBELL,
};
use std::os::fd::RawFd;
use verdicts::{verdicts, Verdict, RET_ALLOW, RET_NOTIFY};
pub use verdicts::{ARGUMENT_FILTERS, MODE_ARGUMENTS, OBSERVED_OPENS};

/// The compiled BPF program, owned; built in the parent, installed in the child.
pub struct Filter {
    program: Vec<libc::sock_filter>,
}

impl std::fmt::Debug for Filter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Filter")
            .field("instructions", &self.program.len())
            .finish()
    }
}

impl Filter {
    pub fn instruction_count(&self) -> usize {
        self.program.len()
    }
}

/// Build the BPF program for a plan. Runs in the parent; all allocation happens here.
pub fn compile(plan: &SeccompPlan) -> Result<Filter, SetupError> {
    let entries: Vec<(u32, Verdict)> = verdicts(plan)?.into_iter().collect();
    program(&entries, RET_NOTIFY)
}

/// Observe mode: the syscall numbers the plan's filter sends to the listener only to be
/// seen (the open family its allowlist allows; empty when `plan.observe_opens` is off). The
/// supervisor answers exactly these with CONTINUE ([`crate::plan::SuperviseLimits::observe_opens`]).
pub fn observed_opens(plan: &SeccompPlan) -> Result<Vec<u32>, SetupError> {
    if !plan.observe_opens {
        return Ok(Vec::new());
    }
    let mut plain = plan.clone();
    plain.observe_opens = false;
    Ok(verdicts::allowed_opens(&verdicts(&plain)?))
}

/// Install the filter on the calling (single-threaded, forked) process: sets no_new_privs
/// (idempotent) and loads the program with a user-notification listener. Returns the listener
/// fd, which the kernel creates close-on-exec. Makes only raw syscalls on prepared data: no
/// allocation, no locks, no panics. On failure returns the errno.
pub fn install(filter: &Filter) -> Result<RawFd, i32> {
    sys::no_new_privs()?;
    load(filter, libc::SECCOMP_FILTER_FLAG_NEW_LISTENER)
}

/// seccomp(SECCOMP_SET_MODE_FILTER, flags, program): the syscall's return value or errno.
fn load(filter: &Filter, flags: libc::c_ulong) -> Result<RawFd, i32> {
    sys::seccomp_set_filter(&filter.program, flags)
}

/// The record's `seccomp` control.
pub fn enforcement(plan: &SeccompPlan, filter: &Filter) -> Control {
    let errno: Vec<String> = plan
        .errno
        .iter()
        .map(|(n, e)| format!("{n}→{}", errno_name(*e)))
        .collect();
    let detail =
        format!(
        "{} syscalls allowed (groups: {}); errno: {}; default: notify supervisor and stop the run \
         (code_forbidden_syscall:<name>); other arch and x32 ABI: kill process; ioctl limited to \
         TCGETS, TIOCGWINSZ, FIONREAD, FIONBIO, FIOCLEX, FIONCLEX (low 32 bits); clone without \
         CLONE_NEW*; {} BPF instructions",
        plan.allowed.len(),
        plan.groups.join(", "),
        if errno.is_empty() { "none".to_string() } else { errno.join(", ") },
        filter.instruction_count()
    );
    let detail = if plan.observe_opens {
        format!(
            "{detail}; observe mode: allowed opens ({}) are shown to the supervisor, which \
             notes the path and lets the kernel run them (SECCOMP_USER_NOTIF_FLAG_CONTINUE)",
            verdicts::OBSERVED_OPENS.join(", ")
        )
    } else {
        detail
    };
    Control::new(
        "seccomp",
        ControlState::Enforced,
        "seccomp-bpf allowlist with user notification",
        detail,
    )
}

fn errno_name(e: i32) -> String {
    match e {
        libc::ENOSYS => "ENOSYS".into(),
        libc::EPERM => "EPERM".into(),
        libc::EACCES => "EACCES".into(),
        other => format!("errno {other}"),
    }
}

/// The jail's init (pid 1, agentjail's own code after setup) needs only to reap children,
/// end the namespace with kill(-1) when the program ends, report one wait status and exit. Its filter allows exactly that and kills on anything
/// else, so even a compromised init could not make a syscall the payload may not.
pub fn compile_init_filter() -> Result<Filter, SetupError> {
    let allowed = [
        libc::SYS_write,
        libc::SYS_close,
        libc::SYS_wait4,
        libc::SYS_kill,
        libc::SYS_exit,
        libc::SYS_exit_group,
        libc::SYS_rt_sigreturn,
        libc::SYS_restart_syscall,
    ];
    let mut entries: Vec<(u32, Verdict)> = allowed
        .iter()
        .map(|nr| (*nr as u32, Verdict::Always(RET_ALLOW)))
        .collect();
    entries.sort_by_key(|e| e.0);
    program(&entries, libc::SECCOMP_RET_KILL_PROCESS)
}

/// Install a filter without a listener (the init's, which already has no_new_privs).
pub fn install_plain(filter: &Filter) -> Result<(), i32> {
    load(filter, 0).map(|_| ())
}

#[cfg(test)]
mod tests;
