//! The network allowlist (`[network] mode = "allowlist"`), attacked from inside the jail,
//! as root and as nobody. A test server on the host's loopback stands in for the internet
//! (the policy lists 127.0.0.1/32 in `allow_private` for it); nothing leaves the machine.
//! Every request that reaches the proxy must be in the record with its verdict; what never
//! reaches it (direct connects, raw sockets, UDP, abstract unix sockets) is refused by the
//! kernel inside the jail's own network namespace.

use crate::common::*;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The test's "internet": paths → responses, one thread per connection.
struct Site {
    port: u16,
}

fn respond(path: &str, files: &std::collections::HashMap<String, Vec<u8>>) -> Vec<u8> {
    let ok = |ctype: &str, body: &[u8]| {
        let mut r = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        r.extend_from_slice(body);
        r
    };
    match path {
        "/ok" => ok("text/plain", b"OK-BODY"),
        "/redirect" => b"HTTP/1.1 302 Found\r\nLocation: http://evil.test/\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
        "/big" => ok("application/octet-stream", &vec![b'z'; 300_000]),
        p => match files.get(p) {
            Some(b) if p.ends_with(".whl") => ok("application/octet-stream", b),
            Some(b) => ok("text/html", b),
            None => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
        },
    }
}

fn site() -> &'static Site {
    static S: OnceLock<Site> = OnceLock::new();
    S.get_or_init(|| {
        let files = index_files();
        Site {
            port: site::serve_http(move |path, _| respond(path, &files)),
        }
    })
}

/// A simple index (PEP 503) with one hand-made wheel, made by Python's zipfile in memory:
/// path → bytes (no file is written).
fn index_files() -> std::collections::HashMap<String, Vec<u8>> {
    let script = r#"
import zipfile, hashlib, base64, io, json
name = 'tinypkg-0.1-py3-none-any.whl'
files = {'tinypkg/__init__.py': b'X = 1\n',
 'tinypkg-0.1.dist-info/METADATA': b'Metadata-Version: 2.1\nName: tinypkg\nVersion: 0.1\n',
 'tinypkg-0.1.dist-info/WHEEL': b'Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n'}
rec = ''.join('%s,sha256=%s,%d\n' % (k, base64.urlsafe_b64encode(hashlib.sha256(v).digest()).rstrip(b'=').decode(), len(v)) for k, v in files.items())
files['tinypkg-0.1.dist-info/RECORD'] = (rec + 'tinypkg-0.1.dist-info/RECORD,,\n').encode()
buf = io.BytesIO()
with zipfile.ZipFile(buf, 'w') as z:
    for k, v in files.items(): z.writestr(k, v)
whl = buf.getvalue()
index = '<a href="/packages/%s#sha256=%s">%s</a>\n' % (name, hashlib.sha256(whl).hexdigest(), name)
print(json.dumps({'/packages/' + name: base64.b64encode(whl).decode(),
                  '/simple/tinypkg/': base64.b64encode(index.encode()).decode()}))
"#;
    let out = std::process::Command::new(PY)
        .args(["-c", script])
        .output()
        .unwrap();
    assert!(out.status.success(), "could not make the test index");
    let m: std::collections::HashMap<String, String> = serde_json::from_slice(&out.stdout).unwrap();
    use base64::Engine;
    m.into_iter()
        .map(|(k, v)| {
            (
                k,
                base64::engine::general_purpose::STANDARD.decode(v).unwrap(),
            )
        })
        .collect()
}

/// The attack policy: the default's, with the allowlist naming the test site.
fn policy(extra: &str, groups: &str) -> PathBuf {
    let base = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/policies/default.toml"
    ))
    .unwrap();
    let port = site().port;
    let net = format!(
        "[network]\nmode = \"allowlist\"\nallow = [\"localhost:{port}\"]\nallow_private = [\"127.0.0.1/32\"]\nallow_http = true\n{extra}\n"
    );
    let start = base.find("[network]").unwrap();
    let end = start + base[start..].find("[seccomp]").unwrap();
    let mut text = format!("{}{net}\n{}", &base[..start], &base[end..]);
    text = text.replace(
        "\"pipes\", \"exec\", \"system_info\",\n]",
        &format!("\"pipes\", \"exec\", \"system_info\", \"network\"{groups},\n]"),
    );
    text = text.replace("errno_syscalls = []", "errno_syscalls = [\"sendfile\"]");
    let name = format!("net-{:x}.toml", hash(&text));
    shared_file(&name, &text)
}

fn hash(s: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

fn run_py(who: Who, pol: &std::path::Path, flags: &[&str], code: &str) -> Run {
    let mut f = vec![
        "--policy",
        pol.to_str().unwrap(),
        "--memory-limit",
        "512MiB",
        "--time-limit",
        "60",
    ];
    f.extend_from_slice(flags);
    jail(who, &f, &[PY, "-I", "-S", "-c", code])
}

fn requests(r: &Run) -> Vec<serde_json::Value> {
    let rec = r.record.as_ref().expect("record");
    rec["network"]["requests"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// One line per attack: `label outcome`, where outcome is `ok:<detail>` when the payload
/// got through and `blocked:<detail>` otherwise.
const ATTACKS: &str = include_str!("../common/net_attacks.py");

const EXPECTED_DENIALS: &[(&str, &str)] = &[
    ("127.0.0.1", "ip_not_listed"),
    ("[::1]", "ip_not_listed"),
    ("localhost", "host_mismatch"),
    ("localhost", "sni_mismatch"),
    ("localhost", "not_allowlisted"),
    ("evil.test", "not_allowlisted"),
    ("169.254.169.254", "ip_not_listed"),
    ("example.com", "not_allowlisted"),
];

#[test]
fn attacks_from_inside_are_denied_and_recorded() {
    let pol = policy("max_bytes_in = \"100KiB\"", "");
    let port = site().port.to_string();
    let code = ATTACKS.replace(
        "int(sys.argv[1]) if len(sys.argv) > 1 else int(os.environ['SITE_PORT'])",
        &port,
    );
    for who in variants() {
        let r = run_py(who, &pol, &[], &code);
        let lines: Vec<&str> = r.stdout.lines().collect();
        let outcome = |label: &str| {
            lines
                .iter()
                .find_map(|l| l.strip_prefix(&format!("{label} ")))
                .unwrap_or_else(|| panic!("{who:?}: no outcome for {label}: {r:#?}"))
                .to_string()
        };
        assert!(
            outcome("allowed").contains("OK-BODY"),
            "{who:?}: the listed host must work: {r:#?}"
        );
        for label in site::ATTACKS_BLOCKED {
            let o = outcome(label);
            assert!(
                o.starts_with("blocked:"),
                "{who:?}: {label} got through: {o}\n{r:#?}"
            );
        }
        let reqs = requests(&r);
        for (host, reason) in EXPECTED_DENIALS {
            assert!(
                reqs.iter()
                    .any(|e| e["host"] == *host && e["reason"] == *reason && e["allowed"] == false),
                "{who:?}: no denied {host} ({reason}) in the record: {reqs:#?}"
            );
        }
        let big = reqs
            .iter()
            .find(|e| e["reason"] == "bytes_in_limit")
            .expect("the over-limit transfer is recorded");
        assert!(big["bytes_in"].as_u64().unwrap() <= 100 * 1024, "{big}");
        let net = &r.record.as_ref().unwrap()["network"];
        assert!(net["bytes_in"].as_u64().unwrap() <= 100 * 1024);
        assert_eq!(r.stop_reason(), Some("success"), "{who:?}: {r:#?}");
    }
}

#[test]
fn limits_hold_across_processes_of_one_run() {
    // Two requests in all: the first process makes one and exits; the second's second
    // request is over the run's limit, whoever makes it.
    let pol = policy("max_requests = 2", ", \"process_spawn\"");
    let port = site().port;
    let one = format!(
        "import urllib.request as u\ntry:\n    print('R', len(u.urlopen('http://localhost:{port}/ok', timeout=20).read()))\nexcept Exception as e:\n    print('E', e)\n"
    );
    let script = format!("{PY} -I -S -c \"$0\" && {PY} -I -S -c \"$0\" && {PY} -I -S -c \"$0\"");
    for who in variants() {
        let pf = pol.to_str().unwrap();
        let r = jail(
            who,
            &["--policy", pf, "--memory-limit", "512MiB"],
            &["/bin/sh", "-c", &script, &one],
        );
        assert_eq!(r.stdout.matches("R 7").count(), 2, "{who:?}: {r:#?}");
        assert!(r.stdout.contains("E HTTP Error 403"), "{who:?}: {r:#?}");
        let reasons: Vec<String> = requests(&r)
            .iter()
            .map(|e| e["reason"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(reasons, ["ok", "ok", "request_limit"], "{who:?}");
    }
}

#[test]
fn a_denial_stops_the_run_when_the_policy_says_so() {
    let pol = policy("deny_is_stop = true", "");
    let code = "import urllib.request as u\ntry:\n    u.urlopen('http://evil.test/', timeout=20)\nexcept Exception as e:\n    print('after', e)\nimport time\ntime.sleep(30)\nprint('still running')\n";
    for who in variants() {
        let r = run_py(who, &pol, &[], code);
        assert_eq!(
            r.stop_reason(),
            Some("code_network_denied:evil.test"),
            "{who:?}: {r:#?}"
        );
        assert_eq!(r.code, 124, "{who:?}");
        assert!(!r.stdout.contains("still running"));
    }
}

#[test]
fn pip_downloads_from_the_listed_index_only() {
    let pol = policy("", ", \"process_spawn\"");
    let port = site().port;
    let pip = |who: Who, index: &str| {
        let pf = pol.to_str().unwrap();
        jail(
            who,
            &[
                "--policy",
                pf,
                "--memory-limit",
                "512MiB",
                "--time-limit",
                "60",
                "--output-limit",
                "65536",
            ],
            &[
                PY,
                "-m",
                "pip",
                "download",
                "--no-cache-dir",
                "--disable-pip-version-check",
                "--no-deps",
                "--retries",
                "0",
                "--timeout",
                "20",
                "--trusted-host",
                "pypi.test",
                "--index-url",
                index,
                "-d",
                "/tmp/dl",
                "tinypkg",
            ],
        )
    };
    for who in variants() {
        let r = pip(who, &format!("http://localhost:{port}/simple"));
        assert_eq!(r.code, 0, "{who:?}: {r:#?}");
        assert!(
            r.stdout.contains("Successfully downloaded tinypkg"),
            "{who:?}: {r:#?}"
        );
        let reqs = requests(&r);
        assert!(
            reqs.iter()
                .all(|e| e["allowed"] == true && e["reason"] == "ok"),
            "{reqs:#?}"
        );
        assert!(
            reqs.iter().any(|e| e["bytes_in"].as_u64().unwrap() > 900),
            "the wheel came through: {reqs:#?}"
        );
        // The same package from an index the list does not name fails, and says why.
        let other = format!("http://pypi.test:{port}/simple");
        let r = pip(who, &other);
        assert_ne!(r.code, 0, "{who:?}: {r:#?}");
        let reqs = requests(&r);
        assert!(
            !reqs.is_empty()
                && reqs
                    .iter()
                    .all(|e| e["allowed"] == false && e["host"] == "pypi.test"),
            "{reqs:#?}"
        );
    }
}

#[test]
fn without_an_allowlist_the_jail_has_no_network_and_no_proxy_variables() {
    for who in variants() {
        let r = python(
            who,
            &[],
            "import os\nprint('proxy' if any(k.lower().endswith('_proxy') for k in os.environ) else 'clean')",
        );
        assert_eq!(r.stdout.trim(), "clean", "{who:?}: {r:#?}");
        assert!(r.record.as_ref().unwrap().get("network").is_none());
    }
}

#[test]
fn the_hosts_abstract_unix_sockets_stay_out_of_reach() {
    // Abstract unix sockets belong to a network namespace: the host's are not the jail's,
    // even with AF_UNIX sockets allowed (and landlock ABI 6 scopes them too).
    use std::os::linux::net::SocketAddrExt;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(b"agentjail-net-test").unwrap();
    let _host = std::os::unix::net::UnixListener::bind_addr(&addr).expect("host abstract socket");
    let pol = policy("", ", \"sockets_local\"");
    let code = "import socket\ns = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\ntry:\n    s.connect('\\0agentjail-net-test')\n    print('connected')\nexcept OSError as e:\n    print('blocked', e)\n";
    for who in variants() {
        let r = run_py(who, &pol, &[], code);
        assert!(r.stdout.starts_with("blocked"), "{who:?}: {r:#?}");
    }
}
