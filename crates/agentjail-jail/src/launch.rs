//! The launch sequence, on top of the jail's mechanisms and the supervisor:
//!
//! ```text
//! prepare ──► start ──► run (deliver the work, supervise to the end) ──► tear down
//! (cgroup, fds,        (clone3, maps,   (stdin, caps, deadlines,          (kill, reap,
//!  argv, BPF, no        child's steps,   seccomp listener; kernel          rmdir the cgroup:
//!  process yet)         exec)            counters)                         JailRun's drop)
//! ```
//!
//! Each arrow is a value: a [`PreparedJail`] exists before any process, a [`StartedJail`] is
//! a jail whose program is running (or waiting for its work), and [`StartedJail::run`]
//! supervises it to the end. This is the seam the warm engine uses: it can start jails
//! before any job exists and hand each one job later. Dropping either value kills and
//! removes whatever exists of the jail.

use crate::cgroup::{self, JobCgroup};
use crate::plan::Requirement;
use crate::plan::{JailPlan, RlimitKind, SuperviseLimits};
use crate::prepared::{self, CgroupCover, Prepared};
use crate::spawn::{self, Spawned};
use crate::supervise::{self, Interrupt, Io, Outcome};
use crate::{landlock, seccomp, Control, ControlState, JailError, SetupError};
use std::time::Instant;

/// A finished jail run.
#[derive(Debug)]
pub struct JailRun {
    pub outcome: Outcome,
    /// The jail's /app/out, held open since the jail started (its artifacts).
    pub out: Option<std::os::fd::OwnedFd>,
    pub enforcement: Vec<Control>,
    /// Time from entering `prepare` to the program's exec, microseconds.
    pub setup_us: u64,
}

/// Everything built, nothing running: the job cgroup exists (or the policy allows going
/// without), the argv, root steps, landlock ruleset and seccomp program are ready.
pub struct PreparedJail {
    /// The child's data (None: another process spawns this jail from data of its own,
    /// prepared once for every jail of the plan; see [`prepare_elsewhere`]).
    prepared: Option<Prepared>,
    /// Which limits the job cgroup covers (the rlimits were chosen for it).
    cover: CgroupCover,
    /// The plan gives the program /app/out (open it once the jail runs).
    has_out: bool,
    cgroup: Option<JobCgroup>,
    enforcement: Vec<Control>,
    limits: SuperviseLimits,
    t0: Instant,
}

/// A jail whose program has been exec'd: its pidfd, pipes and listener are held here.
pub struct StartedJail {
    spawned: Spawned,
    out: Option<std::os::fd::OwnedFd>,
    cgroup: Option<JobCgroup>,
    enforcement: Vec<Control>,
    limits: SuperviseLimits,
    setup_us: u64,
}

/// Run `plan` in a jail and supervise it to the end. Nothing survives this call: the jail's
/// processes are dead and reaped, its mounts died with its mount namespace, and its cgroup
/// is removed.
pub fn execute(
    plan: &JailPlan,
    io: Io<'_>,
    interrupt: Option<Interrupt<'_>>,
) -> Result<JailRun, JailError> {
    Ok(prepare(plan)?.start()?.run(io, interrupt))
}

/// Decide what this host can enforce for `plan` (failing closed on what the policy
/// requires) and build everything the child will need.
pub fn prepare(plan: &JailPlan) -> Result<PreparedJail, JailError> {
    prepare_jail(plan, None)
}

/// How a plan's landlock and seccomp are enforced on this host: the same for every jail of
/// the plan, so a spawner that prepares the plan once (the engine's zygote) learns them once.
#[derive(Debug, Clone)]
pub struct PlanControls {
    landlock: Control,
    seccomp: Control,
}

impl PlanControls {
    /// Prepare `plan` once (nothing runs) and read what its jails will enforce. A control
    /// the policy requires and the host lacks fails each jail's prepare, as it does
    /// without a zygote; a plan that cannot be prepared at all fails here.
    pub fn probe(plan: &JailPlan) -> Result<PlanControls, SetupError> {
        let prepared = prepared::prepare(plan, CgroupCover::default())?;
        Ok(PlanControls::of(plan, &prepared))
    }

    fn of(plan: &JailPlan, prepared: &Prepared) -> PlanControls {
        PlanControls {
            landlock: landlock::enforcement(&plan.landlock, prepared.landlock.as_ref()),
            seccomp: seccomp::enforcement(&plan.seccomp, &prepared.seccomp),
        }
    }
}

/// As [`prepare`] (the cgroup, the record's enforcement), for a jail another process
/// spawns from the plan it prepared once ([`PreparedJail::start_elsewhere`]): nothing of
/// the child's data is built here; `controls` says what that data enforces.
pub fn prepare_elsewhere(
    plan: &JailPlan,
    controls: &PlanControls,
) -> Result<PreparedJail, JailError> {
    prepare_jail(plan, Some(controls))
}

fn prepare_jail(
    plan: &JailPlan,
    elsewhere: Option<&PlanControls>,
) -> Result<PreparedJail, JailError> {
    let t0 = Instant::now();
    if plan.seccomp.requirement == Requirement::Required && plan.seccomp.allowed.is_empty() {
        return Err(unavailable("seccomp", "empty allowlist"));
    }
    let (cgroup, cg_controls) = job_cgroup(plan)?;
    let enforced = |name: &str| {
        cg_controls
            .iter()
            .any(|c| c.control == name && c.state == ControlState::Enforced)
    };
    let cpu_cgroup = enforced("cgroup_cpu");
    let cover = CgroupCover {
        memory: enforced("cgroup_memory"),
        pids: enforced("cgroup_pids"),
        cpu: cpu_cgroup,
    };
    let (
        prepared,
        PlanControls {
            landlock: ll,
            seccomp: sc,
        },
    ) = match elsewhere {
        Some(controls) => (None, controls.clone()),
        None => {
            let prepared = prepared::prepare(plan, cover)?;
            let controls = PlanControls::of(plan, &prepared);
            (Some(prepared), controls)
        }
    };
    if plan.landlock.requirement == Requirement::Required && ll.state != ControlState::Enforced {
        return Err(unavailable("landlock", &ll.detail));
    }
    let mut enforcement = fixed_controls(plan.network);
    enforcement.push(ll);
    enforcement.push(sc);
    enforcement.extend(cg_controls);
    enforcement.push(rlimit_control(plan, cover));
    if !cpu_cgroup {
        // The CPU limit still holds, counted by the supervisor (supervise::jail_cpu_us).
        enforcement.push(Control::new(
            "cpu_time",
            ControlState::Enforced,
            "supervisor: process CPU clocks + procfs",
            "no cpu cgroup: the CPU limit is checked on the sum of every process of the jail, live ones included (their CPU clocks and what each reaped, from procfs); parallelism is bounded by the jail's CPU affinity (cpu_parallelism)",
        ));
        if let Some(n) = prepared::pin_cpus(plan, cover) {
            enforcement.push(Control::new(
                "cpu_parallelism",
                ControlState::Enforced,
                "sched_setaffinity",
                format!(
                    "no cpu cgroup: the jail is pinned to {n} of the CPUs agentjail may use (round-robin, so concurrent jails spread), in place of cpu.max's {n}-CPU bandwidth cap; the program's sched_setaffinity is refused with EPERM"
                ),
            ));
        }
    }
    if !cover.memory {
        enforcement.push(Control::new(
            "memory",
            ControlState::Degraded,
            "RLIMIT_AS",
            "no memory cgroup: address space is capped, but tmpfs pages, memfd and page cache are bounded only by the /tmp size cap",
        ));
    }
    Ok(PreparedJail {
        has_out: crate::plan::holds_cwd(&plan.cwd),
        prepared,
        cover,
        cgroup,
        enforcement,
        limits: plan.limits.clone(),
        t0,
    })
}

impl PreparedJail {
    /// clone3 into the namespaces; the child takes its ordered steps and execs the program.
    pub fn start(mut self) -> Result<StartedJail, JailError> {
        let Some(prepared) = self.prepared.take() else {
            return Err(JailError::Setup(SetupError::new(
                "clone3",
                None,
                "this jail was prepared to be spawned elsewhere (launch::prepare_elsewhere): start it with start_elsewhere",
            )));
        };
        self.finish(|cg, _| spawn::spawn(&prepared, cg))
    }

    /// As [`start`](Self::start), with the clone and handshake made by `spawn` in another
    /// process (given this jail's cgroup and what the cgroup covers), from the plan that
    /// process prepared once: the engine's zygote hands the jail over
    /// (crates/agentjail-engine/src/zygote).
    pub fn start_elsewhere(
        self,
        spawn: impl FnOnce(Option<&JobCgroup>, CgroupCover) -> Result<Spawned, SetupError>,
    ) -> Result<StartedJail, JailError> {
        self.finish(spawn)
    }

    fn finish(
        self,
        spawn: impl FnOnce(Option<&JobCgroup>, CgroupCover) -> Result<Spawned, SetupError>,
    ) -> Result<StartedJail, JailError> {
        let mut spawned = spawn(self.cgroup.as_ref(), self.cover)?;
        // /app/out, opened beneath the jail's root by the handshake while the program was
        // stopped before its exec (spawn.rs); held so its files can be read once every
        // process of the jail is gone. A jail waiting for late files has no program yet:
        // /app/out comes at `place_late`.
        let out = spawned.held_dir.take();
        if self.has_out && out.is_none() && spawned.late.is_none() {
            return Err(JailError::Setup(crate::SetupError::new(
                "open /app/out",
                None,
                "the jail's setup did not hand over /app/out",
            )));
        }
        Ok(StartedJail {
            spawned,
            out,
            cgroup: self.cgroup,
            enforcement: self.enforcement,
            limits: self.limits,
            setup_us: self.t0.elapsed().as_micros() as u64,
        })
    }
}

impl StartedJail {
    /// Whether this jail waits for its late files (a plan with `late_files`, not yet
    /// [`place_late`](Self::place_late)d): its root is built, its program does not exist.
    pub fn waits_for_files(&self) -> bool {
        self.spawned.late.is_some()
    }

    /// A jail started before its job: write the job's files into its late directory (the
    /// root still writable, no program yet), then let it seal its root and start its
    /// program. A jail without late files is returned as it is. On failure the jail is
    /// ended (killed, reaped, its cgroup removed): the caller starts another.
    pub fn place_late(mut self, files: &[crate::plan::LateFile]) -> Result<StartedJail, JailError> {
        let placed = match &self.spawned.late {
            None => return Ok(self),
            Some(late) => crate::late::write(&late.dir, files, late.owner),
        };
        let released = placed.and_then(|()| self.spawned.release_late());
        if let Err(e) = released {
            drop(self.end());
            return Err(JailError::Setup(e));
        }
        if self.out.is_none() {
            self.out = self.spawned.held_dir.take();
        }
        Ok(self)
    }

    /// Feed the program its input and supervise it to the end (exit, a limit, a forbidden
    /// syscall or an interrupt), under the plan's limits, counted from now. The jail is dead
    /// and reaped when this returns; its cgroup is removed.
    pub fn run(self, io: Io<'_>, interrupt: Option<Interrupt<'_>>) -> JailRun {
        let limits = self.limits.clone();
        let (run, teardown) = self.deliver(&limits, io, interrupt, supervise::Delivery::now());
        drop(teardown);
        run
    }

    /// As [`run`](Self::run), under `limits` (the job's: its hints may have tightened the
    /// plan's) and counted from `delivery`. The jail's processes are dead and reaped when
    /// this returns; its cgroup is left to the returned [`Teardown`], so a caller can remove
    /// it off the job's critical path.
    pub fn deliver(
        self,
        limits: &SuperviseLimits,
        io: Io<'_>,
        interrupt: Option<Interrupt<'_>>,
        delivery: supervise::Delivery,
    ) -> (JailRun, Teardown) {
        let StartedJail {
            mut spawned,
            out,
            cgroup,
            enforcement,
            setup_us,
            ..
        } = self;
        // A jail still waiting for its late files never starts its program here: its sync
        // pipe closes, the child exits at its wait (child.rs, 4b) and the run ends as a
        // failed start.
        drop(spawned.late.take());
        let (outcome, exiting) =
            supervise::supervise(spawned, limits, cgroup.as_ref(), interrupt, io, delivery);
        let run = JailRun {
            outcome,
            out,
            enforcement,
            setup_us,
        };
        (run, Teardown(exiting, cgroup))
    }

    /// The jail's /app/out, when the plan gives it one.
    pub fn out(&self) -> Option<&std::os::fd::OwnedFd> {
        self.out.as_ref()
    }

    /// Take the network allowlist's listening socket (the plan's `net_proxy_port`), for the
    /// caller's proxy to accept on. None when the plan has none or it was taken already.
    pub fn take_net(&mut self) -> Option<std::os::fd::OwnedFd> {
        self.spawned.net.take()
    }

    /// A handle that kills the program (and so, through its init, the whole jail): for a
    /// proxy thread that must stop the run (`network.deny_is_stop`).
    pub fn program_killer(&self) -> Option<ProgramKiller> {
        let fd = self.spawned.program_pidfd.as_ref()?.try_clone().ok()?;
        Some(ProgramKiller(fd))
    }

    /// The running jail, for a session's calls.
    pub fn spawned(&self) -> &Spawned {
        &self.spawned
    }

    pub fn cgroup(&self) -> Option<&JobCgroup> {
        self.cgroup.as_ref()
    }

    pub fn enforcement(&self) -> &[Control] {
        &self.enforcement
    }

    /// Add a line to the record's `enforcement` for this jail (how it was started, when
    /// that changes what the record may claim: the zygote's).
    pub fn add_control(&mut self, c: Control) {
        self.enforcement.push(c);
    }

    pub fn setup_us(&self) -> u64 {
        self.setup_us
    }

    /// The jail's CPU time so far (what its interpreter's start-up and preloads used).
    pub fn cpu_used_us(&self) -> u64 {
        supervise::jail_cpu_us(&self.spawned, self.cgroup.as_ref())
    }

    /// Whether the jail's init is still running (a warm jail can die while it waits, e.g.
    /// when the host's OOM killer picks it).
    pub fn alive(&self) -> bool {
        use std::os::fd::AsRawFd;
        crate::sys::poll_one(self.spawned.pidfd.as_raw_fd(), libc::POLLIN, 0).is_ok_and(|r| r == 0)
    }

    /// End the jail now (it is unused, or its session is over): kill, reap, and hand back
    /// its cgroup for removal.
    pub fn end(self) -> (supervise::Outcome, Teardown) {
        let StartedJail {
            spawned, cgroup, ..
        } = self;
        let outcome = supervise::end(spawned, cgroup.as_ref());
        (outcome, Teardown(supervise::Exiting::none(), cgroup))
    }
}

/// A pidfd of a jail's program that may outlive the run: killing a program already reaped
/// signals nobody (a pidfd never names a recycled pid).
#[derive(Debug)]
pub struct ProgramKiller(std::os::fd::OwnedFd);

impl ProgramKiller {
    pub fn kill(&self) {
        use std::os::fd::AsRawFd;
        let _ = crate::sys::pidfd_send_signal(self.0.as_raw_fd(), libc::SIGKILL);
    }
}

/// What is left of a finished jail: its init, when it was still exiting (every other process
/// is gone), and its cgroup. Dropping it reaps init, kills anything still in the cgroup and
/// removes the directories; send it to another thread to keep that off a job's critical
/// path.
pub struct Teardown(supervise::Exiting, Option<JobCgroup>);

impl Drop for Teardown {
    fn drop(&mut self) {
        // Init first: a cgroup cannot be removed while it still holds a process.
        drop(std::mem::replace(&mut self.0, supervise::Exiting::none()));
        if let Some(c) = self.1.as_mut() {
            c.kill_all();
            let _ = c.remove();
        }
    }
}

fn unavailable(control: &str, detail: &str) -> JailError {
    JailError::Unavailable {
        control: control.into(),
        detail: detail.into(),
    }
}

/// The controls every jail has, whatever the host: the namespaces (the network one only
/// when the policy keeps the network off), capabilities, no_new_privs and the root.
fn fixed_controls(network: bool) -> Vec<Control> {
    let mut v: Vec<Control> = ["user", "mount", "pid", "ipc", "uts", "cgroup"]
        .iter()
        .map(|ns| {
            Control::new(
                &format!("{ns}_namespace"),
                ControlState::Enforced,
                "clone3",
                "new namespace",
            )
        })
        .collect();
    v.push(if network {
        Control::new(
            "network_namespace",
            ControlState::Unavailable,
            "policy",
            "network.enabled = true: the host network is shared",
        )
    } else {
        Control::new(
            "network_namespace",
            ControlState::Enforced,
            "clone3",
            "new, empty network namespace (loopback down)",
        )
    });
    v.push(Control::new(
        "capabilities",
        ControlState::Enforced,
        "capset + PR_CAPBSET_DROP + ambient clear",
        "no capability in any set",
    ));
    v.push(Control::new(
        "no_new_privs",
        ControlState::Enforced,
        "prctl",
        "set before exec",
    ));
    v.push(Control::new(
        "filesystem",
        ControlState::Enforced,
        "pivot_root",
        "tmpfs root, read-only binds, old root detached",
    ));
    v
}

/// The rlimits as the child will set them (the cgroup-covered ones adjusted, see
/// `prepared::prepare`).
fn rlimit_control(plan: &JailPlan, cover: CgroupCover) -> Control {
    let name = |k: RlimitKind| match k {
        RlimitKind::Core => "core",
        RlimitKind::FileSize => "fsize",
        RlimitKind::OpenFiles => "nofile",
        RlimitKind::AddressSpace => "as",
        RlimitKind::Cpu => "cpu",
        RlimitKind::Nproc => "nproc",
        RlimitKind::MemLock => "memlock",
        RlimitKind::MsgQueue => "msgqueue",
    };
    let detail: Vec<String> = prepared::effective_rlimits(&plan.rlimits, cover)
        .iter()
        .map(|l| format!("{}={}", name(l.resource), l.soft))
        .collect();
    Control::new(
        "rlimits",
        ControlState::Enforced,
        "setrlimit",
        detail.join(" "),
    )
}

/// Create the job cgroup as the policy asks; `None` when the host cannot and the policy
/// allows degrading.
fn job_cgroup(plan: &JailPlan) -> Result<(Option<JobCgroup>, Vec<Control>), JailError> {
    let host = cgroup::detect_host();
    cgroup::sweep_stale(&host);
    let name = format!(
        "{}{}-{}",
        cgroup::JOB_PREFIX,
        std::process::id(),
        crate::ids::random_hex(4)
    );
    let required = plan.cgroup_requirement == Requirement::Required;
    match JobCgroup::create(&host, &name, &plan.cgroup) {
        Ok(cg) => {
            let controls = cg.controls();
            if required {
                if let Some(c) = controls.iter().find(|c| c.state != ControlState::Enforced) {
                    return Err(unavailable(&c.control, &c.detail));
                }
            }
            Ok((Some(cg), controls))
        }
        Err(e) if required => Err(unavailable("cgroup", &e.to_string())),
        Err(e) => Ok((
            None,
            vec![Control::new(
                "cgroup",
                ControlState::Unavailable,
                "none",
                e.to_string(),
            )],
        )),
    }
}
