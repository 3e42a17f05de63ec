//! The one support module of every test binary (tests/jail, tests/check, tests/pipeline,
//! tests/frontends, crates/agentjail-mcp/tests/mcp.rs): launch the real `agentjail` binary as root and as nobody,
//! with the embedded default policy unless `AGENTJAIL_TEST_POLICY` names a file; the action
//! builder the tests share; `serve` (the client harness for `agentjail serve`) and
//! `python` (corpus programs under the host's CPython, outside any jail).
//!
//! Each binary's main.rs includes it with `#[path = "../common/mod.rs"] mod common;`.
#![allow(dead_code)]

pub mod attacks;
pub mod python;
pub mod serve;
pub mod site;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

pub const PY: &str = "/usr/bin/python3";

/// The interpreter the default-policy jail tests run: [`PY`], or `AGENTJAIL_TEST_PYTHON`
/// when `AGENTJAIL_TEST_POLICY` binds another one (scripts/test.sh runs the escape tests
/// again under /opt/agentjail-py/3.12, made by scripts/setup-pythons.sh).
pub fn test_python() -> &'static str {
    static P: OnceLock<String> = OnceLock::new();
    P.get_or_init(|| std::env::var("AGENTJAIL_TEST_PYTHON").unwrap_or_else(|_| PY.to_string()))
}
pub const NOBODY: u32 = 65534;

/// The one time bound a test may assert: far beyond anything the code under test takes on
/// a loaded machine, so only a hang (or an unbounded loop) reaches it. How fast something
/// is belongs to the benchmarks (scripts/bench*), never to a test.
pub const HANG: Duration = Duration::from_secs(60);

/// Who launches agentjail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    /// Host root (the test process itself, when it is root).
    Root,
    /// nobody, through setpriv (only when the test process is root).
    Nobody,
    /// The test process as it is, when it is not root.
    Current,
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and no memory effects.
    unsafe { libc::geteuid() == 0 }
}

/// The launch variants this test process can run. Every attack runs in each.
pub fn variants() -> Vec<Who> {
    if is_root() {
        vec![Who::Root, Who::Nobody]
    } else {
        static NOTE: OnceLock<()> = OnceLock::new();
        NOTE.get_or_init(|| {
            eprintln!(
                "\n!!!!!!!! NOTE: the tests are not running as root: only the unprivileged \
                 launch variant runs; the root and nobody variants are NOT exercised !!!!!!!!\n"
            )
        });
        vec![Who::Current]
    }
}

/// A kernel/host feature check: missing in CI fails, elsewhere a loud skip.
pub fn require_feature(name: &str, available: bool) -> bool {
    if available {
        return true;
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("required host feature missing in CI: {name}");
    }
    eprintln!("\n!!!!!!!! SKIPPED: host feature missing: {name} !!!!!!!!\n");
    false
}

struct Shared {
    dir: PathBuf,
    /// The test process that made `dir`: only it removes it.
    owner: u32,
    bin: PathBuf,
    policy: Option<PathBuf>,
    data_policy: PathBuf,
}

/// Whether the policy the jail tests run under (`AGENTJAIL_TEST_POLICY`) gives jails a
/// network (`[network] mode = "allowlist"`). scripts/test-learned.sh runs the escape tests
/// under a learned policy that has one: there a network attack is refused by the empty
/// network namespace and the proxy (an errno), not by seccomp (a stop on `socket`), and the
/// environment names the proxy.
pub fn test_policy_has_network() -> bool {
    let Some(p) = &shared().policy else {
        return false;
    };
    let text = std::fs::read_to_string(p).expect("read the test policy");
    // A line scan (not every test binary links a TOML reader): `mode = "allowlist"` in the
    // `[network]` table, as `policy show` and `learn` write it.
    let mut section = "";
    text.lines().map(str::trim).any(|l| {
        if l.starts_with('[') {
            section = l;
        }
        section == "[network]" && l.replace(' ', "") == "mode=\"allowlist\""
    })
}

/// A copy of the binary (and of the test policy) that nobody can reach and execute: one per
/// test process, in a fresh 0755 directory under /tmp.
fn shared() -> &'static Shared {
    static S: OnceLock<Shared> = OnceLock::new();
    S.get_or_init(|| {
        // Never made while a test is alone (it would see this directory appear).
        let _running = jail_running();
        let td = tempfile::Builder::new()
            .prefix("agentjail-attack-")
            .tempdir_in("/tmp")
            .expect("tempdir");
        // A static is never dropped, so the directory (some 100 MB of binaries) is removed
        // at exit instead: a TempDir held here would leave one behind per test binary run.
        let dir = td.path().to_path_buf();
        extern "C" fn remove_shared() {
            if let Some(s) = S.get() {
                if s.owner == std::process::id() {
                    let _ = std::fs::remove_dir_all(&s.dir);
                }
            }
        }
        // SAFETY: registers a plain function with no arguments; it only reads the
        // initialised static and removes files.
        if unsafe { libc::atexit(remove_shared) } != 0 {
            eprintln!("note: could not register the removal of {dir:?} at exit");
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        // agentjail; agentjail-mcp, which `agentjail mcp` execs from the same directory, for
        // the tests of crates/agentjail-mcp (the only ones that run it); agentjail-zygote,
        // which `serve --zygote` runs (scripts/build-zygote.sh builds it next to agentjail;
        // scripts/test.sh does before the tests).
        let mcp_tests = option_env!("CARGO_BIN_EXE_agentjail-mcp").is_some();
        for (name, wanted) in [
            ("agentjail", true),
            ("agentjail-mcp", mcp_tests),
            ("agentjail-zygote", true),
        ] {
            let src = built_binary(name);
            if wanted && src.is_file() {
                let dst = dir.join(name);
                std::fs::copy(&src, &dst).unwrap_or_else(|e| panic!("copy {name}: {e}"));
                std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        let bin = dir.join("agentjail");
        let policy = std::env::var_os("AGENTJAIL_TEST_POLICY").map(|p| {
            let dst = dir.join("policy.toml");
            std::fs::copy(&p, &dst).expect("copy AGENTJAIL_TEST_POLICY");
            std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(0o644)).unwrap();
            dst
        });
        // tests/policies/spawn.toml (data.toml with cgroups best-effort): copied so nobody can read it too.
        let data_policy = dir.join("data.toml");
        std::fs::write(&data_policy, include_str!("../policies/spawn.toml"))
            .expect("copy policies/data.toml");
        std::fs::set_permissions(&data_policy, std::fs::Permissions::from_mode(0o644)).unwrap();
        if policy.is_none() {
            eprintln!("note: tests use the embedded default policy (AGENTJAIL_TEST_POLICY unset)");
        }
        // From here on `remove_shared` owns the directory.
        let _ = td.keep();
        Shared {
            dir,
            owner: std::process::id(),
            bin,
            policy,
            data_policy,
        }
    })
}

/// A binary of the workspace as cargo built it for this test: the test package's own
/// (`CARGO_BIN_EXE_*`: agentjail for the main package's tests, agentjail-mcp for
/// crates/agentjail-mcp's), or another one beside it in target/<triple>/<profile>/ (built
/// there by the same `cargo test` at the workspace root, or by scripts/build-zygote.sh).
/// With `AGENTJAIL_TEST_BIN_DIR` set, that directory's instead: scripts/test.sh points it
/// at the release build, so the suites test the binaries that ship (and spend a third of
/// the CPU: the debug build's JSON, redaction and record work is unoptimised).
pub fn built_binary(name: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os("AGENTJAIL_TEST_BIN_DIR") {
        let p = Path::new(&dir).join(name);
        assert!(
            !matches!(name, "agentjail" | "agentjail-mcp" | "agentjail-http") || p.is_file(),
            "AGENTJAIL_TEST_BIN_DIR={}: no {name} there",
            Path::new(&dir).display()
        );
        return p;
    }
    let own = option_env!("CARGO_BIN_EXE_agentjail")
        .or(option_env!("CARGO_BIN_EXE_agentjail-mcp"))
        .expect("a test of the agentjail or agentjail-mcp package");
    Path::new(own).with_file_name(name)
}

/// The path of agentjail as launched by the tests (for crates/agentjail-mcp's tests it
/// exists only when agentjail was built beside agentjail-mcp).
pub fn agentjail_path() -> &'static Path {
    &shared().bin
}

/// The path of agentjail-mcp as launched by crates/agentjail-mcp's tests.
pub fn mcp_server_path() -> PathBuf {
    shared().dir.join("agentjail-mcp")
}

/// The agentjail under test, alone in a directory of its own that every launch variant can
/// enter (none of the binaries it looks for next to itself: agentjail-zygote, agentjail-mcp,
/// agentjail-http): a hard link in the shared directory, made once, so it is never open for
/// writing (a copy can fail its exec with ETXTBSY: see [`run_alone`]).
pub fn agentjail_alone() -> &'static Path {
    static ALONE: OnceLock<PathBuf> = OnceLock::new();
    ALONE.get_or_init(|| {
        let dir = shared().dir.join("alone");
        std::fs::create_dir(&dir).expect("the shared directory's alone/");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let bin = dir.join("agentjail");
        std::fs::hard_link(agentjail_path(), &bin).expect("link agentjail alone");
        bin
    })
}

/// A copy of agentjail alone in a fresh directory (none of the binaries it looks for next to
/// itself), run with `args` and stdin closed: its exit code and its stderr.
pub fn run_alone(args: &[&str]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let alone = dir.path().join("agentjail");
    std::fs::copy(agentjail_path(), &alone).unwrap();
    // The copy's write fd (close-on-exec) lives on in any child another test thread forked
    // while it was open, until that child execs: exec'ing the copy then fails with
    // ETXTBSY. The window is the other child's fork-to-exec; retry across it.
    let mut tries = 0;
    let out = loop {
        match Command::new(&alone)
            .args(args)
            .stdin(Stdio::null())
            .output()
        {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 100 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            r => break r.unwrap(),
        }
    };
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Whether `agentjail-zygote` sits next to the tested agentjail: required in CI (scripts/test.sh
/// builds it), a loud skip elsewhere.
pub fn zygote_built() -> bool {
    require_feature(
        "agentjail-zygote next to agentjail (run scripts/build-zygote.sh)",
        agentjail_path()
            .with_file_name("agentjail-zygote")
            .is_file(),
    )
}

/// Python for a jailed job: `others`, every pid of its namespace (1-399) it can see besides
/// init and itself (`me`), signalled with 0 (needs `os` and `me`). In a jail of its own a
/// job sees none.
pub const PY_OTHER_PIDS: &str = r#"
others = []
for pid in range(1, 400):
    if pid in (1, me):
        continue
    try:
        os.kill(pid, 0)
        others.append(pid)
    except ProcessLookupError:
        pass
    except OSError:
        others.append(pid)
"#;

/// A unique marker for this test run.
pub fn marker(tag: &str) -> String {
    let mut b = [0u8; 8];
    let _ = std::fs::File::open("/dev/urandom").and_then(|mut f| {
        use std::io::Read;
        f.read_exact(&mut b)
    });
    let n = u64::from_le_bytes(b);
    format!("ajmark-{tag}-{}-{n:016x}", std::process::id())
}

#[derive(Debug)]
pub struct Run {
    pub who: Who,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub stdout_len: usize,
    pub stderr_raw: Vec<u8>,
    pub wall: Duration,
    pub record: Option<serde_json::Value>,
}

impl Run {
    pub fn stop_reason(&self) -> Option<&str> {
        self.record.as_ref()?.get("stop_reason")?.as_str()
    }
    /// Panic unless the payload printed `m` (it really ran), with the whole run in the message.
    pub fn assert_ran(&self, m: &str) {
        assert!(
            self.stdout.contains(m),
            "payload did not run (marker {m:?} missing) — {self:#?}"
        );
    }
    /// The syscall name when the run was stopped as `code_forbidden_syscall:<name>`.
    pub fn forbidden(&self) -> Option<&str> {
        if self.code != 124 {
            return None;
        }
        self.stop_reason()?.strip_prefix("code_forbidden_syscall:")
    }
    /// The payload printed `start`, then the jail stopped it on one of `names` (exit 124,
    /// the reason in the record and on stderr), and nothing was breached.
    pub fn assert_stopped_on(&self, start: &str, names: &[&str]) {
        if let (false, Some(n)) = (self.stdout.contains(start), self.forbidden()) {
            panic!(
                "marker {start:?} missing although printed before the attack; the run stopped \
                 on {n}: output written before a stop was lost — {self:#?}"
            );
        }
        self.assert_ran(start);
        assert!(
            !self.stdout.contains("BREACH"),
            "attack succeeded — {self:#?}"
        );
        let got = self.forbidden();
        assert!(
            got.is_some_and(|n| names.contains(&n)),
            "expected a stop with code_forbidden_syscall:{names:?} — {self:#?}"
        );
        let reason = self.stop_reason().unwrap_or_default();
        assert!(
            self.stderr
                .contains(&format!("agentjail: stopped: {reason}")),
            "stderr does not name the stop — {self:#?}"
        );
    }
    /// How a single-syscall attack was blocked, or why it was not: the payload printed
    /// `start`, no BREACH, and either BLOCKED (an errno), a stop naming one of `names`
    /// (any name when `names` is empty), or, when `sigsys_ok`, death by SIGSYS.
    pub fn blocked_how(
        &self,
        start: &str,
        names: &[&str],
        sigsys_ok: bool,
    ) -> Result<String, String> {
        if !self.stdout.contains(start) {
            if let Some(n) = self.forbidden() {
                // The stop proves something ran, not that the payload reached the attack:
                // the marker is printed and flushed before it, so losing it is a jail bug
                // (output written before a stop is dropped), not a pass.
                return Err(format!(
                    "marker {start:?} missing although flushed before the attack; the run \
                     stopped on {n}: output written before a stop was lost"
                ));
            }
            return Err(format!("payload did not run (marker {start:?} missing)"));
        }
        if self.stdout.contains("BREACH") {
            return Err("BREACH".into());
        }
        if let Some(n) = self.forbidden() {
            if !names.is_empty() && !names.contains(&n) {
                return Err(format!("stopped on {n}, expected one of {names:?}"));
            }
            let reason = self.stop_reason().unwrap_or_default();
            if !self
                .stderr
                .contains(&format!("agentjail: stopped: {reason}"))
            {
                return Err("stop not named on stderr".into());
            }
            return Ok(format!("stopped:{n}"));
        }
        if sigsys_ok && self.code == 128 + libc::SIGSYS {
            return Ok("SIGSYS".into());
        }
        if let Some(l) = self.stdout.lines().find(|l| l.starts_with("BLOCKED")) {
            // Refused with an errno: only the errnos the jail's controls produce count
            // (EPERM and EACCES: seccomp's errno list, landlock, no capability; ENOTTY: the
            // ioctl filter; ENOSYS: clone3). EBADF, EINVAL, EFAULT, ... mean the payload's
            // own arguments were wrong, which proves nothing about the control.
            let errno = l.rsplit(' ').next().unwrap_or("");
            if !REFUSAL_ERRNOS.contains(&errno) {
                return Err(format!(
                    "refused with errno {errno:?}, which is no control's refusal \
                     (expected one of {REFUSAL_ERRNOS:?}): {l}"
                ));
            }
            return Ok(l.to_string());
        }
        Err("neither BLOCKED nor stopped".into())
    }
    /// The payload reached the attack and the attack failed: no BREACH line, and either the
    /// payload said BLOCKED or the jail stopped it (forbidden syscall, SIGSYS).
    ///
    /// The payload must have run to its end: a stop on some forbidden syscall, or a death by
    /// SIGSYS, is a different control than the BLOCKED lines the caller then checks, and would
    /// let a payload that never reached its probes pass. A test that expects a stop names its
    /// syscall with [`Run::assert_stopped_on`].
    pub fn assert_blocked(&self, start: &str) {
        self.assert_ran(start);
        assert!(
            !self.stdout.contains("BREACH"),
            "attack succeeded — {self:#?}"
        );
        assert!(
            self.forbidden().is_none() && self.code != 128 + libc::SIGSYS,
            "the payload was stopped before its end (a stop the test does not name) — {self:#?}"
        );
        assert!(
            self.stdout.contains("BLOCKED"),
            "attack reported no BLOCKED line — {self:#?}"
        );
    }
}

/// How to launch one jail run.
#[derive(Default)]
pub struct Launch<'a> {
    pub flags: Vec<String>,
    pub stdin: Option<Vec<u8>>,
    pub env: Vec<(String, String)>,
    /// Extra fd to leave open (non-CLOEXEC) at this number in agentjail.
    pub leak_fd: Option<(std::os::fd::RawFd, &'a std::fs::File)>,
    /// Use these as agentjail's stdin/stdout/stderr instead of pipes (e.g. a pty).
    pub stdio_fd: Option<&'a std::os::fd::OwnedFd>,
    pub record: bool,
    /// Do not fail on exit 125 (the test is about setup failures).
    pub allow_setup_failure: bool,
    /// Run under policies/data.toml (process_spawn allowed) instead of the default.
    pub data: bool,
}

fn rec_file() -> PathBuf {
    let s = shared();
    let f = tempfile::Builder::new()
        .prefix("record-")
        .suffix(".json")
        .tempfile_in(&s.dir)
        .unwrap();
    let (_, p) = f.keep().unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o666)).unwrap();
    p
}

pub fn python(who: Who, flags: &[&str], code: &str) -> Run {
    jail(who, flags, &[test_python(), "-I", "-S", "-c", code])
}

pub fn sh(who: Who, flags: &[&str], script: &str) -> Run {
    jail(who, flags, &["/bin/sh", "-c", script])
}

pub fn jail(who: Who, flags: &[&str], cmd: &[&str]) -> Run {
    jail_with(who, false, flags, cmd)
}

/// Python under policies/data.toml (fork allowed, pids limit 128).
pub fn python_data(who: Who, flags: &[&str], code: &str) -> Run {
    jail_with(who, true, flags, &[PY, "-I", "-S", "-c", code])
}

/// sh under policies/data.toml (fork allowed, pids limit 128).
pub fn sh_data(who: Who, flags: &[&str], script: &str) -> Run {
    jail_with(who, true, flags, &["/bin/sh", "-c", script])
}

pub fn jail_with(who: Who, data: bool, flags: &[&str], cmd: &[&str]) -> Run {
    launch(
        who,
        Launch {
            flags: flags.iter().map(|s| s.to_string()).collect(),
            record: true,
            data,
            ..Default::default()
        },
        cmd,
    )
}

pub fn launch(who: Who, l: Launch<'_>, cmd: &[&str]) -> Run {
    let _running = jail_running();
    let s = shared();
    let mut c = match who {
        Who::Nobody => {
            let mut c = Command::new("/usr/bin/setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
            c.arg(&s.bin);
            c
        }
        _ => Command::new(&s.bin),
    };
    c.arg("exec");
    // A test that names its own policy in its flags gets only that one.
    let own_policy = l.flags.iter().any(|f| f == "--policy");
    if l.data {
        c.arg("--policy").arg(&s.data_policy);
    } else if let (Some(p), false) = (&s.policy, own_policy) {
        c.arg("--policy").arg(p);
    }
    let rec = l.record.then(rec_file);
    if let Some(r) = &rec {
        c.arg("--record").arg(r);
    }
    c.args(&l.flags).arg("--").args(cmd);
    c.current_dir("/");
    for (k, v) in &l.env {
        c.env(k, v);
    }
    if let Some(fd) = l.stdio_fd {
        c.stdin(Stdio::from(fd.try_clone().unwrap()));
        c.stdout(Stdio::piped());
        c.stderr(Stdio::piped());
    } else {
        c.stdin(if l.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        c.stdout(Stdio::piped());
        c.stderr(Stdio::piped());
    }
    if let Some((target, file)) = l.leak_fd {
        use std::os::fd::AsRawFd;
        let src = file.as_raw_fd();
        // SAFETY: between fork and exec only async-signal-safe calls are made: dup2 to a fixed
        // number and fcntl to clear close-on-exec; both touch only this process's fd table.
        unsafe {
            c.pre_exec(move || {
                if libc::dup2(src, target) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let fl = libc::fcntl(target, libc::F_GETFD);
                libc::fcntl(target, libc::F_SETFD, fl & !libc::FD_CLOEXEC);
                Ok(())
            });
        }
    }
    let t0 = Instant::now();
    let mut child = c.spawn().expect("spawn agentjail");
    if let Some(input) = l.stdin {
        let mut si = child.stdin.take().unwrap();
        std::thread::spawn(move || {
            let _ = si.write_all(&input);
        });
    }
    let out = child.wait_with_output().expect("wait agentjail");
    let wall = t0.elapsed();
    let record = rec.and_then(|r| {
        let text = std::fs::read_to_string(&r).ok();
        let _ = std::fs::remove_file(&r);
        let text = text?;
        if text.trim().is_empty() {
            return None;
        }
        Some(
            serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("record is not valid JSON ({e}): {text}")),
        )
    });
    use std::os::unix::process::ExitStatusExt;
    let code = out
        .status
        .code()
        .unwrap_or_else(|| 128 + out.status.signal().unwrap_or(0));
    let run = Run {
        who,
        code,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        stdout_len: out.stdout.len(),
        stderr_raw: out.stderr,
        wall,
        record,
    };
    assert!(
        l.allow_setup_failure || run.code != 125,
        "the jail could not be set up (exit 125) — {run:#?}"
    );
    run
}

/// Host pids whose cmdline contains `needle` (the test process itself excluded).
pub fn host_pids_with(needle: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    let mut found = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return found;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        if let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) {
            if String::from_utf8_lossy(&cmd).contains(needle) {
                found.push(pid);
            }
        }
    }
    found
}

/// Wait up to `within` for no host process to carry `needle`; return the survivors.
pub fn survivors(needle: &str, within: Duration) -> Vec<i32> {
    let t0 = Instant::now();
    loop {
        let v = host_pids_with(needle);
        if v.is_empty() || t0.elapsed() > within {
            return v;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// [`note_blocked`] for a table case: a case that needs a host privilege
/// ([`Without::HostPrivilege`]) gets EPERM or EACCES without any jail too, so only the stop
/// naming its syscall counts as the jail's refusal.
pub fn note_case(failures: &mut Vec<String>, c: &Case, who: Who, r: &Run, sigsys_ok: bool) {
    let how = r.blocked_how("ATTEMPT", c.stops, sigsys_ok);
    let host_errno = ["1", "13"];
    match how {
        Ok(l) if c.without == Without::HostPrivilege && l.starts_with("BLOCKED") => {
            let errno = l.rsplit(' ').next().unwrap_or("");
            if host_errno.contains(&errno) && under_outer_seccomp() {
                // A container's own filter (Docker's default, the shipped profile) refuses
                // these calls with EPERM, and an ERRNO action takes precedence over the
                // jail's user notification: the jail never sees the call. That is the
                // container's refusal, not evidence of the jail's; said loudly.
                eprintln!(
                    "NOTE: {} ({who:?}): EPERM from this container's own seccomp filter, \
                     which refuses the call before the jail's filter can stop it: {l}",
                    c.label
                );
                return;
            }
            if host_errno.contains(&errno) {
                failures.push(format!(
                    "{} ({who:?}): refused with errno {errno}, which the host's kernel gives \
                     with no jail too (the call needs a host privilege): only the stop on \
                     {:?} proves the jail: {l}",
                    c.label, c.stops
                ));
                return;
            }
            eprintln!("{} ({who:?}): blocked: {l}", c.label);
        }
        _ => note_blocked(failures, c.label, who, r, c.stops, sigsys_ok),
    }
}

/// Whether this test process already runs under a seccomp filter (`Seccomp: 2` in
/// /proc/self/status): a container's, whose ERRNO actions win over the jail's.
fn under_outer_seccomp() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("Seccomp:") && l.split_whitespace().nth(1) == Some("2"))
    })
}

/// Note whether run `r` of the attack `label` was blocked (see `Run::blocked_how`); on
/// failure add a line with everything needed to reproduce it.
pub fn note_blocked(
    failures: &mut Vec<String>,
    label: &str,
    who: Who,
    r: &Run,
    stops: &[&str],
    sigsys_ok: bool,
) {
    match r.blocked_how("ATTEMPT", stops, sigsys_ok) {
        Ok(how) => eprintln!("{label} ({who:?}): blocked: {how}"),
        Err(why) => failures.push(format!(
            "{label} ({who:?}): {why}: code {} reason {:?} stdout {:?} stderr {:?}",
            r.code,
            r.stop_reason(),
            r.stdout,
            r.stderr
        )),
    }
}

pub fn assert_all_blocked(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "attacks not blocked:\n{}",
        failures.join("\n")
    );
}

/// The errnos that count as a control's refusal in the attack tables: EPERM, EACCES,
/// ENOTTY, ENOSYS, as numbers (Python's `attempt`) or names (node's).
pub const REFUSAL_ERRNOS: &[&str] = &["1", "13", "25", "38", "EPERM", "EACCES", "ENOTTY", "ENOSYS"];

/// Payload prelude: a helper `attempt(name, fn)` that runs `fn` and prints BREACH when it
/// returns, BLOCKED with the exception and its errno when it raises OSError. Any other
/// exception (a TypeError from a wrong ctypes call) propagates: the payload then neither
/// says BLOCKED nor is stopped, and the test fails instead of counting it as refused.
pub const PRELUDE: &str = r#"
import os, sys
print("START", flush=True)
def attempt(name, fn):
    try:
        r = fn()
    except OSError as e:
        print("BLOCKED", name, type(e).__name__, e.errno, flush=True)
        return False
    print("BREACH", name, repr(r)[:200], flush=True)
    return True
"#;

/// Python with the PRELUDE (marker + `attempt`) in front of `body`.
pub fn py(who: Who, flags: &[&str], body: &str) -> Run {
    python(who, flags, &format!("{PRELUDE}\n{body}"))
}

/// One single-syscall attack per jail run (a forbidden call ends the run): `call` is a
/// Python expression that returns on success and raises OSError when refused with an errno;
/// a stop must name one of `stops`. `without` is what the call does with no jail at all,
/// which the control run (tests/jail/controls.rs) proves for every case of the shared
/// tables, so that a case can pass only because a control of the jail held.
pub struct Case {
    pub label: &'static str,
    pub call: &'static str,
    pub stops: &'static [&'static str],
    pub without: Without,
}

/// What a table case does with no jail: as uid 65534 with every capability of a user
/// namespace of its own (and of its own mount, network, UTS, IPC and pid namespaces, a
/// tmpfs on /tmp, a pty as stdin and stdout, a session of its own), the control run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Without {
    /// The call works: any refusal in the jail (a stop, EPERM, EACCES, ENOTTY) is the
    /// jail's. `absent` names an errno this host's kernel may give instead, when it lacks
    /// the feature altogether (said loudly; never EPERM or EACCES).
    Works { absent: Option<(i32, &'static str)> },
    /// The call reaches a privilege check only the host's root passes (a capability in
    /// the host's user namespace, or a sysctl) and gets EPERM or EACCES there: the same
    /// errno in the jail proves nothing about the jail, so the `exec` suites count only
    /// the stop naming the syscall as its refusal.
    HostPrivilege,
    /// Never run outside the jail (destructive with a privilege, or unsafe to make from
    /// Python at all); the reason. Its proof is the jail's stop naming the syscall, which
    /// only the seccomp filter produces. tests/jail/controls.rs lists these by label.
    StopOnly(&'static str),
}

pub const fn case(label: &'static str, call: &'static str, stops: &'static [&'static str]) -> Case {
    Case {
        label,
        call,
        stops,
        without: Without::Works { absent: None },
    }
}

impl Case {
    /// See [`Without::HostPrivilege`].
    pub const fn host_privilege(self) -> Case {
        Case {
            without: Without::HostPrivilege,
            ..self
        }
    }
    /// See [`Without::StopOnly`].
    pub const fn stop_only(self, why: &'static str) -> Case {
        Case {
            without: Without::StopOnly(why),
            ..self
        }
    }
    /// See [`Without::Works`]: a kernel without `feature` answers `errno` instead.
    pub const fn absent_as(self, errno: i32, feature: &'static str) -> Case {
        Case {
            without: Without::Works {
                absent: Some((errno, feature)),
            },
            ..self
        }
    }
}

/// Copy `text` into the shared directory (readable by nobody) as a policy file; its path.
/// Tests running in parallel write the same name (a policy named by its hash), and an
/// agentjail may be reading it meanwhile: the text goes to a private name first and is
/// renamed into place, so no reader ever sees a truncated or half-written file.
pub fn shared_file(name: &str, text: &str) -> PathBuf {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = &shared().dir;
    let p = dir.join(name);
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
    std::fs::write(&tmp, text).expect("write shared file");
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::rename(&tmp, &p).expect("rename shared file into place");
    p
}

/// A cache directory `who` owns, for `agentjail run --cache` (created 0700 on first use,
/// under the shared directory, removed with it): suites that compile the same program for
/// many inputs (the judge corpus, the attacks per language) pass it so that each program
/// compiles once per user (crate's compile cache: docs/REFERENCE.md, "The compile cache").
/// Identical actions are answered from the result cache there too.
pub fn compile_cache_dir(who: Who) -> String {
    static M: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = M.lock().unwrap_or_else(|p| p.into_inner());
    let p = shared().dir.join(format!("cache-{who:?}").to_lowercase());
    if !p.exists() {
        std::fs::create_dir(&p).expect("cache dir");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700)).unwrap();
        if who == Who::Nobody {
            let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
            // SAFETY: a valid C string; chown has no memory effects.
            assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0);
        }
    }
    p.to_str().unwrap().to_string()
}

/// The result of `agentjail run -` with an action on stdin.
#[derive(Debug)]
pub struct RunRecord {
    pub code: i32,
    /// The record exactly as printed.
    pub raw: Vec<u8>,
    pub record: serde_json::Value,
    pub stderr: String,
    pub wall: Duration,
    pub launcher_pid: u32,
}

impl RunRecord {
    pub fn stop_reason(&self) -> &str {
        self.record["stop_reason"].as_str().unwrap_or("")
    }
}

/// `agentjail run [args] -` as `who`, with `action` on stdin, optionally under an address
/// space limit on agentjail itself (prlimit --as): a run that would exhaust the host's memory
/// fails the test instead.
pub fn run_as(who: Who, args: &[&str], action: &[u8], address_space: Option<u64>) -> RunRecord {
    run_as_env(who, args, action, address_space, &[])
}

/// [`run_as`] with `env` set on agentjail itself (a test proving none of it reaches a jail).
pub fn run_as_env(
    who: Who,
    args: &[&str],
    action: &[u8],
    address_space: Option<u64>,
    env: &[(&str, &str)],
) -> RunRecord {
    let _running = jail_running();
    let s = shared();
    let mut c = match who {
        Who::Nobody => {
            let mut c = Command::new("/usr/bin/setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
            c
        }
        _ => Command::new("/usr/bin/env"),
    };
    if let Some(bytes) = address_space {
        c.arg("/usr/bin/prlimit")
            .arg(format!("--as={bytes}"))
            .arg("--");
    }
    c.arg(&s.bin).arg("run").args(args).arg("-");
    c.envs(env.iter().copied())
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let t0 = Instant::now();
    let mut child = c.spawn().expect("spawn agentjail");
    let launcher_pid = child.id();
    let mut si = child.stdin.take().unwrap();
    let input = action.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = si.write_all(&input);
    });
    let out = child.wait_with_output().expect("wait agentjail");
    let _ = feeder.join();
    let record = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "the record does not parse ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    RunRecord {
        code: out.status.code().unwrap_or(-1),
        raw: out.stdout,
        record,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        wall: t0.elapsed(),
        launcher_pid,
    }
}

// ---------------------------------------------------------------------------------------
// Host processes (for the tests that watch what a server leaves behind)

/// The fields of /proc/<pid>/stat after the command name (which may hold spaces and
/// parentheses): index 0 is the state, the stat file's third field.
fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = s.get(s.rfind(')')? + 2..)?;
    Some(rest.split(' ').map(String::from).collect())
}

/// (ppid, state, starttime) of a host pid, from /proc/PID/stat.
pub fn proc_stat(pid: i32) -> Option<(i32, char, u64)> {
    let f = stat_fields(pid)?;
    Some((
        f.get(1)?.parse().ok()?,
        f.first()?.chars().next()?,
        f.get(19)?.parse().ok()?,
    ))
}

/// CPU time `pid` has used so far (user + system), in clock ticks.
pub fn cpu_ticks(pid: i32) -> Option<u64> {
    let f = stat_fields(pid)?;
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// A process as (pid, starttime): a pid alone could be reused.
pub type Proc = (i32, u64);

/// Whether `p` still runs (a zombie has exited: it holds nothing but its pid).
pub fn alive(p: Proc) -> bool {
    matches!(proc_stat(p.0), Some((_, state, start)) if start == p.1 && state != 'Z' && state != 'X')
}

/// Whether `p` will never run another instruction of its own: it is gone (or its pid was
/// reused), a zombie, already in the kernel's exit path (PF_EXITING: the kernel dequeues
/// the SIGKILL as it starts exiting, and tearing down an address space takes a while), or
/// has a SIGKILL pending. One pass over /proc in which any missing file counts as gone:
/// checking "alive" and "doomed" in two separate reads would call a process that exits
/// between them neither.
pub fn down(p: Proc) -> bool {
    const PF_EXITING: u64 = 0x4;
    let Some(f) = stat_fields(p.0) else {
        return true;
    };
    let state = f.first().and_then(|s| s.chars().next());
    let flags: u64 = f.get(6).and_then(|v| v.parse().ok()).unwrap_or(0);
    let start: Option<u64> = f.get(19).and_then(|v| v.parse().ok());
    if start != Some(p.1) || matches!(state, Some('Z' | 'X')) || flags & PF_EXITING != 0 {
        return true;
    }
    let Ok(status) = std::fs::read_to_string(format!("/proc/{}/status", p.0)) else {
        return true;
    };
    let pending = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .unwrap_or(0)
    };
    let sigkill = 1u64 << (libc::SIGKILL - 1);
    (pending("SigPnd:") | pending("ShdPnd:")) & sigkill != 0
}

/// After a SIGKILLed agentjail: launch `bin exec -- /bin/true` (each launch sweeps the stale
/// job cgroups of dead launchers) until `swept()` holds, for at most 5 s. A dying task loses
/// its cmdline before it leaves its cgroup, and the sweep skips a populated cgroup, so one
/// launch right after the processes look gone can be too early. Whether every launch
/// succeeded.
pub fn sweep_until(bin: &Path, swept: impl Fn() -> bool) -> bool {
    let t = Instant::now();
    let mut all_ok = true;
    loop {
        let ok = Command::new(bin)
            .args(["exec", "--", "/bin/true"])
            .output()
            .is_ok_and(|o| o.status.success());
        all_ok &= ok;
        if swept() || t.elapsed() > Duration::from_secs(5) {
            return all_ok;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub fn cmdline(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

/// Every live descendant of `root` on the host, `root` excluded.
pub fn descendants(root: i32) -> Vec<Proc> {
    let mut kids: std::collections::HashMap<i32, Vec<Proc>> = std::collections::HashMap::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if let Some((ppid, state, start)) = proc_stat(pid) {
            if state != 'Z' && state != 'X' {
                kids.entry(ppid).or_default().push((pid, start));
            }
        }
    }
    let mut out = Vec::new();
    let mut todo = vec![root];
    while let Some(p) = todo.pop() {
        for &(k, s) in kids.get(&p).map(Vec::as_slice).unwrap_or(&[]) {
            out.push((k, s));
            todo.push(k);
        }
    }
    out
}

/// Every mount of this process's namespace, as "mount-point fs-root" pairs (mountinfo fields
/// 4 and 5): compared before and after, a mount agentjail left behind shows up.
pub fn mount_points() -> std::collections::BTreeSet<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .map(|l| l.split(' ').skip(3).take(2).collect::<Vec<_>>().join(" "))
        .collect()
}

/// Test harness directories (made by the tests of every subject, never by agentjail): a
/// test comparing temp entries before and after leaves them out (the jail tests run beside
/// the serve tests, whose snapshots once caught cgroup_host's doctor directory).
pub const HARNESS_PREFIXES: &[&str] = &[
    "agentjail-attack-",
    "agentjail-fa-",
    "agentjail-doctor-",
    "agentjail-elfdeps-",
    "ajserve-",
];

/// True for a temp entry's name that is not a test harness's ([`HARNESS_PREFIXES`]).
pub fn not_harness(name: &str) -> bool {
    !HARNESS_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Entries under /tmp, /dev/shm and /var/tmp whose name says agentjail and that `keep`
/// accepts (by name), as paths.
pub fn agentjail_temp_entries(keep: impl Fn(&str) -> bool) -> std::collections::BTreeSet<String> {
    ["/tmp", "/dev/shm", "/var/tmp"]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.contains("agentjail") && keep(&n)
        })
        .map(|e| e.path().display().to_string())
        .collect()
}

// ---------------------------------------------------------------------------------------
// One binary, many subjects

/// The name libtest knows test `f` by when `module` is the caller's `module_path!()`: the
/// module path less the crate's name, what `--exact` needs to re-run one test of this
/// binary in a child process.
pub fn test_name(module: &str, f: &str) -> String {
    match module.split_once("::") {
        Some((_, m)) => format!("{m}::{f}"),
        None => f.to_string(),
    }
}

/// Jails of this test process: many at once (every launch holds [`jail_running`]), or one
/// test [`alone`].
static HOST: RwLock<()> = RwLock::new(());

thread_local! {
    /// This thread holds [`alone`]: its own launches take no read guard (no self-deadlock).
    static ALONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Held by a test that compares host-wide state before and after (every `agentjail-*`
/// cgroup and temp entry, every runner process): while it lives no other test of this
/// binary starts a jail, so what the comparison sees is that test's alone. A binary used to
/// hold one subject; now that several share it, this is what keeps their runs apart.
pub struct Alone(#[allow(dead_code)] RwLockWriteGuard<'static, ()>);

impl Drop for Alone {
    fn drop(&mut self) {
        ALONE.with(|a| a.set(false));
    }
}

pub fn alone() -> Alone {
    let g = HOST.write().unwrap_or_else(|e| e.into_inner());
    ALONE.with(|a| a.set(true));
    Alone(g)
}

/// Held while one launch of agentjail runs (the common launchers take it; a test with a
/// launcher of its own takes it there): waits while a test is [`alone`]. None on the thread
/// that is alone, and None when this thread already holds one (a reader waiting behind a
/// queued writer while holding a read guard would deadlock).
pub fn jail_running() -> Option<Running> {
    if ALONE.with(|a| a.get()) || READING.with(|r| r.get()) {
        return None;
    }
    let g = HOST.read().unwrap_or_else(|e| e.into_inner());
    READING.with(|r| r.set(true));
    Some(Running(g))
}

thread_local! {
    static READING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// See [`jail_running`].
pub struct Running(#[allow(dead_code)] RwLockReadGuard<'static, ()>);

impl Drop for Running {
    fn drop(&mut self) {
        READING.with(|r| r.set(false));
    }
}

// ---------------------------------------------------------------------------------------
// Actions and policies the tests share

/// A Python action: id "t", `main.py`, `code`, then every key of `extra` (an object) over
/// it (`input_payload`, `files`, `output_schema`, another id...).
pub fn action_json(code: &str, extra: serde_json::Value) -> serde_json::Value {
    let mut a = serde_json::json!({"id": "t", "language": "python", "entrypoint": "main.py",
                                   "code": code});
    for (k, v) in extra.as_object().expect("extra is an object") {
        a[k] = v.clone();
    }
    a
}
