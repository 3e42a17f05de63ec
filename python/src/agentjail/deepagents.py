"""``AgentjailSandbox``: a LangChain deepagents sandbox backend whose commands and files live
in an agentjail workspace.

    from deepagents import create_deep_agent
    from agentjail.deepagents import AgentjailSandbox

    with AgentjailSandbox() as sandbox:          # a private `agentjail serve`, one workspace
        agent = create_deep_agent(model=..., backend=sandbox)
        agent.invoke({"messages": [{"role": "user", "content": "write and test fib.py"}]})

deepagents' ``BaseSandbox`` builds every file tool (ls, read, write, edit, grep, glob) on
three primitives, which this class maps onto the workspace: ``execute(command, timeout)``
is ``workspace_exec`` of the shell line (stdout then stderr, the exit code, and whether
agentjail cut the output), ``upload_files`` is ``workspace_put`` and ``download_files`` is
``workspace_get``. The agent's working directory is ``/workspace``, the only writable
place in the jail: an absolute path under it (``/workspace/src/x.py``) and a relative one
(``src/x.py``) name the same file; other absolute paths can be read through ``execute``
but not uploaded to (``permission_denied``).

Needs the ``deepagents`` extra (``pip install './python[deepagents]'``). ``workspace=``
adopts a :class:`~agentjail.Workspace` (not closed by :meth:`close`); ``client=`` starts
one on a shared :class:`~agentjail.Client`; with neither, the sandbox starts its own client
(``policy``, ``binary``, ``args``) and :meth:`close` ends both.
"""

from __future__ import annotations

import posixpath
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from deepagents.backends.protocol import (
    ExecuteResponse,
    FileDownloadResponse,
    FileUploadResponse,
)
from deepagents.backends.sandbox import BaseSandbox

from . import _errors as E
from ._client import Client
from ._record import Record
from ._workspace import Workspace

ROOT = "/workspace"


def workspace_path(path: str) -> Optional[str]:
    """``path`` relative to ``/workspace``, or None when it names a place outside it."""
    if not isinstance(path, str) or not path or "\x00" in path:
        return None
    if path.startswith("/"):
        norm = posixpath.normpath(path)
        if norm == ROOT or not norm.startswith(ROOT + "/"):
            return None
        return norm[len(ROOT) + 1:]
    norm = posixpath.normpath(path)
    if norm in (".", "..") or norm.startswith("../"):
        return None
    return norm


def file_error(err: Optional[Mapping[str, Any]]) -> str:
    """A server's per-file error as one of deepagents' ``FileOperationError`` words where
    one fits, else the server's code."""
    if not err:
        return "file_not_found"
    code = str(err.get("code", ""))
    text = (code + " " + str(err.get("message", ""))).lower()
    if "not_found" in text or "no such" in text or "not found" in text:
        return "file_not_found"
    if "directory" in text:
        return "is_directory"
    if "path" in text or "invalid" in text:
        return "invalid_path"
    if "permission" in text or "denied" in text or "symlink" in text:
        return "permission_denied"
    return code or "error"


def render(rec: Record) -> Tuple[str, bool]:
    """The record as deepagents shows a command's output: stdout then stderr, and when
    agentjail stopped the command, a last line saying why."""
    out = rec.stdout
    if rec.stderr:
        out += ("" if not out or out.endswith("\n") else "\n") + rec.stderr
    truncated = rec.stdout_truncated or rec.stderr_truncated
    if not rec.ok and not rec.stop_reason.startswith("code_runtime_error"):
        out += ("" if not out or out.endswith("\n") else "\n") + f"[agentjail: stopped: {rec.stop_reason}]"
    return out, truncated


class AgentjailSandbox(BaseSandbox):
    """A deepagents sandbox backend on one agentjail workspace (see the module's text)."""

    def __init__(
        self,
        *,
        workspace: Optional[Workspace] = None,
        client: Optional[Client] = None,
        policy: Optional[str] = None,
        binary: Optional[str] = None,
        args: Sequence[str] = (),
        policy_hints: Optional[Mapping[str, Any]] = None,
        default_timeout: Optional[float] = None,
    ) -> None:
        self._own_client: Optional[Client] = None
        self._own_workspace = workspace is None
        if workspace is None:
            if client is None:
                client = self._own_client = Client(policy=policy, binary=binary, args=args)
            workspace = client.workspace(policy_hints=policy_hints)
        self.workspace = workspace
        self.default_timeout = default_timeout

    @property
    def id(self) -> str:
        return self.workspace.id

    def execute(self, command: str, *, timeout: Optional[int] = None) -> ExecuteResponse:
        t = timeout if timeout is not None else self.default_timeout
        try:
            rec = self.workspace.exec(command, timeout_s=t if t else None)
        except E.AgentjailError as e:
            return ExecuteResponse(output=f"[agentjail: {e}]", exit_code=None, truncated=False)
        out, truncated = render(rec)
        return ExecuteResponse(output=out, exit_code=rec.exit_code, truncated=truncated)

    def upload_files(self, files: List[Tuple[str, bytes]]) -> List[FileUploadResponse]:
        answers: List[Optional[FileUploadResponse]] = [None] * len(files)
        batch = []
        for i, (path, content) in enumerate(files):
            rel = workspace_path(path)
            if rel is None:
                answers[i] = FileUploadResponse(path=path, error="permission_denied")
            else:
                batch.append((i, path, rel, bytes(content)))
        if batch:
            try:
                self.workspace.put([_entry(rel, c) for _, _, rel, c in batch])
                for i, path, _, _ in batch:
                    answers[i] = FileUploadResponse(path=path)
            except E.ServerError:
                # One bad file refuses the whole request: put each alone to say which.
                for i, path, rel, c in batch:
                    try:
                        self.workspace.put([_entry(rel, c)])
                        answers[i] = FileUploadResponse(path=path)
                    except E.ServerError as e:
                        answers[i] = FileUploadResponse(
                            path=path, error=file_error({"code": e.code, "message": e.message})
                        )
        return [a for a in answers if a is not None]

    def download_files(self, paths: List[str]) -> List[FileDownloadResponse]:
        answers: List[Optional[FileDownloadResponse]] = [None] * len(paths)
        batch = []
        for i, path in enumerate(paths):
            rel = workspace_path(path)
            if rel is None:
                answers[i] = FileDownloadResponse(path=path, error="invalid_path")
            else:
                batch.append((i, path, rel))
        if batch:
            try:
                got = self.workspace.get([rel for _, _, rel in batch])
                for (i, path, _), f in zip(batch, got):
                    answers[i] = FileDownloadResponse(
                        path=path, content=f.content,
                        error=None if f.content is not None else file_error(f.error),
                    )
            except E.ServerError:
                for i, path, rel in batch:
                    try:
                        f = self.workspace.get([rel])[0]
                        answers[i] = FileDownloadResponse(
                            path=path, content=f.content,
                            error=None if f.content is not None else file_error(f.error),
                        )
                    except E.ServerError as e:
                        answers[i] = FileDownloadResponse(
                            path=path, error=file_error({"code": e.code, "message": e.message})
                        )
        return [a for a in answers if a is not None]

    def close(self) -> None:
        """Close the workspace this sandbox started, and the client it started."""
        if self._own_workspace:
            self.workspace.close()
        if self._own_client is not None:
            self._own_client.close()

    def __enter__(self) -> "AgentjailSandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _entry(rel: str, content: bytes) -> Mapping[str, Any]:
    import base64

    return {"path": rel, "content_base64": base64.b64encode(content).decode("ascii")}
