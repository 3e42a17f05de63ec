//! The engine: warm single-use jails, sessions and a result cache behind one API, used by
//! `agentjail serve` and `agentjail mcp` (and, with no pool, the same stages as `agentjail
//! run`).
//!
//! A job goes through the stages of `run` (contract → check → jail → validate → record): it
//! is checked first, exactly as in `run`, then answered from the cache when the cache holds
//! its key, else handed to a warm jail from the pool (or a jail started for it when the pool
//! is empty). Every job gets a jail of its own that no other job ever used: a warm jail is
//! used once and destroyed. Tear-down (the cgroup's removal) happens on the reaper thread,
//! off the job's critical path.
//!
//! The engine holds one runner plan, and one pool, per language the policy executes
//! (`languages.execute`): a Python job never gets a node jail. The JavaScript pool is half the
//! configured size, at least one jail ([`js_pool_size`]): a warm node runner holds ~40 MiB
//! resident against Python's ~10-20 MiB, and agent traffic is mostly Python. Sessions run
//! Python only (the JavaScript runner has no session mode).
//!
//! Compiled languages (and bash) run in two jails per job, the compile step's and the run
//! step's (crate::pipeline::compile), whose plans hold none of the job's bytes: the job's
//! files go in late, before the root is sealed. The engine keeps a small pool per such
//! plan ([`STEP_POOL`]), made on the first job that asks for that plan and refilled by the
//! spawner threads like every pool; a job gets a jail from it only when its step's plan is
//! the pool's exactly (the wall limit aside, applied at delivery). `--pool 0`: none.

mod api;
mod error;
pub mod hostdir;
mod learn;
pub mod pool;
mod slots;
pub mod workspace;

use crate::cache::Cache;
use crate::pipeline::record::{PolicyRef, Recorder, Sealed};
use crate::pipeline::source::{self, Acquired, JailSource, JobInputs, Start};

pub use crate::pipeline::stream::{OutputSink, Stream};
use crate::pipeline::{self, session};
use crate::policy::LoadedPolicy;
use crate::runner::{Language, Mode};
use agentjail_jail::launch::Teardown;
use agentjail_jail::supervise::Interrupt;
use agentjail_jail::JailError;
pub use api::{Caller, Outcome, Request};
pub use error::{EngineError, ErrorCode, StartError};
use pool::{Pool, Sizing, Spawner};
use serde_json::{json, Value};
use session::{Owner, Session};
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// How an engine is set up (the front end's flags).
pub struct EngineConfig {
    pub policy: LoadedPolicy,
    /// Warm jails kept ready; 0: every job's jail is started for it.
    pub pool: usize,
    /// The most warm jails the pool grows to while jobs wait for jails (below `pool`, the
    /// pool stays at `pool`: `pool::Pool` keeps its ceiling at or above its floor).
    pub pool_max: usize,
    /// How long the pool keeps jails above `pool` once no job has waited for one.
    pub pool_idle: Duration,
    /// Warm session jails kept ready (Python's runner in session mode, waiting for the
    /// session that takes it); 0: each session's jail is started at `session_start`.
    pub session_pool: usize,
    /// Threads that start jails (see pool.rs for why jails are started on them).
    pub spawners: usize,
    /// The result cache directory and how long an entry stays valid.
    pub cache: Option<(PathBuf, Duration)>,
    /// Whether the warm Python jails are spawned from a zygote template (src/zygote: a
    /// pre-initialised interpreter forked into a new jail per job) instead of starting an
    /// interpreter in each: [`ZygoteMode::Auto`] by default.
    pub zygote: ZygoteMode,
    /// Where [`Engine::handle`] appends each record it answers with (`--audit-log`, else the
    /// policy's audit.log: [`Engine::start_server`] sets it, checked before the start).
    pub audit_log: Option<PathBuf>,
}

/// Whether a server's warm Python jails come from the zygote (`serve`'s flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZygoteMode {
    /// `--no-zygote`: a fresh interpreter in every jail.
    Off,
    /// The default: the zygote where its template can serve the policy; else a fresh
    /// interpreter per job, said once on stderr ([`Engine::start_server`]) and in `stats`.
    Auto,
    /// `--zygote`: the zygote, or the server does not start.
    Required,
}

/// Whether the warm Python jails come from the zygote, and why (`stats`' `zygote`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ZygoteUse {
    pub in_use: bool,
    pub why: String,
    /// The zygote was wanted (the default) but could not serve: the server says so once.
    #[serde(skip)]
    pub fell_back: bool,
}

impl ZygoteUse {
    fn new(in_use: bool, why: impl Into<String>) -> ZygoteUse {
        ZygoteUse {
            in_use,
            why: why.into(),
            fell_back: false,
        }
    }

    /// The line a server prints on stderr when the default fell back, None otherwise.
    pub fn notice(&self) -> Option<String> {
        self.fell_back.then(|| {
            format!(
                "agentjail: the zygote is not used, every Python job starts a fresh interpreter (slower): {}",
                self.why.replace(['\n', '\r'], "; ")
            )
        })
    }
}

/// The CPUs this process may use: its affinity mask, bounded by its cgroup's CPU quota
/// (a container's `--cpus`, a unit's `CPUQuota=`). Read once.
pub fn usable_cpus() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| {
        let affinity = (agentjail_jail::os::process::affinity_cpus() as usize).max(1);
        let quota = agentjail_jail::cgroup::detect_host().cpu_quota_cores();
        quota.map_or(affinity, |q| affinity.min(q))
    })
}

/// The default pool: one warm jail per usable core, at least 2 and at most 64 (each holds
/// an interpreter with the policy's preloads, ~10-20 MiB).
pub fn default_pool_size() -> usize {
    usable_cpus().clamp(2, 64)
}

/// The default number of spawner threads (the threads that start every jail): four per
/// usable core, 4 to 64 — as many as the pool's default ceiling, so that the threads are never
/// what bounds how many jails start at once (the pool's ceiling and `-j` are). A spawner is
/// blocked for most of a start: it waits in `pool::wait_ready` while the interpreter in the
/// new jail starts and imports the preloads (sampled on 2 cores, 4 clients: 1.3 of the 2
/// threads sat in that poll, 0.15 in the clone's handshake, ~0.3 ran). One per core (the
/// previous default) left one server at ~0.6× the throughput of two servers on the same 2
/// cores; 8 threads with `--pool-max 8` did as well as two (docs/BENCH.md, "One server or
/// two"). Two, a constant before that, held a 16-core host at ~60 jobs/s; 16 gave ~300.
pub fn default_spawners() -> usize {
    (usable_cpus() * 4).clamp(4, 64)
}

/// The default number of warm session jails: one, unless the pool is off (`--pool 0`: every
/// jail is started for its job). Sessions start far less often than jobs run, and each warm
/// jail is an idle interpreter's memory; a burst of session starts gets the first one warm
/// and the others started for them, as without a pool.
pub fn default_session_pool(pool: usize) -> usize {
    usize::from(pool > 0)
}

/// Requests a server front end (`serve`, `mcp`) runs at once by default: 2 per core, at
/// least 4 (a job mostly waits on its jail).
pub fn default_jobs() -> usize {
    (default_pool_size() * 2).max(4)
}

/// The default ceiling of a pool of `pool` jails: four per usable core, at least `pool`, at
/// most 64; none when the pool is off. The ceiling bounds the refills under way at once (a
/// refill is owed per jail taken, and the pool's ready and starting jails never exceed its
/// target), so it bounds the throughput when every job waits for a jail: two per core (the
/// previous default) let 4 clients on 2 cores keep at most 4 jails starting while ~2/3 of
/// each start is the jail's interpreter starting, and the engine did ~0.75× of what four per
/// core does (same run, 8 spawners both; docs/BENCH.md). The pool grows past `pool` only
/// while jobs wait for jails, and shrinks back after `--pool-idle` ([`pool::DEFAULT_IDLE`]).
pub fn default_pool_max(pool: usize) -> usize {
    if pool == 0 {
        0
    } else {
        (usable_cpus() * 4).min(64).max(pool)
    }
}

impl EngineConfig {
    /// The engine of a server front end from its flags: `--pool` (default
    /// [`default_pool_size`]), `--session-pool` (default [`default_session_pool`]),
    /// [`default_spawners`] threads, `--cache DIR` valid `cache_ttl` seconds.
    pub fn for_server(
        policy: LoadedPolicy,
        pool: Option<usize>,
        session_pool: Option<usize>,
        cache: Option<PathBuf>,
        cache_ttl: u64,
    ) -> EngineConfig {
        let pool = pool.unwrap_or_else(default_pool_size);
        EngineConfig {
            policy,
            pool,
            pool_max: default_pool_max(pool),
            pool_idle: pool::DEFAULT_IDLE,
            session_pool: session_pool.unwrap_or_else(|| default_session_pool(pool)),
            spawners: default_spawners(),
            cache: cache.map(|d| (d, Duration::from_secs(cache_ttl))),
            zygote: ZygoteMode::Auto,
            audit_log: None,
        }
    }
}

/// The warm JavaScript jails kept for a configured pool of `pool`: half, at least one; none
/// when the pool is off.
pub fn js_pool_size(pool: usize) -> usize {
    if pool == 0 {
        0
    } else {
        (pool / 2).max(1)
    }
}

/// One executed language's single-use jails: the plan every one is started from, and its
/// pool of warm ones.
struct Runner {
    language: Language,
    plan: Arc<crate::plan::JailPlan>,
    pool: Option<Arc<Pool>>,
    /// Python's: whether its pool's jails come from the zygote, and why.
    zygote: Option<ZygoteUse>,
}

impl Runner {
    /// The language's plan and its pool (when the configured pool is not 0), filling in the
    /// background; for Python, the zygote the pool's jails are spawned from where one is
    /// used (`start_zygote`).
    fn start(
        cfg: &EngineConfig,
        language: Language,
        spawner: &Arc<Spawner>,
    ) -> Result<Runner, StartError> {
        let policy = &cfg.policy.policy;
        let inputs = JobInputs::default();
        let plan = Arc::new(source::runner_plan(
            policy,
            language,
            Mode::Run,
            true,
            &inputs,
        )?);
        let sizing = match language {
            Language::Python => Sizing {
                floor: cfg.pool,
                ceiling: cfg.pool_max,
                idle: cfg.pool_idle,
            },
            Language::JavaScript => Sizing {
                floor: js_pool_size(cfg.pool),
                ceiling: js_pool_size(cfg.pool_max),
                idle: cfg.pool_idle,
            },
        };
        let size = sizing.floor;
        let (zygote, used) = match language {
            Language::Python => start_zygote(cfg, &plan, size)?,
            Language::JavaScript => (None, None),
        };
        let pool = (size > 0).then(|| Pool::new(Arc::clone(&plan), sizing, spawner, zygote));
        Ok(Runner {
            language,
            plan,
            pool,
            zygote: used,
        })
    }
}

/// The zygote of the Python pool of `size` jails of `plan`, as `cfg.zygote` asks: with
/// [`ZygoteMode::Auto`] a template that cannot serve the policy (not built, built for
/// another Python, other interpreter flags, refused) leaves the pool to fresh interpreters
/// and says why; with [`ZygoteMode::Required`] it is the start's error.
fn start_zygote(
    cfg: &EngineConfig,
    plan: &crate::plan::JailPlan,
    size: usize,
) -> Result<(Option<Arc<crate::zygote::Zygote>>, Option<ZygoteUse>), StartError> {
    let mode = cfg.zygote;
    if mode == ZygoteMode::Off {
        return Ok((None, Some(ZygoteUse::new(false, "--no-zygote"))));
    }
    if size == 0 {
        let why = "--pool 0: each job's jail is started for it, with a fresh interpreter";
        return Ok((None, Some(ZygoteUse::new(false, why))));
    }
    match crate::zygote::Zygote::start(&cfg.policy, plan) {
        Ok(z) => {
            let why = match mode {
                ZygoteMode::Required => "--zygote",
                _ => "the default; --no-zygote starts a fresh interpreter per job",
            };
            Ok((Some(Arc::new(z)), Some(ZygoteUse::new(true, why))))
        }
        Err(e) if mode == ZygoteMode::Required => Err(e.into()),
        Err(e) => {
            let mut used = ZygoteUse::new(false, e.to_string());
            used.fell_back = true;
            Ok((None, Some(used)))
        }
    }
}

/// How long a session call waits for a session held by someone ending it (see session_exec).
const BUSY_GRACE: Duration = Duration::from_millis(250);

/// The lock of a session or a workspace, waiting at most [`BUSY_GRACE`] for a holder that
/// is only ending it (the janitor, a closing connection); None while a call still holds it.
fn lock_within_grace<T>(m: &Mutex<T>) -> Option<std::sync::MutexGuard<'_, T>> {
    let t = Instant::now();
    loop {
        match m.try_lock() {
            Ok(g) => return Some(g),
            Err(std::sync::TryLockError::Poisoned(e)) => return Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) if t.elapsed() < BUSY_GRACE => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(std::sync::TryLockError::WouldBlock) => return None,
        }
    }
}

type Sessions = HashMap<String, (Owner, Arc<Mutex<Session>>)>;

/// One client's own stop (a connection of `serve`): its jobs and calls poll `read`
/// (Interrupt::Scoped), so a client that is dropped stops its own work and nobody else's.
pub struct ClientStop {
    read: OwnedFd,
    write: OwnedFd,
}

impl ClientStop {
    fn new() -> Result<ClientStop, StartError> {
        let (read, write) = agentjail_jail::os::fd::socketpair_seqpacket()
            .map_err(StartError::os("a socket pair"))?;
        Ok(ClientStop { read, write })
    }

    /// Stop every job and call of the client: `H` (the client is gone, `interrupted:sighup`)
    /// or `T` (the server stops, `interrupted:sigterm`); the first one sent is what they see.
    fn send(&self, why: u8) {
        let _ = agentjail_jail::os::fd::write(&self.write, &[why]);
    }

    fn interrupt(&self) -> Interrupt<'_> {
        Interrupt::Scoped(&self.read)
    }
}

pub struct Engine {
    policy: LoadedPolicy,
    policy_ref: PolicyRef,
    runners: Vec<Runner>,
    /// Python sessions' plan; None when the policy does not execute Python.
    session_plan: Option<Arc<crate::plan::JailPlan>>,
    /// Session jails started ahead of their sessions (`--session-pool`), when there are any.
    session_pool: Option<Arc<Pool>>,
    /// Workspaces' plan and warm jails, when the policy enables them (workspace.rs).
    workspace_plan: Option<Arc<crate::plan::JailPlan>>,
    workspace_pool: Option<Arc<Pool>>,
    workspaces: Mutex<workspace::Workspaces>,
    /// Sessions' and workspaces' starts under way, counted in `max_per_client` (slots.rs).
    session_starts: slots::Pending,
    workspace_starts: slots::Pending,
    spawner: Arc<Spawner>,
    /// Each session with its owner kept outside the session's lock: a call holds that lock
    /// for its whole run, and finding whose a session is must never wait for a call.
    sessions: Mutex<Sessions>,
    /// Connections ending their sessions right now: shutdown waits for them, so the process
    /// never exits while one of their jails is half torn down.
    closing: std::sync::atomic::AtomicUsize,
    cache: Option<Cache>,
    /// Compile outcomes, in memory (crate::pipeline::compile_cache).
    compile_cache: crate::pipeline::compile_cache::MemoryStore,
    /// Jails for compiled languages' steps, one pool per plan (`JailSource::warm`); None
    /// with `--pool 0`.
    step_pools: Option<Mutex<Vec<Arc<Pool>>>>,
    reaper: Mutex<Option<mpsc::Sender<Teardown>>>,
    reaper_thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Readable once the engine stops its running jobs (every job's supervisor polls it).
    stop_read: OwnedFd,
    stop_write: Mutex<Option<OwnedFd>>,
    /// Every client's own stop (serve's connections), by connection.
    clients: Mutex<HashMap<u64, Arc<ClientStop>>>,
    /// stop_jobs was called: a client registered after it is stopped at once.
    stopping: AtomicBool,
    closed: AtomicBool,
    /// The audit log [`Engine::handle`] appends its records to (api.rs).
    audit: Option<PathBuf>,
}

impl Engine {
    /// Start the engine: its spawner threads, the pool (filling in the background), the
    /// reaper and the session janitor.
    pub fn start(cfg: EngineConfig) -> Result<Arc<Engine>, StartError> {
        let policy = &cfg.policy.policy;
        // The environment digest every record names (a few hundred stat calls, cached per
        // process and interpreter): computed now, so the first job does not pay for it.
        for language in &policy.languages.execute {
            crate::environment::of(policy, language);
        }
        let spawner = Spawner::new(cfg.spawners)?;
        let mut runners = Vec::new();
        for language in policy
            .languages
            .execute
            .iter()
            .filter_map(|l| Language::of(l))
        {
            runners.push(Runner::start(&cfg, language, &spawner)?);
        }
        let session_plan = if policy.executes("python") {
            let p = source::runner_plan(
                policy,
                Language::Python,
                Mode::Session,
                true,
                &JobInputs::default(),
            )?;
            Some(Arc::new(p))
        } else {
            None
        };
        // Registered after the runners' pools: the spawner threads refill those first.
        let session_pool = session_plan
            .as_ref()
            .filter(|_| cfg.session_pool > 0)
            .map(|plan| Pool::holding_refills(Arc::clone(plan), cfg.session_pool, &spawner));
        let (workspace_plan, workspace_pool) =
            workspace::start_plan(policy, cfg.session_pool, &spawner)?;
        let cache = match &cfg.cache {
            Some((dir, ttl)) => Some(Cache::open(dir, *ttl)?),
            None => None,
        };
        let (stop_read, stop_write) =
            agentjail_jail::os::fd::pipe().map_err(StartError::os("a pipe"))?;
        let (tx, rx) = mpsc::channel::<Teardown>();
        let reaper_thread = std::thread::Builder::new()
            .name("agentjail-reaper".into())
            .spawn(move || rx.into_iter().for_each(drop))
            .map_err(StartError::thread("the reaper thread"))?;
        let engine = Arc::new(Engine {
            policy_ref: PolicyRef::of(&cfg.policy),
            policy: cfg.policy,
            runners,
            session_plan,
            session_pool,
            workspace_plan,
            workspace_pool,
            workspaces: Mutex::new(HashMap::new()),
            session_starts: slots::Pending::default(),
            workspace_starts: slots::Pending::default(),
            spawner,
            sessions: Mutex::new(HashMap::new()),
            closing: std::sync::atomic::AtomicUsize::new(0),
            cache,
            compile_cache: crate::pipeline::compile_cache::MemoryStore::new(),
            step_pools: (cfg.pool > 0).then(|| Mutex::new(Vec::new())),
            reaper: Mutex::new(Some(tx)),
            reaper_thread: Mutex::new(Some(reaper_thread)),
            stop_read,
            stop_write: Mutex::new(Some(stop_write)),
            clients: Mutex::new(HashMap::new()),
            stopping: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            audit: cfg.audit_log,
        });
        let weak = Arc::downgrade(&engine);
        std::thread::Builder::new()
            .name("agentjail-janitor".into())
            .spawn(move || janitor(weak))
            .map_err(StartError::thread("the janitor thread"))?;
        Ok(engine)
    }

    /// A server front end's engine (`serve`, `mcp`), and where its records are appended:
    /// `audit_flag` (`--audit-log`), else the policy's audit.log.
    pub fn start_server(
        mut cfg: EngineConfig,
        audit_flag: Option<PathBuf>,
    ) -> Result<(Arc<Engine>, Option<PathBuf>), StartError> {
        let audit = cfg.policy.audit_log(audit_flag);
        if let Some(path) = &audit {
            // Refused now, not at the first record: a directory on its way that another
            // user can change (crate::hostpath), a symlink or another's file in its place.
            crate::pipeline::audit::open_audit(path).map_err(|e| StartError::AuditLog {
                path: path.clone(),
                errno: e.raw_os_error(),
                detail: e.to_string(),
            })?;
        }
        cfg.audit_log = audit.clone();
        let engine = Engine::start(cfg)?;
        if let Some(line) = engine.zygote_use().notice() {
            eprintln!("{line}");
        }
        Ok((engine, audit))
    }

    pub fn policy(&self) -> &LoadedPolicy {
        &self.policy
    }

    /// Whether the warm Python jails come from the zygote, and why (`stats`' `zygote`).
    pub fn zygote_use(&self) -> ZygoteUse {
        self.runners
            .iter()
            .find_map(|r| r.zygote.clone())
            .unwrap_or_else(|| ZygoteUse::new(false, "the policy executes no Python"))
    }

    /// One job: the whole pipeline of `agentjail run` on these action bytes. `caller`: the
    /// peer's uid when the front end knows it (a unix socket's SO_PEERCRED).
    pub(crate) fn run(&self, action: &[u8], caller: Option<u32>) -> Sealed {
        let r = Recorder::for_job(self.policy_ref.clone(), caller);
        pipeline::job(r, action, &self.policy, self, self.cache.as_ref())
    }

    /// The front end has written a response (a job's record, a session call's): the refills
    /// held back for the jails taken (pool.rs, `pop_ready`) may start now. Started earlier, a
    /// refill's clone and interpreter start-up ran while the response was serialised and
    /// written, and every paced job paid for it (measured: p50 2.77 against 2.22 ms through
    /// `serve --zygote`; a session's first call 2.6 against 0.8 ms). A front end that never
    /// calls this still gets its pools refilled, [`pool::DEFER_MAX`] after each take. A front
    /// end may leave it out after a session's start: the session's first call, which usually
    /// follows at once, then runs before the session pool's refill.
    pub fn answered(&self) {
        let pools = self.runners.iter().filter_map(|r| r.pool.as_ref());
        for p in pools.chain(self.session_pool.as_ref()) {
            p.job_ended();
        }
    }

    /// A job of one client, with host inputs bound at /app/in (resolved against the policy's
    /// host roots by the front end: crate::inputs; a job with inputs gets a jail built for
    /// it, never a warm one), stopped by the client's own stop (`stop`) as well as by the
    /// server's.
    pub(crate) fn run_for_client(
        &self,
        action: &[u8],
        caller: Option<u32>,
        inputs: Vec<crate::plan::HostInput>,
        (stop, out): (Option<&ClientStop>, Option<&dyn OutputSink>),
    ) -> Sealed {
        if inputs.is_empty() && stop.is_none() && out.is_none() {
            return self.run(action, caller);
        }
        let r = Recorder::for_job(self.policy_ref.clone(), caller);
        let source = WithInputs {
            engine: self,
            inputs,
            stop,
            out,
        };
        pipeline::job(r, action, &self.policy, &source, self.cache.as_ref())
    }

    /// A new client's own stop (`serve`: one per connection), registered so that
    /// [`Engine::stop_jobs`] reaches its jobs too; [`Engine::forget_client`] when it is gone.
    pub fn client_stop(&self, connection: u64) -> Result<Arc<ClientStop>, StartError> {
        let stop = Arc::new(ClientStop::new()?);
        self.clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(connection, Arc::clone(&stop));
        if self.stopping.load(Ordering::SeqCst) {
            stop.send(b'T');
        }
        Ok(stop)
    }

    /// The client is gone (dropped): stop its running jobs and calls now, each with its
    /// record (`interrupted:sighup`).
    pub fn hang_up(&self, connection: u64) {
        if let Some(s) = self
            .clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&connection)
        {
            s.send(b'H');
        }
    }

    pub fn forget_client(&self, connection: u64) {
        self.clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&connection);
    }

    /// `agentjail check` on these action bytes: the decision, and whether it allows.
    pub fn check(&self, action: &[u8]) -> (Value, bool) {
        pipeline::check_bytes(&self.policy.policy, action)
    }

    /// A new session for `owner`, its policy tightened by `hints`; its id.
    pub fn session_start(
        &self,
        hints: Option<&Value>,
        owner: Owner,
    ) -> Result<String, EngineError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(EngineError::new(
                ErrorCode::Unavailable,
                "agentjail is shutting down",
            ));
        }
        let (policy, net_narrowed) = self.hinted(hints)?;
        // A client's open sessions (ended ones hold no jail) and starts under way (slots.rs);
        // the slot is held until the session is in the map, or the start fails.
        let max = self.policy.policy.session.max_per_client;
        let open = |same: &dyn Fn(&Owner) -> bool| {
            let live =
                |s: &Arc<Mutex<Session>>| s.try_lock().map(|s| !s.is_ended()).unwrap_or(true);
            let all = self.lock_sessions();
            all.values().filter(|(o, s)| same(o) && live(s)).count() as u64
        };
        let _slot = self
            .session_starts
            .reserve(owner, open, max)
            .map_err(|open| EngineError::new(
                ErrorCode::TooManySessions,
                format!("this client holds {open} open sessions, the most the policy allows ([session] max_per_client); close one first"),
            ))?;
        let Some(plan) = &self.session_plan else {
            return Err(EngineError::new(
                ErrorCode::BadRequest,
                "sessions run Python, and this policy does not execute python (languages.execute)",
            ));
        };
        // A warm session jail, as a run takes one from its pool: started before any session
        // existed and never used, so it holds nothing of anyone; it becomes this session's
        // alone. The hints tighten the session's policy, which its calls are held to; the
        // jail is the same one `session_plan` gives a cold start.
        let warm = self
            .session_pool
            .as_ref()
            .and_then(|p| p.take_or_wait(pool::READY_TIMEOUT));
        let (jail, start) = match warm {
            Some((jail, _idle)) => (jail, Start::Warm),
            None => {
                let jail = self.spawner.start(Arc::clone(plan)).map_err(|e| {
                    EngineError::new(
                        ErrorCode::Unavailable,
                        format!("sandbox_unavailable:{}: {e}", e.unavailable_control()),
                    )
                })?;
                (jail, Start::Cold)
            }
        };
        // The allowlist's proxy lives as long as the session's jail (src/netproxy.rs).
        let (mut jail, start) = (jail, start);
        let net = crate::netproxy::start(&policy, net_narrowed, &mut jail).map_err(|e| {
            let control = e.unavailable_control();
            EngineError::new(
                ErrorCode::Unavailable,
                format!("sandbox_unavailable:{control}: {e}"),
            )
        })?;
        let id = agentjail_jail::ids::random_hex(16);
        let session = Session::new(
            id.clone(),
            owner,
            (jail, start),
            policy,
            self.policy_ref.clone(),
        )
        .with_net(net);
        self.lock_sessions()
            .insert(id.clone(), (owner, Arc::new(Mutex::new(session))));
        Ok(id)
    }

    /// The policy tightened by a session's or workspace's `hints`, and whether they narrow the allowlist to
    /// nothing (a "denied" network hint, as for a run: crate::netproxy::narrowed_by).
    fn hinted(&self, hints: Option<&Value>) -> Result<(crate::policy::Policy, bool), EngineError> {
        let policy = self.policy.policy.clone();
        let Some(h) = hints.filter(|h| !h.is_null()) else {
            return Ok((policy, false));
        };
        let parsed = crate::contract::parse_hints(h)
            .map_err(|e| EngineError::new(ErrorCode::BadRequest, e.to_string()))?;
        let narrowed = parsed.network_access.is_some();
        Ok((crate::contract::apply_hints(&policy, &parsed).0, narrowed))
    }

    fn lock_sessions(&self) -> std::sync::MutexGuard<'_, Sessions> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The session `id`, if `owner` started it (another connection's ids are unknown to it).
    fn session(&self, id: &str, owner: Owner) -> Result<Arc<Mutex<Session>>, EngineError> {
        let unknown = || {
            EngineError::new(
                ErrorCode::UnknownSession,
                format!(
                    "no session {:?} for this caller (its connection on serve, its token over HTTP)",
                    crate::verdict::StopReason::suffix(id)
                ),
            )
        };
        let (o, s) = self.lock_sessions().get(id).cloned().ok_or_else(unknown)?;
        if o.connection != owner.connection || o.uid != owner.uid {
            return Err(unknown());
        }
        Ok(s)
    }

    /// One call in a session of a client with its own stop (see [`Engine::run_for_client`]).
    pub(crate) fn session_exec_for(
        &self,
        id: &str,
        code: &str,
        timeout_s: Option<f64>,
        (owner, stop): (Owner, Option<&ClientStop>),
        out: Option<&dyn OutputSink>,
    ) -> Result<Sealed, EngineError> {
        let s = self.session(id, owner)?;
        // A call holds the session's lock for its whole run; the janitor and a closing
        // connection hold it for the milliseconds of ending it. Only the first is busy.
        let Some(mut session) = lock_within_grace(&s) else {
            return Err(EngineError::new(
                ErrorCode::SessionBusy,
                "a call is already running in this session; wait for its response",
            ));
        };
        let interrupt = stop.map_or(Interrupt::Shutdown(&self.stop_read), ClientStop::interrupt);
        let (record, teardown) = session.call(code, timeout_s, Some(interrupt), out);
        if let Some(t) = teardown {
            self.teardown(t);
        }
        // An ended session stays known to its owner (the janitor forgets it ENDED_KEPT
        // after it ended): its next calls get a record saying why, however it ended.
        Ok(record)
    }

    /// Close a session; false when it was already gone.
    pub fn session_close(&self, id: &str, owner: Owner) -> Result<bool, EngineError> {
        let s = self.session(id, owner)?;
        self.lock_sessions().remove(id);
        let teardown = s.lock().unwrap_or_else(|e| e.into_inner()).end("closed");
        if let Some(t) = teardown {
            self.teardown(t);
        }
        Ok(true)
    }

    /// End every session a connection started (it closed).
    pub fn close_sessions_of(&self, connection: u64) {
        let _closing = self.closing();
        let mine: Vec<(String, Arc<Mutex<Session>>)> = self
            .lock_sessions()
            .iter()
            .filter(|(_, (o, _))| o.connection == connection)
            .map(|(k, (_, v))| (k.clone(), Arc::clone(v)))
            .collect();
        self.end_workspaces(Some(connection), "disconnected");
        for (id, s) in mine {
            self.lock_sessions().remove(&id);
            if let Some(t) = s
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .end("disconnected")
            {
                self.teardown(t);
            }
        }
    }

    /// Counted in `closing` while it lives: shutdown waits (bounded) until no jail a
    /// session or workspace was taken out of its map for is still being ended.
    pub(super) fn closing(&self) -> Closing<'_> {
        self.closing.fetch_add(1, Ordering::SeqCst);
        Closing(&self.closing)
    }

    /// Stop every running job and call now: each ends with an `interrupted:sigterm` record.
    pub fn stop_jobs(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        for s in self
            .clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
        {
            s.send(b'T');
        }
        if let Some(w) = self
            .stop_write
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            let _ = agentjail_jail::os::fd::write(w, b"x");
        }
    }

    /// End everything: sessions, the pool's jails, the spawner threads, the reaper (after it
    /// removed every cgroup it was given). Idempotent.
    pub fn shutdown(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        let all: Vec<Arc<Mutex<Session>>> =
            self.lock_sessions().drain().map(|(_, (_, s))| s).collect();
        for s in all {
            if let Some(t) = s.lock().unwrap_or_else(|e| e.into_inner()).end("shutdown") {
                self.teardown(t);
            }
        }
        self.end_workspaces(None, "shutdown");
        // A connection, a close or the janitor that took sessions or workspaces out of the
        // map before the drain is ending them now; their teardowns must reach the reaper
        // before the reaper stops (its join is what makes every jail gone before this
        // returns).
        let t = Instant::now();
        while self.closing.load(Ordering::SeqCst) > 0 && t.elapsed() < Duration::from_secs(15) {
            std::thread::sleep(Duration::from_millis(5));
        }
        for p in self.runners.iter().filter_map(|r| r.pool.as_ref()) {
            p.close();
        }
        if let Some(p) = &self.session_pool {
            p.close();
        }
        if let Some(p) = &self.workspace_pool {
            p.close();
        }
        for p in self.step_pools().iter() {
            p.close();
        }
        self.spawner.shutdown();
        // No jail is spawned from here on: the zygote's templates go now, not when the
        // engine is dropped (a client's thread may hold it until the process exits).
        for p in self.runners.iter().filter_map(|r| r.pool.as_ref()) {
            p.close_zygote();
        }
        drop(self.reaper.lock().unwrap_or_else(|e| e.into_inner()).take());
        if let Some(t) = self
            .reaper_thread
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            let _ = t.join();
        }
    }

    /// The pools and the sessions, for `serve`'s stats op and the benchmarks: `pool` is
    /// Python's (as before), `pools` every executed language's.
    pub fn stats(&self) -> Value {
        let pool_of = |l: Language| {
            self.runners
                .iter()
                .find(|r| r.language == l)
                .and_then(|r| r.pool.as_ref())
                .map(|p| p.stats())
        };
        let pools: serde_json::Map<String, Value> = self
            .runners
            .iter()
            .map(|r| (r.language.name().to_string(), json!(pool_of(r.language))))
            .collect();
        json!({
            "pool": pool_of(Language::Python),
            "pools": pools,
            "zygote": self.zygote_use(),
            "session_pool": self.session_pool.as_ref().map(|p| p.stats()),
            "workspace_pool": self.workspace_pool.as_ref().map(|p| p.stats()),
            "step_pools": self.step_pools().iter().map(|p| p.stats()).collect::<Vec<_>>(),
            "workspaces": self.workspace_count(),
            "sessions": self
                .lock_sessions()
                .values()
                .filter(|(_, s)| s.try_lock().map(|s| !s.is_ended()).unwrap_or(true))
                .count(),
        })
    }

    /// The compiled languages' step pools so far (a copy of the list).
    fn step_pools(&self) -> Vec<Arc<Pool>> {
        match &self.step_pools {
            Some(m) => m.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            None => Vec::new(),
        }
    }

    /// A jail started ahead for exactly `plan` (a compiled language's step); the first job
    /// of a plan makes its pool and starts cold.
    fn warm_step(
        &self,
        plan: &crate::plan::JailPlan,
    ) -> Option<agentjail_jail::launch::StartedJail> {
        let mut key = plan.clone();
        key.limits.wall_time_ms = 0;
        let pool = {
            let mut pools = self
                .step_pools
                .as_ref()?
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            match pools.iter().find(|p| **p.plan() == key) {
                Some(p) => Arc::clone(p),
                None => {
                    if pools.len() < STEP_POOLS_MAX && !self.closed.load(Ordering::SeqCst) {
                        let sizing = Sizing {
                            floor: STEP_POOL.0,
                            ceiling: STEP_POOL.1,
                            idle: pool::DEFAULT_IDLE,
                        };
                        pools.push(Pool::new(Arc::new(key), sizing, &self.spawner, None));
                    }
                    return None;
                }
            }
        };
        let (jail, _idle) = pool.take_or_wait(pool::READY_TIMEOUT)?;
        Some(jail)
    }

    fn teardown(&self, t: Teardown) {
        match self
            .reaper
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            Some(tx) => {
                let _ = tx.send(t);
            }
            None => drop(t),
        }
    }
}

/// Jails each compiled-language step pool keeps: one, two while jobs find it empty.
pub const STEP_POOL: (usize, usize) = (1, 2);
/// The most step pools an engine makes (a few per language: a job's hints that change its
/// jail make a plan of their own; past this, such jobs start cold).
pub const STEP_POOLS_MAX: usize = 24;

impl JailSource for Engine {
    fn acquire(
        &self,
        policy: &crate::policy::Policy,
        language: Language,
        job: &JobInputs,
    ) -> Result<Acquired, JailError> {
        let t = Instant::now();
        let runner = self
            .runners
            .iter()
            .find(|r| r.language == language)
            .ok_or_else(|| {
                JailError::plan(format!(
                    "this engine's policy does not execute {}",
                    language.name()
                ))
            })?;
        if job.is_empty() {
            if let Some(pool) = &runner.pool {
                // Nothing ready: a refill under way is served first (pool.rs); a jail never
                // takes longer than READY_TIMEOUT to start, or it fails and is no longer
                // waited on.
                if let Some((jail, _idle)) = pool.take_or_wait(pool::READY_TIMEOUT) {
                    return Ok(Acquired {
                        jail,
                        start: Start::Warm,
                        ready: true,
                        wait_us: t.elapsed().as_micros() as u64,
                    });
                }
            }
            let jail = self.spawner.start(Arc::clone(&runner.plan))?;
            return Ok(cold(jail, t));
        }
        // Inputs live in the jail's root, built before its processes: such a job gets a
        // jail built for it.
        self.start_built_for(policy, language, job, t)
    }

    fn interrupt(&self) -> Option<Interrupt<'_>> {
        Some(Interrupt::Shutdown(&self.stop_read))
    }

    fn teardown(&self, t: Teardown) {
        Engine::teardown(self, t);
    }

    fn compile_store(&self) -> Option<&dyn crate::pipeline::compile_cache::CompileStore> {
        Some(&self.compile_cache)
    }

    fn warm(&self, plan: &crate::plan::JailPlan) -> Option<agentjail_jail::launch::StartedJail> {
        self.warm_step(plan)
    }
}

impl Engine {
    /// A jail built for this job (its files and inputs in its root), started on a spawner
    /// thread: the jobs no warm jail serves, and `learn`'s observed runs.
    pub(super) fn start_built_for(
        &self,
        policy: &crate::policy::Policy,
        language: Language,
        job: &JobInputs,
        t: Instant,
    ) -> Result<Acquired, JailError> {
        let plan =
            source::runner_plan(policy, language, Mode::Run, true, job).map_err(JailError::plan)?;
        let jail = self.spawner.start(Arc::new(plan))?;
        Ok(cold(jail, t))
    }
}

/// A jail started for its job now, `t` being when the job asked for it.
fn cold(jail: agentjail_jail::launch::StartedJail, t: Instant) -> Acquired {
    Acquired {
        jail,
        start: Start::Cold,
        ready: true,
        wait_us: t.elapsed().as_micros() as u64,
    }
}

/// The engine, for one job that brings host inputs or belongs to a client with its own stop.
struct WithInputs<'a> {
    engine: &'a Engine,
    inputs: Vec<crate::plan::HostInput>,
    stop: Option<&'a ClientStop>,
    /// Where the job's output goes as it is read (a streaming request's).
    out: Option<&'a dyn OutputSink>,
}

impl JailSource for WithInputs<'_> {
    fn acquire(
        &self,
        policy: &crate::policy::Policy,
        language: Language,
        job: &JobInputs,
    ) -> Result<Acquired, JailError> {
        self.engine.acquire(policy, language, job)
    }

    fn interrupt(&self) -> Option<Interrupt<'_>> {
        match self.stop {
            Some(s) => Some(s.interrupt()),
            None => self.engine.interrupt(),
        }
    }

    fn inputs(&self) -> &[crate::plan::HostInput] {
        &self.inputs
    }

    fn output(&self) -> Option<&dyn OutputSink> {
        self.out
    }

    fn teardown(&self, t: Teardown) {
        Engine::teardown(self.engine, t);
    }

    fn compile_store(&self) -> Option<&dyn crate::pipeline::compile_cache::CompileStore> {
        self.engine.compile_store()
    }

    fn warm(&self, plan: &crate::plan::JailPlan) -> Option<agentjail_jail::launch::StartedJail> {
        self.engine.warm_step(plan)
    }
}

/// One ending of sessions' or workspaces' jails under way ([`Engine::closing`]).
pub(super) struct Closing<'a>(&'a std::sync::atomic::AtomicUsize);

impl Drop for Closing<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Close sessions that idled or lived too long, once a second, until the engine is gone.
/// An ended session stays known to its owner for a while (Session::forgotten): its next call
/// gets a record saying why it ended instead of `unknown_session`.
fn janitor(engine: std::sync::Weak<Engine>) {
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let Some(e) = engine.upgrade() else { return };
        if e.closed.load(Ordering::SeqCst) {
            return;
        }
        let mut forget = Vec::new();
        let mut expired = Vec::new();
        for (k, (_, s)) in e.lock_sessions().iter() {
            let Ok(guard) = s.try_lock() else { continue };
            if guard.is_ended() {
                if guard.forgotten() {
                    forget.push(k.clone());
                }
            } else if let Some(why) = guard.expired() {
                expired.push((Arc::clone(s), why));
            }
        }
        for id in forget {
            e.lock_sessions().remove(&id);
        }
        e.expire_workspaces();
        for (s, why) in expired {
            if let Some(t) = s.lock().unwrap_or_else(|x| x.into_inner()).end(why) {
                e.teardown(t);
            }
        }
    }
}
