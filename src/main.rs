//! Thin entry point: parse the arguments and dispatch each command to the library, whose
//! status is the process's exit code.

use agentjail::cli::{Cli, Command, ExitStatus};
use clap::Parser;

/// Run one command; `exec` returns the command's own exit code, the others an ExitStatus.
fn dispatch(command: Command) -> i32 {
    let status = match command {
        Command::Run {
            policy,
            audit_log,
            cache,
            cache_ttl,
            inputs,
            artifacts_dir,
            action,
        } => Ok(agentjail::pipeline::run_command(
            policy.as_deref(),
            audit_log,
            agentjail::pipeline::RunFlags {
                cache: cache.map(|d| (d, cache_ttl)),
                inputs,
                artifacts_dir,
            },
            &action,
        )),
        serve @ Command::Serve { .. } => return agentjail::serve::command(serve),
        // The MCP server is its own binary (crates/agentjail-mcp says why); this one execs it.
        Command::Mcp { .. } => return agentjail::mcp::exec_server_binary(),
        Command::Check { policy, action } => {
            agentjail::pipeline::check_command(policy.as_deref(), &action)
        }
        Command::Exec {
            policy,
            record,
            time_limit,
            memory_limit,
            output_limit,
            artifacts_dir,
            print_plan,
            cmd,
        } => {
            return agentjail::exec::command(
                policy.as_deref(),
                agentjail::exec::ExecArgs {
                    policy: Default::default(),
                    policy_path: String::new(),
                    policy_sha256: String::new(),
                    record,
                    time_limit,
                    memory_limit,
                    output_limit,
                    artifacts_dir: None,
                    print_plan,
                    cmd,
                },
                artifacts_dir,
            )
        }
        Command::Policy { action } => agentjail::cli::policy_command(action),
        Command::Doctor { json, policy } => {
            return agentjail::doctor::command(json, policy.as_deref())
        }
    };
    status.unwrap_or_else(|e| e) as i32
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                ExitStatus::Error as i32
            } else {
                0
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    std::process::exit(dispatch(cli.command));
}
