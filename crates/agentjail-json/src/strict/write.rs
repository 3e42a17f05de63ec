//! The safe writer: [`to_safe_string`] and its pretty form write serde_json's layout with
//! every [`needs_escape`] character as `\uXXXX`, and [`safe_text`] makes one visible line
//! of human text. Separate from the reader because it reads nothing hostile: it only
//! guarantees that what jailed code printed cannot split or reorder a record.

use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter};
use serde_json::Value;
use std::io;

/// True for the characters the safe writers never print raw: controls (C0, DEL, C1),
/// invisible or format characters, line and paragraph separators, bidi controls, the BOM,
/// interlinear annotations and tag characters. Each can make a printed record read
/// differently from its bytes (split a log line, reorder text, hide text).
pub fn needs_escape(c: char) -> bool {
    matches!(
        u32::from(c),
        0x00..=0x1F
            | 0x7F..=0x9F
            | 0xAD
            | 0x61C
            | 0x180E
            | 0x200B..=0x200F
            | 0x2028..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0xE0000..=0xE007F
    )
}

/// Writes a string fragment with every [`needs_escape`] character as `\uXXXX` (a surrogate
/// pair above U+FFFF). serde_json hands C0 controls, `"` and `\` to `write_char_escape`
/// already, so fragments hold only the rest.
fn write_safe_fragment<W: ?Sized + io::Write>(writer: &mut W, fragment: &str) -> io::Result<()> {
    let mut start = 0;
    for (i, c) in fragment.char_indices() {
        if !needs_escape(c) {
            continue;
        }
        writer.write_all(fragment.get(start..i).unwrap_or_default().as_bytes())?;
        let mut units = [0u16; 2];
        for unit in c.encode_utf16(&mut units) {
            write!(writer, "\\u{unit:04x}")?;
        }
        start = i + c.len_utf8();
    }
    writer.write_all(fragment.get(start..).unwrap_or_default().as_bytes())
}

/// serde_json's compact layout with safe strings.
struct SafeCompact;

impl Formatter for SafeCompact {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        write_safe_fragment(writer, fragment)
    }
}

/// serde_json's 2-space pretty layout with safe strings.
struct SafePretty<'a>(PrettyFormatter<'a>);

impl Formatter for SafePretty<'_> {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        write_safe_fragment(writer, fragment)
    }
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

fn write_with<F: Formatter>(v: &Value, formatter: F) -> String {
    let mut buf = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, formatter);
    // Serializing a Value into a Vec cannot fail (string keys, in-memory writer); should it
    // ever, `null` is still one valid JSON value rather than a torn record.
    if v.serialize(&mut ser).is_err() {
        return "null".to_string();
    }
    String::from_utf8(buf).unwrap_or_else(|_| "null".to_string())
}

/// `v` as compact JSON (serde_json's layout) in which no string holds a raw character from
/// [`needs_escape`]: one record is always one line, whatever the jailed code printed.
pub fn to_safe_string(v: &Value) -> String {
    write_with(v, SafeCompact)
}

/// Like [`to_safe_string`], indented by two spaces (serde_json's pretty layout).
pub fn to_safe_string_pretty(v: &Value) -> String {
    write_with(v, SafePretty(PrettyFormatter::with_indent(b"  ")))
}

/// `s` as one line of human text (stderr messages): [`needs_escape`] characters become
/// visible `\u{XXXX}` text, a newline `\n`. At most `max_chars` characters are kept (an
/// escape is never cut in half); a longer text ends with `…`.
pub fn safe_text(s: &str, max_chars: usize) -> String {
    let mut out = String::new();
    let mut used = 0usize;
    for c in s.chars() {
        let piece = if c == '\n' {
            "\\n".to_string()
        } else if needs_escape(c) {
            format!("\\u{{{:04X}}}", u32::from(c))
        } else {
            c.to_string()
        };
        let n = piece.chars().count();
        if used + n > max_chars {
            out.push('…');
            return out;
        }
        out.push_str(&piece);
        used += n;
    }
    out
}
