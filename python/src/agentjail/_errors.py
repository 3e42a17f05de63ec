"""The exceptions of the client: one base, one class per family of stop reason.

Every error the client raises on purpose is an :class:`AgentjailError`. A record that
stopped becomes, through :meth:`Record.raise_for_status`, the subclass of
:class:`StoppedError` for its family, with the record attached.
"""

from __future__ import annotations

from typing import Any, Optional


class AgentjailError(Exception):
    """Base of every error this package raises on purpose."""


class PolicyError(AgentjailError, ValueError):
    """The policy given to a client that starts ``agentjail serve`` does not load: raised by
    the constructor, with the binary's own message (the file, line, key and a hint, or every
    directory an unknown name was looked for in)."""


class ProtocolError(AgentjailError):
    """The server sent something that is not the protocol: a line that is not JSON, too
    long, nested too deep, or a record or response whose fields have the wrong types.
    Nothing from it is evaluated; the message says what was wrong."""


class ConnectionClosed(AgentjailError):
    """The connection to the server ended (the server exited, or the client was closed)
    before the answer came."""


class ServerError(AgentjailError):
    """The server answered a request with ``{"error": {"code", "message"}}``."""

    def __init__(self, code: str, message: str) -> None:
        # Not super(): a subclass may also be a StoppedError (SessionUnavailable), whose
        # __init__ takes a record.
        Exception.__init__(self, f"{code}: {message}")
        self.code = code
        self.message = message


class UnknownSession(ServerError):
    """``unknown_session``: the session ended long ago, or belongs to another connection."""


class SessionBusy(ServerError):
    """``session_busy``: another call is running in this session."""


class UnknownWorkspace(UnknownSession):
    """``unknown_workspace``: the workspace was closed or ended, or belongs to another
    connection."""


class UnknownCommand(ServerError):
    """``unknown_command``: no such background command in this workspace (another
    workspace's, or one whose record was already given)."""


class WorkspaceBusy(SessionBusy):
    """``workspace_busy``: another call is running in this workspace."""


class Unauthorized(ServerError):
    """``unauthorized``: the HTTP server wants a token from its ``--token-file`` (``token=``
    was missing or wrong)."""


class TooManyRequests(ServerError):
    """``too_many_requests``: the server has as many requests waiting as it takes (HTTP 429,
    or a socket client past its per-client bound); retry later."""


class StoppedError(AgentjailError):
    """The run stopped: ``record.status`` is ``"stopped"``. ``.record`` is the whole
    :class:`~agentjail.Record`; ``.stop_reason`` its reason."""

    def __init__(self, record: Any, message: Optional[str] = None) -> None:
        self.record = record
        self.stop_reason = getattr(record, "stop_reason", None)
        super().__init__(message or _describe(record))


class InvalidAction(StoppedError):
    """``invalid_action:*``: the action broke the contract (client-side bug or bad input)."""


class InvalidRequest(StoppedError):
    """``invalid_request:*``: the request asked for something the policy does not give
    (network, a denied output mode, a call on an ended session)."""


class PolicyBlocked(StoppedError):
    """``policy_block:*``: the language or the static check denied the code; it never ran."""


class CodeError(StoppedError):
    """The code ran and failed: base of the ``code_*`` and ``invalid_code_output`` families."""


class CodeTimeout(CodeError):
    """``code_timeout``: the wall-clock limit."""


class ResourceLimit(CodeError):
    """``code_cpu_limit``, ``code_memory_limit``, ``code_pids_limit``,
    ``code_output_too_large``, ``code_stderr_too_large``."""


class ForbiddenSyscall(CodeError):
    """``code_forbidden_syscall:<name>``: a syscall outside the allowlist."""


class CodeRuntimeError(CodeError):
    """``code_runtime_error:<exit code>``: the program exited non-zero (``record.error``
    has the exception's type, message and line)."""


class CodeKilled(CodeError):
    """``code_killed:<signal>``: a signal killed the program."""


class InvalidOutput(CodeError):
    """``invalid_code_output:*``: the program's stdout was not the JSON object asked for."""


class SandboxUnavailable(StoppedError):
    """``sandbox_unavailable:<control>``: a control the policy requires cannot be enforced
    here, or the jail could not be set up. Also raised for the ``unavailable`` error of
    ``session_start`` (then ``.record`` is None)."""


class BudgetExceeded(StoppedError):
    """``max_seconds``: the run's total budget ran out."""


class Interrupted(StoppedError):
    """``interrupted:*``: agentjail itself was asked to stop while the code ran."""


class AgentjailInternalError(StoppedError):
    """``agentjail_error:*``: agentjail itself could not work (e.g. an invalid policy)."""


class NodeLost(StoppedError, ConnectionClosed):
    """``node_lost:<node id>``: a fleet's node, its Ray actor or its ``agentjail serve`` went
    away before answering (:mod:`agentjail.fleet`). Whether the job ran is unknown and
    nothing of its result came back; ``.record`` is the record that says so."""


class UnknownStop(StoppedError):
    """A stop reason this version of the client does not know."""


def _describe(record: Any) -> str:
    reason = getattr(record, "stop_reason", None)
    err = getattr(record, "error", None)
    msg = None
    if isinstance(err, dict):
        m = err.get("message")
        t = err.get("type")
        if isinstance(m, str):
            msg = f"{t}: {m}" if isinstance(t, str) and t else m
    text = f"stopped: {reason!r}"
    if msg:
        text += f" ({msg[:500]})"
    return text
