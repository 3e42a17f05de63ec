"""Sessions, many threads on one client, and the asyncio twin."""

import asyncio
import threading

import pytest

import agentjail
from agentjail import StopKind

ECHO = "import json\nd = json.loads(input())\nprint(json.dumps({'n': d['n'], 'sq': d['n'] * d['n']}))"


def test_session_keeps_state_and_closes(client):
    with client.session() as s:
        assert s.exec("x = 41").ok
        r = s.exec("x + 1")
        assert r.ok and r.value == "42"
        r = s.exec("print('hi', x)")
        assert r.stdout == "hi 41\n"
        # A denied import stays denied in the session.
        r = s.exec("import os")
        assert r.stop.kind is StopKind.POLICY_BLOCK
    assert s.closed
    assert s.close() is False  # idempotent
    # The server forgot it: a call now is refused, one way or the other.
    try:
        r = s.exec("x")
    except agentjail.UnknownSession:
        pass
    else:
        assert not r.ok and r.stop.kind is StopKind.INVALID_REQUEST


def test_session_timeout_ends_it(client):
    with client.session() as s:
        r = s.exec("while True:\n    pass", timeout=0.3)
        assert r.stop.kind is StopKind.CODE_TIMEOUT
        assert r.session and r.session.get("ended") is True


def test_sessions_are_separate(client):
    with client.session() as a, client.session() as b:
        a.exec("v = 'a'")
        b.exec("v = 'b'")
        assert a.exec("v").value == "'a'"
        assert b.exec("v").value == "'b'"


def test_eight_threads_share_one_client(client):
    results, errors = {}, []

    def worker(t):
        try:
            for k in range(4):
                n = t * 100 + k
                r = client.run(ECHO, input={"n": n}, output_mode="json")
                results[n] = r
        except Exception as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 32
    for n, r in results.items():
        assert r.ok, r.stop_reason
        # Each answer is the one for its own request, whatever order they came back in.
        assert r.output == {"n": n, "sq": n * n}
    assert len({r.run_id for r in results.values()}) == 32


def test_threads_with_sessions_and_runs_mixed(client):
    errors = []

    def sess(t):
        try:
            with client.session() as s:
                s.exec(f"t = {t}")
                for _ in range(3):
                    assert s.exec("t").value == str(t)
        except Exception as e:
            errors.append(e)

    def runs(t):
        try:
            for k in range(3):
                assert client.run(ECHO, input={"n": t + k}, output_mode="json").output["n"] == t + k
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=f, args=(i,)) for i in range(4) for f in (sess, runs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_async_client(binary, incident):
    async def main():
        async with agentjail.AsyncClient(binary=binary, args=["--pool", "2"]) as c:
            rs = await asyncio.gather(*[c.run(ECHO, input={"n": n}, output_mode="json") for n in range(12)])
            for n, r in enumerate(rs):
                assert r.ok and r.output["n"] == n
            r = await c.run(incident["code"], input=incident["input_payload"], output_mode="json")
            assert r.ok and r.output["incident_severity"] == "P1" and r.output["sample_size"] == 60
            r = await c.run("print(2+2)", output_mode="text")
            assert r.stdout == "4\n"
            r = await c.run("while True:\n    pass", timeout=0.3)
            assert r.stop.kind is StopKind.CODE_TIMEOUT
            d = await c.check("import os")
            assert not d.allowed
            async with c.session() as s:
                await s.exec("x = 2")
                assert (await s.exec("x * 21")).value == "42"
            s2 = await c.session()
            assert (await s2.exec("1 + 1")).value == "2"
            assert await s2.close() is True
            assert "pool" in await c.stats()
            return c.pid

        return None

    pid = asyncio.run(main())
    from conftest import alive

    assert pid and not alive(pid)


def test_async_client_closed_refuses(binary):
    async def main():
        c = agentjail.AsyncClient(binary=binary)
        await c.close()
        with pytest.raises(agentjail.ConnectionClosed):
            await c.run("print(1)", output_mode="text")

    asyncio.run(main())
