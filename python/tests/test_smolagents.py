"""agentjail.smolagents.AgentjailExecutor under a real smolagents CodeAgent (pinned in
python/requirements-test.txt), driven by a scripted stand-in model: no network."""

import os

import pytest

# The test venv always has it (python/requirements-test.txt); under CI a missing one fails.
if os.environ.get("CI") != "true":
    pytest.importorskip("smolagents", reason="smolagents is not installed: run scripts/setup.sh")

from smolagents import CodeAgent, tool  # noqa: E402
from smolagents.models import ChatMessage, MessageRole, Model  # noqa: E402

import agentjail  # noqa: E402
from agentjail import StopKind  # noqa: E402
from agentjail.smolagents import POLICY, AgentjailExecutor  # noqa: E402
from conftest import REPO, alive, descendants, needs_cgroups  # noqa: E402


@pytest.fixture(autouse=True)
def _cgroups():
    needs_cgroups()  # policies/smolagents.toml requires the memory cgroup


@tool
def multiply(a: int, b: int) -> int:
    """Multiplies two integers.

    Args:
        a: the first factor
        b: the second factor
    """
    return a * b


@tool
def shout(text: str) -> str:
    """Upper-cases a text.

    Args:
        text: what to shout
    """
    return text.upper() + "!"


class Scripted(Model):
    """A stand-in model: answers each step with the next scripted code block."""

    def __init__(self, steps):
        super().__init__(model_id="scripted")
        self.steps = list(steps)
        self.seen = []

    def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kw):
        self.seen.append(messages)
        code = self.steps.pop(0)
        return ChatMessage(role=MessageRole.ASSISTANT, content=f"Thought: next.\n<code>\n{code}\n</code>")


class Recording(AgentjailExecutor):
    def __init__(self, *a, **kw):
        self.records = []
        super().__init__(*a, **kw)

    def _exec(self, code):
        rec = super()._exec(code)
        self.records.append((code, rec))
        return rec


def run_agent(steps, binary, **kw):
    ex = Recording(binary=binary, **kw)
    model = Scripted(steps)
    agent = CodeAgent(tools=[multiply, shout], model=model, executor=ex, max_steps=len(steps), verbosity_level=0)
    try:
        result = agent.run("Compute things.")
    finally:
        pid = ex.client.pid
        below = descendants(pid)
        agent.cleanup()
    return result, ex, model, pid, below


def observations(model):
    return "\n".join(str(m) for msgs in model.seen for m in msgs)


def test_code_agent_calls_tools_keeps_state_and_answers(binary):
    result, ex, model, pid, below = run_agent(
        [
            "x = multiply(6, 7)\nprint('x is', x)",
            "y = x + 1\nword = shout('done')\nprint(y, word)",
            "final_answer({'answer': y, 'word': word, 'long': 'z' * 5000, 'items': [1, 2.5, None]})",
        ],
        binary,
    )
    assert result == {"answer": 43, "word": "DONE!", "long": "z" * 5000, "items": [1, 2.5, None]}
    seen = observations(model)
    assert "x is 42" in seen and "43 DONE!" in seen
    # Everything sent (the executor's tool code, the model's steps) passed the check.
    for code, rec in ex.records:
        assert rec.stop.kind is not StopKind.POLICY_BLOCK, (code, rec.raw.get("decision"))
    sent = [c for c, _ in ex.records]
    assert any("class SimpleTool(Tool)" in c for c in sent)
    # cleanup() ended the server it started, and every jail below it.
    assert not alive(pid)
    assert [p for p in below if alive(p)] == []


def test_what_the_executor_sends_passes_the_shipped_policy(binary):
    ex = AgentjailExecutor(binary=binary)
    try:
        agent = CodeAgent(tools=[multiply, shout], model=Scripted([]), executor=ex, verbosity_level=0)
        ex.send_tools({**agent.tools})
        ex.send_variables({"numbers": [1, 2, 3], "name": "x", "bad name": 1, "obj": object()})
        preamble = "\n".join(ex._replay)
        d = ex.client.check(preamble)
        assert d.allowed, d.violations
        assert ex.run_code_raise_errors("numbers + [len(name)]").output == "[1, 2, 3, 1]"
    finally:
        ex.cleanup()


def test_errors_blocks_and_a_lost_session_reach_the_model(binary):
    result, ex, model, _, _ = run_agent(
        [
            "keep = 5\n1 / 0",
            "import os\nprint(os.listdir('/'))",
            "while True:\n    pass",
            # The timeout ended the session; a new one has the tools again, not `keep`.
            "print(multiply(2, 3))",
            "final_answer(multiply(3, 3))",
        ],
        binary,
        timeout=0.5,
    )
    assert result == 9
    seen = observations(model)
    assert "ZeroDivisionError" in seen
    assert "import_not_allowed:os" in seen
    assert "code_timeout" in seen and "The session ended" in seen
    assert "6" in seen
    kinds = [rec.stop.kind for _, rec in ex.records]
    assert StopKind.CODE_TIMEOUT in kinds and StopKind.POLICY_BLOCK in kinds


def test_pickle_is_refused():
    with pytest.raises(ValueError, match="allow_pickle"):
        AgentjailExecutor(allow_pickle=True)


def test_the_packaged_policy_is_the_repository_one():
    with open(POLICY, "rb") as a, open(REPO / "policies" / "smolagents.toml", "rb") as b:
        assert a.read() == b.read()


def test_uses_a_given_client_and_leaves_it_open(binary):
    with agentjail.Client(binary=binary, policy=POLICY) as c:
        ex = AgentjailExecutor(client=c)
        ex.send_tools({"multiply": multiply})
        assert ex.run_code_raise_errors("multiply(4, 5)").output == "20"
        ex.cleanup()
        assert c.run("print(1)", output_mode="text").ok


def test_the_executor_says_what_the_policy_allows(binary):
    ex = AgentjailExecutor(binary=binary)
    try:
        # policies/smolagents.toml's check.allowed_imports, as the binary loaded it.
        assert "math" in ex.authorized_imports and "re" in ex.authorized_imports
        assert "os" not in ex.authorized_imports and "urllib.request" not in ex.authorized_imports
        start = ex.description.index("Imports allowed: ") + len("Imports allowed: ")
        listed = ex.description[start:ex.description.index(";", start)].split(", ")
        assert listed == ex.authorized_imports
        assert "No network." in ex.description and "Limits per run: wall" in ex.description
        # What CodeAgent puts in the model's prompt when given them (the docstring's recipe).
        agent = CodeAgent(tools=[], model=Scripted([]), executor=ex,
                          additional_authorized_imports=ex.authorized_imports,
                          instructions=ex.description)
        assert "'urllib.request'" not in agent.system_prompt and "'re'" in agent.system_prompt
        assert ex.description in agent.system_prompt
    finally:
        ex.cleanup()
