//! The child's side of the root, after fork: open the host inputs beneath their roots,
//! make every mount private and mount the root tmpfs, walk the prepared steps, then
//! remount the root read-only, pivot into it and detach the old one. Only syscalls on the
//! data `prepare` built in the parent: nothing here allocates (an input's
//! `/proc/self/fd/N` is formatted on the stack). Separate from the planning in `mount.rs`
//! because that side may allocate, read the host and fail with a message; this side may
//! only return a step and an errno.

use super::{PreparedRoot, Step};
use crate::sys;
use std::ffi::CStr;
use std::sync::atomic::{AtomicI32, Ordering};

/// Child: make every mount private, mount the root tmpfs at the staging dir.
pub fn mount_root(root: &PreparedRoot) -> Result<(), (crate::report::Stage, i32)> {
    use crate::report::Stage;
    let slash: &CStr = c"/";
    // Nothing we mount may propagate back to the host, and nothing the host mounts later
    // may appear in the jail.
    sys::mount(None, slash, None, libc::MS_REC | libc::MS_PRIVATE, None)
        .map_err(|e| (Stage::MountPrivate, e))?;
    sys::mount(
        Some(c"tmpfs"),
        &root.staging,
        Some(c"tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some(&root.root_tmpfs_data),
    )
    .map_err(|e| (Stage::MountRoot, e))
}

/// Child: walk the prepared steps. Returns the index of the failing step and errno.
pub fn apply_steps(root: &PreparedRoot) -> Result<(), (usize, i32)> {
    for (i, step) in root.steps.iter().enumerate() {
        let r = match step {
            Step::Mkdir { path, mode } => sys::mkdir(path, *mode),
            Step::Touch { path } => {
                sys::open(path, libc::O_CREAT | libc::O_WRONLY, 0o444).map(sys::close)
            }
            Step::Symlink { target, link } => sys::symlink(target, link),
            Step::WriteFile {
                path,
                contents,
                mode,
            } => sys::open(path, libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC, *mode).and_then(
                |fd| {
                    let r = sys::write_all(fd, contents).and_then(|_| sys::fchmod(fd, *mode));
                    sys::close(fd);
                    r
                },
            ),
            Step::Mount {
                source,
                target,
                fstype,
                flags,
                data,
            } => sys::mount(
                source.as_deref(),
                target,
                fstype.as_deref(),
                *flags,
                data.as_deref(),
            ),
            Step::SetAttrRecursive { target, attr } => sys::mount_setattr_recursive(target, *attr),
            Step::BindInput { target, slot, .. } => bind_input(&root.input_fds[*slot], target),
        };
        r.map_err(|e| (i, e))?;
    }
    Ok(())
}

/// Child, first of all mount work: open every host input beneath its root without following
/// any symlink. Here, because the fds must belong to the child's own mount namespace (the
/// kernel refuses to bind a mount of another one, so the parent's fds cannot serve), and
/// before the staging tmpfs covers /tmp, where a host root may lie. Returns the failing
/// step's index and errno.
pub fn open_inputs(root: &PreparedRoot) -> Result<(), (usize, i32)> {
    for (i, step) in root.steps.iter().enumerate() {
        let Step::BindInput {
            root: dir,
            relative,
            slot,
            ..
        } = step
        else {
            continue;
        };
        let dir_fd = sys::open(dir, libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC, 0)
            .map_err(|e| (i, e))?;
        let fd = match relative {
            Some(rel) => {
                let r = sys::open_beneath(dir_fd, rel);
                sys::close(dir_fd);
                r.map_err(|e| (i, e))?
            }
            None => dir_fd,
        };
        root.input_fds[*slot].store(fd, Ordering::Relaxed);
    }
    Ok(())
}

/// Child: bind an input through its fd as /proc/self/fd/N (formatted on the stack: nothing
/// allocates), then close it.
fn bind_input(slot: &AtomicI32, target: &CStr) -> sys::SysResult<()> {
    let fd = slot.swap(-1, Ordering::Relaxed);
    if fd < 0 {
        return Err(libc::EBADF);
    }
    let mut buf = [0u8; 32];
    let path = proc_fd_path(fd, &mut buf);
    let r = sys::mount(Some(path), target, None, libc::MS_BIND, None);
    sys::close(fd);
    r
}

/// "/proc/self/fd/N" with its NUL, written into `buf`.
fn proc_fd_path(fd: i32, buf: &mut [u8; 32]) -> &CStr {
    const PREFIX: &[u8] = b"/proc/self/fd/";
    buf[..PREFIX.len()].copy_from_slice(PREFIX);
    let mut digits = [0u8; 10];
    let mut n = fd.unsigned_abs();
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for k in 0..len {
        buf[PREFIX.len() + k] = digits[len - 1 - k];
    }
    buf[PREFIX.len() + len] = 0;
    // The buffer holds the prefix, 1-10 digits and one NUL: never more than 25 bytes.
    CStr::from_bytes_until_nul(&buf[..]).unwrap_or(c"/proc/self/fd/")
}

/// Child: the root tmpfs becomes read-only, then it replaces `/` and the old root is
/// detached so no path leads back to the host's filesystem.
pub fn enter_root(root: &PreparedRoot) -> Result<(), (crate::report::Stage, i32)> {
    use crate::report::Stage;
    sys::mount(
        None,
        &root.staging,
        None,
        libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV,
        None,
    )
    .map_err(|e| (Stage::RemountRootReadOnly, e))?;
    sys::chdir(&root.staging).map_err(|e| (Stage::Chdir, e))?;
    // pivot_root(".", "."): the old root ends up stacked under the new one at "/", and the
    // MNT_DETACH unmount below removes it, without needing a directory for put_old.
    sys::pivot_root(c".", c".").map_err(|e| (Stage::PivotRoot, e))?;
    sys::umount2(c".", libc::MNT_DETACH).map_err(|e| (Stage::DetachOldRoot, e))?;
    sys::chdir(c"/").map_err(|e| (Stage::Chdir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_fd_path_formats_without_allocating() {
        let mut buf = [0u8; 32];
        assert_eq!(proc_fd_path(0, &mut buf), c"/proc/self/fd/0");
        assert_eq!(proc_fd_path(11, &mut buf), c"/proc/self/fd/11");
        assert_eq!(
            proc_fd_path(i32::MAX, &mut buf),
            c"/proc/self/fd/2147483647"
        );
    }
}
