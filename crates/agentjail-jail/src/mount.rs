//! The jail's root: a tmpfs, populated from the plan's mount ops, entered with pivot_root.
//!
//! Everything is turned into NUL-terminated strings and flag words in the parent
//! (`prepare`); the child only walks the prepared list (`apply_steps`, in `mount/apply.rs`
//! with the rest of the child's side). The staging directory is the host's `/tmp` *inside
//! the child's private mount namespace*: mounting the new root there changes nothing the
//! host can see (propagation is made private first).

mod apply;

use super::sys;
use crate::plan::{Host, HostPath, MountOp};
pub use apply::{apply_steps, enter_root, mount_root, open_inputs};
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::AtomicI32;

/// The real host, as the plan sees it.
pub struct RealHost;

impl Host for RealHost {
    /// lstat + readlink.
    fn probe(&self, path: &str) -> HostPath {
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

    fn list(&self, dir: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .map(|d| {
                d.filter_map(|e| e.ok().and_then(|e| e.file_name().into_string().ok()))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
}

/// Why the root could not be prepared, or a host input opened. `Display` names the path.
#[derive(Debug)]
pub enum MountError {
    /// A path (or mount option) holds a NUL byte.
    Nul(String),
    /// An input's host root cannot be opened (the errno).
    HostRoot { root: String, errno: i32 },
    /// An input (`root/relative`, or its target in the jail) and what is wrong with it.
    Input { path: String, problem: InputProblem },
    /// A workspace's host directory (`root/relative`) is not a directory.
    NotADirectory { path: String },
    /// A bind source cannot be stat'ed.
    BindSource {
        source: String,
        error: std::io::Error,
    },
    /// A bind source's mount flags cannot be read (statvfs's errno).
    BindFlags { source: String, errno: i32 },
    /// /proc/self/mountinfo cannot be read to find the mounts under `dir`.
    Mountinfo { dir: String, error: std::io::Error },
}

/// What is wrong with a host input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputProblem {
    /// A symlink on the way (ELOOP from the beneath-open).
    SymlinkOnTheWay,
    /// The path leaves the host root (EXDEV).
    NotBeneathRoot,
    /// The open failed with this errno.
    Open(i32),
    /// fstat of the opened input failed with this errno.
    Fstat(i32),
    /// fstat of the input, while its steps are prepared, failed with this errno.
    Stat(i32),
    /// The input itself is a symlink.
    Symlink,
    /// Neither a regular file nor a directory.
    NotFileOrDir,
    /// An input op handed to the per-op preparation (a bug: `prepare` handles inputs).
    NotHere,
}

impl std::fmt::Display for InputProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputProblem::SymlinkOnTheWay => {
                f.write_str("a symlink is on the way (inputs are never reached through one)")
            }
            InputProblem::NotBeneathRoot => f.write_str("it is not beneath the host root"),
            InputProblem::Open(e) => write!(f, "{}", std::io::Error::from_raw_os_error(*e)),
            InputProblem::Fstat(e) => write!(f, "fstat: errno {e}"),
            InputProblem::Stat(e) => write!(f, "errno {e}"),
            InputProblem::Symlink => {
                f.write_str("it is a symlink (inputs are never reached through one)")
            }
            InputProblem::NotFileOrDir => {
                f.write_str("only a regular file or a directory can be an input")
            }
            InputProblem::NotHere => f.write_str("prepared by `prepare`, not here"),
        }
    }
}

impl std::fmt::Display for MountError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MountError::Nul(s) => write!(f, "path {s:?} contains a NUL byte"),
            MountError::HostRoot { root, errno } => write!(
                f,
                "host root {root}: {}",
                std::io::Error::from_raw_os_error(*errno)
            ),
            MountError::Input { path, problem } => write!(f, "input {path}: {problem}"),
            MountError::NotADirectory { path } => {
                write!(f, "host directory {path}: not a directory")
            }
            MountError::BindSource { source, error } => {
                write!(f, "bind source {source} is not usable: {error}")
            }
            MountError::BindFlags { source, errno } => write!(
                f,
                "cannot stat bind source {source}: {}",
                std::io::Error::from_raw_os_error(*errno)
            ),
            MountError::Mountinfo { dir, error } => write!(
                f,
                "cannot read /proc/self/mountinfo to find the mounts under {dir}: {error}"
            ),
        }
    }
}

impl std::error::Error for MountError {}

/// Open a host input (`run --input`): the root, then the path beneath it without following
/// any symlink. The returned fd pins what was checked: a symlink swapped in afterwards
/// changes nothing, because the bind goes through this fd.
pub fn open_input(root: &str, relative: &str) -> Result<OwnedFd, MountError> {
    let r = sys::open(&cstr(root)?, libc::O_PATH | libc::O_DIRECTORY, 0).map_err(|errno| {
        MountError::HostRoot {
            root: root.into(),
            errno,
        }
    })?;
    let input = |problem| MountError::Input {
        path: format!("{root}/{relative}"),
        problem,
    };
    let root_fd = sys::owned(r);
    if relative.is_empty() {
        return Ok(root_fd);
    }
    let fd = sys::open_beneath(root_fd.as_raw_fd(), &cstr(relative)?)
        .map(sys::owned)
        .map_err(|e| {
            input(match e {
                libc::ELOOP => InputProblem::SymlinkOnTheWay,
                libc::EXDEV => InputProblem::NotBeneathRoot,
                _ => InputProblem::Open(e),
            })
        })?;
    // The last component is opened without following it: a symlink there comes back as
    // the link itself, refused here like any other non-file.
    let mode = sys::fstat_mode(fd.as_raw_fd()).map_err(|e| input(InputProblem::Fstat(e)))?;
    match mode & libc::S_IFMT {
        libc::S_IFREG | libc::S_IFDIR => Ok(fd),
        libc::S_IFLNK => Err(input(InputProblem::Symlink)),
        _ => Err(input(InputProblem::NotFileOrDir)),
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
    /// Set mount attributes on `target` and every mount beneath it (mount_setattr with
    /// AT_RECURSIVE): how a recursive bind becomes read-only all the way down.
    SetAttrRecursive {
        target: CString,
        attr: u64,
    },
    /// Bind a host input through the fd `open_inputs` put in `input_fds[slot]`.
    BindInput {
        root: CString,
        relative: Option<CString>,
        target: CString,
        slot: usize,
    },
}

#[derive(Debug)]
pub struct PreparedRoot {
    pub staging: CString,
    pub root_tmpfs_data: CString,
    pub steps: Vec<Step>,
    /// Which plan op each step came from (for error reports).
    pub step_op: Vec<usize>,
    /// One slot per host input, filled by the child's `open_inputs` (allocated here: the
    /// child only stores into it).
    pub input_fds: Vec<AtomicI32>,
}

fn cstr(s: &str) -> Result<CString, MountError> {
    CString::new(s).map_err(|_| MountError::Nul(s.into()))
}

fn staged(path: &str) -> Result<CString, MountError> {
    cstr(&format!("{STAGING}{path}"))
}

/// Mount flags that the kernel locks on a mount seen from a less privileged user namespace;
/// a bind remount must carry them over or it fails with EPERM (bubblewrap does the same).
fn locked_flags(source: &str) -> Result<libc::c_ulong, MountError> {
    let c = cstr(source)?;
    let f = sys::statvfs_flags(&c).map_err(|errno| MountError::BindFlags {
        source: source.into(),
        errno,
    })?;
    Ok(flags_of(f))
}

/// statvfs flags as the mount flags a bind remount must repeat.
fn flags_of(f: libc::c_ulong) -> libc::c_ulong {
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
    out
}

/// Turn the plan's mount ops into prepared steps. Host state is read here (is the source a
/// file or a directory, its mount flags), never in the child. `late_inodes`: room in the
/// root tmpfs for files placed after the jail started (crate::plan::LateFiles).
pub fn prepare(
    ops: &[MountOp],
    root_tmpfs_bytes: u64,
    late_inodes: u64,
) -> Result<PreparedRoot, MountError> {
    let mut steps = Vec::new();
    let mut step_op = Vec::new();
    let mut input_fds = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let before = steps.len();
        match op {
            MountOp::BindInput {
                root,
                relative,
                target,
            }
            | MountOp::BindHostDir {
                root,
                relative,
                target,
            } => {
                // Both reach the host path through the checked fd; a workspace's host
                // directory is bound writable, an input read-only.
                let writable = matches!(op, MountOp::BindHostDir { .. });
                let fd = open_input(root, relative)?;
                let slot = input_fds.len();
                input_fds.push(AtomicI32::new(-1));
                steps.extend(input_steps(&fd, root, relative, target, slot, writable)?);
            }
            _ => steps.extend(op_steps(op)?),
        }
        step_op.extend(std::iter::repeat_n(i, steps.len() - before));
    }
    // One inode per step is more than the root needs (mount points, /etc, files).
    let inodes = (1024 + steps.len() as u64).saturating_add(late_inodes);
    Ok(PreparedRoot {
        staging: cstr(STAGING)?,
        root_tmpfs_data: cstr(&format!(
            "size={root_tmpfs_bytes},nr_inodes={inodes},mode=0755"
        ))?,
        steps,
        step_op,
        input_fds,
    })
}

/// A host input, opened here to learn its type and locked flags, opened again by the child
/// (`open_inputs`) and bound through that fd, then remounted read-only, nosuid, nodev,
/// noexec. A swap between the two opens can only turn a file into another file beneath the
/// same root (or fail the bind): neither open follows a symlink. `writable` (a workspace's
/// host directory): a directory only, remounted read-write, still nosuid, nodev, noexec.
fn input_steps(
    fd: &OwnedFd,
    root: &str,
    relative: &str,
    target: &str,
    slot: usize,
    writable: bool,
) -> Result<Vec<Step>, MountError> {
    let input = |problem| MountError::Input {
        path: target.into(),
        problem,
    };
    let mode = sys::fstat_mode(fd.as_raw_fd()).map_err(|e| input(InputProblem::Stat(e)))?;
    let tgt = staged(target)?;
    if writable && mode & libc::S_IFMT != libc::S_IFDIR {
        return Err(MountError::NotADirectory {
            path: format!("{root}/{relative}"),
        });
    }
    let make = if mode & libc::S_IFMT == libc::S_IFDIR {
        Step::Mkdir {
            path: tgt.clone(),
            mode: 0o755,
        }
    } else if mode & libc::S_IFMT == libc::S_IFREG {
        Step::Touch { path: tgt.clone() }
    } else {
        return Err(input(InputProblem::NotFileOrDir));
    };
    let locked = sys::fstatvfs_flags(fd.as_raw_fd())
        .map(flags_of)
        .unwrap_or(0);
    let read_only = if writable { 0 } else { libc::MS_RDONLY };
    let remount = libc::MS_BIND | libc::MS_REMOUNT | read_only | NOSUID_NODEV_NOEXEC | locked;
    Ok(vec![
        make,
        Step::BindInput {
            root: cstr(root)?,
            relative: (!relative.is_empty()).then(|| cstr(relative)).transpose()?,
            target: tgt.clone(),
            slot,
        },
        mount(None, tgt, None, remount, None)?,
    ])
}

/// The child's steps for one plan op.
fn op_steps(op: &MountOp) -> Result<Vec<Step>, MountError> {
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
            contents: contents.clone(),
            mode: *mode,
        }],
        MountOp::BindReadOnly { source, target } => bind_steps(source, target, READ_ONLY)?,
        MountOp::BindDevice { source, target } => bind_steps(source, target, DEVICE)?,
        MountOp::BindInput { target, .. } | MountOp::BindHostDir { target, .. } => {
            return Err(MountError::Input {
                path: target.clone(),
                problem: InputProblem::NotHere,
            })
        }
        MountOp::Proc { target } => {
            let tgt = staged(target)?;
            vec![
                Step::Mkdir {
                    path: tgt.clone(),
                    mode: 0o555,
                },
                // Read-only: nothing in a jail writes /proc, and a read-only mount refuses
                // every open for writing, /proc/<pid>/mem included (another process of the
                // jail could otherwise patch a session runner where landlock is absent).
                mount(
                    Some("proc"),
                    tgt,
                    Some("proc"),
                    NOSUID_NODEV_NOEXEC | libc::MS_RDONLY,
                    None,
                )?,
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
) -> Result<Step, MountError> {
    Ok(Step::Mount {
        source: source.map(cstr).transpose()?,
        target,
        fstype: fstype.map(cstr).transpose()?,
        flags,
        data: data.map(cstr).transpose()?,
    })
}

/// What a bind of a host path becomes: the mount flags (for a remount) and the
/// `MOUNT_ATTR_*` bits (for mount_setattr) of the same protection. nosuid always.
#[derive(Clone, Copy)]
struct BindKind {
    flags: libc::c_ulong,
    attr: u64,
}

/// The policy's host paths: read-only, nosuid, nodev.
const READ_ONLY: BindKind = BindKind {
    flags: libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV,
    attr: sys::MOUNT_ATTR_RDONLY | sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NODEV,
};
/// /dev/null and friends: writable device nodes, so never nodev; nosuid, noexec.
const DEVICE: BindKind = BindKind {
    flags: libc::MS_NOSUID | libc::MS_NOEXEC,
    attr: sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NOEXEC,
};

/// Whether this kernel (and any container seccomp profile above us) has mount_setattr:
/// asked once per process.
fn setattr_available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    // `AGENTJAIL_FAULT=no_mount_setattr` (fault-injection builds only) takes the walk that
    // kernels before 5.12 get, so the tests run it here too.
    let forced_off = super::fault::fault_name().as_deref() == Some("no_mount_setattr");
    *AVAILABLE.get_or_init(|| !forced_off && sys::mount_setattr_available())
}

/// A host path bound at the same place, recursively, and then made `kind` all the way down.
///
/// Recursive, because inside a user namespace the kernel locks the mounts beneath a
/// directory together with it: a plain bind of a tree that has mounts beneath it (a GPU
/// node's `/usr/local/nvidia`, a pod's `/usr/lib/...`) is refused with EINVAL, since it
/// would reveal what those mounts cover. A recursive bind brings the submounts along, and
/// each keeps its own flags, so each must be made read-only too: one mount_setattr with
/// AT_RECURSIVE where the kernel has it (atomic: all of them or none), otherwise a remount
/// of the bind and of every submount the host shows beneath the source, each repeating
/// the flags the kernel locks on it. Never a submount left writable or suid.
fn bind_steps(source: &str, target: &str, kind: BindKind) -> Result<Vec<Step>, MountError> {
    let meta = std::fs::metadata(source).map_err(|error| MountError::BindSource {
        source: source.into(),
        error,
    })?;
    let tgt = staged(target)?;
    let make = if meta.is_dir() {
        Step::Mkdir {
            path: tgt.clone(),
            mode: 0o755,
        }
    } else {
        Step::Touch { path: tgt.clone() }
    };
    let mut steps = vec![
        make,
        mount(
            Some(source),
            tgt.clone(),
            None,
            libc::MS_BIND | libc::MS_REC,
            None,
        )?,
    ];
    if setattr_available() {
        steps.push(Step::SetAttrRecursive {
            target: tgt,
            attr: kind.attr,
        });
        return Ok(steps);
    }
    let mut under = vec![source.to_string()];
    if meta.is_dir() {
        under.extend(submounts(source)?);
    }
    for host in under {
        let inside = format!("{target}{}", &host[source.len()..]);
        let remount = libc::MS_BIND | libc::MS_REMOUNT | kind.flags | locked_flags(&host)?;
        steps.push(mount(None, staged(&inside)?, None, remount, None)?);
    }
    Ok(steps)
}

/// `MOUNT_ATTR_*` bits as mount options, for error messages.
fn attr_names(attr: u64) -> String {
    [
        (sys::MOUNT_ATTR_RDONLY, "ro"),
        (sys::MOUNT_ATTR_NOSUID, "nosuid"),
        (sys::MOUNT_ATTR_NODEV, "nodev"),
        (sys::MOUNT_ATTR_NOEXEC, "noexec"),
    ]
    .iter()
    .filter(|(bit, _)| attr & bit != 0)
    .map(|(_, name)| *name)
    .collect::<Vec<_>>()
    .join(",")
}

/// The mount points strictly beneath `dir` in this process's mount namespace, parents
/// before children (mountinfo's order), for kernels without mount_setattr.
fn submounts(dir: &str) -> Result<Vec<String>, MountError> {
    let info =
        std::fs::read_to_string("/proc/self/mountinfo").map_err(|error| MountError::Mountinfo {
            dir: dir.into(),
            error,
        })?;
    Ok(mount_points_under(&info, dir))
}

/// From mountinfo text: the mount points strictly beneath `dir`, once each, in order.
fn mount_points_under(info: &str, dir: &str) -> Vec<String> {
    let prefix = format!("{}/", dir.trim_end_matches('/'));
    let mut out: Vec<String> = Vec::new();
    for line in info.lines() {
        let Some(field) = line.split(' ').nth(4) else {
            continue;
        };
        let point = unescape_mountinfo(field);
        if point.starts_with(&prefix) && !out.contains(&point) {
            out.push(point);
        }
    }
    out
}

/// mountinfo writes space, tab, newline and backslash in paths as `\ooo` (octal).
fn unescape_mountinfo(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A file is hidden behind the host's /dev/null (reads empty, writes vanish); a directory
/// behind an empty read-only tmpfs. Decided in the parent from the host's procfs, which has
/// the same shape as the jail's; a path the host lacks needs no mask.
fn mask_steps(path: &str) -> Result<Vec<Step>, MountError> {
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
fn read_only_steps(path: &str) -> Result<Vec<Step>, MountError> {
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

impl PreparedRoot {
    /// Whether step `i` mounts a fresh procfs.
    pub fn is_proc_mount(&self, i: usize) -> bool {
        matches!(self.steps.get(i), Some(Step::Mount { fstype: Some(t), .. }) if t.as_c_str() == c"proc")
    }

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
            Some(Step::SetAttrRecursive { target, attr }) => format!(
                "set {} on {} and every mount beneath it (mount_setattr)",
                attr_names(*attr),
                s(target)
            ),
            Some(Step::BindInput {
                root,
                relative,
                target,
                ..
            }) => format!(
                "bind input {}/{} on {}",
                root.to_string_lossy(),
                relative
                    .as_ref()
                    .map(|c| c.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                s(target)
            ),
            None => format!("step {i}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn submounts_are_found_beneath_the_bind_and_unescaped() {
        let info = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw
40 22 0:50 / /usr/local rw,relatime - tmpfs tmpfs rw
41 40 0:51 / /usr/local/nvidia ro,relatime - tmpfs tmpfs ro
42 22 0:52 / /usr/lib/x86_64-linux-gnu/with\\040space rw - tmpfs tmpfs rw
43 22 0:53 / /usrx rw - tmpfs tmpfs rw
44 22 0:54 / /usr rw - tmpfs tmpfs rw
45 40 0:51 / /usr/local/nvidia ro,relatime - tmpfs tmpfs ro
";
        assert_eq!(
            mount_points_under(info, "/usr"),
            [
                "/usr/local",
                "/usr/local/nvidia",
                "/usr/lib/x86_64-linux-gnu/with space"
            ]
        );
        assert_eq!(
            mount_points_under(info, "/usr/local/"),
            ["/usr/local/nvidia"]
        );
        assert!(mount_points_under(info, "/lib").is_empty());
    }

    #[test]
    fn a_policy_bind_is_recursive_then_read_only_all_the_way_down() {
        let steps = bind_steps("/usr", "/usr", READ_ONLY).unwrap();
        assert!(
            matches!(&steps[1], Step::Mount { flags, .. } if *flags == libc::MS_BIND | libc::MS_REC)
        );
        if setattr_available() {
            assert!(matches!(&steps[2], Step::SetAttrRecursive { attr, .. }
                if *attr == sys::MOUNT_ATTR_RDONLY | sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NODEV));
            assert_eq!(steps.len(), 3);
        } else {
            // The walk: one remount per mount, each read-only, nosuid, nodev.
            assert!(steps[2..]
                .iter()
                .all(|s| matches!(s, Step::Mount { flags, .. }
                if flags & (libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_REMOUNT)
                    == libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_REMOUNT)));
        }
    }
}
