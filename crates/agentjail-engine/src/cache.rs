//! The result cache (seed 001 §10.6): a record stored under a key that covers every input
//! that decides the outcome, returned again instead of running the same job twice.
//!
//! - The key is sha256 over agentjail's version, the policy's sha256, the environment's
//!   digest (interpreter and what it can import), and the action itself in canonical form
//!   (every field but `id`: language, entrypoint, code, input payload, output schema, policy
//!   hints, input files). A different schema, hint or payload is a different key, so a job
//!   cannot be answered with another job's record.
//! - Only outcomes that depend on the code alone are stored: `success`,
//!   `code_runtime_error:*`, `invalid_code_output:*`, `code_forbidden_syscall:*`. Never a
//!   timeout, a resource limit, an interrupt, a setup failure or a stop before the jail.
//! - Entries are written only by agentjail, never by a job (the directory is on the host, and
//!   no jail sees it): a temp file created `O_EXCL|O_NOFOLLOW` mode 0600 in the directory,
//!   fsync'd, renamed into place, every step under the directory's fd. The directory must be
//!   ours and not group- or world-writable, and reached through directories no other user
//!   can change (crate::hostpath), or the cache is refused.
//! - A hit is a new record of the request that asked (its own run_id, caller, action id,
//!   timing; `pipeline::hit_record`) citing the stored outcome, with `cache: {"hit": true, "key",
//!   "stored_at", "original_run_id"}`. A corrupt, foreign or expired entry is ignored with a
//!   warning on stderr and the job runs.

use crate::verdict::StopReason;
use agentjail_jail::os;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::ffi::CString;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Largest entry read back (a record with outputs at their caps fits easily).
const MAX_ENTRY_BYTES: u64 = 256 * 1024 * 1024;

/// A stored entry found for a key: the stored run's record as it was written.
pub struct Hit {
    pub key: String,
    pub stored_at: u64,
    pub record: Value,
}

pub struct Cache {
    /// The directory as given (for messages).
    dir: PathBuf,
    /// The directory itself, opened once: entries are read, written and renamed under this
    /// fd, so a path swapped after `open` is never followed.
    fd: OwnedFd,
    ttl: Duration,
}

/// Why the cache directory could not be opened or an entry stored: the directory or entry,
/// the errno where a call failed. Display is the message agentjail prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheError {
    /// A directory on the way was refused (crate::hostpath).
    HostPath(crate::hostpath::HostPathError),
    /// `mkdir` failed.
    Create { dir: PathBuf, errno: i32 },
    /// It is a symlink or not a directory.
    NotDir { dir: PathBuf },
    /// It could not be opened: `detail` is the I/O error's text.
    Open {
        dir: PathBuf,
        errno: Option<i32>,
        detail: String,
    },
    /// It could not be stat'ed.
    Stat { dir: PathBuf, errno: i32 },
    /// Another user owns it, or group or others may write it.
    Unsafe { dir: PathBuf, euid: u32, mode: u32 },
    /// An entry could not be stored: `detail` is the I/O error's text.
    Store {
        entry: PathBuf,
        errno: Option<i32>,
        detail: String,
    },
    /// An internal failure with no path to name (serialising, a NUL in a name).
    Internal(String),
}

impl std::fmt::Display for CacheError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CacheError::HostPath(e) => e.fmt(f),
            CacheError::Create { dir, errno } => write!(
                f,
                "cannot create the cache directory {}: {}",
                dir.display(),
                std::io::Error::from_raw_os_error(*errno)
            ),
            CacheError::NotDir { dir } => write!(
                f,
                "cache {} is not a directory (symlinks are refused)",
                dir.display()
            ),
            CacheError::Open { dir, detail, .. } => {
                write!(f, "cache directory {}: {detail}", dir.display())
            }
            CacheError::Stat { dir, errno } => {
                write!(f, "cache directory {}: errno {errno}", dir.display())
            }
            CacheError::Unsafe { dir, euid, mode } => write!(
                f,
                "cache directory {} must be owned by uid {euid} and not group- or world-writable (mode {mode:o}): anyone who can write it could plant records",
                dir.display()
            ),
            CacheError::Store { entry, detail, .. } => write!(
                f,
                "cannot store the cache entry {}: {detail}",
                entry.display()
            ),
            CacheError::Internal(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CacheError {}

impl From<crate::hostpath::HostPathError> for CacheError {
    fn from(e: crate::hostpath::HostPathError) -> Self {
        CacheError::HostPath(e)
    }
}

impl CacheError {
    /// The errno of the call that failed, where one did.
    pub fn errno(&self) -> Option<i32> {
        match self {
            CacheError::HostPath(e) => e.errno(),
            CacheError::Create { errno, .. } | CacheError::Stat { errno, .. } => Some(*errno),
            CacheError::Open { errno, .. } | CacheError::Store { errno, .. } => *errno,
            _ => None,
        }
    }
}

impl Cache {
    /// Open (creating it 0700 if missing) a cache directory that only we can write, reached
    /// without following anything another user can swap (crate::hostpath).
    pub fn open(dir: &Path, ttl: Duration) -> Result<Cache, CacheError> {
        let d = || dir.to_path_buf();
        let (parent, name) = crate::hostpath::parent_and_name(dir, "--cache")?;
        match os::dir::mkdir_at(&parent, &name, 0o700) {
            Ok(()) | Err(libc::EEXIST) => {}
            Err(e) => return Err(CacheError::Create { dir: d(), errno: e }),
        }
        let flags = libc::O_RDONLY | libc::O_DIRECTORY;
        let fd = crate::hostpath::openat(&parent, &name, flags, 0).map_err(|e| {
            match e.raw_os_error() {
                Some(libc::ELOOP | libc::ENOTDIR) => CacheError::NotDir { dir: d() },
                errno => CacheError::Open {
                    dir: d(),
                    errno,
                    detail: e.to_string(),
                },
            }
        })?;
        let st = os::dir::stat(&fd).map_err(|errno| CacheError::Stat { dir: d(), errno })?;
        let mode = st.mode & 0o7777;
        if st.uid != os::process::geteuid() || mode & 0o022 != 0 {
            return Err(CacheError::Unsafe {
                dir: d(),
                euid: os::process::geteuid(),
                mode,
            });
        }
        Ok(Cache {
            dir: dir.to_path_buf(),
            fd,
            ttl,
        })
    }

    /// The key of a job: see the module documentation for what it covers.
    pub fn key(policy_sha256: &str, env_digest: &str, action: &Value) -> String {
        let mut canonical = action.clone();
        if let Some(o) = canonical.as_object_mut() {
            o.remove("id");
        }
        let mut h = Sha256::new();
        for part in [
            env!("CARGO_PKG_VERSION"),
            env!("AGENTJAIL_GIT_COMMIT"),
            policy_sha256,
            env_digest,
        ] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        // serde_json's map is sorted by key, so this text is canonical for the value.
        h.update(serde_json::to_vec(&canonical).unwrap_or_default());
        format!("{:x}", h.finalize())
    }

    /// Whether a record with this stop reason may be stored.
    pub fn cacheable(reason: &StopReason) -> bool {
        matches!(
            reason,
            StopReason::Success
                | StopReason::CodeRuntimeError(_)
                | StopReason::InvalidCodeOutput(_)
                | StopReason::CodeForbiddenSyscall(_)
                | StopReason::CompileError
        )
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(entry_name(key))
    }

    /// A second handle on the same directory (its fd duplicated): `run` keeps compile
    /// outcomes there too (crate::pipeline::compile_cache). None when the fd cannot be.
    pub fn try_clone(&self) -> Option<Cache> {
        Some(Cache {
            dir: self.dir.clone(),
            fd: self.fd.try_clone().ok()?,
            ttl: self.ttl,
        })
    }

    /// The stored record for `key`; None on a miss or a bad entry.
    pub fn get(&self, key: &str) -> Option<Hit> {
        let path = self.path(key);
        let warn = |why: &str| {
            eprintln!("agentjail: cache: ignoring {}: {why}", path.display());
            None
        };
        let name = CString::new(entry_name(key)).ok()?;
        // O_NONBLOCK: a FIFO planted under the key's name must not block the open (it is
        // then refused as not a regular file); a regular file ignores the flag. O_NOFOLLOW
        // (hostpath::openat): a symlink is refused.
        let file =
            match crate::hostpath::openat(&self.fd, &name, libc::O_RDONLY | libc::O_NONBLOCK, 0) {
                Ok(f) => std::fs::File::from(f),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
                Err(e) => return warn(&e.to_string()),
            };
        let meta = file.metadata().ok()?;
        if !meta.is_file() || meta.uid() != os::process::geteuid() || meta.mode() & 0o077 != 0 {
            return warn("not a private regular file of ours");
        }
        let mut bytes = Vec::new();
        if file.take(MAX_ENTRY_BYTES).read_to_end(&mut bytes).is_err() {
            return warn("unreadable");
        }
        let limits = agentjail_json::ReadLimits {
            max_depth: 128,
            max_bytes: MAX_ENTRY_BYTES as usize,
            ..agentjail_json::ReadLimits::default()
        };
        let Ok(entry) = agentjail_json::parse_strict(&bytes, &limits) else {
            return warn("corrupt");
        };
        let stored_at = entry.get("stored_at").and_then(Value::as_u64);
        let record = entry.get("record").filter(|r| r.is_object());
        let (Some(stored_at), Some(record), Some(true)) =
            (stored_at, record, entry.get("key").map(|k| k == key))
        else {
            return warn("corrupt");
        };
        if now_secs().saturating_sub(stored_at) > self.ttl.as_secs() {
            let _ = os::dir::unlink_at(&self.fd, &name, 0);
            return None;
        }
        Some(Hit {
            key: key.to_string(),
            stored_at,
            record: record.clone(),
        })
    }

    /// Store `record` under `key`: a private temp file, fsync, atomic rename, all under the
    /// directory's fd.
    pub fn put(&self, key: &str, record: &Value) -> Result<(), CacheError> {
        let entry = json!({"key": key, "stored_at": now_secs(), "record": record});
        let bytes = serde_json::to_vec(&entry).map_err(|e| CacheError::Internal(e.to_string()))?;
        let tmp = CString::new(format!(".{key}.{}.tmp", agentjail_jail::ids::random_hex(8)))
            .map_err(|e| CacheError::Internal(e.to_string()))?;
        let name =
            CString::new(entry_name(key)).map_err(|e| CacheError::Internal(e.to_string()))?;
        let dir = &self.fd;
        let write = || -> std::io::Result<()> {
            let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
            let mut f = std::fs::File::from(crate::hostpath::openat(&self.fd, &tmp, flags, 0o600)?);
            f.write_all(&bytes)?;
            f.sync_data()?;
            os::dir::rename_at(dir, &tmp, dir, &name).map_err(std::io::Error::from_raw_os_error)
        };
        write().map_err(|e| {
            let _ = os::dir::unlink_at(dir, &tmp, 0);
            CacheError::Store {
                entry: self.path(key),
                errno: e.raw_os_error(),
                detail: e.to_string(),
            }
        })
    }
}

fn entry_name(key: &str) -> String {
    format!("{key}.json")
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
