//! Landlock: filesystem, TCP and scope restrictions the jailed program cannot lift.
//!
//! The parent creates the ruleset (`prepare`): it handles every filesystem right the host's
//! landlock ABI knows, so whatever a rule does not grant is denied (writing outside /tmp,
//! making sockets or fifos outside /tmp, truncating read-only files); with ABI ≥ 4 it also
//! handles TCP bind and connect, granting none; with ABI ≥ 6 it scopes abstract unix sockets
//! and signals to the jail. The child, after pivot_root (paths are jail paths) and before
//! seccomp, adds one PATH_BENEATH rule per path and restricts itself (`apply`): raw syscalls
//! on prepared data, no allocation.
//!
//! Rights per path:
//! - `read_exec`: EXECUTE, READ_FILE, READ_DIR.
//! - `read_write`: every handled right except EXECUTE, MAKE_CHAR, MAKE_BLOCK (no device nodes) and
//!   IOCTL_DEV (no devices live there).
//! - `devices`: READ_FILE, WRITE_FILE (no IOCTL_DEV: the jail needs no device ioctls).
//!
//! A path that is not a directory gets only the file rights of its set (landlock refuses
//! directory rights on files). A path missing from the jail root is skipped: that grants
//! less, never more.
//!
//! Compatibility is by ABI, reported exactly by `enforcement`: below the policy's `min_abi`
//! a `Required` plan fails in `prepare`; features newer than the host (TCP rules, scopes,
//! TRUNCATE, REFER) are applied where the ABI has them and listed as missing otherwise.

use super::{sys, Control, ControlState, SetupError};
use crate::plan::Requirement;
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};

pub use crate::plan::LandlockPlan;

pub const FS_EXECUTE: u64 = 1 << 0;
pub const FS_WRITE_FILE: u64 = 1 << 1;
pub const FS_READ_FILE: u64 = 1 << 2;
pub const FS_READ_DIR: u64 = 1 << 3;
pub const FS_REMOVE_DIR: u64 = 1 << 4;
pub const FS_REMOVE_FILE: u64 = 1 << 5;
pub const FS_MAKE_CHAR: u64 = 1 << 6;
pub const FS_MAKE_DIR: u64 = 1 << 7;
pub const FS_MAKE_REG: u64 = 1 << 8;
pub const FS_MAKE_SOCK: u64 = 1 << 9;
pub const FS_MAKE_FIFO: u64 = 1 << 10;
pub const FS_MAKE_BLOCK: u64 = 1 << 11;
pub const FS_MAKE_SYM: u64 = 1 << 12;
pub const FS_REFER: u64 = 1 << 13;
pub const FS_TRUNCATE: u64 = 1 << 14;
pub const FS_IOCTL_DEV: u64 = 1 << 15;
pub const NET_BIND_TCP: u64 = 1 << 0;
pub const NET_CONNECT_TCP: u64 = 1 << 1;
pub const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
pub const SCOPE_SIGNAL: u64 = 1 << 1;

/// Rights that make sense on a non-directory.
const FS_FILE_RIGHTS: u64 = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV;
const READ_EXEC: u64 = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR;
const DEVICE: u64 = FS_READ_FILE | FS_WRITE_FILE;
/// Writable paths (/tmp) get everything but device nodes, device ioctls and EXECUTE: the
/// program may write files there, never run them as new binaries (the tmpfs is also
/// mounted noexec; two independent layers).
const RW_EXCLUDED: u64 = FS_MAKE_CHAR | FS_MAKE_BLOCK | FS_IOCTL_DEV | FS_EXECUTE;

/// Filesystem rights each ABI handles.
fn fs_rights(abi: i32) -> u64 {
    match abi {
        i32::MIN..=0 => 0,
        1 => (1 << 13) - 1,
        2 => (1 << 14) - 1,
        3 | 4 => (1 << 15) - 1,
        _ => (1 << 16) - 1,
    }
}

/// The ruleset, created in the parent, and the rules the child adds.
#[derive(Debug)]
pub struct Prepared {
    ruleset: OwnedFd,
    abi: i32,
    handled_fs: u64,
    handled_net: u64,
    scoped: u64,
    /// (NUL-terminated jail path, allowed access).
    rules: Vec<(CString, u64)>,
}

impl Prepared {
    pub fn abi(&self) -> i32 {
        self.abi
    }

    /// The ruleset's fd (the child keeps it until it applies the rules).
    pub fn ruleset_fd(&self) -> std::os::fd::RawFd {
        self.ruleset.as_raw_fd()
    }
}

/// The host's landlock ABI version; negative (minus errno) when landlock is unavailable.
pub fn host_abi() -> i32 {
    match sys::landlock_abi() {
        Ok(v) => i32::try_from(v).unwrap_or(i32::MAX),
        Err(e) => -e,
    }
}

const FIX: &str = "use a kernel ≥ 5.13 with CONFIG_SECURITY_LANDLOCK=y and `landlock` in the lsm= boot \
                   parameter (cat /sys/kernel/security/lsm), or set landlock.requirement = \"best_effort\"";

/// Parent side: create the ruleset fd for the plan, restricted to what the host ABI supports.
/// Errors when landlock is unavailable (a best-effort caller records `enforcement(plan,
/// None)` and goes on) or, for a `Required` plan, when the ABI is below `min_abi`.
pub fn prepare(plan: &LandlockPlan) -> Result<Prepared, SetupError> {
    let abi = host_abi();
    if abi <= 0 {
        return Err(SetupError::new(
            "landlock",
            Some(-abi),
            format!("landlock is not available on this host; {FIX}"),
        ));
    }
    if plan.requirement == Requirement::Required && (abi as u32) < plan.min_abi {
        return Err(SetupError::new(
            "landlock",
            None,
            format!("host landlock ABI {abi} is below the policy's min_abi {}; upgrade the kernel or lower landlock.min_abi", plan.min_abi),
        ));
    }
    let handled_fs = fs_rights(abi);
    let handled_net = if plan.deny_tcp && abi >= 4 {
        NET_BIND_TCP | NET_CONNECT_TCP
    } else {
        0
    };
    let mut scoped = 0;
    if abi >= 6 {
        if plan.scope_abstract_unix {
            scoped |= SCOPE_ABSTRACT_UNIX_SOCKET;
        }
        if plan.scope_signals {
            scoped |= SCOPE_SIGNAL;
        }
    }
    let size = if abi >= 6 {
        24usize
    } else if abi >= 4 {
        16
    } else {
        8
    };
    let ruleset =
        sys::landlock_create_ruleset(&[handled_fs, handled_net, scoped], size).map_err(|e| {
            SetupError::new(
                "landlock create_ruleset",
                Some(e),
                format!("the kernel refused the ruleset for ABI {abi}; {FIX}"),
            )
        })?;
    if handled_net & NET_CONNECT_TCP != 0 {
        add_port_rules(&ruleset, &plan.connect_tcp_ports)?;
    }
    let mut rules = Vec::new();
    let sets: [(&Vec<String>, u64); 3] = [
        (&plan.read_exec, READ_EXEC),
        (&plan.read_write, handled_fs & !RW_EXCLUDED),
        (&plan.devices, DEVICE),
    ];
    for (paths, access) in sets {
        for p in paths {
            let c = CString::new(p.as_bytes()).map_err(|_| {
                SetupError::new(
                    "landlock",
                    None,
                    format!("path {p:?} contains a NUL byte; fix the policy"),
                )
            })?;
            rules.push((c, access & handled_fs));
        }
    }
    Ok(Prepared {
        ruleset,
        abi,
        handled_fs,
        handled_net,
        scoped,
        rules,
    })
}

/// The TCP ports the program may still connect to (the allowlist's proxy), added in the
/// parent: a port rule names no path.
fn add_port_rules(ruleset: &OwnedFd, ports: &[u16]) -> Result<(), SetupError> {
    for &port in ports {
        sys::landlock_add_net_rule(ruleset.as_raw_fd(), port, NET_CONNECT_TCP).map_err(|e| {
            SetupError::new(
                "landlock add_rule (TCP port)",
                Some(e),
                format!("the kernel refused a TCP connect rule for port {port}"),
            )
        })?;
    }
    Ok(())
}

/// The enforcement detail's note of the ports still open to connect ("" when none).
fn port_exceptions(ports: &[u16]) -> String {
    if ports.is_empty() {
        return String::new();
    }
    let ports: Vec<String> = ports.iter().map(|p| p.to_string()).collect();
    format!(
        " but connect to port {} (the allowlist proxy)",
        ports.join(", ")
    )
}

/// Child side, after pivot_root and before seccomp: add one rule per path and restrict the
/// process (setting no_new_privs first, which landlock requires; idempotent). Raw syscalls
/// only: no allocation, no locks, no panics. Errors carry the rule index (`usize::MAX` for
/// the final restrict) and the errno.
pub fn apply(p: &Prepared) -> Result<(), (usize, i32)> {
    for (i, (path, access)) in p.rules.iter().enumerate() {
        let fd = match sys::open(path, libc::O_PATH, 0) {
            Ok(fd) => fd,
            // Not in the jail root: granting nothing is the safe reading.
            Err(libc::ENOENT) => continue,
            Err(e) => return Err((i, e)),
        };
        let rule = sys::fstat_mode(fd).and_then(|mode| {
            let mut allowed = *access;
            if mode & libc::S_IFMT != libc::S_IFDIR {
                allowed &= FS_FILE_RIGHTS;
            }
            sys::landlock_add_path_rule(p.ruleset.as_raw_fd(), fd, allowed)
        });
        sys::close(fd);
        rule.map_err(|e| (i, e))?;
    }
    sys::no_new_privs().map_err(|e| (usize::MAX, e))?;
    sys::landlock_restrict_self(p.ruleset.as_raw_fd()).map_err(|e| (usize::MAX, e))
}

fn fs_names(bits: u64) -> Vec<&'static str> {
    const NAMES: [&str; 16] = [
        "execute",
        "write_file",
        "read_file",
        "read_dir",
        "remove_dir",
        "remove_file",
        "make_char",
        "make_dir",
        "make_reg",
        "make_sock",
        "make_fifo",
        "make_block",
        "make_sym",
        "refer",
        "truncate",
        "ioctl_dev",
    ];
    (0..16)
        .filter(|b| bits & (1 << b) != 0)
        .map(|b| NAMES[b])
        .collect()
}

/// The record's `landlock` control: exactly what is enforced, or what is missing and why.
pub fn enforcement(plan: &LandlockPlan, p: Option<&Prepared>) -> Control {
    let Some(p) = p else {
        let abi = host_abi();
        let why = if abi <= 0 {
            format!(
                "landlock unavailable ({}); {FIX}",
                std::io::Error::from_raw_os_error(-abi)
            )
        } else {
            format!("landlock ABI {abi} present but not applied")
        };
        return Control::new("landlock", ControlState::Unavailable, "landlock", why);
    };
    let mut missing: Vec<String> = Vec::new();
    let all_fs = fs_rights(i32::MAX);
    if p.handled_fs != all_fs {
        missing.push(format!(
            "fs rights not controlled: {}",
            fs_names(all_fs & !p.handled_fs).join(", ")
        ));
    }
    if plan.deny_tcp && p.handled_net == 0 {
        missing.push("TCP bind/connect not restricted (needs ABI 4)".into());
    }
    if plan.scope_abstract_unix && p.scoped & SCOPE_ABSTRACT_UNIX_SOCKET == 0 {
        missing.push("abstract unix sockets not scoped (needs ABI 6)".into());
    }
    if plan.scope_signals && p.scoped & SCOPE_SIGNAL == 0 {
        missing.push("signals not scoped (needs ABI 6)".into());
    }
    let mut detail = format!(
        "landlock ABI {}: fs read/exec on [{}], write on [{}], devices [{}]",
        p.abi,
        plan.read_exec.join(", "),
        plan.read_write.join(", "),
        plan.devices.join(", ")
    );
    if p.handled_net != 0 {
        detail.push_str(", TCP bind/connect denied");
        detail.push_str(&port_exceptions(&plan.connect_tcp_ports));
    }
    let mut scopes = Vec::new();
    if p.scoped & SCOPE_ABSTRACT_UNIX_SOCKET != 0 {
        scopes.push("abstract unix");
    }
    if p.scoped & SCOPE_SIGNAL != 0 {
        scopes.push("signal");
    }
    if !scopes.is_empty() {
        detail.push_str(&format!(", scopes: {}", scopes.join(" + ")));
    }
    let below_min = (p.abi as u32) < plan.min_abi;
    if below_min {
        missing.push(format!("ABI {} below min_abi {}", p.abi, plan.min_abi));
    }
    let state = if missing.is_empty() {
        ControlState::Enforced
    } else {
        detail.push_str(&format!(
            "; degraded: {}; upgrade the kernel for full coverage",
            missing.join("; ")
        ));
        ControlState::Degraded
    };
    Control::new(
        "landlock",
        state,
        &format!("landlock ABI {}", p.abi),
        detail,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rights_by_abi() {
        assert_eq!(fs_rights(1), 0x1fff);
        assert_eq!(fs_rights(3) & FS_TRUNCATE, FS_TRUNCATE);
        assert_eq!(fs_rights(4) & FS_IOCTL_DEV, 0);
        assert_eq!(fs_rights(7), 0xffff);
        assert_eq!(fs_names(FS_REFER | FS_EXECUTE), vec!["execute", "refer"]);
    }
}
