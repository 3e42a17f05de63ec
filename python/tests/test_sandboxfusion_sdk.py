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
        sf.run_code(RunCodeRequest(code="int main(){}", language="cpp"), endpoint=endpoint, max_attempts=1)
    msg = str(e.value)
    assert "responded with code 400" in msg and "language_not_run" in msg, msg
    assert '"languages":["python"]' in msg.replace(" ", ""), msg


def test_ping_and_the_routes_not_served(endpoint):
    import requests

    assert requests.get(endpoint + "/v1/ping", timeout=5).json() == "pong"
    r = requests.post(endpoint + "/run_jupyter", json={"cells": ["1"]}, timeout=5)
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_served"
    # Files: a relative path is readable under /app/in under a policy that allows open; an
    # absolute one is a 400 (the SDK raises with the body's text).
    with pytest.raises(Exception) as e:
        sf.run_code(RunCodeRequest(code="print(1)", language="python",
                                   files={"/tmp/x.txt": base64.b64encode(b"1").decode()}),
                    endpoint=endpoint, max_attempts=1)
    assert "400" in str(e.value) and "path_not_offered" in str(e.value)
