//! A session call: the frame handed to the runner that waits in the session doorbell (or
//! on the job pipe where there is no seccomp listener), the ring answered with a socket made
//! for this call alone, supervision until the caller's test says a report is this call's
//! `done`, and the call's account. Separate from the single run's loop (`poll.rs`) because
//! it is the one protocol between the supervisor and a runner that outlives a call: which
//! ring is whose, and when one is out of turn, is decided here.

use super::cpu::jail_cpu_us;
use super::output::Feed;
use super::poll::Loop;
use super::{
    CallChannel, CallEnd, CallOutcome, Delivery, Interrupt, Io, IsDone, OnForbidden, Rung, Sinks,
};
use crate::cgroup::JobCgroup;
use crate::plan::SuperviseLimits;
use crate::spawn::Spawned;
use crate::{seccomp, sys};
use std::os::fd::{AsFd, AsRawFd};
use std::time::Instant;

/// Send one job frame to a session's runner and supervise until a line it reports passes
/// `is_done` (the caller's test: its `done` for this frame's nonce; any other `done` is not
/// this call's answer), under the call's limits. `sinks`: where the call's stdout and stderr
/// go besides its capped buffers, as they are read (what the buffers keep, no more: see
/// [`Io`]; a streaming caller's). `rung`: the runner's ring kept from the last call (None: it is still to come,
/// as before the first call). A call that breaks a limit ends the session: the jail is
/// killed and reaped (and the returned `Outcome` says why).
pub fn call(
    sp: &Spawned,
    frame: Vec<u8>,
    is_done: &IsDone<'_>,
    (rung, on_forbidden): (Option<Rung>, OnForbidden),
    limits: &SuperviseLimits,
    cg: Option<&JobCgroup>,
    (interrupt, sinks): (Option<Interrupt<'_>>, Sinks<'_>),
) -> CallEnd {
    let delivery = Delivery {
        at: Instant::now(),
        cpu_base_us: Some(jail_cpu_us(sp, cg)),
    };
    // Without a seccomp listener (a policy with seccomp best_effort on a host that cannot
    // install it) there is no doorbell: the frame goes on the jail's job pipe and the reports
    // come on its reply pipe, as in a single run (the record shows seccomp not enforced).
    let runner = sp.program_pid.filter(|_| sp.listener.is_some());
    let (job, job_bytes, frame) = match runner {
        Some(_) => (None, None, Some(frame)),
        None => (
            sp.job.as_ref().and_then(|fd| fd.try_clone().ok()),
            Some(frame),
            None,
        ),
    };
    let io = Io {
        stdin_bytes: None,
        job_bytes,
        stdin_passthrough: None,
        stdout_sink: sinks.stdout,
        stderr_sink: sinks.stderr,
    };
    let mut l = Loop::new(sp, (None, job), limits, cg, interrupt, io, delivery);
    l.until_done = Some(is_done);
    if let Some(runner) = runner {
        l.reply_open = false;
        l.channel = Some(CallChannel {
            runner,
            frame,
            socket: None,
            next: None,
            on_forbidden,
            settling: None,
        });
        if let Some(Rung(n)) = rung {
            l.deliver(n);
        }
    }
    l.run();
    // A command's forbidden syscall is the call's stop however the runner's report went
    // (it came, the deadline passed, or another limit struck meanwhile).
    if let Some((stop, _)) = l.channel.as_mut().and_then(|c| c.settling.take()) {
        l.stop = Some(stop);
    }
    if l.done && l.stop.is_none() && !l.exited {
        l.drain_now();
        if l.stop.is_none() {
            return CallEnd::Done(l.end_call());
        }
    }
    CallEnd::Ended(l.finish(false).0)
}

impl Loop<'_, '_> {
    /// The runner rang during a call: before the frame went out, that is its wait for this
    /// call (deliver it); after, the runner has reported this call done and waits for the
    /// next (its `done` is in this call's socket already: it wrote it before ringing), so the
    /// ring is kept for the next call. A ring with no `done` before it, or a second one, is
    /// out of turn (false: a forbidden syscall).
    pub(super) fn doorbell(&mut self, n: sys::Notification) -> bool {
        let Some(c) = self.channel.as_ref() else {
            return false;
        };
        if c.frame.is_some() {
            self.deliver(n);
            return true;
        }
        if c.next.is_some() {
            return false;
        }
        while !self.done && self.reply_open {
            let Some(fd) = self.reply_fd() else { break };
            if !sys::poll_one(fd, libc::POLLIN, 0).is_ok_and(|r| r != 0) {
                break;
            }
            self.read_replies();
        }
        if !self.done {
            return false;
        }
        if let Some(c) = self.channel.as_mut() {
            c.next = Some(Rung(n));
        }
        true
    }

    /// Answer the runner's ring with this call's socket and start feeding the frame into it.
    /// When the socket cannot be made or installed, the ring fails with that errno: the
    /// runner says so on stderr and exits, and the call ends with the jail.
    fn deliver(&mut self, n: sys::Notification) {
        let (Some(l), Some(c)) = (self.sp.listener.as_ref(), self.channel.as_mut()) else {
            return;
        };
        let frame = c.frame.take().unwrap_or_default();
        let installed = sys::socketpair_stream().and_then(|(ours, theirs)| {
            seccomp::answer_doorbell(l.as_fd(), &n, theirs.as_fd())?;
            Ok(ours)
        });
        match installed {
            Ok(ours) => {
                let _ = sys::set_nonblocking(ours.as_raw_fd());
                self.job = Feed::new(ours.try_clone().ok(), frame, None);
                c.socket = Some(ours);
                self.reply_open = true;
            }
            Err(e) => seccomp::refuse_doorbell(l.as_fd(), &n, e),
        }
    }
    /// Read what the program printed that is in the pipes now (a session call is done, but
    /// its output may still be queued); under the caps.
    fn drain_now(&mut self) {
        for stdout in [true, false] {
            let fd = if stdout {
                self.sp.stdout.as_raw_fd()
            } else {
                self.sp.stderr.as_raw_fd()
            };
            while sys::poll_one(fd, libc::POLLIN, 0).is_ok_and(|r| r & libc::POLLIN != 0) {
                if self.read_output(stdout) {
                    break;
                }
            }
        }
    }

    /// A session call that the runner reported done: what it printed and what it cost; the
    /// jail keeps running.
    fn end_call(self) -> CallOutcome {
        let total = jail_cpu_us(self.sp, self.cg);
        CallOutcome {
            wall_us: self.start.elapsed().as_micros() as u64,
            cpu_us: total.saturating_sub(self.cpu_base_us),
            stdout: self.stdout,
            stderr: self.stderr,
            replies: self.replies,
            rung: self.channel.and_then(|c| c.next),
        }
    }
}
