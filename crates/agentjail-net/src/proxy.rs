//! The proxy: one accept thread on the jail's listening socket, one thread per connection
//! (at most `limits.connections` in a run), two per tunnel while it relays. Every request,
//! allowed or not, becomes an [`Entry`].

mod relay;
mod requests;

use crate::decide::Resolver;
use crate::rules::Rules;
use crate::wire;
use requests::{plain, tunnel};
use std::io::Write;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// How long `drain` waits for connections in flight to end and be logged.
const DRAIN_SETTLE: std::time::Duration = std::time::Duration::from_millis(50);
/// How long `finish` waits for a request still being decided.
const FINISH_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Most entries a run's log keeps; later ones are counted in `Report::dropped`.
pub const MAX_ENTRIES: usize = 1000;

/// One request through the proxy (the record's `network.requests[]`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Entry {
    pub host: String,
    pub port: u16,
    /// `CONNECT`, or the plain-HTTP method.
    pub method: String,
    /// Bytes from the upstream to the program, and from the program to the upstream.
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub allowed: bool,
    /// Why it was denied, or how an allowed one ended (`ok`, `bytes_in_limit`, ...).
    pub reason: String,
    /// The address the proxy connected to (the one it checked).
    pub address: Option<String>,
    pub ms: u64,
    /// The brokered credential the request went upstream with (its name, never its value).
    pub credential: Option<String>,
}

/// What the proxy saw in a run.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub entries: Vec<Entry>,
    pub dropped: u64,
    pub connections: u32,
    pub requests: u32,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// The host of the first denied request (for `deny_is_stop`).
    pub first_denied: Option<String>,
    /// Requests still being decided (a slow resolver) when the run ended: not in `entries`.
    pub unfinished: u32,
}

pub type OnDeny = Box<dyn Fn(&str) + Send + Sync>;

struct Shared {
    rules: Rules,
    resolver: Box<dyn Resolver>,
    on_deny: Option<OnDeny>,
    log: Mutex<(Vec<(Instant, Entry)>, u64)>,
    first_denied: Mutex<Option<String>>,
    connections: AtomicU32,
    requests: AtomicU32,
    /// What the current budget has used of `limits.connections` and `limits.requests`:
    /// the same as the two above, unless `limits.per_drain` starts them again at a drain.
    budget_connections: AtomicU32,
    budget_requests: AtomicU32,
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
    stopping: AtomicBool,
    /// Copies of the sockets in use, shut down at `finish` so no relay outlives the run;
    /// each leaves when its connection ends ([`Tracked`]).
    live: Mutex<Live>,
}

/// A running proxy; [`Proxy::finish`] stops it and returns its report.
pub struct Proxy {
    shared: Arc<Shared>,
    listener: Arc<TcpListener>,
    accept: Option<JoinHandle<Vec<JoinHandle<()>>>>,
}

impl Proxy {
    /// Accept on `listener` (already listening) under `rules`. `on_deny` is called with the
    /// host of every denied request, from the connection's thread.
    pub fn start(
        listener: TcpListener,
        rules: Rules,
        resolver: Box<dyn Resolver>,
        on_deny: Option<OnDeny>,
    ) -> std::io::Result<Proxy> {
        let shared = Arc::new(Shared {
            rules,
            resolver,
            on_deny,
            log: Mutex::new((Vec::new(), 0)),
            first_denied: Mutex::new(None),
            connections: AtomicU32::new(0),
            requests: AtomicU32::new(0),
            budget_connections: AtomicU32::new(0),
            budget_requests: AtomicU32::new(0),
            bytes_in: AtomicU64::new(0),
            bytes_out: AtomicU64::new(0),
            stopping: AtomicBool::new(false),
            live: Mutex::new(Live::default()),
        });
        let listener = Arc::new(listener);
        let (sh, l) = (shared.clone(), listener.clone());
        let accept = std::thread::Builder::new()
            .name("agentjail-net".into())
            .spawn(move || accept_loop(&sh, &l))?;
        Ok(Proxy {
            shared,
            listener,
            accept: Some(accept),
        })
    }

    /// The requests that ended since the last drain, with the run's counters so far, and
    /// the first denial since then: a session's call takes what happened during it. Under
    /// `limits.per_drain` the connection and request budgets start again here, for what
    /// comes next (the next call, and a background process before it).
    pub fn drain(&self) -> Report {
        let sh = &self.shared;
        // A program that read a response to its Content-Length is done before the relay
        // has seen the upstream's end and logged the request: give connections in flight a
        // moment (bounded: one held open across calls costs each call this much at most)
        // so a request the call made is in the call's own record.
        let deadline = Instant::now() + DRAIN_SETTLE;
        while Instant::now() < deadline
            && !sh
                .live
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .socks
                .is_empty()
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let (entries, dropped) = take_log(sh);
        if sh.rules.limits.per_drain {
            sh.budget_connections.store(0, SeqCst);
            sh.budget_requests.store(0, SeqCst);
        }
        Report {
            entries,
            dropped,
            connections: sh.connections.load(SeqCst),
            requests: sh.requests.load(SeqCst),
            bytes_in: sh.bytes_in.load(SeqCst),
            bytes_out: sh.bytes_out.load(SeqCst),
            first_denied: sh.first_denied.lock().ok().and_then(|mut g| g.take()),
            unfinished: 0,
        }
    }

    /// Stop: `wake` must make the accept thread's blocked accept return (shutdown of the
    /// listening socket; the listener lives in the jail's network namespace, where nothing
    /// of ours can connect). Every open connection is cut, every thread joined.
    pub fn finish(mut self, wake: impl FnOnce(&TcpListener)) -> Report {
        self.shared.stopping.store(true, SeqCst);
        wake(&self.listener);
        let handlers = self.accept.take().map(|h| h.join().unwrap_or_default());
        for s in self
            .shared
            .live
            .lock()
            .map(|l| {
                l.socks
                    .values()
                    .filter_map(|s| s.try_clone().ok())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
        {
            let _ = s.shutdown(Shutdown::Both);
        }
        // A handler can only be stuck in the resolver now (every socket is shut down): wait
        // for it a little, then leave it; it connects nowhere once it sees `stopping`.
        let deadline = Instant::now() + FINISH_GRACE;
        let mut unfinished = 0;
        for h in handlers.into_iter().flatten() {
            while !h.is_finished() && Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            if h.is_finished() {
                let _ = h.join();
            } else {
                unfinished += 1;
            }
        }
        let sh = &self.shared;
        let (entries, dropped) = take_log(sh);
        Report {
            entries,
            dropped,
            connections: sh.connections.load(SeqCst),
            requests: sh.requests.load(SeqCst),
            bytes_in: sh.bytes_in.load(SeqCst),
            bytes_out: sh.bytes_out.load(SeqCst),
            first_denied: sh.first_denied.lock().ok().and_then(|g| g.clone()),
            unfinished,
        }
    }
}

fn accept_loop(sh: &Arc<Shared>, listener: &TcpListener) -> Vec<JoinHandle<()>> {
    let mut handlers = Vec::new();
    loop {
        let accepted = listener.accept();
        if sh.stopping.load(SeqCst) {
            break;
        }
        let Ok((client, _)) = accepted else {
            // EMFILE and the like: a moment for the relays to close theirs.
            std::thread::sleep(std::time::Duration::from_millis(10));
            continue;
        };
        if !take_one(&sh.budget_connections, sh.rules.limits.connections) {
            deny(
                sh,
                &client,
                &Entry {
                    method: "?".into(),
                    ..Default::default()
                },
                "connection_limit",
                Instant::now(),
            );
            continue;
        }
        sh.connections.fetch_add(1, SeqCst);
        let sh2 = sh.clone();
        match std::thread::Builder::new()
            .name("agentjail-net-conn".into())
            .spawn(move || handle(&sh2, client))
        {
            Ok(h) => handlers.push(h),
            Err(_) => continue,
        }
    }
    handlers
}

#[derive(Default)]
struct Live {
    next: u64,
    socks: std::collections::HashMap<u64, TcpStream>,
}

/// A socket's place in `live`, given up when the connection it serves ends.
struct Tracked<'a> {
    sh: &'a Shared,
    key: u64,
}

impl Drop for Tracked<'_> {
    fn drop(&mut self) {
        let mut l = self.sh.live.lock().unwrap_or_else(|e| e.into_inner());
        l.socks.remove(&self.key);
    }
}

/// A copy of `s` for `finish` to shut down; None (and `s` shut down) once the proxy is
/// stopping. `stopping` is read under the lock `finish` takes its copies under, after it
/// set it: a socket is either among those copies or never used.
fn track<'a>(sh: &'a Shared, s: &TcpStream) -> Option<Tracked<'a>> {
    let mut l = sh.live.lock().unwrap_or_else(|e| e.into_inner());
    let copy = match s.try_clone() {
        Ok(c) if !sh.stopping.load(SeqCst) => c,
        _ => {
            drop(l);
            let _ = s.shutdown(Shutdown::Both);
            return None;
        }
    };
    let key = l.next;
    l.next += 1;
    l.socks.insert(key, copy);
    Some(Tracked { sh, key })
}

/// The entries logged so far, in the order their requests began, and the count dropped.
fn take_log(sh: &Shared) -> (Vec<Entry>, u64) {
    let (mut entries, dropped) =
        std::mem::take(&mut *sh.log.lock().unwrap_or_else(|e| e.into_inner()));
    entries.sort_by_key(|(t0, _)| *t0);
    (entries.into_iter().map(|(_, e)| e).collect(), dropped)
}

/// Entries are kept with the instant their request began: a connection kept open (a
/// keep-alive, a tunnel) ends after a request the program made later, and the record lists
/// requests in the order the program made them.
fn log(sh: &Shared, t0: Instant, e: Entry) {
    let mut g = sh.log.lock().unwrap_or_else(|e| e.into_inner());
    if g.0.len() < MAX_ENTRIES {
        g.0.push((t0, e));
    } else {
        g.1 += 1;
    }
}

/// Refuse: the entry and the policy's reaction first (so a program that reads the answer
/// finds it logged, and under `deny_is_stop` is killed before it can act on it), then a 403
/// naming the reason (the program's HTTP library shows it).
fn deny(sh: &Shared, client: &TcpStream, e: &Entry, reason: &str, t0: Instant) {
    record_denial(sh, e, reason, t0);
    let body = format!("agentjail: {}:{} denied: {reason}\n", e.host, e.port);
    let msg = format!(
        "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut c = client;
    let _ = c.write_all(msg.as_bytes());
    let _ = client.shutdown(Shutdown::Both);
}

/// Refuse without an answer (a tunnel already established: the program's TLS would read
/// any text as garbage).
fn refuse(sh: &Shared, client: &TcpStream, e: &Entry, reason: &str, t0: Instant) {
    record_denial(sh, e, reason, t0);
    let _ = client.shutdown(Shutdown::Both);
}

fn record_denial(sh: &Shared, e: &Entry, reason: &str, t0: Instant) {
    let host = if e.host.is_empty() {
        "unknown".to_string()
    } else {
        e.host.clone()
    };
    if let Ok(mut f) = sh.first_denied.lock() {
        f.get_or_insert_with(|| host.clone());
    }
    log(
        sh,
        t0,
        Entry {
            allowed: false,
            reason: reason.into(),
            ms: t0.elapsed().as_millis() as u64,
            ..e.clone()
        },
    );
    if let Some(cb) = &sh.on_deny {
        cb(&host);
    }
}

fn handle(sh: &Shared, mut client: TcpStream) {
    let Some(_tracked) = track(sh, &client) else {
        return;
    };
    let t0 = Instant::now();
    let lim = &sh.rules.limits;
    let _ = client.set_read_timeout(Some(lim.connect));
    let mut e = Entry {
        method: "?".into(),
        ..Default::default()
    };
    let head = wire::read_head(&mut client).and_then(|(h, rest)| Ok((wire::parse_head(&h)?, rest)));
    let (head, rest) = match head {
        Ok(x) => x,
        Err(why) => return deny(sh, &client, &e, why, t0),
    };
    e.method = head.method.clone();
    sh.requests.fetch_add(1, SeqCst);
    if !take_one(&sh.budget_requests, lim.requests) {
        return deny(sh, &client, &e, "request_limit", t0);
    }
    if head.method == "CONNECT" {
        tunnel(sh, client, &head, rest, e, t0)
    } else {
        plain(sh, client, &head, rest, e, t0)
    }
}
/// Count one more in `used` unless it already reached `limit`.
fn take_one(used: &AtomicU32, limit: u32) -> bool {
    used.fetch_update(SeqCst, SeqCst, |u| (u < limit).then_some(u + 1))
        .is_ok()
}

#[cfg(test)]
#[path = "proxy_tests.rs"]
pub(crate) mod tests;

#[cfg(test)]
#[path = "broker_tests.rs"]
mod broker_tests;

#[cfg(test)]
#[path = "broker_attack_tests.rs"]
mod broker_attack_tests;

#[cfg(test)]
#[path = "tls_relay_tests.rs"]
mod tls_relay_tests;
