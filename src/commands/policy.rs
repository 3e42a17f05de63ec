//! `agentjail policy show|lint`.

use super::ExitStatus;
use crate::cli::PolicyCommand;

pub fn command(action: PolicyCommand) -> Result<ExitStatus, ExitStatus> {
    match action {
        PolicyCommand::Show { file, json } => {
            let loaded = super::load(file.as_deref())?;
            if json {
                println!("{}", agentjail_engine::policy::show_json(&loaded));
            } else {
                print!("{}", agentjail_engine::policy::show(&loaded));
            }
            Ok(ExitStatus::Ok)
        }
        PolicyCommand::Lint { file } => {
            let loaded = super::load(file.as_deref())?;
            let warnings = agentjail_engine::policy::lint(&loaded.policy);
            for w in &warnings {
                println!("warning: {}: {}", w.key, w.message);
            }
            println!(
                "{}: {} warning(s), sha256 {}",
                loaded.path,
                warnings.len(),
                loaded.sha256
            );
            Ok(if warnings.is_empty() {
                ExitStatus::Ok
            } else {
                ExitStatus::Stopped
            })
        }
    }
}
