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
pub mod commands;
pub mod contract;
pub mod digest;
pub mod engine;
pub mod environment;
pub mod hostpath;
pub mod inputs;
pub mod mcp;
pub mod netproxy;
pub mod output;
pub mod pipeline;
pub mod plan;
pub mod policy;
pub mod redact;
pub mod runner;
pub mod serve;
pub mod verdict;
pub mod zygote;

use policy::LoadedPolicy;

/// The policy to use: a file, or the embedded default.
pub fn load_policy(path: Option<&std::path::Path>) -> Result<LoadedPolicy, policy::PolicyError> {
    match path {
        None => policy::load_default(),
        Some(p) => policy::load_file(p),
    }
}
