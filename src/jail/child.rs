//! The child's steps, in order. The order is the security argument:
//!
//! 1. wait until the parent has written our uid/gid maps — nothing runs unmapped (the parent
//!    puts us in the job cgroup meanwhile: see 5b);
//! 2. become the jail uid/gid (setgroups is already "deny");
//! 3. die with the supervisor (PDEATHSIG is reset by credential changes, hence after 2),
//!    then check the supervisor did not die before we asked;
//! 4. build the root on a tmpfs, pivot into it, detach the host's root: from here no path
//!    leads to a host file that was not bound in read-only;
//! 5. hostname, new session (no controlling terminal);
//!
//!    5b. wait until the parent has put us in the job cgroup, then (cgroup v1) unshare the
//!    cgroup namespace so its root is the job cgroup. A v1 attach waits for an RCU grace
//!    period in the kernel (1-15 ms here); steps 2-5 run meanwhile. They are agentjail's
//!    own work on prepared data: nothing of the program exists before the fork in 11;
//! 6. no_new_privs, then drop every capability (bounding, ambient, effective, permitted,
//!    inheritable): after this the process can never regain privilege, not even via exec;
//! 7. landlock (needs no_new_privs; paths are now jail paths);
//! 8. only fds 0, 1, 2 survive (plus our close-on-exec report pipes);
//! 9. rlimits (after the fd shuffle: RLIMIT_NOFILE would forbid the high fd numbers);
//! 10. default signal dispositions and an empty mask (Rust ignores SIGPIPE; an ignored
//!     disposition would survive execve);
//! 11. fork: this process stays as the jail's init (pid 1, its own strict seccomp filter,
//!     reaps orphans, reports the program's wait status); the program becomes pid 2;
//! 12. in pid 2, seccomp, last: every syscall above is one the jailed program may not make,
//!     so the filter cannot be installed earlier. The listener fd is handed to the
//!     supervisor and closed before exec;
//! 13. execve with the prepared, clean environment.
//!
//! Nothing here allocates; every failure is reported as (stage, errno) and ends in _exit.

use super::prepared::Prepared;
use super::report::{self, Stage};
use super::spawn::ChildFds;
use super::{caps, landlock, mount, rlimit, seccomp, sys};
use std::os::fd::RawFd;

const REPORT_FD: RawFd = 3;
const SYNC_FD: RawFd = 4;
const STATUS_FD: RawFd = 5;

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

/// Move the fds the child keeps to fixed numbers: 0-2 stdio, 3 report, 4 sync, 5 status
/// (all but stdio close-on-exec); close the rest.
fn arrange_fds(fds: &ChildFds) -> Result<(), i32> {
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
    sys::dup2(i, 0)?;
    sys::dup2(o, 1)?;
    sys::dup2(e, 2)?;
    // These three close at execve.
    sys::dup3_cloexec(r, REPORT_FD)?;
    sys::dup3_cloexec(s, SYNC_FD)?;
    sys::dup3_cloexec(st, STATUS_FD)?;
    sys::close_range_from(6)
}

pub fn run(p: &Prepared, fds: &ChildFds) -> ! {
    let rep = fds.report_w;

    // 1. Wait for the parent: maps written. EOF means it died.
    let mut go = [0u8; 1];
    match sys::read(fds.sync_r, &mut go) {
        Ok(1) => {}
        Ok(_) => sys::exit_now(125),
        Err(e) => fail(rep, Stage::WaitParent, 0, e),
    }
    inject(p, rep, Stage::WaitParent);

    // 2. The jail identity.
    inject(p, rep, Stage::SetGid);
    if let Err(e) = sys::setresgid(p.gid) {
        fail(rep, Stage::SetGid, 0, e);
    }
    inject(p, rep, Stage::SetUid);
    if let Err(e) = sys::setresuid(p.uid) {
        fail(rep, Stage::SetUid, 0, e);
    }

    // 3. Die with the supervisor. The parent holds the sync pipe's write end until exec
    //    completes, so a hang-up here means it is already gone.
    inject(p, rep, Stage::ParentDeathSignal);
    if let Err(e) = sys::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) {
        fail(rep, Stage::ParentDeathSignal, 0, e);
    }
    match sys::poll_one(fds.sync_r, libc::POLLIN, 0) {
        Ok(ev) if ev & (libc::POLLHUP | libc::POLLERR) != 0 => sys::exit_now(125),
        Ok(_) => {}
        Err(e) => fail(rep, Stage::ParentDeathSignal, 0, e),
    }

    // 4. The root.
    inject(p, rep, Stage::MountRoot);
    if let Err((stage, e)) = mount::mount_root(&p.root) {
        fail(rep, stage, 0, e);
    }
    inject(p, rep, Stage::MountOp);
    if let Err((i, e)) = mount::apply_steps(&p.root) {
        fail(rep, Stage::MountOp, i as u32, e);
    }
    inject(p, rep, Stage::PivotRoot);
    if let Err((stage, e)) = mount::enter_root(&p.root) {
        fail(rep, stage, 0, e);
    }
    inject(p, rep, Stage::Chdir);
    if let Err(e) = sys::chdir(&p.cwd) {
        fail(rep, Stage::Chdir, 0, e);
    }

    // 5. Identity of the host and the terminal.
    inject(p, rep, Stage::Hostname);
    if let Err(e) = sys::sethostname(&p.hostname) {
        fail(rep, Stage::Hostname, 0, e);
    }
    inject(p, rep, Stage::Setsid);
    if let Err(e) = sys::setsid() {
        fail(rep, Stage::Setsid, 0, e);
    }

    // 5b. The job cgroup. The parent sends "c" once we are attached (at once with cgroup v2's
    //     CLONE_INTO_CGROUP). EOF or any other byte means the attach failed or the parent
    //     died: nothing may run outside the cgroup, so exit. Then the cgroup namespace, while
    //     we still hold CAP_SYS_ADMIN in our user namespace.
    let mut joined = [0u8; 1];
    match sys::read(fds.sync_r, &mut joined) {
        Ok(1) if joined[0] == b'c' => {}
        Ok(_) => sys::exit_now(125),
        Err(e) => fail(rep, Stage::WaitParent, 0, e),
    }
    if fds.late_cgroup_ns {
        inject(p, rep, Stage::CgroupNamespace);
        // We still hold CAP_SYS_ADMIN in our new user namespace.
        if let Err(e) = sys::unshare(libc::CLONE_NEWCGROUP) {
            fail(rep, Stage::CgroupNamespace, 0, e);
        }
    }

    // 6. No privilege, ever again.
    inject(p, rep, Stage::NoNewPrivs);
    if let Err(e) = sys::prctl(libc::PR_SET_NO_NEW_PRIVS, 1) {
        fail(rep, Stage::NoNewPrivs, 0, e);
    }
    inject(p, rep, Stage::DropCapabilities);
    if let Err(e) = caps::drop_all(p.last_cap) {
        fail(rep, Stage::DropCapabilities, 0, e);
    }

    // 7. Landlock.
    inject(p, rep, Stage::Landlock);
    if let Some(ll) = &p.landlock {
        if let Err((i, e)) = landlock::apply(ll) {
            fail(
                rep,
                Stage::Landlock,
                i.min(u32::MAX as usize >> 8) as u32,
                e,
            );
        }
    }

    // 8. Only stdio survives exec.
    inject(p, rep, Stage::CloseFds);
    if let Err(e) = arrange_fds(fds) {
        fail(rep, Stage::CloseFds, 0, e);
    }
    let rep = REPORT_FD;

    // 9. Resource limits.
    inject(p, rep, Stage::Rlimit);
    if let Err((i, e)) = rlimit::apply(&p.rlimits) {
        fail(rep, Stage::Rlimit, i as u32, e);
    }

    // 10. Signals as a fresh process has them.
    inject(p, rep, Stage::SignalMask);
    sys::reset_signal_dispositions();
    if let Err(e) = sys::sigprocmask_unblock_all() {
        fail(rep, Stage::SignalMask, 0, e);
    }

    // 11. Split in two. This process stays as the jail's init (pid 1): the kernel drops
    //     signals a pid namespace's init sends itself without a handler, so a program run
    //     as pid 1 could not `kill -9 $$` or abort() itself, and would never reap orphans.
    //     The program runs as pid 2 with normal signal semantics; init reaps every orphan
    //     and, when the program ends, reports its wait status and exits, which makes the
    //     kernel kill whatever else is left in the namespace.
    //     Init holds agentjail's memory and the host environment agentjail was started
    //     with: it must not be readable through /proc/1/{environ,mem,maps} by the program,
    //     which has the same uid. Non-dumpable makes those need CAP_SYS_PTRACE, which
    //     nothing in the jail has. (When launched by root the uid change already cleared
    //     the flag; launched unprivileged, the uid does not change and it stays set.)
    inject(p, rep, Stage::Fork);
    if let Err(e) = sys::prctl(libc::PR_SET_DUMPABLE, 0) {
        fail(rep, Stage::Fork, 0, e);
    }
    // The child only makes raw syscalls on prepared data before execve.
    let pid = match sys::fork() {
        Ok(pid) => pid,
        Err(e) => fail(rep, Stage::Fork, 0, e),
    };
    if pid == 0 {
        payload(p, rep);
    }
    init(p, rep, pid)
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
    // pipe must close so the parent sees EOF at the program's exec, and stdio must close so
    // EOF on the program's pipes means the program's side closed.
    for fd in [REPORT_FD, SYNC_FD, 0, 1, 2] {
        sys::close(fd);
    }
    loop {
        match sys::wait_any() {
            Ok((pid, status)) if pid == program => {
                let _ = sys::write_all(STATUS_FD, &status.to_ne_bytes());
                sys::exit_now(0);
            }
            Err(libc::ECHILD) => sys::exit_now(0),
            _ => {}
        }
    }
}
