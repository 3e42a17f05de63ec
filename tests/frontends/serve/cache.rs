//! `agentjail serve`'s result cache attacked (tests/frontends/serve/mod.rs has the policy and
//! helpers): a job cannot poison it, a hit names the caller who asked, the key covers
//! everything that decides the outcome, planted or corrupt entries are never served, and only
//! outcomes of the code are stored.

use super::*;

// ---------------------------------------------------------------------------------------
// 4. The cache

/// Every entry is agentjail's: `<sha256 hex>.json`, a private regular file of `uid`, whose
/// key is its name; no temp file left.
fn assert_cache_sound(dir: &Path, uid: u32) {
    for name in entries(dir) {
        let path = dir.join(&name);
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let key = name.strip_suffix(".json").unwrap_or("");
        assert!(
            key.len() == 64 && key.chars().all(|c| c.is_ascii_hexdigit()),
            "a foreign entry in the cache: {name}"
        );
        assert!(meta.is_file() && meta.mode() & 0o777 == 0o600 && meta.uid() == uid);
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(v["key"], key);
        assert!(v["record"]["run_id"].is_string());
    }
}

fn is_hit(rec: &Value) -> bool {
    rec["cache"]["hit"] == true
}

#[test]
fn a_job_cannot_poison_the_cache() {
    const POISON: &str = r#"
import json, os
req = json.loads(input())
forged = json.dumps({"key": req["key"], "stored_at": 4102444800,
    "record": {"run_id": "00000000-0000-0000-0000-000000000000", "status": "ok",
               "stop_reason": "success", "output": {"v": "forged"}}})
attempts = {}
for base in (req["cache"], "/proc/1/root" + req["cache"], "/proc/self/root" + req["cache"],
             "/proc/1/cwd" + req["cache"]):
    try:
        os.makedirs(base, exist_ok=True)
        with open(base + "/" + req["key"] + ".json", "w") as f:
            f.write(forged)
        attempts[base] = "wrote"
    except OSError as e:
        attempts[base] = e.errno
print(json.dumps({"attempts": attempts}))
"#;
    for who in variants() {
        let (m, p) = setup("poison", &Knobs::default());
        let (_d, cache) = cache_dir("poison");
        let mut s = Server::start(
            who,
            &p,
            &m,
            &["--pool", "1", "--cache", cache.to_str().unwrap()],
        );
        let victim = action("print('{\"v\": 1}')", json!({}));
        let first = s.io().run(victim.clone());
        assert_eq!(first["stop_reason"], "success");
        let names = entries(&cache);
        assert_eq!(names.len(), 1, "{who:?}: {names:?}");
        let key = names[0].strip_suffix(".json").unwrap().to_string();
        let stored = std::fs::read(cache.join(&names[0])).unwrap();
        let rec = s.io().run(action(
            POISON,
            json!({"cache": cache.display().to_string(), "key": key}),
        ));
        assert_eq!(rec["stop_reason"], "success", "{who:?}: {rec:#}");
        // Whatever the job believes it wrote, it wrote into its own jail.
        assert_eq!(
            std::fs::read(cache.join(&names[0])).unwrap(),
            stored,
            "{who:?}: the victim's entry changed: {:#}",
            rec["output"]
        );
        assert_cache_sound(&cache, uid_of(who));
        let hit = s.io().run(victim);
        assert!(is_hit(&hit), "{who:?}: {hit:#}");
        assert_eq!(hit["output"], json!({"v": 1}));
        assert_ne!(
            hit["run_id"], first["run_id"],
            "a hit is a record of its own"
        );
        assert_eq!(hit["cache"]["original_run_id"], first["run_id"]);
        assert_eq!(hit["cache"]["key"], key);
        s.finish();
        assert_cache_sound(&cache, uid_of(who));
    }
}

/// A cache hit is a record of the request that asked: its own run_id, caller, action id and
/// timing, the stored run named only in `cache.original_run_id`; the audit log's line names
/// who asked. Attack: a second uid asks for the same action a first uid ran, and must not
/// get the first one's identity or run id.
#[test]
fn a_cache_hit_names_the_caller_who_asked_not_the_first_one() {
    if !common::is_root() {
        eprintln!("\n!!!!!!!! SKIPPED: a second uid needs root !!!!!!!!\n");
        return;
    }
    for who in variants() {
        let (m, p) = setup("hitcaller", &Knobs::default());
        let (d, cache) = cache_dir("hitcaller");
        let sock = d.path().join("s.sock");
        let audit = d.path().join("audit.jsonl");
        // The second client: another uid in the socket's group (root's server), or the
        // server's own uid (nobody's server: the first client is root, the test process).
        let (second, group) = match who {
            Who::Root => (12345u32, Some("12345")),
            _ => (uid_of(who), None),
        };
        let mut args = vec![
            "--pool",
            "1",
            "--cache",
            cache.to_str().unwrap(),
            "--audit-log",
            audit.to_str().unwrap(),
            "--socket",
            sock.to_str().unwrap(),
        ];
        if let Some(g) = group {
            args.extend(["--socket-group", g]);
        }
        let s = Server::start(who, &p, &m, &args);
        let mut a = s.connect("A");
        let mut act = action("print('{\"v\": 1}')", json!({}));
        act["id"] = json!("first-asker");
        let first = a.run(act.clone());
        assert_eq!(first["stop_reason"], "success", "{who:?}: {first:#}");
        assert_eq!(first["caller"]["uid"], 0);
        act["id"] = json!("second-asker");
        let resp = foreign_client(
            second,
            &sock,
            &[json!({"id": 7, "op": "run", "action": act})],
        );
        let hit = record(&resp[0]);
        assert!(is_hit(hit), "{who:?}: {hit:#}");
        assert_eq!(
            hit["caller"]["uid"], second,
            "{who:?}: the hit names who asked"
        );
        assert_eq!(hit["action"]["id"], "second-asker", "{who:?}");
        assert_ne!(hit["run_id"], first["run_id"], "{who:?}");
        assert_eq!(hit["cache"]["original_run_id"], first["run_id"]);
        assert_eq!(hit["output"], first["output"]);
        assert_eq!(hit["stop_reason"], "success");
        assert!(
            !hit["trace"]
                .to_string()
                .contains(&first["run_id"].to_string())
                && hit["trace"] != first["trace"],
            "{who:?}: the hit's timing is its own"
        );
        a.close();
        a.assert_all_answered();
        s.finish();
        let lines: Vec<Value> = std::fs::read_to_string(&audit)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{who:?}: {lines:?}");
        assert_eq!(lines[0]["caller"]["uid"], 0);
        assert_eq!(
            lines[1]["caller"]["uid"], second,
            "{who:?}: the audit names who asked"
        );
        assert_eq!(lines[1]["run_id"], hit["run_id"]);
        assert_eq!(lines[1]["cache"]["original_run_id"], first["run_id"]);
    }
}

/// A copy of the host's python3 under /opt (a bindable root), removed on drop: its mtime is
/// part of the environment digest, which the policy cannot see. Laid out as an installation
/// (`bin/python3`, and `lib/python3.N` a link to the host's standard library), as the policy
/// loader requires to tell which Python it is.
struct OptPython(PathBuf);

impl OptPython {
    fn new() -> OptPython {
        let dir = PathBuf::from(format!("/opt/ajserve-python-{}", common::marker("py")));
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        for d in [dir.clone(), dir.join("bin"), dir.join("lib")] {
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let real = std::fs::canonicalize(common::PY).unwrap();
        let name = real.file_name().unwrap().to_str().unwrap().to_string();
        std::os::unix::fs::symlink(format!("/usr/lib/{name}"), dir.join("lib").join(&name))
            .unwrap();
        let bin = dir.join("bin/python3");
        std::fs::copy(&real, &bin).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        OptPython(bin)
    }

    fn touch(&self, secs: u64) {
        let f = std::fs::File::options().write(true).open(&self.0).unwrap();
        f.set_modified(std::time::UNIX_EPOCH + Duration::from_secs(secs))
            .unwrap();
    }
}

impl Drop for OptPython {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent().and_then(|b| b.parent()) {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[test]
fn the_cache_key_covers_everything_that_decides_the_outcome() {
    for who in variants() {
        let (m, p) = setup("key", &Knobs::default());
        let (_d, cache) = cache_dir("key");
        let c = cache.to_str().unwrap();
        let mut s = Server::start(who, &p, &m, &["--pool", "1", "--cache", c]);
        let code = "import json\nprint(json.dumps({'n': json.loads(input())['n']}))";
        let base = action(code, json!({"n": 1}));
        let first = s.io().run(base.clone());
        assert_eq!(first["stop_reason"], "success", "{who:?}: {first:#}");
        assert!(!is_hit(&first));
        let mut other_id = base.clone();
        other_id["id"] = json!("another id");
        let hit = s.io().run(other_id);
        assert!(
            is_hit(&hit),
            "{who:?}: the id is not part of the key: {hit:#}"
        );
        assert_eq!(hit["cache"]["original_run_id"], first["run_id"]);
        assert_eq!(
            hit["action"]["id"], "another id",
            "the hit names this request's id"
        );
        assert_eq!(entries(&cache).len(), 1);
        let variants_of: Vec<(&str, Value)> = vec![
            ("code", {
                let mut a = base.clone();
                a["code"] = json!(format!("{code}\n# another program"));
                a
            }),
            ("payload", {
                let mut a = base.clone();
                a["input_payload"] = json!({"n": 2});
                a
            }),
            ("files", {
                let mut a = base.clone();
                a["files"] = json!([{"path": "x.txt", "content": "x"}]);
                a
            }),
            ("file content", {
                let mut a = base.clone();
                a["files"] = json!([{"path": "x.txt", "content": "y"}]);
                a
            }),
            ("output_schema", {
                let mut a = base.clone();
                a["output_schema"] = json!({"type": "object"});
                a
            }),
            ("policy_hints", {
                let mut a = base.clone();
                a["policy_hints"] = json!({"exec_timeout_seconds": 5});
                a
            }),
        ];
        let mut stored = 1;
        for (what, a) in &variants_of {
            let rec = s.io().run(a.clone());
            assert_eq!(rec["stop_reason"], "success", "{who:?} {what}: {rec:#}");
            assert!(!is_hit(&rec), "{who:?}: a different {what} hit the cache");
            assert_ne!(rec["run_id"], first["run_id"]);
            stored += 1;
            assert_eq!(entries(&cache).len(), stored, "{who:?}: {what} not stored");
            let again = s.io().run(a.clone());
            assert!(
                is_hit(&again),
                "{who:?}: {what} not answered from the cache"
            );
            assert_eq!(again["cache"]["original_run_id"], rec["run_id"]);
        }
        // Another language never reaches the cache (and is never stored).
        let mut js = base.clone();
        js["language"] = json!("javascript");
        let rec = s.io().run(js);
        assert_eq!(rec["stop_reason"], "policy_block:language_denied_execution");
        assert!(!is_hit(&rec));
        assert_eq!(entries(&cache).len(), stored);
        s.finish();

        // `run --cache` with the same policy reads what serve stored...
        let bytes = serde_json::to_vec(&base).unwrap();
        let args = ["--policy", p.to_str().unwrap(), "--cache", c];
        let r = common::run_as(who, &args, &bytes, None);
        assert!(
            is_hit(&r.record),
            "{who:?}: run --cache missed serve's entry"
        );
        assert_eq!(r.record["cache"]["original_run_id"], first["run_id"]);
        // ...and another policy (one byte apart) misses.
        let (_, p2) = setup("key2", &Knobs::default());
        let r = common::run_as(
            who,
            &["--policy", p2.to_str().unwrap(), "--cache", c],
            &bytes,
            None,
        );
        assert_eq!(r.stop_reason(), "success");
        assert!(!is_hit(&r.record), "{who:?}: another policy hit the cache");
        // The environment: the same policy on an interpreter that changed misses.
        let py = OptPython::new();
        let k3 = Knobs {
            python: Some(py.0.clone()),
            ..Default::default()
        };
        let (_, p3) = setup("key3", &k3);
        let args3 = ["--policy", p3.to_str().unwrap(), "--cache", c];
        py.touch(1_000_000_000);
        let r1 = common::run_as(who, &args3, &bytes, None);
        assert_eq!(r1.stop_reason(), "success", "{who:?}: {:#}", r1.record);
        let r2 = common::run_as(who, &args3, &bytes, None);
        assert!(is_hit(&r2.record), "{who:?}: the same environment missed");
        py.touch(1_000_000_001);
        let r3 = common::run_as(who, &args3, &bytes, None);
        assert!(
            !is_hit(&r3.record),
            "{who:?}: a changed interpreter hit the cache"
        );
        assert_ne!(
            r3.record["environment"]["digest"],
            r1.record["environment"]["digest"]
        );
        assert_cache_sound(&cache, uid_of(who));
    }
}

/// Planted or damaged entries are ignored with a warning, never served; a well-formed
/// private entry of ours is served (the control: the checks, not chance, refused the rest).
#[test]
fn planted_or_corrupt_cache_entries_are_never_served() {
    for who in variants() {
        let uid = uid_of(who);
        let (_m, p) = setup("plant", &Knobs::default());
        let (_d, cache) = cache_dir("plant");
        let args = [
            "--policy",
            p.to_str().unwrap(),
            "--cache",
            cache.to_str().unwrap(),
        ];
        let victim = serde_json::to_vec(&action("print('{\"v\": 1}')", json!({}))).unwrap();
        let first = common::run_as(who, &args, &victim, None);
        assert_eq!(first.stop_reason(), "success");
        let name = entries(&cache).remove(0);
        let path = cache.join(&name);
        let key = name.strip_suffix(".json").unwrap();
        let forged = |k: &str| {
            serde_json::to_vec(&json!({"key": k, "stored_at": 4102444800u64,
                "record": {"run_id": "00000000-0000-0000-0000-00000000f0f0", "status": "ok",
                           "stop_reason": "success", "phase": "finalize",
                           "output": {"v": "forged"}, "trace": [], "agentjail_version": "x"}}))
            .unwrap()
        };
        let decoy = cache.parent().unwrap().join("decoy.json");
        std::fs::write(&decoy, forged(key)).unwrap();
        std::os::unix::fs::chown(&decoy, Some(uid), Some(uid)).unwrap();
        std::fs::set_permissions(&decoy, std::fs::Permissions::from_mode(0o600)).unwrap();
        let write = |bytes: &[u8], mode: u32, owner: u32| {
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::remove_dir(&path);
            std::fs::write(&path, bytes).unwrap();
            std::os::unix::fs::chown(&path, Some(owner), Some(owner)).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        type Plant<'a> = Box<dyn Fn() + 'a>;
        let mut plants: Vec<(&str, Plant)> = vec![
            ("garbage", Box::new(|| write(b"\x00not json{{", 0o600, uid))),
            (
                "truncated",
                Box::new(|| write(&forged(key)[..40], 0o600, uid)),
            ),
            (
                "readable by others",
                Box::new(|| write(&forged(key), 0o644, uid)),
            ),
            (
                "another key's entry",
                Box::new(|| write(&forged(&"0".repeat(64)), 0o600, uid)),
            ),
            (
                "a symlink",
                Box::new(|| {
                    let _ = std::fs::remove_file(&path);
                    std::os::unix::fs::symlink(&decoy, &path).unwrap();
                }),
            ),
            (
                "a FIFO",
                Box::new(|| {
                    let _ = std::fs::remove_file(&path);
                    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
                    // SAFETY: mkfifo on a valid NUL-terminated path.
                    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
                    std::os::unix::fs::chown(&path, Some(uid), Some(uid)).unwrap();
                }),
            ),
            (
                "a directory",
                Box::new(|| {
                    let _ = std::fs::remove_file(&path);
                    std::fs::create_dir(&path).unwrap();
                    std::os::unix::fs::chown(&path, Some(uid), Some(uid)).unwrap();
                }),
            ),
        ];
        if common::is_root() {
            plants.push((
                "another uid's file",
                Box::new(|| write(&forged(key), 0o600, uid ^ 0x4000)),
            ));
        }
        for (what, plant) in &plants {
            plant();
            // A FIFO would block a reader that opens it without O_NONBLOCK: fail, not hang.
            let guard = HangGuard::new(&path, 20);
            let r = common::run_as(who, &args, &victim, None);
            assert!(
                !guard.fired(),
                "{who:?}: agentjail blocked on {what} in the cache until the test opened it"
            );
            drop(guard);
            assert!(
                !is_hit(&r.record),
                "{who:?}: {what} was served: {:#}",
                r.record
            );
            assert_eq!(r.stop_reason(), "success", "{who:?}: {what}");
            assert_eq!(r.record["output"], json!({"v": 1}), "{who:?}: {what}");
            assert_ne!(r.record["run_id"], first.record["run_id"]);
            assert!(
                r.stderr.contains("agentjail: cache: ignoring"),
                "{who:?}: {what} ignored without a warning: {}",
                r.stderr
            );
        }
        // The control: a well-formed private entry of ours is what a hit is made of.
        write(&forged(key), 0o600, uid);
        let r = common::run_as(who, &args, &victim, None);
        assert!(is_hit(&r.record), "{who:?}: {:#}", r.record);
        assert_eq!(r.record["output"], json!({"v": "forged"}));
        let _ = std::fs::remove_file(&path);
    }
}

/// Unblocks whoever hangs on opening a FIFO at `path` after `secs` seconds (by opening it
/// for writing), so a hang fails the test instead of stalling it.
struct HangGuard {
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    fired: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl HangGuard {
    fn new(path: &Path, secs: u64) -> HangGuard {
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let fired = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (d, f, p) = (
            std::sync::Arc::clone(&done),
            std::sync::Arc::clone(&fired),
            path.to_path_buf(),
        );
        std::thread::spawn(move || {
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(secs) {
                if d.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let is_fifo = std::fs::symlink_metadata(&p)
                .map(|m| std::os::unix::fs::FileTypeExt::is_fifo(&m.file_type()))
                .unwrap_or(false);
            if is_fifo {
                f.store(true, std::sync::atomic::Ordering::SeqCst);
                eprintln!("HANG: a reader blocked on the FIFO at {p:?}; unblocking it");
                let _ = std::fs::OpenOptions::new().write(true).open(&p);
            }
        });
        HangGuard { done, fired }
    }

    /// Whether a reader had to be unblocked.
    fn fired(&self) -> bool {
        self.fired.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for HangGuard {
    fn drop(&mut self) {
        self.done.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn only_outcomes_of_the_code_are_stored() {
    for who in variants() {
        let (m, p) = setup("store", &Knobs::default());
        let (_d, cache) = cache_dir("store");
        let mut s = Server::start(
            who,
            &p,
            &m,
            &["--pool", "1", "--cache", cache.to_str().unwrap()],
        );
        let timeout = json!({"exec_timeout_seconds": 0.3});
        let cases: Vec<(&str, Value, bool)> = vec![
            ("success", action("print('{}')", json!({})), true),
            ("code_runtime_error:1", action("1 / 0", json!({})), true),
            (
                "invalid_code_output:non_json",
                action("print('hello')", json!({})),
                true,
            ),
            (
                "code_forbidden_syscall:setuid",
                action("import os\nos.setuid(0)", json!({})),
                true,
            ),
            (
                "code_timeout",
                {
                    let mut a = action("import time\ntime.sleep(30)", json!({}));
                    a["policy_hints"] = timeout.clone();
                    a
                },
                false,
            ),
            (
                "code_output_too_large",
                action("print('x' * 1000000)", json!({})),
                false,
            ),
            (
                "policy_block:static_policy_violation:import_not_allowed:socket",
                action("import socket", json!({})),
                false,
            ),
            ("invalid_action:code", action("   ", json!({})), false),
        ];
        for (reason, a, cacheable) in &cases {
            let n = entries(&cache).len();
            let rec = s.io().run(a.clone());
            assert_eq!(rec["stop_reason"], *reason, "{who:?}: {rec:#}");
            let stored = entries(&cache).len() - n;
            assert_eq!(
                stored,
                usize::from(*cacheable),
                "{who:?}: {reason}: stored {stored}"
            );
            let again = s.io().run(a.clone());
            assert_eq!(is_hit(&again), *cacheable, "{who:?}: {reason} again");
            assert_eq!(again["stop_reason"], *reason);
        }
        // Memory: cacheable only as the runtime error RLIMIT_AS makes of it.
        let rec = s.io().run(action(
            "hog = []\nwhile True:\n    hog.append(bytearray(1 << 20))",
            json!({}),
        ));
        if control_state(&rec, "cgroup_memory") == "enforced" {
            let n = entries(&cache).len();
            assert_eq!(rec["stop_reason"], "code_memory_limit", "{who:?}");
            let again = s.io().run(action(
                "hog = []\nwhile True:\n    hog.append(bytearray(1 << 20))",
                json!({}),
            ));
            assert!(!is_hit(&again));
            assert_eq!(entries(&cache).len(), n, "{who:?}: an OOM kill was stored");
        } else {
            // No memory cgroup: RLIMIT_AS makes the allocation fail, and the program's
            // MemoryError is its own word, not the kernel's (docs/REFERENCE.md's stop-reason
            // table).
            assert_eq!(
                rec["stop_reason"], "code_runtime_error:1",
                "{who:?}: {rec:#}"
            );
            let said = rec["error"]["type"] == "MemoryError"
                || rec["execution"]["stderr"]
                    .as_str()
                    .is_some_and(|e| e.contains("MemoryError"));
            assert!(said, "{who:?}: {rec:#}");
        }
        s.finish();
        assert_cache_sound(&cache, uid_of(who));
    }
}
