//! `[languages.<lang>]`: how a language without a runner of agentjail's own is built and
//! run (`c`, `cpp`, `java`, `go`, `rust`, `bash`): the toolchain's argv for an optional
//! compile step and for the run step, the compile jail's own limits, and the seccomp groups
//! the run jail gains for that language alone.
//!
//! The loader resolves each argv[0] as it resolves the Python interpreter: an absolute
//! path, under a `filesystem.read_only` bind once its symlinks are resolved (the jail runs
//! the resolved file: `/usr/bin/g++` is `/usr/bin/x86_64-linux-gnu-g++-12` on Debian), its
//! libraries under the binds too, and its version read from files (dpkg's status database,
//! `$JAVA_HOME/release`, `$GOROOT/VERSION`), never by running it. A toolchain that is not
//! installed is refused with the command that installs it. No static check exists for these
//! languages: `check = "none"` must be written, and is accepted only with the jail's full
//! controls (the rule `check.enforce = false` follows, validate.rs).

use super::invalid::{invalid_owned, Invalid};
use super::{Bytes, Policy, MIB};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The languages a `[languages.<lang>]` table describes (a runner of agentjail's own runs
/// `python` and `javascript`).
pub const TOOLCHAIN_LANGUAGES: [&str; 6] = ["c", "cpp", "java", "go", "rust", "bash"];

/// The placeholders an argv may hold: the program file, the compile step's binary and its
/// output directory (in the run jail: the artifact and the directory that holds it).
pub const PLACEHOLDERS: [&str; 3] = ["{source}", "{binary}", "{out}"];

/// The seccomp groups a language's `allow_groups` may add to both its jails: process
/// spawning (a shell's pipelines), node's event loop, and AF_UNIX sockets (the JVM's NIO
/// makes a socketpair; its jails are alone in their network namespace, abstract sockets are
/// scoped by landlock). Never the network group: that is the policy's `[network]` decision.
pub const LANGUAGE_GROUPS: [&str; 3] = ["process_spawn", "javascript", "sockets_local"];

/// What the compile jail adds to the policy's seccomp groups: a compiler driver starts its
/// passes (gcc → cc1plus → as → collect2 → ld; go build's compile and link).
pub const COMPILE_GROUPS: [&str; 1] = ["process_spawn"];

/// The command that installs every toolchain (the refusal of a missing one names it).
pub const INSTALL: &str = "scripts/setup.sh --languages";

/// One language's toolchain (`[languages.cpp]` ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Toolchain {
    /// The static check of this language's code: `"none"` (no check exists; required, so
    /// the policy says so).
    pub check: String,
    /// The compile step's argv (empty: no compile step, as for bash). Run in a jail of its
    /// own with [`Toolchain::compile_limits`].
    #[serde(default)]
    pub compile: Vec<String>,
    /// The run step's argv: `{binary}` (the compiled artifact), or a runtime and its
    /// arguments (`java -cp {out} Main`, `bash {source}`).
    pub run: Vec<String>,
    /// Seccomp groups added to both jails of this language only ([`LANGUAGE_GROUPS`]).
    #[serde(default)]
    pub allow_groups: Vec<String>,
    /// Syscalls refused with an errno (not a stop) in both of this language's jails, added to
    /// `seccomp.errno_syscalls`: what a runtime probes and does without (the JVM's and
    /// rustc's `prctl(PR_SET_NAME)`, the Go build cache's `flock`).
    #[serde(default)]
    pub errno_syscalls: Vec<String>,
    /// Host configuration directories under /etc the toolchain's own tree links into
    /// (OpenJDK's `conf/security/java.security` is a link into /etc/java-17-openjdk), bound
    /// read-only at the same place in both jails. Each must be one directory directly under
    /// /etc that a symlink of the toolchain's installation points beneath: nothing else of
    /// the host's /etc can be named.
    #[serde(default)]
    pub etc_binds: Vec<String>,
    /// Variables set in both jails after the policy's (GOCACHE, HOME...).
    #[serde(default)]
    pub environment: BTreeMap<String, String>,
    /// The compile jail's own limits.
    #[serde(default)]
    pub compile_limits: CompileLimits,
    /// What the loader found (filled at load for an executed language; never in a file).
    #[serde(skip)]
    pub found: Option<Found>,
}

/// The compile jail's limits (`[languages.<lang>.compile_limits]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CompileLimits {
    pub wall_time_ms: u64,
    pub cpu_time_ms: u64,
    pub memory: Bytes,
    pub pids: u64,
    /// The compiler's stdout and stderr kept in the record (each); past it the compile stops
    /// (`compile_error`, `stderr_truncated`).
    pub stderr: Bytes,
    /// The output directory's size: everything the compile step hands on.
    pub output: Bytes,
    /// The compile jail's /tmp (the compiler's temporary files).
    pub tmp_size: Bytes,
}

impl Default for CompileLimits {
    fn default() -> Self {
        CompileLimits {
            wall_time_ms: 10_000,
            cpu_time_ms: 10_000,
            memory: Bytes(1024 * MIB),
            pids: 64,
            stderr: Bytes(64 * 1024),
            output: Bytes(64 * MIB),
            tmp_size: Bytes(256 * MIB),
        }
    }
}

/// A resolved toolchain: the file each argv[0] runs, and the version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The compile argv with argv[0] resolved (empty without a compile step).
    pub compile: Vec<String>,
    /// The run argv with argv[0] resolved (unless it is a placeholder).
    pub run: Vec<String>,
    /// The toolchain's path (the compiler, or the runtime when there is no compile step).
    pub path: String,
    /// Its version, from files (`12.2.0`, `17.0.17`, `go1.19.8`).
    pub version: String,
}

/// The Debian package that holds a language's default toolchain (the refusal's hint).
pub fn debian_package(language: &str) -> &'static str {
    match language {
        "c" => "gcc",
        "cpp" => "g++",
        "java" => "openjdk-17-jdk-headless",
        "go" => "golang-go",
        "rust" => "rustc",
        _ => "bash",
    }
}

impl Toolchain {
    /// The argv as it runs (argv[0] resolved), or as written before the loader saw it.
    pub fn compile_argv(&self) -> &[String] {
        self.found.as_ref().map_or(&self.compile, |f| &f.compile)
    }

    pub fn run_argv(&self) -> &[String] {
        self.found.as_ref().map_or(&self.run, |f| &f.run)
    }

    pub fn has_compile(&self) -> bool {
        !self.compile.is_empty()
    }
}

/// Validate and resolve every executed toolchain language's table. An executed language
/// without its table is refused; a table for a language not executed is validated but not
/// resolved (nothing of it runs).
pub(super) fn resolve(p: &mut Policy) -> Result<(), Invalid> {
    for lang in TOOLCHAIN_LANGUAGES {
        let executes = p.executes(lang);
        let key = format!("languages.{lang}");
        let Some(t) = p.languages.toolchain(lang) else {
            if executes {
                return Err(invalid_owned(
                    "languages.execute",
                    format!("{lang} is executed but the policy has no [{key}] table: how is it built and run?"),
                    format!("add [{key}] (policies/judge.toml has one for every language)"),
                ));
            }
            continue;
        };
        shape(p, lang, t)?;
        if executes {
            let found = locate(p, lang, t)?;
            if let Some(t) = p.languages.toolchain_mut(lang) {
                t.found = Some(found);
            }
        }
    }
    Ok(())
}

/// The table's own rules: `check = "none"` with the jail's full controls, argvs with known
/// placeholders, groups a language may add, limits within range.
fn shape(p: &Policy, lang: &str, t: &Toolchain) -> Result<(), Invalid> {
    let key = |k: &str| format!("languages.{lang}.{k}");
    if t.check != "none" {
        return Err(invalid_owned(
            &key("check"),
            format!("{:?}: no static check exists for {lang}", t.check),
            "write check = \"none\" (the jail alone holds the program)".into(),
        ));
    }
    if let Some(why) = super::validate::full_controls_missing(p) {
        return Err(invalid_owned(
            &key("check"),
            format!("\"none\", but {why}"),
            "a language without a static check needs the jail's every control, as \
             check.enforce = false does: network off, seccomp.requirement = \"required\" \
             without process_spawn, sockets_local or network in seccomp.allow_groups, \
             landlock.requirement = \"required\", no workspace.host_roots"
                .into(),
        ));
    }
    for (k, argv) in [("compile", &t.compile), ("run", &t.run)] {
        argv_shape(&key(k), argv)?;
    }
    if t.run.is_empty() {
        return Err(invalid_owned(
            &key("run"),
            "empty: nothing would run".into(),
            "give the run step's argv, e.g. [\"{binary}\"]".into(),
        ));
    }
    let compiled = t.has_compile();
    if compiled && !t.compile.iter().any(|a| a.contains("{source}")) {
        return Err(invalid_owned(
            &key("compile"),
            "never names {source}: what would it compile?".into(),
            "pass \"{source}\" to the compiler".into(),
        ));
    }
    let hands_on = |argv: &[String]| {
        argv.iter()
            .any(|a| a.contains("{binary}") || a.contains("{out}"))
    };
    if compiled && !(hands_on(&t.compile) && hands_on(&t.run)) {
        return Err(invalid_owned(
            &key("run"),
            "the compile step's output ({binary} or {out}) is not both written by compile and run by run".into(),
            "compile with -o {binary} (or -d {out}) and run [\"{binary}\"] (or the runtime with {out})".into(),
        ));
    }
    if !compiled && hands_on(&t.run) {
        return Err(invalid_owned(
            &key("run"),
            "names {binary} or {out}, but there is no compile step to make them".into(),
            "run {source} with its interpreter, or add a compile step".into(),
        ));
    }
    extras(lang, t)?;
    limits(lang, &t.compile_limits)
}

/// The groups and variables a language adds.
fn extras(lang: &str, t: &Toolchain) -> Result<(), Invalid> {
    let key = |k: &str| format!("languages.{lang}.{k}");
    for g in &t.allow_groups {
        if !LANGUAGE_GROUPS.contains(&g.as_str()) {
            return Err(super::invalid::invalid_item(
                &key("allow_groups"),
                g,
                format!("{g:?} cannot be added for one language"),
                &format!("a language may add {}", LANGUAGE_GROUPS.join(", ")),
            ));
        }
    }
    if let Some(bad) = t.errno_syscalls.iter().find(|n| {
        n.is_empty()
            || !n
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    }) {
        return Err(super::invalid::invalid_item(
            &key("errno_syscalls"),
            bad,
            format!("{bad:?} is not a syscall name"),
            "use the kernel's names, e.g. \"prctl\"",
        ));
    }
    for name in t.environment.keys() {
        if name.is_empty()
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            || name.starts_with("LD_")
            || name == "PATH"
        {
            return Err(super::invalid::invalid_item(
                &key("environment"),
                name,
                format!("{name:?} cannot be set for a language"),
                "names of letters, digits and _; never PATH or LD_*",
            ));
        }
    }
    Ok(())
}

fn limits(lang: &str, l: &CompileLimits) -> Result<(), Invalid> {
    let key = |k: &str| format!("languages.{lang}.compile_limits.{k}");
    let range = |k: &str, v: u64, min: u64, max: u64| {
        if v < min || v > max {
            Err(invalid_owned(
                &key(k),
                format!("{v} is outside {min}..={max}"),
                "a finite limit a compile can work within".into(),
            ))
        } else {
            Ok(())
        }
    };
    range("wall_time_ms", l.wall_time_ms, 100, super::MAX_TIME_MS)?;
    range("cpu_time_ms", l.cpu_time_ms, 100, super::MAX_TIME_MS)?;
    range("memory", l.memory.0, 64 * MIB, 64 * 1024 * MIB)?;
    range("pids", l.pids, 4, 4096)?;
    range("stderr", l.stderr.0, 1024, super::MAX_OUTPUT_BYTES)?;
    range("output", l.output.0, 64 * 1024, 1024 * MIB)?;
    range("tmp_size", l.tmp_size.0, MIB, 4096 * MIB)
}

/// An argv: not empty when given, every `{...}` a known placeholder, argv[0] absolute or a
/// placeholder.
fn argv_shape(key: &str, argv: &[String]) -> Result<(), Invalid> {
    let Some(first) = argv.first() else {
        return Ok(());
    };
    if !first.starts_with('/') && !PLACEHOLDERS.contains(&first.as_str()) {
        return Err(invalid_owned(
            key,
            format!("{first:?} is not an absolute path"),
            "name the tool by its absolute path (the jail has no PATH search for it)".into(),
        ));
    }
    for a in argv {
        let mut rest = a.as_str();
        while let Some(i) = rest.find('{') {
            let tail = &rest[i..];
            let Some(known) = PLACEHOLDERS.iter().find(|p| tail.starts_with(**p)) else {
                return Err(invalid_owned(
                    key,
                    format!("{a:?} holds an unknown placeholder"),
                    format!("placeholders are {}", PLACEHOLDERS.join(", ")),
                ));
            };
            rest = &tail[known.len()..];
        }
        if a.contains('\0') {
            return Err(invalid_owned(
                key,
                "an argument holds a NUL byte".into(),
                "remove it".into(),
            ));
        }
    }
    Ok(())
}

/// Resolve argv[0] of the compile and run steps; read the version.
fn locate(p: &Policy, lang: &str, t: &Toolchain) -> Result<Found, Invalid> {
    let mut compile = t.compile.clone();
    let mut run = t.run.clone();
    let mut path = String::new();
    for (k, argv) in [("compile", &mut compile), ("run", &mut run)] {
        let Some(first) = argv.first_mut() else {
            continue;
        };
        if PLACEHOLDERS.contains(&first.as_str()) {
            continue;
        }
        let resolved = tool(p, lang, &format!("languages.{lang}.{k}"), first)?;
        if path.is_empty() {
            path = resolved.clone();
        }
        *first = resolved;
    }
    etc_binds(lang, t, &path)?;
    let version = version_of(lang, &path);
    Ok(Found {
        compile,
        run,
        path,
        version,
    })
}

/// `etc_binds`: each one directory directly under /etc that a symlink of the toolchain's
/// installation (the directory above the resolved tool's `bin/`) points beneath.
fn etc_binds(lang: &str, t: &Toolchain, resolved: &str) -> Result<(), Invalid> {
    if t.etc_binds.is_empty() {
        return Ok(());
    }
    let key = format!("languages.{lang}.etc_binds");
    let home = Path::new(resolved).parent().and_then(Path::parent);
    let mut targets = Vec::new();
    if let Some(home) = home.filter(|h| *h != Path::new("/usr") && *h != Path::new("/")) {
        link_targets(home, 0, &mut targets);
    }
    for dir in &t.etc_binds {
        let name = dir.strip_prefix("/etc/").unwrap_or("");
        let shaped = !name.is_empty()
            && !name.contains('/')
            && name != "."
            && name != ".."
            && Path::new(dir).is_dir();
        let linked = targets.iter().any(|t| {
            t.strip_prefix(dir.as_str())
                .is_some_and(|r| r.starts_with('/'))
        });
        if !shaped || !linked {
            return Err(super::invalid::invalid_item(
                &key,
                dir,
                format!("{dir:?} is not a directory under /etc that the {lang} toolchain's own files link into"),
                "name only the /etc directory the toolchain's installation links to (e.g. /etc/java-17-openjdk)",
            ));
        }
    }
    Ok(())
}

/// Absolute symlink targets beneath `dir` (at most 8 levels and 20 000 entries looked at).
fn link_targets(dir: &Path, depth: usize, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten().take(20_000) {
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_symlink() {
            if let Ok(t) = std::fs::read_link(e.path()) {
                out.push(t.display().to_string());
            }
        } else if kind.is_dir() && depth < 8 {
            link_targets(&e.path(), depth + 1, out);
        }
    }
}

/// One tool: installed, a regular executable file once resolved, under a read-only bind,
/// its libraries too. Returns the resolved path.
fn tool(p: &Policy, lang: &str, key: &str, path: &str) -> Result<String, Invalid> {
    let install = format!(
        "install it with `{INSTALL}` (Debian package {}), or point {key}[0] at it",
        debian_package(lang)
    );
    let resolved = match std::fs::canonicalize(path) {
        Ok(r) if r.is_file() => r.display().to_string(),
        _ => {
            return Err(invalid_owned(
                key,
                format!("{path} is not installed on this host: {lang} cannot run"),
                install,
            ))
        }
    };
    let binds: Vec<String> = p
        .filesystem
        .read_only
        .iter()
        .chain(
            p.filesystem
                .optional
                .iter()
                .filter(|b| Path::new(b).exists()),
        )
        .cloned()
        .collect();
    if !binds
        .iter()
        .any(|b| super::validate::is_under(&resolved, b))
    {
        return Err(invalid_owned(
            key,
            format!("{path} resolves to {resolved}, which is under no filesystem.read_only bind"),
            "add its directory to filesystem.read_only".into(),
        ));
    }
    match super::elfdeps::first_missing(Path::new(&resolved), &binds) {
        Ok(None) => Ok(resolved),
        Ok(Some(m)) => Err(invalid_owned(
            key,
            format!(
                "{path} cannot start in the jail: it needs {}, found on the host at {}, outside every filesystem.read_only bind",
                m.name,
                m.host_path.display()
            ),
            format!("add \"{}\" to filesystem.read_only", m.bind),
        )),
        // The loader's ELF reader is a convenience (a library missing from the binds named
        // at load instead of an exit 127 in every jail), not a control: a library it cannot
        // parse (rustc's driver: an oversized string table) is left to the jail.
        Err(_) => Ok(resolved),
    }
}

/// The toolchain's version, from files: Java's `release`, Go's `VERSION`, else the version
/// of the Debian package that holds it (gcc-N/g++-N from the compiler's name, rustc, bash);
/// `unknown` when no file says.
pub fn version_of(lang: &str, resolved: &str) -> String {
    let path = Path::new(resolved);
    let home = path.parent().and_then(Path::parent);
    let read = |p: &Path| std::fs::read_to_string(p).ok();
    let found = match lang {
        "java" => home
            .and_then(|h| read(&h.join("release")))
            .and_then(|text| {
                text.lines()
                    .find_map(|l| l.strip_prefix("JAVA_VERSION="))
                    .map(|v| v.trim_matches('"').to_string())
            }),
        "go" => home
            .and_then(|h| read(&h.join("VERSION")))
            .and_then(|t| t.lines().next().map(|l| l.trim().to_string())),
        _ => {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let package = match lang {
                "c" | "cpp" => {
                    // x86_64-linux-gnu-g++-12 → g++-12.
                    let base = name.rsplit_once("-linux-gnu-").map_or(name, |(_, b)| b);
                    base.to_string()
                }
                _ => debian_package(lang).to_string(),
            };
            dpkg_version(&package)
        }
    };
    found
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// A package's upstream version from dpkg's status database (`12.2.0-14+deb12u1` →
/// `12.2.0`; an epoch and `+dfsg` suffixes dropped). `agentjail doctor` reads node's here.
pub fn dpkg_version(package: &str) -> Option<String> {
    let status = std::fs::read_to_string("/var/lib/dpkg/status").ok()?;
    let want = format!("Package: {package}");
    let stanza = status
        .split("\n\n")
        .find(|s| s.lines().next() == Some(want.as_str()))?;
    let v = stanza.lines().find_map(|l| l.strip_prefix("Version: "))?;
    let v = v.split_once(':').map_or(v, |(_, rest)| rest);
    let v = v.rsplit_once('-').map_or(v, |(up, _)| up);
    let v = v.split(['+', '~']).next().unwrap_or(v);
    Some(v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_checked() {
        let ok = |a: &[&str]| argv_shape("k", &a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert!(ok(&["/usr/bin/g++", "-o", "{binary}", "{source}"]).is_ok());
        assert!(ok(&["{binary}"]).is_ok());
        assert!(ok(&["/usr/bin/javac", "-d", "{out}", "x{source}y"]).is_ok());
        for bad in [
            &["g++", "{source}"][..],
            &["/usr/bin/g++", "{home}"],
            &["/x", "{sourc"],
        ] {
            assert!(ok(bad).is_err(), "{bad:?}");
        }
    }

    const JUDGE: &str = include_str!("../../../../policies/judge.toml");

    /// judge.toml with one edit: the loader's refusal (key, message, hint), or None.
    fn refusal(from: &str, to: &str) -> Option<(String, String, String)> {
        assert!(JUDGE.contains(from), "{from}");
        let text = JUDGE.replacen(from, to, 1);
        super::super::load_str(&text, "judge-edit.toml")
            .err()
            .map(|e| (e.key.unwrap_or_default(), e.message, e.hint))
    }

    #[test]
    fn judge_resolves_its_toolchains() {
        let loaded = super::super::load_str(JUDGE, "judge.toml").expect("judge.toml loads");
        let cpp = loaded.policy.languages.cpp.as_ref().unwrap();
        let found = cpp.found.as_ref().expect("resolved");
        assert!(found.path.starts_with("/usr/bin/"), "{found:?}");
        assert_eq!(found.compile[0], found.path);
        assert_eq!(found.run, ["{binary}"]);
        // `policy show` prints the tables and loads back to the same policy.
        let shown = super::super::show(&loaded);
        assert!(
            shown.contains("[languages.cpp]") && shown.contains("[languages.cpp.compile_limits]"),
            "{shown}"
        );
        let again = super::super::load_str(&shown, "shown.toml").expect("show loads back");
        assert_eq!(again.policy.languages.cpp, loaded.policy.languages.cpp);
    }

    #[test]
    fn the_loader_refuses_what_cannot_run_or_is_not_held() {
        let (key, message, hint) = refusal("\"/usr/bin/g++\"", "\"/usr/bin/no-such-g++\"").unwrap();
        assert_eq!(key, "languages.cpp.compile");
        assert!(message.contains("not installed"), "{message}");
        assert!(
            hint.contains("scripts/setup.sh --languages") && hint.contains("g++"),
            "{hint}"
        );
        let (key, message, _) = refusal(
            "[languages.c]\ncheck = \"none\"",
            "[languages.c]\ncheck = \"auto\"",
        )
        .unwrap();
        assert_eq!(
            (key.as_str(), message.contains("no static check")),
            ("languages.c.check", true)
        );
        // check = "none" needs the jail's full controls.
        let (key, message, _) = refusal(
            "[landlock]\n# Required: the languages without a static check need every control of the jail.\nrequirement = \"required\"",
            "[landlock]\nrequirement = \"best_effort\"",
        )
        .unwrap();
        assert_eq!(key, "languages.c.check");
        assert!(message.contains("landlock"), "{message}");
        let (key, message, _) = refusal(
            "\"{binary}\", \"{source}\", \"-lm\"",
            "\"{binary}\", \"{home}\"",
        )
        .unwrap();
        assert_eq!(key, "languages.c.compile");
        assert!(message.contains("unknown placeholder"), "{message}");
        let (key, _, _) = refusal(
            "allow_groups = [\"process_spawn\"]",
            "allow_groups = [\"network\"]",
        )
        .unwrap();
        assert_eq!(key, "languages.bash.allow_groups");
        let (key, message, _) = refusal("[languages.bash]\ncheck = \"none\"\nrun = [\"/usr/bin/bash\", \"{source}\"]\nallow_groups = [\"process_spawn\"]\n", "").unwrap();
        assert_eq!(key, "languages.execute");
        assert!(message.contains("[languages.bash]"), "{message}");
        let (key, _, _) = refusal(
            "run = [\"/usr/bin/bash\", \"{source}\"]",
            "run = [\"bash\", \"{source}\"]",
        )
        .unwrap();
        assert_eq!(key, "languages.bash.run");
    }

    #[test]
    fn versions_come_from_files() {
        // Debian's g++ (the lead's host): the package of the resolved compiler.
        if Path::new("/usr/bin/x86_64-linux-gnu-g++-12").exists() {
            assert!(version_of("cpp", "/usr/bin/x86_64-linux-gnu-g++-12").starts_with("12."));
        }
        assert_eq!(version_of("go", "/nonexistent/bin/go"), "unknown");
    }
}
