//! The jail: one file per isolation mechanism.
//!
//! `spawn` clones the child into new namespaces; `child` is the ordered list of steps the
//! child takes before exec (the security argument lives in that order); `report` carries a
//! child's setup failure back to the parent as (stage, errno).

pub mod caps;
pub mod cgroup;
pub mod child;
pub mod landlock;
pub mod mount;
pub mod report;
pub mod rlimit;
pub mod seccomp;
pub mod spawn;
pub mod sys;
pub mod userns;

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
    /// The record's stop reason: `sandbox_unavailable:<control>`, or `:setup` when setup failed.
    pub fn stop_reason(&self) -> String {
        match self {
            JailError::Unavailable { control, .. } => format!("sandbox_unavailable:{control}"),
            JailError::Setup(_) => "sandbox_unavailable:setup".into(),
        }
    }

    /// The record's `error` object: the control and why, or the stage, errno and hint.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            JailError::Unavailable { control, detail } => {
                serde_json::json!({"control": control, "detail": detail})
            }
            JailError::Setup(e) => serde_json::json!({
                "stage": e.stage, "errno": e.errno, "message": e.to_string(), "hint": e.hint
            }),
        }
    }
}

impl From<SetupError> for JailError {
    fn from(e: SetupError) -> Self {
        JailError::Setup(e)
    }
}

/// A finished jail run.
#[derive(Debug)]
pub struct JailRun {
    pub outcome: crate::supervise::Outcome,
    pub enforcement: Vec<Control>,
    /// Time from entering `execute` to the program's exec, microseconds.
    pub setup_us: u64,
}

fn namespace_controls(network: bool) -> Vec<Control> {
    let mut v = Vec::new();
    for ns in ["user", "mount", "pid", "ipc", "uts", "cgroup"] {
        v.push(Control::new(
            &format!("{ns}_namespace"),
            ControlState::Enforced,
            "clone3",
            "new namespace",
        ));
    }
    if network {
        v.push(Control::new(
            "network_namespace",
            ControlState::Unavailable,
            "policy",
            "network.enabled = true: the host network is shared",
        ));
    } else {
        v.push(Control::new(
            "network_namespace",
            ControlState::Enforced,
            "clone3",
            "new, empty network namespace (loopback down)",
        ));
    }
    v
}

/// Create the job cgroup as the policy asks; `None` when the host cannot and the policy
/// allows degrading.
fn job_cgroup(
    plan: &crate::plan::JailPlan,
) -> Result<(Option<cgroup::JobCgroup>, Vec<Control>), JailError> {
    let host = cgroup::detect_host();
    cgroup::sweep_stale(&host);
    let name = format!(
        "agentjail-{}-{}",
        std::process::id(),
        crate::record::short_random()
    );
    let required = plan.cgroup_requirement == crate::policy::Requirement::Required;
    match cgroup::JobCgroup::create(&host, &name, &plan.cgroup) {
        Ok(cg) => {
            let controls = cg.controls();
            if required {
                if let Some(c) = controls.iter().find(|c| c.state != ControlState::Enforced) {
                    return Err(JailError::Unavailable {
                        control: c.control.clone(),
                        detail: c.detail.clone(),
                    });
                }
            }
            Ok((Some(cg), controls))
        }
        Err(e) if required => Err(JailError::Unavailable {
            control: "cgroup".into(),
            detail: e.to_string(),
        }),
        Err(e) => Ok((
            None,
            vec![Control::new(
                "cgroup",
                ControlState::Unavailable,
                "none",
                e.to_string(),
            )],
        )),
    }
}

/// Run `plan` in a jail and supervise it to the end. Nothing survives this call: the
/// jail's processes are dead and reaped, its mounts died with its mount namespace, and
/// its cgroup is removed.
pub fn execute(
    plan: &crate::plan::JailPlan,
    io: crate::supervise::Io<'_>,
    sigfd: Option<&std::os::fd::OwnedFd>,
) -> Result<JailRun, JailError> {
    let t0 = std::time::Instant::now();
    let landlock_required = plan.landlock.requirement == crate::policy::Requirement::Required;
    if plan.seccomp.requirement == crate::policy::Requirement::Required
        && plan.seccomp.allowed.is_empty()
    {
        return Err(JailError::Unavailable {
            control: "seccomp".into(),
            detail: "empty allowlist".into(),
        });
    }
    let (mut cg, cg_controls) = job_cgroup(plan)?;
    let memory_cgroup = cg_controls
        .iter()
        .any(|c| c.control == "cgroup_memory" && c.state == ControlState::Enforced);
    let result = (|| -> Result<JailRun, JailError> {
        let cover = spawn::CgroupCover {
            memory: memory_cgroup,
            pids: cg_controls
                .iter()
                .any(|c| c.control == "cgroup_pids" && c.state == ControlState::Enforced),
        };
        let prepared = spawn::prepare(plan, cover)?;
        let ll = landlock::enforcement(&plan.landlock, prepared.landlock.as_ref());
        if landlock_required && ll.state != ControlState::Enforced {
            return Err(JailError::Unavailable {
                control: "landlock".into(),
                detail: ll.detail,
            });
        }
        let sc = seccomp::enforcement(&plan.seccomp, &prepared.seccomp);
        let spawned = spawn::spawn(&prepared, cg.as_ref())?;
        let setup_us = t0.elapsed().as_micros() as u64;
        let outcome = crate::supervise::supervise(spawned, &plan.limits, cg.as_ref(), sigfd, io);
        let mut enforcement = namespace_controls(plan.network);
        enforcement.push(Control::new(
            "capabilities",
            ControlState::Enforced,
            "capset + PR_CAPBSET_DROP + ambient clear",
            "no capability in any set",
        ));
        enforcement.push(Control::new(
            "no_new_privs",
            ControlState::Enforced,
            "prctl",
            "set before exec",
        ));
        enforcement.push(Control::new(
            "filesystem",
            ControlState::Enforced,
            "pivot_root",
            "tmpfs root, read-only binds, old root detached",
        ));
        enforcement.push(ll);
        enforcement.push(sc);
        enforcement.extend(cg_controls.iter().cloned());
        let rl: Vec<String> = prepared
            .rlimits
            .iter()
            .map(|(r, s, _)| format!("{}={s}", rlimit_name(*r)))
            .collect();
        enforcement.push(Control::new(
            "rlimits",
            ControlState::Enforced,
            "setrlimit",
            rl.join(" "),
        ));
        if !memory_cgroup {
            enforcement.push(Control::new(
                "memory",
                ControlState::Degraded,
                "RLIMIT_AS",
                "no memory cgroup: address space is capped, but tmpfs pages, memfd and page cache are bounded only by the /tmp size cap",
            ));
        }
        Ok(JailRun {
            outcome,
            enforcement,
            setup_us,
        })
    })();
    if let Some(c) = cg.as_mut() {
        c.kill_all();
        let _ = c.remove();
    }
    result
}

fn rlimit_name(r: u32) -> &'static str {
    match r as libc::__rlimit_resource_t {
        libc::RLIMIT_CORE => "core",
        libc::RLIMIT_FSIZE => "fsize",
        libc::RLIMIT_NOFILE => "nofile",
        libc::RLIMIT_AS => "as",
        libc::RLIMIT_CPU => "cpu",
        libc::RLIMIT_NPROC => "nproc",
        libc::RLIMIT_MEMLOCK => "memlock",
        libc::RLIMIT_MSGQUEUE => "msgqueue",
        _ => "other",
    }
}
