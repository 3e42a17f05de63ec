//! `agentjail policy diff` on every ordered pair of shipped policies against a table written
//! for reviewers (issue 41): the exit status (0: nothing weaker, 1: something weaker), the
//! weaker keys outside the limits (network, syscalls, isolation, filesystem, check) by name,
//! and how many limits got looser. Each row was read against the two files: e.g.
//! `python -> net` is the network alone (mode, allow, the `network` syscall group and the
//! check's network names), `judge -> judge-open` is `check.enforce` alone, `net -> python`
//! weakens nothing. A classifier change that moves any key must change this table too.

use serde_json::Value;
use std::process::Command;

/// (old, new, exit status, limits weakened, the other weaker keys in the order printed).
#[rustfmt::skip]
const PAIRS: &[(&str, &str, i32, usize, &str)] = &[
    ("data", "data", 0, 0, ""),
    ("data", "default", 1, 0, "cgroup.requirement check.denied_attributes"),
    ("data", "judge-open", 1, 0, "cgroup.requirement check.allow_star_imports check.allowed_imports check.denied_attributes check.denied_names check.deny_dunder check.enforce check.max_input_reads"),
    ("data", "judge", 1, 0, "cgroup.requirement check.allow_star_imports check.allowed_imports check.denied_attributes check.denied_names check.deny_dunder check.javascript.allow_computed_member check.max_input_reads languages.allowed languages.execute"),
    ("data", "net", 1, 0, "network.allow network.mode seccomp.allow_groups cgroup.requirement check.allowed_imports check.denied_attributes check.deny_url_literals"),
    ("data", "python", 1, 0, "cgroup.requirement check.allowed_imports check.denied_attributes"),
    ("data", "smolagents", 1, 0, "check.allowed_imports"),
    ("data", "workspace", 1, 2, "seccomp.errno_syscalls workspace.enabled"),
    ("default", "data", 1, 21, "seccomp.allow_groups seccomp.errno_syscalls filesystem.alternatives check.allowed_imports check.denied_calls languages.execute"),
    ("default", "default", 0, 0, ""),
    ("default", "judge-open", 1, 8, "check.allow_star_imports check.allowed_imports check.denied_names check.deny_dunder check.enforce check.max_input_reads"),
    ("default", "judge", 1, 8, "seccomp.allow_groups check.allow_star_imports check.allowed_imports check.denied_names check.deny_dunder check.javascript.allow_computed_member check.max_input_reads languages.allowed languages.execute"),
    ("default", "net", 1, 8, "network.allow network.mode seccomp.allow_groups check.allowed_imports check.denied_attributes check.denied_calls check.deny_url_literals"),
    ("default", "python", 1, 8, "check.allowed_imports check.denied_calls"),
    ("default", "smolagents", 1, 21, "seccomp.allow_groups seccomp.errno_syscalls filesystem.alternatives check.allowed_imports check.denied_calls"),
    ("default", "workspace", 1, 23, "seccomp.allow_groups seccomp.errno_syscalls filesystem.alternatives workspace.enabled check.allowed_imports check.denied_calls languages.execute"),
    ("judge-open", "data", 1, 16, "seccomp.allow_groups seccomp.errno_syscalls landlock.requirement filesystem.alternatives check.allowed_imports check.denied_attributes check.denied_calls languages.allowed languages.execute"),
    ("judge-open", "default", 1, 0, "landlock.requirement check.denied_attributes languages.allowed"),
    ("judge-open", "judge-open", 0, 0, ""),
    ("judge-open", "judge", 1, 0, "seccomp.allow_groups check.javascript.allow_computed_member languages.allowed languages.execute"),
    ("judge-open", "net", 1, 1, "network.allow network.mode seccomp.allow_groups landlock.requirement check.allowed_imports check.denied_attributes check.denied_calls check.deny_url_literals languages.allowed"),
    ("judge-open", "python", 1, 1, "landlock.requirement check.allowed_imports check.denied_attributes check.denied_calls languages.allowed"),
    ("judge-open", "smolagents", 1, 16, "seccomp.allow_groups seccomp.errno_syscalls landlock.requirement filesystem.alternatives check.allowed_imports check.denied_attributes check.denied_calls"),
    ("judge-open", "workspace", 1, 18, "seccomp.allow_groups seccomp.errno_syscalls landlock.requirement filesystem.alternatives workspace.enabled check.allowed_imports check.denied_attributes check.denied_calls languages.allowed languages.execute"),
    ("judge", "data", 1, 16, "seccomp.allow_groups seccomp.errno_syscalls landlock.requirement filesystem.alternatives check.allowed_imports check.denied_attributes check.denied_calls"),
    ("judge", "default", 1, 0, "landlock.requirement check.denied_attributes"),
    ("judge", "judge-open", 1, 0, "check.enforce"),
    ("judge", "judge", 0, 0, ""),
    ("judge", "net", 1, 1, "network.allow network.mode seccomp.allow_groups landlock.requirement check.allowed_imports check.denied_attributes check.denied_calls check.deny_url_literals"),
    ("judge", "python", 1, 1, "landlock.requirement check.allowed_imports check.denied_attributes check.denied_calls"),
    ("judge", "smolagents", 1, 16, "seccomp.allow_groups seccomp.errno_syscalls landlock.requirement filesystem.alternatives check.allowed_imports check.denied_attributes check.denied_calls"),
    ("judge", "workspace", 1, 18, "seccomp.allow_groups seccomp.errno_syscalls landlock.requirement filesystem.alternatives workspace.enabled check.allowed_imports check.denied_attributes check.denied_calls"),
    ("net", "data", 1, 18, "seccomp.allow_groups seccomp.errno_syscalls filesystem.alternatives check.allowed_imports languages.execute"),
    ("net", "default", 1, 0, "check.denied_attributes"),
    ("net", "judge-open", 1, 2, "check.allow_star_imports check.allowed_imports check.denied_attributes check.denied_names check.deny_dunder check.enforce check.max_input_reads"),
    ("net", "judge", 1, 2, "seccomp.allow_groups check.allow_star_imports check.allowed_imports check.denied_attributes check.denied_names check.deny_dunder check.javascript.allow_computed_member check.max_input_reads languages.allowed languages.execute"),
    ("net", "net", 0, 0, ""),
    ("net", "python", 0, 0, ""),
    ("net", "smolagents", 1, 18, "seccomp.allow_groups seccomp.errno_syscalls filesystem.alternatives check.allowed_imports"),
    ("net", "workspace", 1, 20, "seccomp.allow_groups seccomp.errno_syscalls filesystem.alternatives workspace.enabled check.allowed_imports languages.execute"),
    ("python", "data", 1, 18, "seccomp.allow_groups seccomp.errno_syscalls filesystem.alternatives check.allowed_imports languages.execute"),
    ("python", "default", 1, 0, "check.denied_attributes"),
    ("python", "judge-open", 1, 2, "check.allow_star_imports check.allowed_imports check.denied_attributes check.denied_names check.deny_dunder check.enforce check.max_input_reads"),
    ("python", "judge", 1, 2, "seccomp.allow_groups check.allow_star_imports check.allowed_imports check.denied_attributes check.denied_names check.deny_dunder check.javascript.allow_computed_member check.max_input_reads languages.allowed languages.execute"),
    ("python", "net", 1, 0, "network.allow network.mode seccomp.allow_groups check.allowed_imports check.denied_attributes check.deny_url_literals"),
    ("python", "python", 0, 0, ""),
    ("python", "smolagents", 1, 18, "seccomp.allow_groups seccomp.errno_syscalls filesystem.alternatives check.allowed_imports"),
    ("python", "workspace", 1, 20, "seccomp.allow_groups seccomp.errno_syscalls filesystem.alternatives workspace.enabled check.allowed_imports languages.execute"),
    ("smolagents", "data", 1, 0, "seccomp.allow_groups languages.allowed languages.execute"),
    ("smolagents", "default", 1, 0, "cgroup.requirement check.denied_attributes languages.allowed"),
    ("smolagents", "judge-open", 1, 0, "cgroup.requirement check.allow_star_imports check.allowed_imports check.denied_attributes check.denied_names check.deny_dunder check.enforce check.max_input_reads"),
    ("smolagents", "judge", 1, 0, "seccomp.allow_groups cgroup.requirement check.allow_star_imports check.allowed_imports check.denied_attributes check.denied_names check.deny_dunder check.javascript.allow_computed_member check.max_input_reads languages.allowed languages.execute"),
    ("smolagents", "net", 1, 0, "network.allow network.mode seccomp.allow_groups cgroup.requirement check.allowed_imports check.denied_attributes check.deny_url_literals languages.allowed"),
    ("smolagents", "python", 1, 0, "cgroup.requirement check.allowed_imports check.denied_attributes languages.allowed"),
    ("smolagents", "smolagents", 0, 0, ""),
    ("smolagents", "workspace", 1, 2, "seccomp.allow_groups seccomp.errno_syscalls workspace.enabled languages.allowed languages.execute"),
    ("workspace", "data", 0, 0, ""),
    ("workspace", "default", 1, 0, "cgroup.requirement check.denied_attributes"),
    ("workspace", "judge-open", 1, 0, "cgroup.requirement check.allow_star_imports check.allowed_imports check.denied_attributes check.denied_names check.deny_dunder check.enforce check.max_input_reads"),
    ("workspace", "judge", 1, 0, "cgroup.requirement check.allow_star_imports check.allowed_imports check.denied_attributes check.denied_names check.deny_dunder check.javascript.allow_computed_member check.max_input_reads languages.allowed languages.execute"),
    ("workspace", "net", 1, 0, "network.allow network.mode seccomp.allow_groups cgroup.requirement check.allowed_imports check.denied_attributes check.deny_url_literals"),
    ("workspace", "python", 1, 0, "cgroup.requirement check.allowed_imports check.denied_attributes"),
    ("workspace", "smolagents", 1, 0, "check.allowed_imports"),
    ("workspace", "workspace", 0, 0, ""),
];

/// The order a reviewer reads weakenings in: what reaches out first, numbers last.
const RANK: [&str; 6] = [
    "network",
    "syscalls",
    "isolation",
    "filesystem",
    "check",
    "limits",
];

#[test]
fn every_shipped_pair_matches_the_reviewers_table() {
    let dir = super::policy_files::policies_dir();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("policies/")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".toml").map(str::to_owned)
        })
        .collect();
    names.sort();
    // Every ordered pair of shipped policies has its row, and no row names a missing file.
    let mut want: Vec<(String, String)> = Vec::new();
    for a in &names {
        for b in &names {
            want.push((a.clone(), b.clone()));
        }
    }
    let mut have: Vec<(String, String)> = PAIRS
        .iter()
        .map(|r| (r.0.to_owned(), r.1.to_owned()))
        .collect();
    have.sort();
    want.sort();
    assert_eq!(have, want, "the table's pairs against policies/*.toml");
    let mut wrong = Vec::new();
    for &(old, new, code, limits, keys) in PAIRS {
        let out = Command::new(crate::common::agentjail_path())
            .args(["policy", "diff", "--json"])
            .arg(dir.join(format!("{old}.toml")))
            .arg(dir.join(format!("{new}.toml")))
            .output()
            .expect("run agentjail policy diff");
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{old} -> {new}: not JSON ({e}): {out:?}"));
        let weaker: Vec<&Value> = v["changes"]
            .as_array()
            .expect("changes")
            .iter()
            .filter(|c| c["direction"] == "weaker")
            .collect();
        let exposure = |c: &Value| c["exposure"].as_str().unwrap_or("").to_owned();
        let got_keys: Vec<&str> = weaker
            .iter()
            .filter(|c| exposure(c) != "limits")
            .map(|c| c["key"].as_str().unwrap_or(""))
            .collect();
        let got_limits = weaker.iter().filter(|c| exposure(c) == "limits").count();
        let got = (out.status.code(), got_limits, got_keys.join(" "));
        if got != (Some(code), limits, keys.to_owned()) {
            wrong.push(format!(
                "{old} -> {new}: want ({code}, {limits}, {keys:?}), got {got:?}"
            ));
        }
        // Ranked: no weakening printed after one of a lower-ranked exposure.
        let ranks: Vec<usize> = weaker
            .iter()
            .map(|c| {
                RANK.iter()
                    .position(|r| *r == exposure(c))
                    .unwrap_or(RANK.len())
            })
            .collect();
        if ranks.windows(2).any(|w| w[0] > w[1]) {
            wrong.push(format!(
                "{old} -> {new}: weakenings out of rank order: {ranks:?}"
            ));
        }
        assert_eq!(v["weaker"], weaker.len(), "{old} -> {new}: the count");
    }
    assert!(
        wrong.is_empty(),
        "policy diff against the table:\n{}",
        wrong.join("\n")
    );
}
