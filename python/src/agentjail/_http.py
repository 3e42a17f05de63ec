"""The HTTP transport: ``Client(url=..., token=...)`` over ``agentjail serve --http``'s
native routes (docs/REFERENCE.md, "HTTP"), with :mod:`http.client`.

It answers the same ``request(op, **fields)`` as the JSON-lines connection, so
:class:`~agentjail.Client` and its sessions work unchanged on it: ``run`` is ``POST
/v1/run``, ``check`` ``POST /v1/check``, ``session_start`` ``POST /v1/sessions``,
``session_exec`` ``POST /v1/sessions/{id}/exec``, ``session_close`` ``DELETE
/v1/sessions/{id}``, ``stats`` ``GET /v1/stats``, and the ``workspace_*`` ops on
``/v1/workspaces`` (``POST`` start, ``POST {id}/exec|put|get|list|exists|remove|wait|kill``,
``DELETE {id}``). Answers go through the same parsers
(:func:`agentjail._protocol.result`), so records, decisions and error answers become the
same objects and exceptions as on a socket.

Thread-safe: each request takes a kept-alive connection from a small pool (or opens one) and
gives it back once its answer is read whole. The server is untrusted like any other: an
answer longer than ``max_body`` is refused unread, and an answer that is not agentjail's JSON
is a :class:`~agentjail.ProtocolError`.
"""

from __future__ import annotations

import http.client
import json
import socket as _socket
import ssl
import threading
import time
import urllib.parse
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import _errors as E
from . import _protocol as P

# The server closes a connection whose next request head has not come within its header
# timeout (10 s); an idle connection older than this is dropped rather than reused.
DEFAULT_MAX_IDLE = 4.0
MAX_IDLE_CONNECTIONS = 16
MAX_TOKEN_CHARS = 4096


class _UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP/1.1 over a unix socket (``url="unix:/run/agentjail/http.sock"``)."""

    def __init__(self, path: str, timeout: Optional[float]) -> None:
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            s.settimeout(self.timeout)
            s.connect(self.unix_path)
        except OSError:
            s.close()
            raise
        self.sock = s


class _TcpHTTPConnection(http.client.HTTPConnection):
    """HTTP/1.1 over TCP with Nagle off: a request is one write, and its answer is awaited."""

    def connect(self) -> None:
        super().connect()
        self.sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)


class Target:
    """A parsed ``url``: ``unix:PATH``, ``http://HOST:PORT[/prefix]`` or ``https://...``."""

    def __init__(self, url: str) -> None:
        if not isinstance(url, str) or not url:
            raise TypeError("url must be a non-empty str")
        if any(c in url for c in "\r\n\0"):
            raise ValueError("url must not contain CR, LF or NUL")
        self.url = url
        self.unix: Optional[str] = None
        self.scheme = "http"
        self.host = ""
        self.port: Optional[int] = None
        self.prefix = ""
        if url.startswith("unix:"):
            path = url[len("unix:"):]
            if path.startswith("//"):  # unix:///run/x.sock
                path = path[2:]
            if not path:
                raise ValueError("url unix:PATH needs a path")
            self.unix = path
            return
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https"):
            raise ValueError(f"url {url!r}: expected http://HOST:PORT, https://HOST:PORT or unix:PATH")
        if u.username is not None or u.password is not None:
            raise ValueError("url must not carry credentials: pass token= (sent as `Authorization: Bearer`)")
        if u.query or u.fragment:
            raise ValueError("url must not have a query or a fragment")
        if not u.hostname:
            raise ValueError(f"url {url!r} has no host")
        try:
            self.port = u.port
        except ValueError:
            raise ValueError(f"url {url!r} has an invalid port") from None
        self.scheme = u.scheme
        self.host = u.hostname
        self.prefix = u.path.rstrip("/")

    def connection(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        if self.unix is not None:
            return _UnixHTTPConnection(self.unix, timeout)
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout,
                                               context=ssl.create_default_context())
        return _TcpHTTPConnection(self.host, self.port, timeout=timeout)


def _check_token(token: Optional[str]) -> Optional[str]:
    if token is None:
        return None
    if not isinstance(token, str):
        raise TypeError("token must be a str")
    # A header value: printable ASCII without spaces (what the server's token file holds).
    if not 0 < len(token) <= MAX_TOKEN_CHARS or not all("!" <= c <= "~" for c in token):
        raise ValueError("token must be 1 to 4096 printable ASCII characters without spaces")
    return token


class _Answer:
    __slots__ = ("status", "content_type", "body", "obj")

    def __init__(self, status: int, content_type: str, body: bytes, obj: Optional[Dict[str, Any]] = None) -> None:
        self.status = status
        self.content_type = content_type
        self.body = body
        self.obj = obj  # already decoded (a streamed answer's last line)


class HttpConn:
    """The HTTP twin of the JSON-lines connection: ``request(op, **fields)``, ``shutdown``."""

    proc = None  # no server of ours

    def __init__(self, url: str, token: Optional[str], max_body: int,
                 timeout: Optional[float], max_idle: float = DEFAULT_MAX_IDLE) -> None:
        self.target = Target(url)
        self.token = _check_token(token)
        self.max_body = max_body
        self.timeout = timeout
        self.max_idle = max_idle
        self.lock = threading.Lock()
        self.idle: List[Tuple[http.client.HTTPConnection, float]] = []
        self.busy = 0
        self.done = threading.Condition(self.lock)
        self.closed = False

    # -- connections ----------------------------------------------------------------
    def _take(self) -> Tuple[http.client.HTTPConnection, bool]:
        now = time.monotonic()
        stale = []
        with self.lock:
            if self.closed:
                raise E.ConnectionClosed("the client is closed")
            self.busy += 1
            conn = None
            while self.idle:
                c, since = self.idle.pop()
                if now - since < self.max_idle:
                    conn = c
                    break
                stale.append(c)
        for c in stale:
            c.close()
        if conn is not None:
            return conn, True
        return self.target.connection(self.timeout), False

    def _give(self, conn: Optional[http.client.HTTPConnection]) -> None:
        with self.lock:
            self.busy -= 1
            if conn is not None and not self.closed and len(self.idle) < MAX_IDLE_CONNECTIONS:
                self.idle.append((conn, time.monotonic()))
                conn = None
            self.done.notify_all()
        if conn is not None:
            conn.close()

    def _headers(self, body: Optional[bytes], lines: bool = False) -> Dict[str, str]:
        h = {"Accept": "application/x-ndjson" if lines else "application/json"}
        if body is not None:
            h["Content-Type"] = "application/json"
        if self.token is not None:
            h["Authorization"] = "Bearer " + self.token
        return h

    def call(self, method: str, path: str, body: Optional[bytes],
             on_event: Optional[Callable[[str, str], None]] = None) -> _Answer:
        """One request, its answer read whole. A request on a kept-alive connection that
        the server had already closed (no byte of an answer came) is sent once more on a
        new connection. ``on_event``: ask for the answer streamed (``Accept:
        application/x-ndjson``) and call it with each output event as it comes."""
        where = self.target.url
        for attempt in (0, 1):
            conn, reused = self._take()
            keep: Optional[http.client.HTTPConnection] = None
            try:
                try:
                    conn.request(method, self.target.prefix + path, body=body,
                                 headers=self._headers(body, on_event is not None))
                    resp = conn.getresponse()
                except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as e:
                    conn.close()
                    if reused and attempt == 0:
                        continue
                    raise E.ConnectionClosed(f"agentjail serve --http at {where} closed the connection: {e}") from None
                except _socket.timeout:
                    conn.close()
                    raise E.ConnectionClosed(f"no answer from {where} within {self.timeout} s") from None
                except http.client.HTTPException as e:
                    conn.close()
                    raise E.ProtocolError(f"the answer from {where} is not HTTP/1.1: {str(e)[:200]}") from None
                except OSError as e:
                    conn.close()
                    raise E.ConnectionClosed(f"cannot reach agentjail serve --http at {where}: {e}") from None
                answer = self._read(conn, resp) if on_event is None else self._read_lines(conn, resp, on_event)
                if not resp.will_close:
                    keep = conn
                else:
                    conn.close()
                return answer
            finally:
                self._give(keep)
        raise AssertionError("unreachable")

    def _read(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse) -> _Answer:
        where = self.target.url
        length = resp.getheader("Content-Length")
        if length is not None and length.strip().isdigit() and int(length) > self.max_body:
            conn.close()
            raise E.ProtocolError(f"an answer of {int(length)} bytes is over max_line ({self.max_body}); not read")
        try:
            data = resp.read(self.max_body + 1)
            if len(data) > self.max_body:
                conn.close()
                raise E.ProtocolError(f"an answer is over max_line ({self.max_body} bytes); connection closed")
            if not resp.isclosed():
                resp.read()  # the end of a chunked body (nothing, or a refusal above)
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise E.ConnectionClosed(f"the answer from {where} ended early: {e}") from None
        ctype = (resp.getheader("Content-Type") or "")[:200]
        return _Answer(resp.status, ctype, data)

    def _read_lines(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse,
                    on_event: Callable[[str, str], None]) -> _Answer:
        """A streamed answer: ``{"event", "data"}`` lines, each handed to ``on_event`` as it
        comes, then ``{"status", "body"}``, the answer as it would have come unstreamed. A
        refusal before the job ran (401, 400, 429, ...) comes as an ordinary answer."""
        where = self.target.url
        if not (resp.getheader("Content-Type") or "").startswith("application/x-ndjson"):
            return self._read(conn, resp)
        last: Optional[Dict[str, Any]] = None
        try:
            while True:
                line = resp.readline(self.max_body + 1)
                if not line:
                    break
                if len(line) > self.max_body:
                    conn.close()
                    raise E.ProtocolError(f"a streamed line is over max_line ({self.max_body} bytes); connection closed")
                obj = P.decode(line.rstrip(b"\n"))
                if set(obj) == {"event", "data"} and isinstance(obj["data"], str) and last is None:
                    on_event(str(obj["event"]), obj["data"])
                elif set(obj) == {"status", "body"} and isinstance(obj["status"], int) and last is None:
                    last = obj
                else:
                    conn.close()
                    raise E.ProtocolError(f"a streamed line from {where} is neither an event nor the answer")
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise E.ConnectionClosed(f"the streamed answer from {where} ended early: {e}") from None
        if last is None:
            conn.close()
            raise E.ConnectionClosed(f"the streamed answer from {where} ended before its last line")
        body = last["body"]
        if not isinstance(body, dict):
            conn.close()
            raise E.ProtocolError(f"the streamed answer from {where} ends without a JSON object")
        return _Answer(last["status"], "application/json", b"", body)

    # -- ops --------------------------------------------------------------------------
    def request(self, op: str, _events: Any = None, **fields: Any) -> Any:
        """One op over HTTP. ``_events``: a callable ``(event, data)`` (the sync client's
        :class:`_stream.Dispatch`, whose ``done`` then gives the result or raises the first
        callback's exception; or the async client's forwarder) to stream the output to."""
        result = self._request(op, _events, fields)
        done = getattr(_events, "done", None)
        return done(result) if done is not None else result

    def _request(self, op: str, _events: Any, fields: Dict[str, Any]) -> Any:
        method, path, body, wrap = self._route(op, fields)
        streams = _events is not None and op in ("run", "session_exec", "workspace_exec")
        a = self.call(method, path, body, _events if streams else None)
        try:
            obj = a.obj if a.obj is not None else P.decode(a.body)
        except E.ProtocolError as e:
            raise E.ProtocolError(
                f"HTTP {a.status} answer from {self.target.url} ({a.content_type or 'no Content-Type'}) is not "
                f"agentjail's JSON: {e} (is the url agentjail serve --http?)"
            ) from None
        if not 200 <= a.status < 300:
            err = obj.get("error")
            if not isinstance(err, dict) or not isinstance(err.get("code"), str):
                raise E.ProtocolError(f"HTTP {a.status} answer without agentjail's error object")
            return P.result(op, {"error": err})
        if wrap == "record" and op.startswith("workspace_") and isinstance(obj, dict) and (
                set(obj) == {"running"} or set(obj) == {"command"}):
            wrap = None  # not a record: a background command's id, or its output so far
        return P.result(op, {wrap: obj} if wrap else obj)

    def _route(self, op: str, f: Dict[str, Any]) -> Tuple[str, str, Optional[bytes], Optional[str]]:
        if op == "run":
            if f.get("inputs"):
                raise ValueError("inputs= (host paths bound read-only) is served by the JSON-lines server "
                                 "only; over HTTP send the files in the action (files=)")
            return "POST", "/v1/run", _json(f["action"]), "record"
        if op == "check":
            return "POST", "/v1/check", _json(f["action"]), "decision"
        if op == "session_start":
            hints = f.get("policy_hints")
            return "POST", "/v1/sessions", b"" if hints is None else _json({"policy_hints": hints}), None
        if op == "session_exec":
            body: Dict[str, Any] = {"code": f["code"]}
            if f.get("timeout_s") is not None:
                body["timeout_s"] = f["timeout_s"]
            return "POST", f"/v1/sessions/{_sid(f['session'])}/exec", _json(body), "record"
        if op == "session_close":
            return "DELETE", f"/v1/sessions/{_sid(f['session'])}", None, None
        if op == "stats":
            return "GET", "/v1/stats", None, "stats"
        if op == "workspace_start":
            body = {k: f[k] for k in ("policy_hints", "host_dir") if f.get(k) is not None}
            return "POST", "/v1/workspaces", _json(body) if body else b"", None
        if op.startswith("workspace_"):
            ws = f"/v1/workspaces/{_sid(f['workspace'])}"
            rest = {k: v for k, v in f.items() if k != "workspace" and v is not None}
            if op in ("workspace_exec", "workspace_wait", "workspace_kill"):
                # A record, or a background command's id or its output so far (request()).
                return "POST", ws + "/" + op[len("workspace_"):], _json(rest), "record"
            if op in ("workspace_put", "workspace_get", "workspace_list", "workspace_exists", "workspace_remove"):
                return "POST", ws + "/" + op[len("workspace_"):], _json(rest), None
            if op == "workspace_close":
                return "DELETE", ws, None, None
        raise ValueError(f"no HTTP route for op {op!r}")

    # -- the end ----------------------------------------------------------------------
    def shutdown(self, timeout: float) -> None:
        """No new requests; wait up to ``timeout`` for those under way; close every
        kept-alive connection. The server goes on (it is not ours)."""
        deadline = time.monotonic() + timeout
        with self.lock:
            self.closed = True
            while self.busy and time.monotonic() < deadline:
                self.done.wait(max(0.0, deadline - time.monotonic()))
            idle, self.idle = self.idle, []
        for c, _ in idle:
            c.close()


def _json(v: Any) -> bytes:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def _sid(session: str) -> str:
    """A session id as one path segment: whatever the server sent, it cannot leave it."""
    return urllib.parse.quote(session, safe="")
