//! Running corpus programs under the host's CPython, outside any jail, to prove that a
//! hostile program really reaches what its comment says (it only prints) and that a
//! benign one really works. Only ever run programs from this repository's tests.

use std::io::Write;
use std::process::{Command, Stdio};

/// The interpreter every policy names.
pub const PYTHON: &str = "/usr/bin/python3";

/// Where scripts/setup-pythons.sh copies the pyenv builds of 3.10 to 3.13.
pub const TEST_PYTHONS: &str = "/opt/agentjail-py";

/// The copy of Python `version` made by scripts/setup-pythons.sh, when it is there.
pub fn opt_python(version: &str) -> Option<std::path::PathBuf> {
    let dir = std::path::Path::new(TEST_PYTHONS).join(version);
    let exe = dir.join(format!("bin/python{version}"));
    (dir.join(".agentjail-source").is_file() && exe.is_file()).then_some(exe)
}

/// Whether the interpreter with `args` imports `module`: asked once per pair and remembered
/// (a probe of numpy or pandas is a second of CPU, and the data corpus asked it before each
/// of its fifty programs).
fn importable(args: &[&str], module: &str) -> bool {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    // Keyed by the arguments and the module, one string: "-I -S|numpy".
    static SEEN: OnceLock<Mutex<HashMap<String, bool>>> = OnceLock::new();
    let key = format!("{}|{module}", args.join(" "));
    let seen = SEEN.get_or_init(Default::default);
    if let Some(&known) = seen.lock().unwrap().get(&key) {
        return known;
    }
    let ok = Command::new(PYTHON)
        .args(args)
        .args(["-c", &format!("import {module}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    seen.lock().unwrap().insert(key, ok);
    ok
}

/// What a run printed.
pub struct Run {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Run `code` with `args` before the script (e.g. `["-I", "-S"]`), in `dir` (a temporary
/// directory that is also HOME), with `AJ_MARKER=canary-7f3e` in the environment so a
/// program that prints the environment can be recognised. `None` (and a loud note) when
/// the interpreter is missing or cannot import `needs`.
pub fn run(args: &[&str], code: &str, dir: &std::path::Path, needs: &[&str]) -> Option<Run> {
    if !std::path::Path::new(PYTHON).exists() {
        eprintln!("SKIPPED the CPython run: {PYTHON} is missing");
        return None;
    }
    for module in needs {
        if !importable(args, module) {
            eprintln!("SKIPPED the CPython run: {PYTHON} {args:?} cannot import {module}");
            return None;
        }
    }
    let script = dir.join("main.py");
    let mut file = std::fs::File::create(&script).expect("create main.py");
    file.write_all(code.as_bytes()).expect("write main.py");
    let out = Command::new(PYTHON)
        .args(args)
        .arg(&script)
        .current_dir(dir)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", dir)
        .env("LANG", "C.UTF-8")
        .env("MPLBACKEND", "Agg")
        .env("AJ_MARKER", "canary-7f3e")
        .stdin(Stdio::null())
        .output()
        .expect("run python3");
    Some(Run {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}
