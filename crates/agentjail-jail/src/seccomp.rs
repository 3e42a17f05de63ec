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

use super::{sys, Control, ControlState, SetupError};
pub use crate::plan::SeccompPlan;
pub use crate::syscalls::{syscall_name, syscall_number};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};

/// Syscalls allowed only with certain arguments, for reviewers.
pub const ARGUMENT_FILTERS: &[(&str, &str)] = &[
    (
        "ioctl",
        "request (low 32 bits) one of TCGETS, TIOCGWINSZ, FIONREAD, FIONBIO, FIOCLEX, FIONCLEX",
    ),
    (
        "clone",
        "no CLONE_NEW* flag; without process_spawn also CLONE_THREAD",
    ),
    (
        "socket",
        "domain AF_UNIX (sockets_local), AF_INET/AF_INET6 (network)",
    ),
    ("socketpair", "domain AF_UNIX"),
    ("prlimit64", "pid 0 (the caller) only"),
];

/// ioctl requests the jailed program may make. Never TIOCSTI, TIOCLINUX, TCSETS*...
const IOCTL_ALLOWED: &[u64] = &[
    libc::TCGETS,
    libc::TIOCGWINSZ,
    libc::FIONREAD,
    libc::FIONBIO,
    libc::FIOCLEX,
    libc::FIONCLEX,
];

const CLONE_NEW_FLAGS: u64 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u32 as u64;

const X32_SYSCALL_BIT: u32 = 0x4000_0000;

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

/// What the filter does with one syscall number.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    /// Return this action (`SECCOMP_RET_ALLOW`, `SECCOMP_RET_ERRNO | e`, ...) whatever the
    /// arguments.
    Always(u32),
    /// Compare the arguments: the first matching check's action, else `otherwise`.
    Args {
        checks: Vec<ArgCheck>,
        otherwise: u32,
    },
}

/// `(low 32 bits of args[arg] & mask) == value` → `action`. Only the low 32 bits: every
/// argument checked here is an `int` or `unsigned int` in the kernel (clone's flags are
/// truncated by `lower_32_bits`, ioctl's request to `unsigned int`), so the high bits cannot
/// change what the kernel does, and comparing them would only let a caller dodge a match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ArgCheck {
    arg: u8,
    mask: u32,
    value: u32,
    action: u32,
}

const RET_ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const RET_NOTIFY: u32 = libc::SECCOMP_RET_USER_NOTIF;

fn ret_errno(e: i32) -> u32 {
    libc::SECCOMP_RET_ERRNO
        | (u32::try_from(e).unwrap_or(libc::EPERM as u32) & libc::SECCOMP_RET_DATA)
}

fn eq(arg: u8, value: u32, action: u32) -> ArgCheck {
    ArgCheck {
        arg,
        mask: u32::MAX,
        value,
        action,
    }
}

/// The argument checks for one allowed syscall under the plan's groups; `None` means
/// "allowed with any arguments". A syscall with checks whose arguments match none of them is
/// not allowed: ioctl gets ENOTTY (see `compile`), the others notify the supervisor.
fn arg_verdict(name: &str, groups: &[String]) -> Option<Verdict> {
    let has = |g: &str| groups.iter().any(|x| x == g);
    let (checks, otherwise) = match name {
        "ioctl" => (
            IOCTL_ALLOWED
                .iter()
                .map(|req| eq(1, *req as u32, RET_ALLOW))
                .collect(),
            ret_errno(libc::ENOTTY),
        ),
        "clone" => {
            let (mask, value) = if has("process_spawn") {
                (CLONE_NEW_FLAGS as u32, 0)
            } else {
                let thread = libc::CLONE_THREAD as u32;
                (CLONE_NEW_FLAGS as u32 | thread, thread)
            };
            let check = ArgCheck {
                arg: 0,
                mask,
                value,
                action: RET_ALLOW,
            };
            (vec![check], RET_NOTIFY)
        }
        "socket" => {
            let mut c = Vec::new();
            if has("sockets_local") {
                c.push(eq(0, libc::AF_UNIX as u32, RET_ALLOW));
            } else {
                // As without any socket group (see `verdicts`): glibc's nscd probe, made by
                // every name lookup of a program with `network` (the allowlist), gets the
                // EACCES of a host without nscd instead of stopping the run.
                c.push(eq(0, libc::AF_UNIX as u32, ret_errno(libc::EACCES)));
            }
            if has("network") {
                c.push(eq(0, libc::AF_INET as u32, RET_ALLOW));
                c.push(eq(0, libc::AF_INET6 as u32, RET_ALLOW));
            }
            (c, RET_NOTIFY)
        }
        "socketpair" => (vec![eq(0, libc::AF_UNIX as u32, RET_ALLOW)], RET_NOTIFY),
        "prlimit64" => (vec![eq(0, 0, RET_ALLOW)], RET_NOTIFY),
        _ => return None,
    };
    Some(Verdict::Args { checks, otherwise })
}

/// Every syscall number the filter decides on explicitly, with its verdict; any other
/// number gets `SECCOMP_RET_USER_NOTIF`.
fn verdicts(plan: &SeccompPlan) -> Result<BTreeMap<u32, Verdict>, SetupError> {
    let number = |name: &str| {
        syscall_number(name)
            .and_then(|nr| u32::try_from(nr).ok())
            .ok_or_else(|| {
                SetupError::new(
                    "seccomp compile",
                    None,
                    format!(
                        "unknown syscall {name:?} in the plan; rebuild the plan with seccomp::plan"
                    ),
                )
            })
    };
    let mut map = BTreeMap::new();
    // The errno list wins over the allowlist (`plan` already removed those names from it).
    for (name, e) in &plan.errno {
        map.insert(number(name)?, Verdict::Always(ret_errno(*e)));
    }
    for name in &plan.allowed {
        let nr = number(name)?;
        if map.contains_key(&nr) {
            continue;
        }
        let v = arg_verdict(name, &plan.groups).unwrap_or(Verdict::Always(RET_ALLOW));
        map.insert(nr, v);
    }
    // socket(AF_UNIX) without the socket groups: glibc probes nscd with it on every user or
    // group lookup (ls -l, id); EACCES is what it gets on a host without nscd and carries on.
    // No socket is created. Every other family still stops the run and is named.
    let socket = libc::SYS_socket as u32;
    map.entry(socket).or_insert_with(|| Verdict::Args {
        checks: vec![eq(0, libc::AF_UNIX as u32, ret_errno(libc::EACCES))],
        otherwise: RET_NOTIFY,
    });
    if plan.deny_setid_modes {
        deny_setid_modes(&mut map)?;
    }
    // The session doorbell (see [`SESSION_DOORBELL`]) notifies the supervisor whatever the
    // policy says of ioctl (allowed, refused with an errno, or not named: then it notifies
    // anyway, as every unnamed syscall does).
    let ioctl = libc::SYS_ioctl as u32;
    let door = eq(1, SESSION_DOORBELL, RET_NOTIFY);
    match map.remove(&ioctl) {
        None => {}
        Some(Verdict::Always(otherwise)) => {
            map.insert(
                ioctl,
                Verdict::Args {
                    checks: vec![door],
                    otherwise,
                },
            );
        }
        Some(Verdict::Args {
            mut checks,
            otherwise,
        }) => {
            checks.insert(0, door);
            map.insert(ioctl, Verdict::Args { checks, otherwise });
        }
    }
    Ok(map)
}

/// The syscalls that take a file mode, and the argument that holds it.
pub const MODE_ARGUMENTS: &[(&str, u8)] = &[
    ("chmod", 1),
    ("fchmod", 1),
    ("fchmodat", 2),
    ("fchmodat2", 2),
    ("creat", 1),
    ("open", 2),
    ("openat", 3),
    ("mknod", 1),
    ("mknodat", 2),
];

/// `deny_setid_modes`: each allowed syscall of [`MODE_ARGUMENTS`] returns EPERM when its
/// mode has S_ISUID or S_ISGID (the kernel reads the mode as a `umode_t`, in the low 16
/// bits: the low 32 compared here hold it whole). openat2's mode is behind a pointer seccomp
/// cannot read: allowed, it would become ENOSYS (no group allows it; glibc never needs it).
fn deny_setid_modes(map: &mut BTreeMap<u32, Verdict>) -> Result<(), SetupError> {
    let setid = |arg: u8| {
        [libc::S_ISUID, libc::S_ISGID].map(|bit| ArgCheck {
            arg,
            mask: bit,
            value: bit,
            action: ret_errno(libc::EPERM),
        })
    };
    for (name, arg) in MODE_ARGUMENTS {
        let Some(nr) = syscall_number(name).and_then(|n| u32::try_from(n).ok()) else {
            continue;
        };
        let v = match map.remove(&nr) {
            None => continue,
            Some(Verdict::Always(a)) if a == RET_ALLOW => Verdict::Args {
                checks: setid(*arg).to_vec(),
                otherwise: RET_ALLOW,
            },
            Some(Verdict::Args {
                mut checks,
                otherwise,
            }) => {
                checks.splice(0..0, setid(*arg));
                Verdict::Args { checks, otherwise }
            }
            Some(other) => other,
        };
        map.insert(nr, v);
    }
    if let Some(nr) = syscall_number("openat2").and_then(|n| u32::try_from(n).ok()) {
        if map.get(&nr) == Some(&Verdict::Always(RET_ALLOW)) {
            map.insert(nr, Verdict::Always(ret_errno(libc::ENOSYS)));
        }
    }
    Ok(())
}

const BPF_LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const BPF_RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
const BPF_JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const BPF_JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const BPF_JSET_K: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
const BPF_JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
const BPF_AND_K: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
/// offsetof(struct seccomp_data, nr) and (.., arch).
const DATA_NR: u32 = 0;
const DATA_ARCH: u32 = 4;
/// offsetof(struct seccomp_data, args[i]), low 32 bits (little endian).
fn data_arg_lo(i: u8) -> u32 {
    16 + 8 * u32::from(i)
}
const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;

fn insn(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// Numbers per leaf of the search tree: past this, a `JGE` node splits the range.
const LEAF_SIZE: usize = 4;

/// The block for one verdict, entered with the syscall number in A; always ends in a RET.
fn verdict_block(v: &Verdict) -> Vec<libc::sock_filter> {
    match v {
        Verdict::Always(k) => vec![insn(BPF_RET_K, 0, 0, *k)],
        Verdict::Args { checks, otherwise } => {
            let mut out = Vec::new();
            let mut loaded: Option<(u8, u32)> = None;
            for c in checks {
                if loaded != Some((c.arg, c.mask)) {
                    out.push(insn(BPF_LD_W_ABS, 0, 0, data_arg_lo(c.arg)));
                    if c.mask != u32::MAX {
                        out.push(insn(BPF_AND_K, 0, 0, c.mask));
                    }
                    loaded = Some((c.arg, c.mask));
                }
                out.push(insn(BPF_JEQ_K, 0, 1, c.value));
                out.push(insn(BPF_RET_K, 0, 0, c.action));
            }
            out.push(insn(BPF_RET_K, 0, 0, *otherwise));
            out
        }
    }
}

/// A binary search over `entries` (sorted by number) with the number in A. Every jump is
/// forward: an inner node is `JGE mid` followed by a long `JA` over the left half; a leaf
/// compares up to [`LEAF_SIZE`] numbers, each followed by its verdict block, and ends in
/// `RET USER_NOTIF` for numbers it does not hold.
///
/// Why a tree and not one compare per syscall in a row: when a filter is installed the
/// kernel emulates it once for every syscall number to fill its "always allowed" cache
/// (`seccomp_cache_prepare_bitmap`). For a linear chain that walks the chain for each of the
/// ~470 numbers (the whole chain for every number the list does not hold); a tree is ~10
/// steps each. The same holds at run time for every syscall that is not cached. The
/// decisions are identical; `tests::tree_matches_reference` checks every number.
fn search(
    entries: &[(u32, Verdict)],
    default: u32,
    out: &mut Vec<libc::sock_filter>,
) -> Result<(), SetupError> {
    let too_far = || {
        SetupError::new(
            "seccomp compile",
            None,
            "an argument check block is longer than a BPF conditional jump can skip (255); this is a bug in agentjail's syscall groups",
        )
    };
    if entries.len() <= LEAF_SIZE {
        for (nr, v) in entries {
            let block = verdict_block(v);
            let skip = u8::try_from(block.len()).map_err(|_| too_far())?;
            out.push(insn(BPF_JEQ_K, 0, skip, *nr));
            out.extend(block);
        }
        out.push(insn(BPF_RET_K, 0, 0, default));
        return Ok(());
    }
    let mid = entries.len() / 2;
    let mut left = Vec::new();
    search(&entries[..mid], default, &mut left)?;
    // A >= entries[mid]: fall into the JA that jumps over the left half; else skip it.
    out.push(insn(BPF_JGE_K, 0, 1, entries[mid].0));
    out.push(insn(BPF_JA, 0, 0, left.len() as u32));
    out.extend(left);
    search(&entries[mid..], default, out)
}

/// Build the BPF program for a plan. Runs in the parent; all allocation happens here.
pub fn compile(plan: &SeccompPlan) -> Result<Filter, SetupError> {
    let entries: Vec<(u32, Verdict)> = verdicts(plan)?.into_iter().collect();
    program(&entries, RET_NOTIFY)
}

/// The two ABI checks, then the search over `entries`; numbers it does not hold get
/// `default`. Both the program's filter and the init's are built here.
fn program(entries: &[(u32, Verdict)], default: u32) -> Result<Filter, SetupError> {
    let mut program = vec![
        // Another architecture (i386 via int 0x80, ...): its numbers mean other syscalls.
        insn(BPF_LD_W_ABS, 0, 0, DATA_ARCH),
        insn(BPF_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        insn(BPF_RET_K, 0, 0, libc::SECCOMP_RET_KILL_PROCESS),
        // x32 ABI numbers (bit 30): kill before they could reach the notifier unnamed.
        insn(BPF_LD_W_ABS, 0, 0, DATA_NR),
        insn(BPF_JSET_K, 0, 1, X32_SYSCALL_BIT),
        insn(BPF_RET_K, 0, 0, libc::SECCOMP_RET_KILL_PROCESS),
    ];
    search(entries, default, &mut program)?;
    if program.len() > libc::BPF_MAXINSNS as usize {
        return Err(SetupError::new(
            "seccomp compile",
            None,
            format!(
                "filter has {} instructions, more than the kernel's {}; enable fewer groups",
                program.len(),
                libc::BPF_MAXINSNS
            ),
        ));
    }
    Ok(Filter { program })
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

/// Supervisor side: read one pending notification from the listener (the calling thread's
/// id in the supervisor's pid namespace, the syscall and its arguments). For anything but
/// the session doorbell the caller then kills the jail and never answers, so the syscall
/// does not run.
pub fn receive_notification(listener: BorrowedFd<'_>) -> std::io::Result<sys::Notification> {
    sys::seccomp_notif_recv(listener.as_raw_fd()).map_err(std::io::Error::from_raw_os_error)
}

/// The session runner's doorbell: `ioctl(3, SESSION_DOORBELL, 0)`, made by the runner
/// between two calls of a session (crates/agentjail-engine/src/runner/python.py). The
/// filter sends it to the
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
mod tests {
    use super::*;
    use crate::plan::Requirement;
    use crate::syscall_groups::{groups, DEFAULT_GROUPS, NEVER};
    use crate::syscalls::SYSCALLS;
    use std::collections::BTreeSet;

    /// What a policy's `[seccomp]` table holds, for these tests: the groups to allow and
    /// the syscalls refused with EPERM (the default policy's: every default group, none).
    #[derive(Clone)]
    struct SeccompPolicy {
        allow_groups: Vec<String>,
        errno_syscalls: Vec<String>,
    }

    impl Default for SeccompPolicy {
        fn default() -> Self {
            SeccompPolicy {
                allow_groups: DEFAULT_GROUPS.iter().map(|g| g.to_string()).collect(),
                errno_syscalls: Vec::new(),
            }
        }
    }

    fn plan(p: &SeccompPolicy) -> Result<SeccompPlan, String> {
        crate::syscall_groups::resolve(Requirement::Required, &p.allow_groups, &p.errno_syscalls)
    }

    #[test]
    fn table_matches_libc() {
        for (name, nr) in [
            ("read", libc::SYS_read),
            ("unshare", libc::SYS_unshare),
            ("clone3", libc::SYS_clone3),
            ("io_uring_setup", libc::SYS_io_uring_setup),
            ("pidfd_getfd", libc::SYS_pidfd_getfd),
            ("landlock_restrict_self", libc::SYS_landlock_restrict_self),
            ("mseal", libc::SYS_mseal),
        ] {
            assert_eq!(syscall_number(name), Some(nr), "{name}");
            assert_eq!(syscall_name(nr), Some(name));
        }
        let mut seen = BTreeSet::new();
        for (name, nr) in SYSCALLS {
            assert!(seen.insert(*nr), "duplicate number {nr}");
            assert_eq!(syscall_number(name), Some(*nr), "duplicate name {name}");
        }
    }

    #[test]
    fn groups_never_contain_forbidden_syscalls_and_all_names_exist() {
        for (g, calls) in groups() {
            for c in *calls {
                assert!(syscall_number(c).is_some(), "{g}: {c} unknown");
                assert!(!NEVER.contains(c), "{g}: {c} is never allowed");
            }
        }
        for n in NEVER {
            assert!(
                syscall_number(n).is_some() || ["vm86", "vm86old", "nfsservctl"].contains(n),
                "{n}"
            );
        }
    }

    #[test]
    fn plan_rejects_unknown_names() {
        let mut p = SeccompPolicy::default();
        p.allow_groups.push("everything".into());
        assert!(plan(&p).unwrap_err().contains("\"everything\""));
        let mut p = SeccompPolicy::default();
        p.errno_syscalls.push("frobnicate".into());
        assert!(plan(&p).unwrap_err().contains("\"frobnicate\""));
    }

    /// A classic-BPF interpreter for the instructions `compile` emits; panics on anything
    /// else, on a jump out of the program, or on running off its end.
    fn run_bpf(prog: &[libc::sock_filter], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_le_bytes());
        data[4..8].copy_from_slice(&arch.to_le_bytes());
        for (i, a) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
        }
        let (mut a, mut pc) = (0u32, 0usize);
        loop {
            let i = prog[pc];
            let (jt, jf) = (usize::from(i.jt), usize::from(i.jf));
            match i.code {
                BPF_LD_W_ABS => {
                    let k = i.k as usize;
                    a = u32::from_le_bytes(data[k..k + 4].try_into().unwrap());
                }
                BPF_RET_K => return i.k,
                BPF_JA => pc += i.k as usize,
                BPF_JEQ_K => pc += if a == i.k { jt } else { jf },
                BPF_JGE_K => pc += if a >= i.k { jt } else { jf },
                BPF_JSET_K => pc += if a & i.k != 0 { jt } else { jf },
                BPF_AND_K => a &= i.k,
                other => panic!("unexpected BPF code {other:#x} at {pc}"),
            }
            pc += 1;
        }
    }

    /// What the filter must answer, written from the module's rules, not from `compile`.
    fn reference(plan: &SeccompPlan, nr: u32, args: [u64; 6]) -> u32 {
        if nr & X32_SYSCALL_BIT != 0 {
            return libc::SECCOMP_RET_KILL_PROCESS;
        }
        let Some(name) = syscall_name(i64::from(nr)) else {
            return libc::SECCOMP_RET_USER_NOTIF;
        };
        // The session doorbell reaches the supervisor whatever the policy says of ioctl.
        if name == "ioctl" && args[1] as u32 == SESSION_DOORBELL {
            return libc::SECCOMP_RET_USER_NOTIF;
        }
        if let Some((_, e)) = plan.errno.iter().find(|(n, _)| n == name) {
            return libc::SECCOMP_RET_ERRNO | *e as u32;
        }
        let group = |g: &str| plan.groups.iter().any(|x| x == g);
        let lo = |i: usize| args[i] as u32;
        let allow_if = |ok: bool| {
            if ok {
                libc::SECCOMP_RET_ALLOW
            } else {
                libc::SECCOMP_RET_USER_NOTIF
            }
        };
        if !plan.allowed.iter().any(|n| n == name) {
            if name == "socket" && lo(0) == libc::AF_UNIX as u32 {
                return libc::SECCOMP_RET_ERRNO | libc::EACCES as u32;
            }
            return libc::SECCOMP_RET_USER_NOTIF;
        }
        if let Some((_, arg)) = MODE_ARGUMENTS.iter().find(|(n, _)| *n == name) {
            if plan.deny_setid_modes && lo(*arg as usize) & (libc::S_ISUID | libc::S_ISGID) != 0 {
                return libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
            }
        }
        let new_ns = CLONE_NEW_FLAGS as u32;
        match name {
            "ioctl" => {
                if IOCTL_ALLOWED.iter().any(|r| *r as u32 == lo(1)) {
                    libc::SECCOMP_RET_ALLOW
                } else {
                    libc::SECCOMP_RET_ERRNO | libc::ENOTTY as u32
                }
            }
            "clone" if group("process_spawn") => allow_if(lo(0) & new_ns == 0),
            "clone" => allow_if(lo(0) & new_ns == 0 && lo(0) & libc::CLONE_THREAD as u32 != 0),
            "socket" if lo(0) == libc::AF_UNIX as u32 && !group("sockets_local") => {
                libc::SECCOMP_RET_ERRNO | libc::EACCES as u32
            }
            "socket" => allow_if(
                (group("sockets_local") && lo(0) == libc::AF_UNIX as u32)
                    || (group("network")
                        && (lo(0) == libc::AF_INET as u32 || lo(0) == libc::AF_INET6 as u32)),
            ),
            "socketpair" => allow_if(lo(0) == libc::AF_UNIX as u32),
            "prlimit64" => allow_if(lo(0) == 0),
            _ => libc::SECCOMP_RET_ALLOW,
        }
    }

    #[test]
    fn tree_matches_reference() {
        let interesting: Vec<u64> = vec![
            0,
            1,
            libc::AF_UNIX as u64,
            libc::AF_INET as u64,
            libc::AF_INET6 as u64,
            libc::AF_NETLINK as u64,
            libc::AF_PACKET as u64,
            libc::TCGETS,
            libc::TIOCGWINSZ,
            libc::FIOCLEX,
            libc::TIOCSTI,
            libc::TIOCSTI | (1 << 32),
            libc::TCGETS | (1 << 40),
            libc::CLONE_THREAD as u64 | libc::CLONE_VM as u64,
            (libc::CLONE_THREAD | libc::CLONE_NEWUSER) as u64,
            libc::CLONE_NEWNET as u64,
            libc::SIGCHLD as u64,
            u32::MAX as u64,
            u64::MAX,
            0o644,
            0o4755,
            0o2755,
            0o6755 | (1 << 33),
            0o104755,
        ];
        let mut policies = Vec::new();
        policies.push(SeccompPolicy::default());
        for extra in [
            &["process_spawn"][..],
            &["network", "sockets_local"],
            &["network"],
        ] {
            let mut p = SeccompPolicy::default();
            p.allow_groups.extend(extra.iter().map(|s| s.to_string()));
            policies.push(p);
        }
        policies.push(SeccompPolicy {
            errno_syscalls: vec!["ioctl".into(), "socket".into(), "sched_setaffinity".into()],
            ..Default::default()
        });
        policies.push(SeccompPolicy {
            allow_groups: vec!["basic_io".into()],
            ..Default::default()
        });
        let mut numbers: Vec<u32> = (0..=520).collect();
        numbers.extend([
            1000,
            u32::MAX,
            X32_SYSCALL_BIT,
            X32_SYSCALL_BIT | 1,
            X32_SYSCALL_BIT | libc::SYS_read as u32,
        ]);
        let mut checked = 0usize;
        let plans = policies.iter().flat_map(|pol| {
            let p = plan(pol).unwrap();
            let mut setid = p.clone();
            setid.deny_setid_modes = true;
            [p, setid]
        });
        for plan in plans {
            let f = compile(&plan).unwrap();
            for &nr in &numbers {
                // Another architecture is killed whatever the number.
                assert_eq!(
                    run_bpf(&f.program, 0x4000_0003, nr, [0; 6]),
                    libc::SECCOMP_RET_KILL_PROCESS
                );
                for (slot, v) in [(0usize, 0u64), (1, 0)].into_iter().chain(
                    interesting
                        .iter()
                        .flat_map(|v| [(0, *v), (1, *v), (2, *v), (3, *v)]),
                ) {
                    let mut args = [0u64; 6];
                    args[slot] = v;
                    let want = reference(&plan, nr, args);
                    let got = run_bpf(&f.program, AUDIT_ARCH_X86_64, nr, args);
                    assert_eq!(
                        got, want,
                        "groups {:?} errno {:?}: nr {nr} ({:?}) args {args:?}: got {got:#x}, want {want:#x}",
                        plan.groups, plan.errno, syscall_name(i64::from(nr))
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 100_000, "{checked}");
    }

    #[test]
    fn default_filter_fixed_answers() {
        // Written out by hand, independent of `plan` and `reference`: what the default
        // policy's filter must answer for a few calls that matter.
        let f = compile(&plan(&SeccompPolicy::default()).unwrap()).unwrap();
        let ask = |nr: i64, a0: u64, a1: u64| {
            run_bpf(
                &f.program,
                AUDIT_ARCH_X86_64,
                nr as u32,
                [a0, a1, 0, 0, 0, 0],
            )
        };
        let notify = libc::SECCOMP_RET_USER_NOTIF;
        assert_eq!(ask(libc::SYS_read, 0, 0), libc::SECCOMP_RET_ALLOW);
        assert_eq!(ask(libc::SYS_execve, 0, 0), libc::SECCOMP_RET_ALLOW);
        assert_eq!(
            ask(libc::SYS_ioctl, 0, libc::TCGETS),
            libc::SECCOMP_RET_ALLOW
        );
        assert_eq!(
            ask(libc::SYS_ioctl, 0, libc::TIOCSTI),
            libc::SECCOMP_RET_ERRNO | libc::ENOTTY as u32
        );
        assert_eq!(ask(libc::SYS_clone, libc::SIGCHLD as u64, 0), notify);
        assert_eq!(ask(libc::SYS_clone3, 0, 0), libc::SECCOMP_RET_ERRNO | 38);
        assert_eq!(ask(libc::SYS_socket, libc::AF_INET as u64, 0), notify);
        assert_eq!(
            ask(libc::SYS_socket, libc::AF_UNIX as u64, 0),
            libc::SECCOMP_RET_ERRNO | libc::EACCES as u32
        );
        for nr in [
            libc::SYS_unshare,
            libc::SYS_ptrace,
            libc::SYS_mount,
            libc::SYS_fork,
        ] {
            assert_eq!(ask(nr, 0, 0), notify, "{nr}");
        }
    }

    #[test]
    fn setid_modes_are_refused_only_when_the_plan_says() {
        // By hand: chmod(path, mode), fchmodat(dir, path, mode), openat(dir, path, flags, mode).
        let mut p = plan(&SeccompPolicy::default()).unwrap();
        let ask = |f: &Filter, nr: i64, args: [u64; 6]| {
            run_bpf(&f.program, AUDIT_ARCH_X86_64, nr as u32, args)
        };
        let plain = compile(&p).unwrap();
        p.deny_setid_modes = true;
        let setid = compile(&p).unwrap();
        let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
        let allow = libc::SECCOMP_RET_ALLOW;
        for (nr, at) in [
            (libc::SYS_chmod, 1),
            (libc::SYS_fchmod, 1),
            (libc::SYS_fchmodat, 2),
            (libc::SYS_openat, 3),
            (libc::SYS_open, 2),
            (libc::SYS_creat, 1),
        ] {
            for (mode, want) in [
                (0o755, allow),
                (0o4755, eperm),
                (0o2755, eperm),
                (0o6000, eperm),
                (0o1777, allow),
            ] {
                let mut args = [0u64; 6];
                args[at] = mode;
                assert_eq!(ask(&setid, nr, args), want, "nr {nr} mode {mode:o}");
                assert_eq!(ask(&plain, nr, args), allow, "nr {nr} mode {mode:o}");
            }
        }
    }

    #[test]
    fn init_filter_allows_only_its_eight_calls() {
        let f = compile_init_filter().unwrap();
        let allowed = [
            libc::SYS_wait4,
            libc::SYS_kill,
            libc::SYS_write,
            libc::SYS_close,
            libc::SYS_exit,
            libc::SYS_exit_group,
            libc::SYS_rt_sigreturn,
            libc::SYS_restart_syscall,
        ];
        for nr in 0..=520u32 {
            let want = if allowed.contains(&i64::from(nr)) {
                libc::SECCOMP_RET_ALLOW
            } else {
                libc::SECCOMP_RET_KILL_PROCESS
            };
            assert_eq!(
                run_bpf(&f.program, AUDIT_ARCH_X86_64, nr, [0; 6]),
                want,
                "{nr}"
            );
        }
        for (arch, nr) in [
            (0x4000_0003, libc::SYS_write as u32),
            (AUDIT_ARCH_X86_64, X32_SYSCALL_BIT | 1),
        ] {
            assert_eq!(
                run_bpf(&f.program, arch, nr, [0; 6]),
                libc::SECCOMP_RET_KILL_PROCESS
            );
        }
    }

    #[test]
    fn tree_is_shallow_for_every_number() {
        // The point of the tree: no number walks a long chain (the kernel emulates the filter
        // for each number at install time). Count the instructions executed per number.
        let plan = plan(&SeccompPolicy::default()).unwrap();
        let f = compile(&plan).unwrap();
        let mut worst = 0;
        for nr in 0..=470u32 {
            let (mut pc, mut steps) = (0usize, 0);
            let a = nr;
            loop {
                let i = f.program[pc];
                steps += 1;
                match i.code {
                    BPF_RET_K => break,
                    BPF_JA => pc += i.k as usize,
                    BPF_JEQ_K => pc += usize::from(if a == i.k { i.jt } else { i.jf }),
                    BPF_JGE_K => pc += usize::from(if a >= i.k { i.jt } else { i.jf }),
                    BPF_JSET_K => pc += usize::from(if a & i.k != 0 { i.jt } else { i.jf }),
                    // An argument load: the kernel stops emulating here too.
                    _ => break,
                }
                pc += 1;
            }
            worst = worst.max(steps);
        }
        assert!(worst <= 40, "worst path {worst} instructions");
        assert!(f.instruction_count() < 600, "{}", f.instruction_count());
    }

    #[test]
    fn default_plan_compiles_with_notify_and_kill() {
        let p = plan(&SeccompPolicy::default()).unwrap();
        assert!(!p
            .allowed
            .iter()
            .any(|s| s == "clone3" || s == "socket" || s == "fork"));
        assert!(p.errno.contains(&("clone3".to_string(), libc::ENOSYS)));
        let f = compile(&p).unwrap();
        assert!(f.instruction_count() > p.allowed.len());
        let rets: Vec<u32> = f
            .program
            .iter()
            .filter(|i| i.code == BPF_RET_K)
            .map(|i| i.k)
            .collect();
        assert!(!rets.contains(&libc::SECCOMP_RET_TRAP));
        assert!(rets.contains(&libc::SECCOMP_RET_USER_NOTIF));
        assert!(rets.contains(&libc::SECCOMP_RET_KILL_PROCESS));
        let e = enforcement(&p, &f);
        assert_eq!(e.state, ControlState::Enforced);
    }
}
