//! A jail's late files (crate::plan::LateFiles): the job's files written by the parent into
//! the root of a jail that was started before its job, while the child waits before
//! sealing the root (child.rs, 4b).
//!
//! The directory is an O_PATH fd opened beneath the waiting child's root (spawn.rs). Every
//! name is created here, never reused: a directory on the way with mkdirat (0755), a file
//! with O_CREAT | O_EXCL | O_NOFOLLOW, its mode set exactly (the umask does not apply),
//! owned by the jail's uid and gid as the child's own files are: the writing thread takes
//! the jail's host ids as its filesystem ids meanwhile (a tmpfs mounted in the jail's user
//! namespace refuses, EOVERFLOW, to create an inode for an id that namespace does not map,
//! such as root's), and its own back after. Nothing of the program
//! exists while this runs, so nothing races these calls; the checks are against a caller's
//! bad path, not an adversary.
//!
//! No jail may be cloned while a late file is open for writing ([`CLONES`]): a child gets a
//! copy of its parent's fd table, and holds it until it closes the fds it does not own
//! (child.rs, 4b or arrange_fds), a whole root's setup later. A copy of our write fd there
//! keeps the waiting jail's root busy, and its remount read-only fails with EBUSY: a
//! server starting other jails while it placed one's files saw 1 job in about 60 fail
//! `sandbox_unavailable:setup` (child: remount_root_read_only, errno 16).

use crate::plan::LateFile;
use crate::{sys, SetupError};
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// Held for reading across every clone of a jail (spawn.rs), for writing while late files
/// are written: no child is made while one of them is open for writing.
pub(crate) static CLONES: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Hold off late-file writes while this guard lives: for a caller about to start a process
/// some other way (`std::process::Command`), whose child holds a copy of the fd table until
/// it execs.
pub fn no_late_writes() -> std::sync::RwLockReadGuard<'static, ()> {
    CLONES.read().unwrap_or_else(|e| e.into_inner())
}

/// Write `files` beneath `dir`, as (and so owned by) `owner`, the jail's host uid and gid.
pub fn write(dir: &OwnedFd, files: &[LateFile], owner: (u32, u32)) -> Result<(), SetupError> {
    let _no_clones = CLONES.write().unwrap_or_else(|e| e.into_inner());
    let me = (sys::geteuid(), sys::getegid());
    let ids = |(uid, gid): (u32, u32), what: &str| {
        sys::set_thread_fs_ids(uid, gid).map_err(|e| {
            SetupError::new(
                format!("late files: {what} filesystem ids {uid}:{gid}"),
                Some(e),
                "agentjail writes a jail's files as the jail's uid: run it as root or as that uid",
            )
        })
    };
    if owner != me {
        ids(owner, "take the jail's")?;
    }
    let written = files.iter().try_for_each(|f| {
        write_one(dir.as_raw_fd(), f).map_err(|(what, errno)| {
            SetupError::new(
                format!("late file {}: {what}", f.path),
                errno,
                "a late file's path is relative, of plain names, and fits the room the plan keeps for it (late_files.bytes, late_files.inodes)",
            )
        })
    });
    if owner != me {
        ids(me, "restore agentjail's")?;
    }
    written
}

type Step<T> = Result<T, (&'static str, Option<i32>)>;

fn name(part: &str) -> Step<CString> {
    if part.is_empty() || part == "." || part == ".." {
        return Err(("not a plain name", Some(libc::EINVAL)));
    }
    CString::new(part).map_err(|_| ("NUL byte", Some(libc::EINVAL)))
}

fn write_one(root: RawFd, f: &LateFile) -> Step<()> {
    let parts: Vec<&str> = f.path.split('/').collect();
    let Some((file, dirs)) = parts.split_last() else {
        return Err(("empty path", Some(libc::EINVAL)));
    };
    let file = name(file)?;
    let mut held: Option<OwnedFd> = None;
    for part in dirs {
        let n = name(part)?;
        let at = held.as_ref().map_or(root, |d| d.as_raw_fd());
        match sys::mkdirat(at, &n, 0o755) {
            Ok(()) => sys::fchmodat(at, &n, 0o755).map_err(|e| ("chmod dir", Some(e)))?,
            Err(libc::EEXIST) => {}
            Err(e) => return Err(("mkdir", Some(e))),
        }
        let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;
        let fd = sys::openat(at, &n, flags, 0).map_err(|e| ("open dir", Some(e)))?;
        held = Some(sys::owned(fd));
    }
    let at = held.as_ref().map_or(root, |d| d.as_raw_fd());
    let flags = libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_NOFOLLOW;
    let fd = sys::owned(sys::openat(at, &file, flags, 0o600).map_err(|e| ("create", Some(e)))?);
    sys::write_all(fd.as_raw_fd(), &f.contents).map_err(|e| ("write", Some(e)))?;
    sys::fchmod(fd.as_raw_fd(), f.mode & 0o777).map_err(|e| ("chmod", Some(e)))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir() -> (std::path::PathBuf, OwnedFd) {
        let dir =
            std::env::temp_dir().join(format!("agentjail-late-{}", crate::ids::random_hex(6)));
        std::fs::create_dir(&dir).unwrap();
        let c = CString::new(dir.to_str().unwrap()).unwrap();
        let fd = sys::open(&c, libc::O_PATH | libc::O_DIRECTORY, 0).unwrap();
        (dir, sys::owned(fd))
    }

    #[test]
    fn files_land_with_their_modes_in_their_directories() {
        let (dir, fd) = tmpdir();
        let files = [
            LateFile {
                path: "bin/main".into(),
                contents: b"x".to_vec(),
                mode: 0o555,
            },
            LateFile {
                path: "bin/pkg/A.class".into(),
                contents: b"y".to_vec(),
                mode: 0o444,
            },
        ];
        write(&fd, &files, (sys::geteuid(), sys::getegid())).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &str| std::fs::metadata(dir.join(p)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode("bin/main"), 0o555);
        assert_eq!(mode("bin/pkg/A.class"), 0o444);
        assert_eq!(mode("bin/pkg"), 0o755);
        assert_eq!(std::fs::read(dir.join("bin/pkg/A.class")).unwrap(), b"y");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A late file is never open for writing while a clone holds the gate (spawn.rs takes
    /// it across clone3): the write waits for the clone, and then lands.
    #[test]
    fn a_write_waits_while_a_clone_holds_the_gate() {
        let (dir, fd) = tmpdir();
        let me = (sys::geteuid(), sys::getegid());
        let cloning = no_late_writes();
        let (tx, rx) = std::sync::mpsc::channel();
        let writer = std::thread::spawn(move || {
            let f = LateFile {
                path: "main".into(),
                contents: b"x".to_vec(),
                mode: 0o444,
            };
            tx.send(write(&fd, &[f], me)).unwrap();
        });
        let waited = rx.recv_timeout(std::time::Duration::from_millis(200));
        assert!(waited.is_err(), "the write did not wait for the clone");
        assert!(
            !dir.join("main").exists(),
            "created while a clone held the gate"
        );
        drop(cloning);
        let written = rx.recv_timeout(std::time::Duration::from_secs(10));
        assert!(matches!(written, Ok(Ok(()))), "{written:?}");
        writer.join().unwrap();
        assert_eq!(std::fs::read(dir.join("main")).unwrap(), b"x");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_path_that_climbs_or_reuses_a_name_is_refused() {
        let (dir, fd) = tmpdir();
        let me = (sys::geteuid(), sys::getegid());
        for bad in ["../x", "a/../../x", "/abs", "a//b", ""] {
            let f = LateFile {
                path: bad.into(),
                contents: Vec::new(),
                mode: 0o444,
            };
            let e = write(&fd, &[f], me).unwrap_err();
            assert!(e.to_string().contains("late file"), "{bad}: {e}");
        }
        // A symlink where a file goes is never followed, and an existing name never reused.
        std::os::unix::fs::symlink("/etc/passwd", dir.join("link")).unwrap();
        let f = LateFile {
            path: "link".into(),
            contents: b"owned".to_vec(),
            mode: 0o444,
        };
        let e = write(&fd, &[f], me).unwrap_err();
        assert!(e.to_string().contains("create"), "{e}");
        assert_ne!(std::fs::read("/etc/passwd").unwrap(), b"owned");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
