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
//!    flags *are* filtered) and the policy's `errno_syscalls` (→ `EPERM`). These return the
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
use crate::policy::{Requirement, SeccompPolicy};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SeccompPlan {
    pub requirement: Requirement,
    pub groups: Vec<String>,
    /// Resolved syscall names, sorted.
    pub allowed: Vec<String>,
    /// Syscalls refused with an errno (name, errno) instead of stopping the run.
    pub errno: Vec<(String, i32)>,
}

/// The named syscall groups a policy can enable. Groups after `system_info` are opt-in: the
/// default policy does not enable them.
static GROUPS: &[(&str, &[&str])] = &[
    (
        "basic_io",
        &[
            "read",
            "write",
            "readv",
            "writev",
            "pread64",
            "pwrite64",
            "preadv",
            "pwritev",
            "preadv2",
            "pwritev2",
            "close",
            "close_range",
            "dup",
            "dup2",
            "dup3",
            "lseek",
            "fcntl",
            "ioctl",
        ],
    ),
    (
        "files_read",
        &[
            "open",
            "openat",
            "stat",
            "fstat",
            "lstat",
            "newfstatat",
            "statx",
            "access",
            "faccessat",
            "faccessat2",
            "getdents64",
            "getxattr",
            "lgetxattr",
            "fgetxattr",
            "listxattr",
            "llistxattr",
            "flistxattr",
            "readlink",
            "readlinkat",
            "getcwd",
            "chdir",
            "fchdir",
            "statfs",
            "fstatfs",
            "fadvise64",
        ],
    ),
    (
        // Writes land only where the mounts and landlock allow: /tmp.
        "files_write_tmp",
        &[
            "creat",
            "mkdir",
            "mkdirat",
            "rmdir",
            "unlink",
            "unlinkat",
            "rename",
            "renameat",
            "renameat2",
            "link",
            "linkat",
            "symlink",
            "symlinkat",
            "truncate",
            "ftruncate",
            "fallocate",
            "fsync",
            "fdatasync",
            "utimensat",
            "chmod",
            "fchmod",
            "fchmodat",
            "fchmodat2",
            "umask",
            "copy_file_range",
        ],
    ),
    (
        "memory",
        &[
            "mmap", "munmap", "mprotect", "mremap", "brk", "madvise", "msync",
        ],
    ),
    (
        "process_self",
        &[
            "getpid",
            "getppid",
            "gettid",
            "getuid",
            "geteuid",
            "getgid",
            "getegid",
            "getgroups",
            "getresuid",
            "getresgid",
            "getpgrp",
            "getpgid",
            "getsid",
            "getrlimit",
            "prlimit64",
            "getrusage",
            "times",
            "arch_prctl",
            "set_tid_address",
            "set_robust_list",
            "rseq",
            "exit",
            "exit_group",
            "sched_getaffinity",
            "getcpu",
        ],
    ),
    // clone only with CLONE_THREAD and no CLONE_NEW* (see ARGUMENT_FILTERS).
    ("threads", &["clone", "futex", "sched_yield", "exit"]),
    (
        "signals",
        &[
            "rt_sigaction",
            "rt_sigprocmask",
            "rt_sigreturn",
            "rt_sigpending",
            "rt_sigtimedwait",
            "rt_sigsuspend",
            "sigaltstack",
            "kill",
            "tgkill",
            "tkill",
            "alarm",
            "setitimer",
            "getitimer",
        ],
    ),
    (
        "time",
        &["clock_gettime", "clock_getres", "gettimeofday", "time"],
    ),
    ("sleep", &["nanosleep", "clock_nanosleep", "pause"]),
    (
        "poll",
        &[
            "poll",
            "ppoll",
            "select",
            "pselect6",
            "epoll_create",
            "epoll_create1",
            "epoll_ctl",
            "epoll_wait",
            "epoll_pwait",
            "epoll_pwait2",
        ],
    ),
    ("pipes", &["pipe", "pipe2"]),
    // The program itself is exec'd under the filter; no_new_privs keeps exec from gaining
    // privileges.
    ("exec", &["execve"]),
    ("system_info", &["uname", "sysinfo", "getrandom"]),
    // Opt-in. clone without any CLONE_NEW* flag.
    (
        "process_spawn",
        &[
            "fork", "vfork", "clone", "wait4", "waitid", "setpgid", "setsid",
        ],
    ),
    // Opt-in. socket only with AF_UNIX.
    (
        "sockets_local",
        &[
            "socket",
            "socketpair",
            "connect",
            "bind",
            "listen",
            "accept",
            "accept4",
            "sendto",
            "recvfrom",
            "sendmsg",
            "recvmsg",
            "sendmmsg",
            "recvmmsg",
            "shutdown",
            "getsockname",
            "getpeername",
            "getsockopt",
            "setsockopt",
        ],
    ),
    // Opt-in. socket only with AF_INET / AF_INET6.
    (
        "network",
        &[
            "socket",
            "connect",
            "bind",
            "listen",
            "accept",
            "accept4",
            "sendto",
            "recvfrom",
            "sendmsg",
            "recvmsg",
            "sendmmsg",
            "recvmmsg",
            "shutdown",
            "getsockname",
            "getpeername",
            "getsockopt",
            "setsockopt",
        ],
    ),
];

/// Groups the default policy leaves off.
pub const OPT_IN_GROUPS: &[&str] = &["process_spawn", "sockets_local", "network"];

/// Syscalls no group may contain and no policy may allow. `plan` refuses a plan that would.
pub const NEVER: &[&str] = &[
    // namespaces and mounts
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "open_tree_attr",
    "fsopen",
    "fsmount",
    "fsconfig",
    "fspick",
    "mount_setattr",
    "statmount",
    "listmount",
    // kernel attack surface
    "bpf",
    "keyctl",
    "add_key",
    "request_key",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    // other processes
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "kcmp",
    "process_madvise",
    "process_mrelease",
    // execution domain and filters
    "personality",
    "seccomp",
    "modify_ldt",
    "iopl",
    "ioperm",
    "vm86",
    "vm86old",
    "uselib",
    // the machine
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "quotactl_fd",
    "syslog",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "sethostname",
    "setdomainname",
    "ioprio_set",
    "open_by_handle_at",
    "name_to_handle_at",
    "lookup_dcookie",
    "nfsservctl",
    "ustat",
    "sysfs",
    "_sysctl",
    "mbind",
    "migrate_pages",
    "move_pages",
    "set_mempolicy",
    "set_mempolicy_home_node",
    // identity: the jail uid is fixed
    "setuid",
    "setgid",
    "setreuid",
    "setregid",
    "setresuid",
    "setresgid",
    "setfsuid",
    "setfsgid",
    "setgroups",
    "capset",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "mknod",
    "mknodat",
];

/// Syscalls always refused with an errno (harmless probes a runtime makes and handles).
const BUILTIN_ERRNO: &[(&str, i32)] = &[("clone3", libc::ENOSYS)];

/// The errno for the policy's `errno_syscalls`.
const POLICY_ERRNO: i32 = libc::EPERM;

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

/// The named groups and their syscalls, for `policy show` and reviewers.
pub fn groups() -> &'static [(&'static str, &'static [&'static str])] {
    GROUPS
}

fn group(name: &str) -> Option<&'static [&'static str]> {
    GROUPS.iter().find(|(g, _)| *g == name).map(|(_, s)| *s)
}

/// Resolve a policy's groups into the plan: the sorted allowed syscalls and the errno list.
/// An unknown group or syscall name, or a syscall from [`NEVER`] in the allowlist, is an
/// error naming it.
pub fn plan(p: &SeccompPolicy) -> Result<SeccompPlan, String> {
    let mut groups: Vec<String> = Vec::new();
    let mut allowed: BTreeSet<&'static str> = BTreeSet::new();
    for g in &p.allow_groups {
        let syscalls = group(g).ok_or_else(|| {
            let known: Vec<&str> = GROUPS.iter().map(|(n, _)| *n).collect();
            format!(
                "unknown seccomp group {g:?}; known groups: {}",
                known.join(", ")
            )
        })?;
        if !groups.contains(g) {
            groups.push(g.clone());
        }
        allowed.extend(syscalls.iter().copied());
    }
    let mut errno: Vec<(String, i32)> = Vec::new();
    for (name, e) in BUILTIN_ERRNO {
        errno.push(((*name).to_string(), *e));
    }
    for name in &p.errno_syscalls {
        if syscall_number(name).is_none() {
            return Err(format!(
                "unknown syscall {name:?} in seccomp.errno_syscalls (x86_64 names, e.g. \"sched_setaffinity\")"
            ));
        }
        if !errno.iter().any(|(n, _)| n == name) {
            errno.push((name.clone(), POLICY_ERRNO));
        }
    }
    // An errno entry wins over the allowlist: it can only tighten.
    allowed.retain(|s| !errno.iter().any(|(n, _)| n == s));
    for s in &allowed {
        if syscall_number(s).is_none() {
            return Err(format!(
                "seccomp group syscall {s:?} is not an x86_64 syscall"
            ));
        }
        if NEVER.contains(s) {
            return Err(format!(
                "seccomp group allows {s:?}, which is never allowed"
            ));
        }
    }
    Ok(SeccompPlan {
        requirement: p.requirement,
        groups,
        allowed: allowed.into_iter().map(str::to_string).collect(),
        errno,
    })
}

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
    Ok(map)
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

/// Supervisor side: read one pending notification from the listener. Returns the pid (in the
/// supervisor's pid namespace) and the syscall number. The caller then kills the jail and
/// never answers, so the syscall does not run.
pub fn receive_notification(listener: BorrowedFd<'_>) -> std::io::Result<(u32, i32)> {
    sys::seccomp_notif_recv(listener.as_raw_fd()).map_err(std::io::Error::from_raw_os_error)
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

/// The x86_64 syscall name for a number.
pub fn syscall_name(nr: i64) -> Option<&'static str> {
    SYSCALLS
        .iter()
        .find(|(_, n)| *n == nr)
        .map(|(name, _)| *name)
}

/// The x86_64 syscall number for a name.
///
/// A binary search over the table sorted by name (sorted once per process): a plan resolves
/// ~140 names, and a scan of the ~470-entry table per name was ~40% of the launcher's
/// user-space instructions (callgrind) before the jail existed.
pub fn syscall_number(name: &str) -> Option<i64> {
    static BY_NAME: std::sync::OnceLock<Vec<(&'static str, i64)>> = std::sync::OnceLock::new();
    let table = BY_NAME.get_or_init(|| {
        let mut v = SYSCALLS.to_vec();
        v.sort_unstable_by_key(|(n, _)| *n);
        v
    });
    table
        .binary_search_by_key(&name, |(n, _)| n)
        .ok()
        .map(|i| table[i].1)
}

/// Every x86_64 syscall (arch/x86/entry/syscalls/syscall_64.tbl, common and 64 entries),
/// by number.
static SYSCALLS: &[(&str, i64)] = &[
    ("read", 0),
    ("write", 1),
    ("open", 2),
    ("close", 3),
    ("stat", 4),
    ("fstat", 5),
    ("lstat", 6),
    ("poll", 7),
    ("lseek", 8),
    ("mmap", 9),
    ("mprotect", 10),
    ("munmap", 11),
    ("brk", 12),
    ("rt_sigaction", 13),
    ("rt_sigprocmask", 14),
    ("rt_sigreturn", 15),
    ("ioctl", 16),
    ("pread64", 17),
    ("pwrite64", 18),
    ("readv", 19),
    ("writev", 20),
    ("access", 21),
    ("pipe", 22),
    ("select", 23),
    ("sched_yield", 24),
    ("mremap", 25),
    ("msync", 26),
    ("mincore", 27),
    ("madvise", 28),
    ("shmget", 29),
    ("shmat", 30),
    ("shmctl", 31),
    ("dup", 32),
    ("dup2", 33),
    ("pause", 34),
    ("nanosleep", 35),
    ("getitimer", 36),
    ("alarm", 37),
    ("setitimer", 38),
    ("getpid", 39),
    ("sendfile", 40),
    ("socket", 41),
    ("connect", 42),
    ("accept", 43),
    ("sendto", 44),
    ("recvfrom", 45),
    ("sendmsg", 46),
    ("recvmsg", 47),
    ("shutdown", 48),
    ("bind", 49),
    ("listen", 50),
    ("getsockname", 51),
    ("getpeername", 52),
    ("socketpair", 53),
    ("setsockopt", 54),
    ("getsockopt", 55),
    ("clone", 56),
    ("fork", 57),
    ("vfork", 58),
    ("execve", 59),
    ("exit", 60),
    ("wait4", 61),
    ("kill", 62),
    ("uname", 63),
    ("semget", 64),
    ("semop", 65),
    ("semctl", 66),
    ("shmdt", 67),
    ("msgget", 68),
    ("msgsnd", 69),
    ("msgrcv", 70),
    ("msgctl", 71),
    ("fcntl", 72),
    ("flock", 73),
    ("fsync", 74),
    ("fdatasync", 75),
    ("truncate", 76),
    ("ftruncate", 77),
    ("getdents", 78),
    ("getcwd", 79),
    ("chdir", 80),
    ("fchdir", 81),
    ("rename", 82),
    ("mkdir", 83),
    ("rmdir", 84),
    ("creat", 85),
    ("link", 86),
    ("unlink", 87),
    ("symlink", 88),
    ("readlink", 89),
    ("chmod", 90),
    ("fchmod", 91),
    ("chown", 92),
    ("fchown", 93),
    ("lchown", 94),
    ("umask", 95),
    ("gettimeofday", 96),
    ("getrlimit", 97),
    ("getrusage", 98),
    ("sysinfo", 99),
    ("times", 100),
    ("ptrace", 101),
    ("getuid", 102),
    ("syslog", 103),
    ("getgid", 104),
    ("setuid", 105),
    ("setgid", 106),
    ("geteuid", 107),
    ("getegid", 108),
    ("setpgid", 109),
    ("getppid", 110),
    ("getpgrp", 111),
    ("setsid", 112),
    ("setreuid", 113),
    ("setregid", 114),
    ("getgroups", 115),
    ("setgroups", 116),
    ("setresuid", 117),
    ("getresuid", 118),
    ("setresgid", 119),
    ("getresgid", 120),
    ("getpgid", 121),
    ("setfsuid", 122),
    ("setfsgid", 123),
    ("getsid", 124),
    ("capget", 125),
    ("capset", 126),
    ("rt_sigpending", 127),
    ("rt_sigtimedwait", 128),
    ("rt_sigqueueinfo", 129),
    ("rt_sigsuspend", 130),
    ("sigaltstack", 131),
    ("utime", 132),
    ("mknod", 133),
    ("uselib", 134),
    ("personality", 135),
    ("ustat", 136),
    ("statfs", 137),
    ("fstatfs", 138),
    ("sysfs", 139),
    ("getpriority", 140),
    ("setpriority", 141),
    ("sched_setparam", 142),
    ("sched_getparam", 143),
    ("sched_setscheduler", 144),
    ("sched_getscheduler", 145),
    ("sched_get_priority_max", 146),
    ("sched_get_priority_min", 147),
    ("sched_rr_get_interval", 148),
    ("mlock", 149),
    ("munlock", 150),
    ("mlockall", 151),
    ("munlockall", 152),
    ("vhangup", 153),
    ("modify_ldt", 154),
    ("pivot_root", 155),
    ("_sysctl", 156),
    ("prctl", 157),
    ("arch_prctl", 158),
    ("adjtimex", 159),
    ("setrlimit", 160),
    ("chroot", 161),
    ("sync", 162),
    ("acct", 163),
    ("settimeofday", 164),
    ("mount", 165),
    ("umount2", 166),
    ("swapon", 167),
    ("swapoff", 168),
    ("reboot", 169),
    ("sethostname", 170),
    ("setdomainname", 171),
    ("iopl", 172),
    ("ioperm", 173),
    ("init_module", 175),
    ("delete_module", 176),
    ("quotactl", 179),
    ("nfsservctl", 180),
    ("getpmsg", 181),
    ("putpmsg", 182),
    ("afs_syscall", 183),
    ("tuxcall", 184),
    ("security", 185),
    ("gettid", 186),
    ("readahead", 187),
    ("setxattr", 188),
    ("lsetxattr", 189),
    ("fsetxattr", 190),
    ("getxattr", 191),
    ("lgetxattr", 192),
    ("fgetxattr", 193),
    ("listxattr", 194),
    ("llistxattr", 195),
    ("flistxattr", 196),
    ("removexattr", 197),
    ("lremovexattr", 198),
    ("fremovexattr", 199),
    ("tkill", 200),
    ("time", 201),
    ("futex", 202),
    ("sched_setaffinity", 203),
    ("sched_getaffinity", 204),
    ("set_thread_area", 205),
    ("io_setup", 206),
    ("io_destroy", 207),
    ("io_getevents", 208),
    ("io_submit", 209),
    ("io_cancel", 210),
    ("get_thread_area", 211),
    ("lookup_dcookie", 212),
    ("epoll_create", 213),
    ("epoll_ctl_old", 214),
    ("epoll_wait_old", 215),
    ("remap_file_pages", 216),
    ("getdents64", 217),
    ("set_tid_address", 218),
    ("restart_syscall", 219),
    ("semtimedop", 220),
    ("fadvise64", 221),
    ("timer_create", 222),
    ("timer_settime", 223),
    ("timer_gettime", 224),
    ("timer_getoverrun", 225),
    ("timer_delete", 226),
    ("clock_settime", 227),
    ("clock_gettime", 228),
    ("clock_getres", 229),
    ("clock_nanosleep", 230),
    ("exit_group", 231),
    ("epoll_wait", 232),
    ("epoll_ctl", 233),
    ("tgkill", 234),
    ("utimes", 235),
    ("vserver", 236),
    ("mbind", 237),
    ("set_mempolicy", 238),
    ("get_mempolicy", 239),
    ("mq_open", 240),
    ("mq_unlink", 241),
    ("mq_timedsend", 242),
    ("mq_timedreceive", 243),
    ("mq_notify", 244),
    ("mq_getsetattr", 245),
    ("kexec_load", 246),
    ("waitid", 247),
    ("add_key", 248),
    ("request_key", 249),
    ("keyctl", 250),
    ("ioprio_set", 251),
    ("ioprio_get", 252),
    ("inotify_init", 253),
    ("inotify_add_watch", 254),
    ("inotify_rm_watch", 255),
    ("migrate_pages", 256),
    ("openat", 257),
    ("mkdirat", 258),
    ("mknodat", 259),
    ("fchownat", 260),
    ("futimesat", 261),
    ("newfstatat", 262),
    ("unlinkat", 263),
    ("renameat", 264),
    ("linkat", 265),
    ("symlinkat", 266),
    ("readlinkat", 267),
    ("fchmodat", 268),
    ("faccessat", 269),
    ("pselect6", 270),
    ("ppoll", 271),
    ("unshare", 272),
    ("set_robust_list", 273),
    ("get_robust_list", 274),
    ("splice", 275),
    ("tee", 276),
    ("sync_file_range", 277),
    ("vmsplice", 278),
    ("move_pages", 279),
    ("utimensat", 280),
    ("epoll_pwait", 281),
    ("signalfd", 282),
    ("timerfd_create", 283),
    ("eventfd", 284),
    ("fallocate", 285),
    ("timerfd_settime", 286),
    ("timerfd_gettime", 287),
    ("accept4", 288),
    ("signalfd4", 289),
    ("eventfd2", 290),
    ("epoll_create1", 291),
    ("dup3", 292),
    ("pipe2", 293),
    ("inotify_init1", 294),
    ("preadv", 295),
    ("pwritev", 296),
    ("rt_tgsigqueueinfo", 297),
    ("perf_event_open", 298),
    ("recvmmsg", 299),
    ("fanotify_init", 300),
    ("fanotify_mark", 301),
    ("prlimit64", 302),
    ("name_to_handle_at", 303),
    ("open_by_handle_at", 304),
    ("clock_adjtime", 305),
    ("syncfs", 306),
    ("sendmmsg", 307),
    ("setns", 308),
    ("getcpu", 309),
    ("process_vm_readv", 310),
    ("process_vm_writev", 311),
    ("kcmp", 312),
    ("finit_module", 313),
    ("sched_setattr", 314),
    ("sched_getattr", 315),
    ("renameat2", 316),
    ("seccomp", 317),
    ("getrandom", 318),
    ("memfd_create", 319),
    ("kexec_file_load", 320),
    ("bpf", 321),
    ("execveat", 322),
    ("userfaultfd", 323),
    ("membarrier", 324),
    ("mlock2", 325),
    ("copy_file_range", 326),
    ("preadv2", 327),
    ("pwritev2", 328),
    ("pkey_mprotect", 329),
    ("pkey_alloc", 330),
    ("pkey_free", 331),
    ("statx", 332),
    ("rseq", 334),
    ("pidfd_send_signal", 424),
    ("io_uring_setup", 425),
    ("io_uring_enter", 426),
    ("io_uring_register", 427),
    ("open_tree", 428),
    ("move_mount", 429),
    ("fsopen", 430),
    ("fsconfig", 431),
    ("fsmount", 432),
    ("fspick", 433),
    ("pidfd_open", 434),
    ("clone3", 435),
    ("close_range", 436),
    ("openat2", 437),
    ("pidfd_getfd", 438),
    ("faccessat2", 439),
    ("process_madvise", 440),
    ("epoll_pwait2", 441),
    ("mount_setattr", 442),
    ("quotactl_fd", 443),
    ("landlock_create_ruleset", 444),
    ("landlock_add_rule", 445),
    ("landlock_restrict_self", 446),
    ("memfd_secret", 447),
    ("process_mrelease", 448),
    ("futex_waitv", 449),
    ("set_mempolicy_home_node", 450),
    ("cachestat", 451),
    ("fchmodat2", 452),
    ("map_shadow_stack", 453),
    ("futex_wake", 454),
    ("futex_wait", 455),
    ("futex_requeue", 456),
    ("statmount", 457),
    ("listmount", 458),
    ("lsm_get_self_attr", 459),
    ("lsm_set_self_attr", 460),
    ("lsm_list_modules", 461),
    ("mseal", 462),
    ("setxattrat", 463),
    ("getxattrat", 464),
    ("listxattrat", 465),
    ("removexattrat", 466),
    ("open_tree_attr", 467),
    ("file_getattr", 468),
    ("file_setattr", 469),
];

/// The jail's init (pid 1, agentjail's own code after setup) needs only to reap children,
/// report one wait status and exit. Its filter allows exactly that and kills on anything
/// else, so even a compromised init could not make a syscall the payload may not.
pub fn compile_init_filter() -> Result<Filter, SetupError> {
    let allowed = [
        libc::SYS_write,
        libc::SYS_close,
        libc::SYS_wait4,
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
        for pol in &policies {
            let plan = plan(pol).unwrap();
            let f = compile(&plan).unwrap();
            for &nr in &numbers {
                // Another architecture is killed whatever the number.
                assert_eq!(
                    run_bpf(&f.program, 0x4000_0003, nr, [0; 6]),
                    libc::SECCOMP_RET_KILL_PROCESS
                );
                for (slot, v) in [(0usize, 0u64), (1, 0)]
                    .into_iter()
                    .chain(interesting.iter().flat_map(|v| [(0, *v), (1, *v)]))
                {
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
    fn init_filter_allows_only_its_seven_calls() {
        let f = compile_init_filter().unwrap();
        let allowed = [
            libc::SYS_wait4,
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
