//! The host layouts agentjail meets outside its first machine, built in a private mount
//! namespace of the test (nothing changes for the host), then attacked from inside a jail:
//!
//! - a GPU node or a pod: mounts beneath `/usr` (a writable tmpfs on `/usr/local`, a
//!   read-only one on `/usr/local/nvidia` as NVIDIA's container toolkit makes, a writable
//!   suid- and device-capable tmpfs under `/usr/lib/x86_64-linux-gnu`, a writable bind
//!   over `/usr/share/doc`). All world-writable, so that only the mount flags can refuse. Inside a user namespace the kernel locks those mounts to `/usr`, so a
//!   plain bind of `/usr` is refused (EINVAL): the jail must start, and nothing under its
//!   binds may be writable, suid or device-capable;
//! - an interpreter under a prefix the jail's root lacks (`/opt/...`);
//! - a container's masked `/proc`: the jail must fail closed with the container's fix,
//!   never bind the host's /proc, and `doctor` must say so.
//!
//! Every case runs as root and as nobody (agentjail started inside the prepared namespace).
//! Needs root for the layouts (`unshare -m`); in CI it must run.

use crate::common::{agentjail_path, is_root, require_feature, variants, Who, PY};
use serde_json::Value;
use std::process::{Command, Stdio};

/// A directory under /usr/lib/x86_64-linux-gnu that Python never needs, covered by a tmpfs
/// in the test's namespace.
const LIB_SUBDIR: &str = "/usr/lib/x86_64-linux-gnu/audit";
/// An existing directory under /usr/share, covered by a writable bind in the namespace.
const SHARE_BIND: &str = "/usr/share/doc";

/// Shell lines that build the GPU-node/pod layout in the current (private) mount namespace
/// (tests/gpu_layout.sh, also used by scripts/test-layouts.sh to run the escape suites).
fn gpu_layout() -> String {
    include_str!("../gpu_layout.sh").to_string()
}

/// Run `agentjail ARGS` as `who` inside a fresh private mount namespace prepared by `setup`
/// (shell). Returns exit code, stdout, stderr.
fn in_layout(who: Who, setup: &str, args: &[&str], stdin: &[u8]) -> (i32, String, String) {
    let bin = agentjail_path().to_str().unwrap().to_string();
    let run_as = match who {
        Who::Nobody => "setpriv --reuid=65534 --regid=65534 --clear-groups --".to_string(),
        _ => String::new(),
    };
    let quoted: Vec<String> = args.iter().map(|a| shell_quote(a)).collect();
    let script = format!(
        "{setup}\nexec {run_as} {bin} {}",
        quoted.join(" "),
        bin = shell_quote(&bin)
    );
    let mut c = Command::new("unshare");
    c.args([
        "--mount",
        "--propagation",
        "private",
        "/bin/sh",
        "-c",
        &script,
    ])
    .current_dir("/")
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = c.spawn().expect("unshare");
    {
        use std::io::Write;
        let mut si = child.stdin.take().unwrap();
        si.write_all(stdin).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// doctor --json's `probe_jail` check.
fn probe_check(d: &Value) -> &Value {
    d["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["control"] == "probe_jail"))
        .unwrap_or_else(|| panic!("no probe_jail check: {d:#}"))
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn can_build_layouts() -> bool {
    require_feature(
        "root, to build host mount layouts with unshare -m",
        is_root(),
    )
}

fn seed_action() -> Vec<u8> {
    std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/incident/action.json"
    ))
    .unwrap()
}

fn assert_seed_numbers(who: Who, code: i32, stdout: &str, stderr: &str) {
    let r: Value = serde_json::from_str(stdout)
        .unwrap_or_else(|e| panic!("{who:?}: record does not parse ({e}): {stdout} {stderr}"));
    assert_eq!(code, 0, "{who:?}: {r:#}");
    assert_eq!(r["stop_reason"], "success", "{who:?}: {r:#}");
    let out = &r["output"];
    assert_eq!(out["incident_severity"], "P1", "{who:?}: {out}");
    assert_eq!(out["sample_size"], 60, "{who:?}: {out}");
    assert_eq!(out["chargeback_alerts"], 1, "{who:?}: {out}");
    assert_eq!(
        out["avg_latency_ms"].as_f64(),
        Some(167.0),
        "{who:?}: {out}"
    );
    assert_eq!(
        out["p95_latency_ms"].as_f64(),
        Some(187.0),
        "{who:?}: {out}"
    );
}

#[test]
fn the_seed_job_runs_on_a_gpu_node_layout() {
    if !can_build_layouts() {
        return;
    }
    for who in variants() {
        let (code, out, err) = in_layout(who, &gpu_layout(), &["run", "-"], &seed_action());
        assert_seed_numbers(who, code, &out, &err);
    }
}

/// From inside the jail: every mount under /usr must be read-only, nosuid and nodev (the
/// kernel's own mount table says so), every write must fail, the suid binary must not
/// raise anything and the device node must not open. Prints one line per breach.
const ATTACK: &str = r#"
import os, errno
breaches = []
mounts = []
for line in open('/proc/self/mountinfo'):
    f = line.split()
    point, opts = f[4], set(f[5].split(','))
    if point == '/usr' or point.startswith('/usr/'):
        mounts.append(point)
        for need in ('ro', 'nosuid', 'nodev'):
            if need not in opts:
                breaches.append('mount %s lacks %s (%s)' % (point, need, f[5]))
for d in ['/usr/local', '/usr/local/bin', '/usr/local/nvidia', LIB, SHARE, '/usr/lib', '/usr']:
    try:
        fd = os.open(d + '/aj-breach', os.O_CREAT | os.O_WRONLY, 0o644)
        os.close(fd)
        breaches.append('wrote into ' + d)
    except OSError as e:
        if e.errno not in (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOENT):
            breaches.append('unexpected errno %d writing into %s' % (e.errno, d))
for victim in ['/usr/local/bin/probe', '/usr/local/nvidia/libfake.so']:
    try:
        open(victim, 'a').close()
        breaches.append('opened for writing: ' + victim)
    except OSError:
        pass
try:
    fd = os.open(LIB + '/null', os.O_RDWR)
    os.close(fd)
    breaches.append('a device node under a bind opened')
except OSError:
    pass
st = os.stat(LIB + '/suid-true')
if not st.st_mode & 0o4000:
    breaches.append('the layout lost its suid file: the test proves nothing')
expected = {'/usr/local', '/usr/local/nvidia', LIB, SHARE}
missing = expected - set(mounts)
if missing:
    breaches.append('submounts not in the jail, the test proves nothing: %s' % sorted(missing))
print('BREACHES:', breaches)
print('MOUNTS:', len(mounts))
"#;

fn attack_gpu_layout(extra_env: Option<(&str, &str)>) {
    if !can_build_layouts() {
        return;
    }
    let code = ATTACK
        .replace("LIB", &format!("{LIB_SUBDIR:?}"))
        .replace("SHARE", &format!("{SHARE_BIND:?}"));
    for who in variants() {
        let mut setup = gpu_layout();
        if let Some((k, v)) = extra_env {
            setup.push_str(&format!("export {k}={v}\n"));
        }
        let (rc, out, err) = in_layout(
            who,
            &setup,
            &["exec", "--", PY, "-I", "-S", "-c", &code],
            b"",
        );
        assert_eq!(rc, 0, "{who:?}: the jail did not run: {out}\n{err}");
        assert!(
            out.contains("BREACHES: []"),
            "{who:?}: BREACH: {out}\n{err}"
        );
        assert!(out.contains("MOUNTS:"), "{who:?}: {out}\n{err}");
    }
}

#[test]
fn nothing_under_a_gpu_node_bind_is_writable_suid_or_a_device() {
    attack_gpu_layout(None);
}

/// The same attack through the walk that kernels without mount_setattr get (a remount of
/// each submount): forced by the fault-injection build.
#[cfg(feature = "fault-injection")]
#[test]
fn the_submount_walk_holds_where_mount_setattr_is_missing() {
    attack_gpu_layout(Some(("AGENTJAIL_FAULT", "no_mount_setattr")));
}

#[test]
fn an_interpreter_under_a_prefix_the_root_lacks_is_bound() {
    if !can_build_layouts() {
        return;
    }
    // /opt is a tmpfs of this namespace: nothing is created on the host.
    let setup = "set -e
mount -t tmpfs -o mode=0755 aj-opt /opt
mkdir -p /opt/aj-nested/py312/lib
echo 'from the deep bind' > /opt/aj-nested/py312/lib/marker.txt
chmod -R a+rX /opt/aj-nested
cat > /opt/aj-nested/policy.toml <<'EOF'
version = 1
name = \"deep-bind\"
[filesystem]
read_only = [\"/usr\", \"/bin\", \"/lib\", \"/lib64\", \"/opt/aj-nested/py312\"]
optional = [\"/lib64\"]
EOF
";
    let code = "print(open('/opt/aj-nested/py312/lib/marker.txt').read().strip())";
    for who in variants() {
        let (rc, out, err) = in_layout(
            who,
            setup,
            &[
                "exec",
                "--policy",
                "/opt/aj-nested/policy.toml",
                "--",
                PY,
                "-I",
                "-S",
                "-c",
                code,
            ],
            b"",
        );
        assert_eq!(rc, 0, "{who:?}: {out}\n{err}");
        assert_eq!(out.trim(), "from the deep bind", "{who:?}: {err}");
    }
}

#[test]
fn a_masked_proc_fails_closed_with_the_containers_fix() {
    if !can_build_layouts() {
        return;
    }
    // What Docker, containerd and Kubernetes do by default: files over /proc entries.
    let setup = "set -e
mount --bind /dev/null /proc/keys
mount --bind /dev/null /proc/timer_list
";
    for who in variants() {
        let (code, out, err) = in_layout(who, setup, &["run", "-"], &seed_action());
        let r: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
        assert_eq!(code, 1, "{who:?}: {r:#}");
        assert_eq!(
            r["stop_reason"], "sandbox_unavailable:setup",
            "{who:?}: {r:#}"
        );
        assert!(r.get("output").is_none(), "{who:?}: it ran: {r:#}");
        let hint = r["error"]["hint"].as_str().unwrap_or_default();
        assert!(hint.contains("hides parts of /proc"), "{who:?}: {hint}");
        assert!(hint.contains("/proc/keys"), "{who:?}: {hint}");
        assert!(
            hint.contains("never binds the host's /proc"),
            "{who:?}: {hint}"
        );
        assert!(
            r["error"]["stage"]
                .as_str()
                .unwrap_or_default()
                .contains("proc"),
            "{who:?}: {r:#}"
        );

        // doctor: the probe jail fails, and says why and what to change.
        let (code, out, err) = in_layout(who, setup, &["doctor", "--json"], b"");
        assert_eq!(
            code, 1,
            "{who:?}: doctor must not say all is well: {out}\n{err}"
        );
        let d: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(d["all_required_ok"], false);
        let probe = probe_check(&d);
        assert_eq!(probe["available"], false, "{probe}");
        assert!(
            probe["fix"].as_str().unwrap_or_default().contains("/proc"),
            "{probe}"
        );
    }
}

#[test]
fn doctor_runs_a_probe_jail_on_the_gpu_node_layout() {
    if !can_build_layouts() {
        return;
    }
    for who in variants() {
        let (code, out, err) = in_layout(who, &gpu_layout(), &["doctor", "--json"], b"");
        let d: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
        let probe = probe_check(&d);
        assert_eq!(probe["available"], true, "{who:?}: {probe}");
        assert_eq!(
            code,
            i32::from(d["all_required_ok"] != true),
            "{who:?}: {d:#}"
        );
    }
}

#[test]
fn a_missing_bind_source_is_a_clear_error_before_any_jail() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("p.toml");
    std::fs::write(
        &policy,
        "version = 1\nname = \"missing\"\n[filesystem]\nread_only = [\"/usr\", \"/aj-no-such-dir\"]\n",
    )
    .unwrap();
    let out = Command::new(agentjail_path())
        .args([
            "exec",
            "--policy",
            policy.to_str().unwrap(),
            "--",
            PY,
            "-c",
            "pass",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(err.contains("/aj-no-such-dir"), "{err}");
    assert!(err.contains("filesystem.optional"), "{err}");
}
