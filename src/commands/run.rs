//! `agentjail run`: load the policy, honour the flags, run the pipeline once, print the
//! record, append it to the audit log; the exit status says how it ended.

use super::ExitStatus;

/// Even when agentjail cannot work, stdout carries a valid record (an `agentjail_error:*`
/// stop) and the exit status is 2.
pub fn command(
    policy: Option<&std::path::Path>,
    audit_log: Option<std::path::PathBuf>,
    flags: crate::pipeline::RunFlags,
    action: &str,
) -> ExitStatus {
    let loaded = match crate::load_policy(policy) {
        Ok(p) => p,
        Err(e) => {
            // Even when agentjail cannot work, stdout carries a valid record.
            eprintln!("agentjail: {e}");
            let reason = crate::verdict::StopReason::AgentjailError("policy".into());
            super::print_json(
                &crate::pipeline::record::Record::refused(reason, &e.to_string()).to_value(),
            );
            return ExitStatus::Error;
        }
    };
    let audit = loaded.audit_log(audit_log);
    let options = match crate::pipeline::run_options(&loaded, flags) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("agentjail: {e}");
            let reason = crate::verdict::StopReason::AgentjailError("flags".into());
            super::print_json(
                &crate::pipeline::record::Record::refused(reason, &e.to_string()).to_value(),
            );
            return ExitStatus::Error;
        }
    };
    let record = crate::pipeline::run_action(&loaded, action, options);
    super::print_json(&record.value);
    if !crate::pipeline::audit::append(audit.as_deref(), &record) {
        return ExitStatus::Error;
    }
    if record.is_ok() {
        ExitStatus::Ok
    } else {
        ExitStatus::Stopped
    }
}
