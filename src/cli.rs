//! Command-line definitions (clap) and the one step from the server front ends' shared
//! flags to the engine they configure (the commands themselves: crate::commands). The spellings are a fixed contract (docs/ARCHITECTURE.md).

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "agentjail",
    version = agentjail_engine::VERSION_LINE,
    about = "Run AI-agent-generated code behind a policy check and a Linux namespace jail, and say exactly what happened",
    after_help = "Examples:\n  agentjail run examples/incident/action.json\n  agentjail check --policy policies/data.toml action.json\n  echo hi | agentjail exec -- /usr/bin/cat\n  agentjail policy show policies/default.toml\n  agentjail doctor"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The whole pipeline: contract, policy, static check, jail, validation, record.
    #[command(
        after_help = "Exit status: 0 ok, 1 stopped (any stop reason), 2 agentjail could not work.\n\nExample:\n  agentjail run examples/incident/action.json | jq .output"
    )]
    Run {
        /// Policy file (default: the embedded default policy).
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
        /// Append the record to this file as one JSON line (overrides the policy's audit.log).
        #[arg(long, value_name = "FILE")]
        audit_log: Option<PathBuf>,
        /// Answer from (and store into) a result cache in this directory (created 0700; must be ours).
        #[arg(long, value_name = "DIR")]
        cache: Option<PathBuf>,
        /// How long a cache entry stays valid, seconds.
        #[arg(long, value_name = "SECONDS", default_value_t = 86_400)]
        cache_ttl: u64,
        /// Bind a host file or directory read-only at /app/in/NAME (default NAME: its last
        /// component); only under the policy's files.host_roots. Repeatable.
        #[arg(long = "input", value_name = "HOST_PATH[:NAME]")]
        inputs: Vec<String>,
        /// Write the artifacts here (a new or empty directory of ours) instead of inline.
        #[arg(long, value_name = "DIR")]
        artifacts_dir: Option<PathBuf>,
        /// The action JSON file, or - for stdin.
        #[arg(value_name = "ACTION.json|-")]
        action: String,
    },
    /// Contract validation and static check only; prints the decision.
    #[command(
        after_help = "Exit status: 0 allow, 1 deny, 2 error.\n\nExample:\n  agentjail check action.json"
    )]
    Check {
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
        #[arg(value_name = "ACTION.json|-")]
        action: String,
    },
    /// Run a command in the jail alone, stdin passed through, output passed out under the caps.
    #[command(
        after_help = "Exit status: the command's own; 128+N when signal N killed it; 124 when agentjail stopped it (reason on stderr); 125 when the jail could not be set up.\n\nExamples:\n  agentjail exec -- /usr/bin/python3 -I -c 'print(1)'\n  agentjail exec --time-limit 5 --memory-limit 512MiB --record rec.json -- /bin/sh -c 'ls /'"
    )]
    Exec {
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
        /// Write the JSON record here.
        #[arg(long, value_name = "FILE")]
        record: Option<PathBuf>,
        /// Wall-clock limit in seconds (fractions allowed); replaces the policy's.
        #[arg(long, value_name = "SECONDS")]
        time_limit: Option<f64>,
        /// Memory limit (bytes, or 64KiB / 256MiB / 1GiB); replaces the policy's.
        #[arg(long, value_name = "SIZE")]
        memory_limit: Option<String>,
        /// Cap on stdout and on stderr, each, in bytes; replaces the policy's.
        #[arg(long, value_name = "BYTES")]
        output_limit: Option<u64>,
        /// Run the command in /app/out (a capped tmpfs) and copy the files it leaves there
        /// into DIR (a new or empty directory of ours), listed in the record.
        #[arg(long, value_name = "DIR")]
        artifacts_dir: Option<PathBuf>,
        /// Print the jail plan as JSON and exit without running anything.
        #[arg(long)]
        print_plan: bool,
        /// The command and its arguments.
        #[arg(last = true, required = true, value_name = "CMD")]
        cmd: Vec<String>,
    },
    /// The engine as a server: JSON lines on stdin/stdout, or on a unix socket. Warm
    /// single-use jails, sessions, an optional result cache.
    #[command(
        after_help = "Protocol (one JSON object per line, one response per line, tagged with the request's id):\n  {\"id\":\"r1\",\"op\":\"run\",\"action\":{...}}            -> {\"id\":\"r1\",\"record\":{...}}\n  {\"id\":\"r2\",\"op\":\"check\",\"action\":{...}}          -> {\"id\":\"r2\",\"decision\":{...}}\n  {\"id\":\"r3\",\"op\":\"session_start\"}                   -> {\"id\":\"r3\",\"session\":\"<id>\"}\n  {\"id\":\"r4\",\"op\":\"session_exec\",\"session\":\"<id>\",\"code\":\"x=1\"} -> {\"id\":\"r4\",\"record\":{...}}\n  {\"id\":\"r5\",\"op\":\"session_close\",\"session\":\"<id>\"} -> {\"id\":\"r5\",\"closed\":true}\nEOF on stdin: finish what is running, print it, exit 0. SIGTERM: running jobs get 10 s, then stop with records.\n\nExamples:\n  agentjail serve --pool 4 < requests.jsonl\n  agentjail serve --socket /run/agentjail/agentjail.sock --socket-group agents"
    )]
    Serve {
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
        #[command(flatten)]
        engine: EngineFlags,
        /// Requests run concurrently (default: 2 per core, at least 4).
        #[arg(short = 'j', long = "jobs", value_name = "N")]
        jobs: Option<usize>,
        /// Listen on this unix socket instead of stdin/stdout (created 0600; systemd socket activation is used when present).
        #[arg(long, value_name = "PATH")]
        socket: Option<PathBuf>,
        /// Make the socket 0660 and give it to this group.
        #[arg(long, value_name = "GROUP", requires = "socket")]
        socket_group: Option<String>,
        /// Serve HTTP instead of JSON lines, on 127.0.0.1:8080, [::1]:8080 or unix:PATH (the agentjail-http binary; docs/REFERENCE.md "HTTP").
        #[arg(long, value_name = "ADDR", conflicts_with = "socket")]
        http: Option<String>,
        /// With --http: bearer tokens, one `NAME TOKEN` per line (mode 0600 or stricter); required on an address that is not loopback.
        #[arg(long, value_name = "FILE", requires = "http")]
        token_file: Option<PathBuf>,
        /// With --http, inside a pod: start one workspace the server owns and serve it at the Kubernetes agent-sandbox runtime's routes (GET /, POST /execute, POST /upload, GET /download|list|exists/PATH).
        #[arg(long, requires = "http")]
        pod_workspace: bool,
        /// The most response bytes produced and not yet taken by their clients, over all connections together (bytes, or 64MiB / 1GiB; default 256MiB; at least 16MiB on the JSON-lines server, 1MiB with --http); past it the clients with the most unread (JSON lines) or stalled longest (--http) are dropped and their jobs stopped.
        #[arg(long, value_name = "BYTES")]
        unread_budget: Option<String>,
        /// Append every record to this file as one JSON line (overrides the policy's audit.log).
        #[arg(long, value_name = "FILE")]
        audit_log: Option<PathBuf>,
    },
    /// The engine as an MCP server on stdio: tools run_python, check_python and
    /// python_session_start/exec/close for agents (Claude Code/Desktop, the OpenAI Agents
    /// SDK, smolagents, pydantic-ai, ...).
    #[command(
        after_help = "MCP over stdio (newline-delimited JSON-RPC). Closing stdin ends the server: running calls are stopped, sessions end, every jail is removed.\n\nExamples:\n  claude mcp add --transport stdio agentjail -- agentjail mcp --policy /usr/local/share/agentjail/policies/data.toml\n  agentjail mcp --pool 4"
    )]
    Mcp {
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
        #[command(flatten)]
        engine: EngineFlags,
        /// Append every record to this file as one JSON line (overrides the policy's audit.log).
        #[arg(long, value_name = "FILE")]
        audit_log: Option<PathBuf>,
    },
    /// Show the effective policy or lint it.
    Policy {
        #[command(subcommand)]
        action: PolicyCommand,
    },
    /// Which protections this host can enforce, each with the fix when it cannot.
    #[command(
        after_help = "Starts a real probe jail from the policy's own plan (every mount, procfs, landlock, seccomp, cgroup, the interpreter) and reports the first step that fails, with the fix; says when it runs in a container and gives that container's fix.\n\nExit status: 0 when the probe jail ran and every control the policy requires is available, 1 otherwise, 2 when the policy cannot be loaded.\n\nExamples:\n  agentjail doctor\n  agentjail doctor --json --policy policies/data.toml"
    )]
    Doctor {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
        /// The policy whose jail is probed (default: the embedded default policy).
        #[arg(long)]
        policy: Option<PathBuf>,
    },
}

/// The engine's flags, the same for both server front ends (`serve`, `mcp`).
#[derive(Debug, Args)]
pub struct EngineFlags {
    /// Warm jails kept ready (default: one per usable core — affinity and cgroup CPU quota — 2 to 64; 0: start each job's jail for it).
    #[arg(long, value_name = "N")]
    pool: Option<usize>,
    /// The most warm jails the pool grows to while jobs wait for jails (default: four per usable core, at least --pool, at most 64; --pool-max equal to --pool keeps the pool fixed).
    #[arg(long, value_name = "N")]
    pool_max: Option<usize>,
    /// Seconds the pool keeps jails above --pool once no job has waited for one; then it ends one a second.
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pool_idle: u64,
    /// Threads that start jails (default: four per usable core, 4 to 64).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    spawners: Option<u16>,
    /// Warm session jails kept ready (default: 1, or 0 with --pool 0; 0: start each session's jail at session_start).
    #[arg(long, value_name = "N")]
    session_pool: Option<usize>,
    /// Keep a result cache in this directory (created 0700; must be ours).
    #[arg(long, value_name = "DIR")]
    cache: Option<PathBuf>,
    /// How long a cache entry stays valid, seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 86_400)]
    cache_ttl: u64,
    /// Spawn the warm Python jails from a zygote: one interpreter initialised ahead,
    /// forked into a new, complete jail per job (needs agentjail-zygote next to agentjail;
    /// docs/REFERENCE.md, "The engine").
    #[arg(long)]
    zygote: bool,
}

impl EngineFlags {
    /// The engine these flags ask for, on `policy`.
    pub fn config(self, policy: crate::policy::LoadedPolicy) -> crate::engine::EngineConfig {
        let mut engine = crate::engine::EngineConfig::for_server(
            policy,
            self.pool,
            self.session_pool,
            self.cache,
            self.cache_ttl,
        );
        engine.zygote = self.zygote;
        if let Some(n) = self.pool_max {
            engine.pool_max = n;
        }
        engine.pool_idle = std::time::Duration::from_secs(self.pool_idle);
        if let Some(n) = self.spawners {
            engine.spawners = usize::from(n);
        }
        engine
    }
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// The effective policy with every default filled in, and its sha256.
    #[command(after_help = "Example:\n  agentjail policy show policies/default.toml")]
    Show {
        /// Policy file; omitted: the embedded default.
        file: Option<PathBuf>,
    },
    /// Warn about weak settings. Exit 1 when there are warnings.
    #[command(after_help = "Example:\n  agentjail policy lint policies/data.toml")]
    Lint { file: Option<PathBuf> },
}
