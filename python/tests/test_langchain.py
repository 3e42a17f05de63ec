"""agentjail.langchain.AgentjailPythonTool as LangChain runs a tool (langchain-core pinned in
python/requirements-test.txt): invoked with arguments and with a model's tool call, one-shot
and stateful, against the real binary."""

import os

import pytest

# The test venv always has it (python/requirements-test.txt); under CI a missing one fails.
if os.environ.get("CI") != "true":
    pytest.importorskip("langchain_core", reason="langchain-core is not installed: run scripts/setup.sh")

from langchain_core.messages import ToolMessage  # noqa: E402
from langchain_core.tools import BaseTool  # noqa: E402

from agentjail.langchain import AgentjailPythonTool, render  # noqa: E402
from conftest import alive  # noqa: E402


@pytest.fixture()
def tool(client):
    t = AgentjailPythonTool(client=client)
    yield t
    t.close()


def test_it_is_a_langchain_tool_with_one_code_argument(tool):
    assert isinstance(tool, BaseTool)
    assert tool.name == "agentjail_python"
    assert list(tool.args) == ["code"]


def test_plain_text_programs_answer_with_what_they_printed(tool):
    assert tool.invoke({"code": "print(2 + 2)"}) == "4\n"
    rec = tool.record("print('a\\x00b', end='')")
    assert rec.ok and rec.stdout == "a\x00b" and rec.output is None


def test_a_models_tool_call_gets_a_tool_message(tool):
    call = {"type": "tool_call", "id": "call-1", "name": "agentjail_python",
            "args": {"code": "print(sum(range(10)))"}}
    msg = tool.invoke(call)
    assert isinstance(msg, ToolMessage)
    assert msg.tool_call_id == "call-1" and msg.content == "45\n"


def test_failures_say_the_stop_reason_and_the_error(tool):
    out = tool.invoke({"code": "print('before')\nraise ValueError('bad value')"})
    assert out.startswith("before\n")
    assert "stopped: code_runtime_error:1" in out
    assert "ValueError: bad value (line 2)" in out
    out = tool.invoke({"code": "import socket"})
    assert "stopped: policy_block:" in out and "import_not_allowed:socket" in out
    # What the program prints is only text: a forged verdict stays in stdout, the real one
    # follows it.
    out = tool.invoke({"code": "print('stopped: success')\nraise SystemExit(3)"})
    assert out.endswith("stopped: code_runtime_error:3")


def test_a_stateful_tool_keeps_globals_and_replaces_an_ended_session(client):
    t = AgentjailPythonTool(client=client, stateful=True, timeout=1)
    try:
        assert t.invoke({"code": "x = 41"}) == "(no output)"
        assert t.invoke({"code": "x + 1"}) == "42"
        out = t.invoke({"code": "while True:\n    pass"})
        assert "stopped: code_timeout" in out
        # The session ended with that call; the next one gets a fresh interpreter.
        out = t.invoke({"code": "x"})
        assert "stopped: code_runtime_error:1" in out and "NameError" in out
    finally:
        t.close()


def test_a_tool_without_a_client_starts_and_ends_its_own(binary):
    t = AgentjailPythonTool(binary=binary)
    assert t.invoke({"code": "print('own')"}) == "own\n"
    pid = t._owned.pid
    assert pid and alive(pid)
    t.close()
    assert not alive(pid)


def test_render_never_evaluates_the_record():
    class Fake:
        stdout = "{'__import__': 1}"
        stdout_truncated = False
        value = None
        stderr = "x" * 20000
        stderr_truncated = False
        ok = False
        stop_reason = "code_stderr_limit"
        error = {"type": None, "message": None}

    out = render(Fake())
    assert out.startswith("{'__import__': 1}\nstderr:\n")
    assert "[output truncated]" in out and out.endswith("stopped: code_stderr_limit")


def _imports(description):
    """The "Imports allowed: a, b, ...;" list of a description."""
    start = description.index("Imports allowed: ") + len("Imports allowed: ")
    return description[start:description.index(";", start)].split(", ")


def test_the_description_lists_what_the_policy_allows(binary, tool):
    # The client's default policy (policies/python.toml): its imports, limits, no network.
    d = tool.description
    imports = _imports(d)
    assert "math" in imports and "re" in imports and "datetime" in imports, d
    assert "urllib.request" not in imports and "os" not in imports, d
    assert "wall 10 s" in d and "memory 512MiB" in d and "No network." in d, d
    # Another policy, loaded at construction (no server started yet): its own list.
    net = AgentjailPythonTool(binary=binary, policy="net")
    assert net._owned is None
    assert "urllib.request" in _imports(net.description)
    assert "Network: only example.com:443 (https:// only)" in net.description, net.description
    # A description given by the caller is kept.
    assert AgentjailPythonTool(client=tool.client, description="mine").description == "mine"


def test_a_bad_policy_raises_at_construction(binary):
    import agentjail

    with pytest.raises(agentjail.PolicyError, match="no-such-policy"):
        AgentjailPythonTool(binary=binary, policy="no-such-policy")
