//! The server's side: starts `agentjail-zygote`, hands it each jail's cgroup, and takes the
//! jail it spawned (its pidfd and pipes) back as the [`Spawned`] a local clone would give.

use super::protocol::{self, CgroupFds, FdSet, FromTemplate, ToTemplate};
use super::{BINARY, MAX_MESSAGE, MAX_POLICY_TEXT};
use crate::plan::JailPlan;
use crate::policy::LoadedPolicy;
use agentjail_jail::cgroup::JobCgroup;
use agentjail_jail::launch::PlanControls;
use agentjail_jail::prepared::CgroupCover;
use agentjail_jail::spawn::{self, Spawned};
use agentjail_jail::{os, SetupError};
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long the template may take to load the policy, its preloads and the warm-up.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one jail's clone and handshake may take (milliseconds, normally): past it the
/// template is taken for stuck, ended and started again.
const SPAWN_TIMEOUT: Duration = Duration::from_secs(10);
/// Templates per zygote: one per spawner thread (engine/pool.rs starts two), so a refill
/// never waits for another's handshake, nor for a stuck template.
const TEMPLATES: usize = 2;

/// One running template: its control socket and process.
struct Template {
    sock: OwnedFd,
    child: Child,
}

impl Drop for Template {
    /// Kill and reap the template, then every child it cloned whose announcement (its
    /// pidfd) is still in the socket: the template can no longer answer for them.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        while os::fd::poll_one(&self.sock, libc::POLLIN, 0).is_ok_and(|r| r != 0) {
            let mut buf = [0u8; 256];
            match os::fd::recv_with_fds(&self.sock, &mut buf) {
                Ok((0, _)) | Err(_) => break,
                Ok((_, fds)) => fds.iter().for_each(spawn::kill_and_reap),
            }
        }
    }
}

/// The engine's zygote for one policy: spawns that policy's warm Python jails.
pub struct Zygote {
    /// Asks the keeper thread for a new template.
    launch: Mutex<Option<mpsc::Sender<LaunchReply>>>,
    keeper: Mutex<Option<JoinHandle<()>>>,
    templates: Vec<Mutex<Option<Template>>>,
    /// Numbers the spawn requests (a late announcement names the spawn it belongs to).
    next: std::sync::atomic::AtomicU64,
    /// What the plan's jails enforce (landlock, seccomp), learned once: the template
    /// prepares the plan once and the server prepares nothing of the child's per jail.
    controls: PlanControls,
}

/// Where the keeper thread sends a new template.
type LaunchReply = mpsc::SyncSender<Result<Template, String>>;

/// What starting a template takes.
struct Launcher {
    exe: PathBuf,
    start: ToTemplate,
    /// The policy file's bytes, read once by the server (None: the embedded default).
    text: Option<Vec<u8>>,
    /// The server's plan of the warm jails, which the template's must equal.
    plan_sha256: String,
    env: Vec<(String, String)>,
}

impl Launcher {
    /// Exec the template with the jail's environment (its interpreter's `os.environ` is what
    /// every program will see) and wait for its ready message.
    fn launch(&self) -> Result<Template, String> {
        let (ours, theirs) =
            os::fd::socketpair_seqpacket().map_err(|e| format!("socketpair: errno {e}"))?;
        // Its child holds a copy of our fds until it execs: never a jail's late file open
        // for writing (agentjail_jail::no_late_writes).
        let no_late_writes = agentjail_jail::no_late_writes();
        let child = Command::new(&self.exe)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir("/")
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.exe.display()));
        drop(no_late_writes);
        let child = child?;
        let t = Template { sock: ours, child };
        let send = |b: &[u8]| {
            os::fd::send_with_fds(&t.sock, b, &[])
                .map_err(|e| format!("{BINARY}: send the policy: errno {e}"))
        };
        send(&protocol::encode(&self.start))?;
        if let Some(text) = &self.text {
            send(text)?;
        }
        let plan_sha256 = match recv(&t.sock, Some(READY_TIMEOUT))?.0 {
            FromTemplate::Ready { plan_sha256 } => plan_sha256,
            FromTemplate::Refused { error } => {
                return Err(format!("{BINARY} did not start: {error}"))
            }
            other => return Err(format!("{BINARY} did not start: it sent {other:?}")),
        };
        if plan_sha256 != self.plan_sha256 {
            return Err(format!(
                "{BINARY} built another jail plan than the server's (did the host change?); restart the server"
            ));
        }
        Ok(t)
    }
}

/// Why the zygote did not start: what was missing or refused, with the underlying error
/// kept (the jail's [`SetupError`] for a plan it cannot prepare). Display is the message
/// agentjail prints after `--zygote: `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ZygoteError {
    /// The policy's interpreter arguments are ones the template cannot honour.
    Args(String),
    /// agentjail's own path is unknown (`/proc/self/exe`): the I/O error's text.
    OwnPath { errno: Option<i32>, detail: String },
    /// The template binary is not next to agentjail.
    NoBinary { exe: PathBuf },
    /// The policy file cannot be handed to the template (unreadable, changed, too large).
    Policy(String),
    /// The plan cannot be prepared on this host.
    Controls(SetupError),
    /// The keeper thread did not start: the I/O error's text.
    Thread(String),
    /// The first template did not start or refused the policy.
    Template(String),
}

impl std::fmt::Display for ZygoteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ZygoteError::Args(m) | ZygoteError::Policy(m) | ZygoteError::Template(m) => {
                f.write_str(m)
            }
            ZygoteError::OwnPath { detail, .. } => {
                write!(f, "cannot find agentjail's own path: {detail}")
            }
            ZygoteError::NoBinary { exe } => write!(
                f,
                "no {} next to agentjail; build it with scripts/build-zygote.sh",
                exe.display()
            ),
            ZygoteError::Controls(e) => e.fmt(f),
            ZygoteError::Thread(e) => write!(f, "cannot start the zygote's thread: {e}"),
        }
    }
}

impl std::error::Error for ZygoteError {}

impl From<SetupError> for ZygoteError {
    fn from(e: SetupError) -> Self {
        ZygoteError::Controls(e)
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
    pub fn start(policy: &LoadedPolicy, plan: &JailPlan) -> Result<Zygote, ZygoteError> {
        let p = &policy.policy;
        // Which Python the template binary embeds only it knows (its build fixed it): it
        // checks the interpreter itself and its refusal is this start's error.
        super::template::check_args(&p.interpreter.python_args).map_err(ZygoteError::Args)?;
        let exe = std::env::current_exe()
            .map_err(|e| ZygoteError::OwnPath {
                errno: e.raw_os_error(),
                detail: e.to_string(),
            })?
            .with_file_name(BINARY);
        if !exe.is_file() {
            return Err(ZygoteError::NoBinary { exe });
        }
        let text = policy_text(policy).map_err(ZygoteError::Policy)?;
        let launcher = Launcher {
            exe,
            start: ToTemplate::Start {
                policy_path: policy.path.clone(),
                policy_sha256: policy.sha256.clone(),
                text: text.is_some(),
            },
            text,
            plan_sha256: super::template::plan_sha256(plan),
            env: plan.env.clone(),
        };
        let controls = PlanControls::probe(plan)?;
        let (tx, rx) = mpsc::channel::<LaunchReply>();
        let keeper = std::thread::Builder::new()
            .name("agentjail-zygote".into())
            .spawn(move || {
                for reply in rx {
                    let _ = reply.send(launcher.launch());
                }
            })
            .map_err(|e| ZygoteError::Thread(e.to_string()))?;
        let z = Zygote {
            launch: Mutex::new(Some(tx)),
            keeper: Mutex::new(Some(keeper)),
            templates: (0..TEMPLATES).map(|_| Mutex::new(None)).collect(),
            next: std::sync::atomic::AtomicU64::new(1),
            controls,
        };
        // The first template now: a policy it cannot serve fails the start, not each job.
        let t = z.new_template().map_err(ZygoteError::Template)?;
        *lock(&z.templates[0]) = Some(t);
        Ok(z)
    }

    /// What every jail of this zygote enforces of landlock and seccomp
    /// (`launch::prepare_elsewhere` puts it in the jail's record).
    pub fn controls(&self) -> &PlanControls {
        &self.controls
    }

    /// Reap the idle templates that died (a zombie until now): a slot is used only when
    /// the ones before it are busy, so a dead template there could wait long for its turn.
    fn reap_dead(&self) {
        for m in &self.templates {
            if let Ok(mut g) = m.try_lock() {
                if g.as_mut()
                    .is_some_and(|t| !matches!(t.child.try_wait(), Ok(None)))
                {
                    *g = None;
                }
            }
        }
    }

    /// A free template slot (or, when all are busy, the first one, waited for).
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Template>> {
        for m in &self.templates {
            if let Ok(g) = m.try_lock() {
                return g;
            }
        }
        lock(&self.templates[0])
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
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (request, fds) = request(n, cg, cover);
        let request = protocol::encode(&request);
        self.reap_dead();
        let mut guard = self.slot();
        let mut restarted = false;
        loop {
            if guard.is_none() {
                *guard = Some(self.new_template().map_err(|e| unavailable(&e))?);
                restarted = true;
            }
            let Some(t) = guard.as_ref() else { continue };
            match exchange(t, n, &request, &fds) {
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

impl Zygote {
    /// Kill and reap the templates now and launch no more (a spawn after this fails): the
    /// engine's shutdown calls it, since its pools, and with them this zygote, may be
    /// dropped only after the server has exited (a client's thread can hold the engine),
    /// and a template left to die with the server would outlive it as a zombie. The
    /// templates first (their jails are ended by now), then the keeper thread, whose exit
    /// would take them down anyway.
    pub fn close(&self) {
        for m in &self.templates {
            drop(lock(m).take());
        }
        drop(self.launch.lock().unwrap_or_else(|e| e.into_inner()).take());
        if let Some(t) = self.keeper.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = t.join();
        }
    }
}

impl Drop for Zygote {
    fn drop(&mut self) {
        self.close();
    }
}

fn lock(m: &Mutex<Option<Template>>) -> std::sync::MutexGuard<'_, Option<Template>> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The policy file's bytes for the template, read here, where a relative path means what
/// it meant to the server, and checked against what the server loaded (None: the embedded
/// default, which the template has compiled in).
fn policy_text(policy: &LoadedPolicy) -> Result<Option<Vec<u8>>, String> {
    if policy.path == crate::policy::DEFAULT_POLICY_ORIGIN {
        return Ok(None);
    }
    let text = std::fs::read(&policy.path).map_err(|e| format!("{}: {e}", policy.path))?;
    if crate::digest::sha256_hex(&text) != policy.sha256 {
        return Err(format!(
            "{} changed after the server loaded it; restart the server",
            policy.path
        ));
    }
    if text.len() > MAX_POLICY_TEXT {
        return Err(format!(
            "{} is {} bytes; the zygote takes policies up to {MAX_POLICY_TEXT}",
            policy.path,
            text.len()
        ));
    }
    Ok(Some(text))
}

fn unavailable(message: &str) -> SetupError {
    SetupError::new(
        format!("zygote: {message}"),
        None,
        "the zygote template could not spawn the jail; serve with --no-zygote to compare",
    )
}

/// The request for spawn `n`: what the cgroup covers and its attach descriptors.
fn request(
    n: u64,
    cg: Option<&JobCgroup>,
    cover: CgroupCover,
) -> (ToTemplate, Vec<BorrowedFd<'_>>) {
    let mut cgroups = Vec::new();
    let mut fds = Vec::new();
    for (v2, join, dir) in cg.map(|c| c.attach_handles()).unwrap_or_default() {
        fds.push(join);
        // A v2 directory goes with its fd (CLONE_INTO_CGROUP); a v1 one's `tasks` file is
        // the jail's own to write (jail/child.rs, step 1b).
        let dir = dir.filter(|_| v2);
        fds.extend(dir);
        cgroups.push(CgroupFds {
            v2_dir: dir.is_some(),
        });
    }
    let r = ToTemplate::Spawn {
        n,
        memory: cover.memory,
        pids: cover.pids,
        cpu: cover.cpu,
        cgroups,
    };
    (r, fds)
}

/// One request and its reply (the template answers each request before the next).
///
/// Every child a template clones is ours (CLONE_PARENT), and announces itself with a pidfd
/// before its handshake (`{"cloned": n}`). A child is reaped here unless it is handed over:
/// when the handshake fails (the template's error reply carries its pidfd too), when the
/// template dies or stalls in it, and when an announcement names an earlier spawn (that
/// spawn failed before its child's announcement arrived).
fn exchange(
    t: &Template,
    n: u64,
    request: &[u8],
    fds: &[BorrowedFd<'_>],
) -> Result<(FromTemplate, Vec<OwnedFd>), String> {
    os::fd::send_with_fds(&t.sock, request, fds)
        .map_err(|e| format!("send to {BINARY}: errno {e}"))?;
    let mut cloned: Vec<OwnedFd> = Vec::new();
    let end = |fds: Vec<OwnedFd>| fds.iter().for_each(spawn::kill_and_reap);
    loop {
        match recv(&t.sock, Some(SPAWN_TIMEOUT)) {
            Ok((FromTemplate::Cloned { n: m }, fds)) => {
                if m == n {
                    cloned.extend(fds);
                } else {
                    end(fds);
                }
            }
            Ok((reply @ FromTemplate::Failed { .. }, fds)) => {
                end(cloned);
                end(fds);
                return Ok((reply, Vec::new()));
            }
            Ok(reply) => return Ok(reply),
            Err(e) => {
                end(cloned);
                return Err(e);
            }
        }
    }
}

fn recv(sock: &OwnedFd, timeout: Option<Duration>) -> Result<(FromTemplate, Vec<OwnedFd>), String> {
    if let Some(t) = timeout {
        let deadline = Instant::now() + t;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("{BINARY} did not answer within {} s", t.as_secs()));
            }
            match os::fd::poll_one(sock, libc::POLLIN, left.as_millis() as i32) {
                Ok(0) | Err(libc::EINTR) => continue,
                Ok(_) => break,
                Err(e) => return Err(format!("poll: errno {e}")),
            }
        }
    }
    let mut buf = vec![0u8; MAX_MESSAGE];
    let (n, fds) = os::fd::recv_with_fds(sock, &mut buf).map_err(|e| format!("recv: errno {e}"))?;
    if n == 0 {
        return Err(format!(
            "{BINARY} exited (its error is on stderr; one that cannot load its libpython was built for another Python: rebuild it with scripts/build-zygote.sh --python <the policy's interpreter>)"
        ));
    }
    let m = protocol::decode(&buf[..n]).map_err(|e| format!("malformed reply: {e}"))?;
    Ok((m, fds))
}

/// The template's reply as the jail it spawned, or its setup error (the failed child was
/// reaped by `exchange`).
fn spawned((reply, fds): (FromTemplate, Vec<OwnedFd>)) -> Result<Spawned, SetupError> {
    let malformed = |what: &str| unavailable(&format!("malformed reply ({what})"));
    match reply {
        FromTemplate::Failed { error, .. } => Err(SetupError::new(
            format!("zygote: {}", error.stage),
            error.errno,
            error.hint,
        )),
        FromTemplate::Spawned {
            pid,
            program_pid,
            fds: set,
        } => FdSet::join(set, pid, program_pid, fds).ok_or_else(|| malformed("descriptors")),
        other => Err(malformed(&format!("{other:?}"))),
    }
}
