//! The jail, attacked: one test binary for every mechanism and every escape attempt, each
//! subject a module (`cargo test --test jail -- MODULE::` runs one).
//!
//! - `python_attacks`, `node_attacks`, `twins`: hostile programs through the real
//!   `agentjail exec`, as root and as nobody (`twins`: the attacks that are the same in
//!   Python and JavaScript, one table driving both languages);
//! - `redteam`: red-team attacks on the embedded default policy;
//! - `seccomp_filter`, `landlock_rules`, `cgroup_mock`, `cgroup_host`, `cgroup_v2`: each
//!   mechanism alone (`cgroup_v2` proves itself in the VM: scripts/vm-test.sh);
//! - `host_layouts`, `pythons`, `perf_invariants`: the hosts and interpreters the jail meets,
//!   and what the launcher hands the program;
//! - `controls`: the control run of the attack tables (every case with no jail);
//! - `faults` (only with `--features fault-injection`): every setup stage made to fail.

#[path = "../common/mod.rs"]
mod common;

mod cgroup_host;
mod cgroup_mock;
mod cgroup_v2;
mod controls;
#[cfg(feature = "fault-injection")]
mod faults;
mod host_layouts;
mod landlock_rules;
mod network;
mod node_attacks;
mod perf_invariants;
mod python_attacks;
mod pythons;
mod redteam;
mod seccomp_filter;
mod twins;
