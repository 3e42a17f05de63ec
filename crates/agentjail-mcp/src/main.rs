//! `agentjail-mcp`: the binary behind `agentjail mcp`, the engine as an MCP server on stdio,
//! so an agent can call agentjail as a tool (Claude Code/Desktop, the OpenAI Agents SDK,
//! smolagents, pydantic-ai, ...). `agentjail mcp ...` execs it with the same arguments
//! (the agentjail binary's src/mcp.rs, `exec_server_binary`); it takes the same command line
//! and serves `mcp` only: `agentjail mcp`'s flags are the engine crate's
//! (`agentjail_engine::flags::McpFlags`), which both binaries parse.
//!
//! Five tools ([`tools`]): `run_python` (one run on a warm jail), `check_python` (the static
//! check alone), `python_session_start`/`_exec`/`_close` (one interpreter kept across
//! calls). Each result is the record (or the decision) as `structuredContent` plus the same
//! JSON as text, `isError` when the record's status is not `ok` ([`result`]).
//!
//! # Why rmcp, and why it lives in a crate and a binary of its own
//!
//! The protocol is the official Rust SDK's (`rmcp`): it speaks both eras the official
//! Python client 2.3 probes for, the stateless `2026-07-28` protocol opened by
//! `server/discover` and the `initialize` handshake of `2024-11-05` … `2025-11-25`, and
//! tracks the spec as it moves. It is tokio-based; the runtime is started here, on one
//! thread (`current_thread`), and nowhere else.
//!
//! rmcp, tokio and the serde code of rmcp's model add 2.0 MB to a static binary (7.1 →
//! 9.1 MB measured). In one binary with `run` and `exec`, that cost next to no CPU at start,
//! but the kernel's fault-around maps a share of any larger text: the launcher's peak RSS
//! went from 3.4 to 4.3 MiB (file-backed pages), past the 4 MiB the launch benchmark holds
//! it to. So the server is this binary alone, and `agentjail mcp` in the main binary only
//! execs it. This crate is the only one that depends on rmcp and tokio, so cargo keeps them
//! out of the agentjail binary (`cargo tree -p agentjail` shows neither); it uses the engine
//! crate's engine and pipeline like any front end (never the agentjail binary's code), and
//! nothing depends on it. docs/BENCH.md has the
//! measurements.
//!
//! The transport is ours ([`transport`]): strict JSON in (duplicate keys refused, bounded),
//! safe JSON out, a JSON-RPC error for every bad line, and shutdown the moment the client
//! is gone.
//!
//! # Lifetime
//!
//! One process is one MCP connection and one session owner. The client closing stdin (MCP's
//! stdio shutdown), stdout breaking (the client died) or SIGTERM/SIGINT/SIGHUP all mean the
//! same: running calls are stopped at once (each gets its `interrupted` record, written if
//! anyone still reads), the connection's sessions end, every jail is killed and its cgroup
//! removed, exit 0. If agentjail itself is SIGKILLed, its jails die with it (PDEATHSIG on
//! the spawner threads) and the next start sweeps their cgroups.

mod handler;
mod result;
mod tools;
mod transport;

use agentjail_engine::engine::{Engine, EngineConfig};
use agentjail_engine::flags::McpFlags;
use agentjail_engine::pipeline::session::Owner;
use agentjail_jail::os;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

struct McpArgs {
    engine: EngineConfig,
    /// Tool calls that run at once (more wait for a slot).
    jobs: usize,
    audit_log: Option<PathBuf>,
}

// agentjail's command line as this binary reads it: `mcp` and its flags (the same
// definition `agentjail mcp` parses), any other command refused with the fix.
#[derive(Debug, Parser)]
#[command(
    name = "agentjail",
    version = agentjail_engine::VERSION_LINE,
    about = "agentjail-mcp: the binary `agentjail mcp` execs, with agentjail's command line; it serves that command only"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The engine as an MCP server on stdio (`agentjail mcp`, which execs this binary).
    Mcp {
        #[command(flatten)]
        flags: McpFlags,
    },
    /// Any other command: agentjail's, not this binary's (refused whatever its words).
    #[command(external_subcommand)]
    Other(#[allow(dead_code)] Vec<String>),
}

/// How long finished-but-unanswered calls may take to drain at shutdown.
const DRAIN: Duration = Duration::from_secs(5);

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
        flags: McpFlags {
            policy,
            engine,
            audit_log,
        },
    } = cli.command
    else {
        eprintln!(
            "agentjail-mcp serves `agentjail mcp` only; run agentjail for the other commands"
        );
        std::process::exit(2);
    };
    let loaded = match agentjail_engine::load_policy(policy.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("agentjail: {e}");
            std::process::exit(2);
        }
    };
    std::process::exit(serve(McpArgs {
        engine: engine.config(loaded),
        jobs: agentjail_engine::engine::default_jobs(),
        audit_log,
    }));
}

fn next_connection() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::SeqCst)
}

/// `agentjail mcp`; returns the exit code.
fn serve(args: McpArgs) -> i32 {
    // Block the termination signals before any thread starts (every thread inherits the
    // mask), so they arrive only on this signalfd.
    let Some(sigfd) = agentjail_jail::supervise::block_termination_signals() else {
        eprintln!("agentjail: cannot block SIGTERM/SIGINT/SIGHUP into a signalfd");
        return 2;
    };
    // The engine appends each record to the audit log itself (Engine::handle).
    let engine = match Engine::start_server(args.engine, args.audit_log) {
        Ok((e, _)) => e,
        Err(e) => {
            eprintln!("agentjail: {e}");
            return 2;
        }
    };
    let owner = Owner {
        connection: next_connection(),
        uid: None,
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        // The check and the schema validator recurse over hostile input within their own
        // bounds; blocking-pool threads get the stack `serve`'s workers get.
        .thread_stack_size(16 * 1024 * 1024)
        .thread_name("agentjail-mcp-job")
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("agentjail: cannot start the MCP runtime: {e}");
            engine.shutdown();
            return 2;
        }
    };
    // The client is gone (or a signal): stop what runs now. The transport then ends the
    // input, and rmcp answers the stopped calls before it returns.
    let gone: transport::Hook = {
        let engine = Arc::clone(&engine);
        Arc::new(move |_why| {
            engine.stop_jobs();
            engine.close_sessions_of(owner.connection);
        })
    };
    let stdin = std::io::BufReader::new(std::io::stdin());
    let (stdio, writer_thread) = match transport::start(stdin, std::io::stdout(), Arc::clone(&gone))
    {
        Ok(t) => t,
        Err(e) => {
            eprintln!("agentjail: {e}");
            engine.shutdown();
            return 2;
        }
    };
    watch_signals(sigfd, gone, stdio.input());
    let handler = handler::Handler::new(Arc::clone(&engine), owner, args.jobs);
    let writer = stdio.writer();
    runtime.block_on(serve_connection(handler, stdio));
    engine.stop_jobs();
    engine.close_sessions_of(owner.connection);
    runtime.shutdown_timeout(DRAIN);
    engine.shutdown();
    writer.close();
    // A client that stopped reading is not waited for: the writer may be blocked on its
    // stdout for good, and the process's exit ends it.
    if !writer.stalled() {
        writer_thread.join();
    }
    0
}

/// Serve one connection until it ends. A stray first message (a notification or a response
/// before any request) ends rmcp's handshake phase with an error; it is dropped and the
/// server waits for the handshake again on the same streams, so no message can kill it.
async fn serve_connection(handler: handler::Handler, stdio: transport::Stdio) {
    use rmcp::service::ServerInitializeError as E;
    loop {
        match rmcp::service::serve_server(handler.clone(), stdio.clone()).await {
            Ok(running) => {
                let _ = running.waiting().await;
                return;
            }
            Err(E::ConnectionClosed(_) | E::Cancelled) => return,
            // Already answered where an answer was due (a failed initialize gets its error
            // response); wait for the next message.
            Err(_) => continue,
        }
    }
}

/// A thread that turns the first termination signal into the client-gone shutdown.
fn watch_signals(sigfd: std::os::fd::OwnedFd, gone: transport::Hook, input: transport::Input) {
    let spawned = std::thread::Builder::new()
        .name("agentjail-mcp-signals".into())
        .spawn(move || loop {
            match os::fd::poll_one(&sigfd, libc::POLLIN, -1) {
                Ok(r) if r & libc::POLLIN != 0 => {
                    if os::fd::read_signalfd(&sigfd).is_some() {
                        gone("signal");
                        input.close();
                        return;
                    }
                }
                Ok(_) | Err(libc::EINTR) => continue,
                Err(_) => return,
            }
        });
    if spawned.is_err() {
        eprintln!("agentjail: cannot start the signal thread; SIGTERM/SIGINT/SIGHUP stay blocked: close stdin to stop agentjail mcp");
    }
}
