"""The benign judge corpus (tests/corpus/judge/, issue 39) through SandboxFusion's OWN client
SDK (sandbox-fusion 0.3.7) against the real `agentjail serve --http --policy judge`: for each
language in SandboxFusion's spelling (python, cpp, nodejs, go, java, bash, rust; SandboxFusion
has no `c`), five problems' reference solutions, every case of each a `run_code` of its own,
must score `status == Success` with the case's stdout (each line's trailing whitespace and
trailing blank lines ignored), a `compile_result` that `Finished` for a compiled language and
none for an interpreted one. The five problems rotate with the language, so the seven
languages together cover 35 problem slots of the corpus (AGENTJAIL_SDK_CORPUS=all: every
problem). tests/pipeline/judge_corpus.rs takes ten problems per language through
`agentjail run` (a window moving with the day; AGENTJAIL_JUDGE_CORPUS=all: every problem).

`AGENTJAIL_CORPUS_POLICY` (a path, relative to the repository) swaps the policy, as it does
for the Rust harness."""

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import REPO, HttpServer

# Never skipped: without the pin (scripts/setup.sh installs it) the module fails to import.
import sandbox_fusion as sf
from sandbox_fusion import RunCodeRequest, RunStatus

CORPUS = REPO / "tests" / "corpus" / "judge"
# AGENTJAIL_SDK_CORPUS=all: every problem in every language (~6x the stage's time; run by
# hand, its figures in the closing note).
PER_LANGUAGE = 5
ALL = os.environ.get("AGENTJAIL_SDK_CORPUS") == "all"
# SandboxFusion's spelling -> (the corpus's solution file, compiled?).
LANGUAGES = {
    "python": ("main.py", False),
    "cpp": ("main.cpp", True),
    "nodejs": ("main.js", False),
    "go": ("main.go", True),
    "java": ("Main.java", True),
    "bash": ("main.sh", False),
    "rust": ("main.rs", True),
}


def normalize(text):
    lines = [line.rstrip() for line in (text or "").split("\n")]
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines)


def problems():
    return sorted(p for p in CORPUS.iterdir() if p.is_dir())


@pytest.fixture(scope="module")
def endpoint(binary):
    policy = os.environ.get("AGENTJAIL_CORPUS_POLICY")
    policy = str(REPO / policy) if policy else "judge"
    s = HttpServer(binary, "127.0.0.1:0", extra=("--policy", policy))
    yield s.url
    s.stop()


def judge(endpoint, language, code, case):
    """The SDK's response, or the text of what it raised (a 4xx/5xx answer)."""
    try:
        return sf.run_code(RunCodeRequest(code=code, language=language, stdin=case["stdin"]),
                           endpoint=endpoint, max_attempts=1)
    except Exception as e:  # the SDK raises a bare Exception for an HTTP error
        return f"the SDK raised: {e}"


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_reference_solutions_score_as_correct(endpoint, language):
    source, compiled = LANGUAGES[language]
    ps = problems()
    assert len(ps) >= PER_LANGUAGE, ps
    start = list(LANGUAGES).index(language) * PER_LANGUAGE
    chosen = ps if ALL else [ps[(start + k) % len(ps)] for k in range(PER_LANGUAGE)]
    jobs = []
    for p in chosen:
        code = (p / source).read_text()
        for n, case in enumerate(json.loads((p / "cases.json").read_text())):
            jobs.append((p.name, n, code, case))
    t0 = time.monotonic()
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda j: judge(endpoint, language, j[2], j[3]), jobs))
    print(f"sandboxfusion corpus: {language}: {len(jobs)} runs over "
          f"{[p.name for p in chosen]} in {time.monotonic() - t0:.1f} s")
    failures = []
    for (name, n, _, case), r in zip(jobs, results):
        what = f"{language} {name} case {n}"
        if isinstance(r, str):
            failures.append(f"{what}: {r[:500]}")
            continue
        if r.status != RunStatus.Success or r.run_result is None:
            failures.append(f"{what}: {r.status} {r.message!r} compile={r.compile_result} run={r.run_result}")
            continue
        if r.run_result.return_code != 0 or normalize(r.run_result.stdout) != normalize(case["stdout"]):
            failures.append(f"{what}: wrong answer: {r.run_result.stdout[:300]!r} expected "
                            f"{case['stdout'][:300]!r} (rc {r.run_result.return_code})")
            continue
        if compiled and (r.compile_result is None or r.compile_result.status != "Finished"):
            failures.append(f"{what}: compile_result {r.compile_result}")
        if not compiled and r.compile_result is not None:
            failures.append(f"{what}: a compile_result for {language}: {r.compile_result}")
    assert not failures, f"{len(failures)} of {len(jobs)} did not score as correct:\n" + "\n".join(failures[:40])


VERDICTS = REPO / "tests" / "corpus" / "judge-verdicts"
# The corpus's language -> SandboxFusion's spelling (SandboxFusion has no `c`: its C cases
# are tests/pipeline/judge_corpus.rs's alone).
SF_NAME = {"python": "python", "javascript": "nodejs", "cpp": "cpp", "java": "java", "go": "go",
           "rust": "rust", "bash": "bash"}
ENTRY = {"python": "main.py", "javascript": "main.js", "cpp": "main.cpp", "java": "Main.java",
         "go": "main.go", "rust": "main.rs", "bash": "main.sh"}


def verdict_cases():
    if not VERDICTS.is_dir():
        return []
    return sorted(c for lang in VERDICTS.iterdir() if lang.name in SF_NAME
                  for c in lang.iterdir() if (c / "expect.json").is_file())


def test_there_are_verdict_cases():
    cases = verdict_cases()
    assert len({c.parent.name for c in cases}) == len(SF_NAME), cases


def step_matches(got, want, name):
    """One of compile_result/run_result against expect.json's `sandboxfusion` entry."""
    if want is None:
        return [] if got is None else [f"{name} {got}, expected none"]
    if got is None:
        return [f"no {name}, expected {want}"]
    wrong = []
    if got.status != want["status"]:
        wrong.append(f"{name}.status {got.status}, expected {want['status']}")
    rc = want["return_code"]
    if rc == "nonzero" and got.return_code in (0, None) or rc != "nonzero" and got.return_code != rc:
        wrong.append(f"{name}.return_code {got.return_code}, expected {rc}")
    return wrong


@pytest.mark.parametrize("case", verdict_cases(), ids=lambda c: f"{c.parent.name}-{c.name}")
def test_verdicts_as_sandboxfusion_reports_them(endpoint, case):
    """Each verdict case (tests/corpus/judge-verdicts: a wrong answer, a runtime error, a
    timeout, a compile or syntax error) ends on /run_code as expect.json's `sandboxfusion`
    says SandboxFusion reports it, and is not scored correct."""
    lang = case.parent.name
    e = json.loads((case / "expect.json").read_text())
    req = RunCodeRequest(code=(case / ENTRY[lang]).read_text(), language=SF_NAME[lang],
                         stdin=e["stdin"])
    if e.get("run_timeout"):
        req.run_timeout = e["run_timeout"]
    r = sf.run_code(req, endpoint=endpoint, max_attempts=1)
    want = e["sandboxfusion"]
    wrong = []
    if r.status != e["sandboxfusion_status"]:
        wrong.append(f"status {r.status}, expected {e['sandboxfusion_status']}")
    wrong += step_matches(r.compile_result, want["compile_result"], "compile_result")
    wrong += step_matches(r.run_result, want["run_result"], "run_result")
    stdout = r.run_result.stdout if r.run_result else None
    if "stdout" in e and stdout != e["stdout"]:
        wrong.append(f"stdout {stdout!r}, expected {e['stdout']!r}")
    correct = r.status == RunStatus.Success and normalize(stdout) == normalize(e["expected_stdout"])
    if correct != e["correct"]:
        wrong.append(f"scored correct={correct}")
    step = r.compile_result if e.get("stderr_in") == "compile" else r.run_result
    stderr = (step.stderr if step else None) or ""
    for m in e["stderr_contains"]:
        if m not in stderr:
            wrong.append(f"{'compile' if e.get('stderr_in') == 'compile' else 'run'} stderr lacks {m!r}: {stderr[:500]!r}")
    assert not wrong, f"{lang}/{case.name}: {wrong}; response {r}"
