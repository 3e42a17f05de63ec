//! `agentjail mcp`: the engine as an MCP server on stdio, so an agent can call agentjail as a
//! tool (Claude Code/Desktop, the OpenAI Agents SDK, smolagents, pydantic-ai, ...).
//!
//! Five tools ([`tools`]): `run_python` (one run on a warm jail), `check_python` (the static
//! check alone), `python_session_start`/`_exec`/`_close` (one interpreter kept across
//! calls). Each result is the record (or the decision) as `structuredContent` plus the same
//! JSON as text, `isError` when the record's status is not `ok` ([`result`]).
//!
//! # Why rmcp, and why it lives in a binary of its own
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
//! it to. So this module is linked into `agentjail-mcp` (src/bin/agentjail-mcp.rs) alone;
//! `agentjail mcp` in the main binary only execs that sibling ([`exec_server_binary`], which
//! touches nothing of rmcp or tokio, so none of it is linked there). docs/BENCH.md has the
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

pub mod handler;
pub mod result;
pub mod tools;
pub mod transport;

use crate::engine::session::Owner;
use crate::engine::{Engine, EngineConfig};
use crate::jail::sys;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub struct McpArgs {
    pub engine: EngineConfig,
    /// Tool calls that run at once (more wait for a slot).
    pub jobs: usize,
    pub audit_log: Option<PathBuf>,
}

/// How long finished-but-unanswered calls may take to drain at shutdown.
const DRAIN: Duration = Duration::from_secs(5);

/// The binary that serves `agentjail mcp`, installed next to `agentjail`.
pub const SERVER_BINARY: &str = "agentjail-mcp";

/// `agentjail mcp` in the main binary: replace this process with [`SERVER_BINARY`] from
/// the directory of the running executable (symlinks resolved), with the same arguments
/// (`mcp ...`), environment and stdio; the pid stays the client's child. Returns only when
/// the exec failed (exit status 2, the fix on stderr).
pub fn exec_server_binary() -> i32 {
    use std::os::unix::process::CommandExt;
    let sibling = match std::env::current_exe() {
        Ok(p) => p.with_file_name(SERVER_BINARY),
        Err(e) => {
            eprintln!(
                "agentjail: cannot find the running executable to start {SERVER_BINARY}: {e}"
            );
            return 2;
        }
    };
    let err = std::process::Command::new(&sibling)
        .args(std::env::args_os().skip(1))
        .exec();
    eprintln!(
        "agentjail: cannot start {}: {err}; `agentjail mcp` runs the {SERVER_BINARY} binary installed next to agentjail (scripts/install.sh installs both; cargo build makes both)",
        sibling.display()
    );
    2
}

fn next_connection() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::SeqCst)
}

/// `agentjail mcp`; returns the exit code.
pub fn serve(args: McpArgs) -> i32 {
    // Block the termination signals before any thread starts (every thread inherits the
    // mask), so they arrive only on this signalfd.
    let Some(sigfd) = crate::supervise::block_termination_signals() else {
        eprintln!("agentjail: cannot block SIGTERM/SIGINT/SIGHUP into a signalfd");
        return 2;
    };
    let (engine, audit) = match Engine::start_server(args.engine, args.audit_log) {
        Ok(e) => e,
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
    let handler = handler::Handler::new(Arc::clone(&engine), owner, args.jobs, audit);
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
            match sys::poll_one(sigfd.as_raw_fd(), libc::POLLIN, -1) {
                Ok(r) if r & libc::POLLIN != 0 => {
                    if sys::read_signalfd(sigfd.as_raw_fd()).is_some() {
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
