//! The jail as plain data.
//!
//! `JailPlan::build` turns a policy (plus the command to run) into an ordered list of
//! setup operations and limits. No syscalls happen here: a reviewer can print the plan
//! (`agentjail exec --print-plan`), a test can compare it by equality, and the jail code
//! only walks it. Mirrors bubblewrap's "command line → list of setup ops → apply".

use crate::jail::cgroup::CgroupLimits;
use crate::jail::landlock::LandlockPlan;
use crate::jail::seccomp::SeccompPlan;
use crate::policy::{Policy, Requirement};
use serde::Serialize;

/// The uid and gid the jailed program has inside its user namespace.
pub const JAIL_UID: u32 = 1000;
pub const JAIL_GID: u32 = 1000;
/// When agentjail runs as host root, the jail uid maps to this unprivileged host uid
/// (nobody), never to host root.
pub const ROOT_LAUNCH_HOST_UID: u32 = 65534;
pub const ROOT_LAUNCH_HOST_GID: u32 = 65534;
pub const JAIL_HOSTNAME: &str = "agentjail";

/// One step of building the jail's root, applied in order inside the new mount namespace
/// before pivot_root. Paths are absolute paths as seen inside the jail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum MountOp {
    /// Bind a host path read-only (nosuid, nodev) at the same place.
    BindReadOnly { source: String, target: String },
    /// Bind a host device node (null, zero, ...) read-write, nosuid, noexec.
    BindDevice { source: String, target: String },
    /// Recreate a host symlink (merged-/usr hosts have /lib -> usr/lib).
    Symlink { target: String, link: String },
    /// Create a directory in the root tmpfs.
    Dir { path: String, mode: u32 },
    /// Write a synthesized file (never copied from the host).
    File { path: String, contents: String, mode: u32 },
    /// A fresh procfs for the jail's pid namespace.
    Proc { target: String },
    /// Hide a path under the new /proc (bind an empty read-only file or dir over it).
    MaskPath { path: String },
    /// Make a /proc subtree read-only.
    ReadOnlyPath { path: String },
    /// A size- and inode-capped tmpfs, owned by the jail uid.
    Tmpfs { target: String, size_bytes: u64, inodes: u64, mode: u32 },
}

/// A resource limit set with setrlimit(2) in the child.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rlimit {
    pub resource: RlimitKind,
    pub soft: u64,
    pub hard: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RlimitKind {
    Core,
    FileSize,
    OpenFiles,
    AddressSpace,
    Cpu,
    Nproc,
    MemLock,
    MsgQueue,
}

/// What the supervisor enforces while the program runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SuperviseLimits {
    pub wall_time_ms: u64,
    pub cpu_time_ms: u64,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JailPlan {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: String,
    pub hostname: String,
    pub uid: u32,
    pub gid: u32,
    /// Size cap of the root tmpfs itself (it only holds mount points and /etc).
    pub root_tmpfs_bytes: u64,
    pub mounts: Vec<MountOp>,
    pub rlimits: Vec<Rlimit>,
    pub cgroup: CgroupLimits,
    pub cgroup_requirement: Requirement,
    pub landlock: LandlockPlan,
    pub seccomp: SeccompPlan,
    pub network: bool,
    pub limits: SuperviseLimits,
}
