//! Attacks per language (issue 39): the compiled and shell languages of policies/judge.toml
//! (`c`, `cpp`, `rust`, `go`, `java`, `bash`) through `agentjail run` in text mode, as root
//! and as nobody, one jail per attack. Each row passes only on its exact outcome: the stop
//! reason the jail gives (`code_forbidden_syscall:<name>`, `code_pids_limit`,
//! `code_memory_limit`, `code_output_too_large`, ...) and what the program printed before
//! and after (the errno a control answers with, spelled by the program), never on "some
//! failure". The hostile programs are in `lang_programs.rs`; each reads which attack to make
//! from its stdin, so one source per language serves many rows.
//!
//! As nobody there is no delegated cgroup: memory is `RLIMIT_AS` (an allocation fails and
//! the program's own exit follows) and processes `RLIMIT_NPROC` (the thread or fork fails
//! with `EAGAIN`), which is what the rows expect there.
//!
//! The compiler's side (`#include "/etc/shadow"`, `</dev/zero>`, bombs, pragmas, embeds,
//! cgo) and what crosses between jobs are in `lang_compile_attacks.rs`.

use super::lang_programs as p;
use crate::common::{agentjail_path, shared_file, variants, Who};
use serde_json::{json, Value};
use std::process::Command;

/// What a row's run must print on stdout.
#[derive(Clone, Copy, Debug)]
pub enum Out {
    /// Exactly this.
    Exact(&'static str),
    /// This, then anything (a flood).
    Starts(&'static str),
}

impl Out {
    fn matches(self, s: &str) -> bool {
        match self {
            Out::Exact(e) => s == e,
            Out::Starts(e) => s.starts_with(e),
        }
    }
}

/// One attack: a program, its stdin, and the exact outcome as root (with the job cgroup)
/// and, where it differs, as nobody (rlimits instead of a cgroup).
pub struct Row {
    pub label: &'static str,
    pub language: &'static str,
    pub code: &'static str,
    pub stdin: &'static str,
    pub root: (&'static str, Out),
    pub nobody: Option<(&'static str, Out)>,
}

/// policies/judge.toml, copied where nobody can read it.
pub fn judge_policy() -> String {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/policies/judge.toml"))
        .unwrap();
    shared_file("lang-judge.toml", &text)
        .to_str()
        .unwrap()
        .to_string()
}

/// The record of one job.
#[derive(Debug)]
pub struct Job {
    pub code: i32,
    pub record: Value,
    pub stderr: String,
}

impl Job {
    pub fn stop_reason(&self) -> &str {
        self.record["stop_reason"].as_str().unwrap_or("")
    }
    pub fn stdout(&self) -> &str {
        self.record["execution"]["stdout"].as_str().unwrap_or("")
    }
    pub fn compile_stderr(&self) -> &str {
        self.record["compile"]["stderr"].as_str().unwrap_or("")
    }
}

/// The one entrypoint of each language.
pub fn entrypoint(language: &str) -> &'static str {
    match language {
        "c" => "main.c",
        "cpp" => "main.cpp",
        "rust" => "main.rs",
        "go" => "main.go",
        "java" => "Main.java",
        "bash" => "main.sh",
        other => panic!("no entrypoint for {other}"),
    }
}

/// `agentjail run --policy POLICY -` as `who` with a text-mode action for `language`, and
/// `env` set on agentjail itself (to prove none of it reaches a jail).
pub fn job(
    who: Who,
    policy: &str,
    language: &str,
    code: &str,
    stdin: &str,
    env: &[(&str, &str)],
) -> Job {
    let action = json!({"id": "lang-attack", "language": language,
                        "entrypoint": entrypoint(language), "code": code,
                        "stdin": stdin, "output_mode": "text"});
    // One language's attacks are one program reading its attack from stdin: with the
    // compile cache it compiles once per user. A job that sets agentjail's environment
    // proves what reaches a jail, so it never takes a stored record or compile.
    let cache = crate::common::compile_cache_dir(who);
    let mut args = vec!["--policy", policy];
    if env.is_empty() {
        args.extend(["--cache", cache.as_str()]);
    }
    let bytes = serde_json::to_vec(&action).unwrap();
    let r = crate::common::run_as_env(who, &args, &bytes, None, env);
    Job {
        code: r.code,
        record: r.record,
        stderr: r.stderr,
    }
}

/// Run every row as root and as nobody; fail with every row that did not end exactly as
/// it says (all of them listed, not only the first).
pub fn run_rows(rows: &[Row]) {
    let policy = judge_policy();
    let mut failures = Vec::new();
    for who in variants() {
        for r in rows {
            let (reason, out) = match (who, r.nobody) {
                (Who::Nobody, Some(n)) => n,
                _ => r.root,
            };
            let j = job(who, &policy, r.language, r.code, r.stdin, &[]);
            let ok = j.stop_reason() == reason
                && out.matches(j.stdout())
                && !j.stdout().contains("BREACH");
            if ok {
                eprintln!("{} {} ({who:?}): {reason}", r.language, r.label);
            } else {
                failures.push(format!(
                    "{} {} ({who:?}): expected {reason} with stdout {out:?}, got {:?} (exit \
                     {}) with stdout {:?} (compile {}; stderr {:?}; agentjail's stderr {:?})",
                    r.language,
                    r.label,
                    j.stop_reason(),
                    j.code,
                    j.stdout().chars().take(600).collect::<String>(),
                    j.record["compile"],
                    j.record["execution"]["stderr"],
                    j.stderr,
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of the attacks did not end as expected:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A syscall the run jail forbids, made raw (number and integer arguments on stdin): the
/// jail stops the run on it by name, after the program's START line and before its
/// RETURNED line (the call never returned).
macro_rules! stop {
    ($lang:expr, $code:expr, $label:literal, $stdin:literal, $nr:literal) => {
        Row {
            label: $label,
            language: $lang,
            code: $code,
            stdin: $stdin,
            root: (
                concat!("code_forbidden_syscall:", $label),
                Out::Exact(concat!("START ", $nr, "\n")),
            ),
            nobody: None,
        }
    };
}

/// The syscalls judge.toml's run jail forbids, each with arguments that would do something
/// real without a jail (socket(AF_INET, SOCK_STREAM), unshare(CLONE_NEWUSER),
/// clone(SIGCHLD) that is a fork, personality's query ...).
macro_rules! forbidden_rows {
    ($lang:expr, $code:expr) => {
        [
            stop!($lang, $code, "socket", "41 2 1 0", "41"),
            stop!($lang, $code, "socketpair", "53 1 1 0 0", "53"),
            stop!($lang, $code, "ptrace", "101 0 0 0 0", "101"),
            stop!($lang, $code, "mount", "165 0 0 0 0 0", "165"),
            stop!($lang, $code, "umount2", "166 0 2", "166"),
            stop!($lang, $code, "unshare", "272 0x10000000", "272"),
            stop!($lang, $code, "setns", "308 0 0", "308"),
            stop!($lang, $code, "pivot_root", "155 0 0", "155"),
            stop!($lang, $code, "chroot", "161 0", "161"),
            stop!($lang, $code, "keyctl", "250 0 -3 0", "250"),
            stop!($lang, $code, "add_key", "248 0 0 0 0 -4", "248"),
            stop!($lang, $code, "bpf", "321 0 0 0", "321"),
            stop!($lang, $code, "perf_event_open", "298 0 0 -1 -1 0", "298"),
            stop!($lang, $code, "userfaultfd", "323 0", "323"),
            stop!($lang, $code, "io_uring_setup", "425 1 0", "425"),
            stop!($lang, $code, "personality", "135 0xffffffff", "135"),
            stop!($lang, $code, "seccomp", "317 0 0 0", "317"),
            stop!($lang, $code, "modify_ldt", "154 0 0 0", "154"),
            stop!($lang, $code, "process_vm_readv", "310 1 0 0 0 0 0", "310"),
            stop!($lang, $code, "init_module", "175 0 0 0", "175"),
            stop!($lang, $code, "setuid", "105 0", "105"),
            stop!($lang, $code, "capset", "126 0 0", "126"),
            stop!($lang, $code, "mknod", "133 0 0 0", "133"),
            stop!($lang, $code, "memfd_create", "319 0 0", "319"),
            stop!($lang, $code, "prctl", "157 38 1 0 0 0", "157"),
            stop!($lang, $code, "open_by_handle_at", "304 0 0 0", "304"),
            stop!($lang, $code, "fork", "57", "57"),
            stop!($lang, $code, "vfork", "58", "58"),
            // clone that is a fork (SIGCHLD), and one with CLONE_NEWUSER: the argument filter.
            stop!($lang, $code, "clone", "56 17 0 0 0 0", "56"),
            stop!($lang, $code, "clone", "56 0x10000011 0 0 0 0", "56"),
        ]
    };
}

/// The calls the jail answers with an errno instead of a stop: socket(AF_UNIX) → EACCES
/// (glibc's nscd probe), clone3 → ENOSYS, sched_setaffinity → EPERM, ioctl(TIOCSTI) →
/// ENOTTY. `$ret` is how the language's program prints the raw return.
macro_rules! errno_rows {
    ($lang:expr, $code:expr, $eacces:literal, $enosys:literal, $eperm:literal, $enotty:literal) => {
        [
            Row {
                label: "socket(AF_UNIX)",
                language: $lang,
                code: $code,
                stdin: "41 1 1 0",
                root: (
                    "success",
                    Out::Exact(concat!("START 41\nRETURNED ", $eacces, "\n")),
                ),
                nobody: None,
            },
            Row {
                label: "clone3",
                language: $lang,
                code: $code,
                stdin: "435 0 0",
                root: (
                    "success",
                    Out::Exact(concat!("START 435\nRETURNED ", $enosys, "\n")),
                ),
                nobody: None,
            },
            Row {
                label: "sched_setaffinity",
                language: $lang,
                code: $code,
                stdin: "203 0 0 0",
                root: (
                    "success",
                    Out::Exact(concat!("START 203\nRETURNED ", $eperm, "\n")),
                ),
                nobody: None,
            },
            Row {
                label: "ioctl(TIOCSTI)",
                language: $lang,
                code: $code,
                stdin: "16 0 0x5412 0",
                root: (
                    "success",
                    Out::Exact(concat!("START 16\nRETURNED ", $enotty, "\n")),
                ),
                nobody: None,
            },
        ]
    };
}

/// The same raw door from the other languages: a few of the forbidden calls (one of each
/// kind: network, tracing, namespaces, the kernel's attack surface, execution domain, a
/// fork) and the errno answers; C runs the whole list.
macro_rules! core_rows {
    ($lang:expr, $code:expr) => {
        [
            stop!($lang, $code, "socket", "41 2 1 0", "41"),
            stop!($lang, $code, "ptrace", "101 0 0 0 0", "101"),
            stop!($lang, $code, "unshare", "272 0x10000000", "272"),
            stop!($lang, $code, "io_uring_setup", "425 1 0", "425"),
            stop!($lang, $code, "bpf", "321 0 0 0", "321"),
            stop!($lang, $code, "personality", "135 0xffffffff", "135"),
            stop!($lang, $code, "clone", "56 17 0 0 0 0", "56"),
        ]
    };
}

fn rows<const A: usize, const B: usize>(a: [Row; A], b: [Row; B]) -> Vec<Row> {
    a.into_iter().chain(b).collect()
}

#[test]
fn c_raw_syscalls_stop_by_name() {
    run_rows(&rows(
        forbidden_rows!("c", p::C_SYSCALL),
        errno_rows!("c", p::C_SYSCALL, "-13", "-38", "-1", "-25"),
    ));
}

#[test]
fn cpp_raw_syscalls_stop_by_name() {
    run_rows(&rows(
        core_rows!("cpp", p::CPP_SYSCALL),
        errno_rows!("cpp", p::CPP_SYSCALL, "-13", "-38", "-1", "-25"),
    ));
}

#[test]
fn rust_asm_syscalls_stop_by_name() {
    run_rows(&rows(
        core_rows!("rust", p::RUST_SYSCALL),
        errno_rows!("rust", p::RUST_SYSCALL, "-13", "-38", "-1", "-25"),
    ));
}

#[test]
fn go_raw_syscalls_stop_by_name() {
    run_rows(&rows(
        core_rows!("go", p::GO_SYSCALL),
        errno_rows!("go", p::GO_SYSCALL, "-1 13", "-1 38", "-1 1", "-1 25"),
    ));
}

/// A row whose outcome is the same as root and as nobody.
const fn same(
    label: &'static str,
    language: &'static str,
    code: &'static str,
    stdin: &'static str,
    reason: &'static str,
    out: Out,
) -> Row {
    Row {
        label,
        language,
        code,
        stdin,
        root: (reason, out),
        nobody: None,
    }
}

/// A row that ends by the job cgroup as root and by an rlimit as nobody.
const fn split(
    label: &'static str,
    language: &'static str,
    code: &'static str,
    stdin: &'static str,
    root: (&'static str, Out),
    nobody: (&'static str, Out),
) -> Row {
    Row {
        label,
        language,
        code,
        stdin,
        root,
        nobody: Some(nobody),
    }
}

#[test]
fn c_bombs_floods_proc_and_writes_end_in_the_jails_refusal() {
    use Out::{Exact, Starts};
    let c = p::C_MISC;
    run_rows(&[
        // A 32-bit syscall (int 0x80: getpid) is a foreign ABI: killed outright.
        same(
            "int 0x80",
            "c",
            c,
            "int80",
            "code_killed:SIGSYS",
            Exact("START int80\n"),
        ),
        // fork() is clone(SIGCHLD): no process_spawn for C.
        same(
            "fork bomb",
            "c",
            c,
            "forkbomb",
            "code_forbidden_syscall:clone",
            Exact("START forkbomb\n"),
        ),
        split(
            "thread bomb",
            "c",
            c,
            "threadbomb",
            (
                "code_pids_limit",
                Exact("START threadbomb\npthread_create EAGAIN\n"),
            ),
            (
                "code_runtime_error:3",
                Exact("START threadbomb\npthread_create EAGAIN\n"),
            ),
        ),
        split(
            "memory balloon",
            "c",
            c,
            "balloon",
            ("code_memory_limit", Exact("START balloon\n")),
            (
                "code_runtime_error:3",
                Exact("START balloon\nmalloc ENOMEM\n"),
            ),
        ),
        same(
            "output flood",
            "c",
            c,
            "flood",
            "code_output_too_large",
            Starts("START flood\nxxxxxxxx"),
        ),
        same(
            "writes outside /tmp",
            "c",
            c,
            "writes",
            "success",
            Exact(
                "START writes\n/usr/h4 EROFS\n/usr/lib/h4 EROFS\n/h4 EROFS\n/etc/h4 EROFS\n\
                 /etc/passwd EROFS\n/app/h4 EROFS\n/dev/h4 EROFS\n/proc/sys/kernel/hostname EROFS\n\
                 /tmp/h4 OK\n",
            ),
        ),
        same(
            "exec and dlopen of files written to /tmp",
            "c",
            c,
            "exectmp",
            "success",
            Exact(
                "START exectmp\nchmod /tmp/x OK\nexecv /tmp/x EACCES\nexecv /tmp/t EACCES\n\
                 dlopen /tmp/l.so: failed to map segment from shared object\n",
            ),
        ),
        same(
            "/proc walk",
            "c",
            c,
            "proc",
            "success",
            Exact(
                "START proc\npid 1\npid 2\n/proc/keys read 0\n/proc/kallsyms read 0\n\
                 /proc/timer_list read 0\n/proc/1/environ EACCES\n/proc/1/mem EACCES\n\
                 /proc/1/root/etc/passwd EACCES\n",
            ),
        ),
    ]);
}

#[test]
fn cpp_bombs_and_floods_end_in_the_jails_refusal() {
    use Out::{Exact, Starts};
    let c = p::CPP_MISC;
    run_rows(&[
        split(
            "std::thread bomb",
            "cpp",
            c,
            "threadbomb",
            (
                "code_pids_limit",
                Exact("START threadbomb\nstd::thread EAGAIN\n"),
            ),
            (
                "code_runtime_error:3",
                Exact("START threadbomb\nstd::thread EAGAIN\n"),
            ),
        ),
        split(
            "new balloon",
            "cpp",
            c,
            "balloon",
            ("code_memory_limit", Exact("START balloon\n")),
            (
                "code_runtime_error:3",
                Exact("START balloon\nnew bad_alloc\n"),
            ),
        ),
        same(
            "std::cout flood",
            "cpp",
            c,
            "flood",
            "code_output_too_large",
            Starts("START flood\nxxxxxxxx"),
        ),
    ]);
}

#[test]
fn rust_std_processes_bombs_and_floods_end_in_the_jails_refusal() {
    use Out::{Exact, Starts};
    let c = p::RUST_MISC;
    run_rows(&[
        // std's Command spawns with posix_spawn: clone3 (ENOSYS), then clone(CLONE_VFORK).
        same(
            "Command::new",
            "rust",
            c,
            "command",
            "code_forbidden_syscall:clone",
            Exact("START command\n"),
        ),
        same(
            "exec of a file written to /tmp",
            "rust",
            c,
            "exectmp",
            "success",
            Exact("START exectmp\nexec /tmp/t Some(13)\n"),
        ),
        split(
            "thread bomb",
            "rust",
            c,
            "threadbomb",
            (
                "code_pids_limit",
                Exact("START threadbomb\nspawn WouldBlock true\n"),
            ),
            (
                "code_runtime_error:3",
                Exact("START threadbomb\nspawn WouldBlock true\n"),
            ),
        ),
        split(
            "memory balloon",
            "rust",
            c,
            "balloon",
            ("code_memory_limit", Exact("START balloon\n")),
            (
                "code_runtime_error:3",
                Exact("START balloon\ntry_reserve Err\n"),
            ),
        ),
        same(
            "stdout flood",
            "rust",
            c,
            "flood",
            "code_output_too_large",
            Starts("START flood\nxxxxxxxx"),
        ),
    ]);
}

#[test]
fn go_processes_bombs_and_floods_end_in_the_jails_refusal() {
    use Out::{Exact, Starts};
    let c = p::GO_MISC;
    run_rows(&[
        // os/exec forks with clone(CLONE_VFORK|CLONE_VM|SIGCHLD).
        same(
            "exec.Command",
            "go",
            c,
            "command",
            "code_forbidden_syscall:clone",
            Exact("START command\n"),
        ),
        same(
            "syscall.Exec of a file written to /tmp",
            "go",
            c,
            "exectmp",
            "success",
            Exact("START exectmp\nexec /tmp/t true\n"),
        ),
        // Each locked goroutine blocked in a syscall holds an OS thread; the runtime dies
        // when it cannot make one more ("failed to create new OS thread", exit 2).
        split(
            "thread bomb",
            "go",
            c,
            "threadbomb",
            ("code_pids_limit", Exact("START threadbomb\n")),
            ("code_runtime_error:2", Exact("START threadbomb\n")),
        ),
        split(
            "memory balloon",
            "go",
            c,
            "balloon",
            ("code_memory_limit", Exact("START balloon\n")),
            ("code_runtime_error:2", Exact("START balloon\n")),
        ),
        same(
            "stdout flood",
            "go",
            c,
            "flood",
            "code_output_too_large",
            Starts("START flood\nxxxxxxxx"),
        ),
    ]);
}

#[test]
fn java_processes_jni_sockets_bombs_and_floods_end_in_the_jails_refusal() {
    use Out::{Exact, Starts};
    let c = p::JAVA_MISC;
    run_rows(&[
        // The JDK spawns through jspawnhelper with posix_spawn: clone(CLONE_VFORK).
        same(
            "ProcessBuilder",
            "java",
            c,
            "processbuilder",
            "code_forbidden_syscall:clone",
            Exact("START processbuilder\n"),
        ),
        same(
            "Runtime.exec",
            "java",
            c,
            "runtimeexec",
            "code_forbidden_syscall:clone",
            Exact("START runtimeexec\n"),
        ),
        // Java's run jail answers socket() with an errno (its NIO needs a socketpair, so the
        // call is refused rather than stopped: judge.toml's languages.java.errno_syscalls).
        same(
            "Socket",
            "java",
            c,
            "socket",
            "success",
            Exact("START socket\nSocket java.net.SocketException: Operation not permitted\n"),
        ),
        same(
            "System.load of a library written to /tmp",
            "java",
            c,
            "jni",
            "success",
            Exact("START jni\nSystem.load failed to map segment\n"),
        ),
        same(
            "writes outside /tmp",
            "java",
            c,
            "writes",
            "success",
            Exact(
                "START writes\n/usr/h4 /usr/h4 (Read-only file system)\n/h4 /h4 (Read-only file system)\n\
                 /etc/h4 /etc/h4 (Read-only file system)\n/app/h4 /app/h4 (Read-only file system)\n/tmp/h4 OK\n",
            ),
        ),
        same("/proc walk", "java", c, "proc", "success", Exact("START proc\npid 1\npid 2\n")),
        split(
            "thread bomb",
            "java",
            c,
            "threadbomb",
            // HotSpot logs the failed pthread_create as a warning: judge.toml sends the JVM's
            // log to stderr (-Xlog:all=warning:stderr), so stdout is the program's alone.
            ("code_pids_limit", Exact("START threadbomb\nThread.start OutOfMemoryError\n")),
            ("code_runtime_error:3", Exact("START threadbomb\nThread.start OutOfMemoryError\n")),
        ),
        same("stdout flood", "java", c, "flood", "code_output_too_large", Starts("START flood\nxxxxxxxx")),
    ]);
}

/// bash: `/dev/tcp` is socket(AF_INET); `exec` replaces bash in place (no fork), so what it
/// execs meets the same jail; a script it wrote cannot be exec'd from /tmp.
const BASH_TCP: &str = "echo START tcp\nexec 3<>/dev/tcp/127.0.0.1/80\necho BREACH connected\n";
const BASH_EXEC_SH: &str =
    "echo START exec-sh\nexec /bin/sh -c 'exec /usr/bin/unshare -U /bin/true'\n";
const BASH_EXEC_TMP: &str = "echo START exec-tmp\nprintf '#!/bin/sh\\necho BREACH\\n' > /tmp/x\n\
chmod 755 /tmp/x\nexec /tmp/x\n";
const BASH_WRITES: &str = "echo START writes\nfor p in /usr/h4 /h4 /etc/h4 /app/h4 /tmp/h4; do\n\
  if { : > \"$p\"; } 2>/tmp/e; then echo \"$p OK\"; else read -r l < /tmp/e; echo \"$p ${l##*: }\"; fi\ndone\n";
const BASH_FLOOD: &str =
    "echo START flood\nx=xxxxxxxxxxxxxxxx; x=$x$x$x$x$x$x$x$x; x=$x$x$x$x$x$x$x$x\n\
while :; do echo \"$x\"; done\n";
const BASH_PYTHON: &str =
    "echo START python\npython3 -c 'import socket; socket.socket()'\necho BREACH $?\n";
const BASH_FORKBOMB: &str = "echo START forkbomb\nb() { b | b; }; b\n";

#[test]
fn bash_dev_tcp_exec_and_bombs_end_in_the_jails_refusal() {
    use Out::{Exact, Starts};
    run_rows(&[
        same(
            "/dev/tcp",
            "bash",
            BASH_TCP,
            "",
            "code_forbidden_syscall:socket",
            Exact("START tcp\n"),
        ),
        same(
            "exec /bin/sh then unshare",
            "bash",
            BASH_EXEC_SH,
            "",
            "code_forbidden_syscall:unshare",
            Exact("START exec-sh\n"),
        ),
        same(
            "exec of a script written to /tmp",
            "bash",
            BASH_EXEC_TMP,
            "",
            "code_runtime_error:126",
            Exact("START exec-tmp\n"),
        ),
        same(
            "writes outside /tmp",
            "bash",
            BASH_WRITES,
            "",
            "success",
            Exact(
                "START writes\n/usr/h4 Read-only file system\n/h4 Read-only file system\n\
                 /etc/h4 Read-only file system\n/app/h4 Read-only file system\n/tmp/h4 OK\n",
            ),
        ),
        same(
            "flood",
            "bash",
            BASH_FLOOD,
            "",
            "code_output_too_large",
            Starts("START flood\nxxxxxxxx"),
        ),
        // Another interpreter, with no check of its own here, meets the same jail.
        same(
            "python3 from bash",
            "bash",
            BASH_PYTHON,
            "",
            "code_forbidden_syscall:socket",
            Exact("START python\n"),
        ),
    ]);
}

/// The table's forbidden calls are forbidden in the policy it runs under: none of them is
/// in the allowlist `agentjail policy show` prints for judge.toml (a group added to the
/// policy later that allows one fails here, not as a puzzling attack row).
#[test]
fn the_forbidden_rows_are_outside_judge_tomls_allowlist() {
    let out = Command::new(agentjail_path())
        .args(["policy", "show", &judge_policy()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text
        .lines()
        .skip_while(|l| !l.contains("allow_groups resolve to"));
    assert!(
        lines.next().is_some(),
        "no allowlist in `policy show`: {text}"
    );
    let allowed: Vec<&str> = lines
        .take_while(|l| l.starts_with("#   "))
        .flat_map(|l| l.trim_start_matches('#').split_whitespace())
        .collect();
    assert!(
        allowed.contains(&"execve") && allowed.len() > 100,
        "{allowed:?}"
    );
    let rows: Vec<Row> = forbidden_rows!("c", p::C_SYSCALL).into_iter().collect();
    // clone is allowed for threads only (CLONE_THREAD, no CLONE_NEW*): its rows are a fork
    // and a new user namespace, which the argument filter refuses.
    for r in rows.iter().filter(|r| r.label != "clone") {
        assert!(
            !allowed.contains(&r.label),
            "{} is allowed by judge.toml",
            r.label
        );
    }
}

/// bash runs with process_spawn (its pipelines fork): a fork bomb in the foreground fills
/// the pids limit (the cgroup's counter as root, RLIMIT_NPROC as nobody), and bash retries
/// each refused fork with growing sleeps (~15 s) instead of failing, so the run ends at its
/// wall limit (3 s here), every process of it killed.
#[test]
fn bash_fork_bomb_is_held_at_the_pids_limit_until_the_wall_limit() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/policies/judge.toml"))
        .unwrap();
    let mut t: toml::Table = text.parse().unwrap();
    t["limits"]
        .as_table_mut()
        .unwrap()
        .insert("wall_time_ms".into(), 3000.into());
    let policy = shared_file("lang-bash-bomb.toml", &toml::to_string(&t).unwrap());
    let policy = policy.to_str().unwrap();
    for who in variants() {
        let j = job(who, policy, "bash", BASH_FORKBOMB, "", &[]);
        assert_eq!(j.stop_reason(), "code_timeout", "{who:?}: {}", j.record);
        assert_eq!(j.stdout(), "START forkbomb\n", "{who:?}: {}", j.record);
        let err = j.record["execution"]["stderr"].as_str().unwrap_or("");
        assert!(
            err.contains("fork: retry: Resource temporarily unavailable"),
            "{who:?}: {}",
            j.record
        );
        if who == Who::Root {
            assert!(
                j.record["execution"]["pids_limit_hits"].as_u64() > Some(0),
                "{who:?}: {}",
                j.record
            );
        }
    }
}
