//! A workspace's files as a coding agent looks at them: `workspace_list`, `workspace_exists`
//! and `workspace_remove` (docs/REFERENCE.md, "Workspaces").
//!
//! The same rules as `workspace_put` and `workspace_get` (the parent module): a path
//! is relative or under /workspace, normalised, without `..` (`workspace_path`), and every
//! directory on the way is opened beneath the held /workspace fd with openat2
//! (RESOLVE_BENEATH | NO_SYMLINKS | NO_MAGICLINKS | NO_XDEV): a symlink on the way is
//! refused (`symlink`), a mount crossed is refused (`outside`). The last component is never
//! followed: `exists` and `list` report a symlink as a symlink, `remove` removes the link
//! itself, and `list` of a symlink is refused. A recursive remove walks the tree with the
//! same opens, one directory fd at a time per level, at most [`MAX_DEPTH`] levels.
//!
//! Every call runs as the jail's user (the caller's `as_jail_user`): the host has no more
//! right over the tree than the jailed code.

use super::{as_jail_user, workspace_path, Workspace};
use crate::engine::{EngineError, ErrorCode};
use agentjail_jail::os::dir;
use serde_json::{json, Value};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Instant;

/// The most entries `list` returns (the first read, sorted by name; `truncated` past it).
pub const MAX_LIST_ENTRIES: usize = 1000;
/// The deepest directory a recursive remove goes into (`too_deep` past it).
pub const MAX_DEPTH: usize = 256;

/// Why a path was refused: the spelling in the error's message (`path_refused`).
pub type Why = &'static str;

fn errno_text(e: i32) -> Why {
    match e {
        libc::ELOOP => "symlink",
        libc::EXDEV => "outside",
        libc::ENOENT => "not_found",
        libc::ENOTDIR => "not_a_directory",
        libc::EISDIR => "is_a_directory",
        libc::ENOTEMPTY | libc::EEXIST => "not_empty",
        libc::EACCES | libc::EPERM => "permission_denied",
        libc::EBUSY => "busy",
        _ => "io_error",
    }
}

fn cname(s: &str) -> Result<std::ffi::CString, Why> {
    std::ffi::CString::new(s).map_err(|_| "bad_path")
}

/// The type of an entry as `list` and `exists` name it.
fn kind(mode: u32) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFREG => "file",
        libc::S_IFDIR => "dir",
        libc::S_IFLNK => "symlink",
        _ => "other",
    }
}

/// The directory that holds `rel`'s last component (opened beneath `root`, O_PATH) and that
/// component. `rel` is a normalised relative path, not empty.
fn parent_of<'a>(root: &OwnedFd, rel: &'a str) -> Result<(Option<OwnedFd>, &'a str), Why> {
    match rel.rsplit_once('/') {
        None => Ok((None, rel)),
        Some((dirs, leaf)) => {
            let flags = libc::O_PATH | libc::O_DIRECTORY;
            let fd = dir::open_beneath(root, &cname(dirs)?, flags, 0).map_err(errno_text)?;
            Ok((Some(fd), leaf))
        }
    }
}

/// `exists`: the entry's type without following it, or None when nothing is there (or a
/// directory on the way is a file). A symlink on the way is refused.
pub fn exists(root: &OwnedFd, rel: &str) -> Result<Option<&'static str>, Why> {
    if rel.is_empty() {
        return Ok(Some("dir"));
    }
    let (parent, leaf) = match parent_of(root, rel) {
        Err("not_found" | "not_a_directory") => return Ok(None),
        r => r?,
    };
    match dir::stat_at(parent.as_ref().unwrap_or(root), &cname(leaf)?) {
        Ok(st) => Ok(Some(kind(st.mode))),
        Err(libc::ENOENT | libc::ENOTDIR) => Ok(None),
        Err(e) => Err(errno_text(e)),
    }
}

/// A directory's names, read through the open directory `fd` (its /proc fd link is the
/// directory itself, not a path looked up again); at most `max`, and whether there were more.
fn names(fd: &OwnedFd, max: usize) -> Result<(Vec<String>, bool), Why> {
    let path = format!("/proc/thread-self/fd/{}", fd.as_raw_fd());
    let rd = std::fs::read_dir(path).map_err(|e| errno_text(e.raw_os_error().unwrap_or(0)))?;
    let mut out = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| errno_text(e.raw_os_error().unwrap_or(0)))?;
        if out.len() == max {
            return Ok((out, true));
        }
        out.push(entry.file_name().to_string_lossy().into_owned());
    }
    Ok((out, false))
}

/// `list`: the entries of the directory `rel` ("" is /workspace), sorted by name, each
/// `{name, type, size}` (size as lstat says it), at most [`MAX_LIST_ENTRIES`].
pub fn list(root: &OwnedFd, rel: &str) -> Result<Value, Why> {
    let here = if rel.is_empty() { "." } else { rel };
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NONBLOCK;
    let fd = dir::open_beneath(root, &cname(here)?, flags, 0).map_err(errno_text)?;
    let (mut names, truncated) = names(&fd, MAX_LIST_ENTRIES)?;
    names.sort();
    let mut entries = Vec::with_capacity(names.len());
    for name in names {
        // Gone since it was read (the jail's code runs meanwhile): left out.
        let Ok(st) = cname(&name).and_then(|c| dir::stat_at(&fd, &c).map_err(errno_text)) else {
            continue;
        };
        entries.push(json!({"name": name, "type": kind(st.mode), "size": st.size}));
    }
    Ok(json!({"entries": entries, "truncated": truncated}))
}

/// `remove`: the file or symlink `rel` (never followed), or the directory `rel` with
/// everything beneath it when `recursive` (a directory without it is `is_a_directory`).
pub fn remove(root: &OwnedFd, rel: &str, recursive: bool) -> Result<(), Why> {
    if rel.is_empty() {
        return Err("bad_path");
    }
    let (parent, leaf) = parent_of(root, rel)?;
    let parent = parent.as_ref().unwrap_or(root);
    let name = cname(leaf)?;
    let st = dir::stat_at(parent, &name).map_err(errno_text)?;
    if st.mode & libc::S_IFMT != libc::S_IFDIR {
        return dir::unlink_at(parent, &name, 0).map_err(errno_text);
    }
    if !recursive {
        return Err("is_a_directory");
    }
    empty_tree(parent, &name, 0)?;
    dir::unlink_at(parent, &name, libc::AT_REMOVEDIR).map_err(errno_text)
}

/// Remove everything in the directory `name` of `parent` (opened beneath it, no symlink
/// followed: one swapped in meanwhile is refused, not entered).
fn empty_tree(parent: &OwnedFd, name: &std::ffi::CStr, depth: usize) -> Result<(), Why> {
    if depth >= MAX_DEPTH {
        return Err("too_deep");
    }
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_NONBLOCK;
    let fd = dir::open_beneath(parent, name, flags, 0).map_err(errno_text)?;
    loop {
        // In rounds: the jail's code may add entries meanwhile; rmdir then says not_empty.
        let (batch, more) = names(&fd, MAX_LIST_ENTRIES)?;
        for n in &batch {
            let c = cname(n)?;
            let st = match dir::stat_at(&fd, &c) {
                Ok(st) => st,
                Err(libc::ENOENT) => continue,
                Err(e) => return Err(errno_text(e)),
            };
            if st.mode & libc::S_IFMT == libc::S_IFDIR {
                empty_tree(&fd, &c, depth + 1)?;
                dir::unlink_at(&fd, &c, libc::AT_REMOVEDIR).map_err(errno_text)?;
            } else {
                match dir::unlink_at(&fd, &c, 0) {
                    Ok(()) | Err(libc::ENOENT) => {}
                    Err(e) => return Err(errno_text(e)),
                }
            }
        }
        if !more {
            return Ok(());
        }
    }
}

impl Workspace {
    /// A path for `workspace_list`/`exists`/`remove`, or `path_refused` (`bad_path`).
    fn named(path: &str) -> Result<String, EngineError> {
        workspace_path(path).ok_or_else(|| refused(path, "bad_path"))
    }

    /// `workspace_list`: the directory's entries (list).
    pub fn list(&mut self, path: &str) -> Result<Value, EngineError> {
        let rel = Self::named(path)?;
        let root = self.root()?;
        let listed = as_jail_user(|| list(root, &rel))?;
        self.last_used = Instant::now();
        let mut v = listed.map_err(|why| refused(path, why))?;
        v["path"] = json!(rel);
        Ok(v)
    }

    /// `workspace_exists`: whether something is at the path, and its type (not followed).
    pub fn exists(&mut self, path: &str) -> Result<Value, EngineError> {
        let rel = Self::named(path)?;
        let root = self.root()?;
        let found = as_jail_user(|| exists(root, &rel))?;
        self.last_used = Instant::now();
        let found = found.map_err(|why| refused(path, why))?;
        Ok(json!({"path": rel, "exists": found.is_some(), "type": found}))
    }

    /// `workspace_remove`: a file or symlink, or a directory's tree with `recursive`.
    pub fn remove(&mut self, path: &str, recursive: bool) -> Result<Value, EngineError> {
        let rel = Self::named(path)?;
        let root = self.root()?;
        let removed = as_jail_user(|| remove(root, &rel, recursive))?;
        self.last_used = Instant::now();
        removed.map_err(|why| refused(path, why))?;
        Ok(json!(true))
    }
}

/// `path_refused`: the path (bounded) and why, as `put_refused` says it.
fn refused(path: &str, why: &str) -> EngineError {
    EngineError::new(
        ErrorCode::PathRefused,
        format!("{} ({why})", agentjail_json::safe_text(path, 200)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// On a host directory standing in for /workspace: a symlink is reported, never
    /// followed; one on the way is refused; remove takes the link, not what it points at.
    #[test]
    fn list_exists_remove_follow_nothing() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        let root = std::fs::File::open(p).map(OwnedFd::from).unwrap();
        std::fs::create_dir_all(p.join("a/b")).unwrap();
        std::fs::write(p.join("a/b/c.txt"), "abc").unwrap();
        std::fs::write(p.join("x.txt"), "x").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "host").unwrap();
        symlink(outside.path(), p.join("link")).unwrap();

        let l = list(&root, "").unwrap();
        assert_eq!(l["truncated"], false);
        let got: Vec<(String, String, u64)> = l["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["name"].as_str().unwrap().into(),
                    e["type"].as_str().unwrap().into(),
                    e["size"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(got[0].0, "a");
        assert_eq!(got[0].1, "dir");
        assert_eq!(got[1].1, "symlink");
        assert_eq!(got[2], ("x.txt".into(), "file".into(), 1));
        assert_eq!(list(&root, "link"), Err("symlink"));
        assert_eq!(list(&root, "x.txt"), Err("not_a_directory"));
        assert_eq!(list(&root, "nope"), Err("not_found"));

        assert_eq!(exists(&root, "a/b/c.txt"), Ok(Some("file")));
        assert_eq!(exists(&root, "link"), Ok(Some("symlink")));
        assert_eq!(exists(&root, "link/keep"), Err("symlink"));
        assert_eq!(exists(&root, "nope/x"), Ok(None));
        assert_eq!(exists(&root, "x.txt/y"), Ok(None));

        assert_eq!(remove(&root, "link/keep", false), Err("symlink"));
        assert_eq!(remove(&root, "a", false), Err("is_a_directory"));
        assert_eq!(remove(&root, "nope", false), Err("not_found"));
        assert_eq!(remove(&root, "", true), Err("bad_path"));
        assert_eq!(remove(&root, "link", true), Ok(()));
        assert!(
            outside.path().join("keep").exists(),
            "the link's target stays"
        );
        assert_eq!(remove(&root, "a", true), Ok(()));
        assert_eq!(remove(&root, "x.txt", false), Ok(()));
        assert_eq!(list(&root, "").unwrap()["entries"], json!([]));
    }

    /// A directory of more than MAX_LIST_ENTRIES lists that many, truncated; a tree deeper
    /// than MAX_DEPTH is not removed past it (`too_deep`).
    #[test]
    fn listing_and_removing_are_bounded() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        let root = std::fs::File::open(p).map(OwnedFd::from).unwrap();
        std::fs::create_dir(p.join("many")).unwrap();
        for i in 0..=MAX_LIST_ENTRIES {
            std::fs::write(p.join("many").join(format!("f{i}")), "").unwrap();
        }
        let l = list(&root, "many").unwrap();
        assert_eq!(l["entries"].as_array().unwrap().len(), MAX_LIST_ENTRIES);
        assert_eq!(l["truncated"], true);
        let deep: std::path::PathBuf = std::iter::once("deep".to_string())
            .chain((0..MAX_DEPTH).map(|_| "d".to_string()))
            .collect();
        std::fs::create_dir_all(p.join(&deep)).unwrap();
        assert_eq!(remove(&root, "deep", true), Err("too_deep"));
        assert_eq!(remove(&root, "many", true), Ok(()));
        assert_eq!(exists(&root, "many"), Ok(None));
    }

    /// A symlink deep in a tree being removed is removed itself; its target is untouched.
    #[test]
    fn a_recursive_remove_never_enters_a_link() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        let root = std::fs::File::open(p).map(OwnedFd::from).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "host").unwrap();
        std::fs::create_dir_all(p.join("t/u")).unwrap();
        symlink(outside.path(), p.join("t/u/escape")).unwrap();
        assert_eq!(remove(&root, "t", true), Ok(()));
        assert!(outside.path().join("keep").exists());
        assert_eq!(exists(&root, "t"), Ok(None));
    }
}
