"""The synchronous client: one connection to ``agentjail serve`` (a subprocess it owns,
or a unix socket), shared by any number of threads.

Requests are written whole under a lock; one reader thread reads the response lines and
hands each to the request with its id (responses come back in the order the jobs finish).
"""

from __future__ import annotations

import collections
import itertools
import os
import queue
import shutil
import signal
import socket as _socket
import subprocess
import threading
import weakref
from concurrent.futures import Future
from typing import Any, Deque, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _errors as E
from . import _protocol as P
from . import _stream as S
from ._http import HttpConn
from ._policy import PolicyInfo, policy_info
from ._record import Decision, Record
from ._workspace import Workspace

STDERR_KEEP = 64 * 1024

#: The policy a client that starts ``agentjail serve`` uses when given none: the package's
#: copy of the repository's policies/python.toml (the stdlib's computation and text modules,
#: ``open`` within the jail, 512MiB, 10 s, no network). Shipped with the client, so it does
#: not depend on where the binary's own policies are installed.
DEFAULT_POLICY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "policies", "python.toml")


class NotSupportedYet(E.AgentjailError, NotImplementedError):
    """What the client does not do yet: ``on_stdout=`` / ``on_stderr=`` over HTTP (the HTTP
    server does not stream output yet). Also kept so that code written for 0.1.0 still
    imports it: ``Client(url=...)`` raised it before the HTTP transport existed."""


def find_binary(binary: Optional[str] = None) -> str:
    """``binary``, else ``$AGENTJAIL_BINARY``, else ``agentjail`` on PATH."""
    for cand in (binary, os.environ.get("AGENTJAIL_BINARY")):
        if cand:
            path = shutil.which(cand) if os.sep not in cand else cand
            if not path or not os.access(path, os.X_OK):
                raise E.AgentjailError(f"agentjail binary {cand!r} is not an executable file")
            return path
    path = shutil.which("agentjail")
    if not path:
        raise E.AgentjailError(
            "agentjail is not on PATH: install it (scripts/install.sh), or pass "
            "Client(binary='/path/to/agentjail'), or set AGENTJAIL_BINARY"
        )
    return path


def serve_argv(binary: Optional[str], policy: Optional[str], args: Iterable[str],
               env: Optional[Mapping[str, str]] = None) -> List[str]:
    """``agentjail serve --policy POLICY ARGS``: ``policy`` a path or the name of a shipped
    policy (``"data"``, ``"workspace"``: the binary resolves it), default :data:`DEFAULT_POLICY`.
    The binary loads the policy once here (:func:`check_policy`), so a missing binary or a
    policy that does not load raises now, not at the first call."""
    return serve_setup(binary, policy, args, env)[0]


def serve_setup(binary: Optional[str], policy: Optional[str], args: Iterable[str],
                env: Optional[Mapping[str, str]] = None) -> Tuple[List[str], PolicyInfo]:
    """:func:`serve_argv` and what the policy allows (:class:`~agentjail.PolicyInfo`)."""
    extra = list(args)
    if any(not isinstance(a, str) for a in extra):
        raise TypeError("args must be strings")
    path = find_binary(binary)
    pol = DEFAULT_POLICY if policy is None else os.fspath(policy)
    info = check_policy(path, pol, env)
    return [path, "serve", "--policy", pol] + extra, info


def check_policy(binary: str, policy: str, env: Optional[Mapping[str, str]] = None) -> PolicyInfo:
    """``agentjail policy show --json POLICY`` (the same loader ``serve`` runs, in the same
    working directory and environment): the effective policy; :class:`PolicyError` with the
    binary's message when the policy does not load, :class:`AgentjailError` when the binary
    cannot run."""
    return policy_info(binary, policy, env)


def http_conn(url: Optional[str], token: Optional[str], max_line: int, http_timeout: Optional[float],
              **others: Any) -> Optional[HttpConn]:
    """The HTTP connection for ``url=`` (None without one), after checking the arguments."""
    if url is None:
        if token is not None:
            raise ValueError("token= goes with url= (agentjail serve --http)")
        if http_timeout is not None:
            raise ValueError("http_timeout= goes with url= (agentjail serve --http)")
        return None
    given = [k for k, v in others.items() if v]
    if given:
        raise ValueError(f"url= connects to a running server: {', '.join(given)} cannot go with it")
    if http_timeout is not None:
        P._positive(http_timeout, "http_timeout")
    return HttpConn(url, token, max_line, http_timeout)


class _Conn:
    """The connection's state. Threads hold this, never the Client, so an abandoned
    Client is collected and its finalizer ends the server."""

    def __init__(self, max_line: int) -> None:
        self.max_line = max_line
        self.ids = itertools.count(1)
        self.lock = threading.Lock()
        self.write_lock = threading.Lock()
        self.pending: Dict[int, Tuple[str, Future]] = {}
        # Streaming requests' event queues (their caller calls the callbacks: _stream.py).
        self.streams: Dict[int, "queue.SimpleQueue[Any]"] = {}
        self.closed = False  # no new requests
        self.dead: Optional[E.AgentjailError] = None  # the connection is gone, and why
        self.stderr: Deque[bytes] = collections.deque()
        self.stderr_len = 0
        self.proc: Optional[subprocess.Popen] = None
        self.sock: Optional[_socket.socket] = None
        self.rfile: Any = None
        self.wfile: Any = None
        self.threads: List[threading.Thread] = []

    # -- the reader ---------------------------------------------------------------
    def read_loop(self) -> None:
        err: E.AgentjailError
        try:
            while True:
                line = self.rfile.readline(self.max_line + 1)
                if not line:
                    err = E.ConnectionClosed(self.gone_message())
                    break
                if len(line) > self.max_line:
                    err = E.ProtocolError(f"a response line is over {self.max_line} bytes; connection closed")
                    break
                try:
                    obj = P.decode(line)
                except E.ProtocolError as e:
                    err = E.ProtocolError(f"{e}; connection closed")
                    break
                rid = P.response_id(obj)
                if rid is None:
                    continue  # an error for a line we did not send whole: nobody waits on it
                try:
                    ev = S.event(obj)
                except E.ProtocolError as e:
                    err = E.ProtocolError(f"{e}; connection closed")
                    break
                if ev is not None:
                    with self.lock:
                        q = self.streams.get(rid)
                    if q is not None:
                        q.put(ev)
                    continue
                with self.lock:
                    entry = self.pending.pop(rid, None)
                    q = self.streams.get(rid)
                if entry is not None and not entry[1].done():
                    entry[1].set_result(obj)
                if q is not None:
                    q.put(None)
        except (OSError, ValueError) as e:
            err = E.ConnectionClosed(f"reading from agentjail serve failed: {e}")
        self.fail(err)
        if self.proc is not None:
            # After a broken line, keep reading (and dropping) what the server writes, so
            # it never blocks on a full pipe while close() waits for it.
            try:
                while self.rfile.read(65536):
                    pass
            except (OSError, ValueError):
                pass
        if self.proc is None and self.sock is not None:
            # The server may not close first: make sure our side is shut.
            try:
                self.sock.shutdown(_socket.SHUT_RDWR)
            except OSError:
                pass

    def fail(self, err: E.AgentjailError) -> None:
        with self.lock:
            if self.dead is None:
                self.dead = err
            pending, self.pending = self.pending, {}
            streams = list(self.streams.values())
        for _, fut in pending.values():
            if not fut.done():
                fut.set_exception(err)
        for q in streams:
            q.put(None)

    def drain_stderr(self, f: Any) -> None:
        try:
            for chunk in iter(lambda: f.read1(4096) if hasattr(f, "read1") else f.read(4096), b""):
                self.stderr.append(chunk)
                self.stderr_len += len(chunk)
                while self.stderr_len > STDERR_KEEP and len(self.stderr) > 1:
                    self.stderr_len -= len(self.stderr.popleft())
        except (OSError, ValueError):
            pass

    def gone_message(self) -> str:
        what = "agentjail serve closed the connection"
        if self.proc is not None:
            # EOF may reach us before the server's last words on stderr: give it a moment
            # to exit and the stderr thread to drain, so the error says why it went.
            try:
                self.proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass
            else:
                for t in self.threads[1:]:
                    if t is not threading.current_thread():
                        t.join(timeout=1.0)
            rc = self.proc.poll()
            what = "agentjail serve exited" + (f" (status {rc})" if rc is not None else "")
        tail = b"".join(self.stderr)[-2000:].decode("utf-8", "replace").strip()
        return what + (f"; its stderr ends:\n{tail}" if tail else "")

    # -- requests -------------------------------------------------------------------
    def request(self, op: str, _events: Optional[S.Dispatch] = None, **fields: Any) -> Any:
        """One request, its result. ``_events``: stream the output to these callbacks
        (``"stream": true``), called here, on the caller's thread, as the events come."""
        fut: Future = Future()
        q: "Optional[queue.SimpleQueue[Any]]" = queue.SimpleQueue() if _events is not None else None
        with self.lock:
            if self.dead is not None:
                raise E.ConnectionClosed(str(self.dead))
            if self.closed:
                raise E.ConnectionClosed("the client is closed")
            rid = next(self.ids)
            self.pending[rid] = (op, fut)
            if q is not None:
                self.streams[rid] = q
        if q is not None:
            fields["stream"] = True
        line = P.encode(rid, op, **fields)
        try:
            try:
                with self.write_lock:
                    self.wfile.write(line)
                    self.wfile.flush()
            except (OSError, ValueError):
                with self.lock:
                    self.pending.pop(rid, None)
                raise E.ConnectionClosed(self.gone_message()) from None
            if q is not None and _events is not None:
                for item in iter(q.get, None):
                    _events(*item)
        finally:
            if q is not None:
                with self.lock:
                    self.streams.pop(rid, None)
        result = P.result(op, fut.result())
        return _events.done(result) if _events is not None else result

    # -- the end ----------------------------------------------------------------------
    def shutdown(self, timeout: float) -> None:
        with self.lock:
            self.closed = True
        try:
            with self.write_lock:
                if self.sock is not None:
                    self.sock.shutdown(_socket.SHUT_WR)
                elif self.wfile is not None:
                    self.wfile.close()  # EOF: serve finishes what runs, answers, exits 0
        except OSError:
            pass
        proc = self.proc
        if proc is not None:
            _reap(proc, timeout)
        for t in self.threads:
            t.join(timeout if proc is None else 5.0)
        if self.sock is not None:
            self.sock.close()
        for f in (self.rfile, self.wfile):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass
        self.fail(E.ConnectionClosed("the client is closed"))


def _reap(proc: subprocess.Popen, timeout: float) -> None:
    """Wait for the server; then SIGTERM (running jobs get records, jails end); then SIGKILL
    (the jails die with it through PDEATHSIG)."""
    for sig, wait in ((None, timeout), (signal.SIGTERM, 15.0), (signal.SIGKILL, None)):
        if sig is not None and proc.poll() is None:
            try:
                proc.send_signal(sig)
            except OSError:
                pass
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _finalize(conn: Union[_Conn, HttpConn]) -> None:
    if not conn.closed:
        conn.shutdown(5.0)


class Client:
    """A connection to ``agentjail serve``.

    ``Client()`` starts ``agentjail serve`` as a subprocess and owns it (``binary=`` or
    ``$AGENTJAIL_BINARY`` or PATH; ``policy=`` is ``--policy``, a path or a shipped policy's
    name such as ``"data"``, default :data:`DEFAULT_POLICY`, policies/python.toml; ``args``
    more options, e.g. ``["--pool", "2"]``). ``Client(socket=PATH)`` connects to ``agentjail serve --socket
    PATH``. ``Client(url=..., token=...)`` connects to ``agentjail serve --http ADDR``
    (``url`` ``http://127.0.0.1:8080``, ``https://...`` or ``unix:PATH``; ``token`` one of
    its ``--token-file``'s, sent as ``Authorization: Bearer``; ``http_timeout`` seconds for
    connecting and for each answer, default none).

    Thread-safe: any number of threads may call it at once. ``close()`` (or leaving the
    ``with`` block) lets running requests finish, then ends the subprocess.

    ``policy_info``: what the policy of the server this client started allows
    (:class:`~agentjail.PolicyInfo`: ``allowed_imports``, ``network``, ``describe()``), as
    the binary loaded it; ``None`` with ``socket=`` or ``url=`` (the server's own policy).
    """

    policy_info: Optional[PolicyInfo] = None

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
    ) -> None:
        self.close_timeout = close_timeout
        http = http_conn(url, token, max_line, http_timeout, socket=socket is not None,
                         binary=binary is not None, policy=policy is not None, args=bool(args),
                         env=env is not None)
        if http is not None:
            self._conn: Union[_Conn, HttpConn] = http
            self._finalizer = weakref.finalize(self, _finalize, http)
            try:
                # Reach the server and check the token now, as socket= connects now.
                http.request("stats")
            except BaseException:
                self.close(0)
                raise
            return
        conn = _Conn(max_line)
        if socket is not None:
            if policy is not None or args or binary is not None:
                raise ValueError("socket= connects to a running server: binary, policy and args are its own")
            s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            try:
                s.connect(os.fspath(socket))
            except OSError as e:
                s.close()
                raise E.ConnectionClosed(f"cannot connect to {os.fspath(socket)!r}: {e}") from None
            conn.sock = s
            conn.rfile = s.makefile("rb")
            conn.wfile = s.makefile("wb")
        else:
            argv, self.policy_info = serve_setup(binary, policy, args, env)
            try:
                conn.proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env=None if env is None else dict(env),
                    close_fds=True,
                )
            except OSError as e:
                raise E.AgentjailError(f"cannot start {argv[0]!r}: {e}") from None
            conn.rfile = conn.proc.stdout
            conn.wfile = conn.proc.stdin
            t = threading.Thread(target=conn.drain_stderr, args=(conn.proc.stderr,),
                                 name="agentjail-stderr", daemon=True)
            t.start()
            conn.threads.append(t)
        reader = threading.Thread(target=conn.read_loop, name="agentjail-reader", daemon=True)
        reader.start()
        conn.threads.insert(0, reader)
        self._conn = conn
        self._finalizer = weakref.finalize(self, _finalize, conn)
        if conn.proc is not None:
            try:
                # A server that cannot start (a flag it refuses, a --zygote it cannot use)
                # exits now: its answer, or its last words, come back here.
                conn.request("stats")
            except BaseException:
                self.close(0)
                raise

    # -- the API ----------------------------------------------------------------------
    def run(
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
        """Run ``code`` in a fresh jail and return its record (a stopped run is a record
        too: see :meth:`Record.raise_for_status`). ``on_stdout`` / ``on_stderr``: called
        with each chunk of output (a str) as it comes, in order, before this returns."""
        action = P.build_action(
            code, input=input, stdin=stdin, files=files, output_schema=output_schema,
            output_mode=output_mode, timeout=timeout, language=language,
            entrypoint=entrypoint, policy_hints=policy_hints,
        )
        return self._conn.request("run", _events=S.dispatch(on_stdout, on_stderr), action=action,
                                  inputs=list(inputs) if inputs else None)

    def check(self, code: str, *, language: str = "python", **action: Any) -> Decision:
        """The static check's decision on ``code``, without running it (``action`` takes
        the same keywords as :meth:`run`)."""
        return self._conn.request("check", action=P.build_action(code, language=language, **action))

    def session(self, *, policy_hints: Optional[Mapping[str, Any]] = None, id: Optional[str] = None) -> "Session":
        """Start a session: one interpreter whose globals survive between calls. Over HTTP,
        ``id=`` re-attaches to a session this token started (from any connection, until it
        idles out): no request is sent, and its first call raises :class:`UnknownSession`
        if the id is not this token's (see :func:`reattach_id` for the socket)."""
        if id is not None:
            return Session(self, reattach_id(self._conn, id, "session", policy_hints=policy_hints))
        return Session(self, self._conn.request("session_start", policy_hints=_opt_dict(policy_hints)))

    def workspace(
        self,
        *,
        policy_hints: Optional[Mapping[str, Any]] = None,
        host_dir: Optional[str] = None,
        id: Optional[str] = None,
    ) -> "Workspace":
        """Start a workspace: one jail with a writable ``/workspace`` that lasts across
        calls (``with client.workspace() as ws: ws.put({...}); ws.exec("pytest -q")``).
        ``host_dir``: an existing host directory beneath the policy's ``[workspace]
        host_roots`` to be ``/workspace`` (its files stay after close); refused with a
        :class:`ServerError` whose ``code`` is ``bad_host_dir`` or ``host_dir_in_use``.
        Over HTTP, ``id=`` re-attaches to a workspace this token started, as
        :meth:`session` does (its first call raises :class:`UnknownWorkspace` if the id is
        not this token's)."""
        if id is not None:
            wid = reattach_id(self._conn, id, "workspace", policy_hints=policy_hints, host_dir=host_dir)
            return Workspace(self._conn.request, wid)
        if host_dir is not None and not isinstance(host_dir, str):
            raise TypeError("host_dir must be a str (an absolute host path)")
        wid = self._conn.request("workspace_start", policy_hints=_opt_dict(policy_hints), host_dir=host_dir)
        return Workspace(self._conn.request, wid)

    def stats(self) -> Dict[str, Any]:
        """The server's pools and sessions (``{"pool", "pools", "session_pool", "sessions"}``)."""
        return self._conn.request("stats")

    def close(self, timeout: Optional[float] = None) -> None:
        """Stop taking requests, let running ones finish (``timeout`` seconds, default
        ``close_timeout``), then end the server: SIGTERM, then SIGKILL. Idempotent."""
        if self._finalizer.detach() is not None:
            self._conn.shutdown(self.close_timeout if timeout is None else timeout)

    @property
    def pid(self) -> Optional[int]:
        """The server subprocess's pid (None on a socket or over HTTP)."""
        return self._conn.proc.pid if self._conn.proc is not None else None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Session:
    """A session of a :class:`Client` (``with client.session() as s: s.exec(code)``)."""

    def __init__(self, client: Client, session_id: str) -> None:
        self._client = client
        self.id = session_id
        self.closed = False

    def exec(self, code: str, *, timeout: Optional[float] = None, on_stdout: Optional[S.Callback] = None,
             on_stderr: Optional[S.Callback] = None) -> Record:
        """Run ``code`` in the session; ``record.value`` is the repr of a trailing expression.
        ``on_stdout`` / ``on_stderr``: as :meth:`Client.run`."""
        if not isinstance(code, str):
            raise TypeError("code must be a str")
        t = P._positive(timeout, "timeout") if timeout is not None else None
        return self._client._conn.request("session_exec", _events=S.dispatch(on_stdout, on_stderr),
                                          session=self.id, code=code, timeout_s=t)

    def close(self) -> bool:
        """End the session (its jail and interpreter). True if the server closed it now."""
        if self.closed:
            return False
        self.closed = True
        try:
            return self._client._conn.request("session_close", session=self.id)
        except (E.UnknownSession, E.ConnectionClosed):
            return False

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def reattach_id(conn: Any, id: Any, what: str, **starting: Any) -> str:
    """The id of a session or workspace to re-attach to (``Client.session(id=...)``,
    ``Client.workspace(id=...)``): over HTTP only. A session or workspace opened over HTTP
    belongs to the token's name (the caller's identity, the same on every connection),
    so any connection with that token reaches it until it idles out; another token is
    told ``unknown_session`` / ``unknown_workspace``. On the socket (and a server this
    client started) it is bound to its connection: the peer of that connection is the
    only identity the server has, and the connection closing ends every jail it opened,
    so nothing outlives its owner and no other connection can take it over."""
    if not isinstance(id, str) or not 0 < len(id) <= 256:
        raise TypeError(f"{what} id must be a non-empty str")
    if any(v is not None for v in starting.values()):
        raise ValueError(f"id= re-attaches to a running {what}: {', '.join(starting)} are for starting one")
    if not isinstance(conn, HttpConn):
        raise E.AgentjailError(
            f"a {what} cannot be re-attached by id on agentjail serve's socket: it belongs to the "
            "connection that opened it (the connection's peer is its only identity, and closing "
            "the connection ends its jails), so only that connection's client can use it. "
            "Use the same Client object, or serve over HTTP (Client(url=..., token=...)), where "
            "sessions and workspaces belong to the token and can be re-attached from any connection"
        )
    return id


def _opt_dict(d: Optional[Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
    return None if d is None else dict(d)
