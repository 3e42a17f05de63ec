//! The policy file: what the static check allows and what the jail enforces.
//!
//! A policy is TOML a reviewer can read top to bottom. Every key has a default here, so
//! `agentjail policy show` can print the effective policy with nothing hidden. Loading is
//! strict: unknown keys, wrong types and impossible values are errors naming the file,
//! line and key. Limits carry their unit in the key name (`_ms`) or in the value
//! (`"256MiB"`).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::Path;

/// The policy compiled into the binary; the same bytes as `policies/default.toml`.
pub const DEFAULT_POLICY_TOML: &str = include_str!("../policies/default.toml");

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

/// Seccomp group names, from the seccomp module that defines their syscalls (one list:
/// a group the filter does not know can never validate here).
pub fn seccomp_group_names() -> impl Iterator<Item = &'static str> {
    crate::jail::seccomp::groups().iter().map(|(name, _)| *name)
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

/// Modules that hand the program the host: processes, files, the import system, raw memory.
pub const DANGEROUS_MODULES: &[&str] = &[
    "os",
    "sys",
    "builtins",
    "subprocess",
    "importlib",
    "ctypes",
    "io",
    "pathlib",
    "shutil",
    "socket",
];

/// Which modules a stdlib module exposes as plain (non-dunder) attributes, restricted to the
/// edges that lead to a [`DANGEROUS_MODULES`] entry. Generated on CPython 3.11.2 with
/// `python3 -I -S` by importing each module and walking `dir()` for module-typed values
/// (`posix` is recorded as `os`). Modules listed with no edges were checked and reach none.
/// E.g. `json.codecs.sys`, `statistics.random._os`, `re.enum.bltns` (builtins).
pub const MODULE_ATTRIBUTE_GRAPH: &[(&str, &[(&str, &str)])] = &[
    ("abc", &[]),
    ("array", &[]),
    ("ast", &[("sys", "sys")]),
    ("base64", &[("re", "re")]),
    ("bisect", &[]),
    (
        "calendar",
        &[
            ("_locale", "locale"),
            ("datetime", "datetime"),
            ("sys", "sys"),
        ],
    ),
    ("cmath", &[]),
    ("codecs", &[("builtins", "builtins"), ("sys", "sys")]),
    (
        "collections",
        &[
            ("_collections_abc", "collections.abc"),
            ("_sys", "sys"),
            ("abc", "collections.abc"),
        ],
    ),
    ("collections.abc", &[("sys", "sys")]),
    (
        "contextlib",
        &[
            ("_collections_abc", "collections.abc"),
            ("os", "os"),
            ("sys", "sys"),
        ],
    ),
    ("copy", &[]),
    ("csv", &[("re", "re")]),
    (
        "dataclasses",
        &[
            ("builtins", "builtins"),
            ("inspect", "inspect"),
            ("re", "re"),
            ("sys", "sys"),
        ],
    ),
    ("datetime", &[("sys", "sys")]),
    ("decimal", &[]),
    ("difflib", &[]),
    (
        "dis",
        &[("collections", "collections"), ("io", "io"), ("sys", "sys")],
    ),
    (
        "encodings",
        &[
            ("codecs", "codecs"),
            ("sys", "sys"),
            ("utf_8", "encodings.utf_8"),
        ],
    ),
    ("encodings.utf_8", &[("codecs", "codecs")]),
    ("enum", &[("bltns", "builtins"), ("sys", "sys")]),
    ("fractions", &[("re", "re"), ("sys", "sys")]),
    ("functools", &[]),
    ("graphlib", &[]),
    ("hashlib", &[]),
    ("heapq", &[]),
    (
        "inspect",
        &[
            ("ast", "ast"),
            ("builtins", "builtins"),
            ("collections", "collections"),
            ("dis", "dis"),
            ("enum", "enum"),
            ("importlib", "importlib"),
            ("linecache", "linecache"),
            ("os", "os"),
            ("re", "re"),
            ("sys", "sys"),
            ("tokenize", "tokenize"),
        ],
    ),
    ("itertools", &[]),
    (
        "json",
        &[
            ("codecs", "codecs"),
            ("decoder", "json.decoder"),
            ("encoder", "json.encoder"),
            ("scanner", "json.scanner"),
        ],
    ),
    ("json.decoder", &[("re", "re"), ("scanner", "json.scanner")]),
    ("json.encoder", &[("re", "re")]),
    ("json.scanner", &[("re", "re")]),
    ("keyword", &[]),
    (
        "linecache",
        &[("os", "os"), ("sys", "sys"), ("tokenize", "tokenize")],
    ),
    (
        "locale",
        &[
            ("_collections_abc", "collections.abc"),
            ("encodings", "encodings"),
            ("re", "re"),
            ("sys", "sys"),
        ],
    ),
    ("math", &[]),
    ("numbers", &[]),
    ("operator", &[]),
    (
        "platform",
        &[
            ("collections", "collections"),
            ("os", "os"),
            ("re", "re"),
            ("sys", "sys"),
        ],
    ),
    (
        "pprint",
        &[
            ("_collections", "collections"),
            ("_dataclasses", "dataclasses"),
            ("_sys", "sys"),
            ("re", "re"),
        ],
    ),
    ("random", &[("_os", "os")]),
    ("re", &[("enum", "enum")]),
    ("secrets", &[("base64", "base64")]),
    ("statistics", &[("random", "random"), ("sys", "sys")]),
    ("string", &[("_re", "re")]),
    ("struct", &[]),
    ("textwrap", &[("re", "re")]),
    ("time", &[]),
    (
        "tokenize",
        &[("collections", "collections"), ("re", "re"), ("sys", "sys")],
    ),
    (
        "typing",
        &[
            ("collections", "collections"),
            ("contextlib", "contextlib"),
            ("stdlib_re", "re"),
            ("sys", "sys"),
            ("warnings", "warnings"),
        ],
    ),
    ("unicodedata", &[]),
    (
        "uuid",
        &[("os", "os"), ("platform", "platform"), ("sys", "sys")],
    ),
    ("warnings", &[("sys", "sys")]),
    ("zlib", &[]),
];

/// Attributes that walk from any generator, coroutine, traceback or frame to a frame's
/// globals and builtins without a dunder name; a policy that allows attribute access to
/// them lets code reach `__import__` through a dict subscript with a string key.
pub const FRAME_ATTRIBUTES: &[&str] = &[
    "gi_frame",
    "gi_code",
    "cr_frame",
    "cr_code",
    "ag_frame",
    "ag_code",
    "tb_frame",
    "tb_next",
    "f_back",
    "f_globals",
    "f_builtins",
    "f_locals",
    "f_code",
];

/// A byte count. In TOML: an integer (bytes) or a string with a binary suffix
/// (`"64KiB"`, `"256MiB"`, `"1GiB"`).
///
/// Serialized as the largest exact binary unit (`"256MiB"`, `"4KiB"`, `"4097B"`), so
/// `policy show` is readable and reloads to the same value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
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
    /// Host paths bound read-only like `read_only`, but only when the host has them (a
    /// missing one is skipped, not an error). A path in both lists is optional.
    pub optional: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
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
                "system",
                "popen",
                "fork",
                "spawn",
                "connect",
                "request",
                "urlopen",
                // modules reachable as plain attributes of allowed modules
                // (json.codecs.sys, statistics.sys, statistics.random._os, re.enum.bltns)
                "sys",
                "_sys",
                "os",
                "_os",
                "builtins",
                "bltns",
                "io",
                "importlib",
                "codecs",
                // frame walking: generator/traceback -> frame -> globals/builtins
                "gi_frame",
                "gi_code",
                "cr_frame",
                "cr_code",
                "ag_frame",
                "ag_code",
                "tb_frame",
                "tb_next",
                "f_back",
                "f_globals",
                "f_builtins",
                "f_locals",
                "f_code",
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

/// Parse "4096", "4096B", "64KiB", "256MiB", "1GiB" (binary units; "K"/"M"/"G" accepted as
/// the same).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(format!(
            "{s:?} is not a size: use bytes or a suffix like 64KiB, 256MiB, 1GiB"
        ));
    }
    let n: u64 = num.parse().map_err(|_| format!("size {s:?} overflows"))?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "KiB" | "k" => 1024,
        "M" | "MiB" => MIB,
        "G" | "GiB" => 1024 * MIB,
        other => {
            return Err(format!(
                "unknown size unit {other:?} in {s:?}: use B, KiB, MiB or GiB (binary units)"
            ))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("size {s:?} overflows"))
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

fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// The embedded default policy, without parsing it.
///
/// `Policy::default()` holds exactly the values of `policies/default.toml`: the unit test
/// `embedded_default_loads_and_equals_compiled_defaults` loads the embedded text through the
/// strict loader (parse + validate) and asserts equality with `Policy::default()`, so a change
/// to either side that is not made to the other fails the build's tests. Skipping the TOML
/// parse at run time saves ~1.7 M instructions per launch (a third of the launcher's user
/// time, measured with callgrind). The record's `policy_sha256` is still the hash of the
/// embedded bytes, so a reviewer can match it against the file.
pub fn load_default() -> LoadedPolicy {
    LoadedPolicy {
        policy: Policy::default(),
        path: DEFAULT_POLICY_ORIGIN.to_string(),
        sha256: sha256_hex(DEFAULT_POLICY_TOML.as_bytes()),
    }
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
    let policy: Policy = toml::from_str(text).map_err(|e| parse_error(text, origin, &e))?;
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
    if let Err(v) = validate(&policy) {
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
    Ok(LoadedPolicy {
        policy,
        path: origin.to_string(),
        sha256: sha256_hex(text.as_bytes()),
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

/// 1-based line and column (in characters) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |p| p + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// A line of a TOML document, classified just enough to find keys again.
enum LineKind {
    Header(String),
    Key(String),
    Other,
}

fn unquote_key(raw: &str) -> Option<String> {
    let parts: Vec<String> = raw
        .split('.')
        .map(|p| p.trim().trim_matches('"').trim_matches('\'').to_string())
        .collect();
    if parts.iter().any(|p| {
        p.is_empty()
            || !p
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '+')
    }) {
        return None;
    }
    Some(parts.join("."))
}

fn classify(line: &str) -> LineKind {
    let t = line.trim();
    if t.starts_with('#') || t.is_empty() {
        return LineKind::Other;
    }
    if let Some(rest) = t.strip_prefix('[') {
        let rest = rest.trim_start_matches('[');
        if let Some(end) = rest.find(']') {
            if let Some(k) = unquote_key(&rest[..end]) {
                return LineKind::Header(k);
            }
        }
        return LineKind::Other;
    }
    if let Some(eq) = t.find('=') {
        if let Some(k) = unquote_key(&t[..eq]) {
            return LineKind::Key(k);
        }
    }
    LineKind::Other
}

/// Walk the document's lines with the dotted key each one defines.
fn keyed_lines(text: &str) -> Vec<(usize, Option<String>, usize)> {
    // (1-based line, full dotted key defined on the line, column of the key)
    let mut out = Vec::new();
    let mut section = String::new();
    for (i, line) in text.lines().enumerate() {
        let col = line.len() - line.trim_start().len() + 1;
        match classify(line) {
            LineKind::Header(h) => {
                section = h.clone();
                out.push((i + 1, Some(h), col));
            }
            LineKind::Key(k) => {
                let full = if section.is_empty() {
                    k
                } else {
                    format!("{section}.{k}")
                };
                out.push((i + 1, Some(full), col));
            }
            LineKind::Other => out.push((i + 1, None, col)),
        }
    }
    out
}

/// The dotted key in force at `line`: the key written on it, or the nearest key above it
/// (inside a multi-line array), or the table header.
fn key_at_line(text: &str, line: usize) -> Option<String> {
    let lines = keyed_lines(text);
    lines
        .iter()
        .take(line)
        .rev()
        .find_map(|(_, k, _)| k.clone())
}

/// Line and column where `key` (dotted) is written, if it is.
fn find_key(text: &str, key: &str) -> Option<(usize, usize)> {
    let lines = keyed_lines(text);
    if let Some((l, _, c)) = lines.iter().find(|(_, k, _)| k.as_deref() == Some(key)) {
        return Some((*l, *c));
    }
    // A key inside a table: fall back to the table's own line (e.g. environment.extra.X).
    let parent = key.rsplit_once('.').map(|(p, _)| p)?;
    find_key(text, parent)
}

/// Line and column of an array element or table key `item` written under `key`.
fn find_item(text: &str, key: &str, item: &str) -> Option<(usize, usize)> {
    let (start, _) = find_key(text, key)?;
    let lines = keyed_lines(text);
    let quoted = format!("\"{item}\"");
    for (i, line) in text.lines().enumerate().skip(start - 1) {
        // Stop at the next key that is not the one holding the item.
        if i + 1 > start {
            if let Some((_, Some(k), _)) = lines.get(i) {
                if !k.starts_with(key) {
                    break;
                }
            }
        }
        let found = line.find(&quoted).or_else(|| {
            let t = line.trim_start();
            (t.starts_with(item) && t[item.len()..].trim_start().starts_with('='))
                .then(|| line.len() - t.len())
        });
        if let Some(pos) = found {
            return Some((i + 1, line[..pos].chars().count() + 1));
        }
    }
    None
}

// ---------------------------------------------------------------------------------------
// Validation: values the types allow but a jail cannot honour.

struct Invalid {
    key: String,
    /// An array element or table key under `key` to point at.
    item: Option<String>,
    message: String,
    hint: String,
}

fn invalid(key: &str, message: impl Into<String>, hint: impl Into<String>) -> Invalid {
    Invalid {
        key: key.into(),
        item: None,
        message: message.into(),
        hint: hint.into(),
    }
}

fn invalid_item(key: &str, item: &str, message: impl Into<String>, hint: &str) -> Invalid {
    Invalid {
        key: key.into(),
        item: Some(item.into()),
        message: message.into(),
        hint: hint.into(),
    }
}

fn in_range(key: &str, value: u64, min: u64, max: u64, why: &str) -> Result<(), Invalid> {
    if value < min || value > max {
        return Err(invalid(
            key,
            format!("{value} is outside {min}..={max}"),
            why.to_string(),
        ));
    }
    Ok(())
}

fn bytes_in_range(key: &str, value: Bytes, min: u64, max: u64, why: &str) -> Result<(), Invalid> {
    if value.0 < min || value.0 > max {
        return Err(invalid(
            key,
            format!("{value} is outside {}..={}", Bytes(min), Bytes(max)),
            why.to_string(),
        ));
    }
    Ok(())
}

/// Why an absolute path is not acceptable as written, if it is not.
fn path_problem(p: &str) -> Option<&'static str> {
    if !p.starts_with('/') {
        return Some("is not absolute");
    }
    if p.len() > 1 && p.ends_with('/') {
        return Some("ends with `/`");
    }
    if p.contains('\0') {
        return Some("contains a NUL byte");
    }
    if p[1..]
        .split('/')
        .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Some("is not normalised (empty, `.` or `..` component)");
    }
    None
}

/// Whether `path` is `root` or beneath it (component-wise).
fn is_under(path: &str, root: &str) -> bool {
    root == "/"
        || path == root
        || (path.starts_with(root) && path.as_bytes().get(root.len()) == Some(&b'/'))
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn check_bind(key: &str, p: &str) -> Result<(), Invalid> {
    const HINT: &str = "bind only what the interpreter needs (/usr, /bin, /lib, /lib64), as \
                        normalised absolute paths; the jail synthesizes /etc, /dev, /proc, /tmp";
    if let Some(problem) = path_problem(p) {
        return Err(invalid_item(key, p, format!("path {p:?} {problem}"), HINT));
    }
    if p == "/" {
        return Err(invalid_item(
            key,
            p,
            "binding `/` would expose every host file, secrets included",
            HINT,
        ));
    }
    if let Some(root) = FORBIDDEN_BIND_ROOTS.iter().find(|r| is_under(p, r)) {
        return Err(invalid_item(
            key,
            p,
            format!("{p:?} is under {root}, which holds host secrets or state or is built fresh by the jail"),
            HINT,
        ));
    }
    Ok(())
}

fn validate(p: &Policy) -> Result<(), Invalid> {
    if p.version != POLICY_VERSION {
        return Err(invalid(
            "version",
            format!("unsupported policy format version {}", p.version),
            "this agentjail reads `version = 1`",
        ));
    }
    if p.name.trim().is_empty() {
        return Err(invalid(
            "name",
            "empty",
            "name the policy; records and `policy show` print it",
        ));
    }

    // Languages (policy level).
    for lang in &p.languages.allowed {
        if lang.is_empty()
            || !lang
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
        {
            return Err(invalid_item(
                "languages.allowed",
                lang,
                format!("{lang:?} is not a language name"),
                "use lowercase names such as \"python\"",
            ));
        }
    }

    // Budget.
    let b = &p.budget;
    in_range(
        "budget.max_seconds",
        b.max_seconds,
        1,
        MAX_TIME_MS / 1000,
        "the whole run (contract to record) must get at least 1 s and at most 1 hour",
    )?;
    if b.max_seconds.saturating_mul(1000) < p.limits.wall_time_ms {
        return Err(invalid(
            "budget.max_seconds",
            format!(
                "{} s is shorter than limits.wall_time_ms = {} ms",
                b.max_seconds, p.limits.wall_time_ms
            ),
            "the run budget covers the program's wall time; raise max_seconds or lower wall_time_ms",
        ));
    }
    in_range(
        "budget.max_code_chars",
        b.max_code_chars as u64,
        1,
        MAX_CODE_CHARS as u64,
        "the checker parses every character; 1 to 1,000,000",
    )?;
    bytes_in_range(
        "budget.max_payload_bytes",
        b.max_payload_bytes,
        1,
        MAX_PAYLOAD_BYTES,
        "the payload is held in memory and fed on stdin; at most 64MiB",
    )?;

    // Static check rules.
    let c = &p.check;
    for m in &c.allowed_imports {
        if !m.split('.').all(is_identifier) {
            return Err(invalid_item(
                "check.allowed_imports",
                m,
                format!("{m:?} is not a module name"),
                "list top-level module names such as \"json\"",
            ));
        }
    }
    for (key, list) in [
        ("check.denied_calls", &c.denied_calls),
        ("check.denied_names", &c.denied_names),
        ("check.denied_attributes", &c.denied_attributes),
    ] {
        if let Some(bad) = list.iter().find(|n| !is_identifier(n)) {
            return Err(invalid_item(
                key,
                bad,
                format!("{bad:?} is not a Python identifier"),
                "list plain ASCII identifiers; the checker compares them after NFKC normalisation",
            ));
        }
    }
    in_range(
        "check.max_nesting_depth",
        u64::from(c.max_nesting_depth),
        1,
        256,
        "the checker recurses once per level; CPython's own parser stops near 200",
    )?;

    // Interpreter.
    let i = &p.interpreter;
    if let Some(problem) = path_problem(&i.python) {
        return Err(invalid(
            "interpreter.python",
            format!("{:?} {problem}", i.python),
            "give the absolute, normalised path of the interpreter, e.g. /usr/bin/python3",
        ));
    }
    let all_binds = || p.filesystem.read_only.iter().chain(&p.filesystem.optional);
    if !all_binds().any(|b| is_under(&i.python, b)) {
        return Err(invalid(
            "interpreter.python",
            format!("{:?} is not under any filesystem.read_only path", i.python),
            "the jail only contains the read-only binds; add the interpreter's directory to filesystem.read_only",
        ));
    }
    if let Some(arg) = i.python_args.iter().find(|a| a.contains('\0')) {
        return Err(invalid_item(
            "interpreter.python_args",
            arg,
            "argument contains a NUL byte",
            "remove it",
        ));
    }
    let version_ok = i
        .python_version
        .strip_prefix("3.")
        .and_then(|m| m.parse::<u32>().ok())
        .is_some_and(|m| (7..=13).contains(&m));
    if !version_ok {
        return Err(invalid(
            "interpreter.python_version",
            format!(
                "{:?} is not a Python version the checker can parse for",
                i.python_version
            ),
            "use \"3.7\" to \"3.13\", matching the interpreter the jail runs",
        ));
    }

    // Limits.
    let l = &p.limits;
    in_range(
        "limits.wall_time_ms",
        l.wall_time_ms,
        1,
        MAX_TIME_MS,
        "a wall-clock limit between 1 ms and 1 hour",
    )?;
    in_range(
        "limits.cpu_time_ms",
        l.cpu_time_ms,
        1,
        MAX_TIME_MS,
        "a CPU limit between 1 ms and 1 hour",
    )?;
    if l.memory.0 < MIN_MEMORY_BYTES {
        return Err(invalid(
            "limits.memory",
            format!("{} is below {}: the interpreter cannot start", l.memory, Bytes(MIN_MEMORY_BYTES)),
            "CPython 3.11 peaks at ~16MiB of address space for `import json, statistics`; use at least \"32MiB\"",
        ));
    }
    in_range(
        "limits.pids",
        l.pids,
        1,
        32_768,
        "processes and threads in the jail; 1 to 32768",
    )?;
    if l.tmp_size.0 == 0 {
        return Err(invalid(
            "limits.tmp_size",
            "must be > 0",
            "Python needs a writable /tmp; \"64MiB\" is the default",
        ));
    }
    if l.tmp_size > l.memory {
        return Err(invalid(
            "limits.tmp_size",
            format!("{} is larger than limits.memory = {}", l.tmp_size, l.memory),
            "tmpfs pages are charged to the jail's memory cgroup, so /tmp can never hold more than the memory limit; lower tmp_size",
        ));
    }
    in_range(
        "limits.tmp_inodes",
        l.tmp_inodes,
        16,
        1 << 20,
        "files and directories /tmp may hold; 16 to 1048576",
    )?;
    bytes_in_range(
        "limits.stdout",
        l.stdout,
        1,
        MAX_OUTPUT_BYTES,
        "stdout is held in memory and copied into the record; 1 byte to 64MiB",
    )?;
    bytes_in_range(
        "limits.stderr",
        l.stderr,
        1,
        MAX_OUTPUT_BYTES,
        "stderr is held in memory and copied into the record; 1 byte to 64MiB",
    )?;
    in_range(
        "limits.open_files",
        l.open_files,
        MIN_OPEN_FILES,
        65_536,
        "CPython cannot start with fewer than 5 open files; 16 to 65536",
    )?;
    bytes_in_range(
        "limits.file_size",
        l.file_size,
        1,
        1024 * 1024 * MIB,
        "largest file the program may write (RLIMIT_FSIZE); 1 byte to 1TiB",
    )?;

    // Filesystem.
    for (key, list) in [
        ("filesystem.read_only", &p.filesystem.read_only),
        ("filesystem.optional", &p.filesystem.optional),
    ] {
        for (n, path) in list.iter().enumerate() {
            check_bind(key, path)?;
            if list[..n].contains(path) {
                return Err(invalid_item(
                    key,
                    path,
                    format!("{path:?} is listed twice"),
                    "remove the duplicate",
                ));
            }
        }
    }

    // Seccomp.
    let s = &p.seccomp;
    for (n, g) in s.allow_groups.iter().enumerate() {
        if !seccomp_group_names().any(|known| known == g) {
            return Err(invalid_item(
                "seccomp.allow_groups",
                g,
                format!("unknown syscall group {g:?}"),
                &format!(
                    "known groups: {}",
                    seccomp_group_names().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        if s.allow_groups[..n].contains(g) {
            return Err(invalid_item(
                "seccomp.allow_groups",
                g,
                format!("{g:?} is listed twice"),
                "remove the duplicate",
            ));
        }
    }
    if !s.allow_groups.iter().any(|g| g == "exec") {
        return Err(invalid(
            "seccomp.allow_groups",
            "`exec` is missing: the filter is installed right before execve, so the interpreter could never start",
            "add \"exec\"",
        ));
    }
    if let Some(bad) = s.errno_syscalls.iter().find(|n| {
        n.is_empty()
            || !n
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    }) {
        return Err(invalid_item(
            "seccomp.errno_syscalls",
            bad,
            format!("{bad:?} is not a syscall name"),
            "use the kernel's names, e.g. \"statx\"",
        ));
    }

    // Landlock.
    in_range(
        "landlock.min_abi",
        u64::from(p.landlock.min_abi),
        1,
        6,
        "landlock ABI versions 1 to 6 exist (Linux 5.13 to 6.12)",
    )?;

    // Environment.
    for (name, value) in &p.environment.extra {
        if !is_identifier(name) {
            return Err(invalid_item(
                "environment.extra",
                name,
                format!("{name:?} is not a valid variable name"),
                "use letters, digits and `_`, not starting with a digit",
            ));
        }
        let upper = name.to_ascii_uppercase();
        if FORBIDDEN_ENV_NAMES.contains(&upper.as_str())
            || FORBIDDEN_ENV_PREFIXES
                .iter()
                .any(|pre| upper.starts_with(pre))
        {
            return Err(invalid_item(
                "environment.extra",
                name,
                format!("{name} may not be set by a policy"),
                "PATH, HOME and LANG are set by the jail; LD_*, PYTHON*, GLIBC_TUNABLES and similar change what runs before the checked program",
            ));
        }
        if value.contains('\0') {
            return Err(invalid_item(
                "environment.extra",
                name,
                "value contains a NUL byte",
                "remove it",
            ));
        }
    }

    // Audit.
    if !p.audit.log.is_empty() {
        if let Some(problem) = path_problem(&p.audit.log) {
            return Err(invalid(
                "audit.log",
                format!("{:?} {problem}", p.audit.log),
                "give an absolute, normalised path, or \"\" for no audit log",
            ));
        }
    }
    Ok(())
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
    out
}

/// A weak choice in a policy: the key and what it allows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LintWarning {
    pub key: String,
    pub message: String,
}

/// Facts `policy lint` states with every report (not warnings: no policy can change them).
pub const LINT_NOTES: &[&str] = &[
    "no writable host path is possible: the policy format has no key for one; the program \
     can write only to its own size-capped /tmp tmpfs",
    "the static check is defence in depth; the jail is the boundary",
];

fn warn(out: &mut Vec<LintWarning>, key: &str, message: impl Into<String>) {
    out.push(LintWarning {
        key: key.into(),
        message: message.into(),
    });
}

/// Dangerous modules `module` reaches through plain attribute chains, with the chain, when
/// no attribute on the way is denied. `None` when the module is not in the table.
pub fn reachable_dangerous_modules(
    module: &str,
    denied_attributes: &[String],
    deny_dunder: bool,
) -> Option<Vec<(String, String)>> {
    let edges_of = |m: &str| {
        MODULE_ATTRIBUTE_GRAPH
            .iter()
            .find(|(name, _)| *name == m)
            .map(|(_, e)| *e)
    };
    edges_of(module)?;
    let blocked = |attr: &str| {
        denied_attributes.iter().any(|d| d == attr) || (deny_dunder && attr.starts_with("__"))
    };
    let mut found: Vec<(String, String)> = Vec::new();
    let mut seen: Vec<String> = vec![module.to_string()];
    let mut queue: std::collections::VecDeque<(String, String)> =
        std::collections::VecDeque::from([(module.to_string(), module.to_string())]);
    while let Some((m, path)) = queue.pop_front() {
        for (attr, target) in edges_of(&m).unwrap_or(&[]) {
            if blocked(attr) || seen.iter().any(|s| s == target) {
                continue;
            }
            seen.push((*target).to_string());
            let chain = format!("{path}.{attr}");
            if DANGEROUS_MODULES.contains(target) {
                found.push(((*target).to_string(), chain));
            } else {
                queue.push_back(((*target).to_string(), chain));
            }
        }
    }
    Some(found)
}

/// Weak choices in a policy, each with the key to change. Silent on `policies/default.toml`.
pub fn lint(policy: &Policy) -> Vec<LintWarning> {
    let mut w = Vec::new();
    let p = policy;
    if p.network.enabled {
        warn(
            &mut w,
            "network.enabled",
            "network is on: the program can reach whatever the host can; exfiltration of the \
             payload and downloads of code become possible",
        );
    }
    for g in &p.seccomp.allow_groups {
        if let Some((_, why)) = DANGEROUS_SECCOMP_GROUPS.iter().find(|(n, _)| n == g) {
            warn(&mut w, "seccomp.allow_groups", format!("{g}: {why}"));
        }
    }
    if p.seccomp.requirement == Requirement::BestEffort {
        warn(
            &mut w,
            "seccomp.requirement",
            "best_effort: on a host without seccomp the program runs with every syscall allowed",
        );
    }
    if p.limits.memory.0 > 4 * 1024 * MIB {
        warn(
            &mut w,
            "limits.memory",
            format!(
                "{} is a very large memory limit for one job; the host can be starved",
                p.limits.memory
            ),
        );
    }
    if p.cgroup.requirement == Requirement::BestEffort {
        let spawn = if p.seccomp.allow_groups.iter().any(|g| g == "process_spawn") {
            "; process_spawn is allowed, so only RLIMIT_NPROC (counted per host uid) stops a fork bomb"
        } else {
            ""
        };
        warn(
            &mut w,
            "cgroup.requirement",
            format!(
                "best_effort: on a host without a delegated cgroup, memory is bounded only per \
                 process by RLIMIT_AS (memfd pages written without mapping escape it), pids \
                 only by RLIMIT_NPROC and CPU by RLIMIT_CPU per process{spawn}; use \"required\" \
                 where systemd Delegate=yes is available"
            ),
        );
    }
    if p.landlock.requirement == Requirement::BestEffort {
        warn(
            &mut w,
            "landlock.requirement",
            "best_effort: hosts without landlock (or below min_abi) run with the read-only \
             mount layout as the only filesystem control (recorded as degraded)",
        );
    }
    if p.limits.wall_time_ms > 300_000 {
        warn(
            &mut w,
            "limits.wall_time_ms",
            "more than 5 minutes of wall time",
        );
    }
    if p.limits.cpu_time_ms > 300_000 {
        warn(
            &mut w,
            "limits.cpu_time_ms",
            "more than 5 minutes of CPU time",
        );
    }
    for (key, cap) in [
        ("limits.stdout", p.limits.stdout),
        ("limits.stderr", p.limits.stderr),
    ] {
        if cap.0 > MIB {
            warn(
                &mut w,
                key,
                format!("{cap} of output is held in memory and copied into every record"),
            );
        }
    }
    if !p.interpreter.python_args.iter().any(|a| a == "-I") {
        warn(
            &mut w,
            "interpreter.python_args",
            "-I is missing: without isolated mode the interpreter honours PYTHON* variables \
             and adds the script directory and user site-packages to sys.path",
        );
    }
    for path in p.filesystem.read_only.iter().chain(&p.filesystem.optional) {
        if is_under(path, "/opt") {
            warn(
                &mut w,
                "filesystem.read_only",
                format!(
                    "{path} is bound: third-party software under /opt sometimes keeps \
                     configuration and keys beside it; bind only the interpreter's directory"
                ),
            );
        }
    }

    // Static check.
    let c = &p.check;
    for m in &c.allowed_imports {
        let top = m.split('.').next().unwrap_or(m);
        if DANGEROUS_MODULES.contains(&top) {
            warn(
                &mut w,
                "check.allowed_imports",
                format!("{m} is allowed: it gives the program the host directly"),
            );
            continue;
        }
        match reachable_dangerous_modules(top, &c.denied_attributes, c.deny_dunder) {
            Some(reached) => {
                for (danger, chain) in reached {
                    warn(
                        &mut w,
                        "check.allowed_imports",
                        format!(
                            "{m} reaches {danger} as {chain}; add the attribute to \
                             check.denied_attributes"
                        ),
                    );
                }
            }
            None => warn(
                &mut w,
                "check.allowed_imports",
                format!(
                    "{m} is not in agentjail's table of stdlib module attributes: audit by \
                     hand which modules it exposes (e.g. python3 -c 'import {top}; print([a for a in dir({top}) if type(getattr({top}, a)).__name__ == \"module\"])')"
                ),
            ),
        }
    }
    if !c.deny_dunder {
        warn(
            &mut w,
            "check.deny_dunder",
            "off: __class__, __subclasses__, __globals__ and __builtins__ reach every object \
             and module in the interpreter",
        );
    }
    let missing: Vec<&str> = ["eval", "exec", "compile", "open", "__import__"]
        .into_iter()
        .filter(|n| !c.denied_calls.iter().any(|d| d == n))
        .collect();
    if !missing.is_empty() {
        warn(
            &mut w,
            "check.denied_calls",
            format!(
                "{} not denied: they run arbitrary code or open files",
                missing.join(", ")
            ),
        );
    }
    let frames: Vec<&str> = FRAME_ATTRIBUTES
        .iter()
        .copied()
        .filter(|a| !c.denied_attributes.iter().any(|d| d == a))
        .collect();
    if !frames.is_empty() {
        warn(
            &mut w,
            "check.denied_attributes",
            format!(
                "frame-walking attributes not denied ({}): a generator or traceback reaches \
                 f_globals/f_builtins and through them __import__",
                frames.join(", ")
            ),
        );
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_default_loads_and_equals_compiled_defaults() {
        let loaded = load_str(DEFAULT_POLICY_TOML, DEFAULT_POLICY_ORIGIN).expect("default loads");
        assert_eq!(loaded.policy, Policy::default());
        assert_eq!(load_default(), loaded);
        assert_eq!(loaded.path, "<embedded default>");
        let p = &loaded.policy;
        assert_eq!(p.languages.allowed, ["python", "javascript"]);
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

    #[test]
    fn key_location() {
        let text = "version = 1\n\n[limits]\n# c\nmemory = \"1MiB\"\n[filesystem]\nread_only = [\n  \"/usr\",\n  \"/etc\",\n]\n";
        assert_eq!(find_key(text, "limits.memory"), Some((5, 1)));
        assert_eq!(
            find_item(text, "filesystem.read_only", "/etc"),
            Some((9, 3))
        );
        assert_eq!(
            key_at_line(text, 8).as_deref(),
            Some("filesystem.read_only")
        );
    }

    #[test]
    fn reachability_table_finds_and_closes_paths() {
        let none: Vec<String> = Vec::new();
        let r = reachable_dangerous_modules("statistics", &none, true).expect("known");
        assert!(r.iter().any(|(m, c)| m == "sys" && c == "statistics.sys"));
        assert!(r
            .iter()
            .any(|(m, c)| m == "os" && c == "statistics.random._os"));
        let r = reachable_dangerous_modules("json", &none, true).expect("known");
        assert!(r.iter().any(|(m, c)| m == "sys" && c == "json.codecs.sys"));
        assert_eq!(
            reachable_dangerous_modules("math", &none, true),
            Some(vec![])
        );
        assert_eq!(reachable_dangerous_modules("numpy", &none, true), None);
        let d = Policy::default();
        for m in &d.check.allowed_imports {
            let r = reachable_dangerous_modules(m, &d.check.denied_attributes, true);
            assert_eq!(r, Some(vec![]), "{m}");
        }
    }

    #[test]
    fn every_graph_target_is_known_or_dangerous() {
        for (_, edges) in MODULE_ATTRIBUTE_GRAPH {
            for (_, target) in *edges {
                assert!(
                    DANGEROUS_MODULES.contains(target)
                        || MODULE_ATTRIBUTE_GRAPH.iter().any(|(n, _)| n == target),
                    "{target}"
                );
            }
        }
    }

    #[test]
    fn paths() {
        assert_eq!(path_problem("/usr"), None);
        assert!(path_problem("usr").is_some());
        assert!(path_problem("/usr/../etc").is_some());
        assert!(path_problem("/usr//lib").is_some());
        assert!(path_problem("/usr/").is_some());
        assert!(is_under("/etc/ssl", "/etc"));
        assert!(!is_under("/etcetera", "/etc"));
    }
}
