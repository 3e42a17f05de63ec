//! `agentjail mcp` in the main binary: the MCP server is the `agentjail-mcp` binary of its
//! own crate (crates/agentjail-mcp, whose main.rs says why), and this binary only execs it.
//! Nothing here touches rmcp or tokio: the agentjail binary does not depend on them.

/// The binary that serves `agentjail mcp`, installed next to `agentjail`.
pub const SERVER_BINARY: &str = "agentjail-mcp";

/// Replace this process with [`SERVER_BINARY`] from the directory of the running executable
/// (symlinks resolved), with the same arguments (`mcp ...`), environment and stdio; the pid
/// stays the client's child. Returns only when the exec failed (exit status 2, the fix on
/// stderr).
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
