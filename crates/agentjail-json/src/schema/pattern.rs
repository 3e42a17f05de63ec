//! `pattern` and `patternProperties`: ECMA-262 regular expressions on a linear-time engine.
//!
//! JSON Schema patterns are ECMA-262. A backtracking engine (what the jsonschema crate
//! falls back to for them) hung for 45 s+ on backreference-heavy patterns. Here a pattern
//! is translated to the `regex` crate's syntax and compiled there: finite automata, time
//! linear in the text, compiled size capped. What the linear engine cannot do (look-around,
//! backreferences) does not compile, and the schema is refused with `pattern`.
//!
//! The translation keeps ECMA-262's meaning where the two syntaxes differ: `\d`, `\w`,
//! `\s`, `\b` and `.` get their ECMA sets (ASCII digits and word characters; ECMA
//! whitespace; `.` excludes the four ECMA line terminators), `\uHHHH` surrogate pairs
//! become one code point, `[` `&` `~` inside a class are literals, `[]` matches nothing and
//! `[^]` anything. Escapes whose meaning differs or is unknown (`\A`, `\z`, `\1`, ...) are
//! refused rather than guessed.

use regex::{Regex, RegexBuilder};
use regex_automata::nfa::thompson;
use regex_automata::util::syntax;

/// Compiled-program and lazy-DFA cache caps, per pattern.
pub const REGEX_SIZE_LIMIT: usize = 256 * 1024;
/// Deepest group nesting accepted (the parser's own bound).
const NEST_LIMIT: u32 = 64;

/// ECMA-262 WhiteSpace and LineTerminator, as class items.
const ECMA_SPACE: &str = r"\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";
const DIGIT: &str = "0-9";
const WORD: &str = "0-9A-Za-z_";

/// Why a pattern does not compile; `Display` is the one sentence the schema error quotes.
#[derive(Debug, Clone)]
pub enum PatternError {
    /// `(?=`, `(?!`, `(?<=`, `(?<!`.
    LookAround,
    /// `\` at the very end.
    LoneBackslash,
    /// `\1`...`\9`.
    Backreference,
    /// `\k<name>`.
    NamedBackreference,
    /// `\c` without a letter.
    ControlEscape,
    /// `\x` without two hex digits.
    HexEscape,
    /// `\u` without four hex digits or `{hex}`.
    UnicodeEscape,
    /// A `\uD800`-`\uDBFF` not followed by its low half.
    LoneSurrogate,
    /// A `\u{...}` beyond U+10FFFF or a surrogate.
    NotScalar,
    /// A letter or digit escape ECMA-262 or agentjail does not know (`\A`, `\z`, ...).
    UnknownEscape(char),
    /// `[` without its `]`.
    UnclosedClass,
    /// `--` inside a class.
    DoubleDash,
    /// `\B` inside a class.
    ClassWordBoundary,
    /// The regex crate refused the translation (syntax, nesting, size).
    Regex(regex::Error),
    /// The NFA that prices a match could not be built (its size limit).
    Nfa(Box<thompson::BuildError>),
}

impl std::fmt::Display for PatternError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let fixed = match self {
            PatternError::LookAround => "look-around is not supported (linear-time engine)",
            PatternError::LoneBackslash => "the pattern ends with a lone backslash",
            PatternError::Backreference => "backreferences are not supported (linear-time engine)",
            PatternError::NamedBackreference => {
                "named backreferences are not supported (linear-time engine)"
            }
            PatternError::ControlEscape => r"\c must be followed by a letter",
            PatternError::HexEscape => r"\x must be followed by two hex digits",
            PatternError::UnicodeEscape => r"\u must be followed by four hex digits or {hex}",
            PatternError::LoneSurrogate => "lone surrogate in a \\u escape",
            PatternError::NotScalar => "the \\u escape is not a Unicode scalar value",
            PatternError::UnclosedClass => "unclosed character class",
            PatternError::DoubleDash => "'--' in a character class is ambiguous; escape the '-'",
            PatternError::ClassWordBoundary => r"\B is not allowed in a character class",
            PatternError::UnknownEscape(c) => {
                return write!(f, r"\{c} is not an ECMA-262 escape agentjail supports")
            }
            PatternError::Regex(e) => return f.write_str(&first_line(&e.to_string())),
            PatternError::Nfa(e) => return f.write_str(&first_line(&e.to_string())),
        };
        f.write_str(fixed)
    }
}

impl std::error::Error for PatternError {}

/// A compiled pattern and its price per byte of text.
#[derive(Debug, Clone)]
pub struct Pattern {
    regex: Regex,
    /// NFA states: a match costs at most this much work per byte of text.
    states: u64,
}

impl Pattern {
    /// Compile an ECMA-262 pattern; `Err` says why in one sentence.
    pub fn compile(source: &str) -> Result<Pattern, PatternError> {
        let translated = translate(source)?;
        let regex = RegexBuilder::new(&translated)
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_SIZE_LIMIT)
            .nest_limit(NEST_LIMIT)
            .build()
            .map_err(PatternError::Regex)?;
        let nfa = thompson::Compiler::new()
            .syntax(syntax::Config::new().nest_limit(NEST_LIMIT))
            .configure(thompson::Config::new().nfa_size_limit(Some(REGEX_SIZE_LIMIT)))
            .build(&translated)
            .map_err(|e| PatternError::Nfa(Box::new(e)))?;
        Ok(Pattern {
            regex,
            states: nfa.states().len() as u64,
        })
    }

    /// Validation steps to charge for matching `text`: the engine's worst case is
    /// states × bytes, counted in units of 64.
    pub fn cost(&self, text: &str) -> u64 {
        1 + (text.len() as u64).saturating_mul(self.states) / 64
    }

    /// Unanchored search, as ECMA-262's `RegExp.prototype.test`.
    pub fn is_match(&self, text: &str) -> bool {
        self.regex.is_match(text)
    }
}

fn first_line(s: &str) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::strict::safe_text(&flat, 200)
}

/// Where the translator is.
struct Translator<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    out: String,
}

/// ECMA-262 source → `regex` crate syntax with the same meaning, or why not.
pub fn translate(source: &str) -> Result<String, PatternError> {
    let mut t = Translator {
        chars: source.chars().peekable(),
        out: String::with_capacity(source.len() * 2),
    };
    while let Some(c) = t.chars.next() {
        match c {
            '\\' => t.escape_outside()?,
            '.' => t.out.push_str(r"[^\n\r\x{2028}\x{2029}]"),
            '[' => t.class()?,
            '(' => t.group()?,
            c => t.out.push(c),
        }
    }
    Ok(t.out)
}

impl Translator<'_> {
    fn group(&mut self) -> Result<(), PatternError> {
        self.out.push('(');
        if self.chars.peek() != Some(&'?') {
            return Ok(());
        }
        let mut ahead = self.chars.clone();
        ahead.next();
        let a = ahead.next();
        let b = ahead.next();
        match (a, b) {
            (Some('=' | '!'), _) | (Some('<'), Some('=' | '!')) => Err(PatternError::LookAround),
            _ => Ok(()),
        }
    }

    /// `\X` outside a class.
    fn escape_outside(&mut self) -> Result<(), PatternError> {
        let Some(c) = self.chars.next() else {
            return Err(PatternError::LoneBackslash);
        };
        match c {
            'd' => self.out.push_str("[0-9]"),
            'D' => self.out.push_str("[^0-9]"),
            'w' => self.out.push_str("[0-9A-Za-z_]"),
            'W' => self.out.push_str("[^0-9A-Za-z_]"),
            's' => self.out.push_str(&format!("[{ECMA_SPACE}]")),
            'S' => self.out.push_str(&format!("[^{ECMA_SPACE}]")),
            'b' => self.out.push_str(r"(?-u:\b)"),
            'B' => self.out.push_str(r"(?-u:\B)"),
            _ => self.common_escape(c)?,
        }
        Ok(())
    }

    /// Escapes with one meaning inside and outside classes.
    fn common_escape(&mut self, c: char) -> Result<(), PatternError> {
        match c {
            '0' if !matches!(self.chars.peek(), Some('0'..='9')) => self.out.push_str(r"\x00"),
            '0'..='9' => return Err(PatternError::Backreference),
            'k' => return Err(PatternError::NamedBackreference),
            'c' => match self.chars.next() {
                Some(l) if l.is_ascii_alphabetic() => {
                    self.out
                        .push_str(&format!(r"\x{{{:X}}}", u32::from(l) % 32));
                }
                _ => return Err(PatternError::ControlEscape),
            },
            'u' => self.unicode_escape()?,
            'x' => {
                let h: String = (0..2).filter_map(|_| self.chars.next()).collect();
                if h.len() != 2 || !h.chars().all(|c| c.is_ascii_hexdigit()) {
                    return Err(PatternError::HexEscape);
                }
                self.out.push_str(&format!(r"\x{h}"));
            }
            't' | 'n' | 'r' | 'f' | 'v' => {
                self.out.push('\\');
                self.out.push(c);
            }
            'p' | 'P' => {
                self.out.push('\\');
                self.out.push(c);
            }
            c if c.is_ascii_alphanumeric() => return Err(PatternError::UnknownEscape(c)),
            c if c.is_ascii() => {
                self.out.push('\\');
                self.out.push(c);
            }
            c => self.out.push(c),
        }
        Ok(())
    }

    fn hex4(&mut self) -> Option<u32> {
        let mut v = 0;
        for _ in 0..4 {
            v = v * 16 + self.chars.next()?.to_digit(16)?;
        }
        Some(v)
    }

    /// `\uHHHH` (a surrogate pair makes one code point) or `\u{H...}`.
    fn unicode_escape(&mut self) -> Result<(), PatternError> {
        let bad = || PatternError::UnicodeEscape;
        if self.chars.peek() == Some(&'{') {
            let mut hex = String::new();
            self.chars.next();
            loop {
                match self.chars.next() {
                    Some('}') => break,
                    Some(h) if h.is_ascii_hexdigit() && hex.len() < 8 => hex.push(h),
                    _ => return Err(bad()),
                }
            }
            let code = u32::from_str_radix(&hex, 16).map_err(|_| bad())?;
            return self.push_code(code);
        }
        let first = self.hex4().ok_or_else(bad)?;
        if (0xD800..0xDC00).contains(&first) {
            let mut ahead = self.chars.clone();
            if ahead.next() == Some('\\') && ahead.next() == Some('u') {
                self.chars.next();
                self.chars.next();
                let second = self.hex4().ok_or_else(bad)?;
                if (0xDC00..0xE000).contains(&second) {
                    return self.push_code(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00));
                }
            }
            return Err(PatternError::LoneSurrogate);
        }
        self.push_code(first)
    }

    fn push_code(&mut self, code: u32) -> Result<(), PatternError> {
        match char::from_u32(code) {
            Some(_) => {
                self.out.push_str(&format!(r"\x{{{code:X}}}"));
                Ok(())
            }
            None => Err(PatternError::NotScalar),
        }
    }

    /// From after `[` to after the matching `]`.
    fn class(&mut self) -> Result<(), PatternError> {
        let negated = self.chars.peek() == Some(&'^');
        if negated {
            self.chars.next();
        }
        if self.chars.peek() == Some(&']') {
            // ECMA `[]` matches nothing and `[^]` any character.
            self.chars.next();
            self.out.push_str(if negated {
                r"[\x{0}-\x{10FFFF}]"
            } else {
                r"[^\x{0}-\x{10FFFF}]"
            });
            return Ok(());
        }
        self.out.push_str(if negated { "[^" } else { "[" });
        let mut last_dash = false;
        loop {
            let Some(c) = self.chars.next() else {
                return Err(PatternError::UnclosedClass);
            };
            let dash = c == '-';
            match c {
                ']' => {
                    self.out.push(']');
                    return Ok(());
                }
                '\\' => self.escape_in_class()?,
                '-' if last_dash => return Err(PatternError::DoubleDash),
                '[' | '&' | '~' => {
                    self.out.push('\\');
                    self.out.push(c);
                }
                c => self.out.push(c),
            }
            last_dash = dash;
        }
    }

    fn escape_in_class(&mut self) -> Result<(), PatternError> {
        let Some(c) = self.chars.next() else {
            return Err(PatternError::LoneBackslash);
        };
        match c {
            'd' => self.out.push_str(DIGIT),
            'D' => self.out.push_str(&format!("[^{DIGIT}]")),
            'w' => self.out.push_str(WORD),
            'W' => self.out.push_str(&format!("[^{WORD}]")),
            's' => self.out.push_str(ECMA_SPACE),
            'S' => self.out.push_str(&format!("[^{ECMA_SPACE}]")),
            'b' => self.out.push_str(r"\x08"),
            'B' => return Err(PatternError::ClassWordBoundary),
            '-' => self.out.push_str(r"\-"),
            _ => self.common_escape(c)?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, s: &str) -> bool {
        Pattern::compile(p).unwrap().is_match(s)
    }

    #[test]
    fn ecma_classes_keep_their_meaning() {
        assert!(m(r"^\d+$", "123"));
        assert!(!m(r"^\d+$", "١٢٣"));
        assert!(!m(r"^\w+$", "é"));
        assert!(m(r"^\s$", "\u{feff}"));
        assert!(!m(r"^\s$", "\u{85}"));
        assert!(m(r"^[\d\s]+$", "1 2"));
        assert!(m(r"^[^\D]$", "7"));
        assert!(!m(r"^.$", "\u{2028}"));
        assert!(m(r"^.$", "é"));
        assert!(m(r"\bfoo\b", "a foo b"));
        assert!(m(r"^[[]$", "["));
        assert!(m(r"^[a&&b]+$", "&"));
        assert!(!m(r"^[]$", ""));
        assert!(!m(r"a[]", "a"));
        assert!(m(r"^[^]$", "\n"));
        assert!(m(r"^\u00e9\ud83d\ude00\u{1F600}$", "é😀😀"));
        assert!(m(r"^\/\-\.$", "/-."));
        assert!(m(r"^\x41\cJ\0$", "A\n\0"));
        assert!(m(r"^(?<year>\d{4})-\d{2}$", "2024-01"));
        assert!(m(r"^\p{L}+$", "日本"));
        assert!(m("^[a-z]{2,3}$", "abc"));
    }

    #[test]
    fn non_linear_or_unknown_constructs_are_refused() {
        for bad in [
            r"(a)\1",
            r"(?<n>a)\k<n>",
            r"a(?=b)",
            r"a(?!b)",
            r"(?<=a)b",
            r"(?<!a)b",
            r"\A",
            r"\z",
            r"\ud800",
            r"[\B]",
            r"[+--]",
            "(",
            "a{",
            r"\",
            "[a",
            r"\q",
        ] {
            assert!(Pattern::compile(bad).is_err(), "{bad:?} compiled");
        }
        // Too big a program: refused by the size limit, not compiled.
        assert!(Pattern::compile(r"\p{L}{1000}").is_err());
    }

    #[test]
    fn error_text() {
        let text = |p: &str| Pattern::compile(p).unwrap_err().to_string();
        assert_eq!(
            text(r"(a)\1"),
            "backreferences are not supported (linear-time engine)"
        );
        assert_eq!(
            text(r"\q"),
            r"\q is not an ECMA-262 escape agentjail supports"
        );
        assert_eq!(
            text(r"\u12"),
            r"\u must be followed by four hex digits or {hex}"
        );
        assert_eq!(text(r"\ud800"), r"lone surrogate in a \u escape");
        assert_eq!(
            text(r"\u{110000}"),
            r"the \u escape is not a Unicode scalar value"
        );
        assert_eq!(
            text("[+--]"),
            "'--' in a character class is ambiguous; escape the '-'"
        );
        assert!(
            text("a{").starts_with("regex parse error:"),
            "{}",
            text("a{")
        );
    }

    #[test]
    fn catastrophic_patterns_are_linear() {
        let text = "a".repeat(100_000);
        for p in [r"(a+)+$", r"(a|aa)*b", r"^(a*)*$b", r"(a|a)*c"] {
            let pat = Pattern::compile(p).unwrap();
            let t = std::time::Instant::now();
            let _ = pat.is_match(&text);
            assert!(t.elapsed().as_secs() < 2, "{p} took {:?}", t.elapsed());
            assert!(pat.cost(&text) > 1);
        }
    }
}
