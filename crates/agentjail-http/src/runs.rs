//! The routes the engine answers as they come, on a job thread: `/v1/run` and `/v1/check`
//! (the body handed to the engine as it is), the `/v1/sessions` routes (their bodies read
//! here, strictly), and SandboxFusion's `/run_code` (crate::sandboxfusion). Every refusal is
//! `{"error": {"code", "message"}}`, but `/run_code`'s, which are SandboxFusion's.

// A refusal is the HTTP response itself, made once per request and returned at once.
#![allow(clippy::result_large_err)]

use crate::answer::{answered, blocking, outcome_resp};
use crate::body::strict;
use crate::paths::Route;
use crate::respond::{bad_request, engine_error, error, json_resp, Resp};
use crate::state::{Caller, State};
use agentjail_engine::engine::{Outcome, Request as EngineRequest};
use agentjail_engine::pipeline::session::Owner;
use bytes::Bytes;
use hyper::StatusCode;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Instant;

/// A job, a check or a session route, on a job thread: its body read, its request handled
/// by the engine (Engine::handle; `out`: where its output goes as it is read, for a
/// streamed answer: crate::stream), the outcome answered. A job stops when its connection
/// goes; a session's call goes on.
pub(crate) fn engine_route(
    s: &State,
    r: Route,
    caller: &Caller,
    owner: Owner,
    body: &[u8],
    started: Instant,
    out: Option<&dyn agentjail_engine::engine::OutputSink>,
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
                Err(e) => return bad_request(&e.to_string()),
            };
            EngineRequest::SessionStart {
                hints: hints.as_ref(),
            }
        }
        Route::SessionExec(id) => {
            (code, timeout) = match exec_body(body) {
                Ok(x) => x,
                Err(e) => return bad_request(&e.to_string()),
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
        s.engine
            .handle_streaming(&caller.engine(owner, stop), request, out),
        started,
    )
}

/// Why a session route's body was refused (400). `Display` is the response's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionBodyError {
    /// Not strict JSON.
    Json(agentjail_json::JsonError),
    /// Not an object; `shape` is what the route takes.
    NotObject { shape: &'static str },
    /// A key the route does not take (as sent; shown shortened and escaped).
    UnknownField(String),
    /// `code` is missing or not a string.
    CodeNotString,
    /// `timeout_s` is not a positive finite number.
    BadTimeout,
}

impl std::fmt::Display for SessionBodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionBodyError::Json(e) => write!(f, "{e}"),
            SessionBodyError::NotObject { shape } => {
                write!(f, "the body is a JSON object: {shape}")
            }
            SessionBodyError::UnknownField(k) => {
                write!(f, "unknown field {}", agentjail_json::safe_text(k, 64))
            }
            SessionBodyError::CodeNotString => f.write_str("code must be a string"),
            SessionBodyError::BadTimeout => f.write_str("timeout_s must be a positive number"),
        }
    }
}

impl std::error::Error for SessionBodyError {}

/// `POST /v1/sessions`: an empty body, or `{"policy_hints": {...}}`.
pub fn session_hints(body: &[u8]) -> Result<Option<Value>, SessionBodyError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let v = strict(body).map_err(SessionBodyError::Json)?;
    let Some(o) = v.as_object() else {
        return Err(SessionBodyError::NotObject {
            shape: "{\"policy_hints\": {...}} or empty",
        });
    };
    if let Some(k) = o.keys().find(|k| k.as_str() != "policy_hints") {
        return Err(SessionBodyError::UnknownField(k.clone()));
    }
    Ok(o.get("policy_hints").cloned())
}

/// `POST /v1/sessions/{id}/exec`: `{"code": "...", "timeout_s": N?}`.
pub fn exec_body(body: &[u8]) -> Result<(String, Option<f64>), SessionBodyError> {
    let v = strict(body).map_err(SessionBodyError::Json)?;
    let Some(o) = v.as_object() else {
        return Err(SessionBodyError::NotObject {
            shape: "{\"code\": \"...\", \"timeout_s\": N}",
        });
    };
    if let Some(k) = o
        .keys()
        .find(|k| !["code", "timeout_s"].contains(&k.as_str()))
    {
        return Err(SessionBodyError::UnknownField(k.clone()));
    }
    let Some(Value::String(code)) = o.get("code") else {
        return Err(SessionBodyError::CodeNotString);
    };
    let timeout = match o.get("timeout_s") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_f64() {
            Some(t) if t.is_finite() && t > 0.0 => Some(t),
            _ => return Err(SessionBodyError::BadTimeout),
        },
    };
    Ok((code.clone(), timeout))
}

pub(crate) async fn run_code(
    st: &Arc<State>,
    caller: Caller,
    body: Bytes,
    started: Instant,
) -> Resp {
    let s = Arc::clone(st);
    let answer = blocking(st, move || run_code_job(&s, &caller, &body, started)).await;
    answer.unwrap_or_else(|resp| resp)
}

/// A `/run_code` body read: the action to run, or the refusal (SandboxFusion's 422 for a
/// body that is not its request, a 400 for one this server cannot serve: crate::sandboxfusion).
/// `executes(language)`: whether the policy runs agentjail's language.
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
    crate::sandboxfusion::parse(&req, executes).map_err(|r| {
        json_resp(
            StatusCode::from_u16(r.status).unwrap_or(StatusCode::UNPROCESSABLE_ENTITY),
            &r.body,
        )
    })
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
    let (code, v) =
        crate::sandboxfusion::respond(&rec.value, &parsed.action, &parsed.fetch_files, &s.pod);
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    json_resp(status, &v)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(
            exec_body(br#"{"code":1}"#),
            Err(SessionBodyError::CodeNotString)
        );
        assert_eq!(
            session_hints(b"[]").unwrap_err().to_string(),
            r#"the body is a JSON object: {"policy_hints": {...}} or empty"#
        );
        assert_eq!(
            exec_body(br#"{"code":"1","x":1}"#).unwrap_err().to_string(),
            "unknown field x"
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

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
