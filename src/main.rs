//! Thin entry point: parse arguments, call the library, map the outcome to an exit code.

use agentjail::cli::{Cli, Command, PolicyCommand};
use clap::Parser;
use std::path::Path;

/// Exit code for "agentjail itself could not work" (bad flags, bad policy, internal error).
const EXIT_ERROR: i32 = 2;

fn load(policy: Option<&Path>) -> Result<(agentjail::policy::Policy, String, String), i32> {
    agentjail::load_policy(policy).map_err(|e| {
        eprintln!("agentjail: {e}");
        EXIT_ERROR
    })
}

/// The policy `policy show|lint` reviews: a file, or the embedded default.
fn load_for_review(file: Option<&Path>) -> Result<agentjail::policy::LoadedPolicy, i32> {
    match file {
        None => Ok(agentjail::policy::load_default()),
        Some(f) => agentjail::policy::load_file(f).map_err(|e| {
            eprintln!("agentjail: {e}");
            EXIT_ERROR
        }),
    }
}

fn print_json(v: &serde_json::Value) {
    match serde_json::to_string_pretty(v) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("agentjail: cannot print the result: {e}"),
    }
}

fn dispatch(command: Command) -> Result<i32, i32> {
    Ok(match command {
        Command::Run {
            policy,
            audit_log,
            action,
        } => {
            let (policy, policy_path, policy_sha256) =
                match agentjail::load_policy(policy.as_deref()) {
                    Ok(p) => p,
                    Err(e) => {
                        // Even when agentjail cannot work, stdout carries a valid record.
                        eprintln!("agentjail: {e}");
                        print_json(&agentjail::run::error_record("agentjail_error:policy", &e));
                        return Err(EXIT_ERROR);
                    }
                };
            let audit = audit_log.or_else(|| {
                (!policy.audit.log.is_empty()).then(|| policy.audit.log.clone().into())
            });
            let result = agentjail::run::run(agentjail::run::RunArgs {
                policy,
                policy_path,
                policy_sha256,
                audit_log: audit.clone(),
                action,
            });
            print_json(&result.record);
            if let Some(path) = audit {
                if let Err(e) = agentjail::run::append_audit(&path, &result.record) {
                    eprintln!(
                        "agentjail: cannot append to the audit log {}: {e}",
                        path.display()
                    );
                    return Err(EXIT_ERROR);
                }
            }
            result.exit_code
        }
        Command::Check { policy, action } => {
            let (policy, _, _) = load(policy.as_deref())?;
            let (decision, code) = agentjail::run::check_only(&policy, &action);
            print_json(&decision);
            code
        }
        Command::Exec {
            policy,
            record,
            time_limit,
            memory_limit,
            output_limit,
            print_plan,
            cmd,
        } => {
            let (policy, policy_path, policy_sha256) = load(policy.as_deref())?;
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
        Command::Policy {
            action: PolicyCommand::Show { file },
        } => {
            let loaded = load_for_review(file.as_deref())?;
            print!("{}", agentjail::policy::show(&loaded));
            0
        }
        Command::Policy {
            action: PolicyCommand::Lint { file },
        } => {
            let loaded = load_for_review(file.as_deref())?;
            let warnings = agentjail::policy::lint(&loaded.policy);
            for w in &warnings {
                println!("warning: {}: {}", w.key, w.message);
            }
            println!(
                "{}: {} warning(s), sha256 {}",
                loaded.path,
                warnings.len(),
                loaded.sha256
            );
            i32::from(!warnings.is_empty())
        }
        Command::Doctor { json } => agentjail::doctor_command(json),
    })
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_ERROR } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let code = dispatch(cli.command).unwrap_or_else(|c| c);
    std::process::exit(code);
}
