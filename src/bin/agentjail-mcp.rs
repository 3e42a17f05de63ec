//! `agentjail-mcp`: the binary behind `agentjail mcp`, the MCP server (src/mcp/mod.rs says
//! why it is a binary of its own). `agentjail mcp ...` execs it with the same arguments;
//! it takes the same command line and serves `mcp` only.

use agentjail::cli::{Cli, Command};
use clap::Parser;

fn main() {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let Command::Mcp {
        policy,
        engine,
        audit_log,
    } = cli.command
    else {
        eprintln!(
            "agentjail-mcp serves `agentjail mcp` only; run agentjail for the other commands"
        );
        std::process::exit(2);
    };
    let loaded = match agentjail::load_policy(policy.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("agentjail: {e}");
            std::process::exit(2);
        }
    };
    std::process::exit(agentjail::mcp::serve(agentjail::mcp::McpArgs {
        engine: engine.config(loaded),
        jobs: agentjail::engine::default_jobs(),
        audit_log,
    }));
}
