//! serve's `learn` op (crates/agentjail-engine/src/engine/learn.rs): one server learns from
//! two actions that import beyond its policy; the answer's policy text loads, lints with
//! the base's warnings and only the new imports' own, and runs both actions; its evidence names each import with the action that asked; bad requests
//! are refused before any jail; nothing is left behind (the server's finish checks).

use super::*;

#[test]
fn learn_over_serve_answers_a_policy_under_which_the_actions_run() {
    for who in variants() {
        let (m, p) = setup("learn", &Knobs::default());
        let mut s = Server::start(who, &p, &m, &["--pool", "0"]);
        let mut a = action(
            "import json, re\nprint(json.dumps({'w': re.findall('[a-z]+', 'ab 1 cd')}))",
            json!({}),
        );
        a["id"] = json!("he-re");
        let mut b = action(
            "import json\nfrom collections import Counter\nprint(json.dumps(dict(Counter('abca'))))",
            json!({}),
        );
        b["id"] = json!("he-coll");
        // Refused before any jail: no actions, a non-object, too many.
        for bad in [json!([]), json!([1]), json!(vec![a.clone(); 9])] {
            let r = s.io().call(json!({"op": "learn", "actions": bad}));
            assert_eq!(error_code(&r), "bad_request", "{who:?}: {r}");
        }
        let r = s.io().call(json!({"op": "learn",
                                   "actions": [a.clone(), b.clone()]}));
        let l = &r["learned"];
        assert_eq!(l["complete"], true, "{who:?}: {r:#}");
        let ev = &l["evidence"];
        for (id, module) in [("he-re", "re"), ("he-coll", "collections")] {
            let w = ev["widened"]
                .as_array()
                .unwrap()
                .iter()
                .find(|w| w["key"] == "check.allowed_imports" && w["add"] == json!([module]))
                .unwrap_or_else(|| panic!("{who:?}: {module} not widened: {ev:#}"));
            assert!(
                w["evidence"][0]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("action {id}: ")),
                "{w}"
            );
        }
        for end in ev["actions"].as_array().unwrap() {
            assert_eq!(end["status"], "ok", "{end}");
        }
        // The text loads, lints, and each action runs under it.
        let dir = scratch("learn");
        let file = dir.path().join("learned.toml");
        std::fs::write(&file, l["policy"].as_str().unwrap()).unwrap();
        // It loads and lints with the base's warnings plus only what the two imports expose.
        let lint = |f: &Path| {
            let o = std::process::Command::new(common::agentjail_path())
                .args(["policy", "lint"])
                .arg(f)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            let warnings: Vec<String> = text
                .lines()
                .filter(|l| l.starts_with("warning: "))
                .map(str::to_string)
                .collect();
            (o.status.code(), warnings)
        };
        let (base_code, base_warnings) = lint(&p);
        assert_ne!(base_code, Some(2));
        let (code, warnings) = lint(&file);
        assert_eq!(code, base_code, "{who:?}");
        for w in &base_warnings {
            assert!(warnings.contains(w), "{who:?}: lost {w}");
        }
        for w in warnings.iter().filter(|w| !base_warnings.contains(w)) {
            assert!(
                w.starts_with("warning: check.allowed_imports: re ")
                    || w.starts_with("warning: check.allowed_imports: collections "),
                "{who:?}: learning added {w}"
            );
        }
        for act in [&a, &b] {
            let f = dir.path().join("a.json");
            std::fs::write(&f, act.to_string()).unwrap();
            let o = std::process::Command::new(common::agentjail_path())
                .args(["run", "--policy"])
                .arg(&file)
                .arg(&f)
                .output()
                .unwrap();
            let rec: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
            assert_eq!(rec["status"], "ok", "{who:?}: {rec}");
        }
        // The server's own policy is unchanged: `re` is still refused there.
        let r = s.io().run(a.clone());
        assert_eq!(
            r["stop_reason"], "policy_block:static_policy_violation:import_not_allowed:re",
            "{who:?}"
        );
        s.finish();
    }
}

/// Over serve too, a file the program opens outside the jail's tree is evidence: a marked,
/// world-readable file under /opt (a root the loader lets a policy bind) becomes a
/// read-only bind of exactly its own directory, named with the action that opened it.
#[test]
fn learn_over_serve_binds_the_directory_of_a_file_the_action_opened() {
    use std::os::unix::fs::PermissionsExt;
    if !common::require_feature("root, to make a directory under /opt", common::is_root()) {
        return;
    }
    for who in variants() {
        let d = std::path::PathBuf::from(format!(
            "/opt/agentjail-learn-serve-{}-{who:?}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("data")).unwrap();
        for p in [d.clone(), d.join("data")] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let marker = d.join("data/marker.txt");
        std::fs::write(&marker, "marked").unwrap();
        std::fs::set_permissions(&marker, std::fs::Permissions::from_mode(0o644)).unwrap();
        let (m, p) = setup("learnopen", &Knobs::default());
        let mut s = Server::start(who, &p, &m, &["--pool", "0"]);
        let mut a = action(
            &format!(
                "import json\nprint(json.dumps({{'m': open({:?}).read()}}))",
                marker.display()
            ),
            json!({}),
        );
        a["id"] = json!("reader");
        let r = s.io().call(json!({"op": "learn", "actions": [a]}));
        s.finish();
        let _ = std::fs::remove_dir_all(&d);
        let ev = &r["learned"]["evidence"];
        let w = ev["widened"]
            .as_array()
            .unwrap_or_else(|| panic!("{who:?}: {r:#}"))
            .iter()
            .find(|w| w["key"] == "filesystem.read_only")
            .unwrap_or_else(|| panic!("{who:?}: no bind learned: {r:#}"));
        assert_eq!(
            w["add"],
            json!([d.join("data").display().to_string()]),
            "{who:?}: {w}"
        );
        let first = w["evidence"][0].as_str().unwrap_or("");
        assert!(
            first.starts_with("action reader: open") && first.contains("marker.txt"),
            "{who:?}: {w}"
        );
        assert_eq!(r["learned"]["complete"], true, "{who:?}: {r:#}");
    }
}
