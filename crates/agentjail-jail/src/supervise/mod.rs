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

pub mod capped;
pub mod hold;

use crate::cgroup::JobCgroup;
use crate::child::InitReport;
use crate::plan::SuperviseLimits;
use crate::spawn::Spawned;
use crate::{seccomp, sys};
pub use capped::Capped;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
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
    /// Stream stdout/stderr here too (exec mode), within the caps.
    pub stdout_sink: Option<&'a mut dyn Write>,
    pub stderr_sink: Option<&'a mut dyn Write>,
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
}

/// Most a runner may report per run; the rest is dropped.
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

/// The jail's CPU time so far, in µs: what a delivery subtracts, and what the limit checks
/// and a session call's account read. The cgroup's counter when there is one (exact, whole
/// jail). Otherwise (no cpu controller: cgroup v2 with only `memory` delegated, or none),
/// from the kernel's per-process accounts of every process of the jail, live ones
/// included: for each descendant of init, its own time, exact (its process CPU clock),
/// plus what it has reaped (cutime + cstime in /proc/<pid>/stat, 10 ms ticks); plus what
/// init reaped (orphans). Counting only the program and what was reaped let forked
/// workers that were still running burn 12 s of CPU under a 2 s limit. Init's own time is
/// left out: it is the jail's setup, all spent before delivery, and init's final report
/// (which the record's figure comes from) sums only what init reaped, so a base that held
/// init's time would make the record come out short.
///
/// Parents are read before their children: a child reaped between the two reads is then
/// missed once (seen in its parent's account at the next check) rather than counted twice,
/// so a program is never stopped on time it did not use.
pub fn jail_cpu_us(sp: &Spawned, cg: Option<&JobCgroup>) -> u64 {
    if let Some(us) = cg.and_then(|c| c.cpu_usage_us()) {
        return us;
    }
    let init = sp.pid;
    let mut total = reaped_children_us(init).unwrap_or(0);
    let mut queue = children_of(init);
    if queue.is_empty() {
        // Before the program exists (or once it is gone): init's own time stands in.
        if let Some(p) = sp.program_pid {
            queue.push(p);
        }
    }
    let mut seen = 0;
    while let Some(pid) = queue.pop() {
        // A bound on the walk: a jail's pids limit is far below this.
        seen += 1;
        if seen > 65_536 {
            break;
        }
        total += reaped_children_us(pid).unwrap_or(0);
        total += sys::process_cpu_us(pid).unwrap_or(0);
        queue.extend(children_of(pid));
    }
    total
}

/// The live children of every thread of `pid` (/proc/<pid>/task/<tid>/children).
fn children_of(pid: i32) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for t in tasks.flatten() {
        let path = t.path().join("children");
        if let Ok(text) = std::fs::read_to_string(path) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            );
        }
    }
    out
}

/// The CPU time of the children `pid` has waited for (cutime + cstime), from procfs; no
/// other interface has them while it lives.
fn reaped_children_us(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    // Fields after ')' start at field 3 (state); cutime is field 16 → index 13.
    let ticks: u64 = [13, 14]
        .iter()
        .filter_map(|&i| f.get(i)?.parse::<u64>().ok())
        .sum();
    Some(ticks * 1_000_000 / sys::clock_ticks())
}

const CHUNK: usize = 64 * 1024;

/// One read from an output pipe into its capped buffer (and the sink). Returns (eof,
/// cap_exceeded).
fn drain(
    fd: RawFd,
    buf: &mut Capped,
    sink: &mut Option<&mut dyn Write>,
    scratch: &mut [u8],
) -> (bool, bool) {
    let want = buf.next_read_len(scratch.len());
    match sys::read(fd, &mut scratch[..want]) {
        Ok(0) => (true, false),
        Ok(n) => {
            let before = buf.data.len();
            let over = buf.push(&scratch[..n]);
            if let Some(s) = sink.as_mut() {
                let _ = s.write_all(&buf.data[before..]);
                let _ = s.flush();
            }
            (false, over)
        }
        Err(libc::EAGAIN) => (false, false),
        Err(_) => (true, false),
    }
}

/// What a pipe into the jail is fed from: fixed bytes, or agentjail's own stdin copied
/// through (stdin only).
struct Feed {
    fd: Option<OwnedFd>,
    data: Vec<u8>,
    offset: usize,
    passthrough: Option<RawFd>,
    pending: Vec<u8>,
}

impl Feed {
    fn new(fd: Option<OwnedFd>, data: Vec<u8>, passthrough: Option<RawFd>) -> Feed {
        // Nothing to feed: EOF right away.
        let fd = fd.filter(|_| passthrough.is_some() || !data.is_empty());
        Feed {
            fd,
            data,
            offset: 0,
            passthrough,
            pending: Vec::new(),
        }
    }

    fn wants_write(&self) -> bool {
        self.fd.is_some() && (self.offset < self.data.len() || !self.pending.is_empty())
    }

    /// The fd to read agentjail's stdin from, when there is room to forward it.
    fn passthrough_fd(&self) -> RawFd {
        if self.fd.is_some() && self.pending.is_empty() {
            self.passthrough.unwrap_or(-1)
        } else {
            -1
        }
    }

    fn read_passthrough(&mut self, fd: RawFd) {
        let mut b = vec![0u8; CHUNK];
        match sys::read(fd, &mut b) {
            Ok(0) | Err(_) => self.passthrough = None,
            Ok(n) => self.pending.extend_from_slice(&b[..n]),
        }
    }

    fn write_some(&mut self) {
        let Some(fd) = self.fd.as_ref() else { return };
        let from_pending = !self.pending.is_empty();
        let chunk: &[u8] = if from_pending {
            &self.pending
        } else {
            &self.data[self.offset..]
        };
        match sys::write(fd.as_raw_fd(), chunk) {
            Ok(n) if from_pending => drop(self.pending.drain(..n)),
            Ok(n) => self.offset += n,
            Err(libc::EAGAIN) => {}
            Err(_) => self.fd = None, // the program closed its stdin
        }
    }

    /// Close the pipe (EOF for the program) once everything is fed.
    fn close_when_done(&mut self) {
        if self.fd.is_some()
            && self.pending.is_empty()
            && self.passthrough.is_none()
            && self.offset >= self.data.len()
        {
            self.fd = None;
        }
    }
}

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
struct Loop<'a, 'io> {
    sp: &'a Spawned,
    limits: &'a SuperviseLimits,
    cg: Option<&'a JobCgroup>,
    interrupt: Option<Interrupt<'a>>,
    io: Io<'io>,
    start: Instant,
    wall: Duration,
    stdout: Capped,
    stderr: Capped,
    scratch: Vec<u8>,
    stdin: Feed,
    job: Feed,
    replies: Capped,
    reply_open: bool,
    out_open: bool,
    err_open: bool,
    exited: bool,
    /// Init's final report (see child.rs, init): the jail is over, everything in it reaped;
    /// init itself may still be exiting.
    init_report: Option<InitReport>,
    status_open: bool,
    listener_live: bool,
    ncpu: u64,
    next_cpu_check: Instant,
    cpu_base_us: u64,
    /// Session calls end when a line of the runner's reports is this call's `done` (the
    /// caller's test: the jail does not read the runner's protocol); single runs when the jail
    /// exits.
    until_done: Option<&'a IsDone<'a>>,
    /// A session call's own channel (see [`CallChannel`]); None for single runs.
    channel: Option<CallChannel>,
    done: bool,
    /// Ended by agentjail because the jail is no longer wanted (not a stop).
    closing: bool,
    stop: Option<Stop>,
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

/// Send one job frame to a session's runner and supervise until a line it reports passes
/// `is_done` (the caller's test: its `done` for this frame's nonce; any other `done` is not
/// this call's answer), under the call's limits. `rung`: the runner's ring kept from the last call (None: it is still to come,
/// as before the first call). A call that breaks a limit ends the session: the jail is
/// killed and reaped (and the returned `Outcome` says why).
pub fn call(
    sp: &Spawned,
    frame: Vec<u8>,
    is_done: &IsDone<'_>,
    (rung, on_forbidden): (Option<Rung>, OnForbidden),
    limits: &SuperviseLimits,
    cg: Option<&JobCgroup>,
    interrupt: Option<Interrupt<'_>>,
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
        stdout_sink: None,
        stderr_sink: None,
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

impl<'a, 'io> Loop<'a, 'io> {
    fn new(
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
            replies: Capped::new(REPLY_CAP),
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
        }
    }

    /// Check the deadlines, poll, handle what is ready; until the jail exits, a limit or an
    /// interrupt stops it, or (session calls) the runner reports the call done.
    fn run(&mut self) {
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
        let runner = self.channel.as_ref().map(|c| c.runner);
        if runner.is_some_and(|r| seccomp::is_doorbell(&n, r)) && self.doorbell(n) {
            return false;
        }
        let nr = n.nr;
        let name = seccomp::syscall_name(nr as i64)
            .map(str::to_string)
            .unwrap_or_else(|| format!("syscall_{nr}"));
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

    /// The runner rang during a call: before the frame went out, that is its wait for this
    /// call (deliver it); after, the runner has reported this call done and waits for the
    /// next (its `done` is in this call's socket already: it wrote it before ringing), so the
    /// ring is kept for the next call. A ring with no `done` before it, or a second one, is
    /// out of turn (false: a forbidden syscall).
    fn doorbell(&mut self, n: sys::Notification) -> bool {
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

    /// Where the runner's reports come from: this call's socket in a session call, the
    /// reply pipe in a single run.
    fn reply_fd(&self) -> Option<RawFd> {
        match &self.channel {
            Some(c) => c.socket.as_ref().map(|s| s.as_raw_fd()),
            None => self.sp.reply.as_ref().map(|s| s.as_raw_fd()),
        }
    }

    /// One read of the runner's reply pipe. Past its cap replies are dropped (never a stop:
    /// they are informational).
    fn read_replies(&mut self) {
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

    /// One read of stdout (or stderr); true when it crossed the cap (the run stops).
    fn read_output(&mut self, stdout: bool) -> bool {
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
    fn finish(mut self, may_leave_init: bool) -> (Outcome, bool) {
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
