//! Fault injection: every setup stage, in the parent and in the child, made to fail on
//! purpose. Each failure must exit 125 with a message naming the stage and the errno, run
//! nothing, and leave no process, cgroup or temp entry behind.
//!
//! Needs the test-only feature: `cargo test --features fault-injection --test faults`
//! (scripts/test.sh does). Without it this file compiles to nothing.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_agentjail");

/// Child stages in the order child.rs takes them, plus the parent's.
const STAGES: &[&str] = &[
    "clone3",
    "uid_map",
    // After the child was released to build its root (the attach overlaps it): the child
    // must still never run anything.
    "cgroup_attach",
    "wait_for_parent",
    "cgroup_join",
    "cgroup_namespace",
    "setresgid",
    "setresuid",
    "parent_death_signal",
    "mount_root_tmpfs",
    "mount",
    "pivot_root",
    "chdir",
    "sethostname",
    "setsid",
    "no_new_privs",
    "drop_capabilities",
    "landlock",
    "close_fds",
    "setrlimit",
    "signal_mask",
    "fork_init",
    "seccomp",
    "init_seccomp",
    "execve",
];

fn job_cgroups(launcher: u32) -> Vec<String> {
    let out = Command::new("find")
        .args([
            "/sys/fs/cgroup",
            "-type",
            "d",
            "-name",
            &format!("agentjail-{launcher}-*"),
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn marker_processes(m: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .map(|c| {
                    String::from_utf8_lossy(&c).contains(m)
                        && !String::from_utf8_lossy(&c).contains("AGENTJAIL_FAULT")
                })
                .unwrap_or(false)
        })
        .count()
}

#[test]
fn every_stage_fails_cleanly() {
    let mut problems = Vec::new();
    for stage in STAGES {
        let m = format!("faultmark{}{}", std::process::id(), stage.len());
        let child = Command::new(BIN)
            .env("AGENTJAIL_FAULT", stage)
            .args(["exec", "--", "/bin/echo", &m])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let launcher = child.id();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        if out.status.code() != Some(125) {
            problems.push(format!(
                "{stage}: exit {:?}, want 125 ({stderr})",
                out.status.code()
            ));
        }
        let named = stderr.contains(stage)
            || (*stage == "mount" && stderr.contains("mount"))
            || (*stage == "cgroup_attach" && stderr.contains("cgroup attach"));
        if !named || !stderr.contains("errno 5") {
            problems.push(format!(
                "{stage}: message does not name the stage and errno: {stderr}"
            ));
        }
        if stdout.contains(&m) {
            problems.push(format!("{stage}: the command ran anyway"));
        }
        if !job_cgroups(launcher).is_empty() {
            problems.push(format!("{stage}: cgroup left: {:?}", job_cgroups(launcher)));
        }
        if marker_processes(&m) != 0 {
            problems.push(format!("{stage}: a process survived"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn run_reports_a_setup_fault_in_the_record() {
    let action = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/incident/action.json");
    let out = Command::new(BIN)
        .env("AGENTJAIL_FAULT", "pivot_root")
        .args(["run", action])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let rec: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rec["stop_reason"], "sandbox_unavailable:setup");
    assert_eq!(rec["phase"], "execute");
    assert_eq!(rec["error"]["errno"], 5);
    assert!(
        rec["error"]["stage"]
            .as_str()
            .unwrap()
            .contains("pivot_root"),
        "{rec:#}"
    );
    assert!(rec.get("output").is_none());
}

#[test]
fn the_network_listener_stage_fails_cleanly() {
    // Only a policy with a network allowlist reaches it (child.rs, 5c).
    let base = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/policies/default.toml"
    ))
    .unwrap();
    let start = base.find("[network]").unwrap();
    let end = start + base[start..].find("[seccomp]").unwrap();
    let text = format!(
        "{}[network]\nmode = \"allowlist\"\nallow = [\"example.com:443\"]\n\n{}",
        &base[..start],
        &base[end..]
    )
    .replace(
        "\"pipes\", \"exec\", \"system_info\",\n]",
        "\"pipes\", \"exec\", \"system_info\", \"network\",\n]",
    );
    let dir = tempfile::tempdir().unwrap();
    let pol = dir.path().join("net.toml");
    std::fs::write(&pol, text).unwrap();
    let m = format!("faultmarknet{}", std::process::id());
    let child = Command::new(BIN)
        .env("AGENTJAIL_FAULT", "network_loopback")
        .args([
            "exec",
            "--policy",
            pol.to_str().unwrap(),
            "--",
            "/bin/echo",
            &m,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let launcher = child.id();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(
        stderr.contains("network_loopback") && stderr.contains("errno 5"),
        "{stderr}"
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains(&m),
        "the command ran anyway"
    );
    assert!(job_cgroups(launcher).is_empty(), "a cgroup was left");
    assert_eq!(marker_processes(&m), 0, "a process survived");
}
