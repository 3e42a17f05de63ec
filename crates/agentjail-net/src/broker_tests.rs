//! Credential brokering through the proxy, attacked from the program's side: the secret
//! goes only to its host, only once, over verified TLS (or plain HTTP where the credential
//! says so), and every request says whether it carried it. Nothing leaves 127.0.0.1.

use super::tests::{exchange, start_rules, text, upstream, Run};
use super::*;
use crate::addr::Cidr;
use crate::broker::{Broker, Credential, Tls};
use crate::rules::{Allow, Limits};
use crate::test_tls;
use crate::wire::tests::client_hello;

const SECRET: &str = "s3cret-token-0123456789";

/// The TLS test server's answer: the request head it got, as the body (an upstream that
/// echoes the key back).
fn echo(head: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        head.len()
    )
    .into_bytes();
    r.extend_from_slice(head);
    r
}

fn cred(port: u16, tls: bool) -> Credential {
    Credential {
        name: "api".into(),
        host: "index.test".into(),
        port,
        header: "Authorization".into(),
        value: format!("Bearer {SECRET}"),
        tls,
    }
}

/// A proxy that lists `allow` (ports of 127.0.0.1 under names), with `cred` brokered and
/// trusting `ca` for its TLS.
fn run(allow: &[String], allow_http: bool, creds: Vec<Credential>, ca: Option<&[u8]>) -> Run {
    let rules = Rules {
        allow: allow.iter().map(|s| Allow::parse(s).unwrap()).collect(),
        allow_private: vec![Cidr::parse("127.0.0.1/32").unwrap()],
        allow_http,
        limits: Limits::default(),
        broker: Broker {
            credentials: creds,
            tls: ca.map(|pem| Tls::from_pem(pem).unwrap()),
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

fn count(hay: &str, needle: &str) -> usize {
    hay.to_ascii_lowercase()
        .matches(&needle.to_ascii_lowercase())
        .count()
}

#[test]
fn the_secret_goes_over_verified_tls_and_replaces_the_programs_own_header() {
    let up = test_tls::server(echo);
    let (ca, _) = test_tls::ca();
    let r = run(
        &[format!("index.test:{}", up.port)],
        false,
        vec![cred(up.port, true)],
        Some(&ca),
    );
    // The program's own Authorization, twice and in two spellings, and a body.
    let req = "POST http://index.test/v1/x?q=1 HTTP/1.1\r\nHost: index.test\r\nAuthorization: Bearer mine\r\nauthorization: forged\r\nContent-Length: 4\r\n\r\nbody";
    let out = text(&exchange(r.addr, req.as_bytes(), b""));
    assert!(out.starts_with("HTTP/1.1 200 OK"), "{out}");
    let sent = text(&up.got.lock().unwrap());
    assert!(sent.starts_with("POST /v1/x?q=1 HTTP/1.1\r\n"), "{sent}");
    assert_eq!(count(&sent, "authorization:"), 1, "{sent}");
    assert!(sent.contains(&format!("Authorization: Bearer {SECRET}\r\n")));
    assert!(!sent.contains("mine") && !sent.contains("forged"), "{sent}");
    assert_eq!(count(&sent, "host:"), 1, "{sent}");
    assert!(
        sent.contains(&format!("Host: index.test:{}\r\n", up.port)),
        "{sent}"
    );
    // The upstream echoed it: the program can read it (redaction is the record's business).
    assert!(out.contains(SECRET));
    let (rep, denied) = r.finish();
    assert!(denied.is_empty());
    let e = &rep.entries[0];
    assert!(e.allowed && e.reason == "ok", "{e:?}");
    assert_eq!(e.credential.as_deref(), Some("api"));
    assert_eq!((e.host.as_str(), e.port), ("index.test", up.port));
    assert!(e.bytes_out > 4 && e.bytes_in > 0, "{e:?}");
}

#[test]
fn an_untrusted_certificate_or_another_name_gets_nothing() {
    let up = test_tls::server(echo);
    let (ca, other) = test_tls::ca();
    // A CA that did not sign the upstream's certificate.
    let r = run(
        &[format!("index.test:{}", up.port)],
        false,
        vec![cred(up.port, true)],
        Some(&other),
    );
    let req = "GET http://index.test/ HTTP/1.1\r\nHost: index.test\r\n\r\n";
    let out = text(&exchange(r.addr, req.as_bytes(), b""));
    assert!(
        out.starts_with("HTTP/1.1 502") && out.contains("upstream_tls_failed"),
        "{out}"
    );
    let (rep, _) = r.finish();
    assert_eq!(*up.hits.lock().unwrap(), 1, "the handshake was tried");
    assert!(
        up.got.lock().unwrap().is_empty(),
        "and nothing was sent after it"
    );
    let e = &rep.entries[0];
    assert!(e.reason.starts_with("upstream_tls_failed:"), "{e:?}");
    assert!(
        e.reason.contains("UnknownIssuer") || e.reason.contains("issuer"),
        "{e:?}"
    );
    assert_eq!(e.credential, None);
    // A credential for a name the certificate does not carry (same address, trusted CA).
    let mut c = cred(up.port, true);
    c.host = "other.test".into();
    let r = run(
        &[format!("other.test:{}", up.port)],
        false,
        vec![c],
        Some(&ca),
    );
    let req = "GET http://other.test/ HTTP/1.1\r\nHost: other.test\r\n\r\n";
    let out = text(&exchange(r.addr, req.as_bytes(), b""));
    assert!(out.starts_with("HTTP/1.1 502"), "{out}");
    let (rep, _) = r.finish();
    assert!(
        rep.entries[0].reason.starts_with("upstream_tls_failed:"),
        "{:?}",
        rep.entries[0]
    );
    // No trust roots at all (a Broker built by hand without them): refused the same way.
    let r = run(
        &[format!("index.test:{}", up.port)],
        false,
        vec![cred(up.port, true)],
        None,
    );
    let out = text(&exchange(
        r.addr,
        req.replace("other", "index").as_bytes(),
        b"",
    ));
    assert!(out.contains("no trust roots"), "{out}");
    r.finish();
    // Not one request head reached the upstream in clear.
    assert!(!text(&up.got.lock().unwrap()).contains(SECRET));
}

#[test]
fn a_plain_upstream_gets_the_header_on_its_port() {
    let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec();
    let up = upstream(resp.clone(), 1);
    let r = run(
        &[format!("index.test:{}", up.port)],
        false,
        vec![cred(up.port, false)],
        None,
    );
    // The URL may name the credential's port instead of none.
    let req = format!(
        "GET http://index.test:{0}/ HTTP/1.1\r\nHost: index.test:{0}\r\nAUTHORIZATION: mine\r\n\r\n",
        up.port
    );
    assert_eq!(exchange(r.addr, req.as_bytes(), b""), resp);
    let (rep, _) = r.finish();
    let sent = text(&up.got.lock().unwrap());
    assert_eq!(count(&sent, "authorization:"), 1, "{sent}");
    assert!(sent.contains(&format!("Authorization: Bearer {SECRET}\r\n")));
    assert!(
        sent.contains(&format!("Host: index.test:{}\r\n", up.port)),
        "{sent}"
    );
    assert_eq!(rep.entries[0].credential.as_deref(), Some("api"));
}

#[test]
fn other_hosts_ports_and_smuggled_hosts_get_no_credential() {
    let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".to_vec();
    let up = upstream(resp, 1);
    let allow = [
        format!("index.test:{}", up.port),
        format!("other.test:{}", up.port),
    ];
    // allow_http: the other host is reachable in plain HTTP, without the credential.
    let r = run(&allow, true, vec![cred(up.port, false)], None);
    let p = up.port;
    let other =
        format!("GET http://other.test:{p}/ HTTP/1.1\r\nHost: other.test:{p}\r\nAuthorization: mine\r\n\r\n");
    exchange(r.addr, other.as_bytes(), b"");
    for (req, why) in [
        // The credential's host in the Host header, another in the URL, and the reverse.
        (format!("GET http://other.test:{p}/ HTTP/1.1\r\nHost: index.test\r\n\r\n"), "host_mismatch"),
        (format!("GET http://index.test/ HTTP/1.1\r\nHost: other.test:{p}\r\n\r\n"), "host_mismatch"),
        ("GET http://index.test/ HTTP/1.1\r\nHost: index.test\r\nHost: index.test\r\n\r\n".into(), "duplicate_header"),
        ("POST http://index.test/ HTTP/1.1\r\nHost: index.test\r\nTransfer-Encoding: chunked\r\n\r\n".into(), "request_transfer_encoding_unsupported"),
        ("GET http://index.test/ HTTP/1.1\r\nHost: index.test\r\nX: a\r\n Authorization: folded\r\n\r\n".into(), "bad_header"),
        ("GET http://index.test/ HTTP/1.1\r\n\r\n".into(), "host_header_missing"),
        // A port that is neither 80 nor the credential's: a plain request to a host:port
        // not listed.
        ("GET http://index.test:8080/ HTTP/1.1\r\nHost: index.test:8080\r\n\r\n".into(), "not_allowlisted"),
    ] {
        let out = text(&exchange(r.addr, req.as_bytes(), b""));
        assert!(out.starts_with("HTTP/1.1 403") && out.contains(why), "{req}: {out}");
    }
    let (rep, _) = r.finish();
    assert_eq!(
        up.hits.load(SeqCst),
        1,
        "only the other host's request went out"
    );
    let sent = text(&up.got.lock().unwrap());
    assert!(!sent.contains(SECRET), "{sent}");
    assert!(
        sent.contains("Authorization: mine\r\n"),
        "left as the program sent it"
    );
    assert!(
        rep.entries.iter().all(|e| e.credential.is_none()),
        "{:?}",
        rep.entries
    );
}

#[test]
fn without_allow_http_only_the_credentials_host_takes_plain_http() {
    let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".to_vec();
    let up = upstream(resp, 1);
    let p = up.port;
    let allow = [format!("index.test:{p}"), format!("other.test:{p}")];
    let r = run(&allow, false, vec![cred(p, false)], None);
    let req = format!("GET http://other.test:{p}/ HTTP/1.1\r\nHost: other.test:{p}\r\n\r\n");
    assert!(text(&exchange(r.addr, req.as_bytes(), b"")).contains("plain_http_denied"));
    r.finish();
    // A credential whose host the allowlist does not admit (the policy refuses it; an
    // action's narrowing empties the list): denied, nothing sent.
    let r = run(
        &[format!("other.test:{p}")],
        false,
        vec![cred(p, false)],
        None,
    );
    let req = "GET http://index.test/ HTTP/1.1\r\nHost: index.test\r\n\r\n";
    assert!(text(&exchange(r.addr, req.as_bytes(), b"")).contains("not_allowlisted"));
    let (rep, _) = r.finish();
    assert_eq!(rep.entries[0].credential, None);
    assert_eq!(up.hits.load(SeqCst), 0);
}

#[test]
fn a_redirect_comes_back_to_the_program_and_is_not_followed() {
    let resp =
        b"HTTP/1.1 302 Found\r\nLocation: http://other.test/steal\r\nContent-Length: 0\r\n\r\n"
            .to_vec();
    let up = upstream(resp.clone(), 1);
    let r = run(
        &[format!("index.test:{}", up.port)],
        false,
        vec![cred(up.port, false)],
        None,
    );
    let req = "GET http://index.test/ HTTP/1.1\r\nHost: index.test\r\n\r\n";
    assert_eq!(exchange(r.addr, req.as_bytes(), b""), resp);
    // The program's client follows it: another host, no credential, and not listed.
    let follow =
        "GET http://other.test/steal HTTP/1.1\r\nHost: other.test\r\nAuthorization: copied\r\n\r\n";
    assert!(text(&exchange(r.addr, follow.as_bytes(), b"")).contains("plain_http_denied"));
    let (rep, _) = r.finish();
    assert_eq!(up.hits.load(SeqCst), 1);
    assert_eq!(rep.entries.len(), 2);
    assert_eq!(rep.entries[1].credential, None);
}

#[test]
fn a_tunnel_to_the_credentials_host_carries_no_credential() {
    let hello = client_hello(Some("index.test"));
    let up = upstream(super::tests::server_reply(), hello.len());
    let r = run(
        &[format!("index.test:{}", up.port)],
        false,
        vec![cred(up.port, true)],
        None,
    );
    let req = format!("CONNECT index.test:{} HTTP/1.1\r\n\r\n", up.port);
    let out = exchange(r.addr, req.as_bytes(), &hello);
    assert!(text(&out).ends_with("server-bytes"));
    let (rep, _) = r.finish();
    assert_eq!(
        *up.got.lock().unwrap(),
        hello,
        "the bytes as the program sent them"
    );
    assert_eq!(rep.entries[0].credential, None);
}

/// An upstream that ends its response by closing the socket without TLS's close_notify:
/// the response still reaches the program whole, and the request ends `ok`.
#[test]
fn an_upstream_closing_without_close_notify_ends_the_response() {
    let up = test_tls::server_with(echo, false);
    let (ca, _) = test_tls::ca();
    let r = run(
        &[format!("index.test:{}", up.port)],
        false,
        vec![cred(up.port, true)],
        Some(&ca),
    );
    let req = "GET http://index.test/ HTTP/1.1\r\nHost: index.test\r\n\r\n";
    let out = text(&exchange(r.addr, req.as_bytes(), b""));
    assert!(
        out.starts_with("HTTP/1.1 200") && out.ends_with("\r\n\r\n"),
        "{out}"
    );
    let (rep, _) = r.finish();
    assert_eq!(rep.entries[0].reason, "ok", "{:?}", rep.entries[0]);
}
