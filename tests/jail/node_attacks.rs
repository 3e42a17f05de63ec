//! The jail attacks of `python_attacks`, from node: every attack there that is not
//! Python-specific (raw syscalls through ctypes, machine code, os.mknod/os.memfd_create,
//! terminal ioctls have no node API), run through the real `agentjail exec -- /usr/bin/node
//! -e ...` as root and as nobody. The attacks whose payloads are the same in both languages
//! are rows of `twins` (which runs them through [`node`] here); what stays here differs in
//! its shape (a memory limit node needs, `child_process`, node's flags). The static check is not in the way here (exec runs no
//! check) and node runs WITHOUT its hardening flags, so the jail alone is under test: fs,
//! child_process and net are all reachable from the program.
//!
//! Every payload first prints START (a jail that never started cannot pass), then prints
//! `BREACH ...` when an attack succeeds and `BLOCKED ...` when it fails; a BREACH line fails
//! the test. The runs use tests/policies/javascript.toml (the default policy plus the
//! `javascript` syscall group, cgroups best-effort) and variants of it with process_spawn or
//! network added, each copied where nobody can read it.
//!
//! `--memory-limit 1GiB` on every run: exec gives node no address-space headroom of its own
//! (`agentjail run` does), and without a memory cgroup (nobody, no delegation) RLIMIT_AS is
//! the memory limit; V8 reserves ~736MiB at start.

use crate::common::*;
use std::sync::OnceLock;
use std::time::Duration;

const NODE: &str = "/usr/bin/node";
const JS_POLICY: &str = include_str!("../policies/javascript.toml");

/// Which test policy a run uses.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The default groups plus `javascript`: no process creation, no sockets.
    Plain,
    /// Plus `process_spawn` (fork bombs, orphans, setuid binaries).
    Spawn,
    /// Plus `network` (sockets allowed; the empty network namespace is the control).
    Net,
}

fn policy(kind: Kind) -> String {
    static P: OnceLock<[String; 3]> = OnceLock::new();
    let paths = P.get_or_init(|| {
        let with = |group: &str| {
            let text = JS_POLICY.replace(
                "\"javascript\",\n]",
                &format!("\"javascript\", \"{group}\",\n]"),
            );
            assert_ne!(
                text, JS_POLICY,
                "tests/policies/javascript.toml changed shape"
            );
            text
        };
        [
            shared_file("js-attacks-plain.toml", JS_POLICY),
            shared_file("js-attacks-spawn.toml", &with("process_spawn")),
            shared_file("js-attacks-net.toml", &with("network")),
        ]
        .map(|p| p.display().to_string())
    });
    paths[kind as usize].clone()
}

/// Helpers every payload starts with: the START marker and `attempt(name, fn)`, which prints
/// BREACH when `fn` returns and BLOCKED with the error code when it throws.
const PRELUDE: &str = r#"
const fs = require('fs');
console.log('START');
function attempt(name, fn) {
  let r;
  try { r = fn(); } catch (e) { console.log('BLOCKED', name, e.code || e.name || String(e)); return false; }
  let text;
  try { text = JSON.stringify(r); } catch { text = String(r); }
  console.log('BREACH', name, String(text).slice(0, 200));
  return true;
}
"#;

/// node -e PRELUDE+body in the jail under `kind`'s policy, with `flags` for exec.
pub(crate) fn node(who: Who, kind: Kind, flags: &[&str], body: &str) -> Run {
    node_launch(who, kind, flags, body, Launch::default())
}

fn node_launch(who: Who, kind: Kind, flags: &[&str], body: &str, l: Launch<'_>) -> Run {
    let mut all: Vec<String> = vec!["--policy".into(), policy(kind)];
    if !flags.contains(&"--memory-limit") {
        all.extend(["--memory-limit".to_string(), "1GiB".to_string()]);
    }
    all.extend(flags.iter().map(|s| s.to_string()));
    let code = format!("{PRELUDE}\n{body}");
    launch(
        who,
        Launch {
            flags: all,
            record: true,
            ..l
        },
        &[NODE, "-e", &code],
    )
}

/// Each case in its own jail run (a forbidden syscall ends the run), as every launch variant.
fn each_blocked(kind: Kind, cases: &[(&str, &str, &[&str])]) {
    let mut failures = Vec::new();
    for who in variants() {
        for (label, call, stops) in cases {
            let body = format!("console.log('ATTEMPT');\nattempt({label:?}, () => {call});\n");
            let r = node(who, kind, &["--time-limit", "5"], &body);
            note_blocked(&mut failures, label, who, &r, stops, false);
        }
    }
    assert_all_blocked(&failures);
}

// ---------------------------------------------------------------- network

/// A loopback listener the test opens on the host: node cannot reach it, whether socket()
/// is refused (the default groups: the run stops on it) or allowed (the network group: the
/// jail's network namespace has only a down loopback).
#[test]
fn host_loopback_tcp_listener_is_unreachable_from_node() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    for who in variants() {
        for kind in [Kind::Plain, Kind::Net] {
            for host in ["127.0.0.1", "localhost", "::1"] {
                let body = r#"
const net = require('net');
console.log('ATTEMPT');
const s = net.connect({ host: '@HOST@', port: @PORT@ });
s.setTimeout(2000, () => { console.log('BLOCKED tcp timeout'); s.destroy(); });
s.on('connect', () => { console.log('BREACH tcp connected', s.remoteAddress); s.end('hello'); });
s.on('error', (e) => console.log('BLOCKED tcp', e.code));
"#
                .replace("@HOST@", host)
                .replace("@PORT@", &port.to_string());
                let r = node(who, kind, &["--time-limit", "5"], &body);
                // Plain: socket() is outside the allowlist and ends the run. Net: socket()
                // is allowed for AF_INET/AF_INET6 only, so a resolver's socket of another
                // family ends it too ("localhost"); else node reports the refused connect.
                if kind == Kind::Plain || r.forbidden().is_some() {
                    r.assert_stopped_on("ATTEMPT", &["socket"]);
                } else {
                    r.assert_blocked("ATTEMPT");
                }
                match l.accept() {
                    Ok((_, peer)) => panic!("node reached the host listener from {peer}: {r:#?}"),
                    Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock),
                }
            }
        }
    }
}

// ---------------------------------------------------------------- bombs

#[test]
fn child_process_fork_bomb_ends_and_leaves_nothing() {
    for who in variants() {
        let m = marker("jsforkbomb");
        // Each child is `sleep` under a marked argv0; spawn is retried as fast as node can.
        let body = r#"
const { spawn } = require('child_process');
function bomb() {
  for (let i = 0; i < 16; i++) {
    try { spawn('/usr/bin/sleep', ['1000'], { argv0: '@M@', stdio: 'ignore' }).on('error', () => {}); } catch {}
  }
  setImmediate(bomb);
}
bomb();
"#
        .replace("@M@", &m);
        let needle = m.clone();
        let probe = std::thread::spawn(move || {
            // The host can still start processes while the bomb runs: wait (by looking, not
            // by a sleep that could miss it) until the bomb has spawned, then start one.
            let t = std::time::Instant::now();
            while host_pids_with(&needle).len() < 8 {
                if t.elapsed() > HANG {
                    return Ok(false);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            std::process::Command::new("/bin/true")
                .status()
                .map(|s| s.success())
        });
        let r = node(who, Kind::Spawn, &["--time-limit", "2"], &body);
        assert!(
            matches!(probe.join().unwrap(), Ok(true)),
            "host could not fork during the bomb"
        );
        r.assert_ran("START");
        assert_eq!(r.code, 124, "{r:#?}");
        let reason = r.stop_reason().unwrap_or_default();
        assert!(
            [
                "code_timeout",
                "code_pids_limit",
                "code_cpu_limit",
                "code_memory_limit"
            ]
            .contains(&reason),
            "{r:#?}"
        );
        assert!(r.wall < HANG, "{r:#?}");
        let left = survivors(&m, Duration::from_secs(2));
        assert!(
            left.is_empty(),
            "fork bomb processes survive on the host: {left:?}"
        );
    }
}

#[test]
fn default_groups_stop_child_process_creation() {
    let body = r#"
console.log('ATTEMPT');
attempt('spawnSync /bin/true', () => require('child_process').spawnSync('/bin/true', { stdio: 'ignore' }).status);
"#;
    for who in variants() {
        let r = node(who, Kind::Plain, &["--time-limit", "5"], body);
        r.assert_stopped_on("ATTEMPT", &["clone", "fork", "vfork"]);
    }
}

#[test]
fn node_memory_bomb_is_stopped() {
    let body = r#"
const hold = [];
for (let i = 0; i < 1024; i++) {
  hold.push(Buffer.alloc(8 << 20, 1));
  console.log('HELD', (i + 1) * 8);
}
console.log('BREACH held 8GiB');
"#;
    for who in variants() {
        // As root the memory cgroup is the limit (the address-space rlimit is dropped), so a
        // small one; as nobody RLIMIT_AS is, and node needs ~736MiB of it to start.
        let limit: u64 = if who == Who::Root { 256 } else { 1024 };
        let limit_flag = format!("{limit}MiB");
        let r = node(
            who,
            Kind::Plain,
            &["--memory-limit", &limit_flag, "--time-limit", "10"],
            body,
        );
        r.assert_ran("START");
        assert!(!r.stdout.contains("BREACH"), "{r:#?}");
        let held: u64 = r
            .stdout
            .lines()
            .filter_map(|l| l.strip_prefix("HELD ")?.parse().ok())
            .max()
            .unwrap_or(0);
        assert!(
            held <= limit,
            "held {held}MiB under a {limit}MiB limit: {r:#?}"
        );
        let stopped = r.code == 124 && r.stop_reason() == Some("code_memory_limit");
        // Without a memory cgroup: V8 or Buffer.alloc fails on the address-space limit
        // (RangeError → exit 1, or V8's fatal OOM → SIGABRT/SIGTRAP).
        let died = who != Who::Root && r.code != 0;
        assert!(stopped || died, "{r:#?}");
    }
}

// ---------------------------------------------------------------- output floods

#[test]
fn node_output_floods_are_cut_at_the_cap() {
    for who in variants() {
        for (fd, reason) in [(1, "code_output_too_large"), (2, "code_stderr_too_large")] {
            let body =
                format!("const b = Buffer.alloc(65536, 65);\nfor (;;) fs.writeSync({fd}, b);\n");
            let r = node(
                who,
                Kind::Plain,
                &["--time-limit", "10", "--output-limit", "10000"],
                &body,
            );
            assert_eq!(r.code, 124, "{r:#?}");
            assert_eq!(r.stop_reason(), Some(reason), "{r:#?}");
            let passed = if fd == 1 {
                r.stdout_len
            } else {
                r.stderr_raw.len() - format!("agentjail: stopped: {reason}\n").len()
            };
            assert!(
                passed <= 10_000,
                "passed out {passed} bytes past a 10000 cap: {r:#?}"
            );
            assert!(r.wall < HANG, "{r:#?}");
        }
    }
}

// ---------------------------------------------------------------- signals, orphans, timeouts

#[test]
fn node_timeout_is_precise() {
    for who in variants() {
        let r = node(
            who,
            Kind::Plain,
            &["--time-limit", "1"],
            "setInterval(() => {}, 1000);\n",
        );
        r.assert_ran("START");
        assert_eq!(r.code, 124, "{r:#?}");
        assert_eq!(r.stop_reason(), Some("code_timeout"), "{r:#?}");
        let wall_ms = r.record.as_ref().unwrap()["execution"]["wall_ms"]
            .as_u64()
            .unwrap();
        // Never before the limit; the upper bounds leave room for a loaded CI machine
        // (scripts/bench measures the stop's latency, not this test).
        assert!(
            wall_ms >= 1000,
            "record wall_ms {wall_ms}: stopped before its limit"
        );
        assert!(r.wall < HANG, "timeout took {:?}", r.wall);
    }
}

// ---------------------------------------------------------------- namespaces, identity

/// node has no unshare or mount API; the tools node can start do, and are stopped.
#[test]
fn namespace_and_mount_tools_started_by_node_are_refused() {
    let spawn = |cmd: &str, args: &str| {
        format!(
            "require('child_process').spawnSync('{cmd}', {args}, {{ stdio: 'inherit' }}).status"
        )
    };
    let unshare = spawn("/usr/bin/unshare", "['-U', '/bin/true']");
    let mount = spawn("/usr/bin/mount", "['-t', 'tmpfs', 'none', '/tmp']");
    let mut failures = Vec::new();
    for who in variants() {
        for (label, call, stops) in [
            ("unshare -U", &unshare, &["unshare"][..]),
            // mount is setuid on the host (inert here: nosuid) and stops on its first
            // privileged call, whichever that is: any named stop is a block.
            ("mount tmpfs", &mount, &[][..]),
        ] {
            // The tool's own exit status is not a breach: only a namespace or a mount that
            // exists afterwards is. A refused tool exits non-zero or is stopped.
            let body = format!(
                "console.log('ATTEMPT');\nconst st = {call};\nconst m = fs.readFileSync('/proc/self/mountinfo', 'utf8');\nconsole.log(st === 0 ? 'BREACH {label} exit 0' : 'BLOCKED {label} exit ' + st);\nconsole.log(m.split('\\n').filter((l) => / \\/tmp /.test(l)).length > 1 ? 'BREACH stacked /tmp' : 'BLOCKED no-new-mount');\n"
            );
            let r = node(who, Kind::Spawn, &["--time-limit", "5"], &body);
            note_blocked(&mut failures, label, who, &r, stops, false);
        }
    }
    assert_all_blocked(&failures);
}

#[test]
fn node_identity_changes_are_refused() {
    each_blocked(
        Kind::Plain,
        &[
            ("setuid(0)", "process.setuid(0)", &["setuid"]),
            ("setgid(0)", "process.setgid(0)", &["setgid"]),
            ("setgroups([0])", "process.setgroups([0])", &["setgroups"]),
            (
                "seteuid(0)",
                "process.seteuid(0)",
                &["setresuid", "setreuid", "setuid"],
            ),
        ],
    );
}

#[test]
fn node_has_no_capabilities_a_seccomp_filter_and_no_new_privs() {
    let body = r#"
const st = Object.fromEntries(fs.readFileSync('/proc/self/status', 'utf8').split('\n').filter((l) => l.includes(':')).map((l) => [l.split(':')[0], l.slice(l.indexOf(':') + 1).trim()]));
for (const k of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) {
  console.log(BigInt('0x' + st[k]) === 0n ? 'BLOCKED ' + k : 'BREACH ' + k + '=' + st[k]);
}
console.log(st.NoNewPrivs === '1' ? 'BLOCKED nnp' : 'BREACH nnp');
console.log('SECCOMP', st.Seccomp);
console.log('GROUPS', JSON.stringify(st.Groups));
console.log('IDS', process.getuid(), process.geteuid(), process.getgid(), process.getegid(), JSON.stringify(process.getgroups()));
for (const f of ['uid_map', 'gid_map']) {
  const lines = fs.readFileSync('/proc/self/' + f, 'utf8').split('\n').filter((l) => l.trim()).map((l) => l.trim().split(/\s+/));
  console.log('MAP', f, JSON.stringify(lines));
  const ok = lines.length === 1 && lines[0][2] === '1' && lines[0][1] !== '0' && lines[0][0] === '1000';
  console.log((ok ? 'BLOCKED ' : 'BREACH ') + f);
}
"#;
    for who in variants() {
        let r = node(who, Kind::Plain, &[], body);
        r.assert_blocked("START");
        for k in [
            "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "nnp", "uid_map", "gid_map",
        ] {
            assert!(r.stdout.contains(&format!("BLOCKED {k}")), "{k}: {r:#?}");
        }
        assert!(
            r.stdout.contains("SECCOMP 2\n"),
            "no seccomp filter: {r:#?}"
        );
        // node's getgroups() appends the effective gid; the kernel's list is empty.
        assert!(
            r.stdout.contains("IDS 1000 1000 1000 1000 [1000]"),
            "{r:#?}"
        );
        assert!(r.stdout.contains("GROUPS \"\"\n"), "{r:#?}");
        if who != Who::Current {
            assert!(r.stdout.contains("[\"1000\",\"65534\",\"1\"]"), "{r:#?}");
        }
    }
}

#[test]
fn node_environment_hostname_and_dev_are_the_jails() {
    let secret = marker("jsenvleak");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    let body = r#"
console.log('ENV', JSON.stringify(Object.entries(process.env).sort()));
console.log('HOST', require('os').hostname());
let d;
try { d = JSON.stringify(fs.readdirSync('/dev').sort()); } catch (e) { d = 'denied ' + e.code; }
console.log('DEV', d);
for (const p of ['/dev/shm', '/dev/pts', '/dev/tty', '/dev/mem', '/dev/kmsg', '/dev/sda']) {
  attempt('open ' + p, () => fs.openSync(p, 'r'));
}
console.log('NULL', fs.writeSync(fs.openSync('/dev/null', 'w'), 'x'), fs.readSync(fs.openSync('/dev/urandom', 'r'), Buffer.alloc(8)));
"#;
    for who in variants() {
        let r = node_launch(
            who,
            Kind::Plain,
            &[],
            body,
            Launch {
                env: vec![("AGENTJAIL_SECRET".into(), secret.clone())],
                ..Default::default()
            },
        );
        r.assert_blocked("START");
        assert!(!r.stdout.contains(&secret[..]), "{r:#?}");
        assert!(
            r.stdout.contains(r#"ENV [["HOME","/tmp"],["LANG","C.UTF-8"],["PATH","/usr/local/bin:/usr/bin:/bin"]]"#),
            "{r:#?}"
        );
        assert!(r.stdout.contains("HOST agentjail\n"), "{r:#?}");
        assert!(!r.stdout.contains(&format!("HOST {host}\n")) || host == "agentjail");
        let dev_ok = r.stdout.contains(
            r#"DEV ["fd","full","null","random","stderr","stdin","stdout","urandom","zero"]"#,
        ) || r.stdout.contains("DEV denied EACCES");
        assert!(dev_ok, "{r:#?}");
        assert!(r.stdout.contains("NULL 1 8"), "{r:#?}");
    }
}

// ---------------------------------------------------------------- fds, exe

#[test]
fn node_inherits_no_fd_and_cannot_reach_agentjail() {
    use std::os::unix::fs::MetadataExt;
    let leak = tempfile::tempfile().unwrap();
    let meta = leak.metadata().unwrap();
    let aj = agentjail_path().display().to_string();
    let body = r#"
let leaked = [];
for (const fd of fs.readdirSync('/proc/self/fd')) {
  try { const s = fs.fstatSync(Number(fd)); if (s.ino === @INO@ && s.dev === @DEV@) leaked.push(fd); } catch {}
}
console.log(leaked.length ? 'BREACH leaked fd ' + leaked : 'BLOCKED no-leaked-fd');
const exe = fs.readlinkSync('/proc/self/exe');
console.log(exe === '/usr/bin/node' ? 'BLOCKED exe' : 'BREACH exe ' + exe);
attempt('open exe for write', () => fs.openSync('/proc/self/exe', 'r+'));
attempt('open /proc/1/exe for write', () => fs.openSync('/proc/1/exe', 'r+'));
attempt('reach agentjail', () => fs.readFileSync('@AJ@').subarray(0, 4));
attempt('reach agentjail dir', () => fs.readdirSync(require('path').dirname('@AJ@')));
const exes = [];
for (const p of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
  try { exes.push(fs.readlinkSync('/proc/' + p + '/exe')); } catch {}
}
const bad = exes.filter((e) => e.includes('agentjail'));
console.log(bad.length ? 'BREACH agentjail in jail ' + bad : 'BLOCKED no-agentjail');
"#
    .replace("@INO@", &meta.ino().to_string())
    .replace("@DEV@", &meta.dev().to_string())
    .replace("@AJ@", &aj);
    for who in variants() {
        let r = node_launch(
            who,
            Kind::Plain,
            &[],
            &body,
            Launch {
                leak_fd: Some((7, &leak)),
                ..Default::default()
            },
        );
        r.assert_blocked("START");
        for k in ["no-leaked-fd", "exe", "no-agentjail"] {
            assert!(r.stdout.contains(&format!("BLOCKED {k}")), "{k}: {r:#?}");
        }
    }
}

// ---------------------------------------------------------------- exit codes, signals

#[test]
fn node_exit_codes_follow_the_contract() {
    for who in variants() {
        let r = node(who, Kind::Plain, &[], "process.exit(3);\n");
        r.assert_ran("START");
        assert_eq!(r.code, 3, "{r:#?}");
        assert_eq!(r.stop_reason(), Some("code_runtime_error:3"), "{r:#?}");

        let r = node(who, Kind::Plain, &[], "throw new Error('boom');\n");
        assert_eq!(r.code, 1, "{r:#?}");
        assert!(r.stderr.contains("Error: boom"), "{r:#?}");

        let r = node(
            who,
            Kind::Plain,
            &[],
            "process.kill(process.pid, 'SIGKILL');\nconsole.log('ALIVE');\n",
        );
        r.assert_ran("START");
        assert_eq!(r.code, 137, "{r:#?}");
        assert_eq!(r.stop_reason(), Some("code_killed:SIGKILL"), "{r:#?}");
        assert!(!r.stdout.contains("ALIVE"), "{r:#?}");
    }
}

#[test]
fn setuid_binaries_started_by_node_do_not_elevate() {
    use std::os::unix::fs::PermissionsExt;
    let bins: Vec<&str> = [
        "/usr/bin/su",
        "/usr/bin/passwd",
        "/usr/bin/sudo",
        "/usr/bin/newgrp",
    ]
    .into_iter()
    .filter(|b| std::fs::metadata(b).is_ok_and(|m| m.permissions().mode() & 0o4000 != 0))
    .collect();
    if !require_feature("a setuid binary under /usr/bin", !bins.is_empty()) {
        return;
    }
    let mut failures = Vec::new();
    for who in variants() {
        for b in &bins {
            let body = r#"
const { spawn } = require('child_process');
console.log('ATTEMPT');
const p = spawn('@B@', [], { stdio: 'ignore' });
p.on('error', (e) => console.log('BLOCKED spawn', e.code));
setTimeout(() => {
  let uids = null;
  try { uids = fs.readFileSync('/proc/' + p.pid + '/status', 'utf8').split('\n').find((l) => l.startsWith('Uid:')).split(/\s+/).slice(1); } catch {}
  console.log(uids && uids.includes('0') ? 'BREACH @B@ uids ' + uids : 'BLOCKED @B@ ' + uids);
  try { p.kill('SIGKILL'); } catch {}
}, 50);
"#
            .replace("@B@", b);
            let r = node(who, Kind::Spawn, &["--time-limit", "10"], &body);
            match r.blocked_how("ATTEMPT", &[], false) {
                Ok(how) => eprintln!("{b} ({who:?}): blocked: {how}"),
                Err(why) => failures.push(format!(
                    "{b} ({who:?}): {why}: code {} reason {:?} stdout {:?}",
                    r.code,
                    r.stop_reason(),
                    r.stdout
                )),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------- node's own flags, in the jail

/// The default policy's node flags hold inside the jail (defence in depth on top of it):
/// the permission model refuses files, child processes and native bindings; strings do not
/// compile; `__proto__` throws; there is no WebAssembly and no fetch.
#[test]
fn node_hardening_flags_hold_in_the_jail() {
    let flags = agentjail_engine::policy::DEFAULT_NODE_ARGS;
    let body = r#"
attempt('read /etc/passwd', () => fs.readFileSync('/etc/passwd', 'utf8'));
attempt('write /tmp', () => fs.writeFileSync('/tmp/x', 'x'));
attempt('child_process', () => require('child_process').spawnSync('/bin/true').status);
attempt('process.binding', () => typeof process.binding('fs'));
attempt('eval', () => eval('1 + 1'));
attempt('new Function', () => new Function('return 1')());
attempt('__proto__', () => ({}).__proto__ === Object.prototype);
console.log(typeof WebAssembly === 'undefined' ? 'BLOCKED wasm' : 'BREACH wasm');
console.log(typeof fetch === 'undefined' ? 'BLOCKED fetch' : 'BREACH fetch');
"#;
    for who in variants() {
        let code = format!("{PRELUDE}\n{body}");
        let mut cmd = vec![NODE];
        cmd.extend(flags.iter().copied());
        cmd.extend(["-e", &code]);
        let r = launch(
            who,
            Launch {
                flags: vec![
                    "--policy".into(),
                    policy(Kind::Plain),
                    "--memory-limit".into(),
                    "1GiB".into(),
                ],
                record: true,
                ..Default::default()
            },
            &cmd,
        );
        r.assert_blocked("START");
        for k in [
            "read /etc/passwd ERR_ACCESS_DENIED",
            "write /tmp ERR_ACCESS_DENIED",
            "child_process ERR_ACCESS_DENIED",
            "process.binding ERR_ACCESS_DENIED",
            "eval EvalError",
            "new Function EvalError",
            "__proto__ ERR_PROTO_ACCESS",
            "wasm",
            "fetch",
        ] {
            assert!(r.stdout.contains(&format!("BLOCKED {k}")), "{k}: {r:#?}");
        }
        assert_eq!(r.stderr, "", "the flags must not print warnings: {r:#?}");
    }
}
