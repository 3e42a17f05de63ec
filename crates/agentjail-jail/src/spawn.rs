//! Clone the child into its namespaces and run the parent's half of the setup handshake, on
//! data built beforehand (`prepared::prepare`): the pipes are the only thing made here.

use super::child_fds::ChildFds;
use super::fault::fault_name;
use super::prepared::Prepared;
use super::report::{self, Stage};
use super::{cgroup, child, container, sys, userns, SetupError};
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

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
    /// The runner's job pipe (write end) and reply pipe (read end), when the plan has a
    /// runner.
    pub job: Option<OwnedFd>,
    pub reply: Option<OwnedFd>,
    /// A pidfd for the program (pid 2): a stop kills it, and init then ends the rest.
    pub program_pidfd: Option<OwnedFd>,
    /// The plan's `hold_dir` (/app/out), opened beneath the jail's root before the program
    /// could run (and so before it could have exited).
    pub held_dir: Option<OwnedFd>,
    /// The network allowlist's listening socket, in the jail's network namespace (its
    /// loopback, the plan's proxy port), taken from the program before its exec.
    pub net: Option<OwnedFd>,
    /// A jail with late files (crate::plan::LateFiles), stopped before its root is sealed:
    /// what finishing its setup needs. None once released (or for any other jail).
    pub late: Option<Late>,
}

/// A child waiting at its late-files step (child.rs, 4b): the directory the job's files go
/// to, and the rest of the handshake.
pub struct Late {
    /// The plan's late directory, opened beneath the waiting child's root (an O_PATH fd in
    /// its root tmpfs, still writable).
    pub dir: OwnedFd,
    report: OwnedFd,
    sync: OwnedFd,
    hold_dir: Option<CString>,
    net: bool,
    /// The jail uid's and gid's host ids (what the child's own files are owned by).
    pub owner: (u32, u32),
}

impl Spawned {
    /// Let a child waiting at its late-files step seal its root and start its program, and
    /// take over what the handshake hands over (the seccomp listener, the program's pid,
    /// /app/out, the allowlist's socket). Nothing to do for a jail without late files.
    /// On failure the caller kills the jail.
    pub fn release_late(&mut self) -> Result<(), SetupError> {
        let Some(late) = self.late.take() else {
            return Ok(());
        };
        let Late {
            dir,
            report,
            sync,
            hold_dir,
            net,
            ..
        } = late;
        drop(dir);
        let released = sys::write_all(sync.as_raw_fd(), b"f");
        let expect = Expect {
            hold_dir: hold_dir.as_deref(),
            net,
            late: None,
        };
        let h = read_reports(self.pid, &report, &sync, &expect, None, released)?;
        self.listener = h.listener;
        self.program_pid = h.program.as_ref().map(|(pid, _)| *pid);
        self.program_pidfd = h.program.map(|(_, fd)| fd);
        self.held_dir = h.held_dir;
        self.net = h.net;
        Ok(())
    }
}

fn pipe(stage: &str) -> Result<(OwnedFd, OwnedFd), SetupError> {
    sys::pipe2().map_err(|e| SetupError::new(stage, Some(e), "raise the open-files limit"))
}

pub fn kill_and_reap(pidfd: &OwnedFd) {
    let _ = sys::pidfd_send_signal(pidfd.as_raw_fd(), libc::SIGKILL);
    let _ = sys::waitid_pidfd(pidfd.as_raw_fd(), libc::WEXITED);
}

/// The pipes between agentjail and a new jail: (our end, the child's end) each.
struct Pipes {
    stdin: (OwnedFd, OwnedFd),
    stdout: (OwnedFd, OwnedFd),
    stderr: (OwnedFd, OwnedFd),
    report: (OwnedFd, OwnedFd),
    sync: (OwnedFd, OwnedFd),
    status: (OwnedFd, OwnedFd),
    /// The runner's job pipe (ours: write, child's: read) and reply pipe (ours: read,
    /// child's: write).
    runner: Option<((OwnedFd, OwnedFd), (OwnedFd, OwnedFd))>,
}

impl Pipes {
    fn new(runner: bool) -> Result<Pipes, SetupError> {
        let (stdin_r, stdin_w) = pipe("stdin pipe")?;
        let (stdout_r, stdout_w) = pipe("stdout pipe")?;
        let (stderr_r, stderr_w) = pipe("stderr pipe")?;
        let (report_r, report_w) = pipe("report pipe")?;
        let (sync_r, sync_w) = pipe("sync pipe")?;
        let (status_r, status_w) = pipe("status pipe")?;
        let runner = if runner {
            let (job_r, job_w) = pipe("job pipe")?;
            let (reply_r, reply_w) = pipe("reply pipe")?;
            Some(((job_w, job_r), (reply_r, reply_w)))
        } else {
            None
        };
        Ok(Pipes {
            runner,
            stdin: (stdin_w, stdin_r),
            stdout: (stdout_r, stdout_w),
            stderr: (stderr_r, stderr_w),
            report: (report_r, report_w),
            sync: (sync_w, sync_r),
            status: (status_r, status_w),
        })
    }

    /// The child's ends, as raw numbers valid in the child after clone.
    fn child_fds(
        &self,
        late_cgroup_ns: bool,
        cgroup_join: [RawFd; cgroup::MAX_V1_DIRS],
    ) -> ChildFds {
        ChildFds {
            stdin_r: self.stdin.1.as_raw_fd(),
            stdout_w: self.stdout.1.as_raw_fd(),
            stderr_w: self.stderr.1.as_raw_fd(),
            report_w: self.report.1.as_raw_fd(),
            sync_r: self.sync.1.as_raw_fd(),
            status_w: self.status.1.as_raw_fd(),
            runner: self
                .runner
                .as_ref()
                .map(|(job, reply)| (job.1.as_raw_fd(), reply.1.as_raw_fd())),
            late_cgroup_ns,
            cgroup_join,
            parent_ends: [
                self.stdin.0.as_raw_fd(),
                self.stdout.0.as_raw_fd(),
                self.stderr.0.as_raw_fd(),
                self.report.0.as_raw_fd(),
                self.sync.0.as_raw_fd(),
                self.status.0.as_raw_fd(),
                self.runner
                    .as_ref()
                    .map_or(-1, |(job, _)| job.0.as_raw_fd()),
                self.runner
                    .as_ref()
                    .map_or(-1, |(_, reply)| reply.0.as_raw_fd()),
            ],
        }
    }
}

const CLONE_STAGE: &str = "clone3 (new user, mount, pid, net, ipc, uts, cgroup namespaces)";

/// Start a jail: clone3 into new namespaces (the child runs `child::run` on `p`), then the
/// parent's half of the handshake. On any failure the child is killed and reaped.
pub fn spawn(p: &Prepared, cg: Option<&cgroup::JobCgroup>) -> Result<Spawned, SetupError> {
    spawn_keeping(p, cg).map_err(|(e, pidfd)| {
        if let Some(fd) = pidfd {
            kill_and_reap(&fd);
        }
        e
    })
}

/// As [`spawn`], but a child that failed the handshake is left to the caller (its pidfd
/// comes with the error, the child not yet killed): with CLONE_PARENT (the zygote) the
/// caller is not the child's parent and cannot reap it (`Prepared::announce` tells the
/// parent of the child).
pub fn spawn_keeping(
    p: &Prepared,
    cg: Option<&cgroup::JobCgroup>,
) -> Result<Spawned, (SetupError, Option<OwnedFd>)> {
    let pipes = Pipes::new(p.runner_fds).map_err(|e| (e, None))?;
    let cgroup_fd = cg.and_then(|c| c.v2_dir_fd()).map(|fd| fd.as_raw_fd());
    // With CLONE_INTO_CGROUP the child is born in the job cgroup, so its new cgroup
    // namespace is rooted there. Otherwise it joins after clone (v1 always, by itself:
    // child.rs 1b, cgroup::JobCgroup::v1_join_fds), and a namespace made at clone time would
    // be rooted at the launcher's cgroup (the host's path in /proc/self/cgroup): the child
    // unshares it after joining, also when clone3 put it in a v2 directory (a host that
    // splits controllers between the two).
    let v1_attach = cg.is_some_and(|c| c.has_v1());
    let join = v1_join_fds(cg).map_err(|e| (e, None))?;
    let fds = pipes.child_fds(cgroup_fd.is_none() || v1_attach, join);
    let clone_flags = if fds.late_cgroup_ns {
        p.clone_flags & !(libc::CLONE_NEWCGROUP as u64)
    } else {
        p.clone_flags
    };
    let (pid, pidfd) = clone_child(p, &fds, clone_flags, cgroup_fd).map_err(|e| (e, None))?;
    if let Err(e) = pin(p, pid) {
        return Err((e, Some(pidfd)));
    }
    let Pipes {
        stdin,
        stdout,
        stderr,
        report,
        sync,
        status,
        runner,
    } = pipes;
    drop((stdin.1, stdout.1, stderr.1, report.1, sync.1, status.1));
    let (job, reply) = match runner {
        Some((job, reply)) => {
            drop((job.1, reply.1));
            (Some(job.0), Some(reply.0))
        }
        None => (None, None),
    };
    let handshake = Handshake {
        p,
        pid,
        report: &report.0,
        sync: &sync.0,
    };
    match handshake.run(cg, cgroup_fd.is_none()) {
        Ok(Handover {
            listener,
            program,
            held_dir,
            net,
            late,
        }) => Ok(Spawned {
            net,
            pid,
            pidfd,
            stdin: Some(stdin.0),
            stdout: stdout.0,
            stderr: stderr.0,
            listener,
            program_pid: program.as_ref().map(|(pid, _)| *pid),
            program_pidfd: program.map(|(_, fd)| fd),
            held_dir,
            status: status.0,
            job,
            reply,
            late: late.map(|dir| Late {
                dir,
                report: report.0,
                sync: sync.0,
                hold_dir: p.hold_dir.clone(),
                net: p.net_port.is_some(),
                owner: (p.maps.host_uid, p.maps.host_gid),
            }),
        }),
        Err(e) => Err((e, Some(pidfd))),
    }
}

/// The job's v1 `tasks` fds for the child to join itself (none without a cgroup).
fn v1_join_fds(cg: Option<&cgroup::JobCgroup>) -> Result<[RawFd; cgroup::MAX_V1_DIRS], SetupError> {
    match cg {
        Some(c) => c.v1_join_fds(),
        None => Ok([-1; cgroup::MAX_V1_DIRS]),
    }
}

/// Pin the new child to the plan's CPUs when no cpu cgroup bounds it (crate::affinity):
/// before the handshake releases it, so nothing of the jail runs yet and every process it
/// makes inherits the mask.
fn pin(p: &Prepared, pid: i32) -> Result<(), SetupError> {
    let Some(n) = p.pin_cpus else {
        return Ok(());
    };
    crate::affinity::pin(pid, n).map(drop).map_err(|e| {
        SetupError::new(
            "sched_setaffinity",
            Some(e),
            "no cpu cgroup: the jail is pinned to the plan's CPUs instead, and pinning failed; \
             run with a delegated cpu cgroup (systemd Delegate=yes) or check agentjail's own CPU affinity",
        )
    })
}

/// What the handshake takes over from the child: the seccomp listener, the program's pid and
/// a pidfd for it, and the plan's held directory.
struct Handover {
    listener: Option<OwnedFd>,
    program: Option<(i32, OwnedFd)>,
    held_dir: Option<OwnedFd>,
    net: Option<OwnedFd>,
    /// The late-files directory, when the child stopped to wait for its files.
    late: Option<OwnedFd>,
}

/// What the child's reports lead to: the directory to hold, whether to take the allowlist's
/// socket, and the late-files directory to open when the child waits for its files.
struct Expect<'a> {
    hold_dir: Option<&'a std::ffi::CStr>,
    net: bool,
    late: Option<&'a std::ffi::CStr>,
}

/// clone3 into the new namespaces; the child runs `child::run` and never returns here.
fn clone_child(
    p: &Prepared,
    fds: &ChildFds,
    flags: u64,
    cgroup_fd: Option<RawFd>,
) -> Result<(i32, OwnedFd), SetupError> {
    if fault_name().as_deref() == Some("clone3") {
        return Err(SetupError::new(
            CLONE_STAGE,
            Some(libc::EIO),
            "fault injected",
        ));
    }
    let mut pidfd_raw: RawFd = -1;
    // Never while another jail's late file is open for writing (late.rs): the child would
    // hold a copy of it.
    let no_late_writes = crate::late::no_late_writes();
    let cloned = sys::clone3(flags, &mut pidfd_raw, cgroup_fd);
    drop(no_late_writes);
    let pid = cloned.map_err(|e| {
        let hint = match e {
            libc::ENOSYS | libc::EPERM => container::seccomp_hint("clone3", e),
            _ => None,
        };
        SetupError::new(
            CLONE_STAGE,
            Some(e),
            hint.unwrap_or_else(|| clone_hint(e).into()),
        )
    })?;
    if pid == 0 {
        child::run(p, fds);
    }
    // clone3 with CLONE_PIDFD stored a fresh pidfd that nothing else owns.
    Ok((pid, sys::owned(pidfd_raw)))
}

/// What a clone3 errno most likely means on a host where agentjail otherwise works.
fn clone_hint(errno: i32) -> &'static str {
    match errno {
        // fork's EAGAIN: no new process for this uid or cgroup, not a namespace refusal.
        libc::EAGAIN => {
            "no new process could be created: the caller's process limit (RLIMIT_NPROC, \
             `ulimit -u`), its cgroup's pids.max or the kernel's threads-max is reached"
        }
        libc::ENOMEM => "the kernel could not allocate the new process (memory)",
        libc::ENOSPC => {
            "a namespace limit is reached (/proc/sys/user/max_*_namespaces) or a pid \
             namespace's init is gone"
        }
        libc::EUSERS => "too many nested user namespaces",
        libc::ENOSYS => {
            "this kernel has no clone3 (Linux >= 5.3 has), or a seccomp filter above agentjail \
             refuses it: run `agentjail doctor`"
        }
        _ => "this host refuses unprivileged user namespaces: run `agentjail doctor` for the fix",
    }
}

/// Open `rel` beneath the root of process `pid` (no symlink, no `..` out of it).
///
/// /app/out through the program (pid 2), not init: init never execs, so its memory still
/// belongs to the host's user namespace and, once non-dumpable (child.rs, 11), its root may
/// be opened only with CAP_SYS_PTRACE there, which an unprivileged launcher lacks. The
/// program is dumpable and stopped before its exec while this runs. The late-files
/// directory through the child itself, at its step 4b: it has not split yet and is still
/// dumpable when launched unprivileged (its uid did not change); launched by root, root's
/// CAP_SYS_PTRACE opens it either way.
fn open_beneath_root(pid: i32, rel: &std::ffi::CStr) -> Result<OwnedFd, SetupError> {
    let fail = |e| {
        SetupError::new(
            format!("open /{}", rel.to_string_lossy()),
            Some(e),
            "agentjail must be able to open its jail's root through /proc/<pid>/root",
        )
    };
    let root = CString::new(format!("/proc/{pid}/root")).map_err(|_| fail(libc::EINVAL))?;
    let root = sys::open(&root, libc::O_PATH | libc::O_DIRECTORY, 0).map_err(fail)?;
    let root = sys::owned(root);
    sys::open_beneath(root.as_raw_fd(), rel)
        .map(sys::owned)
        .map_err(fail)
}

/// The parent's half of the setup, talking to the child over the sync and report pipes.
struct Handshake<'a> {
    p: &'a Prepared,
    pid: i32,
    report: &'a OwnedFd,
    sync: &'a OwnedFd,
}

impl Handshake<'_> {
    /// Write the id maps, release the child (which joins its v1 cgroups itself), put it in
    /// its v2 cgroup when clone3 could not (`attach_v2`), then read its reports until exec.
    /// Returns the seccomp listener and the program's pid.
    fn run(&self, cg: Option<&cgroup::JobCgroup>, attach_v2: bool) -> Result<Handover, SetupError> {
        let pid = self.pid;
        if fault_name().as_deref() == Some("uid_map") {
            return Err(SetupError::new(
                format!("write /proc/{pid}/uid_map"),
                Some(libc::EIO),
                "fault injected",
            ));
        }
        userns::write_maps(pid, &self.p.maps)?;
        // "g": the maps are written; the child joins its v1 cgroups and builds its root. A v2
        // attach here (no CLONE_INTO_CGROUP) overlaps that; the child waits for "c" before
        // the cgroup namespace and long before the program exists (child.rs 5b).
        self.send(b"g", "release child")?;
        if let Some(c) = cg {
            if fault_name().as_deref() == Some("cgroup_attach") {
                return Err(SetupError::new(
                    "cgroup attach",
                    Some(libc::EIO),
                    "fault injected",
                ));
            }
            if attach_v2 {
                c.attach_v2(pid)?;
            }
        }
        // The child may already have failed while we attached (a mount, pivot_root, ...):
        // it wrote its report and exited, and this write then fails with EPIPE. Its report
        // is the error to give, so read it below; the write error only counts when the
        // child left no report.
        let released = sys::write_all(self.sync.as_raw_fd(), b"c");
        self.read_reports(released)
    }

    fn send(&self, byte: &[u8], stage: &str) -> Result<(), SetupError> {
        sys::write_all(self.sync.as_raw_fd(), byte).map_err(|e| SetupError::new(stage, Some(e), ""))
    }

    /// Reports until EOF (the exec happened) or, with late files, until the child waits for
    /// them.
    fn read_reports(&self, released: sys::SysResult<()>) -> Result<Handover, SetupError> {
        let expect = Expect {
            hold_dir: self.p.hold_dir.as_deref(),
            net: self.p.net_port.is_some(),
            late: self.p.late_dir.as_deref(),
        };
        read_reports(
            self.pid,
            self.report,
            self.sync,
            &expect,
            Some(&self.p.root),
            released,
        )
    }
}

/// The child's reports until EOF (the exec happened): the listener handover, a setup
/// failure or, when `expect.late` names a directory, the child's wait for its late files
/// (then the directory is opened and the reading stops: [`Spawned::release_late`] goes on).
/// `root`: the prepared root, to name a failed mount step.
fn read_reports(
    pid: i32,
    report_fd: &OwnedFd,
    sync: &OwnedFd,
    expect: &Expect<'_>,
    root: Option<&crate::mount::PreparedRoot>,
    released: sys::SysResult<()>,
) -> Result<Handover, SetupError> {
    let mut h = Handover {
        listener: None,
        program: None,
        held_dir: None,
        net: None,
        late: None,
    };
    let send = |byte: &[u8], stage: &str| {
        sys::write_all(sync.as_raw_fd(), byte).map_err(|e| SetupError::new(stage, Some(e), ""))
    };
    loop {
        let mut msg = [0u8; report::MSG_LEN];
        let n = sys::read(report_fd.as_raw_fd(), &mut msg)
            .map_err(|e| SetupError::new("read child report", Some(e), ""))?;
        if n == 0 {
            if let Err(e) = released {
                return Err(SetupError::new("release child", Some(e), ""));
            }
            return Ok(h); // EOF: execve happened
        }
        if n != report::MSG_LEN {
            return Err(SetupError::new(
                "child report",
                None,
                "short message from the child",
            ));
        }
        let (kind, a, b) = report::decode(&msg);
        if kind & 0xff == report::KIND_LATE {
            // The child built its root and waits before sealing it; no program exists.
            let Some(dir) = expect.late else {
                return Err(SetupError::new(
                    "child report",
                    None,
                    "the child waits for late files the plan does not have",
                ));
            };
            h.late = Some(open_beneath_root(pid, dir)?);
            return Ok(h);
        }
        if kind & 0xff != report::KIND_LISTENER {
            return Err(child_error(root, kind >> 8, a, b));
        }
        let (gpid, gfd, fd) = take_listener(pid, a as i32)?;
        // The program waits for our ack before it execs: it cannot have run, let alone
        // exited, so its root is there to open. (Opened after the exec, a program that
        // finishes at once, like `exec -- true`, could be gone first: a loaded machine
        // showed it.)
        if let Some(dir) = expect.hold_dir {
            h.held_dir = Some(open_beneath_root(gpid, dir)?);
        }
        if expect.net {
            let fd = sys::pidfd_getfd(gfd.as_raw_fd(), child::NET_FD).map_err(|e| {
                SetupError::new(
                    "pidfd_getfd (network listener)",
                    Some(e),
                    "needs Linux >= 5.6",
                )
            })?;
            h.net = Some(sys::owned(fd));
        }
        h.program = Some((gpid, gfd));
        h.listener = Some(fd);
        send(b"a", "ack listener")?;
    }
}

/// The listener lives in the program (pid 2 in the jail, init's only child): take a copy of
/// its fd with pidfd_getfd.
fn take_listener(init: i32, fd_in_child: i32) -> Result<(i32, OwnedFd, OwnedFd), SetupError> {
    let gpid = program_child(init)?;
    let gfd = sys::pidfd_open(gpid)
        .map_err(|e| SetupError::new("pidfd_open (program)", Some(e), "needs Linux >= 5.3"))?;
    let gfd = sys::owned(gfd);
    let fd = sys::pidfd_getfd(gfd.as_raw_fd(), fd_in_child).map_err(|e| {
        SetupError::new(
            "pidfd_getfd (seccomp listener)",
            Some(e),
            "needs Linux >= 5.6",
        )
    })?;
    Ok((gpid, gfd, sys::owned(fd)))
}

/// A child's (stage, errno) report as an error naming the stage and the fix.
fn child_error(
    root: Option<&crate::mount::PreparedRoot>,
    detail: u32,
    stage: u32,
    errno: i32,
) -> SetupError {
    let stage = Stage::from_u32(stage);
    let (name, hint) = match stage {
        Some(s) => (s.name().to_string(), s.hint(errno)),
        None => ("unknown".to_string(), ""),
    };
    let name = match (stage, root) {
        (Some(Stage::MountOp), Some(root)) => format!("mount: {}", root.describe(detail as usize)),
        _ => name,
    };
    let hint = match stage {
        Some(Stage::MountOp) if root.is_some_and(|r| r.is_proc_mount(detail as usize)) => {
            container::proc_hint(errno)
        }
        Some(Stage::MountOp | Stage::MountRoot | Stage::MountPrivate | Stage::PivotRoot)
            if errno == libc::EPERM || errno == libc::ENOSYS =>
        {
            container::seccomp_hint("mount", errno).unwrap_or_else(|| hint.to_string())
        }
        _ => hint.to_string(),
    };
    SetupError::new(format!("child: {name}"), Some(errno), hint)
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
