#!/usr/bin/env bash
# Runs every reference solution of the judge corpus BARE on the host (no jail) against its
# cases.json, so that a solution's correctness is known apart from agentjail: a failure here is
# the corpus's fault, a failure through `agentjail run` or /run_code (the harness) is the jail's.
#
#   tests/corpus/verify-bare-b.sh [PROBLEM_DIR ...]    (default: every tests/corpus/judge/*/)
#   LANGS="c rust" tests/corpus/verify-bare-b.sh ...    (a subset of languages)
#
# Toolchains as the jail runs them: gcc/g++ (C11, C++17, -O2), javac/java 17, go 1.19 and
# Debian's rustc 1.63 at /usr/bin/rustc (never root's rustup one), edition 2021. Bash solutions
# run with an empty PATH, so a solution that needs an external command fails here too.
# Output is compared as the judge compares it: trailing whitespace of each line and trailing
# blank lines ignored. Exit 0 only when every solution passes every case.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ "$#" -eq 0 ]; then set -- "$here"/judge/*/; fi
exec python3 - "$@" <<'PY'
import json, os, shutil, subprocess, sys, tempfile

LANGS = os.environ.get("LANGS", "python javascript c cpp java go rust bash").split()
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
    lines = [l.rstrip() for l in s.replace("\r\n", "\n").split("\n")]
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines)


failures = 0
passed = 0
work = tempfile.mkdtemp(prefix="verify-bare-")
env = dict(os.environ, GOCACHE=os.path.join(work, "gocache"), GOPATH=os.path.join(work, "gopath"),
           GO111MODULE="off", GOFLAGS="")
try:
    for pdir in sys.argv[1:]:
        pdir = pdir.rstrip("/")
        name = os.path.basename(pdir)
        with open(os.path.join(pdir, "cases.json")) as f:
            cases = json.load(f)
        for lang in LANGS:
            src = os.path.join(pdir, ENTRY[lang])
            if not os.path.exists(src):
                print(f"MISSING {name} {lang}")
                failures += 1
                continue
            d = os.path.join(work, name, lang)
            os.makedirs(d)
            shutil.copy(src, d)
            if lang in COMPILE:
                c = subprocess.run(COMPILE[lang], cwd=d, env=env, capture_output=True, text=True)
                if c.returncode != 0:
                    print(f"COMPILE-FAIL {name} {lang}\n{c.stderr}")
                    failures += 1
                    continue
            run_env = env
            if lang == "bash":
                run_env = {"PATH": "/nonexistent", "LC_ALL": "C"}
            for i, case in enumerate(cases):
                try:
                    r = subprocess.run(RUN[lang], cwd=d, env=run_env, input=case["stdin"],
                                       capture_output=True, text=True, timeout=20)
                except subprocess.TimeoutExpired:
                    print(f"TIMEOUT {name} {lang} case {i}")
                    failures += 1
                    continue
                if r.returncode != 0 or norm(r.stdout) != norm(case["stdout"]):
                    print(f"FAIL {name} {lang} case {i}: exit {r.returncode}\n"
                          f"  want {case['stdout'][:200]!r}\n  got  {r.stdout[:200]!r}\n  stderr {r.stderr[:300]!r}")
                    failures += 1
                else:
                    passed += 1
finally:
    shutil.rmtree(work, ignore_errors=True)
print(f"verify-bare: {passed} passed, {failures} failed")
sys.exit(1 if failures else 0)
PY
