//! Red-team attacks on the jail through the real `agentjail exec` binary on the EMBEDDED
//! default policy, launched as root and as nobody (tests/common). Everything here is BLOCKED
//! today; each test asserts it stays so. Every payload prints a START marker first, so a jail
//! that fails to start cannot pass vacuously, and prints `BREACH ...` when an attack works.
//!
//! These complement python_attacks and twins (no case is repeated): more socket families, the
//! new mount API, namespace calls with flags in the high register half, pidfd and
//! process_vm calls, prctl tricks, personality(READ_IMPLIES_EXEC), SysV/POSIX IPC, splice
//! family, NUMA and scheduler calls, landlock self-nesting, /proc of the jail's init, symlink
//! and /proc/*/root escapes, signals to init, a forged stop line, and hang attempts.
//!
//! One weaker-than-claimed behaviour is kept visible as an ignored test (`WEAK:`): files
//! written to /tmp can be executed.

use crate::common::*;
use std::time::{Duration, Instant};

fn each_blocked(cases: &[Case]) {
    each_blocked_on(cases, false)
}

/// Each case in its own jail; with `pty`, agentjail's stdin is a real pty (the terminal
/// ioctls: tests/jail/controls.rs shows each works or meets a capability check on a
/// terminal with no jail).
fn each_blocked_on(cases: &[Case], pty: bool) {
    let mut failures = Vec::new();
    for who in variants() {
        for c in cases {
            let code = format!(
                "{PRELUDE}\n{}\nprint(\"ATTEMPT\", flush=True)\nattempt({:?}, lambda: {})\n",
                attacks::SYSC,
                c.label,
                c.call
            );
            let cmd = [PY, "-I", "-S", "-c", &code];
            let terminal = pty.then(|| nix::pty::openpty(None, None).unwrap());
            let r = launch(
                who,
                Launch {
                    flags: vec!["--time-limit".into(), "5".into()],
                    stdio_fd: terminal.as_ref().map(|t| &t.slave),
                    record: true,
                    ..Default::default()
                },
                &cmd,
            );
            note_case(&mut failures, c, who, &r, true);
        }
    }
    assert_all_blocked(&failures);
}

fn x86_64() -> bool {
    require_feature("x86_64 host", cfg!(target_arch = "x86_64"))
}

#[test]
fn every_socket_family_is_refused() {
    if !x86_64() {
        return;
    }
    // socket(domain, SOCK_STREAM or SOCK_DGRAM or SOCK_RAW, 0): none may succeed.
    each_blocked(attacks::SOCKET_FAMILIES);
}

#[test]
fn new_mount_api_and_namespace_calls_are_refused() {
    if !x86_64() {
        return;
    }
    each_blocked(attacks::MOUNT_API_AND_NAMESPACES);
}

#[test]
fn cross_process_calls_are_refused() {
    if !x86_64() {
        return;
    }
    each_blocked(attacks::CROSS_PROCESS);
}

#[test]
fn prctl_personality_and_privilege_tricks_are_refused() {
    if !x86_64() {
        return;
    }
    each_blocked(attacks::PRCTL_AND_PRIVILEGE);
}

#[test]
fn ipc_splice_and_kernel_object_calls_are_refused() {
    if !x86_64() {
        return;
    }
    each_blocked(attacks::IPC_AND_KERNEL_OBJECTS);
}

#[test]
fn ioctls_on_stdio_pipes_are_refused() {
    if !x86_64() {
        return;
    }
    // agentjail's stdin is a pty (stdout and stderr pipes); on a terminal each of these works
    // or meets a capability check with no jail (tests/jail/controls.rs). The jail refuses
    // them twice: the program gets pipes, never the terminal (python_attacks'
    // terminal_injection_is_impossible), and the filter answers ENOTTY to every request but
    // the harmless ones (FIONREAD is tested working elsewhere) on any fd. A request with a harmless low half and junk in the high half is a different
    // request to the filter only if it compares 64 bits; it compares the low 32 like the kernel.
    each_blocked_on(attacks::STDIO_IOCTLS, true);
}

#[test]
fn init_process_is_opaque() {
    // pid 1 is agentjail's own init: same uid as the program, but non-dumpable, argv blanked.
    // Each probe is first run against the program's own /proc/self (same uid, dumpable), where
    // it must succeed: a probe that fails even with full access (a read of a directory, a file
    // the host lacks) would pass for the wrong reason. Against init each must be EACCES, the
    // refusal non-dumpable gives; writes are EROFS (the read-only procfs).
    let body = r#"
import os, errno
def probes(pid):
    P = "/proc/%s/" % pid
    out = []
    for f in ["environ", "maps", "smaps", "auxv", "syscall", "io", "pagemap", "personality"]:
        out.append(("read " + f, lambda f=f: open(P + f, "rb").read(64)))
    out.append(("open mem", lambda: open(P + "mem", "rb").close()))
    for l in ["root", "cwd", "exe", "fd/0", "ns/pid", "ns/mnt", "ns/user", "ns/net"]:
        out.append(("readlink " + l, lambda l=l: os.readlink(P + l)))
    for d in ["fd", "root/tmp", "cwd/"]:
        out.append(("list " + d, lambda d=d: os.listdir(P + d)))
    return out
def name(e):
    return errno.errorcode.get(e.errno, str(e.errno))
for label, fn in probes("self"):
    try:
        fn()
        print("CONTROL", label, "OK")
    except OSError as e:
        print("CONTROL", label, name(e))
for label, fn in probes("1"):
    try:
        fn()
        print("BREACH", label)
    except OSError as e:
        print("INIT", label, name(e))
for f, v in (("comm", "x"), ("oom_score_adj", "-1000")):
    try:
        open("/proc/1/" + f, "w").write(v)
        print("BREACH write", f)
    except OSError as e:
        print("WRITE", f, name(e))
def argv(pid):
    return open("/proc/%s/cmdline" % pid, "rb").read().strip(b"\0")
print("CONTROL argv", "OK" if argv("self") else "blank")
print("INIT argv", "blank" if not argv(1) else "BREACH %r" % argv(1))
"#;
    const PROBES: usize = 20;
    for who in variants() {
        let r = py(who, &["--output-limit", "65536"], body);
        r.assert_ran("START");
        assert!(!r.stdout.contains("BREACH"), "{who:?}: {r:#?}");
        let lines = |tag: &str| -> Vec<String> {
            r.stdout
                .lines()
                .filter(|l| l.starts_with(tag))
                .map(String::from)
                .collect()
        };
        let control = lines("CONTROL ");
        assert_eq!(control.len(), PROBES + 1, "{who:?}: {r:#?}");
        for l in &control {
            assert!(
                l.ends_with(" OK"),
                "{who:?}: the probe fails with full access: {l}"
            );
        }
        let init = lines("INIT ");
        assert_eq!(init.len(), PROBES + 1, "{who:?}: {r:#?}");
        for l in &init[..PROBES] {
            assert!(l.ends_with(" EACCES"), "{who:?}: {l}");
        }
        assert_eq!(init[PROBES], "INIT argv blank", "{who:?}");
        assert_eq!(
            lines("WRITE "),
            ["WRITE comm EROFS", "WRITE oom_score_adj EROFS"],
            "{who:?}: {r:#?}"
        );
    }
}

#[test]
fn symlink_hardlink_and_proc_root_escapes_fail() {
    let body = r#"
import os
os.symlink("/proc/1/root", "/tmp/r1")
attempt("symlink to init root", lambda: os.listdir("/tmp/r1/"))
os.symlink("/proc/1/cwd/../../..", "/tmp/r2")
attempt("symlink to init cwd", lambda: os.listdir("/tmp/r2/"))
def proc_self_root():
    s = open("/proc/self/root/../../../../etc/passwd").read()
    if s.startswith("agent:"):
        raise OSError(0, "jail passwd")
    return s
attempt("/proc/self/root/..", proc_self_root)
attempt("hard link /usr/bin/python3", lambda: os.link("/usr/bin/python3", "/tmp/py"))
attempt("list /", lambda: os.listdir("/"))
attempt("/sys", lambda: os.listdir("/sys"))
attempt("/home", lambda: os.listdir("/home"))
attempt("/root", lambda: os.listdir("/root"))
attempt("/var", lambda: os.listdir("/var"))
attempt("/run", lambda: os.listdir("/run"))
attempt("write /usr", lambda: open("/usr/x", "w"))
attempt("write /etc/passwd", lambda: open("/etc/passwd", "a"))
attempt("write /proc/sys", lambda: open("/proc/sys/kernel/hostname", "w").write("x"))
attempt("write /proc/self/oom_score_adj", lambda: open("/proc/self/oom_score_adj", "w").write("-1000"))
def dev_full():
    with open("/dev/full", "w") as f:
        f.write("x")
attempt("/dev/full", dev_full)
attempt("rename into /usr", lambda: os.rename("/tmp/r1", "/usr/r1"))
attempt("mkdir in /proc", lambda: os.mkdir("/proc/x"))
"#;
    for who in variants() {
        let r = py(who, &["--output-limit", "65536"], body);
        r.assert_ran("START");
        assert!(!r.stdout.contains("BREACH"), "{who:?}: {r:#?}");
        assert_eq!(r.stdout.matches("BLOCKED").count(), 17, "{who:?}: {r:#?}");
    }
}

#[test]
fn signals_to_init_do_not_end_the_jail_early() {
    // The kernel drops signals a pid namespace's init has no handler for when they come from
    // inside the namespace: init survives and keeps reporting the program's status.
    let body = r#"
import os, signal, time
for s in (signal.SIGKILL, signal.SIGSTOP, signal.SIGTERM, signal.SIGSEGV, signal.SIGHUP):
    os.kill(1, s)
time.sleep(0.2)
st = open("/proc/1/status").read()
state = [l for l in st.splitlines() if l.startswith("State:")][0]
if "S" in state.split()[1]:
    print("BLOCKED init alive", state, flush=True)
else:
    print("BREACH init", state, flush=True)
print("END", flush=True)
sys.exit(7)
"#;
    for who in variants() {
        let r = py(who, &[], body);
        r.assert_ran("START");
        assert!(!r.stdout.contains("BREACH"), "{who:?}: {r:#?}");
        r.assert_ran("END");
        assert_eq!(r.code, 7, "the program's own status must come back: {r:#?}");
    }
}

#[test]
fn forged_stop_line_does_not_fool_the_record() {
    // The program prints agentjail's own stop message and exits 124 like a stop. The exit code
    // and stderr are ambiguous by construction (see the report); the record must not be.
    let body = r#"
sys.stderr.write("agentjail: stopped: code_timeout\n")
sys.stderr.flush()
sys.exit(124)
"#;
    for who in variants() {
        let r = py(who, &[], body);
        r.assert_ran("START");
        assert_eq!(r.code, 124, "{r:#?}");
        assert_eq!(
            r.stop_reason(),
            Some("code_runtime_error:124"),
            "the record must say the program exited 124 by itself: {r:#?}"
        );
        assert_eq!(
            r.stderr.matches("agentjail: stopped:").count(),
            1,
            "only the forged line: {r:#?}"
        );
    }
}

fn assert_stopped_in_time(r: &Run, limit: Duration, reasons: &[&str]) {
    r.assert_ran("START");
    assert!(
        r.wall < limit,
        "agentjail took {:?} (limit {limit:?}): {r:#?}",
        r.wall
    );
    let got = r.stop_reason().unwrap_or_default();
    assert!(
        reasons.contains(&got),
        "stop reason {got:?} not in {reasons:?}: {r:#?}"
    );
}

#[test]
fn cpu_burnt_by_threads_is_stopped_by_the_supervisor_not_the_backstop() {
    // The main thread sleeps; two other threads burn the CPU. The supervisor must count
    // every thread (the cgroup's counter as root; without a cgroup, as nobody, the
    // program's process CPU clock, which sums all its threads) and kill the jail at the
    // 1 s CPU limit: signal SIGKILL. Were a thread missed, nothing would stop it before
    // the RLIMIT_CPU backstop (2 s, SIGXCPU) or the 20 s wall limit.
    let policy = shared_file(
        "cpu-one-second.toml",
        r#"version = 1
name = "cpu-one-second"
description = "tests/redteam_jail.rs: a short CPU limit under a long wall limit"
[limits]
wall_time_ms = 20000
cpu_time_ms = 1000
[cgroup]
requirement = "best_effort"
"#,
    );
    let policy = policy.to_str().unwrap();
    let body = r#"
import threading, time
def spin():
    while True:
        pass
for _ in range(2):
    threading.Thread(target=spin, daemon=True).start()
print("SPINNING", flush=True)
while True:
    time.sleep(1)
"#;
    for who in variants() {
        let r = py(who, &["--policy", policy], body);
        let e = stopped_at_one_second_of_cpu(who, &r);
        assert_eq!(
            e["signal"], "SIGKILL",
            "{who:?}: the backstop, not the supervisor: {e}"
        );
    }
}

/// A spinner under a 1 s CPU limit ran, and stopped with `code_cpu_limit` within 1.0-1.8 s
/// of CPU (the limit is checked where it can first be crossed: usage grows at most ncpu
/// times faster than wall time). Its `execution`.
fn stopped_at_one_second_of_cpu(who: Who, r: &Run) -> serde_json::Value {
    r.assert_ran("SPINNING");
    let rec = r.record.as_ref().expect("a record");
    let e = rec["execution"].clone();
    assert_eq!(r.stop_reason(), Some("code_cpu_limit"), "{who:?}: {rec}");
    let cpu = e["cpu_ms"].as_u64().unwrap_or(0);
    // Never before the limit; and not the 4 x 1 s the workers' own RLIMIT_CPU would allow
    // if the supervisor did not count them (an overshoot bound, not a speed).
    assert!((1000..4000).contains(&cpu), "{who:?}: cpu_ms {cpu}: {e}");
    e
}

#[test]
fn forked_workers_burning_cpu_are_counted_while_they_live() {
    // Forked processes (not threads) spin while the program sleeps. Where the jail has no
    // cpu controller (nobody here; a host with only `memory` delegated), the supervisor
    // must count every live process of the jail: counting only the program and what was
    // reaped let 4 workers burn 12 s under a 2 s limit until each hit its own RLIMIT_CPU.
    let spawn = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/policies/spawn.toml"
    ))
    .unwrap()
    .replace("wall_time_ms = 30000", "wall_time_ms = 20000")
    .replace("cpu_time_ms = 30000", "cpu_time_ms = 1000")
    .replace("name = \"data\"", "name = \"forked-cpu\"");
    let policy = shared_file("forked-cpu.toml", &spawn);
    let policy = policy.to_str().unwrap();
    let body = r#"
import os, time
for _ in range(4):
    if os.fork() == 0:
        while True:
            pass
print("SPINNING", flush=True)
while True:
    time.sleep(1)
"#;
    for who in variants() {
        let r = py(who, &["--policy", policy], body);
        let e = stopped_at_one_second_of_cpu(who, &r);
        let rec = r.record.as_ref().expect("a record");
        let wall = e["wall_ms"].as_u64().unwrap_or(u64::MAX);
        // Before the policy's 20 s wall limit: the CPU account stopped it (the reason
        // says so too).
        assert!(
            wall < 20_000,
            "{who:?}: stopped by the wall clock, not the CPU account: {e}"
        );
        if who == Who::Nobody {
            let cpu_cg = rec["enforcement"]
                .as_array()
                .and_then(|a| a.iter().find(|c| c["control"] == "cgroup_cpu"))
                .map(|c| c["state"].clone());
            assert_ne!(
                cpu_cg,
                Some(serde_json::json!("enforced")),
                "nobody has no cpu cgroup here: this variant must exercise the procfs account"
            );
        }
    }
}

#[test]
fn main_thread_exit_with_a_live_thread_is_stopped_and_reaped() {
    // SYS_exit (not exit_group) on the main thread: the process lives on in its other thread,
    // with stdout still open. The wall limit must end it and nothing may survive.
    let tag = marker("mainexit");
    let body = format!(
        r#"
import threading, time, ctypes
def spin():
    while True:
        time.sleep(0.05)
threading.Thread(target=spin, daemon=False).start()
print("{tag}", flush=True)
ctypes.CDLL(None).syscall(60, 0)
"#
    );
    for who in variants() {
        let t0 = Instant::now();
        let r = py(who, &["--time-limit", "2"], &body);
        assert_stopped_in_time(&r, HANG, &["code_timeout"]);
        assert!(t0.elapsed() < HANG);
        let left = survivors(&tag, Duration::from_secs(2));
        assert!(left.is_empty(), "survivors {left:?}: {r:#?}");
    }
}

#[test]
fn closed_stdio_and_sigstop_do_not_hang_agentjail() {
    for who in variants() {
        let r = py(
            who,
            &["--time-limit", "2"],
            "import time\nos.close(1)\nos.close(2)\ntime.sleep(60)",
        );
        assert_stopped_in_time(&r, HANG, &["code_timeout"]);
        let r = py(
            who,
            &["--time-limit", "2"],
            "import signal\nos.kill(os.getpid(), signal.SIGSTOP)\nprint('BREACH resumed')",
        );
        assert_stopped_in_time(&r, HANG, &["code_timeout"]);
        assert!(!r.stdout.contains("BREACH"));
    }
}

#[test]
fn huge_unread_stdin_does_not_block_agentjail() {
    for who in variants() {
        let code = format!("{PRELUDE}\nprint('END', flush=True)");
        let r = launch(
            who,
            Launch {
                flags: vec!["--time-limit".into(), "5".into()],
                stdin: Some(vec![b'x'; 64 * 1024 * 1024]),
                record: true,
                ..Default::default()
            },
            &[PY, "-I", "-S", "-c", &code],
        );
        r.assert_ran("END");
        assert_eq!(r.code, 0, "{r:#?}");
        assert!(r.wall < HANG, "{r:#?}");
    }
}

#[test]
fn spinning_threads_are_bounded() {
    // Threads are allowed; 32 spinning threads must still be ended by the CPU or wall limit,
    // with agentjail returning promptly.
    let body = r#"
import threading
def spin():
    while True:
        pass
n = 0
for _ in range(32):
    try:
        threading.Thread(target=spin, daemon=True).start()
    except RuntimeError:
        break
    n += 1
print("SPINNING", n, flush=True)
spin()
"#;
    for who in variants() {
        let r = py(who, &["--time-limit", "6"], body);
        // START, not SPINNING: on a loaded host the limit may end the run before 32
        // threads are up; what matters is that it ran and was ended in time.
        r.assert_ran("START");
        assert_stopped_in_time(
            &r,
            Duration::from_secs(12),
            &[
                "code_cpu_limit",
                "code_timeout",
                "code_killed:SIGXCPU",
                "code_killed:SIGKILL",
            ],
        );
    }
}

#[test]
fn noreserve_mapping_cannot_exceed_memory() {
    // A huge MAP_NORESERVE mapping, then touching 1 GiB of it: the memory cgroup (root) or
    // RLIMIT_AS (nobody, no delegation) must stop it.
    let body = r#"
import mmap
try:
    m = mmap.mmap(-1, 16 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x4000)
except OSError as e:
    print("BLOCKED mmap", e.errno, flush=True)
    raise SystemExit(0)
for i in range(0, 1 << 30, 4096):
    m[i] = 1
print("BREACH touched 1 GiB", flush=True)
"#;
    for who in variants() {
        let r = py(who, &["--time-limit", "20"], body);
        r.assert_ran("START");
        assert!(!r.stdout.contains("BREACH"), "{who:?}: {r:#?}");
        let ok = r.stdout.contains("BLOCKED")
            || matches!(
                r.stop_reason(),
                Some("code_memory_limit")
                    | Some("code_killed:SIGKILL")
                    | Some("code_killed:SIGSEGV")
            );
        assert!(ok, "{who:?}: {r:#?}");
    }
}

/// WEAK, not a breach: /tmp is mounted without noexec and landlock's read_write rule grants
/// EXECUTE there, so a file the program writes to /tmp can be execve'd (docs/SECURITY.md:
/// "read/execute only under the binds, /etc, /app, /proc"). Arbitrary code already runs
/// through ctypes, so this adds no syscall, but it contradicts the claim and lets a static
/// binary run.
#[test]
fn files_written_to_tmp_are_not_executable() {
    let body = r#"
open("/tmp/t", "wb").write(open("/usr/bin/true", "rb").read())
os.chmod("/tmp/t", 0o755)
attempt("exec /tmp/t", lambda: os.execv("/tmp/t", ["/tmp/t"]))
"#;
    for who in variants() {
        let r = py(who, &[], body);
        r.assert_ran("START");
        assert!(r.stdout.contains("BLOCKED"), "{who:?}: {r:#?}");
    }
}

/// WEAK, not a breach: host-wide kernel information stays readable through the jail's /proc
/// (docs/SECURITY.md: "/proc/sys read-only", not hidden): the host's boot id (a stable
/// identifier), the kernel command line and build config, disk and memory statistics, and
/// the block device and mount options of the /usr bind in mountinfo.
/// (A masked file reads empty, as Docker's masked paths do; empty counts as hidden. The
/// /usr bind's device in /proc/self/mountinfo stays visible: per-process files cannot be
/// masked.)
#[test]
fn host_kernel_information_is_hidden() {
    let body = r#"
def read_nonempty(p):
    data = open(p, "rb").read(32)
    if not data:
        raise OSError(0, "masked (empty)")
    return data
for p in @FILES@:
    attempt("read " + p, lambda p=p: read_nonempty(p))
"#;
    // Only files the host has: one it lacks is missing in the jail whatever it masks.
    let files: Vec<&str> = [
        "/proc/sys/kernel/random/boot_id",
        "/proc/cmdline",
        "/proc/config.gz",
        "/proc/diskstats",
        "/proc/zoneinfo",
        "/proc/pressure/cpu",
        "/proc/modules",
        "/proc/partitions",
    ]
    .into_iter()
    .filter(|p| {
        let there = std::path::Path::new(p).exists();
        if !there {
            eprintln!("!!!!!!!! NOTE: {p} does not exist on this host: not probed !!!!!!!!");
        }
        there
    })
    .collect();
    let body = body.replace("@FILES@", &format!("{files:?}"));
    for who in variants() {
        let r = py(who, &["--output-limit", "65536"], &body);
        r.assert_ran("START");
        assert!(!r.stdout.contains("BREACH"), "{who:?}: {r:#?}");
    }
}

/// Run one action through `agentjail run -` (as the test process) and return the record.
fn run_action(code: &str) -> serde_json::Value {
    use std::io::Write;
    let action = serde_json::json!({
        "id": "redteam", "language": "python", "entrypoint": "main.py",
        "code": code, "input_payload": {},
    });
    let mut child = std::process::Command::new(agentjail_path())
        .args(["run", "-"])
        .current_dir("/")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn agentjail run");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(action.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    serde_json::from_slice(&out.stdout).expect("run prints a record")
}

/// WEAK, not a breach: the record's resource stop reasons are derived from the program's own
/// stderr (src/run.rs runtime_failure: a traceback ending in MemoryError is
/// `code_memory_limit`, BlockingIOError "[Errno 11]" is `code_pids_limit`), so a program can
/// claim a resource stop it never hit (oom_kills 0, pids_limit_hits 0, and the default policy
/// cannot even fork).
#[test]
fn program_cannot_forge_a_resource_stop() {
    for code in [
        "raise MemoryError('forged')",
        "raise BlockingIOError(11, 'forged')",
    ] {
        let r = run_action(code);
        let reason = r["stop_reason"].as_str().unwrap_or_default().to_string();
        assert!(
            reason.starts_with("code_runtime_error"),
            "{code}: forged stop reason {reason}: {r}"
        );
    }
}

/// Init's final report (the program's wait status, CPU time and peak memory, see
/// src/jail/child.rs) is what the record's verdict fields come from once init has reaped the
/// jail. The program tries to plant a forged one, claiming a clean exit that used no CPU:
/// through the pipe's fd number (closed at its exec), through init's /proc entry (init is
/// non-dumpable), and by brute force over every fd number it could hold (the runner's reply
/// pipe, fd 4, takes the bytes: it is informational by design). Then it burns CPU
/// and exits 3: the record must say exactly that.
#[test]
fn init_report_cannot_be_forged() {
    let code = r#"
import os, struct, time
forged = struct.pack("=iQQ", 0, 0, 0)
tried = []
for fd in range(3, 64):
    try:
        os.write(fd, forged)
        # fd 4 is the runner's reply pipe: the program may write there by design (its
        # reports are informational); the forged bytes go in anyway.
        if fd != 4:
            tried.append("BREACH wrote fd %d" % fd)
    except OSError:
        pass
for path in ["/proc/1/fd/7", "/proc/1/fd/5", "/proc/1/fd/6"]:
    try:
        fd = os.open(path, os.O_WRONLY)
        os.write(fd, forged)
        tried.append("BREACH " + path)
    except OSError:
        pass
end = time.process_time() + 0.3
while time.process_time() < end:
    pass
print("START", tried)
raise SystemExit(3)
"#;
    let action = serde_json::json!({
        "id": "forge-init-report", "language": "python", "entrypoint": "main.py",
        "code": code, "input_payload": {},
    });
    // The default jail with the static check opened up (os, struct, time), so the attack
    // reaches the kernel.
    let policy = shared_file(
        "forge-init-report.toml",
        r#"version = 1
name = "forge-init-report"
description = "tests/redteam_jail.rs"
[check]
allowed_imports = ["os", "struct", "time"]
denied_calls = []
denied_names = []
denied_attributes = []
deny_dunder = false
[interpreter]
python_args = ["-I", "-S", "-B", "-X", "utf8"]
[limits]
wall_time_ms = 10000
cpu_time_ms = 10000
[seccomp]
allow_groups = [
  "basic_io", "files_read", "files_write_tmp", "memory", "process_self", "threads",
  "signals", "time", "sleep", "poll", "pipes", "exec", "system_info",
]
[cgroup]
requirement = "best_effort"
"#,
    );
    let policy = policy.to_str().unwrap();
    for who in variants() {
        let r = run_as(
            who,
            &["--policy", policy],
            action.to_string().as_bytes(),
            None,
        );
        let e = &r.record["execution"];
        let stdout = e["stdout"].as_str().unwrap_or_default();
        assert!(
            stdout.contains("START"),
            "{who:?}: did not run: {}",
            r.record
        );
        assert!(!stdout.contains("BREACH"), "{who:?}: {stdout}");
        assert_eq!(e["exit_code"], 3, "{who:?}: {}", r.record);
        assert_eq!(r.stop_reason(), "code_runtime_error:3", "{who:?}");
        let cpu = e["cpu_ms"].as_u64().unwrap_or(0);
        assert!(cpu >= 250, "{who:?}: cpu_ms {cpu}: {}", r.record);
        assert!(
            e["peak_memory_bytes"].as_u64().unwrap_or(0) > 1 << 20,
            "{who:?}: {}",
            r.record
        );
    }
}
