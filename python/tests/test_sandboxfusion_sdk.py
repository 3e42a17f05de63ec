"""SandboxFusion's OWN client SDK (sandbox-fusion 0.3.7, pinned by hash in
requirements-verl.txt) against the real `agentjail serve --http`: `run_code`,
`run_code_async`, `/v1/ping`, what a language the policy does not run answers, and a syntax
error's stderr as Python's own (docs/REFERENCE.md, "SandboxFusion")."""

import asyncio
import base64

import pytest

from conftest import HttpServer

# Never skipped: without the pin (scripts/setup.sh installs it) the module fails to import.
import sandbox_fusion as sf
from sandbox_fusion import RunCodeRequest, RunStatus


@pytest.fixture(scope="module")
def endpoint(binary):
    s = HttpServer(binary, "127.0.0.1:0", extra=("--policy", "judge"))
    yield s.url
    s.stop()


def test_the_sdk_runs_python_and_reads_every_field(endpoint):
    r = sf.run_code(RunCodeRequest(code="print(input()[::-1])", language="python", stdin="abc\n"),
                    endpoint=endpoint, max_attempts=1)
    assert r.status == RunStatus.Success, r
    assert r.run_result.stdout == "cba\n" and r.run_result.return_code == 0
    assert r.run_result.execution_time is not None and r.compile_result is None
    r = sf.run_code(RunCodeRequest(code="raise SystemExit(3)", language="python"),
                    endpoint=endpoint, max_attempts=1)
    assert r.status == RunStatus.Failed and r.run_result.return_code == 3
    r = asyncio.run(sf.run_code_async(RunCodeRequest(code="print(6*7)", language="python"),
                                      endpoint=endpoint, max_attempts=1))
    assert r.run_result.stdout == "42\n"


def test_a_syntax_error_reads_as_pythons_own(endpoint):
    r = sf.run_code(RunCodeRequest(code="x = 1\ndef f(:\n    pass\n", language="python"),
                    endpoint=endpoint, max_attempts=1)
    assert r.status == RunStatus.Failed
    assert r.message == "policy_block:static_policy_violation:syntax_error"
    lines = r.run_result.stderr.splitlines()
    assert lines[0] == '  File "main.py", line 2', lines
    assert lines[1] == "    def f(:" and lines[2] == "          ^", lines
    assert lines[3].startswith("SyntaxError: ") and lines[-1].startswith("agentjail: policy_block"), lines


def test_a_language_the_policy_does_not_run_names_the_ones_it_does(endpoint):
    with pytest.raises(Exception) as e:
        sf.run_code(RunCodeRequest(code="<?php echo 1;", language="php"), endpoint=endpoint, max_attempts=1)
    msg = str(e.value)
    assert "responded with code 400" in msg and "language_not_run" in msg, msg
    # What judge.toml runs, in SandboxFusion's names and order, then agentjail's `c`.
    assert '"languages":["python","cpp","nodejs","go","java","bash","rust","c"]' in msg.replace(" ", ""), msg


def test_ping_and_the_routes_not_served(endpoint):
    import requests

    assert requests.get(endpoint + "/v1/ping", timeout=5).json() == "pong"
    r = requests.post(endpoint + "/run_jupyter", json={"cells": ["1"]}, timeout=5)
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_served"
    # Files: a path the jail cannot offer is a 400 (the SDK raises with the body's text).
    with pytest.raises(Exception) as e:
        sf.run_code(RunCodeRequest(code="print(1)", language="python",
                                   files={"/usr/x.txt": base64.b64encode(b"1").decode()}),
                    endpoint=endpoint, max_attempts=1)
    assert "400" in str(e.value) and "path_not_offered" in str(e.value)


@pytest.fixture(scope="module")
def open_endpoint(binary):
    """judge-open.toml: the check does not refuse `open` and `os`, as SandboxFusion's own."""
    s = HttpServer(binary, "127.0.0.1:0", extra=("--policy", "judge-open"))
    yield s.url
    s.stop()


def b64(data):
    return base64.b64encode(data).decode()


def test_files_land_where_sandboxfusion_puts_them_and_come_back(open_endpoint):
    code = """
import os
for n in ['flag.txt', 'd/x.txt', '/tmp/t.txt', '/app/in/i.txt', '/app/out/o.txt']:
    print(n, open(n).read())
try:
    open('flag.txt', 'w')
except OSError as e:
    print('read-only', e.errno)
open('out.txt', 'w').write('written')
os.makedirs('res', exist_ok=True)
open('res/r.txt', 'w').write('r')
os.symlink('/etc/hostname', 'planted')
"""
    files = {"flag.txt": b64(b"FLAG"), "./d/x.txt": b64(b"X"), "/tmp/t.txt": b64(b"T"),
             "/app/in/i.txt": b64(b"I"), "/app/out/o.txt": b64(b"O"), "none.txt": None}
    fetch = ["out.txt", "./res/r.txt", "/app/out/out.txt", "res/../out.txt",
             "missing.txt", "/tmp/t.txt", "../in/i.txt", "flag.txt", "planted"]
    r = sf.run_code(RunCodeRequest(code=code, language="python", files=files, fetch_files=fetch),
                    endpoint=open_endpoint, max_attempts=1)
    assert r.status == RunStatus.Success, r
    assert r.run_result.stdout.splitlines() == [
        "flag.txt FLAG", "d/x.txt X", "/tmp/t.txt T", "/app/in/i.txt I", "/app/out/o.txt O",
        "read-only 30"], r.run_result
    assert {k: base64.b64decode(v) for k, v in r.files.items()} == {
        "out.txt": b"written", "./res/r.txt": b"r", "/app/out/out.txt": b"written",
        "res/../out.txt": b"written"}
    # What did not come back is named, with why (agentjail's addition to the answer).
    import requests

    body = requests.post(open_endpoint + "/run_code", timeout=60, json={
        "code": code, "language": "python", "files": files, "fetch_files": fetch}).json()
    assert body["missing_files"] == ["missing.txt", "/tmp/t.txt", "../in/i.txt", "flag.txt", "planted"]
    assert body["missing_reasons"] == {
        "missing.txt": "not_found", "/tmp/t.txt": "outside_working_directory",
        "../in/i.txt": "outside_working_directory", "flag.txt": "symlink", "planted": "symlink"}


@pytest.mark.parametrize("name,kind", [
    ("/usr/lib/x.so", "path_not_offered"), ("/etc/passwd", "path_not_offered"),
    ("../x", "path_invalid"), ("/tmp/../etc/x", "path_invalid"), ("a//b", "path_invalid"),
])
def test_a_file_that_would_land_elsewhere_is_a_400_naming_why(open_endpoint, name, kind):
    import requests

    r = requests.post(open_endpoint + "/run_code", timeout=30, json={
        "code": "print(1)", "language": "python", "files": {name: b64(b"x")}})
    assert r.status_code == 400, r.text
    assert [(d["type"], d["loc"]) for d in r.json()["detail"]] == [(kind, ["body", "files", name])]


# -- Every language under judge.toml (nodejs also under data.toml, below) --

ADD = {
    "cpp": "#include <iostream>\nint main() { long long a, b; std::cin >> a >> b; std::cout << a + b << '\\n'; }\n",
    "go": "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tvar a, b int\n\tfmt.Scan(&a, &b)\n\tfmt.Println(a + b)\n}\n",
    "java": "import java.util.Scanner;\n\npublic class Main {\n    public static void main(String[] args) {\n"
            "        Scanner s = new Scanner(System.in);\n        System.out.println(s.nextLong() + s.nextLong());\n    }\n}\n",
    "rust": "use std::io::Read;\n\nfn main() {\n    let mut s = String::new();\n    std::io::stdin().read_to_string(&mut s).unwrap();\n"
            "    let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();\n    println!(\"{}\", v[0] + v[1]);\n}\n",
    "bash": "read a b\necho $((a + b))\n",
}
# One compile error each, and the compiler's word for it.
BROKEN = {
    "cpp": ("int main() { return x; }\n", "x’ was not declared"),
    "go": ("package main\n\nfunc main() {\n\treturn 1\n}\n", "too many return values"),
    "java": ("public class Main {\n    public static void main(String[] a) { int x = \"s\"; }\n}\n", "incompatible types"),
    "rust": ("fn main() {\n    let x: i32 = \"a\";\n}\n", "mismatched types"),
}


@pytest.mark.parametrize("language", sorted(ADD))
def test_each_language_runs_and_reports_its_compile_as_sandboxfusion(endpoint, language):
    r = sf.run_code(RunCodeRequest(code=ADD[language], language=language, stdin="3 4\n"),
                    endpoint=endpoint, max_attempts=1)
    assert r.status == RunStatus.Success, r
    assert (r.run_result.status, r.run_result.stdout, r.run_result.return_code) == ("Finished", "7\n", 0), r
    if language == "bash":
        assert r.compile_result is None, r
    else:
        c = r.compile_result
        assert (c.status, c.return_code) == ("Finished", 0), r
        assert c.execution_time is not None and c.execution_time > 0
    if language in BROKEN:
        code, words = BROKEN[language]
        r = sf.run_code(RunCodeRequest(code=code, language=language), endpoint=endpoint, max_attempts=1)
        assert r.status == RunStatus.Failed and r.message == "compile_error", r
        assert r.run_result is None, r
        c = r.compile_result
        assert c.status == "Finished" and c.return_code not in (0, None), r
        assert words in c.stderr, c.stderr


def test_a_crash_and_a_compile_timeout(endpoint):
    # abort() is -6 as SandboxFusion reports it (a negative signal number).
    r = sf.run_code(RunCodeRequest(code="#include <cstdlib>\nint main() { std::abort(); }\n", language="cpp"),
                    endpoint=endpoint, max_attempts=1)
    assert r.status == RunStatus.Failed and r.run_result.return_code == -6, r
    # A compile that outlasts compile_timeout: TimeLimitExceeded, return_code null, no run.
    # (Each loop under g++'s constexpr loop limit of 262144 iterations, which a single loop of
    # billions hits at once as a compile error; 4e10 steps in all, far past 1 s.)
    slow = ("constexpr long f(long n) { long s = 0; for (long i = 0; i < n; i++) for (long j = 0; j < n; j++) s += i ^ j; return s; }\n"
            "constexpr long x = f(200000);\nint main() { return (int)x; }\n")
    r = sf.run_code(RunCodeRequest(code=slow, language="cpp", compile_timeout=1), endpoint=endpoint, max_attempts=1)
    assert r.status == RunStatus.Failed and r.message == "compile_timeout", r
    assert r.run_result is None and r.compile_result.status == "TimeLimitExceeded", r
    # Cut at the request's 1 s, not at the policy's own compile limit (10 s and more).
    assert r.compile_result.return_code is None and 0.99 <= r.compile_result.execution_time < 9, r


def test_nodejs_runs_and_its_syntax_error_reads_as_nodes_own(binary):
    s = HttpServer(binary, "127.0.0.1:0", extra=("--policy", "data"))
    try:
        r = sf.run_code(RunCodeRequest(code="console.log(6 * 7);\n", language="nodejs"),
                        endpoint=s.url, max_attempts=1)
        assert (r.status, r.run_result.stdout, r.compile_result) == (RunStatus.Success, "42\n", None), r
        # node's own shape: FILE:LINE, the line, a caret, a blank line, SyntaxError.
        r = sf.run_code(RunCodeRequest(code="let x = 1;\nlet y = ;\n", language="nodejs"),
                        endpoint=s.url, max_attempts=1)
    finally:
        s.stop()
    assert r.status == RunStatus.Failed and r.message == "policy_block:static_policy_violation:syntax_error", r
    lines = r.run_result.stderr.splitlines()
    assert lines[:3] == ["main.js:2", "let y = ;", "        ^"], lines
    assert lines[3] == "" and lines[4].startswith("SyntaxError: "), lines


def test_c_and_files_in_a_toolchain_languages_working_directory(endpoint):
    import requests

    # `c` is agentjail's (SandboxFusion's SDK model has no such literal): a plain POST.
    body = requests.post(endpoint + "/run_code", timeout=60, json={
        "code": "#include <stdio.h>\nint main(void) { FILE *f = fopen(\"flag.txt\", \"r\"); char b[8] = {0};\n"
                "  fread(b, 1, 4, f); printf(\"%s\\n\", b); return 0; }\n",
        "language": "c", "files": {"flag.txt": b64(b"FLAG")}}).json()
    assert body["status"] == "Success" and body["run_result"]["stdout"] == "FLAG\n", body
    assert body["compile_result"]["status"] == "Finished" and body["compile_result"]["return_code"] == 0, body
    r = sf.run_code(RunCodeRequest(code="cat flag.txt /tmp/t.txt\necho out > o.txt\n", language="bash",
                                   files={"flag.txt": b64(b"F\n"), "/tmp/t.txt": b64(b"T\n")},
                                   fetch_files=["o.txt"]),
                    endpoint=endpoint, max_attempts=1)
    assert (r.status, r.run_result.stdout) == (RunStatus.Success, "F\nT\n"), r
    assert r.files == {"o.txt": b64(b"out\n")}, r
