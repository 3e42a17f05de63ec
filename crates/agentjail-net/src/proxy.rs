//! The proxy: one accept thread on the jail's listening socket, one thread per connection
//! (at most `limits.connections` in a run), two per tunnel while it relays. Every request,
//! allowed or not, becomes an [`Entry`].

use crate::broker::Credential;
use crate::decide::{decide, Resolver};
use crate::rules::{normalize, Rules};
use crate::wire::{self, First, Head};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
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

fn connect_upstream<'a>(sh: &'a Shared, addrs: &[SocketAddr]) -> Option<(TcpStream, Tracked<'a>)> {
    for a in addrs {
        // The run ended while this request was being decided: connect nowhere.
        if sh.stopping.load(SeqCst) {
            return None;
        }
        if let Ok(s) = TcpStream::connect_timeout(a, sh.rules.limits.connect) {
            // Or during the connect: the new socket is shut down, nothing is sent on it.
            return track(sh, &s).map(|t| (s, t));
        }
    }
    None
}

/// CONNECT host:port: decide, answer 200, read the ClientHello, check its SNI, connect to
/// the checked address, relay both ways.
fn tunnel(sh: &Shared, client: TcpStream, head: &Head, rest: Vec<u8>, mut e: Entry, t0: Instant) {
    let (host, port) = match wire::split_authority(&head.target, 0) {
        Ok((h, p)) if p != 0 => (h, p),
        _ => return deny(sh, &client, &e, "bad_connect_target", t0),
    };
    e.host = normalize(&host);
    e.port = port;
    let addrs = match decide(&sh.rules, sh.resolver.as_ref(), &host, port) {
        Ok(a) => a,
        Err(d) => return deny(sh, &client, &e, &d.0, t0),
    };
    let mut c = &client;
    if c.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .is_err()
    {
        return log(
            sh,
            t0,
            Entry {
                allowed: true,
                reason: "client_gone".into(),
                ..e
            },
        );
    }
    let mut reader = (&rest[..]).chain(&client);
    let first = wire::read_first_record(&mut reader);
    let leftover = reader.into_inner().0.to_vec();
    let is_ip = host.starts_with('[') || host.parse::<std::net::IpAddr>().is_ok();
    let hello = match first {
        Ok(First::Tls(rec)) => match wire::client_hello_sni(&rec) {
            Ok(Some(sni)) if normalize(&sni) == e.host => rec,
            Ok(None) if is_ip => rec,
            Ok(Some(_)) => return refuse(sh, &client, &e, "sni_mismatch", t0),
            Ok(None) => return refuse(sh, &client, &e, "tls_without_sni", t0),
            Err(why) => return refuse(sh, &client, &e, why, t0),
        },
        Ok(First::NotTls(_)) => return refuse(sh, &client, &e, "connect_not_tls", t0),
        Err(why) => return refuse(sh, &client, &e, why, t0),
    };
    let Some((up, _tracked)) = connect_upstream(sh, &addrs) else {
        return connect_failed(sh, &client, e, t0);
    };
    e.address = up.peer_addr().ok().map(|a| a.to_string());
    relay(sh, client, up, hello, leftover, e, t0);
}

/// An allowed destination that did not answer: logged, then the program's connection closed.
fn connect_failed(sh: &Shared, client: &TcpStream, e: Entry, t0: Instant) {
    let ms = t0.elapsed().as_millis() as u64;
    log(
        sh,
        t0,
        Entry {
            allowed: true,
            reason: "connect_failed".into(),
            ms,
            ..e
        },
    );
    let _ = client.shutdown(Shutdown::Both);
}

/// Headers a proxy consumes or replaces: never forwarded.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "proxy-connection",
    "proxy-authorization",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
];

/// Methods whose answer is the request itself: never sent with a credential.
const ECHO_METHODS: &[&str] = &["TRACE", "TRACK"];

/// An absolute-form plain-HTTP request: its `Host` must name the URL's host and port; it
/// goes upstream in origin form with `Connection: close`, its body (Content-Length only)
/// after it, and the response comes back until the upstream closes. One request per
/// connection: nothing the program sends after the body is read. A request for a host with
/// a brokered credential is taken even when plain HTTP is not allowed: it leaves with the
/// credential's header (the program's own of that name dropped) to the credential's port,
/// over TLS unless the credential says the upstream is plain.
fn plain(sh: &Shared, client: TcpStream, head: &Head, rest: Vec<u8>, mut e: Entry, t0: Instant) {
    let (host, port, path) = match wire::parse_http_url(&head.target) {
        Ok(x) => x,
        Err(why) => return deny(sh, &client, &e, why, t0),
    };
    e.host = normalize(&host);
    e.port = port;
    let cred = sh.rules.broker.find(&e.host, port);
    if cred.is_none() && !sh.rules.allow_http {
        return deny(sh, &client, &e, "plain_http_denied", t0);
    }
    // TRACE (and IIS's TRACK) make the upstream answer with the request it got: the
    // credential's header, handed to the program by the HTTP standard itself.
    if cred.is_some()
        && ECHO_METHODS
            .iter()
            .any(|m| head.method.eq_ignore_ascii_case(m))
    {
        return deny(sh, &client, &e, "echo_method_with_credential", t0);
    }
    let body_len = match request_checks(head, &e) {
        Ok(n) => n,
        Err(why) => return deny(sh, &client, &e, why, t0),
    };
    let up_port = cred.map_or(port, |c| c.port);
    e.port = up_port;
    let addrs = match decide(&sh.rules, sh.resolver.as_ref(), &host, up_port) {
        Ok(a) => a,
        Err(d) => return deny(sh, &client, &e, &d.0, t0),
    };
    let Some((up, _tracked)) = connect_upstream(sh, &addrs) else {
        return connect_failed(sh, &client, e, t0);
    };
    e.address = up.peer_addr().ok().map(|a| a.to_string());
    let mut out = upstream_head(head, &path, cred);
    // The body: what came with the head, then the rest from the socket, exactly body_len.
    let mut body = rest;
    body.truncate(body_len.min(usize::MAX as u64) as usize);
    let more = body_len - body.len() as u64;
    out.extend_from_slice(&body);
    let client_body = (&client).take(more);
    let Some(c) = cred else {
        return relay_request(sh, &client, client_body, up, out, e, t0);
    };
    if !c.tls {
        e.credential = Some(c.name.clone());
        return relay_request(sh, &client, client_body, up, out, e, t0);
    }
    let _ = up.set_read_timeout(Some(sh.rules.limits.connect));
    let tls = match &sh.rules.broker.tls {
        Some(t) => t.connect(&c.host, up),
        None => Err("no trust roots".to_string()),
    };
    match tls {
        Ok(stream) => {
            e.credential = Some(c.name.clone());
            relay_request(sh, &client, client_body, stream, out, e, t0)
        }
        Err(why) => upstream_failed(sh, &client, e, &format!("upstream_tls_failed:{why}"), t0),
    }
}

/// The request's own checks: `Host` names the URL's host and port, no Transfer-Encoding,
/// at most one well-formed Content-Length (its value, 0 without one).
fn request_checks(head: &Head, e: &Entry) -> Result<u64, &'static str> {
    let host_hdr = head.one("host")?.ok_or("host_header_missing")?;
    match wire::split_authority(host_hdr, 80) {
        Ok((h, p)) if normalize(&h) == e.host && p == e.port => {}
        _ => return Err("host_mismatch"),
    }
    if head.one("transfer-encoding").map_or(true, |v| v.is_some()) {
        return Err("request_transfer_encoding_unsupported");
    }
    match head.one("content-length")? {
        None => Ok(0),
        Some(v) => match v.parse::<u64>() {
            Ok(n) if v.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
            _ => Err("bad_content_length"),
        },
    }
}

/// The head that goes upstream: origin form, hop-by-hop headers dropped, `Connection:
/// close`; for a brokered credential, `Host` names the upstream and the credential's header
/// replaces every one of that name the program sent.
fn upstream_head(head: &Head, path: &str, cred: Option<&Credential>) -> Vec<u8> {
    let mut out = format!("{} {path} HTTP/1.1\r\n", head.method).into_bytes();
    if let Some(c) = cred {
        out.extend_from_slice(format!("Host: {}\r\n", c.authority()).as_bytes());
    }
    for (n, v) in &head.headers {
        let hop = HOP_BY_HOP.iter().any(|h| n.eq_ignore_ascii_case(h));
        let replaced = cred
            .is_some_and(|c| n.eq_ignore_ascii_case("host") || n.eq_ignore_ascii_case(&c.header));
        if !hop && !replaced {
            out.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
        }
    }
    if let Some(c) = cred {
        out.extend_from_slice(format!("{}: {}\r\n", c.header, c.value).as_bytes());
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    out
}

/// An allowed request whose upstream could not be used (its TLS handshake failed): logged
/// with `reason`, and a 502 naming it to the program.
fn upstream_failed(sh: &Shared, client: &TcpStream, e: Entry, reason: &str, t0: Instant) {
    let body = format!("agentjail: {}:{} {reason}\n", e.host, e.port);
    log(
        sh,
        t0,
        Entry {
            allowed: true,
            reason: reason.into(),
            ms: t0.elapsed().as_millis() as u64,
            ..e
        },
    );
    let msg = format!(
        "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut c = client;
    let _ = c.write_all(msg.as_bytes());
    let _ = client.shutdown(Shutdown::Both);
}

/// How a transfer ended: `ok`, or what cut it.
fn end_reason(r: Result<(), &'static str>) -> &'static str {
    r.err().unwrap_or("ok")
}

/// Read some of `from` into `buf`: Ok(0) at its end.
fn read_some(from: &mut impl Read, buf: &mut [u8]) -> Result<usize, &'static str> {
    match from.read(buf) {
        Ok(n) => Ok(n),
        // A TLS upstream that closed without close_notify: the end of its response (the
        // program's HTTP client checks the framing; one request per connection).
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(0),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Err("idle_timeout")
        }
        Err(_) => Err("connection_reset"),
    }
}

/// Copy `from` → `to`, counting into `mine` and the run's `total` under `limit`. Ok at EOF.
fn pump(
    from: &mut impl Read,
    to: &mut impl Write,
    mine: &AtomicU64,
    total: &AtomicU64,
    limit: u64,
    over: &'static str,
) -> Result<(), &'static str> {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = read_some(from, &mut buf)?;
        if n == 0 {
            return Ok(());
        }
        forward(&buf[..n], to, mine, total, limit, over)?;
    }
}

/// Write `bytes` to `to`, counted into `mine` and `total` unless that would pass `limit`.
fn forward(
    bytes: &[u8],
    to: &mut impl Write,
    mine: &AtomicU64,
    total: &AtomicU64,
    limit: u64,
    over: &'static str,
) -> Result<(), &'static str> {
    let n = bytes.len() as u64;
    if !add_within(total, n, limit) {
        return Err(over);
    }
    if to.write_all(bytes).is_err() {
        total.fetch_sub(n, SeqCst);
        return Err("connection_reset");
    }
    mine.fetch_add(n, SeqCst);
    Ok(())
}

/// [`pump`] for one direction of a tunnel: only whole, well-formed TLS records pass
/// ([`wire::record_header`]). Each record's 5-byte header is checked (and `on_record` asked
/// with its content type) before any byte of it is forwarded; its body follows in bulk as
/// it arrives, unread. The first byte that does not start a valid header ends the
/// direction with `not_tls`, nothing of it forwarded; so does a stream that ends inside a
/// header. A stream may end inside a body (the peer's TLS sees the record cut short).
#[allow(clippy::too_many_arguments)]
fn pump_records(
    from: &mut impl Read,
    to: &mut impl Write,
    mine: &AtomicU64,
    total: &AtomicU64,
    limit: u64,
    over: &'static str,
    not_tls: &'static str,
    on_record: &mut dyn FnMut(u8) -> Result<(), &'static str>,
) -> Result<(), &'static str> {
    let mut buf = vec![0u8; 16 * 1024];
    // buf[..held]: the start of a header that is not complete yet (at most 4 bytes).
    let mut held = 0;
    // Body bytes of the current record still to come.
    let mut left = 0usize;
    loop {
        let n = read_some(from, &mut buf[held..])?;
        if n == 0 {
            return if held == 0 { Ok(()) } else { Err(not_tls) };
        }
        let end = held + n;
        let mut pos = 0;
        let mut refused = None;
        while pos < end {
            if left > 0 {
                let k = left.min(end - pos);
                pos += k;
                left -= k;
                continue;
            }
            if end - pos < wire::RECORD_HEADER {
                break;
            }
            match wire::record_header(&buf[pos..end]) {
                Some((kind, len)) => {
                    if let Err(why) = on_record(kind) {
                        refused = Some(why);
                        break;
                    }
                    left = len;
                    pos += wire::RECORD_HEADER;
                }
                None => {
                    refused = Some(not_tls);
                    break;
                }
            }
        }
        if pos > 0 {
            forward(&buf[..pos], to, mine, total, limit, over)?;
        }
        if let Some(why) = refused {
            return Err(why);
        }
        buf.copy_within(pos..end, 0);
        held = end - pos;
    }
}

/// Count one more in `used` unless it already reached `limit`.
fn take_one(used: &AtomicU32, limit: u32) -> bool {
    used.fetch_update(SeqCst, SeqCst, |u| (u < limit).then_some(u + 1))
        .is_ok()
}

/// Add `n` to `total` unless that would pass `limit`.
fn add_within(total: &AtomicU64, n: u64, limit: u64) -> bool {
    total
        .fetch_update(SeqCst, SeqCst, |t| t.checked_add(n).filter(|s| *s <= limit))
        .is_ok()
}

fn send_counted(
    sh: &Shared,
    to: &mut impl Write,
    bytes: &[u8],
    mine: &AtomicU64,
) -> Result<(), &'static str> {
    if !add_within(&sh.bytes_out, bytes.len() as u64, sh.rules.limits.bytes_out) {
        return Err("bytes_out_limit");
    }
    to.write_all(bytes).map_err(|_| "connection_reset")?;
    mine.fetch_add(bytes.len() as u64, SeqCst);
    Ok(())
}

/// Whether the upstream answered the ClientHello as a TLS server does: set once by the
/// upstream's direction of a tunnel, waited for by the program's.
#[derive(Default)]
struct Answered {
    state: Mutex<Option<bool>>,
    cv: std::sync::Condvar,
}

impl Answered {
    /// The first call decides; later ones change nothing.
    fn set(&self, v: bool) {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if g.is_none() {
            *g = Some(v);
            self.cv.notify_all();
        }
    }

    fn wait(&self) -> bool {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match *g {
                Some(v) => return v,
                None => g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner()),
            }
        }
    }
}

/// A tunnel: the ClientHello `hello` upstream, then both ways, TLS records only
/// ([`pump_records`]). Nothing more of the program's (`leftover`, read with the hello,
/// included) goes upstream before the upstream's first record, a handshake record (its
/// ServerHello), came back: a service that does not speak TLS gets the one ClientHello
/// record and nothing after it. Its answer, not a TLS record, ends the tunnel
/// (`upstream_not_tls`); a TLS alert is passed to the program and nothing more goes up.
fn relay(
    sh: &Shared,
    client: TcpStream,
    up: TcpStream,
    hello: Vec<u8>,
    leftover: Vec<u8>,
    e: Entry,
    t0: Instant,
) {
    let lim = &sh.rules.limits;
    let _ = client.set_read_timeout(Some(lim.idle));
    let _ = up.set_read_timeout(Some(lim.idle));
    let (bin, bout) = (AtomicU64::new(0), AtomicU64::new(0));
    let answered = Answered::default();
    // The first direction to fail names the end: its failure cuts both sockets, and what
    // the other then sees (a reset) is only its consequence.
    let first_end = std::sync::OnceLock::new();
    let sent = send_counted(sh, &mut &up, &hello, &bout);
    if let Err(why) = sent {
        let _ = first_end.set(why);
    } else {
        std::thread::scope(|s| {
            let (c2, u2, answered, bout, first_end) = (&client, &up, &answered, &bout, &first_end);
            let outward = s.spawn(move || {
                let r = if answered.wait() {
                    program_to_upstream(sh, c2, u2, &leftover, bout)
                } else {
                    Ok(())
                };
                if let Err(why) = r {
                    let _ = first_end.set(why);
                }
                finish_direction(r, c2, u2);
            });
            let in_end = upstream_to_program(sh, &up, &client, &bin, answered);
            // However the upstream's side ended, the program's stops waiting for it.
            answered.set(false);
            if let Err(why) = in_end {
                let _ = first_end.set(why);
            }
            finish_direction(in_end, &up, &client);
            if outward.join().is_err() {
                let _ = first_end.set("relay_panicked");
            }
        });
    }
    let _ = client.shutdown(Shutdown::Both);
    let _ = up.shutdown(Shutdown::Both);
    let reason = first_end.get().copied().unwrap_or("ok");
    log(
        sh,
        t0,
        Entry {
            bytes_in: bin.load(SeqCst),
            bytes_out: bout.load(SeqCst),
            allowed: true,
            reason: reason.into(),
            ms: t0.elapsed().as_millis() as u64,
            ..e
        },
    );
}

/// The program's side of a tunnel once the upstream answered: `leftover` (read with the
/// ClientHello), then the socket; TLS records only, anything else is `not_tls`.
fn program_to_upstream(
    sh: &Shared,
    client: &TcpStream,
    up: &TcpStream,
    leftover: &[u8],
    bout: &AtomicU64,
) -> Result<(), &'static str> {
    pump_records(
        &mut leftover.chain(client),
        &mut &*up,
        bout,
        &sh.bytes_out,
        sh.rules.limits.bytes_out,
        "bytes_out_limit",
        "not_tls",
        &mut |_| Ok(()),
    )
}

/// The upstream's side of a tunnel: TLS records only (`upstream_not_tls`), the first a
/// handshake record, which lets the program's side go on ([`Answered`]), or an alert,
/// which passes and stops it.
fn upstream_to_program(
    sh: &Shared,
    up: &TcpStream,
    client: &TcpStream,
    bin: &AtomicU64,
    answered: &Answered,
) -> Result<(), &'static str> {
    let mut first = true;
    pump_records(
        &mut &*up,
        &mut &*client,
        bin,
        &sh.bytes_in,
        sh.rules.limits.bytes_in,
        "bytes_in_limit",
        "upstream_not_tls",
        &mut |kind| {
            if std::mem::take(&mut first) {
                match kind {
                    wire::HANDSHAKE => answered.set(true),
                    wire::ALERT => answered.set(false),
                    _ => return Err("upstream_not_tls"),
                }
            }
            Ok(())
        },
    )
}

/// One direction ended: at EOF pass the half-close on; on anything else cut both sockets.
fn finish_direction(r: Result<(), &'static str>, from: &TcpStream, to: &TcpStream) {
    match r {
        Ok(()) => {
            let _ = to.shutdown(Shutdown::Write);
        }
        Err(_) => {
            let _ = from.shutdown(Shutdown::Both);
            let _ = to.shutdown(Shutdown::Both);
        }
    }
}

/// What a plain-HTTP request goes upstream on: the socket, or a TLS stream over it.
trait Upstream: Read + Write {
    fn tcp(&self) -> &TcpStream;
}

impl Upstream for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

impl Upstream for rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    fn tcp(&self) -> &TcpStream {
        &self.sock
    }
}

/// A plain-HTTP request: the rewritten head and body upstream, then the response back.
fn relay_request(
    sh: &Shared,
    client: &TcpStream,
    mut body: impl Read,
    mut up: impl Upstream,
    head: Vec<u8>,
    e: Entry,
    t0: Instant,
) {
    let lim = &sh.rules.limits;
    let _ = client.set_read_timeout(Some(lim.idle));
    let _ = up.tcp().set_read_timeout(Some(lim.idle));
    let (bin, bout) = (AtomicU64::new(0), AtomicU64::new(0));
    let sent = send_counted(sh, &mut up, &head, &bout).and_then(|_| {
        pump(
            &mut body,
            &mut up,
            &bout,
            &sh.bytes_out,
            lim.bytes_out,
            "bytes_out_limit",
        )
    });
    let got = match sent {
        Ok(()) => pump(
            &mut up,
            &mut &*client,
            &bin,
            &sh.bytes_in,
            lim.bytes_in,
            "bytes_in_limit",
        ),
        Err(w) => Err(w),
    };
    // Logged before the close the program waits for: its next request is logged after.
    log(
        sh,
        t0,
        Entry {
            bytes_in: bin.load(SeqCst),
            bytes_out: bout.load(SeqCst),
            allowed: true,
            reason: end_reason(got).into(),
            ms: t0.elapsed().as_millis() as u64,
            ..e
        },
    );
    let _ = client.shutdown(Shutdown::Both);
    let _ = up.tcp().shutdown(Shutdown::Both);
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
