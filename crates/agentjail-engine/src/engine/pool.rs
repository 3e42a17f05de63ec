//! Jails started before their job exists.
//!
//! Every jail the engine uses is started on one of the [`Spawner`]'s long-lived threads:
//! the jail's init dies by `PR_SET_PDEATHSIG` when the *thread* that cloned it exits, so a
//! jail must not be cloned by a worker that may go away (a tokio blocking thread, a finished
//! request handler) while the jail is still wanted. The spawner threads live as long as the
//! engine; when the engine's process dies, every jail dies with it.
//!
//! A [`Pool`] keeps `target` single-use runner jails for one policy started ahead of their
//! jobs: each is a complete jail (namespaces, root, landlock, seccomp, cgroup, rlimits),
//! its interpreter started and the policy's preload modules imported, waiting for one job
//! on its job pipe. A jail is handed to exactly one job and then destroyed; the spawner
//! threads refill the pool in the background. Requests for a jail now (a cold start, a
//! session) go before refills.
//!
//! The pool's size moves between a floor (`--pool`) and a ceiling (`--pool-max`): each take
//! that finds no jail ready (a job that had to wait for one) raises the target by one, up
//! to the ceiling; once no take has missed for the idle time (`--pool-idle`), the spawner
//! threads end one surplus jail a second, the longest-waiting first, down to the floor.

use crate::plan::JailPlan;
use crate::zygote::Zygote;
use agentjail_jail::launch::{self, StartedJail};
use agentjail_jail::{JailError, SetupError};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a new jail's runner may take to report ready (interpreter start and preloads).
pub const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// Wait until the runner in `jail` reports ready on its reply pipe. Reading stops at the
/// end of that line, so the job's replies start clean.
pub fn wait_ready(jail: &StartedJail, timeout: Duration) -> Result<(), JailError> {
    use agentjail_jail::os;
    let fail = |what: &str, errno: Option<i32>| {
        JailError::Setup(SetupError::new(
            format!("runner start: {what}"),
            errno,
            "the interpreter did not start in the jail: run the same policy with `agentjail run` to see its stderr",
        ))
    };
    let Some(reply) = jail.spawned().reply.as_ref() else {
        return Ok(());
    };
    let deadline = Instant::now() + timeout;
    let mut line = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(fail("no ready report in time", Some(libc::ETIMEDOUT)));
        }
        let ms = left.as_millis().min(i32::MAX as u128) as i32;
        match os::fd::poll_one(reply, libc::POLLIN, ms) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(libc::EINTR) => continue,
            Err(e) => return Err(fail("poll", Some(e))),
        }
        let mut b = [0u8; 1];
        match os::fd::read(reply, &mut b) {
            Ok(1) if b[0] == b'\n' => break,
            Ok(1) if line.len() < 256 => line.push(b[0]),
            Ok(1) => return Err(fail("malformed ready report", None)),
            Ok(_) => return Err(fail("the runner exited", None)),
            Err(libc::EAGAIN) => continue,
            Err(e) => return Err(fail("read", Some(e))),
        }
    }
    let ok = crate::runner::Event::parse(&line) == Some(crate::runner::Event::Ready);
    if ok {
        Ok(())
    } else {
        Err(fail("malformed ready report", None))
    }
}

/// Prepare, start and wait for the runner: a jail ready for its job. With a zygote, the
/// cgroup and the record's enforcement are made here as for any jail, and the template
/// clones the jail into them from the plan it prepared once (nothing of the child's data is
/// built here: what it enforces the zygote learned once, `Zygote::controls`).
fn start_ready(plan: &JailPlan, zygote: Option<&Zygote>) -> Result<StartedJail, JailError> {
    let jail = match zygote {
        Some(z) => {
            let prepared = launch::prepare_elsewhere(plan, z.controls())?;
            let mut jail = prepared.start_elsewhere(|cg, cover| z.spawn(cg, cover))?;
            jail.add_control(crate::zygote::control());
            jail
        }
        None => launch::prepare(plan)?.start()?,
    };
    // A runner that never reported ready (it exited, or took too long): ended here, so its
    // init is reaped. Dropped instead, the init would stay a zombie child of this process
    // until it exits, and then PID 1's to reap: one more each time a pool retries.
    if let Err(e) = wait_ready(&jail, READY_TIMEOUT) {
        drop(jail.end());
        return Err(e);
    }
    Ok(jail)
}

type Reply = std::sync::mpsc::SyncSender<Result<StartedJail, JailError>>;

struct SpawnQueue {
    requests: VecDeque<(Arc<JailPlan>, Reply)>,
    pools: Vec<Arc<Pool>>,
    shutdown: bool,
}

/// The threads that start every jail.
pub struct Spawner {
    queue: Arc<(Mutex<SpawnQueue>, Condvar)>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Spawner {
    pub fn new(threads: usize) -> Result<Arc<Spawner>, super::StartError> {
        let queue = Arc::new((
            Mutex::new(SpawnQueue {
                requests: VecDeque::new(),
                pools: Vec::new(),
                shutdown: false,
            }),
            Condvar::new(),
        ));
        let mut handles = Vec::new();
        for i in 0..threads.max(1) {
            let q = Arc::clone(&queue);
            let t = std::thread::Builder::new()
                .name(format!("agentjail-spawner-{i}"))
                .spawn(move || spawner_loop(&q))
                .map_err(super::StartError::thread("a spawner thread"))?;
            handles.push(t);
        }
        Ok(Arc::new(Spawner {
            queue,
            threads: Mutex::new(handles),
        }))
    }

    /// A jail for `plan`, started now (before any refill) and ready for its job.
    pub fn start(&self, plan: Arc<JailPlan>) -> Result<StartedJail, JailError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        {
            let (lock, cv) = &*self.queue;
            let mut q = lock.lock().unwrap_or_else(|e| e.into_inner());
            if q.shutdown {
                return Err(shutting_down());
            }
            q.requests.push_back((plan, tx));
            cv.notify_one();
        }
        rx.recv().unwrap_or_else(|_| Err(shutting_down()))
    }

    fn add_pool(&self, pool: Arc<Pool>) {
        let (lock, cv) = &*self.queue;
        let mut q = lock.lock().unwrap_or_else(|e| e.into_inner());
        q.pools.push(pool);
        cv.notify_all();
    }

    /// Wake the threads (a pool needs refilling).
    fn poke(&self) {
        self.queue.1.notify_all();
    }

    /// Stop the threads after their current task; unserved requests fail.
    pub fn shutdown(&self) {
        let (lock, cv) = &*self.queue;
        {
            let mut q = lock.lock().unwrap_or_else(|e| e.into_inner());
            q.shutdown = true;
            for (_, reply) in q.requests.drain(..) {
                let _ = reply.send(Err(shutting_down()));
            }
            for p in q.pools.drain(..) {
                p.close();
            }
        }
        cv.notify_all();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        for t in threads {
            let _ = t.join();
        }
    }
}

fn shutting_down() -> JailError {
    JailError::Unavailable {
        control: "engine".into(),
        detail: "agentjail is shutting down".into(),
    }
}

enum Task {
    Request(Arc<JailPlan>, Reply),
    Refill(Arc<Pool>),
    Trim(Arc<Pool>),
}

fn spawner_loop(queue: &(Mutex<SpawnQueue>, Condvar)) {
    let (lock, cv) = queue;
    loop {
        let task = {
            let mut q = lock.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if q.shutdown {
                    return;
                }
                if let Some((plan, reply)) = q.requests.pop_front() {
                    break Task::Request(plan, reply);
                }
                if let Some(p) = q.pools.iter().find(|p| p.claim_refill()) {
                    break Task::Refill(Arc::clone(p));
                }
                if let Some(p) = q.pools.iter().find(|p| p.wants_trim()) {
                    break Task::Trim(Arc::clone(p));
                }
                q = cv
                    .wait_timeout(q, Duration::from_millis(250))
                    .map(|(g, _)| g)
                    .unwrap_or_else(|e| e.into_inner().0);
            }
        };
        match task {
            Task::Request(plan, reply) => {
                let _ = reply.send(start_ready(&plan, None));
            }
            Task::Refill(pool) => {
                let result = start_ready(&pool.plan, pool.zygote.as_deref());
                pool.refilled(result);
            }
            Task::Trim(pool) => pool.trim(),
        }
    }
}

/// A started, ready jail waiting in a pool.
struct Warm {
    jail: StartedJail,
    ready_at: Instant,
}

#[derive(Default)]
struct PoolState {
    /// How many jails the pool keeps now: between the pool's floor and ceiling.
    target: usize,
    /// The last take that found no jail ready, or the last change of `target`: the pool
    /// shrinks only after its idle time without either.
    last_busy: Option<Instant>,
    ready: VecDeque<Warm>,
    starting: usize,
    closed: bool,
    /// The last refill failure (stage and message), until a refill succeeds.
    last_error: Option<JailError>,
    failures: u32,
    /// No refill before this (backing off after failures).
    retry_at: Option<Instant>,
    /// Since when the refill owed for the last jail taken waits for a job to end (see
    /// `pop_ready`); counted as if it were starting, for at most [`DEFER_MAX`].
    deferred: Option<Instant>,
}

/// Counters for `stats` and the benchmarks.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct PoolStats {
    pub target: usize,
    /// The configured size (`--pool`) and the most it grows to (`--pool-max`).
    pub floor: usize,
    pub ceiling: usize,
    pub ready: usize,
    pub starting: usize,
    pub refill_failures: u32,
}

/// Longest a refill waits for the job that took a warm jail to be answered (`Pool::pop_ready`):
/// longer than the short jobs the deferral is for, short enough that a long job leaves the
/// pool full again within a second.
pub const DEFER_MAX: Duration = Duration::from_millis(500);

/// How long a pool keeps jails above its floor after the last take that found none ready.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(30);

/// How a pool's size may move: between `floor` and `ceiling` jails, down again after `idle`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizing {
    pub floor: usize,
    pub ceiling: usize,
    pub idle: Duration,
}

impl Sizing {
    /// A pool of exactly `n` jails.
    pub fn fixed(n: usize) -> Sizing {
        Sizing {
            floor: n,
            ceiling: n,
            idle: DEFAULT_IDLE,
        }
    }
}

/// Warm single-use jails for one plan.
pub struct Pool {
    plan: Arc<JailPlan>,
    /// Where the pool's jails are spawned from, when the engine uses a zygote.
    zygote: Option<Arc<Zygote>>,
    sizing: Sizing,
    /// Hold the refill owed for a take even when nothing else is ready (see `pop_ready`).
    hold_last: bool,
    state: Mutex<PoolState>,
    cv: Condvar,
    spawner: Arc<Spawner>,
}

impl Pool {
    /// A pool of `sizing.floor` to `sizing.ceiling` jails for `plan`, filled in the
    /// background by `spawner`.
    pub fn new(
        plan: Arc<JailPlan>,
        sizing: Sizing,
        spawner: &Arc<Spawner>,
        zygote: Option<Arc<Zygote>>,
    ) -> Arc<Pool> {
        Self::with_hold(plan, sizing, spawner, zygote, false)
    }

    /// A pool whose refills always wait for the job that took a jail (or [`DEFER_MAX`]),
    /// even when nothing else is ready: for jails taken rarely and used at once, such as a
    /// session's. Started at the take, a refill's clone and interpreter start-up compete
    /// for the CPU with the session's start and its first call (measured: a session start
    /// took 2.1 ms instead of 0.5 with the refill under way); a second session that comes
    /// before the refill starts gets a jail started for it, as it would with no pool.
    pub fn holding_refills(
        plan: Arc<JailPlan>,
        target: usize,
        spawner: &Arc<Spawner>,
    ) -> Arc<Pool> {
        Self::with_hold(plan, Sizing::fixed(target), spawner, None, true)
    }

    fn with_hold(
        plan: Arc<JailPlan>,
        sizing: Sizing,
        spawner: &Arc<Spawner>,
        zygote: Option<Arc<Zygote>>,
        hold_last: bool,
    ) -> Arc<Pool> {
        let sizing = Sizing {
            ceiling: sizing.ceiling.max(sizing.floor),
            ..sizing
        };
        let pool = Arc::new(Pool {
            plan,
            zygote,
            sizing,
            hold_last,
            state: Mutex::new(PoolState {
                target: sizing.floor,
                ..PoolState::default()
            }),
            cv: Condvar::new(),
            spawner: Arc::clone(spawner),
        });
        spawner.add_pool(Arc::clone(&pool));
        pool
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A spawner thread takes one refill slot if the pool is below target.
    fn claim_refill(&self) -> bool {
        let mut s = self.lock();
        let backing_off = s.retry_at.is_some_and(|t| Instant::now() < t);
        if s.deferred.is_some_and(|t| t.elapsed() >= DEFER_MAX) {
            s.deferred = None;
        }
        let deferred = usize::from(s.deferred.is_some());
        if s.closed || backing_off || s.ready.len() + s.starting + deferred >= s.target {
            return false;
        }
        s.starting += 1;
        true
    }

    /// Whether the pool is above its floor and has been idle long enough to end a jail (at
    /// most one a second).
    fn wants_trim(&self) -> bool {
        let s = self.lock();
        let idle = s.last_busy.is_none_or(|t| t.elapsed() >= self.sizing.idle);
        let paced = s
            .last_busy
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(1));
        !s.closed && s.target > self.sizing.floor && idle && paced
    }

    /// End one surplus jail (the one ready longest) and lower the target by one.
    fn trim(&self) {
        let surplus = {
            let mut s = self.lock();
            if s.closed || s.target <= self.sizing.floor {
                return;
            }
            s.target -= 1;
            // Paced from now: the next one goes a second later (wants_trim).
            let pace = self.sizing.idle.saturating_sub(Duration::from_secs(1));
            s.last_busy = Some(
                Instant::now()
                    .checked_sub(pace)
                    .unwrap_or_else(Instant::now),
            );
            if s.ready.len() + s.starting > s.target {
                s.ready.pop_front()
            } else {
                None
            }
        };
        if let Some(w) = surplus {
            drop(w.jail.end());
        }
    }

    /// A take found no jail ready: a job waits for one. Grow by one, up to the ceiling.
    fn missed(&self, s: &mut PoolState) {
        s.last_busy = Some(Instant::now());
        if s.target < self.sizing.ceiling {
            s.target += 1;
        }
    }

    fn refilled(&self, result: Result<StartedJail, JailError>) {
        let mut s = self.lock();
        s.starting -= 1;
        match result {
            Ok(jail) if !s.closed => {
                s.ready.push_back(Warm {
                    jail,
                    ready_at: Instant::now(),
                });
                s.last_error = None;
                s.failures = 0;
                s.retry_at = None;
            }
            Ok(jail) => drop(jail.end()),
            Err(e) => {
                s.failures = s.failures.saturating_add(1);
                // 50 ms, doubling, at most 2 s: a host that cannot start jails (pids
                // exhausted, cgroup unwritable) is retried without spinning.
                let backoff =
                    Duration::from_millis(50u64 << s.failures.min(5)).min(Duration::from_secs(2));
                s.retry_at = Some(Instant::now() + backoff);
                s.last_error = Some(e);
            }
        }
        self.cv.notify_all();
    }

    /// A ready jail, if one is waiting (never one that died while it waited), and how long
    /// it had been ready.
    pub fn take(&self) -> Option<(StartedJail, Duration)> {
        let taken = {
            let mut s = self.lock();
            let taken = self.pop_ready(&mut s);
            if taken.is_none() {
                self.missed(&mut s);
            }
            taken
        };
        self.spawner.poke();
        taken.map(|w| (w.jail, w.ready_at.elapsed()))
    }

    /// A ready jail as [`take`](Self::take) gives it or, when none is ready but refills are
    /// under way, the first of them to become ready. A job that finds the pool empty is
    /// served by a jail already starting instead of queueing a start of its own behind the
    /// refills on the spawner threads (which left the refill it queued behind ready and
    /// unused while it waited). Every jail is still new and used once; only which job gets
    /// which changes. None when nothing is ready or starting (the caller starts a jail), or
    /// once `timeout` has passed or the pool is closed.
    pub fn take_or_wait(&self, timeout: Duration) -> Option<(StartedJail, Duration)> {
        let deadline = Instant::now() + timeout;
        let taken = {
            let mut s = self.lock();
            let mut waited = false;
            loop {
                let found = self.pop_ready(&mut s);
                if found.is_none() && !waited {
                    waited = true;
                    self.missed(&mut s);
                }
                if found.is_some() || s.closed || s.starting == 0 {
                    break found;
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break None;
                }
                s = self
                    .cv
                    .wait_timeout(s, left)
                    .map(|(g, _)| g)
                    .unwrap_or_else(|e| e.into_inner().0);
            }
        };
        self.spawner.poke();
        taken.map(|w| (w.jail, w.ready_at.elapsed()))
    }

    /// The first ready jail that is still alive (the dead are ended).
    ///
    /// A long job does not keep the pool short: a deferred refill starts after [`DEFER_MAX`]
    /// even while the job runs (the spawner threads look at least every 250 ms).
    ///
    /// While another jail is still ready after this one is taken, the refill this take is
    /// owed waits until a job has been answered ([`job_ended`](Self::job_ended), called by
    /// `Engine::answered` once the front end wrote the response): started now, the new
    /// jail's clone and interpreter start-up would compete for the CPU with the job that is
    /// about to run and with its record being sent, and the next job has a ready jail
    /// anyway. At most one refill waits so, and none once the pool has nothing ready: then
    /// every refill may start at once (unless the pool holds its refills,
    /// [`holding_refills`](Self::holding_refills)).
    fn pop_ready(&self, s: &mut PoolState) -> Option<Warm> {
        let mut found = None;
        while let Some(w) = s.ready.pop_front() {
            if w.jail.alive() {
                found = Some(w);
                break;
            }
            drop(w.jail.end());
        }
        s.deferred =
            (found.is_some() && (self.hold_last || !s.ready.is_empty())).then(Instant::now);
        found
    }

    /// A job ended and its response is out: the refill deferred at the last take (if any) may
    /// start.
    pub fn job_ended(&self) {
        let deferred = self.lock().deferred.take();
        if deferred.is_some() {
            self.spawner.poke();
        }
    }

    /// The last refill failure, when the pool has nothing ready and nothing starting: a job
    /// then fails closed with it instead of waiting.
    pub fn failing(&self) -> Option<String> {
        let s = self.lock();
        match (&s.last_error, s.ready.is_empty()) {
            (Some(e), true) => Some(e.to_string()),
            _ => None,
        }
    }

    pub fn stats(&self) -> PoolStats {
        let s = self.lock();
        PoolStats {
            target: s.target,
            floor: self.sizing.floor,
            ceiling: self.sizing.ceiling,
            ready: s.ready.len(),
            starting: s.starting,
            refill_failures: s.failures,
        }
    }

    /// Stop refilling and end every waiting jail.
    pub fn close(&self) {
        let ready: Vec<Warm> = {
            let mut s = self.lock();
            s.closed = true;
            s.ready.drain(..).collect()
        };
        // Jobs waiting in take_or_wait start their own jail (and fail: the engine is closing).
        self.cv.notify_all();
        for w in ready {
            drop(w.jail.end());
        }
    }

    pub fn plan(&self) -> &Arc<JailPlan> {
        &self.plan
    }

    /// End the zygote the pool's jails came from, if any (Zygote::close says why now).
    pub fn close_zygote(&self) {
        if let Some(z) = &self.zygote {
            z.close();
        }
    }
}
