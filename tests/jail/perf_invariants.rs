//! Invariants the launch-cost work (issue 6) must keep: whatever a faster launch path does,
//! the program must start as a fresh process would, with every signal at its default
//! disposition and an empty signal mask — also when agentjail itself was started with
//! signals ignored (nohup, a shell's `trap '' ...`), because an ignored disposition
//! survives execve.

use crate::common::*;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

/// The program reads its own status: cat changes no signal disposition (python would:
/// it ignores SIGPIPE and SIGXFSZ and handles SIGINT itself).
const SIGNALS: [&str; 2] = ["/bin/cat", "/proc/self/status"];

fn assert_clean(out: &str, what: &str) {
    assert!(out.contains("SigQ:"), "payload did not run ({what}): {out}");
    for k in ["SigIgn", "SigBlk", "SigCgt"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{k}:")))
            .unwrap_or_else(|| panic!("{k} missing ({what}): {out}"));
        let mask = line.split_whitespace().nth(1).unwrap_or("");
        assert!(
            !mask.is_empty() && mask.chars().all(|c| c == '0'),
            "{k} is not empty in the jail ({what}): {line}"
        );
    }
}

#[test]
fn program_starts_with_default_signals_and_empty_mask() {
    for who in variants() {
        let r = jail(who, &[], &SIGNALS);
        assert_eq!(r.code, 0, "{r:#?}");
        assert_clean(&r.stdout, &format!("{who:?}"));
    }
}

#[test]
fn ignored_signals_of_the_launcher_do_not_reach_the_program() {
    let mut cmd = Command::new(agentjail_path());
    cmd.args(["exec", "--", SIGNALS[0], SIGNALS[1]])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let ignore = || {
        for sig in [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGUSR1,
            40,
            64,
        ] {
            // SAFETY: setting SIG_IGN for a valid, catchable signal number is async-signal-safe.
            unsafe { libc::signal(sig, libc::SIG_IGN) };
        }
        Ok(())
    };
    // SAFETY: the closure runs in the forked child before exec and only calls
    // async-signal-safe libc::signal.
    unsafe { cmd.pre_exec(ignore) };
    let out = cmd.output().expect("run agentjail");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "agentjail failed: {:?} {stdout} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_clean(&stdout, "launcher ignoring INT, TERM, HUP, USR1, 40, 64");
}
