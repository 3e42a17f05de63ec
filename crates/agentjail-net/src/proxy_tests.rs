//! The proxy end to end on host loopback: a fake resolver, an upstream server thread, the
//! program's side played by the test. Nothing leaves 127.0.0.1.

use super::*;
use crate::addr::Cidr;
use crate::decide::tests::Fake;
use crate::rules::{Allow, Limits};
use crate::wire::tests::client_hello;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

/// An upstream on 127.0.0.1: answers each connection with `reply` after reading what the
/// client sends until it has `expect` bytes (or EOF), and counts connections.
pub(crate) struct Upstream {
    pub(crate) port: u16,
    pub(crate) hits: Arc<AtomicUsize>,
    pub(crate) got: Arc<Mutex<Vec<u8>>>,
}

pub(crate) fn upstream(reply: Vec<u8>, expect: usize) -> Upstream {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let got = Arc::new(Mutex::new(Vec::new()));
    let (h, g) = (hits.clone(), got.clone());
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            h.fetch_add(1, SeqCst);
            let mut buf = vec![0u8; 65536];
            let mut seen = Vec::new();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            while seen.len() < expect {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                }
            }
            g.lock().unwrap().extend_from_slice(&seen);
            let _ = s.write_all(&reply);
        }
    });
    Upstream { port, hits, got }
}

pub(crate) struct Run {
    pub(crate) proxy: Proxy,
    pub(crate) addr: std::net::SocketAddr,
    pub(crate) denied: Arc<Mutex<Vec<String>>>,
}

pub(crate) fn start(
    allow: &[String],
    allow_http: bool,
    limits: Limits,
    names: &[(&str, &[&str])],
) -> Run {
    let rules = Rules {
        allow: allow.iter().map(|s| Allow::parse(s).unwrap()).collect(),
        allow_private: vec![Cidr::parse("127.0.0.1/32").unwrap()],
        allow_http,
        limits,
        broker: Default::default(),
    };
    start_rules(rules, names)
}

/// A proxy under `rules` on 127.0.0.1, names resolved by a table.
pub(crate) fn start_rules(rules: Rules, names: &[(&str, &[&str])]) -> Run {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let denied = Arc::new(Mutex::new(Vec::new()));
    let d = denied.clone();
    let proxy = Proxy::start(
        l,
        rules,
        Box::new(Fake::new(names)),
        Some(Box::new(move |h: &str| {
            d.lock().unwrap().push(h.to_string())
        })),
    )
    .unwrap();
    Run {
        proxy,
        addr,
        denied,
    }
}

impl Run {
    pub(crate) fn finish(self) -> (Report, Vec<String>) {
        let addr = self.addr;
        let r = self.proxy.finish(|_| {
            let _ = TcpStream::connect(addr);
        });
        let d = self.denied.lock().unwrap().clone();
        (r, d)
    }
}

/// Send `req`, then `after` once the proxy answered; return everything read until EOF.
pub(crate) fn exchange(addr: std::net::SocketAddr, req: &[u8], after: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(req).unwrap();
    let mut out = Vec::new();
    if !after.is_empty() {
        let mut b = [0u8; 39];
        let n = s.read(&mut b).unwrap_or(0);
        out.extend_from_slice(&b[..n]);
        if out.starts_with(b"HTTP/1.1 200") {
            let _ = s.write_all(after);
        }
    }
    let _ = s.read_to_end(&mut out);
    out
}

pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A record of content type `kind` carrying `body`.
pub(crate) fn record(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut r = vec![kind, 3, 3];
    r.extend_from_slice(&(body.len() as u16).to_be_bytes());
    r.extend_from_slice(body);
    r
}

/// What the test upstreams answer a ClientHello with: a handshake record (a ServerHello's
/// header: the proxy reads no further) and an application_data record `server-bytes`.
pub(crate) fn server_reply() -> Vec<u8> {
    let mut r = record(22, &[2, 0, 0, 0]);
    r.extend_from_slice(&record(23, b"server-bytes"));
    r
}

/// An upstream that answers a TLS ClientHello for index.test with [`server_reply`], and a
/// proxy that allows index.test on its port only (default limits, no plain HTTP).
fn index_site() -> (Vec<u8>, Upstream, Run) {
    let hello = client_hello(Some("index.test"));
    let up = upstream(server_reply(), hello.len());
    let run = start(
        &[format!("index.test:{}", up.port)],
        false,
        Limits::default(),
        &[("index.test", &["127.0.0.1"])],
    );
    (hello, up, run)
}

#[test]
fn connect_with_matching_sni_is_relayed_and_counted() {
    let (hello, up, run) = index_site();
    let req = format!(
        "CONNECT index.test:{} HTTP/1.1\r\nHost: index.test\r\n\r\n",
        up.port
    );
    let out = exchange(run.addr, req.as_bytes(), &hello);
    assert!(text(&out).starts_with("HTTP/1.1 200"), "{}", text(&out));
    assert!(text(&out).ends_with("server-bytes"));
    let (r, denied) = run.finish();
    assert_eq!(
        *up.got.lock().unwrap(),
        hello,
        "the upstream got the ClientHello as sent"
    );
    assert!(denied.is_empty());
    let e = &r.entries[0];
    assert!(e.allowed && e.reason == "ok", "{e:?}");
    assert_eq!(
        (e.method.as_str(), e.host.as_str()),
        ("CONNECT", "index.test")
    );
    let n_in = server_reply().len() as u64;
    assert_eq!(e.bytes_out, hello.len() as u64);
    assert_eq!(e.bytes_in, n_in);
    assert_eq!(
        e.address.as_deref(),
        Some(format!("127.0.0.1:{}", up.port).as_str())
    );
    assert_eq!((r.bytes_in, r.bytes_out), (n_in, hello.len() as u64));
}

#[test]
fn sni_mismatch_missing_sni_and_non_tls_are_denied_before_any_upstream_connect() {
    let up = upstream(b"x".to_vec(), 1);
    let allow = [format!("index.test:{}", up.port)];
    let run = start(
        &allow,
        true,
        Limits::default(),
        &[("index.test", &["127.0.0.1"])],
    );
    let req = format!("CONNECT index.test:{} HTTP/1.1\r\n\r\n", up.port);
    for (first, why) in [
        (client_hello(Some("evil.test")), "sni_mismatch"),
        (client_hello(None), "tls_without_sni"),
        (
            b"GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n".to_vec(),
            "connect_not_tls",
        ),
    ] {
        let out = exchange(run.addr, req.as_bytes(), &first);
        assert!(
            !text(&out).contains('x') || text(&out).contains("denied"),
            "{}",
            text(&out)
        );
        let _ = why;
    }
    let (r, denied) = run.finish();
    let reasons: Vec<&str> = r.entries.iter().map(|e| e.reason.as_str()).collect();
    assert_eq!(
        reasons,
        ["sni_mismatch", "tls_without_sni", "connect_not_tls"]
    );
    assert!(r
        .entries
        .iter()
        .all(|e| !e.allowed && e.host == "index.test"));
    assert_eq!(up.hits.load(SeqCst), 0, "nothing reached the upstream");
    assert_eq!(denied.len(), 3);
}

#[test]
fn destinations_off_the_list_get_403() {
    let run = start(
        &["index.test:443".into()],
        true,
        Limits::default(),
        &[
            ("index.test", &["127.0.0.1"]),
            ("meta.test", &["169.254.169.254"]),
        ],
    );
    for (req, why) in [
        ("CONNECT other.test:443 HTTP/1.1\r\n\r\n", "not_allowlisted"),
        ("CONNECT index.test:444 HTTP/1.1\r\n\r\n", "not_allowlisted"),
        ("CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n", "ip_not_listed"),
        ("CONNECT [::1]:443 HTTP/1.1\r\n\r\n", "ip_not_listed"),
        (
            "CONNECT 169.254.169.254:80 HTTP/1.1\r\n\r\n",
            "ip_not_listed",
        ),
        ("CONNECT index.test HTTP/1.1\r\n\r\n", "bad_connect_target"),
        ("GET / HTTP/1.1\r\nHost: index.test\r\n\r\n", "not_http_url"),
        ("GARBAGE\r\n\r\n", "bad_request_line"),
    ] {
        let out = text(&exchange(run.addr, req.as_bytes(), b""));
        assert!(
            out.starts_with("HTTP/1.1 403") && out.contains(why),
            "{req}: {out}"
        );
    }
    let (r, denied) = run.finish();
    assert_eq!(r.entries.len(), 8);
    assert!(r.entries.iter().all(|e| !e.allowed));
    assert_eq!(r.first_denied.as_deref(), Some("other.test"));
    assert_eq!(denied.len(), 8);
}

#[test]
fn requests_are_listed_in_the_order_the_program_made_them() {
    // A tunnel opened first and still open when a later request is refused ends last; the
    // record lists it first all the same (a program that read its answer to the end moves
    // on before the relay logs the connection).
    let (hello, up, run) = index_site();
    let mut tunnel = TcpStream::connect(run.addr).unwrap();
    tunnel
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let req = format!("CONNECT index.test:{} HTTP/1.1\r\n\r\n", up.port);
    tunnel.write_all(req.as_bytes()).unwrap();
    let mut b = [0u8; 39];
    let n = tunnel.read(&mut b).unwrap();
    assert!(
        text(&b[..n]).starts_with("HTTP/1.1 200"),
        "{}",
        text(&b[..n])
    );
    let out = text(&exchange(
        run.addr,
        b"CONNECT evil.test:443 HTTP/1.1\r\n\r\n",
        b"",
    ));
    assert!(out.contains("not_allowlisted"), "{out}");
    tunnel.write_all(&hello).unwrap();
    let mut rest = Vec::new();
    let _ = tunnel.read_to_end(&mut rest);
    assert!(text(&rest).ends_with("server-bytes"), "{}", text(&rest));
    let (r, _) = run.finish();
    let seen: Vec<_> = r
        .entries
        .iter()
        .map(|e| (e.host.as_str(), e.allowed))
        .collect();
    assert_eq!(seen, [("index.test", true), ("evil.test", false)]);
}

#[test]
fn metadata_and_private_answers_are_refused_for_listed_names() {
    let run = start(
        &["meta.test:80".into()],
        true,
        Limits::default(),
        &[("meta.test", &["169.254.169.254"])],
    );
    let out = text(&exchange(
        run.addr,
        b"GET http://meta.test/latest/ HTTP/1.1\r\nHost: meta.test\r\n\r\n",
        b"",
    ));
    assert!(
        out.contains("non_public_address:169.254.169.254:metadata"),
        "{out}"
    );
    let (r, _) = run.finish();
    assert!(!r.entries[0].allowed);
}

#[test]
fn plain_http_needs_allow_http_and_a_matching_host() {
    let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi".to_vec();
    let up = upstream(resp.clone(), 1);
    let allow = [format!("index.test:{}", up.port)];
    let names: &[(&str, &[&str])] = &[("index.test", &["127.0.0.1"])];
    let off = start(&allow, false, Limits::default(), names);
    let req = format!("GET http://index.test:{0}/simple/ HTTP/1.1\r\nHost: index.test:{0}\r\nProxy-Connection: keep-alive\r\n\r\n", up.port);
    assert!(text(&exchange(off.addr, req.as_bytes(), b"")).contains("plain_http_denied"));
    assert_eq!(off.finish().0.entries[0].reason, "plain_http_denied");
    let on = start(&allow, true, Limits::default(), names);
    assert_eq!(exchange(on.addr, req.as_bytes(), b""), resp);
    let sent = text(&up.got.lock().unwrap());
    assert!(sent.starts_with("GET /simple/ HTTP/1.1\r\n"), "{sent}");
    assert!(
        sent.contains("Connection: close\r\n") && !sent.contains("Proxy-Connection"),
        "{sent}"
    );
    for (req, why) in [
        (format!("GET http://index.test:{0}/ HTTP/1.1\r\nHost: evil.test\r\n\r\n", up.port), "host_mismatch"),
        (format!("GET http://index.test:{0}/ HTTP/1.1\r\nHost: index.test\r\n\r\n", up.port), "host_mismatch"),
        (format!("GET http://index.test:{0}/ HTTP/1.1\r\n\r\n", up.port), "host_header_missing"),
        (format!("GET http://index.test:{0}/ HTTP/1.1\r\nHost: index.test:{0}\r\nHost: index.test:{0}\r\n\r\n", up.port), "duplicate_header"),
        (format!("POST http://index.test:{0}/ HTTP/1.1\r\nHost: index.test:{0}\r\nTransfer-Encoding: chunked\r\n\r\n", up.port), "request_transfer_encoding_unsupported"),
        (format!("POST http://index.test:{0}/ HTTP/1.1\r\nHost: index.test:{0}\r\nContent-Length: -1\r\n\r\n", up.port), "bad_content_length"),
        (format!("GET http://user@index.test:{0}/ HTTP/1.1\r\nHost: index.test:{0}\r\n\r\n", up.port), "bad_url"),
    ] {
        let out = text(&exchange(on.addr, req.as_bytes(), b""));
        assert!(out.starts_with("HTTP/1.1 403") && out.contains(why), "{req}: {out}");
    }
    let (r, _) = on.finish();
    assert!(
        r.entries[0].allowed && r.entries[0].reason == "ok",
        "{:?}",
        r.entries[0]
    );
    assert_eq!(r.entries[0].bytes_in, resp.len() as u64);
    assert_eq!(
        up.hits.load(SeqCst),
        1,
        "only the good request reached the upstream"
    );
}

#[test]
fn byte_connection_and_request_limits_stop_transfers() {
    let big = vec![b'z'; 100_000];
    let up = upstream(big, 1);
    let allow = [format!("index.test:{}", up.port)];
    let names: &[(&str, &[&str])] = &[("index.test", &["127.0.0.1"])];
    let limits = Limits {
        bytes_in: 1000,
        ..Limits::default()
    };
    let run = start(&allow, true, limits, names);
    let req = format!(
        "GET http://index.test:{0}/ HTTP/1.1\r\nHost: index.test:{0}\r\n\r\n",
        up.port
    );
    let out = exchange(run.addr, req.as_bytes(), b"");
    assert!(
        out.len() <= 1000,
        "{} bytes passed a 1000-byte limit",
        out.len()
    );
    let (r, _) = run.finish();
    assert_eq!(r.entries[0].reason, "bytes_in_limit");
    assert!(r.bytes_in <= 1000);

    let limits = Limits {
        bytes_out: 10,
        ..Limits::default()
    };
    let run = start(&allow, true, limits, names);
    exchange(run.addr, req.as_bytes(), b"");
    assert_eq!(run.finish().0.entries[0].reason, "bytes_out_limit");

    let limits = Limits {
        requests: 1,
        connections: 2,
        ..Limits::default()
    };
    let run = start(&allow, true, limits, names);
    let bad = b"CONNECT nowhere.test:1 HTTP/1.1\r\n\r\n";
    exchange(run.addr, bad, b"");
    assert!(text(&exchange(run.addr, bad, b"")).contains("request_limit"));
    assert!(text(&exchange(run.addr, bad, b"")).contains("connection_limit"));
    let (r, _) = run.finish();
    let reasons: Vec<&str> = r.entries.iter().map(|e| e.reason.as_str()).collect();
    assert_eq!(
        reasons,
        ["not_allowlisted", "request_limit", "connection_limit"]
    );
    assert_eq!(r.connections, 2);
}

#[test]
fn a_stalled_transfer_ends_at_the_idle_timeout() {
    // The upstream waits for more bytes than the client sends: nobody speaks.
    let hello = client_hello(Some("index.test"));
    let up = upstream(Vec::new(), usize::MAX);
    let limits = Limits {
        idle: Duration::from_millis(200),
        ..Limits::default()
    };
    let run = start(
        &[format!("index.test:{}", up.port)],
        false,
        limits,
        &[("index.test", &["127.0.0.1"])],
    );
    let req = format!("CONNECT index.test:{} HTTP/1.1\r\n\r\n", up.port);
    exchange(run.addr, req.as_bytes(), &hello);
    let (r, _) = run.finish();
    assert_eq!(r.entries[0].reason, "idle_timeout");
}

#[test]
fn a_name_is_resolved_once_and_the_checked_address_is_used() {
    // The second answer would be the metadata address: a proxy that looked again before
    // connecting would go there (rebinding). It must connect to what it checked.
    let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".to_vec();
    let up = upstream(resp, 1);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let fake = Arc::new(Fake::new(&[
        ("rebind.test", &["127.0.0.1"]),
        ("rebind.test", &["169.254.169.254"]),
    ]));
    struct Shared2(Arc<Fake>);
    impl Resolver for Shared2 {
        fn resolve(&self, h: &str, p: u16) -> std::io::Result<Vec<std::net::IpAddr>> {
            self.0.resolve(h, p)
        }
    }
    let rules = Rules {
        allow: vec![Allow::parse(&format!("rebind.test:{}", up.port)).unwrap()],
        allow_private: vec![Cidr::parse("127.0.0.1").unwrap()],
        allow_http: true,
        limits: Limits::default(),
        broker: Default::default(),
    };
    let proxy = Proxy::start(l, rules, Box::new(Shared2(fake.clone())), None).unwrap();
    let req = format!(
        "GET http://rebind.test:{0}/ HTTP/1.1\r\nHost: rebind.test:{0}\r\n\r\n",
        up.port
    );
    exchange(addr, req.as_bytes(), b"");
    let second = text(&exchange(addr, req.as_bytes(), b""));
    let r = proxy.finish(|_| {
        let _ = TcpStream::connect(addr);
    });
    assert_eq!(
        fake.lookups(),
        2,
        "one lookup per request, none between check and connect"
    );
    assert_eq!(
        r.entries[0].address.as_deref(),
        Some(format!("127.0.0.1:{}", up.port).as_str())
    );
    assert!(
        second.contains("non_public_address:169.254.169.254"),
        "{second}"
    );
}

#[test]
fn an_allowed_destination_that_refuses_is_logged_as_connect_failed() {
    // A port nobody listens on: bind one, note it, close it.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let run = start(
        &[format!("index.test:{port}")],
        true,
        Limits::default(),
        &[("index.test", &["127.0.0.1"])],
    );
    let req = format!("GET http://index.test:{port}/ HTTP/1.1\r\nHost: index.test:{port}\r\n\r\n");
    assert!(exchange(run.addr, req.as_bytes(), b"").is_empty());
    let tunnel = format!("CONNECT index.test:{port} HTTP/1.1\r\n\r\n");
    exchange(
        run.addr,
        tunnel.as_bytes(),
        &client_hello(Some("index.test")),
    );
    let (r, denied) = run.finish();
    assert!(
        r.entries
            .iter()
            .all(|e| e.allowed && e.reason == "connect_failed"),
        "{:?}",
        r.entries
    );
    assert_eq!(r.entries.len(), 2);
    assert!(denied.is_empty(), "a refused upstream is not a denial");
}

#[test]
fn a_client_that_sends_nothing_is_refused_at_the_connect_timeout() {
    let limits = Limits {
        connect: Duration::from_millis(100),
        ..Limits::default()
    };
    let run = start(&["index.test:1".into()], false, limits, &[]);
    let mut s = TcpStream::connect(run.addr).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert!(out.contains("request_read_failed"), "{out}");
    let (r, _) = run.finish();
    assert_eq!(r.entries[0].reason, "request_read_failed");
}

#[test]
fn a_request_stuck_in_the_resolver_does_not_hold_the_end_of_the_run() {
    // The resolver answers only when the test lets it, after the run has ended: the
    // request is counted as unfinished and `finish` returns without it. (Its late answer
    // finds `stopping` set and connects nowhere: connect_upstream's first check.)
    struct Gate(Mutex<std::sync::mpsc::Receiver<()>>);
    impl Resolver for Gate {
        fn resolve(&self, _: &str, _: u16) -> std::io::Result<Vec<std::net::IpAddr>> {
            let _ = self.0.lock().unwrap().recv();
            Ok(vec!["127.0.0.1".parse().unwrap()])
        }
    }
    let up = upstream(Vec::new(), 1);
    let (tx, rx) = std::sync::mpsc::channel();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let rules = Rules {
        allow: vec![Allow::parse(&format!("slow.test:{}", up.port)).unwrap()],
        allow_private: vec![Cidr::parse("127.0.0.1").unwrap()],
        allow_http: true,
        limits: Limits::default(),
        broker: Default::default(),
    };
    let proxy = Proxy::start(l, rules, Box::new(Gate(Mutex::new(rx))), None).unwrap();
    let mut c = TcpStream::connect(addr).unwrap();
    let req = format!(
        "GET http://slow.test:{0}/ HTTP/1.1\r\nHost: slow.test:{0}\r\n\r\n",
        up.port
    );
    c.write_all(req.as_bytes()).unwrap();
    // The request is being decided once the proxy has counted it.
    while proxy.shared.requests.load(SeqCst) == 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let r = proxy.finish(|_| {
        let _ = TcpStream::connect(addr);
    });
    assert_eq!(r.unfinished, 1);
    assert!(r.entries.is_empty());
    tx.send(()).unwrap();
    drop(c);
}

/// A connection's sockets leave `live` when it ends: a long session does not hold a copy
/// of every socket it ever opened until `finish`.
#[test]
fn ended_connections_give_up_their_sockets() {
    let (hello, up, run) = index_site();
    let req = format!(
        "CONNECT index.test:{} HTTP/1.1\r\nHost: index.test\r\n\r\n",
        up.port
    );
    for _ in 0..5 {
        let out = exchange(run.addr, req.as_bytes(), &hello);
        assert!(text(&out).ends_with("server-bytes"), "{}", text(&out));
    }
    // Each handler gives its sockets up as it returns, just after the client saw EOF.
    let live = || run.proxy.shared.live.lock().unwrap().socks.len();
    let deadline = Instant::now() + Duration::from_secs(30);
    while live() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(live(), 0, "every ended connection left `live`");
    let (r, _) = run.finish();
    assert_eq!(r.entries.len(), 5);
}

/// A socket opened (an upstream connect that was under way) once `finish` has begun is
/// shut down and never tracked, so nothing is sent on it after the record.
#[test]
fn a_socket_opened_after_finish_began_is_shut_down() {
    let up = upstream(Vec::new(), 1);
    let run = start(&[], false, Limits::default(), &[]);
    run.proxy.shared.stopping.store(true, SeqCst);
    let s = TcpStream::connect(("127.0.0.1", up.port)).unwrap();
    assert!(track(&run.proxy.shared, &s).is_none());
    assert!((&s).write_all(b"x").is_err(), "the socket was shut down");
    assert!(run.proxy.shared.live.lock().unwrap().socks.is_empty());
    run.proxy.shared.stopping.store(false, SeqCst);
    run.finish();
}

/// Under `per_drain` the connection and request budgets start again at each drain (a
/// session's call, a workspace's command); the counters in the report keep the whole
/// life's. Without it a drain changes nothing: the budget is the proxy's life.
#[test]
fn budgets_start_again_at_a_drain_only_under_per_drain() {
    let bad = b"CONNECT nowhere.test:1 HTTP/1.1\r\n\r\n";
    for per_drain in [true, false] {
        let limits = Limits {
            connections: 2,
            requests: 2,
            per_drain,
            ..Limits::default()
        };
        let run = start(&["index.test:1".into()], false, limits, &[]);
        let reasons = |run: &Run| {
            let r = run.proxy.drain();
            let v: Vec<String> = r.entries.iter().map(|e| e.reason.clone()).collect();
            (v, r.connections, r.requests)
        };
        for _ in 0..3 {
            exchange(run.addr, bad, b"");
        }
        assert_eq!(
            reasons(&run),
            (
                vec![
                    "not_allowlisted".into(),
                    "not_allowlisted".into(),
                    "connection_limit".into()
                ],
                2,
                2
            )
        );
        for _ in 0..3 {
            exchange(run.addr, bad, b"");
        }
        let again = if per_drain {
            vec!["not_allowlisted", "not_allowlisted", "connection_limit"]
        } else {
            vec!["connection_limit"; 3]
        };
        let (v, connections, requests) = reasons(&run);
        assert_eq!(v, again, "per_drain {per_drain}");
        let n = if per_drain { 4 } else { 2 };
        assert_eq!((connections, requests), (n, n), "the life's counts");
        run.finish();
    }
}
