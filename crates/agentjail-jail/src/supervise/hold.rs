//! Hold a workspace's command processes still while its runner reports a forbidden
//! syscall (see `OnForbidden::RunnerReportsFirst`): every process of the jail but init and
//! the runner is sent SIGSTOP, pass after pass, until every thread of each is seen stopped
//! (but the one that made the syscall, which waits unanswered in the seccomp notification), so none can stop the runner again (SIGSTOP in a
//! loop from a command kept it from forwarding what the command had printed) or make
//! another allowed syscall. Only then is the runner sent SIGCONT and SIGUSR1: it SIGKILLs
//! the stopped processes (kill(-1) reaches them) and forwards what is left.
//!
//! Why signals and not the cgroup freezer: the jail has one cgroup for all its processes,
//! the runner included, and a frozen runner could not report; moving the runner out of it
//! would need a cgroup outside the jail's subtree. SIGSTOP cannot be caught, blocked or
//! ignored, and a stopped process can neither fork nor signal, so each pass leaves fewer
//! processes able to undo it: a process that sent SIGCONT to one stopped in the previous
//! pass is itself running and is stopped in this one.

use crate::sys;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// What one pass saw.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Held {
    /// Processes seen (besides init and the runner).
    pub processes: usize,
    /// Of them, those with a thread not yet stopped (sent SIGSTOP this pass).
    pub running: usize,
}

/// Stop every process of the jail whose init is `init` (a host pid) but `runner`, until a
/// pass finds every thread of them stopped, but thread `caller` (the forbidden syscall's,
/// waiting unanswered in the seccomp notification, which may never reach a stop), or
/// `deadline` passes. Returns whether they all were.
pub fn stop_all_but(init: i32, runner: i32, caller: i32, deadline: Instant) -> bool {
    loop {
        let seen = stop_pass(init, runner, caller);
        if seen.running == 0 {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        // A stop takes effect when the target next returns to user mode: give the CPUs to
        // the processes just signalled (they may be on this core) before looking again.
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// One walk of the jail's process tree from init: SIGSTOP to each process (but the runner)
/// that has a thread not stopped (but `caller`).
pub fn stop_pass(init: i32, runner: i32, caller: i32) -> Held {
    let mut held = Held::default();
    let mut queue = super::cpu::children_of(init);
    let mut walked = 0;
    while let Some(pid) = queue.pop() {
        walked += 1;
        if walked > 65_536 {
            break; // a bound on the walk: a jail's pids limit is far below this
        }
        queue.extend(super::cpu::children_of(pid));
        if pid == runner {
            continue;
        }
        held.processes += 1;
        if all_threads_stopped(pid, caller) {
            continue;
        }
        held.running += 1;
        let Ok(fd) = sys::pidfd_open(pid) else {
            continue; // gone
        };
        let fd = sys::owned(fd);
        // Checked once the pidfd holds the process: one that died after the walk saw it,
        // its pid reused by the host, is never signalled (its parents are not the jail's).
        if !in_jail_tree(init, parent_of(pid)) {
            continue;
        }
        let _ = sys::pidfd_send_signal(fd.as_raw_fd(), libc::SIGSTOP);
    }
    held
}

/// Every thread of `pid` but `caller` stopped (T, t) or dead (Z, X); a process that is gone
/// counts as stopped.
fn all_threads_stopped(pid: i32, caller: i32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return true;
    };
    tasks.flatten().all(|t| {
        if t.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) == Some(caller) {
            return true;
        }
        let state = std::fs::read_to_string(t.path().join("stat"))
            .ok()
            .and_then(|s| state_of(&s));
        matches!(state, None | Some('T' | 't' | 'Z' | 'X' | 'x'))
    })
}

/// The state letter of a /proc/<pid>/stat line (after the command's closing parenthesis).
fn state_of(stat: &str) -> Option<char> {
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

/// The parent pid from /proc/<pid>/stat (field 4).
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Whether `pid` is init or one of its descendants (walked up through the parents).
fn in_jail_tree(init: i32, pid: Option<i32>) -> bool {
    let mut p = pid;
    for _ in 0..4096 {
        match p {
            Some(x) if x == init => return true,
            Some(x) if x > 1 => p = parent_of(x),
            _ => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_survive_odd_command_names() {
        assert_eq!(state_of("12 (a) b) T 1 12"), Some('T'));
        assert_eq!(state_of("12 (x) S 1 12"), Some('S'));
        assert_eq!(state_of("12 (x"), None);
    }
}
