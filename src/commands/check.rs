//! `agentjail check`: the contract and the static check only; prints the decision.

use super::ExitStatus;

pub fn command(policy: Option<&std::path::Path>, action: &str) -> Result<ExitStatus, ExitStatus> {
    let loaded = super::load(policy)?;
    let (decision, code) = agentjail_engine::pipeline::check_only(&loaded.policy, action);
    super::print_json(&decision);
    Ok(if code == 0 {
        ExitStatus::Ok
    } else {
        ExitStatus::Stopped
    })
}
