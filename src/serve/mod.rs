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

pub mod protocol;

use crate::engine::session::Owner;
use crate::engine::{Engine, EngineError};
use crate::jail::sys;
use protocol::{Op, Request};
use serde_json::{json, Value};
use std::io::{BufRead, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long running jobs may finish after SIGTERM before they are stopped.
pub const GRACE: Duration = Duration::from_secs(10);

pub struct ServeArgs {
    pub engine: crate::engine::EngineConfig,
    pub jobs: usize,
    pub socket: Option<PathBuf>,
    pub socket_group: Option<String>,
    pub audit_log: Option<PathBuf>,
}

type Output = Arc<Mutex<Box<dyn Write + Send>>>;

/// One client: its responses' destination and who it is.
#[derive(Clone)]
struct Conn {
    owner: Owner,
    out: Output,
    /// Requests of this client not yet answered.
    pending: Arc<(Mutex<usize>, Condvar)>,
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

/// Write one response line, whole (one write under the connection's lock).
fn respond(out: &Output, v: &Value) {
    let mut line = crate::json::to_safe_string(v).into_bytes();
    line.push(b'\n');
    let mut w = out.lock().unwrap_or_else(|e| e.into_inner());
    let _ = w.write_all(&line);
    let _ = w.flush();
}

/// Run one request on the engine; its response.
fn handle(engine: &Engine, req: Request, conn: &Conn, audit: Option<&PathBuf>) -> Value {
    let id = req.id;
    let engine_err =
        |e: EngineError| json!({"id": id, "error": {"code": e.code, "message": e.message}});
    let audited = |record: &crate::record::Record| {
        if let Some(path) = audit {
            if let Err(e) = crate::record::append_audit(path, record.audit_value()) {
                eprintln!(
                    "agentjail: cannot append to the audit log {}: {e}",
                    path.display()
                );
            }
        }
    };
    match req.op {
        Op::Run { action, inputs } => {
            let roots = &engine.policy().policy.files.host_roots;
            let resolved = inputs
                .iter()
                .map(|spec| crate::inputs::resolve(spec, roots))
                .collect::<Result<Vec<_>, _>>();
            match resolved {
                Ok(inputs) => {
                    let record = engine.run_with_inputs(&action, conn.owner.uid, inputs);
                    audited(&record);
                    json!({"id": id, "record": record.value})
                }
                Err(e) => json!({"id": id, "error": {"code": "bad_inputs",
                                  "message": crate::json::safe_text(&e, 1000)}}),
            }
        }
        Op::Check { action } => json!({"id": id, "decision": engine.check(&action).0}),
        Op::SessionStart { policy_hints } => {
            match engine.session_start(policy_hints.as_ref(), conn.owner) {
                Ok(s) => json!({"id": id, "session": s}),
                Err(e) => engine_err(e),
            }
        }
        Op::SessionExec {
            session,
            code,
            timeout_s,
        } => match engine.session_exec(&session, &code, timeout_s, conn.owner) {
            Ok(mut record) => {
                if let Some(uid) = conn.owner.uid {
                    record.value["caller"] = json!({ "uid": uid });
                }
                audited(&record);
                json!({"id": id, "record": record.value})
            }
            Err(e) => engine_err(e),
        },
        Op::SessionClose { session } => match engine.session_close(&session, conn.owner) {
            Ok(closed) => json!({"id": id, "closed": closed}),
            Err(e) => engine_err(e),
        },
        Op::Stats => json!({"id": id, "stats": engine.stats()}),
    }
}

/// Read request lines from `input` until EOF or until `stop` says so, submitting each to the
/// workers; then wait for this client's requests to be answered.
fn read_requests<R: BufRead>(
    engine: &Arc<Engine>,
    workers: &Workers,
    input: &mut R,
    conn: &Conn,
    audit: &Option<PathBuf>,
) {
    loop {
        let mut line = Vec::new();
        let mut limited = std::io::Read::take(&mut *input, protocol::MAX_LINE_BYTES as u64 + 2);
        let n = match limited.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if line.last() != Some(&b'\n') && n > protocol::MAX_LINE_BYTES {
            // Too long: answer once and skip to the end of that line.
            let e = protocol::ProtocolError {
                id: Value::Null,
                code: "line_too_long",
                message: format!(
                    "a request line is at most {} bytes",
                    protocol::MAX_LINE_BYTES
                ),
            };
            respond(&conn.out, &protocol::error_response(&e));
            let _ = input.read_until(b'\n', &mut Vec::new());
            continue;
        }
        while matches!(line.last(), Some(b'\n' | b'\r')) {
            line.pop();
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match protocol::parse_request(&line) {
            Err(e) => respond(&conn.out, &protocol::error_response(&e)),
            Ok(req) => {
                let (engine, conn2, audit) = (Arc::clone(engine), conn.clone(), audit.clone());
                *conn.pending.0.lock().unwrap_or_else(|e| e.into_inner()) += 1;
                workers.submit(Box::new(move || {
                    // The answer to a job or a session call releases the refills held back
                    // for it (Engine::answered). A session start's does not: the session's
                    // first call usually follows at once, and the refill waits for its answer.
                    let ends_work = matches!(
                        req.op,
                        Op::Run { .. } | Op::SessionExec { .. } | Op::SessionClose { .. }
                    );
                    let resp = handle(&engine, req, &conn2, audit.as_ref());
                    respond(&conn2.out, &resp);
                    if ends_work {
                        engine.answered();
                    }
                    let (lock, cv) = &*conn2.pending;
                    *lock.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
                    cv.notify_all();
                }));
            }
        }
    }
    let (lock, cv) = &*conn.pending;
    let mut pending = lock.lock().unwrap_or_else(|e| e.into_inner());
    while *pending > 0 {
        pending = cv.wait(pending).unwrap_or_else(|e| e.into_inner());
    }
}

/// `agentjail serve`; returns the exit code.
pub fn serve(args: ServeArgs) -> i32 {
    // Block the termination signals before any thread starts, so every thread inherits the
    // mask and they arrive only on this signalfd.
    let Some(sigfd) = crate::supervise::block_termination_signals() else {
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
    let (engine, audit) = match Engine::start_server(args.engine, args.audit_log) {
        Ok(e) => e,
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
    match listener {
        None => serve_stdin(&engine, &workers, &sigfd, &audit),
        Some(l) => serve_socket(&engine, &workers, &sigfd, &audit, &l),
    }
    finish(&engine, workers);
    0
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

/// Whether the signalfd has a termination signal (consumed).
fn signalled(sigfd: &OwnedFd, timeout_ms: i32) -> bool {
    sys::poll_one(sigfd.as_raw_fd(), libc::POLLIN, timeout_ms).is_ok_and(|r| r & libc::POLLIN != 0)
        && sys::read_signalfd(sigfd.as_raw_fd()).is_some()
}

fn serve_stdin(
    engine: &Arc<Engine>,
    workers: &Arc<Workers>,
    sigfd: &OwnedFd,
    audit: &Option<PathBuf>,
) {
    let conn = Conn {
        owner: Owner {
            connection: next_connection(),
            uid: None,
        },
        out: Arc::new(Mutex::new(Box::new(std::io::stdout()))),
        pending: Arc::new((Mutex::new(0), Condvar::new())),
    };
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let (e, w, c, a) = (
        Arc::clone(engine),
        Arc::clone(workers),
        conn.clone(),
        audit.clone(),
    );
    let reader = std::thread::Builder::new()
        .name("agentjail-stdin".into())
        .spawn(move || {
            let mut input = std::io::BufReader::new(std::io::stdin().lock());
            read_requests(&e, &w, &mut input, &c, &a);
            let _ = done_tx.send(());
        });
    if reader.is_err() {
        eprintln!("agentjail: cannot start the stdin reader");
        return;
    }
    // Until stdin's EOF has been answered in full, or a termination signal.
    loop {
        if done_rx.recv_timeout(Duration::from_millis(50)).is_ok() {
            // Every response is written: no call runs, the sessions end now.
            engine.close_sessions_of(conn.owner.connection);
            return;
        }
        if signalled(sigfd, 0) {
            // Not here: a session call may be running, and ending its session would wait
            // for it. finish() gives it the grace, then stops it with a record.
            return;
        }
    }
}

fn next_connection() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::SeqCst)
}

/// The socket file we created: where it is (the directory's fd, its name) and which inode
/// it is, so that only that file is removed at exit.
struct Created {
    dir: OwnedFd,
    name: std::ffi::CString,
    ino: (u64, u64),
}

impl Drop for Created {
    fn drop(&mut self) {
        let ours = sys::fstatat_file(self.dir.as_raw_fd(), &self.name)
            .is_ok_and(|st| (st.dev, st.ino) == self.ino);
        if ours {
            let _ = sys::unlinkat(self.dir.as_raw_fd(), &self.name, 0);
        }
    }
}

/// The listening socket and the file we created for it: systemd's (socket activation:
/// LISTEN_PID is us and LISTEN_FDS ≥ 1, fd 3; its file is the .socket unit's, None), or a
/// new one at `path`, 0600 (0660 with `group`). An existing socket file of ours is
/// replaced; any other file there is refused.
///
/// Nothing here follows a path another user can swap (crate::hostpath): the directory is
/// walked and checked once (ours or root's, and sticky if others may write it) and used by
/// its fd from then on; the socket is bound in a private 0700 directory made in it, given
/// its group and mode there, where no one else can reach it, and only then renamed into
/// place, whole.
fn listen(
    path: &std::path::Path,
    group: Option<&str>,
) -> Result<(UnixListener, Option<Created>), String> {
    let activated = std::env::var("LISTEN_PID")
        .ok()
        .and_then(|p| p.parse::<i32>().ok())
        == Some(sys::getpid())
        && std::env::var("LISTEN_FDS")
            .ok()
            .and_then(|n| n.parse::<u32>().ok())
            .unwrap_or(0)
            >= 1;
    if activated {
        return activated_listener().map(|l| (l, None));
    }
    let gid = group.map(group_id).transpose()?;
    let (dir, name) = crate::hostpath::parent_and_name(path, "--socket")?;
    match sys::fstatat_file(dir.as_raw_fd(), &name) {
        Err(libc::ENOENT) => {}
        Ok(st) if st.mode & libc::S_IFMT == libc::S_IFSOCK && st.uid == sys::geteuid() => {}
        Ok(_) => {
            return Err(format!(
                "{} exists and is not a socket of ours; remove it or choose another path",
                path.display()
            ))
        }
        Err(e) => return Err(format!("--socket {}: errno {e}", path.display())),
    }
    let private = std::ffi::CString::new(format!(".agentjail-{}", crate::ids::random_hex(8)))
        .map_err(|e| e.to_string())?;
    sys::mkdirat(dir.as_raw_fd(), &private, 0o700).map_err(|e| {
        format!(
            "--socket: cannot make a private directory in {}: {}",
            path.parent().unwrap_or(path).display(),
            std::io::Error::from_raw_os_error(e)
        )
    })?;
    let made = (|| -> Result<(UnixListener, Created), String> {
        let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;
        let pdir = sys::openat(dir.as_raw_fd(), &private, flags, 0)
            .map(sys::owned)
            .map_err(|e| format!("--socket: errno {e}"))?;
        let st = sys::fstat_file(pdir.as_raw_fd()).map_err(|e| format!("--socket: errno {e}"))?;
        if st.uid != sys::geteuid() || st.mode & 0o077 != 0 {
            return Err("--socket: the private directory was replaced".into());
        }
        let inner = c"s";
        let at = format!("/proc/self/fd/{}/s", pdir.as_raw_fd());
        // Created 0600 (umask 0177 around bind), in a directory only we can reach.
        let old = sys::umask(0o177);
        let bound = UnixListener::bind(&at);
        sys::umask(old);
        let listener = bound.map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
        let cleanup = |e: String| {
            let _ = sys::unlinkat(pdir.as_raw_fd(), inner, 0);
            e
        };
        if let Some(gid) = gid {
            sys::fchownat_nofollow(pdir.as_raw_fd(), inner, u32::MAX, gid)
                .and_then(|_| sys::fchmodat(pdir.as_raw_fd(), inner, 0o660))
                .map_err(|e| {
                    cleanup(format!(
                        "cannot give {} to group {gid}: {}",
                        path.display(),
                        std::io::Error::from_raw_os_error(e)
                    ))
                })?;
        }
        let st = sys::fstatat_file(pdir.as_raw_fd(), inner)
            .map_err(|e| cleanup(format!("--socket: errno {e}")))?;
        sys::renameat(pdir.as_raw_fd(), inner, dir.as_raw_fd(), &name).map_err(|e| {
            cleanup(format!(
                "cannot put the socket at {}: {}",
                path.display(),
                std::io::Error::from_raw_os_error(e)
            ))
        })?;
        Ok((
            listener,
            Created {
                dir: dir.try_clone().map_err(|e| e.to_string())?,
                name: name.clone(),
                ino: (st.dev, st.ino),
            },
        ))
    })();
    let _ = sys::unlinkat(dir.as_raw_fd(), &private, libc::AT_REMOVEDIR);
    let (listener, created) = made?;
    Ok((listener, Some(created)))
}

/// fd 3 from systemd, checked to be what the .socket unit promises (a listening AF_UNIX
/// stream socket: anything else would be polled and never accepted), moved to a close-on-exec
/// fd (systemd passes it inheritable).
fn activated_listener() -> Result<UnixListener, String> {
    // fd 3 is systemd's listening socket by the socket-activation protocol, passed to this
    // process alone (LISTEN_PID is ours); it is taken over exactly once, here.
    let passed = sys::owned(3);
    let listening = sys::is_listening_unix_stream(passed.as_raw_fd());
    if !listening {
        return Err(
            "socket activation (LISTEN_FDS): fd 3 is not a listening unix stream socket; \
                    the .socket unit must have one ListenStream= with a path"
                .into(),
        );
    }
    let fd = sys::dup_cloexec_above(passed.as_raw_fd(), 3)
        .map_err(|e| format!("socket activation: cannot move fd 3: errno {e}"))?;
    drop(passed);
    Ok(UnixListener::from(sys::owned(fd)))
}

/// A group name (from /etc/group) or number.
fn group_id(g: &str) -> Result<u32, String> {
    if let Ok(n) = g.parse() {
        return Ok(n);
    }
    std::fs::read_to_string("/etc/group")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                let mut f = l.split(':');
                (f.next() == Some(g))
                    .then(|| f.nth(1).and_then(|id| id.parse().ok()))
                    .flatten()
            })
        })
        .ok_or_else(|| format!("--socket-group {g:?}: no such group"))
}

fn serve_socket(
    engine: &Arc<Engine>,
    workers: &Arc<Workers>,
    sigfd: &OwnedFd,
    audit: &Option<PathBuf>,
    listener: &UnixListener,
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
        sys::ppoll(&mut fds, None);
        if fds[1].revents & libc::POLLIN != 0 && sys::read_signalfd(sigfd.as_raw_fd()).is_some() {
            return;
        }
        if fds[0].revents & libc::POLLIN == 0 {
            continue;
        }
        let Ok((stream, _)) = listener.accept() else {
            continue;
        };
        let _ = stream.set_nonblocking(false);
        let uid = sys::peer_uid(stream.as_raw_fd()).ok();
        client(engine, workers, audit, stream, uid);
    }
}

/// One client connection on its own reader thread.
fn client(
    engine: &Arc<Engine>,
    workers: &Arc<Workers>,
    audit: &Option<PathBuf>,
    stream: UnixStream,
    uid: Option<u32>,
) {
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let conn = Conn {
        owner: Owner {
            connection: next_connection(),
            uid,
        },
        out: Arc::new(Mutex::new(Box::new(write_half))),
        pending: Arc::new((Mutex::new(0), Condvar::new())),
    };
    let (e, w, a) = (Arc::clone(engine), Arc::clone(workers), audit.clone());
    let _ = std::thread::Builder::new()
        .name("agentjail-client".into())
        .spawn(move || {
            let mut input = std::io::BufReader::new(stream);
            read_requests(&e, &w, &mut input, &conn, &a);
            e.close_sessions_of(conn.owner.connection);
        });
}
