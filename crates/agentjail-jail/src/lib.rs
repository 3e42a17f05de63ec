//! agentjail's jail: one module per isolation mechanism, the launch sequence and the
//! supervisor. Its input is a plan of plain data ([`plan::JailPlan`], built from a policy by
//! the engine crate); it knows nothing of actions, policies, checks or records, and reports
//! what it did as [`Control`]s, a [`JailError`] or a [`supervise::Outcome`] that the engine
//! crate maps into its record.
//!
//! `spawn` clones the child into new namespaces; `child` is the ordered list of steps the
//! child takes before exec (the security argument lives in that order); `report` carries a
//! child's setup failure back to the parent as (stage, errno). `launch` walks prepare →
//! start → deliver → teardown; `supervise` is the poll loop over a running jail. `sys` holds
//! every kernel call (and every `unsafe` block) of agentjail's library.
//!
//! The modules no other crate names are private (`child`, `child_fds`, `report`, `caps`,
//! `affinity`, `fault`, `syscalls`, `sys`): the child's steps and their wire format are
//! this crate's business; other crates see the plan, the launch, the supervisor, `os`.

mod affinity;
mod caps;
pub mod cgroup;
mod child;
mod child_fds;
pub mod container;
mod fault;
pub mod ids;
pub mod landlock;
mod late;
pub mod launch;
pub mod mount;
pub mod os;
pub mod plan;
pub mod prepared;
mod report;
pub mod rlimit;
pub mod seccomp;
pub mod spawn;
pub mod supervise;
pub(crate) mod sys;
pub mod syscall_groups;
mod syscalls;
pub mod userns;

pub use late::no_late_writes;
use serde::Serialize;

/// How one control was applied to this run; the record's `enforcement` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Control {
    /// Stable name: "user_namespace", "landlock", "seccomp", "cgroup_memory", "rlimit_as", ...
    pub control: String,
    pub state: ControlState,
    /// Which mechanism enforced it (e.g. "cgroup v1 memory", "RLIMIT_AS", "landlock ABI 7").
    pub mechanism: String,
    /// Human detail: the ABI, the syscall count, why it is degraded and how to fix it.
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ControlState {
    Enforced,
    Degraded,
    Unavailable,
}

impl Control {
    pub fn new(
        control: &str,
        state: ControlState,
        mechanism: &str,
        detail: impl Into<String>,
    ) -> Self {
        Control {
            control: control.to_string(),
            state,
            mechanism: mechanism.to_string(),
            detail: detail.into(),
        }
    }
}

/// A failure to set the jail up, in the parent or reported by the child.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupError {
    /// Which setup stage failed ("clone", "uid_map", "mount /usr", "landlock", ...).
    pub stage: String,
    /// The errno, when a syscall failed.
    pub errno: Option<i32>,
    /// What to do about it.
    pub hint: String,
}

impl SetupError {
    pub fn new(stage: impl Into<String>, errno: Option<i32>, hint: impl Into<String>) -> Self {
        SetupError {
            stage: stage.into(),
            errno,
            hint: hint.into(),
        }
    }
}

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "jail setup failed at {}", self.stage)?;
        if let Some(e) = self.errno {
            write!(f, ": {} (errno {e})", std::io::Error::from_raw_os_error(e))?;
        }
        if !self.hint.is_empty() {
            write!(f, ". Hint: {}", self.hint)?;
        }
        Ok(())
    }
}

impl std::error::Error for SetupError {}

/// Why a jail could not run.
#[derive(Debug)]
pub enum JailError {
    /// A control the policy requires cannot be enforced on this host.
    Unavailable { control: String, detail: String },
    /// Setup failed (in the parent or, reported back, in the child).
    Setup(SetupError),
}

impl std::fmt::Display for JailError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JailError::Unavailable { control, detail } => {
                write!(f, "sandbox_unavailable:{control}: {detail}")
            }
            JailError::Setup(e) => e.fmt(f),
        }
    }
}

impl JailError {
    /// The jail's plan could not be made for this job (`sandbox_unavailable:plan`).
    pub fn plan(detail: impl Into<String>) -> JailError {
        JailError::Unavailable {
            control: "plan".into(),
            detail: detail.into(),
        }
    }

    /// What could not be enforced: the control, or `setup` when setup failed. The record's
    /// stop reason is `sandbox_unavailable:<this>`.
    pub fn unavailable_control(&self) -> &str {
        match self {
            JailError::Unavailable { control, .. } => control,
            JailError::Setup(_) => "setup",
        }
    }
}

impl From<SetupError> for JailError {
    fn from(e: SetupError) -> Self {
        JailError::Setup(e)
    }
}
