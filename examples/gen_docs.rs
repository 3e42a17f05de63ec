//! Builds the man pages and shell completions from the clap definitions, so they can never
//! drift from the real command line.
//!
//!     cargo run --example gen_docs -- OUTDIR
//!
//! Writes OUTDIR/man/agentjail.1 plus one page per subcommand (agentjail-run.1,
//! agentjail-policy-show.1, ...) and OUTDIR/completions/{agentjail.bash,_agentjail,agentjail.fish}.
//! `scripts/gen-docs.sh` calls this; `scripts/install.sh` installs the result.

// The binary's command line, the very file it is built from (the agentjail package is a
// binary, with no library to import it from).
#[path = "../src/cli.rs"]
#[allow(dead_code)]
mod cli;

use clap::CommandFactory;
use clap_complete::Shell;
use cli::Cli;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let (Some(out), None) = (args.next(), args.next()) else {
        eprintln!("usage: cargo run --example gen_docs -- OUTDIR");
        return ExitCode::from(2);
    };
    match generate(Path::new(&out)) {
        Ok(written) => {
            for path in written {
                println!("{}", path.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gen_docs: {e}");
            ExitCode::from(2)
        }
    }
}

/// Every file written, in order, so the caller (install.sh) can list them.
fn generate(out: &Path) -> Result<Vec<PathBuf>, String> {
    let man_dir = out.join("man");
    let comp_dir = out.join("completions");
    for dir in [&man_dir, &comp_dir] {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("{}: {e} (is OUTDIR writable?)", dir.display()))?;
    }
    let mut written = Vec::new();

    // One page for the top-level command and one per (nested) subcommand, named
    // agentjail-<sub>[-<subsub>].1 as git and cargo do, so `man agentjail-run` works.
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    man_pages(&cmd, &man_dir, &mut written)?;

    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        let mut cmd = Cli::command();
        let path = clap_complete::generate_to(shell, &mut cmd, "agentjail", &comp_dir)
            .map_err(|e| format!("{}: {shell} completion: {e}", comp_dir.display()))?;
        written.push(path);
    }
    Ok(written)
}

fn man_pages(cmd: &clap::Command, dir: &Path, written: &mut Vec<PathBuf>) -> Result<(), String> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        man_pages(sub, dir, written)?;
    }
    // After build(), a subcommand's display name is "agentjail-run", "agentjail-policy-show".
    let name = cmd
        .get_display_name()
        .unwrap_or_else(|| cmd.get_name())
        .to_string();
    let path = dir.join(format!("{name}.1"));
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .title(name.to_uppercase())
        .render(&mut buf)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::write(&path, buf).map_err(|e| format!("{}: {e}", path.display()))?;
    written.push(path);
    Ok(())
}
