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

/// `MOUNT_ATTR_*` bits of `mount_setattr(2)` (linux/mount.h).
pub const MOUNT_ATTR_RDONLY: u64 = 0x1;
pub const MOUNT_ATTR_NOSUID: u64 = 0x2;
pub const MOUNT_ATTR_NODEV: u64 = 0x4;
pub const MOUNT_ATTR_NOEXEC: u64 = 0x8;

/// `struct mount_attr` (linux/mount.h, version 0: 32 bytes).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// mount_setattr(AT_FDCWD, target, AT_RECURSIVE, {attr_set}): set `attr` on the mount at
/// `target` and on every mount beneath it, in one step that either changes all of them or
/// none. Only sets flags, never clears one (a flag the kernel locks could not be cleared
/// anyway). Linux 5.12+; ENOSYS before, and EPERM/ENOSYS under a container's seccomp
/// profile that does not know it.
pub fn mount_setattr_recursive(target: &CStr, attr: u64) -> SysResult<()> {
    let a = MountAttr {
        attr_set: attr,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: target is a valid NUL-terminated path; `a` is a live, initialised struct
    // mount_attr whose exact size is passed; the kernel only reads it.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            target.as_ptr(),
            libc::AT_RECURSIVE as libc::c_uint,
            &a as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    check_long(rc).map(drop)
}

/// Whether the kernel (and any seccomp filter above us) lets mount_setattr through: a call
/// with a zero-sized attribute, which a kernel that has the syscall refuses with EINVAL
/// before looking at anything else. Changes nothing.
pub fn mount_setattr_available() -> bool {
    // SAFETY: a NULL attribute pointer with size 0 is never dereferenced (the kernel checks
    // the size first); the path is a valid NUL-terminated string.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            c"/".as_ptr(),
            0,
            std::ptr::null::<MountAttr>(),
            0usize,
        )
    };
    matches!(check_long(rc), Err(libc::EINVAL))
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

const RESOLVE_NO_XDEV: u64 = 0x01;
const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
const RESOLVE_NO_SYMLINKS: u64 = 0x04;
const RESOLVE_BENEATH: u64 = 0x08;
const RESOLVE_IN_ROOT: u64 = 0x10;

/// openat2(2): `path` relative to `dir`, resolved under `resolve` (RESOLVE_* bits), opened
/// with `flags` and `mode`.
fn openat2(
    dir: RawFd,
    path: &CStr,
    flags: libc::c_int,
    mode: u32,
    resolve: u64,
) -> SysResult<RawFd> {
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = OpenHow {
        flags: flags as u64,
        mode: mode as u64,
        resolve,
    };
    // SAFETY: `path` is NUL-terminated and `how` a valid open_how of the size passed; both
    // outlive the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir,
            path.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    check_long(rc).map(|fd| fd as RawFd)
}

/// Open `relative` beneath the directory `root` without following any symlink, magic link
/// or mount crossing into /proc (openat2: RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
/// RESOLVE_NO_MAGICLINKS), as an O_PATH fd: a symlink anywhere on the way is ELOOP, a `..`
/// that climbs out is EXDEV.
pub fn open_beneath(root: RawFd, relative: &CStr) -> SysResult<RawFd> {
    openat2(
        root,
        relative,
        libc::O_PATH | libc::O_CLOEXEC | libc::O_NOFOLLOW,
        0,
        RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    )
}

/// Whether `path` names something in the tree whose root is the directory `root` (another
/// process's `/proc/<pid>/root`): openat2 with RESOLVE_IN_ROOT, so `/`, `..` and absolute
/// symlinks resolve against `root` exactly as they do for that process, and no magic link
/// is followed. Opened O_PATH (nothing is read, no permission but search is needed) and
/// closed at once. Ok: it is there; else the errno (ENOENT, ENOTDIR: it is not).
pub fn exists_in_root(root: RawFd, path: &CStr) -> SysResult<()> {
    let fd = openat2(
        root,
        path,
        libc::O_PATH | libc::O_CLOEXEC,
        0,
        RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
    )?;
    super::io::close(fd);
    Ok(())
}

/// openat2 of `relative` beneath the directory `dir` with `flags` and `mode`, following no
/// symlink and no magic link, crossing no mount, never climbing above `dir`
/// (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV): a
/// workspace's files, opened by the host in a tree the jailed code writes. O_CLOEXEC is
/// added.
pub fn openat2_beneath(
    dir: RawFd,
    relative: &CStr,
    flags: libc::c_int,
    mode: u32,
) -> SysResult<RawFd> {
    openat2(
        dir,
        relative,
        flags | libc::O_CLOEXEC,
        mode,
        RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
    )
}

/// The mount flags word (`f_flag`) of the filesystem an fd is on (fstatvfs).
pub fn fstatvfs_flags(fd: RawFd) -> SysResult<libc::c_ulong> {
    // SAFETY: zeroed statvfs is valid storage.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: st is valid storage; fd is owned by the caller.
    check(unsafe { libc::fstatvfs(fd, &mut st) })?;
    Ok(st.f_flag)
}

/// openat(2), always close-on-exec.
pub fn openat(dir: RawFd, name: &CStr, flags: libc::c_int, mode: u32) -> SysResult<RawFd> {
    // SAFETY: name is a valid NUL-terminated string; mode is used only with O_CREAT.
    check(unsafe { libc::openat(dir, name.as_ptr(), flags | libc::O_CLOEXEC, mode) })
}

/// mkdirat(2).
pub fn mkdirat(dir: RawFd, name: &CStr, mode: u32) -> SysResult<()> {
    // SAFETY: name is a valid NUL-terminated string.
    check(unsafe { libc::mkdirat(dir, name.as_ptr(), mode) }).map(drop)
}

/// What `fstat`/`fstatat` say about a host file, for the checks of paths the servers touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub nlink: u64,
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
}

fn file_stat(st: &libc::stat) -> FileStat {
    FileStat {
        size: st.st_size.max(0) as u64,
        mode: st.st_mode,
        uid: st.st_uid,
        gid: st.st_gid,
        nlink: st.st_nlink,
        dev: st.st_dev,
        ino: st.st_ino,
    }
}

/// fstat(2) as a [`FileStat`].
pub fn fstat_file(fd: RawFd) -> SysResult<FileStat> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes one `struct stat` into `st`.
    check(unsafe { libc::fstat(fd, st.as_mut_ptr()) })?;
    // SAFETY: fstat succeeded, so it initialised `st`.
    Ok(file_stat(&unsafe { st.assume_init() }))
}

/// fstatat(2) of a directory entry, never following it, as a [`FileStat`].
pub fn fstatat_file(dir: RawFd, name: &CStr) -> SysResult<FileStat> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: name is NUL-terminated; fstatat writes one `struct stat` into `st`.
    check(unsafe {
        libc::fstatat(
            dir,
            name.as_ptr(),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })?;
    // SAFETY: fstatat succeeded, so it initialised `st`.
    Ok(file_stat(&unsafe { st.assume_init() }))
}

/// renameat(2): `from` in `from_dir` replaces `to` in `to_dir` (neither is followed).
pub fn renameat(from_dir: RawFd, from: &CStr, to_dir: RawFd, to: &CStr) -> SysResult<()> {
    // SAFETY: both names are valid NUL-terminated strings.
    check(unsafe { libc::renameat(from_dir, from.as_ptr(), to_dir, to.as_ptr()) }).map(drop)
}

/// unlinkat(2) (`AT_REMOVEDIR` in `flags` for a directory).
pub fn unlinkat(dir: RawFd, name: &CStr, flags: libc::c_int) -> SysResult<()> {
    // SAFETY: name is a valid NUL-terminated string.
    check(unsafe { libc::unlinkat(dir, name.as_ptr(), flags) }).map(drop)
}

/// fchownat(2) of a directory entry, never following it.
pub fn fchownat_nofollow(dir: RawFd, name: &CStr, uid: u32, gid: u32) -> SysResult<()> {
    // SAFETY: name is a valid NUL-terminated string.
    check(unsafe { libc::fchownat(dir, name.as_ptr(), uid, gid, libc::AT_SYMLINK_NOFOLLOW) })
        .map(drop)
}

/// fchmodat(2) of a directory entry (the caller knows it is not a symlink: Linux cannot
/// change a symlink's mode, and follows one here).
pub fn fchmodat(dir: RawFd, name: &CStr, mode: u32) -> SysResult<()> {
    // SAFETY: name is a valid NUL-terminated string.
    check(unsafe { libc::fchmodat(dir, name.as_ptr(), mode, 0) }).map(drop)
}
