//! `agentjail policy show|lint|diff`, and `agentjail explain RECORD` (what policy edit a
//! stopped record needs).

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

/// `explain RECORD`: the policy edit a stopped record needs (agentjail_engine::policy::explain).
pub fn explain(
    record: &std::path::Path,
    policy: Option<&std::path::Path>,
    json: bool,
) -> Result<ExitStatus, ExitStatus> {
    use agentjail_engine::policy::explain::{explain, render};
    let text = if record == std::path::Path::new("-") {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).map(|_| s)
    } else {
        std::fs::read_to_string(record)
    }
    .map_err(|e| {
        eprintln!(
            "agentjail: cannot read the record {}: {e}",
            record.display()
        );
        ExitStatus::Error
    })?;
    let rec: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        eprintln!(
            "agentjail: {} is not a record (JSON): {e}",
            record.display()
        );
        ExitStatus::Error
    })?;
    let loaded = match policy {
        Some(p) => super::load(Some(p))?,
        None => {
            let Some(path) = rec["policy"]["path"].as_str() else {
                eprintln!(
                    "agentjail: the record names no policy file (policy.path): pass --policy FILE"
                );
                return Err(ExitStatus::Error);
            };
            let loaded = if path == "<embedded default>" || path.is_empty() {
                super::load(None)?
            } else {
                super::load(Some(std::path::Path::new(path)))?
            };
            if rec["policy"]["sha256"].as_str() != Some(loaded.sha256.as_str()) {
                eprintln!(
                    "agentjail: {path} has changed since the record was made (its sha256 is not the record's policy.sha256): pass --policy with the policy it ran under"
                );
                return Err(ExitStatus::Error);
            }
            loaded
        }
    };
    let e = explain(&rec, &loaded.policy);
    if json {
        super::print_json(&serde_json::to_value(&e).unwrap_or_default());
    } else {
        print!("{}", render(&e));
    }
    Ok(ExitStatus::Ok)
}
