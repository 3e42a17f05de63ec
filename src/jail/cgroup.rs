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
