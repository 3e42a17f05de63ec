//! `agentjail serve` attacked through the real binary, launched as root and as nobody: one
//! pool's jobs never share a jail; sessions cannot see, signal, read or stall each other; a
//! session that breaks a limit ends only itself; a session belongs to the connection that
//! started it; the result cache cannot be poisoned, misses on any change of what decides the
//! outcome, never serves a bad entry and stores only outcomes of the code; a pool that
//! cannot start jails fails closed and recovers; SIGKILL takes every jail down at once and
//! SIGTERM ends every running job with a record. After every server: nothing left behind.
//!
//! The policy opens the static check up (os, signal, open, globals): what is attacked here
//! is the jail and the engine around it, which must hold against code that passes any
//! check. Every policy puts a unique marker in the interpreter's argv (a `-W` filter that
//! matches nothing), so each server's jail processes are found on the host by their command
//! line even while other servers run.

mod cache;
mod learn;
mod resilience;
mod stream;
mod warm_steps;
mod workspace;
mod workspace_agent;
mod workspace_attacks;
mod workspace_net;
mod workspace_redteam;

use crate::common::serve as serve_harness;

use crate::common::{self, variants, Who};
use serde_json::{json, Value};
use serve_harness::{
    action, alive, descendants, error_code, live_with, record, scratch, uid_of, Proc, Server,
};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What the tests vary in the policy.
#[derive(Clone, Default)]
struct Knobs {
    /// Wall and CPU limit of a job or call (default 8 s: long enough that no test job
    /// reaches it by accident on a loaded 2-core box).
    wall_ms: Option<u64>,
    max_calls: Option<u64>,
    idle_s: Option<u64>,
    /// Another interpreter (a copy under /opt, for the environment digest).
    python: Option<PathBuf>,
    /// limits.stdout (default 64KiB).
    stdout: Option<&'static str>,
    /// [session] max_per_client (default: the policy's default).
    max_per_client: Option<u64>,
}

/// The test policy (see the module documentation) with `marker` in the interpreter's argv.
fn policy(marker: &str, k: &Knobs) -> PathBuf {
    let wall = k.wall_ms.unwrap_or(8000);
    let (python, binds) = match &k.python {
        Some(p) => (
            format!("python = {:?}\n", p.display().to_string()),
            // All of /opt: a bind whose parent is not in the jail's root (/opt/x) cannot be
            // made today (the plan creates no parent directories).
            "[filesystem]\nread_only = [\"/usr\", \"/bin\", \"/lib\", \"/lib64\", \"/opt\"]\n"
                .to_string(),
        ),
        None => (String::new(), String::new()),
    };
    let text = format!(
        r#"# tests/serve.rs: the default jail, fork allowed, the static check opened up.
version = 1
name = "serve-test"
description = "tests/serve.rs"
[budget]
max_seconds = {max_seconds}
max_code_chars = 20000
[check]
allowed_imports = ["fcntl", "json", "os", "signal", "time"]
denied_calls = []
denied_names = []
denied_attributes = []
deny_dunder = false
[interpreter]
{python}python_args = ["-I", "-S", "-B", "-X", "utf8", "-Wignore:{marker}"]
preload = ["json"]
[limits]
wall_time_ms = {wall}
cpu_time_ms = {wall}
memory = "128MiB"
pids = 64
stdout = "{stdout}"
{binds}[seccomp]
allow_groups = [
  "basic_io", "files_read", "files_write_tmp", "memory", "process_self", "threads",
  "signals", "time", "sleep", "poll", "pipes", "exec", "system_info", "process_spawn",
]
[cgroup]
requirement = "best_effort"
[session]
max_calls = {max_calls}
idle_timeout_seconds = {idle}
{per_client}"#,
        max_seconds = wall / 1000 + 15,
        max_calls = k.max_calls.unwrap_or(200),
        idle = k.idle_s.unwrap_or(600),
        stdout = k.stdout.unwrap_or("64KiB"),
        per_client = k
            .max_per_client
            .map_or(String::new(), |n| format!("max_per_client = {n}\n")),
    );
    common::shared_file(&format!("serve-{marker}.toml"), &text)
}

/// A marker and its policy.
fn setup(tag: &str, k: &Knobs) -> (String, PathBuf) {
    let m = common::marker(tag);
    let p = policy(&m, k);
    (m, p)
}

/// The record's `execution.stdout` parsed as one JSON value.
fn printed(rec: &Value) -> Value {
    let out = rec["execution"]["stdout"].as_str().unwrap_or("");
    serde_json::from_str(out.trim())
        .unwrap_or_else(|e| panic!("the job did not print JSON ({e}): {rec:#}"))
}

fn control_state<'a>(rec: &'a Value, control: &str) -> &'a str {
    rec["enforcement"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["control"] == control))
        .and_then(|c| c["state"].as_str())
        .unwrap_or("absent")
}

/// Wait (at most `common::HANG`: only a process that never goes fails) until none of
/// `procs` runs.
fn assert_gone(procs: &[Proc], what: &str) {
    let t = Instant::now();
    while procs.iter().any(|p| alive(*p)) {
        assert!(
            t.elapsed() < common::HANG,
            "{what}: still running: {:?}",
            procs.iter().filter(|p| alive(**p)).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---------------------------------------------------------------------------------------
// 1. Jobs on one pool

/// Every job observes what a previous or concurrent job could have left it, then plants all
/// of that itself (files in /tmp and /app/out, a class attribute in a preloaded module, an
/// environment variable, memory, a child process that never exits) and prints its secret.
const OBSERVE_HEAD: &str = r#"
import json, os, signal, time
secret = json.loads(input())["secret"]
me = os.getpid()
procs = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
found = []
def look(path):
    try:
        with open(path, "rb") as f:
            data = f.read(1 << 20)
    except OSError:
        return
    if b"ajsecret" in data:
        found.append(path)
for p in procs:
    for leaf in ("cmdline", "environ"):
        look("/proc/%d/%s" % (p, leaf))
listing = {}
for d in ("/tmp", "/app/out", "/app", "/app/in"):
    try:
        names = sorted(os.listdir(d))
    except OSError:
        names = None
    listing[d] = names
    for n in names or []:
        look(d + "/" + n)
"#;

/// The rest of the job's program, after `common::PY_OTHER_PIDS`.
const OBSERVE_TAIL: &str = r#"
report = {"secret": secret, "pid": me, "procs": procs, "found": found, "others": others,
          "listing": listing, "module_state": None, "env": os.environ.get("PLANTED")}
try:
    report["module_state"] = json.JSONDecoder.planted
except AttributeError:
    pass
json.JSONDecoder.planted = secret
os.environ["PLANTED"] = secret
with open("/tmp/planted", "w") as f:
    f.write(secret)
with open("/app/out/planted.txt", "w") as f:
    f.write(secret)
keep = bytearray(secret.encode() * 4096)
child = os.fork()
if child == 0:
    while True:
        time.sleep(60)
print(json.dumps(report))
"#;

/// The program of [`OBSERVE_HEAD`], `common::PY_OTHER_PIDS` and [`OBSERVE_TAIL`].
fn observe_and_plant_code() -> String {
    [OBSERVE_HEAD, common::PY_OTHER_PIDS, OBSERVE_TAIL].concat()
}

#[test]
fn jobs_on_one_pool_never_share_a_jail() {
    for who in variants() {
        let (m, p) = setup("jobs", &Knobs::default());
        let mut s = Server::start(who, &p, &m, &["--pool", "2", "-j", "4"]);
        Server::wait_pool_ready(s.io(), 2);
        let mut records = Vec::new();
        // Rounds of A and B in flight together (each takes a warm jail), then one alone.
        // Each round starts on a full pool: a refill slowed by a loaded machine would
        // otherwise turn the jobs cold and the test would prove nothing about the pool.
        for round in 0..8 {
            Server::wait_pool_ready(s.io(), 2);
            let ids: Vec<(String, Value)> = ["A", "B"]
                .iter()
                .map(|who| {
                    let secret = format!("ajsecret-{who}{round}-{}", common::marker("s"));
                    let a = action(&observe_and_plant_code(), json!({ "secret": secret }));
                    let id = s.io().send(json!({"op": "run", "action": a}));
                    (secret, id)
                })
                .collect();
            for (secret, id) in ids {
                let r = s.io().wait(&id);
                records.push((secret, record(&r).clone()));
            }
            if round % 3 == 2 {
                let secret = format!("ajsecret-solo{round}-{}", common::marker("s"));
                let rec = s.io().run(action(
                    &observe_and_plant_code(),
                    json!({ "secret": secret }),
                ));
                records.push((secret, rec));
            }
        }
        let secrets: Vec<&str> = records.iter().map(|(s, _)| s.as_str()).collect();
        let mut run_ids = std::collections::BTreeSet::new();
        let mut warm = 0;
        for (secret, rec) in &records {
            assert_eq!(rec["stop_reason"], "success", "{who:?}: {rec:#}");
            let o = &rec["output"];
            assert_eq!(
                o["secret"], *secret,
                "{who:?}: the job ran with its own input"
            );
            let me = o["pid"].as_i64().unwrap();
            assert_eq!(
                o["procs"],
                json!([1, me]),
                "{who:?}: a job sees a process that is not its own jail's: {o:#}"
            );
            assert_eq!(o["others"], json!([]), "{who:?}: signallable pids: {o:#}");
            assert_eq!(
                o["found"],
                json!([]),
                "{who:?}: another job's secret: {o:#}"
            );
            assert_eq!(
                o["module_state"],
                Value::Null,
                "{who:?}: interpreter reused"
            );
            assert_eq!(o["env"], Value::Null, "{who:?}: environment reused");
            assert_eq!(
                o["listing"]["/tmp"],
                json!([]),
                "{who:?}: /tmp reused: {o:#}"
            );
            assert_eq!(
                o["listing"]["/app/out"],
                json!([]),
                "{who:?}: /app/out reused"
            );
            let stdout = rec["execution"]["stdout"].as_str().unwrap();
            for other in secrets.iter().filter(|s| *s != secret) {
                assert!(
                    !stdout.contains(other) && !rec.to_string().contains(other),
                    "{who:?}: another job's secret in this job's record"
                );
            }
            // Its own /app/out came back to it, and only its own.
            let arts = rec["artifacts"].as_array().unwrap();
            assert_eq!(arts.len(), 1, "{who:?}: {arts:?}");
            assert!(run_ids.insert(rec["run_id"].as_str().unwrap().to_string()));
            if rec["jail_start"] == "warm" {
                warm += 1;
            }
        }
        assert!(
            warm >= records.len() / 2,
            "{who:?}: the pool was not used ({warm} warm of {})",
            records.len()
        );
        s.finish();
    }
}

// ---------------------------------------------------------------------------------------
// 2. Sessions
//
// The tests that count a session's processes on the host run with `--session-pool 0`: a
// warm session jail waiting for the next session would be counted with them. The pool has
// its own test (warm_session_jails_are_used_once_and_hold_nothing_of_another_session).

#[test]
fn sessions_cannot_see_signal_read_or_stall_each_other() {
    for who in variants() {
        let (m, p) = setup("sess", &Knobs::default());
        let mut s = Server::start(
            who,
            &p,
            &m,
            &["--pool", "1", "--session-pool", "0", "-j", "4"],
        );
        let s1 = s.io().start_session();
        let secret = format!("ajsecret-{}", common::marker("s1"));
        let rec = s.io().exec_ok(
            &s1,
            &format!(
                "import json, os, signal, time\n\
                 secret = {secret:?}\n\
                 with open('/tmp/s1-secret', 'w') as f:\n    f.write(secret)\n\
                 signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])\n\
                 child = os.fork()\n\
                 if child == 0:\n    while True:\n        time.sleep(60)\n\
                 print(json.dumps([os.getpid(), child]))"
            ),
        );
        let ns_pids = printed(&rec);
        let s1_child = ns_pids[1].as_i64().unwrap();
        // S1's processes on the host: its runner and the child (the only session so far).
        let h1 = s.session_runners();
        assert_eq!(
            h1.len(),
            2,
            "{who:?}: S1's runner and child on the host: {h1:?}"
        );
        let s2 = s.io().start_session();
        let mut targets: Vec<i64> = h1.iter().map(|p| p.0 as i64).collect();
        targets.push(s1_child);
        let rec = s.io().exec_ok(
            &s2,
            &format!(
                "import json, os, signal\n\
                 me = os.getpid()\n\
                 procs = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n\
                 tried = {{}}\n\
                 for pid in {targets:?}:\n    \
                     if pid in (1, me):\n        continue\n    \
                     try:\n        os.kill(pid, signal.SIGKILL)\n        tried[pid] = 'killed'\n    \
                     except OSError as e:\n        tried[pid] = e.errno\n\
                 leaked = []\n\
                 try:\n    leaked.append(secret)\nexcept NameError:\n    pass\n\
                 try:\n    leaked.append(child)\nexcept NameError:\n    pass\n\
                 print(json.dumps({{'me': me, 'procs': procs, 'tried': tried, 'globals': leaked,\n    \
                     'tmp': sorted(os.listdir('/tmp'))}}))"
            ),
        );
        let o = printed(&rec);
        let me = o["me"].as_i64().unwrap();
        assert_eq!(o["procs"], json!([1, me]), "{who:?}: S2 sees S1: {o:#}");
        let tried = o["tried"].as_object().unwrap();
        assert!(!tried.is_empty(), "{who:?}: nothing was attacked: {o:#}");
        for (pid, r) in tried {
            assert_eq!(
                *r,
                json!(libc::ESRCH),
                "{who:?}: S2's kill({pid}) did not fail with ESRCH: {o:#}"
            );
        }
        assert_eq!(o["globals"], json!([]), "{who:?}: S1's globals in S2");
        assert_eq!(o["tmp"], json!([]), "{who:?}: S1's /tmp in S2");
        // S1 is intact: its child alive, its globals and /tmp its own.
        let rec = s.io().exec_ok(
            &s1,
            "print(json.dumps([os.waitpid(child, os.WNOHANG), secret, os.listdir('/tmp')]))",
        );
        assert_eq!(
            printed(&rec),
            json!([[0, 0], secret, ["s1-secret"]]),
            "{who:?}"
        );
        assert!(h1.iter().all(|p| alive(*p)), "{who:?}: S1's processes died");
        let runner = h1
            .iter()
            .find(|p| {
                !h1.iter()
                    .any(|q| q.0 == serve_harness::proc_stat(p.0).unwrap().0)
            })
            .copied()
            .unwrap_or(h1[0]);
        // S1 busy until the test says so; S2 is served meanwhile.
        let busy = s.io().send(json!({"op": "session_exec", "session": s1,
            "code": "n = 0\nwhile signal.SIGUSR1 not in signal.sigpending():\n    n += 1\nsignal.sigwait([signal.SIGUSR1])\nn > 0"}));
        // Only once S1's runner is spinning is S1 busy: a call still on its way to the runner
        // would let S2's calls pass without proving anything (and the signal would arrive
        // before the loop, which a loaded CI machine showed).
        let ticks = serve_harness::cpu_ticks(runner.0).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while serve_harness::cpu_ticks(runner.0).unwrap_or(0) < ticks + 5 {
            assert!(
                std::time::Instant::now() < deadline,
                "{who:?}: S1's call never started spinning"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        for i in 0..3 {
            let rec = s.io().exec_ok(&s2, &format!("{i} * 7"));
            assert_eq!(rec["value"], json!((i * 7).to_string()));
        }
        assert!(
            s.io().try_take(&busy).is_none(),
            "{who:?}: S1's call ended before it was released; the test proves nothing"
        );
        assert!(alive(runner));
        // SAFETY: signalling a process of the server's jail, identified by pid and start time.
        unsafe { libc::kill(runner.0, libc::SIGUSR1) };
        let done = s.io().wait(&busy);
        assert_eq!(record(&done)["stop_reason"], "success", "{who:?}: {done:#}");
        assert_eq!(record(&done)["value"], "True");
        s.finish();
    }
}

/// What a session plants, for the next session to look for.
fn plant_in_session(secret: &str) -> String {
    format!(
        "import json, os, time\n\
         secret = {secret:?}\n\
         json.JSONDecoder.planted = secret\n\
         os.environ['PLANTED'] = secret\n\
         with open('/tmp/planted', 'w') as f:\n    f.write(secret)\n\
         child = os.fork()\n\
         if child == 0:\n    while True:\n        time.sleep(60)\n\
         print(json.dumps(os.getpid()))"
    )
}

/// A new session's first call: everything an earlier session could have left it.
const OBSERVE_IN_SESSION: &str = r#"
import json, os
me = os.getpid()
procs = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
leaked = []
try:
    leaked.append(secret)
except NameError:
    pass
try:
    leaked.append(json.JSONDecoder.planted)
except AttributeError:
    pass
print(json.dumps({'me': me, 'procs': procs, 'leaked': leaked,
                  'env': os.environ.get('PLANTED'), 'tmp': sorted(os.listdir('/tmp'))}))
"#;

/// A session's first call ran [`OBSERVE_IN_SESSION`] in a warm jail and found nothing of
/// any other session: no process but its own, no planted state, environment or file.
fn assert_warm_and_clean(rec: &Value, who: Who, which: &str) {
    assert_eq!(
        rec["session"]["jail_start"], "warm",
        "{who:?}: {which}: {rec:#}"
    );
    let o = printed(rec);
    let me = o["me"].as_i64().unwrap();
    assert_eq!(
        o["procs"],
        json!([1, me]),
        "{who:?}: {which} sees other processes: {o:#}"
    );
    assert_eq!(
        o["leaked"],
        json!([]),
        "{who:?}: another session's state in {which}: {o:#}"
    );
    assert_eq!(
        o["env"],
        Value::Null,
        "{who:?}: another session's environment in {which}: {o:#}"
    );
    assert_eq!(
        o["tmp"],
        json!([]),
        "{who:?}: another session's /tmp in {which}: {o:#}"
    );
}

/// Warm session jails (`--session-pool`): a session takes a jail started before it, which
/// no session used and none will use after it. A session plants everything it can (a file
/// in /tmp, module state, an environment variable, a process that never exits) while the
/// next session's jail already waits in the pool, and again before the pool refills; the
/// sessions that take those jails find none of it, and see no process but their own.
#[test]
fn warm_session_jails_are_used_once_and_hold_nothing_of_another_session() {
    for who in variants() {
        let (m, p) = setup("spool", &Knobs::default());
        let mut s = Server::start(who, &p, &m, &["--pool", "1", "--session-pool", "2"]);
        Server::wait_ready(s.io(), "session_pool", 2);
        let waiting = s.session_runners();
        assert_eq!(
            waiting.len(),
            2,
            "{who:?}: two warm session jails: {waiting:?}"
        );

        let s1 = s.io().start_session();
        let secret = format!("ajsecret-{}", common::marker("spool"));
        let rec = s.io().exec_ok(&s1, &plant_in_session(&secret));
        assert_eq!(rec["session"]["jail_start"], "warm", "{who:?}: {rec:#}");
        // S1's processes on the host: the warm runner it took (one of the two that waited)
        // and the child it forked, whose parent that runner is.
        let parent = |p: &Proc| serve_harness::proc_stat(p.0).map(|st| st.0);
        let children: Vec<Proc> = s
            .session_runners()
            .into_iter()
            .filter(|c| waiting.iter().any(|w| parent(c) == Some(w.0)))
            .collect();
        assert_eq!(children.len(), 1, "{who:?}: S1's child: {children:?}");
        let s1_runner = *waiting
            .iter()
            .find(|w| parent(&children[0]) == Some(w.0))
            .unwrap();
        let s1_procs = [s1_runner, children[0]];
        let other = *waiting.iter().find(|w| **w != s1_runner).unwrap();
        assert!(alive(other), "{who:?}: the other warm jail died");
        // The observer sees every plant where it was made: its empty findings below mean
        // the plants did not travel, not that it looked in the wrong places.
        let o = printed(&s.io().exec_ok(&s1, OBSERVE_IN_SESSION));
        assert_eq!(o["leaked"], json!([secret, secret]), "{who:?}: {o:#}");
        assert_eq!(o["env"], json!(secret), "{who:?}: {o:#}");
        assert_eq!(o["tmp"], json!(["planted"]), "{who:?}: {o:#}");
        assert_eq!(o["procs"].as_array().unwrap().len(), 3, "{who:?}: {o:#}");

        // S2 takes a jail that waited while S1's plants were in place (the pool is first in,
        // first out: the one that has waited since before S1 started).
        let s2 = s.io().start_session();
        assert_warm_and_clean(&s.io().exec_ok(&s2, OBSERVE_IN_SESSION), who, "S2");
        assert!(alive(other), "{who:?}: S2's jail (the other warm one) died");

        // S1 ends; its jail (runner and the child it left) goes and is never handed out
        // again: the session that comes after the pool refilled gets a new jail.
        let closed = s.io().call(json!({"op": "session_close", "session": s1}));
        assert_eq!(closed["closed"], true, "{who:?}: {closed}");
        assert_gone(&s1_procs, "the closed session's jail");
        Server::wait_ready(s.io(), "session_pool", 2);
        let s3 = s.io().start_session();
        assert_warm_and_clean(&s.io().exec_ok(&s3, OBSERVE_IN_SESSION), who, "S3");
        s.finish();

        // Without the pool, a session's jail is started for it, and the record says so.
        let mut s = Server::start(who, &p, &m, &["--pool", "1", "--session-pool", "0"]);
        assert_eq!(s.io().stats()["session_pool"], Value::Null);
        let cold = s.io().start_session();
        let rec = s.io().exec_ok(&cold, "1");
        assert_eq!(rec["session"]["jail_start"], "cold", "{who:?}: {rec:#}");
        s.finish();
    }
}

/// A session that breaks a limit: the call's record names the stop, the session is over and
/// its jail gone; the other session, and new runs, go on.
#[test]
fn a_session_that_breaks_a_limit_ends_only_itself() {
    for who in variants() {
        let (m, p) = setup("limits", &Knobs::default());
        let mut s = Server::start(
            who,
            &p,
            &m,
            &["--pool", "1", "--session-pool", "0", "-j", "4"],
        );
        let witness = s.io().start_session();
        s.io().exec_ok(&witness, "import os\ncount = 0");
        let mut count = 0;
        let cases: &[(&str, &str, Option<f64>)] = &[
            ("code_timeout", "import time\ntime.sleep(30)", Some(0.5)),
            ("code_output_too_large", "print('x' * 1000000)", None),
            (
                "code_forbidden_syscall:setuid",
                "import os\nos.setuid(0)",
                None,
            ),
            ("code_runtime_error:3", "raise SystemExit(3)", None),
            (
                "memory",
                "hog = []\nwhile True:\n    hog.append(bytearray(1 << 20))",
                None,
            ),
            ("fork", "import os\nwhile True:\n    os.fork()", Some(5.0)),
        ];
        for (expect, code, timeout) in cases {
            let before: Vec<Proc> = s.session_runners();
            let bad = s.io().start_session();
            s.io().exec_ok(&bad, "1");
            let mine: Vec<Proc> = s
                .session_runners()
                .into_iter()
                .filter(|p| !before.contains(p))
                .collect();
            assert_eq!(mine.len(), 1, "{who:?}: the new session's runner: {mine:?}");
            let resp = match timeout {
                Some(t) => s.io().exec_timeout(&bad, code, *t),
                None => s.io().exec(&bad, code),
            };
            let rec = record(&resp).clone();
            let reason = rec["stop_reason"].as_str().unwrap().to_string();
            let ended = rec["session"]["ended"] == true;
            let mut followup_ended = false;
            let mut still_forking = false;
            match *expect {
                "memory" if control_state(&rec, "cgroup_memory") == "enforced" => {
                    assert_eq!(reason, "code_memory_limit", "{who:?}: {rec:#}");
                    assert!(ended);
                }
                "memory" => {
                    // RLIMIT_AS only: allocations fail with MemoryError inside the jail; the
                    // session survives it, or its runner does not (then the session ends).
                    assert_eq!(reason, "code_runtime_error:1", "{who:?}: {rec:#}");
                    if ended {
                        let stderr = rec["execution"]["stderr"].as_str().unwrap();
                        assert!(stderr.contains("MemoryError"), "{who:?}: {rec:#}");
                    } else {
                        assert_eq!(rec["error"]["type"], "MemoryError", "{who:?}: {rec:#}");
                    }
                }
                "fork" => {
                    // Contained by the session's own limits (its pids, or its memory: 64
                    // interpreters outgrow 128 MiB first, or its stderr cap); when the session survives, its next
                    // call answers for itself (no stale report of a forked runner copy).
                    let tree = descendants(mine[0].0);
                    assert!(tree.len() <= 64, "{who:?}: {} processes", tree.len());
                    assert!(
                        // Each forked copy that hits EAGAIN prints its traceback, as CPython
                        // does: the stderr cap may be what stops the call first.
                        [
                            "code_pids_limit",
                            "code_memory_limit",
                            "code_stderr_too_large",
                        ]
                        .contains(&reason.as_str())
                            || reason.starts_with("code_runtime_error"),
                        "{who:?}: {rec:#}"
                    );
                    if !ended {
                        // The runner's forked copies die on their own (each one that
                        // leaves the program exits), but on a loaded machine some still
                        // fork and print tracebacks after the call: their stderr would
                        // count against the next call (a session's background processes
                        // are the session's). Wait for them, bounded, then ask.
                        // Orphaned copies belong to the jail's init, not to the runner:
                        // wait until the runner is all that is left under init.
                        let init = serve_harness::proc_stat(mine[0].0).map_or(0, |s| s.0);
                        let t = Instant::now();
                        while descendants(init).len() > 1 && t.elapsed() < Duration::from_secs(20) {
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        if descendants(init).len() > 1 {
                            // Copies can keep refilling their own number: each one that
                            // dies frees the slot another's fork takes (as nobody, under a
                            // per-uid RLIMIT_NPROC that the host's other processes share,
                            // this can last). They are the session's: closing it, below,
                            // must take every one of them.
                            eprintln!(
                                "{who:?}: {} fork-bomb copies still forking 20 s after the call; closing the session",
                                descendants(init).len()
                            );
                            still_forking = true;
                        }
                    }
                    if !ended && !still_forking {
                        // What the copies printed after the call ended waits in the pipe
                        // and is the next call's to carry: it may fill that call's stderr
                        // cap. Either way the call answers for itself, never with a stale
                        // report of a copy.
                        let resp = s.io().exec(&bad, "6 * 7");
                        let after = record(&resp);
                        let why = after["stop_reason"].as_str().unwrap_or_default();
                        if why == "success" {
                            assert_eq!(after["value"], "42", "{who:?}: {after:#}");
                            assert!(after["error"].is_null(), "{who:?}: {after:#}");
                        } else {
                            let stderr = after["execution"]["stderr"].as_str().unwrap_or("");
                            assert!(
                                stderr.starts_with("Traceback")
                                    || stderr.starts_with("  File")
                                    || stderr.starts_with("BlockingIOError"),
                                "{who:?}: {after:#}"
                            );
                            assert!(
                                [
                                    "code_stderr_too_large",
                                    "code_pids_limit",
                                    "code_memory_limit"
                                ]
                                .contains(&why),
                                "{who:?}: {after:#}"
                            );
                            assert!(after["value"].is_null(), "{who:?}: {after:#}");
                            assert_eq!(after["session"]["ended"], true, "{who:?}: {after:#}");
                            followup_ended = true;
                        }
                    }
                }
                e => {
                    assert_eq!(reason, e, "{who:?}: {rec:#}");
                    assert!(ended, "{who:?}: the session survived {e}: {rec:#}");
                }
            }
            if ended {
                assert_eq!(rec["session"]["ended_reason"], reason, "{who:?}");
                assert_gone(&mine, "the ended session's jail");
                // However it ended, its owner is told why, for ten minutes
                // (docs/REFERENCE.md, "Sessions").
                for _ in 0..2 {
                    let again = s.io().exec(&bad, "1");
                    assert_session_ended(&again, &reason, who);
                }
            } else if followup_ended {
                assert_gone(&mine, "the session ended by the fork bomb's aftermath");
            } else {
                // The runner, and everything under the jail's init (orphaned copies too).
                let init = serve_harness::proc_stat(mine[0].0).map_or(0, |s| s.0);
                let tree: Vec<Proc> = mine.iter().copied().chain(descendants(init)).collect();
                let closed = s.io().call(json!({"op": "session_close", "session": bad}));
                assert_eq!(closed["closed"], true);
                assert_gone(&tree, "the closed session's processes");
            }
            // The witness is untouched and can still fork; a new run works.
            count += 1;
            let rec = s
                .io()
                .exec_ok(&witness, "count += 1\np = os.fork()\nif p == 0:\n    os.kill(os.getpid(), 9)\n(count, os.waitpid(p, 0)[1])");
            assert_eq!(
                rec["value"],
                format!("({count}, 9)"),
                "{who:?} after {expect}"
            );
            let run = s.io().run(action("print('{\"ok\": 1}')", json!({})));
            assert_eq!(run["stop_reason"], "success", "{who:?} after {expect}");
        }
        s.finish();
    }
}

/// A call on an ended session: a record `invalid_request:session_ended` naming why it
/// ended, never `unknown_session`.
fn assert_session_ended(resp: &Value, why: &str, who: Who) {
    let rec = record(resp);
    assert_eq!(
        rec["stop_reason"], "invalid_request:session_ended",
        "{who:?}: {rec:#}"
    );
    assert_eq!(rec["session"]["ended"], true, "{who:?}: {rec:#}");
    assert_eq!(rec["session"]["ended_reason"], why, "{who:?}: {rec:#}");
    assert!(
        rec["error"]["message"].as_str().unwrap().contains(why),
        "{who:?}: {rec:#}"
    );
}

#[test]
fn session_budget_and_idle_timeout_end_the_session_with_a_record() {
    for who in variants() {
        let k = Knobs {
            max_calls: Some(3),
            idle_s: Some(2),
            ..Default::default()
        };
        let (m, p) = setup("budget", &k);
        let mut s = Server::start(who, &p, &m, &["--pool", "1", "--session-pool", "0"]);
        let a = s.io().start_session();
        let mine = s.session_runners();
        for i in 1..=3 {
            let rec = s.io().exec_ok(&a, &format!("{i}"));
            assert_eq!(rec["session"]["calls"], i);
        }
        let rec = record(&s.io().exec(&a, "4")).clone();
        assert_eq!(
            rec["stop_reason"], "invalid_request:session_max_calls",
            "{who:?}: {rec:#}"
        );
        assert_eq!(rec["session"]["ended"], true);
        assert_eq!(rec["session"]["ended_reason"], "max_calls");
        assert!(rec["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_calls"));
        assert_gone(&mine, "the spent session's jail");
        for _ in 0..2 {
            assert_session_ended(&s.io().exec(&a, "5"), "max_calls", who);
        }

        // Idle: the janitor ends it (its jail goes at once); the next call is told why.
        let b = s.io().start_session();
        let mine = s.session_runners();
        assert_eq!(mine.len(), 1);
        s.io().exec_ok(&b, "x = 1");
        assert_gone(&mine, "the idle session's jail");
        let resp = s.io().exec(&b, "x");
        let rec = record(&resp);
        assert_eq!(rec["session"]["ended"], true, "{who:?}: {rec:#}");
        assert_eq!(
            rec["session"]["ended_reason"], "idle_timeout",
            "{who:?}: {rec:#}"
        );
        assert!(
            rec["stop_reason"]
                .as_str()
                .unwrap()
                .starts_with("invalid_request:session_"),
            "{who:?}: {rec:#}"
        );
        assert!(rec["error"]["message"]
            .as_str()
            .unwrap()
            .contains("idle_timeout"));
        assert_session_ended(&s.io().exec(&b, "x"), "idle_timeout", who);
        assert_eq!(s.io().stats()["sessions"], 0);
        s.finish();
    }
}

// ---------------------------------------------------------------------------------------
// 3. Ownership over a socket

/// A client of `socket` as host uid `uid` (a separate process): sends `lines`, prints each
/// response, or {"connect_errno": N} when it cannot connect.
fn foreign_client(uid: u32, socket: &Path, lines: &[Value]) -> Vec<Value> {
    const CLIENT: &str = r#"
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print(json.dumps({"connect_errno": e.errno}))
    sys.exit(0)
f = s.makefile("rwb")
for line in sys.argv[2:]:
    f.write(line.encode() + b"\n")
    f.flush()
    print(f.readline().decode().strip())
"#;
    let out = std::process::Command::new("/usr/bin/setpriv")
        .args([
            &format!("--reuid={uid}"),
            &format!("--regid={uid}"),
            "--clear-groups",
            "--",
            common::PY,
            "-I",
            "-S",
            "-c",
            CLIENT,
        ])
        .arg(socket)
        .args(lines.iter().map(|l| l.to_string()))
        .current_dir("/")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A session under policies/judge-open.toml (`check.enforce = false`): each call's findings
/// are in its record and refuse nothing (the call runs; state carries to the next call);
/// under judge.toml the same call is refused. As root and as nobody.
#[test]
fn session_calls_under_an_unenforced_check_run_with_their_findings() {
    let shipped = |name: &str| {
        std::fs::read_to_string(format!("{}/policies/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    };
    let call = "import os\nimport json\nprint(json.dumps([os.getpid()]))\n";
    for who in variants() {
        for (name, enforced) in [("judge-open.toml", false), ("judge.toml", true)] {
            let m = common::marker("open");
            let args = "python_args = [\"-I\", \"-S\", \"-B\", \"-X\", \"utf8\"]";
            let text = shipped(name);
            assert!(text.contains(args), "{name} changed shape");
            let text = text.replace(
                args,
                &format!(
                    "python_args = [\"-I\", \"-S\", \"-B\", \"-X\", \"utf8\", \"-Wignore:{m}\"]"
                ),
            );
            let p = common::shared_file(&format!("serve-{m}.toml"), &text);
            let mut s = Server::start(who, &p, &m, &["--pool", "1", "--session-pool", "0"]);
            let id = s.io().start_session();
            if enforced {
                let r = s.io().exec(&id, call);
                let rec = record(&r);
                assert!(
                    rec["stop_reason"]
                        .as_str()
                        .unwrap_or("")
                        .starts_with("policy_block:static_policy_violation:"),
                    "{who:?}: {rec}"
                );
                assert!(rec["decision"].get("check").is_none(), "{rec}");
            } else {
                let rec = s.io().exec_ok(&id, call);
                let d = &rec["decision"];
                assert_eq!(d["check"]["enforced"], false, "{who:?}: {d}");
                assert!(
                    d["check"]["findings"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|f| f["rule"] == "import_not_allowed:os"),
                    "{who:?}: {d}"
                );
                // The module bound by the first call is there in the next one.
                let rec = s.io().exec_ok(&id, "print(json.dumps([os.getpid()]))\n");
                assert!(printed(&rec)[0].as_i64().is_some(), "{rec}");
            }
            s.finish();
        }
    }
}

#[test]
fn a_session_belongs_to_the_connection_that_started_it() {
    for who in variants() {
        let (m, p) = setup("owner", &Knobs::default());
        let dir = scratch("owner");
        let sock = dir.path().join("s.sock");
        let s = Server::start(
            who,
            &p,
            &m,
            &[
                "--pool",
                "1",
                "--session-pool",
                "0",
                "--socket",
                sock.to_str().unwrap(),
            ],
        );
        let meta = std::fs::symlink_metadata(&sock).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600, "{who:?}: socket mode");
        assert_eq!(meta.uid(), uid_of(who));
        let mut a = s.connect("A");
        let mut b = s.connect("B");
        let sa = a.start_session();
        let rec = a.exec_ok(&sa, "secret = 41");
        assert_eq!(
            rec["caller"]["uid"],
            uid_of(Who::Current),
            "the peer's uid is recorded"
        );
        // B knows A's session id: it can neither use nor close it, and cannot even tell
        // it exists (the same answer as for an id nobody ever had).
        let unknown = "0123456789abcdef0123456789abcdef";
        let by_b = b.exec(&sa, "secret");
        let by_b_none = b.exec(unknown, "secret");
        assert_eq!(error_code(&by_b), "unknown_session", "{who:?}: {by_b}");
        assert_eq!(
            by_b["error"]["message"]
                .as_str()
                .unwrap()
                .replace(&sa, "ID"),
            by_b_none["error"]["message"]
                .as_str()
                .unwrap()
                .replace(unknown, "ID")
        );
        let close_b = b.call(json!({"op": "session_close", "session": sa}));
        assert_eq!(error_code(&close_b), "unknown_session", "{who:?}");
        // Another uid cannot even connect (0600).
        if common::is_root() {
            let foreign = foreign_client(
                12345,
                &sock,
                &[json!({"id": 1, "op": "session_exec", "session": sa, "code": "secret"})],
            );
            assert_eq!(foreign, vec![json!({"connect_errno": libc::EACCES})]);
        }
        // A's session is untouched.
        let rec = a.exec_ok(&sa, "secret + 1");
        assert_eq!(rec["value"], "42");
        assert_eq!(rec["session"]["calls"], 2);
        // A's session dies with A's connection; B still cannot reach it.
        let runners = s.session_runners();
        assert_eq!(runners.len(), 1);
        a.close();
        assert_gone(&runners, "the disconnected client's session");
        let after = b.exec(&sa, "secret");
        assert_eq!(error_code(&after), "unknown_session");
        b.close();
        a.assert_all_answered();
        b.assert_all_answered();
        s.finish();
    }
}

/// Whether `pid` is blocked in syscall number `nr` (the first field of /proc/PID/syscall).
fn in_syscall(pid: i32, nr: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/syscall"))
        .is_ok_and(|l| l.split(' ').next() == Some(nr.to_string().as_str()))
}

/// A connection that closes while another connection's call runs must not wedge the
/// server: the call's record arrives, other clients are served, SIGTERM ends it.
#[test]
fn a_disconnect_during_another_clients_call_does_not_wedge_the_server() {
    for who in variants() {
        let (m, p) = setup("wedge", &Knobs::default());
        let dir = scratch("wedge");
        let sock = dir.path().join("s.sock");
        let s = Server::start(
            who,
            &p,
            &m,
            &["--pool", "1", "--socket", sock.to_str().unwrap()],
        );
        let mut a = s.connect("A");
        let mut b = s.connect("B");
        let sa = a.start_session();
        let sb = b.start_session();
        b.exec_ok(&sb, "1");
        // A's call ends its session by a timeout, after B has gone.
        let call = a.send(json!({"op": "session_exec", "session": sa,
            "code": "import time\ntime.sleep(30)", "timeout_s": 1.5}));
        // B leaves while A's call runs: wait until a session runner sits in A's sleep
        // (clock_nanosleep, x86_64 230, in /proc/PID/syscall); B's runner waits in a read.
        let t = Instant::now();
        while !s.session_runners().iter().any(|p| in_syscall(p.0, 230)) {
            assert!(
                t.elapsed() < common::HANG,
                "{who:?}: A's call never started"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        b.close();
        let resp = a.wait(&call);
        assert_eq!(record(&resp)["stop_reason"], "code_timeout", "{who:?}");
        let mut c = s.connect("C");
        let t = Instant::now();
        while c.stats()["sessions"] != 0 {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "{who:?}: B's session stays"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let sc = c.start_session();
        c.exec_ok(&sc, "1");
        a.close();
        c.close();
        for conn in [&a, &b, &c] {
            conn.assert_all_answered();
        }
        s.finish();
    }
}

// ---------------------------------------------------------------------------------------
// Cache directories (the cache tests and the pool-fault test use them)

/// Names of the entries in a cache directory.
fn entries(dir: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        // Not created yet (serve creates it as it starts).
        return Vec::new();
    };
    let mut v: Vec<String> = rd
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A cache directory the server (as `who`) creates: a fresh path in a 0777 scratch dir.
fn cache_dir(tag: &str) -> (tempfile::TempDir, PathBuf) {
    let d = scratch(tag);
    let c = d.path().join("cache");
    (d, c)
}
