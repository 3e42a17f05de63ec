//! agentjail: the execution boundary for code an AI agent wrote.
//!
//! contract → policy → check → plan → jail → supervise → validate → record.

pub mod check;
pub mod cli;
pub mod contract;
pub mod doctor;
pub mod exec;
pub mod jail;
pub mod json;
pub mod output;
pub mod plan;
pub mod policy;
pub mod record;
pub mod run;
pub mod schema;
pub mod supervise;

/// The policy to use: a file, or the embedded default. (policy, path, sha256 of the bytes).
pub fn load_policy(
    path: Option<&std::path::Path>,
) -> Result<(policy::Policy, String, String), String> {
    let loaded = match path {
        None => policy::load_default(),
        Some(p) => policy::load_file(p).map_err(|e| e.to_string())?,
    };
    Ok((loaded.policy, loaded.path, loaded.sha256))
}

/// `agentjail doctor`: exit 0 when every control the default policy requires is available.
pub fn doctor_command(json: bool) -> i32 {
    let report = doctor::run();
    if json {
        match serde_json::to_string_pretty(&report.to_json()) {
            Ok(s) => println!("{s}"),
            Err(e) => eprintln!("agentjail: {e}"),
        }
    } else {
        print!("{}", report.to_text());
    }
    i32::from(!report.all_required_ok())
}
