//! A cgroup filesystem on a plain directory, for tests: [`FakeCgroupFs`] does on mkdir and
//! rmdir what the kernel does on cgroupfs, so the job code runs against a temp dir exactly
//! as it runs on the host.
//!
//! - mkdir under a cgroup v2 directory (one with `cgroup.subtree_control`) creates the core
//!   interface files and those of every controller the parent enables for its children,
//!   with the values a fresh kernel cgroup has; `cgroup.controllers` lists those
//!   controllers.
//! - mkdir anywhere else is a v1 hierarchy: the child gets the parent's interface files
//!   (a v1 child has the same files as its parent), empty, and `cgroup.procs` and `tasks`.
//! - rmdir refuses a cgroup that holds a process or a child cgroup (EBUSY, as the kernel
//!   does) and otherwise takes the interface files away with the directory.
//!
//! A test builds the host's own cgroups as the kernel shows them (their interface files
//! included) and passes `&FakeCgroupFs` to `JobCgroup::create_in` and `sweep_stale_in`.

use super::CgroupFs;
use std::path::Path;

/// The kernel's cgroupfs behaviour on a plain directory (see the module documentation).
#[derive(Debug, Clone, Copy)]
pub struct FakeCgroupFs;

/// Files every v2 cgroup has, with a fresh cgroup's contents.
const V2_CORE: &[(&str, &str)] = &[
    ("cgroup.procs", ""),
    ("cgroup.events", "populated 0\nfrozen 0\n"),
    ("cgroup.subtree_control", ""),
    ("cgroup.kill", ""),
    ("cgroup.type", "domain\n"),
    ("cpu.stat", "usage_usec 0\nuser_usec 0\nsystem_usec 0\n"),
];

/// The files a v2 controller adds to a cgroup it is enabled in.
fn v2_controller_files(controller: &str) -> &'static [(&'static str, &'static str)] {
    match controller {
        "memory" => &[
            ("memory.max", "max\n"),
            ("memory.swap.max", "max\n"),
            ("memory.oom.group", "0\n"),
            ("memory.peak", "0\n"),
            ("memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n"),
        ],
        "pids" => &[("pids.max", "max\n"), ("pids.events", "max 0\n")],
        "cpu" => &[("cpu.max", "max 100000\n")],
        _ => &[],
    }
}

fn ebusy() -> std::io::Error {
    std::io::Error::from_raw_os_error(libc::EBUSY)
}

impl FakeCgroupFs {
    /// The interface files a new cgroup under `parent` gets, with their contents.
    fn interface_files(parent: &Path) -> Vec<(String, String)> {
        if let Ok(subtree) = std::fs::read_to_string(parent.join("cgroup.subtree_control")) {
            let enabled: Vec<&str> = subtree
                .split_whitespace()
                .map(|c| c.trim_start_matches('+'))
                .filter(|c| !c.starts_with('-'))
                .collect();
            let mut files: Vec<(String, String)> = V2_CORE
                .iter()
                .map(|(f, v)| (f.to_string(), v.to_string()))
                .collect();
            files.push((
                "cgroup.controllers".into(),
                format!("{}\n", enabled.join(" ")),
            ));
            for c in &enabled {
                let own = v2_controller_files(c).iter();
                files.extend(own.map(|(f, v)| (f.to_string(), v.to_string())));
            }
            return files;
        }
        let mut files = vec![
            ("cgroup.procs".to_string(), String::new()),
            ("tasks".to_string(), String::new()),
        ];
        if let Ok(rd) = std::fs::read_dir(parent) {
            for ent in rd.flatten() {
                let name = ent.file_name().to_string_lossy().into_owned();
                if ent.file_type().is_ok_and(|t| t.is_file())
                    && name != "cgroup.procs"
                    && name != "tasks"
                {
                    files.push((name, String::new()));
                }
            }
        }
        files
    }
}

impl CgroupFs for FakeCgroupFs {
    fn mkdir(&self, path: &Path) -> std::io::Result<()> {
        let parent = path
            .parent()
            .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        let files = Self::interface_files(parent);
        std::fs::create_dir(path)?;
        for (name, contents) in files {
            std::fs::write(path.join(name), contents)?;
        }
        Ok(())
    }

    fn rmdir(&self, path: &Path) -> std::io::Result<()> {
        let procs = std::fs::read_to_string(path.join("cgroup.procs")).unwrap_or_default();
        if !procs.trim().is_empty() {
            return Err(ebusy());
        }
        let mut files = Vec::new();
        for ent in std::fs::read_dir(path)?.flatten() {
            if ent.file_type().is_ok_and(|t| t.is_dir()) {
                return Err(ebusy());
            }
            files.push(ent.path());
        }
        for f in files {
            std::fs::remove_file(f)?;
        }
        std::fs::remove_dir(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errno(r: std::io::Result<()>) -> Option<i32> {
        r.err().and_then(|e| e.raw_os_error())
    }

    #[test]
    fn a_v2_child_gets_the_files_its_parent_enables_and_rmdir_takes_them() {
        let t = tempfile::tempdir().unwrap();
        let own = t.path();
        std::fs::write(own.join("cgroup.subtree_control"), "+pids memory\n").unwrap();
        let job = own.join("job");
        FakeCgroupFs.mkdir(&job).unwrap();
        assert_eq!(errno(FakeCgroupFs.mkdir(&job)), Some(libc::EEXIST));
        let read = |f: &str| std::fs::read_to_string(job.join(f)).unwrap();
        assert_eq!(read("cgroup.controllers"), "pids memory\n");
        assert_eq!(read("pids.max"), "max\n");
        assert!(job.join("memory.oom.group").exists() && !job.join("cpu.max").exists());
        // Busy while it holds a process or a child cgroup, as on cgroupfs.
        std::fs::write(job.join("cgroup.procs"), "42\n").unwrap();
        assert_eq!(errno(FakeCgroupFs.rmdir(&job)), Some(libc::EBUSY));
        std::fs::write(job.join("cgroup.procs"), "").unwrap();
        FakeCgroupFs.mkdir(&job.join("child")).unwrap();
        assert_eq!(errno(FakeCgroupFs.rmdir(&job)), Some(libc::EBUSY));
        FakeCgroupFs.rmdir(&job.join("child")).unwrap();
        FakeCgroupFs.rmdir(&job).unwrap();
        assert!(!job.exists());
    }

    #[test]
    fn a_v1_child_has_its_parents_files_empty() {
        let t = tempfile::tempdir().unwrap();
        let own = t.path();
        std::fs::write(own.join("memory.limit_in_bytes"), "9223372036854771712\n").unwrap();
        let job = own.join("job");
        FakeCgroupFs.mkdir(&job).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&job)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["cgroup.procs", "memory.limit_in_bytes", "tasks"]);
        assert_eq!(
            std::fs::read_to_string(job.join("memory.limit_in_bytes")).unwrap(),
            ""
        );
    }
}
