//! Host inputs: `run --input HOST_PATH[:NAME]` (and serve's `inputs`) binds a host file or
//! directory read-only at /app/in/NAME — only beneath a directory the policy lists in
//! `files.host_roots`, reached without following any symlink (see jail::mount::open_input).

use crate::plan::HostInput;

/// Resolve an input spec against the policy's host roots, and try to open it the way the
/// jail will (beneath its root, no symlink on the way): refused here rather than at launch.
pub fn resolve(spec: &str, host_roots: &[String]) -> Result<HostInput, String> {
    let (path, name) = match spec.rsplit_once(':') {
        Some((p, n)) if !n.contains('/') && !p.is_empty() => (p, Some(n)),
        _ => (spec, None),
    };
    let normal = path.starts_with('/')
        && path.len() > 1
        && !path.ends_with('/')
        && !path[1..]
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..");
    if !normal {
        return Err(format!(
            "input {spec:?}: give an absolute, normalised host path (no `.`, `..` or `//`)"
        ));
    }
    let root = host_roots
        .iter()
        .find(|r| path == r.as_str() || path.starts_with(&format!("{r}/")))
        .ok_or_else(|| {
            format!(
                "input {path:?} is not under any files.host_roots entry ({}); the policy decides which host directories may reach a jail",
                if host_roots.is_empty() { "none are listed".to_string() } else { host_roots.join(", ") }
            )
        })?;
    let relative = path[root.len()..].trim_start_matches('/').to_string();
    let name = name
        .map(str::to_string)
        .unwrap_or_else(|| path.rsplit('/').next().unwrap_or("input").to_string());
    if name.contains('/') || crate::contract::file_path_problem(&name).is_some() {
        return Err(format!(
            "input {spec:?}: NAME {name:?} must be one printable path component"
        ));
    }
    agentjail_jail::mount::open_input(root, &relative)
        .map_err(|e| format!("input {spec:?}: {e}"))?;
    Ok(HostInput {
        root: root.clone(),
        relative,
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_beneath_a_host_root() {
        let roots = vec!["/srv/data".to_string()];
        assert!(resolve("/etc/passwd", &roots)
            .unwrap_err()
            .contains("not under"));
        assert!(resolve("/srv/data/../x", &roots).is_err());
        assert!(resolve("srv/data/x", &roots).is_err());
        assert!(resolve("/srv/datax", &roots)
            .unwrap_err()
            .contains("not under"));
        assert!(resolve("/srv/data/x:a/b", &roots).is_err());
    }
}
