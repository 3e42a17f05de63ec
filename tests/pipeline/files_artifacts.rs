//! Files in, artifacts out (issue 12), attacked through the real binary as root and as
//! nobody: an action's `files` arrive exact and read-only; every bad entry is refused before
//! any jail; host inputs come only from beneath the policy's roots, never through a symlink,
//! not even one swapped in while agentjail runs; what a program leaves in /app/out comes
//! back within the caps, and nothing it plants there (symlinks, hard links, sparse giants,
//! hostile names, deep trees) makes agentjail read or write outside its own directories.

use crate::common::{self, variants, Who};
use base64::Engine as _;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A directory every launch variant can use: created 0777 under /tmp, removed at the end.
fn scratch(tag: &str) -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix(&format!("agentjail-fa-{tag}-"))
        .tempdir_in("/tmp")
        .unwrap();
    // Sticky, like /tmp: agentjail refuses to create its files in a directory other users
    // can change (crates/agentjail-engine/src/hostpath.rs).
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    d
}

/// policies/data.toml with cgroups best-effort (nobody has no delegation here), the given
/// host roots, and small artifact caps so the tests can reach them.
fn policy(host_roots: &[&Path]) -> PathBuf {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/policies/data.toml"))
        .unwrap();
    let cg = text.find("[cgroup]").expect("[cgroup] section");
    let (head, tail) = text.split_at(cg);
    let tail = tail.replacen(
        "requirement = \"required\"",
        "requirement = \"best_effort\"",
        1,
    );
    let roots: Vec<String> = host_roots
        .iter()
        .map(|p| format!("{:?}", p.display().to_string()))
        .collect();
    let text = format!("{head}{tail}")
        .replacen(
            "host_roots = []",
            &format!("host_roots = [{}]", roots.join(", ")),
            1,
        )
        .replacen("max_file_bytes = \"16MiB\"", "max_file_bytes = \"1MiB\"", 1)
        .replacen("max_count = 32", "max_count = 6", 1)
        .replacen("max_file_bytes = \"5MiB\"", "max_file_bytes = \"64KiB\"", 1)
        .replacen(
            "max_total_bytes = \"16MiB\"",
            "max_total_bytes = \"1MiB\"",
            1,
        );
    assert!(
        text.contains("max_file_bytes = \"64KiB\""),
        "data.toml's [artifacts] changed"
    );
    common::shared_file(
        &format!("fa-{}.toml", sha_hex(text.as_bytes())[..12].to_owned()),
        &text,
    )
}

fn sha_hex(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn record(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "record does not parse ({e}): {}\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

/// agentjail `args` as `who`, `stdin` fed in.
fn agentjail(who: Who, args: &[&str], stdin: &[u8]) -> Out {
    let _running = common::jail_running();
    let bin = common::agentjail_path();
    let mut c = match who {
        Who::Nobody => {
            let mut c = Command::new("/usr/bin/setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
            c.arg(bin);
            c
        }
        _ => Command::new(bin),
    };
    c.args(args)
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn agentjail");
    let mut si = child.stdin.take().unwrap();
    let input = stdin.to_vec();
    let feeder = std::thread::spawn(move || {
        use std::io::Write;
        let _ = si.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    let _ = feeder.join();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn action(code: &str, files: Option<Value>) -> Vec<u8> {
    let mut extra = json!({"id": "fa", "input_payload": {}});
    if let Some(f) = files {
        extra["files"] = f;
    }
    serde_json::to_vec(&common::action_json(code, extra)).unwrap()
}

fn run(who: Who, policy: &Path, extra: &[&str], action: &[u8]) -> Out {
    let p = policy.display().to_string();
    let mut args = vec!["run", "--policy", &p];
    args.extend_from_slice(extra);
    args.push("-");
    agentjail(who, &args, action)
}

/// `agentjail exec --policy POLICY [--record RECORD] --artifacts-dir DIR -- /bin/sh -c
/// SCRIPT` as `who`.
fn exec_sh(who: Who, policy: &str, record: Option<&Path>, dir: &Path, script: &str) -> Out {
    let (rs, ds) = (
        record.map(|r| r.display().to_string()),
        dir.display().to_string(),
    );
    let mut args = vec!["exec", "--policy", policy];
    if let Some(rs) = &rs {
        args.extend(["--record", rs.as_str()]);
    }
    args.extend(["--artifacts-dir", &ds, "--", "/bin/sh", "-c", script]);
    agentjail(who, &args, b"")
}

/// The record agentjail wrote to `path`.
fn read_record(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn files_arrive_exact_and_read_only() {
    let p = policy(&[]);
    let binary: Vec<u8> = (0..=255u8).collect();
    let b64 = base64::engine::general_purpose::STANDARD.encode(&binary);
    let files = json!([
        {"path": "data/rows.csv", "content": "a,b\n1,2\n"},
        {"path": "blob.bin", "content_base64": b64},
    ]);
    // The program hashes what it got, then tries to change it four ways.
    let code = r#"
import hashlib, json
got = {p: hashlib.sha256(open('/app/in/' + p, 'rb').read()).hexdigest() for p in ['data/rows.csv', 'blob.bin']}
tries = {}
for name, how in [('overwrite', lambda: open('/app/in/blob.bin', 'wb')),
                  ('append', lambda: open('/app/in/data/rows.csv', 'a')),
                  ('create', lambda: open('/app/in/new.txt', 'w')),
                  ('create_dir_file', lambda: open('/app/in/data/x', 'w'))]:
    try:
        how().write('x')
        tries[name] = 'WROTE'
    except OSError as e:
        tries[name] = e.errno
print(json.dumps({'got': got, 'tries': tries}))
"#;
    for who in variants() {
        let out = run(who, &p, &[], &action(code, Some(files.clone())));
        let r = out.record();
        assert_eq!(r["stop_reason"], "success", "{who:?}: {r:#}");
        assert_eq!(
            r["output"]["got"]["blob.bin"],
            sha_hex(&binary),
            "{who:?}: {r:#}"
        );
        assert_eq!(
            r["output"]["got"]["data/rows.csv"],
            sha_hex(b"a,b\n1,2\n"),
            "{who:?}"
        );
        for (name, v) in r["output"]["tries"].as_object().unwrap() {
            // EROFS (30) or EACCES (13): never written.
            assert!(v == 30 || v == 13, "{who:?}: {name} -> {v}: {r:#}");
        }
    }
}

#[test]
fn every_bad_files_entry_is_refused_before_any_jail() {
    let p = policy(&[]);
    let big = "x".repeat(1024 * 1024 + 1);
    let cases: Vec<(Value, &str)> = vec![
        (json!({"path": "a"}), "files:not_a_list"),
        (json!(["a"]), "files:entry"),
        (
            json!([{"path": "/etc/passwd", "content": "x"}]),
            "files:path_absolute",
        ),
        (
            json!([{"path": "../x", "content": "x"}]),
            "files:path_traversal",
        ),
        (
            json!([{"path": "a/../../x", "content": "x"}]),
            "files:path_traversal",
        ),
        (
            json!([{"path": "a//b", "content": "x"}]),
            "files:path_traversal",
        ),
        (
            json!([{"path": "a/./b", "content": "x"}]),
            "files:path_traversal",
        ),
        (
            json!([{"path": "", "content": "x"}]),
            "files:path_traversal",
        ),
        (
            json!([{"path": "a/", "content": "x"}]),
            "files:path_traversal",
        ),
        (
            json!([{"path": "a\nb", "content": "x"}]),
            "files:path_control",
        ),
        (
            json!([{"path": "a\u{202e}b", "content": "x"}]),
            "files:path_control",
        ),
        (
            json!([{"path": "a\\..\\b", "content": "x"}]),
            "files:path_control",
        ),
        (
            json!([{"path": "x".repeat(256), "content": "x"}]),
            "files:path_too_long",
        ),
        (
            json!([{"path": "a", "content": "x"}, {"path": "a", "content": "y"}]),
            "files:duplicate",
        ),
        (
            json!([{"path": "a", "content": "x"}, {"path": "a/b", "content": "y"}]),
            "files:conflict",
        ),
        (
            json!([{"path": "a", "content": "x", "content_base64": "eA=="}]),
            "files:content",
        ),
        (json!([{"path": "a"}]), "files:content"),
        (json!([{"path": "a", "content": 5}]), "files:content"),
        (
            json!([{"path": "a", "content_base64": "not base64!"}]),
            "files:base64",
        ),
        (
            json!([{"path": "a", "content": "x", "mode": 4095}]),
            "files:entry",
        ),
        (json!([{"path": 7, "content": "x"}]), "files:path"),
        // A link is made only beneath the working directory or /tmp, by a normalised path.
        (
            json!([{"path": "a", "content": "x", "link": "/usr/lib/a"}]),
            "files:link",
        ),
        (
            json!([{"path": "a", "content": "x", "link": "/app/in/a"}]),
            "files:link",
        ),
        (
            json!([{"path": "a", "content": "x", "link": "/app/out/../../usr/a"}]),
            "files:link",
        ),
        (
            json!([{"path": "a", "content": "x", "link": "/tmp/../etc/a"}]),
            "files:link",
        ),
        (
            json!([{"path": "a", "content": "x", "link": "/app/out/"}]),
            "files:link",
        ),
        (
            json!([{"path": "a", "content": "x", "link": "app/out/a"}]),
            "files:link",
        ),
        (
            json!([{"path": "a", "content": "x", "link": "/app/out/a\nb"}]),
            "files:link",
        ),
        (
            json!([{"path": "a", "content": "x", "link": 5}]),
            "files:link",
        ),
        (
            json!([{"path": "a", "content": "x", "link": "/tmp/l"},
                   {"path": "b", "content": "y", "link": "/tmp/l"}]),
            "files:link_conflict",
        ),
        (
            json!([{"path": "a", "content": "x", "link": "/app/out/l"},
                   {"path": "b", "content": "y", "link": "/app/out/l/m"}]),
            "files:link_conflict",
        ),
        (json!([{"path": "big", "content": big}]), "files:too_large"),
        (
            json!((0..65)
                .map(|i| json!({"path": format!("f{i}"), "content": ""}))
                .collect::<Vec<_>>()),
            "files:too_many",
        ),
    ];
    for who in variants() {
        for (files, reason) in &cases {
            let out = run(who, &p, &[], &action("print('{}')", Some(files.clone())));
            let r = out.record();
            let got = r["stop_reason"].as_str().unwrap_or("");
            assert_eq!(
                got,
                format!("invalid_action:{reason}"),
                "{who:?}: {}",
                short(files)
            );
            assert!(r.get("execution").is_none(), "a jail ran for {reason}");
            // The message names the problem in printable text.
            let msg = r["error"]["message"].as_str().unwrap_or("");
            assert!(!msg.is_empty() && !msg.contains('\n'), "{msg:?}");
        }
    }
}

/// An input file's `link` (how /run_code offers SandboxFusion's `files`): the file is read by
/// its name from the working directory and at /tmp, still read-only through the link; the
/// link is never collected as an artifact (skipped as `symlink`), while a file the program
/// writes beside it is.
#[test]
fn a_linked_file_is_read_from_the_working_directory_and_stays_read_only() {
    let p = policy(&[]);
    let files = json!([
        {"path": "flag.txt", "content": "FLAG", "link": "/app/out/flag.txt"},
        {"path": "d/x.txt", "content": "X", "link": "/app/out/d/x.txt"},
        {"path": "tmp/t.txt", "content": "T", "link": "/tmp/t.txt"},
    ]);
    let code = r#"
import json
got = {n: open(n).read() for n in ['flag.txt', 'd/x.txt', '/tmp/t.txt', '/app/in/flag.txt']}
tries = {}
for n in ['flag.txt', 'd/x.txt', '/tmp/t.txt']:
    try:
        open(n, 'w').write('x')
        tries[n] = 'WROTE'
    except OSError as e:
        tries[n] = e.errno
open('d/new.txt', 'w').write('n')
print(json.dumps({'got': got, 'tries': tries, 'in': open('/app/in/flag.txt').read()}))
"#;
    for who in variants() {
        let out = run(who, &p, &[], &action(code, Some(files.clone())));
        let r = out.record();
        assert_eq!(r["stop_reason"], "success", "{who:?}: {r:#}");
        let o = &r["output"];
        assert_eq!(
            o["got"],
            json!({"flag.txt": "FLAG", "d/x.txt": "X", "/tmp/t.txt": "T", "/app/in/flag.txt": "FLAG"}),
            "{who:?}"
        );
        for (n, v) in o["tries"].as_object().unwrap() {
            assert!(v == 30 || v == 13, "{who:?}: {n} -> {v}: {r:#}");
        }
        assert_eq!(o["in"], "FLAG", "the input itself is unchanged");
        let arts: Vec<&str> = r["artifacts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["path"].as_str().unwrap())
            .collect();
        assert_eq!(arts, ["d/new.txt"], "{who:?}: {r:#}");
        let skipped = r["artifacts_skipped"].as_array().unwrap();
        for link in ["d/x.txt", "flag.txt"] {
            assert!(
                skipped.contains(&json!({"path": link, "reason": "symlink"})),
                "{who:?}: {link}: {skipped:?}"
            );
        }
        assert_eq!(skipped.len(), 2, "{who:?}: {skipped:?}");
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    s.chars().take(120).collect()
}

#[test]
fn artifacts_come_back_with_their_hashes_and_sniffed_types() {
    let p = policy(&[]);
    let code = r#"
import json
open('table.csv', 'w').write('a,b\n1,2\n3,4\n')
open('notes.txt', 'wb').write(b'\x89PNG\r\n\x1a\n' + bytes(range(64)))
open('big.json', 'w').write('[' + '1,' * 40000 + '1]')
print(json.dumps({'ok': True}))
"#;
    for who in variants() {
        let r = run(who, &p, &[], &action(code, None)).record();
        assert_eq!(r["stop_reason"], "success", "{who:?}: {r:#}");
        let arts = r["artifacts"].as_array().unwrap();
        let by = |name: &str| arts.iter().find(|a| a["path"] == name).cloned();
        let csv = by("table.csv").expect("table.csv");
        assert_eq!(csv["media_type"], "text/csv");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(csv["content_base64"].as_str().unwrap())
            .unwrap();
        assert_eq!(bytes, b"a,b\n1,2\n3,4\n");
        assert_eq!(csv["sha256"], sha_hex(&bytes));
        // A name says nothing: the bytes are a PNG.
        assert_eq!(by("notes.txt").unwrap()["media_type"], "image/png");
        // Past the 64KiB per-file cap: listed as too large, never read.
        assert!(by("big.json").is_none(), "{r:#}");
        let skipped = r["artifacts_skipped"].as_array().unwrap();
        assert!(
            skipped
                .iter()
                .any(|s| s["path"] == "big.json" && s["reason"] == "too_large"),
            "{r:#}"
        );
    }
}

#[test]
fn the_out_tmpfs_and_the_collector_hold_their_caps() {
    let p = policy(&[]);
    // Fill /app/out past its 1MiB tmpfs and its inode budget; make a hostile name.
    let code = r#"
import json
errs = {}
try:
    with open('fill.bin', 'wb') as f:
        for _ in range(64):
            f.write(b'\0' * 65536)
except OSError as e:
    errs['fill'] = e.errno
made = 0
try:
    for i in range(100000):
        open('f%05d' % i, 'w').close()
        made += 1
except OSError as e:
    errs['files'] = e.errno
print(json.dumps({'errs': errs, 'made': made}))
"#;
    for who in variants() {
        let r = run(who, &p, &[], &action(code, None)).record();
        assert_eq!(r["stop_reason"], "success", "{who:?}: {r:#}");
        // ENOSPC: the tmpfs is the hard cap, whatever the program does.
        assert_eq!(r["output"]["errs"]["fill"], 28, "{r:#}");
        assert_eq!(r["output"]["errs"]["files"], 28, "{r:#}");
        assert!(r["output"]["made"].as_u64().unwrap() < 100, "{r:#}");
        let arts = r["artifacts"].as_array().unwrap();
        assert!(arts.len() <= 6, "max_count 6: {}", arts.len());
        let skipped = r["artifacts_skipped"].as_array().unwrap();
        assert!(
            skipped.iter().any(|s| s["reason"] == "over_budget"),
            "{r:#}"
        );
    }
}

/// The hostile shell script planted in /app/out by `exec --artifacts-dir`: the tricks a
/// program could play on a collector that copies its files to the host.
const PLANT: &str = r#"
set -u
echo real > real.txt
ln -s /etc/passwd passwd_link
ln -s /etc/shadow shadow_link
ln -s /proc/self/environ environ_link
mkdir swapped && echo x > swapped/f && mv swapped swapped.old && ln -s /etc swapped
printf 'x' > "$(printf 'bad\377utf8')"
ln -s ../../../../../../etc escape_dir
ln -s /proc/self/root/etc/hostname proc_link
echo h > h1 && ln h1 hard_link
truncate -s 200M sparse.bin
printf 'x' > "$(printf 'bad\nname')"
printf 'x' > "$(printf 'esc\033[31mred')"
mkdir sub && ln -s .. sub/loop
( sleep 2; echo late > late.txt ) &
exit 0
"#;

/// A tree deeper than the collector walks (16 directories).
const DEEP: &str = "mkdir -p d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d && echo deep > d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/deep.txt";

#[test]
fn planted_links_sparse_files_and_hostile_names_stay_in_the_jail() {
    let p = policy(&[]);
    let pd = p.display().to_string();
    for who in variants() {
        let s = scratch("plant");
        let dir = s.path().join("out");
        let out = exec_sh(who, &pd, None, &dir, PLANT);
        assert_eq!(out.code, 0, "{who:?}: {}", out.stderr);
        // Only regular files came out, each a real file inside the directory.
        let mut found = Vec::new();
        for e in walk(&dir) {
            let m = std::fs::symlink_metadata(&e).unwrap();
            assert!(!m.file_type().is_symlink(), "a symlink was written: {e:?}");
            if m.is_file() {
                found.push(e.strip_prefix(&dir).unwrap().display().to_string());
                let text = std::fs::read(&e).unwrap();
                assert!(
                    !text.starts_with(b"root:"),
                    "host /etc/passwd copied: {e:?}"
                );
                assert!(m.len() < 1024, "{e:?} is {} bytes", m.len());
            }
        }
        found.sort();
        assert_eq!(found, vec!["real.txt", "swapped.old/f"], "{who:?}");
        assert!(!s.path().join("etc").exists());
        // The host's /etc is untouched and no file appeared next to the directory.
        let siblings: Vec<_> = std::fs::read_dir(s.path()).unwrap().collect();
        assert_eq!(siblings.len(), 1, "{siblings:?}");
    }
}

/// Every path under `dir` (no symlink followed).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if std::fs::symlink_metadata(&p).unwrap().is_dir() {
                todo.push(p.clone());
            }
            out.push(p);
        }
    }
    out
}

#[test]
fn the_record_names_every_planted_trap() {
    let p = policy(&[]);
    let pd = p.display().to_string();
    let s = scratch("traps");
    let dir = s.path().join("out");
    let rec = s.path().join("record.json");
    let who = variants()[0];
    let exec = |script: &str, dir: &Path| {
        let out = exec_sh(who, &pd, Some(&rec), dir, script);
        assert_eq!(out.code, 0, "{}", out.stderr);
        read_record(&rec)
    };
    let deep = exec(DEEP, &s.path().join("deep"));
    assert!(
        deep["artifacts_skipped"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["reason"] == "over_budget" && s["path"].as_str().unwrap().starts_with("d/")),
        "the 17-deep tree is cut at 16: {deep:#}"
    );
    assert_eq!(deep["artifacts"].as_array().unwrap().len(), 0, "{deep:#}");
    let r = exec(PLANT, &dir);
    let reason = |path: &str| {
        r["artifacts_skipped"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["path"] == path)
            .map(|s| s["reason"].as_str().unwrap().to_string())
    };
    assert_eq!(reason("passwd_link").as_deref(), Some("symlink"), "{r:#}");
    assert_eq!(reason("shadow_link").as_deref(), Some("symlink"));
    assert_eq!(reason("environ_link").as_deref(), Some("symlink"));
    assert_eq!(reason("swapped").as_deref(), Some("symlink"));
    assert_eq!(reason("bad\\xffutf8").as_deref(), Some("bad_name"), "{r:#}");
    assert_eq!(reason("escape_dir").as_deref(), Some("symlink"));
    assert_eq!(reason("proc_link").as_deref(), Some("symlink"));
    assert_eq!(reason("sub/loop").as_deref(), Some("symlink"));
    assert_eq!(reason("sparse.bin").as_deref(), Some("too_large"));
    // Both names of a hard-linked file are skipped: which one is "the" file is ambiguous.
    assert_eq!(reason("hard_link").as_deref(), Some("hardlink"));
    assert_eq!(reason("bad\\nname").as_deref(), Some("bad_name"), "{r:#}");
    // The background writer was killed with the jail, before collection.
    assert!(reason("late.txt").is_none());
    assert!(!r["artifacts"].to_string().contains("late.txt"));
    // The printed record escapes the ANSI name; no raw ESC anywhere.
    let raw = std::fs::read_to_string(&rec).unwrap();
    assert!(!raw.contains('\u{1b}'), "raw ESC in the record");
}

#[test]
fn artifacts_dir_refusals_change_nothing() {
    let p = policy(&[]);
    let ok = action("print('{}')", None);
    for who in variants() {
        let s = scratch("refuse");
        // Not empty: refused, the file untouched.
        let full = s.path().join("full");
        std::fs::create_dir(&full).unwrap();
        std::fs::set_permissions(&full, std::fs::Permissions::from_mode(0o777)).unwrap();
        std::fs::write(full.join("keep"), "keep").unwrap();
        let mine = |p: &Path| {
            if who == Who::Nobody {
                std::os::unix::fs::chown(p, Some(common::NOBODY), Some(common::NOBODY)).unwrap();
            }
        };
        mine(&full);
        // A symlink to a directory we could write: refused, nothing written through it.
        let target = s.path().join("target");
        std::fs::create_dir(&target).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o777)).unwrap();
        mine(&target);
        let link = s.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let cases: Vec<(PathBuf, &str)> = vec![
            (full.clone(), "not empty"),
            (link.clone(), "symlink"),
            (s.path().join("a/b/c"), "cannot create"),
        ];
        for (dir, why) in cases {
            let ds = dir.display().to_string();
            let out = run(who, &p, &["--artifacts-dir", &ds], &ok);
            assert_eq!(out.code, 2, "{who:?} {why}: {}", out.stdout);
            assert_eq!(out.record()["stop_reason"], "agentjail_error:flags");
            assert!(out.stderr.contains(why), "{who:?}: {}", out.stderr);
        }
        assert_eq!(std::fs::read_to_string(full.join("keep")).unwrap(), "keep");
        assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
        assert!(!s.path().join("a").exists());
        // A refused cache after a created artifacts dir: the artifacts dir is removed again.
        let fresh = s.path().join("fresh");
        let fs_ = fresh.display().to_string();
        let bad_cache = full.join("keep").display().to_string();
        let out = run(
            who,
            &p,
            &["--artifacts-dir", &fs_, "--cache", &bad_cache],
            &ok,
        );
        assert_eq!(out.code, 2, "{}", out.stdout);
        assert!(!fresh.exists(), "{who:?}: the refused run left {fresh:?}");
        if who == Who::Nobody {
            // An empty directory that belongs to someone else.
            let foreign = s.path().join("foreign");
            std::fs::create_dir(&foreign).unwrap();
            std::fs::set_permissions(&foreign, std::fs::Permissions::from_mode(0o777)).unwrap();
            let out = run(
                who,
                &p,
                &["--artifacts-dir", &foreign.display().to_string()],
                &ok,
            );
            assert_eq!(out.code, 2);
            assert!(out.stderr.contains("belongs to uid 0"), "{}", out.stderr);
        }
    }
}

/// A host directory nobody can read through: 0755 dirs, 0644 files.
fn host_root(tag: &str) -> tempfile::TempDir {
    let d = scratch(tag);
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

#[test]
fn inputs_come_only_from_beneath_a_root_and_never_through_a_symlink() {
    let root = host_root("root");
    let outside = host_root("outside");
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "SECRET-OUTSIDE").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    let r = root.path();
    std::fs::write(r.join("data.csv"), "a,b\n1,2\n").unwrap();
    std::fs::create_dir(r.join("dir")).unwrap();
    std::fs::write(r.join("dir/x.txt"), "inside").unwrap();
    for f in ["data.csv", "dir/x.txt"] {
        std::fs::set_permissions(r.join(f), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    std::fs::set_permissions(r.join("dir"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink(&secret, r.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(outside.path(), r.join("linkdir")).unwrap();
    let p = policy(&[r]);
    let read = |name: &str| {
        action(
            &format!("import json\nprint(json.dumps({{'t': open('/app/in/{name}').read()}}))"),
            None,
        )
    };
    let arg = |rel: &str| format!("{}/{rel}", r.display());
    for who in variants() {
        // A file and a directory beneath the root: read-only in the jail.
        let out = run(who, &p, &["--input", &arg("data.csv")], &read("data.csv"));
        assert_eq!(
            out.record()["output"]["t"],
            "a,b\n1,2\n",
            "{who:?}: {}",
            out.stdout
        );
        let out = run(
            who,
            &p,
            &["--input", &format!("{}:d", arg("dir"))],
            &read("d/x.txt"),
        );
        assert_eq!(
            out.record()["output"]["t"],
            "inside",
            "{who:?}: {}",
            out.stdout
        );
        let write = action("open('/app/in/d/x.txt', 'a').write('x')", None);
        let out = run(who, &p, &["--input", &format!("{}:d", arg("dir"))], &write);
        let stop = out.record()["stop_reason"]
            .as_str()
            .unwrap_or("")
            .to_string();
        assert_eq!(stop, "code_runtime_error:1", "{who:?}: {}", out.stdout);
        // Landlock refuses first (EACCES); the read-only mount is behind it (EROFS).
        let msg = out.record()["error"]["message"]
            .as_str()
            .unwrap_or("")
            .to_string();
        assert!(
            msg.contains("Read-only") || msg.contains("Permission denied"),
            "{who:?}: {}",
            out.stdout
        );
        assert_eq!(
            std::fs::read_to_string(r.join("dir/x.txt")).unwrap(),
            "inside"
        );
        // Refused before any jail, with exit 2 and nothing read.
        for (spec, why) in [
            (
                secret.display().to_string(),
                "not under any files.host_roots",
            ),
            (arg("link.txt"), "symlink"),
            (arg("linkdir/secret.txt"), "symlink"),
            (arg("../outside/secret.txt"), "normalised"),
            (arg("missing.csv"), "No such file"),
            // A NAME with a slash is read as part of the path (paths may hold ':').
            (format!("{}:a/b", arg("data.csv")), "No such file"),
            (
                format!("{}:..", arg("data.csv")),
                "one printable path component",
            ),
        ] {
            let out = run(who, &p, &["--input", &spec], &read("x"));
            assert_eq!(out.code, 2, "{who:?} {spec}: {}", out.stdout);
            assert!(!out.stdout.contains("SECRET-OUTSIDE"));
            assert!(out.stderr.contains(why), "{who:?} {spec}: {}", out.stderr);
        }
    }
}

#[test]
fn an_input_swapped_for_a_symlink_mid_launch_never_reads_outside() {
    let root = host_root("swap");
    let outside = host_root("swap-out");
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "SECRET-OUTSIDE").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    let r = root.path().to_path_buf();
    let file = r.join("in.txt");
    std::fs::write(&file, "inside").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let p = policy(&[&r]);
    // A thread flips in.txt between the real file and a symlink to the secret, as fast as
    // it can, while agentjail resolves, plans and binds it.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flipper = {
        let stop = stop.clone();
        let (r, secret) = (r.clone(), secret.clone());
        std::thread::spawn(move || {
            let real = r.join("real.tmp");
            let link = r.join("link.tmp");
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::write(&real, "inside");
                let _ = std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o644));
                let _ = std::fs::rename(&real, r.join("in.txt"));
                std::thread::sleep(std::time::Duration::from_micros(300));
                let _ = std::os::unix::fs::symlink(&secret, &link);
                let _ = std::fs::rename(&link, r.join("in.txt"));
                std::thread::sleep(std::time::Duration::from_micros(300));
            }
        })
    };
    let code = action(
        "import json\nprint(json.dumps({'t': open('/app/in/in.txt').read()}))",
        None,
    );
    let spec = file.display().to_string();
    let mut outcomes = std::collections::BTreeMap::new();
    for who in variants() {
        for _ in 0..15 {
            let out = run(who, &p, &["--input", &spec], &code);
            assert!(
                !out.stdout.contains("SECRET-OUTSIDE"),
                "{who:?}: the secret was read through a swapped symlink: {}",
                out.stdout
            );
            if out.code != 2 && out.record()["stop_reason"] != "success" {
                eprintln!("swap: {}", out.record()["error"]);
            }
            let tag = if out.code == 2 {
                "refused".to_string()
            } else {
                out.record()["stop_reason"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            };
            *outcomes.entry(tag).or_insert(0) += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    flipper.join().unwrap();
    eprintln!("swap outcomes: {outcomes:?}");
    // Every outcome is a refusal, a setup failure, or the real file's contents.
    for k in outcomes.keys() {
        assert!(
            k == "refused" || k == "success" || k.starts_with("sandbox_unavailable"),
            "unexpected outcome {k}: {outcomes:?}"
        );
    }
}

#[test]
fn no_fifo_and_no_terabyte_file_can_be_made_in_the_jail() {
    let p = policy(&[]);
    let pd = p.display().to_string();
    for who in variants() {
        let s = scratch("fifo");
        let rec = s.path().join("r.json");
        // mkfifo is mknodat, outside every seccomp group: the jail is stopped.
        let out = exec_sh(
            who,
            &pd,
            Some(&rec),
            &s.path().join("out"),
            "mkfifo pipe; echo survived",
        );
        assert_eq!(out.code, 124, "{who:?}: {}", out.stderr);
        assert!(!out.stdout.contains("survived"));
        let r = read_record(&rec);
        assert_eq!(r["stop_reason"], "code_forbidden_syscall:mknodat", "{r:#}");
        assert_eq!(r["artifacts"], json!([]), "{r:#}");
        // A 1 TB sparse file: RLIMIT_FSIZE stops truncate (SIGXFSZ); what is left is empty.
        let out = exec_sh(
            who,
            &pd,
            Some(&rec),
            &s.path().join("out2"),
            "truncate -s 1T huge.bin; echo rc=$?",
        );
        assert!(
            out.stdout.contains("rc=153"),
            "{who:?}: exit {} stdout {:?} stderr {:?} record {}",
            out.code,
            out.stdout,
            out.stderr,
            std::fs::read_to_string(&rec).unwrap_or_default()
        );
        let r = read_record(&rec);
        assert_eq!(r["artifacts"][0]["bytes"], 0, "{r:#}");
    }
}

/// One sample of each built-in redaction kind, and a look-alike of each that must survive.
const SECRETS: &[(&str, &str)] = &[
    ("aws_access_key", "AKIAQWERTYUIOPASDFGH"),
    ("api_key", "sk-proj-Zx81kQmP02vLrT5sYw9aBc3dEf"),
    ("bearer_token", "Bearer eyAbCdEfGhIjKlMnOpQrStUv"),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZ2VudCJ9.c2lnbmF0dXJlX2J5dGVz",
    ),
    ("github_token", "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij"),
    ("slack_token", "xoxb-2024-0123456789-abcdefghij"),
    ("google_api_key", "AIzaSyD-0123456789abcdefghijklmnopqrstu"),
];
const LOOK_ALIKES: &[&str] = &[
    "AKIA-not-a-key",
    "sk-short",
    "bearer of news",
    "eyJ.only.dots",
    "ghp_short",
    "checksum e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
];

#[test]
fn the_audit_log_never_holds_a_key_the_program_printed() {
    let p = policy(&[]);
    let mut lines: Vec<String> = SECRETS.iter().map(|(_, s)| s.to_string()).collect();
    lines.push(
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
            .into(),
    );
    lines.extend(LOOK_ALIKES.iter().map(|s| s.to_string()));
    let payload = serde_json::to_string(&lines).unwrap();
    // The keys go to stdout, an error message (and the traceback on stderr) and an artifact
    // name.
    let code = format!(
        "import json\nlines = {payload}\nopen(lines[0] + '.txt', 'w').write('x')\nprint(json.dumps({{'lines': lines}}))\nraise ValueError(lines[1])\n"
    );
    for who in variants() {
        let s = scratch("audit");
        let log = s.path().join("audit.jsonl");
        let ls = log.display().to_string();
        let out = run(who, &p, &["--audit-log", &ls], &action(&code, None));
        let printed = out.record();
        assert_eq!(
            printed["stop_reason"], "code_runtime_error:1",
            "{printed:#}"
        );
        let audit = std::fs::read_to_string(&log).unwrap();
        for (kind, secret) in SECRETS {
            // The caller gets what the program printed (redaction.printed = false)...
            assert!(
                out.stdout.contains(&json_text(secret)),
                "{kind} not printed"
            );
            // ...the log does not.
            assert!(
                !audit.contains(&json_text(secret)),
                "{who:?}: {kind} in the audit log"
            );
            assert!(
                audit.contains(&format!("[REDACTED:{kind}]")),
                "{kind}: {audit}"
            );
        }
        assert!(!audit.contains("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"));
        assert!(audit.contains("[REDACTED:private_key]"));
        for benign in LOOK_ALIKES {
            assert!(audit.contains(&json_text(benign)), "{benign} was redacted");
        }
        let logged: Value = serde_json::from_str(audit.lines().next().unwrap()).unwrap();
        // stdout (8), the error message, the traceback, the artifact name.
        let n = logged["redaction"]["replacements"].as_u64().unwrap();
        assert!(n >= 11, "{n}: {logged:#}");
        assert_eq!(logged["redaction"], printed["redaction"]);
        assert!(logged["artifacts"][0].get("content_base64").is_none());
        assert!(printed["artifacts"][0].get("content_base64").is_some());
    }
}

/// How `s` appears inside a JSON string.
fn json_text(s: &str) -> String {
    let q = serde_json::to_string(s).unwrap();
    q[1..q.len() - 1].to_string()
}

#[test]
fn the_plot_example_draws_the_seed_incident() {
    let root = env!("CARGO_MANIFEST_DIR");
    let action = std::fs::read(format!("{root}/examples/plot/action.json")).unwrap();
    let a: Value = serde_json::from_slice(&action).unwrap();
    // The CSV shipped beside the example is the one the action carries.
    let csv = std::fs::read_to_string(format!("{root}/examples/plot/transactions.csv")).unwrap();
    assert_eq!(a["files"][0]["content"], csv);
    assert_eq!(
        csv.lines().count(),
        61,
        "a header and the seed's 60 transactions"
    );
    let p = policy(&[]);
    for who in variants() {
        let r = run(who, &p, &[], &action).record();
        assert_eq!(r["stop_reason"], "success", "{who:?}: {r:#}");
        // The seed's numbers (seed 000's expected output).
        let o = &r["output"];
        assert_eq!(o["sample_size"], 60);
        assert_eq!(o["chargeback_alerts"], 1);
        assert_eq!(o["incident_severity"], "P1");
        assert_eq!(o["eta_minutes"], 45);
        assert_eq!(o["p95_latency_ms"].as_f64(), Some(187.0));
        assert_eq!(o["avg_latency_ms"].as_f64(), Some(167.0));
        assert!((o["failed_payment_rate"].as_f64().unwrap() - 2.0 / 60.0).abs() < 1e-12);
        // One artifact: latency.png, a PNG 800 x 450 (8 x 4.5 in at 100 dpi).
        let arts = r["artifacts"].as_array().unwrap();
        assert_eq!(arts.len(), 1, "{r:#}");
        assert_eq!(arts[0]["path"], "latency.png");
        assert_eq!(arts[0]["media_type"], "image/png");
        let png = base64::engine::general_purpose::STANDARD
            .decode(arts[0]["content_base64"].as_str().unwrap())
            .unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&png[12..16], b"IHDR");
        let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
        let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
        assert_eq!((width, height), (800, 450));
        assert!(
            png.len() > 10_000,
            "a real plot, not a blank: {} bytes",
            png.len()
        );
        assert_eq!(arts[0]["sha256"], sha_hex(&png));
    }
}

/// A program that ends the moment it starts still hands over its /app/out: the directory is
/// opened while the program is stopped before its exec (src/jail/spawn.rs), not after, when
/// a program like `true` could already be gone (a loaded machine turned that into
/// `jail setup failed at open /app/out` for `exec --artifacts-dir`). Many quick runs side
/// by side make the old race likely; every one must succeed and report its file.
#[test]
fn a_program_that_exits_at_once_still_hands_over_its_artifacts() {
    let p = policy(&[]);
    let pd = p.display().to_string();
    for who in variants() {
        let runs: Vec<_> = (0..4)
            .map(|t| {
                let pd = pd.clone();
                std::thread::spawn(move || {
                    for i in 0..10 {
                        let s = scratch("quick");
                        let rec = s.path().join("r.json");
                        let out = exec_sh(
                            who,
                            &pd,
                            Some(&rec),
                            &s.path().join("out"),
                            "echo x > a.txt",
                        );
                        assert_eq!(out.code, 0, "{who:?} {t}/{i}: {}", out.stderr);
                        let r = read_record(&rec);
                        assert_eq!(r["artifacts"][0]["path"], "a.txt", "{who:?}: {r:#}");
                    }
                })
            })
            .collect();
        for r in runs {
            r.join().expect("a quick run failed");
        }
    }
}
