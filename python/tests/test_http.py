"""Client(url=..., token=...) and AsyncClient(url=...) against the REAL `agentjail serve
--http` (TCP and unix socket, a token file), and against a hostile stand-in server that
answers what agentjail never would."""

import asyncio
import json
import os
import secrets
import socket
import threading

import pytest

import agentjail
from agentjail import ConnectionClosed, ProtocolError, StopKind, Unauthorized, UnknownSession
from conftest import HttpServer

ALICE = secrets.token_hex(16)
BOB = secrets.token_hex(16)


@pytest.fixture(scope="module")
def token_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("tokens") / "tokens"
    p.write_text(f"# test tokens\nalice {ALICE}\nbob {BOB}\n")
    p.chmod(0o600)
    return p


@pytest.fixture(scope="module")
def tcp(binary, token_file):
    s = HttpServer(binary, "127.0.0.1:0", token_file)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def unix(binary, token_file, tmp_path_factory):
    path = tmp_path_factory.mktemp("http") / "http.sock"
    s = HttpServer(binary, f"unix:{path}", token_file)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def alice(tcp):
    with agentjail.Client(url=tcp.url, token=ALICE) as c:
        yield c


# -- the real server ------------------------------------------------------------------

def test_run_check_session_and_stats_over_tcp(alice):
    r = alice.run('import json\nprint(json.dumps({"n": 2 + 2}))', output_mode="json")
    assert r.ok and r.output == {"n": 4}, r.raw
    assert r.raw["caller"] == {"token": "alice"}
    r = alice.run("print(int(input()) * 2)", stdin="21\n", output_mode="text")
    assert (r.ok, r.stdout) == (True, "42\n")
    assert alice.check("x = 1").allowed
    d = alice.check("import socket")
    assert not d.allowed and d.reason
    with alice.session() as s:
        assert s.exec("x = 41").ok
        assert s.exec("x + 1").value == "42"
        assert alice.stats()["sessions"] == 1
    assert alice.stats()["sessions"] == 0
    assert alice.pid is None


def test_unix_socket_names_the_token_and_the_uid(unix):
    with agentjail.Client(url=unix.url, token=BOB) as c:
        r = c.run("print(6 * 7)", output_mode="text")
        assert (r.ok, r.stdout) == (True, "42\n")
        assert r.raw["caller"] == {"token": "bob", "uid": os.getuid()}


PROGRAMS = [
    ('print(\'{"a": 1}\')', "json", None),
    ("while True:\n    pass", "json", 1),
    ("raise ValueError('no')", "json", None),
    ("import socket", "json", None),
    ("print(2 + 2)", "json", None),
    ("import sys\nsys.exit(3)", "text", None),
]


@pytest.mark.parametrize("code,mode,timeout", PROGRAMS)
def test_http_gives_the_same_record_as_the_stdio_transport(client, alice, code, mode, timeout):
    a = client.run(code, output_mode=mode, timeout=timeout)
    b = alice.run(code, output_mode=mode, timeout=timeout)
    assert (a.ok, a.stop_reason, a.output, a.stdout, a.exit_code) == \
        (b.ok, b.stop_reason, b.output, b.stdout, b.exit_code), (a.raw, b.raw)
    assert type(a.stop.kind) is type(b.stop.kind) and a.stop.kind is b.stop.kind
    if a.error is not None:
        assert a.error.get("type") == b.error.get("type")


def test_a_stopped_run_raises_the_same_family(alice):
    r = alice.run("while True:\n    pass", timeout=1)
    assert r.stop.kind is StopKind.CODE_TIMEOUT
    with pytest.raises(agentjail.CodeTimeout):
        r.raise_for_status()


def test_no_token_or_a_wrong_token_is_unauthorized(tcp, unix):
    for url in (tcp.url, unix.url):
        for token in (None, "x" * 32, ALICE[:-1] + ("0" if ALICE[-1] != "0" else "1")):
            with pytest.raises(Unauthorized) as e:
                agentjail.Client(url=url, token=token)
            assert e.value.code == "unauthorized"


def test_another_tokens_session_is_unknown(tcp):
    with agentjail.Client(url=tcp.url, token=ALICE) as a, agentjail.Client(url=tcp.url, token=BOB) as b:
        with a.session() as s:
            s.exec("secret = 1")
            stolen = agentjail.Session(b, s.id)
            with pytest.raises(UnknownSession):
                stolen.exec("secret")
            assert stolen.close() is False
            assert s.exec("secret").value == "1"


def test_threads_share_one_http_client(alice):
    out, errors = [], []

    def work(i):
        try:
            for j in range(3):
                r = alice.run(f"print({i} * 100 + {j})", output_mode="text")
                out.append((r.ok, int(r.stdout)))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    assert sorted(out) == [(True, i * 100 + j) for i in range(6) for j in range(3)]


def test_async_client_over_http(tcp, unix):
    async def main():
        async with agentjail.AsyncClient(url=unix.url, token=ALICE) as c:
            rs = await asyncio.gather(*(c.run(f"print({i})", output_mode="text") for i in range(4)))
            assert [r.stdout for r in rs] == [f"{i}\n" for i in range(4)]
            assert (await c.check("x = 1")).allowed
            async with c.session() as s:
                await s.exec("x = 1")
                assert (await s.exec("x + 1")).value == "2"
            assert (await c.stats())["sessions"] == 0
        with pytest.raises(Unauthorized):
            async with agentjail.AsyncClient(url=tcp.url, token="y" * 20):
                pass
        c = agentjail.AsyncClient(url=tcp.url, token=BOB)
        await c.close()
        with pytest.raises(ConnectionClosed):
            await c.run("1")
    asyncio.run(main())


def test_a_server_that_is_gone(binary, token_file, tmp_path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(ConnectionClosed, match="cannot reach"):
        agentjail.Client(url=f"http://127.0.0.1:{port}", token=ALICE)
    with pytest.raises(ConnectionClosed, match="cannot reach"):
        agentjail.Client(url=f"unix:{tmp_path}/none.sock", token=ALICE)
    srv = HttpServer(binary, "127.0.0.1:0", token_file)
    c = agentjail.Client(url=srv.url, token=ALICE)
    assert c.run("print(1)", output_mode="text").ok
    srv.stop()
    with pytest.raises(ConnectionClosed):
        c.run("print(1)", output_mode="text")
    c.close()
    with pytest.raises(ConnectionClosed, match="closed"):
        c.run("print(1)")


def test_arguments_that_cannot_go_together(tcp, tmp_path):
    for kw in ({"socket": "/x"}, {"binary": "/bin/true"}, {"policy": "p.toml"}, {"args": ["--pool", "1"]},
               {"env": {}}):
        with pytest.raises(ValueError, match="cannot go with"):
            agentjail.Client(url=tcp.url, **kw)
    with pytest.raises(ValueError, match="goes with url"):
        agentjail.Client(token=ALICE, socket="/x")
    for url in ("ftp://x", "http://u:p@127.0.0.1:1", "http://127.0.0.1:1/?q=1", "unix:", "http://:80",
                "http://127.0.0.1:99999", "http://a\r\nX-Evil: 1@b"):
        with pytest.raises(ValueError):
            agentjail.Client(url=url)
    # A token is one header value: no header injection through it.
    for token in ("a\r\nX-Evil: 1", "with space", "é" * 20, ""):
        with pytest.raises(ValueError):
            agentjail.Client(url=tcp.url, token=token)
    with agentjail.Client(url=tcp.url, token=ALICE) as c:
        with pytest.raises(ValueError, match="inputs"):
            c.run("1", inputs=[str(tmp_path)])


# -- a hostile stand-in server -------------------------------------------------------

class FakeServer:
    """Answers GET /v1/stats with `{}` and every other request with `self.answer` (raw
    bytes after the status line's `HTTP/1.1 `); records the request lines it saw."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        self.answer = b""
        self.seen = []
        self.close_after = False  # close each connection after its answer, without saying so
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn):
        f = conn.makefile("rb")
        try:
            while True:
                line = f.readline()
                if not line:
                    return
                self.seen.append(line.decode("latin-1").strip())
                length = 0
                while True:
                    h = f.readline()
                    if h in (b"\r\n", b""):
                        break
                    if h.lower().startswith(b"content-length:"):
                        length = int(h.split(b":")[1])
                f.read(length)
                if line.startswith(b"GET /v1/stats "):
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
                else:
                    conn.sendall(b"HTTP/1.1 " + self.answer)
                    if b"Connection: close" in self.answer:
                        return
                if self.close_after:
                    return
        except OSError:
            return
        finally:
            conn.close()

    def close(self):
        self.sock.close()


def _resp(status, body, ctype=b"application/json", extra=b""):
    return (status + b"\r\nContent-Type: " + ctype + b"\r\nContent-Length: %d\r\n" % len(body) + extra
            + b"\r\n" + body)


@pytest.fixture
def fake():
    f = FakeServer()
    yield f
    f.close()


HOSTILE = [
    (_resp(b"502 Bad Gateway", b"<html>bad gateway</html>", b"text/html"), ProtocolError, "not agentjail's JSON"),
    (_resp(b"200 OK", b"not json"), ProtocolError, "not agentjail's JSON"),
    (_resp(b"200 OK", b"[1, 2]"), ProtocolError, "not a JSON object"),
    (_resp(b"200 OK", b'{"status": "ok", "stop_reason": "code_timeout"}'), ProtocolError, "stop_reason"),
    (_resp(b"200 OK", b'{"status": "stopped", "stop_reason": 7}'), ProtocolError, "stop_reason"),
    (_resp(b"200 OK", b"[" * 20000 + b"]" * 20000), ProtocolError, "nested|not JSON"),
    (_resp(b"200 OK", b'{"a": NaN}'), ProtocolError, "not agentjail's JSON"),
    (_resp(b"500 Internal Server Error", b'{"oops": 1}'), ProtocolError, "without agentjail's error"),
    (_resp(b"500 Internal Server Error", b'{"error": "boom"}'), ProtocolError, "without agentjail's error"),
    (b"200 OK\r\nContent-Length: 99999999999\r\n\r\n", ProtocolError, "over max_line"),
    (b"200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{\"stat", ConnectionClosed, "ended early"),
    (b"garbage\r\n\r\n", ProtocolError, "not HTTP/1.1"),
    (b"200 OK\r\n" + b"X: " + b"y" * 70000 + b"\r\n\r\n", ProtocolError, "not HTTP/1.1"),
    (b"200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"10000\r\n" + b" " * 65536 + b"\r\n" * 1 + b"0\r\n\r\n",
     ProtocolError, "over max_line"),
]


@pytest.mark.parametrize("answer,exc,match", HOSTILE)
def test_hostile_answers_are_clear_errors(fake, answer, exc, match):
    fake.answer = answer
    with agentjail.Client(url=fake.url, max_line=60000) as c:
        with pytest.raises(exc, match=match):
            c.run("print(1)")


def test_a_hostile_record_is_data_and_an_error_answer_maps_as_on_a_socket(fake):
    rec = {"run_id": "r", "status": "stopped", "phase": "execute",
           "stop_reason": "__import__('os').system('touch /tmp/agentjail-http-pwned')",
           "execution": {"stdout": "", "stderr": "", "exit_code": 1, "wall_ms": 1},
           "error": {"type": "X", "message": "m"}}
    fake.answer = _resp(b"200 OK", json.dumps(rec).encode())
    with agentjail.Client(url=fake.url) as c:
        r = c.run("print(1)")
        assert r.stop.kind is StopKind.UNKNOWN and r.error == {"type": "X", "message": "m"}
        assert not os.path.exists("/tmp/agentjail-http-pwned")
        for code, cls in (("session_busy", agentjail.SessionBusy), ("too_many_requests", agentjail.TooManyRequests),
                          ("unknown_session", UnknownSession), ("weird", agentjail.ServerError)):
            body = json.dumps({"error": {"code": code, "message": "m"}}).encode()
            fake.answer = _resp(b"409 Conflict", body)
            with pytest.raises(cls) as e:
                c.run("1")
            assert e.value.code == code


def test_a_hostile_session_id_stays_one_path_segment(fake):
    fake.answer = _resp(b"200 OK", b'{"session": "../../v1/run?x=1 HTTP/1.1\\r\\nX: y"}')
    with agentjail.Client(url=fake.url) as c:
        s = c.session()
        fake.answer = _resp(b"404 Not Found", b'{"error": {"code": "unknown_session", "message": "no"}}')
        with pytest.raises(UnknownSession):
            s.exec("1")
    exec_line = [x for x in fake.seen if x.startswith("POST /v1/sessions/")][-1]
    assert exec_line == "POST /v1/sessions/..%2F..%2Fv1%2Frun%3Fx%3D1%20HTTP%2F1.1%0D%0AX%3A%20y/exec HTTP/1.1"


def test_a_kept_alive_connection_the_server_closed_is_replaced(fake):
    # The server closes each connection after its answer (as its idle timeout would): each
    # next request, on the pooled connection, gets no byte of an answer and goes out once
    # more on a new connection. The server sees each request once.
    ok = {"decision": "allow", "violations": []}
    fake.answer = _resp(b"200 OK", json.dumps(ok).encode())
    fake.close_after = True
    with agentjail.Client(url=fake.url) as c:
        for _ in range(4):
            assert c.check("x = 1").allowed
    assert [x for x in fake.seen if x.startswith("POST")] == ["POST /v1/check HTTP/1.1"] * 4
