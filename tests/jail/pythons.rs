//! agentjail on any host Python 3.10 to 3.13: the pyenv builds, copied to
//! /opt/agentjail-py/3.N by scripts/setup-pythons.sh (scripts/test.sh runs it first), each
//! bound read-only into the jail by the embedded default policy with its interpreter and
//! prefix swapped in. For each version, launched as root and as nobody: the version is
//! detected from the interpreter and recorded with how; the seed job gives the seed's
//! numbers; the check parses for that version (syntax newer than it is refused, syntax it
//! has is judged by the rules); and the jail holds against the attacks that concern the
//! interpreter's own files (its prefix is read-only, the host beside it unreachable).
//! scripts/test.sh also runs the Python escape tests (tests/jail: python_attacks, twins) under 3.12.
//!
//! Under CI=true a missing copy fails; elsewhere it is a loud skip.

use crate::common::python::opt_python;
use crate::common::*;

const VERSIONS: [&str; 4] = ["3.10", "3.11", "3.12", "3.13"];

/// The default policy for the copy of `version`, in the directory nobody can read; `None`
/// (a loud skip, a failure under CI) when scripts/setup-pythons.sh has not made the copy.
fn policy_for(version: &str) -> Option<String> {
    let Some(exe) = opt_python(version) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "/opt/agentjail-py/{version} is missing: run scripts/setup-pythons.sh"
        );
        eprintln!(
            "\n!!!!!!!! SKIPPED Python {version}: no /opt/agentjail-py/{version} (scripts/setup-pythons.sh) !!!!!!!!\n"
        );
        return None;
    };
    let prefix = exe.parent().and_then(|b| b.parent()).expect("prefix");
    let text = agentjail::policy::DEFAULT_POLICY_TOML
        .replace(
            "python = \"/usr/bin/python3\"",
            &format!("python = \"{}/bin/python3\"", prefix.display()),
        )
        .replace(
            "read_only = [\"/usr\"",
            &format!("read_only = [\"{}\", \"/usr\"", prefix.display()),
        );
    assert!(text.contains(&format!("{}/bin/python3", prefix.display())));
    let path = shared_file(&format!("python-{version}.toml"), &text);
    Some(path.display().to_string())
}

fn action(code: &str, payload: serde_json::Value) -> Vec<u8> {
    let extra = serde_json::json!({"id": "pyver", "input_payload": payload});
    serde_json::to_vec(&action_json(code, extra)).expect("json")
}

#[test]
fn each_python_runs_the_seed_job() {
    let seed = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/incident/action.json"
    ))
    .expect("the seed action");
    for version in VERSIONS {
        let Some(policy) = policy_for(version) else {
            continue;
        };
        for who in variants() {
            let r = run_as(who, &["--policy", &policy], &seed, None);
            let rec = &r.record;
            assert_eq!(r.code, 0, "{version} {who:?}: {rec:#}\n{}", r.stderr);
            assert_eq!(
                rec["output"]["incident_severity"], "P1",
                "{version} {who:?}"
            );
            assert_eq!(rec["output"]["sample_size"], 60, "{version} {who:?}");
            let env = &rec["environment"];
            assert_eq!(env["python_version"], version, "{env:#}");
            let source = env["python_version_source"].as_str().unwrap_or("");
            assert!(
                source.contains(&format!(
                    "/opt/agentjail-py/{version}/bin/python3 -> python{version}"
                )),
                "{source}"
            );
            assert_eq!(
                env["resolved"],
                format!("/opt/agentjail-py/{version}/bin/python{version}")
            );
            assert_eq!(
                env["import_roots"][0],
                format!("/opt/agentjail-py/{version}/lib/python{version}")
            );
        }
    }
}

/// The check parses for the detected version: a `type` statement (PEP 695, 3.12) is a
/// syntax error for 3.10 and 3.11 and runs on 3.12 and 3.13; a denied import is denied on
/// every version; and the program really runs on the version the record names.
#[test]
fn each_python_is_checked_for_its_own_grammar() {
    for version in VERSIONS {
        let Some(policy) = policy_for(version) else {
            continue;
        };
        let who = variants()[0];
        let pep695 = "type Pair = tuple[int, int]\nprint('{\"ok\": true}')";
        let r = run_as(
            who,
            &["--policy", &policy],
            &action(pep695, serde_json::json!({})),
            None,
        );
        let newer = matches!(version, "3.12" | "3.13");
        if newer {
            assert_eq!(r.stop_reason(), "success", "{version}: {:#}", r.record);
        } else {
            assert_eq!(
                r.stop_reason(),
                "policy_block:static_policy_violation:syntax_error",
                "{version}: {:#}",
                r.record
            );
        }
        let r = run_as(
            who,
            &["--policy", &policy],
            &action("import os\nprint('{}')", serde_json::json!({})),
            None,
        );
        assert_eq!(
            r.stop_reason(),
            "policy_block:static_policy_violation:import_not_allowed:os",
            "{version}: {:#}",
            r.record
        );
        // What runs is that version: statistics tells (fmean's weights are 3.11+).
        let code = "import json, statistics\nok = True\ntry:\n    statistics.fmean([1, 2], weights=[1, 1])\nexcept TypeError:\n    ok = False\nprint(json.dumps({'weights': ok}))";
        let r = run_as(
            who,
            &["--policy", &policy],
            &action(code, serde_json::json!({})),
            None,
        );
        assert_eq!(r.stop_reason(), "success", "{version}: {:#}", r.record);
        assert_eq!(
            r.record["output"]["weights"],
            version != "3.10",
            "{version}: {:#}",
            r.record
        );
    }
}

/// The interpreter's own files are bound read-only, and the bind exposes nothing of the
/// host beside them (exec'd directly, past the check, as every escape test is).
#[test]
fn each_python_prefix_is_read_only_and_alone() {
    for version in VERSIONS {
        let Some(policy) = policy_for(version) else {
            continue;
        };
        let exe = format!("/opt/agentjail-py/{version}/bin/python3");
        let body = format!(
            r#"
import os
print("START", flush=True)
def attempt(label, f):
    try:
        f()
        print("BREACH", label, flush=True)
    except OSError as e:
        print("BLOCKED", label, type(e).__name__, e.errno, flush=True)
lib = "/opt/agentjail-py/{version}/lib/python{version}"
attempt("write the stdlib", lambda: open(lib + "/json/__init__.py", "a").write("x"))
attempt("create in the stdlib", lambda: open(lib + "/sitecustomize.py", "x"))
attempt("chmod the binary", lambda: os.chmod("/opt/agentjail-py/{version}/bin/python{version}", 0o777))
attempt("rename the prefix", lambda: os.rename("/opt/agentjail-py/{version}", "/opt/x"))
attempt("write beside the prefix", lambda: open("/opt/agentjail-py/evil", "x"))
attempt("list another version", lambda: os.listdir("/opt/agentjail-py/3.11" if "{version}" != "3.11" else "/opt/agentjail-py/3.12"))
attempt("reach pyenv", lambda: os.listdir("/root/.pyenv"))
opt = sorted(os.listdir("/opt"))
print("BLOCKED opt" if opt == ["agentjail-py"] else "BREACH opt %r" % opt, flush=True)
"#
        );
        for who in variants() {
            let r = jail(
                who,
                &["--policy", &policy, "--time-limit", "5"],
                &[&exe, "-I", "-S", "-c", &body],
            );
            r.assert_blocked("START");
            assert_eq!(
                r.stdout.matches("BLOCKED").count(),
                8,
                "{version} {who:?}: {r:#?}"
            );
        }
    }
}

/// An interpreter that is not Python, or a version the policy pins wrongly, is refused when
/// the policy loads: exit 2, the reason and the fix on stderr, an error record stopped at
/// the plan, and nothing started or left behind (no jail, no temporary file), as root and as nobody.
#[test]
fn what_is_not_the_python_it_claims_is_refused_at_load() {
    let cases = [
        // An ELF binary whose name says nothing of Python.
        (
            "python = \"/usr/bin/sh\"\n".to_string(),
            "not a Python interpreter",
        ),
        // A script (python3-config is a shell script on Debian).
        (
            "python = \"/usr/bin/python3-config\"\n".to_string(),
            "not an ELF executable",
        ),
        // A pinned version that is not the interpreter's.
        (
            format!(
                "python_version = \"{}\"\n",
                if agentjail::policy::load_default()
                    .expect("default")
                    .policy
                    .python_version()
                    == "3.12"
                {
                    "3.13"
                } else {
                    "3.12"
                }
            ),
            "but /usr/bin/python3 is Python",
        ),
        // A version the checker has no tables for.
        (
            "python_version = \"3.9\"\n".to_string(),
            "module tables for Python 3.10, 3.11, 3.12, 3.13 only",
        ),
    ];
    let seed = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/incident/action.json"
    ))
    .expect("the seed action");
    for (i, (line, why)) in cases.iter().enumerate() {
        let text = format!("version = 1\n[interpreter]\n{line}");
        let policy = shared_file(&format!("not-python-{i}.toml"), &text);
        let policy = policy.to_str().expect("utf-8 path");
        let before = agentjail_temp_entries(|_| true);
        for who in variants() {
            let mut c = match who {
                Who::Nobody => {
                    let mut c = std::process::Command::new("/usr/bin/setpriv");
                    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
                    c.arg(agentjail_path());
                    c
                }
                _ => std::process::Command::new(agentjail_path()),
            };
            let mut child = c
                .args(["run", "--policy", policy, "-"])
                .current_dir("/")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn agentjail");
            use std::io::Write;
            let _ = child.stdin.take().expect("stdin").write_all(&seed);
            let out = child.wait_with_output().expect("wait");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{who:?} {line}: {err}");
            assert!(
                err.contains(why) && err.contains("hint:"),
                "{who:?} {line}: {err}"
            );
            // `run` answers with its error record: stopped at the plan, nothing ran.
            let rec: serde_json::Value =
                serde_json::from_slice(&out.stdout).expect("an error record");
            assert_eq!(rec["stop_reason"], "agentjail_error:policy", "{rec:#}");
            assert_eq!(rec["phase"], "plan", "{rec:#}");
        }
        let out = std::process::Command::new(agentjail_path())
            .args(["policy", "show", policy])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("policy show");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "policy show {line}: {err}");
        assert!(err.contains(why), "{err}");
        assert_eq!(
            agentjail_temp_entries(|_| true),
            before,
            "{line}: left temporary files"
        );
    }
}

/// A host where the embedded default's /usr/bin/python3 is not a Python agentjail can use
/// (here its standard library hidden by a tmpfs in a private mount namespace): `run` refuses
/// with exit 2 and the reason, and `doctor` still reports every host check and adds a failed
/// `policy` check saying why (exit 1), so a broken interpreter is diagnosed, not a crash.
#[test]
fn a_host_without_a_usable_python3_is_diagnosed() {
    if !is_root() {
        eprintln!("SKIPPED: needs root for a private mount namespace");
        return;
    }
    let stdlib = std::fs::canonicalize(PY)
        .ok()
        .and_then(|p| {
            p.file_name()
                .map(|n| format!("/usr/lib/{}", n.to_string_lossy()))
        })
        .expect("the host's python3");
    let aj = agentjail_path().display().to_string();
    let script = format!(
        "mount --make-rprivate / && mount -t tmpfs none {stdlib} && \
         {aj} doctor --json; echo \"doctor-rc=$?\"; {aj} policy show >/dev/null 2>&1; echo \"show-rc=$?\""
    );
    let out = std::process::Command::new("/usr/bin/unshare")
        .args(["-m", "/bin/sh", "-c", &script])
        .output()
        .expect("unshare");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("doctor-rc=1"), "{stdout}");
    assert!(stdout.contains("show-rc=2"), "{stdout}");
    let json = &stdout[..stdout.find("doctor-rc=").expect("rc line")];
    let report: serde_json::Value = serde_json::from_str(json).expect("doctor's JSON");
    let checks = report["checks"].as_array().expect("checks");
    let policy = checks
        .iter()
        .find(|c| c["control"] == "policy")
        .expect("a policy check");
    assert_eq!(policy["available"], false, "{policy:#}");
    let detail = policy["detail"].as_str().unwrap_or("");
    assert!(detail.contains("standard library"), "{detail}");
    assert!(
        checks
            .iter()
            .any(|c| c["control"] == "cgroup_v2" || c["control"] == "landlock"),
        "the host checks are still there: {checks:#?}"
    );
}
