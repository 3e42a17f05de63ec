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
    handle = ws.exec("sleep 300 & echo started", background=True)
    assert isinstance(handle, agentjail.CommandHandle)
    rec = handle.wait(timeout=20)
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


# -- files and commands as a coding agent uses them (issue 38) ------------------------------

REFUSED = [("../etc", "bad_path"), ("/etc/passwd", "bad_path"), ("/workspace/../etc", "bad_path"),
           ("link/passwd", "symlink")]


def _agent_files_setup(ws):
    ws.put({"src/a.py": "print(1)\n", "notes.txt": "hi"})
    assert ws.exec("mkdir -p build/sub && echo x > build/sub/o && ln -s /etc link").ok


def _check_listing(entries, src):
    assert [(e.name, e.type) for e in entries] == [
        ("build", "dir"), ("link", "symlink"), ("notes.txt", "file"), ("src", "dir")]
    assert entries.truncated is False
    assert [e.size for e in entries if e.name == "notes.txt"] == [2]
    assert [(e.name, e.type, e.size) for e in src] == [("a.py", "file", 9)]


def _check_refused(call):
    for path, why in REFUSED:
        with pytest.raises(agentjail.ServerError) as e:
            call(path)
        assert e.value.code == "path_refused" and f"({why})" in e.value.message, (path, e.value)


def agent_ops(ws):
    """list/exists/remove and a background command through a sync workspace: every
    refusal by its exact code and reason."""
    _agent_files_setup(ws)
    _check_listing(ws.list(), ws.list("src"))
    assert ws.exists("src/a.py") and ws.exists("/workspace/link") and ws.exists("/workspace")
    assert not ws.exists("nope") and not ws.exists("notes.txt/x")
    for op in (ws.list, ws.exists, ws.remove):
        _check_refused(op)
    with pytest.raises(agentjail.ServerError) as e:
        ws.list("link")  # listing through a symlink to /etc: refused, never followed
    assert e.value.code == "path_refused" and "(symlink)" in e.value.message
    with pytest.raises(agentjail.ServerError) as e:
        ws.remove("build")
    assert e.value.code == "path_refused" and "(is_a_directory)" in e.value.message
    assert ws.remove("build", recursive=True) is True and not ws.exists("build")
    assert ws.remove("link") is True and not ws.exists("link")
    assert ws.exec("test -f /etc/passwd").ok  # the link went, not what it pointed at
    # Background commands: one that ends, one killed while the other goes on.
    quick = ws.exec("for i in 1 2 3; do echo $i; done; echo err >&2; exit 3", background=True)
    slow = ws.exec("echo started; exec sleep 60", background=True)
    other = ws.exec(["sleep", "60"], background=True)
    rec = quick.wait(timeout=20)
    assert (rec.exit_code, rec.stdout, rec.stderr) == (3, "1\n2\n3\n", "err\n"), rec.raw
    assert rec.raw["command"]["background"] is True
    assert quick.wait() is rec and quick.kill() is rec
    deadline = time.monotonic() + 20
    while "started" not in slow.output().stdout and time.monotonic() < deadline:
        time.sleep(0.05)
    so_far = slow.output()
    assert so_far.running and so_far.stdout == "started\n" and so_far.stdout_bytes == 8
    with pytest.raises(TimeoutError):
        slow.wait(timeout=0.2)
    rec = slow.kill()
    assert rec.stop_reason == "code_killed:SIGKILL" and rec.stdout == "started\n", rec.raw
    assert other.output().running, "kill ends the command's own processes only"
    assert ws.exec("echo alive").stdout == "alive\n"
    return other


async def agent_ops_async(ws):
    """The same through an async workspace."""
    await ws.put({"src/a.py": "print(1)\n", "notes.txt": "hi"})
    assert (await ws.exec("mkdir -p build/sub && echo x > build/sub/o && ln -s /etc link")).ok
    _check_listing(await ws.list(), await ws.list("src"))
    assert await ws.exists("src/a.py") and not await ws.exists("nope")
    for op in (ws.list, ws.exists, ws.remove):
        for path, why in REFUSED:
            with pytest.raises(agentjail.ServerError) as e:
                await op(path)
            assert e.value.code == "path_refused" and f"({why})" in e.value.message, (path, e.value)
    assert await ws.remove("build", recursive=True) is True and not await ws.exists("build")
    quick = await ws.exec("echo hi; exit 5", background=True)
    slow = await ws.exec("echo up; exec sleep 60", background=True)
    assert isinstance(quick, agentjail.AsyncCommandHandle)
    rec = await quick.wait(timeout=20)
    assert (rec.exit_code, rec.stdout) == (5, "hi\n"), rec.raw
    deadline = time.monotonic() + 20
    while "up" not in (await slow.output()).stdout and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    rec = await slow.kill()
    assert rec.stop_reason == "code_killed:SIGKILL" and rec.stdout == "up\n", rec.raw
    return True


def _socket_server(binary, sock):
    server = subprocess.Popen([binary, "serve", "--policy", POLICY, "--pool", "0", "--socket", str(sock)],
                              stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not sock.exists() and time.monotonic() < deadline and server.poll() is None:
        time.sleep(0.05)
    return server


def test_agent_file_ops_and_background_commands_over_the_socket(binary, tmp_path):
    needs_cgroups()
    sock = tmp_path / "aj.sock"
    server = _socket_server(binary, sock)
    try:
        with agentjail.Client(socket=sock) as c, c.workspace() as a, c.workspace() as b:
            other = agent_ops(a)
            # A command id is its workspace's: on another workspace it is unknown.
            for op in ("workspace_wait", "workspace_kill"):
                with pytest.raises(agentjail.UnknownCommand) as e:
                    b._request(op, workspace=b.id, command=other.id)
                assert e.value.code == "unknown_command"
            assert other.output().running, "the other workspace's kill reached nothing"
            # Sockets: sessions and workspaces stay bound to their connection.
            for what in (c.session, c.workspace):
                with pytest.raises(agentjail.AgentjailError, match="belongs to the connection"):
                    what(id=a.id)

        async def main():
            async with agentjail.AsyncClient(socket=sock) as ac:
                with pytest.raises(agentjail.AgentjailError, match="belongs to the connection"):
                    ac.workspace(id="0" * 32)
                async with ac.workspace() as ws:
                    return await agent_ops_async(ws)

        assert asyncio.run(main())
    finally:
        server.terminate()
        server.wait(30)


def test_agent_ops_and_reattaching_over_http(binary, tmp_path):
    """Over HTTP, every op sync and async; a session and a workspace re-attached from a new
    connection with the same token, and unknown to another token (never revealed)."""
    import secrets

    from conftest import HttpServer

    needs_cgroups()
    alice, bob = secrets.token_hex(16), secrets.token_hex(16)
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {alice}\nbob {bob}\n")
    tokens.chmod(0o600)
    server = HttpServer(binary, "127.0.0.1:0", tokens, extra=["--policy", POLICY])
    try:
        with agentjail.Client(url=server.url, token=alice) as c:
            ws = c.workspace()
            bg = agent_ops(ws)
            s = c.session()
            assert s.exec("x = 41").ok
            with agentjail.Client(url=server.url, token=alice) as again:
                s2 = again.session(id=s.id)
                assert s2.exec("x + 1").value == "42"
                w2 = again.workspace(id=ws.id)
                assert w2.exists("notes.txt") and w2.exec("cat notes.txt").stdout == "hi"
                assert w2._request("workspace_wait", workspace=ws.id, command=bg.id, timeout_s=0).running
            with agentjail.Client(url=server.url, token=bob) as thief:
                with pytest.raises(agentjail.UnknownSession) as e:
                    thief.session(id=s.id).exec("x")
                assert e.value.code == "unknown_session"
                tw = thief.workspace(id=ws.id)
                for call in (tw.list, lambda: tw.exists("notes.txt"), lambda: tw.remove("notes.txt"),
                             lambda: tw.exec("true"),
                             lambda: tw._request("workspace_close", workspace=ws.id),
                             lambda: tw._request("workspace_kill", workspace=ws.id, command=bg.id)):
                    with pytest.raises(agentjail.UnknownWorkspace) as e:
                        call()
                    assert e.value.code == "unknown_workspace"
                with pytest.raises(agentjail.UnknownSession) as e:
                    thief._conn.request("session_close", session=s.id)
                assert e.value.code == "unknown_session"
            assert ws.exists("notes.txt") and bg.output().running  # bob touched nothing
            with pytest.raises(ValueError):
                c.workspace(id=ws.id, host_dir="/srv")
            s.close()
            ws.close()

        async def main():
            async with agentjail.AsyncClient(url=server.url, token=alice) as ac:
                async with ac.workspace() as w:
                    assert await agent_ops_async(w)
                    back = ac.workspace(id=w.id)
                    return await back.exists("notes.txt")

        assert asyncio.run(main()) is True
    finally:
        server.stop()
