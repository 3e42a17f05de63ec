//! `agentjail doctor`: which protections this host can enforce for this user, each with the fix
//! when it cannot.
//!
//! Every probe that changes process state (unshare, prctl) runs in a forked child that makes
//! only raw syscalls and `_exit`s with 0 or the errno: no allocation, no locks after fork, so it
//! is safe even when the caller has other threads. Probes that change nothing (landlock's
//! version query, seccomp's action query, pidfd_open on ourselves) run in-process.
//! The syscalls themselves are the jail crate's (`agentjail_jail::os::probe`, over the same
//! kernel wrappers the jail uses).

use agentjail_engine::policy::LoadedPolicy;
use agentjail_jail::cgroup::{self, HostCgroups, Layout};
use agentjail_jail::container;
use agentjail_jail::os;
use serde::Serialize;
use serde_json::Value;
use std::os::fd::OwnedFd;

mod toolchains;

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Stable name, matching the record's enforcement controls where one exists.
    pub control: String,
    pub available: bool,
    /// The embedded default policy cannot run without it (fail closed); otherwise best-effort.
    pub required: bool,
    pub detail: String,
    /// What to do when it is not available.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DoctorReport {
    pub kernel: String,
    pub euid: u32,
    pub checks: Vec<Check>,
}

impl DoctorReport {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "agentjail_version": env!("CARGO_PKG_VERSION"),
            "kernel": self.kernel,
            "euid": self.euid,
            "all_required_ok": self.all_required_ok(),
            "checks": self.checks,
        })
    }

    pub fn to_text(&self) -> String {
        let mut s = format!(
            "agentjail {} doctor: kernel {}, euid {}\n",
            env!("CARGO_PKG_VERSION"),
            self.kernel,
            self.euid
        );
        for c in &self.checks {
            let mark = match (c.available, c.required) {
                (true, _) => "ok     ",
                (false, true) => "MISSING",
                (false, false) => "absent ",
            };
            s.push_str(&format!("{mark} {:<26} {}\n", c.control, c.detail));
            if let (false, Some(fix)) = (c.available, &c.fix) {
                s.push_str(&format!("        {:<26} fix: {fix}\n", ""));
            }
        }
        s.push_str(if self.all_required_ok() {
            "all required protections are available\n"
        } else {
            "some required protections are MISSING: agentjail run/exec will stop with sandbox_unavailable\n"
        });
        s
    }

    pub fn all_required_ok(&self) -> bool {
        self.checks.iter().all(|c| c.available || !c.required)
    }
}

fn check(
    control: &str,
    available: bool,
    required: bool,
    detail: impl Into<String>,
    fix: Option<&str>,
) -> Check {
    Check {
        control: control.to_string(),
        available,
        required,
        detail: detail.into(),
        fix: if available {
            None
        } else {
            fix.map(str::to_string)
        },
    }
}

fn errno_text(e: i32) -> String {
    format!("{} (errno {e})", std::io::Error::from_raw_os_error(e))
}

fn read_trim(p: &str) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

/// What a probe child does: one or two syscalls on prepared values.
#[derive(Clone, Copy)]
enum Probe {
    /// unshare(flags), then optionally make `/` private (needs CAP_SYS_ADMIN in the new userns:
    /// this is what AppArmor's userns restriction takes away).
    Unshare {
        flags: libc::c_int,
        remount_private: bool,
    },
    /// prctl(PR_SET_NO_NEW_PRIVS, 1).
    NoNewPrivs,
}

/// Fork, run `probe` in the child, return Ok(()) or the child's errno.
fn in_child(probe: Probe) -> Result<(), i32> {
    match probe {
        Probe::Unshare {
            flags,
            remount_private,
        } => os::probe::unshare_in_child(flags, remount_private),
        Probe::NoNewPrivs => os::probe::no_new_privs_in_child(),
    }
}

/// The landlock ABI version, or the errno (ENOSYS: not built; EOPNOTSUPP: disabled at boot).
pub fn landlock_abi() -> Result<u32, i32> {
    os::probe::landlock_abi()
}

/// Whether the kernel knows a seccomp return action (SECCOMP_GET_ACTION_AVAIL).
fn seccomp_action_avail(action: u32) -> Result<(), i32> {
    os::probe::seccomp_action_available(action)
}

fn pidfd_open_self() -> Result<OwnedFd, i32> {
    os::probe::pidfd_open_self()
}

fn pidfd_getfd(pidfd: &OwnedFd, target_fd: i32) -> Result<OwnedFd, i32> {
    os::probe::pidfd_getfd(pidfd, target_fd)
}

fn status_field(status: &str, key: &str) -> Option<String> {
    status.lines().find_map(|l| {
        l.strip_prefix(key)
            .map(|v| v.trim_start_matches(':').trim().to_string())
    })
}

const FIX_USERNS_SYSCTL: &str =
    "enable unprivileged user namespaces: sysctl -w kernel.unprivileged_userns_clone=1 (Debian) and/or user.max_user_namespaces=15000, or run agentjail as root";
const FIX_APPARMOR: &str =
    "AppArmor restricts unprivileged user namespaces (Ubuntu >= 23.10): install contrib/apparmor/agentjail into /etc/apparmor.d and run apparmor_parser -r /etc/apparmor.d/agentjail, or run as root";
const FIX_CGROUP_V2: &str =
    "boot with systemd.unified_cgroup_hierarchy=1 (cgroup v2), and run agentjail under a systemd unit with Delegate=yes (or systemd-run -p Delegate=yes)";

/// Probe this host for this user: each protection the jail uses, tried for real where
/// trying changes nothing (or only a forked child); then, with a policy, a real jail from
/// that policy's own plan ([`probe_jail`]), which is what decides "all well".
pub fn run(policy: Option<&LoadedPolicy>) -> DoctorReport {
    let euid = os::process::geteuid();
    let root = euid == 0;
    let kernel = read_trim("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into());
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let mut checks = Vec::new();
    identity_check(&mut checks, euid);
    let aa_restricts = userns_checks(&mut checks, root);
    apparmor_check(&mut checks, root, aa_restricts);
    no_new_privs_check(&mut checks, &status);
    seccomp_checks(&mut checks, &status);
    landlock_check(&mut checks);
    pidfd_checks(&mut checks);
    checks.extend(cgroup_checks(&cgroup::detect_host()));
    checks.push(zygote_check());
    containerise_fixes(&mut checks);
    checks.push(container_check());
    checks.extend(toolchains::checks());
    if let Some(p) = policy {
        if let Some(c) = python_check(&p.policy) {
            checks.push(c);
        }
        if p.policy.network.allowlist() {
            checks.push(network_check());
        }
        checks.extend(probe_jail(p));
    }
    DoctorReport {
        kernel,
        euid,
        checks,
    }
}

/// In a container, a namespace or pidfd probe that fails is the runtime's seccomp profile
/// (or AppArmor) refusing the syscall, not the host's sysctls or kernel: give the container's
/// fix instead of the host's.
fn containerise_fixes(checks: &mut [Check]) {
    const REFUSED_BY_PROFILES: &[&str] = &[
        "user_namespace",
        "mount_namespace",
        "pid_namespace",
        "net_namespace",
        "ipc_namespace",
        "uts_namespace",
        "cgroup_namespace",
        "pidfd_getfd",
    ];
    for c in checks.iter_mut() {
        if !c.available && REFUSED_BY_PROFILES.contains(&c.control.as_str()) {
            let what = c.control.replace('_', " ");
            if let Some(hint) = container::seccomp_hint(&what, libc::EPERM) {
                c.fix = Some(hint);
            }
        }
    }
}

/// Whether agentjail runs in a container, and whether that container masks /proc (which
/// stops every jail: the kernel then refuses a fresh procfs).
fn container_check() -> Check {
    let rt = container::runtime();
    let over = container::proc_overmounts();
    let place = rt.map_or("not in a container, as far as can be seen", |r| r.name());
    if over.is_empty() {
        return check(
            "container",
            true,
            false,
            format!("{place}; /proc is not masked"),
            None,
        );
    }
    let fix = container::proc_hint(libc::EPERM);
    check(
        "container",
        false,
        true,
        format!("{place}; mounts hide parts of /proc: {}", over.join(", ")),
        Some(&fix),
    )
}

/// The program a probe jail runs, per language: prints one JSON object, imports nothing.
fn probe_action(policy: &LoadedPolicy) -> Option<Vec<u8>> {
    let p = &policy.policy;
    let (language, entrypoint, code) = if p.executes("python") {
        ("python", "main.py", "print('{\"probe\": \"ok\"}')\n")
    } else if p.executes("javascript") {
        (
            "javascript",
            "main.js",
            "console.log('{\"probe\": \"ok\"}');\n",
        )
    } else {
        return None;
    };
    let action = serde_json::json!({
        "id": "doctor-probe",
        "language": language,
        "entrypoint": entrypoint,
        "code": code,
        "input_payload": {},
    });
    serde_json::to_vec(&action).ok()
}

/// Start a real jail from the policy's own plan (every mount, procfs, landlock, seccomp,
/// cgroup, rlimits, the interpreter) through the same pipeline as `agentjail run`, and
/// report what it did: the first step that failed with its fix, or each control's state
/// as the record states it. A probe that features alone cannot give: a host can have
/// every feature and still refuse the jail (a mount beneath /usr, a masked /proc).
pub fn probe_jail(policy: &LoadedPolicy) -> Vec<Check> {
    let Some(action) = probe_action(policy) else {
        return vec![check(
            "probe_jail",
            false,
            true,
            "the policy executes no language agentjail can probe (languages.execute)",
            Some("list python or javascript in languages.execute"),
        )];
    };
    let source = agentjail_engine::pipeline::source::ColdStart::new();
    let record = agentjail_engine::pipeline::job(
        agentjail_engine::pipeline::record::Recorder::new(),
        &action,
        policy,
        &source,
        None,
    );
    probe_checks(&record.value, &policy.path)
}

/// What stopped a probe jail and its fix, from the record's `error`, whose shape depends on
/// the stop (pipeline::record::RecordError): a setup stage (`message`, `hint`), a control the
/// policy requires and the host lacks (`control`, `detail`), or neither (the program's
/// stderr). Never an empty reason: the README promises the failing step and its fix.
fn probe_failure(record: &Value, stop: &str) -> (String, String) {
    let text = |v: &Value| v.as_str().unwrap_or_default().trim().to_string();
    let error = &record["error"];
    let generic = "run the job with `agentjail run` and read the record's error".to_string();
    if let Some(message) = error["message"].as_str() {
        let hint = text(&error["hint"]);
        return (
            format!("{stop}: {message}"),
            if hint.is_empty() { generic } else { hint },
        );
    }
    if let Some(control) = error["control"].as_str() {
        let detail = text(&error["detail"]);
        let detail = if detail.is_empty() {
            "the host cannot enforce it".to_string()
        } else {
            detail
        };
        // The jail's detail names what it tried ("cannot create a cgroup under ...") and,
        // after "; ", how to make the host give it; the other way out is the policy's own.
        let (step, host_fix) = match detail.split_once("; ") {
            Some((step, fix)) => (step.to_string(), Some(fix.to_string())),
            None => (detail.clone(), None),
        };
        let (section, what) = match control {
            c if c == "cgroup" || c.starts_with("cgroup_") => (
                "cgroup",
                format!("a {} cgroup", c.strip_prefix("cgroup_").unwrap_or("job")),
            ),
            "landlock" => ("landlock", "landlock".to_string()),
            "seccomp" => ("seccomp", "a seccomp filter".to_string()),
            other => (other, other.to_string()),
        };
        let host_fix = host_fix.unwrap_or_else(|| {
            if section == "cgroup" {
                "run under a systemd unit with Delegate=yes (or `systemd-run --user --scope -p \
                 Delegate=yes agentjail ...`), or as root"
                    .to_string()
            } else {
                format!("see the {section} check above for what this host lacks")
            }
        });
        let euid = os::process::geteuid();
        return (
            format!(
                "{stop}: the policy requires {what} ([{section}] requirement = \"required\") \
                 and this host cannot give it to uid {euid}: step `{control}`: {step}"
            ),
            format!(
                "{host_fix}; or, if the job may run without it, set [{section}] requirement = \
                 \"best_effort\" in the policy (the record then says `degraded`)"
            ),
        );
    }
    let stderr = text(&record["execution"]["stderr"]);
    let what = if stderr.is_empty() {
        format!("{stop} (the record has no error detail)")
    } else {
        format!("{stop}: {stderr}")
    };
    (what, generic)
}

/// The checks a probe jail's record gives.
fn probe_checks(record: &Value, policy_path: &str) -> Vec<Check> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let stop = text(&record["stop_reason"]);
    let interpreter = text(&record["environment"]["resolved"]);
    let mut checks = Vec::new();
    if record["status"] == "ok" {
        let setup = record["trace"]
            .as_array()
            .and_then(|t| t.iter().find(|e| e["phase"] == "execute"))
            .and_then(|e| e["detail"]["setup_us"].as_u64())
            .unwrap_or(0);
        checks.push(check(
            "probe_jail",
            true,
            true,
            format!(
                "a jail from policy {policy_path} started and ran {interpreter} (setup {} ms): \
                 every mount, procfs, landlock, seccomp, cgroup and rlimit of its plan",
                setup / 1000
            ),
            None,
        ));
    } else {
        let (what, fix) = probe_failure(record, &stop);
        checks.push(check(
            "probe_jail",
            false,
            true,
            format!("a jail from policy {policy_path} could not run: {what}"),
            Some(&fix),
        ));
    }
    // The controls exactly as the probe's record states them: a degraded or unavailable
    // one is listed with its reason (it did not stop the run: the policy makes it
    // best-effort).
    for c in record["enforcement"].as_array().into_iter().flatten() {
        let state = text(&c["state"]);
        if state != "enforced" {
            let detail = format!("{state} in the probe jail: {}", text(&c["detail"]));
            checks.push(check(
                &format!("jail_{}", text(&c["control"])),
                false,
                false,
                detail,
                Some("best-effort in this policy; see the cgroup and landlock checks above for the fix"),
            ));
        }
    }
    checks
}

fn identity_check(checks: &mut Vec<Check>, euid: u32) {
    let root = euid == 0;
    checks.push(check(
        "running_as_root",
        true,
        false,
        if root {
            "euid 0: the jail maps its uid to an unprivileged host uid, never host root".to_string()
        } else {
            format!("euid {euid}: unprivileged, the jail relies on user namespaces")
        },
        None,
    ));
}

/// The user-namespace sysctls, then each namespace for real. Returns whether AppArmor's
/// userns restriction is on.
fn userns_checks(checks: &mut Vec<Check>, root: bool) -> bool {
    // user namespaces: sysctls first (they explain a failure), then the real thing.
    let clone_sysctl = read_trim("/proc/sys/kernel/unprivileged_userns_clone");
    let max_userns = read_trim("/proc/sys/user/max_user_namespaces");
    let apparmor = read_trim(APPARMOR_SYSCTL);
    let mut sysctl_detail = format!(
        "kernel.unprivileged_userns_clone={}, user.max_user_namespaces={}",
        clone_sysctl.as_deref().unwrap_or("(absent)"),
        max_userns.as_deref().unwrap_or("(absent)")
    );
    let sysctl_ok = clone_sysctl.as_deref() != Some("0") && max_userns.as_deref() != Some("0");
    if !sysctl_ok && !root {
        sysctl_detail.push_str(": unprivileged user namespaces are disabled");
    }
    checks.push(check(
        "userns_sysctl",
        sysctl_ok || root,
        false,
        sysctl_detail,
        Some(FIX_USERNS_SYSCTL),
    ));
    let aa_restricts = apparmor.as_deref() == Some("1");
    let userns = in_child(Probe::Unshare {
        flags: libc::CLONE_NEWUSER,
        remount_private: false,
    });
    let userns_fix = if aa_restricts {
        FIX_APPARMOR
    } else {
        FIX_USERNS_SYSCTL
    };
    checks.push(check(
        "user_namespace",
        userns.is_ok(),
        true,
        match userns {
            Ok(()) => "unshare(CLONE_NEWUSER) works".to_string(),
            Err(e) => format!("unshare(CLONE_NEWUSER): {}", errno_text(e)),
        },
        Some(userns_fix),
    ));
    let kinds: [(&str, libc::c_int, &str); 6] = [
        ("mount_namespace", libc::CLONE_NEWNS, "CLONE_NEWNS"),
        ("pid_namespace", libc::CLONE_NEWPID, "CLONE_NEWPID"),
        ("net_namespace", libc::CLONE_NEWNET, "CLONE_NEWNET"),
        ("ipc_namespace", libc::CLONE_NEWIPC, "CLONE_NEWIPC"),
        ("uts_namespace", libc::CLONE_NEWUTS, "CLONE_NEWUTS"),
        ("cgroup_namespace", libc::CLONE_NEWCGROUP, "CLONE_NEWCGROUP"),
    ];
    for (name, flag, flag_name) in kinds {
        // Always inside a new user namespace, as the jail does; the mount probe also checks that
        // the namespace grants CAP_SYS_ADMIN (AppArmor's restriction lets unshare succeed but
        // strips capabilities, which shows here as EPERM).
        let remount = flag == libc::CLONE_NEWNS;
        let r = in_child(Probe::Unshare {
            flags: libc::CLONE_NEWUSER | flag,
            remount_private: remount,
        });
        let what = if remount {
            format!("unshare(CLONE_NEWUSER|{flag_name}) + mount --make-rprivate /")
        } else {
            format!("unshare(CLONE_NEWUSER|{flag_name})")
        };
        checks.push(check(
            name,
            r.is_ok(),
            true,
            match r {
                Ok(()) => format!("{what} works"),
                Err(e) => format!("{what}: {}", errno_text(e)),
            },
            Some(userns_fix),
        ));
    }

    aa_restricts
}

const APPARMOR_SYSCTL: &str = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns";

fn apparmor_check(checks: &mut Vec<Check>, root: bool, aa_restricts: bool) {
    let apparmor = read_trim(APPARMOR_SYSCTL);
    // AppArmor (Ubuntu >= 23.10): with the restriction on, an unconfined process gets a user
    // namespace without capabilities. An installed agentjail profile lifts it for this binary,
    // which the mount probe above (needs CAP_SYS_ADMIN in the new namespace) shows.
    let mount_ok = checks
        .iter()
        .any(|c| c.control == "mount_namespace" && c.available);
    checks.push(check(
        "apparmor_userns",
        !aa_restricts || root || mount_ok,
        false,
        match apparmor.as_deref() {
            None => "kernel.apparmor_restrict_unprivileged_userns absent: no AppArmor userns restriction"
                .to_string(),
            Some("1") if mount_ok => {
                "kernel.apparmor_restrict_unprivileged_userns=1, but this binary's user namespaces keep their capabilities (profile installed)".to_string()
            }
            Some(v) => format!("kernel.apparmor_restrict_unprivileged_userns={v}"),
        },
        Some(FIX_APPARMOR),
    ));
}

fn no_new_privs_check(checks: &mut Vec<Check>, status: &str) {
    // no_new_privs: current state, and that it can be set.
    let nnp_now = status_field(status, "NoNewPrivs").unwrap_or_else(|| "?".into());
    let nnp = in_child(Probe::NoNewPrivs);
    checks.push(check(
        "no_new_privs",
        nnp.is_ok(),
        true,
        match nnp {
            Ok(()) => format!("PR_SET_NO_NEW_PRIVS works (agentjail's own NoNewPrivs: {nnp_now})"),
            Err(e) => format!("PR_SET_NO_NEW_PRIVS: {}", errno_text(e)),
        },
        Some("a kernel >= 3.5 is required"),
    ));
}

fn seccomp_checks(checks: &mut Vec<Check>, status: &str) {
    // seccomp
    let mode = status_field(status, "Seccomp").unwrap_or_else(|| "?".into());
    let filters = status_field(status, "Seccomp_filters").unwrap_or_else(|| "?".into());
    let kill = seccomp_action_avail(0x8000_0000); // SECCOMP_RET_KILL_PROCESS
    let errno = seccomp_action_avail(0x0005_0000); // SECCOMP_RET_ERRNO
    checks.push(check(
        "seccomp",
        kill.is_ok() && errno.is_ok(),
        true,
        match (kill, errno) {
            (Ok(()), Ok(())) => format!(
                "seccomp filters with KILL_PROCESS and ERRNO available (agentjail's own mode {mode}, {filters} filters stacked)"
            ),
            (Err(e), _) | (_, Err(e)) => format!("SECCOMP_GET_ACTION_AVAIL: {}", errno_text(e)),
        },
        Some("a kernel built with CONFIG_SECCOMP_FILTER (>= 4.14 for KILL_PROCESS) is required"),
    ));
    let notif = seccomp_action_avail(libc::SECCOMP_RET_USER_NOTIF);
    checks.push(check(
        "seccomp_user_notif",
        notif.is_ok(),
        false,
        match notif {
            Ok(()) => "SECCOMP_RET_USER_NOTIF available".to_string(),
            Err(e) => format!("SECCOMP_RET_USER_NOTIF: {}", errno_text(e)),
        },
        Some("kernel >= 5.0; not needed by the default policy"),
    ));
}

/// The zygote (crates/agentjail-engine/src/zygote), which `serve` uses by default: its
/// template binary next to this one. Optional: without it every warm jail starts its own
/// interpreter (serve says so on stderr and in `stats`).
/// The host's checks when the embedded default policy cannot be loaded here (its
/// `/usr/bin/python3` is missing or not a Python agentjail has tables for): every host
/// check, no probe jail, and a failed `policy` check with the loader's error and its fix.
pub fn run_without_default_policy(error: &str) -> DoctorReport {
    let mut report = run(None);
    report.checks.push(check(
        "policy",
        false,
        true,
        format!("the embedded default policy does not load on this host: {error}"),
        Some("install Python 3.10-3.13 as /usr/bin/python3, or give --policy FILE naming this host's interpreter"),
    ));
    report
}

/// Which Python the policy's interpreter is, as the loader found it (a policy whose
/// interpreter is not a Python with module tables did not load, and doctor said so).
fn python_check(p: &agentjail_engine::policy::Policy) -> Option<Check> {
    if !p.executes("python") {
        return None;
    }
    Some(check(
        "python",
        true,
        true,
        format!(
            "{} is Python {} ({}); the checker has module tables for {}",
            p.interpreter.python,
            p.python_version(),
            p.python_version_source(),
            agentjail_check::stdlib::supported_versions().join(", ")
        ),
        None,
    ))
}

fn zygote_check() -> Check {
    let bin = std::env::current_exe()
        .map(|p| p.with_file_name(agentjail_engine::zygote::BINARY))
        .ok();
    let found = bin.as_ref().is_some_and(|b| b.is_file());
    let detail = match &bin {
        Some(b) if found => format!(
            "{} (serve forks its Python jails from the zygote)",
            b.display()
        ),
        Some(b) => format!(
            "no {} (serve starts a fresh interpreter per Python job: slower)",
            b.display()
        ),
        None => "cannot find agentjail's own path".to_string(),
    };
    check(
        "zygote",
        found,
        false,
        detail,
        Some("build it with scripts/build-zygote.sh --python <the policy's interpreter> (links that Python's libpython), or install it next to agentjail"),
    )
}

fn landlock_check(checks: &mut Vec<Check>) {
    // landlock
    let ll = landlock_abi();
    checks.push(check(
        "landlock",
        ll.is_ok(),
        false,
        match ll {
            Ok(v) => format!("landlock ABI {v}"),
            Err(libc::EOPNOTSUPP) => "landlock is built in but disabled at boot".to_string(),
            Err(libc::ENOSYS) => "landlock is not supported by this kernel".to_string(),
            Err(e) => format!("landlock_create_ruleset: {}", errno_text(e)),
        },
        Some(match ll {
            Err(libc::EOPNOTSUPP) => "add landlock to the lsm= kernel command line (e.g. lsm=landlock,lockdown,yama,apparmor)",
            _ => "use a kernel >= 5.13 with CONFIG_SECURITY_LANDLOCK=y and landlock in lsm=",
        }),
    ));
}

fn pidfd_checks(checks: &mut Vec<Check>) {
    // pidfds
    let pidfd = pidfd_open_self();
    let getfd = match &pidfd {
        Ok(p) => pidfd_getfd(p, 0).map(drop),
        Err(e) => Err(*e),
    };
    checks.push(check(
        "pidfd_open",
        pidfd.is_ok(),
        false,
        match &pidfd {
            Ok(_) => "pidfd_open works: the supervisor waits on the jail race-free".to_string(),
            Err(e) => format!("pidfd_open: {}", errno_text(*e)),
        },
        Some("kernel >= 5.3; without it the supervisor falls back to waitpid polling"),
    ));
    checks.push(check(
        "pidfd_getfd",
        getfd.is_ok(),
        false,
        match getfd {
            Ok(()) => "pidfd_getfd works".to_string(),
            Err(e) => format!("pidfd_getfd: {}", errno_text(e)),
        },
        Some("kernel >= 5.6"),
    ));
    drop(pidfd);
}

/// The cgroup lines: the layout, then one per limit with the mechanism that would enforce it.
pub fn cgroup_checks(host: &HostCgroups) -> Vec<Check> {
    let delegated = host
        .v2
        .as_ref()
        .is_some_and(|v| ["memory", "pids", "cpu"].iter().all(|c| v.offers(c)));
    let mut out = vec![cgroup_layout_check(host, delegated)];
    for (control, ctrl) in [
        ("cgroup_memory", "memory"),
        ("cgroup_pids", "pids"),
        ("cgroup_cpu", "cpu"),
    ] {
        let p = host.provider(ctrl);
        let available = p.is_ok();
        let (detail, fix) = match p {
            Ok(m) => (format!("{ctrl} limits via {m}"), None),
            Err(e) => (e.reason(), Some(e.fix().to_string())),
        };
        let mut c = check(control, available, false, detail, None);
        c.fix = fix;
        out.push(c);
    }
    out
}

/// Which cgroup layout the host has, and whether v2 is delegated to us.
fn cgroup_layout_check(host: &HostCgroups, delegated: bool) -> Check {
    let v1_list = || {
        host.v1
            .iter()
            .map(|h| h.controllers.join(","))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let v2_desc = |v: &cgroup::V2Host| {
        format!(
            "cgroup2 at {} (our cgroup {}: controllers [{}], subtree_control [{}], {})",
            v.mount.display(),
            v.base.display(),
            v.controllers.join(" "),
            v.subtree_control.join(" "),
            if v.writable {
                "writable"
            } else {
                "not writable"
            }
        )
    };
    let (detail, ok) = match (host.layout(), &host.v2) {
        (Layout::Unified, Some(v)) if delegated => (format!("cgroup v2 only, delegated: {}", v2_desc(v)), true),
        (Layout::Unified, Some(v)) => (format!("cgroup v2 only, but memory/pids/cpu not delegated to us: {}", v2_desc(v)), false),
        (Layout::Hybrid, Some(v)) => (
            format!(
                "hybrid: v1 controllers ({}) plus {}; job limits use the v1 controllers where v2 has none",
                v1_list(),
                v2_desc(v)
            ),
            delegated,
        ),
        (Layout::Legacy, _) => (format!("cgroup v1 only: {}", v1_list()), false),
        _ => ("no cgroup filesystem mounted under /sys/fs/cgroup".to_string(), false),
    };
    check("cgroup_v2", ok, false, detail, Some(FIX_CGROUP_V2))
}

/// `agentjail doctor [--policy FILE]`: exit 0 when the probe jail of that policy (the
/// embedded default without one) ran and every control it requires is available, 1
/// otherwise (also when the embedded default does not load on this host: a failed `policy`
/// check says why), 2 when a policy file given cannot be loaded.
pub fn command(json: bool, policy: Option<&std::path::Path>) -> i32 {
    let report = match agentjail_engine::load_policy(policy) {
        Ok(p) => run(Some(&p)),
        // No --policy: the default does not fit this host (no python3 agentjail can use):
        // a finding about the host, reported with the others.
        Err(e) if policy.is_none() => run_without_default_policy(&e.to_string()),
        // A policy file given that does not load: bad input.
        Err(e) => {
            eprintln!("agentjail doctor: {e}");
            return 2;
        }
    };
    let text = if json {
        serde_json::to_string_pretty(&report.to_json()).map(|s| s + "\n")
    } else {
        Ok(report.to_text())
    };
    // Written, not println!: a reader that goes away (`doctor | head`) is not a panic.
    use std::io::Write;
    match text {
        Ok(t) => {
            let _ = std::io::stdout().lock().write_all(t.as_bytes());
        }
        Err(e) => eprintln!("agentjail: {e}"),
    }
    i32::from(!report.all_required_ok())
}

/// `agentjail doctor` under a policy with an allowlist: what the proxy needs from the host
/// besides what every jail needs (the probe jail then starts a real one with its listener).
/// Landlock ABI 4 confines the program's TCP connects to the proxy's port; without it the
/// program can still reach only its own loopback (the namespace has no other interface), so
/// it is not required. The proxy resolves names with the host's resolver.
fn network_check() -> Check {
    let abi = landlock_abi().unwrap_or(0);
    let resolver = ["/etc/resolv.conf", "/etc/hosts"]
        .iter()
        .filter(|p| std::fs::metadata(p).is_ok())
        .copied()
        .collect::<Vec<_>>();
    let ok = abi >= 4 && !resolver.is_empty();
    Check {
        control: "network_allowlist".into(),
        available: ok,
        required: false,
        detail: format!(
            "landlock ABI {abi} ({}); the proxy resolves names through {}",
            if abi >= 4 {
                "TCP connect confined to the proxy's port"
            } else {
                "no TCP rules: the program may connect to any port of its own loopback"
            },
            if resolver.is_empty() { "nothing (no /etc/resolv.conf or /etc/hosts)".to_string() } else { resolver.join(" and ") }
        ),
        fix: (!ok).then(|| {
            "use a kernel >= 6.7 with landlock (ABI 4) and give agentjail's host a resolver configuration".to_string()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doctor_runs_and_prints() {
        let r = run(None);
        eprintln!("{}", r.to_text());
        let j = r.to_json();
        assert_eq!(
            j["all_required_ok"],
            serde_json::Value::Bool(r.all_required_ok())
        );
        for name in [
            "user_namespace",
            "mount_namespace",
            "seccomp",
            "landlock",
            "cgroup_v2",
            "cgroup_memory",
        ] {
            assert!(r.checks.iter().any(|c| c.control == name), "{name} missing");
        }
        for c in &r.checks {
            assert!(c.available || c.fix.is_some(), "{c:?} has no fix");
        }
        // scripts/vm-test.sh runs this as root in a VM with a delegated cgroup v2 root.
        if std::env::var("AGENTJAIL_IN_VM").is_ok_and(|v| v == "1") {
            assert!(r.all_required_ok(), "{}", r.to_text());
            for name in ["cgroup_v2", "cgroup_memory", "cgroup_pids", "cgroup_cpu"] {
                let c = r.checks.iter().find(|c| c.control == name).expect("listed");
                assert!(c.available, "{c:?}");
            }
        }
    }

    #[test]
    fn hybrid_layout_is_named() {
        let t = tempfile::tempdir().expect("tmp");
        let root = t.path();
        for d in ["memory", "pids", "cpu", "unified"] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir");
        }
        std::fs::write(root.join("unified/cgroup.controllers"), "hugetlb\n").expect("w");
        let r = root.display();
        let mounts = format!(
            "cgroup {r}/memory cgroup rw,memory 0 0\ncgroup {r}/pids cgroup rw,pids 0 0\ncgroup {r}/cpu cgroup rw,cpu 0 0\ncgroup2 {r}/unified cgroup2 rw 0 0\n"
        );
        let host = cgroup::detect(root, "3:memory:/\n2:pids:/\n1:cpu:/\n0::/\n", &mounts);
        let c = cgroup_checks(&host);
        assert!(
            c[0].detail.starts_with("hybrid: v1 controllers"),
            "{}",
            c[0].detail
        );
        assert!(!c[0].available);
        assert!(c[0]
            .fix
            .as_deref()
            .is_some_and(|f| f.contains("systemd.unified_cgroup_hierarchy=1")));
    }
}
