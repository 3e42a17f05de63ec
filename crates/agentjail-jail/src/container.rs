//! Whether agentjail itself runs in a container, and what that container took away: the
//! facts a setup error's hint and `doctor` need to give a container's fix instead of a
//! host's. Read-only looks at this process's own view (files, mountinfo, environment).
//!
//! Two container defaults stop every jail:
//! - a masked `/proc`: Docker, containerd (CRI) and podman bind `/dev/null` or an empty
//!   tmpfs over `/proc/kcore`, `/proc/keys`, `/proc/timer_list`, `/proc/acpi`, ... The kernel
//!   then refuses a fresh procfs in a new user namespace (EPERM): a procfs may only be
//!   mounted where one is already fully visible. agentjail fails closed there: it never
//!   binds the host's `/proc` into a jail instead (that would show the host's processes);
//! - the runtime's default seccomp profile: it answers `clone3` with ENOSYS (so that libc
//!   falls back to `clone`) and refuses `unshare`, `mount`, `pivot_root` and namespace flags
//!   to a process without CAP_SYS_ADMIN.

use std::sync::OnceLock;

/// A container runtime, as far as it can be told from inside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    Kubernetes,
    Docker,
    Podman,
    Containerd,
    Lxc,
    /// Something says "container" (`container=` in the environment, a cgroup path) but not which.
    Other,
}

impl Runtime {
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Kubernetes => "Kubernetes pod",
            Runtime::Docker => "Docker container",
            Runtime::Podman => "podman container",
            Runtime::Containerd => "containerd container",
            Runtime::Lxc => "LXC container",
            Runtime::Other => "container",
        }
    }
}

/// What this process can see of the runtime that started it: detected once per process.
pub fn runtime() -> Option<Runtime> {
    static R: OnceLock<Option<Runtime>> = OnceLock::new();
    *R.get_or_init(|| {
        let exists = |p: &str| std::path::Path::new(p).exists();
        let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let env_container = std::env::var("container").unwrap_or_default();
        detect(Facts {
            kubernetes_env: std::env::var_os("KUBERNETES_SERVICE_HOST").is_some(),
            service_account: exists("/var/run/secrets/kubernetes.io"),
            dockerenv: exists("/.dockerenv"),
            containerenv: exists("/run/.containerenv"),
            env_container: &env_container,
            cgroup: &cgroup,
        })
    })
}

/// The inputs of [`detect`], so that it can be tested on any host.
pub struct Facts<'a> {
    pub kubernetes_env: bool,
    pub service_account: bool,
    pub dockerenv: bool,
    pub containerenv: bool,
    /// `$container` (systemd's convention: podman, lxc, docker set it).
    pub env_container: &'a str,
    /// `/proc/self/cgroup`.
    pub cgroup: &'a str,
}

/// Kubernetes first (its pods run on any of the runtimes below), then the runtime's own marks.
pub fn detect(f: Facts<'_>) -> Option<Runtime> {
    let cg = f.cgroup;
    if f.kubernetes_env || f.service_account || cg.contains("kubepods") {
        return Some(Runtime::Kubernetes);
    }
    if f.containerenv || f.env_container == "podman" || cg.contains("libpod") {
        return Some(Runtime::Podman);
    }
    if f.dockerenv || f.env_container == "docker" || cg.contains("/docker") {
        return Some(Runtime::Docker);
    }
    if cg.contains("containerd") {
        return Some(Runtime::Containerd);
    }
    if f.env_container.starts_with("lxc") || cg.contains("/lxc") {
        return Some(Runtime::Lxc);
    }
    (!f.env_container.is_empty()).then_some(Runtime::Other)
}

/// The mount points beneath /proc in this process's mount namespace that hide part of it
/// (binfmt_misc's own empty directory does not count). Any one of them makes the kernel
/// refuse a fresh procfs inside a user namespace.
pub fn proc_overmounts() -> Vec<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    overmounts_in(&info)
}

fn overmounts_in(mountinfo: &str) -> Vec<String> {
    mountinfo
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|p| p.starts_with("/proc/") && *p != "/proc/sys/fs/binfmt_misc")
        .map(str::to_string)
        .collect()
}

/// The settings that unmask /proc, per runtime.
fn unmask_proc(rt: Option<Runtime>) -> &'static str {
    match rt {
        Some(Runtime::Kubernetes) => {
            "set the container's securityContext.procMount: Unmasked (with the pod's \
             hostUsers: false; see contrib/containers/pod.yaml)"
        }
        Some(Runtime::Docker) => "run the container with --security-opt systempaths=unconfined",
        Some(Runtime::Podman) => "run the container with --security-opt unmask=/proc/*",
        Some(Runtime::Containerd) | Some(Runtime::Lxc) | Some(Runtime::Other) => {
            "start the container without masked /proc paths (OCI config: empty \
             linux.maskedPaths and linux.readonlyPaths under /proc)"
        }
        None => "remove the mounts over /proc in the mount namespace agentjail starts in",
    }
}

/// The hint for a fresh procfs the kernel refused.
pub fn proc_hint(errno: i32) -> String {
    let rt = runtime();
    let over = proc_overmounts();
    if errno != libc::EPERM || (over.is_empty() && rt.is_none()) {
        return "the kernel refused a fresh procfs for the jail's pid namespace: see \
                `agentjail doctor`"
            .into();
    }
    let shown: Vec<&str> = over.iter().take(4).map(String::as_str).collect();
    format!(
        "{} hides parts of /proc ({}{}), and the kernel then refuses a fresh procfs to a \
         user namespace; agentjail never binds the host's /proc instead. Fix: {}",
        rt.map_or("this mount namespace", Runtime::name),
        shown.join(", "),
        if over.len() > shown.len() {
            ", ..."
        } else {
            ""
        },
        unmask_proc(rt)
    )
}

/// The container part of a hint for a syscall of the setup that was refused (clone3,
/// unshare, mount, pivot_root): in a container that is its seccomp profile or AppArmor;
/// `None` outside one.
pub fn seccomp_hint(what: &str, errno: i32) -> Option<String> {
    let rt = runtime()?;
    let profile = match rt {
        Runtime::Kubernetes => {
            "securityContext.seccompProfile {type: Localhost, localhostProfile: \
             agentjail.json} with contrib/containers/seccomp.json installed on the node"
        }
        Runtime::Docker => "--security-opt seccomp=contrib/containers/seccomp.json",
        Runtime::Podman => "--security-opt seccomp=contrib/containers/seccomp.json",
        _ => "the seccomp profile contrib/containers/seccomp.json",
    };
    let errno_text = if errno == libc::ENOSYS {
        "ENOSYS: the runtime's default seccomp profile answers so"
    } else {
        "the runtime's default seccomp profile or AppArmor refuses it"
    };
    Some(format!(
        "in a {}, {what} was refused ({errno_text}); run it with {profile} (the default \
         profile plus exactly what agentjail needs), and AppArmor unconfined or \
         contrib/apparmor where AppArmor is on; see contrib/containers/README.md",
        rt.name()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts<'a>(cgroup: &'a str, env: &'a str) -> Facts<'a> {
        Facts {
            kubernetes_env: false,
            service_account: false,
            dockerenv: false,
            containerenv: false,
            env_container: env,
            cgroup,
        }
    }

    #[test]
    fn runtimes_are_told_apart() {
        assert_eq!(detect(facts("0::/user.slice/session-1.scope\n", "")), None);
        assert_eq!(
            detect(facts(
                "0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-a.scope\n",
                ""
            )),
            Some(Runtime::Kubernetes)
        );
        assert_eq!(detect(facts("0::/\n", "podman")), Some(Runtime::Podman));
        assert_eq!(
            detect(facts("0::/system.slice/docker-ab.scope\n", "")),
            Some(Runtime::Docker)
        );
        assert_eq!(
            detect(facts("0::/system.slice/containerd.service/x\n", "")),
            Some(Runtime::Containerd)
        );
        assert_eq!(
            detect(facts("0::/\n", "systemd-nspawn")),
            Some(Runtime::Other)
        );
        let mut f = facts("0::/\n", "");
        f.dockerenv = true;
        assert_eq!(detect(f), Some(Runtime::Docker));
        let mut f = facts("0::/\n", "");
        f.kubernetes_env = true;
        f.dockerenv = true;
        assert_eq!(detect(f), Some(Runtime::Kubernetes));
    }

    #[test]
    fn proc_overmounts_are_read_from_mountinfo() {
        let info = "\
22 1 8:1 / / rw - ext4 /dev/vda rw
23 22 0:5 / /proc rw - proc proc rw
24 23 0:6 / /proc/sys/fs/binfmt_misc rw - binfmt_misc binfmt_misc rw
25 23 0:7 /null /proc/keys rw - devtmpfs udev rw
26 23 0:8 / /proc/acpi ro - tmpfs tmpfs ro
27 22 0:9 / /processes rw - tmpfs tmpfs rw
";
        assert_eq!(overmounts_in(info), ["/proc/keys", "/proc/acpi"]);
    }
}
