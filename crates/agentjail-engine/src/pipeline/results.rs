//! Rich results: the MIME bundles a Python program displays (`display(obj)`, `plt.show()`,
//! a session call's last expression with a rich repr), as the record's `results`.
//!
//! The runner (src/runner/python.py) reports each bundle on its reply pipe as one line,
//! `{"event": "result", "data": {"<mime type>": "<text or base64>", ...}}`, or, for a bundle
//! it did not send because the policy's `[results]` bounds were reached, `{"event":
//! "result", "over": "count" | "bytes"}`. The program runs in the runner's process and can
//! write such lines itself: a result is program-asserted data, like stdout. So here:
//!
//! - the bounds hold whatever the jail wrote: at most `max_count` bundles and `max_bytes`
//!   of result lines (counted as written, the newline included) per run or session call;
//!   the rest is listed in `results_skipped` (`over_count`, `over_bytes`), and the
//!   supervisor keeps at most `max_bytes` of reports beyond the runner's other ones;
//! - every format is typed from its content as artifacts are (crate::artifacts::media_type):
//!   a binary image (`image/png`, `image/jpeg`, `image/gif`, `image/webp`) is strict base64
//!   whose bytes carry that image's signature; bytes of another of these image types are
//!   filed under the type they are (`retyped`, with `as`); anything else claimed as an
//!   image is dropped (`content_mismatch`). Text formats (`text/plain`, `text/html`,
//!   `text/markdown`, `text/latex`) must be text without control characters (tab, newline
//!   and carriage return aside), `image/svg+xml` must be an SVG document, `application/json`
//!   JSON text; another type is `unsupported_format`, a value that is not a string
//!   `malformed`;
//! - nothing here reaches any other field of the record or its verdict.

use crate::pipeline::record::Recorder;
use crate::policy::ResultsPolicy;
use serde_json::{json, Map, Value};

/// Most skipped entries listed; the rest are counted in one last entry (`more`).
pub const MAX_SKIPPED: usize = 100;

/// The image types a bundle may carry (base64 on the wire).
const IMAGES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];
/// The text types a bundle may carry as they are.
const TEXTS: &[&str] = &["text/plain", "text/html", "text/markdown", "text/latex"];

/// One result or format that did not make it into `results`, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The bundle's place among the run's (or call's) result reports, from 0.
    pub result: usize,
    /// The format concerned, or None for the whole bundle.
    pub format: Option<String>,
    /// `over_count`, `over_bytes`, `content_mismatch`, `unsupported_format`, `malformed`
    /// or `retyped` (kept, under `as`).
    pub reason: &'static str,
    /// `retyped`: the type the content is.
    pub retyped_as: Option<&'static str>,
}

/// The results of one run or session call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Results {
    pub bundles: Vec<Map<String, Value>>,
    pub skipped: Vec<Skipped>,
    /// Skipped entries past [`MAX_SKIPPED`], counted.
    pub skipped_more: u64,
}

impl Results {
    fn skip(&mut self, result: usize, format: Option<&str>, reason: &'static str) {
        self.note(Skipped {
            result,
            format: format.map(|f| agentjail_json::safe_text(f, 100)),
            reason,
            retyped_as: None,
        });
    }

    fn note(&mut self, s: Skipped) {
        if self.skipped.len() < MAX_SKIPPED {
            self.skipped.push(s);
        } else {
            self.skipped_more += 1;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.bundles.is_empty() && self.skipped.is_empty() && self.skipped_more == 0
    }
}

/// What a result line says, read strictly (the jail's text).
enum Report {
    Bundle(Map<String, Value>),
    Over(&'static str),
}

fn report(line: &[u8], max_bytes: usize) -> Option<Report> {
    // A cheap test first: the reply pipe carries the runner's other reports too.
    if !line.starts_with(b"{") || !contains(line, b"\"result\"") {
        return None;
    }
    let limits = agentjail_json::ReadLimits {
        max_depth: 3,
        max_bytes,
        ..agentjail_json::ReadLimits::default()
    };
    let Value::Object(mut m) = agentjail_json::parse_strict(line, &limits).ok()? else {
        return None;
    };
    if m.get("event").and_then(Value::as_str) != Some("result") {
        return None;
    }
    match (m.remove("data"), m.get("over").and_then(Value::as_str)) {
        (Some(Value::Object(data)), _) => Some(Report::Bundle(data)),
        (None, Some("count")) => Some(Report::Over("over_count")),
        (None, Some("bytes")) => Some(Report::Over("over_bytes")),
        _ => None,
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The results the replies of one run or call hold, within `policy`'s bounds and typed
/// from their content.
pub fn from_replies(replies: &[u8], policy: &ResultsPolicy) -> Results {
    let mut out = Results::default();
    let max_bytes = policy.max_bytes.0;
    let mut used: u64 = 0;
    let mut index = 0;
    // Any line the reply buffer holds is read (it is bounded: the supervisor keeps at most
    // its reports' allowance plus max_bytes), so a line too long for the budget is still
    // listed as what it is.
    let read_max = replies.len();
    for line in replies.split(|b| *b == b'\n') {
        let size = line.len() as u64 + 1;
        let Some(r) = report(line, read_max) else {
            continue;
        };
        let i = index;
        index += 1;
        let data = match r {
            Report::Over(reason) => {
                out.skip(i, None, reason);
                continue;
            }
            Report::Bundle(data) => data,
        };
        if out.bundles.len() as u64 >= policy.max_count {
            out.skip(i, None, "over_count");
            continue;
        }
        if used + size > max_bytes {
            out.skip(i, None, "over_bytes");
            continue;
        }
        used += size;
        let bundle = typed(i, data, &mut out);
        if !bundle.is_empty() {
            out.bundles.push(bundle);
        }
    }
    out
}

/// The bundle's formats whose content is what they claim (or a retyped image), the rest
/// noted in `out`. An image retyped to a type the bundle claims itself is dropped: the
/// bundle's own claim, if true, stands.
fn typed(i: usize, data: Map<String, Value>, out: &mut Results) -> Map<String, Value> {
    let claimed: Vec<String> = data.keys().cloned().collect();
    let mut bundle = Map::new();
    for (format, value) in data {
        let Value::String(text) = value else {
            out.skip(i, Some(&format), "malformed");
            continue;
        };
        let f = format.as_str();
        if IMAGES.contains(&f) {
            match image_type(&text) {
                Some(t) if t == f => {
                    bundle.insert(format, Value::String(text));
                }
                Some(t) if !claimed.iter().any(|c| c == t) => {
                    out.note(Skipped {
                        result: i,
                        format: Some(format.clone()),
                        reason: "retyped",
                        retyped_as: Some(t),
                    });
                    bundle.insert(t.to_string(), Value::String(text));
                }
                _ => out.skip(i, Some(f), "content_mismatch"),
            }
            continue;
        }
        let sniffed = crate::artifacts::media_type(text.as_bytes());
        let fits = match f {
            "image/svg+xml" => sniffed == "image/svg+xml",
            "application/json" => sniffed == "application/json",
            _ if TEXTS.contains(&f) => sniffed != "application/octet-stream",
            _ => {
                out.skip(i, Some(f), "unsupported_format");
                continue;
            }
        };
        if fits {
            bundle.insert(format, Value::String(text));
        } else {
            out.skip(i, Some(f), "content_mismatch");
        }
    }
    bundle
}

/// The image type base64 `text` decodes to, if it is one of [`IMAGES`].
fn image_type(text: &str) -> Option<&'static str> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.as_bytes())
        .ok()?;
    let t = crate::artifacts::media_type(&bytes);
    IMAGES.iter().copied().find(|i| *i == t)
}

/// Put `res` into the record: `results` (the bundles) and `results_skipped` (what was
/// dropped or retyped), both absent when the program displayed nothing.
pub fn into_record(r: &mut Recorder, res: Results) {
    if res.is_empty() {
        return;
    }
    let mut skipped: Vec<Value> = res
        .skipped
        .iter()
        .map(|s| {
            let mut v = json!({"result": s.result, "format": s.format, "reason": s.reason});
            if let Some(t) = s.retyped_as {
                v["as"] = json!(t);
            }
            v
        })
        .collect();
    if res.skipped_more > 0 {
        skipped.push(json!({"result": null, "format": null, "reason": "more",
                            "more": res.skipped_more}));
    }
    r.sections.results = Some(Value::Array(
        res.bundles.into_iter().map(Value::Object).collect(),
    ));
    r.sections.results_skipped = Some(Value::Array(skipped));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Bytes;
    use base64::Engine as _;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    const JPEG: &[u8] = b"\xff\xd8\xff\xe0\0\x10JFIF";

    fn b64(b: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(b)
    }

    fn line(data: Value) -> String {
        format!("{}\n", json!({"event": "result", "data": data}))
    }

    fn policy(count: u64, bytes: u64) -> ResultsPolicy {
        ResultsPolicy {
            max_count: count,
            max_bytes: Bytes(bytes),
        }
    }

    fn reasons(r: &Results) -> Vec<(usize, Option<&str>, &str)> {
        r.skipped
            .iter()
            .map(|s| (s.result, s.format.as_deref(), s.reason))
            .collect()
    }

    #[test]
    fn formats_are_kept_only_when_their_content_is_what_they_claim() {
        let replies = [
            line(json!({"text/plain": "<Figure>", "image/png": b64(PNG)})),
            line(json!({"text/html": "<table><tr><td>1</td></tr></table>",
                        "text/plain": "   a\n0  1"})),
            // A liar: "PNG" bytes that are text, HTML with a NUL, an SVG that is not one.
            line(json!({"image/png": b64(b"<script>alert(1)</script>"),
                        "text/html": "<b>\u{0}</b>", "image/svg+xml": "plain words",
                        "text/plain": "ok"})),
            // A JPEG claimed as PNG is filed as what it is; not base64 is a mismatch.
            line(json!({"image/png": b64(JPEG), "image/gif": "not base64!"})),
            line(json!({"application/x-evil": "x", "text/plain": 5,
                        "application/json": "{\"a\": 1}"})),
        ]
        .concat();
        let noise = "{\"event\": \"ready\"}\nnot json\n{\"event\": \"result\"}\n";
        let r = from_replies(format!("{noise}{replies}").as_bytes(), &policy(16, 1 << 20));
        assert_eq!(r.bundles.len(), 5);
        assert_eq!(r.bundles[0]["image/png"], json!(b64(PNG)));
        assert!(r.bundles[1]["text/html"]
            .as_str()
            .unwrap()
            .contains("<table"));
        let keys = |i: usize| r.bundles[i].keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(2), ["text/plain"]);
        assert_eq!(keys(3), ["image/jpeg"]);
        assert_eq!(r.bundles[3]["image/jpeg"], json!(b64(JPEG)));
        assert_eq!(keys(4), ["application/json"]);
        let mut got = reasons(&r);
        got.sort();
        assert_eq!(
            got,
            [
                (2, Some("image/png"), "content_mismatch"),
                (2, Some("image/svg+xml"), "content_mismatch"),
                (2, Some("text/html"), "content_mismatch"),
                (3, Some("image/gif"), "content_mismatch"),
                (3, Some("image/png"), "retyped"),
                (4, Some("application/x-evil"), "unsupported_format"),
                (4, Some("text/plain"), "malformed"),
            ]
        );
        let retyped = r.skipped.iter().find(|s| s.reason == "retyped").unwrap();
        assert_eq!(retyped.retyped_as, Some("image/jpeg"));
    }

    #[test]
    fn a_retyped_image_never_replaces_the_bundles_own() {
        // The real PNG first, then a PNG claimed as JPEG: the second is dropped.
        let replies = line(json!({"image/jpeg": b64(PNG), "image/png": b64(PNG)}));
        let r = from_replies(replies.as_bytes(), &policy(16, 1 << 20));
        assert_eq!(r.bundles[0].keys().collect::<Vec<_>>(), ["image/png"]);
        assert_eq!(reasons(&r), [(0, Some("image/jpeg"), "content_mismatch")]);
    }

    #[test]
    fn bundles_past_the_count_or_the_bytes_are_listed_not_kept() {
        let one = line(json!({"text/plain": "x".repeat(100)}));
        let replies = one.repeat(5);
        let r = from_replies(replies.as_bytes(), &policy(3, 1 << 20));
        assert_eq!(r.bundles.len(), 3);
        assert_eq!(
            reasons(&r),
            [(3, None, "over_count"), (4, None, "over_count")]
        );
        // Two lines fit in the bytes, the third does not; a small one after it still fits.
        let small = line(json!({"text/plain": "y"}));
        let bytes = (2 * one.len() + small.len()) as u64;
        let r = from_replies(
            format!("{one}{one}{one}{small}").as_bytes(),
            &policy(16, bytes),
        );
        assert_eq!(r.bundles.len(), 3);
        assert_eq!(r.bundles[2]["text/plain"], "y");
        assert_eq!(reasons(&r), [(2, None, "over_bytes")]);
        // The runner's own notes of bundles it did not send.
        let notes = "{\"event\": \"result\", \"over\": \"count\"}\n{\"event\": \"result\", \"over\": \"bytes\"}\n";
        let r = from_replies(format!("{one}{notes}").as_bytes(), &policy(16, 1 << 20));
        assert_eq!(
            reasons(&r),
            [(1, None, "over_count"), (2, None, "over_bytes")]
        );
        // A line longer than max_bytes is listed too.
        let r = from_replies(one.as_bytes(), &policy(16, 50));
        assert_eq!(reasons(&r), [(0, None, "over_bytes")]);
    }

    #[test]
    fn the_skipped_list_is_bounded_and_the_record_says_how_many_more() {
        let replies = line(json!({"text/plain": "x"})).repeat(MAX_SKIPPED + 10);
        let r = from_replies(replies.as_bytes(), &policy(0, 1 << 20));
        assert_eq!((r.skipped.len(), r.skipped_more), (MAX_SKIPPED, 10));
        let mut rec = Recorder::new();
        into_record(&mut rec, r);
        let s = rec.sections.results_skipped.unwrap();
        assert_eq!(s.as_array().unwrap().len(), MAX_SKIPPED + 1);
        assert_eq!(s[MAX_SKIPPED]["more"], 10);
        assert_eq!(rec.sections.results, Some(json!([])));
        let mut rec = Recorder::new();
        into_record(
            &mut rec,
            from_replies(b"{\"event\": \"ready\"}\n", &policy(1, 1)),
        );
        assert!(rec.sections.results.is_none() && rec.sections.results_skipped.is_none());
    }
}
