"""Every ```python block of README.md and python/README.md runs as written: each is written
to a file in a fresh directory outside the checkout and run there with this interpreter
(the installed package; AGENTJAIL_BINARY names the binary under test), and must exit 0.

A block may be skipped only with a marker on the line before its fence,
``<!-- snippet: skip (why) -->``; the skipped blocks are counted and named here, so the list
cannot grow unnoticed."""

import os
import re
import subprocess
import sys
import tempfile

import pytest

from conftest import REPO, needs_cgroups

SKIP = re.compile(r"<!-- snippet: skip \((.+?)\) -->\s*$")

#: The blocks a marker skips, by their first line: each needs what a test machine does not
#: have (a Ray cluster; a chat model and its key; an eval's dataset and model).
SKIPPED = {
    "from agentjail.fleet import Fleet           # pip install './python[ray]' (ray==2.60.0)",
    "from deepagents import create_deep_agent",
    "import agentjail.inspect                                # pip install './python[inspect]'",
}


def snippets(path):
    """(line, code, skip reason or None) for each ```python block of the file."""
    lines = path.read_text().splitlines()
    out = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start = i
            reason = None
            if i > 0:
                m = SKIP.search(lines[i - 1])
                reason = m.group(1) if m else None
            i += 1
            body = []
            while lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            out.append((start + 1, "\n".join(body) + "\n", reason))
        i += 1
    return out


ALL = [(p, line, code, why) for p in (REPO / "README.md", REPO / "python" / "README.md")
       for line, code, why in snippets(p)]


def test_the_skip_list_is_the_known_one():
    skipped = {code.splitlines()[0] for _, _, code, why in ALL if why}
    assert skipped == SKIPPED
    assert len(ALL) - len(skipped) >= 6


@pytest.mark.parametrize("path,line,code,why", [a for a in ALL if not a[3]],
                         ids=[f"{a[0].relative_to(REPO)}:{a[1]}" for a in ALL if not a[3]])
def test_the_snippet_runs_as_written(binary, path, line, code, why):
    if "policy=\"workspace\"" in code or "AgentjailExecutor" in code:
        needs_cgroups()  # policies/workspace.toml and smolagents.toml require the memory cgroup
    env = dict(os.environ, AGENTJAIL_BINARY=binary)
    with tempfile.TemporaryDirectory(prefix="aj-snippet-") as d:
        assert not d.startswith(str(REPO))
        script = os.path.join(d, "snippet.py")
        with open(script, "w") as f:
            f.write(code)
        p = subprocess.run([sys.executable, script], cwd=d, env=env, capture_output=True,
                           text=True, timeout=120)
    assert p.returncode == 0, f"{path.name}:{line} exited {p.returncode}\n{code}\n{p.stdout}\n{p.stderr}"
