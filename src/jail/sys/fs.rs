//! Paths and mounts: the calls that build the jail's root, and the read-only host queries the
//! parent makes while preparing it.

use super::{check, check_long, SysResult};
use std::ffi::CStr;
use std::os::fd::RawFd;

fn opt_ptr(s: Option<&CStr>) -> *const libc::c_char {
    s.map_or(std::ptr::null(), |s| s.as_ptr())
}

pub fn mount(
    source: Option<&CStr>,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
    data: Option<&CStr>,
) -> SysResult<()> {
    // SAFETY: all pointers are NUL-terminated strings or NULL, valid for the call.
    let rc = unsafe {
        libc::mount(
            opt_ptr(source),
            target.as_ptr(),
            opt_ptr(fstype),
            flags,
            opt_ptr(data).cast(),
        )
    };
    check(rc).map(drop)
}

pub fn umount2(target: &CStr, flags: libc::c_int) -> SysResult<()> {
    // SAFETY: target is a valid NUL-terminated path.
    check(unsafe { libc::umount2(target.as_ptr(), flags) }).map(drop)
}

pub fn pivot_root(new_root: &CStr, put_old: &CStr) -> SysResult<()> {
    // SAFETY: both arguments are valid NUL-terminated paths; pivot_root has no libc wrapper.
    let rc = unsafe { libc::syscall(libc::SYS_pivot_root, new_root.as_ptr(), put_old.as_ptr()) };
    check_long(rc).map(drop)
}

pub fn chdir(path: &CStr) -> SysResult<()> {
    // SAFETY: path is a valid NUL-terminated string.
    check(unsafe { libc::chdir(path.as_ptr()) }).map(drop)
}

/// mkdir that treats an existing directory as success (the root is built idempotently).
pub fn mkdir(path: &CStr, mode: u32) -> SysResult<()> {
    // SAFETY: path is a valid NUL-terminated string.
    match check(unsafe { libc::mkdir(path.as_ptr(), mode) }) {
        Ok(_) | Err(libc::EEXIST) => Ok(()),
        Err(e) => Err(e),
    }
}

pub fn symlink(target: &CStr, link: &CStr) -> SysResult<()> {
    // SAFETY: both are valid NUL-terminated strings.
    check(unsafe { libc::symlink(target.as_ptr(), link.as_ptr()) }).map(drop)
}

/// open(2), always close-on-exec.
pub fn open(path: &CStr, flags: libc::c_int, mode: u32) -> SysResult<RawFd> {
    // SAFETY: path is a valid NUL-terminated string; mode is used only with O_CREAT.
    check(unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC, mode) })
}

pub fn fchmod(fd: RawFd, mode: u32) -> SysResult<()> {
    // SAFETY: plain syscall on an owned fd.
    check(unsafe { libc::fchmod(fd, mode) }).map(drop)
}

/// The `st_mode` of what `fd` refers to.
pub fn fstat_mode(fd: RawFd) -> SysResult<u32> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes one `struct stat` into `st`.
    check(unsafe { libc::fstat(fd, st.as_mut_ptr()) })?;
    // SAFETY: fstat succeeded, so it initialised `st`.
    Ok(unsafe { st.assume_init() }.st_mode)
}

/// The `f_flag` word of the filesystem holding `path` (statvfs). Parent only: it reads host
/// state while the jail is being prepared.
pub fn statvfs_flags(path: &CStr) -> SysResult<libc::c_ulong> {
    // SAFETY: zeroed statvfs is valid storage.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: path is a valid NUL-terminated string and st valid storage.
    check(unsafe { libc::statvfs(path.as_ptr(), &mut st) })?;
    Ok(st.f_flag)
}

/// access(2) on a host path: Ok when the caller may access it with `mode` (W_OK, X_OK, ...).
pub fn access(path: &std::path::Path, mode: libc::c_int) -> SysResult<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| libc::EINVAL)?;
    // SAFETY: c is a valid NUL-terminated path for the call.
    check(unsafe { libc::access(c.as_ptr(), mode) }).map(drop)
}
