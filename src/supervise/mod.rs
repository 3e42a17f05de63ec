//! The supervisor: one poll loop over the jail's pidfd, its pipes, the seccomp listener,
//! a signalfd for SIGTERM/SIGINT/SIGHUP, and the deadlines.
//!
//! Waiting never sleeps on a coarse tick: the loop blocks in ppoll(2) with a nanosecond
//! timeout computed from the next deadline, and wakes the moment the jail exits (pidfd),
//! writes (pipes) or makes a forbidden syscall (listener). Caps are enforced while
//! streaming: each read asks for at most one byte more than still fits.

pub mod capped;

use crate::jail::cgroup::JobCgroup;
use crate::jail::spawn::Spawned;
use crate::jail::{seccomp, sys};
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

#[derive(Debug, Clone)]
pub struct Limits {
    pub wall_time_ms: u64,
    pub cpu_time_ms: u64,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
}

/// Where stdin comes from and where output goes besides the capped buffers.
pub struct Io<'a> {
    /// Bytes to feed on stdin, then EOF.
    pub stdin_bytes: Option<Vec<u8>>,
    /// Copy this fd (agentjail's own stdin) to the jail's stdin until EOF.
    pub stdin_passthrough: Option<RawFd>,
    /// Stream stdout/stderr here too (exec mode), within the caps.
    pub stdout_sink: Option<&'a mut dyn Write>,
    pub stderr_sink: Option<&'a mut dyn Write>,
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
}

/// Signals that end a run cleanly. Blocked in agentjail for the whole process so they
/// arrive only through the signalfd; the child unblocks them before exec.
pub fn block_termination_signals() -> Option<OwnedFd> {
    sys::block_into_signalfd(&[libc::SIGTERM, libc::SIGINT, libc::SIGHUP]).ok()
}

fn read_signal(fd: RawFd) -> Option<i32> {
    sys::read_signalfd(fd).map(|(sig, _)| sig)
}

/// CPU time of the jail: the cgroup's counter when there is one (exact, whole jail),
/// otherwise utime+stime of the jail's init and its reaped children from procfs (10 ms
/// ticks; the RLIMIT_CPU backstop catches the rest).
fn cpu_usage_us(pids: &[i32], cg: Option<&JobCgroup>) -> Option<u64> {
    if let Some(us) = cg.and_then(|c| c.cpu_usage_us()) {
        return Some(us);
    }
    let total: u64 = pids.iter().filter_map(|p| proc_cpu_us(*p)).sum();
    Some(total)
}

fn proc_cpu_us(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    // fields after ')' start at field 3 (state); utime is field 14 → index 11.
    let ticks: u64 = [11, 12, 13, 14]
        .iter()
        .filter_map(|&i| f.get(i)?.parse::<u64>().ok())
        .sum();
    Some(ticks * 1_000_000 / sys::clock_ticks())
}

const CHUNK: usize = 64 * 1024;

fn drain(
    fd: RawFd,
    buf: &mut Capped,
    sink: &mut Option<&mut dyn Write>,
    scratch: &mut [u8],
) -> (bool, bool) {
    // Returns (eof, cap_exceeded)
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

/// Run the loop until the jail's init exits, a limit is crossed, or agentjail is asked to
/// stop. The jail is always dead and reaped when this returns.
pub fn supervise(
    sp: Spawned,
    limits: &Limits,
    cg: Option<&JobCgroup>,
    sigfd: Option<&OwnedFd>,
    mut io: Io<'_>,
) -> Outcome {
    let start = Instant::now();
    let wall = Duration::from_millis(limits.wall_time_ms);
    let mut stdout = Capped::new(limits.stdout_bytes);
    let mut stderr = Capped::new(limits.stderr_bytes);
    let mut stop: Option<Stop> = None;
    // One read never needs more than the larger cap allows plus one byte (see
    // `Capped::next_read_len`): with the default 4 KiB caps that is two pages, not the 16 a
    // full chunk would fault in on every launch.
    let need = limits
        .stdout_bytes
        .max(limits.stderr_bytes)
        .saturating_add(1);
    let scratch_len = usize::try_from(need).map_or(CHUNK, |n| n.clamp(4096, CHUNK));
    let mut scratch = vec![0u8; scratch_len];
    // The CPUs the jail may run on: our affinity mask, inherited by the jail (one
    // sched_getaffinity call). `available_parallelism` also read /proc/self/cgroup and the
    // cgroup CPU quota files on every launch, and could only return this number or a
    // smaller one, so the checks below come at the same time or earlier: never later.
    let ncpu = sys::affinity_cpus().max(1);

    let _ = sys::set_nonblocking(sp.stdout.as_raw_fd());
    let _ = sys::set_nonblocking(sp.stderr.as_raw_fd());
    let _ = sys::set_nonblocking(sp.stdin.as_raw_fd());
    let mut stdin: Option<OwnedFd> = Some(sp.stdin);
    let stdin_data = io.stdin_bytes.take().unwrap_or_default();
    let mut stdin_off = 0usize;
    let mut passthrough = io.stdin_passthrough;
    let mut pass_buf: Vec<u8> = Vec::new();
    if passthrough.is_none() && stdin_data.is_empty() {
        stdin = None; // EOF right away
    }
    let (mut out_open, mut err_open) = (true, true);
    let mut exited = false;
    // First check: the jail's CPU usage (cgroup counter of a fresh job cgroup, or procfs
    // times of processes created by our clone3) started at 0 no earlier than `cloned_at`
    // and grows at most `ncpu` times faster than wall time, so the limit cannot be crossed
    // before cloned_at + limit/ncpu. A check at t = 0 (one more procfs/cgroup read on the
    // launch's critical path) could only ever find usage below the limit.
    let mut next_cpu_check = sp
        .cloned_at
        .checked_add(Duration::from_micros(
            limits.cpu_time_ms.saturating_mul(1000) / ncpu,
        ))
        .unwrap_or(start);
    let mut listener_live = true;
    let cpu_pids: Vec<i32> = std::iter::once(sp.pid).chain(sp.program_pid).collect();

    while !exited && stop.is_none() {
        let now = Instant::now();
        let elapsed = now - start;
        if elapsed >= wall {
            stop = Some(Stop::WallTimeout);
            break;
        }
        // CPU: usage grows at most `ncpu` times faster than wall time, so the earliest the
        // limit can be crossed is remaining/ncpu from now; check exactly then.
        if now >= next_cpu_check {
            if let Some(us) = cpu_usage_us(&cpu_pids, cg) {
                let limit_us = limits.cpu_time_ms * 1000;
                if us > limit_us {
                    stop = Some(Stop::CpuLimit);
                    break;
                }
                let remaining = Duration::from_micros((limit_us - us) / ncpu);
                next_cpu_check = now + remaining.max(Duration::from_millis(1));
            } else {
                next_cpu_check = now + Duration::from_millis(10);
            }
        }
        let timeout = (wall - elapsed).min(next_cpu_check.saturating_duration_since(now));

        let mut fds: Vec<libc::pollfd> = Vec::with_capacity(7);
        let pf = |fd: RawFd, events: libc::c_short| libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        fds.push(pf(sp.pidfd.as_raw_fd(), libc::POLLIN));
        fds.push(pf(
            if out_open { sp.stdout.as_raw_fd() } else { -1 },
            libc::POLLIN,
        ));
        fds.push(pf(
            if err_open { sp.stderr.as_raw_fd() } else { -1 },
            libc::POLLIN,
        ));
        let want_write = stdin.is_some() && (stdin_off < stdin_data.len() || !pass_buf.is_empty());
        fds.push(pf(
            if want_write {
                stdin.as_ref().map_or(-1, |f| f.as_raw_fd())
            } else {
                -1
            },
            libc::POLLOUT,
        ));
        fds.push(pf(
            match sp.listener.as_ref() {
                Some(l) if listener_live => l.as_raw_fd(),
                _ => -1,
            },
            libc::POLLIN,
        ));
        fds.push(pf(sigfd.map_or(-1, |f| f.as_raw_fd()), libc::POLLIN));
        let pass_fd = if stdin.is_some() && pass_buf.is_empty() {
            passthrough.unwrap_or(-1)
        } else {
            -1
        };
        fds.push(pf(pass_fd, libc::POLLIN));
        sys::ppoll(&mut fds, Some(timeout));

        // POLLHUP without POLLIN on the listener: every task the filter was attached to has
        // exited (the kernel's seccomp_notify_poll reports HUP when the filter has no users),
        // and a filter only reaches new tasks by fork of a filtered one, so no notification
        // can ever arrive again. Stop polling it: the HUP is level-triggered, and polling it
        // made this loop spin (thousands of ppoll calls on the jail's own CPU) from the
        // program's exit until init's exit, slowing the very teardown it waits for.
        if fds[4].revents & (libc::POLLHUP | libc::POLLIN) == libc::POLLHUP {
            listener_live = false;
        }
        if fds[4].revents & libc::POLLIN != 0 {
            if let Some(l) = sp.listener.as_ref() {
                if let Ok((_pid, nr)) = seccomp::receive_notification(l.as_fd()) {
                    let name = seccomp::syscall_name(nr as i64)
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("syscall_{nr}"));
                    stop = Some(Stop::ForbiddenSyscall { nr, name });
                    break;
                }
            }
        }
        if fds[5].revents & libc::POLLIN != 0 {
            if let Some(sig) = sigfd.and_then(|f| read_signal(f.as_raw_fd())) {
                stop = Some(Stop::Interrupted { signal: sig });
                break;
            }
        }
        if fds[1].revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
            let (eof, over) = drain(
                sp.stdout.as_raw_fd(),
                &mut stdout,
                &mut io.stdout_sink,
                &mut scratch,
            );
            out_open &= !eof;
            if over {
                stop = Some(Stop::StdoutCap);
                break;
            }
        }
        if fds[2].revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
            let (eof, over) = drain(
                sp.stderr.as_raw_fd(),
                &mut stderr,
                &mut io.stderr_sink,
                &mut scratch,
            );
            err_open &= !eof;
            if over {
                stop = Some(Stop::StderrCap);
                break;
            }
        }
        if fds[6].revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
            let mut b = vec![0u8; CHUNK];
            match sys::read(pass_fd, &mut b) {
                Ok(0) | Err(_) => {
                    passthrough = None;
                }
                Ok(n) => pass_buf.extend_from_slice(&b[..n]),
            }
        }
        if fds[3].revents != 0 {
            if let Some(fd) = stdin.as_ref() {
                let pending: &[u8] = if !pass_buf.is_empty() {
                    &pass_buf
                } else {
                    &stdin_data[stdin_off..]
                };
                match sys::write(fd.as_raw_fd(), pending) {
                    Ok(n) => {
                        if !pass_buf.is_empty() {
                            pass_buf.drain(..n);
                        } else {
                            stdin_off += n;
                        }
                    }
                    Err(libc::EAGAIN) => {}
                    Err(_) => {
                        stdin = None; // the program closed its stdin
                    }
                }
            }
        }
        if stdin.is_some()
            && pass_buf.is_empty()
            && passthrough.is_none()
            && stdin_off >= stdin_data.len()
        {
            stdin = None; // all fed: EOF
        }
        if fds[0].revents & libc::POLLIN != 0 {
            exited = true;
        }
    }

    if stop.is_some() || !exited {
        // Killing init kills the whole pid namespace: stopped, signal-ignoring and
        // double-forked processes included. The cgroup kill is a second, independent net.
        let _ = sys::pidfd_send_signal(sp.pidfd.as_raw_fd(), libc::SIGKILL);
        if let Some(c) = cg {
            c.kill_all();
        }
    }
    drop(stdin);
    let status = sys::waitid_pidfd(sp.pidfd.as_raw_fd(), libc::WEXITED)
        .ok()
        .flatten();
    let wall_elapsed = start.elapsed();
    // Every writer is gone now: what is left in the pipes is finite. Drain it (still capped),
    // whatever ended the run: what a program printed right before a forbidden syscall or a
    // timeout is evidence. Only a cap stop has nothing more worth reading.
    if !matches!(stop, Some(Stop::StdoutCap | Stop::StderrCap)) {
        for (fd, buf, sink, which) in [
            (
                sp.stdout.as_raw_fd(),
                &mut stdout,
                &mut io.stdout_sink,
                Stop::StdoutCap,
            ),
            (
                sp.stderr.as_raw_fd(),
                &mut stderr,
                &mut io.stderr_sink,
                Stop::StderrCap,
            ),
        ] {
            loop {
                let (eof, over) = drain(fd, buf, sink, &mut scratch);
                if over {
                    stop.get_or_insert(which);
                    break;
                }
                if eof
                    || sys::poll_one(fd, libc::POLLIN, 0)
                        .map(|r| r == 0)
                        .unwrap_or(true)
                {
                    break;
                }
            }
        }
    }
    // The program's own wait status, from init; without it (init was killed, which kills
    // the program too), init's.
    let mut raw = [0u8; 4];
    let program_status = match sys::read(sp.status.as_raw_fd(), &mut raw) {
        Ok(4) => Some(i32::from_ne_bytes(raw)),
        _ => None,
    };
    let (exit_code, signal) = match (program_status, status) {
        (Some(s), _) if libc::WIFEXITED(s) => (Some(libc::WEXITSTATUS(s)), None),
        (Some(s), _) if libc::WIFSIGNALED(s) => (None, Some(libc::WTERMSIG(s))),
        (_, Some(w)) if w.code == libc::CLD_EXITED => (Some(w.status), None),
        (_, Some(w)) => (None, Some(w.status)),
        _ => (None, None),
    };
    let stats = cg.map(|c| c.stats()).unwrap_or_default();
    // The kernel's account of init, which has reaped everything else in the jail.
    let (rusage_cpu_us, rusage_rss) = status.map_or((0, 0), |w| (w.cpu_us, w.max_rss_bytes));
    let cpu_us = stats.cpu_usage_us.unwrap_or(rusage_cpu_us);
    if stop.is_none() && cpu_us > limits.cpu_time_ms * 1000 && signal == Some(libc::SIGXCPU) {
        stop = Some(Stop::CpuLimit);
    }
    Outcome {
        exit_code,
        signal,
        stop,
        wall_ms: wall_elapsed.as_millis() as u64,
        wall_us: wall_elapsed.as_micros() as u64,
        cpu_ms: Some(cpu_us / 1000),
        peak_memory_bytes: stats.memory_peak_bytes.or(Some(rusage_rss)),
        oom_kills: stats.oom_kills,
        pids_limit_hits: stats.pids_limit_hits,
        stdout,
        stderr,
    }
}
