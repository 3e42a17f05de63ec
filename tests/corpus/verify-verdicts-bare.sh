#!/usr/bin/env bash
# Runs every verdict case under tests/corpus/judge-verdicts/<language>/<verdict>/ BARE on the
# host (no jail) and checks that the program really does what its expect.json says: a wrong
# answer exits 0 printing `stdout` (which differs from `expected_stdout`), a runtime error
# exits with `exit_code` or dies of `signal`, a timeout is still running after `run_timeout`
# seconds, a compile error fails to compile with `stderr_contains` in the compiler's message.
# What the jail and /run_code report for each (`stop_reason`, `sandboxfusion*`) is the
# harness's to check; this proves the cases themselves. Same toolchains and flags as
# tests/corpus/verify-bare.py. Exit 0 only when every case behaves as described.
#
#   tests/corpus/verify-verdicts-bare.sh [CASE_DIR ...]   (default: every case)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ "$#" -eq 0 ]; then set -- "$here"/judge-verdicts/*/*/; fi
exec python3 - "$@" <<'PY'
import json, os, shutil, signal, subprocess, sys, tempfile

ENTRY = {"python": "main.py", "javascript": "main.js", "c": "main.c", "cpp": "main.cpp",
         "java": "Main.java", "go": "main.go", "rust": "main.rs", "bash": "main.sh"}
COMPILE = {
    "c": ["gcc", "-std=c11", "-O2", "-pipe", "-o", "main", "main.c", "-lm"],
    "cpp": ["g++", "-std=c++17", "-O2", "-pipe", "-o", "main", "main.cpp"],
    "java": ["javac", "-d", ".", "Main.java"],
    "go": ["go", "build", "-o", "main", "main.go"],
    "rust": ["/usr/bin/rustc", "--edition", "2021", "-O", "-o", "main", "main.rs"],
}
RUN = {"python": ["python3", "main.py"], "javascript": ["node", "main.js"],
       "c": ["./main"], "cpp": ["./main"], "java": ["java", "-cp", ".", "Main"],
       "go": ["./main"], "rust": ["./main"], "bash": ["/bin/bash", "main.sh"]}


def norm(s):
    lines = [l.rstrip() for l in s.split("\n")]
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines)


work = tempfile.mkdtemp(prefix="verify-verdicts-")
env = dict(os.environ, GOCACHE=os.path.join(work, "gocache"), GO111MODULE="off", GOFLAGS="")
bad = []
ok = 0
try:
    for case in sys.argv[1:]:
        case = case.rstrip("/")
        verdict_dir, lang = os.path.basename(case), os.path.basename(os.path.dirname(case))
        name = f"{lang}/{verdict_dir}"
        with open(os.path.join(case, "expect.json")) as f:
            exp = json.load(f)
        d = os.path.join(work, lang, verdict_dir)
        os.makedirs(d)
        shutil.copy(os.path.join(case, ENTRY[lang]), d)
        if lang in COMPILE:
            c = subprocess.run(COMPILE[lang], cwd=d, env=env, capture_output=True, text=True)
            if exp["stop_reason"] == "compile_error":
                missing = [m for m in exp["stderr_contains"] if m not in c.stderr + c.stdout]
                if c.returncode == 0 or missing:
                    bad.append(f"{name}: compile exit {c.returncode}, missing {missing}: {c.stderr[:300]!r}")
                else:
                    ok += 1
                continue
            if c.returncode != 0:
                bad.append(f"{name}: does not compile: {c.stderr[:300]!r}")
                continue
        run_env = {"PATH": "/nonexistent", "LC_ALL": "C"} if lang == "bash" else env
        timeout = exp.get("run_timeout") or 20
        try:
            r = subprocess.run(RUN[lang], cwd=d, env=run_env, input=exp["stdin"], capture_output=True,
                               text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            if exp["stop_reason"] == "code_timeout":
                ok += 1
            else:
                bad.append(f"{name}: still running after {timeout} s")
            continue
        if exp["stop_reason"] == "code_timeout":
            bad.append(f"{name}: ended (exit {r.returncode}) within {timeout} s")
            continue
        want_rc = -getattr(signal, exp["signal"]) if exp.get("signal") else exp["exit_code"]
        if exp["verdict"] == "syntax_error":
            want_rc = 1  # bare python runs it and reports the SyntaxError itself
        problems = []
        if r.returncode != want_rc:
            problems.append(f"exit {r.returncode}, want {want_rc}")
        problems += [f"stderr lacks {m!r}" for m in exp["stderr_contains"] if m not in r.stderr]
        if exp["verdict"] == "wrong_answer":
            if norm(r.stdout) == norm(exp["expected_stdout"]):
                problems.append("prints the correct answer")
            if norm(r.stdout) != norm(exp["stdout"]):
                problems.append(f"prints {r.stdout!r}, expect.json says {exp['stdout']!r}")
        if problems:
            bad.append(f"{name}: " + "; ".join(problems) + f" (stderr {r.stderr[:200]!r})")
        else:
            ok += 1
finally:
    shutil.rmtree(work, ignore_errors=True)
for b in bad:
    print("FAIL", b)
print(f"verify-verdicts: {ok} behave as described, {len(bad)} do not")
sys.exit(1 if bad else 0)
PY
