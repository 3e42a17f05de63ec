"""``AgentjailSandboxEnvironment``: an inspect_ai sandbox environment (``sandbox="agentjail"``)
whose samples each get an agentjail workspace.

    from inspect_ai import Task, eval
    import agentjail.inspect  # registers "agentjail"

    eval(Task(dataset=..., solver=..., sandbox="agentjail"))
    eval(Task(..., sandbox=("agentjail", "policies/workspace.toml")))  # the server's policy

One ``agentjail serve`` per task (started at ``task_init``, ended at ``task_cleanup``), one
workspace per sample (``sample_init`` / ``sample_cleanup``). The sample's working directory
is ``/workspace``; relative paths resolve there. ``exec`` is ``workspace_exec`` of the argv;
``write_file`` and ``read_file`` move the bytes with ``workspace_put`` / ``workspace_get``
and do the filesystem part inside the jail, as the jail's user, so permissions, directories
and missing files answer as inspect expects (``PermissionError``, ``IsADirectoryError``,
``FileNotFoundError``), and absolute paths outside ``/workspace`` (``/tmp/x``) work where
the jail can write. Large contents travel in pieces (``CHUNK``), so a file or an exec's
stdin is not bound by one request's size. ``user=`` is refused
(``SandboxUserUnsupportedError``): every command runs as the jail's one user.

Needs the ``inspect`` extra (``pip install './python[inspect]'``). The config is the
policy file's path or a shipped policy's name (None: the client's default, which has no
workspaces: name one that enables them, such as ``"workspace"``), or an
:class:`AgentjailSandboxConfig` with ``policy``, ``binary`` and ``args``.
"""

from __future__ import annotations

import base64
import errno
import posixpath
import secrets
from typing import Any, Dict, List, Optional, Union, overload

import anyio
from inspect_ai.util import (
    ExecResult,
    OutputLimitExceededError,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    SandboxUserUnsupportedError,
    sandboxenv,
)
from pydantic import BaseModel
from typing_extensions import Literal

from . import _errors as E
from ._client import Client
from ._record import Record
from ._workspace import Workspace

ROOT = "/workspace"
# The most bytes one put or get carries: under the workspace policy's [artifacts]
# max_file_bytes (5MiB in policies/workspace.toml), far under the serve protocol's 32 MiB line.
CHUNK = 4 * 1024 * 1024
# Stdin this large, or not UTF-8, goes in as a staged file rather than in the request.
STDIN_INLINE = 1024 * 1024
STAGE = ".agentjail-inspect"
SH = "/bin/sh"

# Exit codes of the in-jail helper scripts: each names one outcome.
_NOT_FOUND, _IS_DIR, _DENIED = 66, 67, 68


class AgentjailSandboxConfig(BaseModel, frozen=True):
    """The server a task's samples share: its policy, binary and extra ``serve`` options."""

    policy: Optional[str] = None
    binary: Optional[str] = None
    args: List[str] = []


def _config(config: SandboxEnvironmentConfigType | None) -> AgentjailSandboxConfig:
    if config is None:
        return AgentjailSandboxConfig()
    if isinstance(config, str):
        return AgentjailSandboxConfig(policy=config)
    if isinstance(config, AgentjailSandboxConfig):
        return config
    if isinstance(config, BaseModel):
        return AgentjailSandboxConfig(**config.model_dump())
    raise ValueError("the agentjail sandbox's config is a policy path or an AgentjailSandboxConfig")


def _path(file: str) -> str:
    """An absolute path in the jail: relative ones are under /workspace."""
    return posixpath.normpath(file if file.startswith("/") else posixpath.join(ROOT, file))


def _in_workspace(path: str) -> Optional[str]:
    return path[len(ROOT) + 1:] if path.startswith(ROOT + "/") else None


def _returncode(rec: Record) -> int:
    if rec.exit_code is not None:
        return rec.exit_code
    sig = rec.signal
    if isinstance(sig, int):
        return 128 + sig
    if isinstance(sig, str):
        import signal as _signal

        try:
            return 128 + int(getattr(_signal, sig if sig.startswith("SIG") else "SIG" + sig))
        except (AttributeError, TypeError, ValueError):
            pass
    return 1


def _timed_out(rec: Record) -> bool:
    return "timeout" in rec.stop_reason


# Readiness of a file to read: exit _NOT_FOUND / _IS_DIR / _DENIED, else prints its size.
_READ_CHECK = (
    'f=$1; if [ -d "$f" ]; then exit %d; fi; if [ ! -e "$f" ]; then exit %d; fi; '
    'if [ ! -r "$f" ]; then exit %d; fi; '
    'if ! head -c 0 -- "$f" 2>/dev/null; then exit %d; fi; wc -c < "$f"'
) % (_IS_DIR, _NOT_FOUND, _DENIED, _DENIED)

# Copy a readable file into the stage in CHUNK pieces (p.0000, p.0001, ...).
_READ_SPLIT = 'f=$1; d=$2; mkdir -p "$d" && cd "$d" && split -b %d -d -a 4 -- "$f" p.' % CHUNK

# Put staged pieces at a destination: a directory there refuses, parents are made, an
# existing file is overwritten in place (its permissions apply).
_WRITE_PLACE = (
    'd=$1; dst=$2; if [ -d "$dst" ]; then rm -rf "$d"; exit %d; fi; '
    'mkdir -p -- "$(dirname -- "$dst")" 2>/dev/null; '
    'if ls "$d"/p.* >/dev/null 2>&1; then cat "$d"/p.* > "$dst"; else : > "$dst"; fi; '
    'rc=$?; rm -rf "$d"; if [ $rc -ne 0 ]; then exit %d; fi'
) % (_IS_DIR, _DENIED)

# Run "$@" with its stdin from a staged file, then remove the file.
_STDIN_FROM = 'd=$1; shift; cat "$d"/p.* 2>/dev/null | "$@"; rc=$?; rm -rf "$d"; exit $rc'
# Run the argv staged (NUL-terminated strings) in a directory of pieces, removed first: for
# an argv longer than one request's command may be.
_ARGV_FROM = (
    "import os, shutil, sys\n"
    "d = sys.argv[1]\n"
    "data = b''.join(open(os.path.join(d, n), 'rb').read() for n in sorted(os.listdir(d)))\n"
    "shutil.rmtree(d)\n"
    "argv = data.split(b'\\0')[:-1]\n"
    "os.execvp(argv[0], argv)\n"
)
PY = "/usr/bin/python3"
# The longest argv sent as is (the engine takes 256 KiB).
ARGV_INLINE = 128 * 1024
# Run "$@" in a directory outside /workspace.
_IN_DIR = 'cd -- "$1" || exit 1; shift; exec "$@"'


@sandboxenv(name="agentjail")
class AgentjailSandboxEnvironment(SandboxEnvironment):
    """One sample's agentjail workspace (see the module's text)."""

    _clients: Dict[str, Client] = {}

    def __init__(self, workspace: Workspace) -> None:
        super().__init__()
        self.workspace = workspace

    # -- lifecycle --------------------------------------------------------------------
    @classmethod
    def _client(cls, config: SandboxEnvironmentConfigType | None) -> Client:
        cfg = _config(config)
        key = cfg.model_dump_json()
        c = cls._clients.get(key)
        if c is None:
            c = cls._clients[key] = Client(policy=cfg.policy, binary=cfg.binary, args=cfg.args)
        return c

    @classmethod
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        await anyio.to_thread.run_sync(cls._client, config)

    @classmethod
    async def sample_init(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, metadata: Dict[str, str]
    ) -> Dict[str, SandboxEnvironment]:
        client = await anyio.to_thread.run_sync(cls._client, config)
        ws = await anyio.to_thread.run_sync(client.workspace)
        return {"default": cls(ws)}

    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: Dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        for env in environments.values():
            if isinstance(env, AgentjailSandboxEnvironment):
                await anyio.to_thread.run_sync(env.workspace.close)

    @classmethod
    async def task_cleanup(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, cleanup: bool
    ) -> None:
        c = cls._clients.pop(_config(config).model_dump_json(), None)
        if c is not None:
            await anyio.to_thread.run_sync(c.close)

    @classmethod
    def config_deserialize(cls, config: Dict[str, Any]) -> BaseModel:
        return AgentjailSandboxConfig(**config)

    # -- the calls ----------------------------------------------------------------------
    async def _call(self, fn: Any, *args: Any, **kw: Any) -> Any:
        return await anyio.to_thread.run_sync(lambda: fn(*args, **kw))

    async def _exec(self, argv: List[str], timeout: Optional[float] = None,
                    stdin: Union[str, bytes, None] = None, env: Optional[Dict[str, str]] = None) -> Record:
        return await self._call(self.workspace.exec, argv, stdin=stdin, env=env, timeout_s=timeout)

    async def _stage(self, data: bytes) -> str:
        """Put ``data`` under a fresh stage directory in pieces; its path in the jail."""
        name = f"{STAGE}/{secrets.token_hex(8)}"
        pieces = [data[i:i + CHUNK] for i in range(0, len(data), CHUNK)]
        for n, piece in enumerate(pieces):
            await self._call(self.workspace.put, [{
                "path": f"{name}/p.{n:04d}",
                "content_base64": base64.b64encode(piece).decode("ascii"),
            }])
        if not pieces:
            rec = await self._exec([SH, "-c", 'mkdir -p "$1"', "sh", f"{ROOT}/{name}"])
            if rec.exit_code != 0:
                raise PermissionError(errno.EACCES, "cannot stage a file", name)
        return f"{ROOT}/{name}"

    async def exec(
        self,
        cmd: List[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: Dict[str, str] | None = None,
        user: str | None = None,
        timeout: int | None = None,
        timeout_retry: bool = True,
        concurrency: bool = True,
    ) -> ExecResult[str]:
        if user is not None:
            raise SandboxUserUnsupportedError(
                "agentjail runs every command as the jail's one user; user= is not supported"
            )
        if not cmd:
            raise ValueError("cmd must name a program")
        argv = list(cmd)
        if sum(len(a.encode("utf-8")) + 1 for a in argv) > ARGV_INLINE:
            staged_argv = await self._stage(b"".join(a.encode("utf-8") + b"\0" for a in argv))
            argv = [PY, "-c", _ARGV_FROM, staged_argv]
        stdin: Union[str, bytes, None] = input
        if isinstance(input, (bytes, bytearray)):
            try:
                stdin = bytes(input).decode("utf-8")
            except UnicodeDecodeError:
                stdin = bytes(input)
        if stdin is not None and (isinstance(stdin, bytes) or len(stdin) > STDIN_INLINE):
            data = stdin if isinstance(stdin, bytes) else stdin.encode("utf-8")
            staged = await self._stage(data)
            argv = [SH, "-c", _STDIN_FROM, "sh", staged] + argv
            stdin = None
        if cwd is not None:
            where = _path(cwd)
            argv = [SH, "-c", _IN_DIR, "sh", where] + argv
        rec = await self._exec(argv, timeout=timeout, stdin=stdin, env=env)
        if _timed_out(rec):
            raise TimeoutError(f"command timed out after {timeout} s ({rec.stop_reason})")
        code = _returncode(rec)
        if code == 126 and "ermission denied" in (rec.stderr + rec.stdout):
            raise PermissionError(errno.EACCES, rec.stderr.strip() or "permission denied", cmd[0])
        limit = SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE
        for stream in (rec.stdout, rec.stderr):
            if len(stream.encode("utf-8", "replace")) > limit:
                raise OutputLimitExceededError(SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE_STR, stream[:limit])
        return ExecResult(success=code == 0, returncode=code, stdout=rec.stdout, stderr=rec.stderr)

    async def write_file(self, file: str, contents: str | bytes) -> None:
        dst = _path(file)
        data = contents.encode("utf-8") if isinstance(contents, str) else bytes(contents)
        staged = await self._stage(data)
        rec = await self._exec([SH, "-c", _WRITE_PLACE, "sh", staged, dst])
        if rec.exit_code == _IS_DIR:
            raise IsADirectoryError(errno.EISDIR, "Is a directory", file)
        if rec.exit_code != 0:
            raise PermissionError(errno.EACCES, rec.stderr.strip() or "Permission denied", file)

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    async def read_file(self, file: str, text: bool = True) -> Union[str, bytes]:
        src = _path(file)
        rec = await self._exec([SH, "-c", _READ_CHECK, "sh", src])
        if rec.exit_code == _NOT_FOUND:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", file)
        if rec.exit_code == _IS_DIR:
            raise IsADirectoryError(errno.EISDIR, "Is a directory", file)
        if rec.exit_code != 0:
            raise PermissionError(errno.EACCES, "Permission denied", file)
        size = int(rec.stdout.strip() or "0")
        if size > SandboxEnvironmentLimits.MAX_READ_FILE_SIZE:
            raise OutputLimitExceededError(SandboxEnvironmentLimits.MAX_READ_FILE_SIZE_STR, None)
        data = await self._read(src, size)
        return data.decode("utf-8") if text else data

    async def _read(self, src: str, size: int) -> bytes:
        rel = _in_workspace(src)
        if rel is not None and size <= CHUNK:
            got = (await self._call(self.workspace.get, [rel]))[0]
            if got.content is None:
                raise PermissionError(errno.EACCES, str(got.error), src)
            return got.content
        if size == 0:
            return b""
        stage = f"{ROOT}/{STAGE}/{secrets.token_hex(8)}"
        rec = await self._exec([SH, "-c", _READ_SPLIT, "sh", src, stage])
        try:
            if rec.exit_code != 0:
                raise PermissionError(errno.EACCES, rec.stderr.strip() or "cannot read", src)
            n = (size + CHUNK - 1) // CHUNK
            rel_stage = _in_workspace(stage)
            parts = []
            for i in range(n):
                got = (await self._call(self.workspace.get, [f"{rel_stage}/p.{i:04d}"]))[0]
                if got.content is None:
                    raise PermissionError(errno.EACCES, str(got.error), src)
                parts.append(got.content)
            return b"".join(parts)
        finally:
            await self._exec([SH, "-c", 'rm -rf -- "$1"', "sh", stage])


__all__ = ["AgentjailSandboxConfig", "AgentjailSandboxEnvironment"]
