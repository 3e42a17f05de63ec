//! Prepare everything, clone the child into its namespaces, and run the parent's half of
//! the setup handshake.
//!
//! All fallible, allocating work happens in `prepare` (and in `spawn` before clone3):
//! strings, argv/envp arrays, the mount steps, the compiled seccomp program, the landlock
//! ruleset, the pipes. The child (`child::run`) only makes syscalls on this data.

use super::report::{self, Stage};
use super::{caps, cgroup, child, landlock, mount, rlimit, seccomp, sys, userns, SetupError};
use crate::plan::JailPlan;
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

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
    pub maps: userns::IdMaps,
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
}

pub fn prepare(plan: &JailPlan, cover: CgroupCover) -> Result<Prepared, SetupError> {
    let root = mount::prepare(&plan.mounts, plan.root_tmpfs_bytes)
        .map_err(|e| SetupError::new("prepare root", Some(libc::ENOENT), e))?;
    let path = plan
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str())
        .unwrap_or("/usr/bin:/bin");
    let first = plan.argv.first().ok_or_else(|| {
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
    let argv_ptrs = argv
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let envp_ptrs = envp
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let mut limits = plan.rlimits.clone();
    if cover.pids {
        // The kernel checks RLIMIT_NPROC before the pids cgroup when forking; with both at
        // the same value the rlimit always trips first, pids.events never counts and a fork
        // bomb looks like an ordinary error. With a pids cgroup the rlimit is a backstop
        // only, so it sits above pids.max (it counts the jail uid's tasks in the jail's own
        // user namespace, so other jobs do not share it).
        for l in limits
            .iter_mut()
            .filter(|l| l.resource == crate::plan::RlimitKind::Nproc)
        {
            l.soft = l.soft.saturating_mul(2);
            l.hard = l.hard.saturating_mul(2);
        }
    }
    if cover.memory {
        // With a memory cgroup the address-space rlimit only gets in the way (it counts
        // reservations, not memory); the cgroup bounds what is really used, page cache,
        // tmpfs and memfd pages included.
        limits.retain(|l| l.resource != crate::plan::RlimitKind::AddressSpace);
    }
    // Landlock is best-effort by ABI: when the host has none and the policy allows it, the
    // run goes on without it and the record says so (jail::execute checks `required`).
    let landlock = match landlock::prepare(&plan.landlock) {
        Ok(p) => Some(p),
        Err(e) if plan.landlock.requirement == crate::policy::Requirement::Required => {
            return Err(e)
        }
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
        maps: userns::maps(plan.uid, plan.gid, sys::geteuid(), sys::getegid()),
    })
}

/// The running jail as the supervisor sees it.
pub struct Spawned {
    pub pid: i32,
    pub pidfd: OwnedFd,
    /// The write end of the program's stdin (taken by the supervisor's feed).
    pub stdin: Option<OwnedFd>,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
    pub listener: Option<OwnedFd>,
    /// The program's pid (pid 2 in the jail) in our pid namespace.
    pub program_pid: Option<i32>,
    /// Init writes the program's raw wait status here before it exits.
    pub status: OwnedFd,
    /// Taken just before clone3: nothing in the jail can have run on a CPU before this.
    pub cloned_at: std::time::Instant,
}

/// Fds the child uses; raw numbers valid in the child after clone.
pub struct ChildFds {
    pub stdin_r: RawFd,
    pub stdout_w: RawFd,
    pub stderr_w: RawFd,
    pub report_w: RawFd,
    pub sync_r: RawFd,
    pub status_w: RawFd,
    /// Unshare the cgroup namespace in the child after the parent attached it (v1 or no
    /// CLONE_INTO_CGROUP), so the namespace's root is the job cgroup, not the launcher's.
    pub late_cgroup_ns: bool,
}

fn pipe(stage: &str) -> Result<(OwnedFd, OwnedFd), SetupError> {
    sys::pipe2().map_err(|e| SetupError::new(stage, Some(e), "raise the open-files limit"))
}

fn kill_and_reap(pidfd: &OwnedFd) {
    let _ = sys::pidfd_send_signal(pidfd.as_raw_fd(), libc::SIGKILL);
    let _ = sys::waitid_pidfd(pidfd.as_raw_fd(), libc::WEXITED);
}

pub fn spawn(p: &Prepared, cg: Option<&cgroup::JobCgroup>) -> Result<Spawned, SetupError> {
    let (stdin_r, stdin_w) = pipe("stdin pipe")?;
    let (stdout_r, stdout_w) = pipe("stdout pipe")?;
    let (stderr_r, stderr_w) = pipe("stderr pipe")?;
    let (report_r, report_w) = pipe("report pipe")?;
    let (sync_r, sync_w) = pipe("sync pipe")?;
    let (status_r, status_w) = pipe("status pipe")?;
    let fds = ChildFds {
        stdin_r: stdin_r.as_raw_fd(),
        stdout_w: stdout_w.as_raw_fd(),
        stderr_w: stderr_w.as_raw_fd(),
        report_w: report_w.as_raw_fd(),
        sync_r: sync_r.as_raw_fd(),
        status_w: status_w.as_raw_fd(),
        late_cgroup_ns: false,
    };
    let cgroup_fd = cg.and_then(|c| c.v2_dir_fd()).map(|fd| fd.as_raw_fd());
    // With CLONE_INTO_CGROUP the child is born in the job cgroup, so its new cgroup
    // namespace is rooted there. Otherwise the parent attaches it after clone, and a
    // namespace made at clone time would be rooted at the launcher's cgroup (showing the
    // host's cgroup path in /proc/self/cgroup): the child unshares it after the attach.
    // v1 directories are joined after clone even when clone3 put the child in a v2 one (a
    // host that splits controllers between the two): then the namespace must also wait.
    let v1_attach = cg.is_some_and(|c| c.has_v1());
    let fds = ChildFds {
        late_cgroup_ns: cgroup_fd.is_none() || v1_attach,
        ..fds
    };
    let clone_flags = if fds.late_cgroup_ns {
        p.clone_flags & !(libc::CLONE_NEWCGROUP as u64)
    } else {
        p.clone_flags
    };
    if fault_name().as_deref() == Some("clone3") {
        return Err(SetupError::new(
            "clone3 (new user, mount, pid, net, ipc, uts, cgroup namespaces)",
            Some(libc::EIO),
            "fault injected",
        ));
    }
    let mut pidfd_raw: RawFd = -1;
    let cloned_at = std::time::Instant::now();
    let pid = sys::clone3(clone_flags, &mut pidfd_raw, cgroup_fd).map_err(|e| {
        SetupError::new(
            "clone3 (new user, mount, pid, net, ipc, uts, cgroup namespaces)",
            Some(e),
            "this host refuses unprivileged user namespaces: run `agentjail doctor` for the fix",
        )
    })?;
    if pid == 0 {
        child::run(p, &fds);
    }
    // clone3 with CLONE_PIDFD stored a fresh pidfd that nothing else owns.
    let pidfd = sys::owned(pidfd_raw);
    drop((stdin_r, stdout_w, stderr_w, report_w, sync_r, status_w));

    let mut program_pid = None;
    let mut setup = || -> Result<Option<OwnedFd>, SetupError> {
        if fault_name().as_deref() == Some("uid_map") {
            return Err(SetupError::new(
                format!("write /proc/{pid}/uid_map"),
                Some(libc::EIO),
                "fault injected",
            ));
        }
        userns::write_maps(pid, &p.maps)?;
        // "g": the maps are written, the child may build its root. The cgroup v1 attach
        // below waits for an RCU grace period; the child's setup overlaps it and waits for
        // "c" before the cgroup namespace and long before the program exists (child.rs 5b).
        sys::write_all(sync_w.as_raw_fd(), b"g")
            .map_err(|e| SetupError::new("release child", Some(e), ""))?;
        if let Some(c) = cg {
            if cgroup_fd.is_none() || v1_attach {
                if fault_name().as_deref() == Some("cgroup_attach") {
                    return Err(SetupError::new(
                        "cgroup attach",
                        Some(libc::EIO),
                        "fault injected",
                    ));
                }
                c.attach(pid, cgroup_fd.is_some())?;
            }
        }
        // The child may already have failed while we attached (a mount, pivot_root, ...):
        // it wrote its report and exited, and this write then fails with EPIPE. Its report
        // is the error to give, so read it below; the write error only counts when the
        // child left no report.
        let released = sys::write_all(sync_w.as_raw_fd(), b"c");
        let mut listener = None;
        loop {
            let mut msg = [0u8; report::MSG_LEN];
            let n = sys::read(report_r.as_raw_fd(), &mut msg)
                .map_err(|e| SetupError::new("read child report", Some(e), ""))?;
            if n == 0 {
                if let Err(e) = released {
                    return Err(SetupError::new("release child", Some(e), ""));
                }
                return Ok(listener); // EOF: execve happened
            }
            if n != report::MSG_LEN {
                return Err(SetupError::new(
                    "child report",
                    None,
                    "short message from the child",
                ));
            }
            let (kind, a, b) = report::decode(&msg);
            let detail = kind >> 8;
            let kind = kind & 0xff;
            if kind == report::KIND_LISTENER {
                // The listener lives in the program (pid 2 in the jail, init's only child).
                let gpid = program_child(pid)?;
                program_pid = Some(gpid);
                let gfd = sys::pidfd_open(gpid).map_err(|e| {
                    SetupError::new("pidfd_open (program)", Some(e), "needs Linux >= 5.3")
                })?;
                let gfd = sys::owned(gfd);
                let fd = sys::pidfd_getfd(gfd.as_raw_fd(), a as i32).map_err(|e| {
                    SetupError::new(
                        "pidfd_getfd (seccomp listener)",
                        Some(e),
                        "needs Linux >= 5.6",
                    )
                })?;
                listener = Some(sys::owned(fd));
                sys::write_all(sync_w.as_raw_fd(), b"a")
                    .map_err(|e| SetupError::new("ack listener", Some(e), ""))?;
                continue;
            }
            let stage = Stage::from_u32(a);
            let (name, hint) = match stage {
                Some(Stage::MountOp) => ("mount", Stage::MountOp.hint(b)),
                Some(s) => (s.name(), s.hint(b)),
                None => ("unknown", ""),
            };
            let mut stage_name = name.to_string();
            if stage == Some(Stage::MountOp) {
                stage_name = format!("mount: {}", p.root.describe(detail as usize));
            }
            return Err(SetupError::new(
                format!("child: {stage_name}"),
                Some(b),
                hint,
            ));
        }
    };
    let res = setup();
    match res {
        Ok(listener) => Ok(Spawned {
            pid,
            pidfd,
            stdin: Some(stdin_w),
            stdout: stdout_r,
            stderr: stderr_r,
            listener,
            program_pid,
            status: status_r,
            cloned_at,
        }),
        Err(e) => {
            kill_and_reap(&pidfd);
            Err(e)
        }
    }
}

/// The host pid of the jail init's only child (the program), from procfs.
fn program_child(init: i32) -> Result<i32, SetupError> {
    let path = format!("/proc/{init}/task/{init}/children");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        SetupError::new(
            format!("read {path}"),
            e.raw_os_error(),
            "agentjail must see its jail's processes in /proc: no hidepid=invisible (systemd ProtectProc=invisible) over it, and a kernel with CONFIG_PROC_CHILDREN",
        )
    })?;
    text.split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| {
            SetupError::new(
                format!("read {path}"),
                None,
                "the program process is missing",
            )
        })
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

/// `AGENTJAIL_FAULT=<stage name>` in builds with the `fault-injection` feature: the named
/// child stage (report::Stage::name) fails with EIO, or a parent stage (`clone3`,
/// `uid_map`, `cgroup_attach`) fails before/after clone. Release builds never read it.
#[cfg(feature = "fault-injection")]
pub fn fault_name() -> Option<String> {
    std::env::var("AGENTJAIL_FAULT").ok()
}

#[cfg(not(feature = "fault-injection"))]
pub fn fault_name() -> Option<String> {
    None
}

fn fault_stage() -> Option<u32> {
    let name = fault_name()?;
    (1..=64)
        .filter_map(Stage::from_u32)
        .find(|s| s.name() == name)
        .map(|s| s as u32)
}
