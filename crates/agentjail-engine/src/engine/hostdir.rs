//! A workspace's host directory (`workspace_start`'s `host_dir`): a directory beneath one of
//! the policy's `[workspace] host_roots`, bound read-write at /workspace instead of the
//! tmpfs, left in place with what the commands wrote when the workspace closes
//! (docs/REFERENCE.md "Workspaces", docs/SECURITY.md "Host-directory workspaces").
//!
//! What is checked before a jail is started, each refused with `bad_host_dir`:
//! - the path is absolute and normalised (no `.`, `..`, `//`), strictly beneath a listed
//!   root (the root itself is refused: it holds many workspaces);
//! - it is reached the way host inputs are (jail::mount::open_input: openat2 beneath the
//!   root, RESOLVE_NO_SYMLINKS): a symlink anywhere below the root is refused, and the bind
//!   goes through an opened directory, never through the path again;
//! - it is a directory, owned by the uid the jail's user is on the host (nobody when
//!   agentjail runs as root, else agentjail's own): the one identity that writes it;
//! - the caller (src/engine/workspace.rs) claims it as that user (a thread with its
//!   filesystem ids), so a directory on the way that the jail could not search, and so
//!   could not bind, is refused here rather than at the jail's setup.
//!
//! Two live workspaces never share a directory, nor one nested in another's: every
//! directory from the root down holds a shared flock and the directory itself an exclusive
//! one, each on a descriptor held for the workspace's life (released when it ends, after
//! every process of its jail is gone). A second claim on the same or an enclosing or an
//! enclosed directory finds a conflicting lock: `host_dir_in_use`. flock rather than a
//! table in the engine because it also holds between two servers on one host, and because
//! it is taken on the inodes, so two spellings of one directory (two roots, one inside the
//! other) still meet. The jailed code can lock only inside its own directory, which no other
//! workspace may be.

use super::{EngineError, ErrorCode};
use agentjail_jail::os::{dir, fd};
use std::ffi::CString;
use std::os::fd::OwnedFd;

/// A claimed host directory: where it is and the locks that keep it to one workspace.
#[derive(Debug)]
pub struct HostDir {
    /// The `[workspace] host_roots` entry it is beneath, and its path below it.
    pub root: String,
    pub relative: String,
    /// (st_dev, st_ino) of the directory: the jail's /workspace must be it.
    pub id: (u64, u64),
    /// Shared flocks on the root and each directory below it, the exclusive one last.
    _locks: Vec<OwnedFd>,
}

impl HostDir {
    /// The host path, as the client gave it.
    pub fn path(&self) -> String {
        format!("{}/{}", self.root, self.relative)
    }
}

fn bad(message: impl Into<String>) -> EngineError {
    EngineError::new(ErrorCode::BadHostDir, message)
}

/// The uid the jail's user has on the host (agentjail_jail::userns).
pub fn jail_host_uid() -> u32 {
    let euid = agentjail_jail::os::process::geteuid();
    if euid == 0 {
        crate::plan::ROOT_LAUNCH_HOST_UID
    } else {
        euid
    }
}

/// Check `host_dir` against `roots` and claim it for one workspace.
pub fn claim(host_dir: &str, roots: &[String]) -> Result<HostDir, EngineError> {
    let shown = agentjail_json::safe_text(host_dir, 300);
    if roots.is_empty() {
        return Err(bad("this policy lists no [workspace] host_roots: a workspace's /workspace is a tmpfs here; leave host_dir out, or serve a policy that lists the roots"));
    }
    let (root, relative) = crate::inputs::locate(host_dir, roots).map_err(|e| match e {
        crate::inputs::InputError::NotUnderRoot { .. } => bad(format!(
            "host_dir {shown:?} is not beneath any [workspace] host_roots entry ({})",
            roots.join(", ")
        )),
        _ => bad(format!(
            "host_dir {shown:?}: give an absolute, normalised host path (no `.`, `..` or `//`)"
        )),
    })?;
    if relative.is_empty() {
        return Err(bad(format!(
            "host_dir {shown:?} is a [workspace] host_roots entry itself; give a directory beneath it"
        )));
    }
    let opened = agentjail_jail::mount::open_input(&root, &relative).map_err(|why| {
        bad(format!(
            "host_dir: {why} (opened as the jail's user, uid {}: every directory from / down must be searchable by it)",
            jail_host_uid()
        ))
    })?;
    let st =
        dir::stat(&opened).map_err(|e| bad(format!("host_dir {shown:?}: fstat: errno {e}")))?;
    if st.mode & libc::S_IFMT != libc::S_IFDIR {
        return Err(bad(format!("host_dir {shown:?} is not a directory")));
    }
    let uid = jail_host_uid();
    if st.uid != uid {
        return Err(bad(format!(
            "host_dir {shown:?} is owned by uid {}; the jail's user is uid {uid} on this host, and a workspace writes only a directory that uid owns (chown it)",
            st.uid
        )));
    }
    let locks = lock_chain(&root, &relative, &shown)?;
    let last = locks
        .last()
        .ok_or_else(|| bad("host_dir: nothing was locked"))?;
    let held = dir::stat(last).map_err(|e| bad(format!("host_dir {shown:?}: fstat: errno {e}")))?;
    if (held.dev, held.ino) != (st.dev, st.ino) {
        return Err(bad(format!(
            "host_dir {shown:?} changed while it was being opened; try again"
        )));
    }
    Ok(HostDir {
        root,
        relative,
        id: (st.dev, st.ino),
        _locks: locks,
    })
}

/// Open the root and every directory below it down to `relative` (each one component,
/// beneath the last, no symlink, no mount crossed), shared-locking each and exclusively
/// locking the last.
fn lock_chain(root: &str, relative: &str, shown: &str) -> Result<Vec<OwnedFd>, EngineError> {
    let in_use = || {
        EngineError::new(
            ErrorCode::HostDirInUse,
            format!("host_dir {shown:?}, a directory enclosing it or one inside it is another live workspace's; close that one first"),
        )
    };
    let flags = libc::O_RDONLY | libc::O_DIRECTORY;
    let c = |s: &str| CString::new(s).map_err(|_| bad("host_dir contains NUL"));
    let top =
        dir::open(&c(root)?, flags, 0).map_err(|e| bad(format!("host root {root}: errno {e}")))?;
    let parts: Vec<&str> = relative.split('/').collect();
    let mut locks = vec![top];
    for (i, part) in parts.iter().enumerate() {
        let here = locks
            .last()
            .ok_or_else(|| bad("host_dir: nothing was opened"))?;
        fd::try_lock(here, false).map_err(|e| lock_error(e, shown, &in_use))?;
        let next =
            dir::open_beneath(here, &c(part)?, flags | libc::O_NOFOLLOW, 0).map_err(|e| {
                bad(format!(
                    "host_dir {shown:?}: {} ({})",
                    match e {
                        libc::ELOOP => "a symlink is on the way",
                        libc::EXDEV => "a mount point is on the way",
                        libc::ENOTDIR => "not a directory",
                        libc::EACCES => "the jail's user may not read a directory on the way",
                        _ => "cannot open a directory on the way",
                    },
                    std::io::Error::from_raw_os_error(e)
                ))
            })?;
        if i + 1 == parts.len() {
            fd::try_lock(&next, true).map_err(|e| lock_error(e, shown, &in_use))?;
        }
        locks.push(next);
    }
    Ok(locks)
}

fn lock_error(e: i32, shown: &str, in_use: &dyn Fn() -> EngineError) -> EngineError {
    if e == libc::EWOULDBLOCK {
        in_use()
    } else {
        bad(format!("host_dir {shown:?}: flock: errno {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots(d: &std::path::Path) -> Vec<String> {
        vec![d.to_str().unwrap().to_string()]
    }

    fn chown_jail(p: &std::path::Path) {
        let uid = jail_host_uid();
        std::os::unix::fs::chown(p, Some(uid), Some(uid)).unwrap();
    }

    #[test]
    fn only_an_owned_directory_beneath_a_root_with_no_symlink() {
        let d = tempfile::tempdir().unwrap();
        let r = roots(d.path());
        let base = d.path().to_str().unwrap();
        for p in ["a", "a/b", "file"] {
            if p == "file" {
                std::fs::write(d.path().join(p), b"x").unwrap();
            } else {
                std::fs::create_dir(d.path().join(p)).unwrap();
            }
            chown_jail(&d.path().join(p));
        }
        std::os::unix::fs::symlink(d.path().join("a"), d.path().join("link")).unwrap();
        for (p, code) in [
            (base.to_string(), "bad_host_dir"),
            (format!("{base}/file"), "bad_host_dir"),
            (format!("{base}/missing"), "bad_host_dir"),
            (format!("{base}/link"), "bad_host_dir"),
            (format!("{base}/link/b"), "bad_host_dir"),
            (format!("{base}/a/../a"), "bad_host_dir"),
            (format!("{base}/a/"), "bad_host_dir"),
            ("/etc".to_string(), "bad_host_dir"),
            ("a".to_string(), "bad_host_dir"),
        ] {
            let e = claim(&p, &r).unwrap_err();
            assert_eq!(e.code.as_str(), code, "{p}: {}", e.message);
        }
        assert_eq!(
            claim(&format!("{base}/a"), &[]).unwrap_err().code.as_str(),
            "bad_host_dir"
        );
        let a = claim(&format!("{base}/a"), &r).unwrap();
        assert_eq!(a.path(), format!("{base}/a"));
        // The same, an enclosed and an enclosing directory are taken while `a` lives.
        assert_eq!(
            claim(&format!("{base}/a"), &r).unwrap_err().code.as_str(),
            "host_dir_in_use"
        );
        assert_eq!(
            claim(&format!("{base}/a/b"), &r).unwrap_err().code.as_str(),
            "host_dir_in_use"
        );
        drop(a);
        let b = claim(&format!("{base}/a/b"), &r).unwrap();
        assert_eq!(
            claim(&format!("{base}/a"), &r).unwrap_err().code.as_str(),
            "host_dir_in_use"
        );
        // Through another root that is the first one's child: the same inodes, still taken.
        let inner = vec![format!("{base}/a")];
        assert_eq!(
            claim(&format!("{base}/a/b"), &inner)
                .unwrap_err()
                .code
                .as_str(),
            "host_dir_in_use"
        );
        drop(b);
        assert!(claim(&format!("{base}/a/b"), &inner).is_ok());
    }

    #[test]
    fn a_directory_of_another_owner_is_refused() {
        if agentjail_jail::os::process::geteuid() != 0 {
            return; // only root can make a directory another uid owns
        }
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("x")).unwrap();
        let e = claim(d.path().join("x").to_str().unwrap(), &roots(d.path())).unwrap_err();
        assert!(e.message.contains("owned by uid 0"), "{}", e.message);
    }
}
