//! `agentjail doctor`'s toolchain lines: for each language beside Python, whether the host
//! has the toolchain a policy's `[languages.<lang>]` runs (the Debian paths
//! `scripts/setup.sh --languages` installs), where it resolves to, and its version read from
//! the toolchain's own files (nothing is executed). None is required: a policy that runs a
//! language whose toolchain is missing is refused when it loads, with the same fix.

use super::{check, Check};
use agentjail_engine::policy::toolchain::{dpkg_version, version_of};
use std::path::Path;

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
    // The loader's own reading of the version (policy::toolchain), node's from its package.
    let found = match lang {
        "javascript" => dpkg_version(package).unwrap_or_else(|| "unknown".into()),
        _ => version_of(lang, &resolved.to_string_lossy()),
    };
    let version = match lang {
        "c" | "cpp" => format!("gcc {found}"),
        "java" => format!("OpenJDK {found}"),
        "go" => found,
        _ => format!("{package} {found}"),
    };
    let shown = if resolved == Path::new(path) {
        path.to_string()
    } else {
        format!("{path} -> {}", resolved.display())
    };
    check(&control, true, false, format!("{shown} ({version})"), None)
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
