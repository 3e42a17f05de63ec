//! Workspaces (`workspace_*` ops) attacked through `agentjail serve`, as root and as nobody:
//! a command cannot leave /workspace (symlinks, `..`, hard links, /proc/self/cwd, init's
//! root), cannot fill it past its caps (bytes, inodes, a sparse file), leaves no process
//! behind its call (unless `background`) or its workspace's close, cannot see or signal
//! another workspace; put and get never follow what the code planted and never read a FIFO
//! or a huge sparse file; what a command's env makes run stays in the jail and the env
//! reaches no later command; 100
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

pub(super) fn policy(marker: &str, size: &str, inodes: u64) -> PathBuf {
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

pub(super) fn start(conn: &mut Conn) -> String {
    let r = conn.call(json!({"op": "workspace_start"}));
    r["workspace"]
        .as_str()
        .unwrap_or_else(|| panic!("workspace_start failed: {r}"))
        .to_string()
}

/// One shell command; its record.
pub(super) fn sh(conn: &mut Conn, ws: &str, command: &str) -> Value {
    let r = conn.call(json!({"op": "workspace_exec", "workspace": ws, "command": command}));
    record(&r).clone()
}

pub(super) fn out(rec: &Value) -> &str {
    rec["execution"]["stdout"].as_str().unwrap_or("")
}

/// The command ran to its end in a workspace that lives on.
fn assert_ran(rec: &Value) {
    assert_eq!(rec["workspace"]["ended"], false, "{rec:#}");
    assert!(rec["execution"]["exit_code"].is_i64(), "{rec:#}");
    assert_eq!(rec["decision"]["reason"], "not_checked", "{rec:#}");
}

pub(super) fn put(conn: &mut Conn, ws: &str, files: Value) -> Value {
    conn.call(json!({"op": "workspace_put", "workspace": ws, "files": files}))
}

pub(super) fn get(conn: &mut Conn, ws: &str, paths: &[&str]) -> Vec<Value> {
    let r = conn.call(json!({"op": "workspace_get", "workspace": ws, "paths": paths}));
    r["files"]
        .as_array()
        .unwrap_or_else(|| panic!("workspace_get failed: {r}"))
        .clone()
}

pub(super) fn close(conn: &mut Conn, ws: &str) {
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
        // bash, not only sh: bash asks getpeername of its stdin at start, which once
        // stopped the workspace (code_forbidden_syscall:getpeername).
        let rec = record(&c.call(json!({"op": "workspace_exec", "workspace": ws,
            "argv": ["bash", "-c", "echo \"$0\" ${BASH_VERSINFO[0]}"]})))
        .clone();
        assert_eq!(rec["stop_reason"], "success", "{rec:#}");
        assert_eq!(out(&rec), "bash 5\n", "{rec:#}");
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

/// policies/workspace.toml executes javascript: its warm node jails start (node's event loop
/// needs eventfd2, which the policy once refused with EPERM, so every node aborted at start
/// and the pool retried forever), and a command can run node.
#[test]
fn node_runs_under_the_workspace_policy() {
    let who = variants()[0];
    let m = common::marker("ws-node");
    let p = policy(&m, "16MiB", 1024);
    let mut s = Server::start(who, &p, &m, &["--pool", "1"]);
    let c = s.io();
    let t = std::time::Instant::now();
    loop {
        let st = c.stats();
        if st["pools"]["javascript"]["ready"].as_u64() >= Some(1) {
            assert_eq!(st["pools"]["javascript"]["refill_failures"], 0, "{st}");
            break;
        }
        assert!(t.elapsed().as_secs() < 30, "no warm node jail: {st}");
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    let ws = start(c);
    let rec = sh(c, &ws, "node -e 'console.log(6 * 7)'");
    assert_eq!(out(&rec), "42\n", "{rec:#}");
    close(c, &ws);
    s.finish();
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
        let rec = sh(c, &ws, "ps -eo args | grep -c '^sleep'");
        assert_eq!(
            out(&rec).trim(),
            "0",
            "nothing of the last command: {rec:#}"
        );
        assert!(live_with(&format!("{tag}.")).is_empty());
        // Asked to stay: it does, until the workspace closes.
        let r = c.call_background(
            json!({"op": "workspace_exec", "workspace": ws, "background": true,
                              "command": format!("sleep {tag}.4 >/dev/null 2>&1 &")}),
        );
        assert_eq!(record(&r)["stop_reason"], "success", "{r}");
        let rec = sh(c, &ws, &format!("ps -eo args | grep -c '^sleep {tag}.4'"));
        assert_eq!(out(&rec).trim(), "1", "{rec:#}");
        // With a background command alive, a process that leaves its group and writes
        // forever neither holds the call open nor outlives its pipe.
        let rec = sh(
            c,
            &ws,
            "setsid sh -c ': > started; exec yes' & (yes &); \
             while [ ! -e started ]; do :; done; echo spawned",
        );
        assert_eq!(rec["stop_reason"], "success", "{rec:#}");
        assert_eq!(rec["execution"]["stdout_truncated"], true, "{rec:#}");
        let rec = sh(c, &ws, "ps -eo args | grep -c '^yes'");
        assert_eq!(
            out(&rec).trim(),
            "0",
            "the writers died with their pipe: {rec:#}"
        );
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

/// A command's forbidden syscall ends its workspace, and the record still holds what the
/// command printed before it, every time: the output passes through the runner, which
/// agentjail signals to kill every other process and report before it ends the jail.
/// Nothing after the syscall runs (the rest of the Python program, or of the shell script).
/// Twenty stops each, Python alone and under a shell, as root and as nobody.
#[test]
fn a_forbidden_syscall_keeps_the_output_before_it_and_runs_nothing_after() {
    for who in variants() {
        let m = common::marker("ws-stopout");
        let p = policy(&m, "16MiB", 1024);
        let mut s = Server::start(who, &p, &m, &["--pool", "2"]);
        let c = s.io();
        for i in 0..20 {
            let ws = start(c);
            let code = format!(
                "import os, sys\nprint('OUT-{i}', flush=True)\n\
                 sys.stderr.write('ERR-{i}\\n'); sys.stderr.flush()\n\
                 os.setuid(0)\nprint('AFTER-{i}', flush=True)\n"
            );
            let rec = if i % 2 == 0 {
                let r = c.call(json!({"op": "workspace_exec", "workspace": ws,
                    "argv": ["python3", "-c", code]}));
                record(&r).clone()
            } else {
                let r = c.call(json!({"op": "workspace_exec", "workspace": ws,
                    "command": format!("echo SH-{i}; python3 -c \"$CODE\"; echo AFTER-{i}"),
                    "env": {"CODE": code}}));
                record(&r).clone()
            };
            assert_eq!(
                rec["stop_reason"], "code_forbidden_syscall:setuid",
                "{rec:#}"
            );
            assert_eq!(rec["workspace"]["ended"], true, "{rec:#}");
            let stdout = out(&rec);
            let stderr = rec["execution"]["stderr"].as_str().unwrap_or("");
            assert!(stdout.contains(&format!("OUT-{i}\n")), "stop {i}: {rec:#}");
            assert!(stderr.contains(&format!("ERR-{i}\n")), "stop {i}: {rec:#}");
            if i % 2 == 1 {
                assert!(stdout.starts_with(&format!("SH-{i}\n")), "{rec:#}");
            }
            assert!(!stdout.contains("AFTER"), "ran after the stop: {rec:#}");
            close(c, &ws);
        }
        s.finish();
    }
}

/// What a command can make the runner receive between or during commands ends nothing it
/// should not: a background command that exits between calls (SIGCHLD while the runner
/// waits for the next command; it once ended the workspace) and a command's own SIGUSR1
/// to the runner (it kills that command and what it started, and the next command runs).
#[test]
fn signals_to_the_runner_leave_the_workspace_working() {
    for who in variants() {
        let m = common::marker("ws-runsig");
        let p = policy(&m, "16MiB", 1024);
        let mut s = Server::start(who, &p, &m, &["--pool", "1"]);
        let c = s.io();
        let ws = start(c);
        for _ in 0..3 {
            // Started and left: it exits while the runner waits between calls.
            let r = c.call(json!({"op": "workspace_exec", "workspace": ws,
                "background": true, "argv": ["sleep", "0.2"]}));
            let cmd = r["command"]
                .as_str()
                .unwrap_or_else(|| panic!("{r}"))
                .to_string();
            std::thread::sleep(std::time::Duration::from_millis(600));
            let rec = sh(c, &ws, "echo alive");
            assert_eq!(out(&rec), "alive\n", "{rec:#}");
            let r = c.call(json!({"op": "workspace_wait", "workspace": ws, "command": cmd}));
            assert_eq!(record(&r)["stop_reason"], "success", "{r}");
            let rec = sh(c, &ws, "echo alive");
            assert_eq!(out(&rec), "alive\n", "{rec:#}");
            assert_ran(&rec);
        }
        let rec = sh(c, &ws, "kill -USR1 $PPID; sleep 5; echo not-killed");
        assert_eq!(rec["stop_reason"], "code_killed:SIGKILL", "{rec:#}");
        assert_eq!(rec["workspace"]["ended"], false, "{rec:#}");
        for i in 0..2 {
            let rec = sh(c, &ws, &format!("echo next-{i}"));
            assert_eq!(out(&rec), format!("next-{i}\n"), "{rec:#}");
            assert_ran(&rec);
        }
        close(c, &ws);
        s.finish();
    }
}

#[test]
fn workspaces_cannot_reach_each_other() {
    for who in variants() {
        let m = common::marker("ws-cross");
        let p = policy(&m, "16MiB", 1024);
        let dir = crate::common::serve::scratch("ws-cross");
        let sock = dir.path().join("s.sock");
        let sock_s = sock.display().to_string();
        let s = Server::start(who, &p, &m, &["--pool", "1", "--socket", &sock_s]);
        let mut a = s.connect("a");
        let mut b = s.connect("b");
        let wa = start(&mut a);
        let wb = start(&mut b);
        let wa2 = start(&mut a);
        let tag = format!("{}", 3000 + std::process::id() % 6000);
        let r = a.call_background(
            json!({"op": "workspace_exec", "workspace": wa, "background": true,
            "command": format!("echo a-secret > s.txt; sleep {tag}.7 >/dev/null 2>&1 &")}),
        );
        assert_eq!(record(&r)["stop_reason"], "success", "{r}");
        // The background child may be between fork and exec (its cmdline briefly unreadable):
        // wait, bounded, for the one process to be seen.
        let one_live = |needle: &str| {
            let t = std::time::Instant::now();
            loop {
                let found = live_with(needle);
                if found.len() == 1 || t.elapsed().as_secs() >= 10 {
                    return found;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        };
        let host = one_live(&format!("{tag}.7"));
        assert_eq!(host.len(), 1, "{host:?}");
        // From another workspace, of another connection or the same one: no trace of A's
        // process or files, and no signal reaches it (its pid is in another namespace).
        for (conn, w) in [(&mut b, &wb), (&mut a, &wa2)] {
            let rec = sh(
                conn,
                w,
                "ps -eo args | grep -c '^sleep'; ls /workspace; \
                 cat /proc/*/root/workspace/s.txt 2>&1 | grep -c a-secret",
            );
            assert!(
                out(&rec).starts_with("0\n"),
                "A's process is visible: {rec:#}"
            );
            assert!(
                !out(&rec).contains("s.txt") && !out(&rec).contains("a-secret\n"),
                "{rec:#}"
            );
            // Every process it may signal, its own runner included: its workspace ends.
            let rec = sh(conn, w, "kill -9 -1; echo after");
            assert_eq!(rec["workspace"]["ended"], true, "{rec:#}");
        }
        // The kill -9 -1 ended only the workspaces that ran it.
        let rec = sh(&mut a, &wa, "cat s.txt");
        assert_eq!(out(&rec), "a-secret\n", "{rec:#}");
        assert_eq!(one_live(&format!("{tag}.7")), host);
        // Another connection cannot name A's workspace.
        for op in [
            json!({"op": "workspace_exec", "workspace": wa, "command": "true"}),
            json!({"op": "workspace_get", "workspace": wa, "paths": ["s.txt"]}),
            json!({"op": "workspace_put", "workspace": wa, "files": [{"path": "x", "content": "x"}]}),
            json!({"op": "workspace_close", "workspace": wa}),
        ] {
            assert_eq!(error_code(&b.call(op)), "unknown_workspace");
        }
        // A's connection closing closes its workspaces: the background process dies.
        let procs: Vec<common::Proc> = host
            .iter()
            .filter_map(|p| common::proc_stat(*p).map(|(_, _, start)| (*p, start)))
            .collect();
        a.close();
        assert_gone(&procs, "a closed connection's background process");
        b.close();
        s.finish();
    }
}

#[test]
fn put_and_get_never_follow_what_the_code_planted() {
    for who in variants() {
        let m = common::marker("ws-plant");
        let p = policy(&m, "16MiB", 1024);
        let mut s = Server::start(who, &p, &m, &["--pool", "1"]);
        let c = s.io();
        let ws = start(c);
        let victim_dir = crate::common::serve::scratch("ws-victim");
        let vd = victim_dir.path().display().to_string();
        std::fs::write(victim_dir.path().join("keep.txt"), "host data\n").unwrap();
        let rec = sh(
            c,
            &ws,
            &format!(
                "ln -s {vd}/keep.txt leaf; ln -s {vd} dir; mkdir real; ln -s ../real/x up; \
             ln -s /proc/self/root/etc/passwd magic; mkdir d; mkfifo d/fifo 2>&1; echo made"
            ),
        );
        assert!(out(&rec).ends_with("made\n"), "{rec:#}");
        assert!(
            out(&rec).contains("Operation not permitted"),
            "no FIFO can be made: {rec:#}"
        );
        assert_ran(&rec);
        for (path, why) in [
            ("leaf", "symlink"),
            ("dir/keep.txt", "symlink"),
            ("dir/new.txt", "symlink"),
            ("magic", "symlink"),
        ] {
            let r = put(
                c,
                &ws,
                json!([{"path": path, "content": "planted-through"}]),
            );
            assert_eq!(error_code(&r), "put_refused", "{path}: {r}");
            assert!(
                r["error"]["message"].as_str().unwrap().contains(why),
                "{path}: {r}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(victim_dir.path().join("keep.txt")).unwrap(),
            "host data\n"
        );
        assert!(!victim_dir.path().join("new.txt").exists());
        let files = get(
            c,
            &ws,
            &[
                "leaf",
                "dir/keep.txt",
                "up",
                "magic",
                "d",
                "../x",
                "/etc/passwd",
                "d/fifo",
            ],
        );
        let errors: Vec<&str> = files
            .iter()
            .map(|f| f["error"].as_str().unwrap_or("READ"))
            .collect();
        assert_eq!(
            errors,
            [
                "symlink",
                "symlink",
                "symlink",
                "symlink",
                "is_a_directory",
                "bad_path",
                "bad_path",
                "not_found"
            ],
            "{files:?}"
        );
        // Paths that climb or are absolute elsewhere are refused before any file is touched.
        for path in ["../x", "/etc/x", "a/./b", ""] {
            let r = put(c, &ws, json!([{"path": path, "content": "x"}]));
            assert_eq!(error_code(&r), "bad_files", "{path:?}: {r}");
        }
        // A job's input-file link has no meaning here: refused, nothing written.
        let r = put(
            c,
            &ws,
            json!([{"path": "l.txt", "content": "x", "link": "/tmp/l.txt"}]),
        );
        assert_eq!(error_code(&r), "bad_files", "{r}");
        assert!(r.to_string().contains("files:link"), "{r}");
        close(c, &ws);
        s.finish();
    }
}

/// What a program the caller's `env` made run reports from inside: its uid, the network, and
/// which directories it could create a file in (errno names otherwise).
const EVIDENCE: &str = r#"import errno, json, os, socket
out = {"uid": os.getuid()}
try:
    socket.create_connection(("1.1.1.1", 80), timeout=5)
    out["net"] = "connected"
except OSError as e:
    out["net"] = errno.errorcode.get(e.errno, str(e))
out["write"] = {}
for d in ["/", "/etc", "/usr", "/app", "/workspace", "/tmp"]:
    p = os.path.join(d, "aj-env-probe")
    try:
        os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.unlink(p)
        out["write"][d] = "written"
    except OSError as e:
        out["write"][d] = errno.errorcode.get(e.errno, str(e))
with open("/workspace/evidence.json", "w") as f:
    json.dump(out, f)
"#;

/// `env` is the caller's code, as the command is: names that make a fixed command run
/// something the caller chose (`TAR_OPTIONS` with a checkpoint action, `PYTHONPATH`, `HOME`
/// or `XDG_CONFIG_HOME` with a planted git config's `core.fsmonitor`) are accepted, and what
/// they make run runs in the jail: the jail's uid, no network, nothing writable outside
/// /workspace and /tmp. The env reaches no later command. Only names that are not names are
/// refused (`bad_env`), before anything runs.
#[test]
fn env_is_the_callers_code_and_what_it_runs_stays_in_the_jail() {
    for who in variants() {
        let m = common::marker("ws-env");
        let p = policy(&m, "16MiB", 1024);
        let mut s = Server::start(who, &p, &m, &["--pool", "1"]);
        let c = s.io();
        let ws = start(c);
        for name in ["A=B", "1X", "", "BASH_FUNC_x%%", "a b"] {
            let r = c.call(json!({"op": "workspace_exec", "workspace": ws,
                "command": "echo ran > ran.txt", "env": {name: "/workspace/x"}}));
            assert_eq!(error_code(&r), "bad_env", "{name:?}: {r}");
        }
        let files = get(c, &ws, &["ran.txt"]);
        assert_eq!(
            files[0]["error"], "not_found",
            "a refused exec ran: {files:?}"
        );

        let r = put(
            c,
            &ws,
            json!([
                {"path": "evidence.py", "content": EVIDENCE},
                {"path": "evil", "content": "#!/bin/sh\nexec python3 /workspace/evidence.py\n"},
                {"path": "h/.gitconfig", "content": "[core]\n\tfsmonitor = sh /workspace/evil\n"},
                {"path": "x/git/config", "content": "[core]\n\tfsmonitor = sh /workspace/evil\n"},
                {"path": "pp/sitecustomize.py",
                 "content": "import runpy\nrunpy.run_path('/workspace/evidence.py')\n"},
            ]),
        );
        assert!(r["files"].is_array(), "{r}");
        let rec = sh(c, &ws, "command -v git && git init -q repo");
        let git = rec["stop_reason"] == "success";
        if !git {
            eprintln!(
                "!!!! NOTE: no git in the workspace jail: the git cases are not run: {rec:#}"
            );
        }
        let mut cases = vec![
            (
                "TAR_OPTIONS",
                "tar cf /tmp/x.tar evidence.py",
                // /workspace is noexec: the action runs the script through sh.
                json!({"TAR_OPTIONS": "--checkpoint=1 '--checkpoint-action=exec=sh /workspace/evil'"}),
            ),
            (
                "PYTHONPATH",
                "python3 -c pass",
                json!({"PYTHONPATH": "/workspace/pp"}),
            ),
        ];
        if git {
            cases.push((
                "HOME",
                "cd repo && git status --short",
                json!({"HOME": "/workspace/h"}),
            ));
            cases.push((
                "XDG_CONFIG_HOME",
                "cd repo && git status --short",
                json!({"XDG_CONFIG_HOME": "/workspace/x", "HOME": "/workspace/none"}),
            ));
        }
        for (what, command, env) in cases {
            let r = c.call(json!({"op": "workspace_exec", "workspace": ws,
                "command": command, "env": env}));
            let rec = record(&r).clone();
            assert_eq!(rec["workspace"]["ended"], false, "{who:?} {what}: {rec:#}");
            let got = sh(c, &ws, "cat evidence.json && rm evidence.json");
            let ev: Value = serde_json::from_str(out(&got))
                .unwrap_or_else(|e| panic!("{who:?} {what}: nothing ran ({e}): {rec:#} {got:#}"));
            // The jail's user (1000 inside, whoever launched agentjail); an inet socket
            // refused (no network: policies/workspace.toml has none).
            assert_eq!(ev["uid"], 1000, "{who:?} {what}: {ev}");
            assert_eq!(ev["net"], "EPERM", "{who:?} {what}: {ev}");
            assert_eq!(
                ev["write"],
                json!({"/": "EROFS", "/etc": "EROFS", "/usr": "EROFS", "/app": "EROFS",
                       "/workspace": "written", "/tmp": "written"}),
                "{who:?} {what}: {ev}"
            );
        }
        // The env went with its command: a later one has the jail's environment.
        let rec = sh(c, &ws, "env");
        let env = out(&rec);
        for leaked in [
            "TAR_OPTIONS",
            "PYTHONPATH",
            "XDG_CONFIG_HOME",
            "/workspace/h",
        ] {
            assert!(
                !env.contains(leaked),
                "{who:?}: {leaked} reached a later command: {env}"
            );
        }
        assert!(env.lines().any(|l| l == "HOME=/tmp"), "{who:?}: {env}");
        close(c, &ws);
        s.finish();
    }
}

/// A balloon past the memory cap, run directly, under a shell (which exits 137 for its
/// killed child) and under a shell that goes on (and exits 0): where the workspace has a
/// memory cgroup (root), each is `code_memory_limit` from the cgroup's OOM counter, with
/// `execution.oom_kills`; without one (nobody), RLIMIT_AS makes the allocation fail and the
/// record is the program's own error, `code_runtime_error:1` with its MemoryError (`success`
/// for the shell that goes on), and no OOM count.
#[test]
fn a_command_the_memory_cgroup_killed_is_code_memory_limit_whatever_it_exits_with() {
    const BALLOON: &str =
        "l = []\nprint('ATTEMPT', flush=True)\nwhile True: l.append(bytearray(8 << 20))";
    for who in variants() {
        let m = common::marker("ws-oom");
        let text = std::fs::read_to_string(policy(&m, "16MiB", 1024))
            .unwrap()
            .replace("memory = \"1GiB\"", "memory = \"192MiB\"")
            .replace("tmp_size = \"256MiB\"", "tmp_size = \"32MiB\"");
        assert!(text.contains("memory = \"192MiB\""));
        let p = common::shared_file(&format!("ws-oom-{m}.toml"), &text);
        let mut s = Server::start(who, &p, &m, &["--pool", "1"]);
        let c = s.io();
        let ws = start(c);
        let quoted = format!("python3 -c \"{BALLOON}\"");
        let cases = [
            ("direct", json!({"argv": ["python3", "-c", BALLOON]}), 1),
            ("under a shell", json!({"command": quoted.clone()}), 1),
            (
                "under a shell that goes on",
                json!({"command": format!("{quoted}; echo went on")}),
                0,
            ),
        ];
        for (what, mut req, exit_without_cgroup) in cases {
            req["op"] = json!("workspace_exec");
            req["workspace"] = json!(ws);
            let rec = record(&c.call(req)).clone();
            assert!(
                out(&rec).starts_with("ATTEMPT\n"),
                "{who:?} {what}: {rec:#}"
            );
            assert_eq!(rec["workspace"]["ended"], false, "{who:?} {what}: {rec:#}");
            let cgroup_memory = rec["enforcement"].as_array().is_some_and(|a| {
                a.iter()
                    .any(|e| e["control"] == "cgroup_memory" && e["state"] == "enforced")
            });
            // Root gets the memory cgroup on this suite's hosts; nobody never does.
            assert_eq!(
                cgroup_memory,
                who != common::Who::Nobody,
                "{who:?}: {rec:#}"
            );
            if cgroup_memory {
                assert_eq!(
                    rec["stop_reason"], "code_memory_limit",
                    "{who:?} {what}: {rec:#}"
                );
                assert!(
                    rec["execution"]["oom_kills"].as_u64() >= Some(1),
                    "{who:?} {what}: {rec:#}"
                );
            } else {
                let want = if exit_without_cgroup == 0 {
                    "success".to_string()
                } else {
                    format!("code_runtime_error:{exit_without_cgroup}")
                };
                assert_eq!(rec["stop_reason"], want.as_str(), "{who:?} {what}: {rec:#}");
                let stderr = rec["execution"]["stderr"].as_str().unwrap_or("");
                assert!(stderr.contains("MemoryError"), "{who:?} {what}: {rec:#}");
                // No memory cgroup: none counted (null, or 0 from a cgroup without it).
                assert_eq!(
                    rec["execution"]["oom_kills"].as_u64().unwrap_or(0),
                    0,
                    "{rec:#}"
                );
            }
            eprintln!("{who:?} {what}: {}", rec["stop_reason"]);
        }
        // The workspace lives on.
        assert_eq!(out(&sh(c, &ws, "echo alive")), "alive\n");
        close(c, &ws);
        s.finish();
    }
}

/// SIGTERM with workspaces open (processes left in the background, one command running,
/// writers that left their group): serve answers the command, ends every workspace and
/// exits only once every process of its jails is gone and reaped. Checked the moment it
/// has exited, with no settle time (common::serve, `sigterm_leaves_nothing_at_exit`).
#[test]
fn sigterm_exits_only_after_every_workspace_process_is_gone() {
    for who in variants() {
        let m = common::marker("ws-term");
        let p = policy(&m, "4MiB", 256);
        let dir = crate::common::serve::scratch("ws-term");
        let sock = dir.path().join("s.sock").display().to_string();
        let s = Server::start(
            who,
            &p,
            &m,
            &["--pool", "1", "--session-pool", "2", "--socket", &sock],
        );
        let mut c = s.connect("c");
        let tag = format!("{}", 2000 + std::process::id() % 7000);
        for i in 0..4 {
            let ws = start(&mut c);
            let r = c.call_background(json!({"op": "workspace_exec", "workspace": ws, "background": true,
                "command": format!("sleep {tag}.{i} >/dev/null 2>&1 & setsid sleep {tag}.{i}1 >/dev/null 2>&1 &")}));
            assert_eq!(record(&r)["stop_reason"], "success", "{r}");
        }
        let ws = start(&mut c);
        let running = c.send(json!({"op": "workspace_exec", "workspace": ws,
            "command": format!("sleep {tag}.9 & sleep 1.5; echo done")}));
        let t = std::time::Instant::now();
        while live_with(&format!("{tag}.9")).is_empty() {
            assert!(t.elapsed().as_secs() < 20, "the command never started");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // Nine sleeps (and the running command's shell, whose line names one).
        let procs = live_with(&format!("{tag}."));
        assert!(procs.len() >= 9, "{procs:?}");
        s.sigterm_leaves_nothing_at_exit();
        let rec = record(&c.wait(&running)).clone();
        assert_eq!(
            out(&rec),
            "done\n",
            "the running command had its grace: {rec:#}"
        );
        c.assert_all_answered();
    }
}

/// SIGTERM with every kind of jail the server holds: a workspace with a background
/// `sleep`, a session between calls, warm pool and session jails (and
/// the zygote's template where it is built): the moment serve has exited, none of the
/// processes of its tree seen before the signal exists, zombies included
/// (`sigterm_leaves_nothing_at_exit`). Repeated, since a late one is a matter of luck.
#[test]
fn sigterm_exits_only_after_every_jail_of_every_kind_has_no_process() {
    let zygote = common::zygote_built();
    for who in variants() {
        for round in 0..3 {
            let m = common::marker("ws-term-all");
            let mut p = policy(&m, "4MiB", 256);
            let with_zygote = zygote && round == 1;
            if with_zygote {
                // The zygote embeds the default interpreter flags and nothing else (no
                // marker: the server's process tree is what is followed) and no site.
                let text = std::fs::read_to_string(&p)
                    .unwrap()
                    .replace(&format!(", \"-Wignore:{m}\"]"), "]")
                    .replace("[\"-I\", \"-B\",", "[\"-I\", \"-S\", \"-B\",")
                    .replace(
                        "preload = [\"json\", \"statistics\", \"csv\", \"numpy\", \"pandas\", \"matplotlib.pyplot\"]",
                        "preload = [\"json\"]",
                    );
                assert!(text.contains("preload = [\"json\"]") && !text.contains(&m));
                p = common::shared_file(&format!("ws-term-zygote-{m}.toml"), &text);
            }
            let dir = crate::common::serve::scratch("ws-term-all");
            let sock = dir.path().join("s.sock").display().to_string();
            let mut args = vec!["--pool", "1", "--session-pool", "1", "--socket", &sock];
            if with_zygote {
                args.push("--zygote");
            }
            let s = Server::start(who, &p, &m, &args);
            let mut c = s.connect("c");
            Server::wait_pool_ready(&mut c, 1);
            let session = c.start_session();
            let r = c.exec(&session, "x = 1");
            assert_eq!(record(&r)["stop_reason"], "success", "{r}");
            let ws = start(&mut c);
            let tag = format!("{}{round}", 1000 + std::process::id() % 8000);
            let r = c.call_background(
                json!({"op": "workspace_exec", "workspace": ws, "background": true,
                "command": format!("sleep 1{tag}.1 >/dev/null 2>&1 &")}),
            );
            assert_eq!(record(&r)["stop_reason"], "success", "{r}");
            let t = std::time::Instant::now();
            while live_with(&format!("1{tag}.")).is_empty() {
                assert!(t.elapsed().as_secs() < 20, "the sleeps never started");
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            s.sigterm_leaves_nothing_at_exit();
            c.assert_all_answered();
        }
    }
}

/// 100 workspaces of 20 commands each, four connections at once: every record valid (the
/// harness checks each response), every command's output its own, nothing left behind. As
/// root and as nobody.
#[test]
fn a_hundred_workspaces_of_twenty_commands_leave_nothing() {
    for who in variants() {
        a_hundred_workspaces_of_twenty_commands(who);
    }
}

fn a_hundred_workspaces_of_twenty_commands(who: common::Who) {
    let m = common::marker("ws-soak");
    let p = policy(&m, "4MiB", 256);
    let dir = crate::common::serve::scratch("ws-soak");
    let sock = dir.path().join("s.sock").display().to_string();
    let s = Server::start(
        who,
        &p,
        &m,
        &[
            "--pool",
            "1",
            "--session-pool",
            "2",
            "-j",
            "8",
            "--socket",
            &sock,
        ],
    );
    std::thread::scope(|scope| {
        for t in 0..4 {
            let mut c = s.connect(&format!("c{t}"));
            scope.spawn(move || {
                for n in 0..25 {
                    let ws = start(&mut c);
                    for i in 0..20 {
                        let want = format!("{t}-{n}-{i}");
                        let rec = if i % 2 == 0 {
                            sh(&mut c, &ws, &format!("echo {want} >> log; tail -n1 log"))
                        } else {
                            let r = c.call(json!({"op": "workspace_exec", "workspace": ws,
                                "argv": ["echo", want]}));
                            record(&r).clone()
                        };
                        assert_eq!(rec["stop_reason"], "success", "{rec:#}");
                        assert_eq!(out(&rec), format!("{want}\n"));
                    }
                    close(&mut c, &ws);
                }
                c.close();
            });
        }
    });
    s.finish();
}

/// One client (one uid over many connections) starting many workspaces at once never holds
/// more than `max_per_client`: a start reserves its slot before its jail starts.
#[test]
fn parallel_starts_from_one_client_stay_within_max_per_client() {
    let who = variants()[0];
    let m = common::marker("ws-maxpc");
    let text = std::fs::read_to_string(policy(&m, "4MiB", 256))
        .unwrap()
        .replace("max_per_client = 8", "max_per_client = 2");
    let p = common::shared_file(&format!("ws-{m}-max.toml"), &text);
    let dir = crate::common::serve::scratch("ws-maxpc");
    let sock = dir.path().join("s.sock").display().to_string();
    let s = Server::start(who, &p, &m, &["--pool", "1", "-j", "8", "--socket", &sock]);
    let (answers, mut conns): (Vec<Value>, Vec<Conn>) = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let mut c = s.connect(&format!("c{t}"));
                scope.spawn(move || {
                    let r = c.call(json!({"op": "workspace_start"}));
                    (r, c)
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).unzip()
    });
    let started = answers
        .iter()
        .filter(|r| r["workspace"].is_string())
        .count();
    assert_eq!(started, 2, "{answers:#?}");
    for r in answers.iter().filter(|r| !r["workspace"].is_string()) {
        assert_eq!(error_code(r), "too_many_workspaces", "{r}");
    }
    conns.iter_mut().for_each(Conn::close);
    s.finish();
}

/// Two servers on one host share a host root: a directory one server's workspace holds (or
/// one inside it) is `host_dir_in_use` at the other (docs/REFERENCE.md: the flocks "also
/// hold between two servers on one host"), and free to it once that workspace closed. In the
/// holding workspace, `limits.file_size` decides for the host directory as for the tmpfs: a
/// write past it is EFBIG (RLIMIT_FSIZE; Python ignores SIGXFSZ) and the file on the host
/// stops at the limit.
#[test]
fn two_servers_share_no_host_directory_and_file_size_holds_there() {
    use std::os::unix::fs::PermissionsExt;
    for who in variants() {
        let base = tempfile::Builder::new()
            .prefix("ajtest-wstwo-")
            .tempdir_in("/tmp")
            .unwrap();
        std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let root = base.path().join("roots");
        let uid = jail_host_uid(who);
        for rel in ["", "w", "w/inner"] {
            let d = root.join(rel);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
            if common::is_root() && !rel.is_empty() {
                std::os::unix::fs::chown(&d, Some(uid), Some(uid)).unwrap();
            }
        }
        let server = |tag: &str| {
            let m = common::marker(tag);
            let shipped = std::fs::read_to_string(policy(&m, "16MiB", 1024))
                .unwrap()
                .replace("file_size = \"256MiB\"", "file_size = \"1MiB\"");
            assert!(shipped.contains("file_size = \"1MiB\""));
            let text = format!(
                "{shipped}\nhost_roots = [{:?}]\nhost_quota_acknowledged = true\n",
                root.display().to_string()
            );
            let p = common::shared_file(&format!("ws-{m}-two.toml"), &text);
            Server::start(who, &p, &m, &["--pool", "1"])
        };
        let mut a = server("ws-two-a");
        let mut b = server("ws-two-b");
        let w = format!("{}/w", root.display());
        let inner = format!("{w}/inner");
        let start_at =
            |c: &mut Conn, dir: &str| c.call(json!({"op": "workspace_start", "host_dir": dir}));
        let ws = start_at(a.io(), &w)["workspace"]
            .as_str()
            .expect("a workspace on w at server A")
            .to_string();
        for dir in [&w, &inner] {
            let r = start_at(b.io(), dir);
            assert_eq!(error_code(&r), "host_dir_in_use", "{who:?} {dir}: {r}");
        }
        let stats = b.io().call(json!({"op": "stats"}));
        assert_eq!(stats["stats"]["workspaces"], 0, "{who:?}: {stats}");
        // One byte past 1 MiB, in two writes: the first fills the file to the limit.
        let rec = sh(
            a.io(),
            &ws,
            "python3 -c \"import os\nf = os.open('big', os.O_CREAT | os.O_WRONLY, 0o644)\n\
             print(os.write(f, b'x' * (1 << 20)))\ntry:\n    os.write(f, b'x')\n\
             except OSError as e:\n    print('refused', e.errno)\"",
        );
        assert_eq!(
            out(&rec),
            format!("1048576\nrefused {}\n", libc::EFBIG),
            "{who:?}: {rec:#}"
        );
        assert_eq!(
            std::fs::metadata(root.join("w/big")).unwrap().len(),
            1 << 20,
            "{who:?}"
        );
        close(a.io(), &ws);
        let ws = start_at(b.io(), &w)["workspace"]
            .as_str()
            .expect("w free to server B once A's workspace closed")
            .to_string();
        close(b.io(), &ws);
        a.finish();
        b.finish();
    }
}

/// The uid the jail's user has on the host: nobody under a root server and under a nobody
/// server, the test's own uid otherwise.
fn jail_host_uid(who: common::Who) -> u32 {
    match who {
        common::Who::Root | common::Who::Nobody => common::NOBODY,
        common::Who::Current => {
            // SAFETY: geteuid has no preconditions and no memory effects.
            unsafe { libc::geteuid() }
        }
    }
}

/// Every entry beneath `dir` (not following symlinks), with its lstat.
fn walk(dir: &std::path::Path) -> Vec<(PathBuf, std::fs::Metadata)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let m = std::fs::symlink_metadata(&p).unwrap();
        if m.is_dir() {
            out.extend(walk(&p));
        }
        out.push((p, m));
    }
    out
}

/// A host directory as /workspace (`host_dir` beneath `[workspace] host_roots`), as root and
/// as nobody: refused outside a root, through a symlink, on a file, a missing path, the root
/// itself, a directory of another owner, and while another live workspace holds it or a
/// directory around or inside it; what a command leaves there is the jail user's, with no
/// set-id bit, no FIFO or device, no hard link to a file outside, nothing executable
/// through the mount; close leaves the directory and its files, and no mount or process.
#[test]
fn a_host_directory_workspace_keeps_its_files_and_nothing_else() {
    use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
    for who in variants() {
        let m = common::marker("ws-hostdir");
        let base = tempfile::Builder::new()
            // Not "agentjail-...": the serve tests running beside this one count such
            // entries in /tmp as left behind.
            .prefix("ajtest-wshost-")
            .tempdir_in("/tmp")
            .unwrap();
        // The server (root or nobody) must reach the root; the jail's user owns the
        // workspace directories only.
        std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let root = base.path().join("roots");
        let uid = jail_host_uid(who);
        let mkdir = |rel: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(&p).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            if common::is_root() {
                std::os::unix::fs::chown(&p, Some(uid), Some(uid)).unwrap();
            }
            p
        };
        std::fs::create_dir(&root).unwrap();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let w1 = mkdir("w1");
        mkdir("outer");
        mkdir("outer/inner");
        mkdir("real/sub");
        std::fs::write(w1.join("seed.txt"), "from the host\n").unwrap();
        std::fs::write(root.join("afile"), "x").unwrap();
        symlink(root.join("real"), root.join("link")).unwrap();
        symlink(root.join("real/sub"), root.join("real/lastlink")).unwrap();
        if common::is_root() {
            std::fs::create_dir(root.join("rootowned")).unwrap();
        }
        let shipped = std::fs::read_to_string(policy(&m, "16MiB", 1024)).unwrap();
        let text = format!(
            "{shipped}\nhost_roots = [{:?}]\nhost_quota_acknowledged = true\n",
            root.display().to_string()
        );
        let p = common::shared_file(&format!("ws-{m}-hostdir.toml"), &text);
        let mounts_before = common::mount_points();
        let mut s = Server::start(who, &p, &m, &["--pool", "1"]);
        let c = s.io();
        let at = |rel: &str| format!("{}/{rel}", root.display());
        let start_at =
            |c: &mut Conn, dir: &str| c.call(json!({"op": "workspace_start", "host_dir": dir}));
        // Refused, each with nothing started.
        let mut refused = vec![
            ("/etc".to_string(), "bad_host_dir"),
            (root.display().to_string(), "bad_host_dir"),
            (at("missing"), "bad_host_dir"),
            (at("afile"), "bad_host_dir"),
            (at("link"), "bad_host_dir"),
            (at("link/sub"), "bad_host_dir"),
            (at("real/lastlink"), "bad_host_dir"),
            (at("w1/../w1"), "bad_host_dir"),
            (at("w1/"), "bad_host_dir"),
            ("w1".to_string(), "bad_host_dir"),
        ];
        if common::is_root() {
            refused.push((at("rootowned"), "bad_host_dir"));
        }
        for (dir, code) in &refused {
            let r = start_at(c, dir);
            assert_eq!(error_code(&r), *code, "{dir}: {r}");
        }
        let r = c.call(json!({"op": "workspace_start", "host_dir": 7}));
        assert_eq!(error_code(&r), "bad_request", "{r}");
        let stats = c.call(json!({"op": "stats"}));
        assert_eq!(
            stats["stats"]["workspaces"], 0,
            "a refused start left one: {stats}"
        );
        let ws = start_at(c, &at("w1"))["workspace"]
            .as_str()
            .expect("a workspace on w1")
            .to_string();
        // One live workspace per directory, nor one around or inside another's.
        assert_eq!(error_code(&start_at(c, &at("w1"))), "host_dir_in_use");
        std::fs::create_dir(w1.join("nested")).ok();
        if common::is_root() {
            std::os::unix::fs::chown(w1.join("nested"), Some(uid), Some(uid)).unwrap();
        }
        let r = start_at(c, &at("w1/nested"));
        assert_eq!(error_code(&r), "host_dir_in_use", "{r}");
        let inner = start_at(c, &at("outer/inner"))["workspace"]
            .as_str()
            .expect("a workspace on outer/inner")
            .to_string();
        assert_eq!(error_code(&start_at(c, &at("outer"))), "host_dir_in_use");
        close(c, &inner);

        let rec = sh(
            c,
            &ws,
            "cat seed.txt; echo made > made.txt; mkdir -p d; echo y > d/y; pwd",
        );
        assert_eq!(out(&rec), "from the host\n/workspace\n", "{rec:#}");
        // Set-id bits, by every call that takes a mode.
        let rec = sh(
            c,
            &ws,
            "cp /bin/sh ./shell; chmod 4755 shell; chmod u+s made.txt; chmod g+s made.txt; \
             chmod 2775 d; python3 -c \"import os; os.open('c1', os.O_CREAT|os.O_WRONLY, 0o4755)\"; \
             python3 -c \"import os; os.close(os.open('c2', os.O_CREAT|os.O_WRONLY, 0o755)); os.chmod('c2', 0o6755)\"; \
             install -m 4755 /bin/sh inst 2>&1; true",
        );
        assert_ran(&rec);
        let err = rec["execution"]["stderr"].as_str().unwrap_or("");
        assert!(
            err.contains("Operation not permitted") || err.contains("PermissionError"),
            "{rec:#}"
        );
        // FIFOs, devices, hard links out, a program run from the directory.
        let rec = sh(
            c,
            &ws,
            "mkfifo f 2>/dev/null; mknod n c 1 3 2>/dev/null; ln /etc/passwd p 2>/dev/null; \
             ln /usr/bin/env e 2>/dev/null; ln made.txt made2.txt; ln -s /etc/shadow leak; \
             printf '#!/bin/sh\\necho pwned\\n' > x.sh; chmod +x x.sh; ./x.sh 2>/dev/null; \
             ./shell -c 'echo pwned' 2>/dev/null; echo done",
        );
        assert_eq!(
            out(&rec),
            "done\n",
            "nothing ran from the directory: {rec:#}"
        );
        let got = get(c, &ws, &["leak", "made2.txt"]);
        assert_eq!(got[0]["error"], "symlink", "{got:?}");
        assert_eq!(got[1]["bytes"], 5, "{got:?}");
        let r = put(c, &ws, json!([{"path": "leak/x", "content": "x"}]));
        assert_eq!(error_code(&r), "put_refused", "{r}");
        let r = put(c, &ws, json!([{"path": "from_put.txt", "content": "p"}]));
        assert!(r["files"].is_array(), "{r}");
        // The jail cannot see beside its directory.
        let rec = sh(
            c,
            &ws,
            "ls -a /workspace/.. | grep -c -e outer -e real -e afile; true",
        );
        assert_eq!(out(&rec).trim(), "0", "{rec:#}");
        close(c, &ws);

        // On the host: the files stay, all the jail user's, none set-id, special or linked out.
        let passwd = std::fs::metadata("/etc/passwd").unwrap();
        let env = std::fs::metadata("/usr/bin/env").unwrap();
        assert_eq!(
            std::fs::read_to_string(w1.join("made.txt")).unwrap(),
            "made\n"
        );
        assert_eq!(
            std::fs::read_to_string(w1.join("from_put.txt")).unwrap(),
            "p"
        );
        let entries = walk(&w1);
        assert!(entries.len() >= 8, "{entries:?}");
        for (path, md) in &entries {
            let ours = path.ends_with("seed.txt") || path.ends_with("nested");
            if !ours || !common::is_root() {
                assert_eq!(
                    md.uid(),
                    uid,
                    "{} belongs to the jail's user",
                    path.display()
                );
            }
            assert_eq!(
                md.mode() & 0o6000,
                0,
                "{} has a set-id bit: {:o}",
                path.display(),
                md.mode()
            );
            let ft = md.file_type();
            assert!(
                ft.is_file() || ft.is_dir() || ft.is_symlink(),
                "{} is special",
                path.display()
            );
            for outside in [&passwd, &env] {
                assert!(
                    (md.dev(), md.ino()) != (outside.dev(), outside.ino()),
                    "{} is a hard link to a file outside",
                    path.display()
                );
            }
        }
        for gone in ["f", "n", "p", "e", "inst", "c1"] {
            let p = w1.join(gone);
            let special = std::fs::symlink_metadata(&p).is_ok_and(|m| {
                let t = m.file_type();
                !(t.is_file() || t.is_dir()) || m.mode() & 0o6000 != 0
            });
            assert!(!special, "{}", p.display());
        }
        // The directory is free again once its workspace closed; the next one sees the files.
        let ws = start_at(c, &at("w1"))["workspace"]
            .as_str()
            .expect("w1 again after close")
            .to_string();
        let rec = sh(c, &ws, "cat made.txt d/y");
        assert_eq!(out(&rec), "made\ny\n", "{rec:#}");
        assert_eq!(rec["workspace"]["host_dir"], at("w1"), "{rec:#}");
        close(c, &ws);
        s.finish();
        let left: Vec<String> = common::mount_points()
            .difference(&mounts_before)
            .filter(|p| p.contains("ajtest-wshost-"))
            .cloned()
            .collect();
        assert!(left.is_empty(), "mounts left: {left:?}");
        assert!(
            w1.join("made.txt").exists(),
            "close left the files in place"
        );
    }
}
