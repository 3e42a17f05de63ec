//! Redaction: key-like strings are replaced by `[REDACTED:<kind>]` before a record is stored
//! (seed 001 §6.7, §10).
//!
//! The jail starts with an empty environment and binds no host secret, so a key in a record
//! got there because the program (or its input) carried it. The audit log outlives the job
//! and is read by people and tools that never saw the job: its copy of every record is
//! redacted, always. The printed record goes back to the caller who supplied the code and
//! the data, so by default it keeps what the program produced (`redaction.printed = true`
//! redacts it too). Both carry the same `redaction` section: how many replacements, of
//! which kinds, and whether the printed copy was redacted.
//!
//! Every string value of the record is scanned (and every object key under `output`, which
//! the program chose): stdout and stderr, error messages, output strings, artifact names.
//! Artifact contents are files, not text: the audit copy keeps an artifact's name, size,
//! media type and sha256 and never its bytes.
//!
//! The patterns run on the `regex` crate's linear-time engine: a hostile output cannot make
//! redaction slow, and a policy's own patterns are compiled with a size limit when the
//! policy loads (policy::validate).

use crate::policy::Redaction;
use regex::Regex;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The built-in patterns: (kind, pattern). Each is anchored on a prefix a real credential
/// format carries, so ordinary text and hashes (hex sha256, uuids) never match.
const BUILT_IN: &[(&str, &str)] = &[
    // AWS access key ids: long-term (AKIA) and temporary (ASIA).
    ("aws_access_key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    // An AWS secret key is 40 base64 characters with no prefix of its own: only next to its
    // usual name.
    (
        "aws_secret_key",
        r#"(?i)aws_?secret_?(?:access_?)?key["']?\s*[:=]\s*["']?[A-Za-z0-9/+=]{40}"#,
    ),
    // OpenAI/Anthropic-style secret keys (sk-, sk-proj-, sk-ant-...).
    ("api_key", r"\bsk-[A-Za-z0-9_-]{20,}"),
    ("bearer_token", r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}"),
    // A JWT: base64url header and payload, both JSON objects ({" → eyJ).
    (
        "jwt",
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    ),
    // A PEM private key, to its END line or, when the output was cut, to the end.
    (
        "private_key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)",
    ),
    (
        "github_token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
    ),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}"),
];

/// The compiled patterns of one `[redaction]` section.
#[derive(Debug)]
pub struct Redactor {
    /// The brokered credentials' values (`credential_<name>`), in every escaped form
    /// [`SecretMatcher`] covers: both copies, always.
    secrets: Vec<(String, SecretMatcher)>,
    /// The same values as text, for a string that ends in one's beginning (cut by a cap).
    secret_values: Vec<String>,
    rules: Vec<(String, Regex)>,
    printed: bool,
}

/// Which rules a pass applies.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Every rule: the audit copy, and the printed one under `printed = true`.
    All,
    /// The credentials' values only: the printed copy otherwise.
    Secrets,
}

/// Replacements made, by kind.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts(pub BTreeMap<String, u64>);

impl Counts {
    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }
}

/// A redaction pattern that did not compile: which one (`built-in KIND` or
/// `redaction.patterns[I]`) and the regex engine's reason. Display is the message recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedactError {
    /// `built-in KIND` or `redaction.patterns[I]`.
    pub pattern: String,
    /// The regex engine's reason.
    pub reason: String,
}

impl std::fmt::Display for RedactError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.pattern, self.reason)
    }
}

impl std::error::Error for RedactError {}

impl Redactor {
    /// Compile a policy's section. Its own patterns were checked when the policy loaded;
    /// one that fails here anyway is an error, never silently dropped.
    pub fn new(p: &Redaction) -> Result<Redactor, RedactError> {
        let mut rules = Vec::new();
        if p.defaults {
            for (kind, pat) in BUILT_IN {
                let re = Regex::new(pat).map_err(|e| RedactError {
                    pattern: format!("built-in {kind}"),
                    reason: e.to_string(),
                })?;
                rules.push(((*kind).to_string(), re));
            }
        }
        for (i, pat) in p.patterns.iter().enumerate() {
            let re = regex::RegexBuilder::new(pat)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| RedactError {
                    pattern: format!("redaction.patterns[{i}]"),
                    reason: e.to_string(),
                })?;
            rules.push((format!("pattern_{i}"), re));
        }
        let secrets = p
            .secrets
            .iter()
            .map(|s| {
                (
                    format!("credential_{}", s.name),
                    SecretMatcher::new(&s.value),
                )
            })
            .collect();
        Ok(Redactor {
            secret_values: p.secrets.iter().map(|s| s.value.clone()).collect(),
            secrets,
            rules,
            printed: p.printed,
        })
    }

    /// The redactor of `p`, compiled once per process (a server seals every record with it).
    pub fn of(p: &Redaction) -> Result<Arc<Redactor>, RedactError> {
        type Memo = Mutex<Vec<(Redaction, Arc<Redactor>)>>;
        static MEMO: OnceLock<Memo> = OnceLock::new();
        let memo = MEMO.get_or_init(|| Mutex::new(Vec::new()));
        let mut m = memo.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, r)) = m.iter().find(|(k, _)| k == p) {
            return Ok(Arc::clone(r));
        }
        let r = Arc::new(Redactor::new(p)?);
        // A process serves one policy; the bound only guards against a caller that loops.
        if m.len() >= 16 {
            m.remove(0);
        }
        m.push((p.clone(), Arc::clone(&r)));
        Ok(r)
    }

    /// `text` with every match replaced, and the replacements counted.
    pub fn text(&self, text: &str, counts: &mut Counts) -> Option<String> {
        self.text_pass(text, counts, Pass::All)
    }

    fn text_pass(&self, text: &str, counts: &mut Counts, pass: Pass) -> Option<String> {
        let mut out: Option<String> = None;
        for (kind, m) in &self.secrets {
            let cur = out.as_deref().unwrap_or(text);
            let (replaced, n) = m.replace(cur.as_bytes(), format!("[REDACTED:{kind}]").as_bytes());
            if n > 0 {
                *counts.0.entry(kind.clone()).or_default() += n;
                // Spans start and end at ASCII bytes (the value is printable ASCII): the
                // result is UTF-8 as the input was.
                out = Some(String::from_utf8_lossy(&replaced).into_owned());
            }
        }
        let rules = match pass {
            Pass::All => &self.rules[..],
            Pass::Secrets => &[],
        };
        for (kind, re) in rules {
            let cur = out.as_deref().unwrap_or(text);
            let n = re.find_iter(cur).count() as u64;
            if n == 0 {
                continue;
            }
            let marker = format!("[REDACTED:{kind}]");
            let replaced = re.replace_all(cur, regex::NoExpand(&marker)).into_owned();
            *counts.0.entry(kind.clone()).or_default() += n;
            out = Some(replaced);
        }
        for ((kind, _), value) in self.secrets.iter().zip(&self.secret_values) {
            let cur = out.as_deref().unwrap_or(text);
            if let Some(cut) = cut_secret_tail(cur, value) {
                let (body, ellipsis) = match cur.strip_suffix("...") {
                    Some(b) => (b, "..."),
                    None => (cur, ""),
                };
                let replaced = format!("{}[REDACTED:{kind}]{ellipsis}", &body[..cut]);
                *counts.0.entry(kind.clone()).or_default() += 1;
                out = Some(replaced);
            }
        }
        out
    }

    /// Redact every string in `v` in place (and object keys when `keys`).
    pub fn value(&self, v: &mut Value, keys: bool, counts: &mut Counts) {
        self.value_pass(v, keys, counts, Pass::All)
    }

    fn value_pass(&self, v: &mut Value, keys: bool, counts: &mut Counts, pass: Pass) {
        match v {
            Value::String(s) => {
                if let Some(r) = self.text_pass(s, counts, pass) {
                    *s = r;
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.value_pass(item, keys, counts, pass);
                }
            }
            Value::Object(map) => {
                let old = std::mem::take(map);
                let mut new = Map::new();
                for (k, mut item) in old {
                    let key = if keys {
                        self.text_pass(&k, counts, pass).unwrap_or(k)
                    } else {
                        k
                    };
                    self.value_pass(&mut item, keys, counts, pass);
                    new.insert(key, item);
                }
                *map = new;
            }
            _ => {}
        }
    }

    /// Seal a finished record: the audit copy (redacted, artifact bytes dropped), the
    /// `redaction` section in both, and the printed copy redacted when the policy says so.
    pub fn seal(&self, printed: &mut Value) -> Value {
        let mut audit = printed.clone();
        drop_artifact_bytes(&mut audit);
        let mut counts = Counts::default();
        if let Value::Object(map) = &mut audit {
            for (k, v) in map.iter_mut() {
                self.value(v, k == "output", &mut counts);
            }
        }
        let section = json!({
            "replacements": counts.total(),
            "kinds": counts.0,
            "printed_redacted": self.printed,
        });
        // The printed copy: every rule under `printed = true`, else the credentials' values
        // alone (the caller supplied the code and data, never the operator's secrets).
        let pass = if self.printed {
            Pass::All
        } else {
            Pass::Secrets
        };
        if pass == Pass::All || !self.secrets.is_empty() {
            let mut c = Counts::default();
            if let Value::Object(map) = printed {
                for (k, v) in map.iter_mut() {
                    self.value_pass(v, k == "output", &mut c, pass);
                }
            }
        }
        if let Value::Object(map) = printed {
            map.insert("redaction".into(), section.clone());
        }
        if let Value::Object(map) = &mut audit {
            map.insert("redaction".into(), section);
        }
        audit
    }
}

/// A brokered credential's value, found in the forms JSON encoders and their repetition
/// make of it: each character of the value as itself or as `\u00XX` (hex digits in either
/// case), after any run of backslashes, each written `\` or `\u005c` (and `u00XX` right
/// after a `\u005c`: the `\u00XX` of an earlier round escaped again). That is the value
/// JSON-escaped once (`\"`, `\\`, PHP's `\/`, Go's `\u003c`, .NET's `\u002B`) or any number
/// of times over (`\\\"`, `\\u0022`, `\u005c\u0022`), with its backslashes doubled, or
/// with every character written `\u00XX`. A backslash of the value itself may be any such
/// run, or none. (A value with fewer than 8 characters besides its backslashes is found
/// only as it is: what is left would match ordinary text.)
///
/// The text is read once, left to right, as a stream of characters with those escapes
/// undone (a run of backslashes dropped, `\u00XX` decoded), and searched for the value
/// with its backslashes dropped by Knuth-Morris-Pratt: linear in the text, memory of the
/// value's length, whatever the text holds. A match covers the original bytes from its
/// first character's escapes to its last character.
#[derive(Debug)]
pub(crate) struct SecretMatcher {
    /// The value less its backslashes; empty when that leaves fewer than
    /// [`MIN_SECRET_TAIL`] characters: then the value is found only as it is.
    canon: Vec<u8>,
    /// The value itself, for that literal search.
    value: Vec<u8>,
    /// KMP's failure function over `canon`.
    fail: Vec<usize>,
}

/// `\u00XX` after a backslash: `rest` starts with `u00` and two hex digits; the byte.
fn u00_escape(rest: &[u8]) -> Option<u8> {
    match rest {
        [b'u', b'0', b'0', h, l, ..] => {
            let hex = |c: u8| (c as char).to_digit(16);
            Some((hex(*h)? * 16 + hex(*l)?) as u8)
        }
        _ => None,
    }
}

impl SecretMatcher {
    pub(crate) fn new(value: &str) -> SecretMatcher {
        let mut canon: Vec<u8> = value.bytes().filter(|b| *b != b'\\').collect();
        // Mostly backslashes: what is left would match ordinary text. Only the value as
        // it is, then.
        if canon.len() < MIN_SECRET_TAIL {
            canon.clear();
        }
        let mut fail = vec![0; canon.len()];
        let mut k = 0;
        for i in 1..canon.len() {
            while k > 0 && canon[i] != canon[k] {
                k = fail[k - 1];
            }
            if canon[i] == canon[k] {
                k += 1;
            }
            fail[i] = k;
        }
        SecretMatcher {
            canon,
            value: value.as_bytes().to_vec(),
            fail,
        }
    }

    /// The spans of `hay` that hold the value, leftmost first, not overlapping.
    pub(crate) fn find(&self, hay: &[u8]) -> Vec<(usize, usize)> {
        let m = self.canon.len();
        let mut out = Vec::new();
        if m == 0 {
            if !self.value.is_empty() {
                let mut at = 0;
                while let Some(i) = hay[at..]
                    .windows(self.value.len())
                    .position(|w| w == self.value.as_slice())
                {
                    out.push((at + i, at + i + self.value.len()));
                    at += i + self.value.len();
                }
            }
            return out;
        }
        // Where each of the last `m` characters began (a ring), the characters matched.
        let mut starts = vec![0usize; m];
        let (mut seen, mut q) = (0usize, 0usize);
        // Where the run of backslashes before the next character began.
        let mut run: Option<usize> = None;
        let mut i = 0;
        while i < hay.len() {
            // An escape here: a backslash, bare or as `\u005c` (it only escapes what
            // follows), `\u00XX`, or `u00XX` after a backslash written `\u005c` (the
            // `\u00XX` of an earlier round, escaped again).
            let escape = if hay[i] == b'\\' {
                Some(u00_escape(&hay[i + 1..]).map_or((b'\\', 1), |b| (b, 6)))
            } else if run.is_some() {
                u00_escape(&hay[i..]).map(|b| (b, 5))
            } else {
                None
            };
            let (b, end) = match escape {
                Some((b'\\', len)) => {
                    run.get_or_insert(i);
                    i += len;
                    continue;
                }
                Some((b, len)) => (b, i + len),
                None => (hay[i], i + 1),
            };
            let start = run.take().unwrap_or(i);
            i = end;
            while q > 0 && self.canon[q] != b {
                q = self.fail[q - 1];
            }
            if self.canon[q] == b {
                q += 1;
            }
            starts[seen % m] = start;
            seen += 1;
            if q == m {
                out.push((starts[(seen - m) % m], end));
                q = 0;
            }
        }
        out
    }

    /// `hay` with each span [`find`](Self::find) gives replaced by `marker`, and how many.
    pub(crate) fn replace(&self, hay: &[u8], marker: &[u8]) -> (Vec<u8>, u64) {
        let spans = self.find(hay);
        if spans.is_empty() {
            return (Vec::new(), 0);
        }
        let mut out = Vec::with_capacity(hay.len());
        let mut at = 0;
        for (a, b) in &spans {
            out.extend_from_slice(&hay[at..*a]);
            out.extend_from_slice(marker);
            at = *b;
        }
        out.extend_from_slice(&hay[at..]);
        (out, spans.len() as u64)
    }
}

/// Shortest beginning of a credential's value redacted at the end of a string: what a cap
/// (stdout's, an error message's, a session value's) leaves of a value it cut.
const MIN_SECRET_TAIL: usize = 8;

/// Where `text` (less one trailing `...`, a cut value's mark) ends in the first
/// [`MIN_SECRET_TAIL`] or more characters of `secret` (not all of it: the literal pass
/// took whole ones): the byte index that beginning starts at.
fn cut_secret_tail(text: &str, secret: &str) -> Option<usize> {
    let body = text.strip_suffix("...").unwrap_or(text).as_bytes();
    let secret = secret.as_bytes();
    let longest = secret.len().saturating_sub(1).min(body.len());
    (MIN_SECRET_TAIL..=longest)
        .rev()
        .find(|n| body.ends_with(&secret[..*n]))
        .map(|n| body.len() - n)
}

/// `content` with every brokered credential's value (in every form [`SecretMatcher`]
/// covers) replaced by its marker (`[REDACTED:credential_<name>]`), and how many
/// replacements were made: for bytes that leave agentjail outside a record (artifacts,
/// their names, a workspace's files).
pub fn scrub_bytes(content: &[u8], secrets: &[crate::policy::Secret]) -> (Vec<u8>, u64) {
    let mut n = 0;
    let mut content = content.to_vec();
    for s in secrets {
        if s.value.is_empty() {
            continue;
        }
        let marker = format!("[REDACTED:credential_{}]", s.name).into_bytes();
        let (out, k) = SecretMatcher::new(&s.value).replace(&content, &marker);
        if k > 0 {
            content = out;
            n += k;
        }
    }
    (content, n)
}

/// Replace every brokered credential's value in the artifacts' names and bytes with its
/// marker (size, digest and media type recomputed), before they are written anywhere or
/// put in a record: a file is not text the record's pass sees, and an artifacts directory
/// on the host keeps the name as the file's. Returns how many replacements were made.
pub fn scrub_artifacts(
    c: &mut crate::artifacts::Collected,
    secrets: &[crate::policy::Secret],
) -> u64 {
    use sha2::{Digest, Sha256};
    let mut n = 0;
    for a in &mut c.artifacts {
        let (name, k) = scrub_bytes(a.path.as_bytes(), secrets);
        if k > 0 {
            n += k;
            a.path = String::from_utf8_lossy(&name).into_owned();
        }
        let (content, k) = scrub_bytes(&a.content, secrets);
        if k > 0 {
            n += k;
            a.content = content;
            a.bytes = a.content.len() as u64;
            a.sha256 = format!("{:x}", Sha256::digest(&a.content));
            a.media_type = crate::artifacts::media_type(&a.content);
        }
    }
    n
}

/// The audit log keeps an artifact's metadata (name, size, media type, sha256), never its
/// bytes: a log line per job stays small, and no file content outlives the job there. The
/// same for rich results' images (`results`: their text formats stay, redacted).
fn drop_artifact_bytes(record: &mut Value) {
    if let Some(Value::Array(items)) = record.get_mut("artifacts") {
        for a in items {
            if let Value::Object(m) = a {
                m.remove("content_base64");
            }
        }
    }
    if let Some(Value::Array(bundles)) = record.get_mut("results") {
        for b in bundles {
            if let Value::Object(m) = b {
                m.retain(|k, _| !k.starts_with("image/") || k == "image/svg+xml");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor(printed: bool, patterns: &[&str]) -> Redactor {
        Redactor::new(&Redaction {
            defaults: true,
            patterns: patterns.iter().map(|s| s.to_string()).collect(),
            printed,
            secrets: Vec::new(),
        })
        .unwrap()
    }

    #[test]
    fn every_built_in_kind_is_caught() {
        let r = redactor(false, &[]);
        let secrets = [
            ("aws_access_key", "AKIAIOSFODNN7EXAMPLE"),
            ("aws_access_key", "ASIAY34FZKBOKMUTVV7A"),
            (
                "aws_secret_key",
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            ),
            ("api_key", "sk-proj-abcdefghijklmnopqrstuvwx0123"),
            ("api_key", "sk-ant-api03-abcdefghijklmnopqrstu"),
            ("bearer_token", "Authorization: Bearer abcdef0123456789abcdef"),
            (
                "jwt",
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            ),
            (
                "private_key",
                "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----",
            ),
            ("private_key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk (cut"),
            ("github_token", "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"),
            ("github_token", "github_pat_11ABCDEFG0123456789_abcdefghij"),
            ("slack_token", "xoxb-1234567890-abcdefghij"),
            ("google_api_key", "AIzaSyA-1234567890abcdefghijklmnopqrstu"),
        ];
        for (kind, secret) in secrets {
            let mut c = Counts::default();
            let text = format!("before {secret} after");
            let out = r
                .text(&text, &mut c)
                .unwrap_or_else(|| panic!("{kind} missed: {secret}"));
            assert!(out.contains(&format!("[REDACTED:{kind}]")), "{kind}: {out}");
            // No 8-character run of the secret's distinctive part survives.
            let tail = &secret[secret.len() - 8..];
            assert!(!out.contains(tail), "{kind}: {out}");
            assert_eq!(c.0.get(kind), Some(&1), "{kind}: {c:?}");
        }
    }

    #[test]
    fn ordinary_text_and_hashes_pass_untouched() {
        let r = redactor(false, &[]);
        let mut c = Counts::default();
        for text in [
            "fc11d6f28e59d3cc33c0b14ceb644bf0902ebd63d61218dffe9e7dac7c254542",
            "3b943b3e-88e5-4feb-a9bc-d131dc87351d",
            "the task was a risky one; bearer of good news",
            "AKIA is a prefix",
            "P1 incident inc_payments_20260307",
        ] {
            assert_eq!(r.text(text, &mut c), None, "{text}");
        }
        assert_eq!(c.total(), 0);
    }

    #[test]
    fn the_audit_copy_is_redacted_and_drops_artifact_bytes() {
        let r = redactor(false, &[r"\bACME-[0-9]{6}\b"]);
        let mut rec = json!({
            "execution": {"stdout": "key AKIAIOSFODNN7EXAMPLE\n", "stderr": "ACME-123456"},
            "output": {"sk-abcdefghijklmnopqrstuvwxyz": ["xoxp-1234567890-abc"]},
            "artifacts": [{"path": "AKIAIOSFODNN7EXAMPLE.txt", "content_base64": "QUtJQQ=="}],
        });
        let audit = r.seal(&mut rec);
        let a = audit.to_string();
        assert!(!a.contains("AKIAIOSFODNN7EXAMPLE"), "{a}");
        assert!(!a.contains("ACME-123456"), "{a}");
        assert!(!a.contains("sk-abcdefghijklmnopqrstuvwxyz"), "{a}");
        assert!(!a.contains("xoxp-1234567890"), "{a}");
        assert!(!a.contains("content_base64"), "{a}");
        assert_eq!(audit["redaction"]["replacements"], 5);
        assert_eq!(audit["redaction"]["kinds"]["pattern_0"], 1);
        // The printed copy keeps what the program produced, and says how much was redacted.
        assert!(rec.to_string().contains("AKIAIOSFODNN7EXAMPLE"));
        assert_eq!(rec["redaction"]["replacements"], 5);
        assert_eq!(rec["redaction"]["printed_redacted"], false);
    }

    #[test]
    fn the_audit_copy_of_results_keeps_their_text_redacted_and_no_image_bytes() {
        let r = redactor(false, &[]);
        let mut rec = json!({"results": [
            {"image/png": "iVBORw0KGgo=", "image/jpeg": "/9j/", "image/svg+xml": "<svg/>",
             "text/html": "<b>AKIAIOSFODNN7EXAMPLE</b>", "text/plain": "fig"},
        ]});
        let audit = r.seal(&mut rec);
        assert_eq!(
            audit["results"],
            json!([{"image/svg+xml": "<svg/>", "text/html": "<b>[REDACTED:aws_access_key]</b>",
                    "text/plain": "fig"}])
        );
        // The printed copy keeps the images (the caller's own results).
        assert_eq!(rec["results"][0]["image/png"], "iVBORw0KGgo=");
    }

    #[test]
    fn printed_true_redacts_the_printed_copy_too() {
        let r = redactor(true, &[]);
        let mut rec =
            json!({"execution": {"stdout": "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"}});
        r.seal(&mut rec);
        assert_eq!(
            rec["execution"]["stdout"], "[REDACTED:github_token]",
            "{rec}"
        );
        assert_eq!(rec["redaction"]["printed_redacted"], true);
    }
}

#[cfg(test)]
mod secret_tests {
    use super::*;
    use crate::policy::Secret;

    fn with_secret(printed: bool) -> Redactor {
        Redactor::new(&Redaction {
            defaults: true,
            patterns: Vec::new(),
            printed,
            secrets: vec![Secret {
                name: "api".into(),
                value: "plainvalue-42.x".into(),
            }],
        })
        .unwrap()
    }

    /// A credential's value is a literal (its `.` matches only a dot) and leaves both
    /// copies, whatever `printed` says.
    #[test]
    fn credential_values_leave_both_copies() {
        for printed in [false, true] {
            let r = with_secret(printed);
            let mut rec = json!({
                "execution": {"stdout": "got plainvalue-42.x twice: plainvalue-42.x\n",
                              "stderr": "plainvalue-42Xx stays"},
                "output": {"plainvalue-42.x": "k"},
            });
            let audit = r.seal(&mut rec);
            for copy in [&audit, &rec] {
                let t = copy.to_string();
                assert!(!t.contains("plainvalue-42.x"), "{printed}: {t}");
                assert!(t.contains("[REDACTED:credential_api]"), "{t}");
                assert!(t.contains("plainvalue-42Xx stays"), "{t}");
            }
            assert_eq!(audit["redaction"]["kinds"]["credential_api"], 3);
        }
        // Without secrets and printed = false, the printed copy is left alone.
        let r = redactor_plain();
        let mut rec = json!({"execution": {"stdout": "AKIAIOSFODNN7EXAMPLE"}});
        r.seal(&mut rec);
        assert_eq!(rec["execution"]["stdout"], "AKIAIOSFODNN7EXAMPLE");
    }

    fn redactor_plain() -> Redactor {
        Redactor::new(&Redaction::default()).unwrap()
    }

    /// A redactor holding one brokered credential, `api`, of this value.
    fn api_secret(value: &str) -> Redactor {
        Redactor::new(&Redaction {
            secrets: vec![Secret {
                name: "api".into(),
                value: value.into(),
            }],
            ..Redaction::default()
        })
        .unwrap()
    }

    /// An upstream's JSON echo printed as it came: the value with `/`, `"`, `\\`, `+`
    /// escaped as encoders do (PHP's `\/`, .NET's `\u002B`) is the value.
    #[test]
    fn json_escaped_forms_of_a_value_are_the_value() {
        let value = r#"k3y/with"quote\and+plus"#;
        let r = api_secret(value);
        let escaped = [
            value.to_string(),
            r#"k3y\/with\"quote\\and+plus"#.to_string(),
            r#"k3y\u002fwith\u0022quote\u005Cand\u002Bplus"#.to_string(),
        ];
        for form in &escaped {
            let mut rec = json!({"execution": {"stdout": format!("{{\"h\": \"{form}\"}}")}});
            r.seal(&mut rec);
            assert_eq!(
                rec["execution"]["stdout"], "{\"h\": \"[REDACTED:credential_api]\"}",
                "{form}"
            );
        }
        use crate::artifacts::{Artifact, Collected};
        let mut c = Collected::default();
        c.artifacts.push(Artifact {
            path: "a.json".into(),
            bytes: 0,
            sha256: String::new(),
            media_type: "text/plain",
            content: escaped.join(" ").into_bytes(),
            stamp: (0, 0, 0),
        });
        let secrets = [Secret {
            name: "api".into(),
            value: value.into(),
        }];
        assert_eq!(scrub_artifacts(&mut c, &secrets), 3);
        assert_eq!(
            String::from_utf8_lossy(&c.artifacts[0].content),
            "[REDACTED:credential_api] [REDACTED:credential_api] [REDACTED:credential_api]"
        );
    }

    /// Escaping repeated any number of times, backslashes doubled, every character as
    /// `\u00XX`, and mixtures of them: each is the value, and only the value's span goes.
    #[test]
    fn repeated_escapes_of_a_value_are_the_value() {
        let value = r#"k3y/with"quote\and+plus<7f3a9c>"#;
        let r = api_secret(value);
        // The value inside a string escaped 1, 2, 3 times (less the quotes around it).
        let esc = |s: &str| {
            let q = serde_json::to_string(s).unwrap();
            q[1..q.len() - 1].to_string()
        };
        let (once, twice) = (esc(value), esc(&esc(value)));
        let thrice = esc(&twice);
        let all_u: String = value
            .chars()
            .map(|c| format!("\\u{:04x}", c as u32))
            .collect();
        let all_u_upper: String = value
            .chars()
            .map(|c| format!("\\u{:04X}", c as u32))
            .collect();
        let forms = [
            value.to_string(),
            once.clone(),
            twice,
            thrice,
            value.replace('\\', "\\\\\\\\"),
            once.replace('/', "\\/"),
            all_u.clone(),
            all_u_upper,
            esc(&all_u),
            all_u.replace('\\', "\\u005c"),
            r#"k3y\\\/with\\\"quote\\\\and\u002Bplus\u003c7f3a9c\u003e"#.to_string(),
        ];
        for form in &forms {
            let mut c = Counts::default();
            let text = format!("a={form};");
            let out = r
                .text(&text, &mut c)
                .unwrap_or_else(|| panic!("missed {form}"));
            assert_eq!(out, "a=[REDACTED:credential_api];", "{form}");
            assert_eq!(c.0["credential_api"], 1, "{form}");
            let (bytes, n) = scrub_bytes(
                text.as_bytes(),
                &[Secret {
                    name: "api".into(),
                    value: value.into(),
                }],
            );
            assert_eq!(
                (bytes.as_slice(), n),
                (&b"a=[REDACTED:credential_api];"[..], 1)
            );
        }
        // Three in a row, non-ASCII around them: each goes, the rest stays.
        let text = format!("é{}ü{}{}ñ", forms[3], forms[6], forms[0]);
        let out = r.text(&text, &mut Counts::default()).unwrap();
        assert_eq!(
            out,
            "é[REDACTED:credential_api]ü[REDACTED:credential_api][REDACTED:credential_api]ñ"
        );
        // Near misses stay: another character, one missing, \u00XX of another byte.
        for near in [
            r#"k3y/with"quote\and+plus<7f3a9d>"#,
            r#"k3y/with"quote\and+plus<7f3a9>"#,
            r#"k3y/with"quote\and\u002Cplus<7f3a9c>"#,
        ] {
            assert_eq!(r.text(near, &mut Counts::default()), None, "{near}");
        }
    }

    /// The matcher's cost is the text's length: a megabyte of backslashes and of the
    /// value's beginning repeated, each scanned once (KMP never goes back in the text).
    #[test]
    fn hostile_text_costs_one_pass() {
        let m = SecretMatcher::new("aaaaaaab");
        let text = "a".repeat(1 << 20);
        assert!(m.find(text.as_bytes()).is_empty());
        let text = "\\".repeat(1 << 20) + "aaaaaaab";
        assert_eq!(m.find(text.as_bytes()), [(0, text.len())]);
        let text = "\\u005c".repeat(1 << 18) + "\\u0061" + "aaaaaab";
        assert_eq!(m.find(text.as_bytes()), [(0, text.len())]);
        // A value of backslashes only, or nearly, is looked for as it is.
        let m = SecretMatcher::new("\\\\\\\\\\\\\\x");
        assert_eq!(m.find(b"x x\\x"), []);
        assert_eq!(m.find(b"-\\\\\\\\\\\\\\x"), [(1, 9)]);
        let m = SecretMatcher::new("\\\\\\\\\\\\\\\\");
        assert_eq!(m.find(b"x\\\\\\\\\\\\\\\\y"), [(1, 9)]);
        assert!(m.find(b"xy").is_empty());
    }

    /// The longest value a key file may hold, every character one JSON escapes: its
    /// pattern still compiles (a redactor that cannot be built redacts nothing).
    #[test]
    fn the_longest_value_of_escaped_characters_compiles() {
        let value: String = "/\"+<&'=>\\"
            .chars()
            .cycle()
            .take(crate::policy::MAX_SECRET_BYTES as usize)
            .collect();
        let r = Redactor::new(&Redaction {
            secrets: vec![Secret {
                name: "api".into(),
                value: value.clone(),
            }],
            ..Redaction::default()
        });
        let r = r.expect("compiles");
        let mut rec = json!({"execution": {"stdout": format!("a{value}b")}});
        r.seal(&mut rec);
        assert_eq!(rec["execution"]["stdout"], "a[REDACTED:credential_api]b");
    }

    /// A redactor that cannot be built (a pattern the loader would have refused) leaves
    /// neither copy holding a credential's value: both are the stub that says why.
    #[test]
    fn no_redactor_means_no_printed_record_with_secrets() {
        use crate::pipeline::record::Sealed;
        let p = Redaction {
            patterns: vec!["(".into()],
            secrets: vec![Secret {
                name: "api".into(),
                value: "plainvalue-42.x".into(),
            }],
            ..Redaction::default()
        };
        let rec = json!({"run_id": "r", "stop_reason": "success",
                         "execution": {"stdout": "plainvalue-42.x"}});
        let s = Sealed::of(crate::verdict::StopReason::Success, rec.clone(), &p);
        for copy in [&s.value, s.audit_value()] {
            assert!(!copy.to_string().contains("plainvalue"), "{copy}");
            assert!(copy["redaction"]["error"].is_string(), "{copy}");
        }
        // Without secrets the printed copy is the caller's own output, kept.
        let p = Redaction {
            patterns: vec!["(".into()],
            ..Redaction::default()
        };
        let s = Sealed::of(crate::verdict::StopReason::Success, rec.clone(), &p);
        assert_eq!(s.value, rec);
    }

    /// A cap that cut the value (stdout's, an exception message's, a session value's
    /// `...`) leaves its beginning at the string's end: that goes too, from 8 characters.
    #[test]
    fn a_value_cut_by_a_cap_loses_its_beginning_too() {
        let r = with_secret(false);
        for (text, want) in [
            ("echo: plainvalue-4", "echo: [REDACTED:credential_api]"),
            (
                "echo: plainvalue-42....",
                "echo: [REDACTED:credential_api]...",
            ),
            ("plainval", "[REDACTED:credential_api]"),
            (
                "plainvalue-42.x plainvalue-42",
                "[REDACTED:credential_api] [REDACTED:credential_api]",
            ),
        ] {
            let mut rec = json!({"execution": {"stdout": text}});
            r.seal(&mut rec);
            assert_eq!(rec["execution"]["stdout"], want, "{text}");
        }
        // Seven characters, or the beginning anywhere but at the end, stay.
        for text in ["ends plainva", "plainvalue-4 then more"] {
            let mut rec = json!({"execution": {"stdout": text}});
            r.seal(&mut rec);
            assert_eq!(rec["execution"]["stdout"], text);
        }
    }

    #[test]
    fn artifacts_lose_the_value_and_get_a_new_digest() {
        use crate::artifacts::{Artifact, Collected};
        let art = |content: &[u8]| Artifact {
            path: "a.txt".into(),
            bytes: content.len() as u64,
            sha256: "old".into(),
            media_type: "text/plain",
            content: content.to_vec(),
            stamp: (0, 0, 0),
        };
        let mut c = Collected::default();
        c.artifacts.push(art(b"k=plainvalue-42.x;plainvalue-42.x"));
        c.artifacts.push(art(b"nothing here"));
        let secrets = [Secret {
            name: "api".into(),
            value: "plainvalue-42.x".into(),
        }];
        assert_eq!(scrub_artifacts(&mut c, &secrets), 2);
        let a = &c.artifacts[0];
        let want = b"k=[REDACTED:credential_api];[REDACTED:credential_api]";
        assert_eq!(a.content, want);
        assert_eq!(a.bytes, want.len() as u64);
        assert_ne!(a.sha256, "old");
        assert_eq!(c.artifacts[1].sha256, "old", "untouched");
        assert_eq!(scrub_artifacts(&mut c, &[]), 0);
        // A file named after the value is renamed: the name is what an artifacts
        // directory keeps.
        let mut c = Collected::default();
        c.artifacts.push(art(b"x"));
        c.artifacts[0].path = "d/plainvalue-42.x.txt".into();
        assert_eq!(scrub_artifacts(&mut c, &secrets), 1);
        assert_eq!(c.artifacts[0].path, "d/[REDACTED:credential_api].txt");
        assert_eq!(c.artifacts[0].sha256, "old", "the bytes were not touched");
    }
}
