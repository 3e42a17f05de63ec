//! The routes' paths: each request's method and raw path matched to its [`Route`] exactly
//! (no decoding, no normalising: a `..` or an encoded slash matches nothing), or refused
//! with a 404 or a 405 that echoes no byte of the path. A leaf under the routes.

// A refusal is the HTTP response itself, made once per request and returned at once.
#![allow(clippy::result_large_err)]

use crate::respond::{error, method_not_allowed, Resp};
use hyper::{Method, StatusCode};

#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    Run,
    Check,
    SessionStart,
    SessionExec(String),
    SessionClose(String),
    Stats,
    Healthz,
    /// SandboxFusion's liveness route: `"pong"`, like `/healthz` answered before any token.
    Ping,
    Metrics,
    RunCode,
    WorkspaceStart,
    WorkspaceExec(String),
    WorkspacePut(String),
    WorkspaceGet(String),
    WorkspaceClose(String),
    /// `POST /v1/workspaces/{id}/list|exists|remove|wait|kill`: the serve op of that name
    /// (`workspace_list`, ...), its fields the body's.
    WorkspaceOp(String, &'static str),
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
        "/v1/ping" => return only(Method::GET, Route::Ping),
        "/v1/workspaces" => return only(Method::POST, Route::WorkspaceStart),
        "/" => return only(Method::GET, Route::PodHealth),
        "/execute" => return only(Method::POST, Route::PodExecute),
        "/upload" => return only(Method::POST, Route::PodUpload),
        _ => {}
    }
    if let Some(why) = not_served(path) {
        return Err(error(StatusCode::NOT_FOUND, "not_served", why));
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

/// SandboxFusion's routes this server does not offer, each with why (a client that switched
/// its URL here reads what to do instead, not a bare "no such route").
fn not_served(path: &str) -> Option<&'static str> {
    match path {
        "/run_jupyter" => Some(
            "SandboxFusion's /run_jupyter is not served here: run cells one after another in a session (POST /v1/sessions, then /v1/sessions/ID/exec), which keeps state between them",
        ),
        "/submit" | "/get_prompts" | "/get_prompt_by_id" | "/list_datasets" | "/list_ids"
        | "/get_metrics" | "/get_metrics_function" => Some(
            "SandboxFusion's dataset service (submit, get_prompts, get_prompt_by_id, list_datasets, list_ids, get_metrics) is out of scope for agentjail: it serves /run_code only; score answers with your own dataset code",
        ),
        _ => None,
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
        "list" | "exists" | "remove" | "wait" | "kill" => workspace_op(tail),
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

/// The route of a workspace op that has no route of its own: its serve op's name.
fn workspace_op(tail: &str) -> fn(String) -> Route {
    match tail {
        "list" => |id| Route::WorkspaceOp(id, "workspace_list"),
        "exists" => |id| Route::WorkspaceOp(id, "workspace_exists"),
        "wait" => |id| Route::WorkspaceOp(id, "workspace_wait"),
        "kill" => |id| Route::WorkspaceOp(id, "workspace_kill"),
        _ => |id| Route::WorkspaceOp(id, "workspace_remove"),
    }
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

    pub(crate) fn is_workspace(&self) -> bool {
        matches!(
            self,
            Route::WorkspaceStart
                | Route::WorkspaceExec(_)
                | Route::WorkspacePut(_)
                | Route::WorkspaceGet(_)
                | Route::WorkspaceClose(_)
                | Route::WorkspaceOp(..)
        ) || self.is_pod()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

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
            ("/list", Route::WorkspaceOp(id.into(), "workspace_list")),
            ("/exists", Route::WorkspaceOp(id.into(), "workspace_exists")),
            ("/remove", Route::WorkspaceOp(id.into(), "workspace_remove")),
            ("/wait", Route::WorkspaceOp(id.into(), "workspace_wait")),
            ("/kill", Route::WorkspaceOp(id.into(), "workspace_kill")),
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
                Ok(Route::WorkspaceExec(id) | Route::WorkspacePut(id) | Route::WorkspaceGet(id) | Route::WorkspaceClose(id) | Route::WorkspaceOp(id, _)) => {
                    proptest::prop_assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
                    proptest::prop_assert!(path.starts_with("/v1/workspaces/"));
                }
                // A runtime route's path is decoded, then held to the workspace's path rules
                // (pod.rs).
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
    }
}
