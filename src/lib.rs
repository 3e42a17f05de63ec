//! agentjail: the execution boundary for code an AI agent wrote.
//!
//! contract → policy → check → plan → jail → supervise → validate → record.

pub mod check;
pub mod cli;
pub mod contract;
pub mod doctor;
pub mod exec;
pub mod jail;
pub mod output;
pub mod plan;
pub mod policy;
pub mod record;
pub mod run;
pub mod supervise;

/// The policy to use: a file, or the embedded default. (path, sha256 of the exact bytes).
pub fn load_policy(
    path: Option<&std::path::Path>,
) -> Result<(policy::Policy, String, String), String> {
    use sha2::{Digest, Sha256};
    let hex = |b: &[u8]| {
        Sha256::digest(b)
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect::<String>()
    };
    match path {
        None => Ok((
            policy::Policy::default(),
            "<embedded default>".into(),
            hex(policy::DEFAULT_POLICY_TOML.as_bytes()),
        )),
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
            let pol: policy::Policy =
                toml::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))?;
            Ok((pol, p.display().to_string(), hex(text.as_bytes())))
        }
    }
}
