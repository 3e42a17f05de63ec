"""client.workspace() against the real binary under policies/workspace.toml: a shell and a
filesystem that last across calls, on each transport the client has (a private server over
stdio, a unix socket, asyncio)."""

import asyncio
import hashlib
import os
import subprocess
import time

import pytest

import agentjail
from conftest import REPO, alive, descendants, needs_cgroups

POLICY = str(REPO / "policies" / "workspace.toml")


@pytest.fixture(scope="module")
def wclient(binary):
    needs_cgroups()
    with agentjail.Client(binary=binary, policy=POLICY, args=["--pool", "1"]) as c:
        yield c


def test_a_workspace_keeps_files_and_runs_commands_one_after_another(wclient):
    with wclient.workspace() as ws:
        assert isinstance(ws.id, str) and ws.id
        put = ws.put({"src/calc.py": "def add(a, b):\n    return a + b\n", "data.bin": b"\x00\xff"})
        assert [f["path"] for f in put["files"]] == ["src/calc.py", "data.bin"]
        rec = ws.exec("cd src && python3 -B -c 'import calc; print(calc.add(2, 3))' > ../out.txt && cat ../out.txt")
        assert rec.ok and rec.stdout == "5\n" and rec.exit_code == 0, rec.raw
        assert rec.wall_ms is not None and rec.peak_memory_bytes is not None
        rec = ws.exec(["ls", "-1"], cwd="src")
        assert rec.stdout.split() == ["calc.py"]
        got = ws.get(["out.txt", "/workspace/data.bin", "missing.txt"])
        assert got[0].content == b"5\n" and got[0].sha256 == hashlib.sha256(b"5\n").hexdigest()
        assert got[1].content == b"\x00\xff" and got[1].size == 2
        assert got[2].content is None and got[2].error["code"] == "not_found"


def test_stdin_env_exit_codes_and_timeouts_are_the_commands(wclient):
    with wclient.workspace() as ws:
        assert ws.exec(["cat"], stdin="line\n").stdout == "line\n"
        raw = b"\xc3\x28\x00\xffbytes"
        rec = ws.exec(["sh", "-c", "cat > in.bin"], stdin=raw)
        assert rec.ok, rec.raw
        assert ws.get("in.bin")[0].content == raw
        assert ws.exec("echo $GREETING", env={"GREETING": "hi there"}).stdout == "hi there\n"
        rec = ws.exec("echo out; echo err >&2; exit 70")
        assert rec.exit_code == 70 and rec.stdout == "out\n" and rec.stderr == "err\n"
        assert not rec.ok
        rec = ws.exec(["sleep", "30"], timeout_s=1)
        assert not rec.ok and "timeout" in rec.stop_reason, rec.stop_reason
        # The workspace outlives a command it stopped.
        assert ws.exec("echo still here").stdout == "still here\n"


def test_env_names_that_are_not_names_are_refused(wclient):
    # Only the syntax is checked: env is the caller's code, and the jail contains what it
    # makes run (docs/REFERENCE.md, workspace_exec's env).
    with wclient.workspace() as ws:
        for name in ("A=B", "1X"):
            with pytest.raises(agentjail.ServerError) as e:
                ws.exec("true", env={name: "/workspace/x"})
            assert name in e.value.message and "not a name" in e.value.message


def test_paths_outside_the_workspace_are_refused(wclient):
    with wclient.workspace() as ws:
        with pytest.raises(agentjail.ServerError):
            ws.put({"../escape.txt": "x"})
        ws.exec("ln -s /etc/passwd link")
        got = ws.get(["link", "../etc/passwd"])
        assert got[0].content is None and got[1].content is None


def test_a_closed_workspace_is_gone_and_its_processes_with_it(wclient):
    ws = wclient.workspace()
    rec = ws.exec("sleep 300 & echo started", background=True)
    assert rec.ok and rec.stdout == "started\n", rec.raw
    # The shell's child may not have exec'd sleep yet: it carries "sleep 300" either way.
    deadline = time.monotonic() + 10
    sleepers = []
    while not sleepers and time.monotonic() < deadline:
        sleepers = [p for p in descendants(wclient.pid) if "sleep 300" in _cmdline(p)]
    assert sleepers, "the background sleep should be running in the jail"
    assert ws.close() is True
    assert ws.close() is False
    deadline = time.monotonic() + 10
    while any(alive(p) for p in sleepers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(p) for p in sleepers)
    with pytest.raises(agentjail.UnknownSession):
        wclient._conn.request("workspace_exec", workspace=ws.id, command="true")


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def test_the_async_client_has_workspaces_too(binary):
    needs_cgroups()

    async def main():
        async with agentjail.AsyncClient(binary=binary, policy=POLICY, args=["--pool", "1"]) as c:
            async with c.workspace() as ws:
                await ws.put({"a.txt": "alpha"})
                rec = await ws.exec(["cat", "a.txt"])
                got = await ws.get(["a.txt"])
                return rec.stdout, got[0].text

    assert asyncio.run(main()) == ("alpha", "alpha")


def test_a_socket_client_has_workspaces(binary, tmp_path):
    needs_cgroups()
    sock = tmp_path / "aj.sock"
    server = subprocess.Popen([binary, "serve", "--policy", POLICY, "--pool", "1", "--socket", str(sock)],
                              stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not sock.exists() and time.monotonic() < deadline and server.poll() is None:
            time.sleep(0.05)
        with agentjail.Client(socket=sock) as c, c.workspace() as ws:
            ws.put([{"path": "x.txt", "content": "via the socket"}])
            assert ws.exec("cat x.txt").stdout == "via the socket"
    finally:
        server.terminate()
        server.wait(30)
    assert not os.path.exists(sock)


def test_an_http_client_has_workspaces_and_owns_them(binary, tmp_path):
    import secrets

    from conftest import HttpServer

    needs_cgroups()
    alice, bob = secrets.token_hex(16), secrets.token_hex(16)
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {alice}\nbob {bob}\n")
    tokens.chmod(0o600)
    server = HttpServer(binary, "127.0.0.1:0", tokens, extra=["--policy", POLICY])
    try:
        with agentjail.Client(url=server.url, token=alice) as c, c.workspace() as ws:
            ws.put({"x.txt": "over http", "b.bin": b"\x00\xff"})
            rec = ws.exec(["cat", "x.txt"])
            assert rec.ok and rec.stdout == "over http" and rec.raw["caller"]["token"] == "alice"
            assert ws.exec("cat > y.bin", stdin=b"\xc3\x28\x00").ok
            got = ws.get(["b.bin", "y.bin", "none"])
            assert [g.content for g in got] == [b"\x00\xff", b"\xc3\x28\x00", None]
            with agentjail.Client(url=server.url, token=bob) as other:
                with pytest.raises(agentjail.UnknownSession):
                    other._conn.request("workspace_exec", workspace=ws.id, command="cat x.txt")

        async def main():
            async with agentjail.AsyncClient(url=server.url, token=alice) as c:
                async with c.workspace() as ws:
                    await ws.put({"a.txt": "async over http"})
                    return (await ws.exec("cat a.txt")).stdout

        assert asyncio.run(main()) == "async over http"
    finally:
        server.stop()


def test_a_workspace_under_a_network_allowlist_records_its_requests(binary, tmp_path):
    """policies/workspace.toml with an allowlist naming a site on this host's loopback: the
    listed host answers a command, another is refused by agentjail's proxy, and the command's
    record lists both requests with their verdicts."""
    import http.server
    import threading

    class Site(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "7")
            self.end_headers()
            self.wfile.write(b"OK-BODY")

        def log_message(self, *args):
            pass

    needs_cgroups()
    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Site)
    port = site.server_address[1]
    threading.Thread(target=site.serve_forever, daemon=True).start()
    text = open(POLICY).read()
    start = text.index("[network]")
    end = text.index("[seccomp]", start)
    net = (f'[network]\nmode = "allowlist"\nallow = ["localhost:{port}"]\n'
           'allow_private = ["127.0.0.1/32"]\nallow_http = true\n\n')
    text = text[:start] + net + text[end:]
    for old, new in (('"javascript",\n]', '"javascript", "network",\n]'),
                     ('"socket", "socketpair", "getpeername"', '"socketpair"')):
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    policy = tmp_path / "net.toml"
    policy.write_text(text)
    fetch = ("import sys, urllib.request, urllib.error\n"
             "try:\n    print(urllib.request.urlopen(sys.argv[1], timeout=20).read().decode())\n"
             "except urllib.error.HTTPError as e:\n    print(e.code)\n")
    try:
        with agentjail.Client(binary=binary, policy=str(policy), args=["--pool", "0"]) as c, c.workspace() as ws:
            ws.put({"fetch.py": fetch})
            rec = ws.exec(f"python3 fetch.py http://localhost:{port}/ok; python3 fetch.py http://evil.test/")
            assert rec.ok and rec.stdout == "OK-BODY\n403\n", rec.raw
            verdicts = [(e["host"], e["allowed"], e["reason"]) for e in rec.raw["network"]["requests"]]
            assert verdicts == [("localhost", True, "ok"), ("evil.test", False, "not_allowlisted")]
    finally:
        site.shutdown()
