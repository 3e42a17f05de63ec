"""``AgentjailPythonTool``: a LangChain tool that runs the model's Python in agentjail.

    from agentjail.langchain import AgentjailPythonTool

    tool = AgentjailPythonTool()              # one-shot jails, judge mode (plain text out)
    tool = AgentjailPythonTool(stateful=True) # one session: globals kept between calls
    print(tool.invoke({"code": "print(2 + 2)"}))

A thin wrapper: a ``langchain_core.tools.BaseTool`` whose ``_run`` is
:meth:`agentjail.Client.run` with ``output_mode="text"`` (or, with ``stateful=True``,
:meth:`agentjail.Session.exec`), and whose answer is the record rendered as text for the
model: what the program printed, and when it did not succeed, the stop reason and the
error agentjail recorded. Nothing the program printed is interpreted on the host.

Needs the ``langchain`` extra (``pip install './python[langchain]'``). ``client=`` shares a
:class:`~agentjail.Client` (not closed by :meth:`close`); otherwise the tool starts one
with ``policy`` and ``binary`` on first use and :meth:`close` ends it. A stateful tool's
session that a hard limit ended is replaced on the next call (the answer said why).
"""

from __future__ import annotations

import threading
from typing import Any, Optional, Type

from langchain_core.tools import BaseTool
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from ._client import DEFAULT_POLICY, Client, Session, find_binary
from ._policy import PolicyInfo, policy_info
from ._record import Record

#: Most characters of stdout and of stderr put in one answer (the record's caps hold too).
MAX_SHOWN = 8000


#: The start of the tool's description; what the policy allows follows.
DESCRIPTION_HEAD = (
    "Runs Python code in agentjail's sandbox (a Linux namespace jail) and returns what it "
    "printed: use print() to see results."
)


class _Code(BaseModel):
    code: str = Field(description="Python source to run. Print what you want to see.")


def render(record: Record) -> str:
    """The record as the model reads it: output first, then what went wrong, if anything."""
    parts = []
    if record.stdout:
        parts.append(_cut(record.stdout, record.stdout_truncated))
    if record.value is not None:
        parts.append(record.value)
    if record.stderr:
        parts.append("stderr:\n" + _cut(record.stderr, record.stderr_truncated))
    if not record.ok:
        line = "stopped: " + record.stop_reason
        err = record.error or {}
        if err.get("type") or err.get("message"):
            what = ": ".join(str(x) for x in (err.get("type"), err.get("message")) if x)
            if err.get("line") is not None:
                what += " (line %s)" % err["line"]
            line += "\n" + what
        parts.append(line)
    return "\n".join(parts) if parts else "(no output)"


def _cut(text: str, truncated: bool) -> str:
    if len(text) > MAX_SHOWN:
        text, truncated = text[:MAX_SHOWN], True
    return text + ("\n[output truncated]" if truncated else "")


class AgentjailPythonTool(BaseTool):
    """Runs Python in an agentjail jail and answers with what it printed."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = "agentjail_python"
    #: Replaced at construction by :data:`DESCRIPTION_HEAD` and what the policy allows
    #: (:meth:`PolicyInfo.describe`: its imports, limits and network), unless given; this
    #: generic text stays only for a ``client=`` whose policy the client cannot know
    #: (``url=``, ``socket=``).
    description: str = (
        "Runs Python 3 code in a locked-down sandbox (no host files, time and memory "
        "limits) and returns what it printed. Use print() to see results."
    )
    args_schema: Type[BaseModel] = _Code
    client: Optional[Client] = None
    policy: Optional[str] = None
    binary: Optional[str] = None
    stateful: bool = False
    timeout: Optional[float] = None

    _owned: Optional[Client] = PrivateAttr(default=None)
    _session: Optional[Session] = PrivateAttr(default=None)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, **fields: Any) -> None:
        super().__init__(**fields)
        # Here rather than in a validator, so that a PolicyError reaches the caller as
        # itself, not wrapped in pydantic's ValidationError.
        if "description" in self.model_fields_set:
            return
        info: Optional[PolicyInfo]
        if self.client is not None:
            info = self.client.policy_info
        else:
            # The policy is loaded now, so a bad policy or binary raises here, not at the
            # first call; the client itself starts on first use.
            info = policy_info(find_binary(self.binary), self.policy or DEFAULT_POLICY)
        if info is not None:
            self.description = DESCRIPTION_HEAD + " " + info.describe()

    def _client(self) -> Client:
        if self.client is not None:
            return self.client
        if self._owned is None:
            self._owned = Client(policy=self.policy, binary=self.binary)
        return self._owned

    def record(self, code: str) -> Record:
        """The whole record of one call (``_run`` renders it)."""
        with self._lock:
            client = self._client()
            if not self.stateful:
                return client.run(code, output_mode="text", timeout=self.timeout)
            if self._session is None:
                self._session = client.session()
            rec = self._session.exec(code, timeout=self.timeout)
            if (rec.session or {}).get("ended"):
                self._session.close()
                self._session = None
            return rec

    def _run(self, code: str, run_manager: Any = None) -> str:
        return render(self.record(code))

    def close(self) -> None:
        """End the session (stateful) and the client this tool started."""
        with self._lock:
            if self._session is not None:
                self._session.close()
                self._session = None
            if self._owned is not None:
                self._owned.close()
                self._owned = None
