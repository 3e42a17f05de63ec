//! Workspaces under a network allowlist, attacked through `workspace_exec` as root and as
//! nobody. The workspace's jail has its own proxy for its whole life
//! (crates/agentjail-engine/src/netproxy.rs); its
//! byte limits count over the workspace, its connection and request limits per command
//! (or over the workspace: `connection_budget = "life"`); each command's record lists the
//! requests that ended
//! since the previous command's record was made (a background process's included); a
//! denial under `deny_is_stop` ends the workspace; a "denied" `network_access` hint at
//! workspace_start narrows the list to nothing. The site is tests/common/site.rs, on the
//! host's loopback; nothing leaves the machine. What never reaches the proxy (direct
//! connects, raw sockets, UDP) is refused inside the jail's own network namespace.

use super::workspace::{close, out, policy as workspace_policy, sh, start};
use crate::common::serve::{error_code, record, Conn, Server};
use crate::common::{self, site, variants};
use serde_json::{json, Value};
use std::path::PathBuf;

const ATTACKS: &str = include_str!("../../common/net_attacks.py");

/// Fetch argv[1]: the body, the HTTP error code, or `error <why>`.
const FETCH: &str = r#"import sys, urllib.request, urllib.error
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=20).read().decode())
except urllib.error.HTTPError as e:
    print(e.code)
except Exception as e:
    print('error', e)
"#;

/// The workspace test policy with the site's allowlist (and `extra` in `[network]`), the
/// `network` syscall group the program needs to reach the proxy, and `socket` and
/// `getpeername` no longer refused with EPERM (the policy's loader insists on all three).
fn policy(marker: &str, extra: &str) -> PathBuf {
    let text = std::fs::read_to_string(workspace_policy(marker, "16MiB", 1024)).unwrap();
    let a = text.find("[network]").unwrap();
    let b = a + text[a..].find("[seccomp]").unwrap();
    let net = site::network_section(extra);
    let text = format!("{}{net}\n{}", &text[..a], &text[b..]);
    let groups_end = "\"javascript\",\n]";
    assert_eq!(text.matches(groups_end).count(), 1, "allow_groups moved");
    let text = text.replace(groups_end, "\"javascript\", \"network\",\n]");
    let errno = "\"socket\", \"socketpair\", \"getpeername\"";
    assert_eq!(text.matches(errno).count(), 1, "errno_syscalls moved");
    let text = text.replace(errno, "\"socketpair\"");
    common::shared_file(&format!("wsnet-{marker}.toml"), &text)
}

fn exec(c: &mut Conn, ws: &str, fields: Value) -> Value {
    let mut req = fields;
    req["op"] = json!("workspace_exec");
    req["workspace"] = json!(ws);
    record(&c.call_background(req)).clone()
}

fn put(c: &mut Conn, ws: &str, path: &str, content: &str) {
    let files = json!([{"path": path, "content": content}]);
    let r = c.call(json!({"op": "workspace_put", "workspace": ws, "files": files}));
    assert!(r["files"].is_array(), "workspace_put: {r}");
}

fn requests(rec: &Value) -> Vec<Value> {
    rec["network"]["requests"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("no network.requests: {rec:#}"))
}

/// (host, reason) of each request, in order.
fn verdicts(rec: &Value) -> Vec<(String, String)> {
    requests(rec)
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or("").to_string();
            (s("host"), s("reason"))
        })
        .collect()
}

fn pair(h: &str, r: &str) -> (String, String) {
    (h.to_string(), r.to_string())
}

#[test]
fn attacks_through_workspace_exec_are_denied_and_recorded() {
    let port = site::port();
    let curl = std::path::Path::new("/usr/bin/curl").exists();
    if !curl {
        eprintln!("NOTE: no /usr/bin/curl on this host: the shell attacks use python3 only");
    }
    for who in variants() {
        let m = common::marker("wsnet-attacks");
        let p = policy(&m, "max_bytes_in = \"100KiB\"");
        let mut s = Server::start(who, &p, &m, &["--pool", "0"]);
        let c = s.io();
        let ws = start(c);
        put(c, &ws, "attacks.py", ATTACKS);
        let rec = exec(
            c,
            &ws,
            json!({"argv": ["python3", "attacks.py", port.to_string()]}),
        );
        assert_eq!(rec["stop_reason"], "success", "{who:?}: {rec:#}");
        let lines: Vec<&str> = out(&rec).lines().collect();
        let outcome = |label: &str| {
            lines
                .iter()
                .find_map(|l| l.strip_prefix(&format!("{label} ")))
                .unwrap_or_else(|| panic!("{who:?}: no outcome for {label}: {rec:#}"))
                .to_string()
        };
        assert!(outcome("allowed").contains("OK-BODY"), "{who:?}: {rec:#}");
        for label in crate::common::site::ATTACKS_BLOCKED {
            let o = outcome(label);
            assert!(
                o.starts_with("blocked:"),
                "{who:?}: {label} got through: {o}"
            );
        }
        let v = verdicts(&rec);
        for (host, reason) in [
            ("localhost", "ok"),
            ("127.0.0.1", "ip_not_listed"),
            ("[::1]", "ip_not_listed"),
            ("localhost", "host_mismatch"),
            ("localhost", "sni_mismatch"),
            ("localhost", "not_allowlisted"),
            ("evil.test", "not_allowlisted"),
            ("169.254.169.254", "ip_not_listed"),
            ("example.com", "not_allowlisted"),
            ("localhost", "bytes_in_limit"),
        ] {
            assert!(
                v.contains(&pair(host, reason)),
                "{who:?}: no {host} ({reason}) in the record: {v:#?}"
            );
        }
        assert!(rec["network"]["bytes_in"].as_u64().unwrap() <= 100 * 1024);
        // The same from a shell line, with curl where the host has it.
        let fetch = if curl {
            "curl -sS -m 20 -o /dev/null -w '%{http_code}\\n'"
        } else {
            "python3 fetch.py"
        };
        put(c, &ws, "fetch.py", FETCH);
        let line = format!(
            "{fetch} http://localhost:{port}/ok; {fetch} http://evil.test/; {fetch} http://169.254.169.254/latest/meta-data/; \
             {fetch} http://localhost:{}/; \
             python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 5)' 2>/dev/null && echo BREACH; \
             python3 -c 'import socket; socket.create_connection((\"169.254.169.254\", 80), 5)' 2>/dev/null && echo BREACH; \
             echo done",
            port + 1
        );
        let rec = sh(c, &ws, &line);
        let o = out(&rec);
        assert!(!o.contains("BREACH"), "{who:?}: {rec:#}");
        let first = if curl { "200" } else { "OK-BODY" };
        assert_eq!(
            o.lines().collect::<Vec<_>>(),
            [first, "403", "403", "403", "done"],
            "{who:?}: {rec:#}"
        );
        assert_eq!(
            verdicts(&rec),
            [
                pair("localhost", "ok"),
                pair("evil.test", "not_allowlisted"),
                pair("169.254.169.254", "ip_not_listed"),
                pair("localhost", "not_allowlisted"),
            ],
            "{who:?}: only this command's requests: {rec:#}"
        );
        close(c, &ws);
        s.finish();
    }
}

/// A background process keeps the workspace's proxy: what it fetches after its command
/// ended is admitted or denied as any command's request, counts against the workspace's
/// limits (here `connection_budget = "life"`: over its whole life), and is in the record
/// of the command during which it ended. A "denied" hint at workspace_start narrows that
/// workspace's list to nothing.
#[test]
fn background_requests_are_proxied_counted_and_recorded_later() {
    let port = site::port();
    let ok = format!("http://localhost:{port}/ok");
    for who in variants() {
        let m = common::marker("wsnet-bg");
        let p = policy(&m, "max_requests = 3\nconnection_budget = \"life\"");
        let mut s = Server::start(who, &p, &m, &["--pool", "0"]);
        let c = s.io();
        let ws = start(c);
        put(c, &ws, "fetch.py", FETCH);
        let bg = format!("(while [ ! -f go ]; do sleep 0.05; done; python3 fetch.py {ok} > bg1; python3 fetch.py http://evil.test/ > bg2; touch done) >/dev/null 2>&1 &");
        let rec = exec(c, &ws, json!({"command": bg, "background": true}));
        assert_eq!(rec["stop_reason"], "success", "{who:?}: {rec:#}");
        assert_eq!(verdicts(&rec), [], "{who:?}: nothing fetched yet: {rec:#}");
        let rec = sh(
            c,
            &ws,
            "touch go; while [ ! -f done ]; do sleep 0.05; done; cat bg1 bg2",
        );
        assert_eq!(out(&rec), "OK-BODY\n403\n", "{who:?}: {rec:#}");
        assert_eq!(
            verdicts(&rec),
            [
                pair("localhost", "ok"),
                pair("evil.test", "not_allowlisted")
            ],
            "{who:?}: {rec:#}"
        );
        // Two requests so far: one more is within max_requests = 3, the next is not.
        let rec = sh(c, &ws, &format!("python3 fetch.py {ok}"));
        assert_eq!(out(&rec), "OK-BODY\n", "{who:?}: {rec:#}");
        let rec = sh(c, &ws, &format!("python3 fetch.py {ok}"));
        assert_eq!(out(&rec), "403\n", "{who:?}: {rec:#}");
        let v = verdicts(&rec);
        assert_eq!(v.len(), 1, "{who:?}: {rec:#}");
        assert_eq!(v[0].1, "request_limit", "{who:?}: {rec:#}");
        assert_eq!(rec["network"]["denied"], 1);
        close(c, &ws);
        // Narrowed by the hint: the listed host is denied too, and recorded.
        let r =
            c.call(json!({"op": "workspace_start", "policy_hints": {"network_access": "denied"}}));
        let ws = r["workspace"]
            .as_str()
            .unwrap_or_else(|| panic!("{r}"))
            .to_string();
        put(c, &ws, "fetch.py", FETCH);
        let rec = sh(c, &ws, &format!("python3 fetch.py {ok}"));
        assert_eq!(out(&rec), "403\n", "{who:?}: {rec:#}");
        assert_eq!(rec["network"]["narrowed_by_hint"], true, "{rec:#}");
        assert_eq!(rec["network"]["allow"], json!([]), "{rec:#}");
        assert_eq!(verdicts(&rec), [pair("localhost", "not_allowlisted")]);
        close(c, &ws);
        s.finish();
    }
}

/// The default `connection_budget = "command"`: `max_connections` counts from the previous
/// command's record, so a long-lived workspace never runs out, and a command (or a
/// background process between commands, whose connections count against the next
/// command's budget) still gets no more than the limit; the record's `connections` is
/// the workspace's whole count.
#[test]
fn each_command_gets_its_own_connection_budget() {
    let port = site::port();
    let ok = format!("http://localhost:{port}/ok");
    let three = format!("for i in 1 2 3; do python3 fetch.py {ok}; done");
    for who in variants() {
        let m = common::marker("wsnet-budget");
        let p = policy(&m, "max_connections = 2");
        let mut s = Server::start(who, &p, &m, &["--pool", "0"]);
        let c = s.io();
        let ws = start(c);
        put(c, &ws, "fetch.py", FETCH);
        let over = [
            pair("localhost", "ok"),
            pair("localhost", "ok"),
            pair("", "connection_limit"),
        ];
        // Three commands in a row: each gets two connections, the third is refused.
        for n in 1..=3 {
            let rec = sh(c, &ws, &three);
            assert_eq!(
                out(&rec),
                "OK-BODY\nOK-BODY\n403\n",
                "{who:?}: {n}: {rec:#}"
            );
            let v: Vec<_> = verdicts(&rec)
                .into_iter()
                .map(|(h, r)| {
                    (
                        if r == "connection_limit" {
                            String::new()
                        } else {
                            h
                        },
                        r,
                    )
                })
                .collect();
            assert_eq!(v, over, "{who:?}: command {n}: {rec:#}");
            assert_eq!(rec["network"]["connections"], 2 * n, "{who:?}: {rec:#}");
        }
        // A background process its command left running: held to the same budget, that
        // of the command its connections are made during (which makes none of its own).
        let bg = format!(
            "(while [ ! -f go ]; do sleep 0.05; done; {three} > bg; touch done) >/dev/null 2>&1 &"
        );
        let rec = exec(c, &ws, json!({"command": bg, "background": true}));
        assert_eq!(rec["stop_reason"], "success", "{who:?}: {rec:#}");
        let rec = sh(
            c,
            &ws,
            "touch go; while [ ! -f done ]; do sleep 0.05; done; cat bg",
        );
        assert_eq!(out(&rec), "OK-BODY\nOK-BODY\n403\n", "{who:?}: {rec:#}");
        assert_eq!(verdicts(&rec).len(), 3, "{who:?}: {rec:#}");
        assert_eq!(verdicts(&rec)[2].1, "connection_limit", "{who:?}: {rec:#}");
        close(c, &ws);
        s.finish();
    }
}

/// Under `deny_is_stop` a denial ends the workspace, whether the command made it or a
/// background process did after its own command ended.
#[test]
fn a_denial_ends_the_workspace_when_the_policy_says_so() {
    let port = site::port();
    for who in variants() {
        let m = common::marker("wsnet-stop");
        let p = policy(&m, "deny_is_stop = true");
        let mut s = Server::start(who, &p, &m, &["--pool", "0"]);
        let c = s.io();
        let ws = start(c);
        put(c, &ws, "fetch.py", FETCH);
        let rec = sh(
            c,
            &ws,
            &format!("python3 fetch.py http://localhost:{port}/ok"),
        );
        assert_eq!(rec["stop_reason"], "success", "{who:?}: {rec:#}");
        let rec = sh(
            c,
            &ws,
            "python3 fetch.py http://evil.test/; sleep 15; echo still-running",
        );
        assert_eq!(
            rec["stop_reason"], "code_network_denied:evil.test",
            "{who:?}: {rec:#}"
        );
        assert_eq!(rec["workspace"]["ended"], true, "{rec:#}");
        assert!(!out(&rec).contains("still-running"), "{rec:#}");
        let rec = sh(c, &ws, "true");
        assert_eq!(rec["stop_reason"], "invalid_request:workspace_ended");
        close(c, &ws);
        // A background process's denial, after its command ended.
        let ws = start(c);
        put(c, &ws, "fetch.py", FETCH);
        let bg = "(while [ ! -f go ]; do sleep 0.05; done; python3 fetch.py http://evil.test/) >/dev/null 2>&1 &";
        let rec = exec(c, &ws, json!({"command": bg, "background": true}));
        assert_eq!(rec["stop_reason"], "success", "{who:?}: {rec:#}");
        let rec = sh(c, &ws, "touch go; sleep 15; echo still-running");
        assert_eq!(
            rec["stop_reason"], "code_network_denied:evil.test",
            "{who:?}: {rec:#}"
        );
        assert_eq!(rec["workspace"]["ended"], true, "{rec:#}");
        let r = c.call(json!({"op": "workspace_close", "workspace": ws}));
        assert!(
            r["closed"] == true || error_code(&r) == "unknown_workspace",
            "{r}"
        );
        s.finish();
    }
}

/// A brokered credential (`[[network.credentials]]`) in a workspace: the proxy adds the key
/// to the command's request, the command never holds it, and when the upstream echoes it
/// back it leaves neither in the command's record nor in a file taken out with
/// workspace_get (both carry the marker instead).
#[test]
fn a_brokered_key_never_leaves_a_workspace() {
    use base64::Engine as _;
    use std::os::unix::fs::PermissionsExt;
    const SECRET: &str = "wsnet-secret-5d1e88a0c4";
    let port = site::port();
    for who in variants() {
        // Made before the server starts (the harness compares /tmp before and after it).
        let d = tempfile::Builder::new()
            .prefix("ajwscred-")
            .tempdir_in("/tmp")
            .unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let key = d.path().join("api-key");
        std::fs::write(&key, format!("{SECRET}\n")).unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        if who == common::Who::Nobody {
            std::os::unix::fs::chown(&key, Some(65534), Some(65534)).unwrap();
        }
        let m = common::marker("wsnet-cred");
        let cred = format!(
            "[[network.credentials]]\nname = \"api\"\nhost = \"localhost\"\nport = {port}\nvalue_file = \"{}\"\nformat = \"Bearer {{}}\"\nupstream = \"http\"\n",
            key.display()
        );
        let p = policy(&m, &cred);
        let mut s = Server::start(who, &p, &m, &["--pool", "0"]);
        let c = s.io();
        let ws = start(c);
        put(c, &ws, "fetch.py", FETCH);
        let rec = sh(
            c,
            &ws,
            &format!("python3 fetch.py http://localhost:{port}/echo > echo.txt; cat echo.txt"),
        );
        assert_eq!(rec["stop_reason"], "success", "{who:?}: {rec:#}");
        assert!(!rec.to_string().contains(SECRET), "{who:?}: {rec:#}");
        assert!(
            out(&rec).contains("Authorization: Bearer [REDACTED:credential_api]"),
            "{who:?}: the key went upstream, and came back redacted: {rec:#}"
        );
        assert_eq!(
            rec["network"]["requests"][0]["credential"], "api",
            "{rec:#}"
        );
        let r = c.call(json!({"op": "workspace_get", "workspace": ws, "paths": ["echo.txt"]}));
        assert!(!r.to_string().contains(SECRET), "{who:?}: {r}");
        let f = &r["files"][0];
        let body = base64::engine::general_purpose::STANDARD
            .decode(
                f["content_base64"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{r}")),
            )
            .unwrap();
        let body = String::from_utf8_lossy(&body);
        assert!(!body.contains(SECRET), "{who:?}: {body}");
        assert!(
            body.contains("[REDACTED:credential_api]"),
            "{who:?}: {body}"
        );
        assert_eq!(f["redacted"], 1, "{r}");
        assert_eq!(f["bytes"], body.len(), "{r}");
        close(c, &ws);
        s.finish();
        drop(d);
    }
}
