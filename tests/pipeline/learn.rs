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
    learn_as(common::Who::Current, actions, out)
}

/// [`learn`] as `who` (nobody through setpriv).
fn learn_as(who: common::Who, actions: &[&Path], out: &Path) -> (Option<i32>, Value, String, u32) {
    let mut c = command_as(who);
    let child = c
        .current_dir("/")
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

/// The agentjail binary as `who` (nobody through setpriv).
fn command_as(who: common::Who) -> Command {
    match who {
        common::Who::Nobody => {
            let mut c = Command::new("/usr/bin/setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(bin());
            c
        }
        _ => Command::new(bin()),
    }
}

/// `agentjail run --policy P A`: (exit code, record or Null, stderr).
fn run(policy: &Path, a: &Path) -> (Option<i32>, Value, String) {
    run_as(common::Who::Current, policy, a)
}

/// [`run`] as `who`.
fn run_as(who: common::Who, policy: &Path, a: &Path) -> (Option<i32>, Value, String) {
    let mut c = command_as(who);
    let o = c
        .current_dir("/")
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

/// A directory under /opt (a root the loader lets a policy bind; /var and /tmp it does not)
/// holding a marked, world-readable file; removed on drop.
struct OptDir(PathBuf);

impl OptDir {
    fn new(tag: &str) -> OptDir {
        use std::os::unix::fs::PermissionsExt;
        let d = PathBuf::from(format!("/opt/agentjail-learn-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("data")).expect("mkdir /opt/...");
        for p in [d.clone(), d.join("data")] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let f = d.join("data/marker.txt");
        std::fs::write(&f, format!("marker-{tag}")).unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        OptDir(d)
    }
}

impl Drop for OptDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A temp dir nobody may read and write (actions, the learned file).
fn open_tempdir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

fn string_list(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The loader's forbidden bind roots, as the tests check them (policy/mod.rs).
const FORBIDDEN: [&str; 6] = ["/etc", "/root", "/home", "/var", "/proc", "/tmp"];

#[test]
fn an_opened_host_file_becomes_a_minimal_read_only_bind_and_a_forbidden_one_is_not_met() {
    if !common::is_root() {
        eprintln!("skipped: needs root to make a directory under /opt");
        return;
    }
    let default = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/default.toml");
    let base: toml::Table =
        toml::from_str(&std::fs::read_to_string(&default).unwrap()).expect("toml");
    let secret = PathBuf::from(format!("/root/agentjail-learn-{}.txt", std::process::id()));
    std::fs::write(&secret, "root-secret").unwrap();
    struct Gone(PathBuf);
    impl Drop for Gone {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _gone = Gone(secret.clone());
    for who in common::variants() {
        let opt = OptDir::new(&format!("{who:?}").to_lowercase());
        let dir = open_tempdir();
        let marker = opt.0.join("data/marker.txt");
        let reader = action(
            dir.path(),
            "reader",
            &format!(
                "import json\nprint(json.dumps({{'marker': open({:?}).read()}}))\n",
                marker.display()
            ),
        );
        // Fails unless it reads a file no policy may bind.
        let greedy = action(
            dir.path(),
            "greedy",
            &format!(
                "import json\ngot = []\nfor p in ('/etc/shadow', {:?}):\n    try:\n        got.append(open(p).read()[:4])\n    except OSError as e:\n        got.append(e.errno)\nprint(json.dumps({{'got': got}}))\nif not all(isinstance(g, str) for g in got):\n    raise SystemExit(3)\n",
                secret.display()
            ),
        );
        let out = dir.path().join("learned.toml");
        let before = host_state();
        let (code, summary, stderr, _) = learn_as(who, &[&reader, &greedy], &out);
        assert_eq!(
            before,
            host_state(),
            "{who:?}: learning left something behind"
        );
        assert_eq!(code, Some(1), "{who:?}: {summary}\n{stderr}");
        let text = std::fs::read_to_string(&out).expect("learned");
        let learned: toml::Table = toml::from_str(&text).expect("toml");

        // The bind: the marker's own directory, not /opt nor the test's directory.
        let want = opt.0.join("data").display().to_string();
        let binds = |t: &toml::Table| -> Vec<String> {
            t["filesystem"]["read_only"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        };
        let base_binds = binds(&base);
        let added: Vec<String> = binds(&learned)
            .into_iter()
            .filter(|b| !base_binds.contains(b))
            .collect();
        assert_eq!(added, vec![want.clone()], "{who:?}: {text}");
        let w = summary["widened"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["key"] == "filesystem.read_only")
            .unwrap_or_else(|| panic!("{who:?}: no bind widened: {summary}"));
        let ev = string_list(&w["evidence"]);
        assert!(
            ev.iter().any(|e| e.starts_with("action reader: open")
                && e.contains(&marker.display().to_string())),
            "{who:?}: {w}"
        );
        assert!(w["exposes"].as_str().unwrap().contains(&want), "{w}");
        assert!(text.contains(&ev[0]), "the header lacks {}", ev[0]);

        // The forbidden reads: needs not met, with the loader's reason, never bound.
        let unmet = summary["unmet"].as_array().unwrap();
        let shadow = unmet
            .iter()
            .find(|u| u["evidence"].as_str().unwrap().contains("/etc/shadow"))
            .unwrap_or_else(|| panic!("{who:?}: /etc/shadow not reported: {summary}"));
        assert!(
            shadow["why"]
                .as_str()
                .unwrap()
                .contains("the loader refuses a bind of /etc"),
            "{shadow}"
        );
        if who == common::Who::Root {
            // nobody cannot see into /root at all: to it the file is not there (a probe).
            assert!(
                unmet.iter().any(|u| u["evidence"]
                    .as_str()
                    .unwrap()
                    .contains(&secret.display().to_string())
                    && u["why"].as_str().unwrap().contains("/root")),
                "{who:?}: {summary}"
            );
        }
        for b in binds(&learned) {
            assert!(
                !FORBIDDEN
                    .iter()
                    .any(|r| b == *r || b.starts_with(&format!("{r}/"))),
                "{who:?}: a forbidden bind {b}"
            );
        }
        assert!(text.contains("Needs NOT met"), "{text}");

        // Under the learned policy the reader reads the marker; without the bind it cannot.
        let (_, read, err) = run_as(who, &out, &reader);
        let rec = &read;
        assert_eq!(rec["status"], "ok", "{who:?}: {rec}\n{err}");
        assert!(
            rec["execution"]["stdout"]
                .as_str()
                .unwrap()
                .contains(&format!("marker-{}", format!("{who:?}").to_lowercase())),
            "{rec}"
        );
        let mut t = learned.clone();
        t["filesystem"]
            .as_table_mut()
            .unwrap()
            .insert("read_only".into(), base["filesystem"]["read_only"].clone());
        let p = dir.path().join("without-bind.toml");
        std::fs::write(&p, toml::to_string(&t).unwrap()).unwrap();
        let (_, rec, err) = run_as(who, &p, &reader);
        assert_eq!(
            rec["status"], "stopped",
            "{who:?}: without the bind: {rec}\n{err}"
        );

        // The header names each limit it tightened below the base, with the rule.
        let limits = summary["limits"].as_array().unwrap();
        assert!(!limits.is_empty(), "{summary}");
        assert!(
            text.contains("Tightened (stronger than the base)"),
            "{text}"
        );
        for l in limits {
            let shown = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
            let line = format!(
                "{}: {} -> {} (2x the measured peak",
                l["key"].as_str().unwrap(),
                shown(&l["base"]),
                shown(&l["learned"])
            );
            assert!(
                text.contains(&line),
                "{who:?}: header lacks {line:?}\n{text}"
            );
        }

        // A normal run (the reader's, under the learned file) never uses the observe filter:
        // no observed_opens, the same seccomp control as ever.
        let rec = &read;
        assert!(rec["execution"].get("observed_opens").is_none(), "{rec}");
        let seccomp = rec["enforcement"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["control"] == "seccomp")
            .expect("seccomp control")
            .clone();
        let detail = seccomp["detail"].as_str().unwrap();
        assert!(
            !detail.contains("observe")
                && detail.contains("default: notify supervisor and stop the run"),
            "{detail}"
        );
    }
}

#[test]
fn learning_from_hostile_opens_stays_bounded_and_never_binds_what_the_loader_forbids() {
    if !common::is_root() {
        eprintln!("skipped: needs root to make a directory under /opt");
        return;
    }
    let opt = OptDir::new("race");
    let dir = open_tempdir();
    let marker = opt.0.join("data/marker.txt").display().to_string();
    // 10,000 distinct paths the jail lacks (and the host too: no bind for any).
    let many = action(
        dir.path(),
        "many",
        "import json\nn = 0\nfor i in range(10000):\n    try:\n        open('/opt/agentjail-learn-nope-%d' % i)\n    except OSError:\n        n += 1\nprint(json.dumps({'missing': n}))\n",
    );
    // A thread rewrites the path buffer while the main thread opens it: what the supervisor
    // reads may not be what the kernel opens.
    let race = action(
        dir.path(),
        "race",
        &format!(
            "import ctypes, json, threading\nlibc = ctypes.CDLL(None)\na = {marker:?}.encode() + b'\\0'\nb = b'/etc/shadow\\0'\nbuf = ctypes.create_string_buffer(256)\nstop = []\ndef flip():\n    while not stop:\n        ctypes.memmove(buf, a, len(a))\n        ctypes.memmove(buf, b, len(b))\nt = threading.Thread(target=flip)\nt.start()\nok = 0\nfor i in range(100):\n    fd = libc.open(buf, 0)\n    if fd >= 0:\n        libc.close(fd)\n        ok += 1\nstop.append(1)\nt.join()\nprint(json.dumps({{'opened': ok}}))\n"
        ),
    );
    let out = dir.path().join("learned.toml");
    let t0 = std::time::Instant::now();
    let (_, summary, stderr, _) = learn(&[&many, &race], &out);
    let took = t0.elapsed();
    assert_eq!(
        string_list(&summary["opens_truncated"]),
        vec!["many".to_string()],
        "{summary}\n{stderr}"
    );
    let text = std::fs::read_to_string(&out).expect("learned");
    assert!(
        text.contains("action many opened more distinct paths its jail lacks than a record holds"),
        "{text}"
    );
    let many_end = summary["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["action"] == "many")
        .unwrap();
    assert_eq!(many_end["status"], "ok", "{summary}");
    assert!(took.as_secs() < 120, "learning took {took:?}");
    let learned: toml::Table = toml::from_str(&text).unwrap();
    for b in learned["filesystem"]["read_only"].as_array().unwrap() {
        let b = b.as_str().unwrap();
        assert!(
            !FORBIDDEN
                .iter()
                .any(|r| b == *r || b.starts_with(&format!("{r}/"))),
            "a forbidden bind {b}: {text}"
        );
        assert!(!b.contains("nope"), "a bind of a path the host lacks: {b}");
    }
}
