//! The command line's commands, one file each (`serve` lives with its server in
//! crate::serve, `mcp` execs its own binary: crate::mcp), and what they share: how a
//! policy is loaded for a command, how a record or decision is printed, the exit statuses.
//! main.rs parses the flags (crate::cli) and calls one of these; the engine below never
//! calls up into them (docs/ARCHITECTURE.md).

pub mod check;
pub mod doctor;
pub mod exec;
pub mod learn;
pub mod policy;
pub mod run;

/// The verdict commands' exit statuses (`run`, `check`, `policy lint`, `doctor`); `exec`
/// returns the command's own status instead (see `agentjail exec --help`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// It ran and the result is valid (run: status ok; check: allow).
    Ok = 0,
    /// The boundary said no (run: stopped; check: deny; lint: warnings).
    Stopped = 1,
    /// agentjail itself could not work (bad flags, bad policy, internal error).
    Error = 2,
}

pub fn load(
    policy: Option<&std::path::Path>,
) -> Result<agentjail_engine::policy::LoadedPolicy, ExitStatus> {
    agentjail_engine::load_policy(policy).map_err(|e| {
        eprintln!("agentjail: {e}");
        ExitStatus::Error
    })
}

/// Print a record or decision: JSON in which no control, bidi override or line separator
/// from the program's text appears raw (it cannot split a line or steer a terminal).
pub fn print_json(v: &serde_json::Value) {
    use std::io::Write;
    // A reader that went away (a closed pipe) is not a reason to panic: the audit log still
    // gets the record, and the exit status says what happened.
    let mut out = std::io::stdout().lock();
    let text = agentjail_json::to_safe_string_pretty(v);
    if let Err(e) = writeln!(out, "{text}").and_then(|_| out.flush()) {
        eprintln!("agentjail: cannot print the record: {e}");
    }
}
