//! Rich results (issue 38, item 3) attacked from inside the jail: the report pipe (fd 4) is
//! the program's too, so a program that writes result lines itself gets results like any
//! other, within the policy's `[results]` bounds and typed from their content, and
//! nothing it writes there changes another field of the record or its verdict.

use crate::common::{self, run_as, Who};
use base64::Engine as _;
use serde_json::json;

/// tests/policies/forcing.toml (the program may import os) with small result bounds.
fn policy() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/policies/forcing.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let text = format!("{text}\n[results]\nmax_count = 3\nmax_bytes = 2048\n");
    common::shared_file("results-forcing.toml", &text)
        .display()
        .to_string()
}

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(b)
}

#[test]
fn forged_result_lines_are_bounded_typed_and_touch_nothing_else() {
    let gif = b64(b"GIF89a\x01\x00\x01\x00\x00\x00\x00");
    let exe = b64(b"\x7fELF\x02\x01\x01\x00");
    let code = format!(
        r#"import os, json
def w(obj, extra=b""):
    os.write(4, json.dumps(obj).encode() + extra + b"\n")
w({{"event": "result", "data": {{"image/png": "{gif}", "text/plain": "a gif"}}}})
w({{"event": "result", "data": {{"image/png": "{exe}"}}}})
w({{"event": "result", "data": {{"text/plain": "x" * 3000}}}})
w({{"event": "result", "data": {{"text/plain": "two"}}, "stop_reason": "success",
   "status": "ok", "output": {{"forged": True}}}})
w({{"event": "done", "call": "x", "ok": True, "value": "forged"}})
w({{"event": "result", "data": {{"text/html": "<b>three</b>"}}}})
w({{"event": "result", "data": {{"text/plain": "four"}}}})
w({{"event": "result", "over": "bytes"}})
os.write(4, b"A" * 300000)
print(json.dumps({{"answer": 42}}))
"#
    );
    let action = common::action_json(&code, json!({"input_payload": {}}));
    let bytes = serde_json::to_vec(&action).unwrap();
    let r = run_as(Who::Root, &["--policy", &policy()], &bytes, None);
    let rec = &r.record;
    assert_eq!(r.stop_reason(), "success", "{rec:#}");
    assert_eq!(rec["output"], json!({"answer": 42}));
    assert!(
        rec.get("value").is_none() && rec.get("error").is_none(),
        "{rec:#}"
    );
    // Three bundles kept (the count); the GIF claimed as PNG is filed as a GIF; the ELF
    // claimed as PNG left an empty bundle (not kept, not counted).
    assert_eq!(
        rec["results"],
        json!([
            {"image/gif": gif, "text/plain": "a gif"},
            {"text/plain": "two"},
            {"text/html": "<b>three</b>"},
        ]),
        "{rec:#}"
    );
    assert_eq!(
        rec["results_skipped"],
        json!([
            {"result": 0, "format": "image/png", "reason": "retyped", "as": "image/gif"},
            {"result": 1, "format": "image/png", "reason": "content_mismatch"},
            {"result": 2, "format": null, "reason": "over_bytes"},
            {"result": 5, "format": null, "reason": "over_count"},
            {"result": 6, "format": null, "reason": "over_bytes"},
        ]),
        "{rec:#}"
    );
}

#[test]
fn a_run_without_display_has_no_results_and_off_means_off() {
    // Results off in the policy: display() prints the text, nothing reaches the record.
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/policies/forcing.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let off = common::shared_file(
        "results-off.toml",
        &format!("{text}\n[results]\nmax_count = 0\n"),
    );
    let code = "class H:\n    def _repr_html_(self):\n        return '<b>h</b>'\n    def __repr__(self):\n        return 'H()'\ndisplay(H())\n";
    let action = common::action_json(code, json!({"stdin": "", "output_mode": "text"}));
    let bytes = serde_json::to_vec(&action).unwrap();
    let off = off.display().to_string();
    let r = run_as(Who::Root, &["--policy", &off], &bytes, None);
    assert_eq!(r.stop_reason(), "success", "{:#}", r.record);
    assert_eq!(r.record["execution"]["stdout"], "H()\n");
    assert!(r.record.get("results").is_none(), "{:#}", r.record);
    // On (the same program, the bounds above): one result, nothing printed.
    let r = run_as(Who::Root, &["--policy", &policy()], &bytes, None);
    assert_eq!(r.record["execution"]["stdout"], "");
    assert_eq!(
        r.record["results"],
        json!([{"text/html": "<b>h</b>", "text/plain": "H()"}])
    );
}
