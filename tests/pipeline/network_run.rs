//! `agentjail run` under a network allowlist, as root and as nobody: the checked Python
//! program fetches from a listed host (a test server on host loopback, admitted by
//! `allow_private`), every other host is refused by the proxy, and the record's `network`
//! lists both. The attacks themselves are tests/jail/network.rs (through `exec`).

use crate::common::serve;
use crate::common::*;
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpListener;

/// One fixed answer per connection, on 127.0.0.1.
fn site() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\nConnection: close\r\n\r\nfetched",
            );
        }
    });
    port
}

fn policy(port: u16) -> std::path::PathBuf {
    policy_for(&[port])
}

/// The default policy with an allowlist naming `localhost` on each of `ports`.
fn policy_for(ports: &[u16]) -> std::path::PathBuf {
    policy_with(ports, "")
}

/// [`policy_for`] with `extra` lines in `[network]`.
fn policy_with(ports: &[u16], extra: &str) -> std::path::PathBuf {
    let port = ports[0];
    let allow: Vec<String> = ports.iter().map(|p| format!("\"localhost:{p}\"")).collect();
    let allow = allow.join(", ");
    let base = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/policies/default.toml"
    ))
    .unwrap();
    let start = base.find("[network]").unwrap();
    let end = start + base[start..].find("[seccomp]").unwrap();
    let net = format!(
        "[network]\nmode = \"allowlist\"\nallow = [{allow}]\nallow_private = [\"127.0.0.1/32\"]\nallow_http = true\n{extra}\n\n"
    );
    let text = format!("{}{net}{}", &base[..start], &base[end..])
        .replace(
            "allowed_imports = [\"json\", \"statistics\"]",
            "allowed_imports = [\"json\", \"urllib\", \"urllib.request\"]",
        )
        .replace("\"connect\", \"request\", \"urlopen\",", "\"connect\",")
        .replace("deny_url_literals = true", "deny_url_literals = false")
        .replace(
            "\"pipes\", \"exec\", \"system_info\",\n]",
            "\"pipes\", \"exec\", \"system_info\", \"network\",\n]",
        )
        .replace("wall_time_ms = 2000", "wall_time_ms = 20000")
        .replace("cpu_time_ms = 2000", "cpu_time_ms = 10000");
    let tag = extra.len();
    shared_file(&format!("net-run-{port}-{}-{tag}.toml", ports.len()), &text)
}

#[test]
fn run_fetches_from_the_list_and_records_every_request() {
    let port = site();
    let pol = policy(port);
    let code = format!(
        "import json, urllib.request\nok = urllib.request.urlopen('http://localhost:{port}/x', timeout=10).read().decode()\ntry:\n    urllib.request.urlopen('http://evil.test/', timeout=10)\n    other = 'reached'\nexcept Exception as e:\n    other = str(e)\nprint(json.dumps({{'ok': ok, 'other': other}}))\n"
    );
    let action = json!({"id": "net", "language": "python", "entrypoint": "main.py", "code": code, "input_payload": {}});
    let bytes = serde_json::to_vec(&action).unwrap();
    for who in variants() {
        let r = run_as(who, &["--policy", pol.to_str().unwrap()], &bytes, None);
        assert_eq!(r.stop_reason(), "success", "{who:?}: {:#}", r.record);
        assert_eq!(r.record["output"]["ok"], "fetched");
        assert_eq!(r.record["output"]["other"], "HTTP Error 403: Forbidden");
        let reqs = r.record["network"]["requests"].as_array().unwrap();
        assert_eq!(reqs.len(), 2, "{reqs:#?}");
        assert_eq!(
            (reqs[0]["host"].as_str(), reqs[0]["allowed"].as_bool()),
            (Some("localhost"), Some(true))
        );
        assert_eq!(reqs[1]["host"], "evil.test");
        assert_eq!(reqs[1]["reason"], "not_allowlisted");
        // A "denied" network hint narrows the list to nothing for this action.
        let mut narrowed = action.clone();
        narrowed["policy_hints"] = json!({"network_access": "denied"});
        let r = run_as(
            who,
            &["--policy", pol.to_str().unwrap()],
            &serde_json::to_vec(&narrowed).unwrap(),
            None,
        );
        assert!(
            r.stop_reason().starts_with("code_runtime_error"),
            "{who:?}: {:#}",
            r.record
        );
        let net = &r.record["network"];
        assert_eq!(net["narrowed_by_hint"], true);
        assert_eq!(net["requests"][0]["reason"], "not_allowlisted");
    }
}

/// One JSON line to `serve`, one back.
/// Run `action` on a `serve --zygote` connection until a job ran in a zygote's jail (the
/// first may start cold while the template warms up), at most 30 jobs; each must succeed
/// and pass `check`.
pub(crate) fn until_a_zygote_job(
    f: &mut std::io::BufReader<std::os::unix::net::UnixStream>,
    action: &serde_json::Value,
    who: Who,
    mut check: impl FnMut(&serde_json::Value),
) {
    for n in 0..30 {
        let r = &ask(f, json!({"id": n, "op": "run", "action": action}))["record"];
        assert_eq!(r["stop_reason"], "success", "{who:?}: job {n}: {r:#}");
        check(r);
        let zygote = r["enforcement"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["control"] == "address_space_layout");
        if zygote {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("{who:?}: no job ran in a zygote's jail");
}

pub(crate) fn ask(
    f: &mut std::io::BufReader<std::os::unix::net::UnixStream>,
    req: serde_json::Value,
) -> serde_json::Value {
    use std::io::BufRead;
    let mut line = serde_json::to_vec(&req).unwrap();
    line.push(b'\n');
    f.get_mut().write_all(&line).unwrap();
    let mut answer = String::new();
    f.read_line(&mut answer).unwrap();
    serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer:?}"))
}

/// A running `serve`: stopped with SIGTERM (it ends its jails and removes their cgroups)
/// and reaped when dropped, a failed assertion included.
pub(crate) struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let pid = self.0.id().to_string();
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status();
        let _ = self.0.wait();
    }
}

/// `agentjail serve` on a socket in `dir` as `who`, and a connection to it.
pub(crate) fn serve_on(
    who: Who,
    dir: &std::path::Path,
    pol: &std::path::Path,
    extra: &[&str],
) -> (Server, std::io::BufReader<std::os::unix::net::UnixStream>) {
    let sock = dir.join("s.sock");
    let server = serve::command(who, agentjail_path())
        .args(["serve", "--policy", pol.to_str().unwrap(), "--socket"])
        .arg(&sock)
        .args(extra)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let server = Server(server);
    let s = (0..1500)
        .find_map(|_| {
            std::os::unix::net::UnixStream::connect(&sock)
                .ok()
                .or_else(|| {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    None
                })
        })
        .expect("serve listens");
    (server, std::io::BufReader::new(s))
}

#[test]
fn a_zygote_jail_hands_its_listener_over() {
    if !zygote_built() {
        return;
    }
    let port = site();
    let pol = policy(port);
    let code = format!("import json, urllib.request as u\nprint(json.dumps({{'ok': u.urlopen('http://localhost:{port}/', timeout=10).read().decode()}}))\n");
    let action = json!({"id": "z", "language": "python", "entrypoint": "main.py", "code": code, "input_payload": {}});
    for who in variants() {
        let dir = serve::scratch("netz");
        let (_server, mut f) = serve_on(who, dir.path(), &pol, &["--zygote", "--pool", "1"]);
        // Every job must fetch; the first ones may start cold while the template warms up,
        // and one must come from the zygote.
        until_a_zygote_job(&mut f, &action, who, |r| {
            assert_eq!(r["output"]["ok"], "fetched");
            assert_eq!(r["network"]["requests"][0]["reason"], "ok");
        });
    }
}

#[test]
fn a_session_keeps_its_proxy_and_each_call_records_its_requests() {
    let port = site();
    let pol = policy(port);
    for who in variants() {
        let dir = serve::scratch("net");
        let (_server, mut f) = serve_on(
            who,
            dir.path(),
            &pol,
            &["--pool", "0", "--session-pool", "0"],
        );
        let sid = ask(&mut f, json!({"id": "s", "op": "session_start"}))["session"].clone();
        assert!(sid.is_string(), "{who:?}");
        let fetch = format!("import urllib.request as u\nb = u.urlopen('http://localhost:{port}/', timeout=10).read().decode()\nb");
        let r = &ask(
            &mut f,
            json!({"id": "1", "op": "session_exec", "session": sid, "code": fetch}),
        )["record"];
        assert_eq!(r["stop_reason"], "success", "{who:?}: {r:#}");
        assert_eq!(r["value"], "'fetched'");
        assert_eq!(r["network"]["requests"][0]["reason"], "ok");
        let evil = "try:\n    u.urlopen('http://evil.test/', timeout=10)\nexcept Exception as e:\n    x = str(e)\nx";
        let r = &ask(
            &mut f,
            json!({"id": "2", "op": "session_exec", "session": sid, "code": evil}),
        )["record"];
        let reqs = r["network"]["requests"].as_array().unwrap();
        assert_eq!(reqs.len(), 1, "only this call's requests: {reqs:#?}");
        assert_eq!(
            (reqs[0]["host"].as_str(), reqs[0]["reason"].as_str()),
            (Some("evil.test"), Some("not_allowlisted"))
        );
        assert_eq!(
            r["network"]["request_count"], 2,
            "the session's count so far"
        );
        assert_eq!(
            ask(
                &mut f,
                json!({"id": "c", "op": "session_close", "session": sid})
            )["closed"],
            true
        );
    }
}

/// A session started with `network_access: "denied"` is held to it as a run is: the
/// allowlist narrows to nothing and a request to a listed host is denied and recorded.
#[test]
fn a_session_with_the_denied_hint_gets_no_network() {
    let port = site();
    let pol = policy(port);
    for who in variants() {
        let dir = serve::scratch("netd");
        let (_server, mut f) = serve_on(
            who,
            dir.path(),
            &pol,
            &["--pool", "0", "--session-pool", "0"],
        );
        let start =
            json!({"id": "s", "op": "session_start", "policy_hints": {"network_access": "denied"}});
        let sid = ask(&mut f, start)["session"].clone();
        assert!(sid.is_string(), "{who:?}");
        let fetch = format!("import urllib.request as u\ntry:\n    x = u.urlopen('http://localhost:{port}/', timeout=10).read().decode()\nexcept Exception as e:\n    x = 'refused'\nx");
        let r = &ask(
            &mut f,
            json!({"id": "1", "op": "session_exec", "session": sid, "code": fetch}),
        )["record"];
        assert_ne!(r["value"], "'fetched'", "{who:?}: {r:#}");
        assert_eq!(r["network"]["narrowed_by_hint"], true, "{who:?}: {r:#}");
        let reqs = r["network"]["requests"].as_array().unwrap();
        assert_eq!(reqs.len(), 1, "{who:?}: {reqs:#?}");
        assert_eq!(reqs[0]["allowed"], false, "{who:?}: {reqs:#?}");
    }
}

/// A listed service on 127.0.0.1 that reads one TLS record (the ClientHello), answers it
/// with `answer` at once, then keeps everything it gets until the proxy closes; each
/// connection's bytes come through the channel once it closed.
fn service(answer: &'static [u8]) -> (u16, std::sync::mpsc::Receiver<Vec<u8>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (tx, seen) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let kept = tx.clone();
            std::thread::spawn(move || {
                s.set_read_timeout(Some(std::time::Duration::from_secs(60)))
                    .unwrap();
                let mut got = vec![0u8; 5];
                if s.read_exact(&mut got).is_ok() {
                    let len = u16::from_be_bytes([got[3], got[4]]) as usize;
                    got.resize(5 + len, 0);
                    if s.read_exact(&mut got[5..]).is_ok() {
                        let _ = s.write_all(answer);
                        let _ = s.read_to_end(&mut got);
                    }
                }
                let _ = kept.send(got);
            });
        }
    });
    (port, seen)
}

/// The jail's side of the attack: a real ClientHello for `localhost` (Python's ssl module
/// makes it), sent in a CONNECT tunnel to the listed port, then plain-text lines, with the
/// hello in one write (`same`) or after the service answered (`later`).
const PLAIN_IN_TUNNEL: &str = r#"
import socket, ssl, sys
def hello():
    ctx = ssl.create_default_context()
    i, o = ssl.MemoryBIO(), ssl.MemoryBIO()
    t = ctx.wrap_bio(i, o, server_hostname='localhost')
    try:
        t.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return o.read()
def tunnel(port, how, lines):
    s = socket.create_connection(('127.0.0.1', 3128), timeout=30)
    s.sendall(b'CONNECT localhost:%d HTTP/1.1\r\n\r\n' % port)
    head = b''
    while not head.endswith(b'\r\n\r\n'):
        b = s.recv(1)
        if not b:
            break
        head += b
    assert head.startswith(b'HTTP/1.1 200'), head
    h = hello()
    if how == 'same':
        s.sendall(h + lines)
    else:
        s.sendall(h)
        s.recv(5)
        try:
            s.sendall(lines)
        except OSError:
            pass
    try:
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    got = b''
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except OSError:
        pass
    print('MARK', port, how, len(h), flush=True)
tls_port, line_port = int(sys.argv[1]), int(sys.argv[2])
tunnel(tls_port, 'same', b'SET k same\r\n')
tunnel(tls_port, 'later', b'SET k later\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n')
tunnel(line_port, 'same', b'\x17\x03\x03\x00\x0e\r\nSET k rec\r\nSET k line\r\n')
"#;

/// Plain text in a CONNECT tunnel after a valid ClientHello (the red team's attack): a
/// listed service gets the ClientHello and nothing else, from a program in the real jail,
/// as root and as nobody; the record names how each tunnel ended: `not_tls` where the
/// program sent the text to a service that answered as TLS does, `upstream_not_tls` where
/// the service answered as a line protocol does (even TLS-framed lines stay out).
#[test]
fn plain_text_never_rides_a_connect_tunnel() {
    // A ServerHello's record header and the start of its message: all the proxy reads.
    let (tls_port, tls_seen) = service(b"\x16\x03\x03\x00\x04\x02\x00\x00\x00");
    let (line_port, line_seen) = service(b"-ERR unknown command\r\n");
    let pol = policy_for(&[tls_port, line_port]);
    let (a, b) = (tls_port.to_string(), line_port.to_string());
    for who in variants() {
        let r = jail(
            who,
            &["--policy", pol.to_str().unwrap(), "--time-limit", "60"],
            &[PY, "-I", "-S", "-c", PLAIN_IN_TUNNEL, &a, &b],
        );
        assert_eq!(r.stdout.matches("MARK ").count(), 3, "{who:?}: {r:#?}");
        // Each service got one whole TLS record (the ClientHello) per tunnel, no more.
        let wait = std::time::Duration::from_secs(60);
        let seen = [&tls_seen, &tls_seen, &line_seen].map(|s| s.recv_timeout(wait).unwrap());
        for got in &seen {
            let len = u16::from_be_bytes([got[3], got[4]]) as usize;
            assert_eq!(got[0], 0x16, "{who:?}");
            assert_eq!(
                got.len(),
                5 + len,
                "{who:?}: the service got more than the ClientHello: {:?}",
                String::from_utf8_lossy(&got[5 + len.min(got.len() - 5)..])
            );
            assert!(!got.windows(5).any(|w| w == b"SET k"), "{who:?}");
        }
        let reqs = r.record.as_ref().expect("record")["network"]["requests"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let ends: Vec<_> = reqs
            .iter()
            .map(|e| (e["allowed"].as_bool(), e["reason"].as_str()))
            .collect();
        assert_eq!(
            ends,
            [
                (Some(true), Some("not_tls")),
                (Some(true), Some("not_tls")),
                (Some(true), Some("upstream_not_tls")),
            ],
            "{who:?}: {reqs:#?}"
        );
    }
}

/// A burst of connects to the proxy, as fast as one process makes them (each closed once
/// 40 are open: the jail's open-files limit), and the jail's own TCP counters before and
/// after: `ListenOverflows` counts each connect the listen queue had no room for (its SYN
/// dropped, the program's kernel retrying it 1 s later).
const BURST: &str = r#"
import collections, socket, sys
def overflows():
    t = open('/proc/net/netstat').read().split('\n')
    return int(dict(zip(t[0].split(), t[1].split()))['ListenOverflows'])
n = int(sys.argv[1])
before = overflows()
q = collections.deque()
for i in range(n):
    s = socket.socket()
    s.setblocking(False)
    s.connect_ex(('127.0.0.1', 3128))
    q.append(s)
    if len(q) > 40:
        q.popleft().close()
print('BURST', n, 'overflows', overflows() - before, flush=True)
"#;

/// A burst of as many connects as the policy admits (300: past the 64 the jail's setup
/// listens with) finds room for each in the proxy's listen queue, sized to the connection
/// limit: the jail's `ListenOverflows` does not move, so no connect waited for a SYN
/// retransmit. Event-counted, not timed.
#[test]
fn a_burst_of_connects_within_the_limit_overflows_nothing() {
    let port = site();
    let pol = policy_with(&[port], "max_connections = 300\nmax_requests = 1000");
    for who in variants() {
        let r = jail(
            who,
            &["--policy", pol.to_str().unwrap(), "--time-limit", "60"],
            &[PY, "-I", "-S", "-c", BURST, "300"],
        );
        assert!(
            r.stdout.contains("BURST 300 overflows 0\n"),
            "{who:?}: {r:#?}"
        );
    }
}

/// The shipped policies/net.toml, its allowlist pointed at the test site: a program fetches
/// with `urllib.request`, `http.client` (through the proxy) and, where the host has it,
/// `requests`, all through `agentjail run` with no other edit to the policy; a port no list
/// names is refused, and the record's `network.requests` lists every request with its
/// verdict.
#[test]
fn the_shipped_net_policy_fetches_through_run() {
    use crate::common::site;
    let shipped =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/policies/net.toml"))
            .expect("policies/net.toml");
    let pol = shared_file("net-shipped.toml", &site::net_policy_text(&shipped));
    let action = json!({"id": "net", "language": "python", "entrypoint": "main.py",
                        "code": site::net_fetch_code(), "input_payload": {}});
    let bytes = serde_json::to_vec(&action).unwrap();
    let requests = site::host_has_requests();
    for who in variants() {
        let r = run_as(who, &["--policy", pol.to_str().unwrap()], &bytes, None);
        assert_eq!(r.stop_reason(), "success", "{who:?}: {:#}", r.record);
        let out = &r.record["output"];
        assert_eq!(out["urllib"], "OK-BODY", "{who:?}");
        assert_eq!(out["http_client"], "OK-BODY", "{who:?}");
        assert_eq!(
            out["requests"],
            if requests { "OK-BODY" } else { "missing" }
        );
        assert_eq!(out["other_port"], "HTTP Error 403: Forbidden");
        let verdicts: Vec<(String, u64, bool, String)> = r.record["network"]["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["host"].as_str().unwrap_or("").to_string(),
                    e["port"].as_u64().unwrap_or(0),
                    e["allowed"].as_bool().unwrap_or(false),
                    e["reason"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        let site = (
            "localhost".to_string(),
            u64::from(site::port()),
            true,
            "ok".to_string(),
        );
        let mut want = vec![site.clone(), site.clone()];
        if requests {
            want.push(site);
        }
        want.push(("localhost".into(), 9, false, "not_allowlisted".into()));
        assert_eq!(verdicts, want, "{who:?}: {:#}", r.record["network"]);
    }
}
