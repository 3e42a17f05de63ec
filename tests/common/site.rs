//! A stand-in for the internet in the network allowlist's tests: an HTTP server on the
//! host's 127.0.0.1 (the test policies admit it with `allow_private = ["127.0.0.1/32"]`),
//! one thread per connection, a few fixed paths. Nothing leaves the machine.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::OnceLock;

/// The answer to `path`: `/ok` a short body, `/redirect` a redirect to a host no list
/// names, `/big` 300,000 bytes (past a 100 KiB `max_bytes_in`), anything else 404.
fn respond(path: &str) -> Vec<u8> {
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
        _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
    }
}

/// The site's port (started once per test binary).
pub fn port() -> u16 {
    static P: OnceLock<u16> = OnceLock::new();
    *P.get_or_init(|| {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { continue };
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
                    let _ = s.write_all(&respond(&path));
                });
            }
        });
        port
    })
}

/// The `[network]` section of a test policy that lists the site (plain HTTP, 127.0.0.1
/// admitted), with `extra` lines.
pub fn network_section(extra: &str) -> String {
    format!(
        "[network]\nmode = \"allowlist\"\nallow = [\"localhost:{}\"]\nallow_private = [\"127.0.0.1/32\"]\nallow_http = true\n{extra}\n",
        port()
    )
}
