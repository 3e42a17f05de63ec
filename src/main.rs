//! Thin entry point: parse arguments, call the library, map the outcome to an exit code.

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
    let code = match cli.command {
        Command::Exec {
            policy,
            record,
            time_limit,
            memory_limit,
            output_limit,
            print_plan,
            cmd,
        } => match agentjail::load_policy(policy.as_deref()) {
            Err(e) => {
                eprintln!("agentjail: {e}");
                2
            }
            Ok((policy, policy_path, policy_sha256)) => {
                agentjail::exec::exec(agentjail::exec::ExecArgs {
                    policy,
                    policy_path,
                    policy_sha256,
                    record,
                    time_limit,
                    memory_limit,
                    output_limit,
                    print_plan,
                    cmd,
                })
            }
        },
        _ => {
            eprintln!("agentjail: not wired yet");
            2
        }
    };
    std::process::exit(code);
}
