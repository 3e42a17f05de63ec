//! What the policy's `seccomp.allow_groups` names mean: the syscalls of each group, and the
//! syscalls no group may ever contain. Data a reviewer reads with `agentjail policy show`.
//! [`resolve`] turns a list of group names into the plan's [`SeccompPlan`]. Pure: names are
//! checked against the syscall table and the never-allowed list; the jail compiles the
//! result into BPF ([`crate::seccomp::compile`]).

use crate::plan::{Requirement, SeccompPlan};
use crate::syscalls::{syscall_number, ENOSYS, EPERM};
use std::collections::BTreeSet;

/// The named syscall groups a policy can enable. Groups after `system_info` are opt-in: the
/// default policy does not enable them.
pub static GROUPS: &[(&str, &[&str])] = &[
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
            // Not asked for by the program: the kernel makes a thread call it to resume a
            // wait with a relative timeout (poll, futex, nanosleep) that a signal with no
            // handler interrupted. It continues only the call the filter already allowed
            // (the kernel's own restart block; without one it returns EINTR). Refused, a
            // program that waits in one thread while another blocks a signal (CPython's
            // subprocess does, around its vfork) is stopped for a call it never made.
            "restart_syscall",
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
    // Opt-in: what node 20 (V8 11.3, libuv) calls beyond the groups above, found by running
    // node and agentjail's runner under strace (start-up, the incident job, GC pressure,
    // timers and promises, the libuv thread pool via async crypto and zlib, uncaught errors,
    // stack overflow, heap exhaustion and its abort) and under the jail's seccomp listener
    // (`agentjail exec -- /usr/bin/node ...`, one code_forbidden_syscall at a time). Every
    // other syscall node made is already in a default group: V8's JIT maps its code space
    // with mmap/mprotect(PROT_EXEC) (`memory`), its worker threads are clone(CLONE_THREAD)
    // after clone3's ENOSYS plus futex (`threads`), libuv's loop is epoll and pipe2 (`poll`,
    // `pipes`), ioctl only TCGETS, prlimit64 only on itself. Not needed: memfd_create,
    // timerfd_*, io_uring_* (off in node 20.20's libuv), membarrier. pkey_alloc (V8's
    // memory-protection-key probe, for wasm code) is refused with ENOSYS in every jail
    // (plan/seccomp.rs), so pkey_mprotect and pkey_free never follow.
    (
        "javascript",
        &[
            // libuv: every event loop (the main one, node's tracing agent's) wakes its
            // threads through an eventfd; refused, uv_loop_init fails and node aborts at
            // start (measured).
            "eventfd2",
            // node reads its own capability sets (credentials.cc HasOnly, a dozen calls at
            // start) to decide whether to trust variables such as NODE_OPTIONS. Read-only;
            // in the jail every set is empty. Refused, node falls back to AT_SECURE and runs.
            "capget",
        ],
    ),
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

/// The groups the default policy enables: every group before the opt-in ones.
pub const DEFAULT_GROUPS: &[&str] = &[
    "basic_io",
    "files_read",
    "files_write_tmp",
    "memory",
    "process_self",
    "threads",
    "signals",
    "time",
    "sleep",
    "poll",
    "pipes",
    "exec",
    "system_info",
];

/// Groups the default policy leaves off.
pub const OPT_IN_GROUPS: &[&str] = &["javascript", "process_spawn", "sockets_local", "network"];

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

/// The named groups and their syscalls, for `policy show` and reviewers.
pub fn groups() -> &'static [(&'static str, &'static [&'static str])] {
    GROUPS
}

pub fn group(name: &str) -> Option<&'static [&'static str]> {
    GROUPS.iter().find(|(g, _)| *g == name).map(|(_, s)| *s)
}

/// Syscalls always refused with an errno (harmless probes a runtime makes and handles):
/// `clone3` (its flags are behind a pointer; glibc falls back to `clone`, whose flags are
/// filtered) and `pkey_alloc` (V8 probes memory protection keys for its wasm code; without a
/// key it uses plain mprotect, measured with node 20.20; refusing the probe keeps
/// `pkey_mprotect`/`pkey_free` out of every jail, PKU hosts included); `sched_setaffinity`
/// with EPERM, as the kernel refuses it without CAP_SYS_NICE: without a cpu cgroup the
/// jail's CPU affinity is what bounds its parallelism (crate::affinity), and a runtime that
/// tries to pin its threads carries on when refused.
const BUILTIN_ERRNO: &[(&str, i32)] = &[
    ("clone3", ENOSYS),
    ("pkey_alloc", ENOSYS),
    ("sched_setaffinity", EPERM),
];

/// The errno for the policy's `errno_syscalls`.
const POLICY_ERRNO: i32 = EPERM;

/// Why a policy's `[seccomp]` table does not resolve; each variant holds the name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolveError {
    /// An `allow_groups` entry that is not in [`GROUPS`].
    UnknownGroup(String),
    /// An `errno_syscalls` entry that is not an x86_64 syscall name.
    UnknownErrnoSyscall(String),
    /// A group lists a name the syscall table lacks (a bug in [`GROUPS`]).
    NotASyscall(String),
    /// A group allows a syscall of [`NEVER`].
    NeverAllowed(String),
}

impl std::fmt::Display for ResolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResolveError::UnknownGroup(g) => {
                let known: Vec<&str> = GROUPS.iter().map(|(n, _)| *n).collect();
                write!(
                    f,
                    "unknown seccomp group {g:?}; known groups: {}",
                    known.join(", ")
                )
            }
            ResolveError::UnknownErrnoSyscall(name) => write!(
                f,
                "unknown syscall {name:?} in seccomp.errno_syscalls (x86_64 names, e.g. \"sched_setaffinity\")"
            ),
            ResolveError::NotASyscall(s) => {
                write!(f, "seccomp group syscall {s:?} is not an x86_64 syscall")
            }
            ResolveError::NeverAllowed(s) => {
                write!(f, "seccomp group allows {s:?}, which is never allowed")
            }
        }
    }
}

impl std::error::Error for ResolveError {}

/// Resolve named groups (a policy's `seccomp.allow_groups`) and the syscalls to refuse with
/// `EPERM` (its `errno_syscalls`) into the plan: the sorted allowed syscalls and the errno
/// list. An unknown group or syscall name, or a syscall from [`NEVER`] in the allowlist, is
/// an error naming it.
pub fn resolve(
    requirement: Requirement,
    allow_groups: &[String],
    errno_syscalls: &[String],
) -> Result<SeccompPlan, ResolveError> {
    let mut groups: Vec<String> = Vec::new();
    let mut allowed: BTreeSet<&'static str> = BTreeSet::new();
    for g in allow_groups {
        let syscalls = group(g).ok_or_else(|| ResolveError::UnknownGroup(g.clone()))?;
        if !groups.contains(g) {
            groups.push(g.clone());
        }
        allowed.extend(syscalls.iter().copied());
    }
    let mut errno: Vec<(String, i32)> = Vec::new();
    for (name, e) in BUILTIN_ERRNO {
        errno.push(((*name).to_string(), *e));
    }
    for name in errno_syscalls {
        if syscall_number(name).is_none() {
            return Err(ResolveError::UnknownErrnoSyscall(name.clone()));
        }
        if !errno.iter().any(|(n, _)| n == name) {
            errno.push((name.clone(), POLICY_ERRNO));
        }
    }
    // An errno entry wins over the allowlist: it can only tighten.
    allowed.retain(|s| !errno.iter().any(|(n, _)| n == s));
    for s in &allowed {
        if syscall_number(s).is_none() {
            return Err(ResolveError::NotASyscall((*s).into()));
        }
        if NEVER.contains(s) {
            return Err(ResolveError::NeverAllowed((*s).into()));
        }
    }
    Ok(SeccompPlan {
        requirement,
        groups,
        allowed: allowed.into_iter().map(str::to_string).collect(),
        errno,
        deny_setid_modes: false,
        observe_opens: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_groups_are_every_group_but_the_opt_in_ones() {
        let rest: Vec<&str> = GROUPS
            .iter()
            .map(|(g, _)| *g)
            .filter(|g| !OPT_IN_GROUPS.contains(g))
            .collect();
        assert_eq!(rest, DEFAULT_GROUPS);
        for g in OPT_IN_GROUPS {
            assert!(group(g).is_some(), "{g}");
        }
    }

    #[test]
    fn error_text() {
        let e = |g: &[&str], n: &[&str]| {
            let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
            resolve(Requirement::Required, &s(g), &s(n))
                .unwrap_err()
                .to_string()
        };
        assert!(e(&["x"], &[]).starts_with("unknown seccomp group \"x\"; known groups: basic_io, "));
        assert_eq!(
            e(&[], &["nope"]),
            "unknown syscall \"nope\" in seccomp.errno_syscalls (x86_64 names, e.g. \"sched_setaffinity\")"
        );
    }

    #[test]
    fn resolve_sorts_refuses_and_tightens() {
        let groups = ["basic_io".to_string(), "basic_io".to_string()];
        let p = resolve(Requirement::Required, &groups, &["read".to_string()]).unwrap();
        assert_eq!(p.groups, ["basic_io"]);
        assert!(p.allowed.windows(2).all(|w| w[0] < w[1]));
        // An errno entry wins over the allowlist.
        assert!(!p.allowed.iter().any(|s| s == "read"));
        assert!(p.errno.contains(&("read".to_string(), EPERM)));
        assert!(p.errno.contains(&("clone3".to_string(), ENOSYS)));
        let err = resolve(Requirement::Required, &["nope".to_string()], &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"nope\"") && err.contains("basic_io"),
            "{err}"
        );
    }
}
