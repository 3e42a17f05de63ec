//! The routes' dispatch: each request is matched on its exact path (crate::paths),
//! authenticated, admitted, its body read within its bounds (crate::body), and handed to its
//! handler (crate::runs, crate::workspaces; `/v1/stats` and `/metrics` are answered here).
//! Every refusal is `{"error": {"code", "message"}}` (except `/run_code`'s, which are
//! SandboxFusion's, and the runtime routes', which are its own), and no message echoes a
//! byte of the path.

// A refusal is the HTTP response itself, made once per request and returned at once.
#![allow(clippy::result_large_err)]

use crate::answer::blocking;
use crate::body::{BODY_TIMEOUT, MAX_BODY_BYTES};
use crate::paths::{route, Route};
use crate::respond::{bytes_resp, error, json_resp, Resp};
use crate::runs::{engine_route, run_code};
use crate::state::{Caller, State};
use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Request, StatusCode};
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// A session or workspace route over TCP without tokens: 403. Over tokenless TCP every
/// local user (uid 65534 included) is the same caller, so a session or workspace one of
/// them opened would be every other's to use; only requests that keep no state are served.
pub fn refuse_anonymous_state(st: &State) -> Resp {
    st.metrics.refused_anonymous.fetch_add(1, Ordering::Relaxed);
    error(
        StatusCode::FORBIDDEN,
        "caller_unidentified",
        "sessions and workspaces need a caller this server can tell apart from other local users, and over TCP without tokens every local user is the same caller: start the server with --token-file FILE and send `Authorization: Bearer TOKEN`, or serve on a unix socket (--http unix:PATH: the peer's uid is the caller); /v1/run, /v1/check and /run_code need neither",
    )
}

/// An admitted request's slot, given back when it is answered.
struct Admitted(Arc<State>);

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.admitted.fetch_sub(1, Ordering::SeqCst);
    }
}

fn admit(st: &Arc<State>) -> Option<Admitted> {
    if st.admitted.fetch_add(1, Ordering::SeqCst) >= st.max_admitted {
        st.admitted.fetch_sub(1, Ordering::SeqCst);
        return None;
    }
    Some(Admitted(Arc::clone(st)))
}

/// One request, start to end.
pub async fn handle(
    st: Arc<State>,
    uid: Option<u32>,
    stop: Option<Arc<agentjail_engine::engine::ClientStop>>,
    req: Request<Incoming>,
) -> Resp {
    let r = match route(req.method(), req.uri().path()) {
        Ok(r) => r,
        Err(resp) => {
            st.metrics.bad_requests.fetch_add(1, Ordering::Relaxed);
            return resp;
        }
    };
    if let Some(resp) = liveness(&r) {
        return resp;
    }
    let token = match &st.tokens {
        None => None,
        Some(t) => {
            let header = req.headers().get(hyper::header::AUTHORIZATION);
            match t.who(header.map(HeaderValue::as_bytes)) {
                Some(name) => Some(name.to_string()),
                None => {
                    st.metrics
                        .refused_unauthorized
                        .fetch_add(1, Ordering::Relaxed);
                    let mut resp = error(
                        StatusCode::UNAUTHORIZED,
                        "unauthorized",
                        "send `Authorization: Bearer TOKEN` with a token from the server's --token-file",
                    );
                    resp.headers_mut().insert(
                        hyper::header::WWW_AUTHENTICATE,
                        HeaderValue::from_static("Bearer"),
                    );
                    return resp;
                }
            }
        }
    };
    let caller = Caller { token, uid, stop };
    // Without --pod-workspace the runtime's routes are not there at all: 404 below.
    let absent = r.is_pod() && st.pod_workspace.is_none();
    if r.keeps_state() && !absent && !caller.identified() {
        return refuse_anonymous_state(&st);
    }
    // What reads no body and runs nothing answers even when the server is saturated: an
    // operator needs /metrics and /v1/stats most then.
    if matches!(r, Route::Stats | Route::Metrics) {
        return dispatch(&st, r, caller, Bytes::new()).await;
    }
    let Some(slot) = admit(&st) else {
        return saturated(&st);
    };
    let streamed = crate::stream::wanted(&r, req.headers().get(hyper::header::ACCEPT));
    let content_type = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = match read_body(&st, req).await {
        Ok(b) => b,
        Err(resp) => return resp,
    };
    if streamed {
        return crate::stream::respond(&st, r, caller, body, Box::new(slot));
    }
    let resp = if r.is_workspace() {
        crate::workspaces::dispatch(&st, r, &caller, body, content_type).await
    } else {
        dispatch(&st, r, caller, body).await
    };
    drop(slot);
    resp
}

/// 429: as many requests admitted as the server takes.
fn saturated(st: &State) -> Resp {
    st.metrics.refused_saturated.fetch_add(1, Ordering::Relaxed);
    let mut resp = error(
        StatusCode::TOO_MANY_REQUESTS,
        "too_many_requests",
        "the server has as many requests waiting as it takes; retry after a second",
    );
    resp.headers_mut()
        .insert(hyper::header::RETRY_AFTER, HeaderValue::from_static("1"));
    resp
}

/// `/healthz` and SandboxFusion's `/v1/ping`: answered before any token is asked for.
fn liveness(r: &Route) -> Option<Resp> {
    match r {
        Route::Healthz => Some(json_resp(StatusCode::OK, &json!({"ok": true}))),
        Route::Ping => Some(json_resp(StatusCode::OK, &json!("pong"))),
        _ => None,
    }
}

async fn read_body(st: &State, req: Request<Incoming>) -> Result<Bytes, Resp> {
    let too_large = || {
        st.metrics.refused_too_large.fetch_add(1, Ordering::Relaxed);
        error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            &format!("a request body is at most {} MiB", MAX_BODY_BYTES >> 20),
        )
    };
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    let limited = Limited::new(req.into_body(), MAX_BODY_BYTES);
    match tokio::time::timeout(BODY_TIMEOUT, limited.collect()).await {
        Err(_) => Err(error(
            StatusCode::REQUEST_TIMEOUT,
            "body_timeout",
            &format!(
                "the body did not arrive within {} s",
                BODY_TIMEOUT.as_secs()
            ),
        )),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Ok(Err(_)) => Err(error(
            StatusCode::BAD_REQUEST,
            "bad_body",
            "the request body could not be read",
        )),
        Ok(Ok(c)) => Ok(c.to_bytes()),
    }
}

async fn dispatch(st: &Arc<State>, r: Route, caller: Caller, body: Bytes) -> Resp {
    let started = Instant::now();
    let owner = st.owner(&caller.key());
    let s = Arc::clone(st);
    let answer = match r {
        // Bodies are parsed on the job thread too: a large one must not stall the thread
        // that reads every connection.
        Route::Run
        | Route::Check
        | Route::SessionStart
        | Route::SessionExec(_)
        | Route::SessionClose(_) => {
            blocking(st, move || {
                engine_route(&s, r, &caller, owner, &body, started, None)
            })
            .await
        }
        Route::Stats => Ok(json_resp(StatusCode::OK, &stats(st))),
        Route::Metrics => Ok(bytes_resp(
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            metrics_text(st).into_bytes(),
        )),
        Route::RunCode => Ok(run_code(st, caller, body, started).await),
        Route::Healthz => Ok(json_resp(StatusCode::OK, &json!({"ok": true}))),
        Route::Ping => Ok(json_resp(StatusCode::OK, &json!("pong"))),
        // Answered by crate::workspaces::dispatch.
        _ => Ok(error(StatusCode::NOT_FOUND, "not_found", "no such route")),
    };
    answer.unwrap_or_else(|resp| resp)
}

/// `GET /metrics`' text: the counters, the engine's gauges, the unread budget's.
fn metrics_text(st: &State) -> String {
    let mut text = st.metrics.render(
        &st.engine.stats(),
        st.admitted.load(Ordering::SeqCst),
        st.connections.load(Ordering::SeqCst),
    );
    text.push_str(&crate::metrics::unread(
        st.unread.held(),
        st.unread.budget,
        st.unread.dropped.load(Ordering::Relaxed),
    ));
    text
}

fn stats(st: &State) -> Value {
    let mut v = st.engine.stats();
    v["http"] = json!({
        "connections": st.connections.load(Ordering::SeqCst),
        "requests_in_flight": st.admitted.load(Ordering::SeqCst),
        "max_requests_in_flight": st.max_admitted,
    });
    v
}
