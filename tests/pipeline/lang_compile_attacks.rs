//! Attacks on the compile step (issue 39): the compiler parses hostile input too, in a jail
//! of its own. Through `agentjail run` under policies/judge.toml (its compile limits made
//! small for the bombs, so each ends in seconds), as root and as nobody; each row passes
//! only on its exact stop reason and the compiler's own words for the refusal in the
//! record's `compile.stderr`. Then what crosses between jobs: nothing a compile step or a
//! run of one job writes reaches a later job.

use super::lang_attacks::{job, judge_policy, Job};
use super::lang_programs as p;
use crate::common::{marker, shared_file, variants, Who};

/// judge.toml with every language's compile limits cut down to `cpu_ms` of CPU and `memory`:
/// bombs end in seconds.
fn small_compile_policy(name: &str, cpu_ms: u64, memory: &str) -> String {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/policies/judge.toml"))
        .unwrap();
    let mut t: toml::Table = text.parse().unwrap();
    let langs = t["languages"].as_table_mut().unwrap();
    for lang in ["c", "cpp", "go", "rust", "java"] {
        let Some(l) = langs.get_mut(lang).and_then(|l| l.as_table_mut()) else {
            continue;
        };
        let limits = l
            .entry("compile_limits")
            .or_insert_with(|| toml::Value::Table(Default::default()))
            .as_table_mut()
            .unwrap();
        limits.insert("wall_time_ms".into(), 20_000.into());
        limits.insert("cpu_time_ms".into(), (cpu_ms as i64).into());
        limits.insert("memory".into(), memory.into());
    }
    shared_file(name, &toml::to_string(&t).unwrap())
        .to_str()
        .unwrap()
        .to_string()
}

/// What a compile attack must end in.
struct Row {
    label: &'static str,
    language: &'static str,
    code: &'static str,
    /// As root: the stop reason and a piece of `compile.stderr` (empty: any).
    root: (&'static str, &'static str),
    /// As nobody (no memory cgroup: the compiler's own out-of-memory), when it differs.
    nobody: Option<(&'static str, &'static str)>,
}

const fn row(
    label: &'static str,
    language: &'static str,
    code: &'static str,
    reason: &'static str,
    says: &'static str,
) -> Row {
    Row {
        label,
        language,
        code,
        root: (reason, says),
        nobody: None,
    }
}

fn check_rows(policy: &str, rows: &[Row]) {
    let mut failures = Vec::new();
    for who in variants() {
        for r in rows {
            let (reason, says) = match (who, r.nobody) {
                (Who::Nobody, Some(n)) => n,
                _ => r.root,
            };
            let j = job(who, policy, r.language, r.code, "", &[]);
            // A compile that fails ends the record there: no run, no `execution`.
            let ok = j.stop_reason() == reason
                && j.record["compile"]["status"] == reason
                && j.compile_stderr().contains(says)
                && j.record.get("execution").is_none_or(|e| e.is_null())
                && !j.compile_stderr().contains("root:");
            if ok {
                eprintln!(
                    "{} {} ({who:?}): {reason} after {} ms CPU, {} bytes peak",
                    r.language,
                    r.label,
                    j.record["compile"]["cpu_ms"],
                    j.record["compile"]["peak_memory_bytes"]
                );
            } else {
                failures.push(format!(
                    "{} {} ({who:?}): expected {reason} with {says:?} in compile.stderr, got \
                     {:?}: {}",
                    r.language,
                    r.label,
                    j.stop_reason(),
                    j.record
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} compile attacks did not end as expected:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn compilers_read_no_host_file_and_load_nothing_the_source_names() {
    let rows = [
        // On the host, as root, gcc prints /etc/shadow's first line in its error.
        row(
            "#include \"/etc/shadow\"",
            "c",
            "#include \"/etc/shadow\"\nint main(void) { return 0; }\n",
            "compile_error",
            "/etc/shadow: No such file or directory",
        ),
        // The assembler reads what `.incbin` names (on the host it embeds /etc/shadow).
        row(
            ".incbin \"/etc/shadow\"",
            "c",
            "__asm__(\".section .rodata\\n.incbin \\\"/etc/shadow\\\"\\n.text\\n\");\n\
             int main(void) { return 0; }\n",
            "compile_error",
            "Error: file not found: /etc/shadow",
        ),
        row(
            "#pragma GCC dependency \"/etc/shadow\"",
            "cpp",
            "#pragma GCC dependency \"/etc/shadow\"\nint main() { return 0; }\n",
            "compile_error",
            "/etc/shadow: No such file or directory",
        ),
        // A GNU ld script as the program: the driver compiles it as C, never links it.
        row(
            "linker script as source",
            "c",
            "SECTIONS { .text : { *(.text) } }\nINPUT(/etc/shadow)\n",
            "compile_error",
            "main.c:1:",
        ),
        row(
            "include_str!(\"/etc/shadow\")",
            "rust",
            "fn main() { print!(\"{}\", include_str!(\"/etc/shadow\")); }\n",
            "compile_error",
            "No such file or directory",
        ),
        // Link arguments from the source: not a link kind rustc knows.
        row(
            "#[link(kind = \"link-arg\")]",
            "rust",
            "#[link(name = \"-T/tmp/evil.ld\", kind = \"link-arg\")]\nextern \"C\" {}\nfn main() {}\n",
            "compile_error",
            "unknown link kind `link-arg`",
        ),
        row(
            "//go:embed /etc/shadow",
            "go",
            "package main\n\nimport (\n\t_ \"embed\"\n\t\"fmt\"\n)\n\n//go:embed /etc/shadow\n\
             var s string\n\nfunc main() { fmt.Print(s) }\n",
            "compile_error",
            "pattern /etc/shadow: invalid pattern syntax",
        ),
        // cgo is off (CGO_ENABLED=0): the one file, which imports "C", is excluded from the
        // build, and its #cgo LDFLAGS never reach a linker.
        row(
            "cgo #cgo LDFLAGS",
            "go",
            "package main\n\n// #cgo LDFLAGS: -Wl,-T,/tmp/evil.ld\n// int f(void) { return 1; }\n\
             import \"C\"\nimport \"fmt\"\n\nfunc main() { fmt.Println(C.f()) }\n",
            "compile_error",
            "go: no Go source files",
        ),
        // No module is fetched: GOPROXY is off and the compile jail has no network.
        row(
            "import of a remote module",
            "go",
            "package main\n\nimport (\n\t\"fmt\"\n\t\"github.com/evil/pkg\"\n)\n\n\
             func main() { fmt.Println(pkg.X) }\n",
            "compile_error",
            "no required module provides package github.com/evil/pkg",
        ),
    ];
    check_rows(&judge_policy(), &rows);
}

#[test]
fn compile_bombs_end_at_the_compile_jails_limits() {
    let rows = [
        // cc1 reads the device to its end: memory as root (the cgroup), the compiler's own
        // out-of-memory as nobody (RLIMIT_AS).
        Row {
            label: "#include </dev/zero>",
            language: "c",
            code: "#include </dev/zero>\nint main(void) { return 0; }\n",
            root: ("compile_memory_limit", ""),
            nobody: Some(("compile_error", "out of memory")),
        },
        // Three-dimensional template recursion (unsigned: no overflow error, depth under
        // the constexpr limit): millions of instantiations, each kept.
        Row {
            label: "template bomb",
            language: "cpp",
            code: "template <int A, int B, int C> struct T {\n  static const unsigned v = \
                   T<A - 1, B, C>::v * 3u + (T<A, B - 1, C>::v ^ T<A, B, C - 1>::v);\n};\n\
                   template <int B, int C> struct T<0, B, C> { static const unsigned v = 1; };\n\
                   template <int A, int C> struct T<A, 0, C> { static const unsigned v = 1; };\n\
                   template <int A, int B> struct T<A, B, 0> { static const unsigned v = 1; };\n\
                   int main() { return T<160, 160, 160>::v == 7; }\n",
            root: ("compile_memory_limit", ""),
            nobody: Some(("compile_error", "memory exhausted")),
        },
        // A 256 MiB initialised array: the assembler's object file passes the compile
        // jail's file size limit.
        row(
            "a binary past the file size limit",
            "c",
            "char big[1 << 28] = {1};\nint main(void) { return big[0] - 1; }\n",
            "compile_error",
            "File size limit exceeded signal terminated program as",
        ),
    ];
    // Memory bombs: 256 MiB, and CPU to spare (the template bomb reaches the memory limit
    // after 2-3 s of CPU).
    check_rows(
        &small_compile_policy("lang-compile-mem.toml", 15_000, "256MiB"),
        &rows,
    );
    let rows = [
        // Each loop under gcc's loop limit, 4e10 steps in all: CPU until the limit.
        row(
            "constexpr bomb",
            "cpp",
            "constexpr unsigned long spin() {\n  unsigned long s = 0;\n  for (unsigned long i = 0; \
             i < 200000; i++)\n    for (unsigned long j = 0; j < 200000; j++) s += i ^ j;\n  \
             return s;\n}\nconstexpr unsigned long v = spin();\nint main() { return v == 1; }\n",
            "compile_timeout",
            "",
        ),
    ];
    // The CPU bomb: 3 s of CPU, memory to spare.
    check_rows(
        &small_compile_policy("lang-compile-cpu.toml", 3_000, "1GiB"),
        &rows,
    );
}

/// A pragma or attribute that names a plugin or a dump: gcc refuses the option, writes
/// nothing, and the run finds only its own binary.
#[test]
fn pragmas_and_attributes_load_no_plugin_and_write_nothing() {
    let code = "#pragma GCC optimize(\"-fplugin=/tmp/evil.so\")\n\
                #pragma GCC optimize(\"-fdump-tree-all\")\n\
                #include <dirent.h>\n#include <stdio.h>\n#include <string.h>\n#include <unistd.h>\n\
                __attribute__((optimize(\"-fplugin=/tmp/evil.so\"))) static int f(void) { return 1; }\n\
                int main(void) {\n  char self[256] = {0};\n  readlink(\"/proc/self/exe\", self, 255);\n\
                  *strrchr(self, '/') = 0;\n  DIR *d = opendir(self);\n  struct dirent *e;\n\
                  while ((e = readdir(d))) if (e->d_name[0] != '.') printf(\"%s\\n\", e->d_name);\n\
                  d = opendir(\"/tmp\");\n  while ((e = readdir(d))) if (e->d_name[0] != '.') printf(\"tmp %s\\n\", e->d_name);\n\
                  return f() - 1;\n}\n";
    let policy = judge_policy();
    for who in variants() {
        let j = job(who, &policy, "c", code, "", &[]);
        assert_eq!(j.stop_reason(), "success", "{who:?}: {}", j.record);
        let err = j.compile_stderr();
        for w in [
            "bad option ‘-fplugin=/tmp/evil.so’ to pragma ‘optimize’",
            "bad option ‘-fdump-tree-all’ to pragma ‘optimize’",
            "bad option ‘-fplugin=/tmp/evil.so’ to attribute ‘optimize’",
        ] {
            assert!(err.contains(w), "{who:?}: no {w:?} in {err:?}");
        }
        // The artifact's directory holds the binary alone; /tmp is empty.
        let listing = j.stdout();
        assert_eq!(listing.lines().count(), 1, "{who:?}: {listing:?}");
        assert!(!listing.contains("tmp "), "{who:?}: {listing:?}");
    }
}

/// `include_bytes!` of the compiler's own environment and of init's: what the compile jail
/// holds, never what agentjail was started with.
#[test]
fn rust_include_bytes_of_proc_sees_only_the_compile_jail() {
    let canary = marker("compile-env");
    let code = "fn main() {\n  let e = include_bytes!(\"/proc/self/environ\");\n  \
                println!(\"{}\", String::from_utf8_lossy(e).replace('\\0', \"\\n\"));\n}\n";
    let policy = judge_policy();
    for who in variants() {
        let j = job(
            who,
            &policy,
            "rust",
            code,
            "",
            &[("AGENTJAIL_H4_CANARY", canary.as_str())],
        );
        assert_eq!(j.stop_reason(), "success", "{who:?}: {}", j.record);
        let env = j.stdout();
        assert!(
            env.contains("PATH="),
            "{who:?}: not the environment: {env:?}"
        );
        assert!(!env.contains(&canary), "{who:?}: host env leaked: {env:?}");
        assert!(!env.contains("AGENTJAIL_H4"), "{who:?}: {env:?}");
    }
}

/// A compile step writes more than its artifact (javac writes every class; a run writes
/// /tmp), and a later job looks for it: the later job's class path holds its own Main
/// only, and its /tmp and artifact directory are its own.
#[test]
fn nothing_of_one_job_reaches_a_later_one() {
    let policy = judge_policy();
    let m = marker("job-a");
    for who in variants() {
        // Job A: an extra top-level class (Helper.class beside Main.class), and a file in
        // its /tmp.
        let a = format!(
            "import java.nio.file.*;\nclass Helper {{ static String s = \"{m}\"; }}\n\
             public class Main {{ public static void main(String[] a) throws Exception {{\n\
             Files.writeString(Paths.get(\"/tmp/{m}\"), Helper.s);\n\
             System.out.println(Helper.s); }} }}\n"
        );
        let ja = job(who, &policy, "java", &a, "", &[]);
        assert_eq!(ja.stop_reason(), "success", "{who:?}: {}", ja.record);
        assert_eq!(ja.stdout(), format!("{m}\n"), "{who:?}: {}", ja.record);
        // Job B: looks for Helper and lists its own class directory.
        let jb = job(who, &policy, "java", p::JAVA_MISC, "helper\n", &[]);
        assert_eq!(jb.stop_reason(), "success", "{who:?}: {}", jb.record);
        assert_eq!(
            jb.stdout(),
            "START helper\nClass.forName ClassNotFoundException\nclasses Main.class\n",
            "{who:?}: {}",
            jb.record
        );
        // Job C (C): job A's file in /tmp, and the artifact directory's listing.
        let c = format!(
            "#define _GNU_SOURCE\n#include <dirent.h>\n#include <errno.h>\n#include <fcntl.h>\n#include <stdio.h>\n\
             #include <string.h>\n#include <unistd.h>\n\
             int main(void) {{\n  int fd = open(\"/tmp/{m}\", O_RDONLY);\n\
               printf(\"open %s\\n\", fd < 0 ? strerrorname_np(errno) : \"BREACH\");\n\
               char self[256] = {{0}};\n  readlink(\"/proc/self/exe\", self, 255);\n\
               *strrchr(self, '/') = 0;\n  DIR *d = opendir(self);\n  struct dirent *e;\n  int n = 0;\n\
               while ((e = readdir(d))) n += e->d_name[0] != '.';\n  printf(\"entries %d\\n\", n);\n}}\n"
        );
        let jc = job(who, &policy, "c", &c, "", &[]);
        assert_eq!(jc.stop_reason(), "success", "{who:?}: {}", jc.record);
        assert_eq!(
            jc.stdout(),
            "open ENOENT\nentries 1\n",
            "{who:?}: {}",
            jc.record
        );
    }
}

/// A class that declares itself an annotation processor: javac runs processors found on
/// its processor path, never one the source being compiled defines; its `init` never runs.
#[test]
fn java_annotation_processor_in_the_source_never_runs() {
    let code = "import javax.annotation.processing.*;\nimport javax.lang.model.element.*;\n\
                import java.util.Set;\n\
                @SupportedAnnotationTypes(\"*\")\nclass Evil extends AbstractProcessor {\n\
                  public synchronized void init(ProcessingEnvironment e) { System.err.println(\"EVIL-RAN\"); }\n\
                  public boolean process(Set<? extends TypeElement> a, RoundEnvironment r) { return false; }\n}\n\
                public class Main { public static void main(String[] a) { System.out.println(\"ran\"); } }\n";
    let policy = judge_policy();
    for who in variants() {
        let j: Job = job(who, &policy, "java", code, "", &[]);
        assert_eq!(j.stop_reason(), "success", "{who:?}: {}", j.record);
        assert_eq!(j.stdout(), "ran\n", "{who:?}: {}", j.record);
        assert!(
            !j.compile_stderr().contains("EVIL-RAN") && !j.stdout().contains("EVIL-RAN"),
            "{who:?}: {}",
            j.record
        );
    }
}

/// A million errors from six lines of macros: the compiler's stderr is kept to its cap in
/// the record, marked truncated, and the compile ends as a compile error.
#[test]
fn a_compiler_error_flood_is_cut_at_the_stderr_cap() {
    let code = "#define S0 int x = ;\n#define S1 S0 S0 S0 S0 S0 S0 S0 S0 S0 S0\n\
                #define S2 S1 S1 S1 S1 S1 S1 S1 S1 S1 S1\n#define S3 S2 S2 S2 S2 S2 S2 S2 S2 S2 S2\n\
                #define S4 S3 S3 S3 S3 S3 S3 S3 S3 S3 S3\n#define S5 S4 S4 S4 S4 S4 S4 S4 S4 S4 S4\n\
                S5\nint main(void) { return 0; }\n";
    let policy = judge_policy();
    for who in variants() {
        let j = job(who, &policy, "c", code, "", &[]);
        assert_eq!(j.stop_reason(), "compile_error", "{who:?}: {}", j.record);
        assert_eq!(j.record["compile"]["stderr_truncated"], true, "{who:?}");
        let err = j.compile_stderr();
        assert!(
            err.starts_with("/app/main.c:1:20: error: expected expression before ‘;’ token"),
            "{who:?}: {err:?}"
        );
        // judge.toml's compile stderr cap for C: 64 KiB.
        assert!(err.len() <= 64 * 1024, "{who:?}: {} bytes", err.len());
    }
}

/// javac writes one file per class: 1500 classes in 20000 characters pass the compile
/// output directory's file cap (a capped tmpfs), and the compile ends there.
#[test]
fn java_classes_past_the_output_directorys_cap_end_the_compile() {
    let mut code = String::from(
        "public class Main { public static void main(String[] a) { System.out.println(1); } }\n",
    );
    for i in 0..1500 {
        code.push_str(&format!("class A{i}{{}} "));
    }
    let policy = judge_policy();
    for who in variants() {
        let j = job(who, &policy, "java", &code, "", &[]);
        assert_eq!(j.stop_reason(), "compile_error", "{who:?}: {}", j.record);
        assert!(
            j.compile_stderr()
                .contains(".class: No space left on device"),
            "{who:?}: {}",
            j.record
        );
        assert!(j.record.get("execution").is_none(), "{who:?}: {}", j.record);
    }
}
