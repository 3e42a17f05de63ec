//! The one multipart/form-data shape the agent-sandbox runtime's `POST /upload` takes: a part
//! named `file` with a filename. Read from a body already bounded in size; nothing else of
//! RFC 7578 is needed (no nested multiparts, no transfer encodings).

/// The longest boundary RFC 2046 allows; it also bounds the search for it (body × this).
const MAX_BOUNDARY: usize = 70;

/// The boundary of a `multipart/form-data; boundary=...` content type (any length).
fn boundary(content_type: &str) -> Option<&str> {
    let mut parts = content_type.split(';');
    let kind = parts.next()?.trim();
    if !kind.eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    parts.find_map(|p| {
        let (k, v) = p.split_once('=')?;
        if !k.trim().eq_ignore_ascii_case("boundary") {
            return None;
        }
        let v = v.trim().trim_matches('"');
        (!v.is_empty()).then_some(v)
    })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A `name="value"` parameter of a Content-Disposition header (quoted, `\"` unescaped).
fn param(header: &str, name: &str) -> Option<String> {
    let mut rest = header;
    while let Some(i) = rest.find(name) {
        let before = rest[..i].chars().last();
        let after = &rest[i + name.len()..];
        rest = after;
        if !matches!(before, None | Some(' ' | ';' | '\t')) {
            continue;
        }
        let Some(v) = after.trim_start().strip_prefix('=') else {
            continue;
        };
        let v = v.trim_start();
        if let Some(q) = v.strip_prefix('"') {
            let mut out = String::new();
            let mut chars = q.chars();
            while let Some(c) = chars.next() {
                match c {
                    '"' => return Some(out),
                    '\\' => out.push(chars.next()?),
                    c => out.push(c),
                }
            }
            return None;
        }
        return Some(v.split(';').next().unwrap_or("").trim().to_string());
    }
    None
}

/// Why a multipart body has no usable file part (422). `Display` is the response message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultipartError {
    /// The Content-Type is not multipart/form-data with a boundary.
    NoBoundaryParam,
    /// The boundary is longer than RFC 2046 allows (its length).
    BoundaryTooLong(usize),
    /// The boundary never occurs in the body.
    NoBoundary,
    /// No part named `field` with a filename before the closing boundary.
    NoPart { field: String },
    /// A boundary line does not end in CRLF.
    BoundaryLine,
    /// A part's headers have no blank line after them.
    HeadersNeverEnd,
    /// A part's headers are not UTF-8.
    HeadersNotUtf8,
    /// A part has no closing boundary.
    PartNeverEnds,
    /// The `field` part has no (or an empty) filename.
    NoFilename { field: String },
}

impl std::fmt::Display for MultipartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MultipartError::NoBoundaryParam => {
                f.write_str("the body must be multipart/form-data with a boundary (a `file` part)")
            }
            MultipartError::BoundaryTooLong(n) => write!(
                f,
                "the multipart boundary is {n} characters; at most {MAX_BOUNDARY} (RFC 2046)"
            ),
            MultipartError::NoBoundary => f.write_str("no multipart boundary in the body"),
            MultipartError::NoPart { field } => {
                write!(f, "no part named {field:?} with a filename")
            }
            MultipartError::BoundaryLine => f.write_str("a boundary line must end in CRLF"),
            MultipartError::HeadersNeverEnd => f.write_str("a part's headers never end"),
            MultipartError::HeadersNotUtf8 => f.write_str("a part's headers are not UTF-8"),
            MultipartError::PartNeverEnds => f.write_str("a part never ends"),
            MultipartError::NoFilename { field } => {
                write!(f, "the {field:?} part has no filename")
            }
        }
    }
}

impl std::error::Error for MultipartError {}

/// The filename and bytes of the part named `field`.
pub fn file_part(
    content_type: &str,
    body: &[u8],
    field: &str,
) -> Result<(String, Vec<u8>), MultipartError> {
    let b = boundary(content_type).ok_or(MultipartError::NoBoundaryParam)?;
    if b.len() > MAX_BOUNDARY {
        return Err(MultipartError::BoundaryTooLong(b.len()));
    }
    let delim = format!("--{b}");
    let end_delim = format!("\r\n--{b}");
    // `pos`: where the current boundary line ("--b") starts.
    let mut pos = find(body, delim.as_bytes()).ok_or(MultipartError::NoBoundary)?;
    loop {
        let after = pos + delim.len();
        if body[after..].starts_with(b"--") {
            return Err(MultipartError::NoPart {
                field: field.into(),
            });
        }
        if !body[after..].starts_with(b"\r\n") {
            return Err(MultipartError::BoundaryLine);
        }
        let part = after + 2;
        let head_end = find(&body[part..], b"\r\n\r\n").ok_or(MultipartError::HeadersNeverEnd)?;
        let head = std::str::from_utf8(&body[part..part + head_end])
            .map_err(|_| MultipartError::HeadersNotUtf8)?;
        let content = part + head_end + 4;
        let len =
            find(&body[content..], end_delim.as_bytes()).ok_or(MultipartError::PartNeverEnds)?;
        let disposition = head
            .split("\r\n")
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim()
                    .eq_ignore_ascii_case("content-disposition")
                    .then_some(v)
            })
            .unwrap_or("");
        if param(disposition, "name").as_deref() == Some(field) {
            let name = param(disposition, "filename")
                .filter(|n| !n.is_empty())
                .ok_or_else(|| MultipartError::NoFilename {
                    field: field.into(),
                })?;
            return Ok((name, body[content..content + len].to_vec()));
        }
        pos = content + len + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(parts: &[(&str, Option<&str>, &[u8])]) -> Vec<u8> {
        let mut v = Vec::new();
        for (name, file, data) in parts {
            v.extend_from_slice(b"--XyZ\r\n");
            let fname = file
                .map(|f| format!("; filename=\"{f}\""))
                .unwrap_or_default();
            v.extend_from_slice(
                format!("Content-Disposition: form-data; name=\"{name}\"{fname}\r\nContent-Type: application/octet-stream\r\n\r\n").as_bytes(),
            );
            v.extend_from_slice(data);
            v.extend_from_slice(b"\r\n");
        }
        v.extend_from_slice(b"--XyZ--\r\n");
        v
    }

    #[test]
    fn a_boundary_past_70_characters_is_refused() {
        let long = "b".repeat(71);
        let ct = format!("multipart/form-data; boundary={long}");
        let body = format!("--{long}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nx\r\n--{long}--\r\n");
        let e = file_part(&ct, body.as_bytes(), "file").unwrap_err();
        assert_eq!(e, MultipartError::BoundaryTooLong(71));
        let e = e.to_string();
        assert!(e.contains("at most 70"), "{e}");
        let ok = "b".repeat(70);
        let ct = format!("multipart/form-data; boundary={ok}");
        let body = body.replace(&long, &ok);
        assert_eq!(
            file_part(&ct, body.as_bytes(), "file"),
            Ok(("a".into(), b"x".to_vec()))
        );
    }

    #[test]
    fn the_file_part_is_found() {
        let ct = "multipart/form-data; boundary=XyZ";
        let b = body(&[("file", Some("src/a.py"), b"print(1)\r\n--X")]);
        assert_eq!(
            file_part(ct, &b, "file"),
            Ok(("src/a.py".into(), b"print(1)\r\n--X".to_vec()))
        );
        let b = body(&[("other", None, b"zz"), ("file", Some("b.bin"), &[0, 1, 2])]);
        assert_eq!(
            file_part(ct, &b, "file"),
            Ok(("b.bin".into(), vec![0, 1, 2]))
        );
        let quoted = "multipart/form-data; boundary=\"XyZ\"";
        assert!(file_part(quoted, &b, "file").is_ok());
    }

    #[test]
    fn other_bodies_are_refused() {
        let ct = "multipart/form-data; boundary=XyZ";
        assert!(file_part("application/json", b"{}", "file").is_err());
        assert!(file_part(ct, b"", "file").is_err());
        assert!(file_part(ct, &body(&[("file", None, b"x")]), "file").is_err());
        assert!(file_part(ct, &body(&[("other", Some("a"), b"x")]), "file").is_err());
        assert!(file_part(ct, b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nnever ends", "file").is_err());
    }

    proptest::proptest! {
        #[test]
        fn any_body_is_read_or_refused(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
            let _ = file_part("multipart/form-data; boundary=XyZ", &b, "file");
            let mut framed = b"--XyZ\r\n".to_vec();
            framed.extend_from_slice(&b);
            let _ = file_part("multipart/form-data; boundary=XyZ", &framed, "file");
        }
    }
}
