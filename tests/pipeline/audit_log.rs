//! The audit log is appended to only when it is a regular file of agentjail's uid with one
//! name that only that uid can write (docs/SECURITY.md, "What another local user can do"):
//! a second hard link, a group- or world-writable file, another user's file, a FIFO and a
//! directory are each refused (exit 2, the path named) and left exactly as they were.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::{Command, Stdio};

/// The agentjail under test (common::built_binary: the release build under scripts/test.sh).
fn bin() -> std::path::PathBuf {
    crate::common::built_binary("agentjail")
}

fn action() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/examples/incident/action.json").to_string()
}

/// `agentjail run --audit-log LOG` on the seed's action: (exit code, stderr).
fn run_with_log(log: &std::path::Path) -> (Option<i32>, String) {
    // No jail of this test may overlap the tests that compare host-wide state (cleanup).
    let _running = crate::common::jail_running();
    let out = Command::new(bin())
        .args(["run", "--audit-log"])
        .arg(log)
        .arg(action())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn snapshot(p: &std::path::Path) -> (u64, u32, u64, Vec<u8>) {
    let m = std::fs::symlink_metadata(p).unwrap();
    let content = if m.is_file() {
        std::fs::read(p).unwrap()
    } else {
        Vec::new()
    };
    (m.ino(), m.mode(), m.nlink(), content)
}

#[test]
fn only_a_private_single_named_file_of_ours_is_appended_to() {
    let d = tempfile::Builder::new()
        .prefix("audit-log-test-")
        .tempdir()
        .unwrap();
    let file = |name: &str, mode: u32| {
        let p = d.path().join(name);
        std::fs::write(&p, "before\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    };
    // The control: a 0600 file of ours with one name is appended to.
    let ok = file("ok.jsonl", 0o600);
    let (code, err) = run_with_log(&ok);
    assert_eq!(code, Some(0), "{err}");
    let text = std::fs::read_to_string(&ok).unwrap();
    assert!(
        text.starts_with("before\n") && text.lines().count() == 2,
        "{text}"
    );

    let linked = file("linked.jsonl", 0o600);
    std::fs::hard_link(&linked, d.path().join("second-name")).unwrap();
    let group_writable = file("group.jsonl", 0o620);
    let world_writable = file("world.jsonl", 0o602);
    let mut cases = vec![
        (linked, "one name"),
        (group_writable, "only we can write"),
        (world_writable, "only we can write"),
    ];
    let fifo = d.path().join("fifo");
    assert!(Command::new("mkfifo")
        .arg("-m600")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    cases.push((fifo, "fifo"));
    cases.push((d.path().to_path_buf(), "directory"));
    if crate::common::is_root() {
        let foreign = file("foreign.jsonl", 0o600);
        std::os::unix::fs::chown(&foreign, Some(crate::common::NOBODY), None).unwrap();
        cases.push((foreign, "of ours"));
    }
    for (path, what) in cases {
        let before = snapshot(&path);
        let (code, err) = run_with_log(&path);
        assert_eq!(code, Some(2), "{what}: {err}");
        assert!(
            err.contains("cannot append to the audit log")
                && err.contains(&*path.to_string_lossy()),
            "{what}: {err}"
        );
        assert_eq!(snapshot(&path), before, "{what}: the refused log changed");
    }
}
