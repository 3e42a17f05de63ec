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

use crate::policy::Policy;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::sync::{Mutex, OnceLock};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Environment {
    /// The interpreter's path as the policy names it.
    pub interpreter: String,
    /// Where that path resolves on the host (the file the jail really runs).
    pub resolved: String,
    pub python_version: String,
    /// Directories the interpreter imports from (those the jail can see).
    pub import_roots: Vec<String>,
    /// `sha256:<hex>` of the manifest described in the module documentation.
    pub digest: String,
}

/// The environment of `policy`'s interpreter, computed once per process and interpreter
/// configuration.
pub fn of(policy: &Policy) -> Environment {
    static CACHE: OnceLock<Mutex<HashMap<String, Environment>>> = OnceLock::new();
    let i = &policy.interpreter;
    let key = format!(
        "{}\0{}\0{}\0{:?}",
        i.python,
        i.python_version,
        i.python_args.join(" "),
        policy.filesystem.read_only
    );
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(env) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return env;
    }
    let env = compute(policy);
    if let Ok(mut c) = cache.lock() {
        c.insert(key, env.clone());
    }
    env
}

/// The import directories of CPython `version` on a Debian-style layout; dist-packages only
/// when `site` runs (no `-S`).
fn import_roots(version: &str, with_site: bool) -> Vec<String> {
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

fn compute(policy: &Policy) -> Environment {
    let i = &policy.interpreter;
    let resolved = std::fs::canonicalize(&i.python)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| i.python.clone());
    let mut manifest = String::new();
    manifest.push_str(&stat_line("interpreter", std::path::Path::new(&resolved)));
    manifest.push_str(&format!("args {}\n", i.python_args.join(" ")));
    let with_site = !i.python_args.iter().any(|a| a == "-S");
    let roots: Vec<String> = import_roots(&i.python_version, with_site)
        .into_iter()
        .filter(|r| under_binds(r, policy) && std::path::Path::new(r).is_dir())
        .collect();
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
        interpreter: i.python.clone(),
        resolved,
        python_version: i.python_version.clone(),
        import_roots: roots,
        digest: format!("sha256:{:x}", Sha256::digest(manifest.as_bytes())),
    }
}
