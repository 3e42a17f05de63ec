//! Validation: values the types allow but a jail cannot honour.

use super::invalid::{invalid, invalid_item, Invalid};
use super::*;

// ---------------------------------------------------------------------------------------
// Validation: values the types allow but a jail cannot honour.

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
pub(super) fn is_under(path: &str, root: &str) -> bool {
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

pub(super) fn validate(p: &Policy) -> Result<(), Invalid> {
    identity(p)?;
    languages(p)?;
    budget(p)?;
    check_rules(p)?;
    interpreter(p)?;
    limits(p)?;
    filesystem(p)?;
    seccomp(p)?;
    landlock(p)?;
    environment(p)?;
    audit(p)?;
    session(p)?;
    workspace(p)?;
    files(p)?;
    artifacts(p)?;
    results(p)?;
    redaction(p)?;
    super::network::validate(p)?;
    unenforced_check(p)?;
    Ok(())
}

/// `check.enforce = false` (the static check reports and refuses nothing) only with every
/// control that then holds the program: no network at all, seccomp required and without
/// the opt-in groups that widen it (processes, sockets), landlock required, no writable
/// host directory (`workspace.host_roots`). The jail's own /tmp and finite limits hold
/// under every policy (the format has no key to loosen them). docs/SECURITY.md, "A check that is not enforced".
fn unenforced_check(p: &Policy) -> Result<(), Invalid> {
    if p.check.enforce {
        return Ok(());
    }
    const HINT: &str = "check.enforce = false leaves the jail as the only barrier, so it needs \
                        every control: network.enabled = false with mode = \"none\", \
                        seccomp.requirement = \"required\" without process_spawn, \
                        sockets_local or network, landlock.requirement = \"required\", no \
                        workspace.host_roots; or set check.enforce = true";
    if let Some(why) = full_controls_missing(p) {
        return Err(invalid("check.enforce", format!("false, but {why}"), HINT));
    }
    Ok(())
}

/// The first of the jail's full controls `p` goes without, in words; None when it has them
/// all. The rule of `check.enforce = false` and of a language with `check = "none"`.
pub(super) fn full_controls_missing(p: &Policy) -> Option<String> {
    let missing = if p.network.enabled {
        Some("network.enabled = true shares the host's network")
    } else if p.network.mode != super::network::NetworkMode::None {
        Some("network.mode = \"allowlist\" lets the program out through the proxy")
    } else if p.seccomp.requirement != Requirement::Required {
        Some("seccomp.requirement is not \"required\": the syscall filter may be missing")
    } else if p.landlock.requirement != Requirement::Required {
        Some("landlock.requirement is not \"required\": the file access rules may be missing")
    } else if !p.workspace.host_roots.is_empty() {
        Some("workspace.host_roots lets workspaces write host directories")
    } else {
        None
    };
    if let Some(why) = missing {
        return Some(why.to_string());
    }
    DANGEROUS_SECCOMP_GROUPS
        .iter()
        .find(|(g, _)| p.seccomp.allow_groups.iter().any(|a| a == g))
        .map(|(g, _)| format!("seccomp.allow_groups lists {g:?}, which widens the filter"))
}

/// Host directories no `files.host_roots` entry may be or be under: the kernel's
/// interfaces, the host's configuration and run state, and `/` itself.
const FORBIDDEN_HOST_ROOTS: &[&str] = &["/proc", "/sys", "/dev", "/etc", "/run", "/boot"];

/// Input files.
fn files(p: &Policy) -> Result<(), Invalid> {
    let f = &p.files;
    in_range(
        "files.max_count",
        f.max_count,
        0,
        10_000,
        "files per action; 0 to 10000",
    )?;
    bytes_in_range(
        "files.max_file_bytes",
        f.max_file_bytes,
        0,
        MAX_PAYLOAD_BYTES,
        "an input file travels inside the action (16MiB at most); 0 to 64MiB",
    )?;
    bytes_in_range(
        "files.max_total_bytes",
        f.max_total_bytes,
        0,
        MAX_PAYLOAD_BYTES,
        "all input files of an action; 0 to 64MiB",
    )?;
    host_roots("files.host_roots", &f.host_roots)
}

/// `files.host_roots` and `workspace.host_roots`: absolute, normalised, never `/` nor under
/// the host's kernel interfaces and configuration.
fn host_roots(key: &str, roots: &[String]) -> Result<(), Invalid> {
    for root in roots {
        if let Some(problem) = path_problem(root) {
            return Err(invalid_item(
                key,
                root,
                format!("{root:?} {problem}"),
                "give absolute, normalised directories",
            ));
        }
        if root == "/" || FORBIDDEN_HOST_ROOTS.iter().any(|r| is_under(root, r)) {
            return Err(invalid_item(
                key,
                root,
                format!("{root:?} is / or under {}", FORBIDDEN_HOST_ROOTS.join(", ")),
                "list the directories that hold job data, e.g. /srv/agentjail/data",
            ));
        }
    }
    Ok(())
}

/// Artifacts.
fn artifacts(p: &Policy) -> Result<(), Invalid> {
    let a = &p.artifacts;
    in_range(
        "artifacts.max_count",
        a.max_count,
        1,
        10_000,
        "artifacts per run; 1 to 10000",
    )?;
    bytes_in_range(
        "artifacts.max_total_bytes",
        a.max_total_bytes,
        4096,
        p.limits.memory.0,
        "the /app/out tmpfs is charged to the jail's memory; 4KiB to limits.memory",
    )?;
    bytes_in_range(
        "artifacts.max_file_bytes",
        a.max_file_bytes,
        1,
        a.max_total_bytes.0,
        "one artifact; at most artifacts.max_total_bytes",
    )?;
    bytes_in_range(
        "artifacts.inline_max_bytes",
        a.inline_max_bytes,
        0,
        16 * MIB,
        "inline artifacts are base64 in the record; 0 to 16MiB",
    )
}

/// Rich results: the reply pipe holds them (the supervisor keeps at most `max_bytes` more
/// than the runner's other reports), so they are bounded like inline artifacts.
fn results(p: &Policy) -> Result<(), Invalid> {
    let r = &p.results;
    in_range(
        "results.max_count",
        r.max_count,
        0,
        1000,
        "rich results per run or session call; 0 (off) to 1000",
    )?;
    bytes_in_range(
        "results.max_bytes",
        r.max_bytes,
        0,
        64 * MIB,
        "result reports are kept in memory and base64 in the record; 0 to 64MiB",
    )
}

/// Redaction patterns must compile (linear-time engine, bounded size).
fn redaction(p: &Policy) -> Result<(), Invalid> {
    for pat in &p.redaction.patterns {
        if let Err(e) = regex::RegexBuilder::new(pat).size_limit(1 << 20).build() {
            return Err(invalid_item(
                "redaction.patterns",
                pat,
                format!(
                    "{pat:?} does not compile: {}",
                    e.to_string().lines().last().unwrap_or("")
                ),
                "use Rust regex syntax (no look-around, no backreferences)",
            ));
        }
    }
    Ok(())
}

/// Session limits.
fn session(p: &Policy) -> Result<(), Invalid> {
    let s = &p.session;
    in_range(
        "session.max_calls",
        s.max_calls,
        1,
        1_000_000,
        "calls per session; 1 to 1000000",
    )?;
    in_range(
        "session.max_exec_seconds",
        s.max_exec_seconds,
        1,
        86_400,
        "a session's total execution time; 1 s to 1 day",
    )?;
    in_range(
        "session.idle_timeout_seconds",
        s.idle_timeout_seconds,
        1,
        86_400,
        "an idle session is closed after this; 1 s to 1 day",
    )?;
    in_range(
        "session.lifetime_seconds",
        s.lifetime_seconds,
        1,
        7 * 86_400,
        "a session's whole life; 1 s to 1 week",
    )?;
    in_range(
        "session.max_per_client",
        s.max_per_client,
        1,
        10_000,
        "sessions one client holds open at once; 1 to 10000",
    )
}

/// Workspace limits.
fn workspace(p: &Policy) -> Result<(), Invalid> {
    let w = &p.workspace;
    bytes_in_range(
        "workspace.size",
        w.size,
        1 << 20,
        64 << 30,
        "the /workspace tmpfs; 1MiB to 64GiB",
    )?;
    in_range(
        "workspace.inodes",
        w.inodes,
        16,
        10_000_000,
        "files and directories in /workspace; 16 to 10000000",
    )?;
    in_range(
        "workspace.max_execs",
        w.max_execs,
        1,
        10_000_000,
        "commands per workspace; 1 to 10000000",
    )?;
    in_range(
        "workspace.idle_timeout_seconds",
        w.idle_timeout_seconds,
        1,
        86_400,
        "an idle workspace is closed after this; 1 s to 1 day",
    )?;
    in_range(
        "workspace.lifetime_seconds",
        w.lifetime_seconds,
        1,
        7 * 86_400,
        "a workspace's whole life; 1 s to 1 week",
    )?;
    in_range(
        "workspace.max_per_client",
        w.max_per_client,
        1,
        10_000,
        "workspaces one client holds open at once; 1 to 10000",
    )?;
    host_roots("workspace.host_roots", &w.host_roots)?;
    if !w.host_roots.is_empty() && !w.host_quota_acknowledged {
        return Err(invalid(
            "workspace.host_quota_acknowledged",
            "workspace.host_roots lets a workspace write a host directory, which workspace.size and workspace.inodes cannot bound (they cap the tmpfs only)",
            "put the roots on a filesystem with a quota (or one you can let fill) and set host_quota_acknowledged = true",
        ));
    }
    Ok(())
}

/// The format version and the name.
fn identity(p: &Policy) -> Result<(), Invalid> {
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

    Ok(())
}

/// Languages: the policy-level allowlist, and the languages executed.
fn languages(p: &Policy) -> Result<(), Invalid> {
    for lang in p.languages.allowed.iter().chain(&p.languages.execute) {
        if lang.is_empty()
            || !lang
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
        {
            let key = if p.languages.allowed.contains(lang) {
                "languages.allowed"
            } else {
                "languages.execute"
            };
            return Err(invalid_item(
                key,
                lang,
                format!("{lang:?} is not a language name"),
                "use lowercase names such as \"python\"",
            ));
        }
    }
    let known = agentjail_check::EXECUTION_LANGUAGES;
    for (n, lang) in p.languages.execute.iter().enumerate() {
        if !known.contains(&lang.as_str()) {
            return Err(invalid_item(
                "languages.execute",
                lang,
                format!("agentjail cannot execute {lang:?}"),
                &format!("this build executes {}", known.join(", ")),
            ));
        }
        if p.languages.execute[..n].contains(lang) {
            return Err(invalid_item(
                "languages.execute",
                lang,
                format!("{lang:?} is listed twice"),
                "remove the duplicate",
            ));
        }
    }
    for mode in &p.languages.output_modes {
        if mode != "json" && mode != "text" {
            return Err(invalid_item(
                "languages.output_modes",
                mode,
                format!("{mode:?} is not an output mode"),
                "list \"json\", \"text\" or both",
            ));
        }
    }
    if p.languages.output_modes.is_empty() {
        return Err(invalid(
            "languages.output_modes",
            "no output mode is accepted: no action could run",
            "list \"json\", \"text\" or both",
        ));
    }
    Ok(())
}

/// Budget.
fn budget(p: &Policy) -> Result<(), Invalid> {
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
    Ok(())
}

/// Static check rules.
fn check_rules(p: &Policy) -> Result<(), Invalid> {
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
    javascript_rules(&c.javascript)
}

/// `[check.javascript]`.
fn javascript_rules(j: &agentjail_check::javascript::JsRules) -> Result<(), Invalid> {
    use agentjail_check::javascript::ALWAYS_DENIED_MODULES;
    for m in &j.allowed_modules {
        let bare = m.strip_prefix("node:").unwrap_or(m);
        let top = bare.split('/').next().unwrap_or(bare);
        let well_formed = !bare.is_empty()
            && !bare.starts_with('.')
            && !bare.starts_with('/')
            && !bare.starts_with('_')
            && !bare
                .split('/')
                .any(|c| c.is_empty() || c == "." || c == "..")
            && bare
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | '@'));
        if !well_formed {
            return Err(invalid_item(
                "check.javascript.allowed_modules",
                m,
                format!("{m:?} is not a module specifier the check can allow"),
                "list package or built-in names such as \"util\" or \"node:assert\"; relative \
                 and absolute paths and `_`-prefixed internals are never loadable",
            ));
        }
        if ALWAYS_DENIED_MODULES.contains(&top) {
            return Err(invalid_item(
                "check.javascript.allowed_modules",
                m,
                format!("{m:?} is denied under every policy (files, processes, network, the engine or the loader)"),
                "remove it; the check refuses it whatever the policy says",
            ));
        }
    }
    for (key, list) in [
        ("check.javascript.denied_globals", &j.denied_globals),
        ("check.javascript.denied_members", &j.denied_members),
    ] {
        if let Some(bad) = list.iter().find(|n| !is_js_identifier(n)) {
            return Err(invalid_item(
                key,
                bad,
                format!("{bad:?} is not a JavaScript identifier"),
                "list plain ASCII identifiers (letters, digits, `_`, `$`)",
            ));
        }
    }
    in_range(
        "check.javascript.max_nesting_depth",
        u64::from(j.max_nesting_depth),
        1,
        256,
        "the checker's parser recurses once per level; 1 to 256",
    )?;
    Ok(())
}

fn is_js_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// Interpreter.
fn interpreter(p: &Policy) -> Result<(), Invalid> {
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
    if let Some(given) = &i.python_version {
        if agentjail_check::stdlib::stdlib_table(given.trim()).is_none() {
            return Err(invalid(
                "interpreter.python_version",
                format!(
                    "{given:?}: agentjail's checker has module tables for Python {} only",
                    agentjail_check::stdlib::supported_versions().join(", ")
                ),
                "remove the key to detect the interpreter's version, or name one of those (matching the interpreter the jail runs)",
            ));
        }
    }
    if let Some(m) = i.preload.iter().find(|m| !m.split('.').all(is_identifier)) {
        return Err(invalid_item(
            "interpreter.preload",
            m,
            format!("{m:?} is not a module name"),
            "list importable module names such as \"json\"",
        ));
    }
    node(p)
}

/// node and its flags. The path is checked where `javascript` is executed; the flags always
/// (only [`NODE_FLAGS`], so no flag can load code the checker never saw).
fn node(p: &Policy) -> Result<(), Invalid> {
    let i = &p.interpreter;
    for (n, arg) in i.node_args.iter().enumerate() {
        if !node_flag_allowed(arg) {
            let hint = if arg.starts_with("--max-old-space-size")
                || arg.starts_with("--max-heap-size")
            {
                "remove it: agentjail derives --max-old-space-size from limits.memory".to_string()
            } else if arg.starts_with("--allow-") {
                "remove it: agentjail grants the runner's read itself; the program gets nothing more".to_string()
            } else {
                format!(
                    "accepted flags (a trailing `=` takes a value): {}",
                    NODE_FLAGS.join(" ")
                )
            };
            return Err(invalid_item(
                "interpreter.node_args",
                arg,
                format!("{arg:?} is not a node flag a policy may set"),
                &hint,
            ));
        }
        if i.node_args[..n].contains(arg) {
            return Err(invalid_item(
                "interpreter.node_args",
                arg,
                format!("{arg:?} is listed twice"),
                "remove the duplicate",
            ));
        }
    }
    if !p.executes("javascript") {
        return Ok(());
    }
    if let Some(problem) = path_problem(&i.node) {
        return Err(invalid(
            "interpreter.node",
            format!("{:?} {problem}", i.node),
            "give the absolute, normalised path of node, e.g. /usr/bin/node",
        ));
    }
    let all_binds = || p.filesystem.read_only.iter().chain(&p.filesystem.optional);
    if !all_binds().any(|b| is_under(&i.node, b)) {
        return Err(invalid(
            "interpreter.node",
            format!("{:?} is not under any filesystem.read_only path", i.node),
            "the jail only contains the read-only binds; add node's directory to filesystem.read_only",
        ));
    }
    if p.limits.memory.0 < MIN_JS_MEMORY_BYTES {
        return Err(invalid(
            "limits.memory",
            format!(
                "{} is below {}, the least node can run a program in",
                p.limits.memory,
                Bytes(MIN_JS_MEMORY_BYTES)
            ),
            "languages.execute lists javascript: node is ~40MiB resident before the program allocates anything; use at least \"128MiB\"",
        ));
    }
    Ok(())
}

/// Whether `arg` is one of [`NODE_FLAGS`]: exactly, or `--flag=value` for a flag listed
/// with a trailing `=` and a plain value (letters, digits, `.`, `_`, `-`).
fn node_flag_allowed(arg: &str) -> bool {
    NODE_FLAGS.iter().any(|f| match f.strip_suffix('=') {
        None => arg == *f,
        Some(name) => arg
            .strip_prefix(name)
            .and_then(|rest| rest.strip_prefix('='))
            .is_some_and(|v| {
                !v.is_empty()
                    && v.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
            }),
    })
}

/// Limits.
fn limits(p: &Policy) -> Result<(), Invalid> {
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
    sizes(l)
}

/// The byte and count limits: /tmp, output, open files, file size.
fn sizes(l: &Limits) -> Result<(), Invalid> {
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
    Ok(())
}

/// Filesystem.
fn filesystem(p: &Policy) -> Result<(), Invalid> {
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
    Ok(())
}

/// Seccomp.
fn seccomp(p: &Policy) -> Result<(), Invalid> {
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
    if p.executes("javascript") && !s.allow_groups.iter().any(|g| g == "javascript") {
        return Err(invalid(
            "seccomp.allow_groups",
            "languages.execute lists javascript but the `javascript` group is missing: node's event loop needs eventfd2 and would be stopped at start",
            "add \"javascript\"",
        ));
    }
    if p.executes("javascript") && s.errno_syscalls.iter().any(|n| n == "eventfd2") {
        return Err(invalid_item(
            "seccomp.errno_syscalls",
            "eventfd2",
            "languages.execute lists javascript, whose event loop needs eventfd2: refused with an errno, node aborts at start (uv_loop_init)",
            "remove \"eventfd2\" from errno_syscalls, or javascript from languages.execute",
        ));
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
    Ok(())
}

/// Landlock.
fn landlock(p: &Policy) -> Result<(), Invalid> {
    in_range(
        "landlock.min_abi",
        u64::from(p.landlock.min_abi),
        1,
        6,
        "landlock ABI versions 1 to 6 exist (Linux 5.13 to 6.12)",
    )?;
    Ok(())
}

/// Environment.
fn environment(p: &Policy) -> Result<(), Invalid> {
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
    Ok(())
}

/// Audit.
fn audit(p: &Policy) -> Result<(), Invalid> {
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn workspace_host_roots_are_checked_and_need_the_quota_acknowledged() {
        let mut p = Policy::default();
        p.workspace.host_roots = vec!["/srv/ws".into()];
        let e = workspace(&p).unwrap_err();
        assert_eq!(e.key, "workspace.host_quota_acknowledged");
        p.workspace.host_quota_acknowledged = true;
        assert!(workspace(&p).is_ok());
        for bad in ["/", "/etc/x", "srv/ws", "/srv/../etc", "/proc"] {
            p.workspace.host_roots = vec![bad.into()];
            assert_eq!(
                workspace(&p).unwrap_err().key,
                "workspace.host_roots",
                "{bad}"
            );
        }
        p.workspace.host_roots = vec!["/srv/ws".into()];
        assert!(super::super::lint::lint(&p)
            .iter()
            .any(|w| w.key == "workspace.host_roots"));
    }

    #[test]
    fn results_bounds_are_checked() {
        let mut p = Policy::default();
        assert!(results(&p).is_ok());
        p.results.max_count = 0;
        assert!(results(&p).is_ok(), "0 turns results off");
        p.results.max_count = 1001;
        assert_eq!(results(&p).unwrap_err().key, "results.max_count");
        p.results.max_count = 16;
        p.results.max_bytes = Bytes(64 * MIB + 1);
        assert_eq!(results(&p).unwrap_err().key, "results.max_bytes");
    }
}
