//! The benign judge corpus (tests/corpus/judge/, issue 39's "How it is proven"): the
//! problems' reference solutions in each of the eight languages, every case of it a run of
//! its own through `agentjail run --policy policies/judge.toml` in judge mode
//! (`"stdin"`, `"output_mode": "text"`), as a code judge runs it. Each run must end `ok` /
//! `success`, exit 0, with the case's expected stdout (each line's trailing whitespace and
//! the trailing blank lines ignored, as judges compare), a `compile` section with status
//! `ok` for a compiled language and none for an interpreted one.
//!
//! One test per language (`cargo test --test pipeline -- judge_corpus::cpp`), each printing
//! its run count, wall time and the problems it took: ten of the thirty, a window that
//! moves with the language and the day (`chosen`), so one run covers the corpus across the
//! languages and three days cover it in each; `AGENTJAIL_JUDGE_CORPUS=all` takes every
//! problem. As root every case of a problem runs; as nobody (no memory cgroup: RLIMIT_AS
//! is the cap) the first case of every third taken problem (every fifth of all), which is
//! where a runtime that needs a large address space (the JVM, Go) shows itself. Two runs at a time, with
//! `run --cache` (a directory per user): a problem compiles once per user, and its other
//! cases run the stored compile (the compile cache), as a judge serving many tests of one
//! answer would.
//!
//! A language whose toolchain is missing from the host (the file judge.toml names for it)
//! is a loud skip, and a failure under `CI=true` (`require_feature`): the toolchains are
//! `scripts/setup.sh --languages`'s. tests/corpus/verify-bare.py runs the same solutions
//! with no jail, the corpus's own proof that each one is right.
//!
//! `judge_corpus::verdicts` runs the verdict cases (tests/corpus/judge-verdicts/<language>/
//! <case>/: a program and its `expect.json`; tests/corpus/verify-verdicts-bare.sh proves
//! each bare): a wrong answer, a runtime error, a timeout, a compile error (a syntax error for
//! Python), each ending in exactly its stop reason, exit code or signal, with its markers in
//! the stderr it names, and scored as not correct.

use crate::common::{compile_cache_dir, is_root, require_feature, run_as, shared_file, Who};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// The floor: at least this many problems for each language.
const MIN_PROBLEMS: usize = 30;

/// Runs at a time (the CI machine has two cores; each run is a jail of its own).
const THREADS: usize = 2;

/// Problems per language in a default run: a third of the corpus, every case of each (the
/// whole corpus was a quarter of the cargo test stage's CPU in CI, mostly compilers and
/// JVMs). `AGENTJAIL_JUDGE_CORPUS=all` takes every problem.
const PER_LANGUAGE: usize = 10;

/// The problems (indices into [`problems`]) this run takes in the language at `slot` of
/// [`LANGUAGES`]: all of them under `AGENTJAIL_JUDGE_CORPUS=all`; else [`PER_LANGUAGE`]
/// consecutive ones (wrapping), from an offset that moves with the language and with the
/// day (UTC), so the eight languages cover the corpus between them in one run and each
/// language all of it over three days; `AGENTJAIL_JUDGE_CORPUS_DAY=N` replays day N. The
/// test prints which it took.
fn chosen(slot: usize, total: usize) -> Vec<usize> {
    if std::env::var("AGENTJAIL_JUDGE_CORPUS").as_deref() == Ok("all") || total <= PER_LANGUAGE {
        return (0..total).collect();
    }
    let day = std::env::var("AGENTJAIL_JUDGE_CORPUS_DAY")
        .ok()
        .and_then(|d| d.parse::<usize>().ok())
        .unwrap_or_else(|| {
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            (secs / 86_400) as usize
        });
    let start = (slot + day) * PER_LANGUAGE;
    (0..PER_LANGUAGE).map(|k| (start + k) % total).collect()
}

/// (language, the one entrypoint, compiled?).
const LANGUAGES: [(&str, &str, bool); 8] = [
    ("python", "main.py", false),
    ("javascript", "main.js", false),
    ("c", "main.c", true),
    ("cpp", "main.cpp", true),
    ("java", "Main.java", true),
    ("go", "main.go", true),
    ("rust", "main.rs", true),
    ("bash", "main.sh", false),
];

fn root_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// policies/judge.toml (or the file `AGENTJAIL_CORPUS_POLICY` names, relative to the
/// repository: e.g. policies/judge-open.toml), copied where nobody can read it; (path,
/// parsed text).
fn policy() -> &'static (String, toml::Value) {
    static P: OnceLock<(String, toml::Value)> = OnceLock::new();
    P.get_or_init(|| {
        let file = std::env::var("AGENTJAIL_CORPUS_POLICY")
            .unwrap_or_else(|_| "policies/judge.toml".to_string());
        let text = std::fs::read_to_string(root_dir().join(&file))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let parsed: toml::Value = toml::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        let path = shared_file("judge-corpus-judge.toml", &text);
        (path.display().to_string(), parsed)
    })
}

/// The host file the policy runs `lang` with: the interpreter for python and javascript,
/// else argv[0] of `[languages.<lang>]`'s compile step (or of its run step when it has none).
fn toolchain_file(lang: &str) -> String {
    let p = &policy().1;
    match lang {
        "python" => p["interpreter"]["python"]
            .as_str()
            .unwrap_or("/usr/bin/python3")
            .to_string(),
        "javascript" => p
            .get("interpreter")
            .and_then(|i| i.get("node"))
            .and_then(|n| n.as_str())
            .unwrap_or("/usr/bin/node")
            .to_string(),
        _ => {
            let table = p
                .get("languages")
                .and_then(|l| l.get(lang))
                .unwrap_or_else(|| panic!("policies/judge.toml has no [languages.{lang}]"));
            let argv = table
                .get("compile")
                .and_then(|c| c.as_array())
                .filter(|c| !c.is_empty())
                .or_else(|| table.get("run").and_then(|r| r.as_array()))
                .unwrap_or_else(|| panic!("[languages.{lang}] has neither compile nor run"));
            argv[0].as_str().expect("argv[0] is a string").to_string()
        }
    }
}

struct Problem {
    name: String,
    dir: PathBuf,
    cases: Vec<(String, String)>,
}

/// Every problem of tests/corpus/judge/, in name order, with its cases.
fn problems() -> &'static Vec<Problem> {
    static P: OnceLock<Vec<Problem>> = OnceLock::new();
    P.get_or_init(|| {
        let base = root_dir().join("tests/corpus/judge");
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&base)
            .expect("tests/corpus/judge")
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        dirs.into_iter()
            .map(|dir| {
                let text = std::fs::read_to_string(dir.join("cases.json")).unwrap_or_else(|e| {
                    panic!("{}: cases.json: {e}", dir.display());
                });
                let cases: Vec<Value> = serde_json::from_str(&text).expect("cases.json parses");
                let cases = cases
                    .iter()
                    .map(|c| {
                        let field = |k: &str| c[k].as_str().expect("stdin/stdout strings");
                        (field("stdin").to_string(), field("stdout").to_string())
                    })
                    .collect();
                let name = dir.file_name().unwrap().to_string_lossy().into_owned();
                Problem { name, dir, cases }
            })
            .collect()
    })
}

/// What the judge compares: each line's trailing whitespace, and trailing blank lines, dropped.
fn normalize(s: &str) -> String {
    let mut lines: Vec<&str> = s.split('\n').map(str::trim_end).collect();
    while lines.last() == Some(&"") {
        lines.pop();
    }
    lines.join("\n")
}

struct Job<'a> {
    who: Who,
    problem: &'a Problem,
    case: usize,
    code: &'a str,
}

/// One case through `agentjail run`; `None` when it scored as correct, else why not.
fn judge(lang: &str, entrypoint: &str, compiled: bool, job: &Job<'_>) -> Option<String> {
    let (stdin, expected) = &job.problem.cases[job.case];
    let action = json!({"id": format!("{}-{}", job.problem.name, job.case), "language": lang,
                        "entrypoint": entrypoint, "code": job.code, "stdin": stdin,
                        "output_mode": "text"});
    // Each problem compiles once per user: its other cases run the stored compile.
    let cache = compile_cache_dir(job.who);
    let r = run_as(
        job.who,
        &["--policy", &policy().0, "--cache", &cache],
        &serde_json::to_vec(&action).unwrap(),
        None,
    );
    let rec = &r.record;
    let what = format!("{:?} {} case {}", job.who, job.problem.name, job.case);
    let shown = || {
        let mut short = rec.clone();
        for k in ["enforcement", "environment", "trace", "policy", "redaction"] {
            short.as_object_mut().map(|o| o.remove(k));
        }
        short.to_string()
    };
    if rec["status"] != "ok" || r.stop_reason() != "success" || r.code != 0 {
        return Some(format!(
            "{what}: not a success (exit {}): {}",
            r.code,
            shown()
        ));
    }
    let stdout = rec["execution"]["stdout"].as_str().unwrap_or("");
    if normalize(stdout) != normalize(expected) {
        return Some(format!(
            "{what}: wrong answer: stdout {:?}, expected {:?}",
            stdout.chars().take(300).collect::<String>(),
            expected.chars().take(300).collect::<String>()
        ));
    }
    match (compiled, rec.get("compile")) {
        (true, Some(c)) if c["status"] == "ok" => None,
        (true, _) => Some(format!(
            "{what}: no `compile` section with status ok: {}",
            shown()
        )),
        (false, None) => None,
        (false, Some(c)) => Some(format!("{what}: a compile section for {lang}: {c}")),
    }
}

/// The chosen problems of the corpus in `lang` ([`chosen`]): all their cases as root, the
/// first case of every fifth (of every third in a default run) as nobody (or all as the
/// current user, not root); every failure listed, then the test fails.
fn run_language(lang: &str) {
    let slot = LANGUAGES.iter().position(|l| l.0 == lang).unwrap();
    let (_, entrypoint, compiled) = LANGUAGES[slot];
    let tool = toolchain_file(lang);
    if !require_feature(
        &format!("the {lang} toolchain {tool} (scripts/setup.sh --languages)"),
        Path::new(&tool).exists(),
    ) {
        return;
    }
    let codes: Vec<String> = problems()
        .iter()
        .map(|p| {
            std::fs::read_to_string(p.dir.join(entrypoint))
                .unwrap_or_else(|e| panic!("{}/{entrypoint}: {e}", p.name))
        })
        .collect();
    let picked = chosen(slot, problems().len());
    let every = if picked.len() == problems().len() {
        5
    } else {
        3
    };
    let mut jobs = Vec::new();
    let whos = if is_root() {
        vec![Who::Root, Who::Nobody]
    } else {
        vec![Who::Current]
    };
    for who in whos {
        for (n, &i) in picked.iter().enumerate() {
            let (p, code) = (&problems()[i], &codes[i]);
            // As nobody, the first case of every fifth (third) problem: a runtime that needs
            // a large address space shows itself at its first run (tests/pipeline/languages.rs
            // and the attacks per language run every language as nobody too).
            if who == Who::Nobody && n % every != 0 {
                continue;
            }
            let cases = if who == Who::Nobody { 1 } else { p.cases.len() };
            for case in 0..cases {
                jobs.push(Job {
                    who,
                    problem: p,
                    case,
                    code,
                });
            }
        }
    }
    let total = jobs.len();
    let queue = Mutex::new(jobs);
    let failures = Mutex::new(Vec::new());
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| loop {
                let job = queue.lock().unwrap().pop();
                let Some(job) = job else { break };
                if let Some(f) = judge(lang, entrypoint, compiled, &job) {
                    failures.lock().unwrap().push(f);
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    let names: Vec<&str> = picked
        .iter()
        .map(|&i| problems()[i].name.as_str())
        .collect();
    eprintln!(
        "judge corpus: {lang}: {total} runs over {} of {} problems in {:.1} s, {} failed: {}",
        picked.len(),
        problems().len(),
        t0.elapsed().as_secs_f64(),
        failures.len(),
        names.join(" ")
    );
    let shown: Vec<&str> = failures.iter().take(40).map(String::as_str).collect();
    assert!(
        failures.is_empty(),
        "{lang}: {} of {total} runs did not score as correct (the first {} below):\n{}",
        failures.len(),
        shown.len(),
        shown.join("\n")
    );
}

/// One verdict case: `expect.json` beside the program (tests/corpus/verify-verdicts-bare.sh
/// documents the fields); `None` when the record says what it expects, else why not.
fn verdict(who: Who, dir: &Path) -> Option<String> {
    let lang = dir.parent()?.file_name()?.to_str()?.to_string();
    let name = format!("{lang}/{}", dir.file_name()?.to_string_lossy());
    let Some(&(_, entrypoint, compiled)) = LANGUAGES.iter().find(|l| l.0 == lang) else {
        return Some(format!("{name}: not a language of the corpus"));
    };
    let e: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("expect.json")).expect("expect.json"),
    )
    .expect("expect.json parses");
    let code = std::fs::read_to_string(dir.join(entrypoint)).expect("the case's program");
    let mut action = json!({"id": name.replace('/', "-"), "language": lang,
                            "entrypoint": entrypoint, "code": code, "stdin": e["stdin"],
                            "output_mode": "text"});
    if let Some(t) = e["run_timeout"].as_u64() {
        action["policy_hints"] = json!({"exec_timeout_seconds": t});
    }
    let r = run_as(
        who,
        &["--policy", &policy().0],
        &serde_json::to_vec(&action).unwrap(),
        None,
    );
    let rec = &r.record;
    let mut wrong = Vec::new();
    if r.stop_reason() != e["stop_reason"] {
        wrong.push(format!(
            "stop_reason {:?}, expected {}",
            r.stop_reason(),
            e["stop_reason"]
        ));
    }
    let exec = &rec["execution"];
    for k in ["exit_code", "signal"] {
        if !e[k].is_null() && exec[k] != e[k] {
            wrong.push(format!("{k} {}, expected {}", exec[k], e[k]));
        }
    }
    let stdout = exec["stdout"].as_str().unwrap_or("");
    if let Some(want) = e["stdout"].as_str() {
        if stdout != want {
            wrong.push(format!("stdout {stdout:?}, expected {want:?}"));
        }
    }
    let correct = r.stop_reason() == "success"
        && normalize(stdout) == normalize(e["expected_stdout"].as_str().unwrap_or(""));
    if Some(correct) != e["correct"].as_bool() {
        wrong.push(format!(
            "scored correct={correct}, expected {}",
            e["correct"]
        ));
    }
    let (stderr, which) = if e["stderr_in"] == "compile" {
        (
            rec["compile"]["stderr"].as_str().unwrap_or(""),
            "compile.stderr",
        )
    } else {
        (exec["stderr"].as_str().unwrap_or(""), "execution.stderr")
    };
    // A static check's refusal runs nothing, so there is no stderr in the record (/run_code
    // writes the interpreter's message there: the SDK test checks it): the refusal names
    // its rule among the violations instead.
    let refused = r
        .stop_reason()
        .strip_prefix("policy_block:static_policy_violation:");
    if let Some(rule) = refused {
        let violations = rec["decision"]["violations"].as_array();
        if !violations.into_iter().flatten().any(|v| v["rule"] == rule) {
            wrong.push(format!("no violation {rule:?} in decision.violations"));
        }
    }
    let markers = e["stderr_contains"]
        .as_array()
        .filter(|_| refused.is_none());
    for m in markers.into_iter().flatten() {
        let m = m.as_str().unwrap_or("");
        if !stderr.contains(m) {
            wrong.push(format!("{which} lacks {m:?}: {stderr:?}"));
        }
    }
    if compiled && rec.get("compile").is_none() {
        wrong.push("no compile section".to_string());
    }
    if wrong.is_empty() {
        return None;
    }
    let mut short = rec.clone();
    for k in ["enforcement", "environment", "trace", "policy", "redaction"] {
        short.as_object_mut().map(|o| o.remove(k));
    }
    Some(format!(
        "{who:?} {name}: {}; record {short}",
        wrong.join("; ")
    ))
}

/// Every verdict case of tests/corpus/judge-verdicts/ through `agentjail run`, as root (or
/// the current user): each must end as its `expect.json` says. A case whose language's
/// toolchain is missing is a loud skip (a failure under `CI=true`).
#[test]
fn verdicts() {
    let base = root_dir().join("tests/corpus/judge-verdicts");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&base)
        .expect("tests/corpus/judge-verdicts")
        .map(|l| l.unwrap().path())
        .filter(|l| l.is_dir())
        .flat_map(|l| std::fs::read_dir(l).expect("a language directory"))
        .map(|c| c.unwrap().path())
        .filter(|c| c.join("expect.json").is_file())
        .collect();
    cases.sort();
    let verdict_langs: std::collections::BTreeSet<String> = cases
        .iter()
        .filter_map(|c| Some(c.parent()?.file_name()?.to_str()?.to_string()))
        .collect();
    let mut present = std::collections::BTreeSet::new();
    for lang in &verdict_langs {
        let tool = toolchain_file(lang);
        if require_feature(
            &format!("the {lang} toolchain {tool} (scripts/setup.sh --languages)"),
            Path::new(&tool).exists(),
        ) {
            present.insert(lang.clone());
        }
    }
    cases.retain(|c| {
        let lang = c
            .parent()
            .and_then(|l| l.file_name())
            .and_then(|l| l.to_str());
        lang.is_some_and(|l| present.contains(l))
    });
    let who = if is_root() { Who::Root } else { Who::Current };
    let total = cases.len();
    let queue = Mutex::new(cases);
    let failures = Mutex::new(Vec::new());
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| loop {
                let case = queue.lock().unwrap().pop();
                let Some(case) = case else { break };
                if let Some(f) = verdict(who, &case) {
                    failures.lock().unwrap().push(f);
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    eprintln!(
        "judge corpus: verdicts: {total} cases in {:.1} s, {} failed",
        t0.elapsed().as_secs_f64(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {total} verdict cases did not end as expected:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The corpus itself: at least [`MIN_PROBLEMS`] problems, each with a statement, three cases
/// or more, and a solution in every language.
#[test]
fn corpus_is_complete() {
    let ps = problems();
    let mut missing = Vec::new();
    for p in ps {
        if !p.dir.join("problem.md").is_file() {
            missing.push(format!("{}: problem.md", p.name));
        }
        if p.cases.len() < 3 {
            missing.push(format!("{}: {} cases", p.name, p.cases.len()));
        }
        for (_, entrypoint, _) in LANGUAGES {
            if !p.dir.join(entrypoint).is_file() {
                missing.push(format!("{}: {entrypoint}", p.name));
            }
        }
    }
    assert!(missing.is_empty(), "incomplete problems: {missing:?}");
    assert!(
        ps.len() >= MIN_PROBLEMS,
        "{} problems, the issue asks for {MIN_PROBLEMS} per language",
        ps.len()
    );
}

#[test]
fn python() {
    run_language("python");
}

#[test]
fn javascript() {
    run_language("javascript");
}

#[test]
fn c() {
    run_language("c");
}

#[test]
fn cpp() {
    run_language("cpp");
}

#[test]
fn java() {
    run_language("java");
}

#[test]
fn go() {
    run_language("go");
}

#[test]
fn rust() {
    run_language("rust");
}

#[test]
fn bash() {
    run_language("bash");
}
