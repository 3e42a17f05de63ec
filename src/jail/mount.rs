//! The jail's root: a tmpfs, populated from the plan's mount ops, entered with pivot_root.
//!
//! Everything is turned into NUL-terminated strings and flag words in the parent
//! (`prepare`); the child only walks the prepared list (`apply`). The staging directory is
//! the host's `/tmp` *inside the child's private mount namespace*: mounting the new root
//! there changes nothing the host can see (propagation is made private first).

use super::sys;
use crate::plan::{HostPath, MountOp};
use std::ffi::{CStr, CString};

/// Look a path up on the real host (lstat + readlink).
pub fn probe_host(path: &str) -> HostPath {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => match std::fs::read_link(path) {
            Ok(t) => HostPath::Symlink(t.to_string_lossy().into_owned()),
            Err(_) => HostPath::Missing,
        },
        Ok(m) if m.is_dir() => HostPath::Dir,
        Ok(_) => HostPath::File,
        Err(_) => HostPath::Missing,
    }
}

/// Where the new root is assembled inside the child's mount namespace.
pub const STAGING: &str = "/tmp";

#[derive(Debug)]
pub enum Step {
    Mkdir {
        path: CString,
        mode: u32,
    },
    /// Create an empty file to bind a file over.
    Touch {
        path: CString,
    },
    Symlink {
        target: CString,
        link: CString,
    },
    WriteFile {
        path: CString,
        contents: Vec<u8>,
        mode: u32,
    },
    Mount {
        source: Option<CString>,
        target: CString,
        fstype: Option<CString>,
        flags: libc::c_ulong,
        data: Option<CString>,
    },
}

#[derive(Debug)]
pub struct PreparedRoot {
    pub staging: CString,
    pub root_tmpfs_data: CString,
    pub steps: Vec<Step>,
    /// Which plan op each step came from (for error reports).
    pub step_op: Vec<usize>,
}

fn cstr(s: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("path {s:?} contains a NUL byte"))
}

fn staged(path: &str) -> Result<CString, String> {
    cstr(&format!("{STAGING}{path}"))
}

/// Mount flags that the kernel locks on a mount seen from a less privileged user namespace;
/// a bind remount must carry them over or it fails with EPERM (bubblewrap does the same).
fn locked_flags(source: &str) -> Result<libc::c_ulong, String> {
    let c = cstr(source)?;
    let f = sys::statvfs_flags(&c).map_err(|e| {
        format!(
            "cannot stat bind source {source}: {}",
            std::io::Error::from_raw_os_error(e)
        )
    })?;
    let mut out: libc::c_ulong = 0;
    for (st_flag, ms_flag) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if f & st_flag != 0 {
            out |= ms_flag;
        }
    }
    Ok(out)
}

/// Turn the plan's mount ops into prepared steps. Host state is read here (is the source a
/// file or a directory, its mount flags), never in the child.
pub fn prepare(ops: &[MountOp], root_tmpfs_bytes: u64) -> Result<PreparedRoot, String> {
    let mut steps = Vec::new();
    let mut step_op = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let before = steps.len();
        steps.extend(op_steps(op)?);
        step_op.extend(std::iter::repeat_n(i, steps.len() - before));
    }
    Ok(PreparedRoot {
        staging: cstr(STAGING)?,
        root_tmpfs_data: cstr(&format!("size={root_tmpfs_bytes},nr_inodes=1024,mode=0755"))?,
        steps,
        step_op,
    })
}

/// The child's steps for one plan op.
fn op_steps(op: &MountOp) -> Result<Vec<Step>, String> {
    Ok(match op {
        MountOp::Dir { path, mode } => vec![Step::Mkdir {
            path: staged(path)?,
            mode: *mode,
        }],
        MountOp::Symlink { target, link } => vec![Step::Symlink {
            target: cstr(target)?,
            link: staged(link)?,
        }],
        MountOp::File {
            path,
            contents,
            mode,
        } => vec![Step::WriteFile {
            path: staged(path)?,
            contents: contents.as_bytes().to_vec(),
            mode: *mode,
        }],
        MountOp::BindReadOnly { source, target } => {
            bind_steps(source, target, libc::MS_RDONLY | libc::MS_NODEV)?
        }
        MountOp::BindDevice { source, target } => bind_steps(source, target, libc::MS_NOEXEC)?,
        MountOp::Proc { target } => {
            let tgt = staged(target)?;
            vec![
                Step::Mkdir {
                    path: tgt.clone(),
                    mode: 0o555,
                },
                mount(Some("proc"), tgt, Some("proc"), NOSUID_NODEV_NOEXEC, None)?,
            ]
        }
        MountOp::MaskPath { path } => mask_steps(path)?,
        MountOp::ReadOnlyPath { path } => read_only_steps(path)?,
        MountOp::Tmpfs {
            target,
            size_bytes,
            inodes,
            mode,
        } => {
            let tgt = staged(target)?;
            let data = format!("size={size_bytes},nr_inodes={inodes},mode={mode:o}");
            vec![
                Step::Mkdir {
                    path: tgt.clone(),
                    mode: 0o755,
                },
                // noexec: what the program writes is data, never a new binary to run.
                mount(
                    Some("tmpfs"),
                    tgt,
                    Some("tmpfs"),
                    NOSUID_NODEV_NOEXEC,
                    Some(&data),
                )?,
            ]
        }
    })
}

const NOSUID_NODEV_NOEXEC: libc::c_ulong = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;

fn mount(
    source: Option<&str>,
    target: CString,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> Result<Step, String> {
    Ok(Step::Mount {
        source: source.map(cstr).transpose()?,
        target,
        fstype: fstype.map(cstr).transpose()?,
        flags,
        data: data.map(cstr).transpose()?,
    })
}

/// A host path bound at the same place, then remounted with `extra` flags and nosuid (and
/// the flags the kernel locks on it, which a remount must repeat).
fn bind_steps(source: &str, target: &str, extra: libc::c_ulong) -> Result<Vec<Step>, String> {
    let meta = std::fs::metadata(source)
        .map_err(|e| format!("bind source {source} is not usable: {e}"))?;
    let tgt = staged(target)?;
    let make = if meta.is_dir() {
        Step::Mkdir {
            path: tgt.clone(),
            mode: 0o755,
        }
    } else {
        Step::Touch { path: tgt.clone() }
    };
    let remount =
        libc::MS_BIND | libc::MS_REMOUNT | libc::MS_NOSUID | extra | locked_flags(source)?;
    Ok(vec![
        make,
        mount(Some(source), tgt.clone(), None, libc::MS_BIND, None)?,
        mount(None, tgt, None, remount, None)?,
    ])
}

/// A file is hidden behind the host's /dev/null (reads empty, writes vanish); a directory
/// behind an empty read-only tmpfs. Decided in the parent from the host's procfs, which has
/// the same shape as the jail's; a path the host lacks needs no mask.
fn mask_steps(path: &str) -> Result<Vec<Step>, String> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(Vec::new());
    }
    let tgt = staged(path)?;
    let is_dir = std::fs::metadata(path).map(|m| m.is_dir()).unwrap_or(false);
    Ok(vec![if is_dir {
        let flags = libc::MS_RDONLY | NOSUID_NODEV_NOEXEC;
        mount(
            Some("tmpfs"),
            tgt,
            Some("tmpfs"),
            flags,
            Some("size=0,nr_inodes=1,mode=0555"),
        )?
    } else {
        mount(Some("/dev/null"), tgt, None, libc::MS_BIND, None)?
    }])
}

/// A /proc subtree bound onto itself and remounted read-only.
fn read_only_steps(path: &str) -> Result<Vec<Step>, String> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(Vec::new());
    }
    let tgt = staged(path)?;
    let remount = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | NOSUID_NODEV_NOEXEC;
    Ok(vec![
        Step::Mount {
            source: Some(tgt.clone()),
            target: tgt.clone(),
            fstype: None,
            flags: libc::MS_BIND | libc::MS_REC,
            data: None,
        },
        mount(None, tgt, None, remount, None)?,
    ])
}

/// Child: make every mount private, mount the root tmpfs at the staging dir.
pub fn mount_root(root: &PreparedRoot) -> Result<(), (super::report::Stage, i32)> {
    use super::report::Stage;
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
        };
        r.map_err(|e| (i, e))?;
    }
    Ok(())
}

/// Child: the root tmpfs becomes read-only, then it replaces `/` and the old root is
/// detached so no path leads back to the host's filesystem.
pub fn enter_root(root: &PreparedRoot) -> Result<(), (super::report::Stage, i32)> {
    use super::report::Stage;
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

impl PreparedRoot {
    /// A human description of step `i`, for error messages (parent only).
    pub fn describe(&self, i: usize) -> String {
        let s = |c: &CString| c.to_string_lossy().trim_start_matches(STAGING).to_string();
        match self.steps.get(i) {
            Some(Step::Mkdir { path, .. }) => format!("mkdir {}", s(path)),
            Some(Step::Touch { path }) => format!("create {}", s(path)),
            Some(Step::Symlink { target, link }) => {
                format!("symlink {} -> {}", s(link), target.to_string_lossy())
            }
            Some(Step::WriteFile { path, .. }) => format!("write {}", s(path)),
            Some(Step::Mount {
                source,
                target,
                fstype,
                ..
            }) => format!(
                "mount {} on {} ({})",
                source
                    .as_ref()
                    .map(|c| c.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "(remount)".into()),
                s(target),
                fstype
                    .as_ref()
                    .map(|c| c.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "bind".into())
            ),
            None => format!("step {i}"),
        }
    }
}
