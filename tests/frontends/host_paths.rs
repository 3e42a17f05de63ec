//! The host paths agentjail creates or writes for its operator — `serve --socket` (with
//! `--socket-group`), `--cache`, `--audit-log`, `--artifacts-dir` — attacked by another uid
//! that swaps symlinks in a loop (`renameat2(RENAME_EXCHANGE)` and `RENAME_NOREPLACE`)
//! against each while agentjail starts and works, through the real binary launched as root
//! and as nobody. The target of every symlink is a file or directory of agentjail's own uid
//! that it must never touch. And in a directory other users can change (not sticky),
//! agentjail refuses to start, says why, and leaves nothing behind
//! (crates/agentjail-engine/src/hostpath.rs).

use crate::common::serve as serve_harness;

use crate::common::{self, variants, Who};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The attacker's uid (not in any group of the server's).
const ATTACKER: u32 = 12345;

/// How many times each path is raced (starts or runs under the swapping loop).
const ROUNDS: usize = 8;

/// A directory like /tmp: root's, 01777.
fn sticky_dir(tag: &str) -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix(&format!("ajserve-paths-{tag}-"))
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    d
}

fn chown_to(p: &Path, who: Who) {
    let uid = serve_harness::uid_of(who);
    std::os::unix::fs::chown(p, Some(uid), Some(uid)).unwrap();
}

/// (mode, uid, gid, content or entries) of a target, to compare before and after.
fn fingerprint(p: &Path) -> (u32, u32, u32, Vec<String>) {
    let m = std::fs::symlink_metadata(p).unwrap();
    let content = if m.is_dir() {
        let mut v: Vec<String> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    } else {
        vec![std::fs::read_to_string(p).unwrap()]
    };
    (m.mode(), m.uid(), m.gid(), content)
}

/// Another uid swapping a symlink to `target` with `dir/name`, in a loop, until stopped.
struct Swapper {
    child: Child,
    stop: PathBuf,
}

impl Swapper {
    fn start(dir: &Path, name: &str, target: &Path) -> Swapper {
        const LOOP: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
d, name, target, stop = sys.argv[1:5]
victim = os.path.join(d, name).encode()
mine = os.path.join(d, ".swap-%d" % os.getpid()).encode()
n = moved = 0
while not os.path.exists(stop):
    n += 1
    try:
        os.symlink(target, mine)
    except OSError:
        pass
    # renameat2: RENAME_EXCHANGE (2) with whatever is there, RENAME_NOREPLACE (1) where
    # nothing is.
    for flags in (2, 1):
        if libc.syscall(316, -100, mine, -100, victim, flags) == 0:
            moved += 1
print(n, moved)
"#;
        let stop = dir.join(format!(".stop-{}", std::process::id()));
        let child = Command::new("/usr/bin/setpriv")
            .args([
                &format!("--reuid={ATTACKER}"),
                &format!("--regid={ATTACKER}"),
                "--clear-groups",
                "--",
                common::PY,
                "-I",
                "-S",
                "-c",
                LOOP,
            ])
            .arg(dir)
            .arg(name)
            .arg(target)
            .arg(&stop)
            .current_dir("/")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        Swapper { child, stop }
    }

    /// Stop the loop; how many rounds it ran.
    fn stop(mut self) -> u64 {
        std::fs::write(&self.stop, "").unwrap();
        let mut out = String::new();
        std::io::Read::read_to_string(self.child.stdout.as_mut().unwrap(), &mut out).unwrap();
        self.child.wait().unwrap();
        let _ = std::fs::remove_file(&self.stop);
        out.split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Swapper {
    /// A test that panics mid-attack must not leave the attacker looping (and recreating
    /// its links in the temp directory) after it.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = std::fs::write(&self.stop, "");
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `agentjail ARGS` as `who`, its stdin piped.
fn spawn(who: Who, args: &[&str]) -> Child {
    serve_harness::command(who, common::agentjail_path())
        .args(args)
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A stdin server: one run request, its response (None when the server refused to start);
/// then EOF and the exit. The server's stderr.
fn one_job(who: Who, flags: &[&str]) -> (Option<serde_json::Value>, String) {
    let mut args = vec!["serve", "--pool", "0", "--session-pool", "0"];
    args.extend(flags);
    let mut c = spawn(who, &args);
    let req = serde_json::json!({"id": 1, "op": "run", "action": serve_harness::action("print('{\"ok\": 1}')", serde_json::json!({}))});
    let mut stdin = c.stdin.take().unwrap();
    let _ = stdin.write_all(format!("{req}\n").as_bytes());
    drop(stdin);
    let mut line = String::new();
    let _ = BufReader::new(c.stdout.take().unwrap()).read_line(&mut line);
    let out = c.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (serde_json::from_str(&line).ok(), err)
}

/// Where agentjail may refuse under the race: a symlink planted before it looked.
fn refused_as_planted(err: &str) -> bool {
    [
        "not a socket of ours",
        "symlink",
        "symbolic link",
        "not a regular file of ours",
        "not a directory",
        "changed while",
        "File exists",
        "another user's file or link",
    ]
    .iter()
    .any(|w| err.contains(w))
}

fn root_only() -> bool {
    if common::is_root() {
        return true;
    }
    eprintln!("\n!!!!!!!! SKIPPED: another uid to attack with needs root !!!!!!!!\n");
    false
}

#[test]
fn the_socket_is_never_reached_through_a_swapped_path() {
    if !root_only() {
        return;
    }
    for who in variants() {
        let d = sticky_dir("sock");
        // What the socket's chown/chmod would hit through a symlink: a private file of the
        // server's uid in a directory of its own.
        let private = d.path().join("private");
        std::fs::create_dir(&private).unwrap();
        let target = private.join("secret");
        std::fs::write(&target, "secret\n").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        chown_to(&private, who);
        chown_to(&target, who);
        let before = fingerprint(&target);
        let sock = d.path().join("s.sock");
        let s = sock.to_str().unwrap().to_string();
        let mut args = vec![
            "serve",
            "--pool",
            "0",
            "--session-pool",
            "0",
            "--socket",
            &s,
        ];
        if who == Who::Root {
            // The attacker is in the socket's group: the file it would gain.
            args.extend(["--socket-group", "12345"]);
        }
        let swapper = Swapper::start(d.path(), "s.sock", &target);
        let (mut started, mut refused) = (0, 0);
        for _ in 0..ROUNDS {
            let mut c = spawn(who, &args);
            let t = Instant::now();
            let up = loop {
                if c.try_wait().unwrap().is_some() {
                    break false;
                }
                // Listening: the path names our socket right now, or the attacker's link.
                let m = std::fs::symlink_metadata(&sock);
                if m.is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type())) {
                    break true;
                }
                assert!(t.elapsed() < Duration::from_secs(30), "{who:?}: serve hung");
                std::thread::sleep(Duration::from_millis(5));
            };
            if up {
                let m = std::fs::symlink_metadata(&sock).unwrap();
                assert_eq!(m.uid(), serve_harness::uid_of(who));
                started += 1;
                // SAFETY: kill with a pid we spawned.
                unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            }
            let out = c.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            if !up {
                assert_eq!(out.status.code(), Some(2), "{who:?}: {err}");
                assert!(refused_as_planted(&err), "{who:?}: {err}");
                refused += 1;
            }
        }
        let rounds = swapper.stop();
        assert_eq!(
            fingerprint(&target),
            before,
            "{who:?}: the symlinked file was changed"
        );
        let left: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".agentjail"))
            .collect();
        assert!(left.is_empty(), "{who:?}: left {left:?}");
        eprintln!("{who:?}: socket: {started} started, {refused} refused, {rounds} swaps");
    }
}

#[test]
fn the_cache_audit_log_and_artifacts_are_never_reached_through_a_swapped_path() {
    if !root_only() {
        return;
    }
    for who in variants() {
        let d = sticky_dir("files");
        // Targets of the server's uid: a directory (for the cache and the artifacts) and a
        // file (for the audit log), each of which must stay as it is.
        let tdir = d.path().join("tdir");
        std::fs::create_dir(&tdir).unwrap();
        std::fs::set_permissions(&tdir, std::fs::Permissions::from_mode(0o700)).unwrap();
        chown_to(&tdir, who);
        let tfile = tdir.join("keep");
        std::fs::write(&tfile, "keep\n").unwrap();
        std::fs::set_permissions(&tfile, std::fs::Permissions::from_mode(0o600)).unwrap();
        chown_to(&tfile, who);
        let before = (fingerprint(&tdir), fingerprint(&tfile));

        // The cache: entries must never land in the target directory.
        let cache = d.path().join("cache");
        let sw = Swapper::start(d.path(), "cache", &tdir);
        let mut ran = 0;
        for _ in 0..ROUNDS {
            let (resp, err) = one_job(who, &["--cache", cache.to_str().unwrap()]);
            match resp {
                Some(r) => {
                    assert_eq!(r["record"]["stop_reason"], "success", "{who:?}: {r}");
                    ran += 1;
                }
                None => assert!(refused_as_planted(&err), "{who:?}: cache: {err}"),
            }
        }
        let n = sw.stop();
        assert_eq!(
            (fingerprint(&tdir), fingerprint(&tfile)),
            before,
            "{who:?}: cache"
        );
        eprintln!("{who:?}: cache: {ran} ran, {n} swaps");

        // The audit log: never appended to the target file.
        let audit = d.path().join("audit.jsonl");
        let sw = Swapper::start(d.path(), "audit.jsonl", &tfile);
        for _ in 0..ROUNDS {
            let (resp, err) = one_job(who, &["--audit-log", audit.to_str().unwrap()]);
            if resp.is_none() {
                assert!(refused_as_planted(&err), "{who:?}: audit: {err}");
            }
        }
        sw.stop();
        assert_eq!(
            (fingerprint(&tdir), fingerprint(&tfile)),
            before,
            "{who:?}: audit"
        );
        if let Ok(m) = std::fs::symlink_metadata(&audit) {
            if m.is_file() {
                assert_eq!(m.uid(), serve_harness::uid_of(who));
                assert_eq!(m.mode() & 0o777, 0o600);
            }
        }

        // The artifacts directory (`exec --artifacts-dir`): no file lands in the target.
        let out_dir = d.path().join("out");
        let sw = Swapper::start(d.path(), "out", &tdir);
        for _ in 0..ROUNDS {
            let _ = std::fs::remove_dir_all(&out_dir);
            let c = spawn(
                who,
                &[
                    "exec",
                    "--artifacts-dir",
                    out_dir.to_str().unwrap(),
                    "--",
                    "/bin/sh",
                    "-c",
                    "echo planted > /app/out/planted",
                ],
            );
            let out = c.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            if !out.status.success() {
                assert!(refused_as_planted(&err), "{who:?}: artifacts: {err}");
            }
        }
        sw.stop();
        assert_eq!(
            (fingerprint(&tdir), fingerprint(&tfile)),
            before,
            "{who:?}: artifacts"
        );
    }
}

/// A directory other users can change (0777, not sticky): every path is refused with a
/// message naming the directory, and nothing is left in it.
#[test]
fn a_directory_others_can_change_is_refused_and_left_empty() {
    for who in variants() {
        let d = sticky_dir("open");
        let open = d.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let p = |n: &str| open.join(n).display().to_string();
        let cases: Vec<Vec<String>> = vec![
            vec!["serve".into(), "--socket".into(), p("s.sock")],
            vec!["serve".into(), "--cache".into(), p("cache")],
            vec!["serve".into(), "--audit-log".into(), p("audit.jsonl")],
            vec![
                "exec".into(),
                "--artifacts-dir".into(),
                p("out"),
                "--".into(),
                "/bin/true".into(),
            ],
        ];
        for args in cases {
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            let mut c = spawn(who, &a);
            drop(c.stdin.take());
            let out = c.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            // `exec`'s own errors are 125 (its exit code is otherwise the command's).
            let want = if a[0] == "exec" { 125 } else { 2 };
            assert_eq!(out.status.code(), Some(want), "{who:?} {a:?}: {err}");
            assert!(
                err.contains("can be changed by another user") && err.contains("/open"),
                "{who:?} {a:?}: {err}"
            );
            assert_eq!(
                std::fs::read_dir(&open).unwrap().count(),
                0,
                "{who:?} {a:?}: left something"
            );
        }
    }
}
