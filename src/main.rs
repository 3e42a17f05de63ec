//! Thin entry point: parse arguments, call the library, map the outcome to an exit status.

use agentjail::cli::{Cli, Command, PolicyCommand};
use clap::Parser;
use std::path::{Path, PathBuf};

/// The verdict commands' exit statuses (`run`, `check`, `policy lint`, `doctor`); `exec`
/// returns the command's own status instead (see `agentjail exec --help`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ExitStatus {
    /// It ran and the result is valid (run: status ok; check: allow).
    Ok = 0,
    /// The boundary said no (run: stopped; check: deny; lint: warnings).
    Stopped = 1,
    /// agentjail itself could not work (bad flags, bad policy, internal error).
    Error = 2,
}

fn load(policy: Option<&Path>) -> Result<agentjail::policy::LoadedPolicy, ExitStatus> {
    agentjail::load_policy(policy).map_err(|e| {
        eprintln!("agentjail: {e}");
        ExitStatus::Error
    })
}

/// Print a record or decision: JSON in which no control, bidi override or line separator
/// from the program's text appears raw (it cannot split a line or steer a terminal).
fn print_json(v: &serde_json::Value) {
    use std::io::Write;
    // A reader that went away (a closed pipe) is not a reason to panic: the audit log still
    // gets the record, and the exit status says what happened.
    let mut out = std::io::stdout().lock();
    let text = agentjail_json::to_safe_string_pretty(v);
    if let Err(e) = writeln!(out, "{text}").and_then(|_| out.flush()) {
        eprintln!("agentjail: cannot print the record: {e}");
    }
}

/// `run`'s flags that need checking before the run.
struct RunFlags {
    cache: Option<(PathBuf, u64)>,
    inputs: Vec<String>,
    artifacts_dir: Option<PathBuf>,
}

/// Open the cache, resolve the inputs against the policy's host roots, open the artifacts
/// directory: a flag that cannot be honoured stops agentjail (exit 2) before any jail.
fn run_options(
    loaded: &agentjail::policy::LoadedPolicy,
    flags: RunFlags,
) -> Result<agentjail::RunOptions, String> {
    // Side-effect-free checks first; then what creates directories, undone if a later one
    // is refused: a refused flag leaves nothing behind.
    let roots = &loaded.policy.files.host_roots;
    let inputs = flags
        .inputs
        .iter()
        .map(|spec| agentjail::inputs::resolve(spec, roots))
        .collect::<Result<Vec<_>, _>>()?;
    let artifacts_dir = match flags.artifacts_dir {
        Some(d) => Some(agentjail::artifacts::ArtifactsDir::open(&d)?),
        None => None,
    };
    let cache = match flags.cache {
        Some((dir, ttl)) => {
            match agentjail::cache::Cache::open(&dir, std::time::Duration::from_secs(ttl)) {
                Ok(c) => Some(c),
                Err(e) => {
                    if let Some(d) = artifacts_dir {
                        d.discard();
                    }
                    return Err(e);
                }
            }
        }
        None => None,
    };
    Ok(agentjail::RunOptions {
        cache,
        inputs,
        artifacts_dir,
    })
}

fn run(
    policy: Option<&Path>,
    audit_log: Option<PathBuf>,
    flags: RunFlags,
    action: &str,
) -> ExitStatus {
    let loaded = match agentjail::load_policy(policy) {
        Ok(p) => p,
        Err(e) => {
            // Even when agentjail cannot work, stdout carries a valid record.
            eprintln!("agentjail: {e}");
            let reason = agentjail::record::StopReason::AgentjailError("policy".into());
            print_json(&agentjail::record::Record::refused(reason, &e).to_value());
            return ExitStatus::Error;
        }
    };
    let audit = loaded.audit_log(audit_log);
    let options = match run_options(&loaded, flags) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("agentjail: {e}");
            let reason = agentjail::record::StopReason::AgentjailError("flags".into());
            print_json(&agentjail::record::Record::refused(reason, &e).to_value());
            return ExitStatus::Error;
        }
    };
    let record = agentjail::run_action(&loaded, action, options);
    print_json(&record.value);
    if let Some(path) = audit {
        if let Err(e) = agentjail::record::append_audit(&path, record.audit_value()) {
            eprintln!(
                "agentjail: cannot append to the audit log {}: {e}",
                path.display()
            );
            return ExitStatus::Error;
        }
    }
    if record.is_ok() {
        ExitStatus::Ok
    } else {
        ExitStatus::Stopped
    }
}

fn check(policy: Option<&Path>, action: &str) -> Result<ExitStatus, ExitStatus> {
    let loaded = load(policy)?;
    let (decision, code) = agentjail::run::check_only(&loaded.policy, action);
    print_json(&decision);
    Ok(if code == 0 {
        ExitStatus::Ok
    } else {
        ExitStatus::Stopped
    })
}

fn policy_command(action: PolicyCommand) -> Result<ExitStatus, ExitStatus> {
    match action {
        PolicyCommand::Show { file } => {
            let loaded = load(file.as_deref())?;
            print!("{}", agentjail::policy::show(&loaded));
            Ok(ExitStatus::Ok)
        }
        PolicyCommand::Lint { file } => {
            let loaded = load(file.as_deref())?;
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
            Ok(if warnings.is_empty() {
                ExitStatus::Ok
            } else {
                ExitStatus::Stopped
            })
        }
    }
}

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
        } => Ok(run(
            policy.as_deref(),
            audit_log,
            RunFlags {
                cache: cache.map(|d| (d, cache_ttl)),
                inputs,
                artifacts_dir,
            },
            &action,
        )),
        serve @ Command::Serve { .. } => return serve_command(serve),
        // The MCP server is its own binary (crates/agentjail-mcp says why); this one execs it.
        Command::Mcp { .. } => return agentjail::mcp::exec_server_binary(),
        Command::Check { policy, action } => check(policy.as_deref(), &action),
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
            return exec_command(
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
        Command::Policy { action } => policy_command(action),
        Command::Doctor { json, policy } => {
            return agentjail::doctor_command(json, policy.as_deref())
        }
    };
    status.unwrap_or_else(|e| e) as i32
}

/// `serve`: load the policy, start the engine and serve until EOF or a signal.
fn serve_command(command: Command) -> i32 {
    let Command::Serve {
        policy,
        engine,
        jobs,
        socket,
        socket_group,
        audit_log,
        http,
        token_file: _,
    } = command
    else {
        unreachable!("serve_command is called with Command::Serve only");
    };
    // The HTTP front end is its own binary (src/serve/mod.rs, exec_http_binary, says why).
    if http.is_some() {
        return agentjail::serve::exec_http_binary();
    }
    let Ok(loaded) = load(policy.as_deref()) else {
        return ExitStatus::Error as i32;
    };
    agentjail::serve::serve(agentjail::serve::ServeArgs {
        engine: engine.config(loaded),
        jobs: jobs.unwrap_or_else(agentjail::engine::default_jobs),
        socket,
        socket_group,
        audit_log,
    })
}

/// `exec`: load the policy, open the artifacts directory (unless only printing the plan),
/// run. A flag that cannot be honoured stops it with exit 2 before any jail.
fn exec_command(
    policy: Option<&Path>,
    mut args: agentjail::exec::ExecArgs,
    artifacts_dir: Option<PathBuf>,
) -> i32 {
    let Ok(loaded) = load(policy) else {
        return ExitStatus::Error as i32;
    };
    args.policy = loaded.policy;
    args.policy_path = loaded.path;
    args.policy_sha256 = loaded.sha256;
    if let Some(d) = artifacts_dir.filter(|_| !args.print_plan) {
        match agentjail::artifacts::ArtifactsDir::open(&d) {
            Ok(d) => args.artifacts_dir = Some(d),
            Err(e) => {
                eprintln!("agentjail: {e}");
                return ExitStatus::Error as i32;
            }
        }
    }
    agentjail::exec::exec(args)
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
