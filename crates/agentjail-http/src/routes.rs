//! The routes: each request is matched on its exact path (no decoding, no normalising: a
//! `..` or an encoded slash matches nothing), authenticated, admitted, its body read within
//! its bounds, and answered. Every refusal is `{"error": {"code", "message"}}` (except
//! `/run_code`'s, which are SandboxFusion's), and no message echoes a byte of the path.

// A refusal is the HTTP response itself, made once per request and returned at once.
#![allow(clippy::result_large_err)]

use crate::server::{State, BODY_TIMEOUT, MAX_BODY_BYTES};
use agentjail_engine::engine::{EngineError, ErrorCode, Outcome, Request as EngineRequest};
use agentjail_engine::pipeline::record::Sealed;
use agentjail_engine::pipeline::session::Owner;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

pub type Resp = Response<Full<Bytes>>;

#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    Run,
    Check,
    SessionStart,
    SessionExec(String),
    SessionClose(String),
    Stats,
    Healthz,
    Metrics,
    RunCode,
    WorkspaceStart,
    WorkspaceExec(String),
    WorkspacePut(String),
    WorkspaceGet(String),
    WorkspaceClose(String),
    /// The agent-sandbox runtime's routes (`--pod-workspace`).
    PodHealth,
    PodExecute,
    PodUpload,
    PodDownload(String),
    PodList(String),
    PodExists(String),
}

/// Longest session id taken from a path (ids are 32 hex digits).
const MAX_SESSION_ID: usize = 64;

/// The route of a method and a raw path, or the refusal.
pub fn route(method: &Method, path: &str) -> Result<Route, Resp> {
    let only = |m: Method, r: Route| {
        if *method == m {
            Ok(r)
        } else {
            Err(method_not_allowed(m.as_str()))
        }
    };
    match path {
        "/v1/run" => return only(Method::POST, Route::Run),
        "/v1/check" => return only(Method::POST, Route::Check),
        "/v1/sessions" => return only(Method::POST, Route::SessionStart),
        "/v1/stats" => return only(Method::GET, Route::Stats),
        "/healthz" => return only(Method::GET, Route::Healthz),
        "/metrics" => return only(Method::GET, Route::Metrics),
        "/run_code" => return only(Method::POST, Route::RunCode),
        "/v1/workspaces" => return only(Method::POST, Route::WorkspaceStart),
        "/" => return only(Method::GET, Route::PodHealth),
        "/execute" => return only(Method::POST, Route::PodExecute),
        "/upload" => return only(Method::POST, Route::PodUpload),
        _ => {}
    }
    for (prefix, r) in [
        ("/download/", Route::PodDownload as fn(String) -> Route),
        ("/list/", Route::PodList),
        ("/exists/", Route::PodExists),
    ] {
        if let Some(p) = path.strip_prefix(prefix) {
            return only(Method::GET, r(p.to_string()));
        }
    }
    if let Some(rest) = path.strip_prefix("/v1/workspaces/") {
        return workspace_route(method, rest);
    }
    let Some(rest) = path.strip_prefix("/v1/sessions/") else {
        return Err(error(StatusCode::NOT_FOUND, "not_found", "no such route"));
    };
    let (id, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let id_ok =
        !id.is_empty() && id.len() <= MAX_SESSION_ID && id.bytes().all(|b| b.is_ascii_hexdigit());
    match tail {
        "exec" | "" if !id_ok => Err(error(
            StatusCode::NOT_FOUND,
            "unknown_session",
            "no such session for this caller",
        )),
        "exec" => only(Method::POST, Route::SessionExec(id.to_string())),
        "" => only(Method::DELETE, Route::SessionClose(id.to_string())),
        _ => Err(error(StatusCode::NOT_FOUND, "not_found", "no such route")),
    }
}

/// `/v1/workspaces/{id}/exec|put|get` (POST) and `/v1/workspaces/{id}` (DELETE).
fn workspace_route(method: &Method, rest: &str) -> Result<Route, Resp> {
    let (id, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let id_ok =
        !id.is_empty() && id.len() <= MAX_SESSION_ID && id.bytes().all(|b| b.is_ascii_hexdigit());
    let make: fn(String) -> Route = match tail {
        "exec" => Route::WorkspaceExec,
        "put" => Route::WorkspacePut,
        "get" => Route::WorkspaceGet,
        "" => Route::WorkspaceClose,
        _ => return Err(error(StatusCode::NOT_FOUND, "not_found", "no such route")),
    };
    if !id_ok {
        return Err(error(
            StatusCode::NOT_FOUND,
            "unknown_workspace",
            "no such workspace for this caller",
        ));
    }
    let want = if tail.is_empty() {
        Method::DELETE
    } else {
        Method::POST
    };
    if *method != want {
        return Err(method_not_allowed(want.as_str()));
    }
    Ok(make(id.to_string()))
}

/// A response of raw bytes.
pub fn bytes_resp(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Resp {
    respond(status, content_type, body)
}

fn respond(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Resp {
    let mut r = Response::new(Full::new(Bytes::from(body)));
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

fn method_not_allowed(allowed: &str) -> Resp {
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

impl Route {
    /// The agent-sandbox runtime's routes (`--pod-workspace`).
    pub fn is_pod(&self) -> bool {
        matches!(
            self,
            Route::PodHealth
                | Route::PodExecute
                | Route::PodUpload
                | Route::PodDownload(_)
                | Route::PodList(_)
                | Route::PodExists(_)
        )
    }

    /// Whether the route creates or uses state that outlives the request (a session, a
    /// workspace, the pod's workspace): such state needs a caller who can be told apart.
    pub fn keeps_state(&self) -> bool {
        matches!(
            self,
            Route::SessionStart | Route::SessionExec(_) | Route::SessionClose(_)
        ) || self.is_workspace()
    }

    fn is_workspace(&self) -> bool {
        matches!(
            self,
            Route::WorkspaceStart
                | Route::WorkspaceExec(_)
                | Route::WorkspacePut(_)
                | Route::WorkspaceGet(_)
                | Route::WorkspaceClose(_)
        ) || self.is_pod()
    }
}

/// Who called: the token's name (with tokens), the peer's uid (a unix socket), both or
/// neither (loopback without tokens).
#[derive(Clone)]
pub struct Caller {
    pub token: Option<String>,
    pub uid: Option<u32>,
    /// The connection's own stop (the engine's client stop): a job this connection runs
    /// ends with `interrupted:sighup` when the connection is gone, closed by the client or
    /// dropped for the unread budget (crate::server).
    pub stop: Option<Arc<agentjail_engine::engine::ClientStop>>,
}

impl Caller {
    /// Whether this caller can be told apart from another local user: a token, or a unix
    /// socket's peer uid. Tokenless TCP is every local user at once.
    pub fn identified(&self) -> bool {
        self.token.is_some() || self.uid.is_some()
    }

    /// Whose sessions these are: the token's, else the uid's (an anonymous caller has none:
    /// [`refuse_anonymous_state`]).
    pub fn key(&self) -> String {
        match (&self.token, self.uid) {
            (Some(t), _) => format!("token:{t}"),
            (None, Some(u)) => format!("uid:{u}"),
            (None, None) => "anonymous".into(),
        }
    }

    /// This caller as the engine's ([`agentjail_engine::engine::Engine::handle`]): `owner` for its
    /// sessions and workspaces, the peer's uid for a job's record, the connection's stop
    /// when `stop` (jobs; a session's or a workspace's call goes on), and the token's name
    /// and the uid stamped on each record, in the audit log's copy too.
    pub fn engine(&self, owner: Owner, stop: bool) -> agentjail_engine::engine::Caller<'_> {
        let who = self.value();
        let named = who
            .as_object()
            .is_some_and(|o| !o.is_empty())
            .then_some((who, true));
        agentjail_engine::engine::Caller {
            owner,
            uid: self.uid,
            stop: if stop { self.stop.as_deref() } else { None },
            named,
        }
    }

    fn value(&self) -> Value {
        let mut v = json!({});
        if let Some(t) = &self.token {
            v["token"] = json!(t);
        }
        if let Some(u) = self.uid {
            v["uid"] = json!(u);
        }
        v
    }
}

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
    if r == Route::Healthz {
        return json_resp(StatusCode::OK, &json!({"ok": true}));
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
        st.metrics.refused_saturated.fetch_add(1, Ordering::Relaxed);
        let mut resp = error(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_requests",
            "the server has as many requests waiting as it takes; retry after a second",
        );
        resp.headers_mut()
            .insert(hyper::header::RETRY_AFTER, HeaderValue::from_static("1"));
        return resp;
    };
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
    let resp = if r.is_workspace() {
        crate::workspaces::dispatch(&st, r, &caller, body, content_type).await
    } else {
        dispatch(&st, r, caller, body).await
    };
    drop(slot);
    resp
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

/// Run `f` on a job thread, at most `jobs` at once (waiting or running on tokio's blocking
/// threads).
pub async fn blocking<T: Send + 'static>(
    st: &Arc<State>,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Resp> {
    let unavailable = || {
        error(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "agentjail is shutting down",
        )
    };
    let slot = Arc::clone(&st.jobs)
        .acquire_owned()
        .await
        .map_err(|_| unavailable())?;
    // The slot goes with the job: if the client hangs up, the job still runs to its end
    // (and its record to the audit log), and no other job takes its slot meanwhile.
    tokio::task::spawn_blocking(move || {
        let answer = f();
        drop(slot);
        answer
    })
    .await
    .map_err(|_| unavailable())
}

/// A record the engine answered with (stamped and audited by Engine::handle): counted in
/// the metrics, and the refills held back for its jail may start.
pub fn answered(st: &State, record: &Sealed, started: Instant) {
    st.metrics
        .job(&record.stop_reason.to_string(), started.elapsed());
    st.engine.answered();
}

/// A record of the pod's workspace (crate::workspaces' runtime routes, which retry a
/// command on a new workspace when theirs ended and so call the engine's methods, not
/// Engine::handle): stamped, audited and counted here.
pub fn finish(st: &State, record: &mut Sealed, caller: &Caller, started: Instant) {
    let who = caller.value();
    if who.as_object().is_some_and(|o| !o.is_empty()) {
        record.set_caller(who, true);
    }
    agentjail_engine::pipeline::audit::append(st.audit.as_deref(), record);
    answered(st, record, started);
}

/// HTTP's one table from the engine's outcome to a response: 200 with the record (counted:
/// [`answered`]), the decision, the new id, the files, whether closed; or the engine's
/// refusal with its status (crate::status).
pub fn outcome_resp(st: &State, outcome: Result<Outcome, EngineError>, started: Instant) -> Resp {
    let v = match outcome {
        Ok(Outcome::Record(rec)) => {
            answered(st, &rec, started);
            rec.value
        }
        Ok(Outcome::Decision(decision, _)) => decision,
        Ok(Outcome::Session(id)) => json!({ "session": id }),
        Ok(Outcome::Workspace(id)) => json!({ "workspace": id }),
        Ok(Outcome::Closed(closed)) => json!({ "closed": closed }),
        Ok(Outcome::Files(files)) => json!({ "files": files }),
        Ok(Outcome::Stats(stats)) => stats,
        Err(e) => return engine_error(e),
    };
    json_resp(StatusCode::OK, &v)
}

pub fn strict(body: &[u8]) -> Result<Value, String> {
    let limits = agentjail_json::ReadLimits {
        max_bytes: MAX_BODY_BYTES,
        ..Default::default()
    };
    agentjail_json::parse_strict(body, &limits).map_err(|e| e.to_string())
}

pub fn bad_request(message: &str) -> Resp {
    error(StatusCode::BAD_REQUEST, "bad_request", message)
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
                engine_route(&s, r, &caller, owner, &body, started)
            })
            .await
        }
        Route::Stats => Ok(json_resp(StatusCode::OK, &stats(st))),
        Route::Metrics => Ok(respond(
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            metrics_text(st).into_bytes(),
        )),
        Route::RunCode => Ok(run_code(st, caller, body, started).await),
        Route::Healthz => Ok(json_resp(StatusCode::OK, &json!({"ok": true}))),
        // Answered by crate::workspaces::dispatch.
        _ => Ok(error(StatusCode::NOT_FOUND, "not_found", "no such route")),
    };
    answer.unwrap_or_else(|resp| resp)
}

/// A job, a check or a session route, on a job thread: its body read, its request handled
/// by the engine (Engine::handle), the outcome answered. A job stops when its connection
/// goes; a session's call goes on.
fn engine_route(
    s: &State,
    r: Route,
    caller: &Caller,
    owner: Owner,
    body: &[u8],
    started: Instant,
) -> Resp {
    let (code, timeout);
    let hints;
    let request = match &r {
        Route::Run => EngineRequest::Run {
            action: body,
            inputs: Vec::new(),
        },
        Route::Check => EngineRequest::Check { action: body },
        Route::SessionStart => {
            hints = match session_hints(body) {
                Ok(h) => h,
                Err(e) => return bad_request(&e),
            };
            EngineRequest::SessionStart {
                hints: hints.as_ref(),
            }
        }
        Route::SessionExec(id) => {
            (code, timeout) = match exec_body(body) {
                Ok(x) => x,
                Err(e) => return bad_request(&e),
            };
            EngineRequest::SessionExec {
                session: id,
                code: &code,
                timeout_s: timeout,
            }
        }
        Route::SessionClose(id) => EngineRequest::SessionClose { session: id },
        _ => return error(StatusCode::NOT_FOUND, "not_found", "no such route"),
    };
    let stop = matches!(r, Route::Run);
    outcome_resp(
        s,
        s.engine.handle(&caller.engine(owner, stop), request),
        started,
    )
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

/// `POST /v1/sessions`: an empty body, or `{"policy_hints": {...}}`.
pub fn session_hints(body: &[u8]) -> Result<Option<Value>, String> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let v = strict(body)?;
    let Some(o) = v.as_object() else {
        return Err("the body is a JSON object: {\"policy_hints\": {...}} or empty".into());
    };
    if let Some(k) = o.keys().find(|k| k.as_str() != "policy_hints") {
        return Err(format!(
            "unknown field {}",
            agentjail_json::safe_text(k, 64)
        ));
    }
    Ok(o.get("policy_hints").cloned())
}

/// `POST /v1/sessions/{id}/exec`: `{"code": "...", "timeout_s": N?}`.
pub fn exec_body(body: &[u8]) -> Result<(String, Option<f64>), String> {
    let v = strict(body)?;
    let Some(o) = v.as_object() else {
        return Err("the body is a JSON object: {\"code\": \"...\", \"timeout_s\": N}".into());
    };
    if let Some(k) = o
        .keys()
        .find(|k| !["code", "timeout_s"].contains(&k.as_str()))
    {
        return Err(format!(
            "unknown field {}",
            agentjail_json::safe_text(k, 64)
        ));
    }
    let Some(Value::String(code)) = o.get("code") else {
        return Err("code must be a string".into());
    };
    let timeout = match o.get("timeout_s") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_f64() {
            Some(t) if t.is_finite() && t > 0.0 => Some(t),
            _ => return Err("timeout_s must be a positive number".into()),
        },
    };
    Ok((code.clone(), timeout))
}

async fn run_code(st: &Arc<State>, caller: Caller, body: Bytes, started: Instant) -> Resp {
    let s = Arc::clone(st);
    let answer = blocking(st, move || run_code_job(&s, &caller, &body, started)).await;
    answer.unwrap_or_else(|resp| resp)
}

/// A `/run_code` body read: the action to run, or the 422 SandboxFusion answers a request
/// it refuses. `executes(language)`: whether the policy runs agentjail's language.
pub fn run_code_request(
    body: &[u8],
    executes: &dyn Fn(&str) -> bool,
) -> Result<crate::sandboxfusion::Parsed, Resp> {
    let unprocessable = |v: &Value| json_resp(StatusCode::UNPROCESSABLE_ENTITY, v);
    let req = strict(body).map_err(|e| {
        unprocessable(&crate::sandboxfusion::unprocessable(vec![json!({
            "type": "json_invalid", "loc": ["body"], "msg": format!("JSON decode error: {e}")
        })]))
    })?;
    crate::sandboxfusion::parse(&req, executes).map_err(|detail| unprocessable(&detail))
}

/// `/run_code` on a job thread: read the request (a 422 when SandboxFusion would refuse
/// it), run it, answer as SandboxFusion.
fn run_code_job(s: &State, caller: &Caller, body: &[u8], started: Instant) -> Resp {
    let policy = &s.engine.policy().policy;
    let parsed = match run_code_request(body, &|l| policy.executes(l)) {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let action = serde_json::to_vec(&parsed.action).unwrap_or_default();
    let run = EngineRequest::Run {
        action: &action,
        inputs: Vec::new(),
    };
    // A job keeps nothing: it is no one's to own (and naming an owner here would number
    // one for every anonymous caller: State::owner).
    let owner = Owner {
        connection: 0,
        uid: None,
    };
    let rec = match s.engine.handle(&caller.engine(owner, true), run) {
        Ok(Outcome::Record(rec)) => rec,
        Ok(_) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "not a record",
            )
        }
        Err(e) => return engine_error(e),
    };
    answered(s, &rec, started);
    let (code, v) = crate::sandboxfusion::respond(&rec.value, &parsed.fetch_files, &s.pod);
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    json_resp(status, &v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code_of(r: Result<Route, Resp>) -> u16 {
        r.err().unwrap().status().as_u16()
    }

    #[test]
    fn routes_match_exact_paths_and_nothing_else() {
        let id = "0123456789abcdef0123456789abcdef";
        assert_eq!(route(&Method::POST, "/v1/run").ok(), Some(Route::Run));
        assert_eq!(
            route(&Method::POST, &format!("/v1/sessions/{id}/exec")).ok(),
            Some(Route::SessionExec(id.into()))
        );
        assert_eq!(
            route(&Method::DELETE, &format!("/v1/sessions/{id}")).ok(),
            Some(Route::SessionClose(id.into()))
        );
        assert_eq!(code_of(route(&Method::GET, "/v1/run")), 405);
        assert_eq!(
            route(&Method::POST, "/v1/workspaces").ok(),
            Some(Route::WorkspaceStart)
        );
        for (tail, r) in [
            ("/exec", Route::WorkspaceExec(id.into())),
            ("/put", Route::WorkspacePut(id.into())),
            ("/get", Route::WorkspaceGet(id.into())),
        ] {
            let p = format!("/v1/workspaces/{id}{tail}");
            assert_eq!(route(&Method::POST, &p).ok(), Some(r));
            assert_eq!(code_of(route(&Method::GET, &p)), 405);
        }
        assert_eq!(
            route(&Method::DELETE, &format!("/v1/workspaces/{id}")).ok(),
            Some(Route::WorkspaceClose(id.into()))
        );
        assert_eq!(
            code_of(route(&Method::POST, "/v1/workspaces/..%2Fx/exec")),
            404
        );
        assert_eq!(
            code_of(route(&Method::POST, &format!("/v1/workspaces/{id}/run"))),
            404
        );
        assert_eq!(
            route(&Method::GET, "/download/a%2Fb").ok(),
            Some(Route::PodDownload("a%2Fb".into()))
        );
        assert_eq!(
            route(&Method::POST, "/execute").ok(),
            Some(Route::PodExecute)
        );
        assert_eq!(code_of(route(&Method::POST, "/download/x")), 405);
        for p in [
            "/v1/sessions/../stats",
            "/v1/sessions/%2e%2e/stats",
            "/v1//run",
            "/v1/run/",
            "/V1/run",
            "/v1/stats/../run",
        ] {
            assert_eq!(code_of(route(&Method::POST, p)), 404, "{p}");
        }
        for p in [
            "/v1/sessions/..%2Fstats/exec",
            "/v1/sessions/abc%0d%0aSet-Cookie:x/exec",
            "/v1/sessions/ab%2Fcd",
        ] {
            let r = route(&Method::POST, p).err().unwrap();
            assert_eq!(r.status().as_u16(), 404, "{p}");
        }
    }

    #[test]
    fn bodies_are_read_strictly() {
        assert_eq!(exec_body(br#"{"code":"1"}"#), Ok(("1".into(), None)));
        assert_eq!(
            exec_body(br#"{"code":"1","timeout_s":2}"#),
            Ok(("1".into(), Some(2.0)))
        );
        assert!(exec_body(br#"{"code":"1","code":"2"}"#).is_err());
        assert!(exec_body(br#"{"code":"1","x":1}"#).is_err());
        assert!(exec_body(br#"{"code":1}"#).is_err());
        assert!(exec_body(br#"{"code":"1","timeout_s":-1}"#).is_err());
        assert_eq!(session_hints(b""), Ok(None));
        assert!(session_hints(br#"{"policy_hints":{}}"#).unwrap().is_some());
        assert!(session_hints(br#"{"hints":{}}"#).is_err());
    }

    /// A `Full` body is ready at once: poll it on a one-thread runtime.
    fn block_on_ready<
        F: std::future::Future<
            Output = Result<http_body_util::Collected<Bytes>, std::convert::Infallible>,
        >,
    >(
        f: F,
    ) -> http_body_util::Collected<Bytes> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        match rt.block_on(f) {
            Ok(c) => c,
            Err(e) => match e {},
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        #[test]
        fn any_path_routes_or_is_refused_without_an_echo(
            path in "(/|v1|sessions|exec|run|stats|\\.\\.|%2[fF]|%0[dD]%0[aA]|[0-9a-f]{1,40}|[\\x00-\\x7f]{0,4}|\\PC{0,3}){0,8}",
            m in 0..5usize,
        ) {
            let method = [Method::GET, Method::POST, Method::DELETE, Method::PUT, Method::OPTIONS][m].clone();
            match route(&method, &path) {
                Ok(Route::SessionExec(id) | Route::SessionClose(id)) => {
                    proptest::prop_assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
                    proptest::prop_assert!(path.starts_with("/v1/sessions/"));
                }
                Ok(Route::WorkspaceExec(id) | Route::WorkspacePut(id) | Route::WorkspaceGet(id) | Route::WorkspaceClose(id)) => {
                    proptest::prop_assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
                    proptest::prop_assert!(path.starts_with("/v1/workspaces/"));
                }
                // A runtime route's path is decoded, then held to the workspace's path rules
                // (workspaces.rs).
                Ok(Route::PodDownload(_) | Route::PodList(_) | Route::PodExists(_)) => {}
                Ok(_) => proptest::prop_assert!(!path.contains("..") && !path.contains('%')),
                Err(r) => {
                    let code = r.status().as_u16();
                    proptest::prop_assert!(code == 404 || code == 405);
                    // Nothing of the path comes back (the fixed messages are short words).
                    if path.len() >= 8 {
                        for (_, v) in r.headers() {
                            proptest::prop_assert!(!v.to_str().unwrap_or("").contains(&path));
                        }
                        let body = r.into_body();
                        let bytes = http_body_util::BodyExt::collect(body);
                        let bytes = block_on_ready(bytes).to_bytes();
                        proptest::prop_assert!(!String::from_utf8_lossy(&bytes).contains(&path));
                    }
                }
            }
        }

        #[test]
        fn any_body_is_read_or_refused(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
                                       json_like in "[{}\\[\\]\"a-z:,0-9 .-]{0,80}") {
            let _ = exec_body(&body);
            let _ = session_hints(&body);
            let _ = exec_body(json_like.as_bytes());
            let _ = session_hints(json_like.as_bytes());
        }
    }
}
