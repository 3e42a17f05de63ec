//! The server's side: starts `agentjail-zygote`, hands it each jail's cgroup, and takes the
//! jail it spawned (its pidfd and pipes) back as the [`Spawned`] a local clone would give.

use super::{BINARY, FD_NAMES, MAX_MESSAGE};
use crate::jail::cgroup::JobCgroup;
use crate::jail::prepared::CgroupCover;
use crate::jail::spawn::{self, Spawned};
use crate::jail::{sys, SetupError};
use crate::plan::JailPlan;
use crate::policy::LoadedPolicy;
use serde_json::{json, Value};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long the template may take to load the policy, its preloads and the warm-up.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one jail's clone and handshake may take (milliseconds, normally): past it the
/// template is taken for stuck, ended and started again.
const SPAWN_TIMEOUT: Duration = Duration::from_secs(30);

/// One running template: its control socket and process.
struct Template {
    sock: OwnedFd,
    child: Child,
}

impl Drop for Template {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The engine's zygote for one policy: spawns that policy's warm Python jails.
pub struct Zygote {
    /// Asks the keeper thread for a new template.
    launch: Mutex<Option<mpsc::Sender<LaunchReply>>>,
    keeper: Mutex<Option<JoinHandle<()>>>,
    template: Mutex<Option<Template>>,
}

/// Where the keeper thread sends a new template.
type LaunchReply = mpsc::SyncSender<Result<Template, String>>;

/// What starting a template takes.
struct Launcher {
    exe: PathBuf,
    config: Value,
    env: Vec<(String, String)>,
}

impl Launcher {
    /// Exec the template with the jail's environment (its interpreter's `os.environ` is what
    /// every program will see) and wait for its ready message.
    fn launch(&self) -> Result<Template, String> {
        let (ours, theirs) =
            sys::socketpair_seqpacket().map_err(|e| format!("socketpair: errno {e}"))?;
        let child = Command::new(&self.exe)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir("/")
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.exe.display()))?;
        let t = Template { sock: ours, child };
        sys::send_with_fds(t.sock.as_raw_fd(), self.config.to_string().as_bytes(), &[])
            .map_err(|e| format!("{BINARY}: send the policy: errno {e}"))?;
        let reply = recv(&t.sock, Some(READY_TIMEOUT))?.0;
        if reply["ready"] != json!(true) {
            return Err(format!(
                "{BINARY} did not start: {}",
                reply["error"].as_str().unwrap_or("no reason given")
            ));
        }
        Ok(t)
    }
}

impl Zygote {
    /// Start the template for `policy` (whose warm jails are `plan`'s) and wait until it is
    /// ready.
    ///
    /// Every template is started by one thread of the zygote's own (the keeper), which lives
    /// until the zygote is dropped: a template dies with the thread that started it
    /// (PDEATHSIG), and so does every jail it clones (CLONE_PARENT makes that same thread
    /// their parent). Started by whichever thread asked, a template replaced by a spawner
    /// thread would tie its jails to that thread's life.
    pub fn start(policy: &LoadedPolicy, plan: &JailPlan) -> Result<Zygote, String> {
        let p = &policy.policy;
        super::template::check_interpreter(&p.interpreter.python, &p.interpreter.python_args)?;
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find agentjail's own path: {e}"))?
            .with_file_name(BINARY);
        if !exe.is_file() {
            return Err(format!(
                "--zygote needs {} next to agentjail; build it with scripts/build-zygote.sh",
                exe.display()
            ));
        }
        let launcher = Launcher {
            exe,
            config: json!({"policy_path": policy.path, "policy_sha256": policy.sha256}),
            env: plan.env.clone(),
        };
        let (tx, rx) = mpsc::channel::<LaunchReply>();
        let keeper = std::thread::Builder::new()
            .name("agentjail-zygote".into())
            .spawn(move || {
                for reply in rx {
                    let _ = reply.send(launcher.launch());
                }
            })
            .map_err(|e| format!("cannot start the zygote's thread: {e}"))?;
        let z = Zygote {
            launch: Mutex::new(Some(tx)),
            keeper: Mutex::new(Some(keeper)),
            template: Mutex::new(None),
        };
        let t = z.new_template()?;
        *z.lock() = Some(t);
        Ok(z)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Template>> {
        self.template.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new template, started by the keeper thread.
    fn new_template(&self) -> Result<Template, String> {
        let (tx, rx) = mpsc::sync_channel(1);
        let sent = match &*self.launch.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(l) => l.send(tx).is_ok(),
            None => false,
        };
        if !sent {
            return Err("the zygote is shut down".into());
        }
        rx.recv()
            .unwrap_or_else(|_| Err("the zygote's thread is gone".into()))
    }

    /// Spawn one jail in the template, into `cg`. A template that died is started again
    /// once; a jail that fails its setup is reaped here (it is our child).
    pub fn spawn(&self, cg: Option<&JobCgroup>, cover: CgroupCover) -> Result<Spawned, SetupError> {
        let (request, fds) = request(cg, cover);
        let mut guard = self.lock();
        let mut restarted = false;
        loop {
            if guard.is_none() {
                *guard = Some(self.new_template().map_err(|e| unavailable(&e))?);
                restarted = true;
            }
            let Some(t) = guard.as_ref() else { continue };
            match exchange(t, &request, &fds) {
                Ok(reply) => return spawned(reply),
                Err(e) if restarted => {
                    *guard = None;
                    return Err(unavailable(&e));
                }
                Err(_) => *guard = None,
            }
        }
    }
}

impl Drop for Zygote {
    /// The template first (its jails are ended by now: the engine drops the zygote with its
    /// pools), then the keeper thread, whose exit would take them down anyway.
    fn drop(&mut self) {
        drop(self.lock().take());
        drop(self.launch.lock().unwrap_or_else(|e| e.into_inner()).take());
        if let Some(t) = self.keeper.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = t.join();
        }
    }
}

fn unavailable(message: &str) -> SetupError {
    SetupError::new(
        format!("zygote: {message}"),
        None,
        "the zygote template could not spawn the jail; run without --zygote to compare",
    )
}

/// The request for one jail: what the cgroup covers and its attach descriptors.
fn request(cg: Option<&JobCgroup>, cover: CgroupCover) -> (Vec<u8>, Vec<RawFd>) {
    let mut dirs = Vec::new();
    let mut fds = Vec::new();
    for (v2, procs, dir) in cg.map(|c| c.attach_handles()).unwrap_or_default() {
        fds.push(procs.as_raw_fd());
        // A v2 directory goes with its fd (CLONE_INTO_CGROUP); without one the template
        // joins it by cgroup.procs, as a v1 directory.
        match dir.filter(|_| v2) {
            Some(d) => {
                dirs.push(true);
                fds.push(d.as_raw_fd());
            }
            None => dirs.push(false),
        }
    }
    let r = json!({"memory": cover.memory, "pids": cover.pids, "dirs": dirs});
    (r.to_string().into_bytes(), fds)
}

/// One request and its reply (the template answers each request before the next). The
/// template first reports the clone with the child's pidfd: when the handshake then fails,
/// or the template dies or stalls in it, the child (ours by CLONE_PARENT) is killed and
/// reaped here, never left behind.
fn exchange(t: &Template, request: &[u8], fds: &[RawFd]) -> Result<(Value, Vec<OwnedFd>), String> {
    sys::send_with_fds(t.sock.as_raw_fd(), request, fds)
        .map_err(|e| format!("send to {BINARY}: errno {e}"))?;
    let mut cloned: Option<OwnedFd> = None;
    let end = |cloned: Option<OwnedFd>| {
        if let Some(fd) = cloned {
            spawn::kill_and_reap(&fd);
        }
    };
    loop {
        match recv(&t.sock, Some(SPAWN_TIMEOUT)) {
            Ok((v, mut fds)) if v.get("cloned").is_some() => cloned = fds.pop(),
            Ok((v, fds)) => {
                if v.get("error").is_some() {
                    end(cloned);
                }
                return Ok((v, fds));
            }
            Err(e) => {
                end(cloned);
                return Err(e);
            }
        }
    }
}

fn recv(sock: &OwnedFd, timeout: Option<Duration>) -> Result<(Value, Vec<OwnedFd>), String> {
    if let Some(t) = timeout {
        let deadline = Instant::now() + t;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("{BINARY} did not answer within {} s", t.as_secs()));
            }
            match sys::poll_one(sock.as_raw_fd(), libc::POLLIN, left.as_millis() as i32) {
                Ok(0) | Err(libc::EINTR) => continue,
                Ok(_) => break,
                Err(e) => return Err(format!("poll: errno {e}")),
            }
        }
    }
    let mut buf = vec![0u8; MAX_MESSAGE];
    let (n, fds) =
        sys::recv_with_fds(sock.as_raw_fd(), &mut buf).map_err(|e| format!("recv: errno {e}"))?;
    if n == 0 {
        return Err(format!("{BINARY} exited"));
    }
    let v = serde_json::from_slice(&buf[..n]).map_err(|e| format!("malformed reply: {e}"))?;
    Ok((v, fds))
}

/// The template's reply as the jail it spawned, or its setup error (the failed child was
/// reaped by `exchange`).
fn spawned((reply, fds): (Value, Vec<OwnedFd>)) -> Result<Spawned, SetupError> {
    if let Some(e) = reply.get("error") {
        return Err(SetupError::new(
            format!("zygote: {}", e["stage"].as_str().unwrap_or("?")),
            e["errno"].as_i64().map(|v| v as i32),
            e["hint"].as_str().unwrap_or(""),
        ));
    }
    let bits = reply["fds"].as_u64().unwrap_or(0);
    let present = (0..FD_NAMES.len()).filter(|i| bits & (1 << i) != 0).count();
    let malformed = |what: &str| unavailable(&format!("malformed reply ({what})"));
    if bits & 0xf != 0xf || fds.len() != present {
        return Err(malformed("descriptors"));
    }
    let mut it = fds.into_iter();
    let mut next = |i: usize| (bits & (1 << i) != 0).then(|| it.next()).flatten();
    let (pidfd, stdout, stderr, status) = (next(0), next(1), next(2), next(3));
    let (stdin, listener, job, reply_fd, program_pidfd, held_dir) =
        (next(4), next(5), next(6), next(7), next(8), next(9));
    let (Some(pidfd), Some(stdout), Some(stderr), Some(status)) = (pidfd, stdout, stderr, status)
    else {
        return Err(malformed("descriptors"));
    };
    let ago = Duration::from_micros(reply["cloned_ago_us"].as_u64().unwrap_or(0));
    Ok(Spawned {
        pid: reply["pid"].as_i64().ok_or_else(|| malformed("pid"))? as i32,
        pidfd,
        stdin,
        stdout,
        stderr,
        listener,
        program_pid: reply["program_pid"].as_i64().map(|p| p as i32),
        status,
        job,
        reply: reply_fd,
        program_pidfd,
        held_dir,
        cloned_at: Instant::now().checked_sub(ago).unwrap_or_else(Instant::now),
    })
}
