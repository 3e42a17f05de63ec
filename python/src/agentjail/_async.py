"""The asyncio twin of :class:`~agentjail.Client`: the same methods, as coroutines."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import itertools
import os
import signal
from typing import Any, Dict, Mapping, Optional, Sequence, Union

from . import _errors as E
from . import _protocol as P
from . import _stream as S
from ._client import http_conn, reattach_id, serve_setup, STDERR_KEEP
from ._record import Decision, Record
from ._workspace import AsyncWorkspace


class AsyncClient:
    """``async with AsyncClient() as c: record = await c.run(code)``.

    The server starts (or the socket connects) on ``await c.connect()``, on entering
    ``async with``, or on the first request. Arguments as :class:`~agentjail.Client`.
    Over HTTP (``url=``), each request runs :class:`~agentjail.Client`'s HTTP transport on
    a thread of the client's own pool (``http_workers`` requests at once, default 64).
    """

    def __init__(
        self,
        *,
        binary: Optional[str] = None,
        policy: Optional[Union[str, "os.PathLike[str]"]] = None,
        args: Sequence[str] = (),
        socket: Optional[Union[str, "os.PathLike[str]"]] = None,
        url: Optional[str] = None,
        token: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        max_line: int = P.DEFAULT_MAX_LINE,
        close_timeout: float = 30.0,
        http_timeout: Optional[float] = None,
        http_workers: int = 64,
    ) -> None:
        self._http = http_conn(url, token, max_line, http_timeout, socket=socket is not None,
                               binary=binary is not None, policy=policy is not None, args=bool(args),
                               env=env is not None)
        self._http_pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._http_workers = http_workers
        self._http_checked = False
        if socket is not None and (policy is not None or args or binary is not None):
            raise ValueError("socket= connects to a running server: binary, policy and args are its own")
        self._argv = None
        #: What the started server's policy allows (:attr:`Client.policy_info`); None with
        #: socket= or url=.
        self.policy_info = None
        if socket is None and self._http is None:
            self._argv, self.policy_info = serve_setup(binary, policy, args, env)
        self._socket = None if socket is None else os.fspath(socket)
        self._env = None if env is None else dict(env)
        self._max_line = max_line
        self.close_timeout = close_timeout
        self._ids = itertools.count(1)
        self._pending: Dict[int, asyncio.Future] = {}
        # Streaming requests' event queues (their task calls the callbacks: _stream.py).
        self._streams: Dict[int, asyncio.Queue] = {}
        self._proc: Optional[asyncio.subprocess.Process] = None
        self._reader: Optional[asyncio.StreamReader] = None
        self._writer: Any = None
        self._tasks: list = []
        self._stderr = bytearray()
        self._dead: Optional[E.AgentjailError] = None
        self._closed = False
        self._connecting: Optional[asyncio.Lock] = None
        self._write_lock: Optional[asyncio.Lock] = None
        self._started = False  # the spawned server answered its first request

    async def _http_request(self, op: str, _events: Optional[S.Dispatch] = None, **fields: Any) -> Any:
        assert self._http is not None
        if self._http_pool is None:
            self._http_pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=self._http_workers, thread_name_prefix="agentjail-http")
        loop = asyncio.get_running_loop()
        if _events is None:
            call = functools.partial(self._http.request, op, **fields)
            return await loop.run_in_executor(self._http_pool, call)
        # The transport reads the events on its thread; the callbacks run here, in order.
        q: asyncio.Queue = asyncio.Queue()

        def forward(event: str, data: str) -> None:
            loop.call_soon_threadsafe(q.put_nowait, (event, data))

        def call() -> Any:
            try:
                return self._http.request(op, _events=forward, **fields)
            finally:
                loop.call_soon_threadsafe(q.put_nowait, None)

        fut = loop.run_in_executor(self._http_pool, call)
        while True:
            item = await q.get()
            if item is None:
                break
            await _events.acall(*item)
        return _events.done(await fut)

    async def connect(self) -> "AsyncClient":
        if self._connecting is None:
            self._connecting = asyncio.Lock()
            self._write_lock = asyncio.Lock()
        if self._http is not None:
            async with self._connecting:
                if not self._http_checked and not self._closed:
                    # Reach the server and check the token now, as socket= connects now.
                    await self._http_request("stats")
                    self._http_checked = True
            return self
        async with self._connecting:
            if self._reader is not None or self._closed:
                return self
            limit = self._max_line + 1
            if self._socket is not None:
                try:
                    self._reader, self._writer = await asyncio.open_unix_connection(self._socket, limit=limit)
                except OSError as e:
                    raise E.ConnectionClosed(f"cannot connect to {self._socket!r}: {e}") from None
            else:
                assert self._argv is not None
                try:
                    self._proc = await asyncio.create_subprocess_exec(
                        *self._argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                        stderr=asyncio.subprocess.PIPE, env=self._env, limit=limit,
                    )
                except OSError as e:
                    raise E.AgentjailError(f"cannot start {self._argv[0]!r}: {e}") from None
                self._reader, self._writer = self._proc.stdout, self._proc.stdin
                self._tasks.append(asyncio.ensure_future(self._drain_stderr(self._proc.stderr)))
            self._tasks.insert(0, asyncio.ensure_future(self._read_loop()))
        if self._proc is not None and not self._started:
            self._started = True
            try:
                # A server that cannot start (a flag it refuses, a --zygote it cannot use)
                # exits now: its answer, or its last words, come back here.
                await self._request("stats")
            except BaseException:
                await self.close(0)
                raise
        return self

    async def _drain_stderr(self, r: Any) -> None:
        try:
            while True:
                chunk = await r.read(4096)
                if not chunk:
                    return
                self._stderr += chunk
                del self._stderr[:-STDERR_KEEP]
        except (OSError, ValueError):
            return

    async def _settle(self) -> None:
        """After EOF from a child server: give it a moment to exit and its stderr to drain,
        so the error says why it went (its last words), not only that it did."""
        if self._proc is None:
            return
        try:
            await asyncio.wait_for(self._proc.wait(), 1.0)
        except asyncio.TimeoutError:
            return
        drains = self._tasks[1:]
        if drains:
            await asyncio.wait(drains, timeout=1.0)

    def _gone(self) -> str:
        what = "agentjail serve closed the connection"
        if self._proc is not None:
            rc = self._proc.returncode
            what = "agentjail serve exited" + (f" (status {rc})" if rc is not None else "")
        tail = bytes(self._stderr[-2000:]).decode("utf-8", "replace").strip()
        return what + (f"; its stderr ends:\n{tail}" if tail else "")

    async def _read_loop(self) -> None:
        assert self._reader is not None
        err: E.AgentjailError
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as e:
                if e.partial:
                    err = E.ProtocolError("the connection ended inside a response line")
                else:
                    await self._settle()
                    err = E.ConnectionClosed(self._gone())
                break
            except asyncio.LimitOverrunError:
                err = E.ProtocolError(f"a response line is over {self._max_line} bytes; connection closed")
                break
            except (OSError, ValueError) as e:
                err = E.ConnectionClosed(f"reading from agentjail serve failed: {e}")
                break
            try:
                obj = P.decode(line)
            except E.ProtocolError as e:
                err = E.ProtocolError(f"{e}; connection closed")
                break
            rid = P.response_id(obj)
            try:
                ev = S.event(obj)
            except E.ProtocolError as e:
                err = E.ProtocolError(f"{e}; connection closed")
                break
            q = self._streams.get(rid) if rid is not None else None
            if ev is not None:
                if q is not None:
                    q.put_nowait(ev)
                continue
            fut = self._pending.pop(rid, None) if rid is not None else None
            if fut is not None and not fut.done():
                fut.set_result(obj)
            if q is not None:
                q.put_nowait(None)
        self._fail(err)
        if self._socket is not None and self._writer is not None:
            self._writer.close()
        elif self._proc is not None:
            # After a broken line, keep reading (and dropping) what the server writes, so
            # it never blocks on a full pipe while close() waits for it.
            try:
                while await self._reader.read(65536):
                    pass
            except (OSError, ValueError):
                pass

    def _fail(self, err: E.AgentjailError) -> None:
        if self._dead is None:
            self._dead = err
        pending, self._pending = self._pending, {}
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(err)
        for q in self._streams.values():
            q.put_nowait(None)

    async def _request(self, op: str, _events: Optional[S.Dispatch] = None, **fields: Any) -> Any:
        if self._closed:
            raise E.ConnectionClosed("the client is closed")
        if self._http is not None:
            return await self._http_request(op, _events=_events, **fields)
        await self.connect()
        if self._dead is not None:
            raise E.ConnectionClosed(str(self._dead))
        rid = next(self._ids)
        fut = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        q: Optional[asyncio.Queue] = None
        if _events is not None:
            q = self._streams[rid] = asyncio.Queue()
            fields["stream"] = True
        line = P.encode(rid, op, **fields)
        assert self._write_lock is not None
        try:
            try:
                async with self._write_lock:
                    self._writer.write(line)
                    await self._writer.drain()
            except (OSError, ValueError, RuntimeError):
                self._pending.pop(rid, None)
                raise E.ConnectionClosed(self._gone()) from None
            if q is not None and _events is not None:
                while True:
                    item = await q.get()
                    if item is None:
                        break
                    await _events.acall(*item)
            try:
                obj = await fut
            finally:
                self._pending.pop(rid, None)
        finally:
            self._streams.pop(rid, None)
        result = P.result(op, obj)
        return _events.done(result) if _events is not None else result

    async def run(
        self,
        code: str,
        *,
        input: Optional[Mapping[str, Any]] = None,
        stdin: Union[str, bytes, None] = None,
        files: P.FilesArg = None,
        output_schema: Optional[Mapping[str, Any]] = None,
        output_mode: Optional[str] = None,
        timeout: Optional[float] = None,
        language: str = "python",
        entrypoint: Optional[str] = None,
        policy_hints: Optional[Mapping[str, Any]] = None,
        inputs: Optional[Sequence[str]] = None,
        on_stdout: Optional[S.Callback] = None,
        on_stderr: Optional[S.Callback] = None,
    ) -> Record:
        """As :meth:`Client.run`; ``on_stdout`` / ``on_stderr`` may be plain functions or
        async ones (awaited in order)."""
        action = P.build_action(
            code, input=input, stdin=stdin, files=files, output_schema=output_schema,
            output_mode=output_mode, timeout=timeout, language=language,
            entrypoint=entrypoint, policy_hints=policy_hints,
        )
        return await self._request("run", _events=S.dispatch(on_stdout, on_stderr), action=action,
                                   inputs=list(inputs) if inputs else None)

    async def check(self, code: str, *, language: str = "python", **action: Any) -> Decision:
        return await self._request("check", action=P.build_action(code, language=language, **action))

    def session(self, *, policy_hints: Optional[Mapping[str, Any]] = None, id: Optional[str] = None) -> "AsyncSession":
        """``async with client.session() as s: await s.exec(code)`` (or ``await client.session()``);
        ``id=`` re-attaches over HTTP, as :meth:`Client.session`."""
        s = AsyncSession(self, None if policy_hints is None else dict(policy_hints))
        if id is not None:
            s.id = reattach_id(self._http, id, "session", policy_hints=policy_hints)
        return s

    def workspace(
        self,
        *,
        policy_hints: Optional[Mapping[str, Any]] = None,
        host_dir: Optional[str] = None,
        id: Optional[str] = None,
    ) -> AsyncWorkspace:
        """``async with client.workspace() as ws: await ws.exec("ls")`` (or ``await
        client.workspace()``); ``host_dir`` as in :meth:`Client.workspace`; ``id=``
        re-attaches over HTTP, as :meth:`Client.workspace`."""
        if id is not None:
            wid = reattach_id(self._http, id, "workspace", policy_hints=policy_hints, host_dir=host_dir)
            return AsyncWorkspace(self._request, None, None, wid)
        if host_dir is not None and not isinstance(host_dir, str):
            raise TypeError("host_dir must be a str (an absolute host path)")
        return AsyncWorkspace(self._request, None if policy_hints is None else dict(policy_hints), host_dir)

    async def stats(self) -> Dict[str, Any]:
        return await self._request("stats")

    async def close(self, timeout: Optional[float] = None) -> None:
        """As :meth:`Client.close`: running requests finish, then the server ends."""
        if self._closed:
            return
        self._closed = True
        timeout = self.close_timeout if timeout is None else timeout
        if self._http is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._http.shutdown, timeout)
            if self._http_pool is not None:
                self._http_pool.shutdown(wait=False)
            return
        if self._writer is not None:
            try:
                if self._socket is not None:
                    self._writer.write_eof()
                else:
                    self._writer.close()
            except (OSError, RuntimeError):
                pass
        if self._proc is not None:
            for sig, wait in ((None, timeout), (signal.SIGTERM, 15.0), (signal.SIGKILL, None)):
                if sig is not None and self._proc.returncode is None:
                    try:
                        self._proc.send_signal(sig)
                    except (OSError, ProcessLookupError):
                        pass
                try:
                    await asyncio.wait_for(self._proc.wait(), wait)
                    break
                except asyncio.TimeoutError:
                    continue
        if self._tasks:
            done, running = await asyncio.wait(self._tasks, timeout=timeout if self._proc is None else 5.0)
            for t in running:
                t.cancel()
        if self._writer is not None:
            self._writer.close()
        self._fail(E.ConnectionClosed("the client is closed"))

    @property
    def pid(self) -> Optional[int]:
        return self._proc.pid if self._proc is not None else None

    async def __aenter__(self) -> "AsyncClient":
        return await self.connect()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class AsyncSession:
    def __init__(self, client: AsyncClient, policy_hints: Optional[Dict[str, Any]]) -> None:
        self._client = client
        self._hints = policy_hints
        self.id: Optional[str] = None
        self.closed = False

    async def start(self) -> "AsyncSession":
        if self.id is None:
            self.id = await self._client._request("session_start", policy_hints=self._hints)
        return self

    def __await__(self) -> Any:
        return self.start().__await__()

    async def exec(self, code: str, *, timeout: Optional[float] = None, on_stdout: Optional[S.Callback] = None,
                   on_stderr: Optional[S.Callback] = None) -> Record:
        if not isinstance(code, str):
            raise TypeError("code must be a str")
        d = S.dispatch(on_stdout, on_stderr)
        await self.start()
        t = P._positive(timeout, "timeout") if timeout is not None else None
        return await self._client._request("session_exec", _events=d, session=self.id, code=code, timeout_s=t)

    async def close(self) -> bool:
        if self.closed or self.id is None:
            self.closed = True
            return False
        self.closed = True
        try:
            return await self._client._request("session_close", session=self.id)
        except (E.UnknownSession, E.ConnectionClosed):
            return False

    async def __aenter__(self) -> "AsyncSession":
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
