//! Everything a jail needs, built before any process exists: the root's mount steps as
//! NUL-terminated strings, argv/envp arrays, the compiled seccomp programs, the landlock
//! ruleset, the rlimits and the uid/gid maps. All fallible, allocating work of a launch
//! happens here; the child (`child::run`) only makes syscalls on this data.

use super::report::Stage;
use super::{caps, landlock, mount, rlimit, seccomp, sys, userns, SetupError};
use crate::plan::{JailPlan, Rlimit, RlimitKind};
use std::ffi::CString;

pub struct Prepared {
    pub root: mount::PreparedRoot,
    pub exe: CString,
    pub argv: Vec<CString>,
    pub argv_ptrs: Vec<*const libc::c_char>,
    pub envp: Vec<CString>,
    pub envp_ptrs: Vec<*const libc::c_char>,
    pub cwd: CString,
    pub hostname: CString,
    pub uid: u32,
    pub gid: u32,
    pub rlimits: Vec<(u32, u64, u64)>,
    pub last_cap: u32,
    pub landlock: Option<landlock::Prepared>,
    pub seccomp: seccomp::Filter,
    pub init_seccomp: seccomp::Filter,
    /// agentjail's argv area [start, end), blanked in the jail's init so /proc/1/cmdline
    /// does not show the host command line.
    pub argv_area: Option<(usize, usize)>,
    /// A child stage to fail on purpose (tests only; see `fault_stage`).
    pub fault: Option<u32>,
    pub clone_flags: u64,
    /// Give the program agentjail's runner pipes (job at fd 3, reply at fd 4).
    pub runner_fds: bool,
    /// A directory of the jail (relative to its root) the parent opens during the seccomp
    /// handover, while the program is stopped before its exec (see spawn.rs): /app/out,
    /// whose files are collected after the jail is gone.
    pub hold_dir: Option<CString>,
    /// The plan's `late_files` directory as the parent reaches it while the child waits
    /// before sealing the root: beneath the child's root, in the staging tmpfs
    /// (`tmp/app` for /app). The child only reports that it waits (child.rs, 4b).
    pub late_dir: Option<CString>,
    pub maps: userns::IdMaps,
    /// The plan's `net_proxy_port`: the child listens there on its loopback (child.rs, 5c).
    pub net_port: Option<u16>,
    /// Pin the jail to this many CPUs (no cpu cgroup: see crate::affinity), set by the
    /// parent right after clone.
    pub pin_cpus: Option<usize>,
    /// The zygote's program (crates/agentjail-engine/src/zygote): instead of exec'ing
    /// `exe`, the program continues
    /// in this process, whose interpreter the template initialised before any job existed.
    /// None everywhere else.
    pub entry: Option<fn() -> !>,
    /// The zygote's control socket and the message to send on it: the child sends it
    /// with a pidfd of itself first thing, so the server, whose child it is
    /// (CLONE_PARENT), can kill and reap it even when the template dies right after the
    /// clone. None everywhere else.
    pub announce: Option<(std::os::fd::RawFd, Vec<u8>)>,
}

fn cstring(what: &str, s: &str) -> Result<CString, SetupError> {
    CString::new(s).map_err(|_| {
        SetupError::new(
            format!("prepare {what}"),
            Some(libc::EINVAL),
            "remove the NUL byte",
        )
    })
}

/// Resolve a bare command name against the jail's PATH. The jail's /usr is the host's
/// /usr (read-only bind), so the host lookup finds the same file.
pub fn resolve_command(cmd: &str, path: &str) -> String {
    if cmd.contains('/') {
        return cmd.to_string();
    }
    for dir in path.split(':') {
        let candidate = format!("{dir}/{cmd}");
        if std::fs::metadata(&candidate)
            .map(|m| m.is_file())
            .unwrap_or(false)
        {
            return candidate;
        }
    }
    cmd.to_string()
}

/// Which limits a cgroup enforces for this run (decides which rlimits are only backstops).
#[derive(Debug, Clone, Copy, Default)]
pub struct CgroupCover {
    pub memory: bool,
    pub pids: bool,
    /// A cpu cgroup caps the jail's CPU bandwidth (cpu.max); without one the jail is pinned
    /// to that many CPUs instead (crate::affinity).
    pub cpu: bool,
}

/// How many CPUs to pin the jail to: the plan's cpu.max in whole CPUs when no cpu cgroup
/// enforces it, else None (the cgroup bounds parallelism).
pub fn pin_cpus(plan: &JailPlan, cover: CgroupCover) -> Option<usize> {
    if cover.cpu {
        return None;
    }
    crate::affinity::quota_cpus(plan.cgroup.cpu_max)
}

/// The rlimits the child sets: the plan's, adjusted for what a cgroup already bounds.
pub fn effective_rlimits(rlimits: &[Rlimit], cover: CgroupCover) -> Vec<Rlimit> {
    let mut limits = rlimits.to_vec();
    if cover.pids {
        // The kernel checks RLIMIT_NPROC before the pids cgroup when forking; with both at
        // the same value the rlimit always trips first, pids.events never counts and a fork
        // bomb looks like an ordinary error. With a pids cgroup the rlimit is a backstop
        // only, so it sits above pids.max (it counts the jail uid's tasks in the jail's own
        // user namespace, so other jobs do not share it).
        for l in limits
            .iter_mut()
            .filter(|l| l.resource == RlimitKind::Nproc)
        {
            l.soft = l.soft.saturating_mul(2);
            l.hard = l.hard.saturating_mul(2);
        }
    }
    if cover.memory {
        // With a memory cgroup the address-space rlimit only gets in the way (it counts
        // reservations, not memory); the cgroup bounds what is really used, page cache,
        // tmpfs and memfd pages included.
        limits.retain(|l| l.resource != RlimitKind::AddressSpace);
    }
    limits
}

impl Prepared {
    /// A fresh landlock ruleset for the next jail cloned from this preparation (the zygote's
    /// template clones every jail from one `Prepared`). The ruleset is a kernel object the
    /// child adds its path rules to (child.rs: resolved in its own root, so its /tmp, /app
    /// are its own inodes) before restricting itself: shared through the inherited fd, one
    /// ruleset kept every earlier jail's rules, so each jail's domain carried all of them
    /// and `landlock_restrict_self` (which copies the ruleset into the domain) cost more
    /// with every job served (0.04 ms at the first job, 0.3 ms by the 190th, under strace).
    /// None stays None (a best-effort policy on a host without landlock).
    pub fn renew_landlock(&mut self, plan: &JailPlan) -> Result<(), SetupError> {
        if self.landlock.is_some() {
            self.landlock = Some(landlock::prepare(&plan.landlock)?);
        }
        Ok(())
    }
}

pub fn prepare(plan: &JailPlan, cover: CgroupCover) -> Result<Prepared, SetupError> {
    let root =
        prepare_root(plan).map_err(|e| SetupError::new("prepare root", None, e.to_string()))?;
    let path = plan
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str())
        .unwrap_or("/usr/bin:/bin");
    let first = plan.argv.first();
    let first = first.ok_or_else(|| {
        SetupError::new("prepare argv", Some(libc::EINVAL), "give a command to run")
    })?;
    let exe = cstring("command", &resolve_command(first, path))?;
    let argv = plan
        .argv
        .iter()
        .map(|a| cstring("argument", a))
        .collect::<Result<Vec<_>, _>>()?;
    let envp = plan
        .env
        .iter()
        .map(|(k, v)| cstring("environment", &format!("{k}={v}")))
        .collect::<Result<Vec<_>, _>>()?;
    let (argv_ptrs, envp_ptrs) = (null_terminated(&argv), null_terminated(&envp));
    let limits = effective_rlimits(&plan.rlimits, cover);
    // Landlock is best-effort by ABI: when the host has none and the policy allows it, the
    // run goes on without it and the record says so (jail::execute checks `required`).
    let landlock = match landlock::prepare(&plan.landlock) {
        Ok(p) => Some(p),
        Err(e) if plan.landlock.requirement == crate::plan::Requirement::Required => return Err(e),
        Err(_) => None,
    };
    let seccomp = seccomp::compile(&plan.seccomp)?;
    let mut clone_flags = (libc::CLONE_NEWUSER
        | libc::CLONE_NEWNS
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS
        | libc::CLONE_NEWCGROUP) as u64;
    if !plan.network {
        clone_flags |= libc::CLONE_NEWNET as u64;
    }
    Ok(Prepared {
        root,
        exe,
        argv,
        argv_ptrs,
        envp,
        envp_ptrs,
        cwd: cstring("cwd", &plan.cwd)?,
        hostname: cstring("hostname", &plan.hostname)?,
        uid: plan.uid,
        gid: plan.gid,
        rlimits: rlimit::prepare(&limits),
        last_cap: caps::last_cap(),
        landlock,
        seccomp,
        init_seccomp: seccomp::compile_init_filter()?,
        argv_area: argv_area(),
        fault: fault_stage(),
        clone_flags,
        runner_fds: plan.runner_fds,
        hold_dir: match plan.cwd.strip_prefix('/') {
            Some(rel) if crate::plan::holds_cwd(&plan.cwd) => Some(cstring("out dir", rel)?),
            _ => None,
        },
        late_dir: late_dir(plan)?,
        maps: userns::maps(plan.uid, plan.gid, sys::geteuid(), sys::getegid()),
        net_port: plan.net_proxy_port,
        pin_cpus: pin_cpus(plan, cover),
        entry: None,
        announce: None,
    })
}

/// The root's steps, its tmpfs with room for the plan's late files.
fn prepare_root(plan: &JailPlan) -> Result<mount::PreparedRoot, mount::MountError> {
    let (bytes, inodes) = plan
        .late_files
        .as_ref()
        .map_or((0, 0), |l| (l.bytes, l.inodes));
    let root_bytes = plan.root_tmpfs_bytes.saturating_add(bytes);
    mount::prepare(&plan.mounts, root_bytes, inodes)
}

/// The plan's late-files directory as the parent opens it beneath the waiting child's root:
/// in the staging tmpfs (crate::mount::STAGING), relative. Only an absolute path of plain
/// names.
fn late_dir(plan: &JailPlan) -> Result<Option<CString>, SetupError> {
    let Some(dir) = plan.late_files.as_ref().map(|l| l.dir.as_str()) else {
        return Ok(None);
    };
    let plain = dir.starts_with('/')
        && dir[1..]
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..");
    if !plain {
        return Err(SetupError::new(
            "prepare late files",
            Some(libc::EINVAL),
            format!("late_files.dir {dir:?} must be an absolute path of plain names (no `.`, `..` or empty part)"),
        ));
    }
    let staging = mount::STAGING.trim_start_matches('/');
    cstring("late files dir", &format!("{staging}{dir}")).map(Some)
}

/// execve's form of `strings`: their pointers, then NULL.
fn null_terminated(strings: &[CString]) -> Vec<*const libc::c_char> {
    strings
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// [arg_start, arg_end) of this process, from /proc/self/stat fields 48 and 49.
fn argv_area() -> Option<(usize, usize)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    // Field 3 (state) is f[0], so field N is f[N - 3].
    let start: usize = f.get(45)?.parse().ok()?;
    let end: usize = f.get(46)?.parse().ok()?;
    (start > 0 && end > start && end - start < (1 << 20)).then_some((start, end))
}

fn fault_stage() -> Option<u32> {
    let name = crate::fault::fault_name()?;
    (1..=64)
        .filter_map(Stage::from_u32)
        .find(|s| s.name() == name)
        .map(|s| s as u32)
}
