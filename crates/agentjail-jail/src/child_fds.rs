//! The fds the child takes over after clone: made by the parent (crate::spawn), used by the
//! child (crate::child). Its own module so that the two sides name one type without
//! importing each other.

use std::os::fd::RawFd;

/// Fds the child uses; raw numbers valid in the child after clone.
pub struct ChildFds {
    pub stdin_r: RawFd,
    pub stdout_w: RawFd,
    pub stderr_w: RawFd,
    pub report_w: RawFd,
    pub sync_r: RawFd,
    pub status_w: RawFd,
    /// The runner's (job read end, reply write end), when the plan has a runner.
    pub runner: Option<(RawFd, RawFd)>,
    /// Unshare the cgroup namespace in the child after it joined its cgroups (v1 or no
    /// CLONE_INTO_CGROUP), so the namespace's root is the job cgroup, not the launcher's.
    pub late_cgroup_ns: bool,
    /// The job's v1 `tasks` files (-1: none; crate::cgroup::JobCgroup::v1_join_fds): the
    /// child writes "0" to each, joining them itself, then closes them.
    pub cgroup_join: [RawFd; crate::cgroup::MAX_V1_DIRS],
    /// The parent's ends of the same pipes (-1: none), copied into the child by clone: the
    /// child closes them first, so a parent that dies mid-handshake is an EOF on the sync
    /// pipe. (For the launcher, PDEATHSIG would end the child anyway; the zygote's template
    /// is not the child's parent, and its death must not leave a child waiting forever.)
    pub parent_ends: [RawFd; 8],
}
