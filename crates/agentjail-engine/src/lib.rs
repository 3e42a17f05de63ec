//! agentjail's engine: the library behind the execution boundary for code an AI agent wrote.
//! The front ends (the `agentjail` binary's commands and line-protocol server,
//! agentjail-http, agentjail-mcp) drive it; it names none of them.
//!
//! One run, as calls (docs/ARCHITECTURE.md has the layers and the rules between them):
//!
//! ```text
//! contract → policy (+hints) → check → plan → launch (prepare → start → supervise) → validate → record
//! ```

pub mod artifacts;
pub mod cache;
pub mod contract;
pub mod digest;
pub mod engine;
pub mod environment;
pub mod flags;
pub mod hostpath;
pub mod inputs;
pub mod listen;
pub mod netproxy;
pub mod output;
pub mod pipeline;
pub mod plan;
pub mod policy;
pub mod protocol;
pub mod redact;
pub mod runner;
pub mod verdict;
pub mod zygote;

use policy::LoadedPolicy;

/// The product's version (the record's `agentjail_version`, the cache key's first part).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The commit it was built from (build.rs), or "unknown" outside a git checkout.
pub const GIT_COMMIT: &str = env!("AGENTJAIL_GIT_COMMIT");
/// What `--version` prints after the program's name: `0.1.0 (<commit>)`.
pub const VERSION_LINE: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("AGENTJAIL_GIT_COMMIT"),
    ")"
);

/// The policy to use: a file, or the embedded default.
pub fn load_policy(path: Option<&std::path::Path>) -> Result<LoadedPolicy, policy::PolicyError> {
    match path {
        None => policy::load_default(),
        Some(p) => policy::load_file(p),
    }
}
