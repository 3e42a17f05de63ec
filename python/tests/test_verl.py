"""verl's OWN SandboxFusion client (verl 0.9.1, pinned by hash in requirements-verl.txt:
verl/utils/reward_score/sandbox_fusion/, `call_sandbox_api`, `check_correctness`,
`compute_score`) against the real `agentjail serve --http`'s /run_code: a verl user who sets
`sandbox_fusion.url` to it gets these scores.

`import verl` needs torch, ray and transformers (its __init__ imports verl.protocol), which
this venv does not have: verl is installed with --no-deps and its sandbox_fusion package is
loaded from the installed distribution's files under a private name; its one dependency,
requests, is pinned in requirements-test.txt. Nothing of verl is copied into this repo.
"""

import importlib.util
import json
import pathlib
import sys
from importlib import metadata

import pytest

from conftest import HttpServer

VERL_VERSION = "0.9.1"


def load_verl_sandbox_fusion():
    try:
        dist = metadata.distribution("verl")
    except metadata.PackageNotFoundError:
        pytest.fail("verl is not installed in this venv: run scripts/setup.sh", pytrace=False)
    assert dist.version == VERL_VERSION, f"verl {dist.version}; requirements-verl.txt pins {VERL_VERSION}"
    pkg = pathlib.Path(dist.locate_file("verl/utils/reward_score/sandbox_fusion"))
    name = "_verl_sandbox_fusion"
    spec = importlib.util.spec_from_file_location(name, pkg / "__init__.py", submodule_search_locations=[str(pkg)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    assert "verl" not in sys.modules, "the verl package itself was imported"
    return mod, sys.modules[name + ".utils"]


@pytest.fixture(scope="module")
def verl():
    return load_verl_sandbox_fusion()


@pytest.fixture(scope="module")
def url(binary):
    # verl's client is `requests.post(url)`: TCP only, and it sends no Authorization header.
    s = HttpServer(binary, "127.0.0.1:0")
    yield s.url + "/run_code"
    s.stop()


ADD = "a, b = map(int, input().split())\nprint(a + b)\n"


def test_call_sandbox_api_gets_the_fields_verl_reads(verl, url):
    _, utils = verl
    resp, err = utils.call_sandbox_api(url, "print(2 + 2)", None, 10, 10, 1024)
    assert err is None
    assert resp["status"] == "Success"
    assert resp["compile_result"] is None
    rr = resp["run_result"]
    assert (rr["status"], rr["stdout"], rr["return_code"]) == ("Finished", "4\n", 0)
    assert isinstance(rr["execution_time"], float) and isinstance(rr["stderr"], str)


def test_accepted_and_wrong_answers(verl, url):
    _, utils = verl
    cases = {"inputs": ["1 2\n", "3 4\n", "10 -3\n"], "outputs": ["3", "7", "7"]}
    results, meta = utils.check_correctness(url, cases, ADD, timeout=10)
    assert results == [True, True, True], meta
    cases["outputs"][1] = "8"
    results, meta = utils.check_correctness(url, cases, ADD, timeout=10)
    assert results == [True, False, True], meta
    assert meta[1]["status"] == "wrong_answer" and meta[1]["stdout"] == "7\n"


def test_runtime_error_is_minus_2(verl, url):
    _, utils = verl
    results, meta = utils.check_correctness(url, {"inputs": ["0\n"], "outputs": ["x"]},
                                            "print(1 // int(input()))", timeout=10)
    assert results == [-2], meta
    assert meta[0]["status"] == "runtime_error" and meta[0]["exit_code"] == 1
    assert "ZeroDivisionError" in meta[0]["stderr"]


def test_timeout_is_minus_3(verl, url):
    _, utils = verl
    results, meta = utils.check_correctness(url, {"inputs": [""], "outputs": ["1"]},
                                            "while True:\n    pass\n", timeout=1)
    assert results == [-3], meta
    assert meta[0]["status"] == "timeout" and meta[0]["run_status"] == "TimeLimitExceeded"


def test_unsupported_languages(verl, url):
    _, utils = verl
    # In verl's list, not run by this server's policy: a 400 naming the languages it runs, an
    # API error to verl.
    for lang in ("cpp", "nodejs"):
        results, meta = utils.check_correctness(url, {"inputs": [""], "outputs": ["1"]}, "print(1)",
                                                timeout=5, language=lang)
        assert results == [-1], meta
        err = meta[0]["api_request_error"]
        assert "400 Client Error" in err, err
    # Not in verl's list: verl refuses it itself and never calls.
    resp, err = utils.call_sandbox_api(url, "x", None, 1, 1, 1, language="cobol")
    assert resp is None and "Unsupported language" in err


def test_assert_cases_and_compute_score(verl, url):
    sf, utils = verl
    gen = "def add(a, b):\n    return a + b\n"
    tests = {"inputs": ["", ""], "outputs": [None, None],
             "assert_case": ["assert add(1, 2) == 3", "assert add(1, 2) == 4"]}
    results, meta = utils.check_correctness(url, tests, gen, timeout=10)
    assert results == [True, -2], meta
    completion = "Here it is:\n```python\n" + ADD + "```\n"
    score, meta = sf.compute_score(url, None, 1024, completion,
                                   json.dumps({"inputs": ["1 1\n", "2 2\n"], "outputs": ["2", "5"]}))
    assert score == 0.5, meta


def test_many_cases_at_once(verl, url):
    _, utils = verl
    n = 12
    cases = {"inputs": [f"{i} {i}\n" for i in range(n)], "outputs": [str(2 * i) for i in range(n)]}
    results, meta = utils.check_correctness(url, cases, ADD, timeout=10)
    assert results == [True] * n, meta


def test_call_based_cases_are_refused_by_enforcing_policies(verl, url, judge_url):
    """verl's `fn_name` (call-based) cases send a wrapper of ~3 KB: 15 `from X import *`
    lines, `import traceback`, `globals()`, `getattr` and `if __name__`. Over the default
    policy's 2400 characters; under judge.toml the star imports of math, collections, ...
    pass (allow_star_imports) but those of sys, io, builtins, string, re, operator and
    typing, `traceback`, `globals` and `getattr` do not: -2 whatever the solution (the
    reason is in stderr's last line). policies/judge-open.toml is for them (below)."""
    _, utils = verl
    case = {"inputs": ["1\n2"], "outputs": ["3"], "fn_name": "add"}
    gen = "def add(a, b):\n    return a + b\n"
    results, meta = utils.check_correctness(url, case, gen, timeout=10)
    assert results == [-2], meta
    assert meta[0]["api_response"]["message"] == "invalid_action:code_too_long"
    results, meta = utils.check_correctness(judge_url, case, gen, timeout=10)
    assert results == [-2], meta
    assert meta[0]["api_response"]["message"] == (
        "policy_block:static_policy_violation:"
        "import_not_allowed:builtins,import_not_allowed:io,import_not_allowed:traceback")


# -- policies/judge-open.toml: the check reported, not enforced (verl's call-based cases) --

# A LeetCode-style solution of realistic length (a class with helpers), called by name.
LONG_SOLUTION = '''from typing import List
import heapq


class DisjointSet:
    """Union by size with path halving."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))
        self.size = [1] * n

    def find(self, x: int) -> int:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: int, b: int) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size[rb]
        return True


class SegmentTree:
    """Range minimum over a fixed array, point updates."""

    def __init__(self, values: List[int]) -> None:
        self.n = 1
        while self.n < len(values):
            self.n *= 2
        self.tree = [float("inf")] * (2 * self.n)
        for i, v in enumerate(values):
            self.tree[self.n + i] = v
        for i in range(self.n - 1, 0, -1):
            self.tree[i] = min(self.tree[2 * i], self.tree[2 * i + 1])

    def update(self, i: int, v: int) -> None:
        i += self.n
        self.tree[i] = v
        while i > 1:
            i //= 2
            self.tree[i] = min(self.tree[2 * i], self.tree[2 * i + 1])

    def query(self, lo: int, hi: int) -> float:
        res = float("inf")
        lo += self.n
        hi += self.n
        while lo < hi:
            if lo & 1:
                res = min(res, self.tree[lo])
                lo += 1
            if hi & 1:
                hi -= 1
                res = min(res, self.tree[hi])
            lo //= 2
            hi //= 2
        return res


class Solution:
    def minCostConnectPoints(self, points: List[List[int]]) -> int:
        """Kruskal over every pair (Manhattan distance)."""
        n = len(points)
        edges = []
        for i in range(n):
            xi, yi = points[i]
            for j in range(i + 1, n):
                xj, yj = points[j]
                edges.append((abs(xi - xj) + abs(yi - yj), i, j))
        edges.sort()
        dsu = DisjointSet(n)
        total = used = 0
        for w, a, b in edges:
            if dsu.union(a, b):
                total += w
                used += 1
                if used == n - 1:
                    break
        return total

    def cheapest(self, n: int, flights: List[List[int]], src: int, dst: int) -> int:
        """Dijkstra; -1 when dst cannot be reached."""
        graph = [[] for _ in range(n)]
        for a, b, w in flights:
            graph[a].append((b, w))
        dist = [float("inf")] * n
        dist[src] = 0
        heap = [(0, src)]
        while heap:
            d, u = heapq.heappop(heap)
            if d > dist[u]:
                continue
            for v, w in graph[u]:
                if d + w < dist[v]:
                    dist[v] = d + w
                    heapq.heappush(heap, (dist[v], v))
        return -1 if dist[dst] == float("inf") else dist[dst]

    def rangeMin(self, values: List[int], queries: List[List[int]]) -> List[int]:
        tree = SegmentTree(values)
        return [int(tree.query(lo, hi)) for lo, hi in queries]
'''

JUDGE_OPEN = pathlib.Path(__file__).resolve().parents[2] / "policies" / "judge-open.toml"


@pytest.fixture(scope="module")
def open_url(binary):
    s = HttpServer(binary, "127.0.0.1:0", extra=["--policy", str(JUDGE_OPEN)])
    yield s.url + "/run_code"
    s.stop()


def test_call_based_right_and_wrong_answers_under_judge_open(verl, url, open_url):
    _, utils = verl
    gen = "def add(a, b):\n    return a + b\n"
    case = {"inputs": ["1\n2", "10\n-3", "\"ab\"\n\"cd\""], "outputs": ["3", "7", "abcd"], "fn_name": "add"}
    results, meta = utils.check_correctness(open_url, case, gen, timeout=10)
    assert results == [True, True, True], meta
    case["outputs"][1] = "8"
    results, meta = utils.check_correctness(open_url, case, gen, timeout=10)
    assert results == [True, False, True], meta
    assert meta[1]["status"] == "wrong_answer" and meta[1]["stdout"] == "7\n"
    # A LeetCode-style `class Solution` of realistic length (verl's wrapper plus it is far
    # over the default policy's 2400 characters, within judge-open's 20000).
    cases = {"fn_name": "minCostConnectPoints",
             "inputs": ["[[0,0],[2,2],[3,10],[5,2],[7,0]]", "[[3,12],[-2,5],[-4,1]]"],
             "outputs": ["20", "18"]}
    results, meta = utils.check_correctness(open_url, cases, LONG_SOLUTION, timeout=10)
    assert results == [True, True], meta
    assert len(LONG_SOLUTION) > 2400
    results, meta = utils.check_correctness(url, cases, LONG_SOLUTION, timeout=10)
    assert results == [-2, -2], meta
    assert meta[0]["api_response"]["message"] == "invalid_action:code_too_long"
    cases = {"fn_name": "cheapest",
             "inputs": ["4\n[[0,1,100],[1,2,100],[2,0,100],[1,3,600],[2,3,200]]\n0\n3",
                        "3\n[[0,1,1]]\n0\n2"],
             "outputs": ["400", "-1"]}
    results, meta = utils.check_correctness(open_url, cases, LONG_SOLUTION, timeout=10)
    assert results == [True, True], meta
    cases = {"fn_name": "rangeMin", "inputs": ["[5,2,8,1,9]\n[[0,2],[2,5],[4,5]]"],
             "outputs": ["[2, 1, 9]"]}
    results, meta = utils.check_correctness(open_url, cases, LONG_SOLUTION, timeout=10)
    assert results == [True], meta


def test_call_based_runtime_errors_and_timeouts_under_judge_open(verl, open_url):
    _, utils = verl
    case = {"inputs": ["1\n0"], "outputs": ["x"], "fn_name": "div"}
    # An error outside verl's try (here at import time): the wrapper exits 1, -2.
    gen = "def div(a, b):\n    return a // b\n\nTABLE = {}[\"missing\"]\n"
    results, meta = utils.check_correctness(open_url, case, gen, timeout=10)
    assert results == [-2], meta
    assert meta[0]["status"] == "runtime_error" and meta[0]["exit_code"] == 1
    assert "KeyError" in meta[0]["stderr"]
    # A solution that does not parse: Python's SyntaxError at run time, -2 (the check only
    # reports it).
    results, meta = utils.check_correctness(open_url, case, "def div(a, b)\n    return 0\n", timeout=10)
    assert results == [-2], meta
    assert "SyntaxError" in meta[0]["stderr"]
    # An exception inside the called function: verl's own wrapper catches it, prints the
    # traceback to stderr and exits 0 with no output, so verl scores it False (as on
    # SandboxFusion).
    gen = "def div(a, b):\n    return a // b\n"
    results, meta = utils.check_correctness(open_url, case, gen, timeout=10)
    assert results == [False], meta
    assert "ZeroDivisionError" in meta[0]["stderr"] and meta[0]["stdout"] == ""
    # An infinite loop: the run's timeout, -3.
    case = {"inputs": ["1"], "outputs": ["1"], "fn_name": "spin"}
    gen = "def spin(n):\n    while True:\n        n += 1\n"
    results, meta = utils.check_correctness(open_url, case, gen, timeout=1)
    assert results == [-3], meta
    assert meta[0]["status"] == "timeout" and meta[0]["run_status"] == "TimeLimitExceeded"


def test_judge_open_keeps_every_contract_refusal(verl, open_url):
    _, utils = verl
    # Languages the policy does not run: a 400 naming those it runs, as under every policy.
    results, meta = utils.check_correctness(open_url, {"inputs": [""], "outputs": ["1"]}, "print(1)",
                                            timeout=5, language="nodejs")
    assert results == [-1] and "400" in meta[0]["api_request_error"], meta
    # Code past the budget: refused before anything runs.
    case = {"inputs": ["1\n2"], "outputs": ["3"], "fn_name": "add"}
    gen = "def add(a, b):\n    return a + b\n" + "# pad\n" * 4000
    results, meta = utils.check_correctness(open_url, case, gen, timeout=10)
    assert results == [-2], meta
    assert meta[0]["api_response"]["message"] == "invalid_action:code_too_long"


def test_a_token_protected_server_refuses_verls_client(verl, binary, tmp_path):
    _, utils = verl
    tokens = tmp_path / "tokens"
    tokens.write_text("verl " + "t" * 32 + "\n")
    tokens.chmod(0o600)
    s = HttpServer(binary, "127.0.0.1:0", tokens)
    try:
        resp, err = utils.call_sandbox_api(s.url + "/run_code", "print(1)", None, 5, 5, 1024)
        assert resp is None and "401" in err
    finally:
        s.stop()


# -- policies/judge.toml: what verl users should serve /run_code with ------------------

JUDGE = pathlib.Path(__file__).resolve().parents[2] / "policies" / "judge.toml"

CP_SOLUTION = '''import sys
from collections import Counter


def main():
    data = sys.stdin.read().split()
    n = int(data[0])
    words = Counter(data[1:1 + n])
    best = max(sorted(words), key=lambda w: words[w])
    sys.stdout.write(best + " " + str(words[best]) + "\\n")


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    main()
'''

# Through dunders (which judge.toml lets past the check) to __import__ and the os module,
# then at the host: a write under /usr, a secret, the server's own port, a file in /tmp.
ESCAPE = '''import sys
b = None
for c in ().__class__.__base__.__subclasses__():
    try:
        b = c.__init__.__globals__["__builtins__"]
        break
    except (AttributeError, KeyError):
        pass
imp = b["__import__"] if b.__class__ is dict else b.__import__
g = imp("os").__dict__
out = []
def attempt(label, f):
    try:
        f()
        out.append(label + ":DONE")
    except Exception as e:
        out.append(label + ":" + e.__class__.__name__)
attempt("usr", lambda: g["open"]("/usr/agentjail-judge-escape", g["O_WRONLY"] | g["O_CREAT"], 420))
attempt("shadow", lambda: g["open"]("/etc/shadow", g["O_RDONLY"]))
attempt("tmp", lambda: g["open"]("/tmp/agentjail-judge-MARK", g["O_WRONLY"] | g["O_CREAT"], 420))
print(" ".join(out))
if "PORT" != "0":
    imp("socket").create_connection(("127.0.0.1", PORT), 2)
'''


@pytest.fixture(scope="module")
def judge_url(binary):
    s = HttpServer(binary, "127.0.0.1:0", extra=["--policy", str(JUDGE)])
    yield s.url + "/run_code"
    s.stop()


def test_judge_policy_passes_what_competitive_programming_writes(verl, url, judge_url):
    _, utils = verl
    cases = {"inputs": ["3\na b a\n", "4\nx y y x\n"], "outputs": ["a 2", "x 2"]}
    results, meta = utils.check_correctness(judge_url, cases, CP_SOLUTION, timeout=10)
    assert results == [True, True], meta
    # The same under the default policy: refused by the check (sys, collections, __name__).
    results, meta = utils.check_correctness(url, cases, CP_SOLUTION, timeout=10)
    assert results == [-2, -2]
    assert meta[0]["api_response"]["message"].startswith("policy_block:static_policy_violation:")


# The ways a solution reads stdin with input() (the JSON contract's input() rule does not
# apply to /run_code's text mode), and star imports of modules judge.toml allows.
INPUT_SOLUTIONS = [
    "def main():\n    n = int(input())\n    xs = list(map(int, input().split()))\n"
    "    print(sum(xs[:n]))\n\n\nmain()\n",
    "import sys\ninput = sys.stdin.readline\nn = int(input())\n"
    "print(sum(int(x) for x in input().split()[:n]))\n",
    "lines = []\nwhile True:\n    try:\n        lines.append(input())\n    except EOFError:\n"
    "        break\nprint(sum(map(int, lines[1].split()[:int(lines[0])])))\n",
    "from math import *\nfrom itertools import *\nfrom collections import *\n"
    "def main():\n    n = int(input())\n    print(int(fsum(islice(map(int, input().split()), n))))\n"
    "if __name__ == '__main__':\n    main()\n",
]


def test_judge_policy_passes_input_in_functions_and_star_imports(verl, url, judge_url):
    _, utils = verl
    cases = {"inputs": ["2\n3 4 5\n", "3\n1 1 1\n"], "outputs": ["7", "3"]}
    for code in INPUT_SOLUTIONS:
        results, meta = utils.check_correctness(judge_url, cases, code, timeout=10)
        assert results == [True, True], (code, meta)
    # The default policy, in /run_code's text mode too: input() inside main() passes (no
    # other rule is broken); the star imports and `sys` are refused.
    results, meta = utils.check_correctness(url, cases, INPUT_SOLUTIONS[0], timeout=10)
    assert results == [True, True], meta
    for code in INPUT_SOLUTIONS[1:2] + INPUT_SOLUTIONS[3:]:
        results, meta = utils.check_correctness(url, cases, code, timeout=10)
        assert results == [-2, -2], (code, meta)
        assert meta[0]["api_response"]["message"].startswith("policy_block:static_policy_violation:")


@pytest.mark.parametrize("which", ["judge", "judge-open"])
def test_judge_policy_the_jail_holds_what_its_check_lets_through(verl, judge_url, open_url, tmp_path, which):
    _, utils = verl
    judge_url = judge_url if which == "judge" else open_url
    port = int(judge_url.rsplit(":", 1)[1].split("/")[0])
    mark = "agentjail-judge-" + tmp_path.name
    code = ESCAPE.replace("PORT", "0").replace("agentjail-judge-MARK", mark)
    resp, err = utils.call_sandbox_api(judge_url, code, None, 10, 10, 1024)
    assert err is None and resp["status"] == "Success", resp
    got = dict(x.split(":") for x in resp["run_result"]["stdout"].split())
    assert got["usr"] in ("OSError", "PermissionError"), got  # read-only bind (EROFS) or landlock
    assert got["shadow"] in ("FileNotFoundError", "PermissionError"), got  # the jail's own /etc
    assert got["tmp"] == "DONE", got  # the jail's own /tmp ...
    # The server's own port: no socket at all (seccomp); verl scores it -2.
    resp, err = utils.call_sandbox_api(judge_url, ESCAPE.replace("PORT", str(port)), None, 10, 10, 1024)
    assert resp["status"] == "Failed" and resp["message"] == "code_forbidden_syscall:socket", resp
    assert not pathlib.Path("/tmp", mark).exists()  # ... not the host's
    assert not pathlib.Path("/usr/agentjail-judge-escape").exists()


# -- C++ through verl's own path (check_correctness with language="cpp"), under judge.toml --

CPP_ADD = "#include <iostream>\nint main() {\n    long long a, b;\n    std::cin >> a >> b;\n    std::cout << a + b << std::endl;\n}\n"


def test_a_cpp_answer_scores_through_verls_own_client(verl, judge_url):
    """verl's compute_score always sends `python`; a C++ reward goes through check_correctness
    with language="cpp" (what verl's code-judging callers pass), scored as compute_score does."""
    _, utils = verl
    cases = {"inputs": ["1 2\n", "3 4\n", "10 -3\n"], "outputs": ["3", "7", "7"]}

    def score(code):
        results, meta = utils.check_correctness(judge_url, cases, code, timeout=10, language="cpp")
        return sum(r is True for r in results) / len(results), results, meta

    s, results, meta = score(CPP_ADD)
    assert (s, results) == (1.0, [True, True, True]), meta
    assert meta[0]["compile_status"] == "Finished" and meta[0]["api_response"]["compile_result"]["return_code"] == 0
    s, results, meta = score(CPP_ADD.replace("a + b", "a - b"))
    assert (s, results) == (0.0, [False, False, False]), meta
    assert meta[0]["status"] == "wrong_answer" and meta[0]["stdout"] == "-1\n"
    s, results, meta = score(CPP_ADD.replace("long long a, b;", "long long a;"))
    assert (s, results) == (0.0, [-4, -4, -4]), meta
    assert meta[0]["status"] == "compile_error" and "b’ was not declared" in meta[0]["compile_stderr"], meta
