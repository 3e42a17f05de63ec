//! `agentjail run`: load the policy, honour the flags, run the pipeline once, print the
//! record, append it to the audit log; the exit status says how it ended.

use super::ExitStatus;

/// Even when agentjail cannot work, stdout carries a valid record (an `agentjail_error:*`
/// stop) and the exit status is 2.
pub fn command(
    policy: Option<&std::path::Path>,
    audit_log: Option<std::path::PathBuf>,
    flags: agentjail_engine::pipeline::RunFlags,
    action: &str,
) -> ExitStatus {
    let loaded = match agentjail_engine::load_policy(policy) {
        Ok(p) => p,
        Err(e) => return refused("policy", &e),
    };
    let audit = loaded.audit_log(audit_log);
    let options = match agentjail_engine::pipeline::run_options(&loaded, flags) {
        Ok(o) => o,
        Err(e) => return refused("flags", &e),
    };
    let record = agentjail_engine::pipeline::run_action(&loaded, action, options);
    super::print_json(&record.value);
    if !agentjail_engine::pipeline::audit::append(audit.as_deref(), &record) {
        return ExitStatus::Error;
    }
    if record.is_ok() {
        ExitStatus::Ok
    } else {
        ExitStatus::Stopped
    }
}

/// agentjail could not work (`what`: the policy, a flag): the error on stderr, and on
/// stdout a valid record that says so (`agentjail_error:<what>`); exit 2.
fn refused(what: &str, e: &dyn std::fmt::Display) -> ExitStatus {
    eprintln!("agentjail: {e}");
    let reason = agentjail_engine::verdict::StopReason::AgentjailError(what.into());
    super::print_json(
        &agentjail_engine::pipeline::record::Record::refused(reason, &e.to_string()).to_value(),
    );
    ExitStatus::Error
}
