//! Never leave anything behind: processes, mounts, cgroups, temp entries — whatever way a
//! run ends, agentjail itself being signalled or SIGKILLed included. And 50 concurrent
//! jails on 2 cores with separate records, /tmp and cgroups.

use crate::common;

use serde_json::Value;
use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The agentjail under test (common::built_binary: the release build under scripts/test.sh).
fn bin() -> std::path::PathBuf {
    common::built_binary("agentjail")
}

/// The tests compare host-wide state, so they run one at a time and while they run no other
/// test of this binary starts a jail.
fn serial() -> common::Alone {
    common::alone()
}

/// The shell payloads here fork; the embedded default policy forbids that.
fn spawn_policy() -> String {
    format!("{}/policies/data.toml", env!("CARGO_MANIFEST_DIR"))
}

fn marker() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("ajmark{}x{t}", std::process::id())
}

/// Host pids whose command line contains `m`.
fn pids_with(m: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(c) = std::fs::read(format!("/proc/{pid}/cmdline")) {
            if String::from_utf8_lossy(&c).contains(m) {
                out.push(pid);
            }
        }
    }
    out
}

/// Everything a run could leave behind on the host.
#[derive(Debug, PartialEq, Eq)]
struct HostState {
    mounts: BTreeSet<String>,
    cgroups: BTreeSet<String>,
    tmp: BTreeSet<String>,
}

fn cgroups() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![std::path::PathBuf::from("/sys/fs/cgroup")];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                let p = e.path();
                if p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("agentjail-")
                {
                    out.insert(p.display().to_string());
                }
                stack.push(p);
            }
        }
    }
    out
}

/// Job cgroups left by the agentjail processes with these pids.
fn cgroups_of(pids: &[u32]) -> BTreeSet<String> {
    cgroups()
        .into_iter()
        .filter(|p| {
            pids.iter()
                .any(|pid| p.contains(&format!("agentjail-{pid}-")))
        })
        .collect()
}

fn host_state() -> HostState {
    HostState {
        mounts: common::mount_points(),
        cgroups: cgroups(),
        tmp: common::agentjail_temp_entries(common::not_harness),
    }
}

fn wait_gone(m: &str) {
    let t = Instant::now();
    while !pids_with(m).is_empty() {
        assert!(
            t.elapsed() < common::HANG,
            "processes of the run survived: {:?}",
            pids_with(m)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A payload that leaves every kind of hard-to-kill process behind: a double-forked
/// setsid grandchild, a process ignoring SIGTERM/SIGINT/SIGHUP, a stopped process.
fn nasty_shell(m: &str) -> String {
    // Each process carries the marker in its command line (`: marker` is a no-op that keeps
    // sh from exec'ing sleep away).
    format!(
        "(setsid sh -c 'sleep 1000; : {m}' &) ; \
         sh -c 'trap \"\" TERM INT HUP; sleep 1001; : {m}' & \
         sh -c 'kill -STOP $$; sleep 1002; : {m}' & \
         echo started; sh -c 'sleep 1003; : {m}'"
    )
}

fn exec_nasty(m: &str, time_limit: &str) -> std::process::Child {
    Command::new(bin())
        .args([
            "exec",
            "--policy",
            &spawn_policy(),
            "--time-limit",
            time_limit,
            "--",
            "/bin/sh",
            "-c",
            &nasty_shell(m),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn wait_started(child: &mut std::process::Child, m: &str) {
    use std::io::Read;
    let mut buf = [0u8; 8];
    let n = child.stdout.as_mut().unwrap().read(&mut buf).unwrap_or(0);
    if n == 0 {
        let mut err = String::new();
        let _ = child.stderr.as_mut().unwrap().read_to_string(&mut err);
        panic!(
            "agentjail ended before the payload started: {:?} {err}",
            child.wait()
        );
    }
    let t = Instant::now();
    while pids_with(m).len() < 4 && t.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        pids_with(m).len() >= 3,
        "the payload did not start its processes: {:?} read {:?}",
        pids_with(m),
        String::from_utf8_lossy(&buf)
    );
}

#[test]
fn timeout_kills_every_process_of_the_jail() {
    let _g = serial();
    let before = host_state();
    let m = marker();
    let mut child = exec_nasty(&m, "1");
    let launcher = child.id();
    wait_started(&mut child, &m);
    let out = child.wait_with_output().unwrap();
    assert!(cgroups_of(&[launcher]).is_empty());
    assert_eq!(out.status.code(), Some(124));
    assert!(String::from_utf8_lossy(&out.stderr).contains("code_timeout"));
    wait_gone(&m);
    assert_eq!(host_state(), before);
}

fn signal_agentjail(sig: i32) {
    let _g = serial();
    let before = host_state();
    let m = marker();
    let mut child = exec_nasty(&m, "30");
    let launcher = child.id();
    wait_started(&mut child, &m);
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, sig) };
    let t = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(t.elapsed() < common::HANG);
    wait_gone(&m);
    if sig == libc::SIGKILL {
        // agentjail could not clean its cgroup; the next run sweeps it. (With no cgroup
        // available, e.g. launched unprivileged here, there is none to sweep.)
        common::sweep_until(&bin(), || cgroups_of(&[launcher]).is_empty());
    } else {
        assert_eq!(
            out.status.code(),
            Some(124),
            "stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The stop reason names the signal (REFERENCE: interrupted:<sigterm|sigint|sighup>).
        let name = match sig {
            libc::SIGTERM => "sigterm",
            libc::SIGINT => "sigint",
            _ => "sighup",
        };
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("agentjail: stopped: interrupted:{name}")),
            "stderr: {err}"
        );
    }
    assert!(
        cgroups_of(&[launcher]).is_empty(),
        "job cgroup left: {:?}",
        cgroups_of(&[launcher])
    );
    assert_eq!(host_state(), before);
}

#[test]
fn sigterm_to_agentjail_ends_the_run_cleanly() {
    signal_agentjail(libc::SIGTERM);
}

#[test]
fn sigint_to_agentjail_ends_the_run_cleanly() {
    signal_agentjail(libc::SIGINT);
}

#[test]
fn sighup_to_agentjail_ends_the_run_cleanly() {
    signal_agentjail(libc::SIGHUP);
}

#[test]
fn sigkill_to_agentjail_takes_the_jail_down() {
    signal_agentjail(libc::SIGKILL);
}

#[test]
fn setup_failure_leaves_nothing() {
    let _g = serial();
    let before = host_state();
    let out = Command::new(bin())
        .args(["exec", "--", "/nonexistent/command"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("execve") && err.contains("errno 2"),
        "stage and errno named: {err}"
    );
    assert_eq!(host_state(), before);
}

#[test]
fn fifty_concurrent_jails_are_separate() {
    let _g = serial();
    let before = host_state();
    let n = 50;
    let dir = tempfile::tempdir().unwrap();
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let rec = dir.path().join(format!("r{i}.json"));
            std::thread::spawn(move || {
                // Each job writes its own token into /tmp, then looks for others' tokens,
                // other processes, and signals pids 3..60 (which would be other jobs if
                // pid namespaces were shared).
                let script = format!(
                    "echo job{i} > /tmp/token; sleep 0.3; ls /tmp; ls /proc | grep -c '^[0-9]' ; \
                     for p in $(seq 3 60); do kill -0 $p 2>/dev/null && echo sees$p; done; cat /tmp/token"
                );
                let child = Command::new(bin())
                    .args(["exec", "--policy", &spawn_policy(), "--record", rec.to_str().unwrap(), "--time-limit", "20", "--", "/bin/sh", "-c", &script])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                let pid = child.id();
                (i, child.wait_with_output().unwrap(), rec, pid)
            })
        })
        .collect();
    let mut launchers = Vec::new();
    for h in handles {
        let (i, out, rec, pid) = h.join().unwrap();
        launchers.push(pid);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "job {i}: {stdout} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(
            lines[0], "token",
            "job {i} sees only its own /tmp: {stdout}"
        );
        assert!(
            !stdout.contains("sees"),
            "job {i} can signal other processes: {stdout}"
        );
        assert_eq!(lines.last().copied(), Some(format!("job{i}").as_str()));
        let r: Value = serde_json::from_str(&std::fs::read_to_string(rec).unwrap()).unwrap();
        assert_eq!(r["status"], "ok");
    }
    assert!(cgroups_of(&launchers).is_empty());
    assert_eq!(host_state(), before);
}
