"""A hostile server: records of the wrong shape, odd stop reasons, huge or deep lines.
The client must never evaluate anything from them and never fail with anything but a
clear AgentjailError."""

import base64
import json
import os
import stat
import sys
import textwrap

import pytest

import agentjail
from agentjail import ProtocolError, Record, StopKind
from agentjail import _protocol as P


def rec(**kw):
    d = {"run_id": "r", "status": "stopped", "stop_reason": "code_timeout", "phase": "execute",
         "execution": {"exit_code": None, "stdout": "", "stderr": "", "wall_ms": 3}}
    d.update(kw)
    return d


@pytest.mark.parametrize("bad", [
    None, [], "record", 1,
    {"status": "ok"},
    rec(status=1),
    rec(status="fine"),
    rec(stop_reason=None),
    rec(stop_reason=["code_timeout"]),
    rec(status="ok", stop_reason="code_timeout"),
    rec(status="stopped", stop_reason="success"),
    rec(stop_reason="x" * 10000),
    rec(execution=[]),
    rec(execution={"stdout": 5}),
    rec(execution={"exit_code": "0"}),
    rec(execution={"exit_code": True}),
    rec(execution={"wall_ms": "fast"}),
    rec(output=[1, 2]),
    rec(error="boom"),
    rec(artifacts={"path": "x"}),
    rec(artifacts=[{"path": 3}]),
    rec(artifacts=[{"path": "x", "content_base64": "not base64!"}]),
    rec(artifacts=["x"]),
    rec(value=42),
])
def test_bad_records_raise_protocol_error(bad):
    with pytest.raises(ProtocolError):
        Record.from_dict(bad)


@pytest.mark.parametrize("reason", [
    "__import__('os').system('touch /tmp/agentjail-pwned')",
    "code_timeout\n{\"evil\": 1}",
    "CODE_TIMEOUT",
    "__class__:x",
    "mro",
    "\x00\x1b[31m",
    "é:é",
    ":",
    "code_runtime_error:" + "9" * 3000,
])
def test_odd_stop_reasons_are_reported_never_interpreted(reason):
    r = Record.from_dict(rec(stop_reason=reason))
    assert r.stop_reason == reason
    if reason.startswith("code_runtime_error:"):
        assert r.stop.kind is StopKind.CODE_RUNTIME_ERROR
    else:
        assert r.stop.kind is StopKind.UNKNOWN
        with pytest.raises(agentjail.UnknownStop):
            r.raise_for_status()
    assert not os.path.exists("/tmp/agentjail-pwned")


def test_unknown_keys_are_kept_and_ignored():
    d = rec(future_field={"x": [1]}, __class__="evil", raise_for_status="no")
    r = Record.from_dict(d)
    assert r.raw["future_field"] == {"x": [1]}
    assert callable(r.raise_for_status)
    assert r.stop.kind is StopKind.CODE_TIMEOUT


def test_inline_artifact_decoded():
    r = Record.from_dict(rec(artifacts=[{"path": "a", "bytes": 2, "content_base64": base64.b64encode(b"\0\1").decode()}]))
    assert r.artifacts[0].content == b"\0\1"


@pytest.mark.parametrize("line", [
    b"not json\n",
    b"[1, 2]\n",
    b"{\"id\": NaN}\n",
    b"[" * 100000 + b"]" * 100000 + b"\n",
    b"{\"id\": 1, \"n\": " + b"9" * 100000 + b"}\n",
    b"\xff\xfe\n",
])
def test_bad_lines(line):
    with pytest.raises(ProtocolError):
        P.decode(line)


def test_bool_id_is_not_an_int_id():
    assert P.response_id({"id": True}) is None
    assert P.response_id({"id": "1"}) is None
    assert P.response_id({"id": 1}) == 1


def test_server_error_codes():
    with pytest.raises(agentjail.UnknownSession):
        P.result("session_exec", {"id": 1, "error": {"code": "unknown_session", "message": "x"}})
    with pytest.raises(agentjail.SandboxUnavailable) as e:
        P.result("session_start", {"id": 1, "error": {"code": "unavailable", "message": "sandbox_unavailable:setup"}})
    assert str(e.value) == "unavailable: sandbox_unavailable:setup"
    assert isinstance(e.value, agentjail.ServerError) and e.value.record is None
    with pytest.raises(agentjail.ServerError):
        P.result("run", {"id": 1, "error": {"code": {"x": 1}, "message": None}})
    with pytest.raises(ProtocolError):
        P.result("run", {"id": 1, "error": "boom"})
    with pytest.raises(ProtocolError):
        P.result("session_start", {"id": 1, "session": ["x"]})


FAKE = textwrap.dedent('''\
    #!{python}
    # A fake `agentjail serve` that answers every request with the scenario's lines.
    import json, os, sys
    scenario = os.environ["FAKE_SCENARIO"]
    if sys.argv[1:2] == ["policy"]:
        # The client's construction check (`policy show`): the policy loads, unless...
        if scenario == "bad_policy":
            sys.stderr.write("agentjail: invalid policy p.toml:3:1: limits.memory: fake (hint: h)\\n")
            sys.exit(2)
        # `policy show --json`: the loaded policy, as the real binary prints it.
        print(json.dumps({{"path": "fake.toml", "sha256": "0" * 64, "policy": {{"name": "fake"}}}}))
        sys.exit(0)
    if scenario == "exit_at_start":
        sys.stderr.write("fake: cannot start\\n")
        sys.exit(2)
    first = True
    for line in sys.stdin:
        req = json.loads(line)
        rid = req["id"]
        if first:
            # The constructor's stats: answered; each scenario starts after it.
            first = False
            print(json.dumps({{"id": rid, "stats": {{}}}}), flush=True)
            continue
        if scenario == "evil_record":
            out = {{"id": rid, "record": {{"status": "ok", "stop_reason": "__import__('os').system('touch ' + {marker!r})",
                                        "output": {{"x": 1}}}}}}
            print(json.dumps(out), flush=True)
        elif scenario == "wrong_id_then_right":
            print(json.dumps({{"id": True, "stats": {{"evil": 1}}}}), flush=True)
            print(json.dumps({{"id": str(rid), "stats": {{"evil": 2}}}}), flush=True)
            print(json.dumps({{"id": rid + 1000, "stats": {{"evil": 3}}}}), flush=True)
            print(json.dumps({{"id": None, "error": {{"code": "bad_json", "message": "x"}}}}), flush=True)
            print(json.dumps({{"id": rid, "stats": {{"ok": 1}}}}), flush=True)
        elif scenario == "huge_line":
            sys.stdout.write('{{"id": %d, "stats": {{"s": "%s"}}}}\\n' % (rid, "A" * 200000))
            sys.stdout.flush()
        elif scenario == "garbage":
            sys.stdout.write("\\x00\\x01 not json\\n")
            sys.stdout.flush()
        elif scenario == "exit":
            sys.stderr.write("fake: giving up\\n")
            sys.exit(3)
''')


@pytest.fixture
def fake(tmp_path):
    marker = str(tmp_path / "pwned")
    path = tmp_path / "fake-agentjail"
    path.write_text(FAKE.format(python=sys.executable, marker=marker))
    path.chmod(stat.S_IRWXU)

    def make(scenario, **kw):
        env = dict(os.environ, FAKE_SCENARIO=scenario)
        return agentjail.Client(binary=str(path), env=env, close_timeout=5, **kw)

    make.marker = marker
    return make


def test_fake_server_evil_record(fake):
    with fake("evil_record") as c:
        with pytest.raises(ProtocolError, match="status 'ok' with stop_reason"):
            c.run("print(1)")
        # The connection is fine: a bad record is that request's error alone.
        with pytest.raises(ProtocolError):
            c.run("print(1)")
    assert not os.path.exists(fake.marker)


def test_fake_server_ids_not_ours_are_ignored(fake):
    with fake("wrong_id_then_right") as c:
        assert c.stats() == {"ok": 1}
        assert c.stats() == {"ok": 1}


def test_fake_server_line_too_long_closes_the_connection(fake):
    with fake("huge_line", max_line=100000) as c:
        with pytest.raises(ProtocolError, match="over 100000 bytes"):
            c.stats()
        with pytest.raises(agentjail.ConnectionClosed):
            c.stats()


def test_fake_server_garbage(fake):
    with fake("garbage") as c:
        with pytest.raises(ProtocolError, match="not JSON"):
            c.stats()


def test_fake_server_exit_says_why(fake):
    with fake("exit") as c:
        with pytest.raises(agentjail.ConnectionClosed, match="giving up"):
            c.stats()


def test_a_server_that_cannot_start_fails_the_constructor(fake):
    with pytest.raises(agentjail.ConnectionClosed, match="cannot start"):
        fake("exit_at_start")
    with pytest.raises(agentjail.PolicyError, match="limits.memory: fake"):
        fake("bad_policy")


def test_async_fake_server(fake, tmp_path):
    import asyncio

    path = str(tmp_path / "fake-agentjail")

    async def main():
        env = dict(os.environ, FAKE_SCENARIO="huge_line")
        async with agentjail.AsyncClient(binary=path, env=env, max_line=100000, close_timeout=5) as c:
            with pytest.raises(ProtocolError, match="over 100000 bytes"):
                await c.stats()
            with pytest.raises(agentjail.ConnectionClosed):
                await c.stats()
        env = dict(os.environ, FAKE_SCENARIO="evil_record")
        async with agentjail.AsyncClient(binary=path, env=env, close_timeout=5) as c:
            with pytest.raises(ProtocolError):
                await c.run("print(1)")

    asyncio.run(main())
    assert not os.path.exists(fake.marker)
