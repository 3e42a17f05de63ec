//! What the HTTP test binaries share: starting `agentjail-http`, a hand-written HTTP/1.1
//! client over TCP or a unix socket, and the tests' policies and waits.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The agentjail-http under test: cargo's build, or `$AGENTJAIL_TEST_BIN_DIR/agentjail-http`
/// (scripts/test.sh points it at the release build, as for the main package's tests).
pub fn bin() -> &'static str {
    static BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BIN.get_or_init(|| match std::env::var_os("AGENTJAIL_TEST_BIN_DIR") {
        Some(dir) => {
            let p = std::path::Path::new(&dir).join("agentjail-http");
            assert!(p.is_file(), "AGENTJAIL_TEST_BIN_DIR: no {}", p.display());
            p.display().to_string()
        }
        None => env!("CARGO_BIN_EXE_agentjail-http").to_string(),
    })
}
/// How long a test waits for anything before calling the server hung.
pub const PATIENCE: Duration = Duration::from_secs(120);

#[derive(Clone)]
pub enum Target {
    Tcp(String),
    Unix(PathBuf),
}

pub struct Server {
    pub child: Child,
    pub target: Target,
    pub _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// Start `agentjail-http serve --http ADDR EXTRA...` and wait for its "serving" line.
/// `addr` may name `{dir}` (the test's scratch directory).
pub fn start(addr: &str, extra: &[&str]) -> Server {
    start_with(bin(), addr, extra)
}

pub fn start_with(bin: &str, addr: &str, extra: &[&str]) -> Server {
    start_cmd(&[bin], addr, extra)
}

/// As `start`, the binary run by `cmd` (the binary, or a wrapper and its arguments).
pub fn start_cmd(cmd: &[&str], addr: &str, extra: &[&str]) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let addr = addr.replace("{dir}", &dir.path().display().to_string());
    let extra: Vec<String> = extra
        .iter()
        .map(|a| a.replace("{dir}", &dir.path().display().to_string()))
        .collect();
    let mut child = Command::new(cmd[0])
        .args(&cmd[1..])
        .args(["serve", "--http", &addr])
        .args(&extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            eprintln!("[server] {line}");
            let _ = tx.send(line);
        }
    });
    loop {
        let Ok(line) = rx.recv_timeout(PATIENCE) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{addr}: the server never said it was serving");
        };
        if let Some(a) = line.strip_prefix("agentjail: serving HTTP on ") {
            let target = match a.strip_prefix("unix:") {
                Some(p) => Target::Unix(PathBuf::from(p)),
                None => Target::Tcp(a.to_string()),
            };
            return Server {
                child,
                target,
                _dir: dir,
            };
        }
    }
}

/// Run the binary expecting it to refuse to start: its exit status and stderr.
pub fn refused(args: &[&str]) -> (i32, String) {
    let out = Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

pub fn connect(t: &Target) -> Box<dyn Stream> {
    match t {
        Target::Tcp(a) => {
            let s = std::net::TcpStream::connect(a).unwrap();
            s.set_read_timeout(Some(PATIENCE)).unwrap();
            Box::new(s)
        }
        Target::Unix(p) => {
            let s = std::os::unix::net::UnixStream::connect(p).unwrap();
            s.set_read_timeout(Some(PATIENCE)).unwrap();
            Box::new(s)
        }
    }
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }
}

/// Read one whole response (the server is asked to close after it).
pub fn read_response(s: &mut dyn Stream) -> Resp {
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(&raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    Resp {
        status,
        head,
        body: raw[split + 4..].to_vec(),
    }
}

pub fn request(
    t: &Target,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Resp {
    let mut s = connect(t);
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    // A route refused from its head alone (a 404 for a malformed id) is answered and the
    // connection closed without the body being read: a write into that closed socket fails
    // (EPIPE, ECONNRESET) while the answer is already there to read.
    let sent = s.write_all(req.as_bytes()).and_then(|()| s.write_all(body));
    if let Err(e) = sent {
        assert!(
            matches!(
                e.kind(),
                std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
            ),
            "{e}"
        );
    }
    read_response(&mut *s)
}

pub fn get(t: &Target, path: &str) -> Resp {
    request(t, "GET", path, &[], b"")
}

pub fn post(t: &Target, path: &str, body: &Value) -> Resp {
    request(t, "POST", path, &[], body.to_string().as_bytes())
}

pub fn action(code: &str) -> Value {
    json!({"id": "t", "language": "python", "entrypoint": "main.py", "code": code, "input_payload": {}})
}

/// The exact body verl's sandbox_fusion client posts (verl/utils/reward_score/
/// sandbox_fusion/utils.py): these keys, these types.
pub fn verl_request(code: &str, stdin: &str, run_timeout: u64) -> Value {
    json!({
        "compile_timeout": 10,
        "run_timeout": run_timeout,
        "code": code,
        "stdin": stdin,
        "memory_limit_MB": 1024,
        "language": "python",
        "files": {},
        "fetch_files": [],
    })
}

pub fn token_file(dir: &Path, mode: u32) -> PathBuf {
    let p = dir.join("tokens");
    std::fs::write(
        &p,
        "# name token\nalice aaaaaaaaaaaaaaaaaaaaaaaa\nbob bbbbbbbbbbbbbbbbbbbbbbbb\n",
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

/// Wait (within PATIENCE) until `f` holds.
pub fn eventually(what: &str, f: impl FnMut() -> Option<String>) {
    eventually_within(PATIENCE, what, f)
}

/// Wait (within `patience`: a bound only a hang reaches) until `f` holds.
pub fn eventually_within(patience: Duration, what: &str, mut f: impl FnMut() -> Option<String>) {
    let start = std::time::Instant::now();
    loop {
        let Some(why) = f() else { return };
        assert!(start.elapsed() < patience, "{what}: {why}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub const WORKSPACE_POLICY: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../../policies/workspace.toml");

pub const JUDGE_OPEN_POLICY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../policies/judge-open.toml"
);
