#!/usr/bin/env python3
"""Run every reference solution of the judge corpus bare on the host (no jail) against its
problem's cases.json: the corpus's own proof that each solution is correct before the jail
is asked to agree (docs/TESTING.md, "The judge corpus").

    tests/corpus/verify-bare.py [PROBLEM_DIR ...] [--lang LANG ...]

With no directory, every problem under tests/corpus/judge/. Toolchains: the ones the jail
binds (judge.toml's, issue 39): /usr/bin/python3, node, gcc/g++ 12, javac/java 17,
/usr/lib/go-1.19/bin/go, /usr/bin/rustc (never root's rustup one), bash. Exits 1 when any
solution fails a case or does not build, naming each failure; a missing toolchain is a
failure too.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
GO = "/usr/lib/go-1.19/bin/go"
RUSTC = "/usr/bin/rustc"

# language -> (source file, build argv or None, run argv); {d} is the build directory.
LANGS = {
    "python": ("main.py", None, ["/usr/bin/python3", "-I", "-S", "-B", "{d}/main.py"]),
    "javascript": ("main.js", None, ["node", "{d}/main.js"]),
    "c": ("main.c", ["gcc", "-std=c11", "-O2", "-o", "{d}/a.out", "{d}/main.c", "-lm"], ["{d}/a.out"]),
    "cpp": ("main.cpp", ["g++", "-std=c++17", "-O2", "-o", "{d}/a.out", "{d}/main.cpp"], ["{d}/a.out"]),
    "java": ("Main.java", ["javac", "-d", "{d}", "{d}/Main.java"], ["java", "-cp", "{d}", "Main"]),
    "go": ("main.go", [GO, "build", "-o", "{d}/a.out", "{d}/main.go"], ["{d}/a.out"]),
    "rust": ("main.rs", [RUSTC, "--edition", "2021", "-O", "-o", "{d}/a.out", "{d}/main.rs"], ["{d}/a.out"]),
    "bash": ("main.sh", None, ["/bin/bash", "{d}/main.sh"]),
}


def normalize(text):
    """What the judge compares: each line's trailing whitespace, trailing blank lines dropped."""
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines)


def fill(argv, d):
    return [a.replace("{d}", d) for a in argv]


def main():
    args = sys.argv[1:]
    langs = []
    dirs = []
    i = 0
    while i < len(args):
        if args[i] == "--lang":
            langs.append(args[i + 1])
            i += 2
        else:
            dirs.append(Path(args[i]))
            i += 1
    langs = langs or list(LANGS)
    dirs = dirs or sorted(p for p in (HERE / "judge").iterdir() if p.is_dir())
    env = dict(os.environ, GOCACHE=tempfile.mkdtemp(prefix="corpus-gocache-"), GO111MODULE="off",
               GOFLAGS="", CGO_ENABLED="0")
    failures = []
    totals = {lang: 0.0 for lang in langs}
    runs = 0
    for prob in dirs:
        cases = json.loads((prob / "cases.json").read_text())
        if len(cases) < 3:
            failures.append(f"{prob.name}: only {len(cases)} cases")
        for lang in langs:
            src, build, run = LANGS[lang]
            if not (prob / src).is_file():
                failures.append(f"{prob.name}/{src}: missing")
                continue
            with tempfile.TemporaryDirectory(prefix="corpus-bare-") as d:
                shutil.copy(prob / src, Path(d) / src)
                if build:
                    b = subprocess.run(fill(build, d), capture_output=True, text=True, env=env)
                    if b.returncode != 0:
                        failures.append(f"{prob.name}/{src}: build failed: {b.stderr[-2000:]}")
                        continue
                for n, case in enumerate(cases):
                    t0 = time.monotonic()
                    r = subprocess.run(fill(run, d), input=case["stdin"], capture_output=True,
                                       text=True, env=env, timeout=60)
                    totals[lang] += time.monotonic() - t0
                    runs += 1
                    if r.returncode != 0 or normalize(r.stdout) != normalize(case["stdout"]):
                        failures.append(
                            f"{prob.name}/{src} case {n}: exit {r.returncode}, stdout "
                            f"{r.stdout[:300]!r}, expected {case['stdout'][:300]!r}, "
                            f"stderr {r.stderr[-500:]!r}")
    shutil.rmtree(env["GOCACHE"], ignore_errors=True)
    for lang in langs:
        print(f"{lang:10s} {totals[lang]:7.2f} s run time")
    for f in failures:
        print("FAIL", f)
    print(f"{runs} runs over {len(dirs)} problems x {len(langs)} languages, {len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
