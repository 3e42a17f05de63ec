//! Strict JSON in, safe JSON out.
//!
//! # Why a reader of our own
//!
//! Actions and program output are hostile input, and serde_json's reader is built for
//! friendly input: the last copy of a duplicated key silently wins (a second
//! `policy_hints` removed a timeout, a second `output_schema` removed a `maximum`), and its
//! recursion limit (128) is the only depth bound. [`parse_strict`] reads RFC 8259 exactly
//! and refuses what a reviewer could miss:
//!
//! * duplicate keys in any object, compared after unescaping (`"a"` and `"\u0061"` are the
//!   same key), reported with the RFC 6901 pointer of the duplicated member;
//! * nesting deeper than [`ReadLimits::max_depth`];
//! * number literals that would make exact arithmetic expensive (too many characters, or a
//!   decimal exponent far out of range). Nothing is ever rounded: numbers are kept as the
//!   literal text (serde_json's `arbitrary_precision`), so a payload integer
//!   `123456789012345678901234567890` reaches the program with the same digits. The only
//!   change serde_json makes is to spell an exponent `e+N`/`e-N` (`1E2` is kept as `1e+2`);
//!   the digits are never touched;
//! * more than [`ReadLimits::max_bytes`] of input, or a parsed value estimated above
//!   [`ReadLimits::max_memory`] (serde_json values are up to ~100 times their text).
//!
//! The reader is iterative (an explicit stack, no recursion), so no input can overflow the
//! stack whatever the limits. Time is linear in the input apart from the duplicate-key
//! lookups (a B-tree: O(n log n) in the members of one object).
//!
//! # Why a writer of our own
//!
//! Records repeat what jailed code printed. serde_json escapes only `"`, `\` and C0
//! controls, so C1 controls (NEL U+0085), U+2028/U+2029 and bidi overrides reached the
//! printed record raw: line-based readers split one audit-log line into several, and a
//! terminal showed text in an order other than the bytes'. [`to_safe_string`] writes the
//! same JSON but escapes every character in [`needs_escape`] as `\uXXXX`, so the text is
//! plain printable UTF-8 that every JSON parser reads back to the same value.

use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter};
use serde_json::{Map, Number, Value};
use std::fmt;
use std::io;
use std::str::FromStr;

/// Bounds for [`parse_strict`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadLimits {
    /// Deepest nesting of arrays and objects; the top-level container is depth 1.
    pub max_depth: usize,
    /// Largest input accepted, in bytes.
    pub max_bytes: usize,
    /// Longest number literal accepted, in characters.
    pub max_number_chars: usize,
    /// Largest magnitude of a number's normalised decimal exponent (the power of ten of its
    /// most significant digit): `1e1000` passes at the default, `1e1001` does not.
    pub max_exponent: u32,
    /// Largest estimated heap size of the parsed value, in bytes. serde_json's `Value` is
    /// far larger than its text: `{"a":0}` (7 bytes) becomes a B-tree node, a key and a
    /// number string of ~700 bytes, so 16 MiB of such text took 1.5 GB. The estimate
    /// (see `Parser::charge`) stops the reader before the supervisor pays for that.
    pub max_memory: usize,
}

impl Default for ReadLimits {
    /// Depth 64: every record agentjail writes nests an agent's or program's value at most a
    /// few levels below its top, so values accepted at depth ≤ 64 give records ≤ ~70 levels,
    /// which serde_json (recursion limit 128), Python's `json` and JavaScript's `JSON.parse`
    /// all read back. 16 MiB is the action size cap. 256 characters and exponents within
    /// ±1000 cover every number a real program prints, and keep exact decimal arithmetic on
    /// the literal (schema `multipleOf`, `maximum`, ...) cheap. 128 MiB of parsed value
    /// holds ordinary records of about 11 MiB of text (ten times the default payload cap).
    fn default() -> Self {
        ReadLimits {
            max_depth: 64,
            max_bytes: 16 * 1024 * 1024,
            max_number_chars: 256,
            max_exponent: 1000,
            max_memory: 128 * 1024 * 1024,
        }
    }
}

/// Why [`parse_strict`] refused its input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonError {
    /// Not RFC 8259 JSON (or not UTF-8). Line and column are 1-based; the column counts
    /// characters.
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    /// A key appears twice in one object; `pointer` names the second copy.
    DuplicateKey { pointer: String },
    /// An array or object at `pointer` would nest deeper than `limit`.
    TooDeep { pointer: String, limit: usize },
    /// The number at `pointer` is too long or its exponent is out of range.
    NumberOutOfRange { pointer: String },
    /// The input is longer than `limit` bytes.
    TooLarge { limit: usize },
    /// The parsed value would take more than `limit` bytes of memory (estimated).
    TooMuchMemory { limit: usize },
}

impl JsonError {
    /// A short fixed token for stop reasons (`invalid_action:<what>`).
    pub fn what(&self) -> &'static str {
        match self {
            JsonError::Syntax { .. } => "non_json",
            JsonError::DuplicateKey { .. } => "duplicate_key",
            JsonError::TooDeep { .. } => "too_deep",
            JsonError::NumberOutOfRange { .. } => "number_out_of_range",
            JsonError::TooLarge { .. } | JsonError::TooMuchMemory { .. } => "too_large",
        }
    }

    /// The RFC 6901 pointer of the offending value, when the error has one. It may contain
    /// any character the input had: print it with [`safe_text`] or [`to_safe_string`].
    pub fn pointer(&self) -> Option<&str> {
        match self {
            JsonError::DuplicateKey { pointer }
            | JsonError::TooDeep { pointer, .. }
            | JsonError::NumberOutOfRange { pointer } => Some(pointer),
            JsonError::Syntax { .. }
            | JsonError::TooLarge { .. }
            | JsonError::TooMuchMemory { .. } => None,
        }
    }
}

/// Pointers are echoed to humans: keep them one short printable line.
fn shown_pointer(p: &str) -> String {
    if p.is_empty() {
        "the top level".to_string()
    } else {
        format!("\"{}\"", safe_text(p, 120))
    }
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonError::Syntax {
                line,
                column,
                message,
            } => write!(
                f,
                "not valid JSON at line {line}, column {column}: {}",
                safe_text(message, 200)
            ),
            JsonError::DuplicateKey { pointer } => write!(
                f,
                "duplicate key at {}: send each key once per object",
                shown_pointer(pointer)
            ),
            JsonError::TooDeep { pointer, limit } => write!(
                f,
                "the value at {} nests deeper than {limit} levels of arrays and objects",
                shown_pointer(pointer)
            ),
            JsonError::NumberOutOfRange { pointer } => write!(
                f,
                "the number at {} is too long or its exponent is out of range; \
                 send at most 256 characters and an exponent within ±1000",
                shown_pointer(pointer)
            ),
            JsonError::TooLarge { limit } => {
                write!(f, "the JSON text is larger than {limit} bytes")
            }
            JsonError::TooMuchMemory { limit } => write!(
                f,
                "the JSON value would take more than {} MiB of memory once parsed; \
                 send fewer, larger values",
                limit / (1024 * 1024)
            ),
        }
    }
}

impl std::error::Error for JsonError {}

/// Append one RFC 6901 reference token (`~` → `~0`, `/` → `~1`).
pub fn push_pointer_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    for c in token.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

/// An open container while parsing.
enum Frame {
    Array(Vec<Value>),
    /// The members so far and the key whose value is being parsed.
    Object(Map<String, Value>, String),
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    limits: &'a ReadLimits,
    stack: Vec<Frame>,
    /// Estimated heap bytes of the value so far.
    memory: usize,
}

/// Read one JSON value under `limits`: RFC 8259 exactly, no duplicate keys, bounded depth
/// and numbers. See the module documentation for why each refusal exists.
pub fn parse_strict(bytes: &[u8], limits: &ReadLimits) -> Result<Value, JsonError> {
    if bytes.len() > limits.max_bytes {
        return Err(JsonError::TooLarge {
            limit: limits.max_bytes,
        });
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            // Report the position within the valid prefix.
            let valid = bytes.get(..e.valid_up_to()).unwrap_or_default();
            let prefix = std::str::from_utf8(valid).unwrap_or_default();
            let (line, column) = line_column(prefix, prefix.len());
            return Err(JsonError::Syntax {
                line,
                column,
                message: "the text is not valid UTF-8".into(),
            });
        }
    };
    let mut p = Parser {
        text,
        bytes,
        pos: 0,
        limits,
        stack: Vec::new(),
        memory: 0,
    };
    p.run()
}

/// 1-based line and column (in characters) of byte offset `pos` in `text`.
fn line_column(text: &str, pos: usize) -> (usize, usize) {
    let before = text.get(..pos).unwrap_or(text);
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let column = before.get(line_start..).unwrap_or("").chars().count() + 1;
    (line, column)
}

/// What follows a finished value inside its container.
enum Next {
    /// Parse another value (after `,` in an array or `"key":` in an object).
    Value,
    /// The top-level value is complete.
    Done(Value),
}

impl Parser<'_> {
    fn syntax(&self, message: impl Into<String>) -> JsonError {
        let (line, column) = line_column(self.text, self.pos);
        JsonError::Syntax {
            line,
            column,
            message: message.into(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// RFC 8259 whitespace only: space, tab, LF, CR.
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// The pointer of the value about to be parsed (or being parsed).
    fn pointer(&self) -> String {
        let mut p = String::new();
        for frame in &self.stack {
            match frame {
                Frame::Array(items) => push_pointer_token(&mut p, &items.len().to_string()),
                Frame::Object(_, key) => push_pointer_token(&mut p, key),
            }
        }
        p
    }

    // long because: the parser is one explicit-stack state machine (no recursion, so no
    // input can overflow the stack); its states read best as one loop.
    fn run(&mut self) -> Result<Value, JsonError> {
        loop {
            self.skip_ws();
            let value = match self.peek() {
                Some(b'{') => match self.open_object()? {
                    Some(empty) => empty,
                    None => continue,
                },
                Some(b'[') => match self.open_array()? {
                    Some(empty) => empty,
                    None => continue,
                },
                _ => self.scalar()?,
            };
            match self.attach(value)? {
                Next::Value => continue,
                Next::Done(v) => return Ok(v),
            }
        }
    }

    /// Add `bytes` to the memory estimate. Costs, from serde_json's layout with
    /// arbitrary_precision (a `Value` is 32 bytes; strings and number literals are heap
    /// strings, ~32 bytes of allocator overhead each): an object's first B-tree node 640, each
    /// member 112 (entry plus half-full nodes), each array element 64 (slot plus growth
    /// slack), each string or number its length plus 32.
    fn charge(&mut self, bytes: usize) -> Result<(), JsonError> {
        self.memory = self.memory.saturating_add(bytes);
        if self.memory > self.limits.max_memory {
            return Err(JsonError::TooMuchMemory {
                limit: self.limits.max_memory,
            });
        }
        Ok(())
    }

    fn check_depth(&self) -> Result<(), JsonError> {
        if self.stack.len() >= self.limits.max_depth {
            return Err(JsonError::TooDeep {
                pointer: self.pointer(),
                limit: self.limits.max_depth,
            });
        }
        Ok(())
    }

    /// At `{`: an empty object is returned whole; otherwise a frame is pushed with its
    /// first key and `None` says "parse the member's value next".
    fn open_object(&mut self) -> Result<Option<Value>, JsonError> {
        self.check_depth()?;
        self.pos += 1;
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Some(Value::Object(Map::new())));
        }
        self.charge(640)?;
        self.stack.push(Frame::Object(Map::new(), String::new()));
        self.member_key()?;
        Ok(None)
    }

    fn open_array(&mut self) -> Result<Option<Value>, JsonError> {
        self.check_depth()?;
        self.pos += 1;
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Some(Value::Array(Vec::new())));
        }
        self.stack.push(Frame::Array(Vec::new()));
        Ok(None)
    }

    /// Read `"key" :` for the object on top of the stack, refusing a key it already has.
    fn member_key(&mut self) -> Result<(), JsonError> {
        self.skip_ws();
        if self.peek() != Some(b'"') {
            return Err(self.syntax("expected a string key"));
        }
        let key = self.string()?;
        self.charge(112 + 32 + key.len())?;
        let duplicate =
            matches!(self.stack.last(), Some(Frame::Object(map, _)) if map.contains_key(&key));
        if let Some(Frame::Object(_, slot)) = self.stack.last_mut() {
            *slot = key;
        }
        if duplicate {
            return Err(JsonError::DuplicateKey {
                pointer: self.pointer(),
            });
        }
        self.skip_ws();
        if self.peek() != Some(b':') {
            return Err(self.syntax("expected ':' after an object key"));
        }
        self.pos += 1;
        Ok(())
    }

    /// Put a finished value into its container; close containers as their ends come.
    fn attach(&mut self, mut value: Value) -> Result<Next, JsonError> {
        loop {
            let Some(frame) = self.stack.last_mut() else {
                self.skip_ws();
                if self.pos != self.bytes.len() {
                    return Err(self.syntax("unexpected text after the JSON value"));
                }
                return Ok(Next::Done(value));
            };
            let is_array = matches!(frame, Frame::Array(_));
            match frame {
                Frame::Array(items) => items.push(value),
                Frame::Object(map, key) => {
                    map.insert(std::mem::take(key), value);
                }
            }
            if is_array {
                self.charge(64)?;
            }
            self.skip_ws();
            match (self.peek(), is_array) {
                (Some(b','), true) => {
                    self.pos += 1;
                    self.skip_ws();
                    if self.peek() == Some(b']') {
                        return Err(self.syntax("trailing comma in an array"));
                    }
                    return Ok(Next::Value);
                }
                (Some(b','), false) => {
                    self.pos += 1;
                    self.member_key()?;
                    return Ok(Next::Value);
                }
                (Some(b']'), true) | (Some(b'}'), false) => {
                    self.pos += 1;
                    value = match self.stack.pop() {
                        Some(Frame::Array(items)) => Value::Array(items),
                        Some(Frame::Object(map, _)) => Value::Object(map),
                        None => return Err(self.syntax("unbalanced brackets")),
                    };
                }
                (_, true) => return Err(self.syntax("expected ',' or ']' in an array")),
                (_, false) => return Err(self.syntax("expected ',' or '}' in an object")),
            }
        }
    }

    fn scalar(&mut self) -> Result<Value, JsonError> {
        match self.peek() {
            Some(b'"') => {
                let s = self.string()?;
                self.charge(32 + s.len())?;
                Ok(Value::String(s))
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(_) => Err(self.syntax("expected a JSON value")),
            None => Err(self.syntax("unexpected end of input; expected a JSON value")),
        }
    }

    fn literal(&mut self, word: &str, value: Value) -> Result<Value, JsonError> {
        if self.bytes.get(self.pos..self.pos + word.len()) == Some(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.syntax("expected a JSON value"))
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, kept as its literal text.
    fn number(&mut self) -> Result<Value, JsonError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let int_start = self.pos;
        match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return Err(self.syntax("leading zeros are not allowed in numbers"));
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.syntax("expected a digit")),
        }
        let int_end = self.pos;
        let mut frac = (self.pos, self.pos);
        if self.peek() == Some(b'.') {
            self.pos += 1;
            let s = self.pos;
            if self.digits() == 0 {
                return Err(self.syntax("expected a digit after the decimal point"));
            }
            frac = (s, self.pos);
        }
        let mut exp: i64 = 0;
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            let negative = match self.peek() {
                Some(b'-') => {
                    self.pos += 1;
                    true
                }
                Some(b'+') => {
                    self.pos += 1;
                    false
                }
                _ => false,
            };
            let s = self.pos;
            if self.digits() == 0 {
                return Err(self.syntax("expected a digit in the exponent"));
            }
            for &b in self.bytes.get(s..self.pos).unwrap_or_default() {
                exp = exp.saturating_mul(10).saturating_add(i64::from(b - b'0'));
            }
            if negative {
                exp = -exp;
            }
        }
        let literal = self.text.get(start..self.pos).unwrap_or_default();
        let int = self.bytes.get(int_start..int_end).unwrap_or_default();
        let frac = self.bytes.get(frac.0..frac.1).unwrap_or_default();
        let in_range = literal.len() <= self.limits.max_number_chars
            && leading_exponent(int, frac, exp)
                .is_none_or(|e| e.unsigned_abs() <= u64::from(self.limits.max_exponent));
        if !in_range {
            return Err(JsonError::NumberOutOfRange {
                pointer: self.pointer(),
            });
        }
        self.charge(32 + literal.len())?;
        Number::from_str(literal)
            .map(Value::Number)
            .map_err(|e| self.syntax(format!("bad number: {e}")))
    }

    /// A string starting at `"`, unescaped. Raw control characters, bad escapes and lone
    /// surrogates are refused.
    fn string(&mut self) -> Result<String, JsonError> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            let run_start = self.pos;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            out.push_str(self.text.get(run_start..self.pos).unwrap_or_default());
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let c = self.escape()?;
                    out.push(c);
                }
                Some(_) => return Err(self.syntax("control characters must be escaped in strings")),
                None => return Err(self.syntax("unterminated string")),
            }
        }
    }

    fn escape(&mut self) -> Result<char, JsonError> {
        let c = match self.peek() {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                self.pos += 1;
                return self.unicode_escape();
            }
            _ => return Err(self.syntax("invalid escape in a string")),
        };
        self.pos += 1;
        Ok(c)
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let mut v = 0u32;
        for _ in 0..4 {
            let d = match self.peek() {
                Some(b @ b'0'..=b'9') => b - b'0',
                Some(b @ b'a'..=b'f') => b - b'a' + 10,
                Some(b @ b'A'..=b'F') => b - b'A' + 10,
                _ => return Err(self.syntax("expected four hex digits after \\u")),
            };
            v = v * 16 + u32::from(d);
            self.pos += 1;
        }
        Ok(v)
    }

    /// After `\u`: one code point, or a high surrogate followed by `\uDC00`-`\uDFFF`.
    fn unicode_escape(&mut self) -> Result<char, JsonError> {
        let first = self.hex4()?;
        let code = match first {
            0xD800..=0xDBFF => {
                if self.bytes.get(self.pos..self.pos + 2) != Some(b"\\u") {
                    return Err(self.syntax("lone surrogate in a \\u escape"));
                }
                self.pos += 2;
                let second = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return Err(self.syntax("lone surrogate in a \\u escape"));
                }
                0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(self.syntax("lone surrogate in a \\u escape")),
            c => c,
        };
        char::from_u32(code).ok_or_else(|| self.syntax("invalid \\u escape"))
    }
}

/// The power of ten of the most significant non-zero digit of `int.frac × 10^exp`, or
/// `None` for zero (zero has no exponent to bound).
fn leading_exponent(int: &[u8], frac: &[u8], exp: i64) -> Option<i64> {
    if let Some(i) = int.iter().position(|&b| b != b'0') {
        let len = (int.len() - i) as i64;
        return Some(exp.saturating_add(len - 1));
    }
    let i = frac.iter().position(|&b| b != b'0')? as i64;
    Some(exp.saturating_sub(i + 1))
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn strict(s: &str) -> Result<Value, JsonError> {
        parse_strict(s.as_bytes(), &ReadLimits::default())
    }

    #[test]
    fn accepts_rfc8259() {
        assert_eq!(
            strict(" {\"a\" : [1, -2.5e3, true, false, null, \"x\"]}\r\n\t").unwrap(),
            serde_json::from_str::<Value>(r#"{"a":[1,-2.5e3,true,false,null,"x"]}"#).unwrap()
        );
        assert_eq!(
            strict("\"\\u00e9\\ud83d\\ude00\\/\\b\\f\\n\\r\\t\"").unwrap(),
            json!("é😀/\u{8}\u{c}\n\r\t")
        );
        assert_eq!(strict("0").unwrap(), json!(0));
        assert_eq!(strict("[]").unwrap(), json!([]));
        assert_eq!(strict("{}").unwrap(), json!({}));
        assert_eq!(strict("-0").unwrap().to_string(), "-0");
    }

    #[test]
    fn syntax_errors_are_non_json_with_positions() {
        for bad in [
            "",
            " ",
            "{",
            "[1,]",
            "{\"a\":1,}",
            "[1 2]",
            "01",
            "+1",
            "1.",
            ".5",
            "1e",
            "-",
            "NaN",
            "Infinity",
            "-Infinity",
            "// c\n1",
            "/* c */1",
            "'a'",
            "{a:1}",
            "\"\\x41\"",
            "\"a\nb\"",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "\"\\ud800\\u0041\"",
            "tru",
            "nul",
            "1 2",
            "{} {}",
            "\u{feff}{}",
            "\u{a0}1",
            "\u{b}1",
            "[1]]",
            "[",
            "{\"a\"}",
            "\"\\u12\"",
        ] {
            let e = strict(bad).unwrap_err();
            assert_eq!(e.what(), "non_json", "{bad:?} gave {e:?}");
            assert_eq!(e.pointer(), None);
        }
        let e = strict("{\n  \"a\": [1,]\n}").unwrap_err();
        assert!(
            matches!(
                e,
                JsonError::Syntax {
                    line: 2,
                    column: 11,
                    ..
                }
            ),
            "{e:?}"
        );
        let e = parse_strict(b"[\"a\xff\"]", &ReadLimits::default()).unwrap_err();
        assert!(
            matches!(
                e,
                JsonError::Syntax {
                    line: 1,
                    column: 4,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("UTF-8"));
    }

    #[test]
    fn duplicate_keys_are_refused_after_unescaping() {
        let e = strict(r#"{"policy_hints":{"exec_timeout_seconds":1,"exec_timeout_seconds":9}}"#)
            .unwrap_err();
        assert_eq!(
            e,
            JsonError::DuplicateKey {
                pointer: "/policy_hints/exec_timeout_seconds".into()
            }
        );
        assert_eq!(e.what(), "duplicate_key");
        let e = strict(r#"{"a":1,"\u0061":2}"#).unwrap_err();
        assert_eq!(e.pointer(), Some("/a"));
        let e = strict(r#"[{"x":[{}]},{"a/b~":1,"a/b~":1}]"#).unwrap_err();
        assert_eq!(e.pointer(), Some("/1/a~1b~0"));
        assert!(strict(r#"{"a":{"a":1},"b":{"a":1}}"#).is_ok());
    }

    #[test]
    fn depth_is_bounded() {
        let limits = ReadLimits::default();
        let ok = format!("{}{}", "[".repeat(64), "]".repeat(64));
        assert!(strict(&ok).is_ok());
        let deep = format!("{}{}", "[".repeat(65), "]".repeat(65));
        let e = strict(&deep).unwrap_err();
        assert_eq!(e.what(), "too_deep");
        assert_eq!(
            e,
            JsonError::TooDeep {
                pointer: "/0".repeat(64),
                limit: 64
            }
        );
        // Far deeper than any stack: refused without recursion.
        let huge = "[".repeat(10_000_000);
        let e = parse_strict(
            huge.as_bytes(),
            &ReadLimits {
                max_bytes: usize::MAX,
                ..limits.clone()
            },
        )
        .unwrap_err();
        assert_eq!(e.what(), "too_deep");
        let obj = format!("{}1{}", "{\"k\":".repeat(3), "}".repeat(3));
        let e = parse_strict(
            obj.as_bytes(),
            &ReadLimits {
                max_depth: 2,
                ..limits
            },
        )
        .unwrap_err();
        assert_eq!(e.pointer(), Some("/k/k"));
    }

    #[test]
    fn numbers_are_exact_and_bounded() {
        let v = strict(r#"{"n":123456789012345678901234567890,"f":9007199254740993.0,"t":1e-400}"#)
            .unwrap();
        assert_eq!(v["n"].to_string(), "123456789012345678901234567890");
        assert_eq!(v["f"].to_string(), "9007199254740993.0");
        assert_eq!(v["t"].to_string(), "1e-400");
        assert_eq!(
            to_safe_string(&v),
            r#"{"f":9007199254740993.0,"n":123456789012345678901234567890,"t":1e-400}"#
        );
        assert!(strict("1e1000").is_ok());
        assert!(strict("-1e-1000").is_ok());
        assert!(strict("0.01e1002").is_ok());
        assert!(strict("0e99999999999999999999999").is_ok());
        for bad in [
            "1e1001",
            "1e-1001",
            "[10e1000]",
            "0.001e-998",
            "1e99999999999999999999999999",
        ] {
            let e = strict(bad).unwrap_err();
            assert_eq!(e.what(), "number_out_of_range", "{bad}");
        }
        let long = format!("{{\"a\":[{}]}}", "1".repeat(257));
        assert_eq!(
            strict(&long).unwrap_err(),
            JsonError::NumberOutOfRange {
                pointer: "/a/0".into()
            }
        );
        assert!(strict(&"1".repeat(256)).is_ok());
    }

    #[test]
    fn size_is_bounded() {
        let limits = ReadLimits {
            max_bytes: 4,
            ..ReadLimits::default()
        };
        assert!(parse_strict(b"[12]", &limits).is_ok());
        let e = parse_strict(b"[123]", &limits).unwrap_err();
        assert_eq!(e, JsonError::TooLarge { limit: 4 });
        assert_eq!(e.what(), "too_large");
    }

    #[test]
    fn memory_is_bounded() {
        // 7-byte objects cost ~800 bytes each once parsed: refused by the estimate.
        let many = format!("[{}{{\"a\":0}}]", "{\"a\":0},".repeat(200_000));
        let limits = ReadLimits {
            max_memory: 64 * 1024 * 1024,
            ..ReadLimits::default()
        };
        let e = parse_strict(many.as_bytes(), &limits).err();
        let e = e.unwrap_or(JsonError::TooLarge { limit: 0 });
        assert_eq!(
            e,
            JsonError::TooMuchMemory {
                limit: 64 * 1024 * 1024
            }
        );
        assert_eq!(e.what(), "too_large");
        assert!(e.to_string().contains("64 MiB"), "{e}");
        let numbers = format!("[{}0]", "0,".repeat(1_000_000));
        let e = parse_strict(numbers.as_bytes(), &limits).err();
        assert_eq!(e.map(|e| e.what()), Some("too_large"));
        // Ordinary records well within the default.
        let row =
            r#"{"transaction_id":"txn_001","status":"paid","chargeback":false,"latency_ms":150}"#;
        let rows = format!("[{}{row}]", format!("{row},").repeat(10_000));
        assert!(strict(&rows).is_ok());
    }

    #[test]
    fn display_is_one_safe_line() {
        let e = strict("{\"\u{2028}\u{202e}\":1,\"\u{2028}\u{202e}\":2}").unwrap_err();
        let s = e.to_string();
        assert!(
            !s.contains('\u{2028}') && !s.contains('\u{202e}') && !s.contains('\n'),
            "{s}"
        );
        assert!(s.contains("\\u{2028}"), "{s}");
    }

    #[test]
    fn safe_writer_escapes_the_whole_set() {
        let nasty = "a\u{85}b\u{2028}c\u{2029}d\u{202e}e\u{7f}\u{9b}\u{feff}\u{e0041}\n\u{ad}";
        let v = json!({ nasty: [nasty] });
        let s = to_safe_string(&v);
        assert!(s.is_ascii(), "{s}");
        assert!(
            s.contains("\\u0085") && s.contains("\\u2028") && s.contains("\\udb40\\udc41"),
            "{s}"
        );
        assert_eq!(serde_json::from_str::<Value>(&s).unwrap(), v);
        let p = to_safe_string_pretty(&v);
        assert_eq!(
            p,
            format!(
                "{{\n  {s0}: [\n    {s0}\n  ]\n}}",
                s0 = to_safe_string(&json!(nasty))
            )
        );
        assert_eq!(strict(&p).unwrap(), v);
        // Ordinary text is untouched.
        assert_eq!(
            to_safe_string(&json!({"é": "日本 \"q\" \\"})),
            r#"{"é":"日本 \"q\" \\"}"#
        );
    }

    #[test]
    fn safe_text_is_visible_and_bounded() {
        assert_eq!(
            safe_text("a\nb\u{202e}c\u{85}", 100),
            "a\\nb\\u{202E}c\\u{0085}"
        );
        assert_eq!(safe_text("abcdef", 3), "abc…");
        assert_eq!(safe_text("ab\u{2028}", 5), "ab…");
        assert_eq!(safe_text("", 0), "");
    }

    /// Strings from every escaped class, plus arbitrary Unicode.
    fn nasty_string() -> impl Strategy<Value = String> {
        let pool: Vec<char> = vec![
            '\0',
            '\u{1}',
            '\t',
            '\n',
            '\r',
            '\u{1f}',
            '"',
            '\\',
            '/',
            '\u{7f}',
            '\u{80}',
            '\u{85}',
            '\u{9f}',
            '\u{a0}',
            '\u{ad}',
            '\u{61c}',
            '\u{180e}',
            '\u{200b}',
            '\u{200f}',
            '\u{2028}',
            '\u{2029}',
            '\u{202a}',
            '\u{202e}',
            '\u{2060}',
            '\u{2064}',
            '\u{2066}',
            '\u{206f}',
            '\u{feff}',
            '\u{fff9}',
            '\u{fffb}',
            '\u{e0000}',
            '\u{e007f}',
            'a',
            'é',
            '😀',
            '\u{10ffff}',
            '~',
        ];
        let from_pool = proptest::collection::vec(proptest::sample::select(pool), 0..8)
            .prop_map(|cs| cs.into_iter().collect::<String>());
        prop_oneof![from_pool, any::<String>()]
    }

    fn number_literal() -> impl Strategy<Value = Number> {
        (
            any::<bool>(),
            "(0|[1-9][0-9]{0,40})",
            proptest::option::of("[0-9]{1,30}"),
            proptest::option::of((
                prop_oneof![Just("e"), Just("E")],
                prop_oneof![Just(""), Just("+"), Just("-")],
                0u32..900,
            )),
        )
            .prop_map(|(neg, int, frac, exp)| {
                let mut s = String::new();
                if neg {
                    s.push('-');
                }
                s.push_str(&int);
                if let Some(f) = frac {
                    s.push('.');
                    s.push_str(&f);
                }
                if let Some((e, sign, n)) = exp {
                    s.push_str(&format!("{e}{sign}{n}"));
                }
                Number::from_str(&s).unwrap_or_else(|_| Number::from(0))
            })
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            number_literal().prop_map(Value::Number),
            nasty_string().prop_map(Value::String),
        ];
        leaf.prop_recursive(64, 256, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec((nasty_string(), inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    fn depth(v: &Value) -> usize {
        match v {
            Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
            Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }

    /// A random value wrapped in a chain of arrays and objects up to the depth limit, so
    /// the deep end of the range is exercised as well as the wide one.
    fn deep_value() -> impl Strategy<Value = Value> {
        (
            value(),
            proptest::collection::vec((any::<bool>(), nasty_string()), 0..64),
        )
            .prop_map(|(mut v, wraps)| {
                let room = 64usize.saturating_sub(depth(&v));
                for (is_array, key) in wraps.into_iter().take(room) {
                    v = if is_array {
                        json!([v])
                    } else {
                        json!({ key: v })
                    };
                }
                v
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn safe_writer_round_trips(v in prop_oneof![value(), deep_value()]) {
            prop_assert!(depth(&v) <= 64);
            for text in [to_safe_string(&v), to_safe_string_pretty(&v)] {
                prop_assert_eq!(&parse_strict(text.as_bytes(), &ReadLimits::default()).unwrap(), &v);
                prop_assert_eq!(&serde_json::from_str::<Value>(&text).unwrap(), &v);
                prop_assert!(!text.chars().any(|c| needs_escape(c) && c != '\n'));
                prop_assert!(std::str::from_utf8(text.as_bytes()).is_ok());
            }
            prop_assert!(!to_safe_string(&v).contains('\n'));
        }

        #[test]
        fn strict_reader_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = parse_strict(&bytes, &ReadLimits::default());
        }

        #[test]
        fn strict_agrees_with_serde_on_valid_json(v in value()) {
            let text = serde_json::to_string(&v).unwrap();
            prop_assert_eq!(parse_strict(text.as_bytes(), &ReadLimits::default()).unwrap(), v);
        }
    }

    #[test]
    fn deep_proptest_values_are_readable() {
        // A value at the strict reader's depth limit still reads back through serde_json.
        let mut v = json!("\u{2028}");
        for _ in 0..63 {
            v = json!([v]);
        }
        let text = to_safe_string(&v);
        assert_eq!(strict(&text).unwrap(), v);
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), v);
    }
}
