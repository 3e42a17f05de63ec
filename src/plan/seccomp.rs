//! The seccomp part of the plan: a policy's groups resolved into a sorted allowlist and the
//! syscalls refused with an errno. Pure: names are checked against the syscall table and
//! the never-allowed list; the jail compiles the result into BPF (`jail::seccomp`).

use crate::policy::syscall_groups::{group, GROUPS, NEVER};
use crate::policy::{Requirement, SeccompPolicy};
use crate::syscalls::{syscall_number, ENOSYS, EPERM};
use serde::Serialize;
use std::collections::BTreeSet;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SeccompPlan {
    pub requirement: Requirement,
    pub groups: Vec<String>,
    /// Resolved syscall names, sorted.
    pub allowed: Vec<String>,
    /// Syscalls refused with an errno (name, errno) instead of stopping the run.
    pub errno: Vec<(String, i32)>,
}

/// Syscalls always refused with an errno (harmless probes a runtime makes and handles):
/// `clone3` (its flags are behind a pointer; glibc falls back to `clone`, whose flags are
/// filtered) and `pkey_alloc` (V8 probes memory protection keys for its wasm code; without a
/// key it uses plain mprotect, measured with node 20.20; refusing the probe keeps
/// `pkey_mprotect`/`pkey_free` out of every jail, PKU hosts included).
const BUILTIN_ERRNO: &[(&str, i32)] = &[("clone3", ENOSYS), ("pkey_alloc", ENOSYS)];

/// The errno for the policy's `errno_syscalls`.
const POLICY_ERRNO: i32 = EPERM;

/// Resolve a policy's groups into the plan: the sorted allowed syscalls and the errno list.
/// An unknown group or syscall name, or a syscall from [`NEVER`] in the allowlist, is an
/// error naming it.
pub fn plan(p: &SeccompPolicy) -> Result<SeccompPlan, String> {
    let mut groups: Vec<String> = Vec::new();
    let mut allowed: BTreeSet<&'static str> = BTreeSet::new();
    for g in &p.allow_groups {
        let syscalls = group(g).ok_or_else(|| {
            let known: Vec<&str> = GROUPS.iter().map(|(n, _)| *n).collect();
            format!(
                "unknown seccomp group {g:?}; known groups: {}",
                known.join(", ")
            )
        })?;
        if !groups.contains(g) {
            groups.push(g.clone());
        }
        allowed.extend(syscalls.iter().copied());
    }
    let mut errno: Vec<(String, i32)> = Vec::new();
    for (name, e) in BUILTIN_ERRNO {
        errno.push(((*name).to_string(), *e));
    }
    for name in &p.errno_syscalls {
        if syscall_number(name).is_none() {
            return Err(format!(
                "unknown syscall {name:?} in seccomp.errno_syscalls (x86_64 names, e.g. \"sched_setaffinity\")"
            ));
        }
        if !errno.iter().any(|(n, _)| n == name) {
            errno.push((name.clone(), POLICY_ERRNO));
        }
    }
    // An errno entry wins over the allowlist: it can only tighten.
    allowed.retain(|s| !errno.iter().any(|(n, _)| n == s));
    for s in &allowed {
        if syscall_number(s).is_none() {
            return Err(format!(
                "seccomp group syscall {s:?} is not an x86_64 syscall"
            ));
        }
        if NEVER.contains(s) {
            return Err(format!(
                "seccomp group allows {s:?}, which is never allowed"
            ));
        }
    }
    Ok(SeccompPlan {
        requirement: p.requirement,
        groups,
        allowed: allowed.into_iter().map(str::to_string).collect(),
        errno,
    })
}
