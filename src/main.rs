//! The agentjail binary. This file is the thin entry point: parse the arguments and dispatch
//! each command to its front end, whose status is the process's exit code. The front ends
//! are this crate's modules; everything below them is the engine crate's (agentjail_engine).

mod cli;
mod commands;
mod mcp;
mod serve;

use clap::Parser;

/// Run one command; `exec` returns the command's own exit code, the others an ExitStatus.
fn dispatch(command: cli::Command) -> i32 {
    use cli::Command;
    let status = match command {
        Command::Run {
            policy,
            audit_log,
            cache,
            cache_ttl,
            inputs,
            artifacts_dir,
            action,
        } => Ok(commands::run::command(
            policy.as_deref(),
            audit_log,
            agentjail_engine::pipeline::RunFlags {
                cache: cache.map(|d| (d, cache_ttl)),
                inputs,
                artifacts_dir,
            },
            &action,
        )),
        Command::Serve { flags } => return serve::command(flags),
        // The MCP server is its own binary (crates/agentjail-mcp says why); this one execs it.
        Command::Mcp { .. } => return mcp::exec_server_binary(),
        Command::Check { policy, action } => commands::check::command(policy.as_deref(), &action),
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
            return commands::exec::command(
                policy.as_deref(),
                commands::exec::ExecArgs {
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
        Command::Policy { action } => commands::policy::command(action),
        Command::Explain {
            record,
            policy,
            json,
        } => commands::policy::explain(&record, policy.as_deref(), json),
        Command::Learn {
            actions,
            base,
            output,
            json,
        } => commands::learn::command(&actions, base.as_deref(), output.as_deref(), json),
        Command::Doctor { json, policy } => {
            return commands::doctor::command(json, policy.as_deref())
        }
    };
    status.unwrap_or_else(|e| e) as i32
}

fn main() {
    let cli = match cli::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // `exec`'s own errors are 125, never 2: its exit code is otherwise the command's.
            let is_exec = std::env::args_os().nth(1).is_some_and(|a| a == "exec");
            let code = match (e.use_stderr(), is_exec) {
                (false, _) => 0,
                (true, true) => commands::exec::EXIT_SETUP,
                (true, false) => commands::ExitStatus::Error as i32,
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    std::process::exit(dispatch(cli.command));
}
