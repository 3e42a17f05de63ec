//! Workspaces (`workspace_*` ops) attacked through `agentjail serve`, as root and as nobody:
//! a command cannot leave /workspace (symlinks, `..`, hard links, /proc/self/cwd, init's
//! root), cannot fill it past its caps (bytes, inodes, a sparse file), leaves no process
//! behind its call (unless `background`) or its workspace's close, cannot see or signal
//! another workspace; put and get never follow what the code planted and never read a FIFO
//! or a huge sparse file; env names that load code are refused before anything runs; 100
//! workspaces of 20 commands each leave nothing behind.
//!
//! The policy is policies/workspace.toml with the test marker in the interpreter's argv (the
//! workspace runner's), a small /workspace, and cgroups best effort (as the other serve
//! tests: not every CI host delegates them).

use super::{assert_gone, Server};
use crate::common::serve::{error_code, live_with, record, Conn};
use crate::common::{self, variants};
use serde_json::{json, Value};
use std::path::PathBuf;

fn policy(marker: &str, size: &str, inodes: u64) -> PathBuf {
    let shipped = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/workspace.toml"),
    )
    .expect("policies/workspace.toml");
    let text = shipped
        .replace(
            "python_args = [\"-I\", \"-B\", \"-X\", \"utf8\"]",
            &format!("python_args = [\"-I\", \"-B\", \"-X\", \"utf8\", \"-Wignore:{marker}\"]"),
        )
        .replace("size = \"512MiB\"", &format!("size = \"{size}\""))
        .replace("inodes = 65536", &format!("inodes = {inodes}"))
        .replace(
            "requirement = \"required\"\n\n[environment]",
            "requirement = \"best_effort\"\n\n[environment]",
        )
        .replace("wall_time_ms = 30000", "wall_time_ms = 20000")
        .replace("stdout = \"1MiB\"", "stdout = \"64KiB\"");
    assert!(text.contains(marker), "the marker went into the policy");
    common::shared_file(&format!("ws-{marker}.toml"), &text)
}

fn start(conn: &mut Conn) -> String {
    let r = conn.call(json!({"op": "workspace_start"}));
    r["workspace"]
        .as_str()
        .unwrap_or_else(|| panic!("workspace_start failed: {r}"))
        .to_string()
}

/// One shell command; its record.
fn sh(conn: &mut Conn, ws: &str, command: &str) -> Value {
    let r = conn.call(json!({"op": "workspace_exec", "workspace": ws, "command": command}));
    record(&r).clone()
}

fn out(rec: &Value) -> &str {
    rec["execution"]["stdout"].as_str().unwrap_or("")
}

/// The command ran to its end in a workspace that lives on.
fn assert_ran(rec: &Value) {
    assert_eq!(rec["workspace"]["ended"], false, "{rec:#}");
    assert!(rec["execution"]["exit_code"].is_i64(), "{rec:#}");
    assert_eq!(rec["decision"]["reason"], "not_checked", "{rec:#}");
}

fn put(conn: &mut Conn, ws: &str, files: Value) -> Value {
    conn.call(json!({"op": "workspace_put", "workspace": ws, "files": files}))
}

fn get(conn: &mut Conn, ws: &str, paths: &[&str]) -> Vec<Value> {
    let r = conn.call(json!({"op": "workspace_get", "workspace": ws, "paths": paths}));
    r["files"]
        .as_array()
        .unwrap_or_else(|| panic!("workspace_get failed: {r}"))
        .clone()
}

fn close(conn: &mut Conn, ws: &str) {
    let r = conn.call(json!({"op": "workspace_close", "workspace": ws}));
    assert_eq!(r["closed"], true, "{r}");
}

#[test]
fn commands_run_and_files_move_in_and_out() {
    for who in variants() {
        let m = common::marker("ws-basic");
        let p = policy(&m, "16MiB", 1024);
        let mut s = Server::start(who, &p, &m, &["--pool", "1"]);
        let c = s.io();
        let ws = start(c);
        let r = put(
            c,
            &ws,
            json!([{"path": "src/t.py", "content": "import sys\nprint(sys.stdin.read().upper())\n"},
                                   {"path": "/workspace/data.bin", "content_base64": "AAEC"}]),
        );
        assert_eq!(r["files"][0]["bytes"], 43, "{r}");
        let rec = record(&c.call(json!({"op": "workspace_exec", "workspace": ws,
            "argv": ["python3", "src/t.py"], "stdin": "abc", "env": {"FOO": "bar"}})))
        .clone();
        assert_eq!(rec["stop_reason"], "success", "{rec:#}");
        assert_eq!(out(&rec), "ABC\n");
        let rec = record(&c.call(json!({"op": "workspace_exec", "workspace": ws,
            "command": "echo $FOO > made.txt; pwd; id -u", "env": {"FOO": "bar"}, "cwd": "src"})))
        .clone();
        assert_eq!(out(&rec), "/workspace/src\n1000\n", "{rec:#}");
        let rec = sh(c, &ws, "exit 3");
        assert_eq!(rec["stop_reason"], "code_runtime_error:3");
        assert_ran(&rec);
        let rec = sh(c, &ws, "yes | head -c 200000");
        assert_eq!(rec["execution"]["stdout_truncated"], true, "{rec:#}");
        assert_eq!(rec["execution"]["stdout_bytes"], 200000);
        assert_eq!(out(&rec).len(), 64 * 1024);
        let rec = c.call(json!({"op": "workspace_exec", "workspace": ws, "command": "sleep 30", "timeout_s": 0.5}));
        let rec = record(&rec).clone();
        assert_eq!(rec["stop_reason"], "code_timeout", "{rec:#}");
        assert_eq!(
            rec["workspace"]["ended"], false,
            "a timeout ends the command only"
        );
        let files = get(c, &ws, &["src/made.txt", "/workspace/data.bin", "nope"]);
        assert_eq!(files[0]["content_base64"], "YmFyCg==", "{files:?}");
        assert_eq!(files[1]["bytes"], 3);
        assert_eq!(files[2]["error"], "not_found");
        close(c, &ws);
        let r = c.call(json!({"op": "workspace_exec", "workspace": ws, "command": "true"}));
        assert_eq!(error_code(&r), "unknown_workspace");
        s.finish();
    }
}

#[test]
fn a_command_cannot_leave_its_workspace() {
    for who in variants() {
        let m = common::marker("ws-escape");
        let p = policy(&m, "16MiB", 1024);
        let mut s = Server::start(who, &p, &m, &["--pool", "1"]);
        let c = s.io();
        let ws = start(c);
        let host_file = common::shared_file(&format!("ws-escape-{m}.txt"), "host secret\n");
        let hf = host_file.display().to_string();
        let script = format!(
            r#"ln -s {hf} sl; cat sl 2>&1 || echo no-symlink-read
ln {hf} hl 2>&1 || echo no-hardlink
ln /usr/bin/python3 hl2 2>&1 || echo no-hardlink-usr
cat /proc/self/cwd/../../{hf} 2>&1 || echo no-cwd-walk
ls /proc/1/root/ 2>&1 || echo no-init-root
touch /usr/ajx /etc/ajx /ajx /tmp/../ajx 2>&1 || echo no-write-outside
echo planted > /tmp/t && cat /proc/self/mounts | grep -c ' /workspace '
"#
        );
        let rec = sh(c, &ws, &script);
        assert_ran(&rec);
        let o = out(&rec);
        assert!(!o.contains("host secret"), "the host file was read: {o}");
        for refused in [
            "no-symlink-read",
            "no-hardlink",
            "no-hardlink-usr",
            "no-cwd-walk",
            "no-init-root",
            "no-write-outside",
        ] {
            assert!(o.contains(refused), "{refused}: {rec:#}");
        }
        // A cwd outside /workspace is refused before anything runs.
        for cwd in ["..", "/tmp", "a/../..", "/workspace/../etc"] {
            let r = c.call(
                json!({"op": "workspace_exec", "workspace": ws, "command": "pwd", "cwd": cwd}),
            );
            assert_eq!(error_code(&r), "bad_request", "cwd {cwd}: {r}");
        }
        // A symlinked directory as the cwd leads only where the jail already reaches.
        let rec = c.call(json!({"op": "workspace_exec", "workspace": ws,
            "command": "touch x 2>&1 || echo read-only", "cwd": "usrlink"}));
        assert_eq!(
            record(&rec)["stop_reason"],
            "code_runtime_error:126",
            "no such dir yet: {rec}"
        );
        sh(c, &ws, "ln -s /usr usrlink");
        let rec = c.call(json!({"op": "workspace_exec", "workspace": ws,
            "command": "touch x 2>&1 || echo read-only", "cwd": "usrlink"}));
        assert!(out(record(&rec)).contains("read-only"), "{rec}");
        assert!(!std::path::Path::new("/usr/x").exists());
        close(c, &ws);
        s.finish();
    }
}

#[test]
fn filling_a_workspace_stops_at_its_caps() {
    for who in variants() {
        let m = common::marker("ws-fill");
        let p = policy(&m, "8MiB", 256);
        let mut s = Server::start(who, &p, &m, &["--pool", "1"]);
        let c = s.io();
        let ws = start(c);
        let rec = sh(c, &ws, "dd if=/dev/zero of=big bs=1M count=64 2>/dev/null; wc -c < big; df -k /workspace | tail -1");
        assert_ran(&rec);
        let written: u64 = out(&rec)
            .lines()
            .next()
            .unwrap_or("x")
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{rec:#}"));
        assert!(
            written <= 8 << 20,
            "wrote {written} bytes into an 8MiB workspace"
        );
        let rec = sh(c, &ws, "rm big; i=0; while [ $i -lt 1000 ]; do { true > f$i; } 2>/dev/null || break; i=$((i+1)); done; echo $i");
        let files: u64 = out(&rec)
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{rec:#}"));
        assert!(files < 256, "made {files} files in a 256-inode workspace");
        // A sparse file far past the caps: it reads as too large, without being read.
        let rec = sh(
            c,
            &ws,
            "rm -f f*; truncate -s 200M sparse && ls -l sparse | cut -d' ' -f5",
        );
        assert_eq!(out(&rec).trim(), "209715200", "{rec:#}");
        let files = get(c, &ws, &["sparse"]);
        assert_eq!(files[0]["error"], "too_large", "{files:?}");
        let r = put(
            c,
            &ws,
            json!([{"path": "x", "content": "y".repeat(9 << 20)}]),
        );
        assert!(r.get("error").is_some(), "9MiB into an 8MiB workspace: {r}");
        let rec = sh(c, &ws, "echo alive");
        assert_eq!(out(&rec), "alive\n", "a full workspace lives on: {rec:#}");
        close(c, &ws);
        s.finish();
    }
}

#[test]
fn processes_end_with_their_command_and_their_workspace() {
    for who in variants() {
        let m = common::marker("ws-procs");
        let p = policy(&m, "16MiB", 1024);
        let mut s = Server::start(who, &p, &m, &["--pool", "1"]);
        let c = s.io();
        let ws = start(c);
        // A number no other process on the host has in its command line.
        let tag = format!(
            "{}{}",
            1000 + std::process::id() % 9000,
            m.bytes().map(u32::from).sum::<u32>() % 997
        );
        // Left behind by a command: in its group, out of its group (setsid), daemonised.
        let rec = sh(
            c,
            &ws,
            &format!("sleep {tag}.1 & setsid sleep {tag}.2 & (sleep {tag}.3 &) ; echo ok"),
        );
        assert_eq!(out(&rec), "ok\n", "{rec:#}");
        let rec = sh(c, &ws, "ls /proc | grep -c '^[0-9]'");
        // init, the runner, sh, ls, grep: nothing of the last command.
        assert_eq!(out(&rec).trim(), "5", "{rec:#}");
        assert!(live_with(&format!("{tag}.")).is_empty());
        // Asked to stay: it does, until the workspace closes.
        let r = c.call(
            json!({"op": "workspace_exec", "workspace": ws, "background": true,
                              "command": format!("sleep {tag}.4 >/dev/null 2>&1 &")}),
        );
        assert_eq!(record(&r)["stop_reason"], "success", "{r}");
        let rec = sh(c, &ws, &format!("ps -eo args | grep -c '^sleep {tag}.4'"));
        assert_eq!(out(&rec).trim(), "1", "{rec:#}");
        let left = live_with(&format!("{tag}.4"));
        assert_eq!(
            left.len(),
            1,
            "the background sleep runs on the host: {left:?}"
        );
        let procs: Vec<common::Proc> = left
            .iter()
            .filter_map(|p| common::proc_stat(*p).map(|(_, _, start)| (*p, start)))
            .collect();
        close(c, &ws);
        assert_gone(&procs, "the background process after close");
        s.finish();
    }
}
