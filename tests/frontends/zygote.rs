//! `agentjail serve`'s zygote (its default; `--zygote` requires it) attacked through the
//! real binary, as root and as nobody: the warm Python jails are forked from one
//! pre-initialised interpreter
//! (crates/agentjail-engine/src/zygote), so every
//! promise of a fresh jail is attacked again here. Jobs on one zygote pool never share
//! anything (files, module state, environment, processes, memory, random state); the
//! template cannot be seen, signalled or read from a jail; a zygote jail stops exactly the
//! hostile programs a cold jail stops, with the same stop reasons; SIGKILL takes the template
//! and every jail down at once; a dead template is replaced; a configuration the zygote
//! cannot serve is refused at start with a clear error and leaves nothing behind; without
//! `--zygote` it is served with a fresh interpreter per job, said on stderr and in `stats`,
//! and `--no-zygote` never uses the template.

use crate::common::serve as serve_harness;

use crate::common::{self, variants, Who};
use serde_json::{json, Value};
use serve_harness::{action, record, Server};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The zygote's test policy: the default jail and interpreter flags (the zygote embeds
/// exactly those), fork allowed, the static check opened up so the jail itself is attacked.
fn policy(tag: &str, python_args: &str) -> PathBuf {
    policy_with(tag, python_args, 64)
}

/// The `[interpreter]` python and `[filesystem]` lines for the test interpreter
/// (`AGENTJAIL_TEST_PYTHON`, bound with its prefix), or none for the host's /usr/bin/python3.
fn interpreter_lines(python: &str) -> (String, String) {
    if python == common::PY {
        return (String::new(), String::new());
    }
    let prefix = std::path::Path::new(python)
        .parent()
        .and_then(|b| b.parent())
        .expect("the interpreter's prefix");
    (
        format!("python = {python:?}\n"),
        format!(
            "[filesystem]\nread_only = [{:?}, \"/usr\", \"/bin\", \"/lib\", \"/lib64\"]\n",
            prefix.display().to_string()
        ),
    )
}

/// As [`policy`], with at most `pids` processes per jail.
fn policy_with(tag: &str, python_args: &str, pids: u32) -> PathBuf {
    policy_for(common::test_python(), tag, python_args, pids)
}

/// As [`policy_with`], running `python`.
fn policy_for(python: &str, tag: &str, python_args: &str, pids: u32) -> PathBuf {
    let (python_line, filesystem) = interpreter_lines(python);
    let text = format!(
        r#"# tests/zygote.rs
version = 1
name = "zygote-test"
description = "tests/zygote.rs"
[budget]
max_seconds = 30
max_code_chars = 20000
[check]
allowed_imports = ["json", "os", "signal", "time", "random", "gc"]
denied_calls = []
denied_names = []
denied_attributes = []
deny_dunder = false
[interpreter]
{python_line}python_args = {python_args}
preload = ["json", "random"]
[limits]
wall_time_ms = 10000
cpu_time_ms = 10000
memory = "128MiB"
pids = {pids}
stdout = "64KiB"
[seccomp]
allow_groups = [
  "basic_io", "files_read", "files_write_tmp", "memory", "process_self", "threads",
  "signals", "time", "sleep", "poll", "pipes", "exec", "system_info", "process_spawn",
]
[cgroup]
requirement = "best_effort"
{filesystem}"#
    );
    let name = if python == common::PY {
        format!("zygote-{tag}.toml")
    } else {
        format!("zygote-{tag}-{}.toml", python.replace('/', "_"))
    };
    common::shared_file(&name, &text)
}

const ARGS: &str = r#"["-I", "-S", "-B", "-X", "utf8"]"#;

fn start(who: Who, tag: &str, extra: &[&str]) -> (Server, String) {
    let m = common::marker(tag);
    let p = policy(tag, ARGS);
    let mut args = vec!["--zygote"];
    args.extend_from_slice(extra);
    (Server::start(who, &p, &m, &args), m)
}

/// The record's stdout as one JSON value.
fn printed(rec: &Value) -> Value {
    let out = rec["execution"]["stdout"].as_str().unwrap_or("");
    serde_json::from_str(out.trim())
        .unwrap_or_else(|e| panic!("the job did not print JSON ({e}): {rec:#}"))
}

/// The server's template: its child outside any pid namespace (a jail's processes have a
/// pid in their own namespace too).
fn template_of(server_pid: i32) -> Option<i32> {
    common::descendants(server_pid)
        .into_iter()
        .map(|p| p.0)
        .find(|&pid| nspid_depth(pid) == 1 && common::cmdline(pid).contains("agentjail-zygote"))
}

/// How many pid namespaces `pid` has a pid in (1: the host's only; 2: a jail's).
fn nspid_depth(pid: i32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .map_or(0, |v| v.split_whitespace().count())
}

/// Whether the record's jail came from the zygote (its `enforcement` says so).
fn from_zygote(rec: &Value) -> bool {
    rec["enforcement"].as_array().is_some_and(|a| {
        a.iter().any(|c| {
            c["control"] == "address_space_layout"
                && c["state"] == "degraded"
                && c["mechanism"] == "zygote fork"
        })
    })
}

// ---------------------------------------------------------------------------------------
// 1. Jobs on one zygote pool

/// Looks for everything an earlier job (or the template) could have left, then plants all
/// of it itself, tries to reach the template, and prints what it saw and its random draws.
const OBSERVE_HEAD: &str = r#"
import gc, json, os, random, signal, time
args = json.loads(input())
secret, template = args["secret"], args["template"]
me = os.getpid()
found = []
for p in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
    for leaf in ("cmdline", "environ"):
        try:
            with open("/proc/%d/%s" % (p, leaf), "rb") as f:
                if b"ajzsecret" in f.read():
                    found.append("/proc/%d/%s" % (p, leaf))
        except OSError:
            pass
# The whole writable memory of this process (a copy of the template's): another job's
# secret anywhere in it is a leak. Each marker is "ajzsecret-<round>-<a|b>".
mine = secret.encode()
own = 0
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
    for line in maps:
        f = line.split()
        if not f[1].startswith("rw") or (len(f) > 5 and f[5] in ("[vvar]", "[vsyscall]")):
            continue
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        try:
            mem.seek(lo)
            data = mem.read(hi - lo)
        except (OSError, ValueError, OverflowError):
            continue
        at = data.find(b"ajzsecret-")
        while at >= 0:
            token = data[at:at + len(mine)]
            if token == mine:
                own += 1
            elif token[len(b"ajzsecret-"):][:1].isdigit():
                found.append("memory: " + repr(token))
            at = data.find(b"ajzsecret-", at + 1)
        del data
init_readable = []
for leaf in ("environ", "mem", "maps"):
    try:
        with open("/proc/1/" + leaf, "rb") as f:
            f.read(64)
        init_readable.append(leaf)
    except OSError:
        pass
"#;

/// The rest of the job's program, after `common::PY_OTHER_PIDS`.
const OBSERVE_TAIL: &str = r#"
try:
    os.kill(template, signal.SIGKILL)
    hit_template = True
except OSError:
    hit_template = False
try:
    planted = json.JSONDecoder.planted
except AttributeError:
    planted = None
report = {
    "secret": secret, "pid": me, "found": found, "others": others, "own_in_memory": own,
    "tmp": sorted(os.listdir("/tmp")), "init_readable": init_readable,
    "module_state": planted,
    "env": os.environ.get("PLANTED"), "hit_template": hit_template,
    "random": [random.getrandbits(64), random.random()], "urandom": os.urandom(16).hex(),
}
json.JSONDecoder.planted = secret
os.environ["PLANTED"] = secret
random.seed(12345)
with open("/tmp/planted", "w") as f:
    f.write(secret)
keep = bytearray(secret.encode() * 4096)
if os.fork() == 0:
    while True:
        time.sleep(60)
print(json.dumps(report))
"#;

/// The program of [`OBSERVE_HEAD`], `common::PY_OTHER_PIDS` and [`OBSERVE_TAIL`].
fn observe_and_plant_code() -> String {
    [OBSERVE_HEAD, common::PY_OTHER_PIDS, OBSERVE_TAIL].concat()
}

fn observe_and_plant(secret: &str, template: i32) -> Value {
    action(
        &observe_and_plant_code(),
        json!({"secret": secret, "template": template}),
    )
}

/// What one job saw that it must not have seen.
fn leaks(r: &Value) -> Vec<String> {
    let mut bad = Vec::new();
    let mut check = |ok: bool, what: &str| {
        if !ok {
            bad.push(format!("{what}: {r}"));
        }
    };
    check(r["found"] == json!([]), "another job's secret");
    // The memory scan works: it finds the job's own secret (its input payload).
    check(
        r["own_in_memory"].as_u64() > Some(0),
        "the memory scan read nothing",
    );
    check(
        r["others"] == json!([]),
        "processes besides init and itself",
    );
    check(r["tmp"] == json!([]), "files in /tmp");
    check(
        r["init_readable"] == json!([]),
        "init's environ/mem/maps readable",
    );
    check(r["module_state"].is_null(), "module state");
    check(r["env"].is_null(), "environment");
    check(
        r["hit_template"] == json!(false),
        "signalled the template's pid",
    );
    bad
}

#[test]
fn jobs_on_a_zygote_pool_share_nothing_and_cannot_reach_the_template() {
    if !common::zygote_built() {
        return;
    }
    for who in variants() {
        let (mut s, _) = start(who, "share", &["--pool", "2", "-j", "4"]);
        Server::wait_pool_ready(s.io(), 2);
        let template = template_of(s.pid).expect("the zygote template runs");
        let mut reports = Vec::new();
        for round in 0..4 {
            // Two jobs in flight together, each on a jail forked from the same template.
            let a = s.io().send(json!({"op": "run",
                "action": observe_and_plant(&format!("ajzsecret-{round}-a"), template)}));
            let b = s.io().send(json!({"op": "run",
                "action": observe_and_plant(&format!("ajzsecret-{round}-b"), template)}));
            for id in [a, b] {
                let rec = record(&s.io().wait(&id)).clone();
                assert_eq!(rec["status"], "ok", "{who:?}: {rec:#}");
                assert!(from_zygote(&rec), "{who:?}: not a zygote jail: {rec:#}");
                reports.push(printed(&rec));
            }
            Server::wait_pool_ready(s.io(), 2);
        }
        let bad: Vec<String> = reports.iter().flat_map(leaks).collect();
        assert!(
            bad.is_empty(),
            "{who:?}: a zygote job saw another's: {bad:#?}"
        );
        // Every job draws its own random numbers: the template's generator state is
        // reseeded in each fork (a job that seeds it leaves the next job unaffected).
        let draws: BTreeSet<String> = reports.iter().map(|r| r["random"].to_string()).collect();
        let urandom: BTreeSet<String> = reports.iter().map(|r| r["urandom"].to_string()).collect();
        assert_eq!(
            draws.len(),
            reports.len(),
            "{who:?}: repeated random draws: {reports:#?}"
        );
        assert_eq!(urandom.len(), reports.len(), "{who:?}: repeated os.urandom");
        assert!(
            common::proc_stat(template).is_some_and(|(_, state, _)| state != 'Z'),
            "{who:?}: the template died"
        );
        s.finish();
    }
}

// ---------------------------------------------------------------------------------------
// 2. A zygote jail stops what a cold jail stops

/// Hostile programs: each prints BREACH only if what it tries succeeds.
const HOSTILE: &[(&str, &str)] = &[
    ("mknod", "import os\nos.mknod('/tmp/dev', 0o600)\nprint('BREACH')"),
    ("write /usr", "open('/usr/ajz-breach', 'w').write('x')\nprint('BREACH')"),
    ("write /app", "open('/app/ajz-breach', 'w').write('x')\nprint('BREACH')"),
    ("read host /etc/shadow", "print('BREACH', open('/etc/shadow').read()[:10])"),
    ("chroot", "import os\nos.chroot('/tmp')\nprint('BREACH')"),
    // Opening a process's mem needs ptrace access: the program's own opens (the control, so
    // the row cannot pass for another reason), init's (non-dumpable) is EACCES.
    (
        "open init's memory",
        "open('/proc/self/mem', 'rb').close()\nprint('CONTROL', flush=True)\nopen('/proc/1/mem', 'rb')\nprint('BREACH')",
    ),
    ("raise the nice level", "import os\nos.nice(-5)\nprint('BREACH')"),
    ("memory", "b = bytearray(600 * 1024 * 1024)\nprint('BREACH')"),
    (
        "fork bomb",
        "import os, time\nn = 0\ntry:\n    while n < 500:\n        if os.fork() == 0:\n            while True:\n                time.sleep(5)\n        n += 1\nexcept OSError:\n    pass\nprint('BREACH' if n >= 500 else 'capped at %d' % n)",
    ),
    ("setuid", "import os\nos.setuid(0)\nos.setuid(1000)\nprint('BREACH')"),
    // Not an attack: what the program holds open must be what a cold jail's holds (a
    // template fd leaking into a jail would show here and differ).
    (
        "open fds",
        "import json, os\nfds = {}\nfor fd in sorted(os.listdir('/proc/self/fd')):\n    try:\n        fds[fd] = os.readlink('/proc/self/fd/' + fd).split('[')[0]\n    except OSError:\n        fds[fd] = '?'\nprint(json.dumps(fds))",
    ),
];

fn outcome(rec: &Value) -> (String, String, bool) {
    let out = rec["execution"]["stdout"].as_str().unwrap_or("");
    (
        rec["status"].as_str().unwrap_or("").to_string(),
        rec["stop_reason"].as_str().unwrap_or("").to_string(),
        out.contains("BREACH"),
    )
}

#[test]
fn a_zygote_jail_stops_what_a_cold_jail_stops() {
    if !common::zygote_built() {
        return;
    }
    for who in variants() {
        let m = common::marker("hostile");
        let p = policy("hostile", ARGS);
        let mut zygote = Server::start(who, &p, &m, &["--zygote", "--pool", "1"]);
        // The reference is a fresh interpreter per job: serve's default is the zygote now.
        let mut cold = Server::start(who, &p, &m, &["--no-zygote", "--pool", "1"]);
        for (what, code) in HOSTILE {
            Server::wait_pool_ready(zygote.io(), 1);
            Server::wait_pool_ready(cold.io(), 1);
            let z = zygote.io().run(action(code, json!({})));
            let c = cold.io().run(action(code, json!({})));
            let (zo, co) = (outcome(&z), outcome(&c));
            assert!(!zo.2, "{who:?}: {what}: BREACH in a zygote jail: {z:#}");
            if code.contains("CONTROL") {
                for r in [&z, &c] {
                    let out = r["execution"]["stdout"].as_str().unwrap_or("");
                    assert!(
                        out.contains("CONTROL"),
                        "{who:?}: {what}: the control failed: {r:#}"
                    );
                    let err = r["execution"]["stderr"].as_str().unwrap_or("");
                    assert!(err.contains("PermissionError"), "{who:?}: {what}: {r:#}");
                }
            }
            assert!(!co.2, "{who:?}: {what}: BREACH in a cold jail: {c:#}");
            if *what == "open fds" {
                assert_eq!(
                    z["execution"]["stdout"], c["execution"]["stdout"],
                    "{who:?}: a zygote program holds other fds than a cold one"
                );
            }
            assert_eq!(
                (&zo.0, &zo.1),
                (&co.0, &co.1),
                "{who:?}: {what}: the zygote jail ended otherwise than the cold one:\nzygote {z:#}\ncold {c:#}"
            );
            assert!(from_zygote(&z), "{who:?}: {what}: not a zygote jail: {z:#}");
            assert!(
                !from_zygote(&c),
                "{who:?}: {what}: the cold server used the zygote: {c:#}"
            );
            eprintln!("{who:?}: {what}: both {} / {}", zo.0, zo.1);
        }
        zygote.finish();
        cold.finish();
    }
}

// ---------------------------------------------------------------------------------------
// 3. The template's life

#[test]
fn sigkill_takes_the_template_and_every_zygote_jail_down() {
    if !common::zygote_built() {
        return;
    }
    for who in variants() {
        let (mut s, _) = start(who, "kill", &["--pool", "2", "-j", "4"]);
        Server::wait_pool_ready(s.io(), 2);
        let job = s.io().send(json!({"op": "run",
            "action": action("import os, time\nif os.fork() == 0:\n    time.sleep(60)\ntime.sleep(30)", json!({}))}));
        let t = Instant::now();
        // The template, the job's jail (init, program, its child) and two warm jails.
        while s.tracker.sample().len() < 1 + 3 + 2 * 2 {
            assert!(t.elapsed() < Duration::from_secs(30), "{who:?}: no refill");
            std::thread::sleep(Duration::from_millis(20));
        }
        Server::wait_pool_ready(s.io(), 2);
        let procs = s.tracker.sample();
        let template = template_of(s.pid).expect("template");
        assert!(procs.iter().any(|p| p.0 == template));
        s.sigkill_takes_everything(&procs, &job);
    }
}

/// Every jail the template clones restricts itself with a landlock ruleset made for it: the
/// template creates one per clone (seen by strace attached to the template alone). One
/// ruleset made at the template's start and shared through the inherited fd had collected
/// every earlier jail's path rules, so each domain held them all and grew with every job.
#[test]
fn the_template_makes_a_landlock_ruleset_for_every_jail() {
    if !common::zygote_built() {
        return;
    }
    let strace = std::path::Path::new("/usr/bin/strace");
    if !common::require_feature(
        "root and /usr/bin/strace",
        common::is_root() && strace.exists(),
    ) {
        return;
    }
    let (mut s, _) = start(Who::Root, "ruleset", &["--pool", "1", "--pool-max", "1"]);
    Server::wait_pool_ready(s.io(), 1);
    let template = template_of(s.pid).expect("template");
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("strace.txt");
    let mut tracer = std::process::Command::new(strace)
        .args(["-qq", "-e", "trace=landlock_create_ruleset", "-o"])
        .arg(&log)
        .args(["-p", &template.to_string()])
        .spawn()
        .expect("strace");
    // strace writes nothing before it is attached: wait for the template's TracerPid.
    let attached = (0..200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(25));
        std::fs::read_to_string(format!("/proc/{template}/status"))
            .unwrap_or_default()
            .lines()
            .any(|l| l.starts_with("TracerPid:") && l.trim_end() != "TracerPid:\t0")
    });
    assert!(attached, "strace did not attach to the template {template}");
    // TracerPid is set at PTRACE_SEIZE, before strace asks for syscall stops: a clone in
    // between goes unseen (in CI, two did). So jobs run until strace has written a ruleset
    // line; from then on it sees every call, and the count read then can only be low.
    let ruleset_lines = |text: &str| {
        text.lines()
            .filter(|l| l.contains("landlock_create_ruleset({") && !l.contains("= -1"))
            .count()
    };
    let t = std::time::Instant::now();
    let seen_before = loop {
        let rec = s.io().run(action("print('{}')", json!({})));
        assert_eq!(rec["status"], "ok", "warm-up: {rec:#}");
        Server::wait_pool_ready(s.io(), 1);
        std::thread::sleep(std::time::Duration::from_millis(100));
        let n = ruleset_lines(&std::fs::read_to_string(&log).unwrap_or_default());
        if n > 0 {
            break n;
        }
        assert!(t.elapsed() < common::HANG, "strace logged no ruleset");
    };
    let jobs = 6;
    for i in 0..jobs {
        let rec = s.io().run(action("print('{}')", json!({})));
        assert_eq!(rec["status"], "ok", "job {i}: {rec:#}");
        assert!(from_zygote(&rec), "job {i}: not a zygote jail: {rec:#}");
    }
    Server::wait_pool_ready(s.io(), 1);
    // SAFETY: kill(2) on the strace this test started; it detaches and exits on SIGTERM.
    assert_eq!(unsafe { libc::kill(tracer.id() as i32, libc::SIGTERM) }, 0);
    let _ = tracer.wait();
    let text = std::fs::read_to_string(&log).expect("strace log");
    let made = ruleset_lines(&text) - seen_before;
    // Each job takes the one warm jail and the pool (fixed at one: --pool-max 1, or a pool
    // grown while a warm-up job waited would serve a job without a clone) clones its
    // replacement: a ruleset each (the old template made none after its start).
    assert!(
        made >= jobs,
        "{jobs} jobs (each a jail cloned for the pool) but the template made {made} rulesets after the warm-up:\n{text}"
    );
    s.finish();
}

#[test]
fn a_dead_template_is_replaced_and_jobs_go_on() {
    if !common::zygote_built() {
        return;
    }
    for who in variants() {
        let (mut s, _) = start(who, "restart", &["--pool", "1"]);
        Server::wait_pool_ready(s.io(), 1);
        let first = template_of(s.pid).expect("template");
        // SAFETY: kill(2) on a pid of our own test's server tree.
        assert_eq!(unsafe { libc::kill(first, libc::SIGKILL) }, 0);
        for i in 0..4 {
            let rec = s
                .io()
                .run(action("print('{\"n\": %d}' % (6 * 7))", json!({})));
            assert_eq!(
                rec["status"], "ok",
                "{who:?}: job {i} after the template died: {rec:#}"
            );
            assert_eq!(rec["execution"]["stdout"], "{\"n\": 42}\n");
        }
        Server::wait_pool_ready(s.io(), 1);
        let second = template_of(s.pid).expect("a new template");
        assert_ne!(first, second, "{who:?}: the dead template was not replaced");
        let rec = s.io().run(action("print('{}')", json!({})));
        assert!(from_zygote(&rec), "{who:?}: not a zygote jail: {rec:#}");
        s.finish();
    }
}

#[test]
fn a_relative_policy_path_means_what_it_meant_to_the_server() {
    if !common::zygote_built() {
        return;
    }
    for who in variants() {
        // The template never opens the path: the server sends the bytes it read. Padded to
        // 90 KiB with comments: the text travels in one message, up to 96 KiB.
        let dir = serve_harness::scratch("relpolicy");
        let text = std::fs::read_to_string(policy("relpolicy", ARGS)).unwrap();
        std::fs::write(dir.path().join("p.toml"), padded(&text, 90 * 1024)).unwrap();
        let mut c = serve_harness::command(who, common::agentjail_path());
        c.args(["serve", "--zygote", "--pool", "1", "--policy", "p.toml"])
            .current_dir(dir.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = c.spawn().unwrap();
        let req = json!({"id": 1, "op": "run", "action": action("print('{}')", json!({}))});
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().unwrap();
            writeln!(stdin, "{req}").unwrap();
        }
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{who:?}: {err}");
        let resp: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{who:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)));
        // The server starts its first template before it serves (a policy the template
        // could not load would have failed the start, exit 2); the job itself may have
        // found the pool not yet filled and run cold.
        assert_eq!(resp["record"]["status"], "ok", "{who:?}: {resp:#}");
    }
}

#[test]
fn jails_that_fail_their_setup_in_the_template_are_reaped_and_fail_closed() {
    if !common::zygote_built() {
        return;
    }
    for who in variants() {
        // One process per jail: init is cloned, then its fork of the program is refused
        // (pids.max, or RLIMIT_NPROC without a pids cgroup). Every jail fails in its setup,
        // inside the template's handshake; the server must reap each failed child.
        let m = common::marker("pids1");
        let p = policy_with("pids1", ARGS, 1);
        let mut s = Server::start(who, &p, &m, &["--zygote", "--pool", "1"]);
        for i in 0..4 {
            let rec = s.io().run(action("print('{}')", json!({})));
            let reason = rec["stop_reason"].as_str().unwrap_or("");
            let stage = rec["error"]["stage"].as_str().unwrap_or("");
            assert!(
                reason.starts_with("sandbox_unavailable") && stage.contains("fork"),
                "{who:?}: job {i} did not fail closed at the fork: {rec:#}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let stats = s.io().stats();
        assert!(
            stats["pool"]["refill_failures"].as_u64() > Some(0),
            "{who:?}: no refill failed: {stats}"
        );
        assert_all_reaped(s.pid, who);
        s.finish();
    }
}

/// `text` with comment lines appended up to `len` bytes.
fn padded(text: &str, len: usize) -> String {
    let mut t = text.to_string();
    while t.len() + 80 < len {
        t.push_str(&format!("# {}\n", "p".repeat(76)));
    }
    t
}

/// Within 5 s, the server has reaped every child that exited (a reap is prompt, not
/// instant: the kill and the wait may be on their way).
fn assert_all_reaped(server: i32, who: Who) {
    let t = Instant::now();
    while !zombie_children(server).is_empty() && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        zombie_children(server),
        Vec::<i32>::new(),
        "{who:?}: unreaped children"
    );
}

/// The server's children that are zombies now (exited, not reaped).
fn zombie_children(server: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()))
        .filter(|&p| common::proc_stat(p).is_some_and(|(ppid, st, _)| ppid == server && st == 'Z'))
        .collect()
}

#[test]
fn templates_killed_mid_spawn_leave_no_child_behind() {
    if !common::zygote_built() {
        return;
    }
    for who in variants() {
        let (mut s, _) = start(who, "storm", &["--pool", "2", "-j", "4"]);
        Server::wait_pool_ready(s.io(), 2);
        // Kill whichever template runs, every few milliseconds, while jobs take jails and
        // refills clone new ones: templates die before, during and after handshakes.
        let server = s.pid;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&stop);
        let killer = std::thread::spawn(move || {
            let (mut kills, mut mid_spawn, mut last) = (0, 0, Instant::now());
            while !flag.load(std::sync::atomic::Ordering::SeqCst) {
                // A jail still in its setup: the server's child in a pid namespace of its
                // own (not the template) with no child yet (init forks the program at the
                // end of the setup).
                let setting_up = common::descendants(server).into_iter().any(|p| {
                    common::proc_stat(p.0).is_some_and(|(ppid, st, _)| ppid == server && st != 'Z')
                        && nspid_depth(p.0) == 2
                        && common::descendants(p.0).is_empty()
                });
                // Mostly in the middle of a spawn; now and then an idle one.
                let idle_turn = kills < 3 || last.elapsed() > Duration::from_millis(300);
                if let Some(t) = template_of(server).filter(|_| setting_up || idle_turn) {
                    // SAFETY: kill(2) on a process of our own test's server tree.
                    if unsafe { libc::kill(t, libc::SIGKILL) } == 0 {
                        kills += 1;
                        mid_spawn += usize::from(setting_up);
                        last = Instant::now();
                    }
                }
            }
            (kills, mid_spawn)
        });
        let t = Instant::now();
        let mut jobs = 0;
        while t.elapsed() < Duration::from_secs(3) {
            jobs += 1;
            let rec = s.io().run(action("print('{}')", json!({})));
            let reason = rec["stop_reason"].as_str().unwrap_or("");
            assert!(
                rec["status"] == "ok" || reason.starts_with("sandbox_unavailable"),
                "{who:?}: job {jobs} during the storm: {rec:#}"
            );
        }
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let (kills, mid_spawn) = killer.join().unwrap();
        assert!(
            mid_spawn > 0,
            "{who:?}: no template was killed with a jail in setup"
        );
        assert!(
            kills >= 5,
            "{who:?}: the storm killed only {kills} templates"
        );
        Server::wait_pool_ready(s.io(), 2);
        // A job takes a warm jail; its refill finds the last template dead (if it is) and
        // reaps it. Then every child a dying template had cloned must be reaped too.
        let rec = s.io().run(action("print('{}')", json!({})));
        assert_eq!(rec["status"], "ok", "{who:?}: after the storm: {rec:#}");
        assert!(from_zygote(&rec), "{who:?}: after the storm: {rec:#}");
        Server::wait_pool_ready(s.io(), 2);
        assert_all_reaped(s.pid, who);
        eprintln!("{who:?}: {kills} templates killed ({mid_spawn} with a jail in setup), {jobs} jobs answered");
        s.finish();
    }
}

/// `serve --zygote` under `policy` must exit 2 at start and leave nothing behind; its stderr.
fn refused_at_start(who: Who, policy: &std::path::Path, tag: &str) -> String {
    let m = common::marker(tag);
    let mut s = Server::start(who, policy, &m, &["--zygote", "--pool", "1"]);
    let status = s.wait_exit(Duration::from_secs(30)).expect("serve exits");
    assert_eq!(status.code(), Some(2), "{who:?}: {}", s.stderr());
    // The harness reads stderr on a thread of its own: let it reach the end.
    let t = Instant::now();
    while !s.stderr().contains('\n') && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let err = s.stderr();
    s.tracker.stop();
    let seen = s.tracker.seen();
    serve_harness::assert_no_leftovers(s.pid, &m, &seen, s.before());
    err
}

#[test]
fn what_the_zygote_cannot_serve_is_refused_at_start_and_leaves_nothing() {
    if !common::zygote_built() {
        return;
    }
    for who in variants() {
        // Other interpreter flags: the template could not run jobs as the cold jails do.
        let p = policy("flags", r#"["-I", "-S", "-B", "-X", "utf8", "-O"]"#);
        let err = refused_at_start(who, &p, "flags");
        assert!(
            err.contains("--zygote") && err.contains("python_args"),
            "{who:?}: unclear error: {err}"
        );
    }
    // Another Python than the template embeds (built by scripts/build-zygote.sh for the
    // test interpreter): refused at start, saying which and how to rebuild.
    let other = if common::test_python() == common::PY {
        "/opt/agentjail-py/3.12/bin/python3"
    } else {
        common::PY
    };
    if std::path::Path::new(other).exists() {
        for who in variants() {
            let p = policy_for(other, "otherpython", ARGS, 64);
            let err = refused_at_start(who, &p, "otherpython");
            assert!(
                err.contains("was built for Python")
                    && err.contains(&format!("scripts/build-zygote.sh --python {other}")),
                "{who:?}: unclear error: {err}"
            );
        }
    } else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{other} is missing: run scripts/setup-pythons.sh"
        );
        eprintln!("SKIPPED the other-Python refusal: no {other} (scripts/setup-pythons.sh)");
    }
    // A policy too large for the template's one message: refused at start, clearly.
    let big = serve_harness::scratch("bigpolicy");
    let text = std::fs::read_to_string(policy("bigpolicy", ARGS)).unwrap();
    std::fs::write(big.path().join("p.toml"), padded(&text, 100 * 1024)).unwrap();
    let out = std::process::Command::new(common::agentjail_path())
        .args(["serve", "--zygote", "--pool", "1", "--policy", "p.toml"])
        .current_dir(big.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("the zygote takes policies up to"), "{err}");
    // No template binary next to agentjail.
    let (code, err) = common::run_alone(&["serve", "--zygote", "--pool", "1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("agentjail-zygote") && err.contains("build-zygote"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------
// 4. The zygote is serve's default

/// The job a server's ready pool answers, and `stats`' `zygote` (both after the pool is
/// ready, so the job takes a pool jail, not one started for it).
fn one_job(s: &mut Server) -> (Value, Value) {
    Server::wait_pool_ready(s.io(), 1);
    let rec = s.io().run(action("print('{\"n\": 42}')", json!({})));
    assert_eq!(rec["status"], "ok", "{rec:#}");
    (rec, s.io().stats()["zygote"].clone())
}

/// The lines of `s`'s stderr that speak of the zygote, once the server has started: its
/// reader thread may be a moment behind the first response.
fn zygote_lines(s: &Server, expect: usize) -> Vec<String> {
    let lines = || -> Vec<String> {
        s.stderr()
            .lines()
            .filter(|l| l.contains("zygote"))
            .map(String::from)
            .collect()
    };
    let t = Instant::now();
    while lines().len() < expect && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    lines()
}

#[test]
fn serve_forks_from_the_zygote_by_default_and_never_falls_back_silently() {
    if !common::zygote_built() {
        return;
    }
    for who in variants() {
        // No flag, a template that serves the policy: the pool's jails come from it.
        let m = common::marker("default");
        let mut s = Server::start(who, &policy("default", ARGS), &m, &["--pool", "1"]);
        let (rec, used) = one_job(&mut s);
        assert!(from_zygote(&rec), "{who:?}: not a zygote jail: {rec:#}");
        assert_eq!(used["in_use"], true, "{who:?}: {used}");
        assert!(template_of(s.pid).is_some(), "{who:?}: no template runs");
        assert_eq!(zygote_lines(&s, 0), Vec::<String>::new(), "{who:?}");
        s.finish();

        // --no-zygote: a fresh interpreter per job, no template, nothing said but in stats.
        let m = common::marker("nozygote");
        let mut s = Server::start(
            who,
            &policy("nozygote", ARGS),
            &m,
            &["--pool", "1", "--no-zygote"],
        );
        let (rec, used) = one_job(&mut s);
        assert!(!from_zygote(&rec), "{who:?}: a zygote jail: {rec:#}");
        assert_eq!(
            used,
            json!({"in_use": false, "why": "--no-zygote"}),
            "{who:?}"
        );
        assert!(template_of(s.pid).is_none(), "{who:?}: a template runs");
        assert_eq!(zygote_lines(&s, 0), Vec::<String>::new(), "{who:?}");
        s.finish();

        // Unusable, without --zygote: a fresh interpreter per job, one line on stderr and
        // stats saying why (and how to build the template where it is missing).
        let other_flags = policy("fallflags", r#"["-I", "-S", "-B", "-X", "utf8", "-O"]"#);
        let default = policy("fallmissing", ARGS);
        for (tag, program, p, why) in [
            (
                "fallflags",
                common::agentjail_path(),
                &other_flags,
                "python_args",
            ),
            (
                "fallmissing",
                common::agentjail_alone(),
                &default,
                "build-zygote.sh",
            ),
        ] {
            let m = common::marker(tag);
            let mut s = Server::start_program(who, program, p, &m, &["--pool", "1"], &[]);
            let (rec, used) = one_job(&mut s);
            assert!(!from_zygote(&rec), "{who:?} {tag}: a zygote jail: {rec:#}");
            assert_eq!(used["in_use"], false, "{who:?} {tag}: {used}");
            assert!(
                used["why"].as_str().unwrap_or("").contains(why),
                "{who:?} {tag}: {used}"
            );
            let lines = zygote_lines(&s, 1);
            assert!(
                lines.len() == 1
                    && lines[0].starts_with("agentjail: the zygote is not used")
                    && lines[0].contains(why),
                "{who:?} {tag}: {lines:?}"
            );
            assert!(
                template_of(s.pid).is_none(),
                "{who:?} {tag}: a template runs"
            );
            s.finish();
        }
    }
}
