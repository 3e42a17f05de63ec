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

/// The policy to use: a file, a shipped policy by name (`python`, `data`: see
/// [`named_policy`]), or the embedded default.
pub fn load_policy(path: Option<&std::path::Path>) -> Result<LoadedPolicy, policy::PolicyError> {
    match path {
        None => policy::load_default(),
        Some(p) => match named_policy(p) {
            Some(found) => policy::load_file(&found?),
            None => policy::load_file(p),
        },
    }
}

/// A bare name (letters, digits, `-`, `_`: no `/`, no `.toml`) names a shipped policy:
/// `NAME.toml` in, first found, `$AGENTJAIL_POLICY_DIR`, the install's share directory beside
/// the binary (`BIN/../share/agentjail/policies`, where scripts/install.sh and the .deb put
/// them), the checkout whose `target/` holds the binary (`policies/`), then
/// `/usr/local/share`'s and `/usr/share`'s. None for anything else (a path, as before); an
/// error naming every place looked for an unknown name.
pub fn named_policy(
    arg: &std::path::Path,
) -> Option<Result<std::path::PathBuf, policy::PolicyError>> {
    use std::path::PathBuf;
    let name = arg.to_str()?;
    if name.contains('/') || name.ends_with(".toml") || name.is_empty() {
        return None;
    }
    let valid = name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !valid {
        return None; // `policy.conf`, `.hidden`: a file in the working directory, as before
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(d) = std::env::var_os("AGENTJAIL_POLICY_DIR").filter(|d| !d.is_empty()) {
        dirs.push(d.into());
    }
    if let Some(bin_dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(PathBuf::from))
    {
        if let Some(prefix) = bin_dir.parent() {
            dirs.push(prefix.join("share/agentjail/policies"));
        }
        // A cargo build: CHECKOUT/target/[TRIPLE/]PROFILE/agentjail.
        let checkout = bin_dir
            .ancestors()
            .take(4)
            .find(|a| a.file_name().is_some_and(|n| n == "target"))
            .and_then(|t| t.parent());
        if let Some(c) = checkout.filter(|c| c.join("Cargo.toml").is_file()) {
            dirs.push(c.join("policies"));
        }
    }
    dirs.push("/usr/local/share/agentjail/policies".into());
    dirs.push("/usr/share/agentjail/policies".into());
    dirs.dedup();
    let file = format!("{name}.toml");
    if let Some(found) = dirs.iter().map(|d| d.join(&file)).find(|f| f.is_file()) {
        return Some(Ok(found));
    }
    let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    Some(Err(policy::PolicyError {
        origin: name.to_string(),
        position: None,
        key: None,
        message: format!("no policy named {name:?}: no {file} in {}", looked.join(", ")),
        hint: format!("a file in this directory is ./{name}; install the policies (scripts/install.sh) or set AGENTJAIL_POLICY_DIR to their directory"),
    }))
}
