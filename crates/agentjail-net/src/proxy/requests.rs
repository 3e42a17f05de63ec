//! The two kinds of request once the head is read: a CONNECT tunnel (decide, answer 200,
//! check the ClientHello's SNI, connect to the checked address) and an absolute-form
//! plain-HTTP request (its `Host`, its body's length, the upstream head rewritten with a
//! brokered credential's header, TLS when the credential asks for it). Separate from the
//! accept loop and the log (`proxy.rs`) and from the byte relays (`relay.rs`): this is
//! where each request is judged before a byte of it goes upstream.

use super::relay::{relay, relay_request};
use super::{deny, log, refuse, track, Entry, Shared, Tracked};
use crate::broker::Credential;
use crate::decide::decide;
use crate::rules::normalize;
use crate::wire::{self, First, Head};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::Ordering::SeqCst;
use std::time::Instant;

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
pub(super) fn tunnel(
    sh: &Shared,
    client: TcpStream,
    head: &Head,
    rest: Vec<u8>,
    mut e: Entry,
    t0: Instant,
) {
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
pub(super) fn plain(
    sh: &Shared,
    client: TcpStream,
    head: &Head,
    rest: Vec<u8>,
    mut e: Entry,
    t0: Instant,
) {
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
        Some(t) => t.connect(&c.host, up).map_err(|e| e.to_string()),
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
