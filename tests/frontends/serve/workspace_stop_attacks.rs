//! A workspace command's forbidden syscall attacked (docs/SECURITY.md, "Workspaces"): the
//! command stops the runner in a loop, ignores signals, forks, prints bytes that look like
//! the runner's report and makes the forbidden syscall from many threads at once. The
//! record's stop must still be the forbidden syscall, the output before it must be there,
//! nothing printed after it, no process of the workspace left, and the server must serve a
//! new workspace at once. As root and as nobody.

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
            assert!(stdout.starts_with("BEFORE\n"), "{who:?} {i}: {rec:#}");
            assert!(stderr.contains("ERRBEFORE\n"), "{who:?} {i}: {rec:#}");
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
