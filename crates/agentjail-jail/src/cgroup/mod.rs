//! cgroup limits for one job: memory, pids and CPU, v2 first, v1 where the host only has v1.
//!
//! Rules this module keeps (docs/ARCHITECTURE.md "The nevers"):
//! - The job cgroup is only ever created as a child of the cgroup this process is in, per
//!   hierarchy, as `/proc/self/cgroup` names it. Nothing outside that subtree is written.
//! - Host paths are parameters: [`detect`] takes the cgroup root, `/proc/self/cgroup` and
//!   `/proc/mounts` as values, and making and removing a cgroup goes through one trait,
//!   [`CgroupFs`]: the kernel's cgroupfs ([`Kernel`]) in production, a fake that does on a
//!   temp dir what the kernel does ([`fake::FakeCgroupFs`]) in tests. No code here asks
//!   which one it has.
//! - A limit the host cannot enforce is not created; [`JobCgroup::controls`] reports it as
//!   unavailable with the fix. Permission problems (EACCES/EPERM/EROFS when creating the job
//!   directory: e.g. an unprivileged user on root-owned v1 hierarchies) degrade: `create`
//!   returns a `JobCgroup` with those limits unenforced. Any other failure (a limit file that
//!   rejects its value, ENOSPC, ...) removes everything created so far and returns
//!   `Err(SetupError)`: the caller maps that to exit 125 / `sandbox_unavailable`.
//!
//! v2 delegation and the "no internal processes" rule: a child cgroup only gets a controller
//! when our own cgroup lists it in `cgroup.subtree_control`, and a non-root cgroup that holds
//! processes cannot enable controllers for its children (EBUSY). When our own v2 cgroup *has*
//! the controllers (they are delegated to us: `cgroup.controllers` lists them and we can write
//! there) but enabling them fails with EBUSY, agentjail moves its own process into a leaf
//! `<own>/agentjail-supervisor` — inside its own subtree, as systemd's `Delegate=yes` services
//! and runc do — and enables them in `<own>`. Job cgroups are then created as siblings of that
//! leaf, and [`detect`] treats a cgroup named `agentjail-supervisor` as "own = its parent".
//! This move is never attempted on v1 hierarchies, and never when the controllers are not
//! delegated to our cgroup (e.g. this project's hybrid CI host, whose v2 tree has none).
//!
//! `kill_all` on v1 (no `cgroup.kill`) reads `cgroup.procs` and SIGKILLs each member until
//! the cgroup is empty. A pid read there could in principle exit and be reused before the
//! kill; the jail runs in its own pid namespace whose init the supervisor kills first, so the
//! window is the time between reading a pid and signalling it while the process is dying.

//! How the launcher uses it (one run):
//! ```text
//! let host = cgroup::detect_host();
//! cgroup::sweep_stale(&host);                       // leftovers of SIGKILLed launchers
//! let mut job = JobCgroup::create(&host, run_id, &limits)?;   // before fork; Err -> exit 125
//! let join = job.v1_join_fds()?;                    // v1 `tasks` fds, for the child (before fork)
//! // clone: on v2 pass job.v2_dir_fd() to clone3(CLONE_INTO_CGROUP) when it is Some
//! // child: write "0" to each of `join` first thing (moves itself, no grace-period wait)
//! job.attach_v2(child_pid)?;                        // only when clone3 could not place it; the
//!                                                   // child unshares CLONE_NEWCGROUP after both,
//!                                                   // so its cgroup namespace root is the job
//! loop { job.cpu_usage_us() ... }                   // CPU-time limit with ms resolution
//! job.kill_all();                                   // the jail is over, whatever happened
//! let stats = job.stats();                          // BEFORE remove: oom_kills > 0 ->
//!                                                   // code_memory_limit, pids_limit_hits > 0 ->
//!                                                   // code_pids_limit, memory_peak_bytes
//! job.remove()?;                                    // waits until empty, rmdir (EBUSY retried)
//! enforcement.extend(job.controls());               // Unavailable + policy Required -> stop
//!                                                   // with sandbox_unavailable:cgroup_memory
//! ```
//! Dropping a `JobCgroup` that was not removed kills what is inside and removes it.
//!
//! This file holds the trait, the host's and the job's types and the small file helpers;
//! reading the host is `detect.rs`, making a job's cgroups `create.rs`, the live job
//! (attach, counters, kill, remove) `run.rs`, removing other runs' leftovers `sweep.rs`.

mod create;
mod detect;
pub mod fake;
mod run;
mod sweep;

pub use detect::{detect, detect_host};
pub use sweep::{sweep_stale, sweep_stale_in};

use crate::ControlState;
use serde::Serialize;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

pub use crate::plan::CgroupLimits;

/// What the job code needs of a cgroup filesystem besides reading and writing the files
/// that are there: making and removing a cgroup. On cgroupfs the kernel creates a cgroup's
/// interface files (`cgroup.procs`, the controllers' limit and counter files) with its
/// directory and takes them away with it; the code only ever opens files that exist.
pub trait CgroupFs: Sync + std::fmt::Debug {
    /// mkdir a cgroup (EEXIST when it exists).
    fn mkdir(&self, path: &Path) -> std::io::Result<()>;
    /// rmdir a cgroup (EBUSY while it holds a process or a child cgroup).
    fn rmdir(&self, path: &Path) -> std::io::Result<()>;
}

/// The kernel's cgroup filesystem.
#[derive(Debug, Clone, Copy)]
pub struct Kernel;

impl CgroupFs for Kernel {
    fn mkdir(&self, path: &Path) -> std::io::Result<()> {
        std::fs::create_dir(path)
    }

    fn rmdir(&self, path: &Path) -> std::io::Result<()> {
        std::fs::remove_dir(path)
    }
}

/// The leaf agentjail moves itself into when it must enable v2 controllers in its own cgroup.
pub const SUPERVISOR_LEAF: &str = "agentjail-supervisor";
/// The most v1 directories a job has: one per hierarchy of memory, pids, cpu and cpuacct
/// (`create.rs`), each joined by the jail itself (`JobCgroup::v1_join_fds`).
pub const MAX_V1_DIRS: usize = 4;
/// Prefix of every job cgroup: `agentjail-<launcher pid>-<run id>`.
pub const JOB_PREFIX: &str = "agentjail-";

const FIX_DELEGATE: &str = "no cgroup delegation: run under a systemd unit with Delegate=yes \
     (or systemd-run --user --scope -p Delegate=yes), or as root";
const FIX_UNIFIED: &str = "boot with systemd.unified_cgroup_hierarchy=1 for cgroup v2, or \
     mount the v1 controller";

/// The v2 (unified) hierarchy as seen from our own cgroup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct V2Host {
    /// Where cgroup2 is mounted ("/sys/fs/cgroup" or "/sys/fs/cgroup/unified").
    pub mount: PathBuf,
    /// The directory job cgroups are created in: our own cgroup (or the parent of
    /// `agentjail-supervisor` when we already moved ourselves there).
    pub base: PathBuf,
    /// True when `base` is the directory of the cgroup we are in (no supervisor leaf yet).
    pub base_is_own: bool,
    /// `cgroup.controllers` of `base`: what our cgroup may hand down.
    pub controllers: Vec<String>,
    /// `cgroup.subtree_control` of `base`: what children get today.
    pub subtree_control: Vec<String>,
    /// We may create a child of `base` (write access to the directory).
    pub writable: bool,
}

impl V2Host {
    /// Whether a child of `base` can get `ctrl`: already enabled, or delegated and writable.
    pub fn offers(&self, ctrl: &str) -> bool {
        let has = |v: &[String]| v.iter().any(|c| c == ctrl);
        self.writable && (has(&self.subtree_control) || has(&self.controllers))
    }
}

/// One mounted v1 hierarchy (possibly several controllers, e.g. "cpu,cpuacct").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct V1Host {
    pub controllers: Vec<String>,
    pub mount: PathBuf,
    /// Our cgroup in this hierarchy, as `/proc/self/cgroup` names it.
    pub own_path: String,
    /// mount + own_path: where job cgroups go.
    pub base: PathBuf,
    pub writable: bool,
}

/// What this host's cgroups offer to this process.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HostCgroups {
    pub root: PathBuf,
    pub v2: Option<V2Host>,
    pub v1: Vec<V1Host>,
}

/// The host's cgroup layout in one word, for the doctor and the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// Only cgroup2 is mounted.
    Unified,
    /// v1 controllers plus a cgroup2 mount (systemd "hybrid").
    Hybrid,
    /// v1 controllers only.
    Legacy,
    /// No cgroup filesystem at all.
    None,
}

impl HostCgroups {
    pub fn layout(&self) -> Layout {
        let v1 = self.v1.iter().any(|h| !h.controllers.is_empty());
        match (self.v2.is_some(), v1) {
            (true, false) => Layout::Unified,
            (true, true) => Layout::Hybrid,
            (false, true) => Layout::Legacy,
            (false, false) => Layout::None,
        }
    }

    /// The v1 hierarchy that carries `ctrl`, if mounted.
    pub fn v1_for(&self, ctrl: &str) -> Option<&V1Host> {
        self.v1
            .iter()
            .find(|h| h.controllers.iter().any(|c| c == ctrl))
    }

    /// Which mechanism would enforce `ctrl` ("memory", "pids", "cpu") for a job, or why none.
    pub fn provider(&self, ctrl: &str) -> Result<String, ProviderError> {
        if let Some(v2) = &self.v2 {
            if v2.offers(ctrl) {
                return Ok(format!("cgroup v2 at {}", v2.base.display()));
            }
        }
        if let Some(h) = self.v1_for(ctrl) {
            if h.writable {
                return Ok(format!("cgroup v1 at {}", h.base.display()));
            }
            return Err(ProviderError::V1NotWritable {
                ctrl: ctrl.into(),
                base: h.base.clone(),
            });
        }
        match &self.v2 {
            Some(v2) if !v2.controllers.iter().any(|c| c == ctrl) => {
                Err(ProviderError::V2NotDelegated {
                    ctrl: ctrl.into(),
                    base: v2.base.clone(),
                    controllers: v2.controllers.clone(),
                })
            }
            Some(v2) => Err(ProviderError::V2NotWritable {
                base: v2.base.clone(),
            }),
            None => Err(ProviderError::NotMounted { ctrl: ctrl.into() }),
        }
    }
}

/// Why no cgroup mechanism can enforce a controller for a job. `Display` is
/// "<reason>; <fix>" ([`ProviderError::reason`], [`ProviderError::fix`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderError {
    /// The v1 hierarchy of `ctrl` is mounted, but its `base` is not writable by this user.
    V1NotWritable { ctrl: String, base: PathBuf },
    /// cgroup v2 is there but `ctrl` is not among the `controllers` handed down to `base`.
    V2NotDelegated {
        ctrl: String,
        base: PathBuf,
        controllers: Vec<String>,
    },
    /// cgroup v2 has the controller, but `base` is not writable by this user.
    V2NotWritable { base: PathBuf },
    /// Neither hierarchy carries `ctrl`.
    NotMounted { ctrl: String },
}

impl ProviderError {
    /// What is missing, in words.
    pub fn reason(&self) -> String {
        match self {
            ProviderError::V1NotWritable { ctrl, base } => format!(
                "cgroup v1 {ctrl} at {} is not writable by this user",
                base.display()
            ),
            ProviderError::V2NotDelegated {
                ctrl,
                base,
                controllers,
            } => format!(
                "cgroup v2 controller {ctrl} is not delegated to {} (cgroup.controllers: [{}])",
                base.display(),
                controllers.join(" ")
            ),
            ProviderError::V2NotWritable { base } => {
                format!("cgroup v2 {} is not writable by this user", base.display())
            }
            ProviderError::NotMounted { ctrl } => format!("no cgroup {ctrl} controller mounted"),
        }
    }

    /// What the operator can do about it.
    pub fn fix(&self) -> &'static str {
        match self {
            ProviderError::NotMounted { .. } => FIX_UNIFIED,
            _ => FIX_DELEGATE,
        }
    }
}

impl std::fmt::Display for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; {}", self.reason(), self.fix())
    }
}

impl std::error::Error for ProviderError {}

/// Which hierarchy a job directory belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    V2,
    V1,
}

#[derive(Debug)]
struct JobDir {
    kind: Kind,
    /// The v1 controllers of this hierarchy, or the v2 controllers enabled for it.
    controllers: Vec<String>,
    path: PathBuf,
    /// The file a process joins this cgroup by: v2 `cgroup.procs` (the parent writes the
    /// jail's pid, when clone3 did not put it there); v1 `tasks`, which the jail writes
    /// "0" to itself (child.rs, step 1b): the kernel migrates the writing thread alone
    /// without taking the global `cgroup_threadgroup_rwsem`, whose write side waits for an
    /// RCU grace period (1-15 ms on an idle host) when a pid is written to `cgroup.procs`.
    join: Option<File>,
    /// v2: the directory itself, for clone3(CLONE_INTO_CGROUP).
    dir: Option<File>,
}

impl JobDir {
    fn has(&self, c: &str) -> bool {
        self.controllers.iter().any(|x| x == c)
    }
}

/// How one requested limit ended up.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LimitOutcome {
    control: &'static str,
    state: ControlState,
    mechanism: String,
    detail: String,
}

/// Counters read from the job's cgroups after (or during) the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CgroupStats {
    pub memory_peak_bytes: Option<u64>,
    pub oom_kills: u64,
    pub pids_limit_hits: u64,
    pub cpu_usage_us: Option<u64>,
}

/// The job's cgroups (one per hierarchy that enforces something). Dropping it kills what is
/// left inside and removes the directories.
#[derive(Debug)]
pub struct JobCgroup {
    dirs: Vec<JobDir>,
    outcomes: Vec<LimitOutcome>,
    /// Open `cpu.stat` (v2) or `cpuacct.usage` (v1), read with pread by `cpu_usage_us`.
    cpu_usage: Option<(Kind, File)>,
    /// The other files the record's account reads, opened by `create` so that `stats`, on
    /// the job's critical path, is preads only (an open of a cgroupfs file walks the path
    /// and allocates: ~20-30 µs each on a cold cache).
    accounts: Vec<(Account, File)>,
    removed: bool,
    fs: &'static dyn CgroupFs,
}

/// One figure of the kernel's account of a job, and how to read it from its file.
#[derive(Clone, Copy, Debug)]
enum Account {
    /// v2 `memory.peak`, v1 `memory.max_usage_in_bytes`: a plain number.
    MemoryPeak,
    /// The `oom_kill` line of v2 `memory.events` or v1 `memory.oom_control`.
    OomKills,
    /// The `max` line of `pids.events` (both versions).
    PidsLimitHits,
}

fn errno_of(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

/// Write an interface file (the kernel made it with the directory; never created here).
fn write_file(path: &Path, value: &str) -> std::io::Result<()> {
    let mut f = OpenOptions::new().write(true).truncate(true).open(path)?;
    f.write_all(value.as_bytes())
}

/// The file a process joins `dir` by (see `JobDir::join`): `cgroup.procs` (v2), `tasks` (v1).
fn join_file_name(kind: Kind) -> &'static str {
    match kind {
        Kind::V2 => "cgroup.procs",
        Kind::V1 => "tasks",
    }
}

fn open_join(dir: &Path, kind: Kind) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(dir.join(join_file_name(kind)))
}

fn open_dir(dir: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(dir)
}

fn is_permission(e: i32) -> bool {
    matches!(e, libc::EACCES | libc::EPERM | libc::EROFS | libc::ENOENT)
}

/// Read one "key value" line from a flat-keyed cgroup file (memory.events, cpu.stat, ...).
pub fn parse_keyed(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        (it.next() == Some(key))
            .then(|| it.next().and_then(|v| v.parse().ok()))
            .flatten()
    })
}

fn read_keyed(p: &Path, key: &str) -> Option<u64> {
    parse_keyed(&std::fs::read_to_string(p).ok()?, key)
}

/// The job directory name for a run: `agentjail-<our pid>-<run_id>`.
pub fn job_dir_name(run_id: &str) -> String {
    format!("{JOB_PREFIX}{}-{run_id}", std::process::id())
}
fn read_pids(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed() {
        let t = "low 0\nhigh 0\nmax 3\noom 2\noom_kill 1\n";
        assert_eq!(parse_keyed(t, "oom_kill"), Some(1));
        assert_eq!(parse_keyed(t, "oom"), Some(2));
        assert_eq!(parse_keyed(t, "nope"), None);
    }
}
