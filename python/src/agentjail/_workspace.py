"""Workspaces: one jail with a writable ``/workspace`` that lasts across calls, where
commands run one after another and files go in and out (``workspace_*`` ops of
``agentjail serve``). :class:`Workspace` for :class:`~agentjail.Client`,
:class:`AsyncWorkspace` for :class:`~agentjail.AsyncClient`."""

from __future__ import annotations

import base64
import hashlib
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Union, overload

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


@dataclass(frozen=True)
class WorkspaceEntry:
    """One entry of :meth:`Workspace.list`: its name, ``type`` (``"file"``, ``"dir"``,
    ``"symlink"`` or ``"other"``; a symlink is never followed) and ``size`` in bytes."""

    name: str
    type: str
    size: int


class Entries(List[WorkspaceEntry]):
    """What :meth:`Workspace.list` returns: the entries sorted by name, at most 1000;
    ``truncated`` is True when the directory held more."""

    truncated: bool = False


@dataclass(frozen=True)
class CommandOutput:
    """A background command's output so far (:meth:`CommandHandle.output`): at most the
    policy's caps; ``stdout_bytes``/``stderr_bytes`` count all it printed."""

    stdout: str
    stderr: str
    stdout_bytes: int
    stderr_bytes: int
    running: bool


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


def parse_entries(obj: Any) -> Entries:
    obj = obj.get("listing") if isinstance(obj, dict) else None
    entries = obj.get("entries") if isinstance(obj, dict) else None
    if not isinstance(entries, list):
        raise E.ProtocolError("response.entries: expected a list")
    out = Entries()
    for i, e in enumerate(entries):
        if not (isinstance(e, dict) and isinstance(e.get("name"), str) and isinstance(e.get("type"), str)
                and type(e.get("size")) is int):
            raise E.ProtocolError(f"response.entries[{i}]: expected {{name, type, size}}")
        out.append(WorkspaceEntry(name=e["name"], type=e["type"], size=e["size"]))
    out.truncated = obj.get("truncated") is True
    return out


def started_or_record(obj: Dict[str, Any]) -> Any:
    """``workspace_exec``'s answer: a record, or a background command's id (a str)."""
    if isinstance(obj.get("record"), dict):
        return Record.from_dict(obj["record"])
    c = obj.get("command")
    if isinstance(c, str) and 0 < len(c) <= 256:
        return c
    raise E.ProtocolError("response: expected a record or a background command id")


def waited(obj: Dict[str, Any]) -> Any:
    """``workspace_wait``/``workspace_kill``'s answer: the record, or the output so far."""
    if isinstance(obj.get("record"), dict):
        return Record.from_dict(obj["record"])
    run = obj.get("running")
    if isinstance(run, dict):
        texts = [run.get(k) for k in ("stdout", "stderr")]
        counts = [run.get(k) for k in ("stdout_bytes", "stderr_bytes")]
        if not all(isinstance(t, str) for t in texts) or not all(type(n) is int for n in counts):
            raise E.ProtocolError("response: expected the output so far")
        return CommandOutput(texts[0], texts[1], counts[0], counts[1], True)
    raise E.ProtocolError("response: expected a record or running")


def result(op: str, obj: Dict[str, Any]) -> Any:
    """The result of a ``workspace_*`` response (after :func:`_protocol.result` raised any error)."""
    if op == "workspace_list":
        return parse_entries(obj)
    if op == "workspace_exists":
        stat = obj.get("stat")
        if not isinstance(stat, dict) or not isinstance(stat.get("exists"), bool):
            raise E.ProtocolError("response.stat.exists: expected a boolean")
        return stat["exists"]
    if op == "workspace_remove":
        if not isinstance(obj.get("removed"), bool):
            raise E.ProtocolError("response.removed: expected a boolean")
        return obj["removed"]
    if op in ("workspace_wait", "workspace_kill"):
        return waited(obj)
    if op == "workspace_start":
        w = obj.get("workspace")
        if not isinstance(w, str) or not 0 < len(w) <= 256:
            raise E.ProtocolError("response.workspace: expected a workspace id string")
        return w
    if op == "workspace_exec":
        return started_or_record(obj)
    if op == "workspace_get":
        return parse_files(obj)
    if op == "workspace_close":
        c = obj.get("closed")
        if not isinstance(c, bool):
            raise E.ProtocolError("response.closed: expected a boolean")
        return c
    # workspace_put: what the server says of the files it wrote.
    return {k: v for k, v in obj.items() if k != "id"}


class CommandHandle:
    """A background command (``ws.exec(cmd, background=True)``): ``wait()`` its record,
    ``kill()`` its processes, ``output()`` what it printed so far. Its ``id`` is its
    workspace's: another workspace's handle is ``unknown_command`` there."""

    def __init__(self, request: Any, workspace_id: str, command_id: str) -> None:
        self._request = request
        self.workspace_id = workspace_id
        self.id = command_id
        self._record: Optional[Record] = None

    def wait(self, timeout: Optional[float] = None) -> Record:
        """Its record once it ended (the same record on every later call). ``timeout``
        seconds at most (default: until it ends); :class:`TimeoutError` past them."""
        deadline = None if timeout is None else time.monotonic() + P._non_negative(timeout, "timeout")
        while self._record is None:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            got = self._request("workspace_wait", workspace=self.workspace_id, command=self.id, timeout_s=left)
            if isinstance(got, Record):
                self._record = got
            elif deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"background command {self.id} still runs after {timeout} s")
        return self._record

    def kill(self) -> Record:
        """End its processes (its process group; the workspace goes on) and return its
        record (the record it ended with, if it had already ended)."""
        if self._record is None:
            self._record = self._request("workspace_kill", workspace=self.workspace_id, command=self.id)
        return self._record

    def output(self) -> CommandOutput:
        """What it printed so far (at once; its record's output once it ended)."""
        if self._record is None:
            got = self._request("workspace_wait", workspace=self.workspace_id, command=self.id, timeout_s=0)
            if isinstance(got, CommandOutput):
                return got
            self._record = got
        return _output_of(self._record)


class AsyncCommandHandle:
    """The asyncio twin of :class:`CommandHandle` (``await h.wait()``, ``await h.kill()``,
    ``await h.output()``)."""

    def __init__(self, request: Any, workspace_id: str, command_id: str) -> None:
        self._request = request
        self.workspace_id = workspace_id
        self.id = command_id
        self._record: Optional[Record] = None

    async def wait(self, timeout: Optional[float] = None) -> Record:
        deadline = None if timeout is None else time.monotonic() + P._non_negative(timeout, "timeout")
        while self._record is None:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            got = await self._request("workspace_wait", workspace=self.workspace_id, command=self.id, timeout_s=left)
            if isinstance(got, Record):
                self._record = got
            elif deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"background command {self.id} still runs after {timeout} s")
        return self._record

    async def kill(self) -> Record:
        if self._record is None:
            self._record = await self._request("workspace_kill", workspace=self.workspace_id, command=self.id)
        return self._record

    async def output(self) -> CommandOutput:
        if self._record is None:
            got = await self._request("workspace_wait", workspace=self.workspace_id, command=self.id, timeout_s=0)
            if isinstance(got, CommandOutput):
                return got
            self._record = got
        return _output_of(self._record)


def _output_of(record: Record) -> CommandOutput:
    ex = record.raw.get("execution") if isinstance(record.raw.get("execution"), dict) else {}
    counts = [ex.get(k) if type(ex.get(k)) is int else len(t.encode())
              for k, t in (("stdout_bytes", record.stdout), ("stderr_bytes", record.stderr))]
    return CommandOutput(record.stdout, record.stderr, counts[0], counts[1], False)


def list_path(path: str) -> str:
    if not isinstance(path, str):
        raise TypeError("path must be a str")
    return path


def remove_fields(path: str, recursive: bool) -> Dict[str, Any]:
    if not isinstance(recursive, bool):
        raise TypeError("recursive must be a bool")
    return {"path": list_path(path), "recursive": recursive}


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

    @overload
    def exec(self, command: Command, *, cwd: Optional[str] = ..., stdin: Union[str, bytes, None] = ...,
             env: Optional[Mapping[str, str]] = ..., timeout_s: Optional[float] = ...,
             background: Literal[True], on_stdout: Optional[S.Callback] = ...,
             on_stderr: Optional[S.Callback] = ...) -> "CommandHandle": ...

    @overload
    def exec(self, command: Command, *, cwd: Optional[str] = ..., stdin: Union[str, bytes, None] = ...,
             env: Optional[Mapping[str, str]] = ..., timeout_s: Optional[float] = ...,
             background: Optional[bool] = ..., on_stdout: Optional[S.Callback] = ...,
             on_stderr: Optional[S.Callback] = ...) -> Record: ...

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
    ) -> Any:
        """Run ``command`` (a shell line, or an argv list) and return its record: exit
        code, stdout, stderr, truncation, wall, CPU, peak memory, stop reason. With
        ``background=True`` it is started and a :class:`CommandHandle` returned at once
        (no timeout unless ``timeout_s``; it ends with the workspace at the latest).
        ``on_stdout`` / ``on_stderr``: called with each chunk of output (a str) as it
        comes, in order, before this returns."""
        fields = exec_fields(command, cwd, stdin, env, timeout_s, background)
        d = S.dispatch(on_stdout, on_stderr)
        if d is not None:
            fields["_events"] = d
        got = self._request("workspace_exec", workspace=self.id, **fields)
        return CommandHandle(self._request, self.id, got) if isinstance(got, str) else got

    def list(self, path: str = "/workspace") -> Entries:
        """The entries of a directory of ``/workspace`` (``name``, ``type``, ``size``),
        sorted by name, at most 1000 (``.truncated``). A symlink is listed, never followed;
        a path through one, or with ``..``, is a :class:`ServerError` ``path_refused``."""
        return self._request("workspace_list", workspace=self.id, path=list_path(path))

    def exists(self, path: str) -> bool:
        """Whether something (a file, a directory, a symlink: not followed) is at ``path``."""
        return self._request("workspace_exists", workspace=self.id, path=list_path(path))

    def remove(self, path: str, *, recursive: bool = False) -> bool:
        """Remove a file or symlink (the link itself), or a directory and everything in it
        with ``recursive=True``; ``path_refused`` when it cannot (not found, a directory
        without ``recursive``, a symlink on the way, ``..``)."""
        return self._request("workspace_remove", workspace=self.id, **remove_fields(path, recursive))

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

    def __init__(self, request: Any, policy_hints: Optional[Dict[str, Any]], host_dir: Optional[str] = None,
                 workspace_id: Optional[str] = None) -> None:
        self._request = request
        self._hints = policy_hints
        self._host_dir = host_dir
        self.id: Optional[str] = workspace_id
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
    ) -> Any:
        """As :meth:`Workspace.exec`; a callback may be a plain function or an async one."""
        fields = exec_fields(command, cwd, stdin, env, timeout_s, background)
        d = S.dispatch(on_stdout, on_stderr)
        if d is not None:
            fields["_events"] = d
        await self.start()
        got = await self._request("workspace_exec", workspace=self.id, **fields)
        return AsyncCommandHandle(self._request, self.id, got) if isinstance(got, str) else got

    async def list(self, path: str = "/workspace") -> Entries:
        p = list_path(path)
        await self.start()
        return await self._request("workspace_list", workspace=self.id, path=p)

    async def exists(self, path: str) -> bool:
        p = list_path(path)
        await self.start()
        return await self._request("workspace_exists", workspace=self.id, path=p)

    async def remove(self, path: str, *, recursive: bool = False) -> bool:
        f = remove_fields(path, recursive)
        await self.start()
        return await self._request("workspace_remove", workspace=self.id, **f)

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
