//! A stand-in for the internet in the network allowlist's tests: an HTTP server on the
//! host's 127.0.0.1 (the test policies admit it with `allow_private = ["127.0.0.1/32"]`),
//! one thread per connection, a few fixed paths. Nothing leaves the machine.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::OnceLock;

/// The answer to `path`: `/ok` a short body, `/redirect` a redirect to a host no list
/// names, `/big` 300,000 bytes (past a 100 KiB `max_bytes_in`), `/echo` the request's head
/// (headers a brokered credential added included), anything else 404.
fn respond(path: &str, head: &[u8]) -> Vec<u8> {
    let ok = |body: &[u8]| {
        let mut r = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        r.extend_from_slice(body);
        r
    };
    match path {
        "/ok" => ok(b"OK-BODY"),
        "/redirect" => b"HTTP/1.1 302 Found\r\nLocation: http://evil.test/\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
        "/big" => ok(&vec![b'z'; 300_000]),
        "/echo" => ok(head),
        _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
    }
}

/// The labels `tests/common/net_attacks.py` prints whose outcome must be `blocked:`.
#[allow(dead_code)] // the http crate's tests include this file and run no attack script
pub const ATTACKS_BLOCKED: &[&str] = &[
    "direct_ip_via_proxy",
    "direct_connect",
    "ipv6_via_proxy",
    "ipv6_direct",
    "host_mismatch",
    "sni_mismatch",
    "connect_internal_port",
    "redirect_off_list",
    "metadata",
    "localhost_other_port",
    "https_off_list",
    "raw_socket",
    "udp_dns",
    "resolver",
    "bind_other_port",
    "over_limit",
];

/// An HTTP server on 127.0.0.1 answering each request with `respond(path, head)`, one
/// thread per connection; its port.
pub fn serve_http(respond: impl Fn(&str, &[u8]) -> Vec<u8> + Send + Sync + 'static) -> u16 {
    let respond = std::sync::Arc::new(respond);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let respond = respond.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut b = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut b) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&b[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&head);
                let path = text.split(' ').nth(1).unwrap_or("/").to_string();
                let _ = s.write_all(&respond(&path, &head));
            });
        }
    });
    port
}

/// The site's port (started once per test binary).
pub fn port() -> u16 {
    static P: OnceLock<u16> = OnceLock::new();
    *P.get_or_init(|| serve_http(respond))
}

/// The `[network]` section of a test policy that lists the site (plain HTTP, 127.0.0.1
/// admitted), with `extra` lines.
pub fn network_section(extra: &str) -> String {
    format!(
        "[network]\nmode = \"allowlist\"\nallow = [\"localhost:{}\"]\nallow_private = [\"127.0.0.1/32\"]\nallow_http = true\n{extra}\n",
        port()
    )
}

/// policies/default.toml's text (`default_toml`) made into an allowlist policy for the
/// site: the `[network]` of [`network_section`], urllib allowed by the static check,
/// URL literals allowed, the `network` syscall group, 20 s of wall time for a fetch, and
/// `marker` in the interpreter's argv (a `-W` filter that matches nothing) so the test
/// finds the jails' processes on the host.
pub fn default_policy_text(default_toml: &str, marker: &str) -> String {
    let start = default_toml.find("[network]").expect("[network]");
    let end = start + default_toml[start..].find("[seccomp]").expect("[seccomp]");
    let mut text = format!(
        "{}{}\n{}",
        &default_toml[..start],
        network_section(""),
        &default_toml[end..]
    );
    for (from, to) in [
        (
            "allowed_imports = [\"json\", \"statistics\"]".to_string(),
            "allowed_imports = [\"json\", \"urllib\", \"urllib.request\"]".to_string(),
        ),
        (
            "\"connect\", \"request\", \"urlopen\",".into(),
            "\"connect\",".into(),
        ),
        (
            "deny_url_literals = true".into(),
            "deny_url_literals = false".into(),
        ),
        (
            "\"pipes\", \"exec\", \"system_info\",\n]".into(),
            "\"pipes\", \"exec\", \"system_info\", \"network\",\n]".into(),
        ),
        ("wall_time_ms = 2000".into(), "wall_time_ms = 20000".into()),
        ("cpu_time_ms = 2000".into(), "cpu_time_ms = 10000".into()),
        (
            "python_args = [\"-I\", \"-S\", \"-B\", \"-X\", \"utf8\"]".into(),
            format!(
                "python_args = [\"-I\", \"-S\", \"-B\", \"-X\", \"utf8\", \"-Wignore:{marker}\"]"
            ),
        ),
    ] {
        assert!(
            text.contains(&from),
            "policies/default.toml no longer has {from:?}"
        );
        text = text.replacen(&from, &to, 1);
    }
    text
}

/// A program (for `run`, output mode json) that fetches the site's `/ok` and then a host no
/// list names, and prints both outcomes as one JSON object: `{"ok": body, "other": why}`.
pub fn fetch_both_code() -> String {
    format!(
        "import json, urllib.request\nok = urllib.request.urlopen('http://localhost:{}/ok', timeout=20).read().decode()\ntry:\n    urllib.request.urlopen('http://evil.test/', timeout=20)\n    other = 'reached'\nexcept Exception as e:\n    other = str(e)\nprint(json.dumps({{'ok': ok, 'other': other}}))\n",
        port()
    )
}

/// policies/net.toml's text (`shipped`) pointed at the site: `allow` names it,
/// `allow_private` admits 127.0.0.1 and `allow_http` is on; every other line as shipped.
#[allow(dead_code)] // not every test binary that includes this file uses it
pub fn net_policy_text(shipped: &str) -> String {
    let mut text = shipped.to_string();
    for (from, to) in [
        (
            "allow = [\"example.com:443\"]".to_string(),
            format!("allow = [\"localhost:{}\"]", port()),
        ),
        (
            "allow_private = []".into(),
            "allow_private = [\"127.0.0.1/32\"]".into(),
        ),
        ("allow_http = false".into(), "allow_http = true".into()),
    ] {
        assert!(
            text.contains(&from),
            "policies/net.toml no longer has {from:?}"
        );
        text = text.replacen(&from, &to, 1);
    }
    text
}

/// A program (for `run`, output mode json) that fetches the site's `/ok` with
/// `urllib.request`, with `http.client` through the proxy, with `requests` where the jail's
/// interpreter has it (else `"missing"`), then `localhost:9`, a port no list names, and
/// prints `{"urllib", "http_client", "requests", "other_port"}`.
#[allow(dead_code)]
pub fn net_fetch_code() -> String {
    format!(
        r#"import json, urllib.request, urllib.error, http.client
url = 'http://localhost:{port}/ok'
out = {{'urllib': urllib.request.urlopen(url, timeout=20).read().decode()}}
c = http.client.HTTPConnection('127.0.0.1', 3128, timeout=20)
c.request('GET', url)
out['http_client'] = c.getresponse().read().decode()
c.close()
try:
    import requests
except ImportError:
    out['requests'] = 'missing'
else:
    out['requests'] = requests.get(url, timeout=20).text
try:
    urllib.request.urlopen('http://localhost:9/', timeout=20)
    out['other_port'] = 'reached'
except urllib.error.HTTPError as e:
    out['other_port'] = str(e)
print(json.dumps(out))
"#,
        port = port()
    )
}

/// Whether the host's /usr/bin/python3 can import `requests` (then the jail's can: the
/// policy binds /usr read-only and runs `site`).
#[allow(dead_code)]
pub fn host_has_requests() -> bool {
    std::process::Command::new("/usr/bin/python3")
        .args(["-I", "-c", "import requests"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
