//! The control run of the shared attack tables (tests/common/attacks.rs): every case made
//! with no jail at all, so that a case can pass in the jail suites (redteam, python_attacks,
//! the workspace suite) only because a control of the jail held, never because the payload
//! itself was wrong.
//!
//! One Python process runs every case, each in a child of its own, as uid 65534 (never the
//! host's root: the run checks its uid map) with every capability of a user namespace of
//! its own and of its own mount, network, UTS, IPC and pid namespaces: what the jail takes
//! away, and nothing of the host's. Each child has a fresh tmpfs on /tmp, `/usr` as a
//! read-only bind mount (both are mounts in the jail too), a session of its own with a pty
//! as stdin and stdout (its controlling terminal), a keyring of its own, and its permitted
//! capabilities inheritable. Pid 1 is a process of the same uid, as the jail's init is of
//! the program; the runner is its child.
//!
//! Each case must end as its [`Without`] says: `Works` returns; `HostPrivilege` gets EPERM
//! or EACCES (and the `exec` suites then count only its stop); `StopOnly` is not run, and is
//! listed below by label. Any other outcome (EBADF, EINVAL, EFAULT, ENODEV, EOPNOTSUPP, a
//! Python error) means the payload's arguments are wrong: the case would be refused in the
//! jail whatever its controls did, and the test fails.

use crate::common::attacks;
use crate::common::{is_root, Case, Without, PY};
use std::process::Command;

/// The cases never made outside the jail, by label: a case added as `stop_only` must be
/// named here too, so the choice is made on purpose.
const STOP_ONLY: &[&str] = &[
    "clone(thread flags | CLONE_NEWUTS)",
    "clone(thread flags | CLONE_NEWNET)",
    "clone(CLONE_VM|CLONE_VFORK) = vfork",
    "vfork",
    "iopl",
    "init_module",
    "kexec_load",
    "reboot",
];

/// The runner: `CASES` (label, lambda) is put in front of it.
const RUNNER: &str = r#"
import json, signal
# Pid 1 (the namespace's init, as the jail's init is) only waits for the runner, pid 2,
# which runs the cases: a case that stops its target (PTRACE_ATTACH) stops init, and the
# runner wakes it with SIGCONT after every case.
assert os.getpid() == 1, "the control run is not its pid namespace's init"
runner = os.fork()
if runner:
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == runner:
            os._exit(os.waitstatus_to_exitcode(status) & 0xff)
outside = open("/proc/self/uid_map").read().split()
assert len(outside) == 3 and outside[0] == "0" and outside[1] != "0", outside
MS_RDONLY, MS_REMOUNT, MS_BIND = 1, 32, 4096
def must(r, what):
    if r != 0:
        raise OSError(ctypes.get_errno(), what)
must(libc.mount(b"/usr", b"/usr", None, MS_BIND, None), "bind /usr")
must(libc.mount(None, b"/usr", None, MS_REMOUNT | MS_BIND | MS_RDONLY, None), "/usr read-only")
def setup():
    os.setsid()
    must(libc.unshare(0x00020000 | 0x04000000 | 0x08000000), "unshare mnt uts ipc")
    must(libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0, None), "tmpfs /tmp")
    master, slave = os.openpty()
    # Kept open across a case's exec (execveat): its last close would hang up the terminal.
    os.set_inheritable(master, True)
    tty = os.open(os.ttyname(slave), os.O_RDWR)
    os.dup2(tty, 0)
    os.dup2(tty, 1)
    sysc(250, 1, None)
    hdr = ctypes.create_string_buffer(b"\x22\x05\x08\x20" + bytes(4))
    data = (ctypes.c_uint32 * 6)()
    sysc(125, hdr, data)
    data[2], data[5] = data[1], data[4]
    sysc(126, hdr, data)
for i, (label, call) in enumerate(CASES):
    r, w = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:
        os.close(r)
        me = os.getpid()
        try:
            setup()
        except BaseException as e:
            os.write(w, json.dumps({"setup": repr(e)}).encode())
            os._exit(1)
        try:
            out = {"ok": repr(call())[:80]}
        except OSError as e:
            out = {"errno": e.errno}
        except BaseException as e:
            out = {"error": "%s: %s" % (type(e).__name__, e)}
        if os.getpid() != me:
            os._exit(0)
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    got = b""
    while True:
        b = os.read(r, 4096)
        if not b:
            break
        got += b
    os.close(r)
    _, status = os.waitpid(pid, 0)
    os.kill(1, signal.SIGCONT)
    out = json.loads(got) if got else {"empty": True}
    out["i"] = i
    out["status"] = status
    print(json.dumps(out), flush=True)
print("DONE", flush=True)
"#;

/// The Python program: the tables' helpers, every case that may run, the runner.
fn program(cases: &[&Case]) -> String {
    let mut p = format!("import os, sys\n{}\nCASES = [\n", attacks::SYSC);
    for c in cases {
        let label = serde_json::to_string(c.label).unwrap();
        p.push_str(&format!("    ({label}, lambda: {}),\n", c.call));
    }
    p.push_str("]\n");
    p.push_str(RUNNER);
    p
}

/// What one case did with no jail, or why that is not what its table says.
fn judge(c: &Case, out: &serde_json::Value) -> Result<String, String> {
    let errno = out["errno"].as_i64().map(|e| e as i32);
    let name = |e: i32| std::io::Error::from_raw_os_error(e).to_string();
    // The call replaced the process (execveat): the pipe closed on exec, the exit is true's.
    let execd = out["empty"] == true && out["status"] == 0;
    match (c.without, errno) {
        (Without::Works { .. }, None) if out.get("ok").is_some() || execd => Ok("works".into()),
        (
            Without::Works {
                absent: Some((a, feature)),
            },
            Some(e),
        ) if e == a => {
            eprintln!(
                "\n!!!!!!!! NOTE: {}: this kernel lacks {feature} ({}): the case cannot be \
                 shown to work here; its proof is the jail's stop !!!!!!!!\n",
                c.label,
                name(e)
            );
            Ok(format!("absent here: {}", name(e)))
        }
        (Without::HostPrivilege, Some(e)) if e == libc::EPERM || e == libc::EACCES => {
            Ok(format!("host privilege: {}", name(e)))
        }
        (Without::Works { .. }, Some(e)) => Err(format!(
            "refused with no jail: errno {e} ({}): its arguments are wrong, or it needs a \
             privilege (then mark it host_privilege)",
            name(e)
        )),
        (Without::HostPrivilege, Some(e)) => Err(format!(
            "errno {e} ({}) with no jail, not the privilege check (EPERM, EACCES): its \
             arguments are wrong",
            name(e)
        )),
        (Without::HostPrivilege, None) if out.get("ok").is_some() => Err(
            "works with no jail, as uid 65534: it needs no host privilege (mark it as working)"
                .into(),
        ),
        _ => Err(format!("no result: {out}")),
    }
}

#[test]
fn every_table_case_works_or_reaches_a_host_privilege_check_without_the_jail() {
    if !crate::common::require_feature("x86_64 host", cfg!(target_arch = "x86_64")) {
        return;
    }
    let all = attacks::all();
    let cases: Vec<&Case> = all.iter().flat_map(|(_, t)| t.iter()).collect();
    // Every stop-only case is listed above, every listed one is a stop-only case, and each
    // names the syscalls whose stop is its proof.
    let marked: Vec<&str> = cases
        .iter()
        .filter(|c| matches!(c.without, Without::StopOnly(_)))
        .map(|c| c.label)
        .collect();
    let mut listed = STOP_ONLY.to_vec();
    let mut m = marked.clone();
    listed.sort_unstable();
    m.sort_unstable();
    m.dedup();
    assert_eq!(m, listed, "stop-only cases and STOP_ONLY differ");
    for c in cases.iter().filter(|c| marked.contains(&c.label)) {
        assert!(
            !c.stops.is_empty(),
            "{}: a stop-only case names its stop",
            c.label
        );
    }

    let run: Vec<&Case> = cases
        .iter()
        .copied()
        .filter(|c| !matches!(c.without, Without::StopOnly(_)))
        .collect();
    let code = program(&run);
    // The run needs a user namespace of its own, as the jail does.
    let mut probe = Command::new("/usr/bin/setpriv");
    if is_root() {
        probe.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
    }
    let userns = probe
        .args([
            "--",
            "unshare",
            "--user",
            "--map-root-user",
            "--",
            "/bin/true",
        ])
        .status()
        .is_ok_and(|s| s.success());
    if !crate::common::require_feature("unprivileged user namespaces for uid 65534", userns) {
        return;
    }
    // As uid 65534 when this process is root: never the host's root.
    // Under `timeout`: a case that stops the runner would hang it; HANG ends that.
    let mut cmd = Command::new("/usr/bin/timeout");
    cmd.args(["-s", "KILL", &crate::common::HANG.as_secs().to_string()]);
    if is_root() {
        cmd.args([
            "/usr/bin/setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
        ]);
    }
    cmd.args([
        "unshare",
        "--user",
        "--map-root-user",
        "--mount",
        "--net",
        "--uts",
        "--ipc",
        "--pid",
        "--fork",
        "--mount-proc",
        "--",
        PY,
        "-I",
        "-S",
        "-c",
        &code,
    ]);
    cmd.current_dir("/");
    let out = cmd.output().expect("run the control run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.lines().last() == Some("DONE"),
        "the control run did not finish: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    let mut results = std::collections::HashMap::new();
    for l in stdout.lines().filter(|l| l.starts_with('{')) {
        let v: serde_json::Value = serde_json::from_str(l).expect("a result line");
        results.insert(v["i"].as_u64().expect("an index"), v);
    }
    let mut failures = Vec::new();
    for (i, c) in run.iter().enumerate() {
        let Some(out) = results.get(&(i as u64)) else {
            failures.push(format!("{}: no result", c.label));
            continue;
        };
        match judge(c, out) {
            Ok(how) => eprintln!("{}: {how}", c.label),
            Err(why) => failures.push(format!("{}: {why} ({out})", c.label)),
        }
    }
    assert!(
        failures.is_empty(),
        "table cases that would be refused in the jail whatever its controls did:\n{}",
        failures.join("\n")
    );
}
