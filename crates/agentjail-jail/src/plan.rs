//! The jail's input: a plan of plain data.
//!
//! The engine crate builds a [`JailPlan`] from a policy (`agentjail_engine::plan::build`) and the
//! jail only walks it: an ordered list of setup operations and limits. Nothing here knows
//! what a policy, an action or a record is; a reviewer can print a plan
//! (`agentjail exec --print-plan`) and a test can compare one by equality.

use serde::{Deserialize, Serialize};

/// Whether a control must be enforced (fail closed) or may degrade (recorded). The policy
/// file's `requirement` keys hold this type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Requirement {
    /// The run stops with `sandbox_unavailable:<control>` when the host cannot enforce it.
    Required,
    /// Enforced when the host can; otherwise the record says `degraded`.
    BestEffort,
}

/// The seccomp part of the plan: the groups a policy named, resolved
/// ([`crate::syscall_groups::resolve`]) into a sorted allowlist and the syscalls refused
/// with an errno; the jail compiles it into BPF ([`crate::seccomp::compile`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SeccompPlan {
    pub requirement: Requirement,
    pub groups: Vec<String>,
    /// Resolved syscall names, sorted.
    pub allowed: Vec<String>,
    /// Syscalls refused with an errno (name, errno) instead of stopping the run.
    pub errno: Vec<(String, i32)>,
    /// Refuse (EPERM) every mode with S_ISUID or S_ISGID given to chmod, fchmod, fchmodat,
    /// fchmodat2, creat, open, openat (and mknod, mknodat where allowed): the jail writes a
    /// host directory, where such a bit would make a set-id program for the host's users.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub deny_setid_modes: bool,
    /// Observe mode (`agentjail learn` only, never a policy key): the open family the
    /// allowlist allows (open, openat, openat2; [`crate::seccomp::observed_opens`]) goes to
    /// the supervisor, which reads the path and answers SECCOMP_USER_NOTIF_FLAG_CONTINUE:
    /// the kernel then runs it as allowed, the mounts and landlock decide as ever. Off in
    /// every other run: their filter is unchanged.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub observe_opens: bool,
}

/// The job cgroup's limits (cgroup v2 names; v1 equivalents are chosen by the jail).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CgroupLimits {
    pub memory_max: Option<u64>,
    /// 0: no swap, so the memory limit is a real limit.
    pub swap_max: Option<u64>,
    pub pids_max: Option<u64>,
    /// (quota_us, period_us): cpu.max.
    pub cpu_max: Option<(u64, u64)>,
}

/// What landlock grants, as jail paths; the jail turns it into a ruleset for the host's ABI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LandlockPlan {
    pub requirement: Requirement,
    pub min_abi: u32,
    /// Paths (inside the jail) that may be read and executed.
    pub read_exec: Vec<String>,
    /// Paths (inside the jail) that may be read, written, created in.
    pub read_write: Vec<String>,
    /// Device files that may be read and written (/dev/null, ...).
    pub devices: Vec<String>,
    pub deny_tcp: bool,
    /// TCP ports the program may still connect to when `deny_tcp` (landlock ABI ≥ 4): the
    /// network allowlist's proxy port on the jail's own loopback.
    pub connect_tcp_ports: Vec<u16>,
    pub scope_abstract_unix: bool,
    pub scope_signals: bool,
}

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
    /// Write a synthesized file (never copied from the host). Printed as its size and
    /// sha256.
    File {
        path: String,
        #[serde(serialize_with = "digest_of")]
        contents: Vec<u8>,
        mode: u32,
    },
    /// Bind a host input (see [`HostInput`]) read-only, nosuid, nodev, noexec.
    BindInput {
        root: String,
        relative: String,
        target: String,
    },
    /// Bind a host directory read-write, nosuid, nodev, noexec (a workspace's `host_dir`):
    /// reached beneath `root` without following any symlink, like [`MountOp::BindInput`],
    /// and bound through the opened directory (not recursively: a mount beneath it on the
    /// host is not carried in).
    BindHostDir {
        root: String,
        relative: String,
        target: String,
    },
    /// A fresh procfs for the jail's pid namespace.
    Proc { target: String },
    /// Hide a path under the new /proc (bind an empty read-only file or dir over it).
    MaskPath { path: String },
    /// Make a /proc subtree read-only.
    ReadOnlyPath { path: String },
    /// A size- and inode-capped tmpfs, owned by the jail uid.
    Tmpfs {
        target: String,
        size_bytes: u64,
        inodes: u64,
        mode: u32,
    },
}

fn digest_of<S: serde::Serializer>(contents: &[u8], s: S) -> Result<S::Ok, S::Error> {
    use sha2::Digest;
    s.collect_str(&format_args!(
        "{} bytes, sha256 {:x}",
        contents.len(),
        sha2::Sha256::digest(contents)
    ))
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
    /// Bytes of the runner's reports kept (the reply pipe); past them reports are dropped,
    /// never a stop. At least [`crate::supervise::REPLY_CAP`] in practice: the engine adds
    /// the policy's rich-results allowance.
    pub reply_bytes: u64,
    /// Observe mode (`agentjail learn` only, never a policy key): a syscall outside the
    /// allowlist is answered with `ENOSYS` by the supervisor (it never runs: the kernel
    /// holds it until the answer, and an errno answer cannot let it continue) and its name
    /// is noted in [`crate::supervise::Outcome::observed_syscalls`], instead of stopping the
    /// run. Every other control is as in a normal run.
    pub observe_syscalls: bool,
    /// Observe mode: the syscall numbers the filter sends to the listener only to be seen
    /// ([`SeccompPlan::observe_opens`]; [`crate::seccomp::observed_opens`] of the plan): the
    /// supervisor notes the path and lets each one continue. Empty in every other run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub observe_opens: Vec<u32>,
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
    /// The network allowlist (`network.mode = "allowlist"`): the child brings the jail's
    /// loopback up and listens on 127.0.0.1:PORT there, and the supervisor takes the
    /// listening socket (its proxy accepts on it from outside). None: loopback stays down.
    pub net_proxy_port: Option<u16>,
    pub limits: SuperviseLimits,
    /// The program is agentjail's runner: it gets the job pipe (fd 3) and the reply pipe
    /// (fd 4) besides stdio. Off for `exec`, whose command keeps only fds 0-2.
    pub runner_fds: bool,
    /// Files that come after the jail started (a warm jail's job files): the child builds
    /// the whole root, then waits with it still writable until the parent has written the
    /// job's files into this directory ([`crate::launch::StartedJail::place_late`]); only
    /// then is the root sealed and the program started. None: every file is in `mounts`.
    pub late_files: Option<LateFiles>,
}

/// Where a jail started ahead of its job takes the job's files, and the room kept for them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LateFiles {
    /// An absolute directory of the jail's root tmpfs that the plan's `mounts` create (a
    /// `Dir`, not a mount point: the files must be sealed with the root).
    pub dir: String,
    /// Bytes and inodes the root tmpfs gets on top of the plan's for them.
    pub bytes: u64,
    pub inodes: u64,
}

/// One late file: its path beneath [`LateFiles::dir`] (relative, no `..`; directories on
/// the way are made 0755), contents and mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LateFile {
    pub path: String,
    pub contents: Vec<u8>,
    pub mode: u32,
}

/// What a host path is, as far as building the root needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPath {
    Dir,
    File,
    Symlink(String),
    Missing,
}

/// What the plan needs to know about the host (the real filesystem in production, a table
/// in tests): the plan itself performs no I/O.
pub trait Host {
    /// What a host path is (lstat + readlink).
    fn probe(&self, path: &str) -> HostPath;
    /// The entry names of a host directory; empty when it is missing or unreadable.
    fn list(&self, dir: &str) -> Vec<String>;
}

/// A file placed read-only in the jail's root: agentjail's runner, or one of the job's
/// input files (under /app/in).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JailFile {
    /// Absolute path in the jail.
    pub path: String,
    pub contents: Vec<u8>,
}

/// A host file or directory bound read-only at /app/in/NAME (`run --input`): a path under
/// one of the policy's `files.host_roots`, opened beneath that root without following any
/// symlink when the jail is prepared, and bound through that open file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostInput {
    /// The `files.host_roots` entry it is under.
    pub root: String,
    /// Its path below the root ("" for the root itself).
    pub relative: String,
    /// The name under /app/in.
    pub name: String,
}

/// Where the job's inputs are and where its artifacts go.
pub const APP_IN: &str = "/app/in";
pub const APP_OUT: &str = "/app/out";
/// A workspace's writable directory (crates/agentjail-engine/src/engine/workspace.rs): its
/// jail's working directory,
/// held open by the host like /app/out, so files go in and out beneath it.
pub const WORKSPACE: &str = "/workspace";

/// Whether a plan's working directory is one the host holds open for the jail's life
/// (/app/out's artifacts, a workspace's files).
pub fn holds_cwd(cwd: &str) -> bool {
    cwd == APP_OUT || cwd == WORKSPACE
}

impl JailPlan {
    /// Raise the address-space rlimit by `extra` bytes (saturating): for runtimes that
    /// reserve far more address space than they use (V8). The rlimit only applies where no
    /// memory cgroup bounds the jail; there, it is dropped at launch.
    pub fn widen_address_space(&mut self, extra: u64) {
        for l in self
            .rlimits
            .iter_mut()
            .filter(|l| l.resource == RlimitKind::AddressSpace)
        {
            l.soft = l.soft.saturating_add(extra);
            l.hard = l.hard.saturating_add(extra);
        }
    }
}
