//! MCP's stdio transport: newline-delimited JSON-RPC on stdin and stdout, read and written by
//! two threads of agentjail's own and handed to rmcp as messages.
//!
//! Why not rmcp's own stdio transport:
//!
//! * **Bad input gets an answer.** rmcp drops a line that is not JSON without a word (its
//!   issue #938: answering can start an error storm with a peer that echoes) and answers a
//!   line of the wrong shape with an id-less `Invalid Request`. A client that sent a broken
//!   request then waits for an answer that never comes. Here a line that is not JSON gets
//!   `-32700 Parse error` (id null, as JSON-RPC 2.0 requires), a message of the wrong shape
//!   gets `-32600 Invalid Request` with its id when it had a usable one, and the server goes
//!   on.
//! * **Hostile JSON is read strictly.** Lines go through [`agentjail_json::parse_strict`]:
//!   bounded length, depth and memory, and a duplicated key is refused rather than resolved
//!   (a second `code` or `timeout_s` must not silently win), exactly as actions are read.
//! * **What leaves is safe JSON.** Records repeat what jailed code printed; every line is
//!   written with [`agentjail_json::to_safe_string`], so no U+2028, C1 control or bidi override
//!   from a program reaches the client raw, and one message is always one line.
//! * **Shutdown is ours.** The client closing stdin (MCP's stdio shutdown) or stdout breaking
//!   (the client died) calls a hook at once, so running jails are stopped without waiting for
//!   tokio to notice, and then ends the input the way EOF does, so rmcp still sends the
//!   stopped calls' records; reading stdin on a plain thread also keeps a blocked `read` out
//!   of the runtime's shutdown.

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleServer;
use serde_json::{json, Value};
use std::io::{BufRead, Write};
use std::sync::{mpsc, Arc, Mutex};

/// Longest message line accepted (the same cap as `agentjail serve`: an action may carry a
/// 16 MiB payload, base64 files grow it by a third).
pub const MAX_LINE_BYTES: usize = agentjail_engine::protocol::MAX_LINE_BYTES;

/// Deepest JSON accepted on a line: an action's 64 levels plus the JSON-RPC envelope
/// (`params.arguments.input`) and room to spare.
const MAX_DEPTH: usize = 72;

/// Messages read ahead of rmcp (back-pressure on the client beyond that).
const QUEUE: usize = 64;

/// JSON-RPC 2.0 error codes used here.
pub const PARSE_ERROR: i32 = -32700;
pub const INVALID_REQUEST: i32 = -32600;
pub const INVALID_PARAMS: i32 = -32602;

/// Called once when the client is gone: stdin reached EOF or stdout broke.
pub type Hook = Arc<dyn Fn(&'static str) + Send + Sync>;

/// The rmcp side of the transport. Cloneable handles to the same two streams, so the server
/// can be started again on the same connection after a bad first message (see main.rs).
#[derive(Clone)]
pub struct Stdio {
    incoming: Arc<tokio::sync::Mutex<tokio::sync::mpsc::Receiver<ClientJsonRpcMessage>>>,
    input: Input,
    out: Writer,
}

/// The sending end of the incoming queue. Dropping it ends the input as EOF would: rmcp
/// reads what is queued, then sees the connection close and sends the responses of calls
/// still finishing (its drain), which a signal or a broken stdout needs as much as EOF.
#[derive(Clone)]
pub struct Input(Arc<Mutex<Option<tokio::sync::mpsc::Sender<ClientJsonRpcMessage>>>>);

impl Input {
    fn sender(&self) -> Option<tokio::sync::mpsc::Sender<ClientJsonRpcMessage>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// End the input now (the reader thread, if blocked in `read`, is left to the exit).
    pub fn close(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// Bytes of response lines queued for a client that is not reading stdout. Past this the
/// client is treated as gone (as when stdout breaks): running calls are stopped, the input
/// ends, nothing more is queued. One line larger than this is still sent whole when nothing
/// else is queued.
pub const MAX_QUEUED_BYTES: usize = 32 * 1024 * 1024;

/// Where response lines go: the writer thread's queue, bounded by [`MAX_QUEUED_BYTES`].
#[derive(Clone)]
pub struct Writer {
    tx: Arc<Mutex<Option<mpsc::Sender<Vec<u8>>>>>,
    /// Bytes queued and not yet written.
    queued: Arc<std::sync::atomic::AtomicUsize>,
    /// What a stalled client sets off: the client-gone hook and the end of the input.
    stalled: Arc<dyn Fn() + Send + Sync>,
    /// Whether it was set off (the writer may then be blocked on stdout for good).
    is_stalled: Arc<std::sync::atomic::AtomicBool>,
}

impl Writer {
    /// Queue one message as one safe JSON line; a client with MAX_QUEUED_BYTES unread is
    /// gone.
    pub fn send_value(&self, v: &Value) {
        use std::sync::atomic::Ordering;
        let mut line = agentjail_json::to_safe_string(v).into_bytes();
        line.push(b'\n');
        let n = line.len();
        let before = self.queued.fetch_add(n, Ordering::SeqCst);
        if before > 0 && before + n > MAX_QUEUED_BYTES {
            self.queued.fetch_sub(n, Ordering::SeqCst);
            self.close();
            (self.stalled)();
            return;
        }
        match self.tx.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            Some(tx) if tx.send(line).is_ok() => {}
            _ => {
                self.queued.fetch_sub(n, Ordering::SeqCst);
            }
        }
    }

    /// Whether the client left MAX_QUEUED_BYTES unread (then nobody waits for the writer).
    pub fn stalled(&self) -> bool {
        self.is_stalled.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Stop accepting lines; the writer thread ends once it has written what was queued.
    pub fn close(&self) {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// Start the reader and writer threads on `input` and `output` (stdin and stdout in
/// production); `gone` is called once when the client is gone.
pub fn start<R, W>(input: R, output: W, gone: Hook) -> Result<(Stdio, WriterThread), String>
where
    R: BufRead + Send + 'static,
    W: Write + Send + 'static,
{
    let (line_tx, line_rx) = mpsc::channel::<Vec<u8>>();
    let (msg_tx, msg_rx) = tokio::sync::mpsc::channel(QUEUE);
    let incoming = Input(Arc::new(Mutex::new(Some(msg_tx))));
    let queued = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (g, i) = (Arc::clone(&gone), incoming.clone());
    let stalled_once = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let out = Writer {
        tx: Arc::new(Mutex::new(Some(line_tx))),
        queued: Arc::clone(&queued),
        is_stalled: Arc::clone(&stalled_once),
        stalled: Arc::new(move || {
            if !stalled_once.swap(true, std::sync::atomic::Ordering::SeqCst) {
                eprintln!(
                    "agentjail: the client left {} MiB of responses unread; stopping",
                    MAX_QUEUED_BYTES >> 20
                );
                g("stdout stalled");
                i.close();
            }
        }),
    };
    let (g, i, q) = (Arc::clone(&gone), incoming.clone(), Arc::clone(&queued));
    let writer = std::thread::Builder::new()
        .name("agentjail-mcp-out".into())
        .spawn(move || write_lines(output, &line_rx, &g, &i, &q))
        .map_err(|e| format!("cannot start the stdout writer: {e}"))?;
    let (w, i) = (out.clone(), incoming.clone());
    std::thread::Builder::new()
        .name("agentjail-mcp-in".into())
        .spawn(move || {
            read_lines(input, &i, &w);
            gone("eof");
            i.close();
        })
        .map_err(|e| format!("cannot start the stdin reader: {e}"))?;
    Ok((
        Stdio {
            incoming: Arc::new(tokio::sync::Mutex::new(msg_rx)),
            input: incoming,
            out,
        },
        WriterThread(writer),
    ))
}

/// The writer thread, joined at exit so every queued response is written first.
pub struct WriterThread(std::thread::JoinHandle<()>);

impl WriterThread {
    pub fn join(self) {
        let _ = self.0.join();
    }
}

impl Stdio {
    pub fn writer(&self) -> Writer {
        self.out.clone()
    }

    pub fn input(&self) -> Input {
        self.input.clone()
    }
}

impl rmcp::transport::Transport<RoleServer> for Stdio {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let result = match serde_json::to_value(&item) {
            Ok(v) => {
                self.out.send_value(&v);
                Ok(())
            }
            Err(e) => Err(std::io::Error::other(e)),
        };
        std::future::ready(result)
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<ClientJsonRpcMessage>> + Send {
        let incoming = Arc::clone(&self.incoming);
        async move { incoming.lock().await.recv().await }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

fn write_lines<W: Write>(
    mut output: W,
    lines: &mpsc::Receiver<Vec<u8>>,
    gone: &Hook,
    input: &Input,
    queued: &std::sync::atomic::AtomicUsize,
) {
    let mut broken = false;
    for line in lines {
        queued.fetch_sub(line.len(), std::sync::atomic::Ordering::SeqCst);
        if broken {
            continue;
        }
        if output
            .write_all(&line)
            .and_then(|_| output.flush())
            .is_err()
        {
            broken = true;
            gone("stdout closed");
            input.close();
        }
    }
}

/// What one input line is.
#[derive(Debug)]
pub enum Line {
    /// A message for rmcp.
    Message(Box<ClientJsonRpcMessage>),
    /// Nothing to do (blank line).
    Skip,
    /// Answer with this error response.
    Error(Value),
}

/// Read lines until EOF, forwarding messages and answering bad lines.
fn read_lines<R: BufRead>(mut input: R, to_rmcp: &Input, out: &Writer) {
    loop {
        let mut line = Vec::new();
        let mut limited = std::io::Read::take(&mut input, MAX_LINE_BYTES as u64 + 2);
        let n = match limited.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if line.last() != Some(&b'\n') && n > MAX_LINE_BYTES {
            out.send_value(&error_response(
                &Value::Null,
                INVALID_REQUEST,
                &format!("a message line is at most {MAX_LINE_BYTES} bytes"),
            ));
            // Skip to the end of that line, whatever its length, without keeping it.
            if skip_line(&mut input).is_err() {
                return;
            }
            continue;
        }
        match classify(&line) {
            Line::Message(m) => {
                // Never hold the queue's lock across a blocking send: `close` must not wait.
                let sent = to_rmcp
                    .sender()
                    .is_some_and(|tx| tx.blocking_send(*m).is_ok());
                if !sent {
                    return;
                }
            }
            Line::Skip => {}
            Line::Error(e) => out.send_value(&e),
        }
    }
}

fn skip_line<R: BufRead>(input: &mut R) -> std::io::Result<()> {
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) => {
                input.consume(i + 1);
                return Ok(());
            }
            None => {
                let n = buf.len();
                input.consume(n);
            }
        }
    }
}

/// One line (with or without its newline) as a message, nothing, or the error to answer.
/// Pure: the unit tests and the fuzzer-style tests drive it directly.
pub fn classify(line: &[u8]) -> Line {
    let mut line = line;
    while let Some((&last, rest)) = line.split_last() {
        if last == b'\n' || last == b'\r' {
            line = rest;
        } else {
            break;
        }
    }
    let line = line
        .strip_prefix(b"\xEF\xBB\xBF".as_slice())
        .unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Line::Skip;
    }
    let limits = agentjail_json::ReadLimits {
        max_depth: MAX_DEPTH,
        max_bytes: MAX_LINE_BYTES,
        ..Default::default()
    };
    let v = match agentjail_json::parse_strict(line, &limits) {
        Ok(v) => v,
        Err(e) => {
            return Line::Error(error_response(
                &Value::Null,
                PARSE_ERROR,
                &format!("Parse error: {e}"),
            ))
        }
    };
    let id = usable_id(&v);
    if let Some(why) = tools_call_params_error(&v) {
        return Line::Error(error_response(
            &id,
            INVALID_PARAMS,
            &format!(
                "Invalid params: {why}; tools/call takes \"params\": {{\"name\": \"<tool, e.g. run_python>\", \"arguments\": {{...}}}}"
            ),
        ));
    }
    // From the text, not from `v`: serde_json hands a big integer inside a buffered
    // (flattened) value to serde as u128, which serde's buffer refuses; read from text with
    // `arbitrary_precision` it is buffered as the literal and reaches the payload intact.
    match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(m) => Line::Message(Box::new(m)),
        Err(e) => Line::Error(error_response(
            &id,
            INVALID_REQUEST,
            &format!(
                "Invalid Request: not a JSON-RPC 2.0 message this server reads ({}); send {{\"jsonrpc\": \"2.0\", \"id\": <string or integer>, \"method\": \"...\", \"params\": {{...}}}}",
                agentjail_json::safe_text(&e.to_string(), 300)
            ),
        )),
    }
}

/// Why a `tools/call` request's params cannot be a tool call, if they cannot: rmcp reads
/// such a message as some other request and answers "method not found", which tells the
/// model nothing about what it got wrong.
fn tools_call_params_error(v: &Value) -> Option<&'static str> {
    if v.get("method").and_then(Value::as_str) != Some("tools/call") || v.get("id").is_none() {
        return None;
    }
    let Some(params) = v.get("params") else {
        return Some("no params");
    };
    let Some(params) = params.as_object() else {
        return Some("params is not an object");
    };
    match params.get("name") {
        None => return Some("no tool name"),
        Some(Value::String(_)) => {}
        Some(_) => return Some("the tool name is not a string"),
    }
    match params.get("arguments") {
        None | Some(Value::Null | Value::Object(_)) => None,
        Some(_) => Some("arguments is not an object"),
    }
}

/// The id to echo in an error: a string (at most 128 characters) or an integer, else null.
fn usable_id(v: &Value) -> Value {
    match v.get("id") {
        Some(Value::String(s)) if s.chars().count() <= 128 => Value::String(s.clone()),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Value::Number(n.clone()),
        _ => Value::Null,
    }
}

/// A JSON-RPC error response.
pub fn error_response(id: &Value, code: i32, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(line: &[u8]) -> (i64, Value) {
        match classify(line) {
            Line::Error(e) => (e["error"]["code"].as_i64().unwrap(), e["id"].clone()),
            other => panic!("expected an error for {:?}, got {other:?}", line),
        }
    }

    #[test]
    fn requests_and_notifications_pass() {
        let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        assert!(matches!(classify(init), Line::Message(_)));
        let note = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\r\n";
        assert!(matches!(classify(note), Line::Message(_)));
        let call = br#"{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"run_python","arguments":{"code":"print(1)","input":{"n":12345678901234567890123}}}}"#;
        assert!(
            matches!(classify(call), Line::Message(_)),
            "{:?}",
            classify(call)
        );
        assert!(matches!(classify(b"  \n"), Line::Skip));
    }

    #[test]
    fn garbage_is_a_parse_error_with_a_null_id() {
        for line in [
            &b"not json"[..],
            b"{\"jsonrpc\":",
            b"\xff\xfe",
            b"{\"a\":1}{",
            b"[1,2",
        ] {
            assert_eq!(error_of(line), (-32700, Value::Null), "{line:?}");
        }
    }

    #[test]
    fn a_duplicated_key_is_refused_not_resolved() {
        let line = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"1","code":"2"}}}"#;
        assert_eq!(error_of(line).0, -32700);
    }

    proptest::proptest! {
        /// Any bytes: no panic, and either a message, nothing, or a JSON-RPC error object
        /// with one of the two codes and a string or integer or null id.
        #[test]
        fn any_line_is_answered_or_passed(line in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            if let Line::Error(e) = classify(&line) {
                let code = e["error"]["code"].as_i64();
                proptest::prop_assert!(matches!(code, Some(-32700 | -32600 | -32602)), "{}", e);
                proptest::prop_assert!(e["id"].is_null() || e["id"].is_string() || e["id"].is_i64() || e["id"].is_u64());
                proptest::prop_assert_eq!(&e["jsonrpc"], "2.0");
            }
        }

        /// JSON-looking lines (objects with arbitrary keys and values) exercise the shape
        /// checks, not just the parser.
        #[test]
        fn json_objects_of_any_shape_are_answered_or_passed(
            id in proptest::option::of(proptest::num::i64::ANY),
            method in "[a-z/]{0,20}",
            params in proptest::option::of("[0-9a-z\\[\\]{}:,\" ]{0,40}"),
        ) {
            let mut line = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"{method}\"");
            if let Some(id) = id {
                line.push_str(&format!(",\"id\":{id}"));
            }
            if let Some(p) = params {
                line.push_str(&format!(",\"params\":{p}"));
            }
            line.push('}');
            if let Line::Error(e) = classify(line.as_bytes()) {
                let code = e["error"]["code"].as_i64();
                proptest::prop_assert!(matches!(code, Some(-32700 | -32600 | -32602)), "{}", e);
            }
        }
    }

    #[test]
    fn the_wrong_shape_is_an_invalid_request_with_its_id() {
        assert_eq!(error_of(br#"{"foo":"bar"}"#), (-32600, Value::Null));
        assert_eq!(error_of(b"[1,2,3]"), (-32600, Value::Null));
        assert_eq!(error_of(b"42"), (-32600, Value::Null));
        let (code, id) =
            error_of(br#"{"jsonrpc":"2.0","id":"r9","method":"tools/list","params":7}"#);
        assert_eq!((code, id), (-32600, json!("r9")));
        let (_, id) = error_of(br#"{"jsonrpc":"1.0","id":5,"method":"ping"}"#);
        assert_eq!(id, json!(5));
    }

    #[test]
    fn a_tools_call_that_is_not_a_tool_call_is_invalid_params() {
        for (params, why) in [
            ("", "no params"),
            (r#","params":7"#, "params is not an object"),
            (r#","params":[1]"#, "params is not an object"),
            (r#","params":{"arguments":{}}"#, "no tool name"),
            (r#","params":{"name":5,"arguments":{}}"#, "not a string"),
            (
                r#","params":{"name":"run_python","arguments":7}"#,
                "arguments is not",
            ),
            (
                r#","params":{"name":"run_python","arguments":"x"}"#,
                "arguments is not",
            ),
        ] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":"c","method":"tools/call"{params}}}"#);
            let Line::Error(e) = classify(line.as_bytes()) else {
                panic!("{line} passed");
            };
            assert_eq!(e["error"]["code"], -32602, "{line}: {e}");
            assert_eq!(e["id"], "c");
            let m = e["error"]["message"].as_str().unwrap();
            assert!(
                m.contains(why) && m.contains("\"arguments\""),
                "{line}: {m}"
            );
        }
        let ok = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"1"}}}"#;
        assert!(matches!(classify(ok), Line::Message(_)));
    }
}
