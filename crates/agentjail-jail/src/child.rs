//! The child's steps, in order. The order is the security argument:
//!
//! 0. close our copies of the parent's pipe ends (a parent that dies mid-setup is then an
//!    EOF on the sync pipe, never a wait forever); a zygote's child
//!    (crates/agentjail-engine/src/zygote) also sends
//!    the server a pidfd of itself, so the server can reap it whatever the template does;
//! 1. wait until the parent has written our uid/gid maps — nothing runs unmapped;
//!
//!    1b. join the job's cgroup v1 directories ourselves, before anything else: "0" written
//!    to each one's `tasks` file (opened by the parent before the clone) moves the writing
//!    thread, which is all of us. A pid written by the parent would make the kernel take
//!    its global threadgroup lock for writing, which waits for an RCU grace period (1-15 ms
//!    on an idle host); a thread moving itself needs no such lock. From here everything
//!    this process allocates (the root's mounts included) and everything it will fork is
//!    the job's. The fds are closed at once: only this step uses them;
//! 2. become the jail uid/gid (setgroups is already "deny");
//! 3. die with the supervisor (PDEATHSIG is reset by credential changes, hence after 2),
//!    then check the supervisor did not die before we asked;
//! 4. build the root on a tmpfs, pivot into it, detach the host's root: from here no path
//!    leads to a host file that was not bound in read-only;
//!
//!    4b. (late files only: a jail started before its job) between building the root and
//!    sealing it: close every fd but our own (a clone copies all of agentjail's, among
//!    them other jails' setup pipes and clients' sockets, which a jail that waits for its
//!    job must not hold open), wait for the parent's "c" (a v2 attach done, see 5b),
//!    report that we wait, and wait for "f". Meanwhile the parent writes the job's files into the
//!    root tmpfs through /proc/<pid>/root. Nothing of the program exists yet: this process
//!    runs only agentjail's code on prepared data, so what the parent writes is data in a
//!    directory that is about to become read-only, as the plan's own files are;
//! 5. hostname, new session (no controlling terminal);
//!
//!    5b. wait for the parent's "c" (it has put us in a v2 job cgroup that clone3 could not
//!    place us in; the v1 ones we joined at 1b), then (cgroup v1, or no CLONE_INTO_CGROUP)
//!    unshare the cgroup namespace so its root is the job cgroup. Steps 2-5 overlap the
//!    parent's v2 attach; they are agentjail's own work on prepared data: nothing of the
//!    program exists before the fork in 11;
//!    5c. (network allowlist only) bring the jail's loopback up and listen on
//!    127.0.0.1:<proxy port>, while we still hold CAP_NET_ADMIN in our user namespace and
//!    before landlock denies TCP bind; the supervisor takes the socket at 12 and its proxy
//!    accepts on it. No other interface exists, so that port is the jail's only way out;
//! 6. no_new_privs, then drop every capability (bounding, ambient, effective, permitted,
//!    inheritable): after this the process can never regain privilege, not even via exec;
//! 7. landlock (needs no_new_privs; paths are now jail paths);
//! 8. only fds 0, 1, 2 survive (and, for agentjail's runner, its job and reply pipes at 3
//!    and 4), plus our close-on-exec setup pipes;
//! 9. rlimits (after the fd shuffle: RLIMIT_NOFILE would forbid the high fd numbers);
//! 10. default signal dispositions and an empty mask (Rust ignores SIGPIPE; an ignored
//!     disposition would survive execve);
//! 11. fork: this process stays as the jail's init (pid 1, its own strict seccomp filter,
//!     reaps orphans, ends the namespace when the program ends, reports the program's wait
//!     status); the program becomes pid 2 (a raw clone; glibc's fork for a zygote's
//!     program, which goes on in the template's libc and interpreter);
//! 12. in pid 2, seccomp, last: every syscall above is one the jailed program may not make,
//!     so the filter cannot be installed earlier. The listener fd is handed to the
//!     supervisor and closed before exec;
//! 13. execve with the prepared, clean environment (a zygote's program instead closes what
//!     exec would have closed and continues in the template's interpreter).
//!
//! Nothing here allocates; every failure is reported as (stage, errno) and ends in _exit.

use super::child_fds::ChildFds;
use super::prepared::Prepared;
use super::report::{self, Stage};
use super::{caps, landlock, mount, rlimit, seccomp, sys};
use std::os::fd::RawFd;

/// The runner's job pipe (read end), when the plan gives the program one: agentjail's
/// frames with the source to run.
pub const JOB_FD: RawFd = 3;
/// The runner's reply pipe (write end): its reports to agentjail, one JSON line each.
pub const REPLY_FD: RawFd = 4;
/// Setup pipes, above the fds the program may keep; all close-on-exec.
const REPORT_FD: RawFd = 5;
const SYNC_FD: RawFd = 6;
const STATUS_FD: RawFd = 7;
/// The network allowlist's listening socket (loopback, the plan's proxy port), kept until
/// the supervisor took it from the program with pidfd_getfd; close-on-exec, and init
/// closes its copy.
pub const NET_FD: RawFd = 8;

/// What init reports when the jail is over: the program's raw wait status, and the CPU time
/// and peak RSS of everything init reaped. Fixed-size, native-endian, written at once (a pipe
/// write under PIPE_BUF is atomic, so the supervisor reads all of it or nothing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InitReport {
    pub status: i32,
    pub cpu_us: u64,
    pub max_rss_bytes: u64,
}

impl InitReport {
    pub const LEN: usize = 20;

    fn add(&mut self, r: &sys::Reaped) {
        self.cpu_us = self.cpu_us.saturating_add(r.cpu_us);
        self.max_rss_bytes = self.max_rss_bytes.max(r.max_rss_bytes);
    }

    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[..4].copy_from_slice(&self.status.to_ne_bytes());
        b[4..12].copy_from_slice(&self.cpu_us.to_ne_bytes());
        b[12..].copy_from_slice(&self.max_rss_bytes.to_ne_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Option<InitReport> {
        if b.len() != Self::LEN {
            return None;
        }
        Some(InitReport {
            status: i32::from_ne_bytes(b[..4].try_into().ok()?),
            cpu_us: u64::from_ne_bytes(b[4..12].try_into().ok()?),
            max_rss_bytes: u64::from_ne_bytes(b[12..].try_into().ok()?),
        })
    }
}

/// Test-only fault injection (`--features fault-injection`): fail `stage` on purpose with
/// EIO, so the tests can show every stage's failure is reported and leaves nothing behind.
/// Without the feature `p.fault` is always None.
fn inject(p: &Prepared, rep: RawFd, stage: Stage) {
    if p.fault == Some(stage as u32) {
        fail(rep, stage, 0, libc::EIO);
    }
}

fn fail(report_fd: RawFd, stage: Stage, detail: u32, errno: i32) -> ! {
    let kind = report::KIND_ERROR | (detail << 8);
    let _ = sys::write_all(report_fd, &report::encode(kind, stage as u32, errno));
    sys::exit_now(125)
}

/// Move the fds the child keeps to fixed numbers: 0-2 stdio, 3 and 4 the runner's job and
/// reply pipes (or nothing), 5 report, 6 sync, 7 status, 8 the allowlist's listening
/// socket (close-on-exec); close the rest.
fn arrange_fds(fds: &ChildFds, net: Option<RawFd>) -> Result<(), i32> {
    // First copy everything above any target number so no dup2 overwrites a source.
    let high = |fd: RawFd| sys::dup_cloexec_above(fd, 10);
    let (i, o, e, r, s, st) = (
        high(fds.stdin_r)?,
        high(fds.stdout_w)?,
        high(fds.stderr_w)?,
        high(fds.report_w)?,
        high(fds.sync_r)?,
        high(fds.status_w)?,
    );
    let runner = match fds.runner {
        Some((job, reply)) => Some((high(job)?, high(reply)?)),
        None => None,
    };
    sys::dup2(i, 0)?;
    sys::dup2(o, 1)?;
    sys::dup2(e, 2)?;
    match runner {
        // dup2 clears close-on-exec: these two reach the program.
        Some((job, reply)) => {
            sys::dup2(job, JOB_FD)?;
            sys::dup2(reply, REPLY_FD)?;
        }
        None => {
            sys::close(JOB_FD);
            sys::close(REPLY_FD);
        }
    }
    // These three close at execve.
    sys::dup3_cloexec(r, REPORT_FD)?;
    sys::dup3_cloexec(s, SYNC_FD)?;
    sys::dup3_cloexec(st, STATUS_FD)?;
    // `net` was made above 10 (step 5c), so no dup2 above overwrote it.
    match net {
        Some(n) => {
            sys::dup3_cloexec(n, NET_FD)?;
            sys::close_range_from(NET_FD as u32 + 1)
        }
        None => sys::close_range_from(STATUS_FD as u32 + 1),
    }
}

/// Step 4b: our own fds only, in the job cgroup (the parent's "c"), then report that we
/// wait and wait for the parent's "f" (the job's files are in the root). Never returns on
/// failure.
fn wait_for_files(p: &Prepared, fds: &ChildFds) {
    let (rep, sync) = (fds.report_w, fds.sync_r);
    step(p, rep, Stage::CloseFds, || plain(keep_only_own_fds(p, fds)));
    wait_parent(rep, sync, Some(b'c'));
    let waiting = report::encode(report::KIND_LATE, 0, 0);
    if let Err(e) = sys::write_all(rep, &waiting) {
        fail(rep, Stage::WaitParent, 0, e);
    }
    wait_parent(rep, sync, Some(b'f'));
}

/// Close every fd but the child's own (its pipes, the landlock ruleset), without moving
/// any: the numbers are sorted on the stack and the gaps between them closed.
fn keep_only_own_fds(p: &Prepared, fds: &ChildFds) -> Result<(), i32> {
    let (job, reply) = fds.runner.unwrap_or((-1, -1));
    let ruleset = p.landlock.as_ref().map_or(-1, |l| l.ruleset_fd());
    let mut keep = [
        fds.stdin_r,
        fds.stdout_w,
        fds.stderr_w,
        fds.report_w,
        fds.sync_r,
        fds.status_w,
        job,
        reply,
        ruleset,
    ];
    keep.sort_unstable();
    let mut next: u32 = 0;
    for fd in keep.into_iter().filter(|&fd| fd >= 0) {
        let fd = fd as u32;
        if fd > next {
            sys::close_range(next, fd - 1)?;
        }
        next = next.max(fd + 1);
    }
    sys::close_range_from(next)
}

/// A step's failure: (detail, errno); `detail` names the part of a multi-part step (the
/// mount op, the landlock rule, the rlimit) and is 0 otherwise.
type StepResult = Result<(), (u32, i32)>;

/// Take one step: the fault-injection point, the step, and on failure a (stage, errno)
/// report and exit. Never returns on failure.
fn step(p: &Prepared, rep: RawFd, stage: Stage, f: impl FnOnce() -> StepResult) {
    inject(p, rep, stage);
    if let Err((detail, errno)) = f() {
        fail(rep, stage, detail, errno);
    }
}

/// As [`step`] for steps made of several stages, whose failure names the stage itself.
fn staged(p: &Prepared, rep: RawFd, first: Stage, f: impl FnOnce() -> Result<(), (Stage, i32)>) {
    inject(p, rep, first);
    if let Err((stage, errno)) = f() {
        fail(rep, stage, 0, errno);
    }
}

/// A plain syscall result as a step result.
fn plain<T>(r: sys::SysResult<T>) -> StepResult {
    r.map(drop).map_err(|e| (0, e))
}

/// Read one byte from the parent. EOF (or anything but `expect`) means it died or gave up:
/// exit without running anything, and without a report nobody would read.
fn wait_for(sync: RawFd, expect: Option<u8>) -> StepResult {
    let mut b = [0u8; 1];
    match sys::read(sync, &mut b) {
        Ok(1) if expect.is_none_or(|e| e == b[0]) => Ok(()),
        Ok(_) => sys::exit_now(125),
        Err(e) => Err((0, e)),
    }
}

fn wait_parent(rep: RawFd, sync: RawFd, expect: Option<u8>) {
    if let Err((_, e)) = wait_for(sync, expect) {
        fail(rep, Stage::WaitParent, 0, e);
    }
}

/// PDEATHSIG, then make sure the parent did not die before we asked: it holds the sync
/// pipe's write end until exec completes, so a hang-up means it is already gone.
fn die_with_parent(sync: RawFd) -> StepResult {
    plain(sys::prctl(
        libc::PR_SET_PDEATHSIG,
        libc::SIGKILL as libc::c_ulong,
    ))?;
    match sys::poll_one(sync, libc::POLLIN, 0) {
        Ok(ev) if ev & (libc::POLLHUP | libc::POLLERR) != 0 => sys::exit_now(125),
        Ok(_) => Ok(()),
        Err(e) => Err((0, e)),
    }
}

/// Step 0 of a zygote's child: send `msg` (prepared by the template: which spawn this is)
/// with a pidfd of this process (pid 1 in its new namespace) to the server on the
/// template's control socket, then close that socket. Best effort: a server that is gone
/// takes the child with it (PDEATHSIG, step 3).
fn announce(sock: RawFd, msg: &[u8]) {
    if let Ok(me) = sys::pidfd_open(1) {
        let _ = sys::send_with_fds(sock, msg, &[me]);
        sys::close(me);
    }
    sys::close(sock);
}

/// Step 5c: bring the loopback up and listen on 127.0.0.1:`port`, the socket above fd 10
/// (out of the way of `arrange_fds`' targets). Never returns on failure.
fn net_listener(p: &Prepared, rep: RawFd, port: u16) -> RawFd {
    let mut net = -1;
    step(p, rep, Stage::NetLoopback, || {
        let fd = plain(sys::loopback_up())
            .and_then(|_| sys::tcp_listen_loopback(port).map_err(|e| (0, e)))?;
        let high = sys::dup_cloexec_above(fd, 10).map_err(|e| (0, e));
        sys::close(fd);
        net = high?;
        Ok(())
    });
    net
}

/// Step 0: close our copies of the parent's pipe ends; a zygote's child announces itself.
fn take_over(p: &Prepared, fds: &ChildFds) {
    for fd in fds.parent_ends.into_iter().filter(|&fd| fd >= 0) {
        sys::close(fd);
    }
    if let Some((sock, msg)) = &p.announce {
        announce(*sock, msg);
    }
}

/// Step 1b: "0" to each job v1 directory's `tasks` file moves this thread, which is all of
/// this process, into it; then the fd is closed. Never returns on failure.
fn join_cgroups(p: &Prepared, fds: &ChildFds) {
    let rep = fds.report_w;
    inject(p, rep, Stage::CgroupJoin);
    for fd in fds.cgroup_join.into_iter().filter(|&fd| fd >= 0) {
        if let Err(e) = sys::write_all(fd, b"0") {
            fail(rep, Stage::CgroupJoin, 0, e);
        }
        sys::close(fd);
    }
}

/// The steps of the module doc, one line each; the comments say why each is where it is.
pub fn run(p: &Prepared, fds: &ChildFds) -> ! {
    let rep = fds.report_w;
    let sync = fds.sync_r;
    // 0. Only the parent holds its ends: its death is then EOF on the sync pipe. A zygote
    //    jail tells the server (its parent) of itself before anything else can go wrong.
    take_over(p, fds);
    // 1. Nothing runs unmapped: wait for the parent's "g" (maps written). The fault point
    //    is after the read: a child that failed before it would fail the parent's map write.
    wait_parent(rep, sync, None);
    inject(p, rep, Stage::WaitParent);
    // 1b. Into the job's v1 cgroups by our own hand: no grace-period wait, and nothing of
    //     ours runs outside them from here on.
    join_cgroups(p, fds);
    // 2. The jail identity.
    step(p, rep, Stage::SetGid, || plain(sys::setresgid(p.gid)));
    step(p, rep, Stage::SetUid, || plain(sys::setresuid(p.uid)));
    // 3. Die with the supervisor (credential changes reset PDEATHSIG, hence after 2).
    step(p, rep, Stage::ParentDeathSignal, || die_with_parent(sync));
    // 4. The root: the host inputs opened (before anything covers /tmp), private
    //    propagation, a tmpfs, the binds and files, pivot, detach.
    step(p, rep, Stage::MountOp, || {
        mount::open_inputs(&p.root).map_err(|(i, e)| (i as u32, e))
    });
    staged(p, rep, Stage::MountRoot, || mount::mount_root(&p.root));
    step(p, rep, Stage::MountOp, || {
        mount::apply_steps(&p.root).map_err(|(i, e)| (i as u32, e))
    });
    // 4b. A jail started before its job: only our own fds, then the parent writes the
    //     job's files.
    if p.late_dir.is_some() {
        wait_for_files(p, fds);
    }
    staged(p, rep, Stage::PivotRoot, || mount::enter_root(&p.root));
    step(p, rep, Stage::Chdir, || plain(sys::chdir(&p.cwd)));
    // 5. Identity of the host and the terminal.
    step(p, rep, Stage::Hostname, || {
        plain(sys::sethostname(&p.hostname))
    });
    step(p, rep, Stage::Setsid, || plain(sys::setsid()));
    // 5b. In every job cgroup (v1 since 1b; v2 by clone3, or by the parent before its "c"):
    //     nothing may run outside them. Then the cgroup namespace, while we still hold
    //     CAP_SYS_ADMIN in our userns. (A jail with late files had its "c" at 4b.)
    if p.late_dir.is_none() {
        wait_parent(rep, sync, Some(b'c'));
    }
    if fds.late_cgroup_ns {
        step(p, rep, Stage::CgroupNamespace, || {
            plain(sys::unshare(libc::CLONE_NEWCGROUP))
        });
    }
    // 5c. The allowlist's listening socket on the jail's own loopback.
    let net = p.net_port.map(|port| net_listener(p, rep, port));
    // 6. No privilege, ever again.
    step(p, rep, Stage::NoNewPrivs, || plain(sys::no_new_privs()));
    step(p, rep, Stage::DropCapabilities, || {
        plain(caps::drop_all(p.last_cap))
    });
    // 7. Landlock (needs no_new_privs; the paths are jail paths now).
    step(p, rep, Stage::Landlock, || match &p.landlock {
        Some(ll) => landlock::apply(ll).map_err(|(i, e)| (i.min(u32::MAX as usize >> 8) as u32, e)),
        None => Ok(()),
    });
    // 8. Only stdio (and the runner's pipes) survive exec; the report pipe is REPORT_FD now.
    step(p, rep, Stage::CloseFds, || plain(arrange_fds(fds, net)));
    let rep = REPORT_FD;
    // 9. Resource limits (after 8: RLIMIT_NOFILE would forbid the high fd numbers).
    step(p, rep, Stage::Rlimit, || {
        rlimit::apply(&p.rlimits).map_err(|(i, e)| (i as u32, e))
    });
    // 10. Signals as a fresh process has them (an ignored disposition survives execve).
    step(p, rep, Stage::SignalMask, || {
        sys::reset_signal_dispositions();
        plain(sys::sigprocmask_unblock_all())
    });
    // 11. Split: this process stays as the jail's init, the program becomes pid 2.
    let program = split(p, rep);
    init(p, rep, program)
}

/// Step 11. The kernel drops signals a pid namespace's init sends itself without a handler,
/// so a program run as pid 1 could not `kill -9 $$` or abort() itself, and would never reap
/// orphans. The program runs as pid 2 with normal signal semantics; init reaps every orphan
/// and, when the program ends, reports its wait status and exits, which makes the kernel
/// kill whatever else is left in the namespace.
///
/// Init holds agentjail's memory and the host environment agentjail was started with: it
/// must not be readable through /proc/1/{environ,mem,maps} by the program, which has the
/// same uid. Non-dumpable makes those need CAP_SYS_PTRACE, which nothing in the jail has.
/// (When launched by root the uid change already cleared the flag; launched unprivileged,
/// the uid does not change and it stays set.) Returns the program's pid in init.
fn split(p: &Prepared, rep: RawFd) -> libc::pid_t {
    inject(p, rep, Stage::Fork);
    if let Err(e) = sys::prctl(libc::PR_SET_DUMPABLE, 0) {
        fail(rep, Stage::Fork, 0, e);
    }
    // The child only makes raw syscalls on prepared data before execve. A zygote's program
    // does not exec: it goes on in this copy of the template, whose libc and interpreter
    // must see a normal fork. glibc's fork records the new thread id in the thread's
    // descriptor (raise(), pthread_kill() and the interpreter's thread state use it; the
    // raw clone3 that made init left the template's there), and the template is
    // single-threaded, so no lock its fork handlers take can be held by a lost thread.
    let forked = match p.entry {
        Some(_) => sys::fork(),
        None => sys::raw_fork(),
    };
    match forked {
        Ok(0) => payload(p, rep),
        Ok(pid) => pid,
        Err(e) => fail(rep, Stage::Fork, 0, e),
    }
}

/// pid 2: seccomp, last, then exec.
fn payload(p: &Prepared, rep: RawFd) -> ! {
    // The supervisor takes the seccomp listener out of this process with pidfd_getfd, which
    // an unprivileged supervisor may do only to a dumpable process. Nothing but init (which
    // cannot ptrace) shares the jail with us before exec, and exec replaces this memory.
    if let Err(e) = sys::prctl(libc::PR_SET_DUMPABLE, 1) {
        fail(rep, Stage::SeccompHandover, 0, e);
    }
    // 12. Seccomp, last. Hand the listener to the supervisor and wait for its ack, so the
    //     supervisor holds it before the program can make a forbidden call.
    inject(p, rep, Stage::Seccomp);
    match seccomp::install(&p.seccomp) {
        Ok(listener) => {
            let msg = report::encode(report::KIND_LISTENER, listener as u32, 0);
            if let Err(e) = sys::write_all(rep, &msg) {
                fail(rep, Stage::SeccompHandover, 0, e);
            }
            let mut ack = [0u8; 1];
            match sys::read(SYNC_FD, &mut ack) {
                Ok(1) => {}
                Ok(_) => sys::exit_now(125),
                Err(e) => fail(rep, Stage::SeccompHandover, 0, e),
            }
            sys::close(listener);
        }
        Err(e) => fail(rep, Stage::Seccomp, 0, e),
    }
    // 13. Exec. On success the report pipe closes (O_CLOEXEC) and the parent sees EOF.
    inject(p, rep, Stage::Exec);
    if let Some(entry) = p.entry {
        // A zygote's program: close what exec would have closed (report, sync, status),
        // so the parent sees EOF as at an exec, and continue in the template's interpreter.
        // Every step above applies to this process as to an exec'd one; what differs (the
        // memory is the template's, not a fresh image) is argued in
        // crates/agentjail-engine/src/zygote/mod.rs.
        if let Err(e) = sys::close_range_from(REPORT_FD as u32) {
            fail(rep, Stage::Exec, 0, e);
        }
        entry();
    }
    let e = sys::execve(&p.exe, &p.argv_ptrs, &p.envp_ptrs);
    fail(rep, Stage::Exec, 0, e)
}

/// pid 1: a strict filter of its own, then reap until the program is gone.
fn init(p: &Prepared, rep: RawFd, program: libc::pid_t) -> ! {
    if let Some((start, end)) = p.argv_area {
        // [start, end) is our argv string area, read from procfs in the parent (fork keeps
        // the addresses); nothing reads it after this point.
        sys::blank_own_memory(start, end);
    }
    inject(p, rep, Stage::InitFilter);
    if let Err(e) = seccomp::install_plain(&p.init_seccomp) {
        fail(rep, Stage::InitFilter, 0, e);
    }
    // Init holds nothing the program or the supervisor waits on: its copy of the report
    // pipe must close so the parent sees EOF at the program's exec, and stdio and the
    // runner's pipes must close so EOF on them means the program's side closed.
    for fd in [REPORT_FD, SYNC_FD, NET_FD, 0, 1, 2, JOB_FD, REPLY_FD] {
        sys::close(fd);
    }
    // Reap until no child is left. When the program ends, end everything else in the
    // namespace too (kill(-1) from a namespace's init reaches every process in it but
    // itself) and reap it here: the kernel charges a reaped child's CPU time and peak
    // memory to its reaper, so init's own rusage, which the supervisor reads when it reaps
    // init, covers the whole jail. Had init just exited, the kernel would have killed the
    // rest and discarded their accounting (a dying namespace reaps its orphans itself).
    // The supervisor ends a run it stops the same way: it kills the program, not init.
    //
    // Once everything is reaped, init reports the program's wait status and the kernel's
    // account of the jail (the sum of what wait4 returned for each reaped child: their CPU
    // time, and the largest peak RSS) in one 20-byte write, then exits. The supervisor can
    // answer from that report without waiting for init's own exit, whose tear-down of the
    // namespaces (the mount tree, the network namespace) takes most of a millisecond; init
    // is reaped off the job's critical path. The report is as trustworthy as the wait
    // status always was: the kernel's figures, relayed by agentjail's own init, which the
    // program cannot reach (non-dumpable, its own filter, the pipe closed at the program's
    // exec).
    let mut program_status = None;
    let mut report = InitReport::default();
    loop {
        match sys::wait_any() {
            Ok(r) => {
                report.add(&r);
                if r.pid == program {
                    program_status = Some(r.status);
                    let _ = sys::kill(-1, libc::SIGKILL);
                }
            }
            Err(libc::ECHILD) => break,
            Err(_) => {}
        }
    }
    if let Some(status) = program_status {
        report.status = status;
        let _ = sys::write_all(STATUS_FD, &report.encode());
    }
    sys::exit_now(0)
}
