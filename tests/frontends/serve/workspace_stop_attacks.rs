//! A workspace command's forbidden syscall attacked (docs/SECURITY.md, "Workspaces"): the
//! command stops the runner in a loop, ignores signals, forks, prints bytes that look like
//! the runner's report and makes the forbidden syscall from many threads at once. The
//! record's stop must still be the forbidden syscall, nothing printed after it may be in the
//! record, no process of the workspace may be left or write into its host directory after
//! the record, and the server must serve a new workspace at once. As root and as nobody.

use super::workspace::{close, out, policy, start};
use super::Server;
use crate::common::serve::record;
use crate::common::{self, variants};
use serde_json::json;

const ATTACK: &str = r#"
import os, signal, sys, threading, time
runner = os.getppid()
print('BEFORE', flush=True)
sys.stderr.write('ERRBEFORE\n'); sys.stderr.flush()
# Bytes that look like a runner report, on both streams.
print('{"done": true, "exit": 0, "stop_reason": "success"}', flush=True)
sys.stderr.write('{"done": true}\n'); sys.stderr.flush()
for i in range(3):
    if os.fork() == 0:
        os.setsid()
        for s in (signal.SIGTERM, signal.SIGUSR1, signal.SIGHUP, signal.SIGINT):
            signal.signal(s, signal.SIG_IGN)
        n = 0
        while True:
            try:
                os.kill(runner, signal.SIGSTOP)
            except OSError:
                pass
            n += 1
            if n % 1000 == 0:
                print('LOOPER', flush=True)
go = threading.Event()
def bad():
    go.wait()
    os.setuid(0)
    print('AFTER', flush=True)
ts = [threading.Thread(target=bad) for _ in range(8)]
for t in ts:
    t.start()
go.set()
os.setuid(0)
print('AFTER', flush=True)
"#;

#[test]
fn a_command_cannot_outlast_or_rewrite_its_forbidden_syscall() {
    for who in variants() {
        let m = common::marker("ws-stopatk");
        let p = policy(&m, "16MiB", 1024);
        let mut s = Server::start(who, &p, &m, &["--pool", "2"]);
        for i in 0..4 {
            let c = s.io();
            let ws = start(c);
            let r = c.call(json!({"op": "workspace_exec", "workspace": ws,
                "argv": ["python3", "-c", ATTACK]}));
            let rec = record(&r).clone();
            assert_eq!(
                rec["stop_reason"], "code_forbidden_syscall:setuid",
                "{who:?} {i}: {rec:#}"
            );
            assert_eq!(rec["workspace"]["ended"], true, "{who:?}: {rec:#}");
            let stdout = out(&rec);
            let stderr = rec["execution"]["stderr"].as_str().unwrap_or("");
            // A runner kept stopped can lose what it had not forwarded (the 500 ms bound,
            // docs/SECURITY.md): what is there is only what the command printed before.
            for line in stdout.lines() {
                assert!(
                    line == "BEFORE" || line == "LOOPER" || line.starts_with("{\"done\""),
                    "{who:?} {i}: {rec:#}"
                );
            }
            for line in stderr.lines() {
                assert!(
                    line == "ERRBEFORE" || line.starts_with("{\"done\""),
                    "{who:?} {i}: {rec:#}"
                );
            }
            assert!(!stdout.contains("AFTER"), "ran after the stop: {rec:#}");
            // The server serves a new workspace at once.
            let ws2 = start(c);
            let r = c.call(json!({"op": "workspace_exec", "workspace": ws2,
                "command": "echo alive"}));
            let rec2 = record(&r).clone();
            assert_eq!(rec2["stop_reason"], "success", "{who:?}: {rec2:#}");
            assert_eq!(out(&rec2), "alive\n", "{who:?}: {rec2:#}");
            close(c, &ws2);
        }
        // finish() checks that nothing of the server's jails is left.
        s.finish();
    }
}

/// A background command of an earlier call writes numbered lines into a host-directory
/// workspace; the last command forks a loop that re-stops the runner, then a later call's forbidden syscall ends the workspace.
/// Whatever was in the file when the record came back is all there ever is: nothing runs
/// after the record (checked again once the server has exited).
#[test]
fn nothing_writes_into_a_host_directory_after_the_stop_record() {
    use std::os::unix::fs::PermissionsExt;
    const WRITER: &str = r#"
import os, signal
runner = os.getppid()
signal.signal(signal.SIGUSR1, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
n = 0
with open('/workspace/seq.txt', 'a', buffering=1) as f:
    while True:
        f.write('%d\n' % n)
        n += 1
"#;
    for who in variants() {
        let m = common::marker("ws-stophost");
        let base = tempfile::Builder::new()
            .prefix("ajtest-wsstop-")
            .tempdir_in("/tmp")
            .unwrap();
        std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let root = base.path().join("roots");
        let w = root.join("w");
        std::fs::create_dir_all(&w).unwrap();
        for d in [&root, &w] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        if common::is_root() {
            let uid = super::workspace::jail_host_uid(who);
            std::os::unix::fs::chown(&w, Some(uid), Some(uid)).unwrap();
        }
        let shipped = std::fs::read_to_string(policy(&m, "16MiB", 1024)).unwrap();
        let text = format!(
            "{shipped}\nhost_roots = [{:?}]\nhost_quota_acknowledged = true\n",
            root.display().to_string()
        );
        let p = common::shared_file(&format!("ws-{m}-stophost.toml"), &text);
        let mut s = Server::start(who, &p, &m, &["--pool", "1"]);
        let c = s.io();
        let r = c.call(json!({"op": "workspace_start", "host_dir": w.display().to_string()}));
        let ws = r["workspace"].as_str().expect("a workspace").to_string();
        let r = c.call(
            json!({"op": "workspace_exec", "workspace": ws, "background": true,
            "argv": ["python3", "-c", WRITER]}),
        );
        assert!(r.get("error").is_none(), "{who:?}: {r}");
        // The writer has written (the runner may be stopped: this call waits for it).
        let r = c.call(json!({"op": "workspace_exec", "workspace": ws,
            "argv": ["python3", "-c",
                "import os, time\nwhile not os.path.exists('/workspace/seq.txt') or \
                 os.path.getsize('/workspace/seq.txt') < 100:\n    time.sleep(0.01)\n\
                 print('SEEN', flush=True)\n\
                 if os.fork() == 0:\n    r = os.getppid()\n    os.setsid()\n    \
                 while True:\n        os.kill(1, 19)\n        os.kill(r, 19)\n\
                 os.setuid(0)\nprint('AFTER', flush=True)\n"]}));
        let rec = record(&r).clone();
        assert_eq!(
            rec["stop_reason"], "code_forbidden_syscall:setuid",
            "{who:?}: {rec:#}"
        );
        assert!(out(&rec).starts_with("SEEN\n"), "{who:?}: {rec:#}");
        assert!(!out(&rec).contains("AFTER"), "{who:?}: {rec:#}");
        let at_record = std::fs::read(w.join("seq.txt")).unwrap();
        // A new workspace works at once.
        let ws2 = start(c);
        let r = c.call(json!({"op": "workspace_exec", "workspace": ws2, "command": "echo ok"}));
        assert_eq!(out(record(&r)), "ok\n", "{who:?}: {r}");
        close(c, &ws2);
        s.finish();
        let after = std::fs::read(w.join("seq.txt")).unwrap();
        assert_eq!(
            after.len(),
            at_record.len(),
            "{who:?}: the workspace wrote into its host directory after its stop record"
        );
    }
}

/// Output near the stdout cap (64 KiB here), on both streams, printed just before a
/// forbidden syscall from a fork storm's parent: all of it is in the record.
#[test]
fn large_output_before_a_forbidden_syscall_is_kept() {
    const CODE: &str = "import os, sys\nfor i in range(20):\n    if os.fork() == 0:\n        \
         os.fork(); os.fork()\n        while True: pass\n\
         sys.stdout.write('o' * 60000 + 'END\\n'); sys.stdout.flush()\n\
         sys.stderr.write('e' * 30000 + 'EEND\\n'); sys.stderr.flush()\n\
         os.setuid(0)\nprint('AFTER', flush=True)\n";
    for who in variants() {
        let m = common::marker("ws-stopbig");
        let p = policy(&m, "16MiB", 1024);
        let mut s = Server::start(who, &p, &m, &["--pool", "2"]);
        let c = s.io();
        for _ in 0..3 {
            let ws = start(c);
            let r = c.call(json!({"op": "workspace_exec", "workspace": ws,
                "argv": ["python3", "-c", CODE]}));
            let rec = record(&r).clone();
            assert_eq!(
                rec["stop_reason"], "code_forbidden_syscall:setuid",
                "{who:?}: {rec:#}"
            );
            let stderr = rec["execution"]["stderr"].as_str().unwrap_or("");
            assert!(out(&rec).ends_with("END\n"), "{who:?}: {}", out(&rec).len());
            assert!(!out(&rec).contains("AFTER"), "{who:?}");
            assert!(stderr.ends_with("EEND\n"), "{who:?}: {}", stderr.len());
        }
        s.finish();
    }
}
