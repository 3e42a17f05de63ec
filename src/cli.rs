//! Command-line definitions (clap): the subcommand table, each command's flags and help
//! (the commands themselves: crate::commands). The server front ends' flags, and the step
//! from them to the engine they configure, are the engine crate's
//! (agentjail_engine::flags), which agentjail-http and agentjail-mcp parse too. The
//! spellings are a fixed contract (docs/ARCHITECTURE.md).

use agentjail_engine::flags::{McpFlags, ServeFlags};
use clap::{Parser, Subcommand};
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
        #[command(flatten)]
        flags: ServeFlags,
    },
    /// The engine as an MCP server on stdio: tools run_python, check_python and
    /// python_session_start/exec/close for agents (Claude Code/Desktop, the OpenAI Agents
    /// SDK, smolagents, pydantic-ai, ...).
    #[command(
        after_help = "MCP over stdio (newline-delimited JSON-RPC). Closing stdin ends the server: running calls are stopped, sessions end, every jail is removed.\n\nExamples:\n  claude mcp add --transport stdio agentjail -- agentjail mcp --policy /usr/local/share/agentjail/policies/data.toml\n  agentjail mcp --pool 4"
    )]
    Mcp {
        #[command(flatten)]
        flags: McpFlags,
    },
    /// For a stopped record: the policy edit that would let its action through, what the
    /// edit exposes, and the safer way when there is one.
    #[command(
        after_help = "The policy is --policy, else the record's own (`policy.path`, which must still hash to the record's `policy.sha256`). Each edit is tried on a copy of the policy: an edit the loader refuses is never proposed (the record says why instead), and `policy lint`'s new warnings on the edited copy are its risks. Limits are raised to twice what the run hit.\n\nExit status: 0 explained (with or without an edit), 2 when the record or the policy cannot be read.\n\nExamples:\n  agentjail run action.json > rec.json; agentjail explain rec.json\n  agentjail explain --json --policy policies/data.toml rec.json"
    )]
    Explain {
        /// The record (`-`: stdin).
        record: PathBuf,
        /// The policy it ran under (default: the record's).
        #[arg(long)]
        policy: Option<PathBuf>,
        /// Machine-readable output: `{"stop_reason", "edits": [{key, add | remove | set}], "risks", "alternative"?, "no_edit"?}`.
        #[arg(long)]
        json: bool,
    },
    /// Run actions in observe mode and write the smallest policy over a base that lets
    /// exactly them run: the base plus a commented diff (every widened key with its evidence
    /// and what it exposes; limits from the measured peaks).
    #[command(
        after_help = "Each action runs under the base's full isolation in observe mode: the static check's findings are collected, not enforced; a syscall outside the allowlist is refused with ENOSYS by the supervisor (it never runs) and noted; the network proxy denies every host the candidate policy does not list and records each host and port asked for; each open of a path the jail lacks is noted by the supervisor and let run (the kernel, mounts and landlock still decide it), and becomes a read-only bind of its directory where the host has it world-readable and the loader allows it. What was asked for becomes policy edits through the loader's rules (a need no policy may hold is reported, never applied); the actions are run again, enforced, under the result, and each widened item no asking action needs is dropped.\n\nWithout -o the learned policy goes to stdout and the summary to stderr; with -o the file is written and the summary goes to stdout.\n\nExit status: 0 every action succeeds under the learned policy and every need was met, 1 otherwise (the policy is still written, its header names what failed), 2 when agentjail could not work (an unreadable action or base, an unwritable output).\n\nExamples:\n  agentjail learn examples/incident/action.json -o incident.toml\n  agentjail learn --base data a.json b.json --json -o learned.toml"
    )]
    Learn {
        /// The action files (`-`: stdin, once).
        #[arg(required = true)]
        actions: Vec<String>,
        /// The base policy (a file or a shipped policy's name; default: the embedded default).
        #[arg(long)]
        base: Option<PathBuf>,
        /// Where to write the learned policy (default: stdout).
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        /// The summary as JSON: `{"widened", "not_needed", "unmet", "limits", "limit_rule", "actions", "rounds", "runs", ...}`.
        #[arg(long)]
        json: bool,
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

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// The effective policy with every default filled in, and its sha256.
    #[command(
        after_help = "Example:\n  agentjail policy show policies/default.toml\n  agentjail policy show --json data"
    )]
    Show {
        /// Policy file; omitted: the embedded default.
        file: Option<PathBuf>,
        /// Print the effective policy as one JSON object (the same keys and values), for
        /// programs (the Python client describes its tools from it).
        #[arg(long)]
        json: bool,
    },
    /// Warn about weak settings. Exit 1 when there are warnings.
    #[command(after_help = "Example:\n  agentjail policy lint policies/data.toml")]
    Lint { file: Option<PathBuf> },
    /// What changes from OLD to NEW, each change weaker, stronger or neutral, the most
    /// exposing first (network, syscalls, isolation, host files, the check, records, limits).
    #[command(
        after_help = "Both policies are loaded as `policy show` loads them (every default filled in) and compared key by key; a key this version has no rule for counts as weaker (`unreviewed`).\n\nExit status: 0 when nothing got weaker, 1 when something did (a CI gate), 2 when a policy cannot be loaded.\n\nExamples:\n  agentjail policy diff policies/judge.toml policies/judge-open.toml\n  agentjail policy diff --json default data"
    )]
    Diff {
        /// The policy before the change (a file or a shipped policy's name).
        old: PathBuf,
        /// The policy after it.
        new: PathBuf,
        /// Machine-readable output: `{"old", "new", "changes": [...], "weaker", "stronger", "neutral"}`.
        #[arg(long)]
        json: bool,
    },
}

#[cfg(test)]
mod tests {
    /// `--version` and the records name the engine crate's version (agentjail_engine::VERSION),
    /// the package scripts/package.sh reads this one's: the two move together.
    #[test]
    fn the_binary_and_the_engine_have_one_version() {
        assert_eq!(env!("CARGO_PKG_VERSION"), agentjail_engine::VERSION);
        assert!(agentjail_engine::VERSION_LINE.starts_with(agentjail_engine::VERSION));
    }
}
