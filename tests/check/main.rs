//! What is decided before any jail: the Python and JavaScript static checks against their
//! corpora and red-team programs, policy files, and the output schema validator's bounds.
//! One test binary, each subject a module (`cargo test --test check -- MODULE::`).
//!
//! - `corpus`, `data_corpus`, `js_corpus`, `redteam`: the checkers; `judge`: judge mode and
//!   policies/judge.toml (the input() rule, star imports);
//! - `policy_files`: loading, validation and lint of policies; `policy_pairs`: `policy diff`
//!   on every pair of shipped policies against a reviewer's table;
//! - `house_rules`: `cargo xtask house` passes on the tree and fails on a plant of each rule;
//! - `schema_bounds`: hostile schemas and documents, each in a child process under RLIMIT_AS;
//! - `bench`: the checker's timing harness (ignored; scripts/bench-check.sh runs it).

#[path = "../common/mod.rs"]
mod common;

mod bench;
mod corpus;
mod data_corpus;
mod house_rules;
mod js_corpus;
mod judge;
mod policy_files;
mod policy_pairs;
mod redteam;
mod schema_bounds;

// What the checker corpora share (not in tests/common: crates/agentjail-mcp's tests include
// it and have neither agentjail-check nor toml).

/// The same Python action as the contract's type (id "t", an empty payload), for the
/// checker tests that call `check_action` without a jail.
pub(crate) fn checked_action(code: &str) -> agentjail_engine::contract::Action {
    agentjail_engine::contract::Action {
        id: "t".into(),
        language: "python".into(),
        entrypoint: "main.py".into(),
        code: code.into(),
        input_payload: serde_json::json!({}),
        stdin: None,
        output_mode: Default::default(),
        output_schema: None,
        policy_hints: None,
        files: Vec::new(),
    }
}

/// policies/data.toml as the loader gives it; on a host whose packages the tables do not
/// cover (the loader refuses the policy there, data_corpus), the same rules
/// for the tables' own Python version: what the checker judges is a function of the code,
/// the rules and the tables, not of the host.
pub(crate) fn data_policy() -> agentjail_engine::policy::Policy {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/data.toml");
    match agentjail_engine::policy::load_file(&path) {
        Ok(loaded) => loaded.policy,
        Err(e) => {
            assert_eq!(e.key.as_deref(), Some("check.allowed_imports"), "{e}");
            let text = std::fs::read_to_string(&path).expect("read data.toml");
            let mut p: agentjail_engine::policy::Policy =
                toml::from_str(&text).expect("data.toml parses");
            p.interpreter.python_version =
                Some(agentjail_check::stdlib::PACKAGE_TABLE.python.into());
            p
        }
    }
}
