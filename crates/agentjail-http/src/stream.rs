//! Streamed answers (`Accept: application/x-ndjson` on `POST /v1/run`,
//! `/v1/sessions/{id}/exec` and `/v1/workspaces/{id}/exec`): the job's output as it is read,
//! one JSON line an event, `{"event": "stdout"|"stderr", "data": TEXT}`, then one last line
//! `{"status": HTTP_STATUS, "body": ANSWER}`, where ANSWER is what the route answers without
//! streaming (the record, or `{"error": …}`) and HTTP_STATUS its status. The response itself
//! is 200 with `Content-Type: application/x-ndjson`, sent before the job ends; a client reads
//! the status from the last line. The events are the engine's (Engine::handle_streaming):
//! exactly the bytes the record keeps, under the same caps, cut at character boundaries; a
//! program's output is JSON-escaped text inside `data`, so it cannot make a line of its own.
//! The job holds its admission and its job slot until it ends, as an unstreamed one does.

use crate::answer::blocking;
use crate::chan::ChanBody;
use crate::paths::Route;
use crate::respond::{Resp, RespBody};
use crate::runs::engine_route;
use crate::state::{Caller, State};
use crate::workspaces::workspace_route;
use agentjail_engine::engine::{OutputSink, Stream};
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

/// The media type that asks for a streamed answer, and that a streamed answer has.
pub const NDJSON: &str = "application/x-ndjson";

/// Whether a request asks for its answer streamed: one of the three running routes, with
/// `Accept: application/x-ndjson`.
pub fn wanted(r: &Route, accept: Option<&HeaderValue>) -> bool {
    matches!(
        r,
        Route::Run | Route::SessionExec(_) | Route::WorkspaceExec(_)
    ) && accept
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.split(',').any(|t| t.trim().starts_with(NDJSON)))
}

/// Each chunk of output, a line on the response.
struct Lines(UnboundedSender<Bytes>);

impl OutputSink for Lines {
    fn chunk(&self, stream: Stream, text: &str) {
        let _ = self
            .0
            .send(line(&json!({"event": stream.name(), "data": text})));
    }
}

fn line(v: &Value) -> Bytes {
    let mut s = agentjail_json::to_safe_string(v);
    s.push('\n');
    Bytes::from(s)
}

/// The last line, `{"body": ANSWER, "status": N}`: the answer's bytes spliced in as they
/// are (every answer of these routes is JSON from the safe writer, crate::respond, so a
/// record is not parsed and written again); anything else would be `null`.
async fn last_line(resp: Resp) -> Bytes {
    let status = resp.status().as_u16();
    let json = resp
        .headers()
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    let body = match resp.into_body().collect().await {
        Ok(c) => c.to_bytes(),
        Err(never) => match never {},
    };
    let mut out = Vec::with_capacity(body.len() + 32);
    out.extend_from_slice(b"{\"body\":");
    out.extend_from_slice(if json && !body.is_empty() {
        &body
    } else {
        b"null"
    });
    out.extend_from_slice(format!(",\"status\":{status}}}\n").as_bytes());
    Bytes::from(out)
}

/// Start the job of `r` and answer at once with its lines; `admitted`: the request's
/// admission, held until the job ends.
pub fn respond(
    st: &Arc<State>,
    r: Route,
    caller: Caller,
    body: Bytes,
    admitted: Box<dyn Send>,
) -> Resp {
    let (tx, rx) = unbounded_channel();
    let s = Arc::clone(st);
    tokio::spawn(async move {
        let _admitted = admitted;
        let started = Instant::now();
        let owner = s.owner(&caller.key());
        let (job_state, events) = (Arc::clone(&s), tx.clone());
        let answer = blocking(&s, move || {
            let sink = Lines(events);
            let out: Option<&dyn OutputSink> = Some(&sink);
            match r {
                Route::WorkspaceExec(_) => workspace_route(
                    &job_state,
                    r,
                    &caller.engine(owner, false),
                    &body,
                    started,
                    out,
                ),
                _ => engine_route(&job_state, r, &caller, owner, &body, started, out),
            }
        })
        .await;
        let resp = answer.unwrap_or_else(|resp| resp);
        let _ = tx.send(last_line(resp).await);
    });
    let mut resp = Response::new(RespBody::Lines(ChanBody::new(rx)));
    *resp.status_mut() = StatusCode::OK;
    let h = resp.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(NDJSON));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}
