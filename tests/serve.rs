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

mod common;
#[path = "common/serve.rs"]
mod serve_harness;

use common::{variants, Who};
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

/// Wait (at most 5 s: a cleanup guarantee) until none of `procs` runs.
fn assert_gone(procs: &[Proc], what: &str) {
    let t = Instant::now();
    while procs.iter().any(|p| alive(*p)) {
        assert!(
            t.elapsed() < Duration::from_secs(5),
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
        std::thread::sleep(Duration::from_millis(300));
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
// 4. The cache

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

/// Every entry is agentjail's: `<sha256 hex>.json`, a private regular file of `uid`, whose
/// key is its name; no temp file left.
fn assert_cache_sound(dir: &Path, uid: u32) {
    for name in entries(dir) {
        let path = dir.join(&name);
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let key = name.strip_suffix(".json").unwrap_or("");
        assert!(
            key.len() == 64 && key.chars().all(|c| c.is_ascii_hexdigit()),
            "a foreign entry in the cache: {name}"
        );
        assert!(meta.is_file() && meta.mode() & 0o777 == 0o600 && meta.uid() == uid);
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(v["key"], key);
        assert!(v["record"]["run_id"].is_string());
    }
}

fn is_hit(rec: &Value) -> bool {
    rec["cache"]["hit"] == true
}

/// A cache directory the server (as `who`) creates: a fresh path in a 0777 scratch dir.
fn cache_dir(tag: &str) -> (tempfile::TempDir, PathBuf) {
    let d = scratch(tag);
    let c = d.path().join("cache");
    (d, c)
}

#[test]
fn a_job_cannot_poison_the_cache() {
    const POISON: &str = r#"
import json, os
req = json.loads(input())
forged = json.dumps({"key": req["key"], "stored_at": 4102444800,
    "record": {"run_id": "00000000-0000-0000-0000-000000000000", "status": "ok",
               "stop_reason": "success", "output": {"v": "forged"}}})
attempts = {}
for base in (req["cache"], "/proc/1/root" + req["cache"], "/proc/self/root" + req["cache"],
             "/proc/1/cwd" + req["cache"]):
    try:
        os.makedirs(base, exist_ok=True)
        with open(base + "/" + req["key"] + ".json", "w") as f:
            f.write(forged)
        attempts[base] = "wrote"
    except OSError as e:
        attempts[base] = e.errno
print(json.dumps({"attempts": attempts}))
"#;
    for who in variants() {
        let (m, p) = setup("poison", &Knobs::default());
        let (_d, cache) = cache_dir("poison");
        let mut s = Server::start(
            who,
            &p,
            &m,
            &["--pool", "1", "--cache", cache.to_str().unwrap()],
        );
        let victim = action("print('{\"v\": 1}')", json!({}));
        let first = s.io().run(victim.clone());
        assert_eq!(first["stop_reason"], "success");
        let names = entries(&cache);
        assert_eq!(names.len(), 1, "{who:?}: {names:?}");
        let key = names[0].strip_suffix(".json").unwrap().to_string();
        let stored = std::fs::read(cache.join(&names[0])).unwrap();
        let rec = s.io().run(action(
            POISON,
            json!({"cache": cache.display().to_string(), "key": key}),
        ));
        assert_eq!(rec["stop_reason"], "success", "{who:?}: {rec:#}");
        // Whatever the job believes it wrote, it wrote into its own jail.
        assert_eq!(
            std::fs::read(cache.join(&names[0])).unwrap(),
            stored,
            "{who:?}: the victim's entry changed: {:#}",
            rec["output"]
        );
        assert_cache_sound(&cache, uid_of(who));
        let hit = s.io().run(victim);
        assert!(is_hit(&hit), "{who:?}: {hit:#}");
        assert_eq!(hit["output"], json!({"v": 1}));
        assert_ne!(
            hit["run_id"], first["run_id"],
            "a hit is a record of its own"
        );
        assert_eq!(hit["cache"]["original_run_id"], first["run_id"]);
        assert_eq!(hit["cache"]["key"], key);
        s.finish();
        assert_cache_sound(&cache, uid_of(who));
    }
}

/// A cache hit is a record of the request that asked: its own run_id, caller, action id and
/// timing, the stored run named only in `cache.original_run_id`; the audit log's line names
/// who asked. Attack: a second uid asks for the same action a first uid ran, and must not
/// get the first one's identity or run id.
#[test]
fn a_cache_hit_names_the_caller_who_asked_not_the_first_one() {
    if !common::is_root() {
        eprintln!("\n!!!!!!!! SKIPPED: a second uid needs root !!!!!!!!\n");
        return;
    }
    for who in variants() {
        let (m, p) = setup("hitcaller", &Knobs::default());
        let (d, cache) = cache_dir("hitcaller");
        let sock = d.path().join("s.sock");
        let audit = d.path().join("audit.jsonl");
        // The second client: another uid in the socket's group (root's server), or the
        // server's own uid (nobody's server: the first client is root, the test process).
        let (second, group) = match who {
            Who::Root => (12345u32, Some("12345")),
            _ => (uid_of(who), None),
        };
        let mut args = vec![
            "--pool",
            "1",
            "--cache",
            cache.to_str().unwrap(),
            "--audit-log",
            audit.to_str().unwrap(),
            "--socket",
            sock.to_str().unwrap(),
        ];
        if let Some(g) = group {
            args.extend(["--socket-group", g]);
        }
        let s = Server::start(who, &p, &m, &args);
        let mut a = s.connect("A");
        let mut act = action("print('{\"v\": 1}')", json!({}));
        act["id"] = json!("first-asker");
        let first = a.run(act.clone());
        assert_eq!(first["stop_reason"], "success", "{who:?}: {first:#}");
        assert_eq!(first["caller"]["uid"], 0);
        act["id"] = json!("second-asker");
        let resp = foreign_client(
            second,
            &sock,
            &[json!({"id": 7, "op": "run", "action": act})],
        );
        let hit = record(&resp[0]);
        assert!(is_hit(hit), "{who:?}: {hit:#}");
        assert_eq!(
            hit["caller"]["uid"], second,
            "{who:?}: the hit names who asked"
        );
        assert_eq!(hit["action"]["id"], "second-asker", "{who:?}");
        assert_ne!(hit["run_id"], first["run_id"], "{who:?}");
        assert_eq!(hit["cache"]["original_run_id"], first["run_id"]);
        assert_eq!(hit["output"], first["output"]);
        assert_eq!(hit["stop_reason"], "success");
        assert!(
            !hit["trace"]
                .to_string()
                .contains(&first["run_id"].to_string())
                && hit["trace"] != first["trace"],
            "{who:?}: the hit's timing is its own"
        );
        a.close();
        a.assert_all_answered();
        s.finish();
        let lines: Vec<Value> = std::fs::read_to_string(&audit)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{who:?}: {lines:?}");
        assert_eq!(lines[0]["caller"]["uid"], 0);
        assert_eq!(
            lines[1]["caller"]["uid"], second,
            "{who:?}: the audit names who asked"
        );
        assert_eq!(lines[1]["run_id"], hit["run_id"]);
        assert_eq!(lines[1]["cache"]["original_run_id"], first["run_id"]);
    }
}

/// A copy of the host's python3 under /opt (a bindable root), removed on drop: its mtime is
/// part of the environment digest, which the policy cannot see. Laid out as an installation
/// (`bin/python3`, and `lib/python3.N` a link to the host's standard library), as the policy
/// loader requires to tell which Python it is.
struct OptPython(PathBuf);

impl OptPython {
    fn new() -> OptPython {
        let dir = PathBuf::from(format!("/opt/ajserve-python-{}", common::marker("py")));
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        for d in [dir.clone(), dir.join("bin"), dir.join("lib")] {
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let real = std::fs::canonicalize(common::PY).unwrap();
        let name = real.file_name().unwrap().to_str().unwrap().to_string();
        std::os::unix::fs::symlink(format!("/usr/lib/{name}"), dir.join("lib").join(&name))
            .unwrap();
        let bin = dir.join("bin/python3");
        std::fs::copy(&real, &bin).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        OptPython(bin)
    }

    fn touch(&self, secs: u64) {
        let f = std::fs::File::options().write(true).open(&self.0).unwrap();
        f.set_modified(std::time::UNIX_EPOCH + Duration::from_secs(secs))
            .unwrap();
    }
}

impl Drop for OptPython {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent().and_then(|b| b.parent()) {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[test]
fn the_cache_key_covers_everything_that_decides_the_outcome() {
    for who in variants() {
        let (m, p) = setup("key", &Knobs::default());
        let (_d, cache) = cache_dir("key");
        let c = cache.to_str().unwrap();
        let mut s = Server::start(who, &p, &m, &["--pool", "1", "--cache", c]);
        let code = "import json\nprint(json.dumps({'n': json.loads(input())['n']}))";
        let base = action(code, json!({"n": 1}));
        let first = s.io().run(base.clone());
        assert_eq!(first["stop_reason"], "success", "{who:?}: {first:#}");
        assert!(!is_hit(&first));
        let mut other_id = base.clone();
        other_id["id"] = json!("another id");
        let hit = s.io().run(other_id);
        assert!(
            is_hit(&hit),
            "{who:?}: the id is not part of the key: {hit:#}"
        );
        assert_eq!(hit["cache"]["original_run_id"], first["run_id"]);
        assert_eq!(
            hit["action"]["id"], "another id",
            "the hit names this request's id"
        );
        assert_eq!(entries(&cache).len(), 1);
        let variants_of: Vec<(&str, Value)> = vec![
            ("code", {
                let mut a = base.clone();
                a["code"] = json!(format!("{code}\n# another program"));
                a
            }),
            ("payload", {
                let mut a = base.clone();
                a["input_payload"] = json!({"n": 2});
                a
            }),
            ("files", {
                let mut a = base.clone();
                a["files"] = json!([{"path": "x.txt", "content": "x"}]);
                a
            }),
            ("file content", {
                let mut a = base.clone();
                a["files"] = json!([{"path": "x.txt", "content": "y"}]);
                a
            }),
            ("output_schema", {
                let mut a = base.clone();
                a["output_schema"] = json!({"type": "object"});
                a
            }),
            ("policy_hints", {
                let mut a = base.clone();
                a["policy_hints"] = json!({"exec_timeout_seconds": 5});
                a
            }),
        ];
        let mut stored = 1;
        for (what, a) in &variants_of {
            let rec = s.io().run(a.clone());
            assert_eq!(rec["stop_reason"], "success", "{who:?} {what}: {rec:#}");
            assert!(!is_hit(&rec), "{who:?}: a different {what} hit the cache");
            assert_ne!(rec["run_id"], first["run_id"]);
            stored += 1;
            assert_eq!(entries(&cache).len(), stored, "{who:?}: {what} not stored");
            let again = s.io().run(a.clone());
            assert!(
                is_hit(&again),
                "{who:?}: {what} not answered from the cache"
            );
            assert_eq!(again["cache"]["original_run_id"], rec["run_id"]);
        }
        // Another language never reaches the cache (and is never stored).
        let mut js = base.clone();
        js["language"] = json!("javascript");
        let rec = s.io().run(js);
        assert_eq!(rec["stop_reason"], "policy_block:language_denied_execution");
        assert!(!is_hit(&rec));
        assert_eq!(entries(&cache).len(), stored);
        s.finish();

        // `run --cache` with the same policy reads what serve stored...
        let bytes = serde_json::to_vec(&base).unwrap();
        let args = ["--policy", p.to_str().unwrap(), "--cache", c];
        let r = common::run_as(who, &args, &bytes, None);
        assert!(
            is_hit(&r.record),
            "{who:?}: run --cache missed serve's entry"
        );
        assert_eq!(r.record["cache"]["original_run_id"], first["run_id"]);
        // ...and another policy (one byte apart) misses.
        let (_, p2) = setup("key2", &Knobs::default());
        let r = common::run_as(
            who,
            &["--policy", p2.to_str().unwrap(), "--cache", c],
            &bytes,
            None,
        );
        assert_eq!(r.stop_reason(), "success");
        assert!(!is_hit(&r.record), "{who:?}: another policy hit the cache");
        // The environment: the same policy on an interpreter that changed misses.
        let py = OptPython::new();
        let k3 = Knobs {
            python: Some(py.0.clone()),
            ..Default::default()
        };
        let (_, p3) = setup("key3", &k3);
        let args3 = ["--policy", p3.to_str().unwrap(), "--cache", c];
        py.touch(1_000_000_000);
        let r1 = common::run_as(who, &args3, &bytes, None);
        assert_eq!(r1.stop_reason(), "success", "{who:?}: {:#}", r1.record);
        let r2 = common::run_as(who, &args3, &bytes, None);
        assert!(is_hit(&r2.record), "{who:?}: the same environment missed");
        py.touch(1_000_000_001);
        let r3 = common::run_as(who, &args3, &bytes, None);
        assert!(
            !is_hit(&r3.record),
            "{who:?}: a changed interpreter hit the cache"
        );
        assert_ne!(
            r3.record["environment"]["digest"],
            r1.record["environment"]["digest"]
        );
        assert_cache_sound(&cache, uid_of(who));
    }
}

/// Planted or damaged entries are ignored with a warning, never served; a well-formed
/// private entry of ours is served (the control: the checks, not chance, refused the rest).
#[test]
fn planted_or_corrupt_cache_entries_are_never_served() {
    for who in variants() {
        let uid = uid_of(who);
        let (_m, p) = setup("plant", &Knobs::default());
        let (_d, cache) = cache_dir("plant");
        let args = [
            "--policy",
            p.to_str().unwrap(),
            "--cache",
            cache.to_str().unwrap(),
        ];
        let victim = serde_json::to_vec(&action("print('{\"v\": 1}')", json!({}))).unwrap();
        let first = common::run_as(who, &args, &victim, None);
        assert_eq!(first.stop_reason(), "success");
        let name = entries(&cache).remove(0);
        let path = cache.join(&name);
        let key = name.strip_suffix(".json").unwrap();
        let forged = |k: &str| {
            serde_json::to_vec(&json!({"key": k, "stored_at": 4102444800u64,
                "record": {"run_id": "00000000-0000-0000-0000-00000000f0f0", "status": "ok",
                           "stop_reason": "success", "phase": "finalize",
                           "output": {"v": "forged"}, "trace": [], "agentjail_version": "x"}}))
            .unwrap()
        };
        let decoy = cache.parent().unwrap().join("decoy.json");
        std::fs::write(&decoy, forged(key)).unwrap();
        std::os::unix::fs::chown(&decoy, Some(uid), Some(uid)).unwrap();
        std::fs::set_permissions(&decoy, std::fs::Permissions::from_mode(0o600)).unwrap();
        let write = |bytes: &[u8], mode: u32, owner: u32| {
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::remove_dir(&path);
            std::fs::write(&path, bytes).unwrap();
            std::os::unix::fs::chown(&path, Some(owner), Some(owner)).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        type Plant<'a> = Box<dyn Fn() + 'a>;
        let mut plants: Vec<(&str, Plant)> = vec![
            ("garbage", Box::new(|| write(b"\x00not json{{", 0o600, uid))),
            (
                "truncated",
                Box::new(|| write(&forged(key)[..40], 0o600, uid)),
            ),
            (
                "readable by others",
                Box::new(|| write(&forged(key), 0o644, uid)),
            ),
            (
                "another key's entry",
                Box::new(|| write(&forged(&"0".repeat(64)), 0o600, uid)),
            ),
            (
                "a symlink",
                Box::new(|| {
                    let _ = std::fs::remove_file(&path);
                    std::os::unix::fs::symlink(&decoy, &path).unwrap();
                }),
            ),
            (
                "a FIFO",
                Box::new(|| {
                    let _ = std::fs::remove_file(&path);
                    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
                    // SAFETY: mkfifo on a valid NUL-terminated path.
                    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
                    std::os::unix::fs::chown(&path, Some(uid), Some(uid)).unwrap();
                }),
            ),
            (
                "a directory",
                Box::new(|| {
                    let _ = std::fs::remove_file(&path);
                    std::fs::create_dir(&path).unwrap();
                    std::os::unix::fs::chown(&path, Some(uid), Some(uid)).unwrap();
                }),
            ),
        ];
        if common::is_root() {
            plants.push((
                "another uid's file",
                Box::new(|| write(&forged(key), 0o600, uid ^ 0x4000)),
            ));
        }
        for (what, plant) in &plants {
            plant();
            // A FIFO would block a reader that opens it without O_NONBLOCK: fail, not hang.
            let guard = HangGuard::new(&path, 20);
            let r = common::run_as(who, &args, &victim, None);
            assert!(
                !guard.fired(),
                "{who:?}: agentjail blocked on {what} in the cache until the test opened it"
            );
            drop(guard);
            assert!(
                !is_hit(&r.record),
                "{who:?}: {what} was served: {:#}",
                r.record
            );
            assert_eq!(r.stop_reason(), "success", "{who:?}: {what}");
            assert_eq!(r.record["output"], json!({"v": 1}), "{who:?}: {what}");
            assert_ne!(r.record["run_id"], first.record["run_id"]);
            assert!(
                r.stderr.contains("agentjail: cache: ignoring"),
                "{who:?}: {what} ignored without a warning: {}",
                r.stderr
            );
        }
        // The control: a well-formed private entry of ours is what a hit is made of.
        write(&forged(key), 0o600, uid);
        let r = common::run_as(who, &args, &victim, None);
        assert!(is_hit(&r.record), "{who:?}: {:#}", r.record);
        assert_eq!(r.record["output"], json!({"v": "forged"}));
        let _ = std::fs::remove_file(&path);
    }
}

/// Unblocks whoever hangs on opening a FIFO at `path` after `secs` seconds (by opening it
/// for writing), so a hang fails the test instead of stalling it.
struct HangGuard {
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    fired: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl HangGuard {
    fn new(path: &Path, secs: u64) -> HangGuard {
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let fired = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (d, f, p) = (
            std::sync::Arc::clone(&done),
            std::sync::Arc::clone(&fired),
            path.to_path_buf(),
        );
        std::thread::spawn(move || {
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(secs) {
                if d.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let is_fifo = std::fs::symlink_metadata(&p)
                .map(|m| std::os::unix::fs::FileTypeExt::is_fifo(&m.file_type()))
                .unwrap_or(false);
            if is_fifo {
                f.store(true, std::sync::atomic::Ordering::SeqCst);
                eprintln!("HANG: a reader blocked on the FIFO at {p:?}; unblocking it");
                let _ = std::fs::OpenOptions::new().write(true).open(&p);
            }
        });
        HangGuard { done, fired }
    }

    /// Whether a reader had to be unblocked.
    fn fired(&self) -> bool {
        self.fired.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for HangGuard {
    fn drop(&mut self) {
        self.done.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn only_outcomes_of_the_code_are_stored() {
    for who in variants() {
        let (m, p) = setup("store", &Knobs::default());
        let (_d, cache) = cache_dir("store");
        let mut s = Server::start(
            who,
            &p,
            &m,
            &["--pool", "1", "--cache", cache.to_str().unwrap()],
        );
        let timeout = json!({"exec_timeout_seconds": 0.3});
        let cases: Vec<(&str, Value, bool)> = vec![
            ("success", action("print('{}')", json!({})), true),
            ("code_runtime_error:1", action("1 / 0", json!({})), true),
            (
                "invalid_code_output:non_json",
                action("print('hello')", json!({})),
                true,
            ),
            (
                "code_forbidden_syscall:setuid",
                action("import os\nos.setuid(0)", json!({})),
                true,
            ),
            (
                "code_timeout",
                {
                    let mut a = action("import time\ntime.sleep(30)", json!({}));
                    a["policy_hints"] = timeout.clone();
                    a
                },
                false,
            ),
            (
                "code_output_too_large",
                action("print('x' * 1000000)", json!({})),
                false,
            ),
            (
                "policy_block:static_policy_violation:import_not_allowed:socket",
                action("import socket", json!({})),
                false,
            ),
            ("invalid_action:code", action("   ", json!({})), false),
        ];
        for (reason, a, cacheable) in &cases {
            let n = entries(&cache).len();
            let rec = s.io().run(a.clone());
            assert_eq!(rec["stop_reason"], *reason, "{who:?}: {rec:#}");
            let stored = entries(&cache).len() - n;
            assert_eq!(
                stored,
                usize::from(*cacheable),
                "{who:?}: {reason}: stored {stored}"
            );
            let again = s.io().run(a.clone());
            assert_eq!(is_hit(&again), *cacheable, "{who:?}: {reason} again");
            assert_eq!(again["stop_reason"], *reason);
        }
        // Memory: cacheable only as the runtime error RLIMIT_AS makes of it.
        let rec = s.io().run(action(
            "hog = []\nwhile True:\n    hog.append(bytearray(1 << 20))",
            json!({}),
        ));
        if control_state(&rec, "cgroup_memory") == "enforced" {
            let n = entries(&cache).len();
            assert_eq!(rec["stop_reason"], "code_memory_limit", "{who:?}");
            let again = s.io().run(action(
                "hog = []\nwhile True:\n    hog.append(bytearray(1 << 20))",
                json!({}),
            ));
            assert!(!is_hit(&again));
            assert_eq!(entries(&cache).len(), n, "{who:?}: an OOM kill was stored");
        } else {
            // No memory cgroup: RLIMIT_AS makes the allocation fail, and the program's
            // MemoryError is its own word, not the kernel's (docs/REFERENCE.md's stop-reason
            // table).
            assert_eq!(
                rec["stop_reason"], "code_runtime_error:1",
                "{who:?}: {rec:#}"
            );
            let said = rec["error"]["type"] == "MemoryError"
                || rec["execution"]["stderr"]
                    .as_str()
                    .is_some_and(|e| e.contains("MemoryError"));
            assert!(said, "{who:?}: {rec:#}");
        }
        s.finish();
        assert_cache_sound(&cache, uid_of(who));
    }
}

// ---------------------------------------------------------------------------------------
// 5. A pool that cannot be refilled

/// `prlimit` on the server, run as the server's own uid (this host's root has no
/// CAP_SYS_RESOURCE: only the soft limit moves, within the hard one).
fn set_soft_limit(who: Who, pid: i32, resource: &str, value: &str) {
    let prlimit = Path::new("/usr/bin/prlimit");
    let mut c = serve_harness::command(who, prlimit);
    let out = c
        .arg(format!("--pid={pid}"))
        .arg(format!("--{resource}={value}:"))
        .output()
        .unwrap();
    assert!(out.status.success(), "prlimit: {out:?}");
}

fn soft_limit(pid: i32, name: &str) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/limits"))
        .unwrap()
        .lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l[25..].split_whitespace().next().map(str::to_string))
        .unwrap()
}

#[test]
fn a_pool_that_cannot_start_jails_fails_closed_and_recovers() {
    for who in variants() {
        if who == Who::Root {
            // Root is exempt from RLIMIT_NPROC; the root launch is made to fail by fault
            // injection in tests/faults.rs (serve_fails_closed_when_no_jail_can_start).
            eprintln!("note: the root variant of this attack is in tests/faults.rs");
            continue;
        }
        let (m, p) = setup("fault", &Knobs::default());
        let (_d, cache) = cache_dir("fault");
        let mut s = Server::start(
            who,
            &p,
            &m,
            // A fixed pool of two: the count of warm jails before the fault is the point.
            &[
                "--pool",
                "2",
                "--pool-max",
                "2",
                "--cache",
                cache.to_str().unwrap(),
            ],
        );
        let ok = s.io().run(action("print('{\"n\": 0}')", json!({})));
        assert_eq!(ok["stop_reason"], "success");
        Server::wait_pool_ready(s.io(), 2);
        Server::wait_ready(s.io(), "session_pool", 1);
        let stored = entries(&cache).len();
        // No new process for this uid: every jail start (clone3) fails with EAGAIN.
        let orig = soft_limit(s.pid, "Max processes");
        set_soft_limit(who, s.pid, "nproc", "1");
        let mut failed = 0;
        for i in 1..=4 {
            let rec = s
                .io()
                .run(action(&format!("print('{{\"n\": {i}}}')"), json!({})));
            match rec["stop_reason"].as_str().unwrap() {
                "success" => assert_eq!(rec["jail_start"], "warm", "{who:?}: {rec:#}"),
                "sandbox_unavailable:setup" => {
                    failed += 1;
                    assert_eq!(rec["phase"], "execute");
                    assert!(rec.get("output").is_none() && rec["execution"].is_null());
                    let e = &rec["error"];
                    assert!(e["stage"].as_str().unwrap().contains("clone3"), "{e:#}");
                    assert_eq!(e["errno"], libc::EAGAIN);
                    let msg = e["message"].as_str().unwrap();
                    assert!(
                        msg.contains("process") && !msg.contains("user namespaces"),
                        "{who:?}: the message does not say what ran out: {msg}"
                    );
                }
                other => panic!("{who:?}: neither ran nor failed closed: {other}: {rec:#}"),
            }
        }
        assert!(failed >= 2, "{who:?}: only {failed} jobs failed");
        let st = s.io().stats();
        assert_eq!(st["pool"]["ready"], 0, "{who:?}: {st}");
        assert!(st["pool"]["refill_failures"].as_u64().unwrap() >= 1, "{st}");
        // The warm session jail started before the fault serves one session; the next
        // session's jail cannot start, and its start fails closed.
        let warm = s.io().start_session();
        let rec = s.io().exec_ok(&warm, "1");
        assert_eq!(rec["session"]["jail_start"], "warm", "{who:?}: {rec:#}");
        let resp = s.io().call(json!({"op": "session_start"}));
        assert_eq!(error_code(&resp), "unavailable", "{resp}");
        assert!(resp["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("sandbox_unavailable:setup"));
        assert_eq!(
            entries(&cache).len(),
            stored + 4 - failed,
            "{who:?}: a setup failure was stored"
        );
        // The fault goes away: jobs run again and the pool fills.
        set_soft_limit(who, s.pid, "nproc", &orig);
        let rec = s.io().run(action("print('{\"n\": 9}')", json!({})));
        assert_eq!(rec["stop_reason"], "success", "{who:?}: {rec:#}");
        Server::wait_pool_ready(s.io(), 2);
        let sid = s.io().start_session();
        s.io().exec_ok(&sid, "1");
        s.finish();
    }
}

// ---------------------------------------------------------------------------------------
// 6. Signals to serve

#[test]
fn sigkill_takes_every_warm_jail_and_session_down_within_100ms() {
    for who in variants() {
        let (m, p) = setup("kill", &Knobs::default());
        let mut s = Server::start(who, &p, &m, &["--pool", "2", "-j", "4"]);
        let mut sessions = Vec::new();
        for _ in 0..2 {
            let sid = s.io().start_session();
            s.io().exec_ok(
                &sid,
                "import os, time\nchild = os.fork()\nif child == 0:\n    while True:\n        time.sleep(60)",
            );
            sessions.push(sid);
        }
        // A job in flight too.
        let job = s.io().send(json!({"op": "run",
            "action": action("import time\ntime.sleep(30)", json!({}))}));
        let runners = |kind: &str| {
            live_with(&m)
                .iter()
                .filter(|p| {
                    serve_harness::cmdline(**p).contains(&format!("agentjail_runner.py {kind}"))
                })
                .count()
        };
        // The job took a warm jail and the pool is full again.
        let t = Instant::now();
        while runners("run") < 3 {
            assert!(t.elapsed() < Duration::from_secs(30), "{who:?}: no refill");
            std::thread::sleep(Duration::from_millis(20));
        }
        Server::wait_pool_ready(s.io(), 2);
        let procs = s.tracker.sample();
        // The server's own argv names the policy, whose path holds the marker too.
        let with_marker: Vec<i32> = live_with(&m).into_iter().filter(|p| *p != s.pid).collect();
        // 2 warm runners + the job's, 2 session runners and their children.
        assert!(
            runners("run") >= 3 && runners("session") >= 4,
            "{who:?}: not the expected jails: {with_marker:?}"
        );
        assert!(
            procs.len() >= with_marker.len() + 5,
            "{who:?}: inits missing: {:?} / {with_marker:?}",
            procs
                .iter()
                .map(|p| format!("{} {}", p.0, serve_harness::cmdline(p.0)))
                .collect::<Vec<_>>()
        );
        s.sigkill_takes_everything(&procs, &job);
        assert!(live_with(&m).is_empty());
    }
}

#[test]
fn sigterm_lets_running_jobs_finish_or_stops_them_with_records() {
    // The variants run side by side: a job that outlives serve's 10 s grace costs 10 s.
    std::thread::scope(|scope| {
        for who in variants() {
            scope.spawn(move || sigterm_case(who));
        }
    });
}

fn sigterm_case(who: Who) {
    let k = Knobs {
        wall_ms: Some(30_000),
        ..Default::default()
    };
    let (m, p) = setup("term", &k);
    let (_d, cache) = cache_dir("term");
    let mut s = Server::start(
        who,
        &p,
        &m,
        &["--pool", "2", "-j", "4", "--cache", cache.to_str().unwrap()],
    );
    let sid = s.io().start_session();
    s.io().exec_ok(&sid, "import time");
    let idle = s.io().start_session();
    s.io().exec_ok(&idle, "1");
    Server::wait_pool_ready(s.io(), 2);
    // 5 s: still sleeping while the other two start on a loaded machine (the wait below
    // counts all three), and done well inside serve's 10 s grace.
    let quick = s.io().send(json!({"op": "run", "action":
        action("import time\ntime.sleep(5)\nprint('{\"done\": 1}')", json!({}))}));
    let long = s.io().send(json!({"op": "run", "action":
        action("import time\ntime.sleep(60)\nprint('{}')", json!({}))}));
    let call = s.io().send(json!({"op": "session_exec", "session": sid,
        "code": "time.sleep(60)"}));
    // Both jobs and the call are running (each sleeps in its own jail).
    let t = Instant::now();
    loop {
        let sleeping = live_with(&m)
            .into_iter()
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/wchan"))
                    .is_ok_and(|w| w.contains("nanosleep"))
            })
            .count();
        if sleeping >= 3 {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{who:?}: jobs never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    s.send_signal(libc::SIGTERM);
    let quick = s.io().wait(&quick);
    assert_eq!(
        record(&quick)["stop_reason"],
        "success",
        "{who:?}: {quick:#}"
    );
    assert_eq!(record(&quick)["output"], json!({"done": 1}));
    let long = s.io().wait(&long);
    let rec = record(&long);
    assert_eq!(
        rec["stop_reason"], "interrupted:sigterm",
        "{who:?}: {rec:#}"
    );
    assert_eq!(rec["phase"], "execute");
    let call = s.io().wait(&call);
    let rec = record(&call);
    assert_eq!(
        rec["stop_reason"], "interrupted:sigterm",
        "{who:?}: {rec:#}"
    );
    assert_eq!(rec["session"]["ended"], true);
    // Only the finished job was stored.
    assert_eq!(entries(&cache).len(), 1, "{who:?}");
    s.finish_exit();
}

// ---------------------------------------------------------------------------------------
// Protocol

#[test]
fn bad_lines_get_errors_and_the_server_goes_on() {
    for who in variants() {
        let (m, p) = setup("proto", &Knobs::default());
        let mut s = Server::start(who, &p, &m, &["--pool", "1"]);
        let io = s.io();
        let null_errors: &[(&[u8], &str)] = &[
            (b"not json", "bad_json"),
            (b"[1, 2]", "bad_request"),
            (b"{\"id\": {\"a\": 1}, \"op\": \"stats\"}", "bad_request"),
            (
                b"{\"id\": \"x\", \"id\": \"y\", \"op\": \"stats\"}",
                "bad_json",
            ),
            (b"\xff\xfe{}", "bad_json"),
            (b"{\"op\": \"stats\", \"id\": \"", "bad_json"),
        ];
        for (line, _) in null_errors {
            io.send_bad_line(line);
        }
        let long_id = "i".repeat(200);
        io.send_bad_line(format!("{{\"id\": \"{long_id}\", \"op\": \"stats\"}}").as_bytes());
        // Bad lines are answered in order, each with what was wrong and no id.
        let codes: Vec<&str> = null_errors
            .iter()
            .map(|(_, c)| *c)
            .chain(["bad_request"])
            .collect();
        for (i, code) in codes.iter().enumerate() {
            let r = io.wait(&Value::Null);
            assert_eq!(error_code(&r), *code, "{who:?}: bad line {i}: {r}");
        }
        let tagged: Vec<(Value, &str)> = vec![
            (json!({"id": "u", "op": "fly"}), "unknown_op"),
            (json!({"id": "e", "op": "stats", "extra": 1}), "bad_request"),
            (json!({"id": "a", "op": "run"}), "bad_request"),
            (
                json!({"id": "a2", "op": "run", "action": "x"}),
                "bad_request",
            ),
            (
                json!({"id": "t", "op": "session_exec", "session": "s", "code": "1",
                    "timeout_s": -1}),
                "bad_request",
            ),
            (
                json!({"id": "n", "op": "session_exec", "session": "nope", "code": "1"}),
                "unknown_session",
            ),
            (
                json!({"id": "c", "op": "session_close", "session": "nope"}),
                "unknown_session",
            ),
            (
                json!({"id": 7, "op": "session_start", "policy_hints": {"network_access": "on"}}),
                "bad_request",
            ),
        ];
        for (req, code) in &tagged {
            let r = io.call(req.clone());
            assert_eq!(error_code(&r), *code, "{who:?}: {req} -> {r}");
            assert_eq!(r["id"], req["id"]);
        }
        // CRLF and blank lines are fine; the server answers as before.
        io.send_raw_with_id(
            b"\r\n\n{\"id\": \"crlf\", \"op\": \"stats\"}\r\n",
            &json!("crlf"),
        );
        let r = io.wait(&json!("crlf"));
        assert!(r["stats"].is_object());
        let rec = io.run(action("print('{\"still\": \"here\"}')", json!({})));
        assert_eq!(rec["output"], json!({"still": "here"}));
        let stderr = s.finish();
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn a_forked_copy_of_the_session_runner_cannot_answer_for_it() {
    // The program forks; the copy leaves the call (raising, or running to the end) before the
    // runner does. It must exit there: never report a result in the runner's place, never
    // read the next call's code.
    for who in variants() {
        let (m, p) = setup("forged", &Knobs::default());
        let mut s = Server::start(who, &p, &m, &["--pool", "1"]);
        let sid = s.io().start_session();
        let raising = "import os, time\npid = os.fork()\nif pid == 0:\n    raise ValueError('forged by the copy')\ntime.sleep(0.3)\nos.waitpid(pid, 0)[1] >> 8";
        let rec = s.io().exec_ok(&sid, raising);
        assert!(
            rec["error"].is_null(),
            "{who:?}: the copy's error was reported: {rec:#}"
        );
        assert_eq!(
            rec["value"], "1",
            "{who:?}: the copy exited 1 after its traceback"
        );
        let stderr = rec["execution"]["stderr"].as_str().unwrap_or("");
        assert!(stderr.contains("forged by the copy"), "{who:?}: {rec:#}");
        let returning = "import os, time\npid = os.fork()\nif pid:\n    time.sleep(0.3)\n    os.waitpid(pid, 0)\n'parent' if pid else 'copy'";
        let rec = s.io().exec_ok(&sid, returning);
        assert_eq!(rec["value"], "'parent'", "{who:?}: {rec:#}");
        // The next call is the runner's own: its value, and the globals it kept.
        let rec = s.io().exec_ok(&sid, "(6 * 7, pid > 0)");
        assert_eq!(rec["value"], "(42, True)", "{who:?}: {rec:#}");
        s.finish();
    }
}

/// A process call 1 leaves running attacks call 2: it writes forged `done` reports (with
/// and without a guessed nonce) to the runner's report pipe and tries to read the job pipe
/// to steal call 2's frame, over and over while call 2 runs. Call 2 must end with its own
/// value after its own code ran whole; the leftover only ever got EBADF on fds 3 and 4, and
/// what it printed lands in call 2's stdout.
#[test]
fn a_process_left_from_call_1_cannot_answer_call_2_or_read_its_code() {
    const LEFTOVER: &str = r#"
import os, time, json
if os.fork() == 0:
    seen = {"forged": 0, "stolen": b"", "errors": set()}
    forged = [b'{"event": "done", "ok": true, "value": "\'forged\'"}\n',
              b'{"event": "done", "call": null, "ok": true, "value": "\'forged\'"}\n',
              b'{"event": "done", "call": "0000000000000000", "ok": true, "value": "\'forged\'"}\n']
    for i in range(300):
        for f in forged:
            try:
                os.write(4, f)
                seen["forged"] += 1
            except OSError as e:
                seen["errors"].add(("w", e.errno))
        try:
            os.set_blocking(3, False)
            seen["stolen"] += os.read(3, 1 << 16)
        except OSError as e:
            seen["errors"].add(("r", e.errno))
        time.sleep(0.005)
    print("LEFTOVER", json.dumps({"forged": seen["forged"], "stolen": seen["stolen"].decode("latin-1"),
                                  "errors": sorted(seen["errors"])}), flush=True)
    raise SystemExit(0)
leftover = 'started'
leftover
"#;
    for who in variants() {
        let (m, p) = setup("leftover", &Knobs::default());
        let mut s = Server::start(who, &p, &m, &["--pool", "1"]);
        let sid = s.io().start_session();
        let rec = s.io().exec_ok(&sid, LEFTOVER);
        assert_eq!(rec["value"], "'started'", "{who:?}: {rec:#}");
        // Call 2 runs for a while, so the leftover's loop overlaps it; its own code must run
        // to its end and answer.
        let rec = s.io().exec_ok(
            &sid,
            "import time\nmarks = []\nfor i in range(10):\n    time.sleep(0.1)\n    marks.append(i)\n'call 2 ran whole: %d' % len(marks)",
        );
        assert_eq!(
            rec["value"], "'call 2 ran whole: 10'",
            "{who:?}: a forged done answered call 2: {rec:#}"
        );
        // The next call is the runner's own, and call 2's globals are there.
        let rec = s
            .io()
            .exec_ok(&sid, "import time\ntime.sleep(2)\nlen(marks)");
        assert_eq!(rec["value"], "10", "{who:?}: {rec:#}");
        // The leftover's report, printed into whichever call ran when it finished.
        let mut out = rec["execution"]["stdout"]
            .as_str()
            .unwrap_or("")
            .to_string();
        for _ in 0..20 {
            if out.contains("LEFTOVER") {
                break;
            }
            let r = s.io().exec_ok(&sid, "import time\ntime.sleep(0.2)");
            out.push_str(r["execution"]["stdout"].as_str().unwrap_or(""));
        }
        let line = out
            .lines()
            .find_map(|l| l.strip_prefix("LEFTOVER "))
            .unwrap_or_else(|| panic!("{who:?}: the leftover never reported: {out}"));
        let seen: Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            seen["forged"], 0,
            "{who:?}: the leftover wrote reports: {seen}"
        );
        assert_eq!(
            seen["stolen"], "",
            "{who:?}: the leftover read a frame: {seen}"
        );
        assert_eq!(
            seen["errors"],
            json!([["r", libc::EBADF], ["w", libc::EBADF]]),
            "{who:?}: {seen}"
        );
        s.finish();
    }
}

/// The stronger leftover: before it forks, call 1 copies fds 3 and 4 (so the runner's
/// at-fork close leaves the copies open in the child), and the child also reopens the
/// runner's fds 3 and 4 through /proc over and over while call 2 runs, writing forged
/// `done` reports and reading for call 2's frame on every fd it gets. Call 2 must run whole
/// and answer with its own value; the copies are call 1's channel (dead once call 1 ended:
/// EPIPE), the reopens fail (a socket cannot be opened through /proc: ENXIO), and not one
/// byte of a frame reaches the leftover.
#[test]
fn a_leftover_holding_copies_of_fds_3_and_4_or_reopening_them_cannot_answer_or_read_call_2() {
    const LEFTOVER: &str = r#"
import os, time, json
d3, d4 = os.dup(3), os.dup(4)
runner = os.getpid()
if os.fork() == 0:
    time.sleep(0.5)
    seen = {"forged": 0, "stolen": b"", "errors": set(), "opened": 0}
    try:
        os.close(os.open("/proc/%d/mem" % runner, os.O_RDWR))
        seen["opened"] += 1
    except OSError as e:
        seen["errors"].add(("mem", e.errno))
    forged = [b'{"event": "done", "ok": true, "value": "\'forged\'"}\n',
              b'{"event": "done", "call": null, "ok": true, "value": "\'forged\'"}\n']
    for i in range(200):
        fds = [d3, d4]
        for n in (3, 4):
            try:
                fds.append(os.open("/proc/%d/fd/%d" % (runner, n), os.O_RDWR | os.O_NONBLOCK))
                seen["opened"] += 1
            except OSError as e:
                seen["errors"].add(("open", e.errno))
        for fd in fds:
            for f in forged:
                try:
                    os.write(fd, f)
                    seen["forged"] += 1
                except OSError as e:
                    seen["errors"].add(("w", e.errno))
            try:
                os.set_blocking(fd, False)
                seen["stolen"] += os.read(fd, 1 << 16)
            except OSError as e:
                seen["errors"].add(("r", e.errno))
        for fd in fds[2:]:
            os.close(fd)
        time.sleep(0.005)
    print("LEFTOVER", json.dumps({"forged": seen["forged"], "opened": seen["opened"],
                                  "stolen": seen["stolen"].decode("latin-1"),
                                  "errors": sorted(seen["errors"])}), flush=True)
    raise SystemExit(0)
os.close(d3)
os.close(d4)
leftover = 'started'
leftover
"#;
    for who in variants() {
        let (m, p) = setup("copies", &Knobs::default());
        let mut s = Server::start(who, &p, &m, &["--pool", "1"]);
        let sid = s.io().start_session();
        let rec = s.io().exec_ok(&sid, LEFTOVER);
        assert_eq!(rec["value"], "'started'", "{who:?}: {rec:#}");
        let rec = s.io().exec_ok(
            &sid,
            "import time\nmarks = []\nfor i in range(15):\n    time.sleep(0.1)\n    marks.append(i)\n'call 2 ran whole: %d' % len(marks)",
        );
        assert_eq!(
            rec["value"], "'call 2 ran whole: 15'",
            "{who:?}: a forged done answered call 2: {rec:#}"
        );
        let mut out = rec["execution"]["stdout"]
            .as_str()
            .unwrap_or("")
            .to_string();
        for _ in 0..40 {
            if out.contains("LEFTOVER") {
                break;
            }
            let r = s
                .io()
                .exec_ok(&sid, "import time\ntime.sleep(0.2)\nlen(marks)");
            assert_eq!(r["value"], "15", "{who:?}: {r:#}");
            out.push_str(r["execution"]["stdout"].as_str().unwrap_or(""));
        }
        let line = out
            .lines()
            .find_map(|l| l.strip_prefix("LEFTOVER "))
            .unwrap_or_else(|| panic!("{who:?}: the leftover never reported: {out}"));
        let seen: Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            seen["stolen"], "",
            "{who:?}: the leftover read a frame: {seen}"
        );
        assert_eq!(
            seen["opened"], 0,
            "{who:?}: the leftover reopened fd 3 or 4: {seen}"
        );
        assert_eq!(
            seen["forged"], 0,
            "{who:?}: a forged report was accepted by a live channel: {seen}"
        );
        let errors: Vec<(String, i64)> = serde_json::from_value(seen["errors"].clone()).unwrap();
        for (what, errno) in &errors {
            let expected: &[i32] = match what.as_str() {
                "open" => &[libc::ENXIO],
                // The jail's procfs is read-only: no patching the runner's memory.
                "mem" => &[libc::EROFS],
                "w" => &[libc::EPIPE],
                // A read of a socket whose other end is closed is EOF (b""), or ECONNRESET
                // when unread data was left in it.
                _ => &[libc::ECONNRESET],
            };
            assert!(
                expected.contains(&(*errno as i32)),
                "{who:?}: unexpected {what} errno {errno}: {seen}"
            );
        }
        for tried in ["open", "mem"] {
            assert!(
                errors.iter().any(|(w, _)| w == tried),
                "{who:?}: {tried} was never tried: {seen}"
            );
        }
        s.finish();
    }
}

/// A leftover that rings the runner's doorbell itself (ioctl(3, 0x4A410001) on a copy of
/// fd 3, or on any fd) is not the runner: the ring is a forbidden syscall and ends the
/// session; the call running then stops with `code_forbidden_syscall:ioctl`, and the ring
/// installs nothing.
#[test]
fn a_leftover_ringing_the_session_doorbell_ends_the_session() {
    const RINGER: &str = r#"
import os, time, fcntl
if os.fork() == 0:
    time.sleep(0.5)
    try:
        fcntl.ioctl(3, 0x4A410001, 0)
    except OSError as e:
        print("RING FAILED", e.errno, flush=True)
    print("RING RETURNED", flush=True)
    raise SystemExit(0)
'forked'
"#;
    for who in variants() {
        let (m, p) = setup("ringer", &Knobs::default());
        let mut s = Server::start(who, &p, &m, &["--pool", "1"]);
        let sid = s.io().start_session();
        let rec = s.io().exec_ok(&sid, RINGER);
        assert_eq!(rec["value"], "'forked'", "{who:?}: {rec:#}");
        let rec = record(&s.io().exec(&sid, "import time\ntime.sleep(3)\n'slept'")).clone();
        assert_eq!(
            rec["stop_reason"], "code_forbidden_syscall:ioctl",
            "{who:?}: {rec:#}"
        );
        let stdout = rec["execution"]["stdout"].as_str().unwrap_or("");
        assert!(
            !stdout.contains("RING"),
            "{who:?}: the ring returned: {rec:#}"
        );
        assert_eq!(rec["session"]["ended"], true, "{who:?}: {rec:#}");
        s.finish();
    }
}

/// The pool grows while jobs wait for jails and shrinks back to `--pool` when idle: with
/// `--pool 1 --pool-max 3`, a burst of four concurrent jobs raises the target to the
/// ceiling (never past it); two seconds (`--pool-idle 2`) after the last job waited, the
/// spawner threads end the surplus jails, one a second, down to the floor, and it still
/// serves.
#[test]
fn the_pool_grows_while_jobs_wait_and_shrinks_back_when_idle() {
    let who = Who::Root;
    let (m, p) = setup("sizing", &Knobs::default());
    let mut s = Server::start(
        who,
        &p,
        &m,
        &[
            "--pool",
            "1",
            "--pool-max",
            "3",
            "--pool-idle",
            "2",
            "-j",
            "4",
        ],
    );
    let pool = |s: &mut Server| s.io().call(json!({"op": "stats"}))["stats"]["pool"].clone();
    let first = pool(&mut s);
    assert_eq!(
        (&first["floor"], &first["ceiling"], &first["target"]),
        (&json!(1), &json!(3), &json!(1)),
        "{first}"
    );
    let mut peak = 0;
    for round in 0..3 {
        let ids: Vec<Value> = (0..4)
            .map(|i| {
                s.io().send(json!({"op": "run", "action":
                    action(&format!("import time\ntime.sleep(0.4)\nprint('{{\"n\": {i}}}')"), json!({}))}))
            })
            .collect();
        for id in &ids {
            let r = s.io().wait(id);
            assert_eq!(record(&r)["stop_reason"], "success", "round {round}: {r}");
        }
        let t = pool(&mut s)["target"].as_u64().unwrap();
        assert!(t <= 3, "the pool grew past its ceiling: {t}");
        peak = peak.max(t);
    }
    assert_eq!(
        peak, 3,
        "three rounds of four waiting jobs did not grow the pool to its ceiling"
    );
    // Idle: back to the floor within idle (2 s) + one second per surplus jail + slack.
    let t0 = Instant::now();
    let last = loop {
        let p = pool(&mut s);
        if p["target"] == 1 && p["ready"].as_u64().unwrap() <= 1 {
            break p;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(15),
            "the pool never shrank: {p}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(last["floor"], 1, "{last}");
    // And it still serves.
    let rec = s.io().run(action("print('{\"after\": true}')", json!({})));
    assert_eq!(rec["output"], json!({"after": true}));
    s.finish();
}

// ---------------------------------------------------------------------------------------
// 7. What one client can cost the others

/// The server's peak resident memory (VmHWM), in KiB.
fn peak_rss_kib(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// A client that sends jobs with ~2 MiB records and never reads, beside a client that
/// does: the second gets every answer (stats included) while the first is outstanding; the
/// first is dropped once 16 MiB of its responses wait (its connection shut down, its
/// session ended, its queued jobs never started); the server's memory stays bounded.
#[test]
fn a_client_that_stops_reading_costs_only_itself() {
    for who in variants() {
        let k = Knobs {
            stdout: Some("1MiB"),
            ..Default::default()
        };
        let (m, p) = setup("hog", &k);
        let dir = scratch("hog");
        let sock = dir.path().join("s.sock");
        let audit = dir.path().join("audit.jsonl");
        let s = Server::start(
            who,
            &p,
            &m,
            &[
                "--pool",
                "2",
                "-j",
                "4",
                "--socket",
                sock.to_str().unwrap(),
                "--audit-log",
                audit.to_str().unwrap(),
            ],
        );
        let mut good = s.connect("good");
        good.run(action("print('{}')", json!({})));
        let sid_good = good.start_session();
        let base = peak_rss_kib(s.pid);
        // The hog: a session, then 200 jobs that each print ~900 KiB of JSON (stdout and
        // output: ~2 MiB per record), all sent at once; it never reads a byte.
        let mut hog = std::os::unix::net::UnixStream::connect(&sock).unwrap();
        use std::io::Write as _;
        hog.write_all(b"{\"id\": \"hs\", \"op\": \"session_start\"}\n")
            .unwrap();
        let big = "import json\nprint(json.dumps({'x': 'y' * 900000}))";
        let mut lines = Vec::new();
        for i in 0..200 {
            let req = json!({"id": format!("h{i}"), "op": "run", "action": action(big, json!({}))});
            lines.extend(serde_json::to_vec(&req).unwrap());
            lines.push(b'\n');
        }
        hog.write_all(&lines).unwrap();
        // The good client is answered meanwhile, every time.
        for i in 0..10 {
            let rec = good.run(action(&format!("print('{{\"i\": {i}}}')"), json!({})));
            assert_eq!(rec["output"], json!({"i": i}), "{who:?}: {rec:#}");
            assert!(good.stats()["sessions"].is_number());
            good.exec_ok(&sid_good, "1");
        }
        // The hog is dropped: what it can still read ends in EOF, with far fewer than 200
        // answers.
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut hog, &mut got).unwrap();
        let answered = got.split(|b| *b == b'\n').filter(|l| !l.is_empty()).count();
        assert!(answered < 100, "{who:?}: the hog got {answered} answers");
        assert!(s.stderr().contains("dropped"), "{who:?}: {}", s.stderr());
        // Its session ended; the good client's lives on.
        let t = Instant::now();
        while good.stats()["sessions"] != 1 {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "{who:?}: the hog's session stays"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        good.exec_ok(&sid_good, "2");
        let grown = peak_rss_kib(s.pid).saturating_sub(base);
        // Unbounded, 200 queued 2 MiB records would be ~400 MiB; the queue holds 16 MiB,
        // the 4 workers a few records each.
        assert!(grown < 160 * 1024, "{who:?}: serve grew by {grown} KiB");
        // Every record of the hog's jobs that ran is in the audit log, whole.
        let text = std::fs::read_to_string(&audit).unwrap();
        let ran = text.lines().count();
        assert!(
            ran < 200,
            "{who:?}: {ran} of the hog's jobs ran after it was dropped"
        );
        for l in text.lines() {
            let _: Value = serde_json::from_str(l).unwrap();
        }
        eprintln!("{who:?}: hog answered {answered}, {ran} records, serve grew {grown} KiB");
        good.close();
        good.assert_all_answered();
        s.finish();
    }
}

/// Per-client limits: requests in flight (one worker busy, 300 requests queued behind it:
/// the ones past the limit are answered `too_many_requests` at once, the rest are answered
/// in full) and open sessions (`[session] max_per_client`, counted per uid across
/// connections).
#[test]
fn a_flood_from_one_client_gets_clear_errors_and_the_server_goes_on() {
    for who in variants() {
        let k = Knobs {
            max_per_client: Some(2),
            ..Default::default()
        };
        let (m, p) = setup("flood", &k);
        let dir = scratch("flood");
        let sock = dir.path().join("s.sock");
        let s = Server::start(
            who,
            &p,
            &m,
            &["--pool", "1", "-j", "1", "--socket", sock.to_str().unwrap()],
        );
        let mut a = s.connect("A");
        let slow = a.send(json!({"op": "run", "action": action("import time\ntime.sleep(3)\nprint('{}')", json!({}))}));
        let ids: Vec<Value> = (0..300).map(|_| a.send(json!({"op": "stats"}))).collect();
        let mut refused = 0;
        for id in &ids {
            let r = a.wait(id);
            if r.get("error").is_some() {
                assert_eq!(error_code(&r), "too_many_requests", "{who:?}: {r}");
                assert!(r["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("unanswered"));
                refused += 1;
            } else {
                assert!(r["stats"].is_object(), "{who:?}: {r}");
            }
        }
        assert_eq!(record(&a.wait(&slow))["stop_reason"], "success");
        assert!(
            (40..=50).contains(&refused),
            "{who:?}: {refused} of 300 refused with 256 in flight"
        );
        // Sessions: two per client, whichever connection of the uid asks.
        let mut b = s.connect("B");
        let s1 = a.start_session();
        let _s2 = b.start_session();
        let third = b.call(json!({"op": "session_start"}));
        assert_eq!(error_code(&third), "too_many_sessions", "{who:?}: {third}");
        assert!(third["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_per_client"));
        a.call(json!({"op": "session_close", "session": s1}));
        let s3 = b.start_session();
        b.exec_ok(&s3, "1");
        a.close();
        b.close();
        a.assert_all_answered();
        b.assert_all_answered();
        s.finish();
    }
}

// ---------------------------------------------------------------------------------------
// Soak

/// One soak job: its action and the stop reason it must end with.
fn soak_job(i: usize) -> (Value, &'static str) {
    let id = format!("soak-{i}");
    let mut a = action(
        "import json\np = json.loads(input())\nprint(json.dumps({'n': p['n'] * 2}))",
        json!({"n": i}),
    );
    let expect = match i % 10 {
        0..=3 => "success",
        4 => {
            a["code"] = json!("raise SystemExit(3)");
            "code_runtime_error:3"
        }
        5 => {
            a["code"] = json!("print('x' * 200000)");
            "code_output_too_large"
        }
        6 => {
            a["code"] = json!("import socket\nprint(1)");
            "policy_block:static_policy_violation:import_not_allowed:socket"
        }
        7 => {
            a.as_object_mut().unwrap().remove("code");
            "invalid_action:code"
        }
        8 => {
            a["output_schema"] =
                json!({"type": "object", "required": ["m"], "properties": {"m": {}}});
            "invalid_code_output:m"
        }
        // Every 100th job waits out a 300 ms wall limit; the others print their payload
        // back through the runner's stdin.
        _ if i % 100 == 99 => {
            a["code"] = json!("import time\ntime.sleep(5)");
            a["policy_hints"] = json!({"exec_timeout_seconds": 0.3});
            "code_timeout"
        }
        _ => "success",
    };
    a["id"] = json!(id);
    (a, expect)
}

#[test]
fn a_thousand_mixed_jobs_and_a_hundred_sessions_leave_nothing_behind() {
    const JOBS: usize = 1000;
    const SESSIONS: usize = 100;
    for who in variants() {
        let t = Instant::now();
        // Half the sessions stay open until EOF: 50 on one client, past the default
        // [session] max_per_client (16).
        let k = Knobs {
            max_per_client: Some(SESSIONS as u64),
            ..Default::default()
        };
        let (m, p) = setup("soak", &k);
        let mut s = Server::start(who, &p, &m, &["--pool", "2", "-j", "4"]);
        let mut run_ids = std::collections::HashSet::new();
        let mut sessions_seen = std::collections::HashSet::new();
        // Batches of 20 jobs and 2 sessions in flight at once, answered in any order.
        for batch in 0..JOBS / 20 {
            let sent: Vec<(Value, usize, &str)> = (batch * 20..batch * 20 + 20)
                .map(|i| {
                    let (a, expect) = soak_job(i);
                    (s.io().send(json!({"op": "run", "action": a})), i, expect)
                })
                .collect();
            let mut open = Vec::new();
            for k in 0..SESSIONS / (JOBS / 20) {
                let n = batch * 2 + k;
                let sid = s.io().start_session();
                assert!(
                    sessions_seen.insert(sid.clone()),
                    "{who:?}: session id reused"
                );
                s.io().exec_ok(&sid, &format!("x = {n}"));
                let rec = s.io().exec_ok(&sid, "x * 2");
                assert_eq!(rec["value"], (2 * n).to_string(), "{who:?}: {rec:#}");
                open.push(sid);
            }
            for (req, i, expect) in sent {
                let resp = s.io().wait(&req);
                let rec = record(&resp);
                assert_eq!(rec["stop_reason"], expect, "{who:?} job {i}: {rec:#}");
                assert!(
                    run_ids.insert(rec["run_id"].as_str().unwrap().to_string()),
                    "{who:?}: a run_id came back twice"
                );
                if expect == "success" && i % 10 < 4 {
                    assert_eq!(rec["output"], json!({"n": i * 2}), "{who:?} job {i}");
                    assert_eq!(rec["action"]["id"], format!("soak-{i}"));
                }
            }
            // Half the sessions are closed by the client, the rest at EOF.
            if batch % 2 == 0 {
                for sid in open {
                    let closed = s.io().call(json!({"op": "session_close", "session": sid}));
                    assert_eq!(closed["closed"], true, "{who:?}");
                }
            }
        }
        assert_eq!(run_ids.len(), JOBS);
        assert_eq!(sessions_seen.len(), SESSIONS);
        // Exit 0, every request answered, no process, mount, cgroup or temp entry left.
        s.finish();
        eprintln!(
            "{who:?}: {JOBS} jobs and {SESSIONS} sessions through serve in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
}
