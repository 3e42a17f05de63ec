//! The poll loop: its state between polls, the deadlines (wall, and CPU checked exactly
//! when it could first be crossed), the poll set, what each ready fd means in order of
//! precedence, a seccomp notification (the doorbell or a forbidden syscall), and the end:
//! ending the jail if it still runs, reaping it, draining what is left and reading the
//! kernel's account. Separate from the public types and entry points (`mod.rs`) and from
//! the session call's own steps (`session.rs`), which drive this same loop.

use super::cpu::jail_cpu_us;
use super::hold;
use super::output::{drain, Feed, CHUNK};
use super::{
    CallChannel, Capped, Delivery, Interrupt, Io, IsDone, ObservedOpens, OnForbidden, Outcome,
    Stop, END_GRACE, REPLY_CAP,
};
use crate::cgroup::JobCgroup;
use crate::child::InitReport;
use crate::plan::SuperviseLimits;
use crate::spawn::Spawned;
use crate::{seccomp, sys};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// Indices into the poll set, in the order `Loop::poll_set` builds it.
const P_PIDFD: usize = 0;
const P_STDOUT: usize = 1;
const P_STDERR: usize = 2;
const P_STDIN: usize = 3;
const P_LISTENER: usize = 4;
const P_SIGNAL: usize = 5;
const P_PASSTHROUGH: usize = 6;
const P_JOB: usize = 7;
const P_REPLY: usize = 8;
const P_STATUS: usize = 9;
const POLL_FDS: usize = 10;

/// The loop's state between polls.
pub(super) struct Loop<'a, 'io> {
    pub(super) sp: &'a Spawned,
    limits: &'a SuperviseLimits,
    pub(super) cg: Option<&'a JobCgroup>,
    interrupt: Option<Interrupt<'a>>,
    io: Io<'io>,
    pub(super) start: Instant,
    wall: Duration,
    pub(super) stdout: Capped,
    pub(super) stderr: Capped,
    scratch: Vec<u8>,
    stdin: Feed,
    pub(super) job: Feed,
    pub(super) replies: Capped,
    pub(super) reply_open: bool,
    out_open: bool,
    err_open: bool,
    pub(super) exited: bool,
    /// Init's final report (see child.rs, init): the jail is over, everything in it reaped;
    /// init itself may still be exiting.
    init_report: Option<InitReport>,
    status_open: bool,
    listener_live: bool,
    ncpu: u64,
    next_cpu_check: Instant,
    pub(super) cpu_base_us: u64,
    /// Session calls end when a line of the runner's reports is this call's `done` (the
    /// caller's test: the jail does not read the runner's protocol); single runs when the jail
    /// exits.
    pub(super) until_done: Option<&'a IsDone<'a>>,
    /// A session call's own channel (see [`CallChannel`]); None for single runs.
    pub(super) channel: Option<CallChannel>,
    pub(super) done: bool,
    /// Ended by agentjail because the jail is no longer wanted (not a stop).
    pub(super) closing: bool,
    pub(super) stop: Option<Stop>,
    /// Observe mode's refused syscalls (see [`Outcome::observed_syscalls`]).
    observed: Vec<String>,
    /// Observe mode's opens (see [`Outcome::observed_opens`]).
    opens: ObservedOpens,
}

impl<'a, 'io> Loop<'a, 'io> {
    pub(super) fn new(
        sp: &'a Spawned,
        (stdin, job): (Option<OwnedFd>, Option<OwnedFd>),
        limits: &'a SuperviseLimits,
        cg: Option<&'a JobCgroup>,
        interrupt: Option<Interrupt<'a>>,
        mut io: Io<'io>,
        delivery: Delivery,
    ) -> Self {
        let start = delivery.at;
        // One read never needs more than the larger cap allows plus one byte (see
        // `Capped::next_read_len`): with the default 4 KiB caps that is two pages, not the 16 a
        // full chunk would fault in on every launch.
        let need = limits
            .stdout_bytes
            .max(limits.stderr_bytes)
            .saturating_add(1);
        let scratch_len = usize::try_from(need).map_or(CHUNK, |n| n.clamp(4096, CHUNK));
        // The CPUs the jail may run on: our affinity mask, inherited by the jail (one
        // sched_getaffinity call). `available_parallelism` also read /proc/self/cgroup and the
        // cgroup CPU quota files on every launch, and could only return this number or a
        // smaller one, so the checks below come at the same time or earlier: never later.
        let ncpu = sys::affinity_cpus().max(1);
        let ours = [&sp.stdout, &sp.stderr]
            .into_iter()
            .chain(sp.reply.as_ref());
        for fd in ours.chain(stdin.as_ref()).chain(job.as_ref()) {
            let _ = sys::set_nonblocking(fd.as_raw_fd());
        }
        let stdin = Feed::new(
            stdin,
            io.stdin_bytes.take().unwrap_or_default(),
            io.stdin_passthrough,
        );
        let job = Feed::new(job, io.job_bytes.take().unwrap_or_default(), None);
        let cpu_base_us = delivery.cpu_base_us.unwrap_or_else(|| jail_cpu_us(sp, cg));
        // First check: the jail's CPU usage since `start` grows at most `ncpu` times faster
        // than wall time, so the limit cannot be crossed before start + limit/ncpu.
        let next_cpu_check = start
            .checked_add(Duration::from_micros(
                limits.cpu_time_ms.saturating_mul(1000) / ncpu,
            ))
            .unwrap_or(start);
        Loop {
            sp,
            limits,
            cg,
            interrupt,
            io,
            start,
            wall: Duration::from_millis(limits.wall_time_ms),
            stdout: Capped::new(limits.stdout_bytes),
            stderr: Capped::new(limits.stderr_bytes),
            scratch: vec![0u8; scratch_len],
            stdin,
            job,
            replies: Capped::new(limits.reply_bytes.max(REPLY_CAP)),
            reply_open: sp.reply.is_some(),
            out_open: true,
            err_open: true,
            exited: false,
            init_report: None,
            status_open: true,
            listener_live: true,
            ncpu,
            next_cpu_check,
            cpu_base_us,
            until_done: None,
            channel: None,
            done: false,
            closing: false,
            stop: None,
            observed: Vec::new(),
            opens: ObservedOpens::default(),
        }
    }

    /// Check the deadlines, poll, handle what is ready; until the jail exits, a limit or an
    /// interrupt stops it, or (session calls) the runner reports the call done.
    pub(super) fn run(&mut self) {
        while !self.exited && self.init_report.is_none() && self.stop.is_none() && !self.done {
            let Some(timeout) = self.check_deadlines() else {
                break;
            };
            let mut fds = self.poll_set();
            sys::ppoll(&mut fds, Some(timeout));
            self.handle(&fds);
        }
    }

    /// Enforce the wall and CPU limits; the time until the next deadline, or None when a
    /// limit was crossed (then `stop` says which).
    fn check_deadlines(&mut self) -> Option<Duration> {
        let now = Instant::now();
        let settle = self
            .channel
            .as_ref()
            .and_then(|c| c.settling.as_ref())
            .map(|(_, until)| *until);
        if settle.is_some_and(|until| now >= until) {
            // The runner did not report in time: the stop is set from `settling` by `call`.
            return None;
        }
        let elapsed = now - self.start;
        if elapsed >= self.wall {
            self.stop = Some(Stop::WallTimeout);
            return None;
        }
        // CPU: usage grows at most `ncpu` times faster than wall time, so the earliest the
        // limit can be crossed is remaining/ncpu from now; check exactly then.
        if now >= self.next_cpu_check {
            let us = jail_cpu_us(self.sp, self.cg).saturating_sub(self.cpu_base_us);
            let limit_us = self.limits.cpu_time_ms * 1000;
            if us > limit_us {
                self.stop = Some(Stop::CpuLimit);
                return None;
            }
            let remaining = Duration::from_micros((limit_us - us) / self.ncpu);
            self.next_cpu_check = now + remaining.max(Duration::from_millis(1));
        }
        let next = (self.wall - elapsed).min(self.next_cpu_check.saturating_duration_since(now));
        Some(settle.map_or(next, |until| next.min(until - now)))
    }

    /// The fds to wait on, at the `P_*` indices; -1 for those not wanted now.
    fn poll_set(&self) -> [libc::pollfd; POLL_FDS] {
        let pf = |fd: RawFd, events: libc::c_short| libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        let sp = self.sp;
        let open = |yes: bool, fd: &OwnedFd| if yes { fd.as_raw_fd() } else { -1 };
        let writable = |f: &Feed| match (&f.fd, f.wants_write()) {
            (Some(fd), true) => fd.as_raw_fd(),
            _ => -1,
        };
        let reply = match self.reply_fd() {
            Some(fd) if self.reply_open => fd,
            _ => -1,
        };
        let listener = match sp.listener.as_ref() {
            Some(l) if self.listener_live => l.as_raw_fd(),
            _ => -1,
        };
        [
            pf(sp.pidfd.as_raw_fd(), libc::POLLIN),
            pf(open(self.out_open, &sp.stdout), libc::POLLIN),
            pf(open(self.err_open, &sp.stderr), libc::POLLIN),
            pf(writable(&self.stdin), libc::POLLOUT),
            pf(listener, libc::POLLIN),
            pf(self.interrupt.map_or(-1, |i| i.fd()), libc::POLLIN),
            pf(self.stdin.passthrough_fd(), libc::POLLIN),
            pf(writable(&self.job), libc::POLLOUT),
            pf(reply, libc::POLLIN),
            pf(open(self.status_open, &sp.status), libc::POLLIN),
        ]
    }

    /// React to what ppoll reported, in order of precedence: a forbidden syscall and an
    /// interrupt end the run at once; output is read under the caps; stdin is fed; the
    /// pidfd says the jail exited.
    fn handle(&mut self, fds: &[libc::pollfd; POLL_FDS]) {
        let readable =
            |i: usize| fds[i].revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0;
        // POLLHUP without POLLIN on the listener: every task the filter was attached to has
        // exited (the kernel's seccomp_notify_poll reports HUP when the filter has no users),
        // and a filter only reaches new tasks by fork of a filtered one, so no notification
        // can ever arrive again. Stop polling it: the HUP is level-triggered, and polling it
        // made this loop spin (thousands of ppoll calls on the jail's own CPU) from the
        // program's exit until init's exit, slowing the very teardown it waits for.
        if fds[P_LISTENER].revents & (libc::POLLHUP | libc::POLLIN) == libc::POLLHUP {
            self.listener_live = false;
        }
        if fds[P_LISTENER].revents & libc::POLLIN != 0 && self.notification() {
            return;
        }
        if fds[P_SIGNAL].revents & libc::POLLIN != 0 {
            if let Some(sig) = self.interrupt.and_then(|i| i.signal()) {
                self.stop = Some(Stop::Interrupted { signal: sig });
                return;
            }
        }
        if readable(P_STDOUT) && self.read_output(true) {
            return;
        }
        if readable(P_STDERR) && self.read_output(false) {
            return;
        }
        if readable(P_PASSTHROUGH) {
            self.stdin.read_passthrough(fds[P_PASSTHROUGH].fd);
        }
        if fds[P_STDIN].revents != 0 {
            self.stdin.write_some();
        }
        self.stdin.close_when_done();
        if fds[P_JOB].revents != 0 {
            self.job.write_some();
        }
        self.job.close_when_done();
        if readable(P_REPLY) {
            self.read_replies();
        }
        if readable(P_STATUS) {
            self.read_init_report();
        }
        if fds[P_PIDFD].revents & libc::POLLIN != 0 {
            self.exited = true;
        }
    }

    /// Init's report, when init has written it (all of it: one atomic write), or EOF.
    fn read_init_report(&mut self) {
        let mut raw = [0u8; InitReport::LEN];
        match sys::read(self.sp.status.as_raw_fd(), &mut raw) {
            Ok(n) => {
                self.init_report = InitReport::decode(&raw[..n]);
                self.status_open = false;
            }
            Err(libc::EAGAIN | libc::EINTR) => {}
            Err(_) => self.status_open = false,
        }
    }

    /// A pending seccomp notification: the session runner's doorbell (answered, see
    /// [`CallChannel`]), or a syscall outside the allowlist. That one is never answered, so
    /// the call never runs; the run stops here (true), or, a workspace command's, once its
    /// runner has reported (false: see [`OnForbidden`]).
    fn notification(&mut self) -> bool {
        let Some(l) = self.sp.listener.as_ref() else {
            return false;
        };
        let Ok(n) = seccomp::receive_notification(l.as_fd()) else {
            return false;
        };
        if u32::try_from(n.nr).is_ok_and(|nr| self.limits.observe_opens.contains(&nr)) {
            // Observe mode: an allowed open, shown to be seen; it runs as allowed.
            let want = !self.opens.truncated;
            if let Some(o) = seccomp::observe_open(l.as_fd(), &n, want) {
                self.opens.note(o);
            }
            return false;
        }
        let runner = self.channel.as_ref().map(|c| c.runner);
        if runner.is_some_and(|r| seccomp::is_doorbell(&n, r)) && self.doorbell(n) {
            return false;
        }
        let nr = n.nr;
        let name = seccomp::syscall_name(nr as i64)
            .map(str::to_string)
            .unwrap_or_else(|| format!("syscall_{nr}"));
        if self.limits.observe_syscalls && self.channel.is_none() {
            // Observe mode (a single run only): refused with ENOSYS, never run, noted.
            seccomp::answer_errno(l.as_fd(), &n, libc::ENOSYS);
            if !self.observed.contains(&name) && self.observed.len() < super::OBSERVED_CAP {
                self.observed.push(name);
            }
            return false;
        }
        let stop = Stop::ForbiddenSyscall { nr, name };
        if let Some(c) = self.channel.as_mut() {
            let by_command = i64::from(n.pid) != i64::from(c.runner);
            match (c.on_forbidden, &c.settling) {
                // Another command process's syscall while the runner reports: it waits
                // unanswered, and the runner's kill(-1) ends it.
                (_, Some(_)) if by_command => return false,
                (OnForbidden::RunnerReportsFirst(grace), None) if by_command => {
                    // Every other process of the jail stopped first (hold.rs), so none can
                    // stop the runner again, or run on, while it reports; then SIGCONT, for
                    // a command may have stopped the runner (same uid) before.
                    hold::stop_all_but(self.sp.pid, c.runner, n.pid as i32, Instant::now() + grace);
                    let told = self.sp.program_pidfd.as_ref().is_some_and(|p| {
                        let _ = sys::pidfd_send_signal(p.as_raw_fd(), libc::SIGCONT);
                        sys::pidfd_send_signal(p.as_raw_fd(), libc::SIGUSR1).is_ok()
                    });
                    if told {
                        c.settling = Some((stop, Instant::now() + grace));
                        return false;
                    }
                }
                _ => {}
            }
            if let Some((first, _)) = c.settling.take() {
                self.stop = Some(first);
                return true;
            }
        }
        self.stop = Some(stop);
        true
    }

    /// Where the runner's reports come from: this call's socket in a session call, the
    /// reply pipe in a single run.
    pub(super) fn reply_fd(&self) -> Option<RawFd> {
        match &self.channel {
            Some(c) => c.socket.as_ref().map(|s| s.as_raw_fd()),
            None => self.sp.reply.as_ref().map(|s| s.as_raw_fd()),
        }
    }

    /// One read of the runner's reply pipe. Past its cap replies are dropped (never a stop:
    /// they are informational).
    pub(super) fn read_replies(&mut self) {
        let Some(fd) = self.reply_fd() else {
            self.reply_open = false;
            return;
        };
        let before = self.replies.data.len();
        let (eof, _) = drain(fd, &mut self.replies, &mut None, &mut self.scratch);
        self.reply_open &= !eof;
        if let Some(is_done) = self.until_done.filter(|_| !self.done) {
            // Look from the start of the last line that was incomplete before this read.
            let from = self.replies.data[..before]
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |i| i + 1);
            self.done = self.replies.data[from..]
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .any(is_done);
        }
    }

    /// One read of stdout (or stderr); true when it crossed the cap (the run stops).
    pub(super) fn read_output(&mut self, stdout: bool) -> bool {
        let (fd, buf, sink, open, cap_stop) = if stdout {
            let fd = self.sp.stdout.as_raw_fd();
            (
                fd,
                &mut self.stdout,
                &mut self.io.stdout_sink,
                &mut self.out_open,
                Stop::StdoutCap,
            )
        } else {
            let fd = self.sp.stderr.as_raw_fd();
            (
                fd,
                &mut self.stderr,
                &mut self.io.stderr_sink,
                &mut self.err_open,
                Stop::StderrCap,
            )
        };
        let (eof, over) = drain(fd, buf, sink, &mut self.scratch);
        *open &= !eof;
        if over {
            // While draining after another stop, that stop stays the reason.
            self.stop.get_or_insert(cap_stop);
        }
        over
    }

    /// End the jail if it still runs, reap it, drain the pipes and read the kernel's account.
    /// `may_leave_init`: when init reported the jail over on its own, leave init to finish
    /// exiting (the returned flag says so) instead of waiting for it here.
    pub(super) fn finish(mut self, may_leave_init: bool) -> (Outcome, bool) {
        let mut usage_partial = false;
        let init_left = may_leave_init
            && self.init_report.is_some()
            && self.stop.is_none()
            && !self.closing
            && !self.exited;
        if !init_left && (self.stop.is_some() || !self.exited || self.closing) {
            usage_partial = !self.end_jail();
        }
        self.stdin.fd = None;
        self.job.fd = None;
        let waited = if init_left {
            None
        } else {
            sys::waitid_pidfd(self.sp.pidfd.as_raw_fd(), libc::WEXITED)
                .ok()
                .flatten()
        };
        let wall_elapsed = self.start.elapsed();
        self.drain_rest();
        while self.reply_open {
            self.read_replies();
        }
        if self.init_report.is_none() && self.status_open {
            // Init is dead: its report is in the pipe, or it never wrote one (EOF).
            self.read_init_report();
        }
        let (exit_code, signal) = self.exit_status(waited);
        let stats = self.cg.map(|c| c.stats()).unwrap_or_default();
        // The kernel's account of everything init reaped: from init's report, else from init's
        // own rusage when it was reaped here without one (which covers the same children, and
        // init's own setup time besides; the report is preferred because the base a delivery
        // subtracts leaves init's time out, see `jail_cpu_us`).
        let (rusage_cpu_us, rusage_rss) = match (self.init_report, waited) {
            (Some(r), _) => (r.cpu_us, r.max_rss_bytes),
            (None, Some(w)) => (w.cpu_us, w.max_rss_bytes),
            (None, None) => (0, 0),
        };
        let cpu_us = stats
            .cpu_usage_us
            .unwrap_or(rusage_cpu_us)
            .saturating_sub(self.cpu_base_us);
        if self.stop.is_none()
            && cpu_us > self.limits.cpu_time_ms * 1000
            && signal == Some(libc::SIGXCPU)
        {
            self.stop = Some(Stop::CpuLimit);
        }
        let outcome = Outcome {
            exit_code,
            signal,
            stop: self.stop,
            wall_ms: wall_elapsed.as_millis() as u64,
            wall_us: wall_elapsed.as_micros() as u64,
            cpu_ms: Some(cpu_us / 1000),
            peak_memory_bytes: stats.memory_peak_bytes.or(Some(rusage_rss)),
            oom_kills: stats.oom_kills,
            pids_limit_hits: stats.pids_limit_hits,
            stdout: self.stdout,
            stderr: self.stderr,
            replies: self.replies,
            usage_partial: usage_partial && stats.cpu_usage_us.is_none(),
            observed_syscalls: self.observed,
            observed_opens: self.limits.observe_syscalls.then_some(self.opens),
        };
        (outcome, init_left)
    }

    /// End a jail that is still running; true when its init ended it (the kernel's account
    /// of the run is then whole).
    ///
    /// Kill the program, and init kills and reaps everything else in the namespace (see
    /// child.rs, init): the reaped processes' CPU time and memory peak are charged to init,
    /// whose rusage the supervisor reads. Killing init itself would make the kernel reap
    /// the rest without accounting. Only when init has not ended within [`END_GRACE`] (a
    /// process it cannot reap) is init killed, which kills the whole pid namespace:
    /// stopped, signal-ignoring and double-forked processes included. The cgroup kill is a
    /// second, independent net.
    fn end_jail(&self) -> bool {
        let init = self.sp.pidfd.as_raw_fd();
        if let Some(program) = &self.sp.program_pidfd {
            let _ = sys::pidfd_send_signal(program.as_raw_fd(), libc::SIGKILL);
            let grace = END_GRACE.as_millis() as i32;
            if sys::poll_one(init, libc::POLLIN, grace).is_ok_and(|r| r & libc::POLLIN != 0) {
                return true;
            }
        }
        let _ = sys::pidfd_send_signal(init, libc::SIGKILL);
        if let Some(c) = self.cg {
            c.kill_all();
        }
        false
    }

    /// Every writer is gone now: what is left in the pipes is finite. Drain it (still capped),
    /// whatever ended the run: what a program printed right before a forbidden syscall or a
    /// timeout is evidence. Only a cap stop has nothing more worth reading.
    fn drain_rest(&mut self) {
        // A jail ended because it is no longer wanted has nothing more worth reading either.
        if self.closing || matches!(self.stop, Some(Stop::StdoutCap | Stop::StderrCap)) {
            return;
        }
        for stdout in [true, false] {
            let fd = if stdout {
                self.sp.stdout.as_raw_fd()
            } else {
                self.sp.stderr.as_raw_fd()
            };
            loop {
                if self.read_output(stdout) {
                    break;
                }
                let open = if stdout { self.out_open } else { self.err_open };
                let more = sys::poll_one(fd, libc::POLLIN, 0)
                    .map(|r| r != 0)
                    .unwrap_or(false);
                if !open || !more {
                    break;
                }
            }
        }
    }

    /// The program's own wait status, from init; without it (init was killed, which kills
    /// the program too), init's.
    fn exit_status(&self, waited: Option<sys::Waited>) -> (Option<i32>, Option<i32>) {
        let program = self.init_report.map(|r| r.status);
        match (program, waited) {
            (Some(s), _) if libc::WIFEXITED(s) => (Some(libc::WEXITSTATUS(s)), None),
            (Some(s), _) if libc::WIFSIGNALED(s) => (None, Some(libc::WTERMSIG(s))),
            (_, Some(w)) if w.code == libc::CLD_EXITED => (Some(w.status), None),
            (_, Some(w)) => (None, Some(w.status)),
            _ => (None, None),
        }
    }
}
