"""``AgentjailExecutor``: a smolagents ``RemotePythonExecutor`` whose kernel is an agentjail
session (one jail, one interpreter, globals kept between the agent's steps).

    from smolagents import CodeAgent
    from agentjail.smolagents import AgentjailExecutor

    executor = AgentjailExecutor()
    agent = CodeAgent(tools=[...], model=model, executor=executor,
                      additional_authorized_imports=executor.authorized_imports,
                      instructions=executor.description)

``authorized_imports`` and ``description`` come from the policy the executor's client
loaded (its ``check.allowed_imports``, limits and network), so the model's prompt names
what the jail accepts.

Needs the ``smolagents`` extra (``pip install './python[smolagents]'``). The default policy
is the one shipped for it (``policies/smolagents.toml``, :data:`POLICY`).

What goes into the jail besides the model's code is kept to what agentjail's static check
accepts under that policy: smolagents' other executors send a preamble built on
``getattr``, ``type``, ``locals()`` and dunder attributes (its final-answer hook, its
variable deserializer, a ``Tool`` base class with ``__call__``), names the checker denies
under every policy. This executor sends, instead, each tool's own source as smolagents
renders it (``instance_to_source``) bound as ``name = ToolClass().forward``, variables as
JSON literals, and a ``final_answer`` that prints the answer as JSON after a per-executor
nonce and raises ``FinalAnswerException``. The answer is read back with ``json.loads``:
nothing made inside the jail is ever unpickled on the host (``allow_pickle`` is refused).
"""

from __future__ import annotations

import json
import keyword
import os
import secrets
from typing import Any, Dict, List, Optional, Tuple

from smolagents.local_python_executor import CodeOutput
from smolagents.monitoring import LogLevel
from smolagents.remote_executors import RemotePythonExecutor
from smolagents.tools import Tool
from smolagents.utils import AgentError, instance_to_source

from . import _errors as E
from ._client import Client, Session
from ._record import Record, StopKind

#: The policy shipped for smolagents (a copy of the repository's policies/smolagents.toml).
POLICY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "policies", "smolagents.toml")

_BASE = "from typing import Any\n\n\nclass Tool:\n    pass\n"


class AgentjailExecutor(RemotePythonExecutor):
    """Runs a ``CodeAgent``'s code in an agentjail session.

    ``client``: a :class:`~agentjail.Client` to use (not closed by :meth:`cleanup`); else one
    is started with ``policy`` (default :data:`POLICY`), ``binary`` and ``client_kwargs``.
    ``timeout``: seconds per step (may only lower the policy's). A step that breaks a hard
    limit ends the session; the next step starts a new one and sends the tools and
    variables again (the agent's other globals are gone, and the error said why).
    """

    def __init__(
        self,
        additional_imports: Optional[List[str]] = None,
        logger: Any = None,
        *,
        client: Optional[Client] = None,
        policy: Optional[str] = None,
        binary: Optional[str] = None,
        timeout: Optional[float] = None,
        allow_pickle: bool = False,
        **client_kwargs: Any,
    ) -> None:
        if allow_pickle:
            raise ValueError("AgentjailExecutor never unpickles what comes out of the jail: allow_pickle must be False")
        if logger is None:
            from smolagents.monitoring import AgentLogger

            logger = AgentLogger(level=LogLevel.INFO)
        super().__init__(list(additional_imports or []), logger, allow_pickle=False)
        self._own_client = client is None
        self.client = client or Client(policy=policy or POLICY, binary=binary, **client_kwargs)
        info = self.client.policy_info
        #: The modules the policy's static check accepts (pass them to ``CodeAgent`` as
        #: ``additional_authorized_imports``); empty when the client cannot know its policy.
        self.authorized_imports: List[str] = info.allowed_imports if info is not None else []
        #: What the policy allows, for the agent's prompt (``CodeAgent(instructions=...)``):
        #: imports, limits, network (:meth:`agentjail.PolicyInfo.describe`).
        self.description: str = (
            "Your code runs in agentjail's sandbox. " + info.describe() if info is not None
            else "Your code runs in agentjail's sandbox under the server's policy."
        )
        self.timeout = timeout
        self._nonce = "\x1eagentjail-final-" + secrets.token_hex(16) + ":"
        self._replay: List[str] = []  # the tool and variable code, sent again to a new session
        self._session: Optional[Session] = None
        self.last_record: Optional[Record] = None
        self.installed_packages = self.install_packages(self.additional_imports)
        self.logger.log("agentjail session executor is ready", level=LogLevel.INFO)

    # -- smolagents' interface ---------------------------------------------------------------
    def run_code_raise_errors(self, code: str) -> CodeOutput:
        return self._run(code)

    def send_tools(self, tools: Dict[str, Any]) -> None:
        parts = [_BASE, self._final_answer_code()]
        for name, tool in tools.items():
            if name == "final_answer":
                continue  # ours, above: the answer comes back as JSON
            if not isinstance(tool, Tool) or not name.isidentifier() or keyword.iskeyword(name):
                self.logger.log(f"agentjail: {name!r} is not a tool that can run in a jail; not sent", level=LogLevel.INFO)
                continue
            reqs = [r for r in tool.to_dict().get("requirements", []) if r != "smolagents"]
            if reqs:
                self.install_packages(reqs)
            src = instance_to_source(tool, base_cls=Tool).replace("from smolagents.tools import Tool", "")
            parts.append(f"{src}\n{name} = {type(tool).__name__}().forward\n")
        self._send("\n\n".join(parts))

    def send_variables(self, variables: Dict[str, Any]) -> None:
        lines = []
        for name, value in (variables or {}).items():
            if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) or name.startswith("__"):
                self.logger.log(f"agentjail: variable {name!r} is not a plain name; not sent", level=LogLevel.INFO)
                continue
            try:
                text = json.dumps(value, allow_nan=False)
            except (TypeError, ValueError):
                self.logger.log(f"agentjail: variable {name!r} is not JSON; not sent", level=LogLevel.INFO)
                continue
            lines.append(f"{name} = _aj_json.loads({text!r})")
        if lines:
            self._send("import json as _aj_json\n" + "\n".join(lines) + "\n")

    def _send(self, code: str) -> None:
        out = self.run_code_raise_errors(code)
        self._replay.append(code)  # sent again to a new session if this one ends
        if out.logs:
            self.logger.log(out.logs)

    def _final_answer_code(self) -> str:
        return (
            "import json as _aj_json\n\n\n"
            "class FinalAnswerException(BaseException):\n    pass\n\n\n"
            "def final_answer(answer):\n"
            f"    print({self._nonce!r} + _aj_json.dumps(answer, default=str), flush=True)\n"
            "    raise FinalAnswerException('final answer')\n"
        )

    def install_packages(self, additional_imports: List[str]) -> List[str]:
        # Nothing is installed into a jail: what the code may import is the policy's
        # allowed_imports, from the host's read-only Python.
        if additional_imports:
            self.logger.log(
                f"agentjail installs no packages; {additional_imports} must be importable on the host "
                "and allowed by the policy's check.allowed_imports",
                level=LogLevel.INFO,
            )
        return list(additional_imports)

    def cleanup(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None
        if self._own_client:
            self.client.close()

    def delete(self) -> None:
        self.cleanup()

    # -- the session ---------------------------------------------------------------------------
    def _ensure_session(self) -> Session:
        if self._session is None:
            self._session = self.client.session()
            for code in self._replay:
                self._exec(code)
        return self._session

    def _exec(self, code: str) -> Record:
        assert self._session is not None
        rec = self._session.exec(code, timeout=self.timeout)
        self.last_record = rec
        if rec.session and rec.session.get("ended"):
            self._session = None
        return rec

    def _run(self, code: str) -> CodeOutput:
        self._ensure_session()
        try:
            rec = self._exec(code)
        except E.UnknownSession:
            self._session = None
            self._ensure_session()
            rec = self._exec(code)
        stdout, answer = self._split_answer(rec.stdout)
        logs = stdout + (rec.stderr if not rec.ok and rec.stop.kind is not StopKind.CODE_RUNTIME_ERROR else "")
        if rec.ok:
            return CodeOutput(output=rec.value, logs=stdout, is_final_answer=False)
        err = rec.error if isinstance(rec.error, dict) else {}
        if rec.stop.kind is StopKind.CODE_RUNTIME_ERROR and err.get("type") == self.FINAL_ANSWER_EXCEPTION:
            if answer is None:
                raise AgentError("the final answer did not come back from the jail (stdout cut at its cap?)", self.logger)
            try:
                value = json.loads(answer)
            except ValueError:
                raise AgentError("the final answer that came back from the jail is not JSON", self.logger) from None
            return CodeOutput(output=value, logs=stdout, is_final_answer=True)
        if rec.stop.kind is StopKind.CODE_RUNTIME_ERROR:
            where = f" (line {err['line']})" if isinstance(err.get("line"), int) else ""
            message = (
                f"{stdout}\nExecuting code yielded an error:\n{err.get('type', 'Error')}{where}\n"
                f"{err.get('message', '')}\n{rec.stderr}"
            )
        else:
            message = f"{logs}\nagentjail stopped the code: {rec.stop_reason}"
            if err.get("message"):
                message += f"\n{err['message']}"
            if rec.stop.kind is StopKind.POLICY_BLOCK:
                violations = rec.raw.get("decision", {}).get("violations") if isinstance(rec.raw.get("decision"), dict) else None
                if isinstance(violations, list):
                    for v in violations[:10]:
                        if isinstance(v, dict):
                            message += f"\nline {v.get('line')}: {v.get('rule')} ({v.get('detail')})"
            if self._session is None:
                message += "\nThe session ended: variables defined in earlier steps are gone."
        raise AgentError(message, self.logger)

    def _split_answer(self, stdout: str) -> Tuple[str, Optional[str]]:
        i = stdout.rfind(self._nonce)
        if i < 0:
            return stdout, None
        line = stdout[i + len(self._nonce):]
        line = line[:-1] if line.endswith("\n") else line
        return stdout[:i], line
