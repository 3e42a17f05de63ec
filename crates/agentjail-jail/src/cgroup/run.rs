//! A live job's cgroups: joining the jail after clone (the v1 `tasks` fds the jail writes
//! itself; a v2 attach by the parent when clone3 could not place it, with no allocation:
//! the pid is formatted on the stack and written to fds opened before fork), the handles the zygote
//! needs to attach for the engine, the counters the record reads (preads of files opened at
//! create), killing what is left and removing the directories. Separate from their making
//! (`create.rs`): this is what runs on the job's critical path and at teardown.

use super::{
    errno_of, parse_keyed, read_keyed, read_pids, Account, CgroupStats, JobCgroup, JobDir, Kernel,
    Kind, MAX_V1_DIRS,
};
use crate::{sys, Control, ControlState, SetupError};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

impl JobCgroup {
    /// True when at least one limit is enforced by a cgroup.
    pub fn is_active(&self) -> bool {
        self.outcomes
            .iter()
            .any(|o| o.state == ControlState::Enforced)
    }

    /// The job directories created (for logs and tests).
    pub fn paths(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.path.clone()).collect()
    }

    /// The v2 job directory, for clone3(CLONE_INTO_CGROUP): the child starts inside it.
    pub fn v2_dir_fd(&self) -> Option<BorrowedFd<'_>> {
        self.dirs
            .iter()
            .find(|d| d.kind == Kind::V2)
            .and_then(|d| d.dir.as_ref())
            .map(|f| f.as_fd())
    }

    /// What another process needs to put a new jail into these cgroups (the zygote spawns
    /// jails for the engine): each directory's join file (v2 `cgroup.procs`, v1 `tasks`: see
    /// [`v1_join_fds`](Self::v1_join_fds)), whether it is the v2 one, and that directory
    /// itself (for CLONE_INTO_CGROUP). See [`attach_only`](Self::attach_only).
    pub fn attach_handles(&self) -> Vec<(bool, BorrowedFd<'_>, Option<BorrowedFd<'_>>)> {
        self.dirs
            .iter()
            .filter_map(|d| {
                let join = d.join.as_ref()?.as_fd();
                Some((d.kind == Kind::V2, join, d.dir.as_ref().map(|f| f.as_fd())))
            })
            .collect()
    }

    /// The other side of [`attach_handles`](Self::attach_handles): a handle that can only
    /// attach (`v2_dir_fd`, `has_v1`, `v1_join_fds`, `attach_v2`). It owns no directory:
    /// dropping it removes nothing (the process that created the cgroups keeps them and
    /// removes them).
    pub fn attach_only(handles: Vec<(bool, File, Option<File>)>) -> JobCgroup {
        let dirs = handles
            .into_iter()
            .map(|(v2, join, dir)| JobDir {
                kind: if v2 { Kind::V2 } else { Kind::V1 },
                controllers: Vec::new(),
                path: PathBuf::new(),
                join: Some(join),
                dir: if v2 { dir } else { None },
            })
            .collect();
        JobCgroup {
            dirs,
            outcomes: Vec::new(),
            cpu_usage: None,
            accounts: Vec::new(),
            removed: true,
            fs: &Kernel,
        }
    }

    /// Whether any job directory is on a v1 hierarchy: those are joined after clone (by the
    /// jail itself, [`v1_join_fds`](Self::v1_join_fds)), even when a v2 directory was
    /// joined by CLONE_INTO_CGROUP (a host that splits controllers between v1 and v2).
    pub fn has_v1(&self) -> bool {
        self.dirs.iter().any(|d| d.kind == Kind::V1)
    }

    /// The v1 directories' `tasks` files, as raw numbers a child made by clone holds too
    /// (-1: none), for the jail to join them itself before anything else (child.rs, 1b):
    /// it writes "0", which moves the writing thread alone. The kernel then takes no global
    /// lock (`cgroup_procs_write_start`: a thread moving itself cannot exit or exec under
    /// it), while a pid written by the parent takes `cgroup_threadgroup_rwsem` for writing,
    /// which waits for an RCU grace period: 1-15 ms on an idle host, measured in
    /// docs/BENCH.md. The jail is a single thread then (clone3 made a new process); the
    /// permission check is the opener's (ours), as for the parent's write.
    /// Err: more v1 directories than a job ever has (a malformed zygote request).
    pub fn v1_join_fds(&self) -> Result<[RawFd; MAX_V1_DIRS], SetupError> {
        let mut fds = [-1; MAX_V1_DIRS];
        let v1 = self.dirs.iter().filter(|d| d.kind == Kind::V1);
        for (i, d) in v1.enumerate() {
            let Some(f) = &d.join else { continue };
            let slot = fds.get_mut(i).ok_or_else(|| {
                SetupError::new(
                    "cgroup attach",
                    Some(libc::E2BIG),
                    "more v1 job directories than memory, pids, cpu and cpuacct have",
                )
            })?;
            *slot = f.as_raw_fd();
        }
        Ok(fds)
    }

    /// Parent, after clone: put `pid` into the v2 job directory, when clone3 did not place
    /// it there (no CLONE_INTO_CGROUP). v1 directories are the jail's to join
    /// ([`v1_join_fds`](Self::v1_join_fds)).
    /// No allocation: the pid is formatted on the stack and written to fds opened by `create`.
    pub fn attach_v2(&self, pid: i32) -> Result<(), SetupError> {
        self.write_pid(pid, |d| d.kind == Kind::V2)
    }

    /// Put a process made outside agentjail (a test's hog) into every job directory:
    /// `skip_v2` when it was born in the v2 one. On v1 the `tasks` file moves the one thread
    /// `pid` names, so the process must be single-threaded.
    pub fn attach(&self, pid: i32, skip_v2: bool) -> Result<(), SetupError> {
        self.write_pid(pid, |d| !(skip_v2 && d.kind == Kind::V2))
    }

    fn write_pid(&self, pid: i32, which: impl Fn(&JobDir) -> bool) -> Result<(), SetupError> {
        let mut buf = [0u8; 16];
        let digits = fmt_pid(pid, &mut buf);
        for d in self.dirs.iter().filter(|d| which(d)) {
            let Some(f) = &d.join else { continue };
            if let Err(e) = sys::write(f.as_raw_fd(), digits) {
                return Err(SetupError::new(
                    "cgroup attach",
                    Some(e),
                    "could not move the jail into its cgroup (cgroup.procs write failed)",
                ));
            }
        }
        Ok(())
    }

    /// Counters for the record. Missing files read as None / 0.
    pub fn stats(&self) -> CgroupStats {
        let mut s = CgroupStats {
            cpu_usage_us: self.cpu_usage_us(),
            ..Default::default()
        };
        let mut buf = [0u8; 1024];
        for (what, f) in &self.accounts {
            let Some(text) = sys::pread(f.as_raw_fd(), &mut buf, 0)
                .ok()
                .and_then(|n| std::str::from_utf8(&buf[..n]).ok())
            else {
                continue;
            };
            match what {
                Account::MemoryPeak => s.memory_peak_bytes = text.trim().parse().ok(),
                Account::OomKills => s.oom_kills += parse_keyed(text, "oom_kill").unwrap_or(0),
                Account::PidsLimitHits => {
                    s.pids_limit_hits += parse_keyed(text, "max").unwrap_or(0)
                }
            }
        }
        s
    }

    /// CPU time used by the job so far, in µs: pread on an fd opened by `create`.
    pub fn cpu_usage_us(&self) -> Option<u64> {
        let (kind, f) = self.cpu_usage.as_ref()?;
        let mut buf = [0u8; 512];
        let n = sys::pread(f.as_raw_fd(), &mut buf, 0).ok()?;
        let text = std::str::from_utf8(buf.get(..n)?).ok()?;
        match kind {
            Kind::V2 => parse_keyed(text, "usage_usec"),
            Kind::V1 => text.trim().parse::<u64>().ok().map(|ns| ns / 1000),
        }
    }

    /// SIGKILL everything in the job's cgroups: v2 `cgroup.kill`, else (v1, or a kernel
    /// before 5.14) read `cgroup.procs` and kill each member until empty (bounded retries).
    ///
    /// Never `kill(pid)` by number: a member may exit after the read and its number go to a
    /// host process (pid_max is 32768 on many hosts, and a busy host wraps it in seconds).
    /// Each listed pid gets a pidfd first, then the list is read again: a pid still listed
    /// names the same process the pidfd holds (a live process's pid is its own), so only
    /// members are signalled; one that died in between makes the signal fail with ESRCH.
    pub fn kill_all(&self) {
        for d in &self.dirs {
            if d.kind == Kind::V2 && write_file_existing(&d.path.join("cgroup.kill"), "1").is_ok() {
                continue;
            }
            for _ in 0..100 {
                let pids = read_pids(&d.path);
                if pids.is_empty() {
                    break;
                }
                let held: Vec<(i32, std::os::fd::OwnedFd)> = pids
                    .into_iter()
                    .filter_map(|p| Some((p, sys::pidfd_open(p).map(sys::owned).ok()?)))
                    .collect();
                let still = read_pids(&d.path);
                for (p, fd) in &held {
                    if still.contains(p) {
                        let _ = sys::pidfd_send_signal(fd.as_raw_fd(), libc::SIGKILL);
                    }
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }

    /// Wait (up to 2 s per directory) until the job's cgroups hold no process, then rmdir them,
    /// retrying EBUSY. Idempotent; `Drop` calls it after `kill_all`.
    pub fn remove(&mut self) -> Result<(), SetupError> {
        let mut first_err = None;
        self.cpu_usage = None;
        self.accounts.clear();
        let mut kept = Vec::new();
        for mut d in std::mem::take(&mut self.dirs).into_iter().rev() {
            d.join = None;
            d.dir = None;
            let deadline = Instant::now() + Duration::from_secs(2);
            while populated(&d) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            let mut res = self.fs.rmdir(&d.path);
            for _ in 0..40 {
                match &res {
                    Err(e) if errno_of(e) == libc::EBUSY => {
                        std::thread::sleep(Duration::from_millis(25));
                        res = self.fs.rmdir(&d.path);
                    }
                    _ => break,
                }
            }
            match res {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    if first_err.is_none() {
                        first_err = Some(SetupError::new(
                            format!("cgroup rmdir {}", d.path.display()),
                            Some(errno_of(&e)),
                            "the job cgroup still holds processes; the next run's sweep removes it once empty",
                        ));
                    }
                    kept.push(d);
                }
            }
        }
        self.dirs = kept;
        self.removed = self.dirs.is_empty();
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// One Control per requested limit, for the record's `enforcement` section.
    pub fn controls(&self) -> Vec<Control> {
        self.outcomes
            .iter()
            .map(|o| Control::new(o.control, o.state, &o.mechanism, o.detail.clone()))
            .collect()
    }
}

impl Drop for JobCgroup {
    fn drop(&mut self) {
        if !self.removed && !self.dirs.is_empty() {
            self.kill_all();
            let _ = self.remove();
        }
    }
}

fn write_file_existing(path: &Path, value: &str) -> std::io::Result<()> {
    let mut f = OpenOptions::new().write(true).open(path)?;
    f.write_all(value.as_bytes())
}

fn populated(d: &JobDir) -> bool {
    if d.kind == Kind::V2 {
        if let Some(v) = read_keyed(&d.path.join("cgroup.events"), "populated") {
            return v != 0;
        }
    }
    !read_pids(&d.path).is_empty()
}

/// Format a pid in decimal into `buf` without allocating; returns the digits.
fn fmt_pid(pid: i32, buf: &mut [u8; 16]) -> &[u8] {
    let mut v = pid.unsigned_abs();
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if pid < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_format() {
        let mut b = [0u8; 16];
        assert_eq!(fmt_pid(0, &mut b), b"0");
        assert_eq!(fmt_pid(1234567, &mut b), b"1234567");
        assert_eq!(fmt_pid(i32::MAX, &mut b), b"2147483647");
    }
}
