//! agentjail: the execution boundary for code an AI agent wrote.
//!
//! One run, as calls (docs/ARCHITECTURE.md has the layers and the rules between them):
//!
//! ```text
//! contract → policy (+hints) → check → plan → launch (prepare → start → supervise) → validate → record
//! ```

pub mod artifacts;
pub mod cache;
pub mod cli;
pub mod contract;
pub mod doctor;
pub mod engine;
pub mod environment;
pub mod exec;
pub mod hostpath;
pub mod inputs;
pub mod mcp;
pub mod netproxy;
pub mod output;
pub mod plan;
pub mod policy;
pub mod record;
pub mod redact;
pub mod run;
pub mod runner;
pub mod serve;
pub mod zygote;

use policy::LoadedPolicy;
use record::{Record, Recorder};
use serde_json::json;

/// The policy to use: a file, or the embedded default.
pub fn load_policy(path: Option<&std::path::Path>) -> Result<LoadedPolicy, String> {
    match path {
        None => policy::load_default().map_err(|e| e.to_string()),
        Some(p) => policy::load_file(p).map_err(|e| e.to_string()),
    }
}

/// `agentjail run`'s options besides the policy and the action.
#[derive(Default)]
pub struct RunOptions {
    pub cache: Option<cache::Cache>,
    pub inputs: Vec<plan::HostInput>,
    pub artifacts_dir: Option<artifacts::ArtifactsDir>,
}

/// `agentjail run`: the whole pipeline for one action (a file path, or `-` for stdin), its
/// jail started on this thread for it; answered from the cache when it holds the job.
pub fn run_action(policy: &LoadedPolicy, action: &str, options: RunOptions) -> Record {
    let raw = match run::read_action(action) {
        Ok(raw) => raw,
        Err(e) => {
            let mut r = Recorder::new();
            r.set(
                "policy",
                json!({"path": policy.path, "sha256": policy.sha256}),
            );
            let stop = run::unreadable(&mut r, &e);
            let mut record = r.finish(stop.reason, stop.phase);
            record.seal(&policy.policy.redaction);
            return record;
        }
    };
    let mut source = run::ColdStart::new();
    source.inputs = options.inputs;
    source.artifacts_dir = options.artifacts_dir;
    run::job(
        Recorder::new(),
        &raw,
        policy,
        &source,
        options.cache.as_ref(),
    )
}

/// `agentjail doctor [--policy FILE]`: exit 0 when the probe jail of that policy (the
/// embedded default without one) ran and every control it requires is available, 1
/// otherwise (also when the embedded default does not load on this host: a failed `policy`
/// check says why), 2 when a policy file given cannot be loaded.
pub fn doctor_command(json: bool, policy: Option<&std::path::Path>) -> i32 {
    let report = match load_policy(policy) {
        Ok(p) => doctor::run(Some(&p)),
        // No --policy: the default does not fit this host (no python3 agentjail can use):
        // a finding about the host, reported with the others.
        Err(e) if policy.is_none() => doctor::run_without_default_policy(&e),
        // A policy file given that does not load: bad input.
        Err(e) => {
            eprintln!("agentjail doctor: {e}");
            return 2;
        }
    };
    let text = if json {
        serde_json::to_string_pretty(&report.to_json()).map(|s| s + "\n")
    } else {
        Ok(report.to_text())
    };
    // Written, not println!: a reader that goes away (`doctor | head`) is not a panic.
    use std::io::Write;
    match text {
        Ok(t) => {
            let _ = std::io::stdout().lock().write_all(t.as_bytes());
        }
        Err(e) => eprintln!("agentjail: {e}"),
    }
    i32::from(!report.all_required_ok())
}
