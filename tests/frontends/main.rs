//! The long-running front ends attacked through the real binary, as root and as nobody:
//! one test binary, each subject a module (`cargo test --test frontends -- MODULE::`).
//! `agentjail mcp` is tested in tests/mcp.rs.
//!
//! - `serve`: the server, its pools, sessions, cache and signals;
//! - `zygote`: `serve --zygote`;
//! - `js_run`: JavaScript through `run` and `serve`;
//! - `host_paths`: the paths agentjail creates or writes for its operator.

#[path = "../common/mod.rs"]
mod common;

mod host_paths;
mod js_run;
mod serve;
mod zygote;
