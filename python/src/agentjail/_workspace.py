"""Workspaces: one jail with a writable ``/workspace`` that lasts across calls, where
commands run one after another and files go in and out (``workspace_*`` ops of
``agentjail serve``). :class:`Workspace` for :class:`~agentjail.Client`,
:class:`AsyncWorkspace` for :class:`~agentjail.AsyncClient`."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _errors as E
from . import _protocol as P
from . import _stream as S
from ._record import Record

Command = Union[str, Sequence[str]]


@dataclass(frozen=True)
class WorkspaceFile:
    """A file taken out of a workspace: ``content`` is its bytes (checked against
    ``sha256``), or None with ``error`` set when the server could not give it."""

    path: str
    size: Optional[int]
    sha256: Optional[str]
    content: Optional[bytes] = field(default=None, repr=False)
    error: Optional[Dict[str, Any]] = None

    @property
    def text(self) -> str:
        """The content as UTF-8 text (:class:`ValueError` when there is none)."""
        if self.content is None:
            raise ValueError(f"{self.path}: no content ({self.error})")
        return self.content.decode("utf-8")


def exec_fields(
    command: Command,
    cwd: Optional[str],
    stdin: Union[str, bytes, None],
    env: Optional[Mapping[str, str]],
    timeout_s: Optional[float],
    background: Optional[bool],
) -> Dict[str, Any]:
    """The fields of a ``workspace_exec`` request (without the workspace id)."""
    f: Dict[str, Any] = {}
    if isinstance(command, str):
        f["command"] = command
    elif isinstance(command, (list, tuple)) and command and all(isinstance(a, str) for a in command):
        f["argv"] = list(command)
    else:
        raise TypeError("command must be a shell line (str) or a non-empty argv (list of str)")
    if cwd is not None:
        if not isinstance(cwd, str):
            raise TypeError("cwd must be a str")
        f["cwd"] = cwd
    if stdin is not None:
        if isinstance(stdin, (bytes, bytearray, memoryview)):
            try:
                f["stdin"] = bytes(stdin).decode("utf-8")
            except UnicodeDecodeError:
                f["stdin_base64"] = base64.b64encode(bytes(stdin)).decode("ascii")
        elif isinstance(stdin, str):
            f["stdin"] = stdin
        else:
            raise TypeError("stdin must be str or bytes")
    if env is not None:
        if not isinstance(env, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()
        ):
            raise TypeError("env must be a dict of str to str")
        f["env"] = dict(env)
    if timeout_s is not None:
        f["timeout_s"] = P._positive(timeout_s, "timeout_s")
    if background is not None:
        if not isinstance(background, bool):
            raise TypeError("background must be a bool")
        f["background"] = background
    return f


def get_paths(paths: Union[str, Sequence[str]]) -> List[str]:
    if isinstance(paths, str):
        return [paths]
    out = list(paths)
    if not out or not all(isinstance(p, str) for p in out):
        raise TypeError("paths must be a str or a non-empty list of str")
    return out


def parse_files(obj: Any) -> List[WorkspaceFile]:
    """``{"files": [{path, bytes, sha256, content_base64}]}`` → :class:`WorkspaceFile` s,
    every content checked against its digest and size."""
    files = obj.get("files") if isinstance(obj, dict) else None
    if not isinstance(files, list):
        raise E.ProtocolError("response.files: expected a list")
    out = []
    for i, f in enumerate(files):
        if not isinstance(f, dict) or not isinstance(f.get("path"), str):
            raise E.ProtocolError(f"response.files[{i}]: expected an object with a path")
        size, digest = f.get("bytes"), f.get("sha256")
        if size is not None and (type(size) is not int or size < 0):
            raise E.ProtocolError(f"response.files[{i}].bytes: expected a count")
        if digest is not None and not isinstance(digest, str):
            raise E.ProtocolError(f"response.files[{i}].sha256: expected a string")
        err = f.get("error")
        if isinstance(err, str):
            err = {"code": err[:200], "message": err[:2000]}
        elif err is not None and not isinstance(err, dict):
            err = {"code": "error", "message": str(err)[:2000]}
        content = None
        b64 = f.get("content_base64")
        if isinstance(b64, str):
            try:
                content = base64.b64decode(b64, validate=True)
            except ValueError:
                raise E.ProtocolError(f"response.files[{i}].content_base64: not base64") from None
            if size is not None and len(content) != size:
                raise E.ProtocolError(f"response.files[{i}]: {len(content)} bytes, the server said {size}")
            if digest is not None and hashlib.sha256(content).hexdigest() != digest:
                raise E.ProtocolError(f"response.files[{i}]: the content does not match its sha256")
        elif err is None:
            err = {"code": "no_content", "message": "the server sent no content for this file"}
        out.append(WorkspaceFile(path=f["path"], size=size, sha256=digest, content=content, error=err))
    return out


def result(op: str, obj: Dict[str, Any]) -> Any:
    """The result of a ``workspace_*`` response (after :func:`_protocol.result` raised any error)."""
    if op == "workspace_start":
        w = obj.get("workspace")
        if not isinstance(w, str) or not 0 < len(w) <= 256:
            raise E.ProtocolError("response.workspace: expected a workspace id string")
        return w
    if op == "workspace_exec":
        return Record.from_dict(obj.get("record"))
    if op == "workspace_get":
        return parse_files(obj)
    if op == "workspace_close":
        c = obj.get("closed")
        if not isinstance(c, bool):
            raise E.ProtocolError("response.closed: expected a boolean")
        return c
    # workspace_put: what the server says of the files it wrote.
    return {k: v for k, v in obj.items() if k != "id"}


class Workspace:
    """A workspace of a :class:`~agentjail.Client` (``with client.workspace() as ws:``).

    ``ws.exec("pytest -q")`` runs a shell line through the jail's ``/bin/sh`` in
    ``/workspace``; ``ws.exec(["python3", "x.py"])`` runs an argv. ``put`` writes files
    in, ``get`` takes them out, ``close`` ends the jail (and every process left in it).
    """

    def __init__(self, request: Any, workspace_id: str) -> None:
        self._request = request
        self.id = workspace_id
        self.closed = False

    def exec(
        self,
        command: Command,
        *,
        cwd: Optional[str] = None,
        stdin: Union[str, bytes, None] = None,
        env: Optional[Mapping[str, str]] = None,
        timeout_s: Optional[float] = None,
        background: Optional[bool] = None,
        on_stdout: Optional[S.Callback] = None,
        on_stderr: Optional[S.Callback] = None,
    ) -> Record:
        """Run ``command`` (a shell line, or an argv list) and return its record: exit
        code, stdout, stderr, truncation, wall, CPU, peak memory, stop reason.
        ``on_stdout`` / ``on_stderr``: called with each chunk of output (a str) as it
        comes, in order, before this returns."""
        fields = exec_fields(command, cwd, stdin, env, timeout_s, background)
        d = S.dispatch(on_stdout, on_stderr)
        if d is not None:
            fields["_events"] = d
        return self._request("workspace_exec", workspace=self.id, **fields)

    def put(self, files: P.FilesArg) -> Dict[str, Any]:
        """Write files into ``/workspace``: ``{path: str | bytes}`` or a list of
        ``{path, content | content_base64}`` (paths relative to ``/workspace``)."""
        if files is None:
            raise TypeError("files must be a dict {path: str | bytes} or a list")
        return self._request("workspace_put", workspace=self.id, files=P._files(files))

    def get(self, paths: Union[str, Sequence[str]]) -> List[WorkspaceFile]:
        """Take files out of ``/workspace`` (paths relative to it), in the order asked."""
        return self._request("workspace_get", workspace=self.id, paths=get_paths(paths))

    def close(self) -> bool:
        """End the workspace: its jail, its files and every process in it."""
        if self.closed:
            return False
        self.closed = True
        try:
            return self._request("workspace_close", workspace=self.id)
        except (E.UnknownSession, E.ConnectionClosed):
            return False

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncWorkspace:
    """The asyncio twin of :class:`Workspace` (``async with client.workspace() as ws:``,
    or ``ws = await client.workspace()``)."""

    def __init__(self, request: Any, policy_hints: Optional[Dict[str, Any]], host_dir: Optional[str] = None) -> None:
        self._request = request
        self._hints = policy_hints
        self._host_dir = host_dir
        self.id: Optional[str] = None
        self.closed = False

    async def start(self) -> "AsyncWorkspace":
        if self.id is None:
            self.id = await self._request("workspace_start", policy_hints=self._hints, host_dir=self._host_dir)
        return self

    def __await__(self) -> Any:
        return self.start().__await__()

    async def exec(
        self,
        command: Command,
        *,
        cwd: Optional[str] = None,
        stdin: Union[str, bytes, None] = None,
        env: Optional[Mapping[str, str]] = None,
        timeout_s: Optional[float] = None,
        background: Optional[bool] = None,
        on_stdout: Optional[S.Callback] = None,
        on_stderr: Optional[S.Callback] = None,
    ) -> Record:
        """As :meth:`Workspace.exec`; a callback may be a plain function or an async one."""
        fields = exec_fields(command, cwd, stdin, env, timeout_s, background)
        d = S.dispatch(on_stdout, on_stderr)
        if d is not None:
            fields["_events"] = d
        await self.start()
        return await self._request("workspace_exec", workspace=self.id, **fields)

    async def put(self, files: P.FilesArg) -> Dict[str, Any]:
        if files is None:
            raise TypeError("files must be a dict {path: str | bytes} or a list")
        body = P._files(files)
        await self.start()
        return await self._request("workspace_put", workspace=self.id, files=body)

    async def get(self, paths: Union[str, Sequence[str]]) -> List[WorkspaceFile]:
        wanted = get_paths(paths)
        await self.start()
        return await self._request("workspace_get", workspace=self.id, paths=wanted)

    async def close(self) -> bool:
        if self.closed or self.id is None:
            self.closed = True
            return False
        self.closed = True
        try:
            return await self._request("workspace_close", workspace=self.id)
        except (E.UnknownSession, E.ConnectionClosed):
            return False

    async def __aenter__(self) -> "AsyncWorkspace":
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
