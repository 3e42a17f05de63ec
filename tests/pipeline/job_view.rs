//! What a job sees of its own process from inside, checked against docs/SECURITY.md's
//! sentences: the fds it holds (0-2 and the runner's two, 3 and 4, close-on-exec) and the
//! paths it may write (`/tmp` and `/app/out`, both `noexec`; nothing else). Each probe is
//! run through `agentjail run` as root and as nobody, under the forcing policy (which lets
//! the program import `os`), and each expects the exact errno the control produces.

use crate::common::{self, run_as, variants};
use serde_json::json;

fn forcing() -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/policies/forcing.toml")
        .display()
        .to_string()
}

/// Runs `code` (text mode, forcing policy) as each launch variant, each to success: every
/// variant's record and stdout.
fn runs_of(code: &str) -> Vec<(common::Who, common::RunRecord, String)> {
    let action = common::action_json(code, json!({"stdin": "", "output_mode": "text"}));
    let bytes = serde_json::to_vec(&action).unwrap();
    let policy = forcing();
    variants()
        .into_iter()
        .map(|who| {
            let r = run_as(who, &["--policy", &policy], &bytes, None);
            assert_eq!(
                r.stop_reason(),
                "success",
                "{who:?}: the probe itself did not run to its end: {:#}",
                r.record
            );
            let out = r.record["execution"]["stdout"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            (who, r, out)
        })
        .collect()
}

/// Every variant's stdout of `code` (see `runs_of`).
fn stdout_of(code: &str) -> Vec<(common::Who, String)> {
    runs_of(code).into_iter().map(|(w, _, o)| (w, o)).collect()
}

#[test]
fn a_job_holds_fds_0_to_4_and_3_and_4_are_close_on_exec() {
    let code = r#"
import os
print("START", flush=True)
fds = []
for fd in range(0, 1024):
    try:
        os.fstat(fd)
        fds.append(fd)
    except OSError:
        pass
print("FDS", fds)
print("INHERITABLE", [fd for fd in fds if fd > 2 and os.get_inheritable(fd)])
"#;
    for (who, out) in stdout_of(code) {
        assert!(out.contains("START"), "{who:?}: {out}");
        assert!(out.contains("FDS [0, 1, 2, 3, 4]\n"), "{who:?}: {out}");
        assert!(out.contains("INHERITABLE []\n"), "{who:?}: {out}");
    }
}

#[test]
fn a_job_writes_only_tmp_and_app_out_and_executes_from_neither() {
    // Each write target must be refused with the errno its control produces (EROFS: the
    // read-only root and binds); a target that can be written prints WROTE and the test
    // names it. Both writable trees refuse to execute what was written there (EACCES).
    let code = r##"
import os
NAMES = {1: "EPERM", 2: "ENOENT", 13: "EACCES", 30: "EROFS"}
print("START", flush=True)
def write(path):
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o700)
        os.write(fd, b"#!/bin/sh\nexit 0\n")
        os.close(fd)
        return "WROTE"
    except OSError as e:
        return NAMES.get(e.errno, "errno %d" % e.errno)
def run(path):
    try:
        os.execv(path, [path])
    except OSError as e:
        return NAMES.get(e.errno, "errno %d" % e.errno)
for p in ["/tmp/w", "/app/out/w", "/w", "/etc/w", "/app/w", "/usr/w"]:
    print("WRITE", p, write(p))
for p in ["/tmp/w", "/app/out/w"]:
    print("EXEC", p, run(p))
"##;
    for (who, out) in stdout_of(code) {
        assert!(out.contains("START"), "{who:?}: {out}");
        for line in ["WRITE /tmp/w WROTE", "WRITE /app/out/w WROTE"] {
            assert!(out.contains(line), "{who:?}: missing {line:?}: {out}");
        }
        for p in ["/w", "/etc/w", "/app/w", "/usr/w"] {
            let line = out
                .lines()
                .find(|l| l.starts_with(&format!("WRITE {p} ")))
                .unwrap_or_else(|| panic!("{who:?}: no line for {p}: {out}"));
            // The root, /etc, /app and the binds are read-only mounts: the mount refuses
            // before landlock is asked.
            assert!(
                line.ends_with(" EROFS"),
                "{who:?}: {p} must be refused by the read-only mount (EROFS): {line}"
            );
        }
        // noexec on both writable trees (and landlock's missing execute right on /tmp).
        for p in ["/tmp/w", "/app/out/w"] {
            let line = out
                .lines()
                .find(|l| l.starts_with(&format!("EXEC {p} ")))
                .unwrap();
            assert!(line.ends_with(" EACCES"), "{who:?}: {line}");
        }
    }
}

#[test]
fn exec_own_errors_are_125_never_the_commands_2() {
    // The command's own exit 2 passes through; every error of `exec` itself before any jail
    // (a flag clap refuses, a flag value out of range, an unreadable policy) is 125.
    let bin = common::built_binary("agentjail");
    let run = |args: &[&str]| {
        // No jail of this test may overlap the tests that compare host-wide state (cleanup).
        let _running = common::jail_running();
        let out = std::process::Command::new(&bin)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, _) = run(&["exec", "--", "/bin/sh", "-c", "exit 2"]);
    assert_eq!(code, Some(2), "the command's own status passes through");
    for (args, says) in [
        (
            &["exec", "--no-such-flag", "--", "/bin/true"][..],
            "--no-such-flag",
        ),
        (
            &["exec", "--time-limit", "0", "--", "/bin/true"][..],
            "--time-limit",
        ),
        (
            &["exec", "--memory-limit", "1KiB", "--", "/bin/true"][..],
            "--memory-limit",
        ),
        (
            &["exec", "--policy", "/nonexistent/p.toml", "--", "/bin/true"][..],
            "/nonexistent/p.toml",
        ),
    ] {
        let (code, err) = run(args);
        assert_eq!(code, Some(125), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// The jail's rlimits as the program sees them (/proc/self/limits) are the plan's
/// (docs/SECURITY.md, "resource limits"): core 0, file size, open files, CPU as a backstop
/// (the limit's seconds + 1 soft, + 2 hard), no locked memory, no message queues; the
/// process count at the pids limit, or twice it as a backstop above a pids cgroup; the
/// address space at the memory limit only where no memory cgroup bounds the job.
#[test]
fn a_job_sees_the_plans_rlimits() {
    for (who, r, out) in runs_of("print(open('/proc/self/limits').read())") {
        let limit = |name: &str| -> (String, String) {
            let line = out
                .lines()
                .find(|l| l.starts_with(name))
                .unwrap_or_else(|| panic!("{who:?}: no {name:?} in {out}"));
            let f: Vec<&str> = line[name.len()..].split_whitespace().collect();
            (f[0].to_string(), f[1].to_string())
        };
        let state = |control: &str| {
            r.record["enforcement"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["control"] == control)
                .map(|e| e["state"].as_str().unwrap_or("").to_string())
                .unwrap_or_default()
        };
        let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
        // tests/policies/forcing.toml: cpu 1 s, memory 128 MiB, pids 16; the defaults for
        // file size (64 MiB) and open files (64).
        assert_eq!(limit("Max core file size"), pair("0", "0"), "{who:?}");
        assert_eq!(
            limit("Max file size"),
            pair("67108864", "67108864"),
            "{who:?}"
        );
        assert_eq!(limit("Max open files"), pair("64", "64"), "{who:?}");
        assert_eq!(limit("Max cpu time"), pair("2", "3"), "{who:?}");
        assert_eq!(limit("Max locked memory"), pair("0", "0"), "{who:?}");
        assert_eq!(limit("Max msgqueue size"), pair("0", "0"), "{who:?}");
        let nproc = if state("cgroup_pids") == "enforced" {
            "32"
        } else {
            "16"
        };
        assert_eq!(limit("Max processes"), pair(nproc, nproc), "{who:?}");
        let address_space = if state("cgroup_memory") == "enforced" {
            "unlimited"
        } else {
            "134217728"
        };
        assert_eq!(
            limit("Max address space"),
            pair(address_space, address_space),
            "{who:?}"
        );
    }
}

/// Every namespace the record reports enforced is new, seen from inside: the job's
/// /proc/self/ns/* links name other namespaces than the host's (the test process's). The
/// record's list for ipc and uts comes from the plan; this is the kernel's word.
#[test]
fn a_job_is_in_its_own_namespaces() {
    let kinds = ["user", "mnt", "pid", "net", "ipc", "uts", "cgroup"];
    let code = format!(
        "import os\nfor k in {kinds:?}:\n    print('NS', k, os.readlink('/proc/self/ns/' + k))"
    );
    for (who, r, out) in runs_of(&code) {
        for k in kinds {
            let host = std::fs::read_link(format!("/proc/self/ns/{k}")).unwrap();
            let line = out
                .lines()
                .find(|l| l.starts_with(&format!("NS {k} ")))
                .unwrap_or_else(|| panic!("{who:?}: no {k} in {out}"));
            let inside = &line[format!("NS {k} ").len()..];
            assert!(inside.starts_with(&format!("{k}:[")), "{who:?}: {line}");
            assert_ne!(
                inside,
                host.to_str().unwrap(),
                "{who:?}: the job shares the host's {k} namespace"
            );
            let control = r.record["enforcement"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| {
                    let name = match k {
                        "mnt" => "mount",
                        "net" => "network",
                        other => other,
                    };
                    e["control"] == format!("{name}_namespace")
                })
                .map(|e| e["state"].clone());
            assert_eq!(control, Some(json!("enforced")), "{who:?}: {k}");
        }
    }
}

/// Every procfs entry docs/SECURITY.md says is masked (crates/agentjail-engine/src/plan's
/// PROC_MASKED and
/// PROC_SYS_MASKED): read by the job, each file is empty and each directory lists nothing.
/// Only the entries this host has, with something in them for the test (root, no jail),
/// are asserted: an entry that is empty or absent here would pass for the wrong reason, so
/// those are named loudly instead.
#[test]
fn every_masked_proc_entry_the_host_has_reads_empty_in_the_job() {
    const MASKED: &[&str] = &[
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
        "/proc/sys/kernel/random/boot_id",
    ];
    // The control: what the test itself sees of each on the host.
    let shown = |p: &str| -> bool {
        let path = std::path::Path::new(p);
        if path.is_dir() {
            return std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_some());
        }
        use std::io::Read;
        let mut b = [0u8; 1];
        std::fs::File::open(path).is_ok_and(|mut f| f.read(&mut b).is_ok_and(|n| n == 1))
    };
    let (probed, unproven): (Vec<&str>, Vec<&str>) = MASKED.iter().partition(|p| shown(p));
    if !unproven.is_empty() {
        eprintln!(
            "\n!!!!!!!! NOTE: masked /proc entries absent or empty on this host, not probed: \
             {unproven:?} !!!!!!!!\n"
        );
    }
    assert!(
        probed.len() >= 8,
        "fewer than 8 of the masked entries show anything on this host: {probed:?}"
    );
    let code = format!(
        r#"
import os
print("START", flush=True)
for p in {probed:?}:
    if os.path.isdir(p):
        print(p, "LISTS", os.listdir(p))
    else:
        with open(p, "rb") as f:
            print(p, "READS", len(f.read(64)))
"#
    );
    for (who, out) in stdout_of(&code) {
        assert!(out.contains("START"), "{who:?}: {out}");
        for p in &probed {
            let line = out
                .lines()
                .find(|l| l.starts_with(&format!("{p} ")))
                .unwrap_or_else(|| panic!("{who:?}: {p} not probed: {out}"));
            assert!(
                line == format!("{p} READS 0") || line == format!("{p} LISTS []"),
                "{who:?}: {p} is not masked in the job: {line}"
            );
        }
    }
}
