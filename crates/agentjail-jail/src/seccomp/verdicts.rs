//! What the filter does with each syscall number, as data: the plan's allowlist and errno
//! syscalls turned into one verdict per number, the syscalls allowed only with certain
//! arguments (ioctl requests, clone without `CLONE_NEW*`, socket families, prlimit64 on
//! the caller) and the set-id mode bits refused where the plan says. Separate from the BPF
//! assembly (`bpf.rs`) because this is the policy a reviewer reads: which number gets
//! which answer, independent of how the program is laid out.

use super::notify::SESSION_DOORBELL;
use super::SeccompPlan;
use crate::syscalls::syscall_number;
use crate::SetupError;
use std::collections::BTreeMap;

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
pub(super) const IOCTL_ALLOWED: &[u64] = &[
    libc::TCGETS,
    libc::TIOCGWINSZ,
    libc::FIONREAD,
    libc::FIONBIO,
    libc::FIOCLEX,
    libc::FIONCLEX,
];

pub(super) const CLONE_NEW_FLAGS: u64 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u32 as u64;

/// What the filter does with one syscall number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
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
pub(super) struct ArgCheck {
    pub(super) arg: u8,
    pub(super) mask: u32,
    pub(super) value: u32,
    pub(super) action: u32,
}

pub(super) const RET_ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
pub(super) const RET_NOTIFY: u32 = libc::SECCOMP_RET_USER_NOTIF;

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
pub(super) fn verdicts(plan: &SeccompPlan) -> Result<BTreeMap<u32, Verdict>, SetupError> {
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
    if plan.observe_opens {
        for nr in allowed_opens(&map) {
            let v = match map.remove(&nr) {
                Some(Verdict::Args { checks, .. }) => Verdict::Args {
                    checks,
                    otherwise: RET_NOTIFY,
                },
                _ => Verdict::Always(RET_NOTIFY),
            };
            map.insert(nr, v);
        }
    }
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

/// The open family observe mode sees (`SeccompPlan::observe_opens`).
pub const OBSERVED_OPENS: &[&str] = &["open", "openat", "openat2"];

/// The numbers of [`OBSERVED_OPENS`] that `map` allows (with any arguments, or after its
/// argument checks refuse nothing else: the set-id mode checks stay in front of the
/// notification). One the allowlist does not allow is not among them: it stays a syscall
/// outside the allowlist, refused and named as any other.
pub(super) fn allowed_opens(map: &BTreeMap<u32, Verdict>) -> Vec<u32> {
    OBSERVED_OPENS
        .iter()
        .filter_map(|name| syscall_number(name).and_then(|n| u32::try_from(n).ok()))
        .filter(|nr| match map.get(nr) {
            Some(Verdict::Always(a)) => *a == RET_ALLOW,
            Some(Verdict::Args { otherwise, .. }) => *otherwise == RET_ALLOW,
            None => false,
        })
        .collect()
}
