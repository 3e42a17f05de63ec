//! The zygote: Python jails whose interpreter was initialised before the jail existed.
//!
//! A warm jail (engine/pool.rs) moves the jail's setup and the interpreter's start off the
//! job's path, but every jail still pays for both, so on a busy machine a fresh jail per
//! job costs more CPU than bare `python3` does (docs/BENCH.md: ~55% of a saturated run's
//! CPU was the jails' interpreters starting). The zygote removes the interpreter's start:
//!
//! ```text
//!  agentjail serve ──(socketpair, SCM_RIGHTS)── agentjail-zygote (the template)
//!   │  creates the job cgroup,                   libpython initialised once as
//!   │  sends its join fds (procs/tasks)          `python3 -I -S -B -X utf8`, the runner
//!   │                                            loaded, the policy's preloads imported,
//!   │                                            the warm-up run; holds nothing of a job
//!   │                                                 │ clone3(CLONE_PARENT | new user,
//!   │                                                 │ mount, pid, net, ipc, uts, cgroup ns)
//!   ▼                                                 ▼
//!  init (pid 1, agentjail's) ── the same child steps as every jail (jail/child.rs):
//!   │                           maps, root, pivot, no_new_privs, caps, landlock, fds,
//!   │                           rlimits, signals; seccomp last
//!   └── program (pid 2): instead of execve, the template's interpreter goes on
//!       (`Prepared::entry`): PyOS_AfterFork_Child, then the runner takes one job on fd 3
//! ```
//!
//! **Why per-job isolation stays whole.** Every job still gets a jail no other job used:
//! new namespaces of every kind, a new root, its own cgroup, landlock and seccomp applied by
//! the same ordered steps, and the jail is used once. What the program starts from is a copy
//! of the template's memory instead of a fresh image, and the template never receives
//! anything of a job: it gets the policy file's bytes (checked against the server's hash)
//! and, per jail, the cgroup's descriptors; the job's code and input go from the server to
//! the jail's pipes, never through the template. What a job can find in its own memory is
//! therefore the same for every job of the server: the template's.
//!
//! **What differs from a cold jail, knowingly:**
//! - *Address layout.* Every program forked from one template has the template's layout
//!   (ASLR is per exec). A job learns addresses that are the same in other jobs, but it
//!   cannot reach another job's memory (other namespaces, other processes).
//! - *Hash seed.* `str` hashes are keyed once per interpreter: jobs of one template share
//!   the key. It guards against hash flooding by input, not a secret between jobs.
//! - *Random state.* `random` is reseeded from the kernel in each program
//!   (PyOS_AfterFork_Child runs the fork hooks; tests/frontends/zygote.rs checks that two jobs draw
//!   different numbers); `os.urandom` and `secrets` always ask the kernel.
//! - *The template's memory*: a program can read its own memory, which is a copy of the
//!   template's: the policy (its text, and the parsed check rules and redaction patterns),
//!   the host paths of the jail's mounts, the host pids of earlier jails in freed buffers.
//!   A cold job cannot read those (its interpreter is a fresh image; init is non-dumpable).
//!   None is another job's, and a policy is not a secret (reviewers read it; `policy
//!   show`), but a job can learn the rules it is checked and redacted by.
//! - *Memory accounting*: pages the program shares with the template stay charged to the
//!   template's cgroup (the server's). The job's cgroup limit and peak count what the job
//!   writes or allocates, which is all it can grow.
//! - */proc/self/exe* names the template's binary, outside the jail's root; without
//!   landlock (a `best_effort` policy on a host without it) a job could read or exec that
//!   file through the link (it runs inside the same jail). /proc/self/maps shows libpython.
//! - The template is outside every jail and unconfined by landlock or seccomp. It must be
//!   single-threaded when it clones (checked after the preloads: a preload that starts a
//!   thread is refused). It never runs job code; the jails cannot see it (another pid namespace) and are not its
//!   children (CLONE_PARENT makes them the server's, so the server reaps them, reads their
//!   status and they die with it, exactly as cold jails).
//!
//! The template cannot be linked into `agentjail` itself: that binary is a static PIE
//! (.cargo/config.toml), and a static binary cannot load libpython and the interpreter's
//! extension modules. `agentjail-zygote` is the `zygote/` crate (a static library over
//! this module) linked against libpython by `scripts/build-zygote.sh`; it sits next to
//! `agentjail`, like `agentjail-mcp`.

mod client;
mod protocol;
mod template;

pub use client::{Zygote, ZygoteError};
pub use template::{template_main, Interpreter};

/// The template's binary, looked up next to `agentjail`.
pub const BINARY: &str = "agentjail-zygote";

/// The interpreter flags the template is initialised with (src/zygote's binary sets the
/// matching globals before Py_Initialize): a policy whose `python_args` differ cannot use
/// the zygote, since its jobs would not run as its cold jails run them.
pub const PYTHON_ARGS: [&str; 5] = ["-I", "-S", "-B", "-X", "utf8"];

/// The Python a template binary embeds, fixed when scripts/build-zygote.sh built it for one
/// interpreter (`--python PATH`, the host's /usr/bin/python3 by default): its libpython,
/// its home (so the template imports that installation's standard library) and the file
/// the policy's interpreter must resolve to. A python3.N built elsewhere (/usr/local, a
/// venv's copy, another pyenv build) has its own prefix and standard library, and its cold
/// jails would not run what the template runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbeddedPython {
    /// `3.N`.
    pub version: &'static str,
    /// The interpreter file whose libpython this is (resolved: no symlink).
    pub binary: &'static str,
    /// Its installation prefix (`/usr`, `/opt/agentjail-py/3.12`).
    pub home: &'static str,
}

/// The record's account of a zygote jail: every control is its own, but its interpreter's
/// address layout and `str` hash key are the template's, the same in every job of this
/// server (see the module documentation for why that is a fair trade).
pub fn control() -> agentjail_jail::Control {
    agentjail_jail::Control::new(
        "address_space_layout",
        agentjail_jail::ControlState::Degraded,
        "zygote fork",
        "the interpreter was forked from agentjail's zygote template (serve's default; --no-zygote starts a fresh one per job): its address layout and str hash key are the template's, shared by every job of this server; random is reseeded per job",
    )
}

/// Largest control message either side sends but the policy text (requests and replies
/// are a few hundred bytes of JSON; a setup error's hint is the longest).
const MAX_MESSAGE: usize = 8 * 1024;

/// The largest policy file the zygote takes: it travels in one message (policies are a few
/// KiB; a unix socket's default send buffer holds ~200 KiB).
const MAX_POLICY_TEXT: usize = 96 * 1024;
