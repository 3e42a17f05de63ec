//! The Kubernetes agent-sandbox in-pod runtime's routes (`--pod-workspace`), on one
//! workspace the server owns: `GET /`, `POST /execute`, `POST /upload`,
//! `GET /download/{path}`, `GET /list/{path}`, `GET /exists/{path}`, each refusal the
//! runtime's own `{"message"}`.
//!
//! Every body is read strictly (agentjail-json); every path a client names is the engine's to
//! judge (relative or under /workspace, no `..`, no symlink followed): a runtime route only
//! percent-decodes it first, as the agent-sandbox client encodes its slashes. The routes
//! answer on a job thread (crate::workspaces::dispatch) and need no server state: the
//! engine, the pod's workspace, and the record's last touches ([`Finish`]).

// A refusal is the HTTP response itself, made once per request and returned at once.
#![allow(clippy::result_large_err)]

use crate::body::{object, strict};
use crate::paths::Route;
use crate::respond::{bytes_resp, error, json_resp, Resp};
use agentjail_engine::engine::workspace::ExecRequest;
use agentjail_engine::engine::{Engine, EngineError, ErrorCode};
use agentjail_engine::pipeline::record::Sealed as Record;
use agentjail_engine::pipeline::session::Owner;
use hyper::StatusCode;
use serde_json::{json, Map, Value};
use std::sync::Mutex;

/// A record's last touches (the audit log, the metrics, the caller): routes::finish.
type Finish<'a> = &'a dyn Fn(&mut Record);

/// The agent-sandbox runtime's routes, on the pod's workspace.
pub(crate) fn pod_route(
    e: &Engine,
    pod: &PodWorkspace,
    r: Route,
    content_type: &str,
    body: &[u8],
    done: Finish,
) -> Resp {
    match r {
        Route::PodHealth => match pod.ensure(e) {
            Ok(_) => json_resp(
                StatusCode::OK,
                &json!({"status": "ok", "message": "Sandbox Runtime is active."}),
            ),
            Err(r) => r,
        },
        Route::PodExecute => match execute_request(body) {
            Ok(req) => execute(e, pod, &req, done),
            Err(resp) => resp,
        },
        Route::PodUpload => upload(e, pod, content_type, body),
        Route::PodDownload(p) => download(e, pod, &p),
        Route::PodList(p) => list(e, pod, &p, done),
        Route::PodExists(p) => exists(e, pod, &p, done),
        _ => error(StatusCode::NOT_FOUND, "not_found", "no such route"),
    }
}

/// The owner of the pod's workspace: no caller's (callers are numbered from 1).
pub const POD_OWNER: Owner = Owner {
    connection: u64::MAX,
    uid: None,
};

/// The workspace a `--pod-workspace` server owns, started with the server.
pub struct PodWorkspace {
    id: Mutex<Option<String>>,
}

/// The engine refused to start the pod's workspace (its error). `Display` is the message
/// agentjail prints at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodStartError(pub EngineError);

impl std::fmt::Display for PodStartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "--pod-workspace: cannot start the workspace: {}",
            self.0.message
        )
    }
}

impl std::error::Error for PodStartError {}

impl PodWorkspace {
    pub fn start(engine: &Engine) -> Result<PodWorkspace, PodStartError> {
        let id = engine
            .workspace_start(None, POD_OWNER)
            .map_err(PodStartError)?;
        Ok(PodWorkspace {
            id: Mutex::new(Some(id)),
        })
    }

    pub fn id(&self) -> Option<String> {
        self.id.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The id of an open workspace: the current one, or a new one in its place when it has
    /// ended (idle, lifetime, max_execs, a breach, every process killed); 503 when none can
    /// be started, 410 once the server closed it.
    fn ensure(&self, engine: &Engine) -> Result<String, Resp> {
        let id = self.id().ok_or_else(closed)?;
        if engine.workspace_open(&id, POD_OWNER) {
            return Ok(id);
        }
        self.renew(engine, &id)
    }

    /// A new workspace in place of `old`, under the id's lock (unless another request
    /// already replaced it). What the old one held is lost.
    fn renew(&self, engine: &Engine, old: &str) -> Result<String, Resp> {
        let mut id = self.id.lock().unwrap_or_else(|e| e.into_inner());
        match id.as_deref() {
            None => return Err(closed()),
            Some(cur) if cur != old => return Ok(cur.to_string()),
            Some(_) => {}
        }
        let _ = engine.workspace_close(old, POD_OWNER);
        *id = None;
        let new = engine.workspace_start(None, POD_OWNER).map_err(|e| {
            message(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!(
                    "the pod's workspace ended and a new one cannot be started: {}: {}",
                    e.code, e.message
                ),
            )
        });
        // A failed start leaves the old (closed) id, so the next request tries again.
        *id = Some(new.as_ref().map_or_else(|_| old.to_string(), String::clone));
        new
    }

    /// `f` on the pod's workspace; when `gone` says it found the workspace ended (the request
    /// never ran), once more on a new one ([`Self::renew`]).
    fn on<T>(
        &self,
        engine: &Engine,
        f: impl Fn(&str) -> Result<T, EngineError>,
        gone: impl Fn(&Result<T, EngineError>) -> bool,
    ) -> Result<T, Resp> {
        let id = self.ensure(engine)?;
        let first = f(&id);
        if !gone(&first) {
            return first.map_err(pod_error);
        }
        let id = self.renew(engine, &id)?;
        f(&id).map_err(pod_error)
    }

    /// Close it (at shutdown).
    pub fn close(&self, engine: &Engine) {
        if let Some(id) = self.id.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = engine.workspace_close(&id, POD_OWNER);
        }
    }
}

/// The runtime's refusal: `{"message": ...}`, as its own server answers.
fn message(status: StatusCode, text: &str) -> Resp {
    json_resp(
        status,
        &json!({"message": agentjail_json::safe_text(text, 2000)}),
    )
}

fn closed() -> Resp {
    message(StatusCode::GONE, "the pod's workspace is closed")
}

/// An error that says the workspace is gone: the request never reached it.
fn ended_error<T>(r: &Result<T, EngineError>) -> bool {
    r.as_ref().is_err_and(|e| {
        matches!(
            e.code,
            ErrorCode::UnknownWorkspace | ErrorCode::WorkspaceEnded
        )
    })
}

/// A command refused because its workspace ended (`invalid_request:workspace_*`: ended,
/// max_execs, idle_timeout, lifetime): it never ran.
fn ended_exec(r: &Result<Record, EngineError>) -> bool {
    ended_error(r)
        || r.as_ref().is_ok_and(|rec| {
            rec.value["stop_reason"]
                .as_str()
                .is_some_and(|s| s.starts_with("invalid_request:workspace_"))
        })
}

fn pod_error(e: EngineError) -> Resp {
    message(
        crate::status::of(e.code),
        &format!("{}: {}", e.code, e.message),
    )
}

/// A `POST /execute` body read: `{"command": "..."}`, or the runtime's 422.
pub fn execute_request(body: &[u8]) -> Result<ExecRequest, Resp> {
    let unprocessable = |m: &str| message(StatusCode::UNPROCESSABLE_ENTITY, m);
    let v = strict(body).map_err(|e| unprocessable(&e.to_string()))?;
    let o = object(v, &["command"], "{\"command\": \"...\"}")
        .map_err(|e| unprocessable(&e.to_string()))?;
    ExecRequest::from_fields(&o).map_err(|e| unprocessable(&e.message))
}

/// `POST /execute {"command": "..."}` → `{stdout, stderr, exit_code}`: the line through
/// the jail's /bin/sh in /workspace. A command agentjail stopped (timeout, a cap) answers
/// exit_code -1 with the stop reason on stderr's last line.
pub fn execute(engine: &Engine, pod: &PodWorkspace, req: &ExecRequest, done: Finish) -> Resp {
    let run = |id: &str| engine.workspace_exec_for(id, req, POD_OWNER, None);
    match pod.on(engine, run, ended_exec) {
        Ok(mut rec) => {
            done(&mut rec);
            json_resp(StatusCode::OK, &runtime_result(&rec.value))
        }
        Err(r) => r,
    }
}

/// A record as the runtime's `{stdout, stderr, exit_code}`.
pub fn runtime_result(rec: &Value) -> Value {
    let ex = &rec["execution"];
    let text = |k: &str| ex[k].as_str().unwrap_or("").to_string();
    let mut stderr = text("stderr");
    let code = ex["exit_code"].as_i64();
    let reason = rec["stop_reason"].as_str().unwrap_or("");
    let stopped = rec["status"] != "ok" && !reason.starts_with("code_runtime_error");
    if stopped {
        if !stderr.is_empty() && !stderr.ends_with('\n') {
            stderr.push('\n');
        }
        stderr.push_str(&format!("agentjail: stopped: {reason}\n"));
    }
    json!({
        "stdout": text("stdout"),
        "stderr": stderr,
        "exit_code": if stopped { -1 } else { code.unwrap_or(-1) },
    })
}

/// `POST /upload`: a multipart/form-data body whose `file` part's filename is the path under
/// /workspace.
pub fn upload(engine: &Engine, pod: &PodWorkspace, content_type: &str, body: &[u8]) -> Resp {
    let (name, content) = match upload_request(content_type, body) {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let files = json!([{"path": name, "content_base64": b64(&content)}]);
    let put = |id: &str| engine.workspace_put(id, &files, POD_OWNER);
    match pod.on(engine, put, ended_error) {
        Ok(_) => json_resp(
            StatusCode::OK,
            &json!({"message": format!("File '{}' uploaded successfully.", agentjail_json::safe_text(&name, 500))}),
        ),
        Err(r) => r,
    }
}

/// A `POST /upload` body read: the `file` part's filename (the engine judges it as a path)
/// and bytes, or the runtime's 422.
pub fn upload_request(content_type: &str, body: &[u8]) -> Result<(String, Vec<u8>), Resp> {
    crate::multipart::file_part(content_type, body, "file")
        .map_err(|e| message(StatusCode::UNPROCESSABLE_ENTITY, &e.to_string()))
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `GET /download/{path}`: the file's bytes (application/octet-stream), or 404.
pub fn download(engine: &Engine, pod: &PodWorkspace, raw: &str) -> Resp {
    use base64::Engine as _;
    let path = match download_path(raw) {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let get = |id: &str| engine.workspace_get(id, &json!([path]), POD_OWNER);
    let got = match pod.on(engine, get, ended_error) {
        Ok(v) => v,
        Err(r) => return r,
    };
    let f = &got["files"][0];
    match f["content_base64"].as_str() {
        Some(b) => match base64::engine::general_purpose::STANDARD.decode(b) {
            Ok(bytes) => bytes_resp(StatusCode::OK, "application/octet-stream", bytes),
            Err(_) => message(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the engine sent bad base64",
            ),
        },
        None => {
            let why = f["error"].as_str().unwrap_or("not_found");
            let status = match why {
                "not_found" | "not_regular" => StatusCode::NOT_FOUND,
                "bad_path" | "symlink" => StatusCode::BAD_REQUEST,
                "too_large" | "over_budget" => StatusCode::PAYLOAD_TOO_LARGE,
                _ => StatusCode::FORBIDDEN,
            };
            if status == StatusCode::NOT_FOUND {
                message(status, "File not found")
            } else {
                message(status, &format!("cannot download this path: {why}"))
            }
        }
    }
}

/// A directory listing as the runtime's `[{name, size, type, mod_time}]`, read by a command
/// in the jail (find's -printf: type, size, mtime, name; NUL-separated).
const LIST: &str =
    "cd /workspace && find \"./$1\" -mindepth 1 -maxdepth 1 -printf '%y %s %T@ %f\\0'";
const EXISTS: &str = "cd /workspace && test -e \"./$1\"";

/// `GET /download/{path}`'s path decoded (the engine judges it as a path), or a 400.
pub fn download_path(raw: &str) -> Result<String, Resp> {
    percent_decode(raw).ok_or_else(|| {
        message(
            StatusCode::BAD_REQUEST,
            "the path is not percent-encoded UTF-8",
        )
    })
}

/// A path for the listing commands: one the engine would take for a file (or the root).
pub fn listing_path(raw: &str) -> Result<String, Resp> {
    let path = download_path(raw)?;
    if path.is_empty() || path == "." || path == "/workspace" {
        return Ok(String::new());
    }
    agentjail_engine::engine::workspace::workspace_path(&path).ok_or_else(|| {
        message(
            StatusCode::BAD_REQUEST,
            "the path must be relative to /workspace (or under it), without `..`",
        )
    })
}

fn run_sh(
    engine: &Engine,
    pod: &PodWorkspace,
    script: &str,
    arg: &str,
    done: Finish,
) -> Result<Value, Resp> {
    let mut o = Map::new();
    o.insert("argv".into(), json!(["/bin/sh", "-c", script, "sh", arg]));
    let req = ExecRequest::from_fields(&o).map_err(pod_error)?;
    let run = |id: &str| engine.workspace_exec_for(id, &req, POD_OWNER, None);
    pod.on(engine, run, ended_exec).map(|mut r| {
        done(&mut r);
        r.value
    })
}

/// `GET /list/{path}`.
pub fn list(engine: &Engine, pod: &PodWorkspace, raw: &str, done: Finish) -> Resp {
    let path = match listing_path(raw) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let rec = match run_sh(engine, pod, LIST, &path, done) {
        Ok(r) => r,
        Err(r) => return r,
    };
    if rec["execution"]["exit_code"].as_i64() != Some(0) {
        return message(StatusCode::NOT_FOUND, "Directory not found");
    }
    let out = rec["execution"]["stdout"].as_str().unwrap_or("");
    let entries: Vec<Value> = out
        .split('\0')
        .filter(|e| !e.is_empty())
        .filter_map(|e| {
            let mut it = e.splitn(4, ' ');
            let (t, size, mtime, name) = (it.next()?, it.next()?, it.next()?, it.next()?);
            Some(json!({
                "name": name,
                "size": size.parse::<u64>().ok()?,
                "type": if t == "d" { "directory" } else { "file" },
                "mod_time": mtime.parse::<f64>().ok()?,
            }))
        })
        .collect();
    json_resp(StatusCode::OK, &Value::Array(entries))
}

/// `GET /exists/{path}` → `{"path", "exists"}`.
pub fn exists(engine: &Engine, pod: &PodWorkspace, raw: &str, done: Finish) -> Resp {
    let path = match listing_path(raw) {
        Ok(p) => p,
        Err(r) => return r,
    };
    match run_sh(engine, pod, EXISTS, &path, done) {
        Ok(rec) => json_resp(
            StatusCode::OK,
            &json!({"path": path, "exists": rec["execution"]["exit_code"].as_i64() == Some(0)}),
        ),
        Err(r) => r,
    }
}

/// `%XX` decoded (the agent-sandbox client quotes every byte but letters, digits and
/// `_.-~`), as UTF-8 without control characters; None otherwise.
pub fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    let text = String::from_utf8(out).ok()?;
    (!text.chars().any(char::is_control)).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding_is_strict() {
        assert_eq!(percent_decode("a%2Fb.txt").as_deref(), Some("a/b.txt"));
        assert_eq!(percent_decode("x%20y").as_deref(), Some("x y"));
        assert_eq!(percent_decode("%2e%2e%2Fetc").as_deref(), Some("../etc"));
        assert_eq!(percent_decode("%"), None);
        assert_eq!(percent_decode("%zz"), None);
        assert_eq!(percent_decode("%00"), None);
        assert_eq!(percent_decode("%0a"), None);
        assert_eq!(percent_decode("%ff"), None);
    }

    #[test]
    fn a_listing_path_is_the_engines() {
        assert_eq!(listing_path("").ok(), Some(String::new()));
        assert_eq!(listing_path("src%2Fa").ok(), Some("src/a".into()));
        assert!(listing_path("%2e%2e%2Fetc").is_err());
        assert!(listing_path("%2Fetc").is_err());
    }

    #[test]
    fn records_become_runtime_results() {
        let ok = json!({"status": "ok", "stop_reason": "success",
            "execution": {"stdout": "hi\n", "stderr": "", "exit_code": 0}});
        assert_eq!(
            runtime_result(&ok),
            json!({"stdout": "hi\n", "stderr": "", "exit_code": 0})
        );
        let failed = json!({"status": "stopped", "stop_reason": "code_runtime_error:3",
            "execution": {"stdout": "", "stderr": "boom", "exit_code": 3}});
        assert_eq!(runtime_result(&failed)["exit_code"], 3);
        let timeout = json!({"status": "stopped", "stop_reason": "code_timeout",
            "execution": {"stdout": "", "stderr": "", "exit_code": null}});
        let r = runtime_result(&timeout);
        assert_eq!(r["exit_code"], -1);
        assert_eq!(r["stderr"], "agentjail: stopped: code_timeout\n");
    }
}
