//! The strict reader: [`parse_strict`]'s iterative parser (an explicit stack of open
//! containers, so no input can overflow the stack), its duplicate-key, depth, number and
//! memory refusals, and the scalar readers (numbers kept as their literal text, strings
//! with their escapes). Separate from the writer and from the error and limit types
//! (`strict.rs`) because it is the part that reads hostile bytes: it is what the
//! `strict_json` fuzz target and the reference tests aim at.

use super::{push_pointer_token, JsonError, ReadLimits};
use serde_json::{Map, Number, Value};
use std::str::FromStr;

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
