//! Which Python the policy's interpreter is, found at policy load without running it, and
//! whether agentjail's module tables hold for it and for the packages the policy allows.
//!
//! Running the interpreter to ask would execute host code (a `sitecustomize`, a `.pth`
//! file, a wrapper script) with agentjail's privileges before any jail exists. What the
//! file system says is enough:
//!
//! 1. the path is followed link by link (`/usr/bin/python3 -> python3.11`), and the file it
//!    ends at must be an executable ELF binary (a `#!` script such as a pyenv shim is
//!    refused: name the build's own `bin/python3.N`);
//! 2. the version is read from the names on that chain (`python3.N`), or, for a build whose
//!    binary is named `python3` or `python`, from the one `lib/python3.N` directory of the
//!    prefix beside its `bin/` (a relocated or pyenv build);
//! 3. that prefix must hold the standard library of that version (`lib/python3.N/os.py`,
//!    the landmark CPython itself looks for): a binary called `python3.12` with no 3.12
//!    standard library beside it is not a Python agentjail can vouch for.
//!
//! A policy that names `interpreter.python_version` must name what is found. The checker
//! then parses for that version and judges with its tables (`check::stdlib::Modules`),
//! and a version without tables is refused here, not judged with another version's.
//!
//! The third-party package tables hold for one Python version and exact package versions
//! (`check::stdlib::PACKAGE_TABLE`). A policy allowing one of those packages is loaded only
//! when the interpreter is that version and the package importable from the jail's binds is
//! that version, read from its distribution metadata (`numpy-1.24.2.egg-info`,
//! `pandas-1.5.3.dist-info`) in the directories the interpreter imports from. The probe is
//! cached per process (a directory listing per import directory).

use agentjail_check::stdlib::{self, PACKAGE_TABLE};
use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The regeneration command named by errors about the tables.
pub const REGENERATE: &str = "scripts/gen-stdlib-graph.py";

/// A Python interpreter, as found on the file system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// `3.N`.
    pub version: String,
    /// How it was found, for the record and `policy show`.
    pub how: String,
    /// The installation prefix (`/usr`, `/opt/agentjail-py/3.12`).
    pub prefix: String,
    /// The standard library directory (`<prefix>/lib/python3.N`).
    pub stdlib: String,
    /// The file the interpreter path resolves to.
    pub resolved: String,
    /// The virtual environment the path is in (a `pyvenv.cfg` beside it or one level up, as
    /// CPython looks for it), and whether it sees the installation's packages too
    /// (`include-system-site-packages = true`).
    pub venv: Option<(String, bool)>,
}

/// Why an interpreter is refused: the policy key (and list item) it is about, what, and
/// how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub key: &'static str,
    pub item: Option<String>,
    pub message: String,
    pub hint: String,
}

/// A refusal about `interpreter.python`.
fn refused(message: impl Into<String>, hint: impl Into<String>) -> Refused {
    Refused {
        key: "interpreter.python",
        item: None,
        message: message.into(),
        hint: hint.into(),
    }
}

/// A refusal about `package` in `check.allowed_imports`.
fn refused_package(package: &str, message: impl Into<String>, hint: impl Into<String>) -> Refused {
    Refused {
        key: "check.allowed_imports",
        item: Some(package.to_string()),
        message: message.into(),
        hint: hint.into(),
    }
}

/// `python3.N` (also `python3.N` followed by an ABI suffix such as `d`, never anything else)
/// → `3.N`.
fn version_in_name(name: &str) -> Option<String> {
    let rest = name.strip_prefix("python3.")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let suffix = &rest[digits.len()..];
    if digits.is_empty() || digits.len() > 2 || !matches!(suffix, "" | "d" | "t" | "m") {
        return None;
    }
    Some(format!("3.{}", digits.parse::<u32>().ok()?))
}

/// The link chain of `path`: every path visited, the last one not a symlink.
fn link_chain(path: &Path) -> Result<Vec<PathBuf>, Refused> {
    let mut chain = vec![path.to_path_buf()];
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        let meta = std::fs::symlink_metadata(&current).map_err(|e| {
            refused(
                format!("{}: {e}", current.display()),
                "give the path of an installed Python interpreter, e.g. /usr/bin/python3",
            )
        })?;
        if !meta.file_type().is_symlink() {
            return Ok(chain);
        }
        let target = std::fs::read_link(&current).map_err(|e| {
            refused(
                format!("{}: {e}", current.display()),
                "check the link and its permissions",
            )
        })?;
        current = match current.parent() {
            Some(dir) if target.is_relative() => dir.join(target),
            _ => target,
        };
        chain.push(current.clone());
    }
    Err(refused(
        format!("{}: too many levels of symbolic links", path.display()),
        "name the interpreter's file directly",
    ))
}

/// The file's first bytes say it is an ELF executable.
fn is_elf(path: &Path) -> std::io::Result<bool> {
    use std::io::Read;
    let mut magic = [0u8; 4];
    let mut f = std::fs::File::open(path)?;
    let n = f.read(&mut magic)?;
    Ok(n == 4 && magic == *b"\x7fELF")
}

fn display_chain(chain: &[PathBuf]) -> String {
    let mut out = chain[0].display().to_string();
    for (prev, next) in chain.iter().zip(&chain[1..]) {
        let shown = if prev.parent() == next.parent() {
            next.file_name().map_or_else(
                || next.display().to_string(),
                |n| n.to_string_lossy().into(),
            )
        } else {
            next.display().to_string()
        };
        out.push_str(&format!(" -> {shown}"));
    }
    out
}

/// The interpreter's real file is an executable ELF file (a script, such as a pyenv shim,
/// runs another program).
fn check_executable(interpreter: &str, file: &Path) -> Result<(), Refused> {
    let meta = std::fs::metadata(file)
        .map_err(|e| refused(format!("{}: {e}", file.display()), "check the path"))?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err(refused(
            format!(
                "{interpreter} is not a Python interpreter: {} is not an executable file",
                file.display()
            ),
            "give the path of an installed Python 3 interpreter, e.g. /usr/bin/python3",
        ));
    }
    match is_elf(file) {
        Ok(true) => {}
        Ok(false) => {
            return Err(refused(
                format!(
                    "{interpreter} is not a Python interpreter agentjail can verify: {} is not an ELF executable (a script, such as a pyenv shim, runs another program)",
                    file.display()
                ),
                "name the interpreter binary itself, e.g. $(pyenv root)/versions/3.12.1/bin/python3.12",
            ))
        }
        Err(e) => {
            return Err(refused(
                format!("{}: {e}", file.display()),
                "check the file's permissions",
            ))
        }
    }
    Ok(())
}

/// The version of the one standard library under `lib`, for an interpreter named plain
/// `python` or `python3`.
fn only_stdlib_in(interpreter: &str, lib: &Path) -> Result<(String, String), Refused> {
    let has_stdlib = |version: &str| lib.join(format!("python{version}")).join("os.py").is_file();
    let mut versions: Vec<String> = std::fs::read_dir(lib)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| version_in_name(e.file_name().to_str()?))
                .filter(|v| has_stdlib(v))
                .collect()
        })
        .unwrap_or_default();
    versions.sort();
    versions.dedup();
    match versions.as_slice() {
        [one] => Ok((one.clone(), format!("the one standard library in {}", lib.display()))),
        [] => Err(refused(
                format!(
                    "{interpreter} is not a Python interpreter: neither its name nor {} (no lib/python3.N/os.py) says which Python it is",
                    lib.display()
                ),
                "give the path of an installed Python 3 interpreter, e.g. /usr/bin/python3",
            )),
        many => Err(refused(
                format!(
                    "{interpreter}: cannot tell which Python it is: {} holds the standard libraries of {}",
                    lib.display(),
                    many.join(", ")
                ),
                "name the versioned binary (bin/python3.N) of the installation the jobs should run",
            )),
    }
}

/// Find which Python `interpreter` is, without running it.
pub fn detect(interpreter: &str) -> Result<Found, Refused> {
    let chain = link_chain(Path::new(interpreter))?;
    let file = chain.last().cloned().unwrap_or_else(|| interpreter.into());
    // The prefix is what the final file's directory is in, with `..` resolved by the kernel.
    let file = std::fs::canonicalize(&file).unwrap_or(file);
    check_executable(interpreter, &file)?;
    let bin = file.parent().unwrap_or(Path::new("/"));
    let prefix = bin.parent().unwrap_or(Path::new("/")).to_path_buf();
    let lib = prefix.join("lib");
    let has_stdlib = |version: &str| lib.join(format!("python{version}")).join("os.py").is_file();
    // The names on the chain, the real file's first.
    let named: Option<(String, String)> = chain.iter().rev().find_map(|p| {
        let name = p.file_name()?.to_str()?;
        version_in_name(name).map(|v| (v, name.to_string()))
    });
    let (version, how) = match named {
        Some((version, name)) => {
            if !has_stdlib(&version) {
                return Err(refused(
                    format!(
                        "{interpreter} is not a Python interpreter agentjail can verify: it is named {name}, but {} has no Python {version} standard library (os.py)",
                        lib.join(format!("python{version}")).display()
                    ),
                    "name a CPython installation's own binary (its prefix holds lib/python3.N)",
                ));
            }
            (version, format!("file name {name}"))
        }
        None if !matches!(
            file.file_name().and_then(|n| n.to_str()),
            Some("python" | "python3")
        ) =>
        {
            return Err(refused(
                format!(
                    "{interpreter} is not a Python interpreter: it resolves to {}, whose name is not python, python3 or python3.N",
                    file.display()
                ),
                "give the path of an installed Python 3 interpreter, e.g. /usr/bin/python3",
            ))
        }
        None => only_stdlib_in(interpreter, &lib)?,
    };
    let stdlib = lib.join(format!("python{version}"));
    let venv = venv_of(Path::new(interpreter));
    let venv_note = match &venv {
        Some((dir, system)) => format!(
            ", virtual environment {dir}{}",
            if *system {
                " (with the system's packages)"
            } else {
                ""
            }
        ),
        None => String::new(),
    };
    Ok(Found {
        how: format!(
            "detected from {}: {how}, standard library {}{venv_note}",
            display_chain(&chain),
            stdlib.display()
        ),
        version,
        prefix: prefix.display().to_string(),
        stdlib: stdlib.display().to_string(),
        resolved: file.display().to_string(),
        venv,
    })
}

/// The virtual environment `interpreter` (as named, before links are followed) belongs to:
/// CPython reads `pyvenv.cfg` beside the executable or one directory up.
fn venv_of(interpreter: &Path) -> Option<(String, bool)> {
    let bin = interpreter.parent()?;
    let cfg = [bin.join("pyvenv.cfg"), bin.parent()?.join("pyvenv.cfg")]
        .into_iter()
        .find(|c| c.is_file())?;
    let text = std::fs::read_to_string(&cfg).unwrap_or_default();
    let system = text.lines().any(|l| {
        let mut kv = l.splitn(2, '=');
        kv.next().map(str::trim) == Some("include-system-site-packages")
            && kv.next().map(|v| v.trim().eq_ignore_ascii_case("true")) == Some(true)
    });
    Some((cfg.parent()?.display().to_string(), system))
}

/// The directories an interpreter installed at `found` imports packages from when `site`
/// runs, in sys.path order: a virtual environment's own site-packages first (then the
/// installation's only when the venv includes them), the installation's (Debian's layout for
/// /usr, `site-packages` otherwise).
pub fn package_dirs(found: &Found) -> Vec<String> {
    let v = &found.version;
    let mut dirs = Vec::new();
    if let Some((venv, system)) = &found.venv {
        dirs.push(format!("{venv}/lib/python{v}/site-packages"));
        if !system {
            return dirs;
        }
    }
    dirs.extend(installation_package_dirs(found));
    dirs
}

fn installation_package_dirs(found: &Found) -> Vec<String> {
    let v = &found.version;
    if found.prefix == "/usr" {
        vec![
            format!("/usr/local/lib/python{v}/dist-packages"),
            "/usr/lib/python3/dist-packages".into(),
            format!("/usr/lib/python{v}/dist-packages"),
        ]
    } else {
        vec![format!("{}/site-packages", found.stdlib)]
    }
}

/// The version of `package` the first directory of `dirs` holding it provides, from its
/// distribution metadata; `Ok(None)` when no directory has the package.
fn installed_version(package: &str, dirs: &[String]) -> Result<Option<(String, String)>, String> {
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let names: Vec<String> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect();
        let has_package = names
            .iter()
            .any(|n| n == package || n == &format!("{package}.py"));
        if !has_package {
            continue;
        }
        let prefix = format!("{}-", package.to_lowercase());
        let mut versions: Vec<String> = names
            .iter()
            .filter_map(|n| {
                let stem = n
                    .strip_suffix(".dist-info")
                    .or_else(|| n.strip_suffix(".egg-info"))?;
                let lower = stem.to_lowercase();
                let rest = lower.strip_prefix(&prefix)?;
                let version = rest.split('.').all(|part| {
                    !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric())
                });
                version.then(|| stem[prefix.len()..].to_string())
            })
            .collect();
        versions.sort();
        versions.dedup();
        return match versions.as_slice() {
            [one] => Ok(Some((one.clone(), dir.clone()))),
            [] => Err(format!(
                "{dir}/{package} has no distribution metadata ({package}-VERSION.dist-info or .egg-info): its version cannot be told"
            )),
            many => Err(format!(
                "{dir} holds metadata of several {package} versions ({})",
                many.join(", ")
            )),
        };
    }
    Ok(None)
}

/// [`installed_version`], cached per process.
fn installed_version_cached(
    package: &str,
    dirs: &[String],
) -> Result<Option<(String, String)>, String> {
    type Cache = Mutex<HashMap<String, Result<Option<(String, String)>, String>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let key = format!("{package}\0{}", dirs.join("\0"));
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(hit) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return hit;
    }
    let got = installed_version(package, dirs);
    if let Ok(mut c) = cache.lock() {
        c.insert(key, got.clone());
    }
    got
}

/// Whether the module tables hold for `found` and for the third-party packages among
/// `allowed_imports`, importable from `dirs` (the package directories the jail can see).
pub fn tables_hold(
    found: &Found,
    allowed_imports: &[String],
    dirs: &[String],
) -> Result<(), Refused> {
    if stdlib::stdlib_table(&found.version).is_none() {
        return Err(refused(
            format!(
                "the interpreter is Python {} ({}); agentjail's checker has module tables for Python {} only",
                found.version,
                found.how,
                stdlib::supported_versions().join(", ")
            ),
            format!(
                "run the jobs with one of those versions, or generate a table for {} with {REGENERATE} (and rebuild)",
                found.version
            ),
        ));
    }
    for (package, table_version) in PACKAGE_TABLE.versions {
        let allowed = allowed_imports
            .iter()
            .any(|m| m.split('.').next() == Some(package));
        if !allowed {
            continue;
        }
        let regenerate = format!(
            "regenerate the tables on this host with `/usr/bin/python3 {REGENERATE}` and rebuild agentjail, or remove {package} from check.allowed_imports"
        );
        if found.version != PACKAGE_TABLE.python {
            return Err(refused_package(
                package,
                format!(
                    "{package} is allowed, but agentjail's {package} table holds for Python {} ({}) and the interpreter is Python {}",
                    PACKAGE_TABLE.python, PACKAGE_TABLE.built_from, found.version
                ),
                regenerate,
            ));
        }
        match installed_version_cached(package, dirs) {
            Ok(Some((version, _))) if version == *table_version => {}
            Ok(Some((version, dir))) => {
                return Err(refused_package(
                package,
                    format!(
                        "{package} is allowed, but the installed {package} is {version} ({dir}) and agentjail's table was generated for {package} {table_version}: the checker would judge it with another version's module graph"
                    ),
                    regenerate,
                ))
            }
            Ok(None) => {
                return Err(refused_package(
                package,
                    format!(
                        "{package} is allowed, but no {package} is installed where the jail's interpreter imports from ({})",
                        dirs.join(", ")
                    ),
                    format!("install {package} {table_version}, or remove it from check.allowed_imports"),
                ))
            }
            Err(why) => return Err(refused_package(package, why, regenerate)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_in_names() {
        assert_eq!(version_in_name("python3.11").as_deref(), Some("3.11"));
        assert_eq!(version_in_name("python3.13t").as_deref(), Some("3.13"));
        assert_eq!(version_in_name("python3.12-config"), None);
        assert_eq!(version_in_name("python3"), None);
        assert_eq!(version_in_name("python3.x"), None);
    }

    fn tree(dir: &Path, bin: &str, stdlib: Option<&str>, elf: bool) -> PathBuf {
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        if let Some(v) = stdlib {
            let lib = dir.join(format!("lib/python{v}"));
            std::fs::create_dir_all(&lib).unwrap();
            std::fs::write(lib.join("os.py"), "").unwrap();
        }
        let exe = dir.join("bin").join(bin);
        let body: &[u8] = if elf {
            b"\x7fELF\x02\x01\x01"
        } else {
            b"#!/bin/sh\n"
        };
        std::fs::write(&exe, body).unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        exe
    }

    #[test]
    fn detects_by_name_and_by_the_stdlib_beside_bin() {
        let d = tempfile::tempdir().unwrap();
        let exe = tree(&d.path().join("a"), "python3.12", Some("3.12"), true);
        std::os::unix::fs::symlink("python3.12", d.path().join("a/bin/python3")).unwrap();
        let f = detect(d.path().join("a/bin/python3").to_str().unwrap()).unwrap();
        assert_eq!(f.version, "3.12");
        assert!(f.how.contains("python3 -> python3.12"), "{}", f.how);
        assert_eq!(
            f.resolved,
            exe.canonicalize().unwrap().display().to_string()
        );
        // A relocated build whose binary says nothing: the one stdlib beside bin/.
        tree(&d.path().join("b"), "python", Some("3.10"), true);
        let f = detect(d.path().join("b/bin/python").to_str().unwrap()).unwrap();
        assert_eq!(f.version, "3.10");
        assert!(f.how.contains("the one standard library"), "{}", f.how);
    }

    #[test]
    fn refuses_what_is_not_python() {
        let d = tempfile::tempdir().unwrap();
        let no_stdlib = tree(&d.path().join("a"), "python3.12", None, true);
        let e = detect(no_stdlib.to_str().unwrap()).unwrap_err();
        assert!(
            e.message.contains("no Python 3.12 standard library"),
            "{e:?}"
        );
        let script = tree(&d.path().join("b"), "python3.12", Some("3.12"), false);
        let e = detect(script.to_str().unwrap()).unwrap_err();
        assert!(e.message.contains("not an ELF executable"), "{e:?}");
        let e = detect("/bin/sh").unwrap_err();
        assert!(e.message.contains("not a Python interpreter"), "{e:?}");
        let e = detect("/nonexistent/python3").unwrap_err();
        assert!(e.message.contains("/nonexistent/python3"), "{e:?}");
        tree(&d.path().join("c"), "python", Some("3.10"), true);
        tree(&d.path().join("c"), "python", Some("3.12"), true);
        let e = detect(d.path().join("c/bin/python").to_str().unwrap()).unwrap_err();
        assert!(e.message.contains("3.10, 3.12"), "{e:?}");
    }

    #[test]
    fn a_virtual_environment_has_its_own_packages() {
        let d = tempfile::tempdir().unwrap();
        tree(&d.path().join("py"), "python3.12", Some("3.12"), true);
        let venv = d.path().join("venv");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::os::unix::fs::symlink(d.path().join("py/bin/python3.12"), venv.join("bin/python3"))
            .unwrap();
        std::fs::write(
            venv.join("pyvenv.cfg"),
            "home = /x\ninclude-system-site-packages = false\n",
        )
        .unwrap();
        let f = detect(venv.join("bin/python3").to_str().unwrap()).unwrap();
        assert_eq!(f.version, "3.12");
        assert!(f.how.contains("virtual environment"), "{}", f.how);
        let site = format!("{}/lib/python3.12/site-packages", venv.display());
        assert_eq!(package_dirs(&f), std::slice::from_ref(&site));
        std::fs::write(
            venv.join("pyvenv.cfg"),
            "include-system-site-packages = true\n",
        )
        .unwrap();
        let f = detect(venv.join("bin/python3").to_str().unwrap()).unwrap();
        let dirs = package_dirs(&f);
        assert_eq!(dirs[0], site);
        assert_eq!(dirs.len(), 2, "{dirs:?}");
    }

    #[test]
    fn package_versions_come_from_metadata() {
        let d = tempfile::tempdir().unwrap();
        let first = d.path().join("first");
        let second = d.path().join("second");
        std::fs::create_dir_all(second.join("numpy")).unwrap();
        std::fs::create_dir_all(second.join("numpy-1.24.2.egg-info")).unwrap();
        std::fs::create_dir_all(&first).unwrap();
        let dirs = vec![first.display().to_string(), second.display().to_string()];
        let got = installed_version("numpy", &dirs).unwrap().unwrap();
        assert_eq!(got.0, "1.24.2");
        // The first directory that has the package is the one Python imports.
        std::fs::create_dir_all(first.join("numpy")).unwrap();
        std::fs::create_dir_all(first.join("numpy-1.26.4.dist-info")).unwrap();
        assert_eq!(
            installed_version("numpy", &dirs).unwrap().unwrap().0,
            "1.26.4"
        );
        assert_eq!(installed_version("pandas", &dirs).unwrap(), None);
        std::fs::create_dir_all(first.join("pandas")).unwrap();
        assert!(installed_version("pandas", &dirs).is_err());
        let found = Found {
            version: PACKAGE_TABLE.python.into(),
            how: "test".into(),
            prefix: "/x".into(),
            stdlib: "/x/lib".into(),
            resolved: "/x/bin/python".into(),
            venv: None,
        };
        let e = tables_hold(&found, &["numpy".into()], &dirs).unwrap_err();
        assert!(
            e.message.contains("1.26.4") && e.hint.contains(REGENERATE),
            "{e:?}"
        );
        let later = Found {
            version: "3.12".into(),
            ..found.clone()
        };
        let e = tables_hold(&later, &["numpy".into()], &dirs).unwrap_err();
        assert!(e.message.contains("Python 3.12"), "{e:?}");
        assert!(tables_hold(&later, &["json".into()], &dirs).is_ok());
        let old = Found {
            version: "3.9".into(),
            ..found
        };
        let e = tables_hold(&old, &["json".into()], &dirs).unwrap_err();
        assert!(e.message.contains("3.10, 3.11, 3.12, 3.13"), "{e:?}");
    }
}
