//! Helpers shared by the checker's corpus tests (apart from tests/common, the jail attack
//! harness, which they do not need).
#![allow(dead_code)]

pub mod python;

/// policies/data.toml as the loader gives it; on a host whose packages the tables do not
/// cover (the loader refuses the policy there, tests/check_data_corpus.rs),
/// the same rules for the tables' own Python version: what the checker judges is a function
/// of the code, the rules and the tables, not of the host.
pub fn data_policy() -> agentjail::policy::Policy {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/data.toml");
    match agentjail::policy::load_file(&path) {
        Ok(loaded) => loaded.policy,
        Err(e) => {
            assert_eq!(e.key.as_deref(), Some("check.allowed_imports"), "{e}");
            let text = std::fs::read_to_string(&path).expect("read data.toml");
            let mut p: agentjail::policy::Policy = toml::from_str(&text).expect("data.toml parses");
            p.interpreter.python_version =
                Some(agentjail_check::stdlib::PACKAGE_TABLE.python.into());
            p
        }
    }
}
