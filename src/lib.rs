//! agentjail's front ends over the engine crate (crates/agentjail-engine), which holds the
//! library; its modules are re-exported here under their old paths for the crates that
//! still depend on this one.

pub use agentjail_engine::{
    artifacts, cache, contract, digest, engine, environment, hostpath, inputs, load_policy,
    netproxy, output, pipeline, plan, policy, redact, runner, verdict, zygote,
};

pub mod cli;
pub mod commands;
pub mod mcp;
pub mod serve;
