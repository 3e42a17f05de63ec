//! The policy file: what the static check allows and what the jail enforces.
//!
//! A policy is TOML a reviewer can read top to bottom. Every key has a default here, so
//! `agentjail policy show` can print the effective policy with nothing hidden. Loading is
//! strict: unknown keys, wrong types and impossible values are errors naming the file,
//! line and key. Limits carry their unit in the key name (`_ms`) or in the value
//! (`"256MiB"`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The policy compiled into the binary; the same bytes as `policies/default.toml`.
pub const DEFAULT_POLICY_TOML: &str = include_str!("../policies/default.toml");

/// A byte count. In TOML: an integer (bytes) or a string with a binary suffix
/// (`"64KiB"`, `"256MiB"`, `"1GiB"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Bytes(pub u64);

/// Whether a control must be enforced (fail closed) or may degrade (recorded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Requirement {
    /// The run stops with `sandbox_unavailable:<control>` when the host cannot enforce it.
    Required,
    /// Enforced when the host can; otherwise the record says `degraded`.
    BestEffort,
}

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
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Languages {
    /// Languages the policy accepts in an action (policy level). Execution support is a
    /// property of the binary: agentjail executes only `python`.
    pub allowed: Vec<String>,
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
pub struct CheckRules {
    /// Top-level modules the code may import.
    pub allowed_imports: Vec<String>,
    /// Names that may not be called (`eval(...)`), also blocked when referenced.
    pub denied_calls: Vec<String>,
    /// Names that may not be referenced at all.
    pub denied_names: Vec<String>,
    /// Attribute names that may not be accessed on any object.
    pub denied_attributes: Vec<String>,
    /// Reject any identifier or attribute starting with `__`.
    pub deny_dunder: bool,
    /// Reject string literals containing `http://` or `https://` (and other URL schemes).
    pub deny_url_literals: bool,
    /// How many `input()` calls the code may contain.
    pub max_input_reads: u32,
    /// Deepest expression/statement nesting accepted (protects the checker's stack).
    pub max_nesting_depth: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Interpreter {
    /// Absolute path of the Python interpreter, inside the jail (bound read-only from the host).
    pub python: String,
    /// Arguments placed before the script path.
    pub python_args: Vec<String>,
    /// Python version the checker parses for ("3.11").
    pub python_version: String,
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
    /// Host paths that must exist for the run (a missing optional one is skipped).
    pub optional: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Network {
    /// false: a fresh network namespace with only a down loopback; nothing reachable.
    pub enabled: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SeccompPolicy {
    pub requirement: Requirement,
    /// Named groups of allowed syscalls (see `agentjail policy show`).
    pub allow_groups: Vec<String>,
    /// Syscalls refused with an errno instead of stopping the run (probes runtimes make).
    pub errno_syscalls: Vec<String>,
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_string()).collect()
}

const MIB: u64 = 1024 * 1024;

impl Default for Policy {
    fn default() -> Self {
        Policy {
            version: 1,
            name: "default".into(),
            description: String::new(),
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
        }
    }
}

impl Default for Languages {
    fn default() -> Self {
        Languages {
            allowed: strings(&["python", "javascript"]),
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

impl Default for CheckRules {
    fn default() -> Self {
        CheckRules {
            allowed_imports: strings(&["json", "statistics"]),
            denied_calls: strings(&[
                "exec",
                "eval",
                "compile",
                "__import__",
                "open",
                "breakpoint",
                "input_raw",
            ]),
            denied_names: strings(&[
                "builtins",
                "getattr",
                "setattr",
                "delattr",
                "globals",
                "locals",
                "vars",
                "dir",
                "os",
                "sys",
                "subprocess",
                "socket",
                "pathlib",
                "importlib",
            ]),
            denied_attributes: strings(&[
                "system", "popen", "fork", "spawn", "connect", "request", "urlopen",
            ]),
            deny_dunder: true,
            deny_url_literals: true,
            max_input_reads: 1,
            max_nesting_depth: 64,
        }
    }
}

impl Default for Interpreter {
    fn default() -> Self {
        Interpreter {
            python: "/usr/bin/python3".into(),
            python_args: strings(&["-I", "-S", "-B", "-X", "utf8"]),
            python_version: "3.11".into(),
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
        }
    }
}

impl Default for Network {
    fn default() -> Self {
        Network { enabled: false }
    }
}

impl Default for SeccompPolicy {
    fn default() -> Self {
        SeccompPolicy {
            requirement: Requirement::Required,
            allow_groups: strings(&[
                "basic_io",
                "files_read",
                "files_write_tmp",
                "memory",
                "process_self",
                "threads",
                "signals",
                "time",
                "sleep",
                "poll",
                "pipes",
                "exec",
                "system_info",
            ]),
            errno_syscalls: Vec::new(),
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

impl Default for Environment {
    fn default() -> Self {
        Environment {
            extra: BTreeMap::new(),
        }
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(i64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(n) if n >= 0 => Ok(Bytes(n as u64)),
            Raw::Int(n) => Err(serde::de::Error::custom(format!("negative byte count {n}"))),
            Raw::Text(s) => parse_bytes(&s).map(Bytes).map_err(serde::de::Error::custom),
        }
    }
}

/// Parse "4096", "64KiB", "256MiB", "1GiB" (binary units; "K"/"M"/"G" accepted as the same).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| {
        format!("{s:?} is not a size: use bytes or a suffix like 64KiB, 256MiB, 1GiB")
    })?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "KiB" | "k" => 1024,
        "M" | "MiB" => MIB,
        "G" | "GiB" => 1024 * MIB,
        other => {
            return Err(format!(
                "unknown size unit {other:?} in {s:?}: use B, KiB, MiB or GiB"
            ))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("size {s:?} overflows"))
}
