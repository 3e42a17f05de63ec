//! The jail's CPU time: the cgroup's counter when there is one, else the kernel's
//! per-process accounts of every process of the jail, walked from init down. Separate from
//! the loop because it is the one figure read both while the jail runs (the CPU limit's
//! checks, a delivery's base, a session call's account) and by `hold.rs`'s walk of the
//! jail's processes, and its procfs reading has its own order argument (parents first).

use crate::cgroup::JobCgroup;
use crate::spawn::Spawned;
use crate::sys;

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
pub(super) fn children_of(pid: i32) -> Vec<i32> {
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
