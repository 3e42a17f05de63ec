//! Artifacts: the files a program leaves in its working directory /app/out, collected after
//! every process of its jail is gone (seed 001 §5, §6.3, §10.5).
//!
//! /app/out is a tmpfs of the policy's `artifacts.max_total_bytes` and a bounded number of
//! inodes. agentjail holds an fd of it from the moment the jail starts (opened beneath the
//! jail's root through /proc/<init>/root, before any job code runs), so the files stay
//! readable after the jail's mount namespace is gone. The collector walks it from that fd:
//!
//! - it never follows a symlink (`symlink`), never opens a FIFO, device or socket
//!   (`not_regular`), and skips a file with more than one link (`hardlink`);
//! - it checks a file's size before reading and then reads at most the cap plus one byte
//!   (`too_large` past `max_file_bytes`, never read); past `max_count` files or
//!   `max_total_bytes` in all, the rest is `over_budget` (and so is anything deeper than 16
//!   directories or past 10 000 entries: the walk itself is bounded);
//! - a name that is not printable UTF-8 (newlines, ANSI escapes, bidi overrides, invalid
//!   UTF-8) is `bad_name`, reported escaped, never read;
//! - the media type is sniffed from the content, never taken from the name.
//!
//! In a session the interpreter is alive between calls: artifacts are collected when a call
//! reports done, and only files new or changed since the previous call are reported. A file
//! a background thread is still writing may then be read mid-write (within the same caps).

use crate::policy::ArtifactsPolicy;
use agentjail_jail::os;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// Deepest directory walked, and most entries looked at, per collection.
const MAX_DEPTH: usize = 16;
const MAX_ENTRIES: usize = 10_000;
/// Most skipped entries listed; the rest are counted (`skipped_more`).
pub const MAX_SKIPPED: usize = 100;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Artifact {
    /// Relative to /app/out.
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
    pub media_type: &'static str,
    #[serde(skip)]
    pub content: Vec<u8>,
    /// A signature of (size, mtime) to tell a session's new or changed files.
    #[serde(skip)]
    pub stamp: (u64, i64, i64),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// Relative to /app/out, escaped when it is not printable UTF-8.
    pub path: String,
    /// `symlink`, `not_regular`, `hardlink`, `too_large`, `over_budget` or `bad_name`.
    pub reason: &'static str,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Collected {
    pub artifacts: Vec<Artifact>,
    pub skipped: Vec<Skipped>,
    /// Skipped entries past MAX_SKIPPED, counted, not listed.
    pub skipped_more: u64,
}

/// A name fit to report and write on a host: printable UTF-8, no separator, not `.`/`..`.
fn good_name(name: &[u8]) -> Option<&str> {
    let s = std::str::from_utf8(name).ok()?;
    let bad = s.is_empty()
        || s == "."
        || s == ".."
        || s.len() > 255
        || s.chars()
            .any(|c| c == '\\' || c == '/' || agentjail_json::needs_escape(c));
    (!bad).then_some(s)
}

/// Bytes as text for a report: printable UTF-8 kept, the rest escaped (\\n, \\xNN, \\u{...}).
fn escaped(name: &[u8]) -> String {
    let mut out = String::new();
    for chunk in name.utf8_chunks() {
        out.push_str(&agentjail_json::safe_text(chunk.valid(), 512));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

struct Walk<'a> {
    caps: &'a ArtifactsPolicy,
    out: Collected,
    total: u64,
    seen: usize,
}

/// Collect the regular files under `dir` (an fd of /app/out) within the caps.
pub fn collect(dir: &OwnedFd, caps: &ArtifactsPolicy) -> Collected {
    let mut w = Walk {
        caps,
        out: Collected::default(),
        total: 0,
        seen: 0,
    };
    w.dir(dir, "", 0);
    w.out.artifacts.sort_by(|a, b| a.path.cmp(&b.path));
    w.out.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    w.out
}

impl Walk<'_> {
    fn skip(&mut self, path: String, reason: &'static str) {
        if self.out.skipped.len() < MAX_SKIPPED {
            self.out.skipped.push(Skipped { path, reason });
        } else {
            self.out.skipped_more += 1;
        }
    }

    fn dir(&mut self, dir: &OwnedFd, prefix: &str, depth: usize) {
        let listing = format!("/proc/self/fd/{}", dir.as_raw_fd());
        let Ok(entries) = std::fs::read_dir(&listing) else {
            return;
        };
        let mut names: Vec<Vec<u8>> = entries
            .filter_map(|e| e.ok().map(|e| e.file_name().as_bytes().to_vec()))
            .collect();
        names.sort();
        for raw in names {
            self.seen += 1;
            if self.seen > MAX_ENTRIES {
                // The walk looks no further; what it did not look at is counted.
                self.out.skipped_more += 1;
                continue;
            }
            let Some(name) = good_name(&raw) else {
                self.skip(format!("{prefix}{}", escaped(&raw)), "bad_name");
                continue;
            };
            let path = format!("{prefix}{name}");
            let Ok(c) = CString::new(name) else { continue };
            self.entry(dir, &c, path, depth);
        }
    }

    fn entry(&mut self, dir: &OwnedFd, name: &CString, path: String, depth: usize) {
        let Ok(os::dir::FileStat {
            mode, size, nlink, ..
        }) = os::dir::stat_at(dir, name)
        else {
            return;
        };
        match mode & libc::S_IFMT {
            libc::S_IFLNK => self.skip(path, "symlink"),
            libc::S_IFDIR if depth + 1 >= MAX_DEPTH => self.skip(path, "over_budget"),
            libc::S_IFDIR => {
                let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
                if let Ok(fd) = os::dir::open_at(dir, name, flags, 0) {
                    self.dir(&fd, &format!("{path}/"), depth + 1);
                }
            }
            libc::S_IFREG if nlink > 1 => self.skip(path, "hardlink"),
            libc::S_IFREG if size > self.caps.max_file_bytes.0 => self.skip(path, "too_large"),
            libc::S_IFREG => self.file(dir, name, path, size),
            _ => self.skip(path, "not_regular"),
        }
    }

    fn file(&mut self, dir: &OwnedFd, name: &CString, path: String, size: u64) {
        let full = self.out.artifacts.len() as u64 >= self.caps.max_count;
        if full || self.total + size > self.caps.max_total_bytes.0 {
            return self.skip(path, "over_budget");
        }
        // O_NONBLOCK: had the entry been swapped for a FIFO, the open would not wait.
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY;
        let Ok(fd) = os::dir::open_at(dir, name, flags, 0) else {
            return self.skip(path, "not_regular");
        };
        let Ok(os::dir::FileStat { mode, nlink, .. }) = os::dir::stat(&fd) else {
            return;
        };
        if mode & libc::S_IFMT != libc::S_IFREG || nlink > 1 {
            return self.skip(path, "not_regular");
        }
        let cap = self.caps.max_file_bytes.0;
        let Some(content) = read_at_most(&fd, cap + 1) else {
            return;
        };
        if content.len() as u64 > cap {
            return self.skip(path, "too_large");
        }
        self.total += content.len() as u64;
        let meta = std::fs::metadata(format!("/proc/self/fd/{}", fd.as_raw_fd()));
        let stamp = meta.map_or((0, 0, 0), |m| {
            use std::os::unix::fs::MetadataExt;
            (m.size(), m.mtime(), m.mtime_nsec())
        });
        self.out.artifacts.push(Artifact {
            path,
            bytes: content.len() as u64,
            sha256: format!("{:x}", Sha256::digest(&content)),
            media_type: media_type(&content),
            content,
            stamp,
        });
    }
}

fn read_at_most(fd: &OwnedFd, limit: u64) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    while (out.len() as u64) < limit {
        let want = buf.len().min((limit - out.len() as u64) as usize);
        match os::fd::read(fd, &mut buf[..want]) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(_) => return None,
        }
    }
    Some(out)
}

/// The media type, from the content: the common image and document signatures, JSON, CSV,
/// SVG, plain text; `application/octet-stream` otherwise.
pub fn media_type(b: &[u8]) -> &'static str {
    const SIGNATURES: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "image/png"),
        (b"\xff\xd8\xff", "image/jpeg"),
        (b"GIF87a", "image/gif"),
        (b"GIF89a", "image/gif"),
        (b"%PDF-", "application/pdf"),
        (b"PK\x03\x04", "application/zip"),
        (b"\x1f\x8b", "application/gzip"),
    ];
    if let Some((_, t)) = SIGNATURES.iter().find(|(sig, _)| b.starts_with(sig)) {
        return t;
    }
    if b.len() >= 12 && &b[..4] == b"RIFF" && &b[8..12] == b"WEBP" {
        return "image/webp";
    }
    let Ok(text) = std::str::from_utf8(b) else {
        return "application/octet-stream";
    };
    if text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        return "application/octet-stream";
    }
    let head = text.trim_start_matches('\u{feff}').trim_start();
    if head.starts_with('<') {
        return match xml_root(head) {
            Some("svg") => "image/svg+xml",
            Some(root) if root.eq_ignore_ascii_case("html") => "text/html",
            Some(_) => "application/xml",
            None => "text/plain",
        };
    }
    if (head.starts_with('{') || head.starts_with('['))
        && agentjail_json::parse_strict(b, &agentjail_json::ReadLimits::default()).is_ok()
    {
        return "application/json";
    }
    if looks_like_csv(text) {
        return "text/csv";
    }
    "text/plain"
}

/// The name of a markup document's root element: the first element after the prolog (an
/// XML declaration, comments, processing instructions, whitespace and a doctype without an
/// internal subset, naming the root). None when the prolog holds anything else (text, an
/// internal subset, a doctype naming another element, something unterminated): such a
/// document is not typed by its root, so an HTML or XHTML page is never an SVG however
/// much `<svg` it embeds.
fn xml_root(mut rest: &str) -> Option<&str> {
    let mut doctype: Option<&str> = None;
    loop {
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix("<!--") {
            rest = &r[r.find("-->")? + 3..];
        } else if let Some(r) = rest.strip_prefix("<?") {
            rest = &r[r.find("?>")? + 2..];
        } else if rest.len() >= 9 && rest[..9].eq_ignore_ascii_case("<!doctype") {
            let end = rest.find('>')?;
            if rest[..end].contains('[') || doctype.is_some() {
                return None;
            }
            doctype = rest[9..end].split_ascii_whitespace().next();
            rest = &rest[end + 1..];
        } else {
            let r = rest.strip_prefix('<')?;
            let end = r
                .find(|c: char| c.is_ascii_whitespace() || c == '>' || c == '/')
                .unwrap_or(r.len());
            let name = &r[..end];
            let valid = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
            let declared = doctype.is_none_or(|d| d.eq_ignore_ascii_case(name));
            return (valid && declared).then_some(name);
        }
    }
}

fn looks_like_csv(text: &str) -> bool {
    let mut lines = text.lines().filter(|l| !l.is_empty()).take(50);
    let Some(first) = lines.next() else {
        return false;
    };
    let commas = first.matches(',').count();
    let rest: Vec<&str> = lines.collect();
    commas > 0 && !rest.is_empty() && rest.iter().all(|l| l.matches(',').count() == commas)
}

/// `run --artifacts-dir DIR`: where the artifacts are written on the host. DIR must not exist
/// (it is created 0700) or be an empty directory owned by the caller, never a symlink; files
/// are created O_EXCL|O_NOFOLLOW under the directory's fd, so nothing outside it is touched.
pub struct ArtifactsDir {
    path: std::path::PathBuf,
    /// Its parent directory and its name there (to remove it again, under the fd).
    parent: OwnedFd,
    name: CString,
    fd: OwnedFd,
    /// We created it (and so may remove it again while it is empty).
    created: bool,
}

/// Why the artifacts directory could not be opened or written: the path (or the artifact),
/// the errno where a call failed. Display is the message agentjail prints and records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArtifactsError {
    /// The directory's parent does not exist.
    NoParent { path: PathBuf },
    /// A directory on the way was refused (crate::hostpath).
    HostPath(crate::hostpath::HostPathError),
    /// `mkdir` failed.
    Create { path: PathBuf, errno: i32 },
    /// It is a symlink.
    Symlink { path: PathBuf },
    /// It is not a directory.
    NotDir { path: PathBuf },
    /// It could not be opened: `detail` is the I/O error's text.
    Open {
        path: PathBuf,
        errno: Option<i32>,
        detail: String,
    },
    /// It could not be stat'ed.
    Stat { path: PathBuf, errno: i32 },
    /// It belongs to another user.
    NotOurs { path: PathBuf, uid: u32 },
    /// It already holds files.
    NotEmpty { path: PathBuf },
    /// Group or others may write it.
    Writable { path: PathBuf, mode: u32 },
    /// One artifact could not be written: `step` is the call (`mkdir`, `open`, `create`,
    /// `write`), `artifact` its path under /app/out.
    Write {
        step: &'static str,
        artifact: String,
        errno: i32,
    },
    /// An internal failure with no path to name (a dup or a NUL in a name).
    Internal(String),
}

impl std::fmt::Display for ArtifactsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use ArtifactsError as E;
        match self {
            E::NoParent { path } => write!(
                f,
                "--artifacts-dir {}: cannot create it: its parent does not exist",
                path.display()
            ),
            E::HostPath(e) => e.fmt(f),
            E::Create { path, errno } => write!(
                f,
                "--artifacts-dir {}: cannot create it: {}",
                path.display(),
                std::io::Error::from_raw_os_error(*errno)
            ),
            E::Symlink { path } => write!(
                f,
                "--artifacts-dir {} is a symlink; give a real directory",
                path.display()
            ),
            E::NotDir { path } => write!(f, "--artifacts-dir {} is not a directory", path.display()),
            E::Open { path, detail, .. } => write!(f, "--artifacts-dir {}: {detail}", path.display()),
            E::Stat { path, errno } => write!(f, "--artifacts-dir {}: errno {errno}", path.display()),
            E::NotOurs { path, uid } => write!(
                f,
                "--artifacts-dir {} belongs to uid {uid}, not to us",
                path.display()
            ),
            E::NotEmpty { path } => write!(
                f,
                "--artifacts-dir {} is not empty; give a new or empty directory",
                path.display()
            ),
            E::Writable { path, mode } => write!(
                f,
                "--artifacts-dir {} can be written by group or others (mode {mode:o}); give a directory only we can write",
                path.display()
            ),
            E::Write {
                step: "create",
                artifact,
                errno,
            } => write!(
                f,
                "create {artifact}: {}",
                std::io::Error::from_raw_os_error(*errno)
            ),
            E::Write {
                step,
                artifact,
                errno,
            } => write!(f, "{step} {artifact}: errno {errno}"),
            E::Internal(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ArtifactsError {}

impl From<crate::hostpath::HostPathError> for ArtifactsError {
    fn from(e: crate::hostpath::HostPathError) -> Self {
        ArtifactsError::HostPath(e)
    }
}

impl ArtifactsError {
    /// The errno of the call that failed, where one did.
    pub fn errno(&self) -> Option<i32> {
        match self {
            ArtifactsError::HostPath(e) => e.errno(),
            ArtifactsError::Create { errno, .. }
            | ArtifactsError::Stat { errno, .. }
            | ArtifactsError::Write { errno, .. } => Some(*errno),
            ArtifactsError::Open { errno, .. } => *errno,
            _ => None,
        }
    }
}

impl ArtifactsDir {
    pub fn open(path: &std::path::Path) -> Result<ArtifactsDir, ArtifactsError> {
        let p = || path.to_path_buf();
        // The parent is walked and checked (crate::hostpath: no directory on the way that
        // another user can change), then everything is done under its fd: the directory is
        // made or opened with O_NOFOLLOW and judged by what was opened, never by a second
        // look at the path.
        if path
            .parent()
            .is_some_and(|p| !p.as_os_str().is_empty() && !p.exists())
        {
            return Err(ArtifactsError::NoParent { path: p() });
        }
        let (parent, name) = crate::hostpath::parent_and_name(path, "--artifacts-dir")?;
        let created = match os::dir::mkdir_at(&parent, &name, 0o700) {
            Ok(()) => true,
            Err(libc::EEXIST) => false,
            Err(e) => {
                return Err(ArtifactsError::Create {
                    path: p(),
                    errno: e,
                })
            }
        };
        let flags = libc::O_RDONLY | libc::O_DIRECTORY;
        let fd = crate::hostpath::openat(&parent, &name, flags, 0).map_err(|e| {
            let is_link = os::dir::stat_at(&parent, &name)
                .is_ok_and(|st| st.mode & libc::S_IFMT == libc::S_IFLNK);
            if is_link {
                ArtifactsError::Symlink { path: p() }
            } else if e.raw_os_error() == Some(libc::ENOTDIR) {
                ArtifactsError::NotDir { path: p() }
            } else {
                ArtifactsError::Open {
                    path: p(),
                    errno: e.raw_os_error(),
                    detail: e.to_string(),
                }
            }
        })?;
        let st = os::dir::stat(&fd).map_err(|errno| ArtifactsError::Stat { path: p(), errno })?;
        if st.uid != os::process::geteuid() {
            return Err(ArtifactsError::NotOurs {
                path: p(),
                uid: st.uid,
            });
        }
        if !created {
            let empty = std::fs::read_dir(format!("/proc/self/fd/{}", fd.as_raw_fd()))
                .map(|mut d| d.next().is_none())
                .unwrap_or(false);
            if !empty {
                return Err(ArtifactsError::NotEmpty { path: p() });
            }
        }
        if st.mode & 0o022 != 0 {
            return Err(ArtifactsError::Writable {
                path: p(),
                mode: st.mode & 0o7777,
            });
        }
        Ok(ArtifactsDir {
            path: path.to_path_buf(),
            parent,
            name,
            fd,
            created,
        })
    }

    /// Undo `open` when the run does not happen after all (another flag was refused): a
    /// directory we created is removed again (only while it is empty).
    pub fn discard(self) {
        if self.created {
            let _ = os::dir::unlink_at(&self.parent, &self.name, libc::AT_REMOVEDIR);
        }
    }

    /// Write every artifact under the directory; their host paths, or why one failed.
    pub fn write(&self, collected: &Collected) -> Result<Vec<String>, ArtifactsError> {
        let mut written = Vec::new();
        for a in &collected.artifacts {
            let parts: Vec<&str> = a.path.split('/').collect();
            let mut dir = self
                .fd
                .try_clone()
                .map_err(|e| ArtifactsError::Internal(e.to_string()))?;
            for part in &parts[..parts.len() - 1] {
                let c = CString::new(*part).map_err(|e| ArtifactsError::Internal(e.to_string()))?;
                match os::dir::mkdir_at(&dir, &c, 0o700) {
                    Ok(()) | Err(libc::EEXIST) => {}
                    Err(errno) => {
                        return Err(ArtifactsError::Write {
                            step: "mkdir",
                            artifact: a.path.clone(),
                            errno,
                        })
                    }
                }
                let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
                dir = os::dir::open_at(&dir, &c, flags, 0).map_err(|errno| {
                    ArtifactsError::Write {
                        step: "open",
                        artifact: a.path.clone(),
                        errno,
                    }
                })?;
            }
            let name = CString::new(parts[parts.len() - 1])
                .map_err(|e| ArtifactsError::Internal(e.to_string()))?;
            let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
            let fd = os::dir::open_at(&dir, &name, flags, 0o600).map_err(|errno| {
                ArtifactsError::Write {
                    step: "create",
                    artifact: a.path.clone(),
                    errno,
                }
            })?;
            os::fd::write_all(&fd, &a.content).map_err(|errno| ArtifactsError::Write {
                step: "write",
                artifact: a.path.clone(),
                errno,
            })?;
            written.push(self.path.join(&a.path).display().to_string());
        }
        Ok(written)
    }
}

/// The record's `artifacts` and `artifacts_skipped`: each artifact with its size, sha256
/// and media type, and its content base64 when `inline_max` allows and nothing was written
/// to a directory (`written`: the host paths, in order).
pub fn record_fields(
    c: &Collected,
    inline_max: u64,
    written: Option<&[String]>,
) -> (serde_json::Value, serde_json::Value) {
    use base64::Engine as _;
    let artifacts: Vec<serde_json::Value> = c
        .artifacts
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let mut v = serde_json::json!({"path": a.path, "bytes": a.bytes, "sha256": a.sha256, "media_type": a.media_type});
            match written {
                Some(w) => v["saved_to"] = serde_json::json!(w.get(i)),
                None if a.bytes <= inline_max => {
                    v["content_base64"] = serde_json::json!(base64::engine::general_purpose::STANDARD.encode(&a.content))
                }
                None => {}
            }
            v
        })
        .collect();
    let mut skipped = serde_json::json!(c.skipped);
    if c.skipped_more > 0 {
        if let Some(list) = skipped.as_array_mut() {
            list.push(serde_json::json!({"path": "…", "reason": "over_budget",
                                         "more": c.skipped_more}));
        }
    }
    (serde_json::json!(artifacts), skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_come_from_the_content() {
        assert_eq!(media_type(b"\x89PNG\r\n\x1a\nrest"), "image/png");
        assert_eq!(media_type(b"{\"a\": 1}"), "application/json");
        assert_eq!(media_type(b"a,b\n1,2\n3,4\n"), "text/csv");
        assert_eq!(media_type(b"hello\n"), "text/plain");
        assert_eq!(media_type(b"<svg xmlns='x'></svg>"), "image/svg+xml");
        assert_eq!(
            media_type(b"<?xml version='1.0'?>\n<!-- c -->\n<!DOCTYPE svg>\n<svg/>"),
            "image/svg+xml"
        );
    }

    /// Polyglots: a page that embeds an `<svg>` (or names one in a comment or a doctype) is
    /// typed by its root element, never as an image.
    #[test]
    fn only_a_document_whose_root_is_svg_is_an_svg() {
        let xhtml = b"<?xml version='1.0'?><html xmlns='http://www.w3.org/1999/xhtml'>\
            <script>alert(1)</script><svg/></html>";
        assert_eq!(media_type(xhtml), "text/html");
        assert_eq!(
            media_type(b"<!DOCTYPE html><html><svg></svg></html>"),
            "text/html"
        );
        assert_eq!(media_type(b"<!DOCTYPE html><svg></svg>"), "text/plain");
        assert_eq!(
            media_type(b"<!-- <svg> --><html><svg/></html>"),
            "text/html"
        );
        assert_eq!(
            media_type(b"<?xml version='1.0'?><x><svg/></x>"),
            "application/xml"
        );
        assert_eq!(media_type(b"<svgx/>"), "application/xml");
        assert_eq!(media_type(b"<svg:svg xmlns:svg='s'/>"), "application/xml");
        assert_eq!(media_type(b"hello <svg/>"), "text/plain");
        // An internal subset (entities) or an unterminated prolog is not typed by its root.
        assert_eq!(
            media_type(b"<?xml version='1.0'?><!DOCTYPE svg [<!ENTITY a 'b'>]><svg/>"),
            "text/plain"
        );
        assert_eq!(media_type(b"<!-- <svg/>"), "text/plain");
        assert_eq!(media_type(b"\x00\x01\x02"), "application/octet-stream");
        // A name says nothing: a PNG called notes.txt is still a PNG.
    }

    #[test]
    fn names_are_printable_or_escaped() {
        assert_eq!(good_name(b"plot.png"), Some("plot.png"));
        assert_eq!(good_name(b"a\nb"), None);
        assert_eq!(good_name(b"\x1b[31mred"), None);
        assert_eq!(good_name(b"\xff\xfe"), None);
        assert_eq!(good_name(b".."), None);
        assert_eq!(escaped(b"a\nb\xff"), "a\\nb\\xff");
    }

    /// What no jail can make (mknod is outside every seccomp group) is still refused: a FIFO
    /// is never opened (a blocking open would hang the collector), nor a socket.
    #[test]
    fn fifos_and_sockets_are_never_opened() {
        let d = tempfile::tempdir().unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(d.path().join("pipe"))
            .status()
            .unwrap();
        assert!(made.success());
        let _sock = std::os::unix::net::UnixListener::bind(d.path().join("sock")).unwrap();
        std::fs::write(d.path().join("ok.txt"), "ok").unwrap();
        let c = CString::new(d.path().as_os_str().as_bytes()).unwrap();
        let dir = os::dir::open(&c, libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap();
        let got = collect(&dir, &ArtifactsPolicy::default());
        assert_eq!(got.artifacts.len(), 1);
        assert_eq!(got.artifacts[0].path, "ok.txt");
        let reasons: Vec<(&str, &str)> = got
            .skipped
            .iter()
            .map(|s| (s.path.as_str(), s.reason))
            .collect();
        assert_eq!(
            reasons,
            vec![("pipe", "not_regular"), ("sock", "not_regular")]
        );
    }

    fn open_dir(p: &std::path::Path) -> OwnedFd {
        let c = CString::new(p.as_os_str().as_bytes()).unwrap();
        os::dir::open(&c, libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap()
    }

    /// A 1 TB sparse file costs nothing to make on the host (no jail can: RLIMIT_FSIZE); the
    /// collector sees its size first and never reads it.
    #[test]
    fn a_sparse_terabyte_is_listed_not_read() {
        let d = tempfile::tempdir().unwrap();
        let f = std::fs::File::create(d.path().join("huge.bin")).unwrap();
        f.set_len(1 << 40).unwrap();
        let got = collect(&open_dir(d.path()), &ArtifactsPolicy::default());
        assert!(got.artifacts.is_empty());
        assert_eq!(got.skipped[0].reason, "too_large");
    }

    /// Twice the walk's bound in empty files (a jail cannot make even 100: its /app/out has
    /// a few dozen inodes, tests/pipeline/files_artifacts.rs): the walk stops looking after
    /// MAX_ENTRIES and lists at most max_count artifacts and MAX_SKIPPED skips.
    #[test]
    fn twenty_thousand_files_are_a_bounded_walk() {
        const N: usize = 2 * MAX_ENTRIES;
        let d = tempfile::tempdir_in("/dev/shm")
            .or_else(|_| tempfile::tempdir())
            .unwrap();
        for i in 0..N {
            std::fs::File::create(d.path().join(format!("f{i:06}"))).unwrap();
        }
        let caps = ArtifactsPolicy::default();
        let got = collect(&open_dir(d.path()), &caps);
        assert_eq!(got.artifacts.len() as u64, caps.max_count);
        assert!(got.skipped.iter().all(|s| s.reason == "over_budget"));
        // The list is bounded; the rest is a count.
        assert_eq!(got.skipped.len(), MAX_SKIPPED);
        assert_eq!(
            got.skipped_more as usize,
            N - caps.max_count as usize - MAX_SKIPPED
        );
    }
}
