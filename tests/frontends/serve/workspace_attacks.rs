//! The escape-test suite run through `workspace_exec`, as root and as nobody: every payload
//! of the jail suites' shared tables (tests/common/attacks.rs, the same cases redteam.rs and
//! python_attacks.rs run through `agentjail exec`) as Python, half of them as `python3 -c`
//! and half as a script put into /workspace, then shell lines that attack the jail with the
//! host's own tools. Each is a real attempt whose success fails the test, and each must end
//! in the specific denial it names: a stop on one of its syscalls (the workspace ends, its
//! record says which), or the errno or message of the refusal (the command goes on).
//!
//! Not here, because a workspace does not apply it: the static check (a workspace's
//! commands are not checked; the jail is the boundary). The process-creation cases are no
//! attack in a workspace (fork and exec are what a shell is for, bounded by the pids limit:
//! the fork bomb below) and are left out by name (attacks::PROCESS_SPAWN).

use super::workspace::{close, out, policy, put, start};
use crate::common::serve::{live_with, record, Conn, Server};
use crate::common::{self, attacks, variants, Who};
use serde_json::{json, Value};

/// What a payload may end in; anything else (BREACH, no marker, another stop or error)
/// fails the test.
#[derive(Clone, Copy, Debug)]
enum Denial {
    /// The workspace ended on a forbidden syscall, one of these.
    Stop(&'static [&'static str]),
    /// The command went on, and its output (stdout and stderr) says this.
    Says(&'static str),
}

/// Errnos that are a refusal of the call itself (the seccomp filter's EPERM for the
/// policy's errno_syscalls, the kernel's EPERM/EACCES for a capability or a permission the
/// jail does not have), as `attempt` prints them: `BLOCKED <label> <type> <errno>`. Every
/// table case works with no jail (tests/jail/controls.rs), except the host-privilege ones
/// (`Without::HostPrivilege`), which get EPERM there too: workspace.toml lists most of
/// those in its errno_syscalls, so here their EPERM may be the filter's or the missing
/// capability's, both the jail's; the `exec` suites require their stop. A command's stdio
/// are pipes, never a terminal: ENOTTY for the terminal ioctls is the jail's too.
const REFUSED_ERRNOS: &[(i32, &str)] = &[(1, "EPERM"), (13, "EACCES")];

/// The record of one exec; a dead workspace is replaced by a new one.
struct Ws<'a> {
    c: &'a mut Conn,
    id: String,
    n: usize,
}

impl Ws<'_> {
    fn exec(&mut self, req: Value) -> Value {
        let mut req = req;
        req["op"] = json!("workspace_exec");
        req["workspace"] = json!(self.id);
        self.n += 1;
        let rec = record(&self.c.call(req)).clone();
        if rec["workspace"]["ended"] == true {
            close(self.c, &self.id);
            self.id = start(self.c);
        }
        rec
    }

    /// `code` as `python3 -c` or as a script put into /workspace (every other call).
    fn python(&mut self, code: &str) -> Value {
        if self.n.is_multiple_of(2) {
            self.exec(json!({"argv": ["python3", "-c", code]}))
        } else {
            let r = put(
                self.c,
                &self.id,
                json!([{"path": "attack.py", "content": code}]),
            );
            assert!(r["files"].is_array(), "put: {r}");
            self.exec(json!({"argv": ["python3", "attack.py"]}))
        }
    }
}

/// Whether `rec` ended in one of `denials`; what it ended in, or why it fails.
fn judge(rec: &Value, denials: &[Denial], start_marker: &str) -> Result<String, String> {
    let stdout = out(rec);
    let stderr = rec["execution"]["stderr"].as_str().unwrap_or("");
    let reason = rec["stop_reason"].as_str().unwrap_or("");
    if stdout.contains("BREACH") {
        return Err("BREACH".into());
    }
    if rec["workspace"]["ended"] == true {
        let name = reason.strip_prefix("code_forbidden_syscall:").unwrap_or("");
        let ok = denials
            .iter()
            .any(|d| matches!(d, Denial::Stop(names) if names.contains(&name)));
        // The stop names the attack's own syscall, which neither the runner, the shell nor
        // the interpreter's start makes, and what the payload printed before it is in the
        // record (the runner forwards it before the jail ends: docs/SECURITY.md,
        // "Workspaces").
        return match (ok, stdout.contains(start_marker)) {
            (true, true) => Ok(format!("stopped: {reason}")),
            (true, false) => Err(format!(
                "stopped: {reason}, but its output before the stop is lost"
            )),
            (false, _) => Err(format!("the workspace ended: {reason}")),
        };
    }
    if !stdout.contains(start_marker) {
        return Err(format!(
            "the payload did not run (no {start_marker}): {reason}"
        ));
    }
    let all = format!("{stdout}\n{stderr}");
    for d in denials {
        if let Denial::Says(text) = d {
            if all.contains(text) {
                return Ok(format!("refused: {text}"));
            }
        }
    }
    Err(format!("no denial it names, {reason}"))
}

/// The seccomp filter's answer to an ioctl request outside its list (seccomp.rs).
const ENOTTY: (i32, &str) = (25, "ENOTTY");

/// One table case: its stop, or its `attempt` line with a refusing errno.
fn judge_case(rec: &Value, table: &str, case: &common::Case) -> Result<String, String> {
    let blocked = out(rec)
        .lines()
        .find(|l| l.starts_with(&format!("BLOCKED {} ", case.label)))
        .map(str::to_string);
    if rec["workspace"]["ended"] != true && !out(rec).contains("BREACH") {
        let errno: Option<i32> = blocked
            .as_deref()
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|e| e.parse().ok());
        let ioctls = [ENOTTY];
        let mut refused = REFUSED_ERRNOS
            .iter()
            .chain(ioctls.iter().filter(|_| table == "STDIO_IOCTLS"));
        return match refused.find(|(e, _)| Some(*e) == errno) {
            Some((_, name)) if out(rec).contains("ATTEMPT") => Ok(format!("refused: {name}")),
            _ => Err(format!(
                "not refused: {blocked:?}, {}",
                rec["stop_reason"].as_str().unwrap_or("")
            )),
        };
    }
    judge(rec, &[Denial::Stop(case.stops)], "ATTEMPT")
}

fn server(who: Who, tag: &str) -> (Server, String) {
    let m = common::marker(tag);
    let p = policy(&m, "16MiB", 1024);
    let s = Server::start(who, &p, &m, &["--pool", "1", "--session-pool", "2"]);
    (s, m)
}

#[test]
fn the_jail_suites_payloads_are_contained_in_a_workspace() {
    // Every name in PROCESS_SPAWN is a case of the tables: the list cannot go stale.
    let all = attacks::all();
    for label in attacks::PROCESS_SPAWN {
        assert!(
            all.iter().any(|(_, t)| t.iter().any(|c| c.label == *label)),
            "{label}"
        );
    }
    if !common::require_feature("x86_64 host", cfg!(target_arch = "x86_64")) {
        return;
    }
    let mut failures = Vec::new();
    for who in variants() {
        let (mut s, _) = server(who, "ws-tables");
        let c = s.io();
        let id = start(c);
        let mut ws = Ws { c, id, n: 0 };
        for (table, cases) in &all {
            for case in cases
                .iter()
                .filter(|c| !attacks::PROCESS_SPAWN.contains(&c.label))
            {
                let code = format!(
                    "{}\n{}\nprint(\"ATTEMPT\", flush=True)\nattempt({:?}, lambda: {})\n",
                    common::PRELUDE,
                    attacks::SYSC,
                    case.label,
                    case.call
                );
                let rec = ws.python(&code);
                match judge_case(&rec, table, case) {
                    Ok(how) => eprintln!("{who:?} {table} {}: {how}", case.label),
                    Err(why) => {
                        failures.push(format!("{who:?} {table} {}: {why}: {rec:#}", case.label))
                    }
                }
            }
        }
        let id = ws.id.clone();
        close(s.io(), &id);
        s.finish();
    }
    common::assert_all_blocked(&failures);
}

/// Shell lines: the host's own tools turned on the jail. `HOST_FILE` and `AGENTJAIL` are
/// replaced by a file of the test's and by the agentjail binary's path on the host.
const SHELL: &[(&str, &str, &[Denial])] = &[
    (
        "unshare a user namespace",
        "unshare -U -r id -u 2>&1 && echo BREACH",
        &[
            Denial::Stop(&["unshare"]),
            Denial::Says("unshare failed: Operation not permitted"),
        ],
    ),
    (
        "unshare a mount namespace",
        "unshare -m true 2>&1 && echo BREACH",
        &[
            Denial::Stop(&["unshare"]),
            Denial::Says("unshare failed: Operation not permitted"),
        ],
    ),
    (
        "enter init's namespaces",
        "nsenter -t 1 -m -u -i -n -p true 2>&1 && echo BREACH",
        &[Denial::Stop(&["setns"]), Denial::Says("Permission denied")],
    ),
    (
        "enter its own mount namespace again (setns)",
        "nsenter --mount=/proc/self/ns/mnt true 2>&1 && echo BREACH",
        &[
            Denial::Stop(&["setns"]),
            Denial::Says("Operation not permitted"),
        ],
    ),
    (
        "chroot into /workspace",
        "mkdir -p r/bin && /usr/sbin/chroot r /bin/true 2>&1 && echo BREACH",
        &[
            Denial::Stop(&["chroot"]),
            Denial::Says("cannot change root directory to 'r': Operation not permitted"),
        ],
    ),
    (
        "read the host's secrets",
        "cat /etc/shadow /root/.profile /home/*/.ssh/id_rsa AGENTJAIL HOST_FILE 2>&1 | \
         grep -v 'No such file or directory' && echo BREACH; ls -d /root /home /var /run 2>&1",
        &[Denial::Says(
            "ls: cannot access '/run': No such file or directory",
        )],
    ),
    (
        "reach a host file through /proc/self/cwd and /proc/self/root",
        "cd /proc/self/cwd/../../../.. && cat ./HOST_FILE /proc/self/root/../../HOST_FILE 2>&1 \
         | grep -q 'ws host secret' && echo BREACH; cat /proc/self/cwd/../..HOST_FILE 2>&1",
        &[Denial::Says("No such file or directory")],
    ),
    (
        "list init's root",
        "ls /proc/1/root/ 2>&1 && echo BREACH",
        &[Denial::Says(
            "cannot access '/proc/1/root/': Permission denied",
        )],
    ),
    (
        "read init's memory and environment",
        "cat /proc/1/environ /proc/1/mem 2>&1 | grep -v 'Permission denied' && echo BREACH; \
         cat /proc/1/mem 2>&1",
        &[Denial::Says("/proc/1/mem: Permission denied")],
    ),
    (
        "write the host's /usr",
        "touch /usr/ajbreach /usr/bin/ajbreach 2>&1 && echo BREACH",
        &[Denial::Says(
            "cannot touch '/usr/ajbreach': Read-only file system",
        )],
    ),
    (
        "write /etc",
        "echo x >> /etc/passwd 2>&1 && echo BREACH; echo x > /etc/ajbreach",
        &[Denial::Says("Read-only file system")],
    ),
    (
        "the sysrq trigger",
        "echo c > /proc/sysrq-trigger && echo BREACH",
        // Not in the jail's /proc at all (dash words ENOENT on the way so).
        &[Denial::Says("cannot create /proc/sysrq-trigger")],
    ),
    (
        "device nodes",
        "mknod mem c 1 1 2>&1 && echo BREACH; mkfifo f 2>&1 && echo BREACH; \
         cat /dev/mem /dev/kmsg /dev/sda 2>&1 | grep -v 'No such file' && echo BREACH; true",
        &[Denial::Says("mknod: mem: Operation not permitted")],
    ),
    (
        "the kernel log",
        "dmesg 2>&1 && echo BREACH",
        &[
            Denial::Stop(&["syslog"]),
            Denial::Says("dmesg: read kernel buffer failed: Operation not permitted"),
        ],
    ),
    (
        "the hostname",
        "hostname ajbreach 2>&1 && echo BREACH",
        &[
            Denial::Stop(&["sethostname"]),
            Denial::Says("hostname: you must be root to change the host name"),
        ],
    ),
    (
        "an abstract unix socket to the host",
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); \
         s.connect(b'\\0/org/freedesktop/systemd1/notify'); print('BREACH')\" 2>&1",
        &[Denial::Says(
            "PermissionError: [Errno 1] Operation not permitted",
        )],
    ),
    (
        "the host's sshd and DNS",
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', 22), 2); \
         print('BREACH')\" 2>&1; python3 -c \"import socket; \
         socket.create_connection(('1.1.1.1', 53), 2); print('BREACH')\" 2>&1",
        &[Denial::Says(
            "PermissionError: [Errno 1] Operation not permitted",
        )],
    ),
    (
        "SIGKILL to init",
        "kill -9 1 2>&1; sleep 0.2; kill -0 1 && echo init-lives",
        &[Denial::Says("init-lives")],
    ),
];

#[test]
fn shell_lines_that_attack_the_jail_are_contained_in_a_workspace() {
    let host_file = common::shared_file(
        &format!("ws-host-{}.txt", std::process::id()),
        "ws host secret\n",
    );
    let hf = host_file.display().to_string();
    let aj = common::agentjail_path().display().to_string();
    let mut failures = Vec::new();
    for who in variants() {
        let (mut s, _) = server(who, "ws-shell");
        let c = s.io();
        let id = start(c);
        let mut ws = Ws { c, id, n: 0 };
        for (label, line, denials) in SHELL {
            let line = line.replace("HOST_FILE", &hf).replace("AGENTJAIL", &aj);
            let rec = ws.exec(json!({"command": format!("echo ATTEMPT; {line}")}));
            match judge(&rec, denials, "ATTEMPT") {
                Ok(how) => eprintln!("{who:?} {label}: {how}"),
                Err(why) => failures.push(format!("{who:?} {label}: {why}: {rec:#}")),
            }
        }
        let id = ws.id.clone();
        close(s.io(), &id);
        s.finish();
    }
    for p in ["/usr/ajbreach", "/usr/bin/ajbreach", "/etc/ajbreach"] {
        assert!(!std::path::Path::new(p).exists(), "{p} was written");
    }
    common::assert_all_blocked(&failures);
}

/// A fork bomb (against the pids limit), a memory balloon (against the memory cap) and
/// `kill -9 -1` (every process the command may signal), each in a workspace of one
/// connection while another connection's workspace runs a background process: each ends
/// in its own limit or its own workspace, the record says which, and the bystander, its
/// process and its files, and the server live on.
#[test]
fn bombs_and_kill_minus_one_end_only_their_own_workspace() {
    for who in variants() {
        let m = common::marker("ws-bombs");
        let p = policy(&m, "16MiB", 1024);
        let dir = crate::common::serve::scratch("ws-bombs");
        let sock = dir.path().join("s.sock").display().to_string();
        let s = Server::start(
            who,
            &p,
            &m,
            &["--pool", "1", "--session-pool", "2", "--socket", &sock],
        );
        let mut a = s.connect("a");
        let mut b = s.connect("b");
        let wb = start(&mut b);
        let tag = format!("{}", 4000 + std::process::id() % 5000);
        let r = b.call_background(
            json!({"op": "workspace_exec", "workspace": wb, "background": true,
            "command": format!("echo kept > k.txt; sleep {tag}.3 >/dev/null 2>&1 &")}),
        );
        assert_eq!(record(&r)["stop_reason"], "success", "{r}");
        // The call returns when the shell exits: its background child may still be on its
        // way to exec (at most 5 s).
        let t = std::time::Instant::now();
        while live_with(&format!("{tag}.3")).is_empty() && t.elapsed().as_secs() < 5 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(live_with(&format!("{tag}.3")).len(), 1);

        let wa = start(&mut a);
        let rec = record(&a.call(json!({"op": "workspace_exec", "workspace": wa,
            "command": "echo ATTEMPT; kill -9 -1; echo BREACH survived"})))
        .clone();
        // Every process it may signal is its own jail's, the runner included: its
        // workspace ends, and the record says so.
        assert!(!out(&rec).contains("BREACH"), "{rec:#}");
        assert_eq!(rec["stop_reason"], "code_killed:SIGKILL", "{rec:#}");
        assert_eq!(rec["workspace"]["ended"], true, "{rec:#}");
        assert_eq!(
            rec["workspace"]["ended_reason"], "code_killed:SIGKILL",
            "{rec:#}"
        );
        let r = sh_rec(&mut a, &wa, "true");
        assert_eq!(r["stop_reason"], "invalid_request:workspace_ended", "{r:#}");

        // Bounded by the pids limit (its forks fail), stopped at its timeout or by the
        // shell's own refused fork; nothing of it is left in the workspace, which lives on.
        let wa = start(&mut a);
        let rec = record(
            &a.call(json!({"op": "workspace_exec", "workspace": wa,
            "command": "echo ATTEMPT; b() { b | b & }; b; sleep 30; echo BREACH", "timeout_s": 3})),
        )
        .clone();
        assert!(!out(&rec).contains("BREACH"), "{rec:#}");
        // At its timeout, or sooner when the shell's own fork of `sleep` is refused too.
        let reason = rec["stop_reason"].as_str().unwrap_or("");
        assert!(
            matches!(reason, "code_timeout" | "code_runtime_error:2"),
            "{rec:#}"
        );
        let stderr = rec["execution"]["stderr"].as_str().unwrap_or("");
        assert!(stderr.contains("Cannot fork"), "the pids limit: {rec:#}");
        assert_eq!(rec["workspace"]["ended"], false, "{rec:#}");
        // Killed, not yet reaped by init, they may linger a moment: waited for (at most 5 s,
        // a cleanup guarantee) from inside, until only init, the runner and this python live.
        let after = record(&a.call(json!({"op": "workspace_exec", "workspace": wa,
            "argv": ["python3", "-c", LIVE_IN_THE_JAIL]})))
        .clone();
        assert_eq!(
            out(&after),
            "3\n",
            "init, the runner and the checker only: {after:#}"
        );

        // Past the memory cap: the cgroup's OOM kill (code_memory_limit) where the memory
        // cgroup is enforced, else RLIMIT_AS (MemoryError).
        let wa = start(&mut a);
        let rec = record(&a.call(json!({"op": "workspace_exec", "workspace": wa,
            "argv": ["python3", "-c", "print('ATTEMPT', flush=True)\nb = bytearray(2 << 30)\nprint('BREACH')"]})))
        .clone();
        assert!(!out(&rec).contains("BREACH"), "{rec:#}");
        let cgroup_memory = rec["enforcement"].as_array().is_some_and(|a| {
            a.iter()
                .any(|c| c["control"] == "cgroup_memory" && c["state"] == "enforced")
        });
        if cgroup_memory {
            assert_eq!(rec["stop_reason"], "code_memory_limit", "{rec:#}");
        } else {
            assert_eq!(rec["stop_reason"], "code_runtime_error:1", "{rec:#}");
            let stderr = rec["execution"]["stderr"].as_str().unwrap_or("");
            assert!(stderr.contains("MemoryError"), "{rec:#}");
        }
        eprintln!("{who:?}: the balloon ended in {}", rec["stop_reason"]);

        // The bystander, its file and its background process, and the server.
        let rec = sh_rec(&mut b, &wb, "cat k.txt");
        assert_eq!(out(&rec), "kept\n", "{rec:#}");
        assert_eq!(live_with(&format!("{tag}.3")).len(), 1);
        assert!(b.stats()["workspaces"].as_u64() >= Some(1));
        a.close();
        b.close();
        s.finish();
    }
}

/// How many processes of the jail are not zombies, once at most 3 are or 5 s passed.
const LIVE_IN_THE_JAIL: &str = r#"
import os, time
def live():
    n = 0
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            state = open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        n += state not in ("Z", "X")
    return n
for _ in range(100):
    if live() <= 3:
        break
    time.sleep(0.05)
print(live())
"#;

fn sh_rec(c: &mut Conn, ws: &str, command: &str) -> Value {
    record(&c.call(json!({"op": "workspace_exec", "workspace": ws, "command": command}))).clone()
}

/// put and get while a background command flips the path's directory between a real one
/// and a symlink to a host directory the jail user could write (a race, not a link planted
/// before the call): every put lands in /workspace or is refused, no get reads the host's
/// file, and the host directory is as it was.
#[test]
fn put_and_get_racing_a_symlink_flip_stay_in_the_workspace() {
    for who in variants() {
        let (mut s, _) = server(who, "ws-race");
        let c = s.io();
        let ws = start(c);
        let victim = crate::common::serve::scratch("ws-race-victim");
        let vd = victim.path().display().to_string();
        std::fs::write(victim.path().join("x"), "host data\n").unwrap();
        let r = c.call_background(
            json!({"op": "workspace_exec", "workspace": ws, "background": true,
            "command": format!("while :; do mkdir d 2>/dev/null; echo inside > d/x 2>/dev/null; \
                rm -rf d; ln -s {vd} d; rm -f d; done >/dev/null 2>&1 &")}),
        );
        assert_eq!(record(&r)["stop_reason"], "success", "{r}");
        let (mut landed, mut refused, mut read) = (0, 0, 0);
        for i in 0..150 {
            let r = put(
                c,
                &ws,
                json!([{"path": "d/x", "content": format!("put{i}\n")}]),
            );
            if r["files"].is_array() {
                landed += 1;
            } else {
                assert!(r["error"]["code"].is_string(), "{r}");
                refused += 1;
            }
            let r = c.call(json!({"op": "workspace_get", "workspace": ws, "paths": ["d/x"]}));
            let f = &r["files"][0];
            if let Some(b64) = f["content_base64"].as_str() {
                use base64::Engine as _;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .unwrap();
                assert_ne!(bytes, b"host data\n", "a get read the host's file: {r}");
                read += 1;
            } else {
                assert!(f["error"].is_string(), "{r}");
            }
        }
        eprintln!("{who:?}: {landed} puts landed, {refused} refused, {read} gets read");
        let names: Vec<_> = std::fs::read_dir(victim.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["x"], "a put wrote into the host directory");
        assert_eq!(
            std::fs::read_to_string(victim.path().join("x")).unwrap(),
            "host data\n"
        );
        close(c, &ws);
        s.finish();
    }
}
