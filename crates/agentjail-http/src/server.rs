//! The listener, the connections and their bounds, and the shutdown.
//!
//! Bounds (each answered, never a hang and never a crash): a request head at most
//! [`MAX_HEADER_BYTES`] and [`MAX_HEADERS`] fields (431 past either) read within
//! [`HEADER_TIMEOUT`] (the connection is closed); a body at most [`MAX_BODY_BYTES`](crate::body::MAX_BODY_BYTES) (413) read within [`BODY_TIMEOUT`](crate::body::BODY_TIMEOUT) (408);
//! at most [`MAX_CONNECTIONS`] connections, fewer where the file limit is lower (more are
//! closed at accept); at most `jobs` requests at work and `jobs` × [`QUEUE_PER_JOB`] (at
//! least [`MIN_ADMITTED`]) admitted (more get 429 with `Retry-After`); sessions per caller
//! as the policy's `[session] max_per_client`.
//!
//! SIGTERM, SIGINT or SIGHUP: stop accepting, let the requests being answered finish for
//! [`GRACE`], then stop the jobs still running (each still answers with its record,
//! `interrupted:sigterm`), end every jail and session, remove the socket file, exit 0.

use crate::auth::Tokens;
use crate::metrics::Metrics;
use crate::state::State;
use agentjail_engine::engine::{Engine, EngineConfig};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// A request head's most bytes: the request line, the header lines and the blank line.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;
/// A request head's most header fields.
pub const MAX_HEADERS: usize = 100;
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Most connections at once, whatever the file limit allows.
pub const MAX_CONNECTIONS: usize = 65536;
/// File descriptors kept free of connections (jails, pipes, the audit log, the cache).
const FDS_KEPT: u64 = 512;
/// Requests admitted per job slot (waiting for one, or at work)...
pub const QUEUE_PER_JOB: usize = 8;
/// ...and at least this many: verl sends up to 256 requests at once by default
/// (`sandbox_fusion.max_concurrent`) and takes a 429 as a failed test case, not a retry.
pub const MIN_ADMITTED: usize = 512;
/// `--unread-budget`'s default: response bytes held for clients that have not taken them,
/// over all connections (crate::unread).
pub const DEFAULT_UNREAD_BUDGET: usize = 256 << 20;
/// The least `--unread-budget`: below it a few ordinary answers would drop each other.
pub const MIN_UNREAD_BUDGET: usize = 1 << 20;
/// How long answers in progress may finish after SIGTERM before their jobs are stopped.
pub const GRACE: Duration = agentjail_engine::listen::GRACE;

pub struct Args {
    pub engine: EngineConfig,
    pub jobs: usize,
    pub addr: String,
    pub token_file: Option<PathBuf>,
    pub audit_log: Option<PathBuf>,
    /// `--pod-workspace`: one workspace the server owns, at the agent-sandbox runtime routes.
    pub pod_workspace: bool,
    /// `--unread-budget`.
    pub unread_budget: usize,
}

/// Where to listen.
#[derive(Debug, PartialEq)]
pub enum Addr {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// Why `--http` names no address to listen on. `Display` is the message agentjail prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddrError {
    /// `unix:` without a path.
    NoUnixPath,
    /// Neither `IP:PORT` nor `unix:PATH` (the value as given).
    NotAnAddress(String),
}

impl std::fmt::Display for AddrError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AddrError::NoUnixPath => f.write_str("--http unix:PATH needs a path"),
            AddrError::NotAnAddress(s) => write!(
                f,
                "--http {s:?}: expected HOST:PORT with an IP address (127.0.0.1:8080, [::1]:8080) or unix:PATH"
            ),
        }
    }
}

impl std::error::Error for AddrError {}

pub fn parse_addr(s: &str) -> Result<Addr, AddrError> {
    if let Some(p) = s.strip_prefix("unix:") {
        if p.is_empty() {
            return Err(AddrError::NoUnixPath);
        }
        return Ok(Addr::Unix(PathBuf::from(p)));
    }
    s.parse::<SocketAddr>()
        .map(Addr::Tcp)
        .map_err(|_| AddrError::NotAnAddress(s.into()))
}

/// Client-stop numbers of HTTP connections start here, far from the small numbers
/// `State::owner` gives callers, so the engine's two tables never share a key.
const CONNECTION_BASE: u64 = 1 << 48;

/// The listening socket: TCP, or a unix socket and the file we made for it.
enum Listener {
    Tcp(tokio::net::TcpListener),
    Unix(
        tokio::net::UnixListener,
        #[allow(dead_code)] Option<agentjail_engine::listen::Created>,
    ),
}

fn bind(addr: &Addr) -> Result<Listener, String> {
    match addr {
        Addr::Tcp(a) => {
            let l =
                std::net::TcpListener::bind(a).map_err(|e| format!("cannot listen on {a}: {e}"))?;
            l.set_nonblocking(true).map_err(|e| e.to_string())?;
            tokio::net::TcpListener::from_std(l)
                .map(Listener::Tcp)
                .map_err(|e| e.to_string())
        }
        Addr::Unix(p) => {
            let (l, created) =
                agentjail_engine::listen::listen(p, None).map_err(|e| e.to_string())?;
            l.set_nonblocking(true).map_err(|e| e.to_string())?;
            tokio::net::UnixListener::from_std(l)
                .map(|l| Listener::Unix(l, created))
                .map_err(|e| e.to_string())
        }
    }
}

/// Read the token file and refuse what must not start: an address that is not loopback
/// without tokens.
fn tokens_for(addr: &Addr, file: Option<&std::path::Path>) -> Result<Option<Tokens>, String> {
    let tokens = file
        .map(Tokens::load)
        .transpose()
        .map_err(|e| e.to_string())?;
    if let (Addr::Tcp(a), None) = (addr, &tokens) {
        if !a.ip().is_loopback() {
            return Err(format!(
                "--http {a} is reachable from other hosts: it needs --token-file (one `NAME TOKEN` per line, mode 0600); only loopback addresses and unix sockets may go without"
            ));
        }
    }
    Ok(tokens)
}

/// Raise the open-file limit to its hard limit and keep [`FDS_KEPT`] of it free of
/// connections: the most connections this server holds (at most [`MAX_CONNECTIONS`]).
/// Past it a new connection is closed at accept; held ones end at the header timeout.
fn connection_limit() -> usize {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let nofile = limits.lines().find_map(|l| {
        let rest = l.strip_prefix("Max open files")?;
        let mut f = rest.split_whitespace();
        let soft = f.next()?.parse::<u64>().ok()?;
        let hard = f.next().and_then(|h| h.parse::<u64>().ok()).unwrap_or(soft);
        Some((soft, hard))
    });
    let Some((soft, hard)) = nofile else {
        return 1024;
    };
    let want = hard.min(MAX_CONNECTIONS as u64 + FDS_KEPT);
    let soft = if want > soft
        && agentjail_jail::os::process::setrlimit(libc::RLIMIT_NOFILE, want, hard).is_ok()
    {
        want
    } else {
        soft
    };
    soft.saturating_sub(FDS_KEPT)
        .clamp(64, MAX_CONNECTIONS as u64) as usize
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// The one-thread runtime that reads requests, and its blocking threads that run jobs.
fn runtime(jobs: usize) -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        // The check and the schema validator recurse over hostile input within their own
        // bounds; the job threads get the stack serve's workers get.
        .thread_stack_size(16 * 1024 * 1024)
        .max_blocking_threads(jobs.max(1) + 4)
        .thread_name("agentjail-http-job")
        .build()
        .map_err(|e| format!("cannot start the HTTP runtime: {e}"))
}

/// With `--pod-workspace`, its workspace, started now; the engine is shut down when it
/// cannot be.
fn pod_workspace(on: bool, engine: &Engine) -> Result<Option<crate::pod::PodWorkspace>, String> {
    if !on {
        return Ok(None);
    }
    crate::pod::PodWorkspace::start(engine)
        .map(Some)
        .map_err(|e| e.to_string())
        .inspect_err(|_| engine.shutdown())
}

/// `agentjail serve --http`; returns the exit code.
pub fn serve(args: Args) -> i32 {
    // Blocked before any thread starts: every thread inherits the mask.
    let Some(sigfd) = agentjail_jail::supervise::block_termination_signals() else {
        eprintln!("agentjail: cannot block SIGTERM/SIGINT/SIGHUP into a signalfd");
        return 2;
    };
    let fail = |e: String| {
        eprintln!("agentjail: {e}");
        2
    };
    let addr = match parse_addr(&args.addr) {
        Ok(a) => a,
        Err(e) => return fail(e.to_string()),
    };
    let tokens = match tokens_for(&addr, args.token_file.as_deref()) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let runtime = match runtime(args.jobs) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let listener = match runtime.block_on(async { bind(&addr) }) {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    let (engine, audit) = match Engine::start_server(args.engine, args.audit_log) {
        Ok(e) => e,
        Err(e) => return fail(e.to_string()),
    };
    let pod_workspace = match pod_workspace(args.pod_workspace, &engine) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let jobs = args.jobs.max(1);
    let state = Arc::new(State {
        engine: Arc::clone(&engine),
        tokens,
        audit,
        metrics: Metrics::default(),
        jobs: Arc::new(tokio::sync::Semaphore::new(jobs)),
        admitted: AtomicUsize::new(0),
        max_admitted: (jobs * QUEUE_PER_JOB).max(MIN_ADMITTED),
        connections: AtomicUsize::new(0),
        max_connections: connection_limit(),
        owners: Mutex::new(HashMap::new()),
        pod: hostname(),
        pod_workspace,
        unread: Arc::new(crate::unread::Unread::new(args.unread_budget)),
        next_connection: std::sync::atomic::AtomicU64::new(0),
    });
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let watcher = std::thread::Builder::new()
        .name("agentjail-http-signals".into())
        .spawn(move || {
            while !agentjail_engine::listen::signalled(&sigfd, -1) {}
            let _ = stop_tx.send(());
        });
    if watcher.is_err() {
        eprintln!("agentjail: cannot start the signal thread");
        engine.shutdown();
        return 2;
    }
    // The address as bound (port 0 becomes the port the kernel chose): callers and tests
    // wait for this line.
    let shown = match &listener {
        Listener::Tcp(l) => l.local_addr().map_or(args.addr.clone(), |a| a.to_string()),
        Listener::Unix(..) => args.addr.clone(),
    };
    eprintln!("agentjail: serving HTTP on {shown}");
    runtime.block_on(run(Arc::clone(&state), listener, stop_rx));
    runtime.shutdown_timeout(Duration::from_secs(5));
    if let Some(p) = &state.pod_workspace {
        p.close(&engine);
    }
    engine.shutdown();
    0
}

/// Accept until the stop, then shut down as the module says.
async fn run(state: Arc<State>, listener: Listener, mut stop: tokio::sync::oneshot::Receiver<()>) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    // The unread budget is also checked on a clock: a response stalls after it is handed over.
    let sweeper = state.unread.sweep();
    loop {
        tokio::select! {
            _ = &mut stop => break,
            accepted = accept(&listener) => match accepted {
                Ok(Conn::Tcp(s)) => connection(&state, &graceful, s, None),
                Ok(Conn::Unix(s)) => {
                    let uid = s.peer_cred().ok().map(|c| c.uid());
                    connection(&state, &graceful, s, uid);
                }
                // Out of file descriptors or the like: breathe, then go on.
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            },
        }
    }
    drop(listener);
    let all = graceful.shutdown();
    tokio::pin!(all);
    tokio::select! {
        _ = &mut all => {}
        _ = tokio::time::sleep(GRACE) => {
            state.engine.stop_jobs();
            let _ = tokio::time::timeout(Duration::from_secs(5), &mut all).await;
        }
    }
    sweeper.abort();
}

enum Conn {
    Tcp(tokio::net::TcpStream),
    Unix(tokio::net::UnixStream),
}

async fn accept(l: &Listener) -> std::io::Result<Conn> {
    match l {
        Listener::Tcp(l) => l.accept().await.map(|(s, _)| Conn::Tcp(s)),
        Listener::Unix(l, _) => l.accept().await.map(|(s, _)| Conn::Unix(s)),
    }
}

/// Counts an open connection while it lives.
struct Counted(Arc<State>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Serve one connection on its own task (closed at once past MAX_CONNECTIONS).
fn connection<I>(
    state: &Arc<State>,
    graceful: &hyper_util::server::graceful::GracefulShutdown,
    io: I,
    uid: Option<u32>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    if state.connections.fetch_add(1, Ordering::SeqCst) >= state.max_connections {
        state.connections.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    let counted = Counted(Arc::clone(state));
    let st = Arc::clone(state);
    let out = state.unread.open();
    let conn_out = Arc::clone(&out);
    // The connection's jobs stop with it (`interrupted:sighup`): its answers could no longer
    // be delivered. Without a stop (no fd left for one), its jobs run to their own end.
    let number = CONNECTION_BASE + state.next_connection.fetch_add(1, Ordering::SeqCst);
    let stop = state.engine.client_stop(number).ok();
    let service = hyper::service::service_fn(move |req| {
        let st = Arc::clone(&st);
        let out = Arc::clone(&conn_out);
        let stop = stop.clone();
        async move {
            let mut resp = crate::routes::handle(Arc::clone(&st), uid, stop, req).await;
            // A streamed answer counts each line as it is handed over (crate::chan).
            if let crate::respond::RespBody::Lines(lines) = resp.body_mut() {
                lines.meter(Arc::clone(&st.unread), Arc::clone(&out));
            }
            // From here until the socket takes it, the response counts against the budget.
            let n = hyper::body::Body::size_hint(resp.body())
                .exact()
                .unwrap_or(0);
            st.unread
                .produced(&out, usize::try_from(n).unwrap_or(usize::MAX));
            Ok::<_, std::convert::Infallible>(resp)
        }
    });
    let io = crate::unread::Metered {
        io,
        out: Arc::clone(&out),
        unread: Arc::clone(&state.unread),
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        // The head's own limit, exact: hyper measures the parsed head (request line, header
        // lines, the blank line). The read buffer's size alone is no head limit: a read may
        // fill it past its max before a head completes (heads of ~114 KB were served).
        .max_header_size(MAX_HEADER_BYTES)
        .max_headers(MAX_HEADERS)
        // An incomplete head may not grow the buffer past the limit either.
        .max_buf_size(MAX_HEADER_BYTES + 1);
    let conn = builder.serve_connection(TokioIo::new(io), service);
    let watched = graceful.watch(conn);
    let unread = Arc::clone(&state.unread);
    let engine = Arc::clone(&state.engine);
    tokio::spawn(async move {
        tokio::select! {
            _ = watched => {}
            // Dropped for the budget: the connection (and the response it held) goes now.
            _ = out.drop.notified() => {}
        }
        // Whatever this connection still runs ends now, each job with its record.
        engine.hang_up(number);
        engine.forget_client(number);
        unread.forget(&out);
        drop(counted);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_and_only_loopback_goes_without_tokens() {
        assert_eq!(
            parse_addr("127.0.0.1:8080"),
            Ok(Addr::Tcp("127.0.0.1:8080".parse().unwrap()))
        );
        assert!(matches!(parse_addr("[::1]:8080"), Ok(Addr::Tcp(_))));
        assert_eq!(
            parse_addr("unix:/run/a.sock"),
            Ok(Addr::Unix("/run/a.sock".into()))
        );
        assert!(parse_addr("unix:").is_err());
        assert!(parse_addr("localhost:8080").is_err());
        assert!(tokens_for(&parse_addr("127.0.0.1:1").unwrap(), None).is_ok());
        assert!(tokens_for(&parse_addr("[::1]:1").unwrap(), None).is_ok());
        assert!(tokens_for(&parse_addr("unix:/x").unwrap(), None).is_ok());
        let e = tokens_for(&parse_addr("0.0.0.0:8080").unwrap(), None)
            .err()
            .unwrap();
        assert!(e.contains("--token-file"), "{e}");
        assert!(tokens_for(&parse_addr("[::]:8080").unwrap(), None).is_err());
    }
}
