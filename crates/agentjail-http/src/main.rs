//! `agentjail-http`: the binary behind `agentjail serve --http ADDR`, the engine behind HTTP
//! (docs/REFERENCE.md "HTTP"). `agentjail serve --http ...` execs it with the same
//! arguments; it takes agentjail's command line and serves `serve --http` only (`serve`'s
//! flags are the engine crate's, `agentjail_engine::flags::ServeFlags`, which both binaries
//! parse).
//!
//! hyper (HTTP/1.1) on a one-thread tokio runtime reads requests; each job runs on tokio's
//! blocking threads, at most `-j N` at once, on the same engine as the JSON-lines server
//! (pools, sessions, cache, the engine flags).
//!
//! The request handling lives in the crate's library (src/lib.rs), so the fuzz target
//! (fuzz/fuzz_targets/http_request.rs) reaches the same code; this file is the command line.

use agentjail_engine::flags::ServeFlags;
use agentjail_http::server;
use clap::{Parser, Subcommand};

// agentjail's command line as this binary reads it: `serve` and its flags (the same
// definition `agentjail serve` parses), any other command refused with the fix.
#[derive(Debug, Parser)]
#[command(
    name = "agentjail",
    version = agentjail_engine::VERSION_LINE,
    about = "agentjail-http: the binary `agentjail serve --http` execs, with agentjail's command line; it serves that command only"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once, at start: the size of the flags' variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// The engine as a server; with --http, this binary's HTTP (`agentjail serve --http`).
    Serve {
        #[command(flatten)]
        flags: ServeFlags,
    },
    /// Any other command: agentjail's, not this binary's (refused whatever its words).
    #[command(external_subcommand)]
    Other(#[allow(dead_code)] Vec<String>),
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let Command::Serve {
        flags:
            ServeFlags {
                policy,
                engine,
                jobs,
                audit_log,
                http: Some(addr),
                token_file,
                pod_workspace,
                unread_budget,
                ..
            },
    } = cli.command
    else {
        eprintln!("agentjail-http serves `agentjail serve --http ADDR` only; run agentjail for the other commands");
        std::process::exit(2);
    };
    let loaded = match agentjail_engine::load_policy(policy.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("agentjail: {e}");
            std::process::exit(2);
        }
    };
    let unread_budget = match unread_budget
        .as_deref()
        .map(agentjail_engine::policy::parse_bytes)
    {
        None => server::DEFAULT_UNREAD_BUDGET,
        Some(Ok(n)) if n >= server::MIN_UNREAD_BUDGET as u64 => {
            usize::try_from(n).unwrap_or(usize::MAX)
        }
        Some(Ok(n)) => {
            eprintln!(
                "agentjail: --unread-budget {n} is below the least, {} (1 MiB): give e.g. --unread-budget 256MiB",
                server::MIN_UNREAD_BUDGET
            );
            std::process::exit(2);
        }
        Some(Err(e)) => {
            eprintln!("agentjail: --unread-budget: {e} (give bytes, or e.g. 256MiB, 1GiB)");
            std::process::exit(2);
        }
    };
    std::process::exit(server::serve(server::Args {
        engine: engine.config(loaded),
        jobs: jobs.unwrap_or_else(agentjail_engine::engine::default_jobs),
        addr,
        token_file,
        audit_log,
        pod_workspace,
        unread_budget,
    }));
}
