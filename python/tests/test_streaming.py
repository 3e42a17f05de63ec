"""on_stdout= / on_stderr= against the REAL `agentjail serve --socket` (sync and async):
the chunks come as the program prints, well before the record, and concatenate to the
record's stdout / stderr; a request without callbacks gets no event lines; a flood streams
at most the cap; a client that never reads its events stalls only itself; a callback's
exception comes out of run() after the record arrived. Over HTTP (`serve --http`) the same
callbacks stream, sync and async."""

import asyncio
import json
import socket
import subprocess
import time

import pytest

import agentjail
from conftest import REPO, HttpServer

# Prints a line every 100 ms for 1 s, flushed (the policy's check denies `sys`: stderr is
# the shell's, in the workspace).
TICKS = (
    "import time\n"
    "for i in range(10):\n"
    "    print('tick', i, 'é', flush=True)\n"
    "    time.sleep(0.1)\n"
)
SHELL_TICKS = "for i in 0 1 2 3 4 5 6 7 8 9; do echo tick $i; sleep 0.1; done; echo done >&2"


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    """policies/workspace.toml with `time` importable (to tick)."""
    text = (REPO / "policies" / "workspace.toml").read_text()
    assert "allowed_imports = [\n" in text
    text = text.replace("allowed_imports = [\n", 'allowed_imports = [\n  "time",\n', 1)
    p = tmp_path_factory.mktemp("stream") / "stream.toml"
    p.write_text(text)
    return str(p)


@pytest.fixture(scope="module")
def sock(binary, policy, tmp_path_factory):
    path = tmp_path_factory.mktemp("sock") / "aj.sock"
    server = subprocess.Popen([binary, "serve", "--policy", policy, "--pool", "2", "--socket", str(path)],
                              stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not path.exists() and time.monotonic() < deadline and server.poll() is None:
        time.sleep(0.05)
    assert server.poll() is None, server.stderr.read().decode()
    yield str(path)
    server.terminate()
    assert server.wait(30) == 0


class Chunks:
    """Each chunk with when it came (time.monotonic())."""

    def __init__(self):
        self.got = []

    def __call__(self, text):
        assert isinstance(text, str)
        self.got.append((time.monotonic(), text))

    @property
    def text(self):
        return "".join(t for _, t in self.got)


def check_timely(what, sent, out, record_at):
    first = out.got[0][0]
    # The program ticks for 1 s: its first chunk must come long before the record (a margin
    # a loaded 2-core box keeps); the absolute figure is printed.
    print(f"{what}: first chunk {1000 * (first - sent):.0f} ms after the request, "
          f"{1000 * (record_at - first):.0f} ms before the record")
    assert record_at - first >= 0.5, (what, first - sent, record_at - first)
    assert len(out.got) >= 3, out.got


def test_run_session_and_workspace_stream_sync(sock):
    with agentjail.Client(socket=sock) as c:
        out, err = Chunks(), Chunks()
        sent = time.monotonic()
        r = c.run(TICKS, output_mode="text", on_stdout=out, on_stderr=err)
        assert r.ok, r.raw
        check_timely("run", sent, out, time.monotonic())
        assert out.text == r.stdout and out.text.startswith("tick 0 é\n") and "tick 9 é\n" in out.text
        assert err.text == r.stderr == ""

        with c.session() as s:
            out = Chunks()
            sent = time.monotonic()
            r = s.exec(TICKS, on_stdout=out)
            check_timely("session", sent, out, time.monotonic())
            assert out.text == r.stdout

        with c.workspace() as ws:
            out, err = Chunks(), Chunks()
            sent = time.monotonic()
            r = ws.exec(SHELL_TICKS, on_stdout=out, on_stderr=err)
            check_timely("workspace", sent, out, time.monotonic())
            assert r.ok and out.text == r.stdout and err.text == r.stderr == "done\n"


def test_async_callbacks_plain_and_async(sock):
    async def main():
        async with agentjail.AsyncClient(socket=sock) as c:
            out, err = Chunks(), []

            async def on_err(text):
                await asyncio.sleep(0)
                err.append(text)

            sent = time.monotonic()
            r = await c.run(TICKS, output_mode="text", on_stdout=out, on_stderr=on_err)
            check_timely("async run", sent, out, time.monotonic())
            assert out.text == r.stdout and err == []
            async with c.session() as s:
                got = []

                async def on_out(text):
                    got.append(text)

                r = await s.exec("print('a'); print('b')", on_stdout=on_out)
                assert "".join(got) == r.stdout == "a\nb\n"
            async with c.workspace() as ws:
                out = Chunks()
                r = await ws.exec("echo one; echo e >&2; echo two", on_stdout=out, on_stderr=on_err)
                assert out.text == r.stdout == "one\ntwo\n"
                assert "".join(err) == r.stderr == "e\n"

    asyncio.run(main())


def raw_lines(path, request, until_id):
    """Send one raw request line; every line answering it, up to its final one."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    f = s.makefile("rb")
    s.sendall(json.dumps(request).encode() + b"\n")
    lines = []
    while True:
        obj = json.loads(f.readline())
        assert obj["id"] == until_id
        lines.append(obj)
        if "event" not in obj:
            s.close()
            return lines


def test_without_stream_no_event_lines_and_a_flood_streams_at_most_the_cap(sock):
    action = {"id": "a", "language": "python", "entrypoint": "main.py", "output_mode": "text",
              "code": "print('quiet')"}
    lines = raw_lines(sock, {"id": 1, "op": "run", "action": action}, 1)
    assert len(lines) == 1 and lines[0]["record"]["execution"]["stdout"] == "quiet\n"
    with agentjail.Client(socket=sock) as c:
        out = Chunks()
        # 1.5 MiB against the policy's 1 MiB cap.
        r = c.run("for i in range(24):\n    print('x' * 65536, end='')\n",
                  output_mode="text", on_stdout=out)
        assert r.stop_reason == "code_output_too_large", r.stop_reason
        assert r.raw["execution"]["stdout_truncated"] is True
        assert len(out.text) == 1024 * 1024 and out.text == r.stdout


def test_a_client_that_never_reads_stalls_only_itself(sock):
    # A raw client asks for a streamed 1.5 MiB flood and reads nothing: more than the socket
    # holds, so the server's writer for it is stuck, not the job nor anyone else.
    stalled = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stalled.connect(sock)
    flood = {"id": 7, "op": "run", "stream": True,
             "action": {"id": "f", "language": "python", "entrypoint": "main.py", "output_mode": "text",
                        "code": "for i in range(24):\n    print('y' * 65536, end='')\n"}}
    sent = time.monotonic()
    stalled.sendall(json.dumps(flood).encode() + b"\n")
    with agentjail.Client(socket=sock) as c:
        out = Chunks()
        r = c.run(TICKS, output_mode="text", on_stdout=out)
        assert r.ok and out.text == r.stdout
    while time.monotonic() - sent < 3:
        time.sleep(0.05)
    unread_ms = 1000 * (time.monotonic() - sent)
    f = stalled.makefile("rb")
    events = []
    while True:
        obj = json.loads(f.readline())
        if "event" not in obj:
            break
        events.append(obj["data"])
    stalled.close()
    rec = obj["record"]
    assert rec["stop_reason"] == "code_output_too_large"
    # Its job ended long before anyone read it: the unread socket held nothing up.
    assert rec["execution"]["wall_ms"] < unread_ms, (rec["execution"]["wall_ms"], unread_ms)
    assert "".join(events) == rec["execution"]["stdout"]


def test_a_callback_exception_comes_out_after_the_record(sock):
    with agentjail.Client(socket=sock) as c:
        calls = []

        def boom(text):
            calls.append(text)
            raise RuntimeError("callback failed")

        with pytest.raises(RuntimeError, match="callback failed"):
            c.run("print('a', flush=True)\nprint('b')", output_mode="text", on_stdout=boom)
        assert len(calls) == 1  # later chunks are not delivered to a failed callback
        # The connection is fine: the record was read to its end.
        assert c.run("print(1)", output_mode="text").stdout == "1\n"
        with pytest.raises(TypeError):
            c.run("print(1)", on_stdout="not callable")


def test_over_http_the_same_callbacks_stream(binary, policy, tmp_path):
    # `serve --http` streams too (Accept: application/x-ndjson): the client reads the event
    # lines as they come, sync and async, run, session and workspace.
    server = HttpServer(binary, f"unix:{tmp_path / 'h.sock'}", extra=("--policy", policy))
    try:
        with agentjail.Client(url=server.url) as c:
            out = Chunks()
            sent = time.monotonic()
            r = c.run(TICKS, output_mode="text", on_stdout=out)
            check_timely("http run", sent, out, time.monotonic())
            assert r.ok and out.text == r.stdout and "tick 9 é\n" in out.text
            with c.session() as s:
                out = Chunks()
                sent = time.monotonic()
                r = s.exec(TICKS, on_stdout=out)
                check_timely("http session", sent, out, time.monotonic())
                assert out.text == r.stdout
            with c.workspace() as ws:
                out, err = Chunks(), Chunks()
                r = ws.exec(SHELL_TICKS, on_stdout=out, on_stderr=err)
                assert r.ok and out.text == r.stdout and err.text == r.stderr == "done\n"
            # A callback's exception comes out after the record, as on the socket.
            def boom(text):
                raise RuntimeError("from the callback")
            with pytest.raises(RuntimeError, match="from the callback"):
                c.run("print(1)", output_mode="text", on_stdout=boom)
            assert c.run("print(1)", output_mode="text").stdout == "1\n"

        async def main():
            async with agentjail.AsyncClient(url=server.url) as c:
                got = []

                async def on_out(text):
                    got.append((time.monotonic(), text))

                sent = time.monotonic()
                r = await c.run(TICKS, output_mode="text", on_stdout=on_out)
                done = time.monotonic()
                assert "".join(t for _, t in got) == r.stdout
                assert done - got[0][0] >= 0.5, (got[0][0] - sent, done - got[0][0])

        asyncio.run(main())
    finally:
        server.stop()


def test_a_policy_that_redacts_the_printed_record_refuses_to_stream(binary, tmp_path):
    # A chunk cannot be redacted as the whole record is (a key may span two chunks): such a
    # policy's output is never streamed; the request is refused, nothing runs.
    text = (REPO / "policies" / "workspace.toml").read_text()
    assert "\nprinted = false\n" in text
    policy = tmp_path / "redacting.toml"
    policy.write_text(text.replace("\nprinted = false\n", "\nprinted = true\n", 1))
    with agentjail.Client(binary=binary, policy=str(policy), args=["--pool", "0"]) as c:
        with pytest.raises(agentjail.ServerError) as e:
            c.run("print(1)", output_mode="text", on_stdout=print)
        assert e.value.code == "bad_request" and "redacts the printed record" in str(e.value)
        assert c.run("print(1)", output_mode="text").stdout == "1\n"
