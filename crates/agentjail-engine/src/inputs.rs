//! Host inputs: `run --input HOST_PATH[:NAME]` (and serve's `inputs`) binds a host file or
//! directory read-only at /app/in/NAME — only beneath a directory the policy lists in
//! `files.host_roots`, reached without following any symlink (see jail::mount::open_input).

use crate::plan::HostInput;

/// Why an input spec was refused: the spec (or its path), and what was wrong. Display is
/// the message agentjail prints (and serve's `bad_inputs` carries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputError {
    /// The path is not absolute and normalised.
    NotNormal { spec: String },
    /// The path is under no `files.host_roots` entry (`roots`, as the policy lists them).
    NotUnderRoot { path: String, roots: Vec<String> },
    /// NAME is not one printable path component.
    BadName { spec: String, name: String },
    /// The jail could not open it beneath its root: the jail's reason.
    Open { spec: String, reason: String },
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::NotNormal { spec } => write!(
                f,
                "input {spec:?}: give an absolute, normalised host path (no `.`, `..` or `//`)"
            ),
            InputError::NotUnderRoot { path, roots } => write!(
                f,
                "input {path:?} is not under any files.host_roots entry ({}); the policy decides which host directories may reach a jail",
                if roots.is_empty() { "none are listed".to_string() } else { roots.join(", ") }
            ),
            InputError::BadName { spec, name } => write!(
                f,
                "input {spec:?}: NAME {name:?} must be one printable path component"
            ),
            InputError::Open { spec, reason } => write!(f, "input {spec:?}: {reason}"),
        }
    }
}

impl std::error::Error for InputError {}

/// Resolve an input spec against the policy's host roots, and try to open it the way the
/// jail will (beneath its root, no symlink on the way): refused here rather than at launch.
pub fn resolve(spec: &str, host_roots: &[String]) -> Result<HostInput, InputError> {
    let (path, name) = match spec.rsplit_once(':') {
        Some((p, n)) if !n.contains('/') && !p.is_empty() => (p, Some(n)),
        _ => (spec, None),
    };
    let (root, relative) = locate(path, host_roots).map_err(|e| match e {
        InputError::NotNormal { .. } => InputError::NotNormal {
            spec: spec.to_string(),
        },
        other => other,
    })?;
    let name = name
        .map(str::to_string)
        .unwrap_or_else(|| path.rsplit('/').next().unwrap_or("input").to_string());
    if name.contains('/') || crate::contract::file_path_problem(&name).is_some() {
        return Err(InputError::BadName {
            spec: spec.to_string(),
            name,
        });
    }
    agentjail_jail::mount::open_input(&root, &relative).map_err(|e| InputError::Open {
        spec: spec.to_string(),
        reason: e.to_string(),
    })?;
    Ok(HostInput {
        root,
        relative,
        name,
    })
}

/// The root `path` is under and its path below it ("" for the root itself): `path` must be
/// absolute and normalised (no `.`, `..`, `//`, no trailing `/`). Nothing is opened here.
/// Host inputs and a workspace's host directory (src/engine/hostdir.rs) are placed so.
pub fn locate(path: &str, host_roots: &[String]) -> Result<(String, String), InputError> {
    let normal = path.starts_with('/')
        && path.len() > 1
        && !path.ends_with('/')
        && !path[1..]
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..");
    if !normal {
        return Err(InputError::NotNormal {
            spec: path.to_string(),
        });
    }
    let root = host_roots
        .iter()
        .find(|r| path == r.as_str() || path.starts_with(&format!("{r}/")))
        .ok_or_else(|| InputError::NotUnderRoot {
            path: path.to_string(),
            roots: host_roots.to_vec(),
        })?;
    let relative = path[root.len()..].trim_start_matches('/').to_string();
    Ok((root.clone(), relative))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_beneath_a_host_root() {
        let roots = vec!["/srv/data".to_string()];
        assert!(resolve("/etc/passwd", &roots)
            .unwrap_err()
            .to_string()
            .contains("not under"));
        assert!(resolve("/srv/data/../x", &roots).is_err());
        assert!(resolve("srv/data/x", &roots).is_err());
        assert!(matches!(
            resolve("/srv/datax", &roots),
            Err(InputError::NotUnderRoot { .. })
        ));
        assert!(resolve("/srv/data/x:a/b", &roots).is_err());
    }
}
