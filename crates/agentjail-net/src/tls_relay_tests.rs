//! The tunnel's TLS-record relay end to end on host loopback: plain text after a valid
//! ClientHello never reaches the upstream, an upstream that does not answer as a TLS server
//! gets only the ClientHello, and real rustls traffic (TLS 1.2 and 1.3) passes intact.
//! Apart from the proxy's other end-to-end tests (`proxy_tests.rs`, whose helpers these
//! use) because they test one mechanism, `proxy/relay.rs`'s record pump, from the outside.

use super::tests::{exchange, record, server_reply, start, text};
use super::*;
use crate::rules::Limits;
use crate::wire::tests::client_hello;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

/// An upstream that answers the first `hello_len` bytes it gets with `answer` at once, then
/// keeps everything it gets until the proxy closes: what it got, through the channel.
fn answering_upstream(
    hello_len: usize,
    answer: Vec<u8>,
) -> (u16, std::sync::mpsc::Receiver<Vec<u8>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let tx = tx.clone();
            let answer = answer.clone();
            std::thread::spawn(move || {
                s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                let mut got = vec![0u8; hello_len];
                if s.read_exact(&mut got).is_ok() {
                    let _ = s.write_all(&answer);
                    let _ = s.read_to_end(&mut got);
                }
                let _ = tx.send(got);
            });
        }
    });
    (port, rx)
}

/// Plain text after a valid ClientHello never reaches the upstream, in the write that
/// carried the hello or in a later one, after valid records or instead of them, and the
/// tunnel's entry names the end: `not_tls`.
#[test]
fn plain_text_in_a_tunnel_never_reaches_the_upstream() {
    let hello = client_hello(Some("index.test"));
    let (port, got) = answering_upstream(hello.len(), server_reply());
    let run = start(
        &[format!("index.test:{port}")],
        false,
        Limits::default(),
        &[("index.test", &["127.0.0.1"])],
    );
    let req = format!("CONNECT index.test:{port} HTTP/1.1\r\n\r\n");
    let app = record(23, b"ciphertext");
    let cases: [(Vec<u8>, Vec<u8>, Vec<u8>); 4] = [
        // with the hello, in one write
        (
            [hello.clone(), b"SET k v\r\n".to_vec()].concat(),
            vec![],
            hello.clone(),
        ),
        // after the server's answer, alone
        (hello.clone(), b"SET k v\r\n".to_vec(), hello.clone()),
        // after a valid record, in the same write
        (
            hello.clone(),
            [
                app.clone(),
                b"GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n".to_vec(),
            ]
            .concat(),
            [hello.clone(), app.clone()].concat(),
        ),
        // a header with a valid type but a version no TLS writes
        (
            hello.clone(),
            b"\x17\x03\x00\x00\x05hello".to_vec(),
            hello.clone(),
        ),
    ];
    for (i, (first, then, want)) in cases.iter().enumerate() {
        let mut s = TcpStream::connect(run.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.write_all(req.as_bytes()).unwrap();
        let mut b = [0u8; 39];
        s.read_exact(&mut b).unwrap();
        assert!(text(&b).starts_with("HTTP/1.1 200"), "{}", text(&b));
        s.write_all(first).unwrap();
        let mut answer = vec![0u8; server_reply().len()];
        s.read_exact(&mut answer).unwrap();
        assert_eq!(answer, server_reply(), "case {i}");
        let _ = s.write_all(then);
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        assert_eq!(
            text(&got.recv_timeout(Duration::from_secs(60)).unwrap()),
            text(want),
            "case {i}: the upstream got only the TLS records"
        );
    }
    let (r, _) = run.finish();
    let reasons: Vec<_> = r
        .entries
        .iter()
        .map(|e| (e.allowed, e.reason.as_str()))
        .collect();
    assert_eq!(reasons, [(true, "not_tls"); 4]);
    assert_eq!(
        r.entries[2].bytes_out,
        (hello.len() + app.len()) as u64,
        "only what was forwarded is counted"
    );
}

/// An upstream that does not answer the ClientHello as a TLS server (a line protocol's
/// error line) gets nothing after it, whatever the program sends, TLS records included;
/// its answer does not reach the program, and the entry says `upstream_not_tls`. One that
/// answers with an alert gets nothing more either, and the alert reaches the program.
#[test]
fn an_upstream_that_does_not_speak_tls_gets_only_the_client_hello() {
    let hello = client_hello(Some("index.test"));
    let alert = record(21, &[2, 40]);
    for (answer, reason, program_sees) in [
        (
            b"-ERR unknown command\r\n".to_vec(),
            "upstream_not_tls",
            vec![],
        ),
        (alert.clone(), "ok", alert.clone()),
    ] {
        let (port, got) = answering_upstream(hello.len(), answer);
        let run = start(
            &[format!("index.test:{port}")],
            false,
            Limits::default(),
            &[("index.test", &["127.0.0.1"])],
        );
        let req = format!("CONNECT index.test:{port} HTTP/1.1\r\n\r\n");
        let after = [
            hello.clone(),
            record(23, b"\r\nSET k v\r\n"),
            b"SET k v\r\n".to_vec(),
        ]
        .concat();
        let out = exchange(run.addr, req.as_bytes(), &after);
        let established = b"HTTP/1.1 200 Connection established\r\n\r\n";
        assert_eq!(out, [&established[..], &program_sees].concat(), "{reason}");
        assert_eq!(got.recv_timeout(Duration::from_secs(60)).unwrap(), hello);
        let (r, _) = run.finish();
        assert_eq!(
            (r.entries[0].allowed, r.entries[0].reason.as_str()),
            (true, reason)
        );
    }
}

/// Real TLS, 1.2 and 1.3, through a tunnel: a rustls client and server, a response of
/// many records, both ways intact.
#[test]
fn real_tls_passes_a_tunnel() {
    use rustls::pki_types::pem::PemObject;
    fn big(head: &[u8]) -> Vec<u8> {
        let body = vec![b'r'; 200_000];
        let mut r = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nX-Got: {}\r\n\r\n",
            body.len(),
            head.len()
        )
        .into_bytes();
        r.extend_from_slice(&body);
        r
    }
    let server = crate::test_tls::server(big);
    let run = start(
        &[format!("index.test:{}", server.port)],
        false,
        Limits::default(),
        &[("index.test", &["127.0.0.1"])],
    );
    let mut roots = rustls::RootCertStore::empty();
    let (ca, _) = crate::test_tls::ca();
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(&ca).unwrap())
        .unwrap();
    let versions: [&[&rustls::SupportedProtocolVersion]; 2] =
        [&[&rustls::version::TLS12], &[&rustls::version::TLS13]];
    for v in versions {
        let cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_protocol_versions(v)
        .unwrap()
        .with_root_certificates(roots.clone())
        .with_no_client_auth();
        let mut s = TcpStream::connect(run.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let req = format!("CONNECT index.test:{} HTTP/1.1\r\n\r\n", server.port);
        s.write_all(req.as_bytes()).unwrap();
        let mut b = [0u8; 39];
        s.read_exact(&mut b).unwrap();
        assert!(text(&b).starts_with("HTTP/1.1 200"), "{}", text(&b));
        let conn =
            rustls::ClientConnection::new(Arc::new(cfg), "index.test".try_into().unwrap()).unwrap();
        let mut tls = rustls::StreamOwned::new(conn, s);
        let head = b"GET / HTTP/1.1\r\nHost: index.test\r\n\r\n";
        tls.write_all(head).unwrap();
        let mut out = Vec::new();
        tls.read_to_end(&mut out).unwrap();
        let want = big(head);
        assert_eq!(out.len(), want.len(), "{v:?}");
        assert!(out == want, "{v:?}: the response arrived intact");
    }
    let (r, _) = run.finish();
    let reasons: Vec<_> = r.entries.iter().map(|e| e.reason.as_str()).collect();
    assert_eq!(reasons, ["ok", "ok"]);
    assert!(r.bytes_in > 400_000, "{}", r.bytes_in);
}
