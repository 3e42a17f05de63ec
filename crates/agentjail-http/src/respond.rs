//! The answers every route builds: JSON through agentjail-json's safe writer, raw bytes,
//! and the refusal `{"error": {"code", "message"}}` (an engine error's status from the one
//! table, crate::status). A leaf: it knows no route and no server state.

use agentjail_engine::engine::{EngineError, ErrorCode};
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, ALLOW, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::{json, Value};

pub type Resp = Response<RespBody>;

/// A response's body: whole (every answer but a streamed one), or the lines of a streamed
/// job as they come (crate::chan, crate::stream).
pub enum RespBody {
    Whole(Full<Bytes>),
    Lines(crate::chan::ChanBody),
}

impl hyper::body::Body for RespBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        match self.get_mut() {
            RespBody::Whole(b) => std::pin::Pin::new(b).poll_frame(cx),
            RespBody::Lines(b) => std::pin::Pin::new(b).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            RespBody::Whole(b) => b.is_end_stream(),
            RespBody::Lines(_) => false,
        }
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        match self {
            RespBody::Whole(b) => b.size_hint(),
            RespBody::Lines(_) => hyper::body::SizeHint::default(),
        }
    }
}

/// A response of raw bytes.
pub fn bytes_resp(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Resp {
    respond(status, content_type, body)
}

fn respond(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Resp {
    let mut r = Response::new(RespBody::Whole(Full::new(Bytes::from(body))));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

pub fn json_resp(status: StatusCode, v: &Value) -> Resp {
    respond(
        status,
        "application/json",
        agentjail_json::to_safe_string(v).into_bytes(),
    )
}

pub fn error(status: StatusCode, code: &str, message: &str) -> Resp {
    json_resp(
        status,
        &json!({"error": {"code": code, "message": agentjail_json::safe_text(message, 2000)}}),
    )
}

pub(crate) fn method_not_allowed(allowed: &str) -> Resp {
    let mut r = error(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route takes another method (see Allow)",
    );
    if let Ok(v) = HeaderValue::from_str(allowed) {
        r.headers_mut().insert(ALLOW, v);
    }
    r
}

/// An engine error as a response: the status from the one table (crate::status), the
/// code's spelling, and the message (an unknown id says no more than that: another
/// caller's sessions and workspaces are not confirmed to exist).
pub fn engine_error(e: EngineError) -> Resp {
    let message = match e.code {
        ErrorCode::UnknownSession => "no such session for this caller".to_string(),
        ErrorCode::UnknownWorkspace => "no such workspace for this caller".to_string(),
        _ => e.message,
    };
    error(crate::status::of(e.code), e.code.as_str(), &message)
}

pub fn bad_request(message: &str) -> Resp {
    error(StatusCode::BAD_REQUEST, "bad_request", message)
}
