//! The environment a job runs in, named in every record (seed 001 §7 and §10: "the sandbox
//! image digest"): the interpreter, its version, and a digest of what it can import.
//!
//! The digest is sha256 over a manifest of: the interpreter binary (resolved path, size,
//! mtime, inode), and for each directory the jail's interpreter imports from (the stdlib and
//! lib-dynload; the dist-packages directories too when the policy runs Python without `-S`)
//! every top-level entry with its size and mtime (distribution metadata directories such as
//! `numpy-1.24.2.egg-info` carry the versions), plus dpkg's status database when the host has
//! one. It changes when the interpreter or any importable package is installed, removed or
//! upgraded (dpkg, pip), and costs a few hundred stat calls, so it is computed once per
//! process and policy. It identifies a state of the host, not file contents: a file edited
//! in place without touching its directory is not seen (`agentjail doctor` says so too).
//!
//! For JavaScript the interpreter is node: its built-in modules live in the binary and the
//! permission model lets the program read no file, so the manifest is the binary, its flags
//! and dpkg's status database (no import directories).

use crate::policy::Policy;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::sync::{Mutex, OnceLock};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Environment {
    /// The job's language (`python`, `javascript`).
    pub language: String,
    /// The interpreter's path as the policy names it.
    pub interpreter: String,
    /// Where that path resolves on the host (the file the jail really runs).
    pub resolved: String,
    /// The Python version the checker parses for and judges with (empty, and not shown,
    /// for JavaScript).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub python_version: String,
    /// How that version was found: detected from the interpreter (the link chain or the
    /// standard library beside its `bin/`) or given by the policy and confirmed.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub python_version_source: String,
    /// A toolchain language's toolchain version, read from files by the policy loader
    /// (crate::policy::toolchain::version_of); absent for Python and JavaScript.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub toolchain_version: String,
    /// Directories the interpreter imports from (those the jail can see).
    pub import_roots: Vec<String>,
    /// `sha256:<hex>` of the manifest described in the module documentation.
    pub digest: String,
}

/// What runs a job in `language` under `policy`: (interpreter path, its flags, the Python
/// version, whether it imports from directories).
fn interpreter_of<'p>(policy: &'p Policy, language: &str) -> (&'p str, &'p [String], &'p str) {
    let i = &policy.interpreter;
    if let Some(tc) = policy.languages.toolchain(language) {
        // A toolchain language: the compiler (or the runtime without a compile step) and
        // the argv it runs with.
        let (path, args) = match &tc.found {
            Some(f) => (f.path.as_str(), &f.compile),
            None => (tc.run.first().map_or("", String::as_str), &tc.run),
        };
        return (path, args.as_slice(), "");
    }
    if language == "javascript" {
        (&i.node, &i.node_args, "")
    } else {
        (&i.python, &i.python_args, policy.python_version())
    }
}

/// The environment of the interpreter that runs `language` under `policy`, computed once per
/// process and interpreter configuration.
pub fn of(policy: &Policy, language: &str) -> Environment {
    static CACHE: OnceLock<Mutex<HashMap<String, Environment>>> = OnceLock::new();
    let (interpreter, args, version) = interpreter_of(policy, language);
    let key = format!(
        "{language}\0{interpreter}\0{version}\0{}\0{:?}\0{}",
        args.join(" "),
        policy.filesystem.read_only,
        policy.python_version_source()
    );
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(env) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return env;
    }
    let env = compute(policy, language);
    if let Ok(mut c) = cache.lock() {
        c.insert(key, env.clone());
    }
    env
}

/// The import directories of CPython `version`: those of the installation the loader found
/// (its standard library, lib-dynload, and its package directories when `site` runs, no
/// `-S`), else a Debian-style layout.
fn import_roots(policy: &Policy, version: &str, with_site: bool) -> Vec<String> {
    if let Some(found) = &policy.interpreter.found {
        let mut roots = vec![
            found.stdlib.clone(),
            format!("{}/lib-dynload", found.stdlib),
        ];
        if with_site {
            roots.extend(crate::policy::python::package_dirs(found));
        }
        return roots;
    }
    let mut roots = vec![
        format!("/usr/lib/python{version}"),
        format!("/usr/lib/python{version}/lib-dynload"),
    ];
    if with_site {
        roots.push(format!("/usr/local/lib/python{version}/dist-packages"));
        roots.push("/usr/lib/python3/dist-packages".into());
        roots.push(format!("/usr/lib/python{version}/dist-packages"));
    }
    roots
}

fn under_binds(path: &str, policy: &Policy) -> bool {
    let fs = &policy.filesystem;
    fs.read_only.iter().chain(&fs.optional).any(|b| {
        path == b || (path.starts_with(b.as_str()) && path.as_bytes().get(b.len()) == Some(&b'/'))
    })
}

fn stat_line(label: &str, path: &std::path::Path) -> String {
    match std::fs::symlink_metadata(path) {
        Ok(m) => format!(
            "{label} {} {} {} {}.{:09}\n",
            path.display(),
            m.mode(),
            m.size(),
            m.mtime(),
            m.mtime_nsec()
        ),
        Err(_) => format!("{label} {} missing\n", path.display()),
    }
}

fn compute(policy: &Policy, language: &str) -> Environment {
    let (interpreter, args, version) = interpreter_of(policy, language);
    let resolved = std::fs::canonicalize(interpreter)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| interpreter.to_string());
    let mut manifest = String::new();
    manifest.push_str(&format!("language {language}\n"));
    manifest.push_str(&stat_line("interpreter", std::path::Path::new(&resolved)));
    manifest.push_str(&format!("args {}\n", args.join(" ")));
    let roots: Vec<String> = if version.is_empty() {
        Vec::new()
    } else {
        let with_site = !args.iter().any(|a| a == "-S");
        import_roots(policy, version, with_site)
            .into_iter()
            .filter(|r| under_binds(r, policy) && std::path::Path::new(r).is_dir())
            .collect()
    };
    for root in &roots {
        manifest.push_str(&format!("root {root}\n"));
        let mut entries: Vec<std::path::PathBuf> = std::fs::read_dir(root)
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        entries.sort();
        for e in entries {
            manifest.push_str(&stat_line(" ", &e));
        }
    }
    manifest.push_str(&stat_line(
        "dpkg",
        std::path::Path::new("/var/lib/dpkg/status"),
    ));
    Environment {
        language: language.to_string(),
        interpreter: interpreter.to_string(),
        resolved,
        python_version: version.to_string(),
        python_version_source: if version.is_empty() {
            String::new()
        } else {
            policy.python_version_source()
        },
        toolchain_version: policy
            .languages
            .toolchain(language)
            .and_then(|t| t.found.as_ref())
            .map(|f| f.version.clone())
            .unwrap_or_default(),
        import_roots: roots,
        digest: format!("sha256:{:x}", Sha256::digest(manifest.as_bytes())),
    }
}
