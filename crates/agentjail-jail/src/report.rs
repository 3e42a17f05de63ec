//! Child → parent setup reports.
//!
//! The child writes fixed-size messages on a close-on-exec pipe. A failure is
//! `(stage, errno)`; EOF without a failure means `execve` succeeded (the pipe closed with
//! the exec). This is Rust std's CLOEXEC-footer idea, but it says *where* setup failed,
//! which nsjail's single byte does not. Messages are 12 bytes, written with one write(2)
//! (atomic for pipes below PIPE_BUF), so no allocation is needed in the child.

/// Declares [`Stage`] once: each step's variant and its stable name, in the order
/// `child::run` takes them; the enum (numbered from 1, 0 is no stage), the list
/// `from_u32` searches and `name` all come from this one table.
macro_rules! stages {
    ($first:ident => $first_name:literal, $($variant:ident => $name:literal,)*) => {
        /// Each step of the child, in the order `child::run` takes them.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u32)]
        pub enum Stage {
            $first = 1,
            $($variant,)*
        }

        impl Stage {
            const ALL: &'static [Stage] = &[Stage::$first, $(Stage::$variant,)*];

            /// The stable name a record, a log line and the fault-injection knob use.
            pub fn name(self) -> &'static str {
                match self {
                    Stage::$first => $first_name,
                    $(Stage::$variant => $name,)*
                }
            }
        }
    };
}

stages! {
        WaitParent => "wait_for_parent",
        ParentDeathSignal => "parent_death_signal",
        SetGid => "setresgid",
        SetUid => "setresuid",
        MountPrivate => "mount_private",
        MountRoot => "mount_root_tmpfs",
        MountOp => "mount",
        RemountRootReadOnly => "remount_root_read_only",
        PivotRoot => "pivot_root",
        DetachOldRoot => "detach_old_root",
        Chdir => "chdir",
        Hostname => "sethostname",
        Setsid => "setsid",
        Rlimit => "setrlimit",
        CloseFds => "close_fds",
        NoNewPrivs => "no_new_privs",
        DropCapabilities => "drop_capabilities",
        Landlock => "landlock",
        Seccomp => "seccomp",
        SeccompHandover => "seccomp_listener_handover",
        SignalMask => "signal_mask",
        Exec => "execve",
        Fork => "fork_init",
        InitFilter => "init_seccomp",
        CgroupNamespace => "cgroup_namespace",
        NetLoopback => "network_loopback",
        CgroupJoin => "cgroup_join",
}

impl Stage {
    pub fn from_u32(v: u32) -> Option<Stage> {
        Stage::ALL.iter().copied().find(|s| *s as u32 == v)
    }

    /// What an operator can do about a failure at this stage.
    pub fn hint(self, errno: i32) -> &'static str {
        use Stage::*;
        match (self, errno) {
            (Exec, libc::ENOENT) => "the command does not exist inside the jail: only the policy's read-only binds (filesystem.read_only) are visible; use an absolute path under them",
            (Exec, libc::EACCES) => "the command is not executable inside the jail (landlock allows execute only under the read-only binds)",
            (MountOp, libc::ENOENT) => "a bind source is missing on this host: remove it from filesystem.read_only or list it in filesystem.optional",
            (MountOp, _) | (MountRoot, _) | (MountPrivate, _) => "the mount namespace refused a mount: check `agentjail doctor` (user namespaces, AppArmor userns restriction)",
            (Landlock, _) => "landlock could not be applied: check `agentjail doctor`, or set landlock.requirement = \"best_effort\"",
            (Seccomp, _) | (SeccompHandover, _) => "the seccomp filter could not be installed: check `agentjail doctor` (seccomp user notification needs Linux >= 5.6)",
            (SetUid, _) | (SetGid, _) => "the uid/gid map was not accepted: check `agentjail doctor`",
            (Rlimit, _) => "a resource limit was rejected: lower limits.open_files or limits.file_size",
            (NetLoopback, _) => "the jail could not bring its loopback up or listen on the proxy port: check `agentjail doctor` (network allowlist)",
            (WaitParent, _) => "the supervisor went away during setup",
            (CgroupJoin, _) => "the jail could not join its cgroup v1 job directory (a write of 0 to its tasks file): check `agentjail doctor` (cgroup), or run with a cgroup v2 delegation",
            _ => "see `agentjail doctor` for what this host supports",
        }
    }
}

pub const MSG_LEN: usize = 12;
/// Message kinds.
pub const KIND_ERROR: u32 = 1;
/// The child installed its seccomp filter and holds the listener at fd `value`.
pub const KIND_LISTENER: u32 = 2;
/// The child built its root and waits, the root still writable, for its late files
/// (crate::plan::LateFiles) and the parent's "f".
pub const KIND_LATE: u32 = 3;

/// Encode a message: kind, a stage (or fd), and an errno (or 0).
pub fn encode(kind: u32, a: u32, b: i32) -> [u8; MSG_LEN] {
    let mut m = [0u8; MSG_LEN];
    m[0..4].copy_from_slice(&kind.to_ne_bytes());
    m[4..8].copy_from_slice(&a.to_ne_bytes());
    m[8..12].copy_from_slice(&b.to_ne_bytes());
    m
}

pub fn decode(m: &[u8; MSG_LEN]) -> (u32, u32, i32) {
    let w = |i: usize| [m[i], m[i + 1], m[i + 2], m[i + 3]];
    (
        u32::from_ne_bytes(w(0)),
        u32::from_ne_bytes(w(4)),
        i32::from_ne_bytes(w(8)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let m = encode(KIND_ERROR, Stage::PivotRoot as u32, libc::EINVAL);
        assert_eq!(
            decode(&m),
            (KIND_ERROR, Stage::PivotRoot as u32, libc::EINVAL)
        );
    }

    #[test]
    fn every_stage_decodes() {
        for v in 1..=27 {
            let s = Stage::from_u32(v).expect("stage");
            assert_eq!(s as u32, v);
            assert!(!s.name().is_empty());
        }
        assert_eq!(Stage::from_u32(0), None);
        assert_eq!(Stage::from_u32(28), None);
    }
}
