//! The MCP request handler: tool calls mapped onto the engine.
//!
//! The engine is synchronous and its calls block for as long as a job runs, so each one runs
//! on tokio's blocking pool (`spawn_blocking`), at most `jobs` at a time. Those threads only
//! *wait* for jails: every jail is cloned by the engine's own spawner threads (pool.rs says
//! why: a jail's init dies with the thread that cloned it, and blocking-pool threads come and
//! go).

mod workspace;
mod workspace_fs;

use crate::result;
use crate::tools::{
    self, CHECK_PYTHON, RUN_JAVASCRIPT, RUN_PYTHON, SESSION_CLOSE, SESSION_EXEC, SESSION_START,
};
use agentjail_engine::engine::{Caller, Engine, EngineError, Outcome, Request as EngineRequest};
use agentjail_engine::pipeline::session::Owner;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often a long call reports progress (when the client asked for progress).
pub const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// The longest a progress notification may hold up its call.
const NOTIFY_WAIT: Duration = Duration::from_millis(250);

/// The server's state, shared by every request of the connection.
#[derive(Clone)]
pub struct Handler(Arc<Inner>);

struct Inner {
    engine: Arc<Engine>,
    /// The connection: sessions belong to it.
    owner: Owner,
    tools: Vec<Tool>,
    instructions: String,
    jobs: tokio::sync::Semaphore,
    /// Numbers the actions this connection builds (`mcp-1`, `mcp-2`, ...).
    runs: AtomicU64,
}

impl Handler {
    pub fn new(engine: Arc<Engine>, owner: Owner, jobs: usize) -> Self {
        let policy = &engine.policy().policy;
        let caps = tools::Capabilities::probe(policy);
        let mut tools = tools::all(policy, caps);
        tools.extend(workspace::tools(policy));
        tools::finish(policy, &mut tools);
        let instructions = tools::instructions(policy);
        Handler(Arc::new(Inner {
            engine,
            owner,
            tools,
            instructions,
            jobs: tokio::sync::Semaphore::new(jobs.max(1)),
            runs: AtomicU64::new(1),
        }))
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let mut implementation = Implementation::new("agentjail", env!("CARGO_PKG_VERSION"));
        implementation = implementation
            .with_title("agentjail")
            .with_description("Runs agent-written Python in a Linux namespace jail under a policy and returns one JSON record per run.");
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_instructions(self.0.instructions.clone());
        info.server_info = implementation;
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.0.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = tools::without_nulls(request.arguments.unwrap_or_default());
        let progress = Progress::of(&context);
        let ends_work = [
            RUN_PYTHON,
            RUN_JAVASCRIPT,
            SESSION_EXEC,
            SESSION_CLOSE,
            workspace::EXEC,
            workspace::CLOSE,
        ]
        .contains(&request.name.as_ref());
        let result = match request.name.as_ref() {
            RUN_PYTHON => self.run_python(args, progress).await?,
            RUN_JAVASCRIPT if self.0.engine.policy().policy.executes("javascript") => {
                self.run_javascript(args, progress).await?
            }
            CHECK_PYTHON => self.check_python(args).await?,
            SESSION_START => self.session_start(args, progress).await?,
            SESSION_EXEC => self.session_exec(args, progress).await?,
            SESSION_CLOSE => self.session_close(args).await?,
            name if workspace::NAMES.contains(&name)
                && self.0.engine.policy().policy.workspace.enabled =>
            {
                self.workspace_call(name, args, progress).await?
            }
            other => {
                // An unknown tool is a protocol error (MCP: -32602), not a tool result.
                return Err(McpError::invalid_params(
                    format!(
                        "unknown tool {:?}; this server has {}",
                        agentjail_json::safe_text(other, 80),
                        self.0
                            .tools
                            .iter()
                            .map(|t| t.name.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    None,
                ));
            }
        };
        // rmcp serialises and writes the response after this returns; the refills held for a
        // job or a session call are released just before (Engine::answered says why they
        // wait). Not after a session start: its first call usually follows at once.
        if ends_work {
            self.0.engine.answered();
        }
        Ok(result.into())
    }
}

impl Handler {
    pub(crate) fn engine(&self) -> Arc<Engine> {
        Arc::clone(&self.0.engine)
    }

    pub(crate) fn owner(&self) -> Owner {
        self.0.owner
    }

    /// This connection as the engine's caller: its sessions' and workspaces' owner; the
    /// engine audits each record (Engine::handle), no stamp (a stdio client has no peer).
    pub(crate) fn caller(&self) -> Caller<'static> {
        Caller::owner(self.0.owner)
    }

    fn next_action_id(&self) -> String {
        format!("mcp-{}", self.0.runs.fetch_add(1, Ordering::Relaxed))
    }

    /// `run_python`: the action built from the arguments, one run on a warm jail.
    async fn run_python(
        &self,
        args: JsonObject,
        progress: Option<Progress>,
    ) -> Result<CallToolResult, McpError> {
        let action = match run_action(&self.next_action_id(), args) {
            Ok(a) => a,
            Err(e) => return Ok(result::refused_record("arguments", &e)),
        };
        self.run_action_on_engine(action, progress).await
    }

    /// `run_javascript`: as `run_python`, for a `main.js` (no files: the JavaScript check
    /// and node's permission model leave a program no file access).
    async fn run_javascript(
        &self,
        args: JsonObject,
        progress: Option<Progress>,
    ) -> Result<CallToolResult, McpError> {
        let action = match run_javascript_action(&self.next_action_id(), args) {
            Ok(a) => a,
            Err(e) => return Ok(result::refused_record("arguments", &e)),
        };
        self.run_action_on_engine(action, progress).await
    }

    /// One action through the engine on a warm jail; its record as a tool result.
    async fn run_action_on_engine(
        &self,
        action: Value,
        mut progress: Option<Progress>,
    ) -> Result<CallToolResult, McpError> {
        let bytes = serde_json::to_vec(&action).unwrap_or_default();
        let inner = Arc::clone(&self.0);
        let out = progress.as_mut().and_then(|p| p.stream(&self.0.engine));
        let record = self
            .blocking(progress, move || {
                let run = EngineRequest::Run {
                    action: &bytes,
                    inputs: Vec::new(),
                };
                let caller = Caller::owner(inner.owner);
                inner.engine.handle_streaming(&caller, run, sink(&out))
            })
            .await?;
        Ok(match record {
            Ok(Outcome::Record(record)) => self.hinted(record.value),
            Ok(_) => result::error("internal", "not a record"),
            Err(e) => result::refused_record(e.code.as_str(), &e.message),
        })
    }

    /// `check_python`: the decision only.
    async fn check_python(&self, args: JsonObject) -> Result<CallToolResult, McpError> {
        let code = match Args::new(args, &["code"]).and_then(|mut a| a.code()) {
            Ok(c) => c,
            Err(e) => return Ok(result::refused_decision("arguments", &e)),
        };
        let action = json!({"id": self.next_action_id(), "language": "python",
                            "entrypoint": "main.py", "code": code, "input_payload": {}});
        let bytes = serde_json::to_vec(&action).unwrap_or_default();
        let engine = Arc::clone(&self.0.engine);
        // The check is CPU work on hostile input: off the async thread, on a big stack.
        let (decision, _) = tokio::task::spawn_blocking(move || engine.check(&bytes))
            .await
            .map_err(|e| McpError::internal_error(format!("the check failed: {e}"), None))?;
        Ok(result::from_value(decision, false))
    }

    async fn session_start(
        &self,
        args: JsonObject,
        progress: Option<Progress>,
    ) -> Result<CallToolResult, McpError> {
        let hints = match Args::new(args, &["policy_hints"]).map(|mut a| a.take("policy_hints")) {
            Ok(h) => h.filter(|h| !h.is_null()),
            Err(e) => return Ok(result::error("bad_request", &e)),
        };
        let inner = Arc::clone(&self.0);
        let started = self
            .blocking(progress, move || {
                inner.engine.session_start(hints.as_ref(), inner.owner)
            })
            .await?;
        let limits = &self.0.engine.policy().policy.session;
        Ok(match started {
            Ok(id) => result::from_value(
                json!({"session": id, "limits": {
                    "max_calls": limits.max_calls,
                    "max_exec_seconds": limits.max_exec_seconds,
                    "idle_timeout_seconds": limits.idle_timeout_seconds,
                    "lifetime_seconds": limits.lifetime_seconds,
                }}),
                false,
            ),
            Err(e) => result::error(e.code.as_str(), &e.message),
        })
    }

    async fn session_exec(
        &self,
        args: JsonObject,
        mut progress: Option<Progress>,
    ) -> Result<CallToolResult, McpError> {
        let parsed = Args::new(args, &["session", "code", "timeout_s"]).and_then(|mut a| {
            let session = a.string("session")?;
            let code = a.code()?;
            let timeout = a.timeout()?.and_then(|t| t.as_f64());
            Ok((session, code, timeout))
        });
        let (session, code, timeout) = match parsed {
            Ok(p) => p,
            Err(e) => return Ok(result::refused_record("arguments", &e)),
        };
        let inner = Arc::clone(&self.0);
        let out = progress.as_mut().and_then(|p| p.stream(&self.0.engine));
        let done = self
            .blocking(progress, move || {
                let exec = EngineRequest::SessionExec {
                    session: &session,
                    code: &code,
                    timeout_s: timeout,
                };
                let caller = Caller::owner(inner.owner);
                inner.engine.handle_streaming(&caller, exec, sink(&out))
            })
            .await?;
        Ok(match done {
            Ok(Outcome::Record(record)) => self.hinted(record.value),
            Ok(_) => result::error("internal", "not a record"),
            Err(EngineError { code, message }) => result::refused_record(code.as_str(), &message),
        })
    }

    async fn session_close(&self, args: JsonObject) -> Result<CallToolResult, McpError> {
        let session = match Args::new(args, &["session"]).and_then(|mut a| a.string("session")) {
            Ok(s) => s,
            Err(e) => return Ok(result::error("bad_request", &e)),
        };
        let inner = Arc::clone(&self.0);
        let closed =
            tokio::task::spawn_blocking(move || inner.engine.session_close(&session, inner.owner))
                .await
                .map_err(|e| McpError::internal_error(format!("closing failed: {e}"), None))?;
        Ok(match closed {
            Ok(c) => result::from_value(json!({ "closed": c }), false),
            Err(e) => result::error(e.code.as_str(), &e.message),
        })
    }

    /// A record as a tool result, with a `hint` where the server's policy could lift its
    /// stop (agentjail_engine::policy::explain::hint): for the model, the key its operator
    /// would change and the safer way; never where no policy could.
    fn hinted(&self, mut record: Value) -> CallToolResult {
        agentjail_engine::policy::explain::add_hint(&mut record, &self.0.engine.policy().policy);
        result::from_record(&record)
    }

    /// Run `f` on the blocking pool once one of the `jobs` slots is free, reporting
    /// progress while it runs when the client asked for it.
    pub(crate) async fn blocking<T, F>(
        &self,
        progress: Option<Progress>,
        f: F,
    ) -> Result<T, McpError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let _slot = self
            .0
            .jobs
            .acquire()
            .await
            .map_err(|_| McpError::internal_error("agentjail is shutting down", None))?;
        let task = tokio::task::spawn_blocking(f);
        let joined = match progress {
            Some(p) => p.watch(task).await,
            None => task.await,
        };
        joined.map_err(|e| McpError::internal_error(format!("the job failed: {e}"), None))
    }
}

/// The action `run_python`'s arguments describe. The contract then validates it like any
/// action (the record says what was wrong); only the arguments' own names are checked here.
pub fn run_action(id: &str, args: JsonObject) -> Result<Value, String> {
    action_from(id, args, "python")
}

/// The action `run_javascript`'s arguments describe (`main.js`; no `files`: the JavaScript
/// check and node's permission model leave a program no file access).
pub fn run_javascript_action(id: &str, args: JsonObject) -> Result<Value, String> {
    action_from(id, args, "javascript")
}

fn action_from(id: &str, args: JsonObject, language: &str) -> Result<Value, String> {
    let python = language == "python";
    let known: &[&str] = if python {
        &[
            "code",
            "input",
            "stdin",
            "output_mode",
            "files",
            "output_schema",
            "timeout_s",
        ]
    } else {
        &[
            "code",
            "input",
            "stdin",
            "output_mode",
            "output_schema",
            "timeout_s",
        ]
    };
    let mut a = Args::new(args, known)?;
    let code = a.code()?;
    let input = match a.take("input") {
        None | Some(Value::Null) => json!({}),
        Some(v @ Value::Object(_)) => v,
        Some(_) => {
            return Err(
                "\"input\" must be a JSON object (it reaches the program on stdin as one line)"
                    .into(),
            )
        }
    };
    let entrypoint = agentjail_engine::contract::entrypoint_for(language).unwrap_or("main.py");
    let mut action = json!({"id": id, "language": language, "entrypoint": entrypoint,
                            "code": code});
    // Judge mode: raw stdin instead of the input line (the contract checks its type and
    // size), and the output mode as given.
    let stdin = a.take("stdin").filter(|s| !s.is_null());
    if stdin.is_some() && input != json!({}) {
        return Err(
            "\"input\" and \"stdin\" are exclusive: send the program's input one way".into(),
        );
    }
    match stdin {
        Some(stdin) => action["stdin"] = stdin,
        None => action["input_payload"] = input,
    }
    if let Some(m) = a.take("output_mode").filter(|m| !m.is_null()) {
        action["output_mode"] = m;
    }
    if let Some(s) = a.take("output_schema").filter(|s| !s.is_null()) {
        action["output_schema"] = s;
    }
    if let Some(t) = a.timeout()? {
        action["policy_hints"] = json!({ "exec_timeout_seconds": t });
    }
    // Passed through as is: the contract owns the files format and its limits
    // (invalid_action:files:<what>).
    if let Some(f) = a.take("files").filter(|f| !f.is_null()) {
        action["files"] = f;
    }
    Ok(action)
}

/// A tool's arguments, with only the names it knows (a typo such as `timeout` for
/// `timeout_s` must not be dropped silently).
struct Args(JsonObject);

impl Args {
    fn new(args: JsonObject, known: &[&str]) -> Result<Args, String> {
        if let Some(k) = args.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(format!(
                "unknown argument {:?}; this tool takes {}",
                agentjail_json::safe_text(k, 60),
                known.join(", ")
            ));
        }
        Ok(Args(args))
    }

    fn take(&mut self, key: &str) -> Option<Value> {
        self.0.remove(key)
    }

    fn string(&mut self, key: &str) -> Result<String, String> {
        match self.0.remove(key) {
            Some(Value::String(s)) => Ok(s),
            None | Some(Value::Null) => Err(format!("\"{key}\" is required (a string)")),
            Some(_) => Err(format!("\"{key}\" must be a string")),
        }
    }

    fn code(&mut self) -> Result<String, String> {
        self.string("code")
    }

    /// `timeout_s`: absent, or a positive finite number (kept as written).
    fn timeout(&mut self) -> Result<Option<serde_json::Number>, String> {
        match self.0.remove("timeout_s") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) if n.as_f64().is_some_and(|t| t.is_finite() && t > 0.0) => {
                Ok(Some(n))
            }
            Some(_) => Err("\"timeout_s\" must be a positive number of seconds".into()),
        }
    }
}

/// Progress reports for one request whose client sent a progress token.
pub struct Progress {
    peer: Peer<RoleServer>,
    token: ProgressToken,
    /// The call's output as the supervisor reads it (see [`Output`]); None: not streamed.
    output: Option<tokio::sync::mpsc::UnboundedReceiver<String>>,
}

/// A streaming call's output, from the supervisor's thread to the call's progress
/// notifications: stdout and stderr chunks alike, in the order read (the engine's
/// `OutputSink`). Unbounded, as the chunks are bounded by the policy's output caps; the
/// supervisor never waits on it, and chunks that wait while a notification goes out are
/// sent together, as one message, in the next.
pub struct Output(tokio::sync::mpsc::UnboundedSender<String>);

impl agentjail_engine::engine::OutputSink for Output {
    fn chunk(&self, _stream: agentjail_engine::engine::Stream, text: &str) {
        let _ = self.0.send(text.to_string());
    }
}

impl Progress {
    fn of(context: &RequestContext<RoleServer>) -> Option<Progress> {
        let token = context.meta.get_progress_token()?;
        Some(Progress {
            peer: context.peer.clone(),
            token,
            output: None,
        })
    }

    /// Stream the call's output into its notifications (each chunk's text is a
    /// notification's message): the engine's sink for the call. None under a policy that
    /// redacts the printed record (the engine streams nothing of it: Engine::handle_streaming).
    pub(crate) fn stream(&mut self, engine: &Engine) -> Option<Output> {
        let r = &engine.policy().policy.redaction;
        if r.printed || !r.secrets.is_empty() {
            return None;
        }
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        self.output = Some(rx);
        Some(Output(tx))
    }

    async fn notify(&self, progress: f64, total: Option<f64>, message: String) {
        let mut p = ProgressNotificationParam::new(self.token.clone(), progress);
        p.total = total;
        p.message = Some(message);
        // A client that stopped listening is not an error for the job. Bounded: once the
        // input has ended, rmcp's loop no longer takes notifications and the send would wait
        // for its whole drain, holding back the call's response.
        let _ = tokio::time::timeout(NOTIFY_WAIT, self.peer.notify_progress(p)).await;
    }

    /// A start report, one per [`PROGRESS_EVERY`] while `task` runs, the output as it
    /// comes when streamed (the chunks waiting joined into one message), and an end report.
    /// `progress` counts the notifications.
    async fn watch<T>(
        mut self,
        task: tokio::task::JoinHandle<T>,
    ) -> Result<T, tokio::task::JoinError> {
        self.notify(0.0, None, "started".into()).await;
        let mut tick =
            tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
        let (mut seconds, mut n) = (0u64, 0u64);
        let mut task = std::pin::pin!(task);
        let mut output = self.output.take();
        loop {
            tokio::select! {
                biased;
                Some(first) = async { output.as_mut()?.recv().await } => {
                    let text = joined(first, output.as_mut());
                    n += 1;
                    self.notify(n as f64, None, text).await;
                }
                done = &mut task => {
                    // The sink is gone with the job: what is left is all of it.
                    if let Some(rest) = output.as_mut().and_then(|o| o.try_recv().ok()) {
                        n += 1;
                        self.notify(n as f64, None, joined(rest, output.as_mut())).await;
                    }
                    n += 1;
                    self.notify(n as f64, Some(n as f64), "done".into()).await;
                    return done;
                }
                _ = tick.tick() => {
                    seconds += 1;
                    n += 1;
                    self.notify(n as f64, None, format!("running for {seconds} s")).await;
                }
            }
        }
    }
}

/// A streaming call's sink for the engine (None: not streamed).
pub(crate) fn sink(out: &Option<Output>) -> Option<&dyn agentjail_engine::engine::OutputSink> {
    out.as_ref()
        .map(|o| o as &dyn agentjail_engine::engine::OutputSink)
}

/// `first` and every chunk waiting behind it, as one text.
fn joined(first: String, rx: Option<&mut tokio::sync::mpsc::UnboundedReceiver<String>>) -> String {
    let mut text = first;
    if let Some(rx) = rx {
        while let Ok(more) = rx.try_recv() {
            text.push_str(&more);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> JsonObject {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn run_arguments_become_an_action() {
        let a = run_action(
            "mcp-1",
            obj(
                json!({"code": "print(1)", "input": {"n": 1}, "timeout_s": 0.5,
                       "output_schema": {"type": "object"},
                       "files": [{"path": "a.csv", "content": "x"}]}),
            ),
        )
        .unwrap();
        assert_eq!(
            a,
            json!({"id": "mcp-1", "language": "python", "entrypoint": "main.py",
                   "code": "print(1)", "input_payload": {"n": 1},
                   "output_schema": {"type": "object"},
                   "policy_hints": {"exec_timeout_seconds": 0.5},
                   "files": [{"path": "a.csv", "content": "x"}]})
        );
        let bare = run_action("mcp-2", obj(json!({"code": "1"}))).unwrap();
        assert_eq!(bare["input_payload"], json!({}));
        assert!(bare.get("policy_hints").is_none() && bare.get("files").is_none());
    }

    #[test]
    fn bad_arguments_name_the_argument() {
        let e = run_action("x", obj(json!({"code": "1", "timeout": 3}))).unwrap_err();
        assert!(e.contains("unknown argument \"timeout\""), "{e}");
        let e = run_action("x", obj(json!({}))).unwrap_err();
        assert!(e.contains("\"code\" is required"), "{e}");
        let e = run_action("x", obj(json!({"code": 5}))).unwrap_err();
        assert!(e.contains("must be a string"), "{e}");
        let e = run_action("x", obj(json!({"code": "1", "input": [1]}))).unwrap_err();
        assert!(e.contains("\"input\" must be a JSON object"), "{e}");
        for t in [json!(0), json!(-1), json!("2")] {
            let e = run_action("x", obj(json!({"code": "1", "timeout_s": t}))).unwrap_err();
            assert!(e.contains("timeout_s"), "{e}");
        }
    }
}
