//! Reading the host's cgroup hierarchies: which v2 and v1 mounts exist, which cgroup this
//! process is in on each (`/proc/self/cgroup`), which controllers our own v2 cgroup offers
//! and whether we may write there, and the CPU quota we run under. Separate from making job
//! cgroups (`create.rs`) because it only reads, takes every host path as a parameter (so
//! `cgroup_mock` tests run it on a temp dir), and its answer, [`HostCgroups`], is plain data
//! that doctor prints and `create` and `sweep_stale` consume.

use super::{HostCgroups, V1Host, V2Host, SUPERVISOR_LEAF};
use crate::sys;
use std::path::{Path, PathBuf};

/// Undo /proc/mounts octal escapes (`\040` for a space, ...).
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 4 <= b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 4], 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

const V1_CONTROLLERS: &[&str] = &[
    "cpu",
    "cpuacct",
    "cpuset",
    "memory",
    "devices",
    "freezer",
    "net_cls",
    "blkio",
    "perf_event",
    "net_prio",
    "hugetlb",
    "pids",
    "rdma",
    "misc",
];

fn read_words(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

fn can_write_dir(p: &Path) -> bool {
    sys::access(p, libc::W_OK | libc::X_OK).is_ok()
}

/// Join a cgroup path from /proc/self/cgroup ("/a/b") onto a mount point.
fn join_cg(mount: &Path, cg_path: &str) -> PathBuf {
    let rel = cg_path.trim_start_matches('/');
    if rel.is_empty() {
        mount.to_path_buf()
    } else {
        mount.join(rel)
    }
}

/// Work out what the cgroup filesystem under `root` offers to the process whose
/// `/proc/self/cgroup` and `/proc/mounts` are given. Mounts outside `root` are ignored.
pub fn detect(root: &Path, proc_self_cgroup: &str, proc_mounts: &str) -> HostCgroups {
    // /proc/self/cgroup: "id:controllers:path"; v2 is "0::path".
    let mut v2_path: Option<String> = None;
    let mut v1_paths: Vec<(Vec<String>, String)> = Vec::new();
    for line in proc_self_cgroup.lines() {
        let mut it = line.splitn(3, ':');
        let (Some(_id), Some(ctrls), Some(path)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        if ctrls.is_empty() {
            v2_path = Some(path.to_string());
        } else {
            let mut c: Vec<String> = ctrls.split(',').map(str::to_string).collect();
            c.sort();
            v1_paths.push((c, path.to_string()));
        }
    }
    let mut host = HostCgroups {
        root: root.to_path_buf(),
        ..Default::default()
    };
    for line in proc_mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        let mount = PathBuf::from(unescape_mount(f[1]));
        if !mount.starts_with(root) {
            continue;
        }
        match f[2] {
            "cgroup2" if host.v2.is_none() => {
                let Some(own) = v2_path.as_deref() else {
                    continue;
                };
                let own_dir = join_cg(&mount, own);
                let at_leaf = own_dir.file_name().is_some_and(|n| n == SUPERVISOR_LEAF);
                let base = match (at_leaf, own_dir.parent()) {
                    (true, Some(p)) => p.to_path_buf(),
                    _ => own_dir.clone(),
                };
                host.v2 = Some(V2Host {
                    controllers: read_words(&base.join("cgroup.controllers")),
                    subtree_control: read_words(&base.join("cgroup.subtree_control")),
                    writable: base.is_dir() && can_write_dir(&base),
                    base_is_own: !at_leaf,
                    mount,
                    base,
                });
            }
            "cgroup" => {
                let mut ctrls: Vec<String> = f[3]
                    .split(',')
                    .filter(|o| V1_CONTROLLERS.contains(o))
                    .map(str::to_string)
                    .collect();
                if ctrls.is_empty() {
                    continue; // name=systemd and friends: no resource controller
                }
                ctrls.sort();
                let Some((_, own)) = v1_paths.iter().find(|(c, _)| *c == ctrls) else {
                    continue;
                };
                let base = join_cg(&mount, own);
                host.v1.push(V1Host {
                    writable: base.is_dir() && can_write_dir(&base),
                    controllers: ctrls,
                    own_path: own.clone(),
                    mount,
                    base,
                });
            }
            _ => {}
        }
    }
    host
}

/// [`detect`] on this host's real `/sys/fs/cgroup`, `/proc/self/cgroup`, `/proc/mounts`.
pub fn detect_host() -> HostCgroups {
    let cg = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    detect(Path::new("/sys/fs/cgroup"), &cg, &mounts)
}

impl HostCgroups {
    /// The CPUs' worth of bandwidth our own cgroup and its ancestors allow (`cpu.max` in v2,
    /// `cpu.cfs_quota_us / cpu.cfs_period_us` in v1), rounded up; None when no quota binds
    /// us. A container given `--cpus 4` on a 64-core host has 4 here, not 64.
    pub fn cpu_quota_cores(&self) -> Option<usize> {
        let mut best: Option<usize> = None;
        let mut take = |quota: u64, period: u64| {
            if quota > 0 && period > 0 {
                let cores = quota.div_ceil(period).max(1) as usize;
                best = Some(best.map_or(cores, |b| b.min(cores)));
            }
        };
        if let Some(v2) = &self.v2 {
            for dir in up_to(&v2.base, &v2.mount) {
                let text = std::fs::read_to_string(dir.join("cpu.max")).unwrap_or_default();
                let mut f = text.split_whitespace();
                if let (Some(q), Some(p)) = (f.next(), f.next()) {
                    if let (Ok(q), Ok(p)) = (q.parse(), p.parse()) {
                        take(q, p);
                    }
                }
            }
        }
        for h in self
            .v1
            .iter()
            .filter(|h| h.controllers.iter().any(|c| c == "cpu"))
        {
            for dir in up_to(&h.base, &h.mount) {
                let read = |f: &str| {
                    std::fs::read_to_string(dir.join(f))
                        .ok()
                        .and_then(|t| t.trim().parse::<i64>().ok())
                };
                if let (Some(q), Some(p)) = (read("cpu.cfs_quota_us"), read("cpu.cfs_period_us")) {
                    if q > 0 && p > 0 {
                        take(q as u64, p as u64);
                    }
                }
            }
        }
        best
    }
}

/// `dir` and each of its parents, up to and including `top`.
fn up_to(dir: &Path, top: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut d = Some(dir);
    while let Some(p) = d {
        if !p.starts_with(top) {
            break;
        }
        out.push(p.to_path_buf());
        d = p.parent();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescape() {
        assert_eq!(unescape_mount(r"/a\040b"), "/a b");
        assert_eq!(unescape_mount(r"/plain"), "/plain");
        assert_eq!(unescape_mount(r"/x\\"), r"/x\\");
    }
}
