//! What is decided before any jail: the Python and JavaScript static checks against their
//! corpora and red-team programs, policy files, and the output schema validator's bounds.
//! One test binary, each subject a module (`cargo test --test check -- MODULE::`).
//!
//! - `corpus`, `data_corpus`, `js_corpus`, `redteam`: the checkers;
//! - `policy_files`: loading, validation and lint of policies;
//! - `schema_bounds`: hostile schemas and documents, each in a child process under RLIMIT_AS;
//! - `bench`: the checker's timing harness (ignored; scripts/bench-check.sh runs it).

#[path = "../common/mod.rs"]
mod common;

mod bench;
mod corpus;
mod data_corpus;
mod js_corpus;
mod policy_files;
mod redteam;
mod schema_bounds;
