"""The benign judge corpus (tests/corpus/judge/, issue 39) through SandboxFusion's OWN client
SDK (sandbox-fusion 0.3.7) against the real `agentjail serve --http --policy judge`: for each
language in SandboxFusion's spelling (python, cpp, nodejs, go, java, bash, rust; SandboxFusion
has no `c`), five problems' reference solutions, every case of each a `run_code` of its own,
must score `status == Success` with the case's stdout (each line's trailing whitespace and
trailing blank lines ignored), a `compile_result` that `Finished` for a compiled language and
none for an interpreted one. The five problems rotate with the language, so the seven
languages together cover 35 problem slots of the corpus. The whole corpus in every language
goes through `agentjail run` in tests/pipeline/judge_corpus.rs.

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
PER_LANGUAGE = 5
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
    chosen = [ps[(start + k) % len(ps)] for k in range(PER_LANGUAGE)]
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
