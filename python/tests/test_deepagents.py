"""agentjail.deepagents.AgentjailSandbox as deepagents (pinned in python/requirements-test.txt)
uses a sandbox backend: its own file tools and `execute`, driven by a scripted deep agent (a
fake chat model that issues the tool calls a model would) that writes a module and its test,
runs the test, and reads the result; against the real binary under policies/workspace.toml."""

import os

import pytest

# The test venv always has it (python/requirements-test.txt); under CI a missing one fails.
if os.environ.get("CI") != "true":
    pytest.importorskip("deepagents", reason="deepagents is not installed: run scripts/setup.sh")

from deepagents import create_deep_agent  # noqa: E402
from deepagents.backends.protocol import SandboxBackendProtocol  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402

import agentjail  # noqa: E402
from agentjail.deepagents import AgentjailSandbox, workspace_path  # noqa: E402
from conftest import REPO, needs_cgroups  # noqa: E402

POLICY = str(REPO / "policies" / "workspace.toml")

CALC = "def add(a, b):\n    return a + b\n"
TEST = (
    "import unittest\nfrom calc import add\n\n\n"
    "class T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n\n"
    "if __name__ == '__main__':\n    unittest.main()\n"
)


class ScriptedModel(GenericFakeChatModel):
    """A chat model that answers with the next scripted message, whatever it is told; its
    tools are deepagents' own (bind_tools keeps the script)."""

    def bind_tools(self, tools, **kwargs):
        return self


def call(name, args, n):
    return {"name": name, "args": args, "id": f"call-{n}", "type": "tool_call"}


@pytest.fixture(scope="module")
def client(binary):
    needs_cgroups()
    with agentjail.Client(binary=binary, policy=POLICY, args=["--pool", "1"]) as c:
        yield c


def test_it_is_a_deepagents_sandbox(client):
    with AgentjailSandbox(client=client) as sb:
        assert isinstance(sb, SandboxBackendProtocol)
        assert sb.id == sb.workspace.id
        r = sb.execute("echo hi; echo err >&2; exit 3")
        assert (r.output, r.exit_code, r.truncated) == ("hi\nerr\n", 3, False)


def test_files_go_in_and_out_with_per_file_errors(client):
    with AgentjailSandbox(client=client) as sb:
        up = sb.upload_files([("/workspace/a/b.txt", b"bee"), ("rel.bin", b"\x00\x01"), ("/etc/x", b"no")])
        assert [(u.path, u.error) for u in up] == [
            ("/workspace/a/b.txt", None), ("rel.bin", None), ("/etc/x", "permission_denied")]
        down = sb.download_files(["/workspace/a/b.txt", "rel.bin", "/workspace/none.txt", "/etc/passwd"])
        assert [d.content for d in down[:2]] == [b"bee", b"\x00\x01"]
        assert down[2].error == "file_not_found" and down[2].content is None
        assert down[3].error == "invalid_path"
        # deepagents' own file tools, built on execute: ls, read, write, edit, grep, glob.
        assert sb.write("/workspace/notes.md", "one\ntwo\n").error is None
        assert sb.edit("/workspace/notes.md", "two", "three").error is None
        assert "three" in str(sb.read("/workspace/notes.md"))
        assert any("notes.md" in str(e) for e in sb.ls("/workspace").entries or [])
        assert "notes.md" in str(sb.grep("three", path="/workspace"))


def test_workspace_paths_are_relative_to_the_workspace():
    assert workspace_path("/workspace/x/y.py") == "x/y.py"
    assert workspace_path("x/../y.py") == "y.py"
    for bad in ("/workspace", "/etc/passwd", "../x", "/workspace/../etc", "a\x00b", ""):
        assert workspace_path(bad) is None, bad


def test_a_scripted_deep_agent_writes_a_file_runs_a_test_and_reads_the_result(client):
    script = iter([
        AIMessage(content="", tool_calls=[call("write_file", {"file_path": "/workspace/calc.py", "content": CALC}, 1)]),
        AIMessage(content="", tool_calls=[call("write_file", {"file_path": "/workspace/test_calc.py", "content": TEST}, 2)]),
        AIMessage(content="", tool_calls=[call(
            "execute", {"command": "cd /workspace && python3 -m unittest -q test_calc > result.txt 2>&1; echo exit=$?"}, 3)]),
        AIMessage(content="", tool_calls=[call("read_file", {"file_path": "/workspace/result.txt"}, 4)]),
        AIMessage(content="The test passed."),
    ])
    with AgentjailSandbox(client=client) as sb:
        agent = create_deep_agent(model=ScriptedModel(messages=script), backend=sb)
        out = agent.invoke({"messages": [{"role": "user", "content": "write calc.py, test it, report"}]})
        tools = {m.tool_call_id: m for m in out["messages"] if isinstance(m, ToolMessage)}
        assert set(tools) == {"call-1", "call-2", "call-3", "call-4"}, out["messages"]
        assert "exit=0" in tools["call-3"].content, tools["call-3"].content
        assert "OK" in tools["call-4"].content, tools["call-4"].content
        assert out["messages"][-1].content == "The test passed."
        # What the agent left is in the workspace, read back through the backend.
        got = sb.download_files(["/workspace/calc.py", "/workspace/result.txt"])
        assert got[0].content == CALC.encode()
        assert b"OK" in got[1].content
        ws_id = sb.id
    # The sandbox closed its workspace.
    with pytest.raises(agentjail.UnknownSession):
        client._conn.request("workspace_exec", workspace=ws_id, command="true")
