//! Payload tables shared by the suites that attack the jail: tests/jail (through `agentjail
//! exec`: redteam.rs, python_attacks.rs) and the workspace suite (through serve's
//! `workspace_exec`: tests/frontends/serve/workspace_attacks.rs). One table, so the suites
//! cannot drift: a case added here is attacked through every door.
//!
//! Each [`Case`] is one Python expression run in its own jail (a forbidden syscall ends the
//! jail) after [`SYSC`] and the `attempt` prelude (`PRELUDE`): it returns when the attack
//! worked (BREACH) and raises OSError with the errno when refused; a stop must name one of
//! its syscalls. x86_64 syscall numbers.
//!
//! Each case also says what it does with no jail ([`super::Without`]): by default it
//! works; `.host_privilege()` when it meets a privilege check only the host's root passes
//! (the `exec` suites then count only its stop); `.absent_as(errno, feature)` when a
//! kernel may lack it; `.stop_only(why)` when it is never made outside the jail. The
//! control run (tests/jail/controls.rs) makes every case but the stop-only ones with no
//! jail and fails when one is refused there for its own arguments (EBADF, EINVAL,
//! EFAULT...): so a case refused in the jail was refused by a control of the jail.
#![allow(dead_code)]

use super::{case, Case};

/// Raw syscalls for the tables: `sysc(nr, *args)` (ints as longs, bytes and ctypes objects
/// as they are; raises OSError on a negative return) and `ioc(fd, request)` (ioctl with a
/// 64-byte buffer); and the objects a call needs to get past the kernel's own argument checks
/// when no control stops it (the control run, tests/jail/controls.rs, makes every case with
/// no jail and fails on EBADF, EINVAL, EFAULT...): a pidfd, an io_uring, a pipe holding a
/// byte, this process's CPU mask, a seccomp program that allows everything, an iovec, a
/// siginfo, a file handle.
pub const SYSC: &str = r#"
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def sysc(nr, *args):
    a = [ctypes.c_long(x) if isinstance(x, int) else x for x in args]
    r = libc.syscall(ctypes.c_long(nr), *a)
    if r < 0:
        raise OSError(ctypes.get_errno(), "syscall %d" % nr)
    return r
libc.ioctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_char_p]
def ioc(fd, req):
    if libc.ioctl(fd, req, b"\0" * 64) != 0:
        raise OSError(ctypes.get_errno(), "ioctl")
    return "ioctl ok"
_keep = []
def pidfd(pid):
    return sysc(434, pid, 0)
def uring():
    return sysc(425, 8, ctypes.byref(ctypes.create_string_buffer(120)))
def full_pipe():
    r, w = os.pipe()
    os.write(w, b"x")
    return r
def cpus():
    return ctypes.create_string_buffer(sum(1 << c for c in os.sched_getaffinity(0)).to_bytes(128, "little"))
def allow_all():
    f = (ctypes.c_uint64 * 1)(0x06 | (0x7fff0000 << 32))
    prog = (ctypes.c_uint64 * 2)(1, ctypes.addressof(f))
    _keep.append((f, prog))
    return ctypes.byref(prog)
def iov(addr, n):
    v = (ctypes.c_uint64 * 2)(addr, n)
    _keep.append(v)
    return ctypes.byref(v)
def buf(n):
    b = ctypes.create_string_buffer(n)
    _keep.append(b)
    return ctypes.addressof(b)
def siginfo(sig, code):
    return ctypes.create_string_buffer(sig.to_bytes(4, "little") + bytes(4) + code.to_bytes(4, "little", signed=True) + bytes(116))
def fhandle(path):
    h = ctypes.create_string_buffer((128).to_bytes(4, "little") + bytes(132))
    sysc(303, -100, path, h, ctypes.byref(ctypes.c_int()), 0)
    return h
"#;

/// Cases that are plain process creation (fork, vfork, clone as either): refused where the
/// policy does not allow `process_spawn`, and no attack where it does (workspaces: fork
/// and exec are what a shell is for; the pids limit bounds them).
pub const PROCESS_SPAWN: &[&str] = &[
    "clone(SIGCHLD | CLONE_THREAD<<32)",
    "clone(SIGCHLD) = fork",
    "clone(CLONE_VM|CLONE_VFORK) = vfork",
    "fork",
    "vfork",
];

/// Why a case is [`Case::stop_only`]: a thread made by a raw clone runs on its parent's
/// stack (the syscall returns twice into the same C frames), which no Python process
/// survives reliably; the filter's stop is the proof.
const THREAD_CLONE: &str = "a raw thread clone shares its parent's stack";
/// See [`THREAD_CLONE`]: a raw vfork's child returns into its parent's frames.
const VFORK: &str = "a raw vfork's child returns into its parent's stack frames";
/// Destructive with the privilege it asks for (the host's kernel, its modules, its power).
const HOST_KERNEL: &str = "destructive with the host privilege it needs";
/// Port I/O for the host's hardware (and absent from kernels without CONFIG_X86_IOPL_IOPERM).
const HOST_HARDWARE: &str = "port I/O on the host's hardware";

/// Every table, by name (the workspace suite runs them all).
pub fn all() -> Vec<(&'static str, &'static [Case])> {
    vec![
        ("SOCKET_FAMILIES", SOCKET_FAMILIES),
        ("MOUNT_API_AND_NAMESPACES", MOUNT_API_AND_NAMESPACES),
        ("CROSS_PROCESS", CROSS_PROCESS),
        ("PRCTL_AND_PRIVILEGE", PRCTL_AND_PRIVILEGE),
        ("IPC_AND_KERNEL_OBJECTS", IPC_AND_KERNEL_OBJECTS),
        ("STDIO_IOCTLS", STDIO_IOCTLS),
        ("MKNOD", MKNOD),
        ("MOUNTS", MOUNTS),
        ("PTRACE", PTRACE),
        ("DANGEROUS", DANGEROUS),
    ]
}

/// Every socket family, `socket(domain, type, 0)` and `socketpair`: none may succeed (the socket call is outside the allowlist, or refused with EPERM where a policy says so).
pub const SOCKET_FAMILIES: &[Case] = &[
    case("AF_NETLINK", "sysc(41, 16, 3, 0)", &["socket"]),
    case("AF_PACKET", "sysc(41, 17, 3, 0)", &["socket"]),
    case("AF_VSOCK", "sysc(41, 40, 1, 0)", &["socket"]),
    case("AF_INET", "sysc(41, 2, 1, 0)", &["socket"]),
    case("AF_INET6 raw", "sysc(41, 10, 3, 58)", &["socket"]),
    case("AF_UNIX", "sysc(41, 1, 1, 0)", &["socket"]),
    case("AF_ALG", "sysc(41, 38, 5, 0)", &["socket"])
        .absent_as(libc::EAFNOSUPPORT, "AF_ALG (CONFIG_CRYPTO_USER_API)"),
    case("AF_KEY", "sysc(41, 15, 3, 2)", &["socket"])
        .absent_as(libc::EAFNOSUPPORT, "AF_KEY (CONFIG_NET_KEY)"),
    case("AF_XDP", "sysc(41, 44, 3, 0)", &["socket"]),
    case(
        "AF_UNIX in the high half",
        "sysc(41, (1 << 32) | 16, 3, 0)",
        &["socket"],
    ),
    case(
        "socketpair(AF_UNIX)",
        "sysc(53, 1, 1, 0, ctypes.create_string_buffer(8))",
        &["socketpair"],
    ),
];

/// The new mount API, umount, chroot, pivot_root, unshare and setns, and clone with namespace flags or with flags in the high register half (the filter compares clone's low 32 bits, as the kernel does). The last five are plain forks ([`PROCESS_SPAWN`]).
pub const MOUNT_API_AND_NAMESPACES: &[Case] = &[
    case(
        "open_tree(/usr, OPEN_TREE_CLONE)",
        r#"sysc(428, -100, b"/usr", 1)"#,
        &["open_tree"],
    ),
    // /proc and /tmp are mounts in the jail and in the control run alike.
    case(
        "move_mount(/proc onto /tmp)",
        r#"sysc(429, -100, b"/proc", -100, b"/tmp", 0)"#,
        &["move_mount"],
    ),
    case("fsopen(tmpfs)", r#"sysc(430, b"tmpfs", 0)"#, &["fsopen"]),
    // fsmount needs a created filesystem context: fsopen and fsconfig(FSCONFIG_CMD_CREATE).
    case(
        "fsmount(a created tmpfs context)",
        r#"(lambda fd: (sysc(431, fd, 6, None, None, 0), sysc(432, fd, 0, 0))[1])(sysc(430, b"tmpfs", 0))"#,
        &["fsopen", "fsconfig", "fsmount"],
    ),
    case("fspick", r#"sysc(433, -100, b"/", 0)"#, &["fspick"]),
    case(
        "mount_setattr(/tmp, MOUNT_ATTR_RDONLY)",
        r#"sysc(442, -100, b"/tmp", 0, ctypes.create_string_buffer(b"\x01" + bytes(31)), 32)"#,
        &["mount_setattr"],
    ),
    case(
        "umount2(/usr, MNT_DETACH)",
        r#"sysc(166, b"/usr", 2)"#,
        &["umount2"],
    ),
    case("chroot(/tmp)", r#"sysc(161, b"/tmp")"#, &["chroot"]),
    case(
        "pivot_root",
        r#"sysc(155, b"/tmp", b"/tmp")"#,
        &["pivot_root"],
    ),
    case(
        "unshare(CLONE_NEWUSER)",
        "sysc(272, 0x10000000)",
        &["unshare"],
    ),
    case(
        "unshare(CLONE_NEWNS)",
        "sysc(272, 0x00020000)",
        &["unshare"],
    ),
    case(
        "setns(its own uts namespace)",
        r#"sysc(308, os.open("/proc/self/ns/uts", os.O_RDONLY), 0)"#,
        &["setns"],
    ),
    // clone's flags are compared on the low 32 bits (what the kernel uses): CLONE_THREAD
    // in the high half does not make a fork look like a thread.
    case(
        "clone(SIGCHLD | CLONE_THREAD<<32)",
        "sysc(56, (0x10000 << 32) | 17, 0, 0, 0, 0)",
        &["clone"],
    ),
    // A thread with a namespace flag (the kernel refuses CLONE_NEWUSER and CLONE_NEWPID on
    // a thread itself, so these two use flags it accepts).
    case(
        "clone(thread flags | CLONE_NEWUTS)",
        "sysc(56, 0x10000 | 0x800 | 0x100 | 0x04000000, 0, 0, 0, 0)",
        &["clone"],
    )
    .stop_only(THREAD_CLONE),
    case(
        "clone(thread flags | CLONE_NEWNET)",
        "sysc(56, 0x10000 | 0x800 | 0x100 | 0x40000000, 0, 0, 0, 0)",
        &["clone"],
    )
    .stop_only(THREAD_CLONE),
    case(
        "clone(SIGCHLD) = fork",
        "sysc(56, 17, 0, 0, 0, 0)",
        &["clone"],
    ),
    case(
        "clone(CLONE_VM|CLONE_VFORK) = vfork",
        "sysc(56, 0x100 | 0x4000 | 17, 0, 0, 0, 0)",
        &["clone"],
    )
    .stop_only(VFORK),
    case("fork", "sysc(57)", &["fork"]),
    case("vfork", "sysc(58)", &["vfork"]).stop_only(VFORK),
];

/// Calls on other processes: pidfds, process_vm_*, kcmp, ptrace, signals with a forged siginfo, priorities and affinity.
pub const CROSS_PROCESS: &[Case] = &[
    case("pidfd_open(1)", "sysc(434, 1, 0)", &["pidfd_open"]),
    // A /proc/<pid> directory is a pidfd to pidfd_send_signal; signal 0 asks the
    // permission check alone.
    case(
        "pidfd_send_signal(/proc/1, 0)",
        r#"sysc(424, os.open("/proc/1", os.O_RDONLY), 0, None, 0)"#,
        &["pidfd_send_signal"],
    ),
    case(
        "pidfd_getfd(init's fd 0)",
        "sysc(438, pidfd(1), 0, 0)",
        &["pidfd_open", "pidfd_getfd"],
    ),
    case(
        "process_vm_readv(1)",
        "sysc(310, 1, None, 0, None, 0, 0)",
        &["process_vm_readv"],
    ),
    case(
        "process_vm_writev(1)",
        "sysc(311, 1, None, 0, None, 0, 0)",
        &["process_vm_writev"],
    ),
    case(
        "kcmp(1, self, KCMP_FILE)",
        "sysc(312, 1, os.getpid(), 0, 0, 0)",
        &["kcmp"],
    ),
    case(
        "ptrace(PTRACE_TRACEME)",
        "sysc(101, 0, 0, 0, 0)",
        &["ptrace"],
    ),
    // A forged SI_QUEUE siginfo (si_code -1: a zero si_code to another process is refused
    // before any permission check); signal 0 asks the permission check alone.
    case(
        "rt_sigqueueinfo(1, forged SI_QUEUE)",
        "sysc(129, 1, 0, siginfo(0, -1))",
        &["rt_sigqueueinfo"],
    ),
    case(
        "process_madvise(self, MADV_COLD)",
        "sysc(440, pidfd(os.getpid()), None, 0, 20, 0)",
        &["pidfd_open", "process_madvise"],
    ),
    case(
        "prlimit64(pid 1)",
        "sysc(302, 1, 7, None, None)",
        &["prlimit64"],
    ),
    case(
        "setpriority(PRIO_PROCESS, 1)",
        "sysc(141, 0, 1, 19)",
        &["setpriority"],
    ),
    case(
        "sched_setaffinity(1)",
        "sysc(203, 1, 128, cpus())",
        &["sched_setaffinity"],
    ),
    case(
        "sched_setscheduler(0, SCHED_FIFO)",
        "sysc(144, 0, 1, ctypes.byref(ctypes.c_int(1)))",
        &["sched_setscheduler"],
    )
    .host_privilege(),
];

/// prctl, personality and privilege tricks: capabilities, setuid, a nested landlock, execveat, memfd_secret, mlockall, io_uring.
pub const PRCTL_AND_PRIVILEGE: &[Case] = &[
    case("prctl(PR_SET_MM)", "sysc(157, 35, 8, 0, 0, 0)", &["prctl"]).host_privilege(),
    case(
        "prctl(PR_SET_SECCOMP, an allow-all filter)",
        "sysc(157, 22, 2, allow_all(), 0, 0)",
        &["prctl"],
    ),
    case(
        "prctl(PR_CAP_AMBIENT_RAISE)",
        "sysc(157, 47, 2, 21, 0, 0)",
        &["prctl"],
    ),
    case(
        "prctl(PR_SET_PTRACER_ANY)",
        "sysc(157, 0x59616d61, -1, 0, 0, 0)",
        &["prctl"],
    )
    .absent_as(libc::EINVAL, "the Yama LSM (PR_SET_PTRACER is Yama's)"),
    case(
        "prctl(PR_SET_CHILD_SUBREAPER)",
        "sysc(157, 36, 1, 0, 0, 0)",
        &["prctl"],
    ),
    case(
        "personality(READ_IMPLIES_EXEC)",
        "sysc(135, 0x0400000)",
        &["personality"],
    ),
    case("personality(PER_LINUX32)", "sysc(135, 0x0008)", &["personality"]),
    case(
        "capset",
        "sysc(126, ctypes.create_string_buffer(b'\\x22\\x05\\x08\\x20' + bytes(4)), ctypes.create_string_buffer(24))",
        &["capset"],
    ),
    case("setresuid(0)", "sysc(117, 0, 0, 0)", &["setresuid"]),
    case("setgroups(0)", "sysc(116, 0, None)", &["setgroups"]).host_privilege(),
    case(
        "landlock_create_ruleset",
        "sysc(444, None, 0, 1)",
        &["landlock_create_ruleset"],
    ),
    case(
        "execveat(AT_EMPTY_PATH)",
        r#"sysc(322, os.open("/usr/bin/true", os.O_RDONLY), b"", None, None, 0x1000)"#,
        &["execveat"],
    ),
    case("memfd_secret", "sysc(447, 0)", &["memfd_secret"]),
    // MCL_FUTURE | MCL_ONFAULT: locking what is mapped now would pass RLIMIT_MEMLOCK.
    case("mlockall", "sysc(151, 2 | 4)", &["mlockall"]),
    case(
        "io_uring_enter",
        "sysc(426, uring(), 0, 0, 0, None, 0)",
        &["io_uring_setup", "io_uring_enter"],
    ),
    case(
        "io_uring_register(IORING_REGISTER_PROBE)",
        "sysc(427, uring(), 8, ctypes.create_string_buffer(16 + 8 * 256), 256)",
        &["io_uring_setup", "io_uring_register"],
    ),
];

/// SysV and POSIX IPC, the splice family, NUMA, inotify and fanotify, device nodes, extended attributes, owners, swap, the hostname and the clock.
pub const IPC_AND_KERNEL_OBJECTS: &[Case] = &[
    case("shmget", "sysc(29, 0, 1 << 20, 0o1600)", &["shmget"]),
    case("msgget", "sysc(68, 0, 0o1600)", &["msgget"]),
    case("semget", "sysc(64, 0, 1, 0o1600)", &["semget"]),
    case(
        "mq_open",
        r#"sysc(240, b"x", 0o100 | 2, 0o600, None)"#,
        &["mq_open"],
    ),
    case(
        "sendfile",
        r#"sysc(40, os.pipe()[1], os.open("/usr/bin/true", os.O_RDONLY), None, 1)"#,
        &["sendfile"],
    ),
    case(
        "splice",
        r#"sysc(275, os.open("/usr/bin/true", os.O_RDONLY), None, os.pipe()[1], None, 1, 0)"#,
        &["splice"],
    ),
    case(
        "tee",
        "sysc(276, full_pipe(), os.pipe()[1], 1, 0)",
        &["tee"],
    ),
    case("vmsplice", "sysc(278, 1, None, 0, 0)", &["vmsplice"]),
    case("mbind", "sysc(237, 0, 0, 0, None, 0, 0)", &["mbind"]),
    case("set_mempolicy", "sysc(238, 0, None, 0)", &["set_mempolicy"]),
    case(
        "migrate_pages(1, node 0 to node 0)",
        "sysc(256, 1, 64, ctypes.byref(ctypes.c_ulong(1)), ctypes.byref(ctypes.c_ulong(1)))",
        &["migrate_pages"],
    ),
    case(
        "move_pages(1)",
        "sysc(279, 1, 0, None, None, None, 0)",
        &["move_pages"],
    ),
    case("inotify_init1", "sysc(294, 0)", &["inotify_init1"]),
    // FAN_REPORT_FID: the one class an unprivileged caller may make.
    case(
        "fanotify_init(FAN_REPORT_FID)",
        "sysc(300, 0x200, 0)",
        &["fanotify_init"],
    ),
    case(
        "mknodat(fifo in /tmp)",
        r#"sysc(259, -100, b"/tmp/f", 0o10600, 0)"#,
        &["mknodat"],
    ),
    case(
        "setxattr(/tmp)",
        r#"sysc(188, b"/tmp", b"user.x", b"1", 1, 0)"#,
        &["setxattr"],
    ),
    case(
        "chown(/tmp, 0, 0)",
        r#"sysc(92, b"/tmp", 0, 0)"#,
        &["chown"],
    ),
    case(
        "fchownat(/tmp)",
        r#"sysc(260, -100, b"/tmp", 0, 0, 0)"#,
        &["fchownat"],
    ),
    case("swapon", r#"sysc(167, b"/tmp/x", 0)"#, &["swapon"]).host_privilege(),
    case("vhangup", "sysc(153)", &["vhangup"]).host_privilege(),
    case("sethostname", r#"sysc(170, b"host", 4)"#, &["sethostname"]),
    case(
        "clock_settime",
        "sysc(227, 0, ctypes.create_string_buffer(16))",
        &["clock_settime"],
    )
    .host_privilege(),
    case(
        "adjtimex",
        "sysc(159, ctypes.create_string_buffer(256))",
        &["adjtimex"],
    ),
    // QCMD(Q_SYNC, USRQUOTA): sync every filesystem's quota, which anyone may ask.
    case(
        "quotactl(Q_SYNC)",
        "sysc(179, 0x800001 << 8, None, 0, None)",
        &["quotactl"],
    ),
];

/// ioctls on the stdio pipes: only the harmless requests are allowed. A request with a harmless low half and junk in the high half is refused too: the filter compares the low 32 bits, as the kernel does.
pub const STDIO_IOCTLS: &[Case] = &[
    case("TIOCCONS", "ioc(0, 0x541D)", &["ioctl"]).host_privilege(),
    case("TIOCEXCL", "ioc(0, 0x540C)", &["ioctl"]),
    case("TCSETS", "ioc(0, 0x5402)", &["ioctl"]),
    case("TIOCSCTTY", "ioc(0, 0x540E)", &["ioctl"]),
    case("TIOCSETD", "ioc(0, 0x5423)", &["ioctl"]),
    case("FIOASYNC", "ioc(1, 0x5452)", &["ioctl"]),
    case("TIOCSWINSZ", "ioc(0, 0x5414)", &["ioctl"]),
    case(
        "TIOCSTI with FIONREAD in the high half",
        "ioc(0, (0x541B << 32) | 0x5412)",
        &["ioctl"],
    ),
];

/// Device nodes and FIFOs: mknod and mknodat are never allowed (at most refused with EPERM).
pub const MKNOD: &[Case] = &[
    case(
        "os.mknod /tmp/null (char 1,3)",
        "os.mknod('/tmp/n', 0o666 | 0o020000, os.makedev(1, 3))",
        &["mknod", "mknodat"],
    )
    .host_privilege(),
    case(
        "mknodat /tmp/mem (char 1,1)",
        r#"sysc(259, -100, b"/tmp/mem", 0o666 | 0o020000, (1 << 8) | 1)"#,
        &["mknodat"],
    )
    .host_privilege(),
    case(
        "mknod /tmp/sda (block 8,0)",
        r#"sysc(133, b"/tmp/sda", 0o666 | 0o060000, (8 << 8) | 0)"#,
        &["mknod"],
    )
    .host_privilege(),
    case(
        "mkfifo /tmp/f",
        "os.mkfifo('/tmp/f')",
        &["mknod", "mknodat"],
    ),
];

/// mount, umount2, pivot_root, chroot, open_tree and fsopen (x86_64: 165, 166, 155, 161, 428, 430).
pub const MOUNTS: &[Case] = &[
    case(
        "mount tmpfs /tmp",
        r#"sysc(165, b"x", b"/tmp", b"tmpfs", 0, None)"#,
        &["mount"],
    ),
    case(
        "remount /usr rw",
        "sysc(165, None, b\"/usr\", None, 0x20 | 0x1000, None)",
        &["mount"],
    ),
    case(
        "mount proc",
        r#"sysc(165, b"proc", b"/tmp", b"proc", 0, None)"#,
        &["mount"],
    ),
    case("umount /proc", r#"sysc(166, b"/proc", 2)"#, &["umount2"]),
    case("umount /usr", r#"sysc(166, b"/usr", 2)"#, &["umount2"]),
    case(
        "pivot_root",
        r#"sysc(155, b"/tmp", b"/tmp")"#,
        &["pivot_root"],
    ),
    case("chroot", r#"sysc(161, b"/tmp")"#, &["chroot"]),
    // AT_RECURSIVE: a copy of / without its locked submounts is refused (EINVAL).
    case(
        "open_tree(/, OPEN_TREE_CLONE | AT_RECURSIVE)",
        r#"sysc(428, -100, b"/", 1 | 0x8000)"#,
        &["open_tree"],
    ),
    case("fsopen", r#"sysc(430, b"tmpfs", 0)"#, &["fsopen"]),
];

/// ptrace and its relatives on init (x86_64: ptrace 101, process_vm_readv 310, kcmp 312, pidfd_open 434).
pub const PTRACE: &[Case] = &[
    case("PTRACE_TRACEME", "sysc(101, 0, 0, 0, 0)", &["ptrace"]),
    case("PTRACE_ATTACH init", "sysc(101, 16, 1, 0, 0)", &["ptrace"]),
    case(
        "PTRACE_SEIZE init",
        "sysc(101, 0x4206, 1, 0, 0)",
        &["ptrace"],
    ),
    case(
        "process_vm_readv init",
        "sysc(310, 1, iov(buf(8), 8), 1, iov(id(None), 8), 1, 0)",
        &["process_vm_readv"],
    ),
    case("kcmp init", "sysc(312, 1, os.getpid(), 0, 0, 0)", &["kcmp"]),
    case("pidfd_open init", "sysc(434, 1, 0)", &["pidfd_open"]),
];

/// Calls that need no capability yet widen the kernel's attack surface: io_uring, userfaultfd, bpf, perf_event_open, kernel keyrings, memfds, seccomp, modify_ldt, iopl, file handles, syslog, modules, kexec, reboot, acct.
pub const DANGEROUS: &[Case] = &[
    case(
        "io_uring_setup",
        "sysc(425, 8, ctypes.byref(ctypes.create_string_buffer(120)))",
        &["io_uring_setup"],
    ),
    case("userfaultfd", "sysc(323, 1)", &["userfaultfd"]), // UFFD_USER_MODE_ONLY
    // BPF_MAP_CREATE of a one-entry array: past the attribute checks, at the privilege
    // check (kernel.unprivileged_bpf_disabled).
    case(
        "bpf(BPF_MAP_CREATE)",
        r#"sysc(321, 0, ctypes.create_string_buffer(b"\x02\0\0\0\x04\0\0\0\x04\0\0\0\x01" + bytes(59)), 72)"#,
        &["bpf"],
    )
    .host_privilege(),
    // A software clock on this process, user space only: what perf_event_paranoid 2
    // allows anyone.
    case(
        "perf_event_open",
        r#"sysc(298, ctypes.create_string_buffer(b"\x01" + bytes(39) + b"\x60" + bytes(87)), 0, -1, -1, 0)"#,
        &["perf_event_open"],
    ),
    case("keyctl", "sysc(250, 0, -3, 0)", &["keyctl"]), // KEYCTL_GET_KEYRING_ID
    case(
        "add_key",
        r#"sysc(248, b"user", b"agentjail", b"x", 1, -3)"#,
        &["add_key"],
    ),
    case(
        "request_key(a key it added)",
        r#"(sysc(248, b"user", b"agentjail", b"x", 1, -3), sysc(249, b"user", b"agentjail", None, 0))[1]"#,
        &["add_key", "request_key"],
    ),
    case("memfd_create", r#"sysc(319, b"x", 0)"#, &["memfd_create"]),
    case("personality", "sysc(135, 0x0040000)", &["personality"]), // ADDR_NO_RANDOMIZE
    case(
        "prctl(PR_SET_DUMPABLE)",
        "sysc(157, 4, 1, 0, 0, 0)",
        &["prctl"],
    ),
    case(
        "seccomp(SECCOMP_GET_ACTION_AVAIL)",
        "sysc(317, 2, 0, ctypes.byref(ctypes.c_uint32(0x80000000)))",
        &["seccomp"],
    ),
    case(
        "modify_ldt",
        "sysc(154, 0, ctypes.create_string_buffer(16), 16)",
        &["modify_ldt"],
    ),
    case("iopl", "sysc(172, 3)", &["iopl"]).stop_only(HOST_HARDWARE),
    case(
        "open_by_handle_at(/tmp)",
        r#"sysc(304, os.open("/tmp", os.O_RDONLY), fhandle(b"/tmp"), 0)"#,
        &["name_to_handle_at", "open_by_handle_at"],
    )
    .host_privilege(),
    case(
        "name_to_handle_at(/tmp)",
        r#"fhandle(b"/tmp")"#,
        &["name_to_handle_at"],
    ),
    case(
        "syslog",
        "sysc(103, 3, ctypes.create_string_buffer(64), 64)",
        &["syslog"],
    )
    .host_privilege(),
    case("init_module", "sysc(175, None, 0, b\"\")", &["init_module"]).stop_only(HOST_KERNEL),
    case("kexec_load", "sysc(246, 0, 0, None, 0)", &["kexec_load"]).stop_only(HOST_KERNEL),
    case(
        "reboot",
        "sysc(169, 0xfee1dead, 0x28121969, 0x4321fedc, None)",
        &["reboot"],
    )
    .stop_only(HOST_KERNEL),
    case("acct", r#"sysc(163, b"/tmp/acct")"#, &["acct"]).host_privilege(),
];
