//! The attacks that are the same in Python and in JavaScript, written once: one table row per
//! attack holds its Python payload, its JavaScript payload (node through `agentjail exec`,
//! no check, no node flags: the jail alone), what the host sets up around the runs and the
//! outcome both must reach. `twins::python::NAME` and `twins::node::NAME` run each row as
//! root and as nobody. Attacks with no twin (raw syscalls, machine code, terminal ioctls in
//! Python; node's own flags, `child_process` in JavaScript) stay in `python_attacks` and
//! `node_attacks`.
//!
//! Both payloads print the same markers: START first (a jail that never started cannot
//! pass), `BREACH ...` when an attack succeeds (fails the test), `BLOCKED ...` when it does
//! not. `@KEY@` in a payload is replaced by what the host set up (a secret's path, a pid).

use crate::common::*;
use crate::node_attacks::{node, Kind};
use std::time::Duration;

/// One attack, in both languages.
struct Twin {
    name: &'static str,
    /// After common::PRELUDE (START, `attempt(name, fn)`).
    python: &'static str,
    /// After node_attacks's prelude (START, `attempt(name, fn)`).
    javascript: &'static str,
    /// What the host sets up for the runs, and checks after each.
    host: Host,
    /// Process creation allowed: Python under policies/data.toml (the host's python3),
    /// node under the javascript policy plus `process_spawn`.
    spawn: bool,
    /// Flags for `agentjail exec`.
    flags: &'static [&'static str],
    /// The expected outcome.
    expect: Expect,
}

/// The host's side of an attack.
#[derive(Clone, Copy)]
enum Host {
    Nothing,
    /// A marked secret in /tmp and /var/tmp of the host: @TMP@, @VARTMP@, @M@; and what the
    /// jail's /opt holds (the test interpreter's prefix, when it lives there): @OPT_LIST@
    /// (a list literal), @OPT_PREFIX@.
    PlantedSecrets,
    /// A host process with a secret in its environment: @R@ (the secret reversed, so the
    /// payload's own command line does not hold it), @HOSTPID@.
    Sleeper,
    /// A listening abstract unix socket of the host, @NAME@; never accepts a connection.
    AbstractListener,
    /// Paths outside /tmp the payload tries to create, @TARGETS@ (a list literal), with the
    /// marker @M@; none of the first three may exist on the host afterwards.
    WriteTargets,
    /// A marker @M@ the payload puts in its processes' argv: none may outlive the run.
    Marker,
    /// A host process, @VPID@, that must outlive every run, alone with its marker.
    Victim,
}

/// What every run of a twin must show.
#[derive(Clone, Copy)]
enum Expect {
    /// `start` printed, nothing breached, the attack blocked; and each line printed.
    Blocked {
        start: &'static str,
        lines: &'static [&'static str],
    },
    /// `start` printed; then `check` (exit status, stop reason, numbers).
    Ran {
        start: &'static str,
        check: fn(&Run),
    },
}

const TWINS: &[Twin] = &[
    Twin {
        name: "host_files_are_not_reachable",
        python: r#"
def read(p):
    with open(p, "rb") as f:
        data = f.read(64)
    if not data:
        raise OSError(0, "empty (masked)")
    return data
for p in ["/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh/ssh_host_ed25519_key",
          "/root/.bashrc", "/root", "/home", "/work", "/var/log", "/run", "/sys/kernel",
          "/var", "/srv", "/mnt", "/boot", "@TMP@", "@VARTMP@"] + @PROC_MASKED@:
    attempt("read " + p, (lambda p=p: os.listdir(p) if os.path.isdir(p) and os.listdir(p) else read(p)))
opt = sorted(os.listdir("/opt")) if os.path.isdir("/opt") else []
print("BLOCKED opt" if opt == @OPT_LIST@ else "BREACH opt %r" % opt)
# /etc is synthesized: exactly three files.
e = sorted(os.listdir("/etc"))
print("BLOCKED etc-listing" if e == ["group", "hosts", "passwd"] else "BREACH etc-listing %r" % e)
# Nothing outside /usr (and the test interpreter's read-only prefix) and /proc carries the
# secret.
hits = []
for root, dirs, files in os.walk("/"):
    if root == "/":
        dirs[:] = [d for d in dirs if d not in ("usr", "proc", "sys", "dev")]
    if root == "/opt" and "@OPT_PREFIX@":
        dirs[:] = []
    for f in files:
        try:
            if b"@M@" in open(os.path.join(root, f), "rb").read(1 << 20):
                hits.append(os.path.join(root, f))
        except OSError:
            pass
print("BREACH secret %r" % hits if hits else "BLOCKED secret-walk")
"#,
        javascript: r#"
function read(p) {
  if (fs.statSync(p).isDirectory()) {
    const l = fs.readdirSync(p);
    if (l.length === 0) throw Object.assign(new Error('empty'), { code: 'EMPTY' });
    return l;
  }
  const d = fs.readFileSync(p).subarray(0, 64);
  if (d.length === 0) throw Object.assign(new Error('empty (masked)'), { code: 'EMPTY' });
  return d.toString('hex');
}
for (const p of ['/etc/shadow', '/etc/gshadow', '/etc/sudoers', '/etc/ssh/ssh_host_ed25519_key',
    '/root/.bashrc', '/root', '/home', '/work', '/var/log', '/run', '/sys/kernel', '/var', '/srv',
    '/opt', '/mnt', '/boot', '@TMP@', '@VARTMP@', ...@PROC_MASKED@]) {
  attempt('read ' + p, () => read(p));
}
const e = fs.readdirSync('/etc').sort();
console.log(JSON.stringify(e) === '["group","hosts","passwd"]' ? 'BLOCKED etc-listing' : 'BREACH etc-listing ' + e);
const hits = [];
function walk(dir) {
  let entries;
  try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
  for (const ent of entries) {
    const p = (dir === '/' ? '' : dir) + '/' + ent.name;
    if (dir === '/' && ['usr', 'proc', 'sys', 'dev'].includes(ent.name)) continue;
    if (ent.isDirectory()) walk(p);
    else if (ent.isFile()) {
      try {
        const fd = fs.openSync(p, 'r');
        const b = Buffer.alloc(1 << 20);
        const n = fs.readSync(fd, b, 0, b.length, 0);
        fs.closeSync(fd);
        if (b.subarray(0, n).includes('@M@')) hits.push(p);
      } catch {}
    }
  }
}
walk('/');
console.log(hits.length ? 'BREACH secret ' + hits : 'BLOCKED secret-walk');
"#,
        host: Host::PlantedSecrets,
        spawn: false,
        flags: &[],
        expect: Expect::Blocked {
            start: "START",
            lines: &["BLOCKED secret-walk", "BLOCKED etc-listing"],
        },
    },
    Twin {
        name: "pid1_is_agentjail_init_and_host_init_is_invisible",
        python: r#"
c = open("/proc/1/cmdline", "rb").read()
print("CMDLINE1", repr(c[:200]), flush=True)
print("BLOCKED proc1-cmdline" if all(b == 0 for b in c) else "BREACH proc1-cmdline %r" % c[:100])
try:
    e = open("/proc/1/environ", "rb").read()
    print("BREACH proc1-environ readable %r" % e[:100])
except PermissionError:
    print("BLOCKED proc1-environ denied")
except OSError as e:
    print("OTHER proc1-environ", e.errno)
attempt("readlink /proc/1/exe", lambda: os.readlink("/proc/1/exe"))
attempt("read /proc/1/mem", lambda: open("/proc/1/mem", "rb").read(1))
print("MYPID", os.getpid(), os.getppid())
print("PIDS", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
"#,
        javascript: r#"
const c = fs.readFileSync('/proc/1/cmdline');
console.log(c.every((b) => b === 0) ? 'BLOCKED proc1-cmdline' : 'BREACH proc1-cmdline ' + c.toString().slice(0, 100));
try {
  const e = fs.readFileSync('/proc/1/environ');
  console.log('BREACH proc1-environ readable ' + e.toString().slice(0, 100));
} catch (e) {
  console.log(e.code === 'EACCES' ? 'BLOCKED proc1-environ denied' : 'OTHER proc1-environ ' + e.code);
}
attempt('readlink /proc/1/exe', () => fs.readlinkSync('/proc/1/exe'));
attempt('read /proc/1/mem', () => { const fd = fs.openSync('/proc/1/mem', 'r'); return fs.readSync(fd, Buffer.alloc(1), 0, 1, 0x400000); });
console.log('MYPID', process.pid, process.ppid);
const pids = fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).map(Number).sort((a, b) => a - b);
console.log('PIDS [' + pids.join(', ') + ']');
"#,
        host: Host::Nothing,
        spawn: false,
        flags: &[],
        expect: Expect::Blocked {
            start: "START",
            lines: &[
                "BLOCKED proc1-cmdline",
                "BLOCKED proc1-environ denied",
                "MYPID 2 1\n",
                "PIDS [1, 2]\n",
            ],
        },
    },
    Twin {
        name: "other_processes_environment_is_not_visible",
        python: r#"
needle = "@R@"[::-1].encode()
pids = [p for p in os.listdir("/proc") if p.isdigit()]
print("PIDS", pids, flush=True)
found = []
for p in pids:
    for f in ("environ", "cmdline"):
        try:
            if needle in open("/proc/%s/%s" % (p, f), "rb").read():
                found.append((p, f))
        except OSError:
            pass
print("BREACH found %r" % found if found else "BLOCKED not-found")
print("BREACH host pid visible" if "@HOSTPID@" in pids and "@HOSTPID@" != "1" else "BLOCKED pid-ns")
"#,
        javascript: r#"
const needle = '@R@'.split('').reverse().join('');
const pids = fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p));
console.log('PIDS', pids.join(','));
const found = [];
for (const p of pids) for (const f of ['environ', 'cmdline']) {
  try { if (fs.readFileSync('/proc/' + p + '/' + f).includes(needle)) found.push(p + '/' + f); } catch {}
}
console.log(found.length ? 'BREACH found ' + found : 'BLOCKED not-found');
console.log(pids.includes('@HOSTPID@') && '@HOSTPID@' !== '1' ? 'BREACH host pid visible' : 'BLOCKED pid-ns');
"#,
        host: Host::Sleeper,
        spawn: false,
        flags: &[],
        expect: Expect::Blocked {
            start: "START",
            lines: &["BLOCKED not-found"],
        },
    },
    Twin {
        name: "host_abstract_unix_socket_is_unreachable",
        python: r#"
import socket
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(1)
    s.connect("\0@NAME@")
    s.sendall(b"hello")
    return "connected"
print("ATTEMPT", flush=True)
attempt("abstract unix", conn)
"#,
        javascript: r#"
const net = require('net');
console.log('ATTEMPT');
const s = net.connect({ path: '\0@NAME@' });
s.on('connect', () => { console.log('BREACH abstract connected'); s.end('hello'); });
s.on('error', (e) => console.log('BLOCKED abstract', e.code));
"#,
        host: Host::AbstractListener,
        spawn: false,
        flags: &["--time-limit", "5"],
        expect: Expect::Blocked {
            start: "ATTEMPT",
            lines: &[],
        },
    },
    Twin {
        name: "writes_outside_tmp_fail",
        python: r#"
def create(p):
    with open(p, "wb") as f:
        f.write(b"x")
    return p
for p in @TARGETS@:
    attempt("create " + p, lambda p=p: create(p))
def overwrite(p, data=b"x"):
    fd = os.open(p, os.O_WRONLY)
    try:
        return os.write(fd, data)
    finally:
        os.close(fd)
for p in ["/etc/passwd", "/etc/hosts", "/usr/bin/python3", "/proc/sys/kernel/hostname",
          "/proc/sys/vm/drop_caches", "/proc/sys/kernel/core_pattern",
          "/proc/self/attr/current"] + @PROC_WRITABLE@:
    attempt("write " + p, lambda p=p: overwrite(p))
attempt("mkdir /x", lambda: os.mkdir("/@M@-d"))
attempt("chmod /usr/bin/python3", lambda: os.chmod("/usr/bin/python3", 0o777))
attempt("symlink in /", lambda: os.symlink("/tmp", "/@M@-l"))
attempt("rename /etc/hosts", lambda: os.rename("/etc/hosts", "/etc/hosts2"))
create("/tmp/@M@-ok")
print("TMP-OK", open("/tmp/@M@-ok").read(), flush=True)
"#,
        javascript: r#"
for (const p of @TARGETS@) attempt('create ' + p, () => { fs.writeFileSync(p, 'x'); return p; });
for (const p of ['/etc/passwd', '/etc/hosts', '/usr/bin/node', '/proc/sys/kernel/hostname',
    '/proc/sys/vm/drop_caches', '/proc/sys/kernel/core_pattern',
    '/proc/self/attr/current', ...@PROC_WRITABLE@]) {
  attempt('write ' + p, () => { const fd = fs.openSync(p, 'r+'); try { return fs.writeSync(fd, 'x'); } finally { fs.closeSync(fd); } });
}
attempt('mkdir /x', () => fs.mkdirSync('/@M@-d'));
attempt('chmod /usr/bin/node', () => fs.chmodSync('/usr/bin/node', 0o777));
attempt('symlink in /', () => fs.symlinkSync('/tmp', '/@M@-l'));
attempt('rename /etc/hosts', () => fs.renameSync('/etc/hosts', '/etc/hosts2'));
fs.writeFileSync('/tmp/@M@-ok', 'x');
console.log('TMP-OK', fs.readFileSync('/tmp/@M@-ok', 'utf8'));
"#,
        host: Host::WriteTargets,
        spawn: false,
        flags: &[],
        expect: Expect::Blocked {
            start: "START",
            lines: &["TMP-OK x"],
        },
    },
    Twin {
        // Default tmp_size 64MiB, 4096 inodes; 8MiB files so RLIMIT_FSIZE (64MiB) never
        // decides.
        name: "filling_tmp_stops_at_the_cap_with_enospc",
        python: r#"
import errno
total = 0
err = None
i = 0
chunk = b"\0" * (1 << 20)
try:
    while total < (1 << 30):
        with open("/tmp/fill%d" % i, "wb") as f:
            for _ in range(8):
                f.write(chunk)
                f.flush()
                total += len(chunk)
        i += 1
except OSError as e:
    err = errno.errorcode.get(e.errno, e.errno)
print("FILLED", total, err, flush=True)
st = os.statvfs("/tmp")
print("TMPSIZE", st.f_blocks * st.f_frsize, flush=True)
n = 0
for f in os.listdir("/tmp"):
    os.unlink("/tmp/" + f)
ierr = None
try:
    while n < 100000:
        open("/tmp/i%d" % n, "wb").close()
        n += 1
except OSError as e:
    ierr = errno.errorcode.get(e.errno, e.errno)
print("INODES", n, ierr, flush=True)
"#,
        javascript: r#"
let total = 0, err = null;
const chunk = Buffer.alloc(1 << 20, 1);
try {
  for (let i = 0; total < (1 << 30); i++) {
    const fd = fs.openSync('/tmp/fill' + i, 'w');
    for (let j = 0; j < 8; j++) { fs.writeSync(fd, chunk); total += chunk.length; }
    fs.closeSync(fd);
  }
} catch (e) { err = e.code; }
console.log('FILLED', total, err);
for (const f of fs.readdirSync('/tmp')) fs.unlinkSync('/tmp/' + f);
let n = 0, ierr = null;
try { while (n < 100000) { fs.closeSync(fs.openSync('/tmp/i' + n, 'w')); n++; } } catch (e) { ierr = e.code; }
console.log('INODES', n, ierr);
"#,
        host: Host::Nothing,
        spawn: false,
        flags: &["--time-limit", "20"],
        expect: Expect::Ran {
            start: "START",
            check: tmp_filled_to_its_caps,
        },
    },
    Twin {
        // 3 s: the children and the 0.2 s wait must fit before the stop on a loaded machine;
        // this is about what the stop leaves behind, not its timing.
        name: "sigterm_ignorer_stopped_child_and_orphan_grandchild_are_all_killed",
        python: r#"
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
if os.fork() == 0:
    # A child that stops itself.
    os.execv("/usr/bin/python3", ["@M@-stopped", "-I", "-S", "-c",
             "import os, signal; os.kill(os.getpid(), signal.SIGSTOP)"])
if os.fork() == 0:
    # Double fork: the grandchild is orphaned in a new session.
    if os.fork() == 0:
        os.setsid()
        os.execv("/usr/bin/sleep", ["@M@-orphan", "1000"])
    os._exit(0)
time.sleep(0.2)
print("READY", flush=True)
while True:
    time.sleep(1)
"#,
        javascript: r#"
const { spawn } = require('child_process');
process.on('SIGTERM', () => {});
process.on('SIGHUP', () => {});
const stopped = spawn('/usr/bin/sleep', ['1000'], { argv0: '@M@-stopped', stdio: 'ignore' });
const orphan = spawn('/usr/bin/sleep', ['1000'], { argv0: '@M@-orphan', stdio: 'ignore', detached: true });
orphan.unref();
setTimeout(() => {
  process.kill(stopped.pid, 'SIGSTOP');
  console.log('READY');
}, 200);
setInterval(() => {}, 1000);
"#,
        host: Host::Marker,
        spawn: true,
        flags: &["--time-limit", "3"],
        expect: Expect::Ran {
            start: "READY",
            check: stopped_on_timeout,
        },
    },
    Twin {
        // kill(-1) from pid 2 (not init): every process it may signal, except itself.
        name: "host_processes_cannot_be_signalled",
        python: r#"
import signal
attempt("kill host pid", lambda: os.kill(@VPID@, signal.SIGKILL))
try:
    os.kill(-1, signal.SIGKILL)
except OSError:
    pass
print("SURVIVED", flush=True)
"#,
        javascript: r#"
attempt('kill host pid', () => process.kill(@VPID@, 'SIGKILL'));
try { process.kill(-1, 'SIGKILL'); } catch {}
console.log('SURVIVED');
"#,
        host: Host::Victim,
        spawn: false,
        flags: &[],
        expect: Expect::Ran {
            start: "START",
            check: nothing_breached,
        },
    },
];

/// No attack printed BREACH.
fn nothing_breached(r: &Run) {
    assert!(!r.stdout.contains("BREACH"), "{r:#?}");
}

/// /tmp filled to its size cap (64MiB, within 8MiB) and then to its inode cap (4096), both
/// ending in ENOSPC.
fn tmp_filled_to_its_caps(r: &Run) {
    let line = r
        .stdout
        .lines()
        .find(|l| l.starts_with("FILLED"))
        .unwrap_or_else(|| panic!("{r:#?}"));
    let f: Vec<&str> = line.split_whitespace().collect();
    let total: u64 = f[1].parse().unwrap();
    assert_eq!(f[2], "ENOSPC", "expected ENOSPC filling /tmp: {r:#?}");
    assert!(
        total <= 64 << 20,
        "wrote {total} bytes to a 64MiB /tmp: {r:#?}"
    );
    assert!(
        total >= 56 << 20,
        "/tmp full far below its cap ({total}): {r:#?}"
    );
    let line = r
        .stdout
        .lines()
        .find(|l| l.starts_with("INODES"))
        .unwrap_or_else(|| panic!("{r:#?}"));
    let f: Vec<&str> = line.split_whitespace().collect();
    let n: u64 = f[1].parse().unwrap();
    assert_eq!(f[2], "ENOSPC", "expected ENOSPC creating inodes: {r:#?}");
    assert!(n <= 4096, "created {n} files, inode cap is 4096: {r:#?}");
}

/// Stopped at the time limit, and said so on stderr.
fn stopped_on_timeout(r: &Run) {
    assert_eq!(r.code, 124, "{r:#?}");
    assert_eq!(r.stop_reason(), Some("code_timeout"), "{r:#?}");
    assert!(
        r.stderr.contains("agentjail: stopped: code_timeout"),
        "{r:#?}"
    );
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lang {
    Python,
    Node,
}

/// The masked /proc files (`/proc/<name>`) this host has, as a list literal Python and
/// JavaScript both read. A file the host lacks is absent from the jail's /proc whatever the
/// jail masks, so probing it would pass for the wrong reason: it is left out, loudly.
fn host_proc_files(names: &[&str]) -> String {
    let mut present = Vec::new();
    for n in names {
        let p = format!("/proc/{n}");
        if std::path::Path::new(&p).exists() {
            present.push(p);
        } else {
            eprintln!("!!!!!!!! NOTE: {p} does not exist on this host: not probed (it cannot show a mask) !!!!!!!!");
        }
    }
    format!("{present:?}")
}

/// What the host set up for one twin's runs: the payload's substitutions, and what is
/// checked after each run and undone at the end.
struct Setup {
    vars: Vec<(&'static str, String)>,
    files: Vec<String>,
    sleeper: Option<std::process::Child>,
    listener: Option<std::os::unix::net::UnixListener>,
    targets: Vec<String>,
    marker: Option<String>,
    victim: Option<(std::process::Child, String)>,
}

impl Setup {
    fn new(host: Host, lang: Lang) -> Setup {
        let mut s = Setup {
            vars: Vec::new(),
            files: Vec::new(),
            sleeper: None,
            listener: None,
            targets: Vec::new(),
            marker: None,
            victim: None,
        };
        let tag = if lang == Lang::Node { "js" } else { "py" };
        s.vars.extend([
            (
                "@PROC_MASKED@",
                host_proc_files(&["kcore", "kallsyms", "keys", "sysrq-trigger"]),
            ),
            ("@PROC_WRITABLE@", host_proc_files(&["sysrq-trigger"])),
        ]);
        match host {
            Host::Nothing => {}
            Host::PlantedSecrets => {
                let m = marker(&format!("{tag}hostfile"));
                let (tmp, vartmp) = (format!("/tmp/{m}.secret"), format!("/var/tmp/{m}.secret"));
                std::fs::write(&tmp, &m).unwrap();
                std::fs::write(&vartmp, &m).unwrap();
                // /opt is empty in the jail unless the test interpreter is bound under it
                // (AGENTJAIL_TEST_PYTHON=/opt/agentjail-py/3.12/bin/python3): then it holds
                // that path only.
                let under_opt: Vec<String> = test_python()
                    .strip_prefix("/opt/")
                    .and_then(|rest| rest.split('/').next())
                    .map(|first| vec![first.to_string()])
                    .unwrap_or_default();
                let opt_prefix = under_opt
                    .first()
                    .map(|first| format!("/opt/{first}"))
                    .unwrap_or_default();
                s.vars.extend([
                    ("@TMP@", tmp.clone()),
                    ("@VARTMP@", vartmp.clone()),
                    ("@M@", m),
                    ("@OPT_LIST@", format!("{under_opt:?}")),
                    ("@OPT_PREFIX@", opt_prefix),
                ]);
                s.files = vec![tmp, vartmp];
            }
            Host::Sleeper => {
                let secret = marker(&format!("{tag}envsecret"));
                let host = std::process::Command::new("/bin/sleep")
                    .arg("30")
                    .env("AGENTJAIL_HOST_SECRET", &secret)
                    .spawn()
                    .unwrap();
                s.vars.extend([
                    ("@R@", secret.chars().rev().collect::<String>()),
                    ("@HOSTPID@", host.id().to_string()),
                ]);
                s.sleeper = Some(host);
            }
            Host::AbstractListener => {
                use std::os::linux::net::SocketAddrExt;
                let name = format!("agentjail-test-{}", marker(&format!("{tag}abs")));
                let addr =
                    std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
                let l = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
                l.set_nonblocking(true).unwrap();
                s.vars.push(("@NAME@", name));
                s.listener = Some(l);
            }
            Host::WriteTargets => {
                let m = marker(&format!("{tag}write"));
                let targets = [
                    format!("/{m}"),
                    format!("/usr/{m}"),
                    format!("/usr/bin/{m}"),
                    format!("/etc/{m}"),
                    format!("/dev/{m}"),
                    format!("/proc/{m}"),
                ];
                s.vars
                    .extend([("@TARGETS@", format!("{targets:?}")), ("@M@", m)]);
                s.targets = targets[..3].to_vec();
            }
            Host::Marker => {
                let m = marker(&format!("{tag}orphan"));
                s.vars.push(("@M@", m.clone()));
                s.marker = Some(m);
            }
            Host::Victim => {
                use std::os::unix::process::CommandExt;
                let m = marker(&format!("{tag}victim"));
                let victim = std::process::Command::new("/usr/bin/sleep")
                    .arg0(&m)
                    .arg("30")
                    .spawn()
                    .unwrap();
                s.vars.push(("@VPID@", victim.id().to_string()));
                s.victim = Some((victim, m));
            }
        }
        s
    }

    fn payload(&self, source: &str) -> String {
        self.vars
            .iter()
            .fold(source.to_string(), |text, (k, v)| text.replace(k, v))
    }

    /// What the host checks after each run.
    fn after(&mut self, r: &Run) {
        if let Some(l) = &self.listener {
            match l.accept() {
                Ok(_) => panic!("the jail reached the host abstract socket: {r:#?}"),
                Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock),
            }
        }
        for t in &self.targets {
            assert!(!std::path::Path::new(t).exists(), "{t} created on the host");
        }
        if let Some((victim, m)) = &mut self.victim {
            assert!(
                victim.try_wait().unwrap().is_none(),
                "the jail killed a host process: {r:#?}"
            );
            assert_eq!(host_pids_with(m), vec![victim.id() as i32]);
        }
        if let Some(m) = &self.marker {
            let left = survivors(m, Duration::from_millis(500));
            assert!(
                left.is_empty(),
                "processes survive the jail on the host: {left:?}"
            );
        }
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        for f in &self.files {
            let _ = std::fs::remove_file(f);
        }
        if let Some(mut h) = self.sleeper.take() {
            let _ = h.kill();
            let _ = h.wait();
        }
        if let Some((mut v, _)) = self.victim.take() {
            let _ = v.kill();
            let _ = v.wait();
        }
    }
}

/// Row `name` of the table in `lang`, as every launch variant.
fn run(lang: Lang, name: &str) {
    let t = TWINS
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no twin {name}"));
    let mut setup = Setup::new(t.host, lang);
    for who in variants() {
        let r = match (lang, t.spawn) {
            (Lang::Python, false) => py(who, t.flags, &setup.payload(t.python)),
            (Lang::Python, true) => {
                let code = format!("{PRELUDE}\n{}", setup.payload(t.python));
                python_data(who, t.flags, &code)
            }
            (Lang::Node, spawn) => {
                let kind = if spawn { Kind::Spawn } else { Kind::Plain };
                node(who, kind, t.flags, &setup.payload(t.javascript))
            }
        };
        match t.expect {
            Expect::Blocked { start, lines } => {
                r.assert_blocked(start);
                for l in lines {
                    assert!(r.stdout.contains(l), "{l:?} missing: {r:#?}");
                }
            }
            Expect::Ran { start, check } => {
                r.assert_ran(start);
                check(&r);
            }
        }
        setup.after(&r);
    }
}

/// One test per row and language: `twins::python::NAME`, `twins::node::NAME`.
macro_rules! twins {
    ($($name:ident),* $(,)?) => {
        mod python {
            $(#[test]
            fn $name() {
                super::run(super::Lang::Python, stringify!($name));
            })*
        }
        mod node {
            $(#[test]
            fn $name() {
                super::run(super::Lang::Node, stringify!($name));
            })*
        }
        /// Every row of the table has its two tests, and every test its row.
        #[test]
        fn every_twin_has_its_tests() {
            let tests = [$(stringify!($name)),*];
            let rows: Vec<&str> = TWINS.iter().map(|t| t.name).collect();
            assert_eq!(rows, tests);
        }
    };
}

twins! {
    host_files_are_not_reachable,
    pid1_is_agentjail_init_and_host_init_is_invisible,
    other_processes_environment_is_not_visible,
    host_abstract_unix_socket_is_unreachable,
    writes_outside_tmp_fail,
    filling_tmp_stops_at_the_cap_with_enospc,
    sigterm_ignorer_stopped_child_and_orphan_grandchild_are_all_killed,
    host_processes_cannot_be_signalled,
}
