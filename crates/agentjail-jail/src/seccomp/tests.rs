use super::bpf::{
    AUDIT_ARCH_X86_64, BPF_AND_K, BPF_JA, BPF_JEQ_K, BPF_JGE_K, BPF_JSET_K, BPF_LD_W_ABS,
    BPF_RET_K, X32_SYSCALL_BIT,
};
use super::verdicts::{CLONE_NEW_FLAGS, IOCTL_ALLOWED};
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

fn plan(p: &SeccompPolicy) -> Result<SeccompPlan, crate::syscall_groups::ResolveError> {
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
    assert_eq!(
        plan(&p).unwrap_err(),
        crate::syscall_groups::ResolveError::UnknownGroup("everything".into())
    );
    let mut p = SeccompPolicy::default();
    p.errno_syscalls.push("frobnicate".into());
    assert_eq!(
        plan(&p).unwrap_err(),
        crate::syscall_groups::ResolveError::UnknownErrnoSyscall("frobnicate".into())
    );
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
fn observe_opens_notifies_only_the_allowed_opens_and_changes_nothing_else() {
    // Every number with every argument pattern the filter looks at: the observe filter
    // answers exactly as the normal one, but USER_NOTIF for the allowed opens.
    let mut p = plan(&SeccompPolicy::default()).unwrap();
    assert!(!p.observe_opens, "a plan observes nothing unless told");
    assert_eq!(observed_opens(&p).unwrap(), Vec::<u32>::new());
    let plain = compile(&p).unwrap();
    p.observe_opens = true;
    let seen = compile(&p).unwrap();
    let opens = observed_opens(&p).unwrap();
    let want: Vec<u32> = [libc::SYS_open, libc::SYS_openat]
        .iter()
        .map(|n| *n as u32)
        .collect();
    assert_eq!(
        opens, want,
        "open and openat are allowed by default, openat2 is not"
    );
    let notify = libc::SECCOMP_RET_USER_NOTIF;
    let mut patterns = vec![[0u64; 6]];
    for v in [
        0o4755u64,
        libc::AF_INET as u64,
        libc::CLONE_NEWUSER as u64,
        SESSION_DOORBELL as u64,
    ] {
        for at in 0..4 {
            let mut a = [0u64; 6];
            a[at] = v;
            patterns.push(a);
        }
    }
    for nr in 0..=470u32 {
        for args in &patterns {
            let before = run_bpf(&plain.program, AUDIT_ARCH_X86_64, nr, *args);
            let after = run_bpf(&seen.program, AUDIT_ARCH_X86_64, nr, *args);
            if opens.contains(&nr) && before == libc::SECCOMP_RET_ALLOW {
                assert_eq!(after, notify, "nr {nr} {args:?}");
            } else {
                assert_eq!(after, before, "nr {nr} {args:?}");
            }
        }
    }
    // The set-id checks stay in front of the notification.
    p.deny_setid_modes = true;
    let both = compile(&p).unwrap();
    let mut args = [0u64; 6];
    args[3] = 0o4755;
    assert_eq!(
        run_bpf(
            &both.program,
            AUDIT_ARCH_X86_64,
            libc::SYS_openat as u32,
            args
        ),
        libc::SECCOMP_RET_ERRNO | libc::EPERM as u32
    );
    // Without files_read no open is allowed: none is observed, each stays forbidden.
    let mut bare = plan(&SeccompPolicy {
        allow_groups: vec!["basic_io".into()],
        errno_syscalls: Vec::new(),
    })
    .unwrap();
    bare.observe_opens = true;
    assert_eq!(observed_opens(&bare).unwrap(), Vec::<u32>::new());
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
