//! The credential broker attacked by a program that wants the key somewhere other than its
//! host, or in its own hands: every request-line, header and framing trick a proxy and a
//! server could read differently. Two upstreams record every byte they get, per
//! connection, until the proxy closes it: the credential's host and another allowed host
//! (plain HTTP allowed, the worst case). A payload that gets the key to the other one, twice
//! to its own, or echoed back by the protocol itself, fails. Nothing leaves 127.0.0.1.

use super::tests::{start_rules, text, Run};
use super::*;
use crate::addr::Cidr;
use crate::broker::{Broker, Credential};
use crate::rules::{Allow, Limits};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

const SECRET: &str = "brk-attack-3c9e1f7a5b2d8046";

/// An upstream that never answers: it records everything a connection carries until the
/// proxy gives up on it (its idle limit) and closes it, so nothing sent is missed.
struct Sink {
    port: u16,
    conns: Arc<Mutex<Vec<String>>>,
}

fn sink() -> Sink {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let conns: Arc<Mutex<Vec<String>>> = Arc::default();
    let c = conns.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let c = c.clone();
            std::thread::spawn(move || {
                let _ = s.set_read_timeout(Some(Duration::from_secs(20)));
                let mut all = Vec::new();
                let _ = s.read_to_end(&mut all);
                c.lock().unwrap().push(text(&all));
            });
        }
    });
    Sink { port, conns }
}

fn proxy(cred_port: u16, other_port: u16) -> Run {
    let rules = Rules {
        allow: [
            format!("index.test:{cred_port}"),
            format!("other.test:{other_port}"),
        ]
        .iter()
        .map(|s| Allow::parse(s).unwrap())
        .collect(),
        allow_private: vec![Cidr::parse("127.0.0.1/32").unwrap()],
        allow_http: true,
        limits: Limits {
            // The sinks never answer: the proxy closes each connection after this.
            idle: Duration::from_millis(300),
            ..Limits::default()
        },
        broker: Broker {
            credentials: vec![Credential {
                name: "api".into(),
                host: "index.test".into(),
                port: cred_port,
                header: "Authorization".into(),
                value: format!("Bearer {SECRET}"),
                tls: false,
            }],
            tls: None,
        },
    };
    start_rules(
        rules,
        &[
            ("index.test", &["127.0.0.1"]),
            ("other.test", &["127.0.0.1"]),
        ],
    )
}

/// Send `req` and read what comes back until the proxy closes.
fn send(addr: std::net::SocketAddr, req: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let _ = s.write_all(req);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    text(&out)
}

/// Wait until `sink` has recorded `n` connections (each ends when the proxy closes it).
fn settle(sink: &Sink, n: usize) -> Vec<String> {
    for _ in 0..4000 {
        let c = sink.conns.lock().unwrap().clone();
        if c.len() >= n {
            return c;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("the upstream never saw {n} connections");
}

// long because: one table of every refused trick and one of every allowed one, then the
// checks on what each upstream received.
#[test]
fn request_tricks_never_send_the_key_elsewhere_or_twice() {
    let (own, other) = (sink(), sink());
    let (p, q) = (own.port, other.port);
    let r = proxy(p, q);
    let big = "a".repeat(wire::MAX_HEAD);
    let smuggled = format!("GET /x HTTP/1.1\r\nHost: other.test:{q}\r\n\r\n");
    // (request, None: refused with no upstream connection | Some(()): allowed, to the
    // credential's host, with the key once)
    let refused: Vec<(String, &str)> = vec![
        // userinfo, both ways round
        (format!("GET http://index.test@other.test:{q}/ HTTP/1.1\r\nHost: other.test:{q}\r\n\r\n"), "bad_url"),
        (format!("GET http://other.test:{q}@index.test/ HTTP/1.1\r\nHost: index.test\r\n\r\n"), "bad_url"),
        // a fragment, a percent-encoded dot, two trailing dots
        ("GET http://index.test/#x HTTP/1.1\r\nHost: index.test\r\n\r\n".into(), "bad_url"),
        ("GET http://index%2etest/ HTTP/1.1\r\nHost: index%2etest\r\n\r\n".into(), "invalid_host"),
        ("GET http://index.test../ HTTP/1.1\r\nHost: index.test..\r\n\r\n".into(), "invalid_host"),
        // a look-alike (dotless i), its punycode, a backslash before userinfo
        ("GET http://\u{131}ndex.test/ HTTP/1.1\r\nHost: \u{131}ndex.test\r\n\r\n".into(), "invalid_host"),
        ("GET http://xn--ndex-xua.test/ HTTP/1.1\r\nHost: xn--ndex-xua.test\r\n\r\n".into(), "not_allowlisted"),
        (format!("GET http://other.test:{q}\\@index.test/ HTTP/1.1\r\nHost: index.test\r\n\r\n"), "bad_url"),
        // the credential's host in Host, another in the URL; an IPv6 literal
        (format!("GET http://other.test:{q}/ HTTP/1.1\r\nHost: index.test\r\n\r\n"), "host_mismatch"),
        (format!("GET http://[::1]:{q}/ HTTP/1.1\r\nHost: [::1]:{q}\r\n\r\n"), "ip_not_listed"),
        // the credential's host on a port that is neither 80 nor its own
        (format!("GET http://index.test:{q}/ HTTP/1.1\r\nHost: index.test:{q}\r\n\r\n"), "not_allowlisted"),
        // origin form, and a lowercase connect in absolute form is still no tunnel
        ("GET / HTTP/1.1\r\nHost: index.test\r\n\r\n".into(), "not_http_url"),
        // the methods whose answer is the request: the key, by the standard
        ("TRACE http://index.test/ HTTP/1.1\r\nHost: index.test\r\n\r\n".into(), "echo_method_with_credential"),
        ("track http://index.test/ HTTP/1.1\r\nHost: index.test\r\n\r\n".into(), "echo_method_with_credential"),
        // framing a second parser could read differently
        ("POST http://index.test/ HTTP/1.1\r\nHost: index.test\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello".into(), "duplicate_header"),
        ("POST http://index.test/ HTTP/1.1\r\nHost: index.test\r\nContent-Length: +5\r\n\r\nhello".into(), "bad_content_length"),
        ("POST http://index.test/ HTTP/1.1\r\nHost: index.test\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".into(), "request_transfer_encoding_unsupported"),
        ("GET http://index.test/ HTTP/1.1\r\nHost: index.test\r\nX: a\r\n\tAuthorization: folded\r\n\r\n".into(), "bad_header"),
        ("GET http://index.test/ HTTP/1.1\r\nHost: index.test\nX: bare-lf\r\n\r\n".into(), "bad_line_ending"),
        ("GET http://index.test/ HTTP/1.1\r\nHost: index.test\r\nX\u{0}Y: a\r\n\r\n".into(), "bad_header"),
        ("GET http://index.test/ HTTP/1.1\r\nHost : index.test\r\n\r\n".into(), "bad_header"),
        (format!("GET http://index.test/ HTTP/1.1\r\nHost: index.test\r\nX: {big}\r\n\r\n"), "request_head_too_large"),
    ];
    for (req, why) in &refused {
        let out = send(r.addr, req.as_bytes());
        // Past the head limit the proxy closes with bytes unread: the 403 may be lost to
        // the reset that close sends.
        let lost = *why == "request_head_too_large" && out.is_empty();
        assert!(
            lost || (out.starts_with("HTTP/1.1 403") && out.contains(why)),
            "{req:?}: {out}"
        );
        assert!(!out.contains(SECRET), "{req:?}: {out}");
    }
    // Non-UTF-8 in the head.
    let out = send(
        r.addr,
        b"GET http://index.test/ HTTP/1.1\r\nHost: index.test\r\nX: \xff\r\n\r\n",
    );
    assert!(out.contains("request_not_utf8"), "{out}");
    let allowed: Vec<String> = vec![
        // trailing dot, case, port 80 spelled out, HTTP/1.0
        "GET http://index.test./a HTTP/1.1\r\nHost: index.test.\r\n\r\n".into(),
        "GET HTTP://INDEX.TEST/b HTTP/1.1\r\nHost: Index.Test\r\n\r\n".into(),
        "GET http://index.test:80/c HTTP/1.0\r\nHost: index.test:80\r\n\r\n".into(),
        // a pipelined second request for the other host, right behind the first
        format!("GET http://index.test/d HTTP/1.1\r\nHost: index.test\r\n\r\nGET http://other.test:{q}/ HTTP/1.1\r\nHost: other.test:{q}\r\n\r\n"),
        // a body that is another request (smuggling): it goes as this request's body
        format!("POST http://index.test/e HTTP/1.1\r\nHost: index.test\r\nContent-Length: {}\r\n\r\n{smuggled}", smuggled.len()),
        // an upgrade to a websocket (a tunnel the proxy could not see into), a keep-alive
        "GET http://index.test/f HTTP/1.1\r\nHost: index.test\r\nConnection: Upgrade, keep-alive\r\nUpgrade: websocket\r\nKeep-Alive: timeout=60\r\nProxy-Connection: keep-alive\r\n\r\n".into(),
        // Expect: 100-continue, its body right away
        "PUT http://index.test/g HTTP/1.1\r\nHost: index.test\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok".into(),
        // the program's own key under the credential's header, in odd spellings
        "GET http://index.test/h HTTP/1.1\r\nHost: index.test\r\nAUTHORIZATION: a\r\nauthorization:b\r\nAuthorization:\t c \r\n\r\n".into(),
    ];
    for req in &allowed {
        send(r.addr, req.as_bytes());
    }
    let got = settle(&own, allowed.len());
    assert_eq!(got.len(), allowed.len(), "{got:#?}");
    for c in &got {
        assert_eq!(c.matches(SECRET).count(), 1, "{c}");
        let head = c.split("\r\n\r\n").next().unwrap();
        let lc = head.to_ascii_lowercase();
        assert_eq!(lc.matches("authorization:").count(), 1, "{c}");
        assert_eq!(
            head.matches(&format!("\r\nHost: index.test:{p}\r\n"))
                .count(),
            1,
            "{c}"
        );
        assert_eq!(lc.matches("\r\nhost:").count(), 1, "{c}");
        assert!(!lc.contains("upgrade") && !lc.contains("keep-alive"), "{c}");
        assert!(head.ends_with("\r\nConnection: close"), "{c}");
    }
    // The smuggled request arrived as a body, after the one head that carried the key.
    let post = got.iter().find(|c| c.starts_with("POST /e ")).unwrap();
    assert!(post.ends_with(&smuggled), "{post}");
    assert!(post.find(SECRET) < post.find(&smuggled), "{post}");
    let (rep, _) = r.finish();
    assert!(
        other.conns.lock().unwrap().is_empty(),
        "the other host got a connection"
    );
    let with_cred = rep
        .entries
        .iter()
        .filter(|e| e.credential.is_some())
        .count();
    assert_eq!(with_cred, allowed.len(), "{:?}", rep.entries);
}

/// A second request on the same connection after the answer (keep-alive) finds it closed:
/// it reaches no upstream, with or without the key.
#[test]
fn a_kept_alive_connection_carries_one_request() {
    let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok".to_vec();
    let up = super::tests::upstream(resp, 1);
    let r = proxy(up.port, up.port);
    let mut s = TcpStream::connect(r.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let req =
        b"GET http://index.test/ HTTP/1.1\r\nHost: index.test\r\nConnection: keep-alive\r\n\r\n";
    s.write_all(req).unwrap();
    let mut first = Vec::new();
    let _ = s.read_to_end(&mut first);
    assert!(text(&first).ends_with("ok"), "{}", text(&first));
    // The proxy closed: a write may still be accepted by the kernel, never relayed.
    let _ = s.write_all(req);
    let mut more = Vec::new();
    let _ = s.read_to_end(&mut more);
    assert!(more.is_empty());
    let (rep, _) = r.finish();
    assert_eq!(up.hits.load(SeqCst), 1);
    assert_eq!(rep.entries.len(), 1, "{:?}", rep.entries);
}
