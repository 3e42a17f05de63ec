"""examples/python/*.py run as a user would run them, against the same binary."""

import os
import subprocess
import sys

import pytest

from conftest import REPO, needs_cgroups

EXAMPLES = sorted((REPO / "examples" / "python").glob("*.py"))


def test_there_are_examples():
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path, binary):
    if path.name == "smolagents_agent.py":
        needs_cgroups()
        if os.environ.get("CI") != "true":
            pytest.importorskip("smolagents", reason="smolagents is not installed: run scripts/setup.sh")
    env = dict(os.environ, AGENTJAIL_BINARY=binary)
    p = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    if path.name == "quickstart.py":
        assert p.stdout == "True 45\n"
    if path.name == "smolagents_agent.py":
        assert p.stdout.strip().endswith("43")
    if path.name == "http_client.py":
        assert p.stdout == "True 144 example\n3\n"
    if path.name == "incident.py":
        assert '"incident_severity": "P1"' in p.stdout
