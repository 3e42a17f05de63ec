//! `agentjail policy show|lint|diff`.

use super::ExitStatus;
use crate::cli::PolicyCommand;

pub fn command(action: PolicyCommand) -> Result<ExitStatus, ExitStatus> {
    match action {
        PolicyCommand::Show { file } => {
            let loaded = super::load(file.as_deref())?;
            print!("{}", agentjail_engine::policy::show(&loaded));
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
        PolicyCommand::Diff { old, new, json } => diff(&old, &new, json),
    }
}

/// `policy diff OLD NEW`: exit 1 when anything got weaker (agentjail_engine::policy::diff).
fn diff(
    old: &std::path::Path,
    new: &std::path::Path,
    json: bool,
) -> Result<ExitStatus, ExitStatus> {
    use agentjail_engine::policy::diff::{diff, render, Direction};
    let (a, b) = (super::load(Some(old))?, super::load(Some(new))?);
    let changes = diff(&a.policy, &b.policy);
    let count = |d| changes.iter().filter(|c| c.direction == d).count();
    let weaker = count(Direction::Weaker);
    if json {
        super::print_json(&serde_json::json!({
            "old": {"path": a.path, "sha256": a.sha256},
            "new": {"path": b.path, "sha256": b.sha256},
            "changes": changes,
            "weaker": weaker,
            "stronger": count(Direction::Stronger),
            "neutral": count(Direction::Neutral),
        }));
    } else {
        println!(
            "--- {} (sha256 {})\n+++ {} (sha256 {})",
            a.path, a.sha256, b.path, b.sha256
        );
        print!("{}", render(&changes));
    }
    Ok(if weaker == 0 {
        ExitStatus::Ok
    } else {
        ExitStatus::Stopped
    })
}
