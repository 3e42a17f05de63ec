use super::*;
use crate::policy::{load_file, Requirement};
use std::path::Path;

const SHIPPED: [&str; 8] = [
    "default",
    "python",
    "data",
    "judge",
    "judge-open",
    "smolagents",
    "workspace",
    "net",
];

fn shipped(name: &str) -> Policy {
    let path = format!("{}/../../policies/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    load_file(Path::new(&path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .policy
}

fn weaker(changes: &[Change]) -> Vec<&Change> {
    changes
        .iter()
        .filter(|c| c.direction == Direction::Weaker)
        .collect()
}

#[test]
fn every_key_of_every_shipped_policy_has_a_rule() {
    let mut all = vec![Policy::default()];
    all.extend(SHIPPED.iter().map(|n| shipped(n)));
    for p in &all {
        let mut leaves = Map::new();
        flatten("", &serde_json::to_value(p).unwrap(), &mut leaves);
        for key in leaves.keys() {
            assert!(rule(key).is_some(), "{}: no rule for {key}", p.name);
        }
    }
}

#[test]
fn the_same_policy_has_no_change() {
    for n in SHIPPED {
        assert_eq!(diff(&shipped(n), &shipped(n)), vec![], "{n}");
    }
}

/// Planted weakenings, one at a time on the default policy: each is weaker, with its
/// exposure, and undoing it is stronger.
#[test]
fn planted_weakenings_are_weaker_and_their_undoing_stronger() {
    let base = Policy::default();
    type Plant = (&'static str, Exposure, Box<dyn Fn(&mut Policy)>);
    let plants: Vec<Plant> = vec![
        (
            "network.enabled",
            Exposure::Network,
            Box::new(|p| p.network.enabled = true),
        ),
        (
            "network.mode",
            Exposure::Network,
            Box::new(|p| p.network.mode = crate::policy::NetworkMode::Allowlist),
        ),
        (
            "network.allow",
            Exposure::Network,
            Box::new(|p| p.network.allow.push("example.com:443".into())),
        ),
        (
            "seccomp.allow_groups",
            Exposure::Syscalls,
            Box::new(|p| p.seccomp.allow_groups.push("process_spawn".into())),
        ),
        (
            "seccomp.requirement",
            Exposure::Isolation,
            Box::new(|p| p.seccomp.requirement = Requirement::BestEffort),
        ),
        (
            "filesystem.read_only",
            Exposure::Filesystem,
            Box::new(|p| p.filesystem.read_only.push("/var".into())),
        ),
        (
            "check.enforce",
            Exposure::Check,
            Box::new(|p| p.check.enforce = false),
        ),
        (
            "check.allowed_imports",
            Exposure::Check,
            Box::new(|p| p.check.allowed_imports.push("socket".into())),
        ),
        (
            "check.denied_attributes",
            Exposure::Check,
            Box::new(|p| p.check.denied_attributes.retain(|a| a != "urlopen")),
        ),
        (
            "redaction.defaults",
            Exposure::Records,
            Box::new(|p| p.redaction.defaults = false),
        ),
        (
            "limits.memory",
            Exposure::Limits,
            Box::new(|p| p.limits.memory = crate::policy::Bytes(p.limits.memory.0 * 2)),
        ),
        (
            "limits.wall_time_ms",
            Exposure::Limits,
            Box::new(|p| p.limits.wall_time_ms += 1),
        ),
        (
            "landlock.min_abi",
            Exposure::Isolation,
            Box::new(|p| p.landlock.min_abi = 0),
        ),
    ];
    for (key, exposure, plant) in plants {
        let mut p = base.clone();
        plant(&mut p);
        let d = diff(&base, &p);
        assert_eq!(d.len(), 1, "{key}: {d:?}");
        assert_eq!(
            (d[0].key.as_str(), d[0].direction, d[0].exposure),
            (key, Direction::Weaker, exposure)
        );
        let back = diff(&p, &base);
        assert_eq!(back[0].direction, Direction::Stronger, "{key} undone");
    }
    // Several at once: ranked by what they expose, network first, a raised limit last.
    let mut p = base.clone();
    p.limits.pids += 1;
    p.check.enforce = false;
    p.filesystem.read_only.push("/var".into());
    p.seccomp.allow_groups.push("process_spawn".into());
    p.network.enabled = true;
    let order: Vec<String> = diff(&base, &p).into_iter().map(|c| c.key).collect();
    assert_eq!(
        order,
        [
            "network.enabled",
            "seccomp.allow_groups",
            "filesystem.read_only",
            "check.enforce",
            "limits.pids"
        ]
    );
}

#[test]
fn neutral_and_mixed_changes() {
    let base = Policy::default();
    let mut p = base.clone();
    p.name = "renamed".into();
    p.description = "other".into();
    let d = diff(&base, &p);
    assert!(d.iter().all(|c| c.direction == Direction::Neutral), "{d:?}");
    // A list that gains one item and loses another is weaker: something new is allowed.
    let mut p = base.clone();
    p.check.allowed_imports.retain(|m| m != "json");
    p.check.allowed_imports.push("socket".into());
    let d = diff(&base, &p);
    assert_eq!(d[0].direction, Direction::Weaker);
    assert_eq!(
        (d[0].added.clone(), d[0].removed.clone()),
        (vec![Value::from("socket")], vec![Value::from("json")])
    );
    // An audit log turned off is weaker; one turned on stronger.
    let mut p = base.clone();
    p.audit.log = "/var/log/agentjail.jsonl".into();
    assert_eq!(diff(&base, &p)[0].direction, Direction::Stronger);
    assert_eq!(diff(&p, &base)[0].direction, Direction::Weaker);
}

#[test]
fn a_key_without_a_rule_is_never_harmless() {
    let c = judge("some.future_key", &Value::from(1), &Value::from(2));
    assert_eq!(
        (c.direction, c.exposure),
        (Direction::Weaker, Exposure::Unreviewed)
    );
}

/// Every ordered pair of shipped policies, written out by hand from what each policy says it
/// is (its header comment and REFERENCE's table): whether moving from the row's policy to
/// the column's weakens anything, and the most exposing weakening. `-`: nothing weaker.
#[test]
fn shipped_pairs_match_the_expectation_table() {
    // rows: from; columns: to, in SHIPPED's order.
    let expected: [[&str; 8]; 8] = EXPECTED;
    for (i, from) in SHIPPED.iter().enumerate() {
        for (j, to) in SHIPPED.iter().enumerate() {
            let d = diff(&shipped(from), &shipped(to));
            let top = weaker(&d)
                .first()
                .map_or("-", |c| exposure_word(c.exposure));
            assert_eq!(top, expected[i][j], "{from} -> {to}: {}", render(&d));
        }
    }
}

#[rustfmt::skip]
const EXPECTED: [[&str; 8]; 8] = [
    // to: default, python, data, judge, judge-open, smolagents, workspace, net.
    // default is the seed's narrow policy: every other widens the check; data, smolagents and
    // workspace also add syscall groups (threads for numpy, process_spawn for workspace);
    // net is the only one with network: moving to it is a network weakening from anywhere.
    ["-",         "check",     "syscalls", "syscalls",  "check",     "syscalls", "syscalls", "network"],
    // python denies attributes (subprocess, socket, pickle, ...) that the default leaves to
    // its narrower imports: the default's shorter list reads as a weakening, and is one.
    ["check",     "-",         "syscalls", "syscalls",  "check",     "syscalls", "syscalls", "network"],
    // data, smolagents and workspace require cgroups; default, python and the judges take
    // them best effort (nobody has none): moving there is an isolation weakening.
    ["isolation", "isolation", "-",        "isolation", "isolation", "check",    "syscalls", "network"],
    // judge requires landlock (its languages without a static check need every control),
    // which default and python take best effort.
    ["isolation", "isolation", "syscalls", "-",         "check",     "syscalls", "syscalls", "network"],
    // judge-open requires landlock, which the others but judge take best effort; judge
    // executes javascript too (node's seccomp group) and the languages without a static
    // check (c, cpp, ...).
    ["isolation", "isolation", "syscalls", "syscalls",  "-",         "syscalls", "syscalls", "network"],
    ["isolation", "isolation", "syscalls", "syscalls",  "isolation", "-",        "syscalls", "network"],
    // workspace holds everything data allows and more.
    ["isolation", "isolation", "-",        "isolation", "isolation", "check",    "-",        "network"],
    // net is python plus the allowlist: back to python loses only the network.
    ["check",     "-",         "syscalls", "syscalls",  "check",     "syscalls", "syscalls", "-"],
];

/// judge -> judge-open: the languages without a static check go (stronger, as
/// `languages.execute` says), each table one neutral change, never a key beneath it.
#[test]
fn a_language_table_added_or_removed_is_one_change() {
    let d = diff(&shipped("judge"), &shipped("judge-open"));
    let keys: Vec<&str> = weaker(&d).iter().map(|c| c.key.as_str()).collect();
    assert_eq!(keys, ["check.enforce"], "{}", render(&d));
    for lang in ["c", "cpp", "java", "go", "rust", "bash"] {
        let table = format!("languages.{lang}");
        let c = d
            .iter()
            .find(|c| c.key == table)
            .expect("one change per table");
        assert_eq!(c.direction, Direction::Neutral);
        assert!(
            !d.iter().any(|c| c.key.starts_with(&format!("{table}."))),
            "{}",
            render(&d)
        );
    }
    // The other way the same tables come back, and the languages executed are the weakening.
    let d = diff(&shipped("judge-open"), &shipped("judge"));
    assert!(
        weaker(&d).iter().any(|c| c.key == "languages.execute"),
        "{}",
        render(&d)
    );
}
