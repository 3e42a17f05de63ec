//! The supervisor: one poll loop over the jail's pidfd, its pipes, the seccomp listener,
//! a signalfd for SIGTERM/SIGINT/SIGHUP, and the deadlines.
//!
//! Waiting never sleeps on a coarse tick: the loop blocks in ppoll(2) with a nanosecond
//! timeout computed from the next deadline, and wakes the moment the jail exits (pidfd),
//! writes (pipes) or makes a forbidden syscall (listener). Caps are enforced while
//! streaming: each read asks for at most one byte more than still fits.
//!
//! [`supervise`] is the loop as a list of steps: check the deadlines, poll, handle what is
//! ready; then [`Loop::finish`] ends the jail (if it is still running), reaps it, drains
//! what is left in the pipes and reads the kernel's account of the run.
//!
//! This file holds the public types and the single run's entry points; the loop itself is
//! `poll.rs`, a session call's steps `session.rs`, the pipes' reads and feeds `output.rs`,
//! the jail's CPU time `cpu.rs`.

pub mod capped;
mod cpu;
pub mod hold;
mod output;
mod poll;
mod session;

use crate::cgroup::JobCgroup;
use crate::plan::SuperviseLimits;
use crate::spawn::Spawned;
use crate::sys;
pub use capped::Capped;
pub use cpu::jail_cpu_us;
use poll::Loop;
pub use session::call;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    WallTimeout,
    CpuLimit,
    StdoutCap,
    StderrCap,
    ForbiddenSyscall { nr: i32, name: String },
    Interrupted { signal: i32 },
}

/// Where stdin comes from and where output goes besides the capped buffers.
pub struct Io<'a> {
    /// Bytes to feed on stdin, then EOF.
    pub stdin_bytes: Option<Vec<u8>>,
    /// Bytes to write on the runner's job pipe, then EOF (the job frame; runner jails only).
    pub job_bytes: Option<Vec<u8>>,
    /// Copy this fd (agentjail's own stdin) to the jail's stdin until EOF.
    pub stdin_passthrough: Option<RawFd>,
    /// Stream stdout/stderr here too (exec mode, a streaming job), within the caps: exactly
    /// the bytes the capped buffer keeps, as each read brings them. On the supervisor's
    /// thread: a sink must not block on anyone (the jail's limits run on this thread).
    pub stdout_sink: Option<&'a mut dyn Write>,
    pub stderr_sink: Option<&'a mut dyn Write>,
}

/// Where a session call's stdout and stderr go besides its capped buffers (None: nowhere).
/// A sink gets exactly the bytes the buffer keeps, as each read brings them (never a byte
/// past the cap), on the supervisor's thread: it must not block (a streaming front end
/// queues them; it never waits on its client here).
#[derive(Default)]
pub struct Sinks<'a> {
    pub stdout: Option<&'a mut dyn Write>,
    pub stderr: Option<&'a mut dyn Write>,
}

/// When the work was handed to the jail, and the jail's CPU time by then: both limits count
/// from here, and the record's CPU time is what the jail used after it. A warm jail's
/// interpreter start and preloads are not the job's; neither is a cold jail's own setup
/// (its mounts, landlock and seccomp, done in the job's cgroup before the program's exec).
///
/// Why a cold launch reads its base too: the wall clock starts when the handshake is done,
/// but the cgroup counts from the clone. Counting CPU from the clone let a single-threaded
/// loop reach the CPU limit a few ms before the equal wall limit, so the seed's infinite
/// loop was sometimes reported as `code_cpu_limit` instead of `code_timeout`. Counted from
/// the same instant, one thread can never use more CPU than the wall time that has passed,
/// and a CPU verdict always means the program really ran on more than one CPU at once or
/// outlasted a CPU limit lower than the wall limit.
#[derive(Debug, Clone, Copy)]
pub struct Delivery {
    pub at: Instant,
    /// The jail's CPU time at `at`; None: read it as supervision starts (a cold launch,
    /// whose program is still stopped before its exec until then).
    pub cpu_base_us: Option<u64>,
}

impl Delivery {
    /// A cold launch, delivered now.
    pub fn now() -> Delivery {
        Delivery {
            at: Instant::now(),
            cpu_base_us: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub stop: Option<Stop>,
    pub wall_ms: u64,
    pub wall_us: u64,
    pub cpu_ms: Option<u64>,
    pub peak_memory_bytes: Option<u64>,
    pub oom_kills: u64,
    pub pids_limit_hits: u64,
    pub stdout: Capped,
    pub stderr: Capped,
    /// What the runner reported on its reply pipe (informational: the program could write
    /// there too; no verdict depends on it).
    pub replies: Capped,
    /// init did not end the namespace within [`END_GRACE`] after the program was killed, so
    /// agentjail killed init: processes init had not reaped are missing from `cpu_ms` and
    /// `peak_memory_bytes` when no cgroup counted them.
    pub usage_partial: bool,
    /// Syscalls outside the allowlist that were refused with an errno instead of stopping
    /// the run ([`SuperviseLimits::observe_syscalls`]), by name, each once, in the order
    /// first seen; at most [`OBSERVED_CAP`]. Empty outside observe mode.
    pub observed_syscalls: Vec<String>,
    /// Observe mode only (None in every other run): the paths the program opened through
    /// the open family the allowlist allows ([`SuperviseLimits::observe_opens`]).
    pub observed_opens: Option<ObservedOpens>,
}

/// Most distinct syscall names an observed run notes (the table has ~460).
pub const OBSERVED_CAP: usize = 512;

/// Most distinct paths an observed run notes: a program that opens more cannot grow the
/// supervisor's memory (at most this many paths of at most PATH_MAX bytes).
pub const OPENS_CAP: usize = 256;

/// The paths an observed run opened, each once, in the order first seen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObservedOpens {
    pub opens: Vec<crate::seccomp::ObservedOpen>,
    /// A distinct path past [`OPENS_CAP`] was opened (and not noted); no later path is read.
    pub truncated: bool,
}

impl ObservedOpens {
    /// Note `o` unless its path is already noted; past the cap, only that there was more.
    pub fn note(&mut self, o: crate::seccomp::ObservedOpen) {
        if self.opens.iter().any(|x| x.path == o.path) {
            return;
        }
        if self.opens.len() >= OPENS_CAP {
            self.truncated = true;
            return;
        }
        self.opens.push(o);
    }
}

/// Most a runner may report per run beside its rich results (the engine's
/// `SuperviseLimits::reply_bytes` adds those); the rest is dropped.
pub const REPLY_CAP: u64 = 64 * 1024;

/// How long the supervisor waits, after killing the program, for the jail's init to end
/// and reap the rest of the namespace (see child.rs, init) before it kills init itself.
pub const END_GRACE: Duration = Duration::from_millis(250);

/// What ends a run early from agentjail's side: SIGTERM, SIGINT or SIGHUP on agentjail's
/// signalfd (the CLI), or a server's shutdown pipe, readable once the server stops its jobs
/// (every job's supervisor sees it; nothing reads it).
#[derive(Debug, Clone, Copy)]
pub enum Interrupt<'a> {
    Signals(&'a OwnedFd),
    Shutdown(&'a OwnedFd),
    /// A client's own stop (serve: one socket of a pair per connection): the first byte
    /// waiting says which signal it stands for (`T` SIGTERM: the server stops; `H` SIGHUP:
    /// the client is gone), left in place for every job of the client to read.
    Scoped(&'a OwnedFd),
}

impl Interrupt<'_> {
    fn fd(&self) -> RawFd {
        match self {
            Interrupt::Signals(fd) | Interrupt::Shutdown(fd) | Interrupt::Scoped(fd) => {
                fd.as_raw_fd()
            }
        }
    }

    /// The signal that asks to stop, if one is pending now (without waiting).
    pub fn pending(&self) -> Option<i32> {
        let ready = sys::poll_one(self.fd(), libc::POLLIN, 0).is_ok_and(|r| r & libc::POLLIN != 0);
        if ready {
            self.signal()
        } else {
            None
        }
    }

    /// The signal that ended the run, once the fd is readable.
    fn signal(&self) -> Option<i32> {
        match self {
            Interrupt::Signals(fd) => sys::read_signalfd(fd.as_raw_fd()).map(|(sig, _)| sig),
            Interrupt::Shutdown(_) => Some(libc::SIGTERM),
            Interrupt::Scoped(fd) => match sys::peek_byte(fd.as_raw_fd())? {
                b'H' => Some(libc::SIGHUP),
                _ => Some(libc::SIGTERM),
            },
        }
    }
}

/// Signals that end a run cleanly. Blocked in agentjail for the whole process so they
/// arrive only through the signalfd; the child unblocks them before exec.
pub fn block_termination_signals() -> Option<OwnedFd> {
    sys::block_into_signalfd(&[libc::SIGTERM, libc::SIGINT, libc::SIGHUP]).ok()
}

/// Run the loop until the jail is over (init's report, or its exit), a limit is crossed, or
/// agentjail is asked to stop. Every process of the jail but init is dead and reaped when
/// this returns. Init is reaped too, unless it reported the end of the jail and is still
/// exiting: then its pidfd is returned, for [`Exiting`] to reap off the job's critical path.
pub fn supervise(
    sp: Spawned,
    limits: &SuperviseLimits,
    cg: Option<&JobCgroup>,
    interrupt: Option<Interrupt<'_>>,
    io: Io<'_>,
    delivery: Delivery,
) -> (Outcome, Exiting) {
    let mut sp = sp;
    // The feeds own the write ends: dropping one is the program's EOF on it.
    let stdin = sp.stdin.take();
    let job = sp.job.take();
    let mut l = Loop::new(&sp, (stdin, job), limits, cg, interrupt, io, delivery);
    l.run();
    let (outcome, init_left) = l.finish(true);
    let exiting = Exiting {
        init: init_left.then_some(sp.pidfd),
        listener: sp.listener,
    };
    (outcome, exiting)
}

/// What of a finished jail is left to release off the job's critical path: its init, when
/// it reported the jail over and is exiting (its namespaces being torn down), and the
/// seccomp listener. Dropping it waits for init's exit and reaps it, killing it if it has
/// not ended within [`END_GRACE`] (it cannot run anything any more: it is past its last
/// syscall but exit); then the listener is closed.
///
/// Why the listener waits: its close frees the jail's seccomp filter when it holds the
/// last reference, which measured ~0.13 ms (median of 60 paced jobs) between init's report
/// and the record when it was closed there. Every task the filter covered is gone by then
/// (init reported, or the jail was ended), so no syscall can be waiting on it.
pub struct Exiting {
    init: Option<OwnedFd>,
    listener: Option<OwnedFd>,
}

impl Exiting {
    pub fn none() -> Exiting {
        Exiting {
            init: None,
            listener: None,
        }
    }
}

impl Drop for Exiting {
    fn drop(&mut self) {
        if let Some(init) = self.init.take() {
            let fd = init.as_raw_fd();
            let grace = END_GRACE.as_millis() as i32;
            if !sys::poll_one(fd, libc::POLLIN, grace).is_ok_and(|r| r & libc::POLLIN != 0) {
                let _ = sys::pidfd_send_signal(fd, libc::SIGKILL);
            }
            let _ = sys::waitid_pidfd(fd, libc::WEXITED);
        }
        // Init is reaped: the listener can have nothing left to report.
        drop(self.listener.take());
    }
}

/// End a jail that is no longer wanted (an unused warm jail, a closed session): kill it as
/// a stop would, reap it, and return its account.
pub fn end(sp: Spawned, cg: Option<&JobCgroup>) -> Outcome {
    let limits = SuperviseLimits {
        wall_time_ms: 0,
        cpu_time_ms: u64::MAX / 1000,
        stdout_bytes: 0,
        stderr_bytes: 0,
        reply_bytes: REPLY_CAP,
        observe_syscalls: false,
        observe_opens: Vec::new(),
    };
    let io = Io {
        stdin_bytes: None,
        job_bytes: None,
        stdin_passthrough: None,
        stdout_sink: None,
        stderr_sink: None,
    };
    // The whole jail's account: nothing was delivered, so nothing is subtracted.
    let whole = Delivery {
        at: Instant::now(),
        cpu_base_us: Some(0),
    };
    let mut l = Loop::new(&sp, (None, None), &limits, cg, None, io, whole);
    l.closing = true;
    l.finish(false).0
}

/// How a session call ended.
#[derive(Debug)]
pub enum CallEnd {
    /// The runner reported the call done; the jail lives on for the next call.
    Done(CallOutcome),
    /// The jail is gone (a limit, a forbidden syscall, an interrupt, or the runner exited):
    /// the session is over.
    Ended(Outcome),
}

/// A session call's end, as the caller tells it: whether one line the runner reported is
/// this call's `done`.
pub type IsDone<'a> = dyn Fn(&[u8]) -> bool + 'a;

/// One session call that ended with the runner's `done`.
#[derive(Debug, Clone)]
pub struct CallOutcome {
    pub wall_us: u64,
    /// The jail's CPU time during the call.
    pub cpu_us: u64,
    pub stdout: Capped,
    pub stderr: Capped,
    pub replies: Capped,
    /// The runner's ring for the next call (None: it has not rung yet).
    pub rung: Option<Rung>,
}

/// How a call's runner takes over after a forbidden syscall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnForbidden {
    /// The jail ends at once (a session: the program is the runner itself).
    EndAtOnce,
    /// A workspace: the command's output passes through the runner, which the jail's end
    /// would kill with the bytes it has not forwarded yet. When a process other than the
    /// runner makes the syscall (which never runs: its notification is never answered),
    /// the runner is sent SIGCONT and SIGUSR1, on which it kills every other process of the
    /// jail (kill(-1)), forwards what is left in the command's pipes and reports; the call
    /// waits this long at most for that report, then the jail ends all the same, the stop
    /// being the syscall. Until the runner has acted (well under a millisecond when it is
    /// scheduled; at most this long) the jail's other processes may still make allowed
    /// syscalls, as they could have a moment before; the forbidden one never runs.
    RunnerReportsFirst(Duration),
}

/// The runner's ring of the session doorbell, received during one call (after its `done`)
/// and answered at the start of the next: the runner waits in it between calls.
#[derive(Debug, Clone, Copy)]
pub struct Rung(sys::Notification);

/// A session call's channel. Between calls the runner waits in the session doorbell
/// ([`seccomp::SESSION_DOORBELL`]); the call's frame goes out, and its reports come back, on
/// a socket made for this call alone and installed by the kernel at the ringing thread's
/// fds 3 and 4. The ring is answered only for the runner's main thread, by the pid the
/// kernel gives: a process the program left running (even one holding copies of an earlier
/// call's fds 3 and 4) can neither read this call's frame nor report for it, and a socket
/// cannot be opened again through /proc/<pid>/fd as a pipe can.
struct CallChannel {
    /// The runner's pid (its main thread's id) in our pid namespace.
    runner: i32,
    /// The frame, until it goes out.
    frame: Option<Vec<u8>>,
    /// Our end of this call's socket, once delivered.
    socket: Option<OwnedFd>,
    /// The runner rang again after this call's `done`: the next call answers it.
    next: Option<Rung>,
    on_forbidden: OnForbidden,
    /// A forbidden syscall of a command, while the runner reports (see [`OnForbidden`]):
    /// the stop it will be, and the deadline for the report.
    settling: Option<(Stop, Instant)>,
}
