//! `agentjail learn ACTION… [--base POLICY] [-o NEW.toml] [--json]`: read the actions, let
//! the engine learn (agentjail_engine::policy::learn), write the policy and the summary.

use super::ExitStatus;
use agentjail_engine::policy::learn::{learn, LearnAction, Learned};

pub fn command(
    actions: &[String],
    base: Option<&std::path::Path>,
    output: Option<&std::path::Path>,
    json: bool,
) -> Result<ExitStatus, ExitStatus> {
    let loaded = super::load(base)?;
    let mut read = Vec::new();
    for spec in actions {
        let raw = agentjail_engine::pipeline::read_action(spec).map_err(|e| {
            eprintln!("agentjail: {e}");
            ExitStatus::Error
        })?;
        read.push(LearnAction::new(raw, spec));
    }
    // Each learning run: a cold jail of its own, no cache, no audit log.
    let mut cold = |p: &agentjail_engine::policy::LoadedPolicy, raw: &[u8]| {
        use agentjail_engine::pipeline::{job, record::Recorder, ColdStart};
        job(Recorder::new(), raw, p, &ColdStart::new(), None).value
    };
    let (learned, text) = learn(&loaded, &read, &mut cold).map_err(|e| {
        eprintln!("agentjail: {e}");
        ExitStatus::Error
    })?;
    let summary = if json {
        let v = serde_json::to_value(&learned).unwrap_or_default();
        agentjail_json::to_safe_string_pretty(&v) + "\n"
    } else {
        summary(&learned)
    };
    match output {
        Some(path) => {
            std::fs::write(path, &text).map_err(|e| {
                eprintln!("agentjail: cannot write {}: {e}", path.display());
                ExitStatus::Error
            })?;
            print!("{summary}");
        }
        None => {
            print!("{text}");
            eprint!("{summary}");
        }
    }
    Ok(if learned.complete() {
        ExitStatus::Ok
    } else {
        ExitStatus::Stopped
    })
}

/// The summary for people: one line a widened item, a need not met, an action's end.
fn summary(l: &Learned) -> String {
    let mut out = String::new();
    for w in &l.widened {
        out.push_str(&format!(
            "widened {}: {}  [{}]\n",
            w.edit.key,
            serde_json::to_string(&w.edit).unwrap_or_default(),
            w.evidence.join("; ")
        ));
    }
    for u in &l.unmet {
        out.push_str(&format!("not met: {}: {}\n", u.evidence, u.why));
    }
    for a in &l.actions {
        out.push_str(&format!(
            "action {}: {} ({})\n",
            a.action, a.status, a.stop_reason
        ));
    }
    out
}
