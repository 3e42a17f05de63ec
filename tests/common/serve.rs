//! A client harness for `agentjail serve`, launched through the real binary as root or as
//! nobody (tests/common/mod.rs's copy): JSON lines over the server's stdin/stdout or over
//! its unix socket, every response checked as it arrives (one whole JSON object per line,
//! tagged with an id that was sent, a record that is a record), and the server's process
//! tree followed from launch to exit so "nothing left behind" can be checked exactly for
//! this server even when other servers run on the host at the same time.
//!
//! It is `common::serve` (tests/common/mod.rs declares it).
#![allow(dead_code, unused_imports)]

use crate::common::{self, Who};
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long any one response may take before the test gives up (a hang is a failure, not
/// a slow pass: the longest job here has a 30 s wall limit plus serve's 10 s grace).
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(90);

/// `program` launched as `who` (setpriv for nobody).
pub fn command(who: Who, program: &Path) -> Command {
    match who {
        Who::Nobody => {
            let mut c = Command::new("/usr/bin/setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
            c.arg(program);
            c
        }
        _ => Command::new(program),
    }
}

/// The host uid `who` runs as.
pub fn uid_of(who: Who) -> u32 {
    match who {
        Who::Nobody => common::NOBODY,
        // SAFETY: geteuid has no preconditions and no memory effects.
        _ => unsafe { libc::geteuid() },
    }
}

/// A scratch directory every launch variant can write: created 01777 under /tmp (sticky,
/// like /tmp: agentjail refuses to create its files where other users can change them).
pub fn scratch(tag: &str) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::Builder::new()
        .prefix(&format!("ajserve-{tag}-"))
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    d
}

/// An action for `op: run`.
pub fn action(code: &str, payload: Value) -> Value {
    common::action_json(code, json!({"id": "a", "input_payload": payload}))
}

// ---------------------------------------------------------------------------------------
// Processes

pub use crate::common::{alive, cmdline, cpu_ticks, descendants, proc_stat, Proc};

/// Live host processes whose command line contains `needle` (zombies excluded).
pub fn live_with(needle: &str) -> Vec<i32> {
    common::host_pids_with(needle)
        .into_iter()
        .filter(|&p| proc_stat(p).is_some_and(|(_, s, _)| s != 'Z' && s != 'X'))
        .collect()
}

/// Live host processes (zombies excluded) whose argv is exactly `args`: a substring match
/// would also count another test's `sleep 15345.1` as this test's `sleep 5345.1`.
pub fn live_exactly(args: &[&str]) -> Vec<i32> {
    let want: Vec<u8> = args.iter().flat_map(|a| a.bytes().chain([0])).collect();
    common::host_pids_with(args.last().copied().unwrap_or(""))
        .into_iter()
        .filter(|&p| std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c == want))
        .filter(|&p| proc_stat(p).is_some_and(|(_, s, _)| s != 'Z' && s != 'X'))
        .collect()
}

/// The children of `pid` in every state (zombies included: [`descendants`] leaves them out).
pub fn children_in_any_state(pid: i32) -> Vec<Proc> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|p| proc_stat(p).filter(|s| s.0 == pid).map(|s| (p, s.2)))
        .collect()
}

/// Follows a server's process tree while it lives: every descendant ever seen (sampled
/// every 20 ms, and on demand), so its jails can be checked gone after it exits.
pub struct Tracker {
    seen: Arc<Mutex<BTreeSet<Proc>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    root: i32,
}

impl Tracker {
    pub fn start(root: i32) -> Tracker {
        let seen = Arc::new(Mutex::new(BTreeSet::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (Arc::clone(&seen), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            while !st.load(Ordering::SeqCst) {
                let now = descendants(root);
                s.lock().unwrap().extend(now);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Tracker {
            seen,
            stop,
            thread: Some(thread),
            root,
        }
    }

    /// Sample now; the live descendants.
    pub fn sample(&self) -> Vec<Proc> {
        let now = descendants(self.root);
        self.seen.lock().unwrap().extend(now.iter().copied());
        now
    }

    pub fn seen(&self) -> Vec<Proc> {
        self.seen.lock().unwrap().iter().copied().collect()
    }

    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Tracker {
    fn drop(&mut self) {
        self.stop();
    }
}

// ---------------------------------------------------------------------------------------
// Host state

/// What a server could leave on the host besides processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostState {
    pub mounts: BTreeSet<String>,
    pub tmp: BTreeSet<String>,
}

pub fn host_state() -> HostState {
    HostState {
        mounts: common::mount_points(),
        tmp: common::agentjail_temp_entries(common::not_harness),
    }
}

/// Job cgroups of the agentjail process `pid` (`agentjail-<pid>-<run>`), in every hierarchy.
pub fn cgroups_of(pid: i32) -> Vec<String> {
    let prefix = format!("agentjail-{pid}-");
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::from("/sys/fs/cgroup")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                let p = e.path();
                if e.file_name().to_string_lossy().starts_with(&prefix) {
                    out.push(p.display().to_string());
                }
                stack.push(p);
            }
        }
    }
    out
}

/// After server `pid` is gone: none of the processes it ever had lives (nor any process with
/// its marker), no job cgroup of it, the mounts as before, no new temp entry. Waits up to
/// 5 s for processes (a cleanup guarantee, not a speed claim: the speed bound is tested on
/// SIGKILL).
pub fn assert_no_leftovers(pid: i32, marker: &str, seen: &[Proc], before: &HostState) {
    let t = Instant::now();
    loop {
        let live: Vec<Proc> = seen.iter().copied().filter(|p| alive(*p)).collect();
        let marked = live_with(marker);
        if live.is_empty() && marked.is_empty() {
            break;
        }
        assert!(
            t.elapsed() < common::HANG,
            "processes of server {pid} outlived it: {:?} / with its marker: {:?}",
            live.iter()
                .map(|p| format!("{} {}", p.0, cmdline(p.0)))
                .collect::<Vec<_>>(),
            marked
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let cg = cgroups_of(pid);
    assert!(cg.is_empty(), "job cgroups of server {pid} left: {cg:?}");
    let after = host_state();
    let new_mounts: Vec<_> = after.mounts.difference(&before.mounts).collect();
    let gone_mounts: Vec<_> = before.mounts.difference(&after.mounts).collect();
    assert!(
        new_mounts.is_empty() && gone_mounts.is_empty(),
        "host mounts changed: new {new_mounts:?}, gone {gone_mounts:?}"
    );
    // The server and every process of it are gone (above), so what it left stays: an entry
    // that goes away within a few seconds was another test's server's (a late-file
    // directory of a server running beside this one, caught mid-job in CI).
    let mut new_tmp: Vec<String> = after.tmp.difference(&before.tmp).cloned().collect();
    let t = Instant::now();
    while !new_tmp.is_empty() && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
        new_tmp.retain(|p| std::path::Path::new(p).exists());
    }
    assert!(new_tmp.is_empty(), "temp entries left: {new_tmp:?}");
}

// ---------------------------------------------------------------------------------------
// Connections

#[derive(Default)]
struct InboxState {
    /// Responses not yet taken, by the JSON text of their id.
    pending: HashMap<String, VecDeque<Value>>,
    /// How many responses each id got.
    answered: HashMap<String, usize>,
    problems: Vec<String>,
    eof: bool,
}

struct Inbox {
    state: Mutex<InboxState>,
    cv: Condvar,
}

/// One client connection: stdin/stdout of a server, or a unix socket.
pub struct Conn {
    pub label: String,
    w: Option<Box<dyn Write + Send>>,
    sock: Option<UnixStream>,
    inbox: Arc<Inbox>,
    stderr: Arc<Mutex<String>>,
    n: u64,
    sent: Vec<String>,
    /// Lines sent that can only be answered with `"id": null`.
    null_errors: usize,
}

impl Conn {
    fn new(
        label: &str,
        w: Box<dyn Write + Send>,
        r: Box<dyn Read + Send>,
        sock: Option<UnixStream>,
        stderr: Arc<Mutex<String>>,
    ) -> Conn {
        let inbox = Arc::new(Inbox {
            state: Mutex::new(InboxState::default()),
            cv: Condvar::new(),
        });
        let ib = Arc::clone(&inbox);
        std::thread::spawn(move || read_responses(r, &ib));
        Conn {
            label: label.to_string(),
            w: Some(w),
            sock,
            inbox,
            stderr,
            n: 0,
            sent: Vec::new(),
            null_errors: 0,
        }
    }

    /// A client of the server listening on `path`.
    pub fn connect(label: &str, path: &Path, stderr: Arc<Mutex<String>>) -> Conn {
        let s = UnixStream::connect(path).unwrap_or_else(|e| panic!("connect {path:?}: {e}"));
        let r = s.try_clone().unwrap();
        let w = s.try_clone().unwrap();
        Conn::new(label, Box::new(w), Box::new(r), Some(s), stderr)
    }

    pub fn write_raw(&mut self, bytes: &[u8]) {
        let w = self.w.as_mut().expect("connection closed");
        w.write_all(bytes)
            .and_then(|_| w.flush())
            .unwrap_or_else(|e| panic!("write to serve: {e}"));
    }

    /// Send raw bytes that carry the request `id` (answered under that id).
    pub fn send_raw_with_id(&mut self, bytes: &[u8], id: &Value) {
        self.write_raw(bytes);
        self.sent.push(id.to_string());
    }

    /// Send a line that can only be answered with an error whose id is null.
    pub fn send_bad_line(&mut self, line: &[u8]) {
        let mut l = line.to_vec();
        l.push(b'\n');
        self.write_raw(&l);
        self.null_errors += 1;
    }

    /// Send `req` (an id is added when it has none); its id.
    pub fn send(&mut self, mut req: Value) -> Value {
        if req.get("id").is_none() {
            self.n += 1;
            req["id"] = json!(format!("{}-{}", self.label, self.n));
        }
        let id = req["id"].clone();
        let mut line = serde_json::to_vec(&req).unwrap();
        line.push(b'\n');
        self.write_raw(&line);
        self.sent.push(id.to_string());
        id
    }

    /// The response to `id` (the next one, if it was sent twice), waiting for it.
    pub fn wait(&self, id: &Value) -> Value {
        let key = id.to_string();
        let deadline = Instant::now() + RESPONSE_TIMEOUT;
        let mut st = self.inbox.state.lock().unwrap();
        loop {
            if let Some(v) = st.pending.get_mut(&key).and_then(VecDeque::pop_front) {
                return v;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !st.eof && !left.is_zero(),
                "{}: no response to {key} ({}); problems {:?}; serve's stderr:\n{}",
                self.label,
                if st.eof {
                    "connection closed"
                } else {
                    "timed out"
                },
                st.problems,
                tail(&self.stderr.lock().unwrap())
            );
            st = self.inbox.cv.wait_timeout(st, left).unwrap().0;
        }
    }

    /// The response to `id` if it has arrived, without waiting.
    pub fn try_take(&self, id: &Value) -> Option<Value> {
        let mut st = self.inbox.state.lock().unwrap();
        st.pending
            .get_mut(&id.to_string())
            .and_then(VecDeque::pop_front)
    }

    pub fn call(&mut self, req: Value) -> Value {
        let id = self.send(req);
        self.wait(&id)
    }

    /// `workspace_exec` with `background: true` as one call: the start, then
    /// `workspace_wait` until the command ended; the wait's response (`{"record"}`). A
    /// response without a command id (a refusal, a record) comes back as it is.
    pub fn call_background(&mut self, req: Value) -> Value {
        let ws = req["workspace"].clone();
        let r = self.call(req);
        let Some(cmd) = r.get("command").and_then(Value::as_str).map(str::to_string) else {
            return r;
        };
        loop {
            let w = self.call(json!({"op": "workspace_wait", "workspace": ws, "command": cmd}));
            if w.get("running").is_none() {
                return w;
            }
        }
    }

    /// `op: run`; the record.
    pub fn run(&mut self, action: Value) -> Value {
        let r = self.call(json!({"op": "run", "action": action}));
        record(&r).clone()
    }

    pub fn start_session(&mut self) -> String {
        let r = self.call(json!({"op": "session_start"}));
        r["session"]
            .as_str()
            .unwrap_or_else(|| panic!("session_start failed: {r}"))
            .to_string()
    }

    /// `op: session_exec`; the whole response (a record, or an error).
    pub fn exec(&mut self, session: &str, code: &str) -> Value {
        self.call(json!({"op": "session_exec", "session": session, "code": code}))
    }

    pub fn exec_timeout(&mut self, session: &str, code: &str, timeout_s: f64) -> Value {
        self.call(
            json!({"op": "session_exec", "session": session, "code": code,
                         "timeout_s": timeout_s}),
        )
    }

    /// A call that must succeed; its record.
    pub fn exec_ok(&mut self, session: &str, code: &str) -> Value {
        let r = self.exec(session, code);
        let rec = record(&r);
        assert_eq!(
            rec["stop_reason"], "success",
            "call {code:?} failed: {rec:#}"
        );
        rec.clone()
    }

    pub fn stats(&mut self) -> Value {
        let r = self.call(json!({"op": "stats"}));
        r["stats"].clone()
    }

    /// Close this connection (EOF for the server).
    pub fn close(&mut self) {
        self.w = None;
        if let Some(s) = self.sock.take() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }

    /// Every request got exactly one response, every response was well formed and answered
    /// a request, and bad lines got their null-id errors. Waits for the server's EOF.
    pub fn assert_all_answered(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut st = self.inbox.state.lock().unwrap();
        while !st.eof && Instant::now() < deadline {
            st = self
                .inbox
                .cv
                .wait_timeout(st, Duration::from_millis(50))
                .unwrap()
                .0;
        }
        assert!(
            st.problems.is_empty(),
            "{}: malformed responses: {:?}",
            self.label,
            st.problems
        );
        let mut want: HashMap<String, usize> = HashMap::new();
        for id in &self.sent {
            *want.entry(id.clone()).or_default() += 1;
        }
        if self.null_errors > 0 {
            *want.entry("null".into()).or_default() += self.null_errors;
        }
        assert_eq!(
            st.answered, want,
            "{}: responses per id differ from requests per id",
            self.label
        );
    }
}

/// The record of a response, or a panic naming what came instead.
pub fn record(resp: &Value) -> &Value {
    resp.get("record")
        .unwrap_or_else(|| panic!("expected a record, got {resp}"))
}

/// The error code of a response, or a panic.
pub fn error_code(resp: &Value) -> &str {
    resp["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("expected an error, got {resp}"))
}

fn tail(s: &str) -> &str {
    let start = s.len().saturating_sub(4000);
    let start = (start..s.len())
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(s.len());
    &s[start..]
}

fn read_responses(r: Box<dyn Read + Send>, inbox: &Inbox) {
    let mut br = BufReader::new(r);
    loop {
        let mut line = Vec::new();
        match br.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let checked = check_response(&line);
        let mut st = inbox.state.lock().unwrap();
        match checked {
            Ok((key, v)) => {
                *st.answered.entry(key.clone()).or_default() += 1;
                st.pending.entry(key).or_default().push_back(v);
            }
            Err(e) => st.problems.push(e),
        }
        inbox.cv.notify_all();
    }
    inbox.state.lock().unwrap().eof = true;
    inbox.cv.notify_all();
}

/// One response line: whole (newline-terminated), one JSON object that agentjail's strict
/// reader and serde_json both read, an `id`, exactly one kind of answer, and a record that
/// is a record. Returns the id's JSON text and the value.
pub fn check_response(line: &[u8]) -> Result<(String, Value), String> {
    let show = || String::from_utf8_lossy(&line[..line.len().min(300)]).into_owned();
    let Some(body) = line.strip_suffix(b"\n") else {
        return Err(format!("unterminated line: {}", show()));
    };
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("{e}: {}", show()))?;
    let strict = agentjail_json::ReadLimits {
        max_depth: 256,
        max_bytes: 256 * 1024 * 1024,
        max_memory: usize::MAX,
        ..Default::default()
    };
    agentjail_json::parse_strict(body, &strict)
        .map_err(|e| format!("strict reader refuses a response ({e}): {}", show()))?;
    let obj = v
        .as_object()
        .ok_or_else(|| format!("not an object: {}", show()))?;
    let id = obj.get("id").ok_or_else(|| format!("no id: {}", show()))?;
    if !(id.is_string() || id.is_number() || id.is_null()) {
        return Err(format!("bad id: {}", show()));
    }
    let kinds = [
        "record",
        "error",
        "session",
        "closed",
        "decision",
        "stats",
        "workspace",
        "files",
        "listing",
        "stat",
        "removed",
        "command",
        "running",
        "learned",
    ];
    let present: Vec<&str> = kinds
        .iter()
        .copied()
        .filter(|k| obj.contains_key(*k))
        .collect();
    if present.len() != 1 || obj.len() != 2 {
        return Err(format!("not exactly one answer: {}", show()));
    }
    if let Some(r) = obj.get("record") {
        check_record(r).map_err(|e| format!("{e}: {}", show()))?;
    }
    if let Some(e) = obj.get("error") {
        let ok = e["code"].as_str().is_some_and(|c| !c.is_empty())
            && e["message"].as_str().is_some_and(|m| !m.is_empty());
        if !ok {
            return Err(format!("an error without code and message: {}", show()));
        }
    }
    Ok((id.to_string(), v))
}

/// The record's fixed keys, consistent with each other.
pub fn check_record(r: &Value) -> Result<(), String> {
    let run_id = r["run_id"].as_str().unwrap_or("");
    if run_id.len() != 36 || run_id.chars().filter(|&c| c == '-').count() != 4 {
        return Err(format!("bad run_id {run_id:?}"));
    }
    let status = r["status"].as_str().unwrap_or("");
    let reason = r["stop_reason"].as_str().unwrap_or("");
    if !matches!(status, "ok" | "stopped") || reason.is_empty() {
        return Err(format!("bad status/stop_reason {status:?} {reason:?}"));
    }
    if (status == "ok") != (reason == "success") {
        return Err(format!("status {status} with stop_reason {reason}"));
    }
    let phases = ["plan", "policy_check", "execute", "validate", "finalize"];
    if !r["phase"].as_str().is_some_and(|p| phases.contains(&p)) {
        return Err(format!("bad phase {}", r["phase"]));
    }
    if r.get("output").is_some() && status != "ok" {
        return Err("an output on a stopped record".into());
    }
    if !r["trace"].is_array() || !r["agentjail_version"].is_string() {
        return Err("no trace or version".into());
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Servers

/// One `agentjail serve` process.
pub struct Server {
    pub who: Who,
    pub pid: i32,
    pub marker: String,
    child: Option<Child>,
    /// The stdin/stdout connection (None with --socket).
    io: Option<Conn>,
    pub socket: Option<PathBuf>,
    pub stderr: Arc<Mutex<String>>,
    pub tracker: Tracker,
    before: HostState,
}

impl Server {
    /// `agentjail serve --policy POLICY ARGS...` as `who`. `marker` must appear in the
    /// command line of every process of its jails (the policy puts it in the interpreter's
    /// argv), so they can be found on the host. With `--socket PATH` in `args`, waits until
    /// the socket accepts.
    pub fn start(who: Who, policy: &Path, marker: &str, args: &[&str]) -> Server {
        Server::start_env(who, policy, marker, args, &[])
    }

    pub fn start_env(
        who: Who,
        policy: &Path,
        marker: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Server {
        Server::start_program(who, common::agentjail_path(), policy, marker, args, env)
    }

    /// As [`start_env`](Self::start_env), launching `program` (agentjail elsewhere, as
    /// [`common::agentjail_alone`]: what it finds next to itself differs).
    pub fn start_program(
        who: Who,
        program: &Path,
        policy: &Path,
        marker: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Server {
        let before = host_state();
        let socket = args
            .windows(2)
            .find(|w| w[0] == "--socket")
            .map(|w| PathBuf::from(w[1]));
        let mut c = command(who, program);
        c.arg("serve").arg("--policy").arg(policy).args(args);
        c.current_dir("/").stderr(Stdio::piped());
        for (k, v) in env {
            c.env(k, v);
        }
        if socket.is_some() {
            c.stdin(Stdio::null()).stdout(Stdio::null());
        } else {
            c.stdin(Stdio::piped()).stdout(Stdio::piped());
        }
        let mut child = c.spawn().expect("spawn agentjail serve");
        let pid = child.id() as i32;
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut err = child.stderr.take().unwrap();
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let io = socket.is_none().then(|| {
            let w = child.stdin.take().unwrap();
            let r = child.stdout.take().unwrap();
            Conn::new("io", Box::new(w), Box::new(r), None, Arc::clone(&stderr))
        });
        let server = Server {
            who,
            pid,
            marker: marker.to_string(),
            child: Some(child),
            io,
            socket,
            stderr,
            tracker: Tracker::start(pid),
            before,
        };
        if let Some(path) = &server.socket {
            let t = Instant::now();
            while UnixStream::connect(path).is_err() {
                assert!(
                    t.elapsed() < Duration::from_secs(20),
                    "serve never listened on {path:?}: {}",
                    server.stderr()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        server
    }

    /// The stdin/stdout connection.
    pub fn io(&mut self) -> &mut Conn {
        self.io.as_mut().expect("serve runs on a socket")
    }

    /// A new client connection (socket servers).
    pub fn connect(&self, label: &str) -> Conn {
        let path = self.socket.as_ref().expect("serve runs on stdin");
        Conn::connect(label, path, Arc::clone(&self.stderr))
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Poll `stats` until the pool has `n` ready jails (at most 30 s).
    pub fn wait_pool_ready(conn: &mut Conn, n: u64) {
        Server::wait_ready(conn, "pool", n);
    }

    /// Poll `stats` until the pool under `key` (`pool`, `session_pool`) has `n` ready jails
    /// (at most 30 s).
    pub fn wait_ready(conn: &mut Conn, key: &str, n: u64) {
        let t = Instant::now();
        loop {
            let s = conn.stats();
            if s[key]["ready"].as_u64() >= Some(n) {
                return;
            }
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "the {key} never had {n} ready jails: {s}"
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Session runners of this server now (host pids), by their command line.
    pub fn session_runners(&self) -> Vec<Proc> {
        self.tracker
            .sample()
            .into_iter()
            .filter(|p| {
                let c = cmdline(p.0);
                c.contains(&self.marker) && c.contains("agentjail_runner.py session")
            })
            .collect()
    }

    pub fn send_signal(&self, sig: i32) {
        // SAFETY: signalling our own child process, which we have not reaped.
        unsafe { libc::kill(self.pid, sig) };
    }

    /// Wait for the server to exit by itself (at most `within`); None when it did not.
    pub fn wait_exit(&mut self, within: Duration) -> Option<ExitStatus> {
        let child = self.child.as_mut().expect("already reaped");
        let t = Instant::now();
        loop {
            if let Some(s) = child.try_wait().unwrap() {
                self.child = None;
                return Some(s);
            }
            if t.elapsed() > within {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// End the server as a client would: EOF on stdin (stdin servers) or SIGTERM (socket
    /// servers); it must exit 0 within 60 s, every request must have had its response,
    /// and nothing of it may be left on the host.
    pub fn finish(mut self) -> String {
        if let Some(c) = self.io.as_mut() {
            c.close();
        } else {
            self.send_signal(libc::SIGTERM);
        }
        self.finish_exit()
    }

    /// After the server was told to exit: wait for it, then check responses and leftovers.
    pub fn finish_exit(mut self) -> String {
        let status = self.exit_within_60s();
        self.after_exit(status)
    }

    /// SIGTERM; the moment the server has exited (no settle time): none of its processes
    /// ever seen, nor any child of it (zombies included: one it never reaped is PID 1's
    /// now, and a process on the host until PID 1 gets round to it), exists any more, nor
    /// any process with its marker. Then as [`finish_exit`](Self::finish_exit).
    pub fn sigterm_leaves_nothing_at_exit(mut self) -> String {
        let mut procs: BTreeSet<Proc> = self.tracker.sample().into_iter().collect();
        procs.extend(self.tracker.seen());
        procs.extend(children_in_any_state(self.pid));
        self.send_signal(libc::SIGTERM);
        let status = self.exit_within_60s();
        let left: Vec<String> = procs
            .iter()
            .filter(|p| proc_stat(p.0).is_some_and(|(_, _, start)| start == p.1))
            .map(|p| format!("{} {:?} {:?}", p.0, proc_stat(p.0), cmdline(p.0)))
            .chain(
                live_with(&self.marker)
                    .iter()
                    .map(|p| format!("{p} marked")),
            )
            .collect();
        assert!(
            left.is_empty(),
            "{:?}: processes of serve {} still on the host when it had exited: {left:?}",
            self.who,
            self.pid
        );
        self.after_exit(status)
    }

    fn exit_within_60s(&mut self) -> ExitStatus {
        let status = self.wait_exit(Duration::from_secs(60));
        let Some(status) = status else {
            self.send_signal(libc::SIGKILL);
            let _ = self.wait_exit(Duration::from_secs(5));
            panic!(
                "serve did not exit within 60 s; stderr:\n{}",
                tail(&self.stderr())
            );
        };
        status
    }

    fn after_exit(mut self, status: ExitStatus) -> String {
        assert_eq!(
            status.code(),
            Some(0),
            "serve exited {status:?}; stderr:\n{}",
            tail(&self.stderr())
        );
        if let Some(c) = &self.io {
            c.assert_all_answered();
        }
        self.tracker.stop();
        let seen = self.tracker.seen();
        assert_no_leftovers(self.pid, &self.marker, &seen, &self.before);
        if let Some(s) = &self.socket {
            assert!(!s.exists(), "the socket file {s:?} was left behind");
        }
        self.stderr()
    }

    /// The host state before this server started.
    pub fn before(&self) -> &HostState {
        &self.before
    }
}

impl Server {
    /// SIGKILL the server, then require: every process of `procs` goes down
    /// (`common::down`: gone, exiting or with SIGKILL pending, so it never runs another
    /// instruction of its own) and then is gone, each before `common::HANG` (PDEATHSIG
    /// takes them with the server: without it they would live on, and only that fails; how
    /// soon is the benchmarks' business, not a test's); the server exits without
    /// answering `job`; its job cgroups are swept by the next launch (as root) and the
    /// host's mounts are as before. Returns how long until every process was down.
    pub fn sigkill_takes_everything(&mut self, procs: &[Proc], job: &Value) -> Duration {
        let who = self.who;
        self.send_signal(libc::SIGKILL);
        let t0 = Instant::now();
        // Once down, a process stays down: it is counted at the first look that finds it so,
        // and described, when it is not, as that same look saw it.
        let mut left: Vec<Proc> = procs.to_vec();
        let mut last_seen = HashMap::new();
        loop {
            left.retain(|p| {
                let stat = std::fs::read_to_string(format!("/proc/{}/stat", p.0));
                let up = !common::down(*p);
                if up {
                    last_seen.insert(p.0, stat.unwrap_or_default());
                }
                up
            });
            if left.is_empty() || t0.elapsed() >= common::HANG {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let took = t0.elapsed();
        let left: Vec<String> = left
            .iter()
            .map(|p| format!("{} {:?}: {:?}", p.0, cmdline(p.0), last_seen.get(&p.0)))
            .collect();
        assert!(
            left.is_empty(),
            "{who:?}: {} of {} processes outlived a SIGKILLed serve \
             (PDEATHSIG must take them with it): {left:?}",
            left.len(),
            procs.len()
        );
        let mut exiting = procs.to_vec();
        while !exiting.is_empty() && t0.elapsed() < common::HANG {
            exiting.retain(|p| alive(*p));
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            exiting.is_empty(),
            "{who:?}: killed processes still not gone after {:?}: {exiting:?}",
            common::HANG
        );
        eprintln!(
            "{who:?}: {} processes down within {took:?} after SIGKILL, all gone in {:?}",
            procs.len(),
            t0.elapsed()
        );
        assert!(self.wait_exit(Duration::from_secs(5)).is_some());
        assert!(
            self.io().try_take(job).is_none(),
            "a SIGKILLed serve answered"
        );
        // Its job cgroups could not be removed by it: the next launch sweeps them.
        let pid = self.pid;
        if common::is_root() {
            assert!(common::sweep_until(common::agentjail_path(), || {
                cgroups_of(pid).is_empty()
            }));
        }
        let cg = cgroups_of(pid);
        assert!(
            cg.is_empty(),
            "{who:?}: cgroups left after the sweep: {cg:?}"
        );
        assert_eq!(host_state().mounts, self.before().mounts);
        took
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // A failed test must not leave a server behind.
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
