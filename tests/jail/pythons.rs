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
//! Also, on a layout of its own (a stand-in interpreter built with cc under /opt): an
//! interpreter whose libraries are outside the binds is refused at load, and one whose
//! library is nowhere on the host stops at run time as `sandbox_unavailable:interpreter`.
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
    let text = agentjail_engine::policy::DEFAULT_POLICY_TOML
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
                if agentjail_engine::policy::load_default()
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
        let before = agentjail_temp_entries(not_harness);
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
            agentjail_temp_entries(not_harness),
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

/// An interpreter that cannot start in the jail because a library it loads is outside the
/// policy's binds is refused when the policy loads, by the library's name, its host path and
/// the bind to add, instead of failing in every jail as the program's exit 127. The layout
/// is made here: a stand-in `python3.11` (an ELF built with cc, with the standard library
/// landmark beside it) whose RUNPATH is `$ORIGIN/../lib`, where `libajone.so` is, which
/// in turn needs `libajtwo.so` from a directory only its own RUNPATH names. As root and as
/// nobody; binding each missing directory moves the refusal on, then the policy loads.
#[test]
fn an_interpreter_whose_libraries_are_outside_the_binds_is_refused_at_load() {
    use std::os::unix::fs::PermissionsExt;
    if !require_feature(
        "a C compiler (cc)",
        std::process::Command::new("cc")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
    ) {
        return;
    }
    if !is_root() {
        eprintln!("SKIPPED: needs root for a layout under /opt (binds under /tmp are refused)");
        return;
    }
    // Under /opt: the policy refuses binds under /tmp (the jail builds its own /tmp).
    let t = tempfile::Builder::new()
        .prefix("agentjail-elfdeps-")
        .tempdir_in("/opt")
        .expect("tempdir");
    let root = t.path();
    let prefix = root.join("py");
    let hidden = root.join("hidden");
    for d in [
        root.to_path_buf(),
        prefix.join("bin"),
        prefix.join("lib/python3.11"),
        hidden.clone(),
    ] {
        std::fs::create_dir_all(&d).unwrap();
    }
    std::fs::write(prefix.join("lib/python3.11/os.py"), "").unwrap();
    let cc = |args: &[&str]| {
        let out = std::process::Command::new("cc")
            .args(args)
            .output()
            .expect("cc");
        assert!(
            out.status.success(),
            "cc {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let src = root.join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("two.c"), "int ajtwo(void) { return 2; }\n").unwrap();
    std::fs::write(
        src.join("one.c"),
        "int ajtwo(void);\nint ajone(void) { return ajtwo(); }\n",
    )
    .unwrap();
    std::fs::write(
        src.join("main.c"),
        "int ajone(void);\nint main(void) { return ajone(); }\n",
    )
    .unwrap();
    let s = |p: &std::path::Path| p.display().to_string();
    let lib = prefix.join("lib");
    cc(&[
        "-shared",
        "-fPIC",
        "-o",
        &s(&hidden.join("libajtwo.so")),
        &s(&src.join("two.c")),
    ]);
    cc(&[
        "-shared",
        "-fPIC",
        "-o",
        &s(&lib.join("libajone.so")),
        &s(&src.join("one.c")),
        "-L",
        &s(&hidden),
        "-lajtwo",
        "-Wl,--enable-new-dtags",
        &format!("-Wl,-rpath,{}", s(&hidden)),
    ]);
    cc(&[
        "-o",
        &s(&prefix.join("bin/python3.11")),
        &s(&src.join("main.c")),
        "-L",
        &s(&lib),
        "-lajone",
        "-Wl,--enable-new-dtags",
        "-Wl,-rpath,$ORIGIN/../lib",
    ]);
    for d in walk_dirs(root) {
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let py = s(&prefix.join("bin/python3.11"));
    let policy = |tag: &str, binds: &[String]| {
        let list: Vec<String> = binds.iter().map(|b| format!("{b:?}")).collect();
        let text = agentjail_engine::policy::DEFAULT_POLICY_TOML
            .replace("python = \"/usr/bin/python3\"", &format!("python = {py:?}"))
            .replace(
                "read_only = [\"/usr\"",
                &format!("read_only = [{}, \"/usr\"", list.join(", ")),
            );
        assert!(text.contains(&py));
        let name = format!("elfdeps-{tag}.toml");
        shared_file(&name, &text).display().to_string()
    };
    let show = |who: Who, policy: &str| {
        let mut c = match who {
            Who::Nobody => {
                let mut c = std::process::Command::new("/usr/bin/setpriv");
                c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
                c.arg(agentjail_path());
                c
            }
            _ => std::process::Command::new(agentjail_path()),
        };
        let out = c
            .args(["policy", "show", policy])
            .current_dir("/")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("policy show");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // Only bin/ and the standard library bound: libajone.so (in lib/) is missing.
    let only_bin = policy(
        "bin",
        &[s(&prefix.join("bin")), s(&prefix.join("lib/python3.11"))],
    );
    // The prefix bound: libajtwo.so (in hidden/) is missing.
    let prefix_only = policy("prefix", &[s(&prefix)]);
    let all = policy("all", &[s(&prefix), s(&hidden)]);
    for who in variants() {
        let (code, err) = show(who, &only_bin);
        assert_eq!(code, Some(2), "{who:?}: {err}");
        assert!(
            err.contains("cannot start in the jail")
                && err.contains("libajone.so")
                && err.contains(&format!("on the host at {}", s(&lib.join("libajone.so"))))
                && err.contains(&format!("add \"{}\" to filesystem.read_only", s(&lib))),
            "{who:?}: names the library, its host path and the bind: {err}"
        );
        let (code, err) = show(who, &prefix_only);
        assert_eq!(code, Some(2), "{who:?}: {err}");
        assert!(
            err.contains("libajtwo.so")
                && err.contains(&format!(
                    "on the host at {}",
                    s(&hidden.join("libajtwo.so"))
                ))
                && err.contains(&format!("add \"{}\" to filesystem.read_only", s(&hidden))),
            "{who:?}: the library's own needs are followed: {err}"
        );
        let (code, err) = show(who, &all);
        assert_eq!(code, Some(0), "{who:?}: everything bound loads: {err}");
    }

    // What the loader cannot find on the host (here a library removed after linking; on a
    // host, one only the ld.so cache names) is left to the run: the interpreter exits 127
    // with ld.so's message before the runner is ready, and the record says the jail could
    // not start it (`sandbox_unavailable:interpreter`), not that the agent's code failed.
    let gone = root.join("gone");
    let gone_lib = root.join("gonelib");
    for d in [
        gone.join("bin"),
        gone.join("lib/python3.11"),
        gone_lib.clone(),
    ] {
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&gone, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(gone.join("lib"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(gone.join("lib/python3.11/os.py"), "").unwrap();
    cc(&[
        "-shared",
        "-fPIC",
        "-o",
        &s(&gone_lib.join("libajgone.so")),
        &s(&src.join("two.c")),
    ]);
    std::fs::write(
        src.join("gone.c"),
        "int ajtwo(void);\nint main(void) { return ajtwo(); }\n",
    )
    .unwrap();
    cc(&[
        "-o",
        &s(&gone.join("bin/python3.11")),
        &s(&src.join("gone.c")),
        "-L",
        &s(&gone_lib),
        "-lajgone",
        "-Wl,--enable-new-dtags",
        &format!("-Wl,-rpath,{}", s(&gone_lib)),
    ]);
    std::fs::remove_file(gone_lib.join("libajgone.so")).unwrap();
    let text = agentjail_engine::policy::DEFAULT_POLICY_TOML
        .replace(
            "python = \"/usr/bin/python3\"",
            &format!("python = {:?}", s(&gone.join("bin/python3.11"))),
        )
        .replace(
            "read_only = [\"/usr\"",
            &format!("read_only = [{:?}, \"/usr\"", s(&gone)),
        );
    let gone_policy = shared_file("elfdeps-gone.toml", &text)
        .display()
        .to_string();
    let a = serde_json::to_vec(&action_json(
        "print('{}')\n",
        serde_json::json!({"id": "elfdeps", "input_payload": {}}),
    ))
    .expect("json");
    for who in variants() {
        let rec = run_as(who, &["--policy", &gone_policy], &a, None);
        assert_eq!(
            rec.stop_reason(),
            "sandbox_unavailable:interpreter",
            "{who:?}: {:#}",
            rec.record
        );
        let detail = rec.record["error"]["detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains("libajgone.so") && detail.contains("exit 127"),
            "{who:?}: names the library: {:#}",
            rec.record
        );
    }
}

/// Every directory beneath `root`, `root` included.
fn walk_dirs(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![root.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        if let Ok(rd) = std::fs::read_dir(&out[i]) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    out.push(e.path());
                }
            }
        }
        i += 1;
    }
    out
}
