//! The template's side: runs in `agentjail-zygote`, outside any jail. It loads the policy,
//! prepares the interpreter once, then spawns one jail per request from the server.
//!
//! Protocol on fd 0 (a SOCK_SEQPACKET socket whose other end the server holds):
//! 1. server → template: `{"policy_path": …, "policy_sha256": …, "text": b}` and, when
//!    `text`, the policy file's bytes as the next message (the server read them; a path
//!    is never reopened here). template → server: `{"ready": true, "plan_sha256": …}` (the
//!    server checks that both built the same plan) or `{"error": "…"}`.
//! 2. per jail, server → template: `{"n": …, "memory": b, "pids": b, "dirs": [v2, …]}`
//!    with, per directory, its cgroup.procs fd and (v2) the directory fd; template →
//!    server: `{"pid": …, "program_pid": …, "fds": bits}` with the
//!    jail's descriptors (`FD_NAMES` order), or `{"error": {stage, errno, hint}, "pidfd":
//!    b}` with the failed child's pidfd (killed here; the server reaps it). Before either,
//!    the cloned child itself sends `{"cloned": n}` with a pidfd of itself (jail/child.rs,
//!    step 0), so the server can kill and reap it (its own, by CLONE_PARENT) if the
//!    template dies or stalls mid-handshake.
//!
//! EOF on fd 0 ends the template. It dies with the server (PDEATHSIG) in any case.

use super::{EmbeddedPython, MAX_MESSAGE, MAX_POLICY_TEXT, PYTHON_ARGS};
use crate::jail::cgroup::JobCgroup;
use crate::jail::prepared::{self, CgroupCover};
use crate::jail::spawn::{self, Spawned};
use crate::jail::{sys, SetupError};
use crate::plan::JailPlan;
use crate::runner::{self, Language, Mode};
use serde_json::{json, Value};
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

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
            let _ = send(&json!({ "error": msg }), &[]);
            eprintln!("agentjail-zygote: {msg}");
            1
        }
    }
}

fn serve_template(interp: &mut dyn Interpreter, entry: fn() -> !) -> Result<(), String> {
    // Die with the server; and if it is already gone, the socket's EOF ends us below.
    sys::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong)
        .map_err(|e| format!("prctl(PR_SET_PDEATHSIG): errno {e}"))?;
    let (config, _) = recv()?.ok_or("the server closed the socket before the policy")?;
    let text = match config["text"].as_bool() {
        Some(true) => Some(recv_bytes()?),
        _ => None,
    };
    let plan = load_plan(&config, text.as_deref(), &interp.python())?;
    let preloads = preloads(&plan)?;
    interp.load_runner(runner::PYTHON, runner::PATH, &preloads)?;
    single_threaded()?;
    send(
        &json!({"ready": true, "plan_sha256": plan_sha256(&plan)}),
        &[],
    )?;
    while let Some((request, fds)) = recv()? {
        let (reply, fds) = spawn_one(&plan, &request, fds, interp, entry);
        let raw: Vec<RawFd> = fds.iter().map(|f| f.as_raw_fd()).collect();
        send(&reply, &raw)?;
        // Our copies close here: the server holds the jail now.
    }
    Ok(())
}

/// The policy the server runs, from the bytes it read (or the embedded default), checked
/// against the server's hash, and the plan of its warm jails.
fn load_plan(
    config: &Value,
    text: Option<&[u8]>,
    embedded: &EmbeddedPython,
) -> Result<JailPlan, String> {
    let path = config["policy_path"].as_str().ok_or("no policy_path")?;
    let sha = config["policy_sha256"].as_str().ok_or("no policy_sha256")?;
    let loaded = match text {
        None if path == crate::policy::DEFAULT_POLICY_ORIGIN => {
            crate::policy::load_default().map_err(|e| e.to_string())?
        }
        None => return Err(format!("no policy text for {path}")),
        Some(t) => {
            let t = std::str::from_utf8(t).map_err(|_| "the policy text is not UTF-8")?;
            crate::policy::load_str(t, path).map_err(|e| e.to_string())?
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
    crate::run::runner_plan(p, Language::Python, Mode::Run, true, &Default::default())
}

/// What the template and the server compare, so the jails are built from the plan whose
/// enforcement the records state (both probe the host for it).
pub fn plan_sha256(plan: &JailPlan) -> String {
    crate::run::sha256_hex(serde_json::to_string(plan).unwrap_or_default().as_bytes())
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
            "the template has {threads} threads after the preloads (a preloaded module started one); the zygote needs one: run without --zygote or drop that preload"
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
            "{} was built for Python {} ({}); the policy's interpreter {python} is Python {version} ({}): rebuild the zygote for it with `scripts/build-zygote.sh --python {python}`, or run without --zygote",
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
            "the zygote runs Python as `{}`; the policy's python_args are {args:?}: run without --zygote",
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

/// One jail for one request: the reply and the descriptors that go with it.
fn spawn_one(
    plan: &JailPlan,
    request: &Value,
    fds: Vec<OwnedFd>,
    interp: &mut dyn Interpreter,
    entry: fn() -> !,
) -> (Value, Vec<OwnedFd>) {
    let refused = |e: SetupError| json!({"error": {"stage": e.stage, "errno": e.errno, "hint": e.hint}, "pidfd": false});
    let cover = CgroupCover {
        memory: request["memory"].as_bool().unwrap_or(false),
        pids: request["pids"].as_bool().unwrap_or(false),
    };
    let cgroup = match attach_target(request, fds) {
        Ok(c) => c,
        Err(e) => return (refused(e), Vec::new()),
    };
    let mut prepared = match prepared::prepare(plan, cover) {
        Ok(p) => p,
        Err(e) => return (refused(e), Vec::new()),
    };
    prepared.entry = Some(entry);
    // The jail is the server's child, as a cold jail is: the server reaps it, reads its
    // status and rusage, and it dies with the server (its PDEATHSIG parent).
    prepared.clone_flags |= libc::CLONE_PARENT as u64;
    // The child tells the server of itself first (child.rs, step 0): should this process
    // die in the handshake, the server kills and reaps it (its own, by CLONE_PARENT).
    let n = request["n"].as_u64().unwrap_or(0);
    prepared.announce = Some((SOCK, json!({ "cloned": n }).to_string().into_bytes()));
    interp.before_fork();
    let spawned = spawn::spawn_keeping(&prepared, cgroup.as_ref());
    interp.after_fork_parent();
    match spawned {
        Ok(s) => handover(s),
        Err((e, pidfd)) => {
            let mut reply = refused(e);
            let fds: Vec<OwnedFd> = pidfd.into_iter().collect();
            if let Some(fd) = fds.first() {
                // Killed here, reaped by the server (whose child it is).
                let _ = sys::pidfd_send_signal(fd.as_raw_fd(), libc::SIGKILL);
                reply["pidfd"] = json!(true);
            }
            (reply, fds)
        }
    }
}

/// The request's cgroup descriptors as an attach-only handle (None: no cgroup).
fn attach_target(request: &Value, fds: Vec<OwnedFd>) -> Result<Option<JobCgroup>, SetupError> {
    let bad = || {
        SetupError::new(
            "zygote request",
            Some(libc::EINVAL),
            "malformed cgroup handles",
        )
    };
    let dirs = request["dirs"].as_array().ok_or_else(bad)?;
    let mut fds = fds.into_iter();
    let mut handles = Vec::new();
    for d in dirs {
        let v2 = d.as_bool().ok_or_else(bad)?;
        let procs = File::from(fds.next().ok_or_else(bad)?);
        let dir = if v2 {
            Some(File::from(fds.next().ok_or_else(bad)?))
        } else {
            None
        };
        handles.push((v2, procs, dir));
    }
    Ok((!handles.is_empty()).then(|| JobCgroup::attach_only(handles)))
}

/// A spawned jail as the reply and its descriptors (`FD_NAMES` order: the four always
/// there, then a bit per optional one); our copies close when they are sent.
fn handover(s: Spawned) -> (Value, Vec<OwnedFd>) {
    let optional = [
        s.stdin,
        s.listener,
        s.job,
        s.reply,
        s.program_pidfd,
        s.held_dir,
        s.net,
    ];
    let mut bits = 0u32;
    let mut fds = vec![s.pidfd, s.stdout, s.stderr, s.status];
    for (i, fd) in optional.into_iter().enumerate() {
        if let Some(fd) = fd {
            bits |= 1 << (i + 4);
            fds.push(fd);
        }
    }
    let reply = json!({
        "pid": s.pid,
        "program_pid": s.program_pid,
        "fds": bits | 0xf,
    });
    (reply, fds)
}

fn send(v: &Value, fds: &[RawFd]) -> Result<(), String> {
    sys::send_with_fds(SOCK, v.to_string().as_bytes(), fds)
        .map_err(|e| format!("send to the server: errno {e}"))
}

/// The next message as raw bytes (the policy text).
fn recv_bytes() -> Result<Vec<u8>, String> {
    let mut buf = vec![0u8; MAX_POLICY_TEXT];
    let (n, _) = sys::recv_with_fds(SOCK, &mut buf)
        .map_err(|e| format!("read the policy from the server: errno {e}"))?;
    buf.truncate(n);
    Ok(buf)
}

/// The next message, or None at EOF.
fn recv() -> Result<Option<(Value, Vec<OwnedFd>)>, String> {
    let mut buf = vec![0u8; MAX_MESSAGE];
    let (n, fds) = sys::recv_with_fds(SOCK, &mut buf)
        .map_err(|e| format!("read from the server: errno {e}"))?;
    if n == 0 {
        return Ok(None);
    }
    let v = serde_json::from_slice(&buf[..n]).map_err(|e| format!("malformed request: {e}"))?;
    Ok(Some((v, fds)))
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
                && e.contains("without --zygote")
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
