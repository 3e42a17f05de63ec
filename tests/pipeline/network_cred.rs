//! Brokered credentials (`[[network.credentials]]`) through `agentjail run`, as root and as
//! nobody: the jailed program calls an API on host loopback that echoes the request back
//! (the worst upstream: it hands the key to the program), and the key must reach the
//! upstream once, replace the program's own header, never be readable from the jail, and
//! never appear in the printed record, its artifacts or the audit log. TLS upstreams are
//! verified against the policy's `ca_file` (certificates made here by `openssl`).

use crate::common::*;
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

const SECRET: &str = "cred-secret-7f3a9c2b11d0";

/// The answer to a request head: 200 with the head as the body.
fn echo(head: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        head.len()
    )
    .into_bytes();
    r.extend_from_slice(head);
    r
}

fn read_head(s: &mut impl Read) -> Vec<u8> {
    let mut head = Vec::new();
    let mut b = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut b) {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&b[..n]),
        }
    }
    head
}

/// Every head an upstream received.
type Seen = Arc<Mutex<Vec<String>>>;

/// A plain-HTTP echo upstream on 127.0.0.1.
fn plain_upstream() -> (u16, Seen) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let seen: Seen = Arc::default();
    let s2 = seen.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let head = read_head(&mut s);
            s2.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&head).into());
            let _ = s.write_all(&echo(&head));
        }
    });
    (port, seen)
}

/// The test's certificates: a CA, a leaf for `localhost` it signed, and a CA that signed
/// nothing here; the CAs' files in the shared directory (readable by nobody), the rest
/// in memory (the directory openssl worked in is removed).
struct Certs {
    ca: PathBuf,
    other: PathBuf,
    leaf: Vec<u8>,
    key: Vec<u8>,
}

fn certs() -> &'static Certs {
    static C: OnceLock<Certs> = OnceLock::new();
    C.get_or_init(|| {
        let work = tempfile::tempdir().unwrap();
        let dir = work.path();
        let run = |args: &[&str]| {
            let out = std::process::Command::new("openssl")
                .args(args)
                .current_dir(dir)
                .output()
                .expect("the test needs the openssl command");
            assert!(out.status.success(), "openssl {args:?}: {out:?}");
        };
        let ec = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
        for ca in ["ca", "other"] {
            let a = format!("req -x509 {ec} -keyout {ca}.key -out {ca}.pem -days 2 -subj /CN=t{ca}");
            run(&a.split(' ').collect::<Vec<_>>());
        }
        let a = format!("req {ec} -keyout leaf.key -out leaf.csr -subj /CN=localhost");
        run(&a.split(' ').collect::<Vec<_>>());
        std::fs::write(
            dir.join("ext"),
            "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n",
        )
        .unwrap();
        run(&"x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem -days 2 -extfile ext".split(' ').collect::<Vec<_>>());
        let pem = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        Certs {
            ca: shared_file("cred-ca.pem", &pem("ca.pem")),
            other: shared_file("cred-other-ca.pem", &pem("other.pem")),
            leaf: std::fs::read(dir.join("leaf.pem")).unwrap(),
            key: std::fs::read(dir.join("leaf.key")).unwrap(),
        }
    })
}

/// A TLS echo upstream for `localhost` on 127.0.0.1.
fn tls_upstream() -> (u16, Seen) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let c = certs();
    let chain = vec![CertificateDer::from_pem_slice(&c.leaf).unwrap()];
    let key = PrivateKeyDer::from_pem_slice(&c.key).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    let cfg = Arc::new(cfg);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let seen: Seen = Arc::default();
    let s2 = seen.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { continue };
            let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(10)));
            let conn = rustls::ServerConnection::new(cfg.clone()).unwrap();
            let mut tls = rustls::StreamOwned::new(conn, s);
            let head = read_head(&mut tls);
            if head.is_empty() {
                continue;
            }
            s2.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&head).into());
            let _ = tls.write_all(&echo(&head));
            tls.conn.send_close_notify();
            let _ = tls.flush();
        }
    });
    (port, seen)
}

/// The secret, in a directory of its own (root's, 0755), owned by whoever runs agentjail.
fn secret_file(who: Who) -> (tempfile::TempDir, PathBuf) {
    secret_file_named(who, "api-key", SECRET)
}

/// [`secret_file`] with another name and value.
fn secret_file_named(who: Who, name: &str, value: &str) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::Builder::new()
        .prefix("ajcred-")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let p = d.path().join(name);
    std::fs::write(&p, format!("{value}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    if matches!(who, Who::Nobody) {
        std::os::unix::fs::chown(&p, Some(65534), Some(65534)).unwrap();
    }
    (d, p)
}

/// A policy brokering `ZY_SECRET` (in its own key file, `name`) for `localhost:port` over
/// plain HTTP whose check allows only `json`: the memory-scanning programs import nothing
/// that fetches. The key file's directory goes with the returned guard.
fn json_only_policy(who: Who, port: u16, name: &str) -> (tempfile::TempDir, PathBuf) {
    let (d, key) = secret_file_named(who, &format!("{name}-key"), ZY_SECRET);
    let text = std::fs::read_to_string(policy(
        port,
        &cred(&key, port, "upstream = \"http\""),
        &format!("{name}-{who:?}"),
    ))
    .unwrap()
    .replace(
        "allowed_imports = [\"json\", \"urllib\", \"urllib.request\", \"urllib.error\"]",
        "allowed_imports = [\"json\"]",
    );
    let pol = shared_file(&format!("net-cred-{name}-{who:?}-{port}.toml"), &text);
    (d, pol)
}

/// The default policy with an allowlist for `localhost:port`, the credential `api` for it.
fn policy(port: u16, cred: &str, tag: &str) -> PathBuf {
    let base = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/policies/default.toml"
    ))
    .unwrap();
    let start = base.find("[network]").unwrap();
    let end = start + base[start..].find("[seccomp]").unwrap();
    let net = format!(
        "[network]\nmode = \"allowlist\"\nallow = [\"localhost:{port}\"]\nallow_private = [\"127.0.0.1/32\"]\n{cred}\n\n"
    );
    let text = format!("{}{net}{}", &base[..start], &base[end..])
        .replace(
            "allowed_imports = [\"json\", \"statistics\"]",
            "allowed_imports = [\"json\", \"urllib\", \"urllib.request\", \"urllib.error\"]",
        )
        .replace("\"connect\", \"request\", \"urlopen\",", "\"connect\",")
        .replace("deny_url_literals = true", "deny_url_literals = false")
        // The program writes its artifact and tries the key's file.
        .replace("\"__import__\", \"open\",", "\"__import__\",")
        .replace(
            "\"pipes\", \"exec\", \"system_info\",\n]",
            "\"pipes\", \"exec\", \"system_info\", \"network\",\n]",
        )
        .replace("wall_time_ms = 2000", "wall_time_ms = 20000")
        .replace("cpu_time_ms = 2000", "cpu_time_ms = 10000");
    shared_file(&format!("net-cred-{tag}-{port}.toml"), &text)
}

fn cred(file: &Path, port: u16, extra: &str) -> String {
    format!(
        "[[network.credentials]]\nname = \"api\"\nhost = \"localhost\"\nport = {port}\nvalue_file = \"{}\"\nformat = \"Bearer {{}}\"\n{extra}",
        file.display()
    )
}

/// The program: call the API with its own Authorization, print what came back, keep a
/// copy as an artifact, and try to read the key's file.
fn action(key_path: &Path) -> Vec<u8> {
    let code = format!(
        "import json, urllib.request, urllib.error\nreq = urllib.request.Request('http://localhost/v1/echo', headers={{'Authorization': 'Bearer mine'}})\ntry:\n    body = urllib.request.urlopen(req, timeout=10).read().decode()\nexcept urllib.error.HTTPError as e:\n    body = 'HTTP %d %s' % (e.code, e.read().decode())\nopen('/app/out/echo.txt', 'w').write(body)\ntry:\n    open({:?}).read()\n    f = 'read'\nexcept FileNotFoundError:\n    f = 'missing'\nexcept PermissionError:\n    f = 'denied'\nprint(json.dumps({{'echo': body, 'file': f}}))\n",
        key_path.display().to_string()
    );
    let a = json!({"id": "cred", "language": "python", "entrypoint": "main.py", "code": code, "input_payload": {}});
    serde_json::to_vec(&a).unwrap()
}

/// What every run must show: the key nowhere in the printed record, the file unreadable.
fn no_key_anywhere(who: Who, r: &RunRecord) {
    let raw = String::from_utf8_lossy(&r.raw);
    assert!(
        !raw.contains(SECRET),
        "{who:?}: the key is in the record: {raw}"
    );
    assert!(!r.stderr.contains(SECRET), "{who:?}: {}", r.stderr);
    let f = &r.record["output"]["file"];
    assert!(f == "missing" || f == "denied", "{who:?}: {f}");
}

#[test]
fn a_brokered_key_reaches_a_plain_upstream_and_never_the_record() {
    let (port, seen) = plain_upstream();
    for who in variants() {
        let (_d, key) = secret_file(who);
        let pol = policy(
            port,
            &cred(&key, port, "upstream = \"http\""),
            &format!("http-{who:?}"),
        );
        let r = run_as(
            who,
            &["--policy", pol.to_str().unwrap()],
            &action(&key),
            None,
        );
        assert_eq!(r.stop_reason(), "success", "{who:?}: {:#}", r.record);
        no_key_anywhere(who, &r);
        let echo = r.record["output"]["echo"].as_str().unwrap();
        assert!(
            echo.contains("Authorization: Bearer [REDACTED:credential_api]"),
            "{who:?}: {echo}"
        );
        assert!(!echo.contains("mine"), "{who:?}: {echo}");
        let head = seen.lock().unwrap().pop().unwrap();
        assert_eq!(head.matches("Authorization:").count(), 1, "{head}");
        assert!(head.contains(&format!("Authorization: Bearer {SECRET}\r\n")));
        let req = &r.record["network"]["requests"][0];
        assert_eq!(
            (req["credential"].as_str(), req["reason"].as_str()),
            (Some("api"), Some("ok")),
            "{who:?}: {req}"
        );
        // The artifact's bytes lost the key too.
        let art = &r.record["artifacts"][0];
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(art["content_base64"].as_str().unwrap())
            .unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(SECRET) && text.contains("[REDACTED:credential_api]"),
            "{who:?}: {text}"
        );
        assert!(r.record["redaction"]["kinds"]["credential_api"].as_u64() >= Some(1));
        // A `denied` network hint drops the credential with the list: nothing goes out.
        let mut narrowed: serde_json::Value = serde_json::from_slice(&action(&key)).unwrap();
        narrowed["policy_hints"] = json!({"network_access": "denied"});
        let n = seen.lock().unwrap().len();
        let bytes = serde_json::to_vec(&narrowed).unwrap();
        let r = run_as(who, &["--policy", pol.to_str().unwrap()], &bytes, None);
        no_key_anywhere(who, &r);
        let req = &r.record["network"]["requests"][0];
        assert!(!req["allowed"].as_bool().unwrap(), "{who:?}: {req}");
        assert_eq!(req["reason"], "plain_http_denied", "{who:?}: {req}");
        assert!(req["credential"].is_null(), "{who:?}: {req}");
        assert_eq!(
            seen.lock().unwrap().len(),
            n,
            "{who:?}: nothing reached the upstream"
        );
    }
}

#[test]
fn a_tls_upstream_is_verified_against_the_policys_ca() {
    let (port, seen) = tls_upstream();
    let c = certs();
    for who in variants() {
        let (_d, key) = secret_file(who);
        for (ca, ok) in [(&c.ca, true), (&c.other, false)] {
            let ca_line = format!("ca_file = \"{}\"\n", ca.display());
            let ca = if ok { "ca" } else { "other" };
            let pol = policy(port, &cred(&key, port, ""), &format!("tls-{who:?}-{ca}"));
            // ca_file belongs to [network], ahead of the credentials' tables.
            let text = std::fs::read_to_string(&pol).unwrap().replacen(
                "mode = \"allowlist\"\n",
                &format!("mode = \"allowlist\"\n{ca_line}"),
                1,
            );
            let pol = shared_file(&format!("net-cred-tls-{who:?}-{ca}-{port}.toml"), &text);
            let before = seen.lock().unwrap().len();
            let r = run_as(
                who,
                &["--policy", pol.to_str().unwrap()],
                &action(&key),
                None,
            );
            assert_eq!(r.stop_reason(), "success", "{who:?}: {:#}", r.record);
            no_key_anywhere(who, &r);
            let echo = r.record["output"]["echo"].as_str().unwrap();
            let req = &r.record["network"]["requests"][0];
            if ok {
                assert!(
                    echo.contains("[REDACTED:credential_api]"),
                    "{who:?}: {echo}"
                );
                assert_eq!(req["credential"], "api", "{who:?}: {req}");
                let head = seen.lock().unwrap().last().cloned().unwrap();
                assert!(head.contains(&format!("Authorization: Bearer {SECRET}\r\n")));
                assert!(
                    head.contains(&format!("Host: localhost:{port}\r\n")),
                    "{head}"
                );
            } else {
                assert!(echo.starts_with("HTTP 502"), "{who:?}: {echo}");
                let why = req["reason"].as_str().unwrap();
                assert!(why.starts_with("upstream_tls_failed:"), "{who:?}: {req}");
                assert!(req["credential"].is_null(), "{who:?}: {req}");
                assert_eq!(seen.lock().unwrap().len(), before, "nothing reached it");
            }
        }
    }
}

/// The operator's file is checked when the policy loads: a symlink, a file others may
/// write, or one of another user is refused before any jail starts.
#[test]
fn unsafe_key_files_refuse_the_policy() {
    let (port, _) = plain_upstream();
    for who in variants() {
        let (d, key) = secret_file(who);
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&key, &link).unwrap();
        let loose = d.path().join("loose");
        std::fs::copy(&key, &loose).unwrap();
        std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o666)).unwrap();
        let theirs = d.path().join("theirs");
        std::fs::copy(&key, &theirs).unwrap();
        // Readable by nobody too: the owner is what must refuse it.
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut cases = vec![
            (link, "symbolic link"),
            (loose, "writable by group or others"),
        ];
        if is_root() {
            std::os::unix::fs::chown(&theirs, Some(12345), None).unwrap();
            cases.push((theirs, "belongs to uid 12345"));
        }
        for (path, why) in cases {
            let pol = policy(
                port,
                &cred(&path, port, "upstream = \"http\""),
                &format!("bad-{who:?}"),
            );
            let r = run_as(
                who,
                &["--policy", pol.to_str().unwrap()],
                &action(&key),
                None,
            );
            let text = format!("{} {}", String::from_utf8_lossy(&r.raw), r.stderr);
            assert!(
                text.contains("network.credentials") && text.contains(why),
                "{who:?} {path:?}: {text}"
            );
            assert!(!text.contains(SECRET), "{text}");
            assert_ne!(r.code, 0);
        }
    }
}

/// `serve`'s sessions take the same credentials: each call's record names the credential
/// and redacts the echoed key from the call's value.
#[test]
fn a_serve_session_brokers_the_key_and_redacts_it() {
    use crate::common::serve;
    use crate::network_run::{ask, serve_on};
    let (port, seen) = plain_upstream();
    for who in variants() {
        let (_d, key) = secret_file(who);
        let pol = policy(
            port,
            &cred(&key, port, "upstream = \"http\""),
            &format!("serve-{who:?}"),
        );
        let dir = serve::scratch("netcred");
        let (_server, mut f) = serve_on(
            who,
            dir.path(),
            &pol,
            &["--pool", "0", "--session-pool", "0"],
        );
        let sid = ask(&mut f, json!({"id": "s", "op": "session_start"}))["session"].clone();
        assert!(sid.is_string(), "{who:?}");
        let code = "import urllib.request as u\nb = u.urlopen('http://localhost/x', timeout=10).read().decode()\nb";
        let answer = ask(
            &mut f,
            json!({"id": "1", "op": "session_exec", "session": sid, "code": code}),
        );
        let text = answer.to_string();
        assert!(!text.contains(SECRET), "{who:?}: {text}");
        let r = &answer["record"];
        assert_eq!(r["stop_reason"], "success", "{who:?}: {r:#}");
        assert!(
            r["value"]
                .as_str()
                .unwrap()
                .contains("[REDACTED:credential_api]"),
            "{who:?}: {r:#}"
        );
        assert_eq!(r["network"]["requests"][0]["credential"], "api");
        let head = seen.lock().unwrap().last().cloned().unwrap();
        assert!(head.contains(&format!("Authorization: Bearer {SECRET}\r\n")));
        ask(
            &mut f,
            json!({"id": "c", "op": "session_close", "session": sid}),
        );
    }
}

/// The zygote test's key: as long as real API keys are (malloc's free lists overwrite the
/// first 16 bytes of a freed small block; the rest of a key stays in freed memory).
const ZY_SECRET: &str = "zy-secret-5d1c8e0b7a9f4263a1b0c9d8e7f60514";

/// Python that reads its own address space (/proc/self/maps, /proc/self/mem) for NEEDLE,
/// given XORed with 0x55 (so neither the code nor its text in memory holds it), and counts
/// the copies other than its own (the needle object, excluded by address). A run of
/// `planted`, built at run time, proves the scan reads the heap.
const PY_SCAN_OWN_MEMORY: &str = r#"import json
x = bytes.fromhex('NEEDLE')
needle = x.translate(bytes(i ^ 0x55 for i in range(256)))
planted = bytes(str(10**11 + 23456789012), 'ascii') * 2
mine = id(needle)
hits, seen_planted, scanned = [], 0, 0
mem = open('/proc/self/mem', 'rb', 0)
for line in open('/proc/self/maps').read().splitlines():
    f = line.split()
    if f[1][0] != 'r' or (len(f) > 5 and f[5] in ('[vvar]', '[vsyscall]', '[vvar_vclock]')):
        continue
    a, b = (int(v, 16) for v in f[0].split('-'))
    try:
        mem.seek(a)
        data = mem.read(b - a)
    except (OSError, ValueError, OverflowError):
        continue
    scanned += len(data)
    at = data.find(needle)
    while at >= 0:
        if not (mine <= a + at < mine + 128):
            hits.append('%x %s' % (a + at, f[5] if len(f) > 5 else 'anon'))
        at = data.find(needle, at + 1)
    seen_planted += data.count(planted)
print(json.dumps({'hits': hits[:20], 'planted': seen_planted, 'scanned': scanned}))
"#;
/// A `serve --zygote` jail is a fork of the template's interpreter, not a fresh exec: the
/// template must never have read the key, or every zygote job holds it in its own memory.
#[test]
fn a_zygote_jail_never_holds_the_key_in_its_memory() {
    if !zygote_built() {
        return;
    }
    let (port, _seen) = plain_upstream();
    // The key's last 24 characters, XORed for the program's text.
    let tail = &ZY_SECRET[ZY_SECRET.len() - 24..];
    let xored: String = tail.bytes().map(|b| format!("{:02x}", b ^ 0x55)).collect();
    let code = PY_SCAN_OWN_MEMORY.replace("NEEDLE", &xored);
    let action = json!({"id": "z", "language": "python", "entrypoint": "main.py",
                        "code": code, "input_payload": {}});
    for who in variants() {
        let (_key_dir, pol) = json_only_policy(who, port, "zy");
        let dir = crate::common::serve::scratch("netcredz");
        let (_server, mut f) =
            crate::network_run::serve_on(who, dir.path(), &pol, &["--zygote", "--pool", "1"]);
        crate::network_run::until_a_zygote_job(&mut f, &action, who, |r| {
            let out = &r["output"];
            assert!(
                out["planted"].as_u64() >= Some(1),
                "{who:?}: the scan did not read its own heap: {out}"
            );
            assert_eq!(
                out["hits"],
                json!([]),
                "{who:?}: a job found the key in its own memory"
            );
        });
    }
}

/// An echoed key that straddles the stdout cap: the record keeps the first 4096 bytes, and
/// the key's beginning at their end must go as the whole key does.
#[test]
fn a_key_cut_by_the_output_cap_leaves_no_beginning() {
    let (port, _seen) = plain_upstream();
    let code = "import urllib.request\nbody = urllib.request.urlopen('http://localhost/v1/echo', timeout=10).read().decode()\nat = body.index('Bearer ') + 7\nprint('x' * (4096 - 12 - at) + body + 'y' * 100)\n";
    let a = json!({"id": "cut", "language": "python", "entrypoint": "main.py", "code": code, "input_payload": {}});
    let a = serde_json::to_vec(&a).unwrap();
    for who in variants() {
        let (_d, key) = secret_file(who);
        let pol = policy(
            port,
            &cred(&key, port, "upstream = \"http\""),
            &format!("cut-{who:?}"),
        );
        let r = run_as(who, &["--policy", pol.to_str().unwrap()], &a, None);
        assert_eq!(
            r.stop_reason(),
            "code_output_too_large",
            "{who:?}: {:#}",
            r.record
        );
        let ex = &r.record["execution"];
        assert_eq!(ex["stdout_truncated"], true, "{who:?}");
        let out = ex["stdout"].as_str().unwrap();
        assert!(
            !out.contains(&SECRET[..12]) && out.ends_with("[REDACTED:credential_api]"),
            "{who:?}: the cut key's beginning is in the record: {}",
            &out[out.len().saturating_sub(80)..]
        );
        let raw = String::from_utf8_lossy(&r.raw);
        assert!(!raw.contains(&SECRET[..12]), "{who:?}");
    }
}

/// A cold jail: the program's own memory never held the key (exec replaced the launcher's
/// copy), and init, a copy of the launcher that holds it, cannot be read (non-dumpable).
#[test]
fn a_cold_jail_holds_no_key_and_cannot_read_inits_memory() {
    let (port, _seen) = plain_upstream();
    let tail = &ZY_SECRET[ZY_SECRET.len() - 24..];
    let xored: String = tail.bytes().map(|b| format!("{:02x}", b ^ 0x55)).collect();
    let probe = "init = []\nfor f in ('mem', 'environ', 'maps'):\n    try:\n        open('/proc/1/' + f, 'rb').read(1)\n        init.append(f)\n    except OSError:\n        pass\n";
    let code = PY_SCAN_OWN_MEMORY
        .replace("NEEDLE", &xored)
        .replacen("import json\n", &format!("import json\n{probe}"), 1)
        .replace("print(json.dumps({", "print(json.dumps({'init': init, ");
    let a = json!({"id": "cold", "language": "python", "entrypoint": "main.py", "code": code, "input_payload": {}});
    let a = serde_json::to_vec(&a).unwrap();
    for who in variants() {
        let (_key_dir, pol) = json_only_policy(who, port, "cold");
        let r = run_as(who, &["--policy", pol.to_str().unwrap()], &a, None);
        assert_eq!(r.stop_reason(), "success", "{who:?}: {:#}", r.record);
        let out = &r.record["output"];
        assert!(out["planted"].as_u64() >= Some(1), "{who:?}: {out}");
        assert_eq!(
            out["hits"],
            json!([]),
            "{who:?}: the key is in the program's memory"
        );
        assert_eq!(
            out["init"],
            json!([]),
            "{who:?}: init's /proc entries are readable"
        );
    }
}

/// The audit log's copy of a run whose upstream echoed the key (into stdout, the output,
/// an artifact, an exception message) holds no trace of it, JSON-escaped forms included.
#[test]
fn the_audit_log_holds_no_echoed_key() {
    let (port, _seen) = plain_upstream();
    let code = "import json, urllib.request\nbody = urllib.request.urlopen('http://localhost/v1/echo', timeout=10).read().decode()\nopen('/app/out/echo.txt', 'w').write(json.dumps(body))\nprint(json.dumps({'echo': body}))\nraise ValueError(body)\n";
    let a = json!({"id": "audit", "language": "python", "entrypoint": "main.py", "code": code, "input_payload": {}});
    let a = serde_json::to_vec(&a).unwrap();
    for who in variants() {
        let (_d, key) = secret_file(who);
        let pol = policy(
            port,
            &cred(&key, port, "upstream = \"http\""),
            &format!("audit-{who:?}"),
        );
        let s = crate::common::serve::scratch("credaudit");
        let log = s.path().join("audit.jsonl");
        let args = [
            "--policy",
            pol.to_str().unwrap(),
            "--audit-log",
            log.to_str().unwrap(),
        ];
        let r = run_as(who, &args, &a, None);
        assert_eq!(
            r.stop_reason(),
            "code_runtime_error:1",
            "{who:?}: {:#}",
            r.record
        );
        no_key_anywhere_but_output(who, &r);
        let audit = std::fs::read_to_string(&log).unwrap();
        assert!(audit.contains("credential_api"), "{who:?}: {audit}");
        assert!(
            !audit.contains(SECRET),
            "{who:?}: the key is in the audit log"
        );
    }
}

fn no_key_anywhere_but_output(who: Who, r: &RunRecord) {
    let raw = String::from_utf8_lossy(&r.raw);
    assert!(
        !raw.contains(SECRET),
        "{who:?}: the key is in the record: {raw}"
    );
    assert!(!r.stderr.contains(SECRET), "{who:?}: {}", r.stderr);
}

/// A key with characters JSON escapes, for the escaped forms' test.
const ESC_SECRET: &str = r#"esc"key/with\back+slash<7f3a9c2b>"#;

/// `text` with every backslash dropped and each `u00XX` left after that decoded, until
/// nothing changes: what any JSON escaping, repeated or not, makes of a value comes back
/// to the value less its backslashes (the test's own oracle, written apart from the
/// redactor's, and looser: it may find more, never less).
fn unescaped(text: &str) -> String {
    let mut cur = text.to_string();
    loop {
        let next = unescape_once(&cur);
        if next == cur {
            return cur;
        }
        cur = next;
    }
}

fn unescape_once(text: &str) -> String {
    let t: Vec<char> = text.chars().filter(|c| *c != '\\').collect();
    let mut out = String::new();
    let mut i = 0;
    while i < t.len() {
        let hex: String = t[i..(i + 5).min(t.len())].iter().collect();
        if let Some(c) = hex
            .strip_prefix("u00")
            .filter(|h| h.len() == 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(c as char);
            i += 5;
        } else {
            out.push(t[i]);
            i += 1;
        }
    }
    out
}

/// An upstream echoes the key, and the program prints and saves the echo JSON-escaped
/// once, twice and three times, with its backslashes doubled, with every character as
/// `\u00XX` (either case) and that escaped again, and PHP's `\/` escaped again: no form of
/// the key is left in the printed record, its artifact or the audit log, and each form is
/// one replacement.
#[test]
fn every_escaped_form_of_an_echoed_key_is_redacted() {
    let (port, _seen) = plain_upstream();
    let code = r#"import json, urllib.request
echo = urllib.request.urlopen('http://localhost/v1/echo', timeout=10).read().decode()
body = [l for l in echo.split('\r\n') if l.startswith('Authorization')][0]
def esc(s):
    return json.dumps(s)[1:-1]
def u(s, f):
    return ''.join(f % ord(c) for c in s)
forms = {
    'once': esc(body),
    'twice': esc(esc(body)),
    'thrice': esc(esc(esc(body))),
    'doubled': body.replace('\\', '\\\\\\\\'),
    'u': u(body, '\\u%04x'),
    'U': u(body, '\\u%04X'),
    'u_twice': esc(u(body, '\\u%04x')),
    'php_twice': esc(esc(body).replace('/', '\\/')),
}
open('/app/out/forms.json', 'w').write(json.dumps(forms))
print(json.dumps(forms))
"#;
    let a = json!({"id": "esc", "language": "python", "entrypoint": "main.py", "code": code, "input_payload": {}});
    let a = serde_json::to_vec(&a).unwrap();
    let key = unescaped(ESC_SECRET);
    for who in variants() {
        let (_d, file) = secret_file_named(who, "esc-key", ESC_SECRET);
        let pol = policy(
            port,
            &cred(&file, port, "upstream = \"http\""),
            &format!("esc-{who:?}"),
        );
        let s = crate::common::serve::scratch("credesc");
        let log = s.path().join("audit.jsonl");
        let args = [
            "--policy",
            pol.to_str().unwrap(),
            "--audit-log",
            log.to_str().unwrap(),
        ];
        let r = run_as(who, &args, &a, None);
        assert_eq!(r.stop_reason(), "success", "{who:?}: {:#}", r.record);
        let forms = r.record["output"].as_object().expect("the forms");
        assert_eq!(forms.len(), 8, "{who:?}: {forms:#?}");
        for (name, v) in forms {
            let v = v.as_str().unwrap();
            assert!(
                !unescaped(v).contains(&key),
                "{who:?}: the key is left in form {name}: {v}"
            );
            assert_eq!(
                v.matches("[REDACTED:credential_api]").count(),
                1,
                "{who:?}: {name}: {v}"
            );
        }
        use base64::Engine;
        let art = base64::engine::general_purpose::STANDARD
            .decode(r.record["artifacts"][0]["content_base64"].as_str().unwrap())
            .unwrap();
        let audit = std::fs::read_to_string(&log).unwrap();
        for (what, text) in [
            (
                "the printed record",
                String::from_utf8_lossy(&r.raw).into_owned(),
            ),
            ("the artifact", String::from_utf8_lossy(&art).into_owned()),
            ("the audit log", audit),
        ] {
            assert!(
                !unescaped(&text).contains(&key),
                "{who:?}: the key is in {what}: {text}"
            );
        }
        assert!(!r.stderr.contains("7f3a9c2b"), "{who:?}: {}", r.stderr);
    }
}
