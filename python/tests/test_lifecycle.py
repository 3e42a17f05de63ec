"""Owning the server: close() ends it and everything below it; a socket server; url=."""

import gc
import os
import signal
import socket
import subprocess
import threading
import time

import pytest

import agentjail
from conftest import alive, descendants


def _wait_gone(pids, seconds=20.0):
    # Not a timing assertion: a bound on how long to wait for the kernel to reap them.
    end = time.monotonic() + seconds
    while time.monotonic() < end and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def test_close_leaves_no_process(binary):
    c = agentjail.Client(binary=binary, args=["--pool", "2", "--session-pool", "1"])
    s = c.session()
    assert s.exec("y = 1").ok
    assert c.run("print(1)", output_mode="text").ok
    pid = c.pid
    below = descendants(pid)
    assert below, "a warm pool has jail processes below serve"
    c.close()
    assert not alive(pid)
    assert _wait_gone(below) == []
    with pytest.raises(agentjail.ConnectionClosed):
        c.run("print(1)", output_mode="text")
    c.close()  # idempotent


def test_close_lets_a_running_job_finish(binary):
    c = agentjail.Client(binary=binary)
    out = {}

    def job():
        out["r"] = c.run("x = 0\nfor i in range(1000000):\n    x += i\nprint(x)", output_mode="text")

    t = threading.Thread(target=job)
    t.start()
    while not c._conn.pending:  # the request is on its way
        time.sleep(0.01)
    c.close()
    t.join()
    assert out["r"].ok and out["r"].stdout == f"{sum(range(1000000))}\n"


def test_an_abandoned_client_ends_its_server(binary):
    c = agentjail.Client(binary=binary)
    assert c.run("print(1)", output_mode="text").ok
    pid = c.pid
    below = descendants(pid)
    del c
    gc.collect()
    assert _wait_gone([pid] + below) == []


def test_a_server_that_dies_fails_the_waiting_calls(binary):
    c = agentjail.Client(binary=binary)
    assert c.run("print(1)", output_mode="text").ok
    os.kill(c.pid, signal.SIGKILL)
    with pytest.raises(agentjail.ConnectionClosed, match="exited"):
        c.run("print(1)", output_mode="text")
    c.close()


def test_bad_binary_and_bad_policy(tmp_path, binary):
    with pytest.raises(agentjail.AgentjailError, match="not an executable"):
        agentjail.Client(binary=str(tmp_path / "nope"))
    bad = tmp_path / "bad.toml"
    bad.write_text("this is = not [valid\n")
    # The constructor loads the policy with the binary (it used to fail at the first call,
    # as ConnectionClosed): the binary's own reason, file and line, is the error.
    with pytest.raises(agentjail.PolicyError, match="bad.toml:1:6"):
        agentjail.Client(binary=binary, policy=str(bad))


def test_socket_server(binary, tmp_path):
    import asyncio

    path = str(tmp_path / "aj.sock")
    server = subprocess.Popen([binary, "serve", "--socket", path, "--pool", "1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        # The socket file appears at bind(), before listen(): wait until a connect works.
        end = time.monotonic() + 20
        while time.monotonic() < end and server.poll() is None:
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(path)
                break
            except OSError:
                time.sleep(0.02)
            finally:
                probe.close()
        assert server.poll() is None, server.stderr.read().decode()
        with agentjail.Client(socket=path) as c:
            assert c.pid is None
            r = c.run("print(2+2)", output_mode="text")
            assert r.ok and r.stdout == "4\n"
            assert r.raw["caller"]["uid"] == os.getuid()
            with c.session() as s:
                s.exec("z = 5")
                assert s.exec("z").value == "5"

        async def main():
            async with agentjail.AsyncClient(socket=path) as ac:
                rs = await asyncio.gather(*[ac.run(f"print({i})", output_mode="text") for i in range(4)])
                assert [r.stdout for r in rs] == [f"{i}\n" for i in range(4)]

        asyncio.run(main())
        # The server outlives its clients.
        assert server.poll() is None
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(30) == 0
    with pytest.raises(agentjail.ConnectionClosed):
        agentjail.Client(socket=path)
