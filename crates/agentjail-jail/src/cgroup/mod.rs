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
//! // clone: on v2 pass job.v2_dir_fd() to clone3(CLONE_INTO_CGROUP) when it is Some
//! job.attach(child_pid, cloned_into_v2)?;          // v1 dirs (and v2 if not cloned in); the child
//!                                                   // unshares CLONE_NEWCGROUP after that, so
//!                                                   // its cgroup namespace root is the job
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

pub mod fake;

use crate::{sys, Control, ControlState, SetupError};
use serde::Serialize;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
    pub fn provider(&self, ctrl: &str) -> Result<String, String> {
        if let Some(v2) = &self.v2 {
            if v2.offers(ctrl) {
                return Ok(format!("cgroup v2 at {}", v2.base.display()));
            }
        }
        if let Some(h) = self.v1_for(ctrl) {
            if h.writable {
                return Ok(format!("cgroup v1 at {}", h.base.display()));
            }
            return Err(format!(
                "cgroup v1 {ctrl} at {} is not writable by this user; {FIX_DELEGATE}",
                h.base.display()
            ));
        }
        match &self.v2 {
            Some(v2) if !v2.controllers.iter().any(|c| c == ctrl) => Err(format!(
                "cgroup v2 controller {ctrl} is not delegated to {} (cgroup.controllers: [{}]); {FIX_DELEGATE}",
                v2.base.display(),
                v2.controllers.join(" ")
            )),
            Some(v2) => Err(format!("cgroup v2 {} is not writable by this user; {FIX_DELEGATE}", v2.base.display())),
            None => Err(format!("no cgroup {ctrl} controller mounted; {FIX_UNIFIED}")),
        }
    }
}

/// Undo /proc/mounts octal escapes (`\040` for a space, ...).
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 4 <= b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 4], 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

const V1_CONTROLLERS: &[&str] = &[
    "cpu",
    "cpuacct",
    "cpuset",
    "memory",
    "devices",
    "freezer",
    "net_cls",
    "blkio",
    "perf_event",
    "net_prio",
    "hugetlb",
    "pids",
    "rdma",
    "misc",
];

fn read_words(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

fn can_write_dir(p: &Path) -> bool {
    sys::access(p, libc::W_OK | libc::X_OK).is_ok()
}

/// Join a cgroup path from /proc/self/cgroup ("/a/b") onto a mount point.
fn join_cg(mount: &Path, cg_path: &str) -> PathBuf {
    let rel = cg_path.trim_start_matches('/');
    if rel.is_empty() {
        mount.to_path_buf()
    } else {
        mount.join(rel)
    }
}

/// Work out what the cgroup filesystem under `root` offers to the process whose
/// `/proc/self/cgroup` and `/proc/mounts` are given. Mounts outside `root` are ignored.
pub fn detect(root: &Path, proc_self_cgroup: &str, proc_mounts: &str) -> HostCgroups {
    // /proc/self/cgroup: "id:controllers:path"; v2 is "0::path".
    let mut v2_path: Option<String> = None;
    let mut v1_paths: Vec<(Vec<String>, String)> = Vec::new();
    for line in proc_self_cgroup.lines() {
        let mut it = line.splitn(3, ':');
        let (Some(_id), Some(ctrls), Some(path)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        if ctrls.is_empty() {
            v2_path = Some(path.to_string());
        } else {
            let mut c: Vec<String> = ctrls.split(',').map(str::to_string).collect();
            c.sort();
            v1_paths.push((c, path.to_string()));
        }
    }
    let mut host = HostCgroups {
        root: root.to_path_buf(),
        ..Default::default()
    };
    for line in proc_mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        let mount = PathBuf::from(unescape_mount(f[1]));
        if !mount.starts_with(root) {
            continue;
        }
        match f[2] {
            "cgroup2" if host.v2.is_none() => {
                let Some(own) = v2_path.as_deref() else {
                    continue;
                };
                let own_dir = join_cg(&mount, own);
                let at_leaf = own_dir.file_name().is_some_and(|n| n == SUPERVISOR_LEAF);
                let base = match (at_leaf, own_dir.parent()) {
                    (true, Some(p)) => p.to_path_buf(),
                    _ => own_dir.clone(),
                };
                host.v2 = Some(V2Host {
                    controllers: read_words(&base.join("cgroup.controllers")),
                    subtree_control: read_words(&base.join("cgroup.subtree_control")),
                    writable: base.is_dir() && can_write_dir(&base),
                    base_is_own: !at_leaf,
                    mount,
                    base,
                });
            }
            "cgroup" => {
                let mut ctrls: Vec<String> = f[3]
                    .split(',')
                    .filter(|o| V1_CONTROLLERS.contains(o))
                    .map(str::to_string)
                    .collect();
                if ctrls.is_empty() {
                    continue; // name=systemd and friends: no resource controller
                }
                ctrls.sort();
                let Some((_, own)) = v1_paths.iter().find(|(c, _)| *c == ctrls) else {
                    continue;
                };
                let base = join_cg(&mount, own);
                host.v1.push(V1Host {
                    writable: base.is_dir() && can_write_dir(&base),
                    controllers: ctrls,
                    own_path: own.clone(),
                    mount,
                    base,
                });
            }
            _ => {}
        }
    }
    host
}

/// [`detect`] on this host's real `/sys/fs/cgroup`, `/proc/self/cgroup`, `/proc/mounts`.
pub fn detect_host() -> HostCgroups {
    let cg = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    detect(Path::new("/sys/fs/cgroup"), &cg, &mounts)
}

impl HostCgroups {
    /// The CPUs' worth of bandwidth our own cgroup and its ancestors allow (`cpu.max` in v2,
    /// `cpu.cfs_quota_us / cpu.cfs_period_us` in v1), rounded up; None when no quota binds
    /// us. A container given `--cpus 4` on a 64-core host has 4 here, not 64.
    pub fn cpu_quota_cores(&self) -> Option<usize> {
        let mut best: Option<usize> = None;
        let mut take = |quota: u64, period: u64| {
            if quota > 0 && period > 0 {
                let cores = quota.div_ceil(period).max(1) as usize;
                best = Some(best.map_or(cores, |b| b.min(cores)));
            }
        };
        if let Some(v2) = &self.v2 {
            for dir in up_to(&v2.base, &v2.mount) {
                let text = std::fs::read_to_string(dir.join("cpu.max")).unwrap_or_default();
                let mut f = text.split_whitespace();
                if let (Some(q), Some(p)) = (f.next(), f.next()) {
                    if let (Ok(q), Ok(p)) = (q.parse(), p.parse()) {
                        take(q, p);
                    }
                }
            }
        }
        for h in self
            .v1
            .iter()
            .filter(|h| h.controllers.iter().any(|c| c == "cpu"))
        {
            for dir in up_to(&h.base, &h.mount) {
                let read = |f: &str| {
                    std::fs::read_to_string(dir.join(f))
                        .ok()
                        .and_then(|t| t.trim().parse::<i64>().ok())
                };
                if let (Some(q), Some(p)) = (read("cpu.cfs_quota_us"), read("cpu.cfs_period_us")) {
                    if q > 0 && p > 0 {
                        take(q as u64, p as u64);
                    }
                }
            }
        }
        best
    }
}

/// `dir` and each of its parents, up to and including `top`.
fn up_to(dir: &Path, top: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut d = Some(dir);
    while let Some(p) = d {
        if !p.starts_with(top) {
            break;
        }
        out.push(p.to_path_buf());
        d = p.parent();
    }
    out
}

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
    procs: Option<File>,
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

fn open_procs(dir: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(dir.join("cgroup.procs"))
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

struct Builder {
    fs: &'static dyn CgroupFs,
    dir_name: String,
    dirs: Vec<JobDir>,
}

impl Builder {
    /// Remove everything created so far (nothing is attached yet: plain rmdir).
    fn undo(&mut self) {
        for d in self.dirs.drain(..).rev() {
            let _ = self.fs.rmdir(&d.path);
        }
    }

    fn fail(&mut self, stage: String, e: &std::io::Error, hint: &str) -> SetupError {
        self.undo();
        SetupError::new(stage, Some(errno_of(e)), hint)
    }
}

/// A controller a job asks for: (the record's control name, the cgroup controller).
type Wanted = (&'static str, &'static str);

/// The cgroup files to write for one controller, and how the record describes them.
struct LimitWrites {
    writes: Vec<(&'static str, String)>,
    mechanism: String,
    detail: String,
}

fn valid_run_id(run_id: &str) -> Result<(), SetupError> {
    let valid = !run_id.is_empty()
        && run_id.len() <= 64
        && run_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
        && run_id != "."
        && run_id != "..";
    if valid {
        return Ok(());
    }
    Err(SetupError::new(
        "cgroup name",
        Some(libc::EINVAL),
        format!("run id {run_id:?} is not [A-Za-z0-9_.-]{{1,64}}"),
    ))
}

fn wanted_controllers(limits: &CgroupLimits) -> Vec<Wanted> {
    [
        (limits.memory_max.is_some(), "cgroup_memory", "memory"),
        (limits.pids_max.is_some(), "cgroup_pids", "pids"),
        (limits.cpu_max.is_some(), "cgroup_cpu", "cpu"),
    ]
    .into_iter()
    .filter(|w| w.0)
    .map(|w| (w.1, w.2))
    .collect()
}

/// What to write for controller `c` in a directory of `kind`.
fn limit_writes(c: &str, kind: Kind, dir: &Path, limits: &CgroupLimits) -> Option<LimitWrites> {
    let mut writes: Vec<(&'static str, String)> = Vec::new();
    let (mechanism, detail) = match (c, kind) {
        ("memory", Kind::V2) => {
            let m = limits.memory_max.unwrap_or(u64::MAX);
            writes.push(("memory.max", m.to_string()));
            // One OOM kill takes the whole job, not just its biggest process.
            let group = dir.join("memory.oom.group").exists();
            if group {
                writes.push(("memory.oom.group", "1".to_string()));
            }
            let og = if group { " memory.oom.group=1" } else { "" };
            let swap = limits.swap_max.unwrap_or(0);
            let detail = if dir.join("memory.swap.max").exists() {
                writes.push(("memory.swap.max", swap.to_string()));
                format!("memory.max={m} memory.swap.max={swap}{og}")
            } else {
                format!(
                    "memory.max={m}{og}; memory.swap.max absent (no swap accounting): memory+swap not bounded if the host has swap"
                )
            };
            ("cgroup v2 memory.max".to_string(), detail)
        }
        ("memory", Kind::V1) => {
            let m = limits.memory_max.unwrap_or(u64::MAX);
            writes.push(("memory.limit_in_bytes", m.to_string()));
            let sw = m.saturating_add(limits.swap_max.unwrap_or(0));
            let memsw = "memory.memsw.limit_in_bytes";
            let detail = if dir.join(memsw).exists() {
                writes.push((memsw, sw.to_string()));
                format!("memory.limit_in_bytes={m} memory.memsw.limit_in_bytes={sw}")
            } else {
                format!(
                    "memory.limit_in_bytes={m}; no memory.memsw (swap accounting off): memory+swap not bounded if the host has swap"
                )
            };
            ("cgroup v1 memory.limit_in_bytes".to_string(), detail)
        }
        ("pids", k) => {
            let p = limits.pids_max.unwrap_or(0);
            writes.push(("pids.max", p.to_string()));
            let v = if k == Kind::V2 { "v2" } else { "v1" };
            (format!("cgroup {v} pids.max"), format!("pids.max={p}"))
        }
        ("cpu", Kind::V2) => {
            let (q, per) = limits.cpu_max.unwrap_or((0, 100_000));
            writes.push(("cpu.max", format!("{q} {per}")));
            (
                "cgroup v2 cpu.max".to_string(),
                format!("cpu.max={q} {per}"),
            )
        }
        ("cpu", _) => {
            let (q, per) = limits.cpu_max.unwrap_or((0, 100_000));
            // period first: the kernel checks the quota against the current period.
            writes.push(("cpu.cfs_period_us", per.to_string()));
            writes.push(("cpu.cfs_quota_us", q.to_string()));
            let detail = format!("cpu.cfs_quota_us={q} cpu.cfs_period_us={per}");
            ("cgroup v1 cpu.cfs_quota_us".to_string(), detail)
        }
        _ => return None,
    };
    Some(LimitWrites {
        writes,
        mechanism,
        detail,
    })
}

/// Why controller `c` has no directory: v1 permission, the v2 setup's failure, or the host.
fn unavailable_reason(
    c: &str,
    host: &HostCgroups,
    v1_denied: &[(String, String)],
    v2_error: &Option<String>,
) -> String {
    match v1_denied.iter().find(|(x, _)| x == c) {
        Some((_, base)) => {
            format!("cannot create a cgroup under {base} (permission denied); {FIX_DELEGATE}")
        }
        None => match (v2_error, host.provider(c)) {
            (Some(e), _) => format!("{e}; {FIX_DELEGATE}"),
            (None, Err(e)) => e,
            (None, Ok(m)) => format!("{m} could not be used"),
        },
    }
}

impl JobCgroup {
    /// Before fork. See the module documentation for what degrades and what fails.
    /// `run_id` names the job: the directory is `agentjail-<our pid>-<run_id>` under our own
    /// cgroup in every hierarchy used. `run_id` must be `[A-Za-z0-9_.-]{1,64}`.
    pub fn create(
        host: &HostCgroups,
        run_id: &str,
        limits: &CgroupLimits,
    ) -> Result<JobCgroup, SetupError> {
        Self::create_in(&Kernel, host, run_id, limits)
    }

    /// As [`create`](Self::create), making and removing the directories through `fs`.
    pub fn create_in(
        fs: &'static dyn CgroupFs,
        host: &HostCgroups,
        run_id: &str,
        limits: &CgroupLimits,
    ) -> Result<JobCgroup, SetupError> {
        valid_run_id(run_id)?;
        let mut b = Builder {
            fs,
            dir_name: job_dir_name(run_id),
            dirs: Vec::new(),
        };
        let wanted = wanted_controllers(limits);
        let (v2_ctrls, v2_error) = Self::make_v2_dir(&mut b, host, &wanted)?;
        let v1_denied = Self::make_v1_dirs(&mut b, host, &wanted, &v2_ctrls)?;
        Self::ensure_cpu_accounting(&mut b, host)?;
        let outcomes = Self::write_limits(&mut b, host, limits, &wanted, &v1_denied, &v2_error)?;
        let cpu_usage = Self::open_cpu_usage(&b);
        let accounts = Self::open_accounts(&b);
        Ok(JobCgroup {
            dirs: std::mem::take(&mut b.dirs),
            outcomes,
            cpu_usage,
            accounts,
            removed: false,
            fs,
        })
    }

    /// v2: one directory with every wanted controller the v2 hierarchy can give us. Returns
    /// the controllers it took and, when it took none it could have, why.
    fn make_v2_dir(
        b: &mut Builder,
        host: &HostCgroups,
        wanted: &[Wanted],
    ) -> Result<(Vec<String>, Option<String>), SetupError> {
        let Some(v2) = &host.v2 else {
            return Ok((Vec::new(), None));
        };
        let mut ctrls: Vec<String> = wanted
            .iter()
            .filter(|(_, c)| v2.offers(c))
            .map(|(_, c)| (*c).to_string())
            .collect();
        if ctrls.is_empty() {
            return Ok((ctrls, None));
        }
        let error = match Self::enable_v2(b.fs, v2, &ctrls) {
            Ok(()) => match Self::make_dir(b, Kind::V2, &v2.base, ctrls.clone())? {
                true => None,
                false => Some(format!("cannot create a child of {}", v2.base.display())),
            },
            Err(msg) => Some(msg),
        };
        if error.is_some() {
            ctrls.clear();
        }
        Ok((ctrls, error))
    }

    /// v1: the hierarchies for what v2 did not take (cpuacct goes with cpu, for usage).
    /// Returns the controllers whose hierarchy refused us, with its path.
    fn make_v1_dirs(
        b: &mut Builder,
        host: &HostCgroups,
        wanted: &[Wanted],
        v2_ctrls: &[String],
    ) -> Result<Vec<(String, String)>, SetupError> {
        let mut denied = Vec::new();
        let mut v1_wanted: Vec<&str> = wanted
            .iter()
            .map(|w| w.1)
            .filter(|c| !v2_ctrls.iter().any(|x| x == c))
            .collect();
        if v1_wanted.contains(&"cpu") {
            v1_wanted.push("cpuacct");
        }
        for c in v1_wanted {
            let Some(h) = host.v1_for(c) else { continue };
            if b.dirs.iter().any(|d| d.kind == Kind::V1 && d.has(c)) {
                continue;
            }
            if !Self::make_dir(b, Kind::V1, &h.base, h.controllers.clone())? {
                denied.push((c.to_string(), h.base.display().to_string()));
            }
        }
        Ok(denied)
    }

    /// CPU accounting (not a limit: the supervisor's CPU-time limit reads it through
    /// `cpu_usage_us`). A v2 job dir always has cpu.stat; else v1 cpuacct; else an
    /// accounting-only v2 dir when we may create one. Denied: no accounting, no error.
    fn ensure_cpu_accounting(b: &mut Builder, host: &HostCgroups) -> Result<(), SetupError> {
        let counted = |b: &Builder| {
            b.dirs
                .iter()
                .any(|d| d.kind == Kind::V2 || d.has("cpuacct"))
        };
        if !counted(b) {
            if let Some(h) = host.v1_for("cpuacct").filter(|h| h.writable) {
                Self::make_dir(b, Kind::V1, &h.base, h.controllers.clone())?;
            }
        }
        if !counted(b) {
            if let Some(v2) = host.v2.as_ref().filter(|v| v.writable) {
                Self::make_dir(b, Kind::V2, &v2.base, Vec::new())?;
            }
        }
        Ok(())
    }

    /// Write every wanted limit where its controller lives; an unavailable one is recorded
    /// with the reason. A write the kernel refuses undoes everything.
    fn write_limits(
        b: &mut Builder,
        host: &HostCgroups,
        limits: &CgroupLimits,
        wanted: &[Wanted],
        v1_denied: &[(String, String)],
        v2_error: &Option<String>,
    ) -> Result<Vec<LimitOutcome>, SetupError> {
        let mut outcomes = Vec::new();
        for (control, c) in wanted {
            let Some(i) = b.dirs.iter().position(|d| d.has(c)) else {
                outcomes.push(LimitOutcome {
                    control,
                    state: ControlState::Unavailable,
                    mechanism: "none".into(),
                    detail: unavailable_reason(c, host, v1_denied, v2_error),
                });
                continue;
            };
            let dir = b.dirs[i].path.clone();
            let Some(lw) = limit_writes(c, b.dirs[i].kind, &dir, limits) else {
                continue; // `wanted` only holds memory, pids and cpu
            };
            for (file, value) in &lw.writes {
                if let Err(e) = write_file(&dir.join(file), value) {
                    let stage = format!("cgroup write {}", dir.join(file).display());
                    return Err(b.fail(stage, &e, "the cgroup rejected the limit; check the value and the kernel's cgroup support"));
                }
            }
            outcomes.push(LimitOutcome {
                control,
                state: ControlState::Enforced,
                mechanism: lw.mechanism,
                detail: lw.detail,
            });
        }
        Ok(outcomes)
    }

    /// One of the kernel's counter files, opened once to be read with pread (None when this
    /// kernel has no such file).
    fn open_counter(path: &Path) -> Option<File> {
        OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_CLOEXEC)
            .open(path)
            .ok()
    }

    /// The CPU usage counter, opened once: v2 cpu.stat (always present), else v1
    /// cpuacct.usage.
    fn open_cpu_usage(b: &Builder) -> Option<(Kind, File)> {
        let usage_src = match b.dirs.iter().position(|d| d.kind == Kind::V2) {
            Some(i) => Some((Kind::V2, b.dirs[i].path.join("cpu.stat"))),
            None => b
                .dirs
                .iter()
                .find(|d| d.has("cpuacct"))
                .map(|d| (Kind::V1, d.path.join("cpuacct.usage"))),
        };
        usage_src.and_then(|(k, p)| Self::open_counter(&p).map(|f| (k, f)))
    }

    /// The files `stats` reads, opened once. A file that cannot be opened is left out, and
    /// its figure is then absent from the account, as a failed read always made it.
    fn open_accounts(b: &Builder) -> Vec<(Account, File)> {
        let mut files = Vec::new();
        for d in &b.dirs {
            let (peak, oom) = match d.kind {
                Kind::V2 => ("memory.peak", "memory.events"),
                Kind::V1 => ("memory.max_usage_in_bytes", "memory.oom_control"),
            };
            let mut wanted = Vec::new();
            if d.has("memory") {
                wanted.push((Account::MemoryPeak, peak));
                wanted.push((Account::OomKills, oom));
            }
            if d.has("pids") {
                wanted.push((Account::PidsLimitHits, "pids.events"));
            }
            for (what, name) in wanted {
                if let Some(f) = Self::open_counter(&d.path.join(name)) {
                    files.push((what, f));
                }
            }
        }
        files
    }

    /// Make sure `ctrls` are enabled in `v2.base`'s `cgroup.subtree_control`, moving ourselves
    /// into the supervisor leaf if the "no internal processes" rule requires it (see module doc).
    fn enable_v2(fs: &dyn CgroupFs, v2: &V2Host, ctrls: &[String]) -> Result<(), String> {
        let missing: Vec<&String> = ctrls
            .iter()
            .filter(|c| !v2.subtree_control.contains(c))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let line = missing
            .iter()
            .map(|c| format!("+{c}"))
            .collect::<Vec<_>>()
            .join(" ");
        let sc = v2.base.join("cgroup.subtree_control");
        match write_file(&sc, &line) {
            Ok(()) => Ok(()),
            Err(e) if errno_of(&e) == libc::EBUSY && v2.base_is_own && v2.base != v2.mount => {
                // We are a process in a non-root cgroup: move into our own leaf, then retry.
                let leaf = v2.base.join(SUPERVISOR_LEAF);
                match fs.mkdir(&leaf) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(format!("mkdir {}: {e}", leaf.display())),
                }
                write_file(&leaf.join("cgroup.procs"), &std::process::id().to_string())
                    .map_err(|e| format!("moving agentjail into {}: {e}", leaf.display()))?;
                write_file(&sc, &line)
                    .map_err(|e| format!("enabling {line} in {}: {e}", sc.display()))
            }
            Err(e) => Err(format!("enabling {line} in {}: {e}", sc.display())),
        }
    }

    /// mkdir the job directory in one hierarchy. Ok(false): permission problem (degrade).
    fn make_dir(
        b: &mut Builder,
        kind: Kind,
        base: &Path,
        controllers: Vec<String>,
    ) -> Result<bool, SetupError> {
        let path = base.join(&b.dir_name);
        if let Err(e) = b.fs.mkdir(&path) {
            if is_permission(errno_of(&e)) {
                return Ok(false);
            }
            let stage = format!("cgroup mkdir {}", path.display());
            return Err(b.fail(stage, &e, "could not create the job cgroup; a stale one may exist (agentjail sweeps them at start)"));
        }
        // Record it first so any later failure removes it.
        b.dirs.push(JobDir {
            kind,
            controllers,
            path: path.clone(),
            procs: None,
            dir: None,
        });
        let procs = match open_procs(&path) {
            Ok(f) => f,
            Err(e) => {
                return Err(b.fail(
                    format!("cgroup open {}/cgroup.procs", path.display()),
                    &e,
                    FIX_DELEGATE,
                ))
            }
        };
        let dir = if kind == Kind::V2 {
            match open_dir(&path) {
                Ok(f) => Some(f),
                Err(e) => {
                    return Err(b.fail(format!("cgroup open {}", path.display()), &e, FIX_DELEGATE))
                }
            }
        } else {
            None
        };
        if let Some(d) = b.dirs.last_mut() {
            d.procs = Some(procs);
            d.dir = dir;
        }
        Ok(true)
    }

    /// True when at least one limit is enforced by a cgroup.
    pub fn is_active(&self) -> bool {
        self.outcomes
            .iter()
            .any(|o| o.state == ControlState::Enforced)
    }

    /// The job directories created (for logs and tests).
    pub fn paths(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.path.clone()).collect()
    }

    /// The v2 job directory, for clone3(CLONE_INTO_CGROUP): the child starts inside it.
    pub fn v2_dir_fd(&self) -> Option<BorrowedFd<'_>> {
        self.dirs
            .iter()
            .find(|d| d.kind == Kind::V2)
            .and_then(|d| d.dir.as_ref())
            .map(|f| f.as_fd())
    }

    /// What another process needs to put a new jail into these cgroups (the zygote spawns
    /// jails for the engine): each directory's `cgroup.procs`, whether it is the v2 one, and
    /// that directory itself (for CLONE_INTO_CGROUP). See [`attach_only`](Self::attach_only).
    pub fn attach_handles(&self) -> Vec<(bool, BorrowedFd<'_>, Option<BorrowedFd<'_>>)> {
        self.dirs
            .iter()
            .filter_map(|d| {
                let procs = d.procs.as_ref()?.as_fd();
                Some((d.kind == Kind::V2, procs, d.dir.as_ref().map(|f| f.as_fd())))
            })
            .collect()
    }

    /// The other side of [`attach_handles`](Self::attach_handles): a handle that can only
    /// attach (`v2_dir_fd`, `has_v1`, `attach`). It owns no directory: dropping it removes
    /// nothing (the process that created the cgroups keeps them and removes them).
    pub fn attach_only(handles: Vec<(bool, File, Option<File>)>) -> JobCgroup {
        let dirs = handles
            .into_iter()
            .map(|(v2, procs, dir)| JobDir {
                kind: if v2 { Kind::V2 } else { Kind::V1 },
                controllers: Vec::new(),
                path: PathBuf::new(),
                procs: Some(procs),
                dir: if v2 { dir } else { None },
            })
            .collect();
        JobCgroup {
            dirs,
            outcomes: Vec::new(),
            cpu_usage: None,
            accounts: Vec::new(),
            removed: true,
            fs: &Kernel,
        }
    }

    /// Whether any job directory is on a v1 hierarchy: those can only be joined by a write
    /// to `cgroup.procs` after clone, even when a v2 directory was joined by
    /// CLONE_INTO_CGROUP (a host that splits controllers between v1 and v2).
    pub fn has_v1(&self) -> bool {
        self.dirs.iter().any(|d| d.kind == Kind::V1)
    }

    /// Parent, after clone: put `pid` into the job cgroups. `skip_v2` when clone3 already
    /// placed it in the v2 directory (CLONE_INTO_CGROUP).
    /// No allocation: the pid is formatted on the stack and written to fds opened by `create`.
    pub fn attach(&self, pid: i32, skip_v2: bool) -> Result<(), SetupError> {
        let mut buf = [0u8; 16];
        let digits = fmt_pid(pid, &mut buf);
        for d in &self.dirs {
            if skip_v2 && d.kind == Kind::V2 {
                continue;
            }
            let Some(f) = &d.procs else { continue };
            match sys::write(f.as_raw_fd(), digits) {
                Ok(_) => {}
                Err(e) => {
                    return Err(SetupError::new(
                        "cgroup attach",
                        Some(e),
                        "could not move the jail into its cgroup (cgroup.procs write failed)",
                    ))
                }
            }
        }
        Ok(())
    }

    /// Counters for the record. Missing files read as None / 0.
    pub fn stats(&self) -> CgroupStats {
        let mut s = CgroupStats {
            cpu_usage_us: self.cpu_usage_us(),
            ..Default::default()
        };
        let mut buf = [0u8; 1024];
        for (what, f) in &self.accounts {
            let Some(text) = sys::pread(f.as_raw_fd(), &mut buf, 0)
                .ok()
                .and_then(|n| std::str::from_utf8(&buf[..n]).ok())
            else {
                continue;
            };
            match what {
                Account::MemoryPeak => s.memory_peak_bytes = text.trim().parse().ok(),
                Account::OomKills => s.oom_kills += parse_keyed(text, "oom_kill").unwrap_or(0),
                Account::PidsLimitHits => {
                    s.pids_limit_hits += parse_keyed(text, "max").unwrap_or(0)
                }
            }
        }
        s
    }

    /// CPU time used by the job so far, in µs: pread on an fd opened by `create`.
    pub fn cpu_usage_us(&self) -> Option<u64> {
        let (kind, f) = self.cpu_usage.as_ref()?;
        let mut buf = [0u8; 512];
        let n = sys::pread(f.as_raw_fd(), &mut buf, 0).ok()?;
        let text = std::str::from_utf8(buf.get(..n)?).ok()?;
        match kind {
            Kind::V2 => parse_keyed(text, "usage_usec"),
            Kind::V1 => text.trim().parse::<u64>().ok().map(|ns| ns / 1000),
        }
    }

    /// SIGKILL everything in the job's cgroups: v2 `cgroup.kill`, else (v1, or a kernel
    /// before 5.14) read `cgroup.procs` and kill each member until empty (bounded retries).
    pub fn kill_all(&self) {
        for d in &self.dirs {
            if d.kind == Kind::V2 && write_file_existing(&d.path.join("cgroup.kill"), "1").is_ok() {
                continue;
            }
            for _ in 0..100 {
                let pids = read_pids(&d.path);
                if pids.is_empty() {
                    break;
                }
                for p in pids {
                    let _ = sys::kill(p, libc::SIGKILL);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }

    /// Wait (up to 2 s per directory) until the job's cgroups hold no process, then rmdir them,
    /// retrying EBUSY. Idempotent; `Drop` calls it after `kill_all`.
    pub fn remove(&mut self) -> Result<(), SetupError> {
        let mut first_err = None;
        self.cpu_usage = None;
        self.accounts.clear();
        let mut kept = Vec::new();
        for mut d in std::mem::take(&mut self.dirs).into_iter().rev() {
            d.procs = None;
            d.dir = None;
            let deadline = Instant::now() + Duration::from_secs(2);
            while populated(&d) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            let mut res = self.fs.rmdir(&d.path);
            for _ in 0..40 {
                match &res {
                    Err(e) if errno_of(e) == libc::EBUSY => {
                        std::thread::sleep(Duration::from_millis(25));
                        res = self.fs.rmdir(&d.path);
                    }
                    _ => break,
                }
            }
            match res {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    if first_err.is_none() {
                        first_err = Some(SetupError::new(
                            format!("cgroup rmdir {}", d.path.display()),
                            Some(errno_of(&e)),
                            "the job cgroup still holds processes; the next run's sweep removes it once empty",
                        ));
                    }
                    kept.push(d);
                }
            }
        }
        self.dirs = kept;
        self.removed = self.dirs.is_empty();
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// One Control per requested limit, for the record's `enforcement` section.
    pub fn controls(&self) -> Vec<Control> {
        self.outcomes
            .iter()
            .map(|o| Control::new(o.control, o.state, &o.mechanism, o.detail.clone()))
            .collect()
    }
}

impl Drop for JobCgroup {
    fn drop(&mut self) {
        if !self.removed && !self.dirs.is_empty() {
            self.kill_all();
            let _ = self.remove();
        }
    }
}

fn write_file_existing(path: &Path, value: &str) -> std::io::Result<()> {
    let mut f = OpenOptions::new().write(true).open(path)?;
    f.write_all(value.as_bytes())
}

fn read_pids(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

fn populated(d: &JobDir) -> bool {
    if d.kind == Kind::V2 {
        if let Some(v) = read_keyed(&d.path.join("cgroup.events"), "populated") {
            return v != 0;
        }
    }
    !read_pids(&d.path).is_empty()
}

/// Format a pid in decimal into `buf` without allocating; returns the digits.
fn fmt_pid(pid: i32, buf: &mut [u8; 16]) -> &[u8] {
    let mut v = pid.unsigned_abs();
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if pid < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
}

/// Remove stale `agentjail-<pid>-*` job cgroups under our own cgroups whose launcher pid is
/// dead and which hold no process (a SIGKILLed agentjail cannot clean up; the next run does).
/// Returns how many directories were removed.
pub fn sweep_stale(host: &HostCgroups) -> usize {
    sweep_stale_in(&Kernel, host)
}

/// As [`sweep_stale`], removing the directories through `fs`.
pub fn sweep_stale_in(fs: &dyn CgroupFs, host: &HostCgroups) -> usize {
    // Only hierarchies `create` can make a job directory in (memory, pids, cpu, cpuacct):
    // listing the other v1 hierarchies (devices, freezer, blkio, ...) on every launch found
    // nothing and cost a directory read each.
    let mut bases: Vec<&Path> = host
        .v1
        .iter()
        .filter(|h| h.writable)
        .filter(|h| {
            h.controllers
                .iter()
                .any(|c| JOB_CONTROLLERS.contains(&c.as_str()))
        })
        .map(|h| h.base.as_path())
        .collect();
    if let Some(v2) = &host.v2 {
        if v2.writable {
            bases.push(&v2.base);
        }
    }
    let me = std::process::id();
    let mut removed = 0;
    for base in bases {
        let Ok(rd) = std::fs::read_dir(base) else {
            continue;
        };
        for ent in rd.flatten() {
            let name = ent.file_name();
            let Some(pid) = stale_launcher_pid(&name.to_string_lossy()) else {
                continue;
            };
            if pid == me || launcher_alive(pid) {
                continue;
            }
            let path = ent.path();
            if !read_pids(&path).is_empty() {
                continue;
            }
            if let Some(v) = read_keyed(&path.join("cgroup.events"), "populated") {
                if v != 0 {
                    continue;
                }
            }
            if fs.rmdir(&path).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}

/// The v1 controllers whose hierarchies `JobCgroup::create` makes job directories in.
const JOB_CONTROLLERS: &[&str] = &["memory", "pids", "cpu", "cpuacct"];

/// `agentjail-<pid>-<run>` → pid. The supervisor leaf and anything else → None.
fn stale_launcher_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(JOB_PREFIX)?;
    let (pid, run) = rest.split_once('-')?;
    if run.is_empty() {
        return None;
    }
    pid.parse().ok()
}

fn launcher_alive(pid: u32) -> bool {
    let Ok(p) = i32::try_from(pid) else {
        return false;
    };
    // Signal 0: permission and existence check only.
    !matches!(sys::kill(p, 0), Err(libc::ESRCH))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescape() {
        assert_eq!(unescape_mount(r"/a\040b"), "/a b");
        assert_eq!(unescape_mount(r"/plain"), "/plain");
        assert_eq!(unescape_mount(r"/x\\"), r"/x\\");
    }

    #[test]
    fn keyed() {
        let t = "low 0\nhigh 0\nmax 3\noom 2\noom_kill 1\n";
        assert_eq!(parse_keyed(t, "oom_kill"), Some(1));
        assert_eq!(parse_keyed(t, "oom"), Some(2));
        assert_eq!(parse_keyed(t, "nope"), None);
    }

    #[test]
    fn pid_format() {
        let mut b = [0u8; 16];
        assert_eq!(fmt_pid(0, &mut b), b"0");
        assert_eq!(fmt_pid(1234567, &mut b), b"1234567");
        assert_eq!(fmt_pid(i32::MAX, &mut b), b"2147483647");
    }

    #[test]
    fn stale_names() {
        assert_eq!(stale_launcher_pid("agentjail-123-abc"), Some(123));
        assert_eq!(stale_launcher_pid("agentjail-supervisor"), None);
        assert_eq!(stale_launcher_pid("agentjail-123-"), None);
        assert_eq!(stale_launcher_pid("other-1-2"), None);
    }
}
