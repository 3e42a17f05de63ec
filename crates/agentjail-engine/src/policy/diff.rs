//! `agentjail policy diff OLD NEW`: what a policy change weakens, for a reviewer.
//!
//! Both policies are compared as the loader left them (every default filled in), key by
//! key: each changed key is classified weaker, stronger or neutral by a rule of this file's
//! table ([`RULES`]), and ranked by what it exposes ([`Exposure`]: network first, then the
//! syscalls a program may make, the isolation's own controls, the host's files, the static
//! check, what leaves in records, the limits). A key with no rule (a key added to the
//! policy format after this table) is never taken as harmless: it is `weaker` with the
//! exposure `unreviewed`, so a gate built on the exit status fails until the table knows it.
//! Pure: no I/O, no policy loading (the command loads both: src/commands/policy.rs).

use super::Policy;
use serde::Serialize;
use serde_json::{Map, Value};

/// Which way a change moves the boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Weaker,
    Stronger,
    Neutral,
}

/// What a change exposes, most exposing first (the order of a diff's report).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Exposure {
    /// A key this table has no rule for: review it by hand.
    Unreviewed,
    /// What the program may reach over the network.
    Network,
    /// The syscalls it may make.
    Syscalls,
    /// Whether the jail's controls hold or may degrade (seccomp, landlock, cgroups).
    Isolation,
    /// Host files and directories it may read or write.
    Filesystem,
    /// What the static check lets through before anything runs.
    Check,
    /// What leaves in records and logs (redaction, the audit log).
    Records,
    /// How much it may use: time, memory, processes, bytes, calls.
    Limits,
    /// Nothing the program can use (names, descriptions, the interpreter's path).
    None,
}

/// One changed key.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// The key, dotted (`limits.memory`, `check.allowed_imports`).
    pub key: String,
    pub direction: Direction,
    pub exposure: Exposure,
    /// The old and new values (for a list: what was added and removed).
    pub old: Value,
    pub new: Value,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub added: Vec<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<Value>,
    /// What the change does, in the reviewer's words.
    pub why: &'static str,
}

/// How a key's change is judged.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// A list of what is allowed: an added item is weaker, a removed one stronger.
    Allows,
    /// A list of what is refused: a removed item is weaker, an added one stronger.
    Refuses,
    /// A number or byte size where more is weaker (a limit).
    MoreIsWeaker,
    /// A number where less is weaker (a minimum).
    LessIsWeaker,
    /// A switch that is weaker on.
    OnIsWeaker,
    /// A switch that is weaker off.
    OffIsWeaker,
    /// `required` → `best_effort` is weaker.
    Requirement,
    /// `network.mode`: `none` → `allowlist` is weaker.
    NetworkMode,
    /// `audit.log`: set → empty is weaker, empty → set stronger, moved neutral.
    AuditLog,
    /// Neither (a name, a path the loader checked, a preload).
    Neutral,
}

/// The rules: a key (or a key's prefix ending in `.`: every key beneath it) → how it is
/// judged, what it exposes, and the reviewer's sentence. The first match wins.
const RULES: &[(&str, Kind, Exposure, &str)] = {
    use Exposure as E;
    use Kind as K;
    &[
        (
            "version",
            K::Neutral,
            E::None,
            "the policy format's version",
        ),
        ("name", K::Neutral, E::None, "the policy's name"),
        (
            "description",
            K::Neutral,
            E::None,
            "the policy's description",
        ),
        (
            "network.enabled",
            K::OnIsWeaker,
            E::Network,
            "on: the jail shares the host's network, every address and port",
        ),
        (
            "network.mode",
            K::NetworkMode,
            E::Network,
            "allowlist: the program reaches the hosts network.allow names, through the proxy",
        ),
        (
            "network.allow",
            K::Allows,
            E::Network,
            "hosts and ports the proxy lets the program reach",
        ),
        (
            "network.allow_private",
            K::Allows,
            E::Network,
            "private, loopback, link-local or metadata ranges the proxy may connect to",
        ),
        (
            "network.allow_http",
            K::OnIsWeaker,
            E::Network,
            "plain HTTP besides TLS tunnels: requests and answers in clear",
        ),
        (
            "network.credentials",
            K::Allows,
            E::Network,
            "secrets the proxy injects for a host: the program acts with them",
        ),
        (
            "network.ca_file",
            K::Neutral,
            E::Network,
            "what credential upstreams are verified against: review the bundle",
        ),
        (
            "network.deny_is_stop",
            K::OffIsWeaker,
            E::Network,
            "off: a denied request gets a 403 and the program goes on",
        ),
        (
            "network.connection_budget",
            K::Neutral,
            E::Limits,
            "whether connection counts restart each call",
        ),
        (
            "network.",
            K::MoreIsWeaker,
            E::Limits,
            "how much the program may move or hold over the network",
        ),
        (
            "seccomp.allow_groups",
            K::Allows,
            E::Syscalls,
            "syscall groups the program may call",
        ),
        (
            "seccomp.errno_syscalls",
            K::Allows,
            E::Syscalls,
            "syscalls answered with an errno instead of stopping the run",
        ),
        (
            "seccomp.requirement",
            K::Requirement,
            E::Isolation,
            "best_effort: the run goes on without seccomp where the host lacks it",
        ),
        (
            "landlock.requirement",
            K::Requirement,
            E::Isolation,
            "best_effort: the run goes on without landlock where the host lacks it",
        ),
        (
            "landlock.min_abi",
            K::LessIsWeaker,
            E::Isolation,
            "an older landlock counts as enforced",
        ),
        (
            "cgroup.requirement",
            K::Requirement,
            E::Isolation,
            "best_effort: limits fall back to rlimits where cgroups are missing",
        ),
        (
            "filesystem.read_only",
            K::Allows,
            E::Filesystem,
            "host paths bound read-only into the jail: the program reads them",
        ),
        (
            "filesystem.optional",
            K::Allows,
            E::Filesystem,
            "host paths bound read-only where the host has them",
        ),
        (
            "filesystem.alternatives",
            K::OnIsWeaker,
            E::Filesystem,
            "the host's /etc/alternatives links under the binds",
        ),
        (
            "files.host_roots",
            K::Allows,
            E::Filesystem,
            "host directories `run --input` may bind read-only",
        ),
        (
            "workspace.host_roots",
            K::Allows,
            E::Filesystem,
            "host directories a workspace may bind read-write",
        ),
        (
            "workspace.host_quota_acknowledged",
            K::Neutral,
            E::Filesystem,
            "the operator's word that host directories are bounded by their own quota",
        ),
        (
            "workspace.enabled",
            K::OnIsWeaker,
            E::Filesystem,
            "workspaces: a jail and a writable /workspace kept across commands",
        ),
        (
            "environment.extra",
            K::Neutral,
            E::None,
            "variables in the program's environment (the loader refuses the dangerous ones)",
        ),
        (
            "languages.allowed",
            K::Allows,
            E::Check,
            "languages an action may be in",
        ),
        (
            "languages.execute",
            K::Allows,
            E::Check,
            "languages the jail runs",
        ),
        (
            "languages.output_modes",
            K::Allows,
            E::Check,
            "output modes an action may ask for",
        ),
        // `[languages.<lang>]` (policy/toolchain.rs), every language alike: `rule` reads
        // `languages.cpp.run` as `languages.*.run`.
        (
            "languages.*",
            K::Neutral,
            E::None,
            "a language's table added or removed (it runs only where languages.execute names it)",
        ),
        (
            "languages.*.check",
            K::Neutral,
            E::None,
            "the language's static check (always \"none\": the loader requires the jail's full controls)",
        ),
        (
            "languages.*.compile",
            K::Neutral,
            E::None,
            "the compile step's argv (it runs in a jail of its own, under compile_limits)",
        ),
        (
            "languages.*.run",
            K::Neutral,
            E::None,
            "the run step's argv (the loader resolved its tool under the read-only binds)",
        ),
        (
            "languages.*.allow_groups",
            K::Allows,
            E::Syscalls,
            "seccomp groups the language's jails add (process_spawn: the program can start processes, held by the pids limit)",
        ),
        (
            "languages.*.errno_syscalls",
            K::Allows,
            E::Syscalls,
            "syscalls the language's jails answer with an errno instead of stopping the run",
        ),
        (
            "languages.*.etc_binds",
            K::Allows,
            E::Filesystem,
            "host /etc directories the toolchain links into, bound read-only in its jails",
        ),
        (
            "languages.*.environment",
            K::Neutral,
            E::None,
            "variables the language's jails get (never PATH or LD_*)",
        ),
        (
            "languages.*.compile_limits.",
            K::MoreIsWeaker,
            E::Limits,
            "what one compile may use",
        ),
        (
            "check.enforce",
            K::OffIsWeaker,
            E::Check,
            "off: the static check's findings are recorded, not enforced",
        ),
        (
            "check.allowed_imports",
            K::Allows,
            E::Check,
            "modules the program may import",
        ),
        (
            "check.denied_calls",
            K::Refuses,
            E::Check,
            "calls the check refuses",
        ),
        (
            "check.denied_names",
            K::Refuses,
            E::Check,
            "names the check refuses",
        ),
        (
            "check.denied_attributes",
            K::Refuses,
            E::Check,
            "attributes the check refuses",
        ),
        (
            "check.deny_dunder",
            K::OffIsWeaker,
            E::Check,
            "off: dunder attributes (the usual sandbox-escape path in Python) pass",
        ),
        (
            "check.deny_url_literals",
            K::OffIsWeaker,
            E::Check,
            "off: URL literals in code pass",
        ),
        (
            "check.allow_star_imports",
            K::OnIsWeaker,
            E::Check,
            "star imports of allowed modules pass",
        ),
        (
            "check.max_input_reads",
            K::MoreIsWeaker,
            E::Check,
            "input() calls the check lets through",
        ),
        (
            "check.max_nesting_depth",
            K::MoreIsWeaker,
            E::Check,
            "how deep code may nest",
        ),
        (
            "check.javascript.allowed_modules",
            K::Allows,
            E::Check,
            "modules a JavaScript program may require",
        ),
        (
            "check.javascript.denied_globals",
            K::Refuses,
            E::Check,
            "globals the JavaScript check refuses",
        ),
        (
            "check.javascript.denied_members",
            K::Refuses,
            E::Check,
            "members the JavaScript check refuses",
        ),
        (
            "check.javascript.allow_computed_member",
            K::OnIsWeaker,
            E::Check,
            "computed member access (o[x]) passes the JavaScript check",
        ),
        (
            "check.javascript.deny_url_literals",
            K::OffIsWeaker,
            E::Check,
            "off: URL literals in JavaScript pass",
        ),
        (
            "check.javascript.max_input_reads",
            K::MoreIsWeaker,
            E::Check,
            "stdin reads the JavaScript check lets through",
        ),
        (
            "check.javascript.max_nesting_depth",
            K::MoreIsWeaker,
            E::Check,
            "how deep JavaScript may nest",
        ),
        (
            "interpreter.",
            K::Neutral,
            E::None,
            "the interpreter and its flags (the loader checks each)",
        ),
        (
            "redaction.defaults",
            K::OffIsWeaker,
            E::Records,
            "off: cloud keys, API keys, tokens and private keys printed by a program reach records",
        ),
        (
            "redaction.printed",
            K::OffIsWeaker,
            E::Records,
            "off: the printed record is not redacted (the audit log still is)",
        ),
        (
            "redaction.patterns",
            K::Refuses,
            E::Records,
            "extra patterns redacted from records",
        ),
        (
            "audit.log",
            K::AuditLog,
            E::Records,
            "the audit log every record is appended to",
        ),
        (
            "limits.",
            K::MoreIsWeaker,
            E::Limits,
            "what one run may use",
        ),
        (
            "budget.",
            K::MoreIsWeaker,
            E::Limits,
            "what an action may be and take",
        ),
        (
            "session.",
            K::MoreIsWeaker,
            E::Limits,
            "what a session may use",
        ),
        (
            "workspace.",
            K::MoreIsWeaker,
            E::Limits,
            "what a workspace may use",
        ),
        (
            "files.",
            K::MoreIsWeaker,
            E::Limits,
            "the input files an action may carry",
        ),
        (
            "artifacts.",
            K::MoreIsWeaker,
            E::Limits,
            "the files a run may leave",
        ),
        (
            "results.",
            K::MoreIsWeaker,
            E::Limits,
            "the rich results a run may return",
        ),
    ]
};

fn rule(key: &str) -> Option<(Kind, Exposure, &'static str)> {
    let general;
    let tail = key.strip_prefix("languages.").unwrap_or("");
    let (lang, rest) = tail.split_once('.').unwrap_or((tail, ""));
    let key = if super::toolchain::TOOLCHAIN_LANGUAGES.contains(&lang) {
        general = if rest.is_empty() {
            "languages.*".to_string()
        } else {
            format!("languages.*.{rest}")
        };
        general.as_str()
    } else {
        key
    };
    RULES
        .iter()
        .find(|(k, ..)| *k == key || (k.ends_with('.') && key.starts_with(k)))
        .map(|(_, kind, e, why)| (*kind, *e, *why))
}

/// Every changed key from `old` to `new`, most exposing weakenings first.
pub fn diff(old: &Policy, new: &Policy) -> Vec<Change> {
    let (mut a, mut b) = (Map::new(), Map::new());
    let mut va = serde_json::to_value(old).unwrap_or_default();
    let mut vb = serde_json::to_value(new).unwrap_or_default();
    whole_tables(&mut va, &mut vb);
    flatten("", &va, &mut a);
    flatten("", &vb, &mut b);
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut out: Vec<Change> = keys
        .into_iter()
        .filter_map(|k| {
            let (o, n) = (
                a.get(k).unwrap_or(&Value::Null),
                b.get(k).unwrap_or(&Value::Null),
            );
            (o != n).then(|| judge(k, o, n))
        })
        .collect();
    out.sort_by(|x, y| (x.direction, x.exposure, &x.key).cmp(&(y.direction, y.exposure, &y.key)));
    out
}

/// A `[languages.<lang>]` table only one side has is one change (`languages.<lang>`), not
/// one per key beneath it: the side that has it shows it as its header.
fn whole_tables(a: &mut Value, b: &mut Value) {
    for lang in super::toolchain::TOOLCHAIN_LANGUAGES {
        let has = |v: &Value| !v["languages"][lang].is_null();
        let (in_a, in_b) = (has(a), has(b));
        if in_a != in_b {
            let side = if in_a { &mut *a } else { &mut *b };
            side["languages"][lang] = Value::String(format!("[languages.{lang}]"));
        }
    }
}

/// A table of variables (`environment.extra`, `languages.<lang>.environment`): one leaf.
fn is_variables(key: &str) -> bool {
    key.ends_with("environment.extra")
        || (key.starts_with("languages.") && key.ends_with(".environment"))
}

/// Leaves by dotted key: objects are walked, lists and scalars are leaves.
fn flatten(prefix: &str, v: &Value, out: &mut Map<String, Value>) {
    match v {
        Value::Object(m) if !m.is_empty() && !is_variables(prefix) => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        _ => {
            out.insert(prefix.to_string(), v.clone());
        }
    }
}

fn judge(key: &str, old: &Value, new: &Value) -> Change {
    let Some((kind, exposure, why)) = rule(key) else {
        return change(
            key,
            Direction::Weaker,
            Exposure::Unreviewed,
            old,
            new,
            "no rule for this key: review it by hand",
        );
    };
    let mut c = change(key, Direction::Neutral, exposure, old, new, why);
    if key.starts_with("languages.") && (old.is_null() || new.is_null()) {
        // A `[languages.<lang>]` table added or removed: nothing of it runs unless
        // `languages.execute` names the language, and that key's change says so.
        return c;
    }
    c.direction = match kind {
        Kind::Allows | Kind::Refuses => {
            let (added, removed) = list_delta(old, new);
            let widened = match kind {
                Kind::Allows => !added.is_empty(),
                _ => !removed.is_empty(),
            };
            let narrowed = match kind {
                Kind::Allows => !removed.is_empty(),
                _ => !added.is_empty(),
            };
            c.added = added;
            c.removed = removed;
            if widened {
                Direction::Weaker
            } else if narrowed {
                Direction::Stronger
            } else {
                Direction::Neutral
            }
        }
        Kind::MoreIsWeaker | Kind::LessIsWeaker => match (amount(old), amount(new)) {
            (Some(o), Some(n)) if o == n => Direction::Neutral,
            (Some(o), Some(n)) => {
                if (n > o) == matches!(kind, Kind::MoreIsWeaker) {
                    Direction::Weaker
                } else {
                    Direction::Stronger
                }
            }
            // Not a number on one side (a mode word, an optional key): judged by hand.
            _ => Direction::Weaker,
        },
        Kind::OnIsWeaker => switch(new, true),
        Kind::OffIsWeaker => switch(new, false),
        Kind::Requirement => {
            if *new == "best_effort" {
                Direction::Weaker
            } else {
                Direction::Stronger
            }
        }
        Kind::NetworkMode => {
            if *new == "none" {
                Direction::Stronger
            } else {
                Direction::Weaker
            }
        }
        Kind::AuditLog => match (old.as_str().unwrap_or(""), new.as_str().unwrap_or("")) {
            (o, "") if !o.is_empty() => Direction::Weaker,
            ("", _) => Direction::Stronger,
            _ => Direction::Neutral,
        },
        Kind::Neutral => Direction::Neutral,
    };
    c
}

fn change(
    key: &str,
    direction: Direction,
    exposure: Exposure,
    old: &Value,
    new: &Value,
    why: &'static str,
) -> Change {
    Change {
        key: key.to_string(),
        direction,
        exposure,
        old: old.clone(),
        new: new.clone(),
        added: Vec::new(),
        removed: Vec::new(),
        why,
    }
}

/// A switch turned to `value` is weaker; turned away from it, stronger.
fn switch(new: &Value, weaker_when: bool) -> Direction {
    if new.as_bool() == Some(weaker_when) {
        Direction::Weaker
    } else {
        Direction::Stronger
    }
}

/// What a list gained and lost (as sets; a missing list is empty).
fn list_delta(old: &Value, new: &Value) -> (Vec<Value>, Vec<Value>) {
    let none = Vec::new();
    let o = old.as_array().unwrap_or(&none);
    let n = new.as_array().unwrap_or(&none);
    let added = n.iter().filter(|v| !o.contains(v)).cloned().collect();
    let removed = o.iter().filter(|v| !n.contains(v)).cloned().collect();
    (added, removed)
}

/// A number, or a byte size as the policy writes one (`"256MiB"`).
fn amount(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => super::parse_bytes(s).ok(),
        _ => None,
    }
}

/// The report for people: one line a change, then the count.
pub fn render(changes: &[Change]) -> String {
    let mut out = String::new();
    for c in changes {
        let what = if c.added.is_empty() && c.removed.is_empty() {
            format!("{} -> {}", c.old, c.new)
        } else {
            let mut parts = Vec::new();
            if !c.added.is_empty() {
                parts.push(format!("+ {}", join(&c.added)));
            }
            if !c.removed.is_empty() {
                parts.push(format!("- {}", join(&c.removed)));
            }
            parts.join("  ")
        };
        out.push_str(&format!(
            "{:<8} {:<10} {}: {}  ({})\n",
            word(c.direction),
            exposure_word(c.exposure),
            c.key,
            what,
            c.why
        ));
    }
    let n = |d| changes.iter().filter(|c| c.direction == d).count();
    out.push_str(&format!(
        "{} change(s): {} weaker, {} stronger, {} neutral\n",
        changes.len(),
        n(Direction::Weaker),
        n(Direction::Stronger),
        n(Direction::Neutral)
    ));
    out
}

fn join(items: &[Value]) -> String {
    items
        .iter()
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
        .collect::<Vec<_>>()
        .join(", ")
}

fn word(d: Direction) -> &'static str {
    match d {
        Direction::Weaker => "weaker",
        Direction::Stronger => "stronger",
        Direction::Neutral => "neutral",
    }
}

fn exposure_word(e: Exposure) -> &'static str {
    match e {
        Exposure::Unreviewed => "unreviewed",
        Exposure::Network => "network",
        Exposure::Syscalls => "syscalls",
        Exposure::Isolation => "isolation",
        Exposure::Filesystem => "filesystem",
        Exposure::Check => "check",
        Exposure::Records => "records",
        Exposure::Limits => "limits",
        Exposure::None => "none",
    }
}

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;
