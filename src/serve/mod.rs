//! `agentjail serve`: the engine behind JSON lines, on stdin/stdout or on a unix socket.
//!
//! Requests are read one per line and run concurrently on `-j N` worker threads; each
//! response is written as one line, whole, tagged with its request's id, in the order the
//! jobs finish. A bad line gets an error response and the server goes on. On stdin, EOF
//! means: finish what is running, print it, exit 0. On a socket, each connection is a client
//! with its own sessions (closed when it disconnects), and the peer's uid (SO_PEERCRED) goes
//! into every record it gets. SIGTERM, SIGINT or SIGHUP: stop reading, let running jobs
//! finish for [`GRACE`], then stop the rest (each still gets its record, `interrupted:
//! sigterm`), end every jail and session, exit 0.

//!
//! The protocol's messages (agentjail_engine::protocol) and the socket, the signals and the
//! grace (agentjail_engine::listen) are the engine crate's, which agentjail-http shares; the
//! server (queues, workers, clients) is this module.

mod workspace;

use agentjail_engine::engine::{Caller, Engine, Outcome, Request as EngineRequest};
use agentjail_engine::flags::ServeFlags;
use agentjail_engine::listen::{listen, signalled, GRACE};
use agentjail_engine::pipeline::session::Owner;
use agentjail_engine::protocol::{self, Op, Request};
use agentjail_jail::os;
use serde_json::{json, Value};
use std::io::{BufRead, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

pub struct ServeArgs {
    pub engine: agentjail_engine::engine::EngineConfig,
    pub jobs: usize,
    pub socket: Option<PathBuf>,
    pub socket_group: Option<String>,
    pub audit_log: Option<PathBuf>,
    /// [`Budget`]'s limit: bytes of responses queued for all clients and not yet written.
    pub max_unread_responses: usize,
}

/// The default of `--unread-budget`: sixteen clients each at its own bound.
pub const DEFAULT_MAX_UNREAD_RESPONSES: usize = 256 * 1024 * 1024;

/// Bytes of responses queued for one client that is not reading them. Past this the client
/// is dropped: its connection shut down, its running jobs and calls stopped (each with its
/// record, `interrupted:sighup`, in the audit log), its queued requests never started, its
/// sessions ended. A single response larger than this is still sent whole when nothing
/// else is queued. Workers never write to a client: one writer thread per client does.
pub const MAX_QUEUED_RESPONSE_BYTES: usize = 16 * 1024 * 1024;
/// Requests of one client read and not yet answered (queued or running); one more is
/// answered `too_many_requests` at once and not queued.
pub const MAX_REQUESTS_IN_FLIGHT: usize = 256;
/// Bytes of one client's request lines read and not yet answered; past this, as above.
pub const MAX_QUEUED_REQUEST_BYTES: usize = 64 * 1024 * 1024;

/// One client's responses on their way out: queued by the workers, written by the client's
/// writer thread.
#[derive(Default)]
struct OutQueue {
    st: Mutex<OutState>,
    cv: Condvar,
    /// The server's total of unread responses, which this queue's bytes count towards.
    budget: Option<Arc<Budget>>,
}

/// How a client is dropped (Conn::hang_up).
type DropClient = Arc<dyn Fn() + Send + Sync>;
/// How a client is dropped, as the budget holds it.
type HangUp = std::sync::Weak<dyn Fn() + Send + Sync>;

/// The server-wide bound on response bytes queued and not yet written (the line a client's
/// writer is writing included), over every client:
/// each client's own bound (MAX_QUEUED_RESPONSE_BYTES) times many clients that stop reading
/// would otherwise be memory without a limit. Past it, the clients with the most unread
/// bytes are dropped (as a client past its own bound is) until the total is within it.
struct Budget {
    limit: usize,
    queued: AtomicUsize,
    /// Clients dropped to keep within the limit (for `stats`).
    dropped: AtomicU64,
    enforcing: Mutex<()>,
    /// Every client that may hold queued bytes: its queue and how to drop it (weak: the
    /// client's threads and tasks hold them, and a client gone is pruned here).
    clients: Mutex<Vec<(u64, std::sync::Weak<OutQueue>, HangUp)>>,
}

impl Budget {
    fn new(limit: usize) -> Budget {
        Budget {
            limit,
            queued: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
            enforcing: Mutex::new(()),
            clients: Mutex::new(Vec::new()),
        }
    }

    fn add(&self, connection: u64, q: &Arc<OutQueue>, hang_up: &Arc<dyn Fn() + Send + Sync>) {
        let mut v = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        v.retain(|(_, _, h)| h.strong_count() > 0);
        v.push((connection, Arc::downgrade(q), Arc::downgrade(hang_up)));
    }

    /// Over the limit: drop the clients with the most unread bytes, largest first, until
    /// the total is within it. Called after a line is queued, never under a queue's lock.
    fn enforce(&self) {
        if self.queued.load(Ordering::SeqCst) <= self.limit {
            return;
        }
        // One enforcer at a time: two would each drop a client for the same excess.
        let _one = self.enforcing.lock().unwrap_or_else(|e| e.into_inner());
        let total = self.queued.load(Ordering::SeqCst);
        let mut over = total.saturating_sub(self.limit);
        if over == 0 {
            return;
        }
        let mut by_size: Vec<(usize, u64, DropClient)> = {
            let v = self.clients.lock().unwrap_or_else(|e| e.into_inner());
            v.iter()
                .filter_map(|(c, w, h)| {
                    let (q, h) = (w.upgrade()?, h.upgrade()?);
                    let st = q.lock();
                    let held = st.bytes + st.writing;
                    (!st.dropped && held > 0).then_some((held, *c, h))
                })
                .collect()
        };
        by_size.sort_by_key(|c| std::cmp::Reverse(c.0));
        for (held, connection, hang_up) in by_size {
            if over == 0 {
                return;
            }
            eprintln!(
                "agentjail: client {connection} dropped: the server's unread responses reached {} MiB (--unread-budget {} MiB) and its {} MiB were the most",
                total >> 20,
                self.limit >> 20,
                held >> 20
            );
            self.dropped.fetch_add(1, Ordering::SeqCst);
            // Its queue is freed now; the line its writer holds once the shut-down socket
            // fails the write.
            hang_up();
            over = over.saturating_sub(held);
        }
    }

    fn stats(&self) -> Value {
        json!({
            "unread_bytes": self.queued.load(Ordering::SeqCst),
            "max_unread_bytes": self.limit,
            "clients_dropped": self.dropped.load(Ordering::SeqCst),
        })
    }
}

#[derive(Default)]
struct OutState {
    lines: std::collections::VecDeque<Vec<u8>>,
    bytes: usize,
    /// The writer is writing a line now.
    busy: bool,
    /// That line's bytes: out of `lines`, still held until written (and still counted in
    /// the server's budget: a client that does not read keeps it as long as it likes).
    writing: usize,
    /// No more lines will come (the client's requests are all answered).
    closed: bool,
    /// The client is dropped: nothing more is queued or written.
    dropped: bool,
}

impl OutQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, OutState> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_dropped(&self) -> bool {
        self.lock().dropped
    }

    /// Give `n` queued bytes back to the server's budget.
    fn unqueued(&self, n: usize) {
        if let Some(b) = &self.budget {
            b.queued.fetch_sub(n, Ordering::SeqCst);
        }
    }

    /// Mark the client dropped and free its queue (the caller holds `st`, this queue's lock).
    fn drop_queue(&self, st: &mut OutState) {
        st.dropped = true;
        st.lines.clear();
        self.unqueued(st.bytes);
        st.bytes = 0;
        self.cv.notify_all();
    }

    /// Queue one line; false when that would pass MAX_QUEUED_RESPONSE_BYTES (the client is
    /// then marked dropped and the queue emptied) or the client is already dropped.
    fn push(&self, line: Vec<u8>) -> bool {
        let mut st = self.lock();
        if st.dropped {
            return false;
        }
        if st.bytes > 0 && st.bytes + line.len() > MAX_QUEUED_RESPONSE_BYTES {
            self.drop_queue(&mut st);
            return false;
        }
        st.bytes += line.len();
        if let Some(b) = &self.budget {
            b.queued.fetch_add(line.len(), Ordering::SeqCst);
        }
        st.lines.push_back(line);
        self.cv.notify_all();
        drop(st);
        if let Some(b) = &self.budget {
            b.enforce();
        }
        true
    }

    fn close(&self) {
        self.lock().closed = true;
        self.cv.notify_all();
    }

    /// Wait until every queued line is written (or the client dropped), at most until
    /// `deadline`.
    fn flushed(&self, deadline: Instant) {
        let mut st = self.lock();
        while !st.dropped && (st.busy || !st.lines.is_empty()) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            st = self
                .cv
                .wait_timeout(st, left.min(Duration::from_millis(50)))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// The writer thread: write line after line, whole; a write that fails drops the client.
    fn write_loop(&self, mut w: Box<dyn Write + Send>, on_drop: &dyn Fn()) {
        loop {
            let line = {
                let mut st = self.lock();
                loop {
                    if st.dropped {
                        return;
                    }
                    if let Some(l) = st.lines.pop_front() {
                        st.bytes -= l.len();
                        st.writing = l.len();
                        st.busy = true;
                        break l;
                    }
                    if st.closed {
                        return;
                    }
                    st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
                }
            };
            let ok = w.write_all(&line).and_then(|_| w.flush()).is_ok();
            let mut st = self.lock();
            st.busy = false;
            st.writing = 0;
            self.unqueued(line.len());
            drop(line);
            if !ok {
                self.drop_queue(&mut st);
            }
            self.cv.notify_all();
            drop(st);
            if !ok {
                on_drop();
                return;
            }
        }
    }
}

/// Requests of one client not yet answered: how many, and their lines' bytes.
#[derive(Default)]
struct Pending {
    count: usize,
    bytes: usize,
}

/// One client: who it is, its responses' queue, its own stop, and how it is dropped.
#[derive(Clone)]
struct Conn {
    owner: Owner,
    out: Arc<OutQueue>,
    /// Requests of this client not yet answered.
    pending: Arc<(Mutex<Pending>, Condvar)>,
    /// Stops this client's jobs and calls alone (Engine::hang_up).
    stop: Option<Arc<agentjail_engine::engine::ClientStop>>,
    /// Drop the client: shut its connection down, stop its work (idempotent).
    hang_up: Arc<dyn Fn() + Send + Sync>,
}

impl Conn {
    fn new(
        engine: &Arc<Engine>,
        budget: Option<&Arc<Budget>>,
        uid: Option<u32>,
        shut: impl Fn() + Send + Sync + 'static,
    ) -> Conn {
        let connection = next_connection();
        let stop = match engine.client_stop(connection) {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("agentjail: {e}; this client's jobs stop only with the server");
                None
            }
        };
        let out = Arc::new(OutQueue {
            budget: budget.cloned(),
            ..OutQueue::default()
        });
        let (e, o) = (Arc::downgrade(engine), Arc::clone(&out));
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let hang_up = move || {
            if done.swap(true, Ordering::SeqCst) {
                return;
            }
            eprintln!(
                "agentjail: client {connection} dropped (its responses went unread past {} MiB, or its connection broke): its jobs and sessions are stopped",
                MAX_QUEUED_RESPONSE_BYTES >> 20
            );
            {
                let mut st = o.lock();
                o.drop_queue(&mut st);
            }
            shut();
            if let Some(e) = e.upgrade() {
                e.hang_up(connection);
            }
        };
        let hang_up: Arc<dyn Fn() + Send + Sync> = Arc::new(hang_up);
        if let Some(b) = budget {
            b.add(connection, &out, &hang_up);
        }
        Conn {
            owner: Owner { connection, uid },
            out,
            pending: Arc::new((Mutex::new(Pending::default()), Condvar::new())),
            stop,
            hang_up,
        }
    }

    /// Start the client's writer thread on `w`.
    fn start_writer(&self, w: Box<dyn Write + Send>) -> Option<std::thread::JoinHandle<()>> {
        let (out, hang_up) = (Arc::clone(&self.out), Arc::clone(&self.hang_up));
        std::thread::Builder::new()
            .name("agentjail-client-out".into())
            .spawn(move || out.write_loop(w, &*hang_up))
            .ok()
    }
}

type Task = Box<dyn FnOnce() + Send>;

/// Queued tasks and the stop flag, with the condvar the workers wait on.
type TaskQueue = Arc<(Mutex<(std::collections::VecDeque<Task>, bool)>, Condvar)>;

/// The worker threads and the count of tasks in flight.
struct Workers {
    queue: TaskQueue,
    busy: Arc<AtomicUsize>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Workers {
    fn new(n: usize) -> Result<Workers, String> {
        let queue: TaskQueue = Arc::new((Mutex::new((Default::default(), false)), Condvar::new()));
        let busy = Arc::new(AtomicUsize::new(0));
        let mut threads = Vec::new();
        for i in 0..n.max(1) {
            let q = Arc::clone(&queue);
            let b = Arc::clone(&busy);
            let t = std::thread::Builder::new()
                .name(format!("agentjail-worker-{i}"))
                // The schema validator and the checker recurse over hostile input within
                // their own bounds; give them the main thread's stack, not 2 MiB.
                .stack_size(16 * 1024 * 1024)
                .spawn(move || worker_loop(&q, &b))
                .map_err(|e| format!("cannot start a worker thread: {e}"))?;
            threads.push(t);
        }
        Ok(Workers {
            queue,
            busy,
            threads,
        })
    }

    fn submit(&self, task: Task) {
        self.busy.fetch_add(1, Ordering::SeqCst);
        let (lock, cv) = &*self.queue;
        lock.lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .push_back(task);
        cv.notify_one();
    }

    /// Wait until no task is queued or running, at most until `deadline`; true when idle.
    fn wait_idle(&self, deadline: Instant) -> bool {
        while self.busy.load(Ordering::SeqCst) > 0 {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    fn stop(self) {
        {
            let (lock, cv) = &*self.queue;
            lock.lock().unwrap_or_else(|e| e.into_inner()).1 = true;
            cv.notify_all();
        }
        for t in self.threads {
            let _ = t.join();
        }
    }
}

fn worker_loop(
    queue: &(Mutex<(std::collections::VecDeque<Task>, bool)>, Condvar),
    busy: &AtomicUsize,
) {
    let (lock, cv) = queue;
    loop {
        let task = {
            let mut q = lock.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if let Some(t) = q.0.pop_front() {
                    break t;
                }
                if q.1 {
                    return;
                }
                q = cv.wait(q).unwrap_or_else(|e| e.into_inner());
            }
        };
        task();
        busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Queue one response line for the client's writer; a client whose queue is full is
/// dropped (see MAX_QUEUED_RESPONSE_BYTES). Never blocks on the client.
fn respond(conn: &Conn, v: &Value) {
    let mut line = agentjail_json::to_safe_string(v).into_bytes();
    line.push(b'\n');
    if !conn.out.push(line) {
        (conn.hang_up)();
    }
}

/// Run one request on the engine (its one door, Engine::handle: the record stamped and
/// audited there); its response line. Serve's own part: host inputs resolved (`bad_inputs`),
/// the `responses` counters added to the stats, and the wire shape of each outcome.
fn handle(engine: &Engine, req: Request, conn: &Conn) -> Value {
    let id = req.id;
    let caller = Caller {
        owner: conn.owner,
        uid: conn.owner.uid,
        stop: conn.stop.as_deref(),
        // The peer's uid in the printed record; the audit log's copy has its own caller.
        named: conn.owner.uid.map(|uid| (json!({ "uid": uid }), false)),
    };
    let inputs = match &req.op {
        Op::Run { inputs, .. } => {
            let roots = &engine.policy().policy.files.host_roots;
            let resolved = inputs
                .iter()
                .map(|spec| agentjail_engine::inputs::resolve(spec, roots))
                .collect::<Result<Vec<_>, _>>();
            match resolved {
                Ok(inputs) => inputs,
                Err(e) => {
                    return json!({"id": id, "error": {"code": "bad_inputs",
                                  "message": agentjail_json::safe_text(&e.to_string(), 1000)}})
                }
            }
        }
        _ => Vec::new(),
    };
    let request = match &req.op {
        Op::Run { action, .. } => EngineRequest::Run { action, inputs },
        Op::Check { action } => EngineRequest::Check { action },
        Op::SessionStart { policy_hints } => EngineRequest::SessionStart {
            hints: policy_hints.as_ref(),
        },
        Op::SessionExec {
            session,
            code,
            timeout_s,
        } => EngineRequest::SessionExec {
            session,
            code,
            timeout_s: *timeout_s,
        },
        Op::SessionClose { session } => EngineRequest::SessionClose { session },
        Op::Stats => EngineRequest::Stats,
        Op::Learn { actions } => EngineRequest::Learn { actions },
        op => match workspace::request(op) {
            Some(r) => r,
            None => {
                return json!({"id": id, "error": {"code": "bad_request", "message": "not a workspace op"}})
            }
        },
    };
    let events = req.stream.then_some(Events { conn, id: &id });
    let out = events
        .as_ref()
        .map(|e| e as &dyn agentjail_engine::engine::OutputSink);
    match engine.handle_streaming(&caller, request, out) {
        Ok(Outcome::Record(record)) => json!({"id": id, "record": record.value}),
        Ok(Outcome::Decision(decision, _)) => json!({"id": id, "decision": decision}),
        Ok(Outcome::Session(s)) => json!({"id": id, "session": s}),
        Ok(Outcome::Workspace(w)) => json!({"id": id, "workspace": w}),
        Ok(Outcome::Closed(closed)) => json!({"id": id, "closed": closed}),
        Ok(Outcome::Files(files)) => json!({"id": id, "files": files}),
        Ok(Outcome::Answer(key, answer)) => json!({"id": id, key: answer}),
        Ok(Outcome::Stats(mut stats)) => {
            if let Some(b) = &conn.out.budget {
                stats["responses"] = b.stats();
            }
            json!({"id": id, "stats": stats})
        }
        Err(e) => json!({"id": id, "error": {"code": e.code.as_str(), "message": e.message}}),
    }
}

/// A streaming request's output (`"stream": true`): each chunk the supervisor reads is one
/// line `{"id", "event", "data"}`, queued in the client's response queue as it comes, ahead
/// of the record (queued when the request is done). Neither dropped nor coalesced: the
/// chunks are bounded by the caps, and the queue by MAX_QUEUED_RESPONSE_BYTES and the
/// server's budget, past which the client that does not read is dropped, as for records.
/// Never blocks: the supervisor's thread calls it.
struct Events<'a> {
    conn: &'a Conn,
    id: &'a Value,
}

impl agentjail_engine::engine::OutputSink for Events<'_> {
    fn chunk(&self, stream: agentjail_engine::engine::Stream, text: &str) {
        let v = json!({"id": self.id, "event": stream.name(), "data": text});
        respond(self.conn, &v);
    }
}

/// One request line as read from a client.
enum Line {
    /// End of input, or a read error: the client is done.
    End,
    /// Longer than the protocol allows; skipped to its end. The id read from its start
    /// (protocol::leading_id), or null.
    TooLong(Value),
    /// Only whitespace.
    Blank,
    Request(Vec<u8>),
}

/// Read the next line, at most [`protocol::MAX_LINE_BYTES`] (a longer one is skipped).
fn read_line<R: BufRead>(input: &mut R) -> Line {
    let mut line = Vec::new();
    let mut limited = std::io::Read::take(&mut *input, protocol::MAX_LINE_BYTES as u64 + 2);
    let n = match limited.read_until(b'\n', &mut line) {
        Ok(0) | Err(_) => return Line::End,
        Ok(n) => n,
    };
    if line.last() != Some(&b'\n') && n > protocol::MAX_LINE_BYTES {
        let id = protocol::leading_id(&line);
        drop(line);
        skip_line(input);
        return Line::TooLong(id);
    }
    while matches!(line.last(), Some(b'\n' | b'\r')) {
        line.pop();
    }
    if line.iter().all(u8::is_ascii_whitespace) {
        return Line::Blank;
    }
    Line::Request(line)
}

/// Skip input up to and including the next newline without holding it: a line far over the
/// limit costs the reader's buffer, not its length.
fn skip_line<R: BufRead>(input: &mut R) {
    loop {
        let (used, done) = match input.fill_buf() {
            Ok([]) | Err(_) => return,
            Ok(buf) => match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            },
        };
        input.consume(used);
        if done {
            return;
        }
    }
}

/// Count a request of `size` bytes against the client's limits; false when it is over them.
fn admit(conn: &Conn, size: usize) -> bool {
    let mut p = conn.pending.0.lock().unwrap_or_else(|e| e.into_inner());
    let ok = p.count < MAX_REQUESTS_IN_FLIGHT && p.bytes + size <= MAX_QUEUED_REQUEST_BYTES;
    if ok {
        p.count += 1;
        p.bytes += size;
    }
    ok
}

/// Read request lines from `input` until EOF (or until the client is dropped), submitting
/// each to the workers within the client's limits; then wait for this client's requests to
/// be answered.
fn read_requests<R: BufRead>(engine: &Arc<Engine>, workers: &Workers, input: &mut R, conn: &Conn) {
    while !conn.out.is_dropped() {
        let line = match read_line(input) {
            Line::End => break,
            Line::Blank => continue,
            Line::TooLong(id) => {
                respond(
                    conn,
                    &protocol::error_response(&protocol::line_too_long(id)),
                );
                continue;
            }
            Line::Request(line) => line,
        };
        let size = line.len();
        let req = match protocol::parse_request(&line) {
            Err(e) => {
                respond(conn, &protocol::error_response(&e));
                continue;
            }
            Ok(req) => req,
        };
        drop(line);
        if !admit(conn, size) {
            respond(
                conn,
                &json!({"id": req.id, "error": {"code": "too_many_requests",
                    "message": format!("this client has {MAX_REQUESTS_IN_FLIGHT} requests or {} MiB of requests unanswered, the most one client may; wait for responses before sending more", MAX_QUEUED_REQUEST_BYTES >> 20)}}),
            );
            continue;
        }
        submit(engine, workers, conn, req, size);
    }
    let (lock, cv) = &*conn.pending;
    let mut pending = lock.lock().unwrap_or_else(|e| e.into_inner());
    while pending.count > 0 {
        pending = cv.wait(pending).unwrap_or_else(|e| e.into_inner());
    }
}

/// Hand an admitted request to the workers; its answer goes to the client's queue, and its
/// share of the client's limits is given back when it is done.
fn submit(
    engine: &Arc<Engine>,
    workers: &Workers,
    conn: &Conn,
    req: protocol::Request,
    size: usize,
) {
    let (engine, conn) = (Arc::clone(engine), conn.clone());
    workers.submit(Box::new(move || {
        // The answer to a job or a session call releases the refills held back for it
        // (Engine::answered). A session start's does not: the session's first call usually
        // follows at once, and the refill waits for its answer.
        let ends_work = matches!(
            req.op,
            Op::Run { .. }
                | Op::SessionExec { .. }
                | Op::SessionClose { .. }
                | Op::WorkspaceExec { .. }
                | Op::WorkspaceClose { .. }
        );
        // A dropped client's queued requests are never started.
        if !conn.out.is_dropped() {
            let resp = handle(&engine, req, &conn);
            respond(&conn, &resp);
            if ends_work {
                engine.answered();
            }
        }
        let (lock, cv) = &*conn.pending;
        let mut p = lock.lock().unwrap_or_else(|e| e.into_inner());
        p.count -= 1;
        p.bytes -= size;
        cv.notify_all();
    }));
}

/// `agentjail serve`; returns the exit code.
pub fn serve(args: ServeArgs) -> i32 {
    // Block the termination signals before any thread starts, so every thread inherits the
    // mask and they arrive only on this signalfd.
    let Some(sigfd) = agentjail_jail::supervise::block_termination_signals() else {
        eprintln!("agentjail: cannot block SIGTERM/SIGINT/SIGHUP into a signalfd");
        return 2;
    };
    // The socket file ours to remove at exit (when it drops): not when systemd made it
    // (socket activation), since the .socket unit keeps listening on it for the next start.
    let (listener, _created) = match &args.socket {
        Some(path) => match listen(path, args.socket_group.as_deref()) {
            Ok((l, ours)) => (Some(l), ours),
            Err(e) => {
                eprintln!("agentjail: {e}");
                return 2;
            }
        },
        None => (None, None),
    };
    let engine = match Engine::start_server(args.engine, args.audit_log) {
        Ok((e, _)) => e,
        Err(e) => {
            eprintln!("agentjail: {e}");
            return 2;
        }
    };
    let workers = match Workers::new(args.jobs) {
        Ok(w) => Arc::new(w),
        Err(e) => {
            eprintln!("agentjail: {e}");
            engine.shutdown();
            return 2;
        }
    };
    let clients = Clients::default();
    match listener {
        None => {
            if let Some(c) = serve_stdin(&engine, &workers, &sigfd) {
                clients.add(&c);
            }
        }
        Some(l) => {
            let budget = Arc::new(Budget::new(args.max_unread_responses));
            serve_socket(&engine, &workers, &sigfd, &l, &clients, &budget)
        }
    }
    finish(&engine, workers);
    // The records of jobs stopped at the end are queued: let the writers send them (a
    // client that does not read is not waited for past the grace).
    clients.flush(Instant::now() + GRACE);
    0
}

/// The binary that serves `agentjail serve --http`, installed next to `agentjail`.
pub const HTTP_BINARY: &str = "agentjail-http";

/// `agentjail serve --http ADDR` in the main binary: replace this process with
/// [`HTTP_BINARY`] from the running executable's directory, with the same arguments,
/// environment and stdio. hyper, tokio and the HTTP code live in that binary alone
/// (crates/agentjail-http), so `run`, `exec` and the JSON-lines server stay as small as
/// they were (the launcher's RSS budget: docs/BENCH.md, "`agentjail mcp`: what rmcp
/// costs"). Returns only when the exec failed (exit status 2, the fix on stderr).
pub fn exec_http_binary() -> i32 {
    use std::os::unix::process::CommandExt;
    let sibling = match std::env::current_exe() {
        Ok(p) => p.with_file_name(HTTP_BINARY),
        Err(e) => {
            eprintln!("agentjail: cannot find the running executable to start {HTTP_BINARY}: {e}");
            return 2;
        }
    };
    let err = std::process::Command::new(&sibling)
        .args(std::env::args_os().skip(1))
        .exec();
    eprintln!(
        "agentjail: cannot start {}: {err}; `agentjail serve --http` runs the {HTTP_BINARY} binary installed next to agentjail (`cargo build -p agentjail-http` makes it)",
        sibling.display()
    );
    2
}

/// Let running jobs finish for GRACE, stop the rest, end everything.
fn finish(engine: &Arc<Engine>, workers: Arc<Workers>) {
    if !workers.wait_idle(Instant::now() + GRACE) {
        engine.stop_jobs();
        workers.wait_idle(Instant::now() + Duration::from_secs(5));
    }
    engine.shutdown();
    if let Ok(w) = Arc::try_unwrap(workers) {
        w.stop();
    }
}

fn serve_stdin(engine: &Arc<Engine>, workers: &Arc<Workers>, sigfd: &OwnedFd) -> Option<Conn> {
    // Dropped (stdout stopped taking responses): stop reading; the main loop sees it.
    // One client: its own bound (MAX_QUEUED_RESPONSE_BYTES) is the server's.
    let conn = Conn::new(engine, None, None, || {});
    let writer = conn.start_writer(Box::new(std::io::stdout()));
    if writer.is_none() {
        eprintln!("agentjail: cannot start the stdout writer");
        return None;
    }
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let (e, w, c) = (Arc::clone(engine), Arc::clone(workers), conn.clone());
    let reader = std::thread::Builder::new()
        .name("agentjail-stdin".into())
        .spawn(move || {
            let mut input = std::io::BufReader::new(std::io::stdin().lock());
            read_requests(&e, &w, &mut input, &c);
            let _ = done_tx.send(());
        });
    if reader.is_err() {
        eprintln!("agentjail: cannot start the stdin reader");
        return Some(conn);
    }
    // Until stdin's EOF has been answered in full, or a termination signal, or stdout
    // stopped taking responses.
    loop {
        if done_rx.recv_timeout(Duration::from_millis(50)).is_ok() {
            // Every response is queued: no call runs, the sessions end now.
            engine.close_sessions_of(conn.owner.connection);
            return Some(conn);
        }
        if signalled(sigfd, 0) {
            // Not here: a session call may be running, and ending its session would wait
            // for it. finish() gives it the grace, then stops it with a record.
            return Some(conn);
        }
        if conn.out.is_dropped() {
            eprintln!("agentjail: stdout stopped taking responses; stopping");
            return Some(conn);
        }
    }
}

/// Every client's response queue, so that the records of the last jobs are written before
/// the server exits.
#[derive(Default)]
struct Clients(Mutex<Vec<std::sync::Weak<OutQueue>>>);

impl Clients {
    fn add(&self, c: &Conn) {
        let mut v = self.0.lock().unwrap_or_else(|e| e.into_inner());
        v.retain(|w| w.strong_count() > 0);
        v.push(Arc::downgrade(&c.out));
    }

    fn flush(&self, deadline: Instant) {
        let all: Vec<Arc<OutQueue>> = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .collect();
        for q in all {
            q.flushed(deadline);
        }
    }
}

fn next_connection() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::SeqCst)
}

fn serve_socket(
    engine: &Arc<Engine>,
    workers: &Arc<Workers>,
    sigfd: &OwnedFd,
    listener: &UnixListener,
    clients: &Clients,
    budget: &Arc<Budget>,
) {
    let _ = listener.set_nonblocking(true);
    loop {
        let mut fds = [
            libc::pollfd {
                fd: listener.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: sigfd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        os::fd::ppoll(&mut fds, None);
        if fds[1].revents & libc::POLLIN != 0 && os::fd::read_signalfd(sigfd).is_some() {
            return;
        }
        if fds[0].revents & libc::POLLIN == 0 {
            continue;
        }
        let Ok((stream, _)) = listener.accept() else {
            continue;
        };
        let _ = stream.set_nonblocking(false);
        let uid = os::fd::peer_uid(&stream).ok();
        if let Some(c) = client(engine, workers, budget, stream, uid) {
            clients.add(&c);
        }
    }
}

/// One client connection: its reader thread and its writer thread.
fn client(
    engine: &Arc<Engine>,
    workers: &Arc<Workers>,
    budget: &Arc<Budget>,
    stream: UnixStream,
    uid: Option<u32>,
) -> Option<Conn> {
    let write_half = stream.try_clone().ok()?;
    let shut_half = stream.try_clone().ok()?;
    // Dropping the client shuts its socket down both ways: the reader sees EOF, a writer
    // blocked on it fails.
    let conn = Conn::new(engine, Some(budget), uid, move || {
        let _ = shut_half.shutdown(std::net::Shutdown::Both);
    });
    conn.start_writer(Box::new(write_half))?;
    let (e, w, c) = (Arc::clone(engine), Arc::clone(workers), conn.clone());
    let started = std::thread::Builder::new()
        .name("agentjail-client".into())
        .spawn(move || {
            let mut input = std::io::BufReader::new(stream);
            read_requests(&e, &w, &mut input, &c);
            e.close_sessions_of(c.owner.connection);
            e.forget_client(c.owner.connection);
            c.out.close();
        });
    if started.is_err() {
        (conn.hang_up)();
        return None;
    }
    Some(conn)
}

/// `serve`: load the policy, start the engine and serve until EOF or a signal.
pub fn command(flags: ServeFlags) -> i32 {
    let ServeFlags {
        policy,
        engine,
        jobs,
        socket,
        socket_group,
        audit_log,
        http,
        token_file: _,
        pod_workspace: _,
        unread_budget: max_unread_responses,
    } = flags;
    // The HTTP front end is its own binary (src/serve/mod.rs, exec_http_binary, says why).
    if http.is_some() {
        return exec_http_binary();
    }
    let max_unread_responses = match max_unread_responses.as_deref().map(unread_budget) {
        None => DEFAULT_MAX_UNREAD_RESPONSES,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("agentjail: {e}");
            return crate::commands::ExitStatus::Error as i32;
        }
    };
    let Ok(loaded) = crate::commands::load(policy.as_deref()) else {
        return crate::commands::ExitStatus::Error as i32;
    };
    serve(ServeArgs {
        engine: engine.config(loaded),
        jobs: jobs.unwrap_or_else(agentjail_engine::engine::default_jobs),
        socket,
        socket_group,
        audit_log,
        max_unread_responses,
    })
}

/// `--unread-budget SIZE`: a size (`256MiB`, bytes without a unit) of at least one
/// client's own bound, MAX_QUEUED_RESPONSE_BYTES (a smaller total would drop a client the
/// moment one large record waits for it).
fn unread_budget(text: &str) -> Result<usize, String> {
    let n = agentjail_engine::policy::parse_bytes(text)
        .map_err(|e| format!("--unread-budget {text:?}: {e}; give a size such as 256MiB"))?;
    let min = MAX_QUEUED_RESPONSE_BYTES as u64;
    if n < min {
        return Err(format!(
            "--unread-budget {text:?} is below {} MiB, one client's own bound on its unread responses; give at least 16MiB",
            min >> 20
        ));
    }
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_queue_holds_at_most_its_limit_then_drops_the_client() {
        let q = OutQueue::default();
        // One line larger than the limit still goes when nothing else waits.
        assert!(q.push(vec![b'x'; MAX_QUEUED_RESPONSE_BYTES + 1]));
        let q = OutQueue::default();
        let line = vec![b'x'; 1024 * 1024];
        for _ in 0..MAX_QUEUED_RESPONSE_BYTES / line.len() {
            assert!(q.push(line.clone()));
        }
        assert!(!q.is_dropped());
        assert!(!q.push(vec![b'y']), "past the limit");
        assert!(q.is_dropped());
        let st = q.lock();
        assert_eq!(
            (st.lines.len(), st.bytes),
            (0, 0),
            "a dropped client's queue is freed"
        );
        drop(st);
        assert!(!q.push(vec![b'z']), "nothing more is queued");
    }

    #[test]
    fn past_the_servers_budget_the_clients_with_most_unread_are_dropped() {
        let budget = Arc::new(Budget::new(4 * 1024 * 1024));
        let dropped = Arc::new(Mutex::new(Vec::new()));
        let queue = |c: u64| {
            let q = Arc::new(OutQueue {
                budget: Some(Arc::clone(&budget)),
                ..OutQueue::default()
            });
            let (d, w) = (Arc::clone(&dropped), Arc::downgrade(&q));
            let h: Arc<dyn Fn() + Send + Sync> = Arc::new(move || {
                d.lock().unwrap().push(c);
                if let Some(q) = w.upgrade() {
                    let mut st = q.lock();
                    q.drop_queue(&mut st);
                }
            });
            budget.add(c, &q, &h);
            (q, h)
        };
        let (small, big, third) = (queue(1), queue(2), queue(3));
        let mib = vec![b'x'; 1024 * 1024];
        assert!(small.0.push(mib.clone()));
        for _ in 0..3 {
            assert!(big.0.push(mib.clone()));
        }
        assert!(dropped.lock().unwrap().is_empty(), "4 MiB is within");
        // One more byte anywhere: the largest (2) goes, and that is enough.
        assert!(third.0.push(vec![b'y']));
        assert_eq!(*dropped.lock().unwrap(), [2]);
        assert!(big.0.is_dropped() && !small.0.is_dropped() && !third.0.is_dropped());
        assert_eq!(budget.queued.load(Ordering::SeqCst), 1024 * 1024 + 1);
        assert_eq!(budget.stats()["clients_dropped"], 1);
    }

    #[test]
    fn the_writer_writes_lines_whole_and_in_order_then_ends() {
        let q = Arc::new(OutQueue::default());
        let out = Arc::new(Mutex::new(Vec::<u8>::new()));
        struct W(Arc<Mutex<Vec<u8>>>);
        impl Write for W {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        q.push(b"a\n".to_vec());
        q.push(b"b\n".to_vec());
        q.close();
        q.write_loop(Box::new(W(Arc::clone(&out))), &|| panic!("not dropped"));
        assert_eq!(&*out.lock().unwrap(), b"a\nb\n");
        q.flushed(Instant::now());
    }
}
