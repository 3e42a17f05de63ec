//! Seccomp allowlist (HELPER-OWNED: being written).
use crate::policy::{Requirement, SeccompPolicy};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SeccompPlan {
    pub requirement: Requirement,
    pub groups: Vec<String>,
    /// Resolved syscall names, sorted.
    pub allowed: Vec<String>,
    /// Syscalls refused with an errno (name, errno) instead of stopping the run.
    pub errno: Vec<(String, i32)>,
}

pub fn plan(_p: &SeccompPolicy) -> Result<SeccompPlan, String> {
    Ok(SeccompPlan {
        requirement: _p.requirement,
        groups: _p.allow_groups.clone(),
        allowed: vec![],
        errno: vec![],
    })
}

// ---- temporary stub until the seccomp branch lands ----
pub struct Filter;
pub fn compile(_plan: &SeccompPlan) -> Result<Filter, crate::jail::SetupError> {
    Ok(Filter)
}
impl Filter {
    pub fn instruction_count(&self) -> usize {
        0
    }
}
pub fn install(_f: &Filter) -> Result<std::os::fd::RawFd, i32> {
    Ok(-1)
}
pub fn syscall_name(_nr: i64) -> Option<&'static str> {
    None
}
pub fn receive_notification(_l: std::os::fd::BorrowedFd<'_>) -> std::io::Result<(u32, i32)> {
    Err(std::io::Error::from_raw_os_error(libc::ENOSYS))
}
pub fn enforcement(_p: &SeccompPlan, _f: &Filter) -> crate::jail::Control {
    crate::jail::Control::new(
        "seccomp",
        crate::jail::ControlState::Unavailable,
        "stub",
        "",
    )
}
