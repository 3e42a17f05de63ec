//! The compile cache through `agentjail run --cache DIR` (crate::pipeline::compile_cache),
//! as root and as nobody: a second job of the same program under the same policy runs the
//! stored compiler output (`compile.cached`), with its own stdin and its own run; a compile
//! error is answered as the compiler gave it; one changed byte is a new compile; a stop of
//! the compiler by the supervisor is never stored.

use crate::common::{run_as, variants, RunRecord, Who};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;

const SUM: &str = "#include <stdio.h>\nint main(void){long a,b;if(scanf(\"%ld %ld\",&a,&b)!=2)return 2;printf(\"%ld\\n\",a+b);return 0;}\n";
const BROKEN: &str = "int main(void){ return undefined_name; }\n";

fn run(who: Who, policy: &str, cache: &str, code: &str, stdin: &str) -> RunRecord {
    run_in(who, policy, cache, ("c", "main.c", code), stdin)
}

fn run_in(
    who: Who,
    policy: &str,
    cache: &str,
    (language, entrypoint, code): (&str, &str, &str),
    stdin: &str,
) -> RunRecord {
    let action = serde_json::to_vec(&json!({
        "id": "cc", "language": language, "entrypoint": entrypoint, "code": code,
        "stdin": stdin, "output_mode": "text",
    }))
    .unwrap();
    run_as(who, &["--policy", policy, "--cache", cache], &action, None)
}

fn cached(r: &RunRecord) -> bool {
    r.record["compile"]["cached"]
        .as_bool()
        .unwrap_or_else(|| panic!("no compile.cached: {}", r.record))
}

/// A directory `who` owns (the cache is created in it, 0700, by agentjail as `who`).
fn cache_dir(who: Who) -> (tempfile::TempDir, String) {
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    if who == Who::Nobody {
        let p = std::ffi::CString::new(d.path().to_str().unwrap()).unwrap();
        // SAFETY: a valid C string; chown has no memory effects.
        assert_eq!(unsafe { libc::chown(p.as_ptr(), 65534, 65534) }, 0);
    }
    let cache = d.path().join("cache").to_str().unwrap().to_string();
    (d, cache)
}

#[test]
fn a_second_job_of_the_same_program_runs_the_stored_compile_with_its_own_input() {
    let policy =
        crate::common::shared_file("judge-cc.toml", include_str!("../../policies/judge.toml"));
    let policy = policy.to_str().unwrap();
    for who in variants() {
        let (_d, cache) = cache_dir(who);
        let first = run(who, policy, &cache, SUM, "1 2\n");
        assert_eq!(first.stop_reason(), "success", "{who:?}: {}", first.record);
        assert!(!cached(&first), "{who:?}: nothing stored yet");
        let second = run(who, policy, &cache, SUM, "40 2\n");
        assert_eq!(
            second.stop_reason(),
            "success",
            "{who:?}: {}",
            second.record
        );
        assert!(cached(&second), "{who:?}: {}", second.record);
        assert_eq!(
            second.record["execution"]["stdout"], "42\n",
            "{who:?}: its own run"
        );
        assert_eq!(
            first.record["compile"]["outputs"], second.record["compile"]["outputs"],
            "{who:?}: the same artifact, by its sha256"
        );
        // One changed byte: another program, compiled for itself.
        let other = run(who, policy, &cache, &SUM.replace("a+b", "a-b"), "40 2\n");
        assert!(!cached(&other), "{who:?}: {}", other.record);
        assert_eq!(other.record["execution"]["stdout"], "38\n");
        // A compile error is the compiler's own outcome: stored, answered the same.
        // (Different stdin: the result cache, keyed by the whole action, misses.)
        let e1 = run(who, policy, &cache, BROKEN, "1\n");
        let e2 = run(who, policy, &cache, BROKEN, "2\n");
        for (e, was) in [(&e1, false), (&e2, true)] {
            assert_eq!(e.stop_reason(), "compile_error", "{who:?}: {}", e.record);
            assert_eq!(cached(e), was, "{who:?}: {}", e.record);
            assert!(e.record.get("execution").is_none(), "{who:?}: nothing ran");
        }
        assert_eq!(
            e1.record["compile"]["stderr"],
            e2.record["compile"]["stderr"]
        );
        assert!(e2.record["compile"]["stderr"]
            .as_str()
            .unwrap()
            .contains("undefined_name"));
    }
}

#[test]
fn a_compile_the_supervisor_stopped_is_never_stored() {
    // A compile CPU limit of 100 ms (the least a policy may give) and all of the standard
    // library's headers (over a second of CPU for g++): stopped by the supervisor every time.
    let text = include_str!("../../policies/judge.toml");
    let marker = "[languages.cpp.compile_limits]\n";
    assert!(
        text.contains(marker),
        "judge.toml has [languages.cpp.compile_limits]"
    );
    let text = text.replace(marker, &format!("{marker}cpu_time_ms = 100\n"));
    let text = dedupe_cpu(&text);
    let policy = crate::common::shared_file("judge-cc-slow.toml", &text);
    let policy = policy.to_str().unwrap();
    for who in variants() {
        let (_d, cache) = cache_dir(who);
        for stdin in ["1\n", "2\n"] {
            let code = (
                "cpp",
                "main.cpp",
                "#include <bits/stdc++.h>\nint main(){}\n",
            );
            let r = run_in(who, policy, &cache, code, stdin);
            assert_eq!(r.stop_reason(), "compile_timeout", "{who:?}: {}", r.record);
            assert!(!cached(&r), "{who:?}: a stopped compile is not stored");
        }
    }
}

/// judge.toml may already give `cpu_time_ms` in the table: keep only the first (ours).
fn dedupe_cpu(text: &str) -> String {
    let mut seen = false;
    let mut in_table = false;
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with('[') {
            in_table = line == "[languages.cpp.compile_limits]";
        }
        if in_table && line.trim_start().starts_with("cpu_time_ms") {
            if seen {
                continue;
            }
            seen = true;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}
