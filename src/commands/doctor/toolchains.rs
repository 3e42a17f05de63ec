//! `agentjail doctor`'s toolchain lines: for each language beside Python, whether the host
//! has the toolchain a policy's `[languages.<lang>]` runs (the Debian paths
//! `scripts/setup.sh --languages` installs), where it resolves to, and its version read from
//! the toolchain's own files (nothing is executed). None is required: a policy that runs a
//! language whose toolchain is missing is refused when it loads, with the same fix.

use super::{check, Check};
use std::path::{Path, PathBuf};

/// The fix for every missing toolchain.
const FIX: &str = "scripts/setup.sh --languages (as root; Debian packages gcc, g++, \
                   openjdk-17-jdk-headless, golang-go, rustc, nodejs)";

/// One line per language: c, cpp, java, go, rust, javascript, bash.
pub fn checks() -> Vec<Check> {
    [
        ("c", "/usr/bin/gcc", "gcc"),
        ("cpp", "/usr/bin/g++", "g++"),
        (
            "java",
            "/usr/lib/jvm/java-17-openjdk-amd64/bin/javac",
            "openjdk-17-jdk-headless",
        ),
        ("go", "/usr/bin/go", "golang-go"),
        ("rust", "/usr/bin/rustc", "rustc"),
        ("javascript", "/usr/bin/node", "nodejs"),
        ("bash", "/usr/bin/bash", "bash"),
    ]
    .into_iter()
    .map(|(lang, path, package)| toolchain(lang, path, package))
    .collect()
}

fn toolchain(lang: &str, path: &str, package: &str) -> Check {
    let control = format!("toolchain_{lang}");
    let Ok(resolved) = std::fs::canonicalize(path) else {
        return check(
            &control,
            false,
            false,
            format!("{path} is missing (Debian package {package})"),
            Some(FIX),
        );
    };
    let version = version(lang, &resolved)
        .or_else(|| dpkg_version(package))
        .unwrap_or_else(|| "version unknown".into());
    let shown = if resolved == Path::new(path) {
        path.to_string()
    } else {
        format!("{path} -> {}", resolved.display())
    };
    check(&control, true, false, format!("{shown} ({version})"), None)
}

/// The version from the toolchain's own files: gcc's `GCC: (...) X.Y.Z` in crtbegin.o of its
/// major version's directory, the JDK's `release`, Go's `VERSION`.
fn version(lang: &str, resolved: &Path) -> Option<String> {
    match lang {
        "c" | "cpp" => {
            let name = resolved.file_name()?.to_str()?;
            let major = name.rsplit('-').next()?;
            let lib = PathBuf::from("/usr/lib/gcc/x86_64-linux-gnu").join(major);
            let bytes = std::fs::read(lib.join("crtbegin.o")).ok()?;
            let at = find(&bytes, b"GCC: (")?;
            let end = bytes[at..].iter().position(|&b| b == 0)? + at;
            let text = std::str::from_utf8(&bytes[at..end]).ok()?;
            Some(format!("gcc {}", text.rsplit(' ').next()?))
        }
        "java" => {
            let home = resolved.parent()?.parent()?;
            let release = std::fs::read_to_string(home.join("release")).ok()?;
            let line = release.lines().find(|l| l.starts_with("JAVA_VERSION="))?;
            Some(format!(
                "OpenJDK {}",
                line["JAVA_VERSION=".len()..].trim_matches('"')
            ))
        }
        "go" => {
            let root = resolved.parent()?.parent()?;
            let v = std::fs::read_to_string(root.join("VERSION")).ok()?;
            Some(v.lines().next()?.trim().to_string())
        }
        _ => None,
    }
}

/// The installed version of a Debian package, from dpkg's status file.
fn dpkg_version(package: &str) -> Option<String> {
    let status = std::fs::read_to_string("/var/lib/dpkg/status").ok()?;
    let stanza = status
        .split("\n\n")
        .find(|s| s.lines().next() == Some(&format!("Package: {package}")))?;
    let v = stanza.lines().find_map(|l| l.strip_prefix("Version: "))?;
    Some(format!("{package} {v}"))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_language_has_a_line_and_a_missing_one_names_the_fix() {
        let lines = checks();
        let names: Vec<&str> = lines.iter().map(|c| c.control.as_str()).collect();
        assert_eq!(
            names,
            [
                "toolchain_c",
                "toolchain_cpp",
                "toolchain_java",
                "toolchain_go",
                "toolchain_rust",
                "toolchain_javascript",
                "toolchain_bash"
            ]
        );
        for c in &lines {
            assert!(!c.required, "{c:?}");
            assert_eq!(c.available, c.fix.is_none(), "{c:?}");
        }
        let missing = toolchain("c", "/nonexistent/agentjail-gcc", "gcc");
        assert!(!missing.available);
        assert!(missing
            .detail
            .contains("/nonexistent/agentjail-gcc is missing"));
        assert!(missing
            .fix
            .as_deref()
            .unwrap()
            .contains("scripts/setup.sh --languages"));
        // bash is essential on Debian: found, with dpkg's version, where /usr/bin/bash is
        // (usrmerge); the VM stage's minimal guest has only /bin/bash: named missing.
        let bash = lines
            .iter()
            .find(|c| c.control == "toolchain_bash")
            .unwrap();
        if std::path::Path::new("/usr/bin/bash").exists() {
            assert!(bash.available && bash.detail.contains("bash "), "{bash:?}");
        } else {
            assert!(
                !bash.available && bash.detail.contains("/usr/bin/bash is missing"),
                "{bash:?}"
            );
        }
    }
}
