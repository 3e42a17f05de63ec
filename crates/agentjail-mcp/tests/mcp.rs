//! `agentjail mcp` driven by the official MCP Python client (mcp==2.3.0, in the venv
//! scripts/setup.sh makes at `.venv-mcp/`), through both of its APIs: `mcp.Client` (which
//! probes `server/discover`, protocol 2026-07-28, before any handshake) and `stdio_client` +
//! `ClientSession.initialize()` (the 2025-11-25 handshake). The scenarios live in
//! tests/mcp/scenarios.py (beside this file); each test here runs one of them against the
//! real binary, launched as root and, where the launcher matters, as nobody (from a copy of
//! the binary nobody can reach, the workspace's tests/common).
//!
//! The server is launched as `agentjail-mcp mcp ...`: the binary this package's cargo just
//! built (`CARGO_BIN_EXE_agentjail-mcp`), and the very process `agentjail mcp ...` becomes
//! once it has exec'd it (same arguments, same pid). That exec, the agentjail binary's
//! `exec_server_binary` (src/mcp.rs), is tested once, with the agentjail that `cargo test`
//! at the workspace root builds beside it
//! (`agentjail_mcp_execs_its_sibling_and_the_sibling_serves_only_mcp`).
//!
//! The raw-protocol tests at the end (garbage on stdin, stdin closed mid-run, big integers)
//! speak JSON-RPC directly and need no venv.
//!
//! Without the venv the client tests are skipped loudly; under CI=true they fail.

// The workspace's test harness; its few unsafe calls (geteuid, atexit) are its own.
#[allow(unsafe_code)]
#[path = "../../../tests/common/mod.rs"]
mod common;

use common::Who;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The workspace root: the policies, the examples and the venv.
const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
/// This crate: tests/mcp/ (the scenarios).
const HERE: &str = env!("CARGO_MANIFEST_DIR");

/// The venv's python, or None (a loud skip; a failure under CI=true).
fn venv_python() -> Option<PathBuf> {
    let py = Path::new(ROOT).join(".venv-mcp/bin/python");
    let ok = py.exists()
        && Command::new(&py)
            .args([
                "-c",
                "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '2.3.0')",
            ])
            .status()
            .is_ok_and(|s| s.success());
    if ok {
        return Some(py);
    }
    common::require_feature(
        "the MCP client venv (.venv-mcp with mcp==2.3.0): run scripts/setup.sh",
        false,
    );
    None
}

/// The server's argv as `who` launches it.
fn server_command(who: Who, policy: Option<&Path>) -> Vec<String> {
    let mut cmd: Vec<String> = Vec::new();
    if who == Who::Nobody {
        cmd.extend(
            [
                "/usr/bin/setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--",
            ]
            .map(String::from),
        );
    }
    cmd.push(common::mcp_server_path().display().to_string());
    cmd.push("mcp".into());
    if let Some(p) = policy {
        cmd.push("--policy".into());
        cmd.push(p.display().to_string());
    }
    cmd
}

/// policies/data.toml as a file nobody can read; with cgroups best-effort when `who` is
/// nobody (no delegated cgroup for nobody on this host: the policy requires one).
fn data_policy(who: Who) -> PathBuf {
    shipped_policy(who, "data")
}

/// policies/NAME.toml as [`data_policy`] makes data.toml.
fn shipped_policy(who: Who, name: &str) -> PathBuf {
    let text = std::fs::read_to_string(Path::new(ROOT).join(format!("policies/{name}.toml")))
        .unwrap_or_else(|e| panic!("read policies/{name}.toml: {e}"));
    if who == Who::Nobody {
        let relaxed = text.replace(
            "[cgroup]\n",
            "[cgroup]\n# tests/mcp.rs: best-effort for a launch as nobody.\n",
        );
        let relaxed = relaxed.replacen(
            "requirement = \"required\"\n\n[environment]",
            "requirement = \"best_effort\"\n\n[environment]",
            1,
        );
        assert_ne!(relaxed, text, "{name}.toml's [cgroup] section moved");
        common::shared_file(&format!("{name}-nobody.toml"), &relaxed)
    } else {
        common::shared_file(&format!("mcp-{name}.toml"), &text)
    }
}

fn spawn_policy() -> PathBuf {
    let text = std::fs::read_to_string(Path::new(ROOT).join("tests/policies/spawn.toml"))
        .expect("read tests/policies/spawn.toml");
    common::shared_file("spawn.toml", &text)
}

/// Wait for `child` at most `limit`; kill it past that. Its output.
fn wait_bounded(mut child: Child, limit: Duration) -> (Option<i32>, String, String) {
    let t = Instant::now();
    loop {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("wait");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Run one scenario of tests/mcp/scenarios.py through both client APIs against a server
/// launched by `who`; fail with its output unless it passed.
fn scenario(name: &str, who: Who, policy: Option<&Path>, extra: Value) -> Option<String> {
    let py = venv_python()?;
    let mut cfg = json!({
        "command": server_command(who, policy),
        "apis": ["client", "session"],
        "action": format!("{ROOT}/examples/incident/action.json"),
    });
    if let (Some(c), Some(e)) = (cfg.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    let child = Command::new(py)
        .arg(format!("{HERE}/tests/mcp/scenarios.py"))
        .arg(name)
        .arg(cfg.to_string())
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the python client");
    let (code, out, err) = wait_bounded(child, Duration::from_secs(240));
    assert_eq!(
        code,
        Some(0),
        "scenario {name} as {who:?} failed:\n{out}\n--- stderr ---\n{err}"
    );
    for line in out.lines() {
        eprintln!("{line}");
    }
    Some(out)
}

fn each_launcher(f: impl Fn(Who)) {
    for who in common::variants() {
        f(who);
    }
}

#[test]
fn tools_are_listed_with_schemas_and_policy_descriptions() {
    scenario("tools", Who::Root, None, json!({}));
}

#[test]
fn the_seed_incident_job_returns_its_numbers() {
    each_launcher(|who| {
        scenario("incident", who, None, json!({}));
    });
}

#[test]
fn a_denied_import_names_rule_line_and_column() {
    scenario("denied_import", Who::Root, None, json!({}));
}

#[test]
fn a_timeout_keeps_partial_stdout_and_reports_progress() {
    each_launcher(|who| {
        scenario("timeout", who, None, json!({}));
    });
}

#[test]
fn a_session_keeps_its_globals_between_calls() {
    each_launcher(|who| {
        scenario("session", who, None, json!({}));
    });
}

#[test]
fn sessions_and_connections_cannot_see_each_other() {
    each_launcher(|who| {
        scenario("isolation", who, None, json!({}));
    });
}

#[test]
fn twenty_concurrent_calls_each_get_their_own_record() {
    each_launcher(|who| {
        scenario("concurrent", who, None, json!({}));
    });
}

#[test]
fn bad_arguments_are_tool_errors_the_model_can_read() {
    scenario("bad_arguments", Who::Root, None, json!({}));
}

/// Plots made with matplotlib under policies/data.toml come back as image/png: from a
/// session call (only new or changed files per call) and from run_python, where a text
/// artifact comes back as an embedded resource beside it.
#[test]
fn plots_arrive_as_image_png_and_other_artifacts_as_resources() {
    each_launcher(|who| {
        scenario("plot", who, Some(&data_policy(who)), json!({}));
    });
}

/// run_python's `files` reach the program read-only under /app/in; a bad path is refused by
/// the contract before any jail.
#[test]
fn input_files_reach_the_program_read_only() {
    each_launcher(|who| {
        scenario("files", who, Some(&data_policy(who)), json!({}));
    });
}

/// examples/agent: the scripted model's first draft imports `os` and is refused with rule,
/// line and column; its fix gets the seed's numbers; its plot (matplotlib in a session under
/// policies/data.toml) comes back as image/png and is saved.
#[test]
fn the_example_agent_fixes_its_code_gets_the_numbers_and_plots() {
    let Some(py) = venv_python() else { return };
    let out_dir = tempfile::tempdir().unwrap();
    let child = Command::new(py)
        .arg(format!("{ROOT}/examples/agent/agent.py"))
        .arg("--agentjail")
        .arg(common::mcp_server_path())
        .arg("--data-policy")
        .arg(data_policy(Who::Root))
        .arg("--out")
        .arg(out_dir.path())
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the example agent");
    let (code, out, err) = wait_bounded(child, Duration::from_secs(180));
    eprintln!("{out}");
    let refused = out
        .lines()
        .find(|l| l.contains("static_policy_violation"))
        .unwrap_or("");
    assert!(
        refused.contains(r#"{"rule": "import_not_allowed:os", "line": 2, "column": 8}"#),
        "the first draft was not refused with rule, line and column:\n{out}\n{err}"
    );
    assert!(
        out.contains("metrics: severity P1, failed rate 0.03333333333333333, chargebacks 1, avg 167.0 ms, p95 187.0 ms, sample 60"),
        "the fixed program's numbers:\n{out}\n{err}"
    );
    assert_eq!(code, Some(0), "the example agent failed:\n{out}\n{err}");
    let png = std::fs::read(out_dir.path().join("latency.png")).expect("the saved plot");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{out}");
}

// ------------------------------------------------------------ the client killed mid-run

/// The server's pid: the agentjail-mcp process whose arguments carry `marker`.
fn server_pid(marker: &str) -> Option<u32> {
    let bin = common::mcp_server_path().display().to_string();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmd
            .split(|&b| b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.first() == Some(&bin) && args.iter().any(|a| a.contains(marker)) {
            return Some(pid);
        }
    }
    None
}

fn job_cgroups_of(pid: u32) -> Vec<String> {
    let needle = format!("agentjail-{pid}-");
    let mut found = Vec::new();
    let mut stack = vec![PathBuf::from("/sys/fs/cgroup")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                if e.file_name().to_string_lossy().starts_with(&needle) {
                    found.push(e.path().display().to_string());
                }
                stack.push(e.path());
            }
        }
    }
    found
}

fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    f()
}

/// Kill the Python client (SIGKILL) while a call runs and a session is open: the server
/// sees its stdin close and its stdout break, stops the job, ends the session, and exits;
/// every jail process (the call's, the session's, the pool's) is gone and no job cgroup of
/// the server is left.
#[test]
fn the_client_killed_mid_run_leaves_no_jail_behind() {
    let Some(py) = venv_python() else { return };
    for who in common::variants() {
        for api in ["client", "session"] {
            let marker = common::marker("mcpkill");
            let text = std::fs::read_to_string(spawn_policy()).unwrap();
            let policy = common::shared_file(&format!("{marker}.toml"), &text);
            let cfg = json!({
                "command": server_command(who, Some(&policy)),
                "apis": [api],
                "long_code": "n = 0\nwhile True:\n    n += 1\n",
            });
            let mut child = Command::new(&py)
                .arg(format!("{HERE}/tests/mcp/scenarios.py"))
                .arg("long_run")
                .arg(cfg.to_string())
                .current_dir("/")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn the python client");
            let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
            let running = lines.next().and_then(Result::ok);
            assert_eq!(
                running.as_deref(),
                Some("RUNNING"),
                "{who:?}/{api}: the call did not start: {:?}",
                wait_bounded(child, Duration::from_secs(5))
            );
            let server = server_pid(&marker).expect("the server process");
            let jails = common::descendants(server as i32);
            assert!(
                !jails.is_empty(),
                "{who:?}/{api}: no jail process under the server"
            );
            let t = Instant::now();
            child.kill().expect("kill the client");
            let _ = child.wait();
            assert!(
                wait_until(Duration::from_secs(10), || {
                    common::proc_stat(server as i32).is_none_or(|(_, s, _)| s == 'Z' || s == 'X')
                }),
                "{who:?}/{api}: the server outlived its client"
            );
            let exited_after = t.elapsed();
            let left: Vec<common::Proc> = jails
                .iter()
                .copied()
                .filter(|&p| common::alive(p))
                .collect();
            assert!(
                wait_until(Duration::from_secs(5), || jails
                    .iter()
                    .all(|&p| !common::alive(p))),
                "{who:?}/{api}: jail processes left: {left:?}"
            );
            assert!(
                job_cgroups_of(server).is_empty(),
                "{who:?}/{api}: job cgroups left: {:?}",
                job_cgroups_of(server)
            );
            eprintln!(
                "{who:?}/{api}: client killed; server {server} and its {} jail processes gone after {exited_after:?}",
                jails.len()
            );
        }
    }
}

// ------------------------------------------------------------ raw JSON-RPC, no venv needed

/// agentjail-mcp serves nothing but `mcp`; `agentjail mcp` execs agentjail-mcp from its own
/// directory (the same process answers: its pid is agentjail's), and without it exits 2
/// with the fix.
#[test]
fn agentjail_mcp_execs_its_sibling_and_the_sibling_serves_only_mcp() {
    let out = Command::new(common::mcp_server_path())
        .args(["run", "-"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("serves `agentjail mcp` only"));
    let agentjail = common::agentjail_path();
    if !common::require_feature(
        "agentjail built beside agentjail-mcp (cargo build or cargo test at the workspace root builds both)",
        agentjail.is_file(),
    ) {
        return;
    }
    let mut s = Raw::start_as(agentjail, &["--pool", "0"]);
    s.initialize();
    let exe = std::fs::read_link(format!("/proc/{}/exe", s.child.id())).expect("the server's exe");
    assert_eq!(
        exe,
        common::mcp_server_path(),
        "agentjail mcp did not exec its sibling"
    );
    let (code, err) = common::run_alone(&["mcp"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("agentjail-mcp") && err.contains("install"),
        "{err}"
    );
}

/// A server on pipes, its stdout read by a thread into a channel of lines.
struct Raw {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Raw {
    fn start(args: &[&str]) -> Raw {
        Raw::start_as(&common::mcp_server_path(), args)
    }

    /// `bin mcp args...`: agentjail-mcp, or agentjail, which execs it.
    fn start_as(bin: &Path, args: &[&str]) -> Raw {
        let mut child = Command::new(bin)
            .arg("mcp")
            .args(args)
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn agentjail mcp");
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    return;
                }
            }
        });
        Raw { child, lines: rx }
    }

    fn send(&mut self, line: &[u8]) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn recv(&self) -> Value {
        let l = self
            .lines
            .recv_timeout(Duration::from_secs(30))
            .expect("a response line within 30 s");
        serde_json::from_str(&l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))
    }

    /// The response to request `id` (notifications in between skipped).
    fn response(&self, id: &Value) -> Value {
        loop {
            let v = self.recv();
            if v.get("id") == Some(id) {
                return v;
            }
        }
    }

    fn initialize(&mut self) {
        self.send(br#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#);
        let r = self.response(&json!("init"));
        assert_eq!(r["result"]["protocolVersion"], "2025-11-25", "{r}");
        self.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    }

    fn call(&mut self, id: i64, name: &str, args: Value) -> Value {
        let req = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                         "params": {"name": name, "arguments": args}});
        self.send(req.to_string().as_bytes());
        self.response(&json!(id))
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn error_code(v: &Value) -> i64 {
    v["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no error: {v}"))
}

#[test]
fn garbage_on_stdin_gets_json_rpc_errors_and_the_server_goes_on() {
    let mut s = Raw::start(&["--pool", "0"]);
    // Before the handshake: garbage, a stray notification, a response nobody asked for.
    s.send(b"hello, are you a JSON-RPC server?");
    let e = s.recv();
    assert_eq!((error_code(&e), &e["id"]), (-32700, &Value::Null), "{e}");
    s.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    s.send(br#"{"jsonrpc":"2.0","id":77,"result":{}}"#);
    s.send(b"\xff\xfe\x00garbage");
    assert_eq!(error_code(&s.recv()), -32700);
    s.initialize();
    // After it: every kind of bad line gets its error; the server answers the next request.
    s.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,");
    assert_eq!(error_code(&s.recv()), -32700);
    s.send(br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"1","code":"2"}}}"#);
    assert_eq!(error_code(&s.recv()), -32700, "a duplicate key is refused");
    s.send(br#"{"id":3,"params":[]}"#);
    let e = s.recv();
    assert_eq!((error_code(&e), &e["id"]), (-32600, &json!(3)), "{e}");
    s.send(br#"[{"jsonrpc":"2.0","id":4,"method":"ping"}]"#);
    assert_eq!(error_code(&s.recv()), -32600, "batches are not MCP");
    s.send(br#"{"jsonrpc":"2.0","id":5,"method":"no/such/method"}"#);
    assert_eq!(error_code(&s.response(&json!(5))), -32601);
    s.send(br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"rm_rf","arguments":{}}}"#);
    let e = s.response(&json!(6));
    assert_eq!(error_code(&e), -32602, "unknown tool: {e}");
    // A tools/call whose params do not fit is invalid params, with a message that says why.
    for (i, params) in [
        "",
        r#","params":{"name":"run_python","arguments":7}"#,
        r#","params":{"arguments":{}}"#,
        r#","params":{"name":5,"arguments":{}}"#,
        r#","params":[]"#,
    ]
    .iter()
    .enumerate()
    {
        let id = 100 + i as i64;
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call"{params}}}"#);
        s.send(line.as_bytes());
        let e = s.response(&json!(id));
        assert_eq!(error_code(&e), -32602, "{line}: {e}");
        let m = e["error"]["message"].as_str().unwrap_or("");
        assert!(
            m.starts_with("Invalid params: ") && m.contains("name"),
            "{m}"
        );
    }
    s.send(&vec![b'x'; 200_000]);
    assert_eq!(error_code(&s.recv()), -32700);
    s.send(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#);
    let r = s.response(&json!(7));
    assert_eq!(
        r["result"]["tools"].as_array().map(Vec::len),
        Some(5),
        "{r}"
    );
    let r = s.call(
        8,
        "run_python",
        json!({"code": "import json\nprint(json.dumps({'alive': True}))"}),
    );
    assert_eq!(
        r["result"]["structuredContent"]["output"],
        json!({"alive": true}),
        "{r}"
    );
    assert_eq!(r["result"]["isError"], json!(false));
}

/// Polyglot artifacts: an XHTML page with a script and an inline `<svg>` (named `.svg`) is
/// typed by its root element (text/html) and travels as a resource; a real SVG (it can
/// hold script) also travels as a resource; only a raster image is MCP image content.
#[test]
fn active_artifacts_never_travel_as_images() {
    let policy = data_policy(Who::Root);
    let mut s = Raw::start(&["--pool", "0", "--policy", policy.to_str().unwrap()]);
    s.initialize();
    let code = r#"
page = "<?xml version='1.0'?><html xmlns='x'><head><script>alert(1)</script></head><body><svg/></body></html>"
with open('/app/out/page.svg', 'w') as f:
    f.write(page)
with open('/app/out/real.svg', 'w') as f:
    f.write("<svg xmlns='y'><script>alert(2)</script></svg>")
with open('/app/out/note.xml', 'w') as f:
    f.write("<?xml version='1.0'?><!-- <svg> --><note><svg/></note>")
with open('/app/out/dot.png', 'wb') as f:
    f.write(b'\x89PNG\r\n\x1a\n' + bytes(16))
print('{}')
"#;
    let r = s.call(1, "run_python", json!({ "code": code }));
    let rec = &r["result"]["structuredContent"];
    assert_eq!(rec["stop_reason"], "success", "{r:#}");
    let types: std::collections::BTreeMap<String, String> = rec["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let t = a["media_type"].as_str().unwrap().to_string();
            (a["path"].as_str().unwrap().to_string(), t)
        })
        .collect();
    assert_eq!(types["page.svg"], "text/html", "{types:?}");
    assert_eq!(types["real.svg"], "image/svg+xml");
    assert_eq!(types["note.xml"], "application/xml");
    assert_eq!(types["dot.png"], "image/png");
    let blocks = r["result"]["content"].as_array().unwrap();
    let images: Vec<&Value> = blocks.iter().filter(|b| b["type"] == "image").collect();
    assert_eq!(images.len(), 1, "only the PNG is an image: {blocks:#?}");
    assert_eq!(images[0]["mimeType"], "image/png");
    for name in ["page.svg", "real.svg", "note.xml"] {
        let res = blocks
            .iter()
            .find(|b| {
                b["type"] == "resource"
                    && b["resource"]["uri"].as_str().unwrap_or("").ends_with(name)
            })
            .unwrap_or_else(|| panic!("{name} is not a resource: {blocks:#?}"));
        assert_eq!(res["resource"]["mimeType"], types[name]);
        assert!(res["resource"]["text"].is_string(), "{res}");
    }
}

/// The server's peak resident memory (VmHWM), in KiB; None once it is gone.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// A client that stops reading stdout while its calls return ~2 MiB records: the server
/// queues at most 32 MiB of them, then treats the client as gone (running calls stopped,
/// input ended) and exits by itself; its memory stays bounded (unbounded, 60 such records
/// would be ~120 MiB).
#[test]
fn a_client_that_stops_reading_is_treated_as_gone() {
    let policy = data_policy(Who::Root);
    let mut child = Command::new(common::mcp_server_path())
        .args(["mcp", "--pool", "1", "--policy", policy.to_str().unwrap()])
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut err = child.stderr.take().unwrap();
    let err_text = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    stdin.write_all(br#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
"#).unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("protocolVersion"), "{line}");
    let base = peak_rss_kib(pid).unwrap();
    // From here on nothing is read from stdout.
    let code = "import json\nprint(json.dumps({'x': 'y' * 900000}))";
    for i in 0..60 {
        let req = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                         "params": {"name": "run_python", "arguments": {"code": code}}});
        if stdin.write_all(format!("{req}\n").as_bytes()).is_err() {
            break;
        }
    }
    let t = Instant::now();
    let mut peak = base;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if let Some(p) = peak_rss_kib(pid) {
            peak = peak.max(p);
        }
        if t.elapsed() > Duration::from_secs(180) {
            let _ = child.kill();
            let _ = child.wait();
            drop(stdin);
            panic!(
                "agentjail mcp never gave up on a client that does not read: {}",
                err_text.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    let err = err_text.join().unwrap();
    assert!(err.contains("unread"), "{status:?}: {err}");
    let grown = peak - base;
    assert!(
        grown < 100 * 1024,
        "agentjail mcp grew by {grown} KiB: {err}"
    );
    eprintln!("mcp: grew {grown} KiB before giving up; {status:?}");
    drop(stdout);
}

#[test]
fn mcp_zygote_jails_serve_run_python_one_job_each() {
    if !common::zygote_built() {
        return;
    }
    // The jobs themselves are attacked in tests/frontends/zygote.rs (serve, the same engine):
    // here, that the flags reach the engine through agentjail mcp: the zygote by default and
    // with --zygote, never with --no-zygote.
    for (args, want) in [
        (&["--pool", "1"][..], true),
        (&["--zygote", "--pool", "1"][..], true),
        (&["--no-zygote", "--pool", "1"][..], false),
    ] {
        let mut s = Raw::start(args);
        s.initialize();
        for id in 1..=3 {
            let r = s.call(
                id,
                "run_python",
                json!({"code": "import json\nprint(json.dumps({'n': 6 * 7}))"}),
            );
            let rec = &r["result"]["structuredContent"];
            assert_eq!(r["result"]["isError"], json!(false), "{args:?}: {r}");
            assert_eq!(rec["output"]["n"], json!(42), "{args:?}: {r}");
            let zygote = rec["enforcement"]
                .as_array()
                .is_some_and(|a| a.iter().any(|c| c["mechanism"] == "zygote fork"));
            // The first call may find the pool still filling (a cold jail); the rest are warm.
            if id > 1 || !want {
                assert_eq!(zygote, want, "{args:?}: call {id}: {r}");
            }
        }
        let pid = s.child.id() as i32;
        let template = common::descendants(pid)
            .into_iter()
            .any(|p| common::cmdline(p.0).contains("agentjail-zygote"));
        assert_eq!(
            template, want,
            "{args:?}: the zygote template under agentjail mcp"
        );
    }
}

#[test]
fn big_integers_and_unicode_reach_the_program_intact_and_leave_escaped() {
    let mut s = Raw::start(&["--pool", "0"]);
    s.initialize();
    let payload = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"import json\nd = json.loads(input())\nprint(json.dumps({'n': d['n'], 'n1': d['n'] + 1, 't': d['t'] + '\u2028\u202e'}))","input":{"n":123456789012345678901234567890,"t":"caf\u00e9"}}}}"#;
    s.send(payload.as_bytes());
    let raw = s
        .lines
        .recv_timeout(Duration::from_secs(30))
        .expect("a response");
    // Safe JSON out: the program's U+2028 and bidi override are escaped, never raw.
    assert!(
        !raw.contains('\u{2028}') && !raw.contains('\u{202e}'),
        "{raw}"
    );
    assert!(raw.contains("123456789012345678901234567891"), "{raw}");
    let v: Value = serde_json::from_str(&raw).unwrap();
    let out = &v["result"]["structuredContent"]["output"];
    assert_eq!(
        out["n"].to_string(),
        "123456789012345678901234567890",
        "{v}"
    );
    assert_eq!(out["t"], json!("café\u{2028}\u{202e}"));
}

/// MCP's stdio shutdown (the client closes stdin) stops a running call at once: the server
/// exits well before the job's own limit, and leaves no jail or cgroup.
#[test]
fn closing_stdin_mid_run_stops_the_job_and_exits() {
    let policy = spawn_policy();
    let mut s = Raw::start(&["--policy", &policy.display().to_string()]);
    s.initialize();
    let server = s.child.id();
    s.send(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"while True:\n    pass\n"},"_meta":{"progressToken":"p1"}}}"#);
    let started = s.recv();
    assert_eq!(started["method"], "notifications/progress", "{started}");
    assert_eq!(started["params"]["progressToken"], "p1");
    assert!(wait_until(Duration::from_secs(5), || {
        !common::descendants(server as i32).is_empty()
    }));
    let jails = common::descendants(server as i32);
    let t = Instant::now();
    drop(s.child.stdin.take());
    let status = loop {
        if let Some(st) = s.child.try_wait().unwrap() {
            break st;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the server did not exit"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = t.elapsed();
    assert_eq!(status.code(), Some(0));
    assert!(
        took < Duration::from_secs(5),
        "exit took {took:?} (the job's limit is 30 s)"
    );
    // The stopped call still got its record, if anyone was reading.
    let mut stop = None;
    while let Ok(l) = s.lines.recv_timeout(Duration::from_secs(2)) {
        let v: Value = serde_json::from_str(&l).unwrap();
        if v["id"] == json!(1) {
            stop = v["result"]["structuredContent"]["stop_reason"]
                .as_str()
                .map(String::from);
        }
    }
    assert_eq!(stop.as_deref(), Some("interrupted:sigterm"));
    assert!(
        jails.iter().all(|&p| !common::alive(p)),
        "jail processes left"
    );
    assert!(job_cgroups_of(server).is_empty(), "job cgroups left");
    eprintln!(
        "stdin closed: exit 0 after {took:?}, {} jail processes gone",
        jails.len()
    );
}

/// `run_javascript` exists where the policy executes JavaScript (data.toml) and nowhere else;
/// the seed's incident job in JavaScript comes back with the seed's numbers, and the check's
/// refusals reach the model with rule, line and column.
#[test]
fn run_javascript_is_listed_only_where_the_policy_runs_javascript() {
    if !common::is_root() {
        eprintln!("note: data.toml requires cgroups; this test runs as root");
        return;
    }
    let policy = format!("{ROOT}/policies/data.toml");
    let mut s = Raw::start(&["--policy", &policy, "--pool", "1"]);
    s.initialize();
    s.send(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    let r = s.response(&json!(1));
    let names: Vec<&str> = r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"run_javascript"), "{names:?}");
    let example: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{ROOT}/examples/incident/action.js.json")).unwrap(),
    )
    .unwrap();
    let r = s.call(
        2,
        "run_javascript",
        json!({"code": example["code"], "input": example["input_payload"],
               "output_schema": example["output_schema"]}),
    );
    let rec = &r["result"]["structuredContent"];
    assert_eq!(rec["stop_reason"], "success", "{r}");
    assert_eq!(rec["action"]["language"], "javascript");
    assert_eq!(rec["output"]["incident_severity"], "P1", "{rec}");
    assert_eq!(rec["output"]["p95_latency_ms"], 187, "{rec}");
    assert_eq!(rec["output"]["sample_size"], 60, "{rec}");
    let r = s.call(
        3,
        "run_javascript",
        json!({"code": "const cp = require('child_process');\nconsole.log('{}')"}),
    );
    let rec = &r["result"]["structuredContent"];
    assert_eq!(r["result"]["isError"], json!(true));
    let v = &rec["decision"]["violations"][0];
    assert_eq!(
        (v["line"].as_u64(), rec["status"].as_str()),
        (Some(1), Some("stopped")),
        "{rec}"
    );
    assert!(
        v["rule"].as_str().unwrap().contains("child_process")
            || v["detail"].as_str().unwrap_or("").contains("child_process"),
        "{rec}"
    );
    // `files` is not an argument of run_javascript: said, not dropped.
    let r = s.call(4, "run_javascript", json!({"code": "1", "files": []}));
    assert_eq!(r["result"]["isError"], json!(true), "{r}");

    // The embedded default executes Python only: no such tool, and calling it is an error.
    let mut d = Raw::start(&["--pool", "0"]);
    d.initialize();
    d.send(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    let r = d.response(&json!(1));
    assert_eq!(
        r["result"]["tools"].as_array().map(Vec::len),
        Some(5),
        "{r}"
    );
    let e = d.call(2, "run_javascript", json!({"code": "1"}));
    assert_eq!(error_code(&e), -32602, "{e}");
}

/// With a progressToken, a workspace command's and a session call's output come as progress
/// messages while they run, well before the result, and are the record's output.
#[test]
fn output_streams_as_progress_messages() {
    scenario(
        "stream",
        Who::Root,
        Some(&shipped_policy(Who::Root, "workspace")),
        json!({}),
    );
}

/// The workspace tools, listed under policies/workspace.toml: a file put, a test run, its
/// result read back as text, and nothing of it visible to another connection.
#[test]
fn workspace_tools_keep_files_and_run_commands() {
    each_launcher(|who| {
        scenario(
            "workspace",
            who,
            Some(&shipped_policy(who, "workspace")),
            json!({}),
        );
    });
}

/// docs/REFERENCE.md's smolagents snippet as written, through smolagents' own
/// `ToolCollection.from_mcp` (mcpadapt; the venv scripts/setup.sh makes at `.venv-smolmcp/`,
/// pinned in tests/mcp/requirements-smolagents.txt) and a `ToolCallingAgent` whose model is
/// scripted: run_python with `code` alone, then with every optional argument null, both
/// accepted (the schemas mark them nullable, the server reads null as absent) and their
/// output back to the model. `agentjail` is found on PATH, as the snippet names it.
#[test]
fn smolagents_tool_collection_from_mcp_runs_the_reference_snippet() {
    let py = Path::new(ROOT).join(".venv-smolmcp/bin/python");
    let ready = py.exists()
        && Command::new(&py)
            .args(["-c", "import mcpadapt.core, smolagents"])
            .status()
            .is_ok_and(|s| s.success());
    if !common::require_feature(
        "smolagents' MCP client venv (.venv-smolmcp): run scripts/setup.sh",
        ready,
    ) {
        return;
    }
    let agentjail = common::agentjail_path();
    if !common::require_feature(
        "agentjail built beside agentjail-mcp (cargo build or cargo test at the workspace root builds both)",
        agentjail.is_file(),
    ) {
        return;
    }
    let bin = tempfile::tempdir().expect("a PATH directory");
    std::os::unix::fs::symlink(agentjail, bin.path().join("agentjail")).expect("link agentjail");
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let child = Command::new(&py)
        .arg(format!("{HERE}/tests/mcp/smolagents_from_mcp.py"))
        .arg(format!("{ROOT}/docs/REFERENCE.md"))
        .env("PATH", path)
        .current_dir(bin.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the smolagents script");
    let (code, out, err) = wait_bounded(child, Duration::from_secs(240));
    let tail = |t: &str| {
        t.chars()
            .rev()
            .take(4000)
            .collect::<String>()
            .chars()
            .rev()
            .collect::<String>()
    };
    assert_eq!(
        code,
        Some(0),
        "{}\n--- stderr ---\n{}",
        tail(&out),
        tail(&err)
    );
    assert!(out.contains("ok smolagents_from_mcp"), "{}", tail(&out));
}

/// The shipped policies/net.toml, its allowlist pointed at the test site (nothing else
/// edited): run_python fetches with urllib.request, http.client and, where the host has it,
/// requests; a port no list names is refused; the record's `network.requests` lists them.
#[test]
fn the_shipped_net_policy_fetches_through_run_python() {
    each_launcher(|who| {
        let shipped = std::fs::read_to_string(Path::new(ROOT).join("policies/net.toml"))
            .expect("policies/net.toml");
        let text = common::site::net_policy_text(&shipped);
        let policy = common::shared_file(&format!("mcp-net-{who:?}.toml"), &text);
        let requests = if common::site::host_has_requests() {
            "OK-BODY"
        } else {
            "missing"
        };
        let cfg = json!({
            "port": common::site::port(),
            "fetch_code": common::site::net_fetch_code(),
            "requests": requests,
            "apis": ["client"],
        });
        scenario("net_policy", who, Some(&policy), cfg);
    });
}

/// run_python and a session under a network allowlist naming the test site
/// (tests/common/site.rs, on the host's loopback): each record's `network.requests` holds
/// the allowed fetch and the denied host; once the server has gone, no jail process is left.
#[test]
fn the_allowlist_holds_through_run_python_and_sessions() {
    each_launcher(|who| {
        let marker = common::marker("mcpnet");
        let default = std::fs::read_to_string(Path::new(ROOT).join("policies/default.toml"))
            .expect("policies/default.toml");
        let text = common::site::default_policy_text(&default, &marker);
        let policy = common::shared_file(&format!("{marker}.toml"), &text);
        let cfg = json!({
            "port": common::site::port(),
            "fetch_code": common::site::fetch_both_code(),
        });
        if scenario("network", who, Some(&policy), cfg).is_none() {
            return;
        }
        assert!(
            wait_until(Duration::from_secs(5), || common::serve::live_with(&marker)
                .is_empty()),
            "{who:?}: jail processes left: {:?}",
            common::serve::live_with(&marker)
        );
    });
}
