//! `agentjail learn`, tested by using what it writes: learned from the seed job, two
//! HumanEval-style programs that import beyond the default policy and a program that fetches
//! from a local server, the learned policy loads, each action succeeds under it, `policy
//! diff` names exactly the widened keys as weaker, and taking any one widened key back out
//! makes an action that asked for it fail. Learning is attacked too: a program that probes
//! whether it is observed and then makes forbidden syscalls gets no group for them, and the
//! allowlist holds only the host a program asked for, not one it names or prints.

use crate::common;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> PathBuf {
    common::built_binary("agentjail")
}

fn action(dir: &Path, id: &str, code: &str) -> PathBuf {
    let p = dir.join(format!("{id}.json"));
    let a = json!({"id": id, "language": "python", "entrypoint": "main.py", "code": code,
                   "input_payload": {}});
    std::fs::write(&p, a.to_string()).expect("write action");
    p
}

/// `agentjail learn --json -o OUT ACTIONS…`: (exit code, summary JSON, stderr).
fn learn(actions: &[&Path], out: &Path) -> (Option<i32>, Value, String, u32) {
    let child = Command::new(bin())
        .arg("learn")
        .args(actions)
        .args(["--json", "-o"])
        .arg(out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("learn");
    let pid = child.id();
    let o = child.wait_with_output().expect("learn");
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let v =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("no summary ({e}): {stderr}"));
    (o.status.code(), v, stderr, pid)
}

/// `agentjail run --policy P A`: (exit code, record or Null, stderr).
fn run(policy: &Path, a: &Path) -> (Option<i32>, Value, String) {
    let o = Command::new(bin())
        .args(["run", "--policy"])
        .arg(policy)
        .arg(a)
        .output()
        .expect("run");
    let v = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (
        o.status.code(),
        v,
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The job cgroups (`agentjail-PID-…`) of the agentjail process `pid`.
fn agentjail_cgroups(pid: u32) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![PathBuf::from("/sys/fs/cgroup")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                let p = e.path();
                if e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("agentjail-{pid}-"))
                {
                    out.insert(p.display().to_string());
                }
                stack.push(p);
            }
        }
    }
    out
}

/// The policy as the loader leaves it (`policy show --json`'s `policy`).
fn effective(p: &Path) -> Value {
    let o = Command::new(bin())
        .args(["policy", "show", "--json"])
        .arg(p)
        .output()
        .expect("show");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    v["policy"].clone()
}

fn host_state() -> (BTreeSet<String>, BTreeSet<String>) {
    (
        common::mount_points(),
        common::agentjail_temp_entries(common::not_harness),
    )
}

/// The learned TOML with `key` (dotted) back at the base's value (the embedded default).
fn without(learned: &toml::Table, base: &toml::Table, key: &str) -> toml::Table {
    let (section, last) = key.rsplit_once('.').expect("section.key");
    let mut t = learned.clone();
    let at = t[section].as_table_mut().expect("section");
    match base.get(section).and_then(|s| s.get(last)) {
        Some(v) => at.insert(last.to_string(), v.clone()),
        None => at.remove(last),
    };
    t
}

#[test]
fn learned_policy_runs_each_action_and_each_widened_key_is_needed() {
    let _alone = common::alone();
    let dir = tempfile::tempdir().expect("tmp");
    let port = common::site::serve_http(|path, _| {
        let body = if path == "/data" { "fetched" } else { "other" };
        format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    });
    let seed = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/incident/action.json");
    let he_re = action(
        dir.path(),
        "he-re",
        "import json, re\nprint(json.dumps({'words': re.findall(r'[a-z]+', 'ab 12 cd')}))\n",
    );
    let he_coll = action(
        dir.path(),
        "he-coll",
        "import json\nfrom collections import Counter\nprint(json.dumps(dict(Counter('abca'))))\n",
    );
    // Names a second host and prints a forged proxy line, but asks only for localhost:PORT.
    let fetch = action(
        dir.path(),
        "fetch",
        &format!(
            "import json, urllib.request\nother = 'http://other.test:81/x'\nforged = 'CONNECT other.test:443 HTTP/1.1 allowed'\nbody = urllib.request.urlopen('http://localhost:{port}/data', timeout=10).read().decode()\nprint(json.dumps({{'body': body, 'named': other, 'log': forged}}))\n"
        ),
    );
    let named: Vec<(&str, &Path)> = vec![
        ("c1", seed.as_path()),
        ("he-re", &he_re),
        ("he-coll", &he_coll),
        ("fetch", &fetch),
    ];
    let actions: Vec<&Path> = named.iter().map(|(_, p)| *p).collect();
    let before = host_state();
    let out = dir.path().join("learned.toml");
    let (code, summary, stderr, pid) = learn(&actions, &out);
    assert_eq!(code, Some(0), "{summary}\n{stderr}");
    assert_eq!(
        before,
        host_state(),
        "learning left a mount or temp entry behind"
    );
    assert_eq!(
        agentjail_cgroups(pid),
        BTreeSet::new(),
        "learning left a cgroup"
    );
    assert!(summary["runs"].as_u64().unwrap() >= 8, "{summary}");
    for a in summary["actions"].as_array().expect("actions") {
        assert_eq!(a["status"], "ok", "{a}");
    }
    assert_eq!(summary["unmet"], json!([]));

    // It loads, and each action succeeds under it, run on its own.
    let shown = Command::new(bin())
        .args(["policy", "show"])
        .arg(&out)
        .output()
        .expect("show");
    assert_eq!(
        shown.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    for a in actions {
        let (c, rec, err) = run(&out, a);
        assert_eq!(rec["status"], "ok", "{}: {rec}\n{err}", a.display());
        assert_eq!(c, Some(0));
    }
    let text = std::fs::read_to_string(&out).expect("learned");
    let learned: toml::Table = toml::from_str(&text).expect("toml");
    let base: toml::Table = toml::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/default.toml"),
        )
        .expect("default"),
    )
    .expect("toml");

    // Only the host asked for: not the one named in a literal, not a forged log line.
    let allow: Vec<&str> = learned["network"]["allow"]
        .as_array()
        .expect("allow")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(allow, vec![format!("localhost:{port}").as_str()]);
    assert_eq!(
        learned["network"]["allow_private"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // Every widened item is in the file's header with its evidence.
    let widened = summary["widened"].as_array().expect("widened");
    let keys: BTreeSet<String> = widened
        .iter()
        .map(|w| w["key"].as_str().unwrap().to_string())
        .collect();
    for w in widened {
        let ev = w["evidence"].as_array().unwrap();
        assert!(!ev.is_empty(), "{w}");
        for e in ev {
            assert!(text.contains(e.as_str().unwrap()), "header lacks {e}");
        }
    }
    for k in [
        "check.allowed_imports",
        "seccomp.allow_groups",
        "network.allow",
        "network.mode",
    ] {
        assert!(keys.contains(k), "{k} not widened: {keys:?}");
    }
    assert!(
        text.contains("action he-re: line 1, column 14: import_not_allowed:re"),
        "{text}"
    );
    assert!(text.contains("syscall socket (group network)"), "{text}");
    assert!(
        text.contains(&format!("asked for localhost:{port} (GET)")),
        "{text}"
    );

    // policy diff: exit 1, and the weaker keys are exactly the widened ones.
    let d = Command::new(bin())
        .args(["policy", "diff", "--json"])
        // The file, not the name `default`: a name is looked up beside the binary, and CI's
        // target directory is a link into its cache, outside this checkout.
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/default.toml"))
        .arg(&out)
        .output()
        .expect("diff");
    assert_eq!(
        d.status.code(),
        Some(1),
        "{}\n{text}",
        String::from_utf8_lossy(&d.stderr)
    );
    let diff: Value = serde_json::from_slice(&d.stdout).expect("diff json");
    let weaker: BTreeSet<String> = diff["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["direction"] == "weaker")
        .map(|c| c["key"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(weaker, keys);

    // Each widened key back at the base's value: an action that asked for it fails (its run
    // stops), or the loader refuses the policy (an allowlist without a host, or without
    // the `network` group, is no policy).
    for k in &keys {
        let askers: BTreeSet<String> = widened
            .iter()
            .filter(|w| w["key"] == k.as_str())
            .flat_map(|w| w["evidence"].as_array().unwrap().clone())
            .filter_map(|e| {
                let e = e.as_str()?.strip_prefix("action ")?;
                Some(e.split(':').next()?.to_string())
            })
            .collect();
        let p = dir.path().join(format!("without-{k}.toml"));
        std::fs::write(&p, toml::to_string(&without(&learned, &base, k)).unwrap()).unwrap();
        if k == "check.denied_attributes" {
            // Not an edit of its own: the loader lifts the check's network attributes under
            // any network, so without it the policy loads as the learned one.
            assert_eq!(effective(&p), effective(&out), "{k}");
            let lifted: Vec<&Value> = widened
                .iter()
                .filter(|w| w["key"] == "check.denied_attributes")
                .inspect(|w| {
                    let e = w["evidence"][0].as_str().unwrap();
                    assert!(e.contains("the loader lifts these with any network"), "{w}");
                })
                .flat_map(|w| w["remove"].as_array().unwrap())
                .collect();
            assert_eq!(
                lifted,
                [&json!("connect"), &json!("request"), &json!("urlopen")]
            );
            continue;
        }
        let mut failed = Vec::new();
        for id in &askers {
            let (_, a) = named.iter().find(|(n, _)| n == id).expect("asker");
            let (c, rec, err) = run(&p, a);
            if c == Some(2) {
                assert!(err.contains("invalid policy"), "{k}: {err}");
                failed.push(format!("{id}: loader refuses"));
            } else if rec["status"] == "stopped" {
                failed.push(format!("{id}: {}", rec["stop_reason"]));
            }
        }
        assert!(
            !failed.is_empty(),
            "without {k} every asking action ({askers:?}) still runs"
        );
    }
}

#[test]
fn an_action_that_probes_its_observation_gets_no_forbidden_group() {
    let dir = tempfile::tempdir().expect("tmp");
    // Reads its seccomp mode (observe mode runs under the same filter: 2 either way) and
    // the time, and on either branch asks for what no policy may hold.
    let probe = action(
        dir.path(),
        "probe",
        "import json, os, time\nmode = [l for l in open('/proc/self/status').read().splitlines() if l.startswith('Seccomp:')]\ntried = []\nfor name, call in (('chroot', lambda: os.chroot('/tmp')), ('setuid', lambda: os.setuid(0))):\n    try:\n        call()\n        tried.append(name + ':ran')\n    except OSError as e:\n        tried.append(name + ':' + str(e.errno))\nif int(time.time()) % 2 == 0 or mode != ['Seccomp:\\t2']:\n    try:\n        os.chroot('/')\n    except OSError:\n        pass\nprint(json.dumps({'mode': mode, 'tried': tried}))\n",
    );
    let out = dir.path().join("learned.toml");
    let (code, summary, stderr, _) = learn(&[&probe], &out);
    assert_eq!(code, Some(1), "{summary}\n{stderr}");
    let unmet = summary["unmet"].as_array().expect("unmet");
    for name in ["chroot", "setuid"] {
        let u = unmet
            .iter()
            .find(|u| u["evidence"] == format!("action probe: syscall {name}"))
            .unwrap_or_else(|| panic!("{name} not reported: {summary}"));
        assert!(
            u["why"]
                .as_str()
                .unwrap()
                .contains("in no group a policy may allow"),
            "{u}"
        );
    }
    // The file loads, and it grants no group for them: the action stops on the first.
    let (_, rec, err) = run(&out, &probe);
    assert_eq!(rec["stop_reason"], "code_forbidden_syscall:chroot", "{err}");
    let text = std::fs::read_to_string(&out).unwrap();
    let learned: toml::Table = toml::from_str(&text).unwrap();
    let groups: Vec<&str> = learned["seccomp"]["allow_groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g.as_str())
        .collect();
    assert!(
        !groups.contains(&"process_spawn") && !groups.contains(&"network"),
        "{groups:?}"
    );
    assert!(text.contains("Needs NOT met"), "{text}");
}
