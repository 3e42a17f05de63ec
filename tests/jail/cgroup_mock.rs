//! The cgroup code against a temp-dir copy of /sys/fs/cgroup (v2 and v1 layouts, built as the
//! kernel shows them) and the fake cgroupfs that makes and removes cgroups there as the
//! kernel does: detection, the files `create` writes, degradation, `remove` and
//! `sweep_stale`. No privileges needed.
use agentjail_jail::cgroup::fake::FakeCgroupFs;
use agentjail_jail::cgroup::{detect, CgroupLimits, HostCgroups, JobCgroup, Layout};
use agentjail_jail::ControlState;
use std::fs;
use std::path::{Path, PathBuf};

fn put(p: &Path, s: &str) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, s).unwrap();
}

fn limits() -> CgroupLimits {
    CgroupLimits {
        memory_max: Some(64 << 20),
        swap_max: Some(0),
        pids_max: Some(16),
        cpu_max: Some((50_000, 100_000)),
    }
}

/// A v1 cgroup directory as the kernel shows it: `cgroup.procs` and the interface files of
/// the hierarchy's controllers (a child the fake makes gets the same).
fn v1_dir(dir: &Path, controllers: &[&str]) {
    put(&dir.join("cgroup.procs"), "");
    for c in controllers {
        let files: &[&str] = match *c {
            "memory" => &[
                "memory.limit_in_bytes",
                "memory.max_usage_in_bytes",
                "memory.oom_control",
            ],
            "pids" => &["pids.max", "pids.events"],
            "cpu" => &["cpu.cfs_quota_us", "cpu.cfs_period_us"],
            "cpuacct" => &["cpuacct.usage"],
            _ => &[],
        };
        for f in files {
            put(&dir.join(f), "");
        }
    }
}

fn v2_host(t: &Path, subtree: &str) -> HostCgroups {
    let root = t.join("sys/fs/cgroup");
    let own = root.join("user.slice/svc");
    put(
        &own.join("cgroup.controllers"),
        "cpuset cpu io memory pids\n",
    );
    put(&own.join("cgroup.subtree_control"), subtree);
    put(&own.join("cgroup.procs"), "");
    let mounts = format!(
        "sysfs /sys sysfs rw 0 0\ncgroup2 {} cgroup2 rw,nsdelegate 0 0\n",
        root.display()
    );
    detect(&root, "0::/user.slice/svc\n", &mounts)
}

#[test]
fn v2_detect_and_create_writes_limits() {
    let t = tempfile::tempdir().unwrap();
    let host = v2_host(t.path(), "cpu memory pids\n");
    assert_eq!(host.layout(), Layout::Unified);
    let v2 = host.v2.as_ref().unwrap();
    assert!(v2.base.ends_with("user.slice/svc"));
    assert_eq!(v2.controllers, ["cpuset", "cpu", "io", "memory", "pids"]);
    assert!(v2.writable);

    let mut job = JobCgroup::create_in(&FakeCgroupFs, &host, "run1", &limits()).unwrap();
    let dir = v2
        .base
        .join(format!("agentjail-{}-run1", std::process::id()));
    assert_eq!(job.paths(), vec![dir.clone()]);
    assert_eq!(
        fs::read_to_string(dir.join("memory.max")).unwrap(),
        "67108864"
    );
    assert_eq!(
        fs::read_to_string(dir.join("memory.swap.max")).unwrap(),
        "0"
    );
    assert_eq!(fs::read_to_string(dir.join("pids.max")).unwrap(), "16");
    assert_eq!(
        fs::read_to_string(dir.join("cpu.max")).unwrap(),
        "50000 100000"
    );
    assert!(job.v2_dir_fd().is_some());
    let c = job.controls();
    assert_eq!(c.len(), 3);
    assert!(c.iter().all(|c| c.state == ControlState::Enforced), "{c:?}");
    assert_eq!(c[0].control, "cgroup_memory");
    assert_eq!(c[0].mechanism, "cgroup v2 memory.max");

    // attach writes the pid; stats read the kernel's counters.
    job.attach(4242, false).unwrap();
    assert_eq!(
        fs::read_to_string(dir.join("cgroup.procs")).unwrap(),
        "4242"
    );
    fs::write(dir.join("cgroup.procs"), "").unwrap();
    put(&dir.join("memory.peak"), "1000\n");
    put(
        &dir.join("memory.events"),
        "low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\n",
    );
    put(&dir.join("pids.events"), "max 5\n");
    put(&dir.join("cpu.stat"), "usage_usec 777\nuser_usec 700\n");
    let s = job.stats();
    assert_eq!(s.memory_peak_bytes, Some(1000));
    assert_eq!((s.oom_kills, s.pids_limit_hits), (1, 5));
    // cpu.stat was opened at create (empty then) and is read with pread: it sees new content.
    assert_eq!(job.cpu_usage_us(), Some(777));

    put(&dir.join("cgroup.events"), "populated 0\nfrozen 0\n");

    job.remove().unwrap();
    assert!(!dir.exists());
    job.remove().unwrap(); // idempotent
}

#[test]
fn v2_enables_delegated_controllers_in_subtree_control() {
    let t = tempfile::tempdir().unwrap();
    let host = v2_host(t.path(), "");
    let mut job = JobCgroup::create_in(
        &FakeCgroupFs,
        &host,
        "r",
        &CgroupLimits {
            pids_max: Some(8),
            ..Default::default()
        },
    )
    .unwrap();
    let base = &host.v2.as_ref().unwrap().base;
    assert_eq!(
        fs::read_to_string(base.join("cgroup.subtree_control")).unwrap(),
        "+pids"
    );
    job.remove().unwrap();
}

#[test]
fn v2_controller_not_delegated_is_unavailable_with_fix() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("cg");
    put(&root.join("cgroup.controllers"), "hugetlb\n");
    put(&root.join("cgroup.subtree_control"), "");
    let host = detect(
        &root,
        "0::/\n",
        &format!("cgroup2 {} cgroup2 rw 0 0\n", root.display()),
    );
    let job = JobCgroup::create_in(&FakeCgroupFs, &host, "r", &limits()).unwrap();
    assert!(!job.is_active());
    let c = job.controls();
    assert_eq!(c.len(), 3);
    for c in &c {
        assert_eq!(c.state, ControlState::Unavailable);
        assert!(c.detail.contains("Delegate=yes"), "{}", c.detail);
    }
}

fn v1_host(t: &Path) -> HostCgroups {
    let root = t.join("sys/fs/cgroup");
    for c in ["cpu", "cpuacct", "memory", "pids", "devices"] {
        v1_dir(&root.join(c), &[c]);
    }
    let own_mem = root.join("memory/process_api/abc");
    v1_dir(&own_mem, &["memory"]);
    put(
        &own_mem.join("memory.memsw.limit_in_bytes"),
        "9223372036854771712\n",
    );
    fs::create_dir_all(root.join("unified")).unwrap();
    let r = root.display();
    let mounts = format!(
        "tmpfs {r} tmpfs rw 0 0\ncgroup {r}/cpu cgroup rw,relatime,cpu 0 0\ncgroup {r}/cpuacct cgroup rw,relatime,cpuacct 0 0\n\
         cgroup {r}/memory cgroup rw,relatime,memory 0 0\ncgroup {r}/pids cgroup rw,relatime,pids 0 0\n\
         cgroup {r}/devices cgroup rw,devices 0 0\ncgroup {r}/systemd cgroup rw,name=systemd 0 0\n\
         cgroup2 {r}/unified cgroup2 rw,relatime 0 0\ncgroup /elsewhere/memory cgroup rw,memory 0 0\n"
    );
    let selfcg = "9:name=systemd:/\n8:pids:/\n5:devices:/\n4:memory:/process_api/abc\n2:cpuacct:/\n1:cpu:/\n0::/\n";
    detect(&root, selfcg, &mounts)
}

#[test]
fn v1_hybrid_detect_and_create() {
    let t = tempfile::tempdir().unwrap();
    let host = v1_host(t.path());
    assert_eq!(host.layout(), Layout::Hybrid);
    assert_eq!(host.v1.len(), 5, "{:?}", host.v1);
    let mem = host.v1_for("memory").unwrap();
    assert!(mem.base.ends_with("memory/process_api/abc"));
    assert_eq!(mem.own_path, "/process_api/abc");

    let mut job = JobCgroup::create_in(&FakeCgroupFs, &host, "x", &limits()).unwrap();
    let name = format!("agentjail-{}-x", std::process::id());
    let paths = job.paths();
    assert_eq!(paths.len(), 4, "memory, pids, cpu, cpuacct: {paths:?}");
    let m = mem.base.join(&name);
    assert_eq!(
        fs::read_to_string(m.join("memory.limit_in_bytes")).unwrap(),
        "67108864"
    );
    assert_eq!(
        fs::read_to_string(m.join("memory.memsw.limit_in_bytes")).unwrap(),
        "67108864"
    );
    let root = &host.root;
    assert_eq!(
        fs::read_to_string(root.join("pids").join(&name).join("pids.max")).unwrap(),
        "16"
    );
    let cpu = root.join("cpu").join(&name);
    assert_eq!(
        fs::read_to_string(cpu.join("cpu.cfs_quota_us")).unwrap(),
        "50000"
    );
    assert_eq!(
        fs::read_to_string(cpu.join("cpu.cfs_period_us")).unwrap(),
        "100000"
    );
    assert!(job.v2_dir_fd().is_none());
    let c = job.controls();
    assert_eq!(c[0].mechanism, "cgroup v1 memory.limit_in_bytes");
    assert!(c.iter().all(|c| c.state == ControlState::Enforced));

    // A v1 directory is joined by its `tasks` file (the jail writes "0" there itself).
    job.attach(77, false).unwrap();
    for p in &paths {
        assert_eq!(fs::read_to_string(p.join("tasks")).unwrap(), "77");
        fs::write(p.join("tasks"), "").unwrap();
    }
    put(&m.join("memory.max_usage_in_bytes"), "5000\n");
    put(
        &m.join("memory.oom_control"),
        "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
    );
    put(
        &root.join("pids").join(&name).join("pids.events"),
        "max 3\n",
    );
    let s = job.stats();
    assert_eq!(
        (s.memory_peak_bytes, s.oom_kills, s.pids_limit_hits),
        (Some(5000), 2, 3)
    );

    job.remove().unwrap();
    for p in &paths {
        assert!(!p.exists());
    }
}

#[test]
fn v1_without_memsw_says_swap_unbounded() {
    let t = tempfile::tempdir().unwrap();
    let host = v1_host(t.path());
    fs::remove_file(
        host.v1_for("memory")
            .unwrap()
            .base
            .join("memory.memsw.limit_in_bytes"),
    )
    .unwrap();
    let mut job = JobCgroup::create_in(
        &FakeCgroupFs,
        &host,
        "y",
        &CgroupLimits {
            memory_max: Some(1 << 20),
            ..Default::default()
        },
    )
    .unwrap();
    let c = job.controls();
    assert_eq!(c.len(), 1);
    assert!(
        c[0].detail.contains("memory+swap not bounded"),
        "{}",
        c[0].detail
    );
    job.remove().unwrap();
}

#[test]
fn failure_midway_removes_everything() {
    let t = tempfile::tempdir().unwrap();
    let host = v1_host(t.path());
    let name = format!("agentjail-{}-z", std::process::id());
    // pids.max as a directory: writing it fails with EISDIR after memory's dir was made.
    // (The pids job dir is created by create itself, so plant the trap via a pre-made dir.)
    let pids_job = host.v1_for("pids").unwrap().base.join(&name);
    fs::create_dir_all(pids_job.join("pids.max")).unwrap();
    let err = JobCgroup::create_in(&FakeCgroupFs, &host, "z", &limits()).unwrap_err();
    assert!(err.stage.contains("cgroup mkdir"), "{err}");
    let mem_job = host.v1_for("memory").unwrap().base.join(&name);
    assert!(!mem_job.exists(), "memory job dir left behind");
}

#[test]
fn bad_run_id_rejected() {
    let t = tempfile::tempdir().unwrap();
    let host = v1_host(t.path());
    for bad in ["", "../x", "a/b", "..", &"x".repeat(65)] {
        assert!(
            JobCgroup::create_in(&FakeCgroupFs, &host, bad, &limits()).is_err(),
            "{bad:?}"
        );
    }
}

#[test]
fn sweep_removes_only_dead_launchers_empty_dirs() {
    let t = tempfile::tempdir().unwrap();
    let host = v1_host(t.path());
    let base = host.v1_for("pids").unwrap().base.clone();
    // pid 2^22+1 is above pid_max's ceiling: never alive.
    let dead = base.join("agentjail-4194305-old");
    let alive = base.join(format!("agentjail-{}-mine", std::process::id()));
    let busy = base.join("agentjail-4194306-busy");
    let other = base.join("someone-else");
    for d in [&dead, &alive, &busy, &other] {
        fs::create_dir_all(d).unwrap();
    }
    put(&busy.join("cgroup.procs"), "123\n");
    assert_eq!(
        agentjail_jail::cgroup::sweep_stale_in(&FakeCgroupFs, &host),
        1
    );
    assert!(!dead.exists() && alive.exists() && busy.exists() && other.exists());
}

#[test]
fn v2_supervisor_leaf_means_own_is_its_parent() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("cg");
    let svc = root.join("system.slice/agentjail.service");
    put(&svc.join("cgroup.controllers"), "cpu memory pids\n");
    put(&svc.join("cgroup.subtree_control"), "cpu memory pids\n");
    fs::create_dir_all(svc.join("agentjail-supervisor")).unwrap();
    let mounts = format!("cgroup2 {} cgroup2 rw 0 0\n", root.display());
    let host = detect(
        &root,
        "0::/system.slice/agentjail.service/agentjail-supervisor\n",
        &mounts,
    );
    let v2 = host.v2.unwrap();
    assert_eq!(v2.base, svc);
    assert!(!v2.base_is_own);
    assert_eq!(v2.subtree_control, ["cpu", "memory", "pids"]);
}

#[test]
fn cpu_accounting_without_a_cpu_limit() {
    let t = tempfile::tempdir().unwrap();
    let host = v1_host(t.path());
    let mut job = JobCgroup::create_in(
        &FakeCgroupFs,
        &host,
        "acct",
        &CgroupLimits {
            pids_max: Some(4),
            ..Default::default()
        },
    )
    .unwrap();
    let paths = job.paths();
    assert_eq!(paths.len(), 2, "pids + cpuacct: {paths:?}");
    assert!(paths[1].starts_with(host.root.join("cpuacct")));
    fs::write(paths[1].join("cpuacct.usage"), "123456789\n").unwrap();
    assert_eq!(job.cpu_usage_us(), Some(123_456));
    assert_eq!(job.controls().len(), 1);
    job.remove().unwrap();
    assert!(paths.iter().all(|p| !p.exists()));
}

#[test]
fn nothing_enforceable_is_not_active() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("none");
    fs::create_dir_all(&root).unwrap();
    let host = detect(&root, "0::/\n", "");
    let job = JobCgroup::create_in(&FakeCgroupFs, &host, "n", &limits()).unwrap();
    assert!(!job.is_active() && job.paths().is_empty());
    assert!(job
        .controls()
        .iter()
        .all(|c| c.state == ControlState::Unavailable && c.detail.contains("no cgroup")));
}

#[test]
fn v1_comounted_cpu_cpuacct_is_one_dir() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("cg");
    v1_dir(&root.join("cpu,cpuacct"), &["cpu", "cpuacct"]);
    let mounts = format!(
        "cgroup {}/cpu,cpuacct cgroup rw,nosuid,cpu,cpuacct 0 0\n",
        root.display()
    );
    let host = detect(&root, "4:cpu,cpuacct:/\n", &mounts);
    assert_eq!(host.v1[0].controllers, ["cpu", "cpuacct"]);
    assert_eq!(host.layout(), Layout::Legacy);
    let mut job = JobCgroup::create_in(
        &FakeCgroupFs,
        &host,
        "c",
        &CgroupLimits {
            cpu_max: Some((1000, 10000)),
            ..Default::default()
        },
    )
    .unwrap();
    let paths = job.paths();
    assert_eq!(paths.len(), 1);
    assert_eq!(
        fs::read_to_string(paths[0].join("cpu.cfs_quota_us")).unwrap(),
        "1000"
    );
    fs::write(paths[0].join("cpuacct.usage"), "5000\n").unwrap();
    assert_eq!(job.cpu_usage_us(), Some(5));
    job.remove().unwrap();
    assert!(!paths[0].exists());
}

/// A host that splits controllers: pids on cgroup v2 (delegated to us), memory and cpu on v1.
/// clone3 puts the jail in the v2 directory; the v1 directories must still be joined, or
/// their limits would be reported enforced while nothing is in them.
#[test]
fn split_host_joins_v1_even_when_cloned_into_v2() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("sys/fs/cgroup");
    for c in ["cpu", "cpuacct", "memory"] {
        v1_dir(&root.join(c), &[c]);
    }
    let own_v2 = root.join("unified/svc");
    put(&own_v2.join("cgroup.controllers"), "pids\n");
    put(&own_v2.join("cgroup.subtree_control"), "pids\n");
    put(&own_v2.join("cgroup.procs"), "");
    let r = root.display();
    let mounts = format!(
        "cgroup {r}/cpu cgroup rw,cpu 0 0\ncgroup {r}/cpuacct cgroup rw,cpuacct 0 0\n\
         cgroup {r}/memory cgroup rw,memory 0 0\ncgroup2 {r}/unified cgroup2 rw 0 0\n"
    );
    let host = detect(
        &root,
        "4:memory:/\n2:cpuacct:/\n1:cpu:/\n0::/svc\n",
        &mounts,
    );
    let mut job = JobCgroup::create_in(&FakeCgroupFs, &host, "split", &limits()).unwrap();
    let name = format!("agentjail-{}-split", std::process::id());
    let v2_dir = own_v2.join(&name);
    assert!(
        job.v2_dir_fd().is_some(),
        "pids goes to v2: {:?}",
        job.paths()
    );
    assert!(job.has_v1(), "memory and cpu go to v1: {:?}", job.paths());
    assert_eq!(fs::read_to_string(v2_dir.join("pids.max")).unwrap(), "16");

    // What spawn hands the child after clone3(CLONE_INTO_CGROUP): the v1 directories'
    // `tasks` files, which it writes "0" to itself (child.rs, 1b); the v2 one is not among
    // them, and nothing is written by the parent.
    let handed: Vec<PathBuf> = job
        .v1_join_fds()
        .unwrap()
        .into_iter()
        .filter(|&fd| fd >= 0)
        .map(|fd| fs::read_link(format!("/proc/self/fd/{fd}")).unwrap())
        .collect();
    let want: Vec<PathBuf> = ["memory", "cpu", "cpuacct"]
        .iter()
        .map(|c| root.join(c).join(&name).join("tasks"))
        .collect();
    assert_eq!(
        handed.iter().collect::<std::collections::BTreeSet<_>>(),
        want.iter().collect::<std::collections::BTreeSet<_>>()
    );
    assert_eq!(fs::read_to_string(v2_dir.join("cgroup.procs")).unwrap(), "");
    job.remove().unwrap();
}

#[test]
fn the_cpu_quota_of_our_cgroup_and_its_ancestors_bounds_the_engine() {
    // v2: the tighter of our cgroup's and its parent's cpu.max, rounded up to whole cores.
    let t = tempfile::tempdir().unwrap();
    let host = v2_host(t.path(), "cpu memory pids\n");
    let own = t.path().join("sys/fs/cgroup/user.slice/svc");
    assert_eq!(host.cpu_quota_cores(), None, "no cpu.max: no quota");
    put(&own.join("cpu.max"), "max 100000\n");
    assert_eq!(host.cpu_quota_cores(), None, "max: no quota");
    put(&own.join("cpu.max"), "350000 100000\n");
    assert_eq!(host.cpu_quota_cores(), Some(4));
    put(
        &t.path().join("sys/fs/cgroup/user.slice/cpu.max"),
        "200000 100000\n",
    );
    assert_eq!(
        host.cpu_quota_cores(),
        Some(2),
        "the parent's quota binds too"
    );

    // v1: cfs_quota_us / cfs_period_us; -1 is no quota.
    let t = tempfile::tempdir().unwrap();
    let host = v1_host(t.path());
    let cpu = host
        .v1
        .iter()
        .find(|h| h.controllers.iter().any(|c| c == "cpu"))
        .expect("a v1 cpu hierarchy")
        .base
        .clone();
    put(&cpu.join("cpu.cfs_quota_us"), "-1\n");
    put(&cpu.join("cpu.cfs_period_us"), "100000\n");
    assert_eq!(host.cpu_quota_cores(), None);
    put(&cpu.join("cpu.cfs_quota_us"), "50000\n");
    assert_eq!(
        host.cpu_quota_cores(),
        Some(1),
        "half a core rounds up to one"
    );
}
