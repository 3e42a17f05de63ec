//! Parallelism without a cpu cgroup: when the plan asks for a CPU bandwidth cap of N CPUs
//! (`cgroup.cpu_max`) and no cpu cgroup enforces it (nobody on a host that delegates none),
//! the jail is pinned to N of the CPUs agentjail may use, so its processes together can
//! never run on more than N at once. The parent sets the jail's init's affinity right
//! after clone, before the child may do anything: every process and thread of the jail
//! inherits it, and the seccomp filter refuses `sched_setaffinity` with EPERM
//! (syscall_groups::BUILTIN_ERRNO), so the program cannot widen it.
//!
//! Which N: round-robin over the launcher's own allowed CPUs (its affinity mask, which is
//! also its cpuset), so concurrent jails of one server spread over the host instead of all
//! landing on the first CPU; separate `agentjail run` processes start at an offset given by
//! their pid, which spreads them too.

use crate::sys;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The whole CPUs a cpu.max of (quota_us, period_us) allows, rounded up (at least 1); None
/// for no quota.
pub fn quota_cpus(cpu_max: Option<(u64, u64)>) -> Option<usize> {
    let (quota, period) = cpu_max?;
    if quota == 0 || period == 0 {
        return None;
    }
    Some(quota.div_ceil(period).max(1) as usize)
}

/// `n` CPUs of `allowed` starting at the `turn`th, wrapping; all of `allowed` when it has
/// no more than `n`.
pub fn pick(allowed: &[usize], n: usize, turn: usize) -> Vec<usize> {
    if allowed.len() <= n {
        return allowed.to_vec();
    }
    (0..n)
        .map(|i| allowed[(turn + i) % allowed.len()])
        .collect()
}

/// This process's next turn: a counter, offset by the pid.
fn next_turn(n: usize) -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    NEXT.fetch_add(n, Ordering::Relaxed)
        .wrapping_add(std::process::id() as usize)
}

/// Pin process `pid` (a new jail's init, not yet released) to `n` of our allowed CPUs.
/// Returns the CPUs chosen.
pub fn pin(pid: i32, n: usize) -> Result<Vec<usize>, i32> {
    let allowed = sys::affinity_list();
    if allowed.is_empty() {
        return Err(libc::EINVAL);
    }
    let cpus = pick(&allowed, n, next_turn(n));
    sys::set_affinity(pid, &cpus)?;
    Ok(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_is_rounded_up_to_whole_cpus() {
        assert_eq!(quota_cpus(Some((100_000, 100_000))), Some(1));
        assert_eq!(quota_cpus(Some((150_000, 100_000))), Some(2));
        assert_eq!(quota_cpus(Some((10_000, 100_000))), Some(1));
        assert_eq!(quota_cpus(None), None);
        assert_eq!(quota_cpus(Some((0, 100_000))), None);
    }

    #[test]
    fn turns_spread_over_the_allowed_cpus() {
        let allowed = [2, 3, 5, 7];
        assert_eq!(pick(&allowed, 1, 0), vec![2]);
        assert_eq!(pick(&allowed, 1, 1), vec![3]);
        assert_eq!(pick(&allowed, 2, 3), vec![7, 2]);
        assert_eq!(pick(&allowed, 4, 9), vec![2, 3, 5, 7]);
        assert_eq!(pick(&allowed, 8, 9), vec![2, 3, 5, 7]);
        // Consecutive turns of one process never pick the same CPU twice in a row.
        let firsts: Vec<usize> = (0..4).map(|t| pick(&allowed, 1, t)[0]).collect();
        assert_eq!(firsts, vec![2, 3, 5, 7]);
    }
}
