//! Making one job's cgroups before fork: the run id checked, the v2 directory (with the
//! controllers enabled in our own cgroup, moving this process into the supervisor leaf when
//! delegation requires it), the v1 directories per hierarchy, each limit's files written,
//! and the accounting files opened for later preads. Everything made so far is undone on a
//! hard failure; a permission problem degrades to an unenforced limit. Separate from the
//! live job (`run.rs`): this is the only code that creates directories or writes limits.

use super::{
    errno_of, is_permission, job_dir_name, join_file_name, open_dir, open_join, write_file,
    Account, CgroupFs, CgroupLimits, HostCgroups, JobCgroup, JobDir, Kernel, Kind, LimitOutcome,
    V2Host, FIX_DELEGATE, SUPERVISOR_LEAF,
};
use crate::{ControlState, SetupError};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

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
            (None, Err(e)) => e.to_string(),
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
            join: None,
            dir: None,
        });
        let join = match open_join(&path, kind) {
            Ok(f) => f,
            Err(e) => {
                return Err(b.fail(
                    format!("cgroup open {}/{}", path.display(), join_file_name(kind)),
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
            d.join = Some(join);
            d.dir = dir;
        }
        Ok(true)
    }
}
