//! The jail, as the main crate names it: the jail crate's mechanisms (`agentjail_jail`,
//! crates/agentjail-jail) under their old paths, so `agentjail::jail::...` and
//! `crate::jail::...` keep working while callers move to the crate's own paths.
//! `seccomp::plan` is the main crate's: it reads a policy's `[seccomp]` table.

pub use agentjail_jail::{
    caps, cgroup, child, container, landlock, mount, prepared, report, rlimit, spawn, sys, userns,
    Control, ControlState, JailError, SetupError,
};

/// The seccomp filter (`agentjail_jail::seccomp`), and the plan of a policy's table.
pub mod seccomp {
    pub use crate::plan::seccomp::plan;
    pub use agentjail_jail::seccomp::*;
}
