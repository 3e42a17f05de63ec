//! The kernel's security interfaces: capabilities, no_new_privs, landlock and seccomp.

use super::{check, check_long, SysResult};
use std::os::fd::{OwnedFd, RawFd};

/// Drop every capability from the effective, permitted and inheritable sets.
pub fn capset_zero() -> SysResult<()> {
    #[repr(C)]
    struct CapHeader {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct CapData {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let mut header = CapHeader {
        version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3
        pid: 0,
    };
    let data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: header and data are valid, correctly sized for _LINUX_CAPABILITY_VERSION_3.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_capset,
            &mut header as *mut CapHeader,
            data.as_ptr(),
        )
    };
    check_long(rc).map(drop)
}

/// prctl(PR_SET_NO_NEW_PRIVS, 1): idempotent; landlock and seccomp both require it.
pub fn no_new_privs() -> SysResult<()> {
    super::prctl(libc::PR_SET_NO_NEW_PRIVS, 1).map(drop)
}

const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;
const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;

/// The host's landlock ABI version, or the errno (ENOSYS: not built; EOPNOTSUPP: disabled).
pub fn landlock_abi() -> SysResult<u32> {
    // SAFETY: with a null attr, size 0 and the VERSION flag the kernel only returns the ABI
    // version; no memory is read or written and no fd is created.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    check_long(r).map(|v| u32::try_from(v).unwrap_or(0))
}

/// landlock_create_ruleset with the first `size` bytes of struct landlock_ruleset_attr
/// (handled_access_fs, handled_access_net, scoped: three u64 in that order).
pub fn landlock_create_ruleset(attr: &[u64; 3], size: usize) -> SysResult<OwnedFd> {
    let size = size.min(std::mem::size_of::<[u64; 3]>());
    // SAFETY: `attr` is valid for at least `size` bytes and only read by the kernel.
    let fd = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, attr.as_ptr(), size, 0u32) };
    check_long(fd).map(|fd| super::owned(fd as RawFd))
}

/// landlock_add_rule(PATH_BENEATH) for the file or directory open at `parent_fd`.
pub fn landlock_add_path_rule(ruleset: RawFd, parent_fd: RawFd, access: u64) -> SysResult<()> {
    #[repr(C, packed)]
    struct PathBeneathAttr {
        allowed_access: u64,
        parent_fd: i32,
    }
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd,
    };
    // SAFETY: `attr` is a valid packed landlock_path_beneath_attr, read only.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset,
            LANDLOCK_RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0u32,
        )
    };
    check_long(r).map(drop)
}

pub fn landlock_restrict_self(ruleset: RawFd) -> SysResult<()> {
    // SAFETY: landlock_restrict_self takes an fd and flags only.
    let r = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) };
    check_long(r).map(drop)
}

/// seccomp(SECCOMP_SET_MODE_FILTER, flags, program): the syscall's return value (the listener
/// fd with SECCOMP_FILTER_FLAG_NEW_LISTENER) or the errno.
pub fn seccomp_set_filter(program: &[libc::sock_filter], flags: libc::c_ulong) -> SysResult<RawFd> {
    let len = u16::try_from(program.len()).map_err(|_| libc::E2BIG)?;
    let prog = libc::sock_fprog {
        len,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: `prog` points at `program`, which outlives the call; the kernel copies the
    // program and only reads it.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            flags,
            &prog as *const libc::sock_fprog,
        )
    };
    check_long(r).map(|v| v as RawFd)
}

/// Whether the kernel knows a seccomp return action (SECCOMP_GET_ACTION_AVAIL).
pub fn seccomp_action_available(action: u32) -> SysResult<()> {
    // SAFETY: the kernel reads one u32 from a valid pointer to a live local; nothing is written.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_ACTION_AVAIL,
            0,
            &action as *const u32,
        )
    };
    check_long(r).map(drop)
}

/// One pending seccomp notification: its id (for the answer), the calling thread's id in
/// the listener's reader's pid namespace, the syscall number and its six arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Notification {
    pub id: u64,
    pub pid: u32,
    pub nr: i32,
    pub args: [u64; 6],
}

/// Read one pending notification from a seccomp listener. Retried on EINTR.
pub fn seccomp_notif_recv(listener: RawFd) -> SysResult<Notification> {
    let mut req = libc::seccomp_notif {
        id: 0,
        pid: 0,
        flags: 0,
        data: libc::seccomp_data {
            nr: 0,
            arch: 0,
            instruction_pointer: 0,
            args: [0; 6],
        },
    };
    loop {
        // SAFETY: SECCOMP_IOCTL_NOTIF_RECV writes one `struct seccomp_notif` into `req`, which
        // is a valid, zeroed, exclusively borrowed struct of that type.
        let r = unsafe {
            libc::ioctl(
                listener,
                libc::SECCOMP_IOCTL_NOTIF_RECV,
                &mut req as *mut libc::seccomp_notif,
            )
        };
        match check(r) {
            Ok(_) => {
                return Ok(Notification {
                    id: req.id,
                    pid: req.pid,
                    nr: req.data.nr,
                    args: req.data.args,
                })
            }
            Err(libc::EINTR) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Install a copy of `src` in the notifying task's fd table at exactly `target`
/// (SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SETFD: what was at `target` there is
/// closed, as dup2 would), close-on-exec. The task is still blocked in the notified syscall.
/// ENOENT: the task is gone (or the notification was answered).
pub fn seccomp_notif_addfd(listener: RawFd, id: u64, src: RawFd, target: RawFd) -> SysResult<()> {
    let add = libc::seccomp_notif_addfd {
        id,
        flags: libc::SECCOMP_ADDFD_FLAG_SETFD as u32,
        srcfd: u32::try_from(src).map_err(|_| libc::EBADF)?,
        newfd: u32::try_from(target).map_err(|_| libc::EBADF)?,
        newfd_flags: libc::O_CLOEXEC as u32,
    };
    // SAFETY: SECCOMP_IOCTL_NOTIF_ADDFD reads one `struct seccomp_notif_addfd` from a valid
    // pointer to a live local; nothing is written through it.
    let r = unsafe {
        libc::ioctl(
            listener,
            libc::SECCOMP_IOCTL_NOTIF_ADDFD,
            &add as *const libc::seccomp_notif_addfd,
        )
    };
    check(r).map(drop)
}

/// Whether a notification is still pending (SECCOMP_IOCTL_NOTIF_ID_VALID): the thread that
/// made it still waits in that syscall. Ok: it does; ENOENT: it is gone or was answered, so
/// what was read of its memory since the notification may be another process's.
pub fn seccomp_notif_id_valid(listener: RawFd, id: u64) -> SysResult<()> {
    // SAFETY: SECCOMP_IOCTL_NOTIF_ID_VALID reads one u64 from a valid pointer to a live
    // local; nothing is written through it.
    let r = unsafe {
        libc::ioctl(
            listener,
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
            &id as *const u64,
        )
    };
    check(r).map(drop)
}

/// Answer a notification with SECCOMP_USER_NOTIF_FLAG_CONTINUE: the kernel runs the syscall
/// as if the filter had allowed it, so every other control (the mount tree, landlock, the
/// file's permissions) decides it exactly as without the notification. Observe mode only,
/// for syscalls the filter allows and notifies only to be seen.
pub fn seccomp_notif_continue(listener: RawFd, id: u64) -> SysResult<()> {
    notif_send(
        listener,
        &libc::seccomp_notif_resp {
            id,
            val: 0,
            error: 0,
            flags: libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
        },
    )
}

/// Answer a notification: the notified syscall returns `val`, or fails with `errno` when it
/// is not 0. The syscall itself never runs.
pub fn seccomp_notif_send(listener: RawFd, id: u64, val: i64, errno: i32) -> SysResult<()> {
    notif_send(
        listener,
        &libc::seccomp_notif_resp {
            id,
            val,
            error: -errno,
            flags: 0,
        },
    )
}

/// SECCOMP_IOCTL_NOTIF_SEND with `resp`.
fn notif_send(listener: RawFd, resp: &libc::seccomp_notif_resp) -> SysResult<()> {
    // SAFETY: SECCOMP_IOCTL_NOTIF_SEND reads one `struct seccomp_notif_resp` from a valid
    // pointer to a live value; nothing is written through it.
    let r = unsafe {
        libc::ioctl(
            listener,
            libc::SECCOMP_IOCTL_NOTIF_SEND,
            resp as *const libc::seccomp_notif_resp,
        )
    };
    check(r).map(drop)
}
