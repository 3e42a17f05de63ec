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
    unimplemented!("seccomp plan")
}
