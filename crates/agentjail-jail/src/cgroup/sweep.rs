//! Removing stale job cgroups: a SIGKILLed launcher cannot clean up, so the next run
//! removes the `agentjail-<pid>-*` directories under our own cgroups whose launcher is dead
//! and which hold no process. Separate because it touches other runs' directories, never
//! its own job's, and must only ever rmdir an empty one.

use super::{read_keyed, read_pids, CgroupFs, HostCgroups, Kernel, JOB_PREFIX};
use crate::sys;
use std::path::Path;

/// Remove stale `agentjail-<pid>-*` job cgroups under our own cgroups whose launcher pid is
/// dead and which hold no process (a SIGKILLed agentjail cannot clean up; the next run does).
/// Returns how many directories were removed.
pub fn sweep_stale(host: &HostCgroups) -> usize {
    sweep_stale_in(&Kernel, host)
}

/// As [`sweep_stale`], removing the directories through `fs`.
pub fn sweep_stale_in(fs: &dyn CgroupFs, host: &HostCgroups) -> usize {
    // Only hierarchies `create` can make a job directory in (memory, pids, cpu, cpuacct):
    // listing the other v1 hierarchies (devices, freezer, blkio, ...) on every launch found
    // nothing and cost a directory read each.
    let mut bases: Vec<&Path> = host
        .v1
        .iter()
        .filter(|h| h.writable)
        .filter(|h| {
            h.controllers
                .iter()
                .any(|c| JOB_CONTROLLERS.contains(&c.as_str()))
        })
        .map(|h| h.base.as_path())
        .collect();
    if let Some(v2) = &host.v2 {
        if v2.writable {
            bases.push(&v2.base);
        }
    }
    let me = std::process::id();
    let mut removed = 0;
    for base in bases {
        let Ok(rd) = std::fs::read_dir(base) else {
            continue;
        };
        for ent in rd.flatten() {
            let name = ent.file_name();
            let Some(pid) = stale_launcher_pid(&name.to_string_lossy()) else {
                continue;
            };
            if pid == me || launcher_alive(pid) {
                continue;
            }
            let path = ent.path();
            if !read_pids(&path).is_empty() {
                continue;
            }
            if let Some(v) = read_keyed(&path.join("cgroup.events"), "populated") {
                if v != 0 {
                    continue;
                }
            }
            if fs.rmdir(&path).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}

/// The v1 controllers whose hierarchies `JobCgroup::create` makes job directories in.
const JOB_CONTROLLERS: &[&str] = &["memory", "pids", "cpu", "cpuacct"];

/// `agentjail-<pid>-<run>` → pid. The supervisor leaf and anything else → None.
fn stale_launcher_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(JOB_PREFIX)?;
    let (pid, run) = rest.split_once('-')?;
    if run.is_empty() {
        return None;
    }
    pid.parse().ok()
}

fn launcher_alive(pid: u32) -> bool {
    let Ok(p) = i32::try_from(pid) else {
        return false;
    };
    // Signal 0: permission and existence check only.
    !matches!(sys::kill(p, 0), Err(libc::ESRCH))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_names() {
        assert_eq!(stale_launcher_pid("agentjail-123-abc"), Some(123));
        assert_eq!(stale_launcher_pid("agentjail-supervisor"), None);
        assert_eq!(stale_launcher_pid("agentjail-123-"), None);
        assert_eq!(stale_launcher_pid("other-1-2"), None);
    }
}
