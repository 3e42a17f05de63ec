//! `cargo metadata` (no dependencies resolved, offline) for the workspace and for the fuzz
//! crate, which is a workspace of its own.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

pub struct Dep {
    pub name: String,
    /// The name code uses for it (`rename`, dashes as underscores).
    pub code_name: String,
    /// "normal", "dev" or "build".
    pub kind: String,
}

pub struct Target {
    /// "lib" (any library kind), "bin", or another target kind.
    pub kind: String,
    /// The name code uses for it (a library's crate name).
    pub code_name: String,
    /// Relative to the tree's root.
    pub src: String,
}

pub struct Package {
    pub name: String,
    pub deps: Vec<Dep>,
    pub targets: Vec<Target>,
}

fn metadata(root: &Path, manifest: &str) -> Result<Value, String> {
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
            "--manifest-path",
            manifest,
        ])
        .current_dir(root)
        .output()
        .map_err(|e| format!("cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata --manifest-path {manifest}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata: {e}"))
}

fn str_of(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_string()
}

fn package(p: &Value, root: &str) -> Package {
    let deps = p["dependencies"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let deps = deps
        .iter()
        .map(|d| Dep {
            name: str_of(d, "name"),
            code_name: d["rename"]
                .as_str()
                .unwrap_or(&str_of(d, "name"))
                .replace('-', "_"),
            kind: d["kind"].as_str().unwrap_or("normal").to_string(),
        })
        .collect();
    let targets = p["targets"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let targets = targets
        .iter()
        .map(|t| {
            let kinds: Vec<&str> = t["kind"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let lib = kinds
                .iter()
                .any(|k| k.ends_with("lib") || *k == "proc-macro");
            let src = str_of(t, "src_path");
            Target {
                kind: if lib {
                    "lib".into()
                } else {
                    kinds.first().unwrap_or(&"").to_string()
                },
                code_name: str_of(t, "name").replace('-', "_"),
                src: src
                    .strip_prefix(root)
                    .map_or(src.clone(), |s| s.trim_start_matches('/').to_string()),
            }
        })
        .collect();
    Package {
        name: str_of(p, "name"),
        deps,
        targets,
    }
}

/// The workspace's packages, then the fuzz crate's (when `fuzz/Cargo.toml` exists).
pub fn packages(root: &Path) -> Result<Vec<Package>, String> {
    let canon = root
        .canonicalize()
        .map_err(|e| format!("{}: {e}", root.display()))?;
    let root_str = canon.to_string_lossy().into_owned();
    let mut docs = vec![metadata(&canon, "Cargo.toml")?];
    if canon.join("fuzz/Cargo.toml").is_file() {
        docs.push(metadata(&canon, "fuzz/Cargo.toml")?);
    }
    let mut out: Vec<Package> = Vec::new();
    for doc in &docs {
        for p in doc["packages"].as_array().into_iter().flatten() {
            let p = package(p, &root_str);
            if !out.iter().any(|q| q.name == p.name) {
                out.push(p);
            }
        }
    }
    Ok(out)
}
