//! `[[network.credentials]]` loading: the values reach the broker and redaction and never a
//! printed policy; every bad entry and every unsafe file is refused with the key.

use super::super::load_str;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const GROUPS: &str = "[seccomp]\nallow_groups = [\"basic_io\", \"files_read\", \"memory\", \"process_self\", \"exec\", \"network\"]\n";
const SECRET: &str = "tok-0123456789abcdef";

fn load(net: &str) -> Result<super::super::Policy, String> {
    load_str(&format!("version = 1\n[network]\n{net}\n{GROUPS}"), "test")
        .map(|l| l.policy)
        .map_err(|e| e.to_string())
}

/// A file in a fresh directory of ours, with `mode`.
fn file(dir: &Path, name: &str, content: &[u8], mode: u32) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

fn net(value_file: &Path, extra: &str) -> String {
    format!(
        "mode = \"allowlist\"\nallow = [\"api.example.com:443\", \"svc.internal:8080\"]\n[[network.credentials]]\nname = \"api\"\nhost = \"API.example.com.\"\nvalue_file = \"{}\"\nformat = \"Bearer {{}}\"\n{extra}",
        value_file.display()
    )
}

fn ca(dir: &Path) -> PathBuf {
    let out = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=test",
        ])
        .current_dir(dir)
        .output()
        .expect("the test needs the openssl command");
    assert!(out.status.success());
    std::fs::set_permissions(dir.join("ca.pem"), std::fs::Permissions::from_mode(0o644)).unwrap();
    dir.join("ca.pem")
}

#[test]
fn a_credential_loads_into_the_broker_and_redaction_and_never_prints() {
    let d = tempfile::tempdir().unwrap();
    let v = file(d.path(), "key", format!("{SECRET}\n").as_bytes(), 0o600);
    let ca = ca(d.path());
    let text = net(&v, "").replacen(
        "mode = \"allowlist\"",
        &format!("mode = \"allowlist\"\nca_file = \"{}\"", ca.display()),
        1,
    );
    let p = load(&text).unwrap();
    let c = &p.network.broker.credentials[0];
    assert_eq!(
        (c.host.as_str(), c.port, c.tls),
        ("api.example.com", 443, true)
    );
    assert_eq!(
        c.value,
        format!("Bearer {SECRET}"),
        "one trailing newline dropped"
    );
    assert_eq!(c.header, "Authorization");
    assert!(p.network.broker.tls.is_some());
    assert_eq!(p.redaction.secrets[0].value, SECRET);
    assert_eq!(p.network.rules().broker, p.network.broker);
    let shown = toml::to_string_pretty(&p).unwrap();
    assert!(
        !shown.contains(SECRET) && shown.contains("value_file"),
        "{shown}"
    );
    assert!(!format!("{p:?}").contains(SECRET));
}

#[test]
fn a_plain_upstream_needs_no_trust_roots_and_defaults_to_port_80() {
    let d = tempfile::tempdir().unwrap();
    let v = file(d.path(), "key", format!("{SECRET}\r\n").as_bytes(), 0o400);
    let text = format!(
        "mode = \"allowlist\"\nallow = [\"svc.internal:80\"]\n[[network.credentials]]\nname = \"svc\"\nhost = \"svc.internal\"\nheader = \"X-Api-Key\"\nvalue_file = \"{}\"\nupstream = \"http\"",
        v.display()
    );
    let p = load(&text).unwrap();
    let c = &p.network.broker.credentials[0];
    assert_eq!((c.port, c.tls, c.value.as_str()), (80, false, SECRET));
    assert!(p.network.broker.tls.is_none());
}

#[test]
fn unsafe_files_are_refused_with_a_clear_error() {
    let d = tempfile::tempdir().unwrap();
    let good = file(d.path(), "good", SECRET.as_bytes(), 0o600);
    let link = d.path().join("link");
    std::os::unix::fs::symlink(&good, &link).unwrap();
    let world = file(d.path(), "world", SECRET.as_bytes(), 0o606);
    let group = file(d.path(), "group", SECRET.as_bytes(), 0o620);
    let sub = d.path().join("dir");
    std::fs::create_dir(&sub).unwrap();
    let big = file(d.path(), "big", &vec![b'a'; 9000], 0o600);
    let cases: Vec<(PathBuf, &str)> = vec![
        (link, "is a symbolic link"),
        (world, "writable by group or others"),
        (group, "writable by group or others"),
        (sub, "not a regular file"),
        (d.path().join("missing"), "cannot be opened"),
        (big, "larger than"),
    ];
    for (path, why) in cases {
        let e = load(&net(&path, "")).unwrap_err();
        assert!(
            e.contains("network.credentials") && e.contains(why),
            "{path:?}: {e}"
        );
        assert!(!e.contains(SECRET), "{e}");
    }
    // A writable directory on the way (not sticky) is refused as for every operator path.
    let open = d.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let inside = file(&open, "key", SECRET.as_bytes(), 0o600);
    let e = load(&net(&inside, "")).unwrap_err();
    assert!(e.contains("can be changed by another user"), "{e}");
    // Another user's file (only root can make one).
    if nix::unistd::geteuid().is_root() {
        let theirs = file(d.path(), "theirs", SECRET.as_bytes(), 0o600);
        std::os::unix::fs::chown(&theirs, Some(12345), None).unwrap();
        let e = load(&net(&theirs, "")).unwrap_err();
        assert!(e.contains("belongs to uid 12345"), "{e}");
    } else {
        eprintln!("note: not root, the other-owner case is left to the jail tests");
    }
}

/// A hostile filesystem: a FIFO (no writer: an open that waited would hang the load), the
/// file through /proc/self/fd (a magic link), a device, a second name (a hard link), each
/// refused without the value.
#[test]
fn fifos_fd_links_devices_and_hard_links_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let good = file(d.path(), "good", SECRET.as_bytes(), 0o600);
    let fifo = d.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .args(["-m", "600"])
        .arg(&fifo)
        .status()
        .expect("the mkfifo command");
    assert!(made.success());
    let held = std::fs::File::open(&good).unwrap();
    use std::os::fd::AsRawFd;
    let by_fd = PathBuf::from(format!("/proc/self/fd/{}", held.as_raw_fd()));
    let second = d.path().join("second");
    std::fs::hard_link(&good, &second).unwrap();
    for (path, why) in [
        (fifo, "not a regular file"),
        (by_fd, "symbolic link"),
        (PathBuf::from("/dev/null"), "not a regular file"),
        (second.clone(), "has 2 names"),
        (good.clone(), "has 2 names"),
    ] {
        let e = load(&net(&path, "")).unwrap_err();
        assert!(
            e.contains("network.credentials") && e.contains(why),
            "{path:?}: {e}"
        );
        assert!(!e.contains(SECRET), "{e}");
    }
    std::fs::remove_file(&second).unwrap();
    assert!(load(&net(&good, "")).is_ok(), "one name again: loads");
}

#[test]
fn bad_values_are_refused_without_being_shown() {
    let d = tempfile::tempdir().unwrap();
    for (content, why) in [
        (&b"short\n"[..], "too short"),
        (b"", "too short"),
        (b"tok-0123456789\nsecond-line", "cannot carry"),
        (b"tok-0123456789\r\x00", "cannot carry"),
        (b"tok-\xff0123456789", "not text"),
        (b"tok-0123456789\n\n", "cannot carry"),
    ] {
        let v = file(d.path(), "v", content, 0o600);
        let e = load(&net(&v, "")).unwrap_err();
        assert!(e.contains(why), "{content:?}: {e}");
        assert!(!e.contains("0123456789"), "{e}");
    }
}

// long because: one table of every refused entry, each with its key and reason.
#[test]
fn bad_entries_are_refused_with_the_key() {
    let d = tempfile::tempdir().unwrap();
    let v = file(d.path(), "key", SECRET.as_bytes(), 0o600);
    let vf = v.display().to_string();
    let second = |extra: &str| {
        format!(
            "[[network.credentials]]\nname = \"two\"\nhost = \"svc.internal\"\nport = 8080\nvalue_file = \"{vf}\"\n{extra}"
        )
    };
    for (text, key, why) in [
        (
            net(&v, "port = 444"),
            "network.credentials",
            "not in network.allow",
        ),
        (net(&v, "port = 0"), "network.credentials", "port 0"),
        (
            net(&v, "header = \"Host\""),
            "network.credentials",
            "cannot carry a credential",
        ),
        (
            net(&v, "header = \"Bad Header\""),
            "network.credentials",
            "cannot carry a credential",
        ),
        (
            net(&v, "upstream = \"ftp\""),
            "network.credentials",
            "unknown variant",
        ),
        (net(&v, "color = 1"), "network.credentials", "unknown field"),
        (
            net(&v, "").replace("Bearer {}", "Bearer"),
            "network.credentials",
            "must hold",
        ),
        (
            net(&v, "").replace("Bearer {}", "{} {}"),
            "network.credentials",
            "must hold",
        ),
        (
            net(&v, "").replace("Bearer {}", "B\\r\\n{}"),
            "network.credentials",
            "must hold",
        ),
        (
            net(&v, "").replace(&vf, "relative/key"),
            "network.credentials",
            "absolute",
        ),
        (
            net(&v, "").replace("API.example.com.", "*.example.com"),
            "network.credentials",
            "not a host name",
        ),
        (
            net(&v, "").replace("API.example.com.", "10.0.0.1"),
            "network.credentials",
            "not a host name",
        ),
        (
            net(&v, "").replace("\"api\"", "\"a pi\""),
            "network.credentials",
            "letters, digits",
        ),
        (
            format!(
                "{}\n{}",
                net(&v, ""),
                second("").replace("\"two\"", "\"api\"")
            ),
            "network.credentials",
            "named twice",
        ),
        (
            format!(
                "{}\n{}",
                net(&v, ""),
                second("")
                    .replace("svc.internal", "api.example.com")
                    .replace("8080", "443")
            ),
            "network.credentials",
            "two credentials",
        ),
        (
            net(&v, "").replace("mode = \"allowlist\"\n", "").replace(
                "allow = [\"api.example.com:443\", \"svc.internal:8080\"]\n",
                "",
            ),
            "network.credentials",
            "allowlist",
        ),
        (
            net(&v, "upstream = \"http\"\nport = 443").replacen(
                "mode = \"allowlist\"",
                "mode = \"allowlist\"\nca_file = \"/etc/ssl/certs/ca-certificates.crt\"",
                1,
            ),
            "network.ca_file",
            "applies to credentials with upstream",
        ),
    ] {
        let e = load(&text).unwrap_err();
        assert!(e.contains(key) && e.contains(why), "{text}\n=> {e}");
    }
    // Trust roots that are not a usable bundle, or not a safe file.
    let junk = file(d.path(), "junk.pem", b"not a certificate", 0o644);
    let loose = file(d.path(), "loose.pem", b"x", 0o666);
    for (ca, why) in [
        (junk, "no usable CA"),
        (loose, "writable by group or others"),
    ] {
        let text = net(&v, "").replacen(
            "mode = \"allowlist\"",
            &format!("mode = \"allowlist\"\nca_file = \"{}\"", ca.display()),
            1,
        );
        let e = load(&text).unwrap_err();
        assert!(e.contains("network.ca_file") && e.contains(why), "{e}");
    }
}

/// Without `ca_file`, an https credential trusts the system bundle (where it is a safe
/// file); a relative `ca_file` is refused.
#[test]
fn the_system_bundle_is_the_default_and_ca_file_is_absolute() {
    let d = tempfile::tempdir().unwrap();
    let v = file(d.path(), "key", SECRET.as_bytes(), 0o600);
    match load(&net(&v, "")) {
        Ok(p) => assert!(p.network.broker.tls.is_some()),
        Err(e) => assert!(
            e.contains("network.ca_file") && e.contains(super::SYSTEM_CA_FILE),
            "{e}"
        ),
    }
    let text = net(&v, "").replacen(
        "mode = \"allowlist\"",
        "mode = \"allowlist\"\nca_file = \"certs/ca.pem\"",
        1,
    );
    let e = load(&text).unwrap_err();
    assert!(
        e.contains("network.ca_file") && e.contains("not an absolute path"),
        "{e}"
    );
}

#[test]
fn lint_names_what_a_credential_opens() {
    let d = tempfile::tempdir().unwrap();
    let v = file(d.path(), "key", SECRET.as_bytes(), 0o644);
    let text = format!(
        "mode = \"allowlist\"\nallow = [\"svc.internal:80\"]\n[[network.credentials]]\nname = \"svc\"\nhost = \"svc.internal\"\nvalue_file = \"{}\"\nupstream = \"http\"",
        v.display()
    );
    let p = load(&text).unwrap();
    let w: Vec<String> = super::super::lint(&p)
        .into_iter()
        .map(|w| w.message)
        .collect();
    let all = w.join("\n");
    assert!(
        all.contains("svc: the program can call svc.internal:80"),
        "{all}"
    );
    assert!(all.contains("in clear"), "{all}");
    assert!(
        all.contains("readable by group or others (mode 644)"),
        "{all}"
    );
    assert!(!all.contains(SECRET));
    std::fs::set_permissions(&v, std::fs::Permissions::from_mode(0o600)).unwrap();
    let https = text.replace("upstream = \"http\"", "upstream = \"https\"\nport = 80");
    if let Ok(p) = load(&https) {
        let all: Vec<String> = super::super::lint(&p)
            .into_iter()
            .map(|w| w.message)
            .collect();
        assert!(
            !all.iter()
                .any(|m| m.contains("in clear") || m.contains("readable")),
            "{all:?}"
        );
    }
}
