//! The seccomp part of the plan: a policy's `[seccomp]` table resolved into the jail's
//! [`SeccompPlan`] (`agentjail_jail::syscall_groups::resolve`: a sorted allowlist and the
//! syscalls refused with an errno). Pure; the jail compiles the result into BPF
//! (`jail::seccomp`).

use crate::policy::SeccompPolicy;
pub use agentjail_jail::plan::SeccompPlan;
use agentjail_jail::syscall_groups::ResolveError;

/// Resolve a policy's groups into the plan: the sorted allowed syscalls and the errno list.
/// An unknown group or syscall name, or a syscall no group may allow, is an error naming it.
pub fn plan(p: &SeccompPolicy) -> Result<SeccompPlan, ResolveError> {
    agentjail_jail::syscall_groups::resolve(p.requirement, &p.allow_groups, &p.errno_syscalls)
}
