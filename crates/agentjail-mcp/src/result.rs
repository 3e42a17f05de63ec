//! Records, decisions and errors as MCP tool results.
//!
//! Every result carries its JSON twice, as MCP asks of a tool with an `outputSchema`:
//! `structuredContent` for programs and a text block for models and for clients that show
//! only `content` (Claude Code ignores `structuredContent` when `content` is empty). A record
//! whose status is not `ok` is a tool error (`isError: true`): the call worked, the code
//! did not, and the model should read why.
//!
//! Artifacts (the record's `artifacts: [{path, bytes, sha256, media_type,
//! content_base64?}]`) become content blocks of their own: a raster image (PNG, JPEG, GIF,
//! WebP) with inline content is MCP image content (mimeType = media_type); any other inline
//! artifact, SVG and HTML included (they can be active), is an embedded
//! resource, and one without inline content a resource link
//! (`agentjail-artifact://<run_id>/<path>`, with its size). Inline bytes travel once: the
//! block holds them, and the record's copy of the entry keeps path, bytes, sha256,
//! media_type and the URI, without `content_base64`.
//!
//! Rich results (the record's `results`: MIME bundles, typed from their content by the
//! engine) give each raster image (`image/png`, `image/jpeg`, `image/gif`, `image/webp`) an
//! MCP image content block, after the artifacts' blocks, in the results' order; the image
//! travels once there, and the record's copy of its bundle keeps the other formats (the
//! text, the HTML).

use rmcp::model::{CallToolResult, ContentBlock, Resource, ResourceContents};
use serde_json::{json, Value};

/// The URI scheme of artifacts: `agentjail-artifact://<run_id>/<path>`.
pub const ARTIFACT_SCHEME: &str = "agentjail-artifact";

/// A record as a tool result.
pub fn from_record(record: &Value) -> CallToolResult {
    let mut record = record.clone();
    let mut blocks = take_artifacts(&mut record);
    blocks.extend(take_result_images(&mut record));
    let ok = record.get("status").and_then(Value::as_str) == Some("ok");
    let mut content = vec![ContentBlock::text(agentjail_json::to_safe_string(&record))];
    content.extend(blocks);
    result(content, record, !ok)
}

/// A structured value as a tool result (`is_error` as given).
pub fn from_value(v: Value, is_error: bool) -> CallToolResult {
    let content = vec![ContentBlock::text(agentjail_json::to_safe_string(&v))];
    result(content, v, is_error)
}

fn result(content: Vec<ContentBlock>, structured: Value, is_error: bool) -> CallToolResult {
    let mut r = if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    r.structured_content = Some(structured);
    r
}

/// A request the tool refused before anything ran, shaped like a record (the tool's output
/// schema) with `invalid_request:<what>` as its stop reason.
pub fn refused_record(what: &str, message: &str) -> CallToolResult {
    let reason = agentjail_engine::verdict::StopReason::InvalidRequest(what.into());
    from_record(&agentjail_engine::pipeline::record::Record::refused(reason, message).to_value())
}

/// A refused check request, shaped like a decision.
pub fn refused_decision(what: &str, message: &str) -> CallToolResult {
    let reason = format!(
        "invalid_request:{}",
        agentjail_engine::verdict::StopReason::suffix(what)
    );
    from_value(
        json!({"decision": "deny", "reason": reason, "message": message, "violations": []}),
        true,
    )
}

/// An engine or argument error for the session tools: `{error: {code, message}}`.
pub fn error(code: &str, message: &str) -> CallToolResult {
    from_value(json!({"error": {"code": code, "message": message}}), true)
}

/// Take the artifacts' inline bytes out of `record` and return their content blocks.
fn take_artifacts(record: &mut Value) -> Vec<ContentBlock> {
    let run_id = record
        .get("run_id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let Some(items) = record.get_mut("artifacts").and_then(Value::as_array_mut) else {
        return Vec::new();
    };
    let mut blocks = Vec::new();
    for item in items.iter_mut() {
        let Some(obj) = item.as_object_mut() else {
            continue;
        };
        let path = obj
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let media = obj
            .get("media_type")
            .and_then(Value::as_str)
            .unwrap_or("application/octet-stream")
            .to_string();
        let uri = artifact_uri(&run_id, &path);
        obj.insert("uri".into(), json!(uri));
        match obj.remove("content_base64") {
            Some(Value::String(data)) => blocks.push(inline_block(&uri, &media, data)),
            _ => {
                let mut link = Resource::new(uri, path).with_mime_type(media);
                if let Some(n) = obj.get("bytes").and_then(Value::as_u64) {
                    link = link.with_size(n);
                }
                blocks.push(ContentBlock::resource_link(link));
            }
        }
    }
    blocks
}

/// Take the raster images out of the record's `results` and return them as image blocks.
fn take_result_images(record: &mut Value) -> Vec<ContentBlock> {
    let Some(bundles) = record.get_mut("results").and_then(Value::as_array_mut) else {
        return Vec::new();
    };
    let mut blocks = Vec::new();
    for bundle in bundles.iter_mut().filter_map(Value::as_object_mut) {
        for media in RASTER_IMAGES {
            if let Some(Value::String(data)) = bundle.remove(*media) {
                blocks.push(ContentBlock::image(data, *media));
            }
        }
    }
    blocks
}

/// The media types sent as MCP image content: raster formats, which hold no markup, script
/// or links. Everything else, SVG included (it can hold script, event handlers and foreign
/// HTML), travels as a resource, which a client does not render as an image.
const RASTER_IMAGES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// An artifact's bytes as a block: image content for raster images, text for textual media
/// that decodes as UTF-8, a blob otherwise.
fn inline_block(uri: &str, media: &str, data: String) -> ContentBlock {
    if RASTER_IMAGES.contains(&media) {
        return ContentBlock::image(data, media);
    }
    let textual = media.starts_with("text/")
        || matches!(
            media,
            "application/json" | "application/xml" | "image/svg+xml"
        );
    if textual {
        if let Some(text) = base64_decode(&data).and_then(|b| String::from_utf8(b).ok()) {
            return ContentBlock::resource(ResourceContents::TextResourceContents {
                uri: uri.into(),
                mime_type: Some(media.into()),
                text,
                meta: None,
            });
        }
    }
    ContentBlock::resource(ResourceContents::BlobResourceContents {
        uri: uri.into(),
        mime_type: Some(media.into()),
        blob: data,
        meta: None,
    })
}

/// `agentjail-artifact://<run_id>/<path>`, the path's segments percent-encoded (anything
/// but unreserved characters), so a hostile file name cannot change the URI's structure.
pub fn artifact_uri(run_id: &str, path: &str) -> String {
    let enc = |s: &str| -> String {
        // A dot segment would be resolved away ("..": the parent); encode it whole.
        let dots = s == "." || s == "..";
        s.bytes()
            .map(|b| {
                if !dots && (b.is_ascii_alphanumeric() || b"-._~".contains(&b)) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect()
    };
    let path: Vec<String> = path.split('/').filter(|s| !s.is_empty()).map(enc).collect();
    format!("{ARTIFACT_SCHEME}://{}/{}", enc(run_id), path.join("/"))
}

/// Standard base64 (padding optional); None when it is not base64.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let bytes = s.trim_end_matches('=').as_bytes();
    if bytes.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= val(c)? << (18 - 6 * i);
        }
        let keep = chunk.len() - 1;
        for i in 0..keep {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn as_json(r: &CallToolResult) -> Value {
        serde_json::to_value(r).unwrap()
    }

    #[test]
    fn a_stopped_record_is_a_tool_error_with_two_copies() {
        let rec = json!({"run_id": "r1", "status": "stopped", "stop_reason": "code_timeout",
                         "execution": {"stdout": "tick 1\n"}});
        let v = as_json(&from_record(&rec));
        assert_eq!(v["isError"], json!(true));
        assert_eq!(v["structuredContent"], rec);
        let text: Value = serde_json::from_str(v["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, rec);
        let ok = as_json(&from_record(&json!({"status": "ok"})));
        assert_eq!(ok["isError"], json!(false));
    }

    #[test]
    fn artifacts_become_image_resource_and_link_blocks() {
        let png = "iVBORw0KGgo="; // the PNG signature, base64
        let rec = json!({
            "run_id": "9f2c", "status": "ok", "stop_reason": "success",
            "artifacts": [
                {"path": "plot.png", "bytes": 8, "sha256": "aa", "media_type": "image/png", "content_base64": png},
                {"path": "out/table.csv", "bytes": 6, "sha256": "bb", "media_type": "text/csv", "content_base64": "YSxiCjEsMg=="},
                {"path": "blob.bin", "bytes": 3, "sha256": "cc", "media_type": "application/octet-stream", "content_base64": "AAEC"},
                {"path": "big/model weights.bin", "bytes": 123456789, "sha256": "dd", "media_type": "application/octet-stream"}
            ]
        });
        let v = as_json(&from_record(&rec));
        let c = v["content"].as_array().unwrap();
        assert_eq!(c.len(), 5, "{v:#}");
        assert_eq!(c[1]["type"], "image");
        assert_eq!(c[1]["mimeType"], "image/png");
        assert_eq!(c[1]["data"], png);
        assert_eq!(c[2]["type"], "resource");
        assert_eq!(c[2]["resource"]["text"], "a,b\n1,2");
        assert_eq!(c[2]["resource"]["mimeType"], "text/csv");
        assert_eq!(
            c[2]["resource"]["uri"],
            "agentjail-artifact://9f2c/out/table.csv"
        );
        assert_eq!(c[3]["resource"]["blob"], "AAEC");
        assert_eq!(c[4]["type"], "resource_link");
        assert_eq!(
            c[4]["uri"],
            "agentjail-artifact://9f2c/big/model%20weights.bin"
        );
        assert_eq!(c[4]["size"], 123456789);
        assert_eq!(c[4]["name"], "big/model weights.bin");
        // The bytes travel once: the record keeps the entry without its inline content.
        let arts = v["structuredContent"]["artifacts"].as_array().unwrap();
        assert!(arts.iter().all(|a| a.get("content_base64").is_none()));
        assert_eq!(arts[0]["sha256"], "aa");
        assert_eq!(arts[0]["uri"], "agentjail-artifact://9f2c/plot.png");
        assert!(!c[0]["text"].as_str().unwrap().contains(png));
    }

    #[test]
    fn result_images_become_image_blocks_and_travel_once() {
        let png = "iVBORw0KGgo=";
        let rec = json!({
            "run_id": "r2", "status": "ok", "stop_reason": "success",
            "results": [
                {"image/png": png, "text/plain": "<Figure size 640x480 with 1 Axes>"},
                {"text/html": "<table></table>", "text/plain": "df"},
                {"image/jpeg": "/9j/", "image/svg+xml": "<svg/>"}
            ]
        });
        let v = as_json(&from_record(&rec));
        let c = v["content"].as_array().unwrap();
        assert_eq!(c.len(), 3, "{v:#}");
        assert_eq!(
            (&c[1]["type"], &c[1]["mimeType"], &c[1]["data"]),
            (&json!("image"), &json!("image/png"), &json!(png))
        );
        assert_eq!(
            (&c[2]["type"], &c[2]["mimeType"]),
            (&json!("image"), &json!("image/jpeg"))
        );
        let results = &v["structuredContent"]["results"];
        assert_eq!(
            results,
            &json!([
                {"text/plain": "<Figure size 640x480 with 1 Axes>"},
                {"text/html": "<table></table>", "text/plain": "df"},
                {"image/svg+xml": "<svg/>"}
            ])
        );
        assert!(!c[0]["text"].as_str().unwrap().contains(png));
    }

    #[test]
    fn hostile_artifact_paths_cannot_reshape_the_uri() {
        assert_eq!(
            artifact_uri("r", "../x?y#z//\u{202e}"),
            "agentjail-artifact://r/%2E%2E/x%3Fy%23z/%E2%80%AE"
        );
    }

    #[test]
    fn base64_round_trips() {
        assert_eq!(base64_decode("YSxiCjEsMg==").unwrap(), b"a,b\n1,2");
        assert_eq!(base64_decode("AAEC").unwrap(), [0, 1, 2]);
        assert!(base64_decode("a$b=").is_none());
    }
}
