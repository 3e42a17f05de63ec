//! Host paths agentjail creates or writes for its operator (the serve socket, the cache
//! directory, the audit log, the artifacts directory), reached without following anything
//! another user can swap.
//!
//! The rule, for every directory on the way to such a path (resolved once, then walked from
//! `/` one component at a time with `O_NOFOLLOW`, each checked through its own fd): it
//! belongs to root or to us, and if its group or others may write it, it is sticky (as
//! `/tmp` is), so nobody else can rename, replace or remove what we put there. A directory
//! that breaks the rule is refused with a message naming it. Past the walk every operation
//! is relative to the directory's fd (`openat`, `mkdirat`, `renameat`, `unlinkat`), so a
//! symlink swapped in afterwards, anywhere on the path, is never followed.

use agentjail_jail::os;
use std::ffi::{CStr, CString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Whether a directory with this owner and mode is safe to create things in: ours or
/// root's, and not writable by group or others unless sticky.
pub fn dir_is_safe(st: &os::dir::FileStat) -> bool {
    let owner = st.uid == 0 || st.uid == os::process::geteuid();
    let shared = st.mode & 0o022 != 0;
    owner && (!shared || st.mode & libc::S_ISVTX != 0)
}

/// Why a host path was refused: the flag it came from (`what`), the directory or path, the
/// errno where a call failed, and (through [`HostPathError::hint`]) what to do. Display is
/// the message agentjail prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPathError {
    /// The path could not be resolved (`realpath`): `detail` is the I/O error's text.
    Resolve {
        what: String,
        path: PathBuf,
        errno: Option<i32>,
        detail: String,
    },
    /// `/` itself could not be opened.
    OpenRoot { what: String, errno: i32 },
    /// A directory on the way could not be opened without following a symlink.
    Open {
        what: String,
        path: PathBuf,
        errno: i32,
    },
    /// A directory on the way could not be stat'ed.
    Stat {
        what: String,
        path: PathBuf,
        errno: i32,
    },
    /// A directory on the way can be changed by another user.
    Unsafe {
        what: String,
        path: PathBuf,
        uid: u32,
        mode: u32,
        euid: u32,
    },
    /// The path holds a NUL byte.
    Nul { what: String, path: PathBuf },
    /// The path does not end in a file name (`/`, `..`).
    NoFileName { what: String, path: PathBuf },
}

impl HostPathError {
    /// The errno of the call that failed, where one did.
    pub fn errno(&self) -> Option<i32> {
        match self {
            HostPathError::Resolve { errno, .. } => *errno,
            HostPathError::OpenRoot { errno, .. }
            | HostPathError::Open { errno, .. }
            | HostPathError::Stat { errno, .. } => Some(*errno),
            _ => None,
        }
    }

    /// What the operator can do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            HostPathError::Unsafe { .. } => "choose another path or fix its owner or mode",
            HostPathError::Nul { .. } | HostPathError::NoFileName { .. } => {
                "give a path that ends in a plain file name"
            }
            _ => "check the path and its permissions",
        }
    }
}

impl std::fmt::Display for HostPathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostPathError::Resolve {
                what, path, detail, ..
            } => write!(f, "{what}: {}: {detail}", path.display()),
            HostPathError::OpenRoot { what, errno } => {
                write!(f, "{what}: cannot open /: errno {errno}")
            }
            HostPathError::Open { what, path, errno } => write!(
                f,
                "{what}: {} changed while it was opened, or cannot be opened: {}",
                path.display(),
                std::io::Error::from_raw_os_error(*errno)
            ),
            HostPathError::Stat { what, path, errno } => {
                write!(f, "{what}: {}: errno {errno}", path.display())
            }
            HostPathError::Unsafe {
                what,
                path,
                uid,
                mode,
                euid,
            } => write!(
                f,
                "{what}: {} (uid {uid}, mode {mode:o}) can be changed by another user: a \
                 directory on the way must belong to root or to uid {euid} and, if group or \
                 others may write it, be sticky (like /tmp); {}",
                path.display(),
                self.hint()
            ),
            HostPathError::Nul { what, path } => write!(f, "{what}: NUL in {}", path.display()),
            HostPathError::NoFileName { what, path } => {
                write!(f, "{what}: {} does not end in a file name", path.display())
            }
        }
    }
}

impl std::error::Error for HostPathError {}

/// The directory `dir` (which must exist), walked from `/` under the rule above; an
/// `O_PATH` fd of it. `what` names the flag in errors.
pub fn open_dir(dir: &Path, what: &str) -> Result<OwnedFd, HostPathError> {
    let real = std::fs::canonicalize(dir).map_err(|e| HostPathError::Resolve {
        what: what.to_string(),
        path: dir.to_path_buf(),
        errno: e.raw_os_error(),
        detail: e.to_string(),
    })?;
    let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;
    let mut fd = os::dir::open(c"/", flags, 0).map_err(|errno| HostPathError::OpenRoot {
        what: what.to_string(),
        errno,
    })?;
    let mut walked = PathBuf::from("/");
    check_dir(&fd, &walked, what)?;
    for c in real.components() {
        let Component::Normal(name) = c else { continue };
        walked.push(name);
        let cname = CString::new(name.as_bytes()).map_err(|_| HostPathError::Nul {
            what: what.to_string(),
            path: dir.to_path_buf(),
        })?;
        fd = os::dir::open_at(&fd, &cname, flags, 0).map_err(|errno| HostPathError::Open {
            what: what.to_string(),
            path: walked.clone(),
            errno,
        })?;
        check_dir(&fd, &walked, what)?;
    }
    Ok(fd)
}

fn check_dir(fd: &OwnedFd, path: &Path, what: &str) -> Result<(), HostPathError> {
    let st = os::dir::stat(fd).map_err(|errno| HostPathError::Stat {
        what: what.to_string(),
        path: path.to_path_buf(),
        errno,
    })?;
    if dir_is_safe(&st) {
        return Ok(());
    }
    Err(HostPathError::Unsafe {
        what: what.to_string(),
        path: path.to_path_buf(),
        uid: st.uid,
        mode: st.mode & 0o7777,
        euid: os::process::geteuid(),
    })
}

/// The parent directory of `path` (walked and checked by [`open_dir`]) and the last
/// component's name, for `*at` calls. The name must be a plain file name.
pub fn parent_and_name(path: &Path, what: &str) -> Result<(OwnedFd, CString), HostPathError> {
    let name = match path.components().next_back() {
        Some(Component::Normal(n)) => n,
        _ => {
            return Err(HostPathError::NoFileName {
                what: what.to_string(),
                path: path.to_path_buf(),
            })
        }
    };
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let fd = open_dir(parent, what)?;
    let name = CString::new(name.as_bytes()).map_err(|_| HostPathError::Nul {
        what: what.to_string(),
        path: path.to_path_buf(),
    })?;
    Ok((fd, name))
}

/// Open `name` in `dir` with `flags` (always `O_NOFOLLOW` and close-on-exec).
pub fn openat(
    dir: &OwnedFd,
    name: &CStr,
    flags: libc::c_int,
    mode: u32,
) -> std::io::Result<OwnedFd> {
    os::dir::open_at(dir, name, flags | libc::O_NOFOLLOW, mode)
        .map_err(std::io::Error::from_raw_os_error)
}

/// Why an operator's file (a brokered credential, a CA bundle) was refused: the flag or
/// key it came from (`what`), its path and the problem. Display is the message agentjail
/// prints, and never holds the file's content.
#[derive(Debug)]
pub struct OperatorFileError {
    pub what: String,
    pub path: PathBuf,
    pub problem: FileProblem,
}

/// What is wrong with an operator's file.
#[derive(Debug)]
pub enum FileProblem {
    /// The path is relative.
    NotAbsolute,
    /// A directory on the way breaks [`open_dir`]'s rule, or the path has no file name.
    Dir(Box<HostPathError>),
    /// A device, FIFO, socket or directory.
    NotRegular,
    /// The name is a symbolic link.
    Symlink,
    /// The open failed for this uid.
    Open { uid: u32, error: std::io::Error },
    /// fstat of the opened file failed.
    Stat(std::io::Error),
    /// It belongs to `uid`, neither root nor `euid`.
    Owner { uid: u32, euid: u32 },
    /// Group or others may write it (`mode`, permission bits).
    Writable { mode: u32 },
    /// A secret's file with more than one name.
    Links { nlink: u64 },
    /// Reading it failed.
    Read(std::io::Error),
    /// Larger than `max` bytes.
    TooLarge { max: u64 },
}

impl std::fmt::Display for OperatorFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let FileProblem::Dir(e) = &self.problem {
            return write!(f, "{e}");
        }
        write!(f, "{}: {}", self.what, self.path.display())?;
        match &self.problem {
            FileProblem::Dir(_) => Ok(()),
            FileProblem::NotAbsolute => f.write_str(" is not an absolute path"),
            FileProblem::NotRegular => f.write_str(" is not a regular file"),
            FileProblem::Symlink => f.write_str(" is a symbolic link; name the file itself"),
            FileProblem::Open { uid, error } => {
                write!(f, " cannot be opened by uid {uid}: {error}")
            }
            FileProblem::Stat(error) => write!(f, ": {error}"),
            FileProblem::Owner { uid, euid } => write!(
                f,
                " belongs to uid {uid}; it must belong to root or to the server's uid {euid}"
            ),
            FileProblem::Writable { mode } => write!(
                f,
                " is writable by group or others (mode {mode:o}); chmod go-w it"
            ),
            FileProblem::Links { nlink } => write!(
                f,
                " has {nlink} names (hard links); a secret's file must have one"
            ),
            FileProblem::Read(error) => write!(f, " cannot be read: {error}"),
            FileProblem::TooLarge { max } => write!(f, " is larger than {max} bytes"),
        }
    }
}

impl std::error::Error for OperatorFileError {}

/// Read a file the operator keeps for agentjail (a brokered credential, a CA bundle):
/// `path` must be absolute; the directories on the way pass [`open_dir`]'s rule; the file
/// itself is opened without following a symlink and must be a regular file that belongs to
/// root or to us, that neither group nor others may write, and of at most `max` bytes.
/// `what` names it in errors; an error's text never holds the file's content.
pub fn read_operator_file(path: &Path, what: &str, max: u64) -> Result<Vec<u8>, OperatorFileError> {
    read_checked(path, what, max, false)
}

/// [`read_operator_file`] for a secret (a brokered credential's value): the file must also
/// have no other name. A hard link keeps its target's owner and mode, so in a directory
/// others may write (sticky `/tmp`) anyone could plant, under the name the policy gives, a
/// link to a file of root's they cannot read themselves (where `fs.protected_hardlinks`
/// is 0), and have its content sent as the key.
pub fn read_operator_secret(
    path: &Path,
    what: &str,
    max: u64,
) -> Result<Vec<u8>, OperatorFileError> {
    read_checked(path, what, max, true)
}

fn read_checked(
    path: &Path,
    what: &str,
    max: u64,
    secret: bool,
) -> Result<Vec<u8>, OperatorFileError> {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let refuse = |problem| OperatorFileError {
        what: what.to_string(),
        path: path.to_path_buf(),
        problem,
    };
    if !path.is_absolute() {
        return Err(refuse(FileProblem::NotAbsolute));
    }
    let (dir, name) =
        parent_and_name(path, what).map_err(|e| refuse(FileProblem::Dir(Box::new(e))))?;
    // Not even opened unless it is a regular file (or a symlink, refused by the open):
    // opening a device can act (a tape rewinds, a watchdog arms). The fstat below checks
    // what was opened, whatever replaced the name meanwhile.
    if let Ok(st) = os::dir::stat_at(&dir, &name) {
        let kind = st.mode & libc::S_IFMT;
        if kind != libc::S_IFREG && kind != libc::S_IFLNK {
            return Err(refuse(FileProblem::NotRegular));
        }
    }
    let flags = libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY;
    let fd = openat(&dir, &name, flags, 0).map_err(|error| match error.raw_os_error() {
        Some(libc::ELOOP) => refuse(FileProblem::Symlink),
        _ => refuse(FileProblem::Open {
            uid: os::process::geteuid(),
            error,
        }),
    })?;
    let file = std::fs::File::from(fd);
    let md = file.metadata().map_err(|e| refuse(FileProblem::Stat(e)))?;
    let euid = os::process::geteuid();
    if !md.file_type().is_file() {
        return Err(refuse(FileProblem::NotRegular));
    }
    if md.uid() != 0 && md.uid() != euid {
        return Err(refuse(FileProblem::Owner {
            uid: md.uid(),
            euid,
        }));
    }
    if md.mode() & 0o022 != 0 {
        return Err(refuse(FileProblem::Writable {
            mode: md.mode() & 0o7777,
        }));
    }
    if secret && md.nlink() != 1 {
        return Err(refuse(FileProblem::Links { nlink: md.nlink() }));
    }
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refuse(FileProblem::Read(e)))?;
    if bytes.len() as u64 > max {
        return Err(refuse(FileProblem::TooLarge { max }));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_file_error_text() {
        let e = read_operator_file(Path::new("rel/ca.pem"), "ca_file", 9).unwrap_err();
        assert_eq!(e.to_string(), "ca_file: rel/ca.pem is not an absolute path");
        let e = OperatorFileError {
            what: "ca_file".into(),
            path: "/etc/ca.pem".into(),
            problem: FileProblem::Writable { mode: 0o666 },
        };
        assert_eq!(
            e.to_string(),
            "ca_file: /etc/ca.pem is writable by group or others (mode 666); chmod go-w it"
        );
    }

    #[test]
    fn only_our_or_roots_directories_that_others_cannot_change_are_safe() {
        let me = os::process::geteuid();
        let st = |uid, mode| os::dir::FileStat {
            mode: libc::S_IFDIR | mode,
            uid,
            gid: 0,
            nlink: 2,
            dev: 0,
            ino: 0,
            size: 0,
        };
        assert!(dir_is_safe(&st(0, 0o755)));
        assert!(dir_is_safe(&st(me, 0o700)));
        assert!(dir_is_safe(&st(0, 0o1777)));
        assert!(!dir_is_safe(&st(0, 0o777)));
        assert!(!dir_is_safe(&st(0, 0o775)));
        assert!(!dir_is_safe(&st(me.wrapping_add(12345), 0o755)));
        assert!(!dir_is_safe(&st(me.wrapping_add(12345), 0o1777)));
    }

    #[test]
    fn errors_carry_the_path_and_errno_and_say_what_to_do() {
        let e = HostPathError::Unsafe {
            what: "--cache".into(),
            path: "/srv/shared".into(),
            uid: 1000,
            mode: 0o777,
            euid: 0,
        };
        assert_eq!(
            e.to_string(),
            "--cache: /srv/shared (uid 1000, mode 777) can be changed by another user: a \
             directory on the way must belong to root or to uid 0 and, if group or others may \
             write it, be sticky (like /tmp); choose another path or fix its owner or mode"
        );
        assert_eq!(e.errno(), None);
        let open = HostPathError::Open {
            what: "--socket".into(),
            path: "/run/x".into(),
            errno: libc::ELOOP,
        };
        assert_eq!(open.errno(), Some(libc::ELOOP));
        assert!(open
            .to_string()
            .starts_with("--socket: /run/x changed while it was opened, or cannot be opened: "));
    }
}
