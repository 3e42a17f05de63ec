//! cgroup limits (HELPER-OWNED: being written).
use serde::Serialize;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CgroupLimits {
    pub memory_max: Option<u64>,
    /// 0: no swap, so the memory limit is a real limit.
    pub swap_max: Option<u64>,
    pub pids_max: Option<u64>,
    /// (quota_us, period_us): cpu.max.
    pub cpu_max: Option<(u64, u64)>,
}

// ---- temporary stub until the cgroup branch lands ----
pub struct HostCgroups;
pub fn detect_host() -> HostCgroups {
    HostCgroups
}
pub fn sweep_stale(_h: &HostCgroups) -> usize {
    0
}
#[derive(Debug, Default, Clone)]
pub struct CgroupStats {
    pub memory_peak_bytes: Option<u64>,
    pub oom_kills: u64,
    pub pids_limit_hits: u64,
    pub cpu_usage_us: Option<u64>,
}
pub struct JobCgroup;
impl JobCgroup {
    pub fn create(
        _h: &HostCgroups,
        _n: &str,
        _l: &CgroupLimits,
    ) -> Result<JobCgroup, crate::jail::SetupError> {
        Ok(JobCgroup)
    }
    pub fn v2_dir_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        None
    }
    pub fn attach(&self, _pid: i32) -> Result<(), crate::jail::SetupError> {
        Ok(())
    }
    pub fn stats(&self) -> CgroupStats {
        CgroupStats::default()
    }
    pub fn cpu_usage_us(&self) -> Option<u64> {
        None
    }
    pub fn kill_all(&self) {}
    pub fn remove(&mut self) -> Result<(), crate::jail::SetupError> {
        Ok(())
    }
    pub fn controls(&self) -> Vec<crate::jail::Control> {
        vec![]
    }
}
