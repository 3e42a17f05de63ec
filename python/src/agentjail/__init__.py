"""agentjail-client: run AI-written code in an agentjail jail from Python.

    import agentjail
    with agentjail.Client() as client:
        record = client.run("print(2 + 2)")
        print(record.ok, record.stdout)

``Client`` starts and owns ``agentjail serve`` (or connects to one with ``socket=``, or to
``agentjail serve --http`` with ``url=`` and ``token=``);
``AsyncClient`` is its asyncio twin. Pure standard library.
"""

from ._errors import (
    AgentjailError,
    AgentjailInternalError,
    BudgetExceeded,
    CodeError,
    CodeKilled,
    CodeRuntimeError,
    CodeTimeout,
    ConnectionClosed,
    ForbiddenSyscall,
    Interrupted,
    InvalidAction,
    InvalidOutput,
    InvalidRequest,
    NodeLost,
    PolicyBlocked,
    PolicyError,
    ProtocolError,
    ResourceLimit,
    SandboxUnavailable,
    ServerError,
    SessionBusy,
    StoppedError,
    TooManyRequests,
    Unauthorized,
    UnknownSession,
    UnknownCommand,
    UnknownStop,
    UnknownWorkspace,
    WorkspaceBusy,
)
from ._record import Artifact, Decision, Record, Result, Stop, StopKind
from ._protocol import SessionUnavailable, build_action
from ._client import DEFAULT_POLICY, Client, NotSupportedYet, Session, find_binary
from ._policy import PolicyInfo
from ._async import AsyncClient, AsyncSession
from ._workspace import (AsyncCommandHandle, AsyncWorkspace, CommandHandle, CommandOutput, Workspace,
                         WorkspaceEntry, WorkspaceFile)

__version__ = "0.1.0"

__all__ = [
    "AgentjailError", "AgentjailInternalError", "Artifact", "AsyncClient", "AsyncSession",
    "BudgetExceeded", "Client", "CodeError", "CodeKilled", "CodeRuntimeError", "CodeTimeout",
    "ConnectionClosed", "Decision", "ForbiddenSyscall", "Interrupted", "InvalidAction",
    "InvalidOutput", "InvalidRequest", "NodeLost", "NotSupportedYet", "PolicyBlocked", "PolicyError", "ProtocolError",
    "Record", "ResourceLimit", "Result", "SandboxUnavailable", "ServerError", "Session", "SessionBusy",
    "SessionUnavailable", "Stop", "StopKind", "StoppedError", "TooManyRequests", "Unauthorized",
    "UnknownSession", "UnknownStop", "UnknownWorkspace", "Workspace", "WorkspaceBusy",
    "WorkspaceFile", "AsyncWorkspace", "PolicyInfo", "UnknownCommand", "CommandHandle",
    "AsyncCommandHandle", "CommandOutput", "WorkspaceEntry",
    "DEFAULT_POLICY", "build_action", "find_binary",
]
