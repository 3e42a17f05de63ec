//! The policy file: what the static check allows and what the jail enforces.
//!
//! A policy is TOML a reviewer can read top to bottom. Every key has a default here, so
//! `agentjail policy show` can print the effective policy with nothing hidden. Loading is
//! strict: unknown keys, wrong types and impossible values are errors naming the file,
//! line and key. Limits carry their unit in the key name (`_ms`) or in the value
//! (`"256MiB"`).

pub mod elfdeps;
mod lint;
mod locate;
pub mod python;
/// What `seccomp.allow_groups` names mean: the jail crate's table (the policy names the
/// jail's vocabulary, as it holds the check crate's rule types).
pub use agentjail_jail::syscall_groups;
mod credentials;
pub mod diff;
pub mod explain;
mod invalid;
pub mod learn;
mod network;
pub mod toolchain;
mod validate;
pub use credentials::{Credential as NetworkCredential, Secret, Upstream, MAX_SECRET_BYTES};
pub use network::{Network, NetworkMode, PROXY_PORT};

pub use lint::{lint, LintWarning, LINT_NOTES};

// The checker's rules (`[check]`, `[check.javascript]`) are the check crate's types: the
// policy holds them, the checker reads them.
pub use agentjail_check::CheckRules;
use locate::{find_item, find_key, key_at_line, line_col};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::Path;

/// The policy compiled into the binary; the same bytes as `policies/default.toml`.
pub const DEFAULT_POLICY_TOML: &str = include_str!("../../../../policies/default.toml");

/// `LoadedPolicy::path` of the embedded default (records carry it as the policy path).
pub const DEFAULT_POLICY_ORIGIN: &str = "<embedded default>";

/// The only policy format version.
pub const POLICY_VERSION: u32 = 1;

/// Smallest accepted memory limit. Measured on the reference host (CPython 3.11.2):
/// `/usr/bin/python3 -I -S -c pass` peaks at 7.6 MiB RSS (`/usr/bin/time -v`) and 12.4 MiB
/// of address space (VmPeak); `import json, statistics` at 10.2 MiB RSS and 15.3 MiB VmPeak;
/// under `ulimit -v 8192` the dynamic loader cannot even map libm. 32 MiB is about twice the
/// address-space peak of the smallest useful job, so a limit below it can only produce a
/// run that dies before the first line of user code.
pub const MIN_MEMORY_BYTES: u64 = 32 * MIB;
/// Longest accepted wall-clock or CPU limit, and whole-run budget: one hour. Anything longer
/// is a batch job, not a jailed agent action.
pub const MAX_TIME_MS: u64 = 3_600_000;
/// Largest accepted stdout/stderr cap: output is held in memory and copied into the record.
pub const MAX_OUTPUT_BYTES: u64 = 64 * MIB;
/// Largest accepted input payload.
pub const MAX_PAYLOAD_BYTES: u64 = 64 * MIB;
/// Largest accepted `budget.max_code_chars` (the checker parses all of it).
pub const MAX_CODE_CHARS: usize = 1_000_000;
/// Fewest open files the interpreter needs: CPython 3.11 fails to start below 5
/// (`ulimit -n 4`); 16 leaves room for the imports a job makes.
pub const MIN_OPEN_FILES: u64 = 16;
/// Largest policy file read (anything bigger is not a policy; protects against `/dev/zero`).
pub const MAX_POLICY_FILE_BYTES: u64 = MIB;
/// Smallest memory limit for a policy that executes `javascript`. Measured on the reference
/// host (node 20.20, the default flags): after the incident example node's resident set is
/// 40 MiB, 34 MiB of it node's own file pages and 6 MiB anonymous; 128 MiB leaves the
/// program room for a useful heap.
pub const MIN_JS_MEMORY_BYTES: u64 = 128 * MIB;

/// node's flags in the default policy (defence in depth; the jail is the boundary).
/// Each one measured on node 20.20 (docs/REFERENCE.md, "JavaScript"):
/// * `--disallow-code-generation-from-strings`: `eval`, `new Function` and string timers
///   throw `EvalError` (the runner compiles with `vm`, which the flag leaves alone);
/// * `--disable-proto=throw`: `Object.prototype.__proto__` throws;
/// * `--no-expose-wasm`: no `WebAssembly` global (drop it to allow wasm);
/// * `--no-experimental-detect-module`: node 20.19+ re-runs a `.js` file that fails as
///   CommonJS (top-level `await`) as an ES module, a grammar the checker did not judge;
/// * `--no-experimental-fetch`: no `fetch` (nor `Request`, `Response`, `Headers`, `FormData`);
/// * `--experimental-permission`: node's permission model; agentjail grants the read of the
///   runner alone, so `fs` reads and writes, child processes, workers, native addons, WASI
///   and `process.binding` throw `ERR_ACCESS_DENIED`;
/// * `--disable-warning=ExperimentalWarning`: the permission model's start-up warning would
///   land in the program's stderr.
pub const DEFAULT_NODE_ARGS: &[&str] = &[
    "--disallow-code-generation-from-strings",
    "--disable-proto=throw",
    "--no-expose-wasm",
    "--no-experimental-detect-module",
    "--no-experimental-fetch",
    "--experimental-permission",
    "--disable-warning=ExperimentalWarning",
];

/// The node flags a policy may list in `interpreter.node_args`: flags that take something
/// away or tune the engine. Anything else is refused: node has flags that load other code
/// before the program (`--require`, `--import`, `--loader`, `-e`), read files into the
/// environment (`--env-file`), open a debugger port (`--inspect`), expose internals
/// (`--expose-internals`) or grant what the permission model denies (`--allow-*`); any of
/// them would make the checked program no longer the program that runs. `=` marks a flag
/// that takes a value (`--flag=value`, one argument).
pub const NODE_FLAGS: &[&str] = &[
    "--disallow-code-generation-from-strings",
    "--disable-proto=",
    "--no-expose-wasm",
    "--no-experimental-detect-module",
    "--no-experimental-fetch",
    "--no-experimental-global-webcrypto",
    "--no-experimental-global-customevent",
    "--experimental-permission",
    "--disable-warning=",
    "--no-warnings",
    "--no-deprecation",
    "--zero-fill-buffers",
    "--jitless",
    "--single-threaded",
    "--v8-pool-size=",
    "--max-semi-space-size=",
    "--unhandled-rejections=",
];

/// Seccomp group names, from the seccomp module that defines their syscalls (one list:
/// a group the filter does not know can never validate here).
pub fn seccomp_group_names() -> impl Iterator<Item = &'static str> {
    syscall_groups::groups().iter().map(|(name, _)| *name)
}

/// Opt-in groups that widen the kernel surface; `lint` warns about each, with the reason.
pub const DANGEROUS_SECCOMP_GROUPS: &[(&str, &str)] = &[
    (
        "process_spawn",
        "fork/clone/vfork allowed: the program can start processes; only the pids limit \
         (cgroup, or RLIMIT_NPROC when cgroups are unavailable) stops a fork bomb",
    ),
    (
        "sockets_local",
        "socket/socketpair allowed for AF_UNIX: the program can create local sockets inside \
         the jail",
    ),
    (
        "network",
        "connect/bind/listen/accept allowed: with network.enabled = true the program can \
         reach the network; even without it, it can talk over the jail's loopback",
    ),
];

/// Host paths that may never be bound into the jail, nor anything beneath them: they hold
/// secrets (`/etc`, `/home`, `/root`), host state (`/var`, `/run`, `/srv`, `/mnt`, `/media`,
/// `/boot`, `/lost+found`), kernel interfaces the jail builds fresh or masks (`/proc`,
/// `/sys`, `/dev`), or the jail's own writable tmpfs (`/tmp`). `/` itself would bind all of
/// them. `/opt` is allowed (FHS add-on software, bound read-only) but linted.
pub const FORBIDDEN_BIND_ROOTS: &[&str] = &[
    "/etc",
    "/home",
    "/root",
    "/var",
    "/run",
    "/proc",
    "/sys",
    "/dev",
    "/tmp",
    "/boot",
    "/mnt",
    "/media",
    "/srv",
    "/lost+found",
];

/// Environment variables a policy may not set. PATH, HOME and LANG are set by the jail
/// itself (one place decides them). The others change what runs before or around the
/// checked program (the dynamic loader, glibc, the interpreter), so the static check would
/// no longer judge the program that actually runs.
pub const FORBIDDEN_ENV_NAMES: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "GCONV_PATH",
    "GLIBC_TUNABLES",
    "LOCPATH",
    "NLSPATH",
    "HOSTALIASES",
    "RES_OPTIONS",
    "MALLOC_CHECK_",
    "MALLOC_PERTURB_",
];
/// Prefixes of forbidden environment variable names (see [`FORBIDDEN_ENV_NAMES`]).
pub const FORBIDDEN_ENV_PREFIXES: &[&str] = &["LD_", "PYTHON"];

/// A byte count. In TOML: an integer (bytes) or a string with a binary suffix
/// (`"64KiB"`, `"256MiB"`, `"1GiB"`).
///
/// Serialized as the largest exact binary unit (`"256MiB"`, `"4KiB"`, `"4097B"`), so
/// `policy show` is readable and reloads to the same value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

/// Whether a control must be enforced (fail closed) or may degrade (recorded): the jail
/// plan's type, which the policy's `requirement` keys hold.
pub use agentjail_jail::plan::Requirement;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Policy {
    /// Schema version of the policy file format. Only 1 exists.
    pub version: u32,
    pub name: String,
    pub description: String,
    pub languages: Languages,
    pub budget: Budget,
    pub check: CheckRules,
    pub interpreter: Interpreter,
    pub limits: Limits,
    pub filesystem: Filesystem,
    pub network: Network,
    pub seccomp: SeccompPolicy,
    pub landlock: LandlockPolicy,
    pub cgroup: CgroupPolicy,
    pub environment: Environment,
    pub audit: Audit,
    pub session: SessionLimits,
    pub workspace: WorkspacePolicy,
    pub files: FilesPolicy,
    pub artifacts: ArtifactsPolicy,
    pub results: ResultsPolicy,
    pub redaction: Redaction,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Languages {
    /// Languages the policy accepts in an action (policy level): any other stops with
    /// `policy_block:language_denied_policy`.
    pub allowed: Vec<String>,
    /// Languages this policy lets agentjail execute (the seed's second, separate allowlist):
    /// an allowed language that is not here stops with
    /// `policy_block:language_denied_execution`. Only languages the binary can run
    /// ([`agentjail_check::EXECUTION_LANGUAGES`]) are accepted.
    pub execute: Vec<String>,
    /// The action `output_mode`s this policy accepts: `json` (the program prints one JSON
    /// object, validated against the action's schema) and `text` (judge mode: exit 0 is
    /// success, stdout and stderr are the result). An action asking for another stops with
    /// `invalid_request:output_mode_denied`.
    pub output_modes: Vec<String>,
    /// `[languages.<lang>]`: how a language without a runner of agentjail's own is built
    /// and run ([`toolchain`]); one per language in [`toolchain::TOOLCHAIN_LANGUAGES`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c: Option<toolchain::Toolchain>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpp: Option<toolchain::Toolchain>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub java: Option<toolchain::Toolchain>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub go: Option<toolchain::Toolchain>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rust: Option<toolchain::Toolchain>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bash: Option<toolchain::Toolchain>,
}

impl Languages {
    /// The `[languages.<lang>]` table of `language`, if the policy has one.
    pub fn toolchain(&self, language: &str) -> Option<&toolchain::Toolchain> {
        match language {
            "c" => self.c.as_ref(),
            "cpp" => self.cpp.as_ref(),
            "java" => self.java.as_ref(),
            "go" => self.go.as_ref(),
            "rust" => self.rust.as_ref(),
            "bash" => self.bash.as_ref(),
            _ => None,
        }
    }

    pub(crate) fn toolchain_mut(&mut self, language: &str) -> Option<&mut toolchain::Toolchain> {
        match language {
            "c" => self.c.as_mut(),
            "cpp" => self.cpp.as_mut(),
            "java" => self.java.as_mut(),
            "go" => self.go.as_mut(),
            "rust" => self.rust.as_mut(),
            "bash" => self.bash.as_mut(),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Budget {
    /// Total seconds for the whole run (contract to record), seed 000's max_seconds.
    pub max_seconds: u64,
    /// Largest accepted `code`, in characters (Unicode scalar values).
    pub max_code_chars: usize,
    /// Largest accepted `input_payload`, serialized, in bytes.
    pub max_payload_bytes: Bytes,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Interpreter {
    /// Absolute path of the Python interpreter, inside the jail (bound read-only from the host).
    pub python: String,
    /// Arguments placed before the script path.
    pub python_args: Vec<String>,
    /// Python version of `python` ("3.12"). Not given (the default): detected from the
    /// interpreter at load, without running it ([`python::detect`]); given: must be what is
    /// detected. The checker parses for it and judges with its module tables. Read it with
    /// [`Policy::python_version`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python_version: Option<String>,
    /// What the loader found `python` to be (filled at load when the policy executes
    /// Python; never read from or written to a policy file).
    #[serde(skip)]
    pub found: Option<python::Found>,
    /// Modules a warm jail's interpreter imports before its job arrives. Only those the
    /// program may import (check.allowed_imports) are preloaded; `policy lint` names the
    /// others. Every warm jail holds them in memory, so cheap ones by default.
    pub preload: Vec<String>,
    /// Absolute path of node, inside the jail (bound read-only from the host), for
    /// `javascript` when `languages.execute` lists it.
    pub node: String,
    /// node's flags, placed before the runner. Only flags from [`NODE_FLAGS`] are accepted;
    /// agentjail adds `--max-old-space-size` (from `limits.memory`) and, with
    /// `--experimental-permission`, the one `--allow-fs-read` grant the runner needs.
    pub node_args: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    pub wall_time_ms: u64,
    pub cpu_time_ms: u64,
    pub memory: Bytes,
    pub pids: u64,
    pub tmp_size: Bytes,
    pub tmp_inodes: u64,
    pub stdout: Bytes,
    pub stderr: Bytes,
    pub open_files: u64,
    pub file_size: Bytes,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Filesystem {
    /// Host paths bound read-only at the same path inside the jail. A host path that is a
    /// symlink (e.g. `/lib -> usr/lib` on merged-/usr systems) is recreated as the same symlink.
    pub read_only: Vec<String>,
    /// Host paths bound read-only like `read_only`, but only when the host has them (a
    /// missing one is skipped, not an error). A path in both lists is optional.
    pub optional: Vec<String>,
    /// Recreate the host's /etc/alternatives symlinks whose targets lie under a read-only
    /// bind (Debian reaches libblas, liblapack and similar through them). Links only: no
    /// host file is copied, and a link to anything else is left out.
    pub alternatives: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SeccompPolicy {
    pub requirement: Requirement,
    /// Named groups of allowed syscalls (see `agentjail policy show`).
    pub allow_groups: Vec<String>,
    /// Syscalls refused with an errno instead of stopping the run (probes runtimes make).
    pub errno_syscalls: Vec<String>,
    /// `agentjail learn`'s observe mode (policy::learn): never read from or written to a
    /// policy file.
    #[serde(skip)]
    pub observe: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LandlockPolicy {
    pub requirement: Requirement,
    /// Lowest landlock ABI that counts as enforced; below it the control is degraded.
    pub min_abi: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CgroupPolicy {
    pub requirement: Requirement,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Environment {
    /// Extra variables beyond PATH, LANG and HOME=/tmp.
    pub extra: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Audit {
    /// When non-empty, every record is appended to this file as one JSON line.
    pub log: String,
}

/// A session's limits across its calls (each call also has the `[limits]` of a run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SessionLimits {
    /// Calls a session may make before it is closed.
    pub max_calls: u64,
    /// Total wall time of its calls, seconds (the session's execution budget).
    pub max_exec_seconds: u64,
    /// A session nobody called for this long is closed.
    pub idle_timeout_seconds: u64,
    /// A session is closed this long after it started, whatever it is doing.
    pub lifetime_seconds: u64,
    /// Sessions one client may hold open at once (a client: a uid on serve's socket, else a
    /// connection); one more is refused with `too_many_sessions`.
    pub max_per_client: u64,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_calls: 200,
            max_exec_seconds: 300,
            idle_timeout_seconds: 600,
            lifetime_seconds: 3600,
            max_per_client: 16,
        }
    }
}

/// Workspaces (`serve`'s `workspace_*` ops, src/engine/workspace.rs): a jail kept across
/// commands with a writable /workspace. Off unless `enabled`; `policies/workspace.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkspacePolicy {
    /// Whether `workspace_start` is allowed under this policy.
    pub enabled: bool,
    /// Bytes the /workspace tmpfs holds (`size=`); its pages also count against
    /// `limits.memory`.
    pub size: Bytes,
    /// Files and directories it holds (`nr_inodes=`).
    pub inodes: u64,
    /// Commands one workspace may run before it is closed.
    pub max_execs: u64,
    /// A workspace nobody used for this long is closed (its processes killed).
    pub idle_timeout_seconds: u64,
    /// A workspace is closed this long after it started, whatever it is doing.
    pub lifetime_seconds: u64,
    /// Workspaces one client may hold open at once.
    pub max_per_client: u64,
    /// Host directories beneath which `workspace_start`'s `host_dir` may lie: that directory
    /// is then bound read-write at /workspace instead of the tmpfs (src/engine/hostdir.rs).
    /// Empty: `host_dir` is refused.
    pub host_roots: Vec<String>,
    /// The operator's word that `size` and `inodes` do not bound a host directory (only
    /// the host filesystem's own quota does): required when `host_roots` is not empty.
    pub host_quota_acknowledged: bool,
}

impl Default for WorkspacePolicy {
    fn default() -> Self {
        WorkspacePolicy {
            enabled: false,
            size: Bytes(256 << 20),
            inodes: 16384,
            max_execs: 10_000,
            idle_timeout_seconds: 900,
            lifetime_seconds: 7200,
            max_per_client: 8,
            host_roots: Vec::new(),
            host_quota_acknowledged: false,
        }
    }
}

/// Input files: an action's `files` (read-only under /app/in) and `run --input` binds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FilesPolicy {
    /// Most entries in an action's `files`.
    pub max_count: u64,
    /// Largest single file (decoded).
    pub max_file_bytes: Bytes,
    /// All files together (decoded).
    pub max_total_bytes: Bytes,
    /// Host directories under which `run --input HOST_PATH` may bind a file or directory
    /// (read-only, at /app/in/NAME). Empty: no host input at all.
    pub host_roots: Vec<String>,
}

impl Default for FilesPolicy {
    fn default() -> Self {
        FilesPolicy {
            max_count: 16,
            max_file_bytes: Bytes(MIB),
            max_total_bytes: Bytes(4 * MIB),
            host_roots: Vec::new(),
        }
    }
}

/// Artifacts: the files a program leaves in its working directory /app/out (a tmpfs of
/// `max_total_bytes`), collected after every process of the jail is gone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ArtifactsPolicy {
    /// Most artifacts reported (further files are listed as skipped, `over_budget`).
    pub max_count: u64,
    /// Largest artifact read; a larger file is listed as `too_large`, never read.
    pub max_file_bytes: Bytes,
    /// All artifacts together; also the size of the /app/out tmpfs (seed 001 §10.5: 5 MB).
    pub max_total_bytes: Bytes,
    /// Artifacts up to this size come back base64 in the record when no artifacts
    /// directory is given; larger ones are listed with their size and digest only.
    pub inline_max_bytes: Bytes,
}

impl Default for ArtifactsPolicy {
    fn default() -> Self {
        ArtifactsPolicy {
            max_count: 32,
            max_file_bytes: Bytes(5 * MIB),
            max_total_bytes: Bytes(5 * MIB),
            inline_max_bytes: Bytes(256 * 1024),
        }
    }
}

/// Rich results: the MIME bundles a Python program displays (`display(...)`, `plt.show()`,
/// a session call's last expression with a rich repr), reported by the runner and put in
/// the record's `results` (crate::pipeline::results), typed from their content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ResultsPolicy {
    /// Most bundles per run or session call; 0 turns rich results off (`display` then
    /// prints the text form to stdout, `plt.show()` does nothing).
    pub max_count: u64,
    /// Most bytes of result reports per run or session call, counted as the runner encodes
    /// them (one JSON line per bundle, binary formats base64: ~4/3 of a PNG's size).
    pub max_bytes: Bytes,
}

impl Default for ResultsPolicy {
    fn default() -> Self {
        ResultsPolicy {
            max_count: 16,
            max_bytes: Bytes(4 * MIB),
        }
    }
}

/// Redaction of key-like strings (seed 001 §6.7, §10) before a record is written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Redaction {
    /// The built-in patterns (cloud access keys, `sk-…` API keys, bearer tokens, JWTs, PEM
    /// private keys, GitHub/Slack/Google tokens).
    pub defaults: bool,
    /// More patterns (Rust `regex` syntax, linear time).
    pub patterns: Vec<String>,
    /// Redact the printed record too (the audit log always is).
    pub printed: bool,
    /// The values of the policy's brokered credentials (`[[network.credentials]]`), filled
    /// when the policy loads: redacted from both copies of every record, whatever
    /// `printed` says, and from artifacts. Never printed.
    #[serde(skip)]
    pub secrets: Vec<Secret>,
}

impl Default for Redaction {
    fn default() -> Self {
        Redaction {
            defaults: true,
            patterns: Vec::new(),
            printed: false,
            secrets: Vec::new(),
        }
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_string()).collect()
}

const MIB: u64 = 1024 * 1024;

impl Default for Policy {
    fn default() -> Self {
        Policy {
            version: 1,
            name: "default".into(),
            description: "Seed gateway budget: small Python jobs over a JSON payload, no network, \
                          read-only host, /tmp only."
                .into(),
            languages: Languages::default(),
            budget: Budget::default(),
            check: CheckRules::default(),
            interpreter: Interpreter::default(),
            limits: Limits::default(),
            filesystem: Filesystem::default(),
            network: Network::default(),
            seccomp: SeccompPolicy::default(),
            landlock: LandlockPolicy::default(),
            cgroup: CgroupPolicy::default(),
            environment: Environment::default(),
            audit: Audit::default(),
            session: SessionLimits::default(),
            workspace: WorkspacePolicy::default(),
            files: FilesPolicy::default(),
            artifacts: ArtifactsPolicy::default(),
            results: ResultsPolicy::default(),
            redaction: Redaction::default(),
        }
    }
}

impl Default for Languages {
    fn default() -> Self {
        Languages {
            allowed: strings(&["python", "javascript"]),
            execute: strings(&["python"]),
            output_modes: strings(&["json", "text"]),
            c: None,
            cpp: None,
            java: None,
            go: None,
            rust: None,
            bash: None,
        }
    }
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_seconds: 25,
            max_code_chars: 2400,
            max_payload_bytes: Bytes(MIB),
        }
    }
}

impl Policy {
    /// Whether this policy lets agentjail execute `language` (trimmed, any case).
    pub fn executes(&self, language: &str) -> bool {
        agentjail_check::lists(&self.languages.execute, language)
    }

    /// The Python version jobs run with: what the loader detected, else what the policy
    /// names, else "" (a `Policy` built in code; the checker then parses for
    /// [`agentjail_check::python::DEFAULT_PYTHON`]).
    pub fn python_version(&self) -> &str {
        let i = &self.interpreter;
        i.found
            .as_ref()
            .map(|f| f.version.as_str())
            .or(i.python_version.as_deref())
            .unwrap_or("")
    }

    /// How [`Policy::python_version`] was found, for records and `policy show`.
    pub fn python_version_source(&self) -> String {
        let i = &self.interpreter;
        match (&i.found, &i.python_version) {
            (Some(f), Some(_)) => format!("given by the policy; {}", f.how),
            (Some(f), None) => f.how.clone(),
            (None, Some(_)) => "given by the policy".into(),
            (None, None) => String::new(),
        }
    }

    /// Detect the interpreter's Python version and check that the module tables hold for
    /// it and the packages the policy allows ([`python`]). Only for a policy that executes
    /// Python.
    fn resolve_python(&mut self) -> Result<(), invalid::Invalid> {
        if !self.executes("python") {
            return Ok(());
        }
        let i = &self.interpreter;
        let found = python::detect(&i.python).map_err(invalid::refused)?;
        self.interpreter_can_start(&found.resolved)?;
        if let Some(given) = &i.python_version {
            if given.trim() != found.version {
                return Err(invalid::invalid_owned(
                    "interpreter.python_version",
                    format!(
                        "{given:?}, but {} is Python {} ({})",
                        i.python, found.version, found.how
                    ),
                    format!(
                        "remove the key to use the detected version, or set \"{}\"",
                        found.version
                    ),
                ));
            }
        }
        let dirs: Vec<String> = python::package_dirs(&found)
            .into_iter()
            .filter(|d| {
                self.filesystem
                    .read_only
                    .iter()
                    .chain(&self.filesystem.optional)
                    .any(|b| validate::is_under(d, b))
            })
            .collect();
        python::tables_hold(&found, &self.check.allowed_imports, &dirs)
            .map_err(invalid::refused)?;
        self.interpreter.found = Some(found);
        Ok(())
    }

    /// The interpreter's loader and every library it loads are in the jail's binds
    /// ([`elfdeps`]): one outside them is refused here, by name, with the bind to add,
    /// rather than failing in every jail as the program's exit 127.
    fn interpreter_can_start(&self, resolved: &str) -> Result<(), invalid::Invalid> {
        let binds: Vec<String> = self
            .filesystem
            .read_only
            .iter()
            .chain(
                self.filesystem
                    .optional
                    .iter()
                    .filter(|b| Path::new(b).exists()),
            )
            .cloned()
            .collect();
        let python = &self.interpreter.python;
        match elfdeps::first_missing(Path::new(resolved), &binds) {
            Ok(None) => Ok(()),
            Ok(Some(m)) => Err(invalid::invalid_owned(
                "interpreter.python",
                format!(
                    "{python} cannot start in the jail: it needs {} (for {}), which ld.so finds on the host at {}, outside every filesystem.read_only bind",
                    m.name,
                    m.by.display(),
                    m.host_path.display()
                ),
                format!(
                    "add \"{}\" to filesystem.read_only (the jail has only what is bound), or use an interpreter whose libraries are under the binds",
                    m.bind
                ),
            )),
            Err(e) => Err(invalid::invalid_owned(
                "interpreter.python",
                format!("{python}: cannot read what it loads: {e}"),
                "name an intact interpreter binary".to_string(),
            )),
        }
    }

    /// Whether this policy accepts actions in `mode` (`json` or `text`).
    pub fn allows_output_mode(&self, mode: &str) -> bool {
        self.languages.output_modes.iter().any(|m| m == mode)
    }

    /// The preload modules the program may import (the others are never loaded).
    pub fn preload_modules(&self) -> Vec<String> {
        let allowed = &self.check.allowed_imports;
        self.interpreter
            .preload
            .iter()
            .filter(|m| {
                let top = m.split('.').next().unwrap_or(m);
                allowed.iter().any(|a| a == top || a == *m)
            })
            .cloned()
            .collect()
    }

    /// Whether a job under this policy has a network: an allowlist (`mode = "allowlist"`)
    /// or the host's (`enabled = true`).
    pub fn has_network(&self) -> bool {
        self.network.enabled || self.network.allowlist()
    }

    /// The static check's network names ([`agentjail_check::stdlib::NETWORK_ATTRIBUTES`]:
    /// `connect`, `request`, `urlopen`) follow `[network]`: denied on every object under a
    /// policy without network, listed or not; lifted under one with network, so that
    /// `urllib.request.urlopen`, `http.client`'s `conn.request` and `requests.get` pass the
    /// check and the proxy decides what they reach. The loader calls it; `policy show`
    /// prints the result.
    pub fn settle_network_attributes(&mut self) {
        use agentjail_check::stdlib::NETWORK_ATTRIBUTES;
        let network = self.has_network();
        let denied = &mut self.check.denied_attributes;
        if network {
            denied.retain(|a| !NETWORK_ATTRIBUTES.contains(&a.as_str()));
        } else {
            for name in NETWORK_ATTRIBUTES {
                if !denied.iter().any(|a| a == name) {
                    denied.push((*name).to_string());
                }
            }
        }
    }
}

impl Default for Interpreter {
    fn default() -> Self {
        Interpreter {
            python: "/usr/bin/python3".into(),
            python_args: strings(&["-I", "-S", "-B", "-X", "utf8"]),
            python_version: None,
            found: None,
            preload: strings(&["json", "statistics"]),
            node: "/usr/bin/node".into(),
            node_args: strings(DEFAULT_NODE_ARGS),
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            wall_time_ms: 2000,
            cpu_time_ms: 2000,
            memory: Bytes(256 * MIB),
            pids: 64,
            tmp_size: Bytes(64 * MIB),
            tmp_inodes: 4096,
            stdout: Bytes(4096),
            stderr: Bytes(4096),
            open_files: 64,
            file_size: Bytes(64 * MIB),
        }
    }
}

impl Default for Filesystem {
    fn default() -> Self {
        Filesystem {
            read_only: strings(&["/usr", "/bin", "/lib", "/lib64"]),
            optional: strings(&["/lib64", "/lib32", "/libx32"]),
            alternatives: false,
        }
    }
}

impl Default for SeccompPolicy {
    fn default() -> Self {
        SeccompPolicy {
            requirement: Requirement::Required,
            allow_groups: strings(syscall_groups::DEFAULT_GROUPS),
            errno_syscalls: Vec::new(),
            observe: false,
        }
    }
}

impl Default for LandlockPolicy {
    fn default() -> Self {
        LandlockPolicy {
            requirement: Requirement::BestEffort,
            min_abi: 1,
        }
    }
}

impl Default for CgroupPolicy {
    fn default() -> Self {
        CgroupPolicy {
            requirement: Requirement::BestEffort,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Bytes: readable in both directions.

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u64, &str); 3] = [(1024 * MIB, "GiB"), (MIB, "MiB"), (1024, "KiB")];
        let n = self.0;
        for (size, unit) in UNITS {
            if n >= size && n.is_multiple_of(size) {
                return write!(f, "{}{unit}", n / size);
            }
        }
        write!(f, "{n}B")
    }
}

impl Serialize for Bytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Bytes;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a byte count: an integer or a string like \"64KiB\", \"256MiB\", \"1GiB\"",
                )
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Bytes, E> {
                u64::try_from(n)
                    .map(Bytes)
                    .map_err(|_| E::custom(format!("negative byte count {n}")))
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Bytes, E> {
                Ok(Bytes(n))
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Bytes, E> {
                parse_bytes(s).map(Bytes).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// Why a size (`limits.memory`, `exec --memory`) does not parse: the text as given and
/// what is wrong with it. Display is the message agentjail prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BytesError {
    /// No digits.
    NotASize { text: String },
    /// The number does not fit 64 bits.
    Overflow { text: String },
    /// A suffix other than B, KiB, MiB, GiB (K, M, G).
    UnknownUnit { text: String, unit: String },
}

impl fmt::Display for BytesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BytesError::NotASize { text } => write!(
                f,
                "{text:?} is not a size: use bytes or a suffix like 64KiB, 256MiB, 1GiB"
            ),
            BytesError::Overflow { text } => write!(f, "size {text:?} overflows"),
            BytesError::UnknownUnit { text, unit } => write!(
                f,
                "unknown size unit {unit:?} in {text:?}: use B, KiB, MiB or GiB (binary units)"
            ),
        }
    }
}

impl std::error::Error for BytesError {}

/// Parse "4096", "4096B", "64KiB", "256MiB", "1GiB" (binary units; "K"/"M"/"G" accepted as
/// the same).
pub fn parse_bytes(s: &str) -> Result<u64, BytesError> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(BytesError::NotASize {
            text: s.to_string(),
        });
    }
    let overflow = || BytesError::Overflow {
        text: s.to_string(),
    };
    let n: u64 = num.parse().map_err(|_| overflow())?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "KiB" | "k" => 1024,
        "M" | "MiB" => MIB,
        "G" | "GiB" => 1024 * MIB,
        other => {
            return Err(BytesError::UnknownUnit {
                text: s.to_string(),
                unit: other.to_string(),
            })
        }
    };
    n.checked_mul(mult).ok_or_else(overflow)
}

// ---------------------------------------------------------------------------------------
// Loading.

/// A policy as loaded, with where it came from and the hash every record carries.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedPolicy {
    pub policy: Policy,
    /// The file path as given, or [`DEFAULT_POLICY_ORIGIN`] for the embedded default.
    pub path: String,
    /// sha256 (lowercase hex) of the exact file bytes.
    pub sha256: String,
}

impl LoadedPolicy {
    /// Where records are appended: the `--audit-log` flag when given, else the policy's
    /// `audit.log`, else nowhere.
    pub fn audit_log(&self, flag: Option<std::path::PathBuf>) -> Option<std::path::PathBuf> {
        flag.or_else(|| {
            let log = &self.policy.audit.log;
            (!log.is_empty()).then(|| log.into())
        })
    }
}

/// Why a policy could not be loaded. Display names the file, line, column and key, then a
/// hint saying what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    /// The file path (or other origin) of the policy text.
    pub origin: String,
    /// 1-based (line, column in characters), when the error can be placed.
    pub position: Option<(usize, usize)>,
    /// Dotted key (`limits.memory`, `filesystem.read_only`), when known.
    pub key: Option<String>,
    pub message: String,
    pub hint: String,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid policy {}", self.origin)?;
        if let Some((line, column)) = self.position {
            write!(f, ":{line}:{column}")?;
        }
        if let Some(key) = &self.key {
            write!(f, ": key `{key}`")?;
        }
        write!(f, ": {}", self.message)?;
        if !self.hint.is_empty() {
            write!(f, " (hint: {})", self.hint)?;
        }
        Ok(())
    }
}

impl std::error::Error for PolicyError {}

/// The embedded default policy, without parsing it.
///
/// `Policy::default()` holds exactly the values of `policies/default.toml`: the unit test
/// `embedded_default_loads_and_equals_compiled_defaults` loads the embedded text through the
/// strict loader (parse + validate) and asserts equality with `Policy::default()`, so a change
/// to either side that is not made to the other fails the build's tests. Skipping the TOML
/// parse at run time saves ~1.7 M instructions per launch (a third of the launcher's user
/// time, measured with callgrind). The record's `policy_sha256` is still the hash of the
/// embedded bytes, so a reviewer can match it against the file.
///
/// The interpreter's version is detected as for any policy ([`Policy::python_version`]), so
/// this fails, as a file would, on a host whose python3 is not a Python agentjail has
/// tables for.
pub fn load_default() -> Result<LoadedPolicy, PolicyError> {
    let mut policy = Policy::default();
    if let Err(v) = policy.resolve_python() {
        return Err(PolicyError {
            origin: DEFAULT_POLICY_ORIGIN.to_string(),
            position: find_key(DEFAULT_POLICY_TOML, &v.key),
            key: Some(v.key),
            message: v.message,
            hint: v.hint,
        });
    }
    Ok(LoadedPolicy {
        policy,
        path: DEFAULT_POLICY_ORIGIN.to_string(),
        sha256: crate::digest::sha256_hex(DEFAULT_POLICY_TOML.as_bytes()),
    })
}

/// Read and load a policy file (at most [`MAX_POLICY_FILE_BYTES`], UTF-8).
pub fn load_file(path: &Path) -> Result<LoadedPolicy, PolicyError> {
    let origin = path.display().to_string();
    let io_err = |e: std::io::Error| PolicyError {
        origin: origin.clone(),
        position: None,
        key: None,
        message: format!("cannot read the file: {e}"),
        hint: "check the path and its permissions".into(),
    };
    let file = std::fs::File::open(path).map_err(io_err)?;
    let mut bytes = Vec::new();
    file.take(MAX_POLICY_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io_err)?;
    if bytes.len() as u64 > MAX_POLICY_FILE_BYTES {
        return Err(PolicyError {
            origin,
            position: None,
            key: None,
            message: format!("larger than {} bytes", MAX_POLICY_FILE_BYTES),
            hint: "a policy is a short TOML file; check that the path names one".into(),
        });
    }
    let text = match std::str::from_utf8(&bytes) {
        Ok(t) => t,
        Err(e) => {
            let valid = &bytes[..e.valid_up_to()];
            let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
            let line_start = valid.iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
            let column = String::from_utf8_lossy(&valid[line_start..])
                .chars()
                .count()
                + 1;
            return Err(PolicyError {
                origin,
                position: Some((line, column)),
                key: None,
                message: "the file is not valid UTF-8".into(),
                hint: "TOML files are UTF-8 text; check that the path names a policy file".into(),
            });
        }
    };
    load_str(text, &origin)
}

/// Parse and validate policy text. `origin` names it in errors and becomes `path`.
pub fn load_str(text: &str, origin: &str) -> Result<LoadedPolicy, PolicyError> {
    load_text(text, origin, true)
}

/// [`load_str`] without reading the brokered credentials' files (`network.broker` and
/// `redaction.secrets` stay empty): for the zygote's template, whose memory every jail it
/// clones continues in, so it must never have held a key (src/zygote/template.rs).
pub fn load_str_without_secrets(text: &str, origin: &str) -> Result<LoadedPolicy, PolicyError> {
    load_text(text, origin, false)
}

fn load_text(text: &str, origin: &str, secrets: bool) -> Result<LoadedPolicy, PolicyError> {
    let mut policy: Policy = toml::from_str(text).map_err(|e| parse_error(text, origin, &e))?;
    // `version` is the one key that must be written: it makes an empty or unrelated file an
    // error, and a future format change detectable.
    let table: toml::Table = toml::from_str(text).map_err(|e| parse_error(text, origin, &e))?;
    if !table.contains_key("version") {
        return Err(PolicyError {
            origin: origin.to_string(),
            position: Some((1, 1)),
            key: Some("version".into()),
            message: "missing; every policy file states its format version".into(),
            hint: "start the file with `version = 1`".into(),
        });
    }
    let checked = validate::validate(&policy)
        .and_then(|()| credentials::validate(&policy))
        .and_then(|()| policy.resolve_python())
        .and_then(|()| toolchain::resolve(&mut policy))
        .and_then(|()| {
            if secrets {
                credentials::load(&mut policy)
            } else {
                Ok(())
            }
        });
    if let Err(v) = checked {
        let pos = v
            .item
            .as_deref()
            .and_then(|item| find_item(text, &v.key, item))
            .or_else(|| find_key(text, &v.key));
        return Err(PolicyError {
            origin: origin.to_string(),
            position: pos,
            key: Some(v.key),
            message: v.message,
            hint: v.hint,
        });
    }
    policy.settle_network_attributes();
    Ok(LoadedPolicy {
        policy,
        path: origin.to_string(),
        sha256: crate::digest::sha256_hex(text.as_bytes()),
    })
}

fn parse_error(text: &str, origin: &str, e: &toml::de::Error) -> PolicyError {
    let message = e.message().trim().to_string();
    let (position, key) = match e.span() {
        Some(span) => {
            let (l, c) = line_col(text, span.start);
            (Some((l, c)), key_at_line(text, l))
        }
        None => (None, None),
    };
    let hint = if message.contains("unknown field") {
        "remove the key or fix its spelling; `agentjail policy show` prints every valid key"
    } else if message.contains("invalid type") || message.contains("expected") {
        "give the value the type shown in policies/default.toml"
    } else if message.contains("size") || message.contains("byte count") {
        "write sizes as an integer of bytes or a string like \"64KiB\", \"256MiB\", \"1GiB\""
    } else {
        "fix the TOML syntax at that position; policies/default.toml shows every key"
    };
    PolicyError {
        origin: origin.to_string(),
        position,
        key,
        message,
        hint: hint.into(),
    }
}

// ---------------------------------------------------------------------------------------
// show and lint.

/// The effective policy as TOML with every default filled in, preceded by comment lines
/// naming its source and sha256. The output loads back to the same `Policy`.
pub fn show(loaded: &LoadedPolicy) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "# agentjail effective policy\n# source: {}\n",
        loaded.path
    ));
    out.push_str(&format!("# sha256: {}\n", loaded.sha256));
    let source = loaded.policy.python_version_source();
    if !source.is_empty() {
        out.push_str(&format!(
            "# interpreter.python_version = \"{}\": {source}\n",
            loaded.policy.python_version()
        ));
    }
    out.push_str(
        "# Every key is shown with its effective value, defaults included.\n\
         # The static check ([check]) is defence in depth; the jail (everything else) is the\n\
         # boundary and contains code that slips past the check.\n\n",
    );
    match toml::to_string_pretty(&loaded.policy) {
        Ok(body) => out.push_str(&body),
        // Unreachable for a validated policy (every value fits TOML); say so rather than
        // print half a policy.
        Err(e) => out.push_str(&format!("# cannot serialize this policy: {e}\n")),
    }
    out.push_str(&seccomp_comment(&loaded.policy.seccomp));
    out
}

/// [`show`] as one JSON object: `{"source", "sha256", "python_version", "policy"}`, the
/// policy with the same keys and values `show` prints (`agentjail policy show --json`).
pub fn show_json(loaded: &LoadedPolicy) -> String {
    serde_json::json!({
        "source": loaded.path,
        "sha256": loaded.sha256,
        "python_version": loaded.policy.python_version(),
        "policy": &loaded.policy,
    })
    .to_string()
}

/// The syscalls `[seccomp] allow_groups` resolves to, as a comment a reviewer can read
/// beside the group names (the same list the record's seccomp entry counts).
fn seccomp_comment(p: &SeccompPolicy) -> String {
    let Ok(plan) =
        agentjail_jail::syscall_groups::resolve(p.requirement, &p.allow_groups, &p.errno_syscalls)
    else {
        return String::new();
    };
    let mut out = format!(
        "\n# [seccomp] allow_groups resolve to {} syscalls:\n",
        plan.allowed.len()
    );
    let mut line = String::from("#  ");
    for name in &plan.allowed {
        if line.len() + name.len() + 1 > 90 {
            out.push_str(line.trim_end());
            out.push('\n');
            line = String::from("#  ");
        }
        line.push(' ');
        line.push_str(name);
    }
    out.push_str(&line);
    out.push('\n');
    if !plan.errno.is_empty() {
        let errno: Vec<String> = plan
            .errno
            .iter()
            .map(|(n, e)| match *e {
                libc::ENOSYS => format!("{n}→ENOSYS"),
                libc::EPERM => format!("{n}→EPERM"),
                other => format!("{n}→errno {other}"),
            })
            .collect();
        out.push_str(&format!(
            "# refused with an errno instead: {}\n",
            errno.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_default_loads_and_equals_compiled_defaults() {
        let loaded = load_str(DEFAULT_POLICY_TOML, DEFAULT_POLICY_ORIGIN).expect("default loads");
        // Equal but for what the loader detected about the interpreter.
        let mut parsed = loaded.policy.clone();
        assert!(parsed.interpreter.found.take().is_some(), "detected");
        assert_eq!(parsed, Policy::default());
        assert_eq!(load_default().expect("default loads"), loaded);
        assert_eq!(loaded.path, "<embedded default>");
        let p = &loaded.policy;
        assert_eq!(p.languages.allowed, ["python", "javascript"]);
        // JavaScript passes the policy gate and stops at the execution one.
        assert_eq!(p.languages.execute, ["python"]);
        assert!(!p.executes("javascript"));
        assert!(!p.seccomp.allow_groups.iter().any(|g| g == "javascript"));
        assert_eq!(p.check.allowed_imports, ["json", "statistics"]);
        assert_eq!(p.limits.wall_time_ms, 2000);
        assert_eq!(p.limits.cpu_time_ms, 2000);
        assert_eq!(p.limits.memory, Bytes(256 * MIB));
        assert_eq!(p.limits.pids, 64);
        assert_eq!(p.limits.tmp_size, Bytes(64 * MIB));
        assert_eq!(p.limits.stdout, Bytes(4096));
        assert_eq!(p.limits.stderr, Bytes(4096));
        assert_eq!(p.budget.max_code_chars, 2400);
        assert_eq!(p.budget.max_seconds, 25);
        assert!(!p.network.enabled);
        assert!(!p.seccomp.allow_groups.iter().any(|g| g == "process_spawn"));
    }

    #[test]
    fn bytes_display_round_trips() {
        for n in [
            0,
            1,
            4095,
            4096,
            4097,
            MIB,
            256 * MIB,
            1024 * MIB,
            3 * 1024 * MIB + 1,
        ] {
            let text = Bytes(n).to_string();
            assert_eq!(parse_bytes(&text), Ok(n), "{text}");
        }
        assert_eq!(Bytes(256 * MIB).to_string(), "256MiB");
        assert_eq!(Bytes(4096).to_string(), "4KiB");
        assert!(parse_bytes("12XB").is_err());
        assert!(parse_bytes("MiB").is_err());
        assert!(parse_bytes("99999999999999999999").is_err());
        assert!(parse_bytes("17179869184GiB").is_err());
    }
}
