//! The server front ends' flags (clap), which three binaries parse: `agentjail serve` and
//! `agentjail mcp` take them, and exec agentjail-http (`serve --http`) and agentjail-mcp with
//! the same arguments, which read them again. One definition, so a flag `serve` gains is
//! one agentjail-http accepts. The rest of the command line (the subcommand table, the
//! other commands' flags, every help text) is the agentjail binary's (src/cli.rs).

use clap::Args;
use std::path::PathBuf;

/// `agentjail serve`'s flags (the JSON-lines server's, and agentjail-http's with `--http`).
#[derive(Debug, Args)]
pub struct ServeFlags {
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    #[command(flatten)]
    pub engine: EngineFlags,
    /// Requests run concurrently (default: 2 per core, at least 4).
    #[arg(short = 'j', long = "jobs", value_name = "N")]
    pub jobs: Option<usize>,
    /// Listen on this unix socket instead of stdin/stdout (created 0600; systemd socket activation is used when present).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Make the socket 0660 and give it to this group.
    #[arg(long, value_name = "GROUP", requires = "socket")]
    pub socket_group: Option<String>,
    /// Serve HTTP instead of JSON lines, on 127.0.0.1:8080, [::1]:8080 or unix:PATH (the agentjail-http binary; docs/REFERENCE.md "HTTP").
    #[arg(long, value_name = "ADDR", conflicts_with = "socket")]
    pub http: Option<String>,
    /// With --http: bearer tokens, one `NAME TOKEN` per line (mode 0600 or stricter); required on an address that is not loopback.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub token_file: Option<PathBuf>,
    /// With --http, inside a pod: start one workspace the server owns and serve it at the Kubernetes agent-sandbox runtime's routes (GET /, POST /execute, POST /upload, GET /download|list|exists/PATH).
    #[arg(long, requires = "http")]
    pub pod_workspace: bool,
    /// The most response bytes produced and not yet taken by their clients, over all connections together (bytes, or 64MiB / 1GiB; default 256MiB; at least 16MiB on the JSON-lines server, 1MiB with --http); past it the clients with the most unread (JSON lines) or stalled longest (--http) are dropped and their jobs stopped.
    #[arg(long, value_name = "BYTES")]
    pub unread_budget: Option<String>,
    /// Append every record to this file as one JSON line (overrides the policy's audit.log).
    #[arg(long, value_name = "FILE")]
    pub audit_log: Option<PathBuf>,
}

/// `agentjail mcp`'s flags.
#[derive(Debug, Args)]
pub struct McpFlags {
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    #[command(flatten)]
    pub engine: EngineFlags,
    /// Append every record to this file as one JSON line (overrides the policy's audit.log).
    #[arg(long, value_name = "FILE")]
    pub audit_log: Option<PathBuf>,
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
    /// Require the zygote (the default uses it wherever it can): refuse to start when agentjail-zygote next to agentjail cannot serve the policy (docs/REFERENCE.md, "The engine").
    #[arg(long, conflicts_with = "no_zygote")]
    zygote: bool,
    /// Start a fresh interpreter in every Python jail instead of forking the zygote's template.
    #[arg(long)]
    no_zygote: bool,
}

impl EngineFlags {
    /// The engine these flags ask for, on `policy`.
    pub fn config(self, policy: crate::policy::LoadedPolicy) -> crate::engine::EngineConfig {
        let zygote = self.zygote_mode();
        let mut engine = crate::engine::EngineConfig::for_server(
            policy,
            self.pool,
            self.session_pool,
            self.cache,
            self.cache_ttl,
        );
        engine.zygote = zygote;
        if let Some(n) = self.pool_max {
            engine.pool_max = n;
        }
        engine.pool_idle = std::time::Duration::from_secs(self.pool_idle);
        if let Some(n) = self.spawners {
            engine.spawners = usize::from(n);
        }
        engine
    }

    /// `--zygote` requires the zygote, `--no-zygote` turns it off (clap refuses both), and
    /// neither uses it where it can serve.
    fn zygote_mode(&self) -> crate::engine::ZygoteMode {
        use crate::engine::ZygoteMode;
        match (self.zygote, self.no_zygote) {
            (true, _) => ZygoteMode::Required,
            (_, true) => ZygoteMode::Off,
            _ => ZygoteMode::Auto,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ZygoteMode;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        engine: EngineFlags,
    }

    fn mode(args: &[&str]) -> Result<ZygoteMode, clap::Error> {
        let argv = std::iter::once("serve").chain(args.iter().copied());
        Cli::try_parse_from(argv).map(|c| c.engine.zygote_mode())
    }

    #[test]
    fn the_zygote_is_the_default_and_each_flag_means_one_thing() {
        assert_eq!(mode(&[]).unwrap(), ZygoteMode::Auto);
        assert_eq!(mode(&["--zygote"]).unwrap(), ZygoteMode::Required);
        assert_eq!(mode(&["--no-zygote"]).unwrap(), ZygoteMode::Off);
        let e = mode(&["--zygote", "--no-zygote"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict, "{e}");
    }
}
