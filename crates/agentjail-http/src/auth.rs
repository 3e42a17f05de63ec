//! Bearer tokens (`--token-file`): who called.
//!
//! The file holds one `NAME TOKEN` pair per line (blank lines and `#` comments skipped). It
//! must be a regular file of ours (or root's) that nobody else may read or write: a token
//! file others can read is refused at start, with the fix. A request's token is compared
//! with every token, by their SHA-256 digests, in time that does not depend on where the
//! bytes differ or which token matched.

use sha2::{Digest, Sha256};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Longest token file read.
const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Shortest token accepted: guessing one must not be practical.
pub const MIN_TOKEN_CHARS: usize = 16;
const MAX_NAME_CHARS: usize = 64;

pub struct Tokens {
    /// Each token's name and its digest.
    entries: Vec<(String, [u8; 32])>,
}

fn digest(b: &[u8]) -> [u8; 32] {
    Sha256::digest(b).into()
}

/// Equal in time independent of the contents.
fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// What a file that is not a regular file is, for the refusal.
fn kind(t: &std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "something else"
    }
}

impl Tokens {
    /// Read and check the token file.
    pub fn load(path: &Path) -> Result<Tokens, String> {
        let shown = path.display();
        // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, and the
        // server would hang at start before the type below is looked at. The type is judged
        // on the file opened (fstat), so nothing can be swapped in between.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
            .map_err(|e| format!("--token-file {shown}: {e}"))?;
        let meta = file
            .metadata()
            .map_err(|e| format!("--token-file {shown}: {e}"))?;
        if !meta.is_file() {
            return Err(format!(
                "--token-file {shown} is {}, not a regular file: give a regular file holding one `NAME TOKEN` per line (mode 0600)",
                kind(&meta.file_type())
            ));
        }
        if meta.mode() & 0o077 != 0 {
            return Err(format!(
                "--token-file {shown} is readable or writable by group or others (mode {:o}); its tokens are secrets: chmod 600 {shown}",
                meta.mode() & 0o7777
            ));
        }
        let me = agentjail_jail::os::process::geteuid();
        if meta.uid() != me && meta.uid() != 0 {
            return Err(format!(
                "--token-file {shown} belongs to uid {}, not to this user ({me}) or root",
                meta.uid()
            ));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(format!("--token-file {shown} is larger than 1 MiB"));
        }
        let text = std::io::read_to_string(file)
            .map_err(|e| format!("--token-file {shown}: not UTF-8 text ({e})"))?;
        Tokens::parse(&text).map_err(|e| format!("--token-file {shown}: {e}"))
    }

    pub fn parse(text: &str) -> Result<Tokens, String> {
        let mut entries: Vec<(String, [u8; 32])> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let n = i + 1;
            let mut parts = line.split_whitespace();
            let (Some(name), Some(token), None) = (parts.next(), parts.next(), parts.next()) else {
                return Err(format!("line {n}: expected `NAME TOKEN`"));
            };
            let name_ok = name.len() <= MAX_NAME_CHARS
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
            if !name_ok {
                return Err(format!(
                    "line {n}: a name is 1-{MAX_NAME_CHARS} of A-Z a-z 0-9 . _ -"
                ));
            }
            if token.len() < MIN_TOKEN_CHARS || !token.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(format!(
                    "line {n}: a token is at least {MIN_TOKEN_CHARS} printable ASCII characters (e.g. `openssl rand -hex 32`)"
                ));
            }
            if entries.iter().any(|(k, _)| k == name) {
                return Err(format!("line {n}: the name {name} is given twice"));
            }
            let d = digest(token.as_bytes());
            if entries.iter().any(|(_, t)| same(t, &d)) {
                return Err(format!("line {n}: this token is given to two names"));
            }
            entries.push((name.to_string(), d));
        }
        if entries.is_empty() {
            return Err("no `NAME TOKEN` line".into());
        }
        Ok(Tokens { entries })
    }

    /// The name of the token an `Authorization` header carries, if it is one of ours.
    pub fn who(&self, authorization: Option<&[u8]>) -> Option<&str> {
        let presented = authorization?.strip_prefix(b"Bearer ")?;
        let d = digest(presented);
        // Every entry is compared, whichever matches.
        let mut found = None;
        for (name, t) in &self.entries {
            if same(t, &d) {
                found = Some(name.as_str());
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_name_their_caller_and_nothing_else_passes() {
        let t = Tokens::parse("# ops\nalice 0123456789abcdef0123\n\nbob   fedcba9876543210fedc\n")
            .unwrap();
        assert_eq!(t.who(Some(b"Bearer 0123456789abcdef0123")), Some("alice"));
        assert_eq!(t.who(Some(b"Bearer fedcba9876543210fedc")), Some("bob"));
        assert_eq!(t.who(Some(b"Bearer 0123456789abcdef012")), None);
        assert_eq!(t.who(Some(b"Bearer 0123456789abcdef01234")), None);
        assert_eq!(t.who(Some(b"bearer 0123456789abcdef0123")), None);
        assert_eq!(t.who(Some(b"0123456789abcdef0123")), None);
        assert_eq!(t.who(None), None);
    }

    #[test]
    fn bad_token_files_are_refused_with_the_line() {
        for (text, says) in [
            ("", "no `NAME TOKEN`"),
            ("alice short", "line 1: a token"),
            ("alice 0123456789abcdef0123 extra", "line 1: expected"),
            ("a/b 0123456789abcdef0123", "line 1: a name"),
            (
                "a 0123456789abcdef0123\na 1123456789abcdef0123",
                "line 2: the name a",
            ),
            (
                "a 0123456789abcdef0123\nb 0123456789abcdef0123",
                "line 2: this token",
            ),
        ] {
            let e = Tokens::parse(text).err().unwrap();
            assert!(e.contains(says), "{text:?}: {e}");
        }
    }
}
