//! Test certificates, made once per test process by the `openssl` command (a CA and a
//! leaf for `index.test` signed by it; another CA that signed nothing the tests trust),
//! and a TLS server on 127.0.0.1 for the broker's upstream.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

pub struct Certs {
    pub ca: Vec<u8>,
    pub other_ca: Vec<u8>,
    pub leaf: Vec<u8>,
    pub key: Vec<u8>,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the tests need the openssl command");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn certs() -> &'static Certs {
    static C: OnceLock<Certs> = OnceLock::new();
    C.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("ajnet-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
        ];
        for ca in ["ca", "other"] {
            let (key, pem, subj) = (
                format!("{ca}.key"),
                format!("{ca}.pem"),
                format!("/CN=test {ca}"),
            );
            let mut a = vec!["req", "-x509"];
            a.extend_from_slice(&ec);
            a.extend_from_slice(&["-keyout", &key, "-out", &pem, "-days", "2", "-subj", &subj]);
            openssl(&dir, &a);
        }
        let mut a = vec!["req"];
        a.extend_from_slice(&ec);
        a.extend_from_slice(&[
            "-keyout",
            "leaf.key",
            "-out",
            "leaf.csr",
            "-subj",
            "/CN=index.test",
        ]);
        openssl(&dir, &a);
        std::fs::write(
            dir.join("ext"),
            "subjectAltName=DNS:index.test\nbasicConstraints=CA:FALSE\n",
        )
        .unwrap();
        openssl(
            &dir,
            &[
                "x509",
                "-req",
                "-in",
                "leaf.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "leaf.pem",
                "-days",
                "2",
                "-extfile",
                "ext",
            ],
        );
        let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
        let c = Certs {
            ca: read("ca.pem"),
            other_ca: read("other.pem"),
            leaf: read("leaf.pem"),
            key: read("leaf.key"),
        };
        let _ = std::fs::remove_dir_all(&dir);
        c
    })
}

/// The CA's PEM (trusts the leaf) and the other CA's (does not).
pub fn ca() -> (Vec<u8>, Vec<u8>) {
    (certs().ca.clone(), certs().other_ca.clone())
}

/// A TLS server for `index.test` on 127.0.0.1: per connection it reads a request head and
/// answers `reply(head)`; what it read is kept in `got`.
pub struct Server {
    pub port: u16,
    pub got: Arc<Mutex<Vec<u8>>>,
    pub hits: Arc<Mutex<u32>>,
}

pub fn server(reply: fn(&[u8]) -> Vec<u8>) -> Server {
    server_with(reply, true)
}

/// [`server`], closing with a TLS close_notify or (`close_notify` false) just the socket.
pub fn server_with(reply: fn(&[u8]) -> Vec<u8>, close_notify: bool) -> Server {
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
    let got = Arc::new(Mutex::new(Vec::new()));
    let hits = Arc::new(Mutex::new(0));
    let (g, h) = (got.clone(), hits.clone());
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { continue };
            *h.lock().unwrap() += 1;
            let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(10)));
            let conn = rustls::ServerConnection::new(cfg.clone()).unwrap();
            let mut tls = rustls::StreamOwned::new(conn, s);
            let mut head = Vec::new();
            let mut b = [0u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match tls.read(&mut b) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&b[..n]),
                }
            }
            g.lock().unwrap().extend_from_slice(&head);
            if head.is_empty() {
                continue;
            }
            let _ = tls.write_all(&reply(&head));
            if close_notify {
                tls.conn.send_close_notify();
            }
            let _ = tls.flush();
        }
    });
    Server { port, got, hits }
}
