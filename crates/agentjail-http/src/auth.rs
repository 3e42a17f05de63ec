//! Bearer tokens (`--token-file`): who called.
//!
//! The file holds one `NAME TOKEN` pair per line (blank lines and `#` comments skipped). It
//! must be a regular file of ours (or root's) that nobody else may read or write: a token
//! file others can read is refused at start, with the fix. A request's token is compared
//! with every token, by their SHA-256 digests, in time that does not depend on where the
//! bytes differ or which token matched.

use sha2::{Digest, Sha256};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

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

/// Why a token file was refused at start. `Display` is the message agentjail prints.
#[derive(Debug)]
pub struct TokenFileError {
    /// The `--token-file` path.
    pub path: PathBuf,
    pub problem: TokenFileProblem,
}

/// What is wrong with a token file.
#[derive(Debug)]
pub enum TokenFileProblem {
    /// Opening it or its fstat failed.
    Io(std::io::Error),
    /// Not a regular file: what it is ("a directory", "a FIFO", ...).
    NotRegular(&'static str),
    /// Group or others may read or write it (`mode`, permission bits).
    Mode(u32),
    /// It belongs to `uid`, neither this user (`euid`) nor root.
    Owner { uid: u32, euid: u32 },
    /// Larger than 1 MiB.
    TooLarge,
    /// Not UTF-8 text (or a read error).
    NotText(std::io::Error),
    /// A line that is not a valid `NAME TOKEN`.
    Parse(TokensError),
}

impl std::fmt::Display for TokenFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = self.path.display();
        match &self.problem {
            TokenFileProblem::Io(e) => write!(f, "--token-file {shown}: {e}"),
            TokenFileProblem::NotRegular(kind) => write!(
                f,
                "--token-file {shown} is {kind}, not a regular file: give a regular file holding one `NAME TOKEN` per line (mode 0600)"
            ),
            TokenFileProblem::Mode(mode) => write!(
                f,
                "--token-file {shown} is readable or writable by group or others (mode {mode:o}); its tokens are secrets: chmod 600 {shown}"
            ),
            TokenFileProblem::Owner { uid, euid } => write!(
                f,
                "--token-file {shown} belongs to uid {uid}, not to this user ({euid}) or root"
            ),
            TokenFileProblem::TooLarge => write!(f, "--token-file {shown} is larger than 1 MiB"),
            TokenFileProblem::NotText(e) => write!(f, "--token-file {shown}: not UTF-8 text ({e})"),
            TokenFileProblem::Parse(e) => write!(f, "--token-file {shown}: {e}"),
        }
    }
}

impl std::error::Error for TokenFileError {}

/// Why a token file's text was refused: the 1-based line and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokensError {
    /// Not two fields.
    Shape { line: usize },
    /// A name too long or with other characters.
    Name { line: usize },
    /// A token too short or not printable ASCII.
    Token { line: usize },
    /// A name given twice.
    DuplicateName { line: usize, name: String },
    /// A token given to two names.
    DuplicateToken { line: usize },
    /// No `NAME TOKEN` line at all.
    Empty,
}

impl std::fmt::Display for TokensError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokensError::Shape { line } => write!(f, "line {line}: expected `NAME TOKEN`"),
            TokensError::Name { line } => write!(
                f,
                "line {line}: a name is 1-{MAX_NAME_CHARS} of A-Z a-z 0-9 . _ -"
            ),
            TokensError::Token { line } => write!(
                f,
                "line {line}: a token is at least {MIN_TOKEN_CHARS} printable ASCII characters (e.g. `openssl rand -hex 32`)"
            ),
            TokensError::DuplicateName { line, name } => {
                write!(f, "line {line}: the name {name} is given twice")
            }
            TokensError::DuplicateToken { line } => {
                write!(f, "line {line}: this token is given to two names")
            }
            TokensError::Empty => f.write_str("no `NAME TOKEN` line"),
        }
    }
}

impl std::error::Error for TokensError {}

impl Tokens {
    /// Read and check the token file.
    pub fn load(path: &Path) -> Result<Tokens, TokenFileError> {
        let refuse = |problem| TokenFileError {
            path: path.to_path_buf(),
            problem,
        };
        // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, and the
        // server would hang at start before the type below is looked at. The type is judged
        // on the file opened (fstat), so nothing can be swapped in between.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
            .map_err(|e| refuse(TokenFileProblem::Io(e)))?;
        let meta = file
            .metadata()
            .map_err(|e| refuse(TokenFileProblem::Io(e)))?;
        if !meta.is_file() {
            return Err(refuse(TokenFileProblem::NotRegular(kind(
                &meta.file_type(),
            ))));
        }
        if meta.mode() & 0o077 != 0 {
            return Err(refuse(TokenFileProblem::Mode(meta.mode() & 0o7777)));
        }
        let me = agentjail_jail::os::process::geteuid();
        if meta.uid() != me && meta.uid() != 0 {
            return Err(refuse(TokenFileProblem::Owner {
                uid: meta.uid(),
                euid: me,
            }));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(refuse(TokenFileProblem::TooLarge));
        }
        let text =
            std::io::read_to_string(file).map_err(|e| refuse(TokenFileProblem::NotText(e)))?;
        Tokens::parse(&text).map_err(|e| refuse(TokenFileProblem::Parse(e)))
    }

    pub fn parse(text: &str) -> Result<Tokens, TokensError> {
        let mut entries: Vec<(String, [u8; 32])> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let n = i + 1;
            let mut parts = line.split_whitespace();
            let (Some(name), Some(token), None) = (parts.next(), parts.next(), parts.next()) else {
                return Err(TokensError::Shape { line: n });
            };
            let name_ok = name.len() <= MAX_NAME_CHARS
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
            if !name_ok {
                return Err(TokensError::Name { line: n });
            }
            if token.len() < MIN_TOKEN_CHARS || !token.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(TokensError::Token { line: n });
            }
            if entries.iter().any(|(k, _)| k == name) {
                return Err(TokensError::DuplicateName {
                    line: n,
                    name: name.to_string(),
                });
            }
            let d = digest(token.as_bytes());
            if entries.iter().any(|(_, t)| same(t, &d)) {
                return Err(TokensError::DuplicateToken { line: n });
            }
            entries.push((name.to_string(), d));
        }
        if entries.is_empty() {
            return Err(TokensError::Empty);
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
            let e = Tokens::parse(text).err().unwrap().to_string();
            assert!(e.contains(says), "{text:?}: {e}");
        }
    }
}
