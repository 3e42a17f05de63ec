//! The jail as plain data.
//!
//! [`build`] turns a policy (plus the command to run) into an ordered list of setup
//! operations and limits: a [`JailPlan`], whose types are the jail crate's
//! (`agentjail_jail::plan`, re-exported here). No syscalls happen here: a reviewer can print
//! the plan (`agentjail exec --print-plan`), a test can compare it by equality, and the jail
//! code only walks it. Mirrors bubblewrap's "command line → list of setup ops → apply".

pub mod seccomp;

use crate::policy::Policy;
pub use agentjail_jail::plan::*;

/// What a jail holds besides the policy's binds.
#[derive(Debug, Clone, Default)]
pub struct Contents<'a> {
    /// agentjail's own read-only files (the runner) and the job's input files.
    pub files: &'a [JailFile],
    /// Host paths bound read-only under /app/in.
    pub inputs: &'a [HostInput],
    /// The program's working directory /app/out, a tmpfs of (bytes, inodes) whose files
    /// become the run's artifacts. None (`exec`): the working directory is /tmp.
    pub out: Option<(u64, u64)>,
}

pub const JAIL_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
const DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];
/// procfs files that leak host kernel state or identity, or act on the host; hidden (a
/// file reads empty, a directory is an empty read-only tmpfs). /proc/cpuinfo, meminfo and
/// stat stay: runtimes size themselves from them.
const PROC_MASKED: [&str; 17] = [
    "/proc/kcore",
    "/proc/keys",
    "/proc/timer_list",
    "/proc/sched_debug",
    "/proc/latency_stats",
    "/proc/sysrq-trigger",
    "/proc/acpi",
    "/proc/scsi",
    "/proc/kallsyms",
    "/proc/cmdline",
    "/proc/config.gz",
    "/proc/modules",
    "/proc/diskstats",
    "/proc/partitions",
    "/proc/swaps",
    "/proc/zoneinfo",
    "/proc/pressure",
];
/// Under /proc/sys, masked before /proc/sys is made read-only: the host's boot id is a
/// stable host identifier.
const PROC_SYS_MASKED: [&str; 1] = ["/proc/sys/kernel/random/boot_id"];
/// procfs trees that stay visible but read-only.
const PROC_READ_ONLY: [&str; 4] = ["/proc/sys", "/proc/irq", "/proc/bus", "/proc/fs"];

/// Why a policy has no jail plan on this host. Display is the message agentjail prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildError {
    /// A `filesystem.read_only` path is missing here.
    MissingReadOnly { path: String },
    /// The `[seccomp]` table does not resolve (an unknown group or syscall): the reason.
    Seccomp(agentjail_jail::syscall_groups::ResolveError),
}

impl BuildError {
    /// What the operator can do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            BuildError::MissingReadOnly { .. } => "remove it or list it in filesystem.optional",
            BuildError::Seccomp(_) => "fix the policy's [seccomp] table",
        }
    }
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildError::MissingReadOnly { path } => write!(
                f,
                "filesystem.read_only: {path} does not exist on this host; {}",
                self.hint()
            ),
            BuildError::Seccomp(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for BuildError {}

/// Build the plan for running `argv` under `policy`. `host` answers what a host path is
/// (the real filesystem in production, a table in tests).
// long because the plan is one struct literal, a line per field; the parts are built above it.
pub fn build(
    policy: &Policy,
    argv: Vec<String>,
    contents: &Contents<'_>,
    host: &dyn Host,
) -> Result<JailPlan, BuildError> {
    let lim = &policy.limits;
    let mut root = Root::default();
    root.host_binds(policy, host)?;
    root.etc();
    if policy.filesystem.alternatives {
        root.alternatives(policy, host);
    }
    root.files(contents.files);
    root.inputs(contents.inputs);
    root.dev();
    root.proc();
    root.tmp(lim.tmp_size.0, lim.tmp_inodes);
    let mut read_write = vec!["/tmp".to_string()];
    let cwd = match contents.out {
        Some((bytes, inodes)) => {
            root.out(bytes, inodes);
            read_write.push(APP_OUT.into());
            APP_OUT
        }
        None => "/tmp",
    };
    let Root { mounts, read_exec } = root;
    let files = contents.files;
    let env = environment(policy);
    let rlimits = rlimits(lim);
    let landlock = LandlockPlan {
        requirement: policy.landlock.requirement,
        min_abi: policy.landlock.min_abi,
        read_exec,
        read_write,
        devices: DEVICES.iter().map(|d| d.to_string()).collect(),
        deny_tcp: !policy.network.enabled,
        connect_tcp_ports: policy.network.proxy_ports(),
        scope_abstract_unix: true,
        scope_signals: true,
    };
    let seccomp = seccomp::plan(&policy.seccomp).map_err(BuildError::Seccomp)?;

    Ok(JailPlan {
        argv,
        env,
        cwd: cwd.into(),
        hostname: JAIL_HOSTNAME.into(),
        uid: JAIL_UID,
        gid: JAIL_GID,
        root_tmpfs_bytes: 1024 * 1024 + files.iter().map(|f| f.contents.len() as u64).sum::<u64>(),
        mounts,
        rlimits,
        cgroup: CgroupLimits {
            memory_max: Some(lim.memory.0),
            swap_max: Some(0),
            pids_max: Some(lim.pids),
            // One CPU's worth of bandwidth: a job cannot starve the host's other cores.
            cpu_max: Some((100_000, 100_000)),
        },
        cgroup_requirement: policy.cgroup.requirement,
        landlock,
        seccomp,
        network: policy.network.enabled,
        net_proxy_port: policy
            .network
            .allowlist()
            .then_some(crate::policy::PROXY_PORT),
        runner_fds: false,
        late_files: None,
        limits: SuperviseLimits {
            wall_time_ms: lim.wall_time_ms,
            cpu_time_ms: lim.cpu_time_ms,
            stdout_bytes: lim.stdout.0,
            stderr_bytes: lim.stderr.0,
            reply_bytes: agentjail_jail::supervise::REPLY_CAP,
            observe_syscalls: policy.seccomp.observe,
            observe_opens: seccomp::observe_opens(&policy.seccomp),
        },
    })
}

/// The jail's root as it is built: the mount ops in order, and the paths landlock lets the
/// program read and execute.
#[derive(Default)]
struct Root {
    mounts: Vec<MountOp>,
    read_exec: Vec<String>,
}

impl Root {
    /// The policy's read-only host paths (symlinks recreated, missing optional ones skipped).
    fn host_binds(&mut self, policy: &Policy, host: &dyn Host) -> Result<(), BuildError> {
        let fs = &policy.filesystem;
        let mut seen = std::collections::BTreeSet::new();
        for path in fs.read_only.iter().chain(fs.optional.iter()) {
            if !seen.insert(path.as_str()) {
                continue;
            }
            match host.probe(path) {
                HostPath::Dir | HostPath::File => {
                    // Every directory above the bind (an interpreter under /opt/py312 needs
                    // /opt in a root that has none).
                    self.parents(path);
                    self.mounts.push(MountOp::BindReadOnly {
                        source: path.clone(),
                        target: path.clone(),
                    });
                    self.read_exec.push(path.clone());
                }
                HostPath::Symlink(target) => {
                    self.mounts.push(MountOp::Symlink {
                        target,
                        link: path.clone(),
                    });
                }
                HostPath::Missing if fs.optional.contains(path) => {}
                HostPath::Missing => {
                    return Err(BuildError::MissingReadOnly { path: path.clone() })
                }
            }
        }
        Ok(())
    }

    /// A synthesized /etc: the jail's user and group, localhost. Nothing is copied from the host.
    fn etc(&mut self) {
        self.dir("/etc");
        let passwd = format!("agent:x:{JAIL_UID}:{JAIL_GID}:agent:/tmp:/usr/sbin/nologin\n");
        self.file("/etc/passwd", passwd.into_bytes());
        self.file("/etc/group", format!("agent:x:{JAIL_GID}:\n").into_bytes());
        let hosts = format!("127.0.0.1 localhost {JAIL_HOSTNAME}\n");
        self.file("/etc/hosts", hosts.into_bytes());
        self.read_exec.push("/etc".into());
    }

    /// The host's /etc/alternatives links that point under a read-only bind (absolute
    /// targets only; anything else, and every non-link, is left out).
    fn alternatives(&mut self, policy: &Policy, host: &dyn Host) {
        const DIR: &str = "/etc/alternatives";
        let binds: Vec<&String> = policy.filesystem.read_only.iter().collect();
        let mut links = Vec::new();
        for name in host.list(DIR) {
            let link = format!("{DIR}/{name}");
            if let HostPath::Symlink(target) = host.probe(&link) {
                let inside = binds.iter().any(|b| target.starts_with(&format!("{b}/")));
                if inside && !target.split('/').any(|c| c == "..") && !name.contains('/') {
                    links.push(MountOp::Symlink { target, link });
                }
            }
        }
        if !links.is_empty() {
            self.dir(DIR);
            self.mounts.extend(links);
        }
    }

    /// Read-only files (agentjail's runner, the job's input files), each in its directories.
    fn files(&mut self, files: &[JailFile]) {
        for f in files {
            self.parents(&f.path);
            self.file(&f.path, f.contents.clone());
        }
    }

    /// Every directory above `path`, once, readable (and executable) for the program.
    fn parents(&mut self, path: &str) {
        let mut dir = String::new();
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            dir.push('/');
            dir.push_str(part);
            if !self.read_exec.contains(&dir) && dir != "/etc" {
                self.dir(&dir.clone());
                self.read_exec.push(dir.clone());
            }
        }
    }

    /// Host inputs, each bound at /app/in/NAME.
    fn inputs(&mut self, inputs: &[HostInput]) {
        for i in inputs {
            let target = format!("{APP_IN}/{}", i.name);
            self.parents(&target);
            self.mounts.push(MountOp::BindInput {
                root: i.root.clone(),
                relative: i.relative.clone(),
                target,
            });
        }
    }

    /// The program's working directory: a size- and inode-capped tmpfs, the artifacts.
    fn out(&mut self, size_bytes: u64, inodes: u64) {
        self.parents(&format!("{APP_OUT}/x"));
        self.mounts.push(MountOp::Tmpfs {
            target: APP_OUT.into(),
            size_bytes,
            inodes,
            mode: 0o755,
        });
    }

    /// A minimal /dev: five device binds and the fd symlinks.
    fn dev(&mut self) {
        self.dir("/dev");
        for d in DEVICES {
            self.mounts.push(MountOp::BindDevice {
                source: d.into(),
                target: d.into(),
            });
        }
        for (link, target) in [
            ("/dev/fd", "/proc/self/fd"),
            ("/dev/stdin", "/proc/self/fd/0"),
            ("/dev/stdout", "/proc/self/fd/1"),
            ("/dev/stderr", "/proc/self/fd/2"),
        ] {
            self.mounts.push(MountOp::Symlink {
                target: target.into(),
                link: link.into(),
            });
        }
    }

    /// A fresh /proc for the jail's pid namespace, with the host's secrets masked and the
    /// kernel's knobs read-only (masks first, so the read-only bind covers them).
    fn proc(&mut self) {
        self.mounts.push(MountOp::Proc {
            target: "/proc".into(),
        });
        for p in PROC_MASKED.iter().chain(PROC_SYS_MASKED.iter()) {
            self.mounts.push(MountOp::MaskPath {
                path: p.to_string(),
            });
        }
        for p in PROC_READ_ONLY {
            self.mounts.push(MountOp::ReadOnlyPath { path: p.into() });
        }
        self.read_exec.push("/proc".into());
    }

    /// The one writable place: a size- and inode-capped /tmp.
    fn tmp(&mut self, size_bytes: u64, inodes: u64) {
        self.mounts.push(MountOp::Tmpfs {
            target: "/tmp".into(),
            size_bytes,
            inodes,
            mode: 0o1777,
        });
    }

    fn dir(&mut self, path: &str) {
        self.mounts.push(MountOp::Dir {
            path: path.into(),
            mode: 0o755,
        });
    }

    fn file(&mut self, path: &str, contents: Vec<u8>) {
        self.mounts.push(MountOp::File {
            path: path.into(),
            contents,
            mode: 0o444,
        });
    }
}

/// Where an input file's `link` may be: the working directory (whose files are the
/// artifacts: a link left there is reported skipped as `symlink`, never followed) and /tmp.
pub const LINK_DIRS: [&str; 2] = ["/app/out/", "/tmp/"];

/// The mount ops that make input files' links (`(path, link)`: a symlink at `link` to
/// `/app/in/PATH`, crate::contract::InputFile): the directories above each beneath its
/// tmpfs (owned by the jail uid, as the tmpfs is: the program may write beside it), then
/// the symlink. Appended after the plan's other ops, so /app/out and /tmp are mounted by
/// then; the paths were validated by the contract (beneath LINK_DIRS, no `..`).
pub fn link_ops<'a>(links: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<MountOp> {
    let mut ops = Vec::new();
    let mut dirs = std::collections::BTreeSet::new();
    for (path, link) in links {
        let Some(base) = LINK_DIRS.iter().find(|d| link.starts_with(*d)) else {
            continue;
        };
        let parts: Vec<&str> = link[base.len()..].split('/').collect();
        let mut dir = base.trim_end_matches('/').to_string();
        for part in &parts[..parts.len() - 1] {
            dir.push('/');
            dir.push_str(part);
            if dirs.insert(dir.clone()) {
                ops.push(MountOp::Dir {
                    path: dir.clone(),
                    mode: 0o755,
                });
            }
        }
        ops.push(MountOp::Symlink {
            target: format!("{APP_IN}/{path}"),
            link: link.to_string(),
        });
    }
    ops
}

/// PATH, LANG and HOME=/tmp, then the policy's extra variables.
fn environment(policy: &Policy) -> Vec<(String, String)> {
    let mut env = vec![
        ("PATH".to_string(), JAIL_PATH.to_string()),
        ("LANG".to_string(), "C.UTF-8".to_string()),
        ("HOME".to_string(), "/tmp".to_string()),
    ];
    for (k, v) in &policy.environment.extra {
        env.retain(|(ek, _)| ek != k);
        env.push((k.clone(), v.clone()));
    }
    // The allowlist's proxy variables last: the policy's extras cannot point them elsewhere.
    for (k, v) in policy.network.proxy_env() {
        env.retain(|(ek, _)| *ek != k);
        env.push((k, v));
    }
    env
}

/// The rlimits every jail gets (the cgroup-covered ones are adjusted at launch).
fn rlimits(lim: &crate::policy::Limits) -> Vec<Rlimit> {
    let cpu_secs = lim.cpu_time_ms.div_ceil(1000);
    vec![
        Rlimit {
            resource: RlimitKind::Core,
            soft: 0,
            hard: 0,
        },
        Rlimit {
            resource: RlimitKind::FileSize,
            soft: lim.file_size.0,
            hard: lim.file_size.0,
        },
        Rlimit {
            resource: RlimitKind::OpenFiles,
            soft: lim.open_files,
            hard: lim.open_files,
        },
        Rlimit {
            resource: RlimitKind::Nproc,
            soft: lim.pids,
            hard: lim.pids,
        },
        // A backstop only: the supervisor enforces the CPU limit in milliseconds.
        Rlimit {
            resource: RlimitKind::Cpu,
            soft: cpu_secs + 1,
            hard: cpu_secs + 2,
        },
        Rlimit {
            resource: RlimitKind::MemLock,
            soft: 0,
            hard: 0,
        },
        Rlimit {
            resource: RlimitKind::MsgQueue,
            soft: 0,
            hard: 0,
        },
        // Removed at spawn time when a memory cgroup bounds the jail instead.
        Rlimit {
            resource: RlimitKind::AddressSpace,
            soft: lim.memory.0,
            hard: lim.memory.0,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A merged-/usr host as a table: no filesystem access in these tests.
    struct TableHost;

    impl Host for TableHost {
        fn probe(&self, path: &str) -> HostPath {
            match path {
                "/usr" => HostPath::Dir,
                "/bin" => HostPath::Symlink("usr/bin".into()),
                "/lib" => HostPath::Symlink("usr/lib".into()),
                "/lib64" => HostPath::Symlink("usr/lib64".into()),
                "/etc/alternatives/libblas.so.3" => {
                    HostPath::Symlink("/usr/lib/x86_64-linux-gnu/blas/libblas.so.3".into())
                }
                "/etc/alternatives/editor" => HostPath::Symlink("/bin/nano".into()),
                "/etc/alternatives/evil" => HostPath::Symlink("/usr/../etc/shadow".into()),
                _ => HostPath::Missing,
            }
        }

        fn list(&self, dir: &str) -> Vec<String> {
            match dir {
                "/etc/alternatives" => vec!["editor".into(), "evil".into(), "libblas.so.3".into()],
                _ => Vec::new(),
            }
        }
    }

    static HOST: TableHost = TableHost;

    fn plan() -> JailPlan {
        let files = [JailFile {
            path: "/app/main.py".into(),
            contents: b"print(1)\n".to_vec(),
        }];
        let contents = Contents {
            files: &files,
            ..Default::default()
        };
        build(
            &Policy::default(),
            vec!["/usr/bin/python3".into()],
            &contents,
            &HOST,
        )
        .expect("plan")
    }

    #[test]
    fn alternatives_only_into_the_binds() {
        let mut policy = Policy::default();
        policy.filesystem.alternatives = true;
        let p = build(&policy, vec!["x".into()], &Contents::default(), &HOST).unwrap();
        let links: Vec<(&str, &str)> = p
            .mounts
            .iter()
            .filter_map(|m| match m {
                MountOp::Symlink { target, link } if link.starts_with("/etc/") => {
                    Some((link.as_str(), target.as_str()))
                }
                _ => None,
            })
            .collect();
        // Targets under the policy's read-only paths only; a `..` is never accepted.
        assert_eq!(
            links,
            [
                ("/etc/alternatives/editor", "/bin/nano"),
                (
                    "/etc/alternatives/libblas.so.3",
                    "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3"
                )
            ]
        );
    }

    #[test]
    fn inputs_and_out_are_in_app() {
        let files = [JailFile {
            path: "/app/in/data/sales.csv".into(),
            contents: b"a,b\n".to_vec(),
        }];
        let inputs = [HostInput {
            root: "/srv/data".into(),
            relative: "big".into(),
            name: "big".into(),
        }];
        let contents = Contents {
            files: &files,
            inputs: &inputs,
            out: Some((5 << 20, 80)),
        };
        let p = build(&Policy::default(), vec!["x".into()], &contents, &HOST).unwrap();
        assert_eq!(p.cwd, "/app/out");
        assert!(p.landlock.read_write.contains(&"/app/out".to_string()));
        assert!(p.mounts.contains(&MountOp::BindInput {
            root: "/srv/data".into(),
            relative: "big".into(),
            target: "/app/in/big".into()
        }));
        assert!(p.mounts.iter().any(|m| matches!(m, MountOp::Tmpfs { target, size_bytes, .. } if target == "/app/out" && *size_bytes == 5 << 20)));
        for dir in ["/app", "/app/in", "/app/in/data"] {
            assert!(
                p.mounts.contains(&MountOp::Dir {
                    path: dir.into(),
                    mode: 0o755
                }),
                "{dir}"
            );
        }
    }

    #[test]
    fn root_binds_only_what_the_policy_lists_read_only() {
        let p = plan();
        let binds: Vec<&str> = p
            .mounts
            .iter()
            .filter_map(|m| match m {
                MountOp::BindReadOnly { source, .. } => Some(source.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(binds, ["/usr"]);
        assert!(p.mounts.contains(&MountOp::Symlink {
            target: "usr/bin".into(),
            link: "/bin".into()
        }));
        // Nothing writable from the host: the only writable mount is the capped /tmp tmpfs.
        let tmp = p.mounts.iter().find_map(|m| match m {
            MountOp::Tmpfs {
                target,
                size_bytes,
                inodes,
                ..
            } if target == "/tmp" => Some((*size_bytes, *inodes)),
            _ => None,
        });
        assert_eq!(tmp, Some((64 * 1024 * 1024, 4096)));
        for forbidden in ["/etc", "/home", "/root", "/var", "/run", "/sys"] {
            assert!(
                !p.mounts.iter().any(|m| matches!(m, MountOp::BindReadOnly { source, .. } | MountOp::BindDevice { source, .. } if source == forbidden)),
                "{forbidden} must never be bound"
            );
        }
    }

    #[test]
    fn etc_is_synthesized_and_the_program_is_a_read_only_file() {
        let p = plan();
        let files: Vec<&str> = p
            .mounts
            .iter()
            .filter_map(|m| match m {
                MountOp::File { path, mode, .. } => {
                    assert_eq!(*mode, 0o444);
                    Some(path.as_str())
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            files,
            ["/etc/passwd", "/etc/group", "/etc/hosts", "/app/main.py"]
        );
    }

    #[test]
    fn proc_is_fresh_and_masked_and_dev_is_minimal() {
        let p = plan();
        assert!(p.mounts.contains(&MountOp::Proc {
            target: "/proc".into()
        }));
        for masked in [
            "/proc/kcore",
            "/proc/keys",
            "/proc/sysrq-trigger",
            "/proc/sys/kernel/random/boot_id",
        ] {
            assert!(
                p.mounts.contains(&MountOp::MaskPath {
                    path: masked.into()
                }),
                "{masked}"
            );
        }
        let devices: Vec<&str> = p
            .mounts
            .iter()
            .filter_map(|m| match m {
                MountOp::BindDevice { target, .. } => Some(target.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            devices,
            [
                "/dev/null",
                "/dev/zero",
                "/dev/full",
                "/dev/random",
                "/dev/urandom"
            ]
        );
        // Masks come before /proc/sys turns read-only, so the read-only bind covers them.
        let pos = |m: &MountOp| p.mounts.iter().position(|x| x == m).unwrap();
        assert!(
            pos(&MountOp::MaskPath {
                path: "/proc/sys/kernel/random/boot_id".into()
            }) < pos(&MountOp::ReadOnlyPath {
                path: "/proc/sys".into()
            })
        );
    }

    #[test]
    fn environment_identity_and_limits() {
        let p = plan();
        let keys: Vec<&str> = p.env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["PATH", "LANG", "HOME"]);
        assert_eq!(
            (p.uid, p.gid, p.cwd.as_str(), p.network),
            (JAIL_UID, JAIL_GID, "/tmp", false)
        );
        assert_eq!(p.cgroup.memory_max, Some(256 * 1024 * 1024));
        assert_eq!(p.cgroup.swap_max, Some(0));
        assert_eq!(p.cgroup.pids_max, Some(64));
        let rl = |k: RlimitKind| {
            p.rlimits
                .iter()
                .find(|r| r.resource == k)
                .map(|r| (r.soft, r.hard))
        };
        assert_eq!(rl(RlimitKind::Core), Some((0, 0)));
        assert_eq!(rl(RlimitKind::OpenFiles), Some((64, 64)));
        assert!(p.landlock.read_write == ["/tmp"] && p.landlock.deny_tcp);
        assert!(!p
            .seccomp
            .allowed
            .iter()
            .any(|s| s == "unshare" || s == "mount" || s == "ptrace"));
    }

    #[test]
    fn a_missing_required_bind_is_an_error_and_a_missing_optional_one_is_skipped() {
        let mut policy = Policy::default();
        policy.filesystem.read_only.push("/opt/tool".into());
        let err = build(&policy, vec!["x".into()], &Contents::default(), &HOST).unwrap_err();
        assert_eq!(
            err,
            BuildError::MissingReadOnly {
                path: "/opt/tool".into()
            }
        );
        assert!(err.to_string().contains("/opt/tool"), "{err}");
        policy.filesystem.optional.push("/opt/tool".into());
        assert!(build(&policy, vec!["x".into()], &Contents::default(), &HOST).is_ok());
    }

    #[test]
    fn the_plan_prints_as_json() {
        let text = serde_json::to_string(&plan()).expect("serializable");
        assert!(text.contains("\"op\":\"bind_read_only\"") && text.contains("\"seccomp\""));
    }
}
