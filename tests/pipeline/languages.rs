//! The languages with a toolchain (`[languages.<lang>]`): a compile step in a jail of its
//! own, then the run jail with only its output, under policies/judge.toml, through the real
//! binary, as root and as nobody. Each test makes few jails and checks several things in
//! each (a compile costs a second or more on a loaded host).

use crate::common::{run_as, shared_file, variants, RunRecord, Who};
use serde_json::{json, Value};

/// policies/judge.toml, readable by nobody; `edit` applied to its text first.
fn judge(edit: impl Fn(String) -> String) -> String {
    let text = include_str!("../../policies/judge.toml");
    let text = edit(text.to_string());
    let name = format!("judge-lang-{}.toml", text.len());
    shared_file(&name, &text).to_str().unwrap().to_string()
}

fn action(language: &str, entrypoint: &str, code: &str, stdin: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "id": "lang", "language": language, "entrypoint": entrypoint, "code": code,
        "stdin": stdin, "output_mode": "text",
    }))
    .unwrap()
}

fn run(who: Who, policy: &str, language: &str, code: &str, stdin: &str) -> RunRecord {
    let entry = match language {
        "c" => "main.c",
        "cpp" => "main.cpp",
        "java" => "Main.java",
        "go" => "main.go",
        "rust" => "main.rs",
        "javascript" => "main.js",
        _ => "main.sh",
    };
    run_as(
        who,
        &["--policy", policy],
        &action(language, entry, code, stdin),
        None,
    )
}

fn stop(who: Who, r: &RunRecord, reason: &str) {
    assert_eq!(r.stop_reason(), reason, "{who:?}: {}", r.record);
}

fn compile(r: &RunRecord) -> &Value {
    &r.record["compile"]
}

/// What the run jail holds: stdin as usual, /app/bin with only the artifact, no source,
/// nothing writable there, and a copy of the program in /tmp does not execute (noexec):
/// exactly the artifact is executable.
const VIEW_CPP: &str = r#"#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <iostream>
#include <string>
#include <unistd.h>
int main() {
    std::string line;
    std::getline(std::cin, line);
    std::cout << "read:" << line << "\n";
    std::string names;
    if (DIR* d = opendir("/app/bin")) {
        while (auto* e = readdir(d)) {
            std::string n = e->d_name;
            if (n != "." && n != "..") names += n + ",";
        }
    }
    std::cout << "bin:" << names << "\n";
    std::cout << "source:" << (access("/app/main.cpp", F_OK) == 0 ? "present" : "absent") << "\n";
    int fd = open("/app/bin/main", O_WRONLY);
    std::cout << "write_bin:" << (fd < 0 ? strerror(errno) : "opened") << "\n";
    int fd2 = open("/app/bin/other", O_WRONLY | O_CREAT, 0755);
    std::cout << "create_bin:" << (fd2 < 0 ? strerror(errno) : "created") << "\n";
    int in = open("/proc/self/exe", O_RDONLY);
    int out = open("/tmp/copy", O_WRONLY | O_CREAT, 0755);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0) {
        if (write(out, buf, n) != n) break;
    }
    close(out);
    char* argv[] = {(char*)"/tmp/copy", nullptr};
    execv("/tmp/copy", argv);
    std::cout << "exec_tmp:" << strerror(errno) << "\n";
    return 0;
}
"#;

const SUM_C: &str = "#include <stdio.h>\n#include <math.h>\nint main(void){long a,b;if(scanf(\"%ld %ld\",&a,&b)!=2)return 2;printf(\"%ld %.1f\\n\",a+b,sqrt(16.0));return 0;}\n";

#[test]
fn c_and_cpp_compile_then_run_with_stdin_and_only_the_artifact() {
    let policy = judge(|t| t);
    for who in variants() {
        let r = run(who, &policy, "c", SUM_C, "40 2\n");
        stop(who, &r, "success");
        assert_eq!(r.record["execution"]["stdout"], "42 4.0\n", "{who:?}");
        let c = compile(&r);
        assert_eq!(
            (
                c["status"].as_str(),
                c["language"].as_str(),
                c["exit_code"].as_i64()
            ),
            (Some("ok"), Some("c"), Some(0)),
            "{who:?}: {c}"
        );
        // The loader resolved gcc's link and read its version from files.
        let path = c["toolchain"]["path"].as_str().unwrap();
        assert!(path.starts_with("/usr/bin/") && path.contains("gcc"), "{c}");
        assert_ne!(c["toolchain"]["version"], "unknown", "{c}");
        assert_eq!(c["argv"][0], c["toolchain"]["path"], "{c}");
        assert!(c["argv"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "/app/main.c"));
        assert_eq!(r.record["decision"]["reason"], "not_checked", "{who:?}");
        assert_eq!(r.record["environment"]["language"], "c");

        let r = run(who, &policy, "cpp", VIEW_CPP, "hello\n");
        stop(who, &r, "success");
        assert_eq!(
            r.record["execution"]["stdout"],
            "read:hello\nbin:main,\nsource:absent\nwrite_bin:Read-only file system\n\
             create_bin:Read-only file system\nexec_tmp:Permission denied\n",
            "{who:?}: {}",
            r.record
        );
        let outputs = compile(&r)["outputs"].as_array().unwrap().clone();
        assert_eq!(outputs.len(), 1, "{outputs:?}");
        assert_eq!(outputs[0]["path"], "main");
    }
}

#[test]
fn a_compile_error_is_the_compilers_message_and_nothing_runs() {
    let policy = judge(|t| t);
    for who in variants() {
        let r = run(who, &policy, "cpp", "int main() { return x; }\n", "");
        stop(who, &r, "compile_error");
        assert_eq!(r.record["phase"], "execute");
        assert!(r.record.get("execution").is_none(), "{}", r.record);
        let c = compile(&r);
        assert_eq!(c["status"], "compile_error");
        assert_eq!(c["exit_code"], 1);
        let stderr = c["stderr"].as_str().unwrap();
        assert!(
            stderr.contains("/app/main.cpp:1:21: error:") && stderr.contains("was not declared"),
            "{who:?}: {stderr}"
        );
        // The compiler reads host secrets no better than the program: the jail's /etc is
        // synthesized.
        let r = run(
            who,
            &policy,
            "c",
            "#include \"/etc/shadow\"\nint main(void){return 0;}\n",
            "",
        );
        stop(who, &r, "compile_error");
        let stderr = compile(&r)["stderr"].as_str().unwrap().to_string();
        assert!(
            stderr.contains("/etc/shadow: No such file or directory"),
            "{who:?}: {stderr}"
        );
    }
}

/// A constexpr loop the compiler evaluates for minutes: the compile's own wall limit ends it.
const CONSTEXPR_BOMB: &str = "constexpr long f(long n){long s=0;for(long i=0;i<n;i++)for(long j=0;j<n;j++)s+=i^j;return s;}\nconstexpr long x=f(200000);\nint main(){return (int)x;}\n";

#[test]
fn a_compile_is_bounded_by_its_own_limits() {
    let policy = judge(|t| {
        t.replacen(
            "[languages.cpp.compile_limits]\nwall_time_ms = 10000\ncpu_time_ms = 10000",
            "[languages.cpp.compile_limits]\nwall_time_ms = 1500\ncpu_time_ms = 1500",
            1,
        )
    });
    // The memory case under judge.toml's own 10 s: on a loaded host 1.5 s may end it first.
    let judge_policy = judge(|t| t);
    for who in variants() {
        let r = run(who, &policy, "cpp", CONSTEXPR_BOMB, "");
        stop(who, &r, "compile_timeout");
        let c = compile(&r);
        assert_eq!(c["status"], "compile_timeout", "{c}");
        assert!(r.record.get("execution").is_none());
        // Never before the limit (the compile's clock counts from its delivery).
        assert!(
            c["wall_ms"].as_u64().unwrap() >= 1000 || c["cpu_ms"].as_u64().unwrap() >= 1000,
            "{c}"
        );
        // `#include </dev/zero>`: the preprocessor reads until the memory limit. With a
        // memory cgroup (root) the kernel's OOM kill is the evidence; without one (nobody)
        // RLIMIT_AS makes the allocation fail and the compiler exits 1 on its own.
        let r = run(
            who,
            &judge_policy,
            "cpp",
            "#include </dev/zero>\nint main(){}\n",
            "",
        );
        match who {
            Who::Nobody => {
                stop(who, &r, "compile_error");
                assert!(
                    compile(&r)["stderr"]
                        .as_str()
                        .unwrap()
                        .contains("out of memory"),
                    "{}",
                    r.record
                );
            }
            _ => stop(who, &r, "compile_memory_limit"),
        }
        assert!(r.record.get("execution").is_none());
    }
}

#[test]
fn java_go_rust_javascript_and_bash_read_stdin_under_judge() {
    let policy = judge(|t| t);
    let programs = [
        (
            "java",
            "import java.io.*;\nimport java.util.*;\npublic class Main { public static void main(String[] a) throws IOException { BufferedReader r = new BufferedReader(new InputStreamReader(System.in)); StringTokenizer t = new StringTokenizer(r.readLine()); System.out.println(Long.parseLong(t.nextToken()) + Long.parseLong(t.nextToken())); } }\n",
            "17.",
        ),
        (
            "go",
            "package main\nimport \"fmt\"\nfunc main() { var a, b int; fmt.Scan(&a, &b); fmt.Println(a + b) }\n",
            "go1.",
        ),
        (
            "rust",
            "use std::io::Read;\nfn main() { let mut s = String::new(); std::io::stdin().read_to_string(&mut s).unwrap(); let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect(); println!(\"{}\", v[0] + v[1]); }\n",
            "1.",
        ),
        // node through its runner (no compile step, no toolchain version): stdin as judges read it.
        (
            "javascript",
            "const d = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\nconsole.log(d[0] + d[1]);\n",
            "",
        ),
        // A pipeline and a command substitution: bash's run jail may start processes.
        (
            "bash",
            "read a b\necho $((a + b))\necho \"$(echo \"$a $b\" | tr ' ' '\\n' | sort -n | head -1)\" >&2\n",
            "",
        ),
    ];
    for who in variants() {
        for (language, code, version) in programs {
            let r = run(who, &policy, language, code, "40 2\n");
            stop(who, &r, "success");
            assert_eq!(
                r.record["execution"]["stdout"], "42\n",
                "{who:?} {language}: {}",
                r.record
            );
            if language == "javascript" {
                assert!(r.record.get("compile").is_none());
                continue;
            }
            if language == "bash" {
                assert_eq!(
                    r.record["execution"]["stderr"], "2\n",
                    "{who:?}: {}",
                    r.record
                );
                assert!(
                    r.record.get("compile").is_none(),
                    "bash has no compile step"
                );
                continue;
            }
            let c = compile(&r);
            assert_eq!(c["status"], "ok", "{who:?} {language}: {c}");
            let v = c["toolchain"]["version"].as_str().unwrap();
            assert!(v.starts_with(version), "{language}: {v}");
            assert_eq!(r.record["environment"]["toolchain_version"], v);
        }
        // javac's own message, with the file and line.
        let r = run(
            who,
            &policy,
            "java",
            "public class Main { void f() { int x = \"s\"; } }\n",
            "",
        );
        stop(who, &r, "compile_error");
        let stderr = compile(&r)["stderr"].as_str().unwrap().to_string();
        assert!(
            stderr.contains("/app/Main.java:1: error: incompatible types"),
            "{who:?}: {stderr}"
        );
    }
}
