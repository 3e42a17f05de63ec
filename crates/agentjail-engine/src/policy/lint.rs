//! `agentjail policy lint`: weak choices in a policy, each with the key to change.

use super::validate::is_under;
use super::*;
use agentjail_check::stdlib::{Modules, DANGEROUS_MODULES, FRAME_ATTRIBUTES};

/// A weak choice in a policy: the key and what it allows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LintWarning {
    pub key: String,
    pub message: String,
}

/// Facts `policy lint` states with every report (not warnings: no policy can change them).
pub const LINT_NOTES: &[&str] = &[
    "no writable host path is possible but a workspace's host_dir beneath [workspace] \
     host_roots (warned when listed); otherwise the program writes only its own \
     size-capped tmpfs mounts",
    "the static check is defence in depth; the jail is the boundary",
];

fn warn(out: &mut Vec<LintWarning>, key: &str, message: impl Into<String>) {
    out.push(LintWarning {
        key: key.into(),
        message: message.into(),
    });
}

/// Weak choices in a policy, each with the key to change. Silent on `policies/default.toml`.
pub fn lint(policy: &Policy) -> Vec<LintWarning> {
    let mut w = Vec::new();
    if !policy.check.enforce {
        warn(
            &mut w,
            "check.enforce",
            "false: THE STATIC CHECK REFUSES NOTHING under this policy. Its findings are only \
             reported (the record's decision.check.findings) and every program in an allowed \
             language runs: the jail alone (no network, read-only host, its own /tmp, \
             required seccomp and landlock, the limits) holds it. Use it only where a refusal \
             would be a wrong answer (policies/judge-open.toml: verl's call-based cases)",
        );
    }
    if !policy.workspace.host_roots.is_empty() {
        warn(
            &mut w,
            "workspace.host_roots",
            format!(
                "workspaces may write host directories beneath {}: workspace.size and \
                 workspace.inodes do not bound them (the host filesystem's quota does), and \
                 what a command leaves there (symlinks, hard links within the directory, \
                 files owned by the jail's host uid) stays after close for host tools to \
                 meet; docs/SECURITY.md, \"Host-directory workspaces\"",
                policy.workspace.host_roots.join(", ")
            ),
        );
    }
    jail_lints(policy, &mut w);
    check_lints(&policy.check, policy.python_version(), &mut w);
    javascript_lints(policy, &mut w);
    toolchain_lints(policy, &mut w);
    w
}

/// `[languages.<lang>]`: languages no static check reads, groups a language adds, tables
/// nothing executes.
fn toolchain_lints(p: &Policy, w: &mut Vec<LintWarning>) {
    for lang in toolchain::TOOLCHAIN_LANGUAGES {
        let Some(t) = p.languages.toolchain(lang) else {
            continue;
        };
        let key = format!("languages.{lang}");
        if !p.executes(lang) {
            warn(
                w,
                &key,
                format!("the table is there but languages.execute does not list {lang}: nothing of it runs"),
            );
            continue;
        }
        warn(
            w,
            &format!("{key}.check"),
            format!(
                "\"none\": no static check reads {lang} programs; the jail alone (no network, \
                 read-only host, required seccomp and landlock, the limits) holds them"
            ),
        );
        if t.allow_groups.iter().any(|g| g == "process_spawn") {
            warn(
                w,
                &format!("{key}.allow_groups"),
                format!(
                    "process_spawn: a {lang} program can start processes; only the pids limit \
                     (cgroup, or RLIMIT_NPROC without one) stops a fork bomb"
                ),
            );
        }
    }
}

/// node's flags that take something away, each with what is left without it.
const NODE_HARDENING: &[(&[&str], &str)] = &[
    (
        &["--disallow-code-generation-from-strings"],
        "eval, new Function and string timers compile strings at run time: code the check \
         never saw",
    ),
    (
        &["--disable-proto=throw", "--disable-proto=delete"],
        "Object.prototype.__proto__ stays: a string key reaches and rewrites prototypes",
    ),
    (
        &["--experimental-permission"],
        "node's permission model is off: code that slips past the check reads every file the \
         jail binds, loads native addons and starts workers (the jail still bounds it)",
    ),
    (
        &["--no-expose-wasm"],
        "WebAssembly is exposed: wasm modules built from bytes run code the check cannot read",
    ),
];

/// JavaScript: the languages lists, node's flags, the computed-member rule.
fn javascript_lints(p: &Policy, w: &mut Vec<LintWarning>) {
    let executes = p.executes("javascript");
    if !executes && p.seccomp.allow_groups.iter().any(|g| g == "javascript") {
        warn(
            w,
            "seccomp.allow_groups",
            "javascript: the group is on but languages.execute does not list javascript; \
             every jail gets eventfd2 and capget for nothing",
        );
    }
    for lang in &p.languages.execute {
        if !p
            .languages
            .allowed
            .iter()
            .any(|a| a.eq_ignore_ascii_case(lang))
        {
            warn(
                w,
                "languages.execute",
                format!(
                    "{lang} is executed but not in languages.allowed: no action in it ever runs"
                ),
            );
        }
    }
    if !executes {
        return;
    }
    for (flags, why) in NODE_HARDENING {
        if !p
            .interpreter
            .node_args
            .iter()
            .any(|a| flags.contains(&a.as_str()))
        {
            warn(
                w,
                "interpreter.node_args",
                format!("{} is missing: {why}", flags[0]),
            );
        }
    }
    if p.check.javascript.allow_computed_member {
        warn(
            w,
            "check.javascript.allow_computed_member",
            "true: o[k] with a key from data or arithmetic on strings reaches `constructor` and \
             through it Function (x[k][k](\"...\")); use a Map for data-keyed lookups",
        );
    }
    if p.cgroup.requirement == Requirement::BestEffort {
        warn(
            w,
            "cgroup.requirement",
            "javascript without a memory cgroup: node's address space is capped at \
             limits.memory + 1GiB (V8 reserves ~736MiB at start), its heap at limits.memory; \
             a job that exhausts either dies by V8's abort, not code_memory_limit",
        );
    }
}

/// What the jail enforces: network, seccomp groups, requirements, limits, binds.
fn jail_lints(policy: &Policy, w: &mut Vec<LintWarning>) {
    let p = policy;
    if p.network.enabled {
        warn(
            w,
            "network.enabled",
            "network is on: the program can reach whatever the host can; exfiltration of the \
             payload and downloads of code become possible",
        );
    }
    if p.network.allowlist() {
        warn(
            w,
            "network.mode",
            format!(
                "network allowlist: the program can send data to and run code from {}; \
                 whatever those hosts accept or serve is in reach",
                p.network.allow.join(", ")
            ),
        );
        if p.network.allow.iter().any(|a| a.starts_with("*.")) {
            warn(
                w,
                "network.allow",
                "a wildcard entry admits every name under its domain, including ones other \
                 parties can create there (user content hosts, cloud buckets)",
            );
        }
        if !p.network.allow_private.is_empty() {
            warn(
                w,
                "network.allow_private",
                format!(
                    "private ranges are reachable ({}): services on the host's networks, \
                     not only the internet",
                    p.network.allow_private.join(", ")
                ),
            );
        }
        if p.network.allow_http {
            warn(
                w,
                "network.allow_http",
                "plain HTTP is allowed: anyone on the path can read and change what the \
                 program downloads",
            );
        }
    }
    for g in &p.seccomp.allow_groups {
        if let Some((_, why)) = DANGEROUS_SECCOMP_GROUPS.iter().find(|(n, _)| n == g) {
            warn(w, "seccomp.allow_groups", format!("{g}: {why}"));
        }
    }
    if p.seccomp.requirement == Requirement::BestEffort {
        warn(
            w,
            "seccomp.requirement",
            "best_effort: on a host without seccomp the program runs with every syscall allowed",
        );
    }
    limit_lints(p, w);
    requirement_lints(p, w);
    credential_lints(p, w);
}

/// Brokered credentials: what each one hands the program, a key sent in clear, a key file
/// others may read.
fn credential_lints(p: &Policy, w: &mut Vec<LintWarning>) {
    use std::os::unix::fs::MetadataExt;
    for c in &p.network.credentials {
        let (name, host, port) = (&c.name, &c.host, c.port());
        warn(
            w,
            "network.credentials",
            format!(
                "{name}: the program can call {host}:{port} with this key for anything the key allows, and a response that echoes the key hands it to the program"
            ),
        );
        if c.upstream == super::Upstream::Http {
            warn(
                w,
                "network.credentials",
                format!("{name}: upstream = \"http\": the key goes to {host}:{port} in clear"),
            );
        }
        let mode = std::fs::symlink_metadata(&c.value_file).map_or(0, |m| m.mode());
        if mode & 0o044 != 0 {
            warn(
                w,
                "network.credentials",
                format!(
                    "{name}: {} is readable by group or others (mode {:o}): chmod 0600 it",
                    c.value_file,
                    mode & 0o7777
                ),
            );
        }
    }
}

/// Limits that are very large for one job.
fn limit_lints(p: &Policy, w: &mut Vec<LintWarning>) {
    let loaded = p.preload_modules();
    for m in p.interpreter.preload.iter().filter(|m| !loaded.contains(m)) {
        warn(
            w,
            "interpreter.preload",
            format!("{m} is not in check.allowed_imports, so it is never preloaded"),
        );
    }
    if p.limits.memory.0 > 4 * 1024 * MIB {
        warn(
            w,
            "limits.memory",
            format!(
                "{} is a very large memory limit for one job; the host can be starved",
                p.limits.memory
            ),
        );
    }
    if p.limits.wall_time_ms > 300_000 {
        warn(w, "limits.wall_time_ms", "more than 5 minutes of wall time");
    }
    if p.limits.cpu_time_ms > 300_000 {
        warn(w, "limits.cpu_time_ms", "more than 5 minutes of CPU time");
    }
    for (key, cap) in [
        ("limits.stdout", p.limits.stdout),
        ("limits.stderr", p.limits.stderr),
    ] {
        if cap.0 > MIB {
            warn(
                w,
                key,
                format!("{cap} of output is held in memory and copied into every record"),
            );
        }
    }
    if !p.interpreter.python_args.iter().any(|a| a == "-I") {
        warn(
            w,
            "interpreter.python_args",
            "-I is missing: without isolated mode the interpreter honours PYTHON* variables \
             and adds the script directory and user site-packages to sys.path",
        );
    }
    for path in p.filesystem.read_only.iter().chain(&p.filesystem.optional) {
        if is_under(path, "/opt") {
            warn(
                w,
                "filesystem.read_only",
                format!(
                    "{path} is bound: third-party software under /opt sometimes keeps \
                     configuration and keys beside it; bind only the interpreter's directory"
                ),
            );
        }
    }
}

/// Controls the policy lets degrade on hosts that lack them.
fn requirement_lints(p: &Policy, w: &mut Vec<LintWarning>) {
    if p.cgroup.requirement == Requirement::BestEffort {
        let spawn = if p.seccomp.allow_groups.iter().any(|g| g == "process_spawn") {
            "; process_spawn is allowed, so only RLIMIT_NPROC (counted per host uid) stops a fork bomb"
        } else {
            ""
        };
        warn(
            w,
            "cgroup.requirement",
            format!(
                "best_effort: on a host without a delegated cgroup, memory is bounded only per \
                 process by RLIMIT_AS (memfd pages written without mapping escape it), pids \
                 only by RLIMIT_NPROC, and CPU by the supervisor's count over every process \
                 of the jail with no bandwidth cap{spawn}; use \"required\" \
                 where systemd Delegate=yes is available"
            ),
        );
    }
    if p.landlock.requirement == Requirement::BestEffort {
        warn(
            w,
            "landlock.requirement",
            "best_effort: hosts without landlock (or below min_abi) run with the read-only \
             mount layout as the only filesystem control (recorded as degraded)",
        );
    }
}

/// The static check's rules (defence in depth, but a weak list still deserves a warning).
fn check_lints(c: &CheckRules, python_version: &str, w: &mut Vec<LintWarning>) {
    let version = if python_version.is_empty() {
        agentjail_check::python::DEFAULT_PYTHON.to_string()
    } else {
        python_version.to_string()
    };
    let Some(tables) = Modules::for_version(&version) else {
        // The loader refuses such a policy; a Policy built in code can still get here.
        warn(
            w,
            "interpreter.python_version",
            format!("no module tables for Python {version}: every Python job is denied"),
        );
        return;
    };
    for m in &c.allowed_imports {
        let top = m.split('.').next().unwrap_or(m);
        if DANGEROUS_MODULES.contains(&top) {
            warn(
                w,
                "check.allowed_imports",
                format!("{m} is allowed: it gives the program the host directly"),
            );
            continue;
        }
        match tables.reachable_dangerous_modules(m, &c.denied_attributes, c.deny_dunder) {
            Some(reached) => {
                for (danger, chain) in reached {
                    warn(
                        w,
                        "check.allowed_imports",
                        format!(
                            "{m} reaches {danger} as {chain}; add the attribute to \
                             check.denied_attributes"
                        ),
                    );
                }
            }
            None => warn(
                w,
                "check.allowed_imports",
                format!(
                    "{m} is not in agentjail's module table (scripts/gen-stdlib-graph.py): the checker cannot tell which of its attributes are modules; audit by \
                     hand which modules it exposes (e.g. python3 -c 'import {top}; print([a for a in dir({top}) if type(getattr({top}, a)).__name__ == \"module\"])')"
                ),
            ),
        }
    }
    if !c.deny_dunder {
        warn(
            w,
            "check.deny_dunder",
            "off: __class__, __subclasses__, __globals__ and __builtins__ reach every object \
             and module in the interpreter",
        );
    }
    denied_list_lints(c, w);
}

/// Lists a reviewer should see in the policy itself: the evaluators, `open`, the frame
/// attributes.
fn denied_list_lints(c: &CheckRules, w: &mut Vec<LintWarning>) {
    let missing: Vec<&str> = ["eval", "exec", "compile", "__import__"]
        .into_iter()
        .filter(|n| !c.denied_calls.iter().any(|d| d == n))
        .collect();
    if !missing.is_empty() {
        warn(
            w,
            "check.denied_calls",
            format!(
                "{} not listed: the checker denies them under every policy anyway, but a \
                 reviewer reading this policy should see them",
                missing.join(", ")
            ),
        );
    }
    if !c.denied_calls.iter().any(|d| d == "open") {
        warn(
            w,
            "check.denied_calls",
            "open is allowed: the program can read every file the jail binds (the \
             interpreter's tree, the synthesized /etc) and write its /tmp; the jail bounds \
             it, the check no longer does",
        );
    }
    let frames: Vec<&str> = FRAME_ATTRIBUTES
        .iter()
        .copied()
        .filter(|a| !c.denied_attributes.iter().any(|d| d == a))
        .collect();
    if !frames.is_empty() {
        warn(
            w,
            "check.denied_attributes",
            format!(
                "frame-walking attributes not denied ({}): a generator or traceback reaches \
                 f_globals/f_builtins and through them __import__",
                frames.join(", ")
            ),
        );
    }
}
