//! A workspace command's forbidden syscall attacked (docs/SECURITY.md, "Workspaces"): the
//! command keeps the runner stopped (SIGSTOP in a loop from processes in new sessions that
//! ignore every other signal), prints bytes that look like the runner's report, makes the
//! forbidden syscall from many threads at once, writes into a host directory from the
//! background, and prints near the cap under a fork storm. The supervisor stops every other
//! process of the jail before it wakes the runner, so the record's stop is the forbidden
//! syscall, everything the command printed before it is there (none of it lost to a runner
//! kept stopped), nothing printed after it is, no process of the workspace is left or
//! writes after the record, and the server serves a new workspace at once. As root and as
//! nobody. (The red team's suite, aaf0dfe a995543 7f99bd9, made event-driven: each payload
//! waits for what it needs, seen in /proc or in a file, never for a time.)

use super::workspace::{close, out, policy, start};
use super::Server;
use crate::common::serve::record;
use crate::common::{self, variants};
use serde_json::{json, Value};

/// Python (after `import os, signal`): `stopped(pid)`, whether process `pid` of the jail is
/// stopped (/proc state T); `keep_stopped(pid, n)`: n loopers in sessions of their own,
/// ignoring what would end them, SIGSTOP `pid` for ever; returns once it is seen stopped.
const STOPPED: &str = r#"
def stopped(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] in ('T', 't')
    except OSError:
        return False
def keep_stopped(pid, n):
    for i in range(n):
        if os.fork() == 0:
            os.setsid()
            for s in (signal.SIGTERM, signal.SIGUSR1, signal.SIGHUP, signal.SIGINT, signal.SIGCONT):
                signal.signal(s, signal.SIG_IGN)
            while True:
                try:
                    os.kill(pid, signal.SIGSTOP)
                except OSError:
                    pass
    while not stopped(pid):
        pass
"#;

/// Loopers keep the runner stopped; once it is seen stopped, the command prints on both
/// streams (into pipes only the runner drains) and makes a forbidden syscall. Before the
/// supervisor stopped the loopers itself, the runner woken by SIGCONT was stopped again at
/// once and the jail ended after 500 ms with KEPT and ERRKEPT never forwarded.
fn kept_stopped_attack(loopers: usize) -> String {
    format!(
        r#"
import os, signal, sys
{STOPPED}
runner = os.getppid()
keep_stopped(runner, {loopers})
print('KEPT', flush=True)
sys.stderr.write('ERRKEPT\n'); sys.stderr.flush()
os.setuid(0)
print('AFTER', flush=True)
"#
    )
}

/// In a new workspace, `python3 -c code`, which must end in the forbidden syscall's stop
/// (`setuid`): its record.
fn stopped_on_setuid(c: &mut crate::common::serve::Conn, code: &str, what: &str) -> Value {
    let ws = start(c);
    let r = c.call(json!({"op": "workspace_exec", "workspace": ws,
        "argv": ["python3", "-c", code]}));
    let rec = record(&r).clone();
    assert_eq!(
        rec["stop_reason"], "code_forbidden_syscall:setuid",
        "{what}: {rec:#}"
    );
    rec
}

/// The attack that lost output: a runner kept stopped still forwards everything printed
/// before the forbidden syscall, and nothing after it.
#[test]
fn a_runner_kept_stopped_still_forwards_the_output_before_a_stop() {
    for who in variants() {
        let m = common::marker("ws-rtkept");
        let p = policy(&m, "16MiB", 1024);
        let mut s = Server::start(who, &p, &m, &["--pool", "2"]);
        let c = s.io();
        for i in 0..3 {
            let rec = stopped_on_setuid(c, &kept_stopped_attack(12), &format!("{who:?} {i}"));
            assert_eq!(rec["workspace"]["ended"], true, "{who:?} {i}: {rec:#}");
            let stderr = rec["execution"]["stderr"].as_str().unwrap_or("");
            assert_eq!(out(&rec), "KEPT\n", "{who:?} {i}: output lost: {rec:#}");
            assert_eq!(stderr, "ERRKEPT\n", "{who:?} {i}: output lost: {rec:#}");
        }
        // finish() checks that nothing of the server's jails is left.
        s.finish();
    }
}

/// Everything at once: loopers that ignore signals and re-stop the runner, forged `done`
/// lines on both streams, and the forbidden syscall from nine threads. The stop is the
/// syscall, what was printed before it is all there (the forged lines are the command's
/// output, never a report), nothing after it is, and a new workspace works at once.
#[test]
fn a_command_cannot_outlast_or_rewrite_its_forbidden_syscall() {
    let attack = format!(
        r#"
import os, signal, sys, threading
{STOPPED}
runner = os.getppid()
print('BEFORE', flush=True)
sys.stderr.write('ERRBEFORE\n'); sys.stderr.flush()
print('{{"done": true, "exit": 0, "stop_reason": "success"}}', flush=True)
sys.stderr.write('{{"done": true}}\n'); sys.stderr.flush()
keep_stopped(runner, 3)
print('STOPPED', flush=True)
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
"#
    );
    for who in variants() {
        let m = common::marker("ws-rtall");
        let p = policy(&m, "16MiB", 1024);
        let mut s = Server::start(who, &p, &m, &["--pool", "2"]);
        let c = s.io();
        for i in 0..3 {
            let rec = stopped_on_setuid(c, &attack, &format!("{who:?} {i}"));
            assert_eq!(rec["workspace"]["ended"], true, "{who:?} {i}: {rec:#}");
            let stderr = rec["execution"]["stderr"].as_str().unwrap_or("");
            assert_eq!(
                out(&rec),
                "BEFORE\n{\"done\": true, \"exit\": 0, \"stop_reason\": \"success\"}\nSTOPPED\n",
                "{who:?} {i}: {rec:#}"
            );
            assert_eq!(
                stderr, "ERRBEFORE\n{\"done\": true}\n",
                "{who:?} {i}: {rec:#}"
            );
            let ws2 = start(c);
            let r = c.call(json!({"op": "workspace_exec", "workspace": ws2,
                "command": "echo alive"}));
            let rec2 = record(&r).clone();
            assert_eq!(rec2["stop_reason"], "success", "{who:?}: {rec2:#}");
            assert_eq!(out(&rec2), "alive\n", "{who:?}: {rec2:#}");
            close(c, &ws2);
        }
        s.finish();
    }
}

/// The uid the jail's user has on the host: nobody under a root server and under a nobody
/// server, the test's own uid otherwise (as tests/frontends/serve/workspace.rs).
fn jail_host_uid(who: common::Who) -> u32 {
    match who {
        common::Who::Root | common::Who::Nobody => common::NOBODY,
        // SAFETY: geteuid has no preconditions and no memory effects.
        common::Who::Current => unsafe { libc::geteuid() },
    }
}

/// A background command of an earlier call writes numbered lines into a host-directory
/// workspace and ignores SIGUSR1 and SIGTERM; the last command sees the file still growing,
/// forks a process that keeps init and the runner stopped, then makes a forbidden syscall. Whatever was in the file
/// when the record came back is all there ever is: nothing runs after the record (checked
/// again once the server has exited).
#[test]
fn nothing_writes_into_a_host_directory_after_the_stop_record() {
    use std::os::unix::fs::PermissionsExt;
    const WRITER: &str = r#"
import signal
signal.signal(signal.SIGUSR1, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
n = 0
with open('/workspace/seq.txt', 'a', buffering=1) as f:
    while True:
        f.write('%d\n' % n)
        n += 1
"#;
    let last = format!(
        r#"
import os, signal
{STOPPED}
while not os.path.exists('/workspace/seq.txt') or os.path.getsize('/workspace/seq.txt') < 100:
    pass
grown = os.path.getsize('/workspace/seq.txt')
while os.path.getsize('/workspace/seq.txt') == grown:
    pass
print('SEEN', flush=True)
runner = os.getppid()
if os.fork() == 0:
    os.setsid()
    while True:
        os.kill(1, signal.SIGSTOP)
        os.kill(runner, signal.SIGSTOP)
while not stopped(runner):
    pass
os.setuid(0)
print('AFTER', flush=True)
"#
    );
    for who in variants() {
        let m = common::marker("ws-rthost");
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
            let uid = jail_host_uid(who);
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
        // Started and left running (never waited for: it ends only with its workspace), so
        // it is writing while the last command stops.
        let r = c.call(
            json!({"op": "workspace_exec", "workspace": ws, "background": true,
            "argv": ["python3", "-c", WRITER]}),
        );
        assert!(r["command"].is_string(), "{who:?}: {r}");
        let r = c.call(json!({"op": "workspace_exec", "workspace": ws,
            "argv": ["python3", "-c", &last]}));
        let rec = record(&r).clone();
        assert_eq!(
            rec["stop_reason"], "code_forbidden_syscall:setuid",
            "{who:?}: {rec:#}"
        );
        assert_eq!(out(&rec), "SEEN\n", "{who:?}: {rec:#}");
        let at_record = std::fs::read(w.join("seq.txt")).unwrap();
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
/// forbidden syscall while a fork storm of busy processes runs: all of it is in the record.
#[test]
fn large_output_before_a_forbidden_syscall_is_kept() {
    const CODE: &str = "import os, sys\nfor i in range(20):\n    if os.fork() == 0:\n        \
         os.fork(); os.fork()\n        while True: pass\n\
         sys.stdout.write('o' * 60000 + 'END\\n'); sys.stdout.flush()\n\
         sys.stderr.write('e' * 30000 + 'EEND\\n'); sys.stderr.flush()\n\
         os.setuid(0)\nprint('AFTER', flush=True)\n";
    for who in variants() {
        let m = common::marker("ws-rtbig");
        let p = policy(&m, "16MiB", 1024);
        let mut s = Server::start(who, &p, &m, &["--pool", "2"]);
        let c = s.io();
        for _ in 0..3 {
            let rec = stopped_on_setuid(c, CODE, &format!("{who:?}"));
            let stderr = rec["execution"]["stderr"].as_str().unwrap_or("");
            assert_eq!(out(&rec).len(), 60004, "{who:?}");
            assert!(out(&rec).ends_with("END\n"), "{who:?}");
            assert_eq!(stderr.len(), 30005, "{who:?}");
            assert!(stderr.ends_with("EEND\n"), "{who:?}");
        }
        s.finish();
    }
}
