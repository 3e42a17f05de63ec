//! Files and commands as a coding agent uses them, attacked through `agentjail serve`, as
//! root and as nobody: `workspace_list`, `workspace_exists` and `workspace_remove` refuse
//! `..`, absolute paths and any symlink on the way (to the jail's /etc or to a host
//! directory) with `path_refused` and its reason, and never touch what a link points at;
//! a background command's id is its workspace's (`unknown_command` on another), `kill` ends
//! its own processes only; another connection is told `unknown_workspace` for every op.

use super::workspace::{out, policy, sh, start};
use super::Server;
use crate::common::serve::{error_code, live_exactly, record, Conn};
use crate::common::{self, variants};
use serde_json::{json, Value};

fn op(c: &mut Conn, op: &str, ws: &str, mut fields: Value) -> Value {
    fields["op"] = json!(op);
    fields["workspace"] = json!(ws);
    c.call(fields)
}

/// `path_refused` with `(why)` in its message.
fn assert_refused(r: &Value, why: &str) {
    assert_eq!(error_code(r), "path_refused", "{r}");
    let m = r["error"]["message"].as_str().unwrap_or("");
    assert!(m.contains(&format!("({why})")), "{why}: {r}");
}

#[test]
fn list_exists_remove_refuse_every_way_out_and_background_ids_stay_home() {
    for who in variants() {
        let m = common::marker("ws-agent");
        let p = policy(&m, "16MiB", 1024);
        let dir = crate::common::serve::scratch("ws-agent");
        let sock = dir.path().join("s.sock");
        let sock_s = sock.display().to_string();
        let s = Server::start(who, &p, &m, &["--pool", "0", "--socket", &sock_s]);
        // A host directory the jail's user could read, and a file in it.
        let host = tempfile::tempdir().unwrap();
        std::fs::write(host.path().join("secret"), "host\n").unwrap();
        let open = std::os::unix::fs::PermissionsExt::from_mode(0o755);
        std::fs::set_permissions(host.path(), open).unwrap();
        let hd = host.path().display().to_string();
        let mut a = s.connect("a");
        let mut b = s.connect("b");
        let wa = start(&mut a);
        let wa2 = start(&mut a);
        let setup = format!(
            "mkdir -p build/o && echo x > build/o/f && echo hi > notes.txt && \
             ln -s /etc etc && ln -s {hd} hostlink && mkdir d && ln -s {hd} d/deep"
        );
        let rec = sh(&mut a, &wa, &setup);
        assert_eq!(rec["stop_reason"], "success", "{rec:#}");

        let r = op(&mut a, "workspace_list", &wa, json!({}));
        let names: Vec<(&str, &str)> = r["listing"]["entries"]
            .as_array()
            .unwrap_or_else(|| panic!("{r}"))
            .iter()
            .map(|e| (e["name"].as_str().unwrap(), e["type"].as_str().unwrap()))
            .collect();
        assert_eq!(
            names,
            [
                ("build", "dir"),
                ("d", "dir"),
                ("etc", "symlink"),
                ("hostlink", "symlink"),
                ("notes.txt", "file")
            ],
            "{r}"
        );
        assert_eq!(r["listing"]["truncated"], false);
        let r = op(
            &mut a,
            "workspace_exists",
            &wa,
            json!({"path": "/workspace/notes.txt"}),
        );
        assert_eq!(
            (&r["stat"]["exists"], &r["stat"]["type"]),
            (&json!(true), &json!("file")),
            "{r}"
        );
        let r = op(&mut a, "workspace_exists", &wa, json!({"path": "hostlink"}));
        assert_eq!(r["stat"]["type"], "symlink", "not followed: {r}");

        // Every way out, for each op, refused by its exact reason.
        let ways = [
            ("../etc/passwd", "bad_path"),
            ("/etc/passwd", "bad_path"),
            ("/workspace/../etc", "bad_path"),
            ("build/../../etc", "bad_path"),
            ("etc/passwd", "symlink"),
            ("hostlink/secret", "symlink"),
            ("d/deep/secret", "symlink"),
        ];
        for (path, why) in ways {
            for o in ["workspace_list", "workspace_exists", "workspace_remove"] {
                let fields = match o {
                    "workspace_remove" => json!({"path": path, "recursive": true}),
                    _ => json!({"path": path}),
                };
                assert_refused(&op(&mut a, o, &wa, fields), why);
            }
        }
        for link in ["etc", "hostlink"] {
            assert_refused(
                &op(&mut a, "workspace_list", &wa, json!({"path": link})),
                "symlink",
            );
        }
        assert_refused(
            &op(&mut a, "workspace_remove", &wa, json!({"path": "build"})),
            "is_a_directory",
        );
        assert_refused(
            &op(
                &mut a,
                "workspace_remove",
                &wa,
                json!({"path": "/workspace"}),
            ),
            "bad_path",
        );
        assert_refused(
            &op(&mut a, "workspace_remove", &wa, json!({"path": "nope"})),
            "not_found",
        );
        // A recursive remove takes the links in its tree, never what they point at.
        for path in ["hostlink", "d"] {
            let r = op(
                &mut a,
                "workspace_remove",
                &wa,
                json!({"path": path, "recursive": true}),
            );
            assert_eq!(r["removed"], true, "{r}");
        }
        assert_eq!(
            std::fs::read_to_string(host.path().join("secret")).unwrap(),
            "host\n"
        );
        let r = op(
            &mut a,
            "workspace_remove",
            &wa,
            json!({"path": "build", "recursive": true}),
        );
        assert_eq!(r["removed"], true, "{r}");
        let r = op(
            &mut a,
            "workspace_exists",
            &wa,
            json!({"path": "build/o/f"}),
        );
        assert_eq!(r["stat"]["exists"], false, "{r}");

        // Background commands: a record once ended, the output so far while running, and
        // a kill that ends the command's own processes only.
        // A tag of this test's own shape (`7PID.N7`), matched on the whole argv: other tests
        // start `sleep {their tag}.N` too, and a substring match would count theirs.
        let tag = format!("7{}", std::process::id());
        let start_bg = |c: &mut Conn, ws: &str, command: &str| {
            let r = op(
                c,
                "workspace_exec",
                ws,
                json!({"command": command, "background": true}),
            );
            r["command"]
                .as_str()
                .unwrap_or_else(|| panic!("{r}"))
                .to_string()
        };
        let quick = start_bg(&mut a, &wa, "echo out; echo err >&2; exit 3");
        let slow = start_bg(&mut a, &wa, &format!("echo up; exec sleep {tag}.17"));
        let other = start_bg(&mut a, &wa, &format!("exec sleep {tag}.27"));
        let in_a2 = start_bg(&mut a, &wa2, &format!("exec sleep {tag}.37"));
        let r = op(
            &mut a,
            "workspace_wait",
            &wa,
            json!({"command": quick, "timeout_s": 15}),
        );
        let rec = record(&r);
        assert_eq!(rec["execution"]["exit_code"], 3, "{rec:#}");
        assert_eq!(
            (out(rec), rec["execution"]["stderr"].as_str()),
            ("out\n", Some("err\n"))
        );
        assert_eq!(rec["command"]["background"], true, "{rec:#}");
        assert_eq!(rec["execution"]["source"]["cpu_ms"], "runner", "{rec:#}");
        let r = op(&mut a, "workspace_wait", &wa, json!({"command": quick}));
        assert_eq!(error_code(&r), "unknown_command", "reported once: {r}");
        let t = std::time::Instant::now();
        let so_far = loop {
            let r = op(
                &mut a,
                "workspace_wait",
                &wa,
                json!({"command": slow, "timeout_s": 0}),
            );
            if r["running"]["stdout"] == "up\n" || t.elapsed().as_secs() > 15 {
                break r["running"].clone();
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        assert_eq!(
            (&so_far["command"], &so_far["stdout_bytes"]),
            (&json!(slow), &json!(3)),
            "{so_far}"
        );
        // An id is its workspace's: on A's other workspace, and from another connection.
        for cmd in [&slow, &other] {
            for o in ["workspace_wait", "workspace_kill"] {
                let r = op(&mut a, o, &wa2, json!({"command": cmd}));
                assert_eq!(error_code(&r), "unknown_command", "{r}");
            }
        }
        let r = op(
            &mut a,
            "workspace_kill",
            &wa,
            json!({"command": "0123456789abcdef0123456789abcdef"}),
        );
        assert_eq!(error_code(&r), "unknown_command", "{r}");
        // A host process with a sleep of the same tag: a kill never reaches it.
        let mut bystander = std::process::Command::new("sleep")
            .arg(format!("{tag}.17"))
            .spawn()
            .unwrap();
        let r = op(&mut a, "workspace_kill", &wa, json!({"command": slow}));
        let rec = record(&r);
        assert_eq!(rec["stop_reason"], "code_killed:SIGKILL", "{rec:#}");
        assert_eq!(out(rec), "up\n", "{rec:#}");
        assert_eq!(
            bystander.try_wait().unwrap(),
            None,
            "the host's sleep lives"
        );
        assert_eq!(
            live_exactly(&["sleep", &format!("{tag}.17")]),
            [bystander.id() as i32],
            "only the host's sleep lives; every process naming the tag: {:?}",
            crate::common::host_pids_with(&tag)
                .into_iter()
                .map(|p| (p, crate::common::cmdline(p), crate::common::proc_stat(p)))
                .collect::<Vec<_>>()
        );
        for (ws, cmd) in [(&wa, &other), (&wa2, &in_a2)] {
            let r = op(
                &mut a,
                "workspace_wait",
                ws,
                json!({"command": cmd, "timeout_s": 0}),
            );
            assert_eq!(r["running"]["command"], json!(cmd), "not killed: {r}");
        }
        assert_eq!(live_exactly(&["sleep", &format!("{tag}.27")]).len(), 1);
        assert_eq!(live_exactly(&["sleep", &format!("{tag}.37")]).len(), 1);
        let rec = sh(&mut a, &wa, "echo alive");
        assert_eq!(out(&rec), "alive\n", "the workspace goes on: {rec:#}");
        // At most 16 not yet reported ended: `other` and 15 more, then a refusal.
        for _ in 0..15 {
            start_bg(&mut a, &wa, "exec sleep 30");
        }
        let r = op(
            &mut a,
            "workspace_exec",
            &wa,
            json!({"command": "true", "background": true}),
        );
        assert_eq!(error_code(&r), "bad_request", "{r}");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains("16 background"),
            "{r}"
        );
        bystander.kill().unwrap();
        bystander.wait().unwrap();

        // Another connection: every op is unknown_workspace, as for an id never made.
        for (o, fields) in [
            ("workspace_list", json!({})),
            ("workspace_exists", json!({"path": "notes.txt"})),
            ("workspace_remove", json!({"path": "notes.txt"})),
            ("workspace_wait", json!({"command": other})),
            ("workspace_kill", json!({"command": other})),
            ("workspace_exec", json!({"command": "true"})),
            ("workspace_close", json!({})),
        ] {
            let r = op(&mut b, o, &wa, fields.clone());
            assert_eq!(error_code(&r), "unknown_workspace", "{o}: {r}");
            let never = op(&mut b, o, "0123456789abcdef0123456789abcdef", fields);
            assert_eq!(
                r["error"]["message"].as_str().map(|m| m.replace(&wa, "ID")),
                never["error"]["message"]
                    .as_str()
                    .map(|m| m.replace("0123456789abcdef0123456789abcdef", "ID")),
                "{o}: the same answer as for an id never made"
            );
        }
        let r = op(
            &mut a,
            "workspace_exists",
            &wa,
            json!({"path": "notes.txt"}),
        );
        assert_eq!(r["stat"]["exists"], true, "{r}");
        drop(a);
        s.finish();
    }
}
