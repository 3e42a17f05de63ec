//! Arbitrary bytes as one HTTP request to `agentjail serve --http`, through the same decoding
//! the server runs before any engine call (agentjail-http's library): the route of a method
//! and a path, the `Authorization` header, and the body each route reads (`/v1/sessions`,
//! `/v1/sessions/{id}/exec`, `/run_code`, the `/v1/workspaces` bodies, the agent-sandbox
//! runtime's `/execute`, `/upload`, `/download/`, `/list/`, `/exists/`).
//!
//! The input is `METHOD \n TARGET \n AUTHORIZATION \n CONTENT-TYPE \n BODY` (a missing field
//! is empty); a method or target hyper itself refuses never reaches the routes and is skipped.
//! Invariants: nothing panics; a refusal is a 4xx whose body is one JSON object of the
//! route's refusal shape (`{"error": {code, message}}`, SandboxFusion's `{"detail": [...]}`,
//! the runtime's `{"message"}`) that echoes no byte of a long path; only the one token
//! authenticates; an id taken from a path is hex; and a path that passes (a workspace file,
//! a working directory, a `/run_code` file the contract takes) never leaves its root.
#![no_main]

use agentjail_engine::contract::parse_action;
use agentjail_engine::engine::workspace::workspace_path;
use agentjail_engine::policy::Policy;
use agentjail_http::auth::Tokens;
use agentjail_http::body::strict;
use agentjail_http::paths::{route, Route};
use agentjail_http::pod::{download_path, execute_request, listing_path, upload_request};
use agentjail_http::respond::{bad_request, Resp};
use agentjail_http::runs::{exec_body, run_code_request, session_hints};
use agentjail_http::workspaces::{exec_request, list_field, op_request};
use http_body_util::BodyExt;
use hyper::{Method, Uri};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::future::Future;

const TOKEN: &[u8] = b"0123456789abcdef0123";

/// Which refusal body a route answers with.
#[derive(Clone, Copy)]
enum Shape {
    /// `{"error": {"code", "message"}}`.
    Native,
    /// SandboxFusion's (FastAPI's) `{"detail": [{"type", "loc", "msg", ...}]}`.
    Detail,
    /// The agent-sandbox runtime's `{"message"}`.
    Message,
}

/// A `Full` body is ready at once: polled once, with no runtime.
fn body_of(r: Resp) -> (u16, Vec<u8>) {
    let status = r.status().as_u16();
    let mut collect = std::pin::pin!(r.into_body().collect());
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let bytes = match collect.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(Ok(c)) => c.to_bytes().to_vec(),
        std::task::Poll::Ready(Err(e)) => match e {},
        std::task::Poll::Pending => panic!("a refusal's body is not ready at once"),
    };
    (status, bytes)
}

fn refused(r: Resp, shape: Shape, path: &str) {
    let ct = r.headers().get(hyper::header::CONTENT_TYPE).cloned();
    assert_eq!(
        ct.as_ref().map(|v| v.as_bytes()),
        Some(&b"application/json"[..])
    );
    for (_, v) in r.headers() {
        assert!(!v.as_bytes().contains(&b'\n') && !v.as_bytes().contains(&b'\r'));
    }
    let (status, bytes) = body_of(r);
    assert!((400..500).contains(&status), "a refusal is a 4xx: {status}");
    let v: Value = serde_json::from_slice(&bytes).expect("a refusal is JSON");
    let o = v.as_object().expect("a refusal is a JSON object");
    match shape {
        Shape::Native => {
            assert_eq!(o.len(), 1, "{v}");
            assert!(
                v["error"]["code"].is_string() && v["error"]["message"].is_string(),
                "{v}"
            );
        }
        Shape::Detail => {
            let d = v["detail"]
                .as_array()
                .expect("a 422 or 400 has its detail list");
            assert!(
                !d.is_empty()
                    && d.iter()
                        .all(|e| e["type"].is_string() && e["loc"].is_array())
            );
            // A 400 only for a request SandboxFusion would run and this server cannot.
            let unservable = d.iter().all(|e| {
                ["language_not_run", "path_not_offered"].contains(&e["type"].as_str().unwrap())
            });
            assert!(
                status == 422 || (status == 400 && unservable),
                "{status} {v}"
            );
        }
        Shape::Message => assert!(v["message"].is_string(), "{v}"),
    }
    // The fixed messages are short words: a long path never comes back.
    if path.len() >= 12 {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(path),
            "the path was echoed"
        );
    }
}

/// A relative path below its root: no empty, `.` or `..` component, not absolute.
fn stays_inside(p: &str) {
    assert!(!p.starts_with('/'), "{p:?}");
    assert!(!p.split('/').any(|c| c == ".." || c == "."), "{p:?}");
}

fn workspace_file(p: &str) {
    if let Some(rel) = workspace_path(p) {
        stays_inside(&rel);
    }
}

fn cwd_inside(cwd: &str) {
    let rest = cwd
        .strip_prefix("/workspace")
        .expect("a cwd under /workspace");
    assert!(rest.is_empty() || rest.starts_with('/'), "{cwd:?}");
    assert!(!rest.split('/').any(|c| c == ".."), "{cwd:?}");
}

fn body(r: Route, ctype: &str, body: &[u8], path: &str) {
    // A refusal may name what the body sent (an unknown key): when the body itself holds
    // the path, seeing it again is that echo, not the path's (found by this target in CI).
    let in_body = !path.is_empty() && body.windows(path.len()).any(|w| w == path.as_bytes());
    let path = if in_body { "" } else { path };
    let native = |e: String| refused(bad_request(&e), Shape::Native, path);
    match r {
        Route::SessionStart | Route::WorkspaceStart => {
            if let Err(e) = session_hints(body) {
                native(e.to_string())
            }
        }
        Route::SessionExec(_) => {
            if let Err(e) = exec_body(body) {
                native(e.to_string())
            }
        }
        Route::RunCode => match run_code_request(body, &|l| l == "python") {
            Err(resp) => refused(resp, Shape::Detail, path),
            Ok(p) => {
                assert_eq!(p.action["output_mode"], "text");
                let bytes = serde_json::to_vec(&p.action).unwrap();
                if parse_action(&bytes, &Policy::default()).is_ok() {
                    for f in p.action["files"].as_array().into_iter().flatten() {
                        stays_inside(f["path"].as_str().unwrap());
                    }
                }
            }
        },
        Route::WorkspaceExec(_) => match strict(body)
            .map_err(|e| bad_request(&e.to_string()))
            .and_then(exec_request)
        {
            Err(resp) => refused(resp, Shape::Native, path),
            Ok(req) => cwd_inside(&req.cwd),
        },
        Route::WorkspacePut(_) | Route::WorkspaceGet(_) => {
            let field = if matches!(r, Route::WorkspacePut(_)) {
                "files"
            } else {
                "paths"
            };
            match strict(body)
                .map_err(|e| bad_request(&e.to_string()))
                .and_then(|v| list_field(v, field))
            {
                Err(resp) => refused(resp, Shape::Native, path),
                Ok(list) => {
                    for item in list.as_array().unwrap() {
                        let p = if field == "files" {
                            &item["path"]
                        } else {
                            item
                        };
                        if let Some(p) = p.as_str() {
                            workspace_file(p);
                        }
                    }
                }
            }
        }
        // list, exists, remove, wait, kill: the serve op's parser, the id the path's.
        Route::WorkspaceOp(id, op) => match op_request(op, &id, body) {
            Err(resp) => refused(resp, Shape::Native, path),
            Ok(parsed) => assert!(parsed.workspace_op_request().is_some(), "{op}"),
        },
        Route::PodExecute => match execute_request(body) {
            Err(resp) => refused(resp, Shape::Message, path),
            Ok(req) => cwd_inside(&req.cwd),
        },
        Route::PodUpload => match upload_request(ctype, body) {
            Err(resp) => refused(resp, Shape::Message, path),
            Ok((name, _)) => workspace_file(&name),
        },
        Route::PodDownload(raw) => match download_path(&raw) {
            Err(resp) => refused(resp, Shape::Message, path),
            Ok(p) => workspace_file(&p),
        },
        Route::PodList(raw) | Route::PodExists(raw) => match listing_path(&raw) {
            Err(resp) => refused(resp, Shape::Message, path),
            Ok(p) => {
                if !p.is_empty() {
                    stays_inside(&p)
                }
            }
        },
        // No body is read: /v1/run and /v1/check hand theirs to the engine as they are.
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let mut f = data.splitn(5, |&b| b == b'\n');
    let mut next = || f.next().unwrap_or_default();
    let (method, target, auth, ctype, payload) = (next(), next(), next(), next(), next());
    let (Ok(method), Ok(uri)) = (Method::from_bytes(method), Uri::try_from(target)) else {
        return;
    };
    let path = uri.path();
    let r = match route(&method, path) {
        Ok(r) => r,
        Err(resp) => {
            let code = resp.status().as_u16();
            assert!(code == 404 || code == 405, "{code}");
            return refused(resp, Shape::Native, path);
        }
    };
    match &r {
        Route::SessionExec(id)
        | Route::SessionClose(id)
        | Route::WorkspaceExec(id)
        | Route::WorkspacePut(id)
        | Route::WorkspaceGet(id)
        | Route::WorkspaceClose(id)
        | Route::WorkspaceOp(id, _) => {
            assert!(
                !id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit()),
                "{id:?}"
            )
        }
        Route::PodDownload(_) | Route::PodList(_) | Route::PodExists(_) => {}
        _ => assert!(!path.contains("..") && !path.contains('%'), "{path:?}"),
    }
    let tokens = Tokens::parse("alice 0123456789abcdef0123\n").unwrap();
    let who = tokens.who((!auth.is_empty()).then_some(auth));
    let exact = auth.strip_prefix(b"Bearer ") == Some(TOKEN);
    assert_eq!(who.is_some(), exact, "only the one token authenticates");
    let ctype = String::from_utf8_lossy(ctype);
    body(r, &ctype, payload, path);
});
