//! The audit log: one line per record, appended by every front end through [`append`].

use crate::pipeline::record::Sealed;
use serde_json::Value;
use std::path::Path;

/// The audit log, opened for appending (created 0600 if missing), reached without following
/// anything another user can swap (crate::hostpath): the directory walked and checked, the
/// file opened under its fd with O_NOFOLLOW, and it must be a regular file of ours with one
/// name that only we can write. Servers call it once at start, so a bad path is refused
/// before any job.
pub fn open_audit(path: &Path) -> std::io::Result<std::fs::File> {
    let (dir, name) =
        crate::hostpath::parent_and_name(path, "the audit log").map_err(std::io::Error::other)?;
    let flags = libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_NONBLOCK;
    let f = std::fs::File::from(crate::hostpath::openat(&dir, &name, flags, 0o600)?);
    let st = agentjail_jail::os::dir::stat(&f).map_err(std::io::Error::from_raw_os_error)?;
    if st.mode & libc::S_IFMT != libc::S_IFREG
        || st.uid != agentjail_jail::os::process::geteuid()
        || st.nlink != 1
        || st.mode & 0o022 != 0
    {
        return Err(std::io::Error::other(
            "not a regular file of ours with one name that only we can write",
        ));
    }
    Ok(f)
}

/// Append one record as one line: O_APPEND, a single write under an exclusive lock, fsync.
/// Concurrent runs never interleave lines. A reader that does not take the lock (shared)
/// can see a long line's first pages before the rest: a line is whole once its newline is.
pub fn append_audit(path: &Path, record: &Value) -> std::io::Result<()> {
    use std::io::Write;
    // Safe JSON: no raw C0/C1 control, U+2028/2029, NEL or bidi override can split this line
    // for a line-based reader or steer a terminal.
    let mut line = agentjail_json::to_safe_string(record).into_bytes();
    line.push(b'\n');
    let mut f = open_audit(path)?;
    // Released when the file closes.
    agentjail_jail::os::fd::lock_exclusive(&f).map_err(std::io::Error::from_raw_os_error)?;
    f.write_all(&line)?;
    f.sync_data()
}

/// Append a finished record's audit copy (redacted, crate::redact) to the audit log at
/// `path`, if there is one; a failure is reported on stderr. Returns false when a line was
/// due and could not be written.
pub fn append(path: Option<&Path>, record: &Sealed) -> bool {
    let Some(path) = path else { return true };
    match append_audit(path, record.audit_value()) {
        Ok(()) => true,
        Err(e) => {
            eprintln!(
                "agentjail: cannot append to the audit log {}: {e}",
                path.display()
            );
            false
        }
    }
}
