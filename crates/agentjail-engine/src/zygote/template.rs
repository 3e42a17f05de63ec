//! The template's side: runs in `agentjail-zygote`, outside any jail. It loads the policy,
//! prepares the interpreter once, then spawns one jail per request from the server.
//!
//! Protocol on fd 0 (a SOCK_SEQPACKET socket whose other end the server holds), typed in
//! `protocol.rs`:
//! 1. server → template: `Start` (the policy's path and sha256) and, when it says so, the
//!    policy file's bytes as the next message (the server read them; a path is never
//!    reopened here). The template loads the policy, builds the plan of the warm jails and
//!    prepares it once (the root's steps, argv, landlock ruleset, seccomp programs: every
//!    jail of this template is cloned from that one preparation); template → server:
//!    `Ready` with the plan's sha256 (the server checks that both built the same plan), or
//!    `Refused`.
//! 2. per jail, server → template: `Spawn` (the number n, what the cgroup covers, and per
//!    cgroup directory its join fd (v2 cgroup.procs, v1 tasks) and, v2, the directory fd); template → server:
//!    `Spawned` with the jail's descriptors as its `FdSet` names them, or `Failed` with the
//!    failed child's pidfd (killed here; the server reaps it). Before either, the cloned
//!    child itself sends `Cloned { n }` with a pidfd of itself (jail/child.rs, step 0), so
//!    the server can kill and reap it (its own, by CLONE_PARENT) if the template dies or
//!    stalls mid-handshake.
//!
//! EOF on fd 0 ends the template. It dies with the server (PDEATHSIG) in any case.

use super::protocol::{self, FdSet, FromTemplate, ToTemplate, WireSetupError};
use super::{EmbeddedPython, MAX_MESSAGE, MAX_POLICY_TEXT, PYTHON_ARGS};
use crate::plan::JailPlan;
use crate::runner::{self, Language, Mode};
use agentjail_jail::cgroup::JobCgroup;
use agentjail_jail::prepared::{self, CgroupCover, Prepared};
use agentjail_jail::spawn;
use agentjail_jail::{os, rlimit, SetupError};
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd, RawFd};

/// The interpreter the template binary embeds (libpython; agentjail itself cannot link it).
pub trait Interpreter {
    /// Load the runner (`source`, compiled with `filename`) as the module
    /// `agentjail_runner` and call its `template(preloads)`.
    fn load_runner(
        &mut self,
        source: &str,
        filename: &str,
        preloads: &[String],
    ) -> Result<(), String>;
    /// Around each jail's clone: PyOS_BeforeFork / PyOS_AfterFork_Parent.
    fn before_fork(&mut self);
    /// Which Python this is (scripts/build-zygote.sh fixed it at build time).
    fn python(&self) -> EmbeddedPython;
    fn after_fork_parent(&mut self);
}

const SOCK: RawFd = 0;

/// The template's main: `entry` is what each jail's program runs instead of exec (it never
/// returns). Returns the process's exit status.
pub fn template_main(interp: &mut dyn Interpreter, entry: fn() -> !) -> i32 {
    match serve_template(interp, entry) {
        Ok(()) => 0,
        Err(msg) => {
            // The server prints the refusal it is sent (once: serve's default falls back
            // with one line); stderr only when it cannot be told.
            if send(&FromTemplate::Refused { error: msg.clone() }, &[]).is_err() {
                eprintln!("agentjail-zygote: {msg}");
            }
            1
        }
    }
}

fn serve_template(interp: &mut dyn Interpreter, entry: fn() -> !) -> Result<(), String> {
    // Die with the server; and if it is already gone, the socket's EOF ends us below.
    os::process::die_with_parent().map_err(|e| format!("prctl(PR_SET_PDEATHSIG): errno {e}"))?;
    let (start, _) = recv()?.ok_or("the server closed the socket before the policy")?;
    let ToTemplate::Start {
        policy_path,
        policy_sha256,
        text,
    } = start
    else {
        return Err("the server's first message is not Start".into());
    };
    let text = if text { Some(recv_bytes()?) } else { None };
    let plan = load_plan(
        &policy_path,
        &policy_sha256,
        text.as_deref(),
        &interp.python(),
    )?;
    let preloads = preloads(&plan)?;
    interp.load_runner(runner::PYTHON, runner::PATH, &preloads)?;
    single_threaded()?;
    // The plan prepared once, for every jail: each spawn only sets what differs (the
    // rlimits its cgroup leaves to them, its announcement).
    let mut prepared = prepared::prepare(&plan, CgroupCover::default())
        .map_err(|e| format!("prepare the jail plan: {e}"))?;
    prepared.entry = Some(entry);
    // The jail is the server's child, as a cold jail is: the server reaps it, reads its
    // status and rusage, and it dies with the server (its PDEATHSIG parent).
    prepared.clone_flags |= libc::CLONE_PARENT as u64;
    let ready = FromTemplate::Ready {
        plan_sha256: plan_sha256(&plan),
    };
    send(&ready, &[])?;
    while let Some((request, fds)) = recv()? {
        let (reply, fds) = spawn_one(&plan, &mut prepared, &request, fds, interp);
        let borrowed: Vec<BorrowedFd<'_>> = fds.iter().map(|f| f.as_fd()).collect();
        send(&reply, &borrowed)?;
        // Our copies close here: the server holds the jail now.
    }
    Ok(())
}

/// The policy the server runs, from the bytes it read (or the embedded default), checked
/// against the server's hash, and the plan of its warm jails.
fn load_plan(
    path: &str,
    sha: &str,
    text: Option<&[u8]>,
    embedded: &EmbeddedPython,
) -> Result<JailPlan, String> {
    let loaded = match text {
        None if path == crate::policy::DEFAULT_POLICY_ORIGIN => {
            crate::policy::load_default().map_err(|e| e.to_string())?
        }
        None => return Err(format!("no policy text for {path}")),
        Some(t) => {
            let t = std::str::from_utf8(t).map_err(|_| "the policy text is not UTF-8")?;
            // Never the credentials' values: every jail cloned from here continues in this
            // process's memory (freed memory included), and the proxy is the server's.
            crate::policy::load_str_without_secrets(t, path).map_err(|e| e.to_string())?
        }
    };
    if loaded.sha256 != sha {
        return Err(format!(
            "the policy text has sha256 {}, the server's {sha}",
            loaded.sha256
        ));
    }
    let p = &loaded.policy;
    check_interpreter(
        embedded,
        &p.interpreter.python,
        p.python_version(),
        &p.interpreter.python_args,
    )?;
    crate::pipeline::source::runner_plan(p, Language::Python, Mode::Run, true, &Default::default())
        .map_err(String::from)
}

/// What the template and the server compare, so the jails are built from the plan whose
/// enforcement the records state (both probe the host for it).
pub fn plan_sha256(plan: &JailPlan) -> String {
    crate::digest::sha256_hex(serde_json::to_string(plan).unwrap_or_default().as_bytes())
}

/// The clone of a multi-threaded process keeps one thread: a lock another thread held
/// (a preload's thread, inside malloc) would stay held in every jail. A preload that
/// starts a thread is refused.
fn single_threaded() -> Result<(), String> {
    let threads = std::fs::read_dir("/proc/self/task")
        .map_err(|e| format!("/proc/self/task: {e}"))?
        .count();
    if threads != 1 {
        return Err(format!(
            "the template has {threads} threads after the preloads (a preloaded module started one); the zygote needs one: drop that preload, or serve with --no-zygote"
        ));
    }
    Ok(())
}

/// The policy must run the Python this template embeds (`version`: the policy's detected
/// version), with the flags it was started with.
pub fn check_interpreter(
    embedded: &EmbeddedPython,
    python: &str,
    version: &str,
    args: &[String],
) -> Result<(), String> {
    let real = std::fs::canonicalize(python)
        .map_err(|e| format!("the policy's interpreter {python}: {e}"))?;
    let embedded_real = std::fs::canonicalize(embedded.binary)
        .unwrap_or_else(|_| std::path::PathBuf::from(embedded.binary));
    if real != embedded_real || version != embedded.version {
        return Err(format!(
            "{} was built for Python {} ({}); the policy's interpreter {python} is Python {version} ({}): rebuild the zygote for it with `scripts/build-zygote.sh --python {python}`, or serve with --no-zygote",
            super::BINARY,
            embedded.version,
            embedded.binary,
            real.display()
        ));
    }
    check_args(args)
}

/// The policy's python_args must be the flags the template was initialised with.
pub fn check_args(args: &[String]) -> Result<(), String> {
    if args
        .iter()
        .map(String::as_str)
        .ne(PYTHON_ARGS.iter().copied())
    {
        return Err(format!(
            "the zygote runs Python as `{}`; the policy's python_args are {args:?}: the zygote cannot run its jobs (serve with --no-zygote)",
            PYTHON_ARGS.join(" ")
        ));
    }
    Ok(())
}

/// The modules the plan's runner argv asks to import ahead (after the runner, its mode and
/// "warm").
fn preloads(plan: &JailPlan) -> Result<Vec<String>, String> {
    let at = plan
        .argv
        .iter()
        .position(|a| a == runner::PATH)
        .ok_or("the plan's argv has no runner")?;
    Ok(plan.argv.iter().skip(at + 3).cloned().collect())
}

/// One jail for one request, cloned from the plan prepared once: the reply and the
/// descriptors that go with it.
fn spawn_one(
    plan: &JailPlan,
    prepared: &mut Prepared,
    request: &ToTemplate,
    fds: Vec<OwnedFd>,
    interp: &mut dyn Interpreter,
) -> (FromTemplate, Vec<OwnedFd>) {
    let refused = |e: &SetupError| FromTemplate::Failed {
        error: WireSetupError::from(e),
        pidfd: false,
    };
    let ToTemplate::Spawn { n, cgroups, .. } = request else {
        let e = SetupError::new("zygote request", Some(libc::EINVAL), "not a spawn request");
        return (refused(&e), Vec::new());
    };
    let cgroup = match attach_target(cgroups, fds) {
        Ok(c) => c,
        Err(e) => return (refused(&e), Vec::new()),
    };
    // Each jail adds its own path rules to its ruleset: never to one an earlier jail
    // filled (prepared.rs, `renew_landlock`).
    if let Err(e) = prepared.renew_landlock(plan) {
        return (refused(&e), Vec::new());
    }
    let cover = request.cover();
    prepared.rlimits = rlimit::prepare(&prepared::effective_rlimits(&plan.rlimits, cover));
    prepared.pin_cpus = prepared::pin_cpus(plan, cover);
    // The child tells the server of itself first (child.rs, step 0): should this process
    // die in the handshake, the server kills and reaps it (its own, by CLONE_PARENT).
    let cloned = protocol::encode(&FromTemplate::Cloned { n: *n });
    prepared.announce = Some((SOCK, cloned));
    interp.before_fork();
    let spawned = spawn::spawn_keeping(prepared, cgroup.as_ref());
    interp.after_fork_parent();
    match spawned {
        Ok(s) => FdSet::split(s),
        Err((e, pidfd)) => {
            let fds: Vec<OwnedFd> = pidfd.into_iter().collect();
            if let Some(fd) = fds.first() {
                // Killed here, reaped by the server (whose child it is).
                let _ = os::process::kill_pidfd(fd);
            }
            let reply = FromTemplate::Failed {
                error: WireSetupError::from(&e),
                pidfd: !fds.is_empty(),
            };
            (reply, fds)
        }
    }
}

/// The request's cgroup descriptors as an attach-only handle (None: no cgroup).
fn attach_target(
    cgroups: &[protocol::CgroupFds],
    fds: Vec<OwnedFd>,
) -> Result<Option<JobCgroup>, SetupError> {
    let bad = || {
        SetupError::new(
            "zygote request",
            Some(libc::EINVAL),
            "malformed cgroup handles",
        )
    };
    let mut fds = fds.into_iter();
    let mut handles = Vec::new();
    for d in cgroups {
        let join = File::from(fds.next().ok_or_else(bad)?);
        let dir = if d.v2_dir {
            Some(File::from(fds.next().ok_or_else(bad)?))
        } else {
            None
        };
        handles.push((d.v2_dir, join, dir));
    }
    Ok((!handles.is_empty()).then(|| JobCgroup::attach_only(handles)))
}

fn send(m: &FromTemplate, fds: &[BorrowedFd<'_>]) -> Result<(), String> {
    os::fd::send_with_fds(std::io::stdin(), &protocol::encode(m), fds)
        .map_err(|e| format!("send to the server: errno {e}"))
}

/// The next message as raw bytes (the policy text).
fn recv_bytes() -> Result<Vec<u8>, String> {
    let mut buf = vec![0u8; MAX_POLICY_TEXT];
    let (n, _) = os::fd::recv_with_fds(std::io::stdin(), &mut buf)
        .map_err(|e| format!("read the policy from the server: errno {e}"))?;
    buf.truncate(n);
    Ok(buf)
}

/// The next message, or None at EOF.
fn recv() -> Result<Option<(ToTemplate, Vec<OwnedFd>)>, String> {
    let mut buf = vec![0u8; MAX_MESSAGE];
    let (n, fds) = os::fd::recv_with_fds(std::io::stdin(), &mut buf)
        .map_err(|e| format!("read from the server: errno {e}"))?;
    if n == 0 {
        return Ok(None);
    }
    let m = protocol::decode(&buf[..n]).map_err(|e| format!("malformed request: {e}"))?;
    Ok(Some((m, fds)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> Vec<String> {
        PYTHON_ARGS.iter().map(|a| a.to_string()).collect()
    }

    /// The host's Debian python3.11, as scripts/build-zygote.sh embeds it by default.
    const HOST: EmbeddedPython = EmbeddedPython {
        version: "3.11",
        binary: "/usr/bin/python3.11",
        home: "/usr",
    };

    #[test]
    fn only_the_embedded_python_with_its_flags_is_accepted() {
        if !std::path::Path::new(HOST.binary).exists() {
            eprintln!("SKIP: no {} on this host", HOST.binary);
            return;
        }
        // /usr/bin/python3 is a link to it on Debian: what it resolves to is what counts.
        check_interpreter(&HOST, "/usr/bin/python3", "3.11", &args()).expect("the host's python3");
        check_interpreter(&HOST, HOST.binary, "3.11", &args()).expect("the embedded python");
        // The same file said to be another version (a policy pinning it wrongly is refused
        // at load; the template does not trust that either).
        let e = check_interpreter(&HOST, HOST.binary, "3.12", &args()).unwrap_err();
        assert!(e.contains("Python 3.12"), "{e}");
        // A python3.11 of the same name elsewhere: another prefix, another stdlib.
        let dir = std::env::temp_dir().join(format!("agentjail-zygote-ut-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let copy = dir.join("python3.11");
        std::fs::copy(HOST.binary, &copy).unwrap();
        let e = check_interpreter(&HOST, copy.to_str().unwrap(), "3.11", &args()).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            e.contains(HOST.binary)
                && e.contains("--no-zygote")
                && e.contains("scripts/build-zygote.sh --python"),
            "{e}"
        );
        // Other flags.
        let mut optimized = args();
        optimized.push("-O".into());
        let e = check_interpreter(&HOST, HOST.binary, "3.11", &optimized).unwrap_err();
        assert!(e.contains("python_args"), "{e}");
        let e = check_interpreter(&HOST, "/nonexistent/python3.11", "3.11", &args()).unwrap_err();
        assert!(e.contains("/nonexistent/python3.11"), "{e}");
    }
}
