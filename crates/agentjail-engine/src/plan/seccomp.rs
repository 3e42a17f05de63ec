//! The seccomp part of the plan: a policy's `[seccomp]` table resolved into the jail's
//! [`SeccompPlan`] (`agentjail_jail::syscall_groups::resolve`: a sorted allowlist and the
//! syscalls refused with an errno). Pure; the jail compiles the result into BPF
//! (`jail::seccomp`).

use crate::policy::SeccompPolicy;
pub use agentjail_jail::plan::SeccompPlan;
use agentjail_jail::syscall_groups::ResolveError;

/// Resolve a policy's groups into the plan: the sorted allowed syscalls and the errno list.
/// An unknown group or syscall name, or a syscall no group may allow, is an error naming it.
/// Observe mode (`agentjail learn`) also shows the allowed opens to the supervisor
/// (`SeccompPlan::observe_opens`); every other plan leaves them allowed outright.
pub fn plan(p: &SeccompPolicy) -> Result<SeccompPlan, ResolveError> {
    let mut plan =
        agentjail_jail::syscall_groups::resolve(p.requirement, &p.allow_groups, &p.errno_syscalls)?;
    plan.observe_opens = p.observe;
    Ok(plan)
}

/// The syscall numbers observe mode's filter shows the supervisor to be seen (empty
/// outside observe mode): the supervisor's `SuperviseLimits::observe_opens`.
pub fn observe_opens(p: &SeccompPolicy) -> Vec<u32> {
    if !p.observe {
        return Vec::new();
    }
    plan(p)
        .ok()
        .and_then(|s| agentjail_jail::seccomp::observed_opens(&s).ok())
        .unwrap_or_default()
}
