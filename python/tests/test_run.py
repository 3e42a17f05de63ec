"""client.run and client.check against the real binary."""

import json

import pytest

import agentjail
from agentjail import StopKind


def test_incident_seed_example_is_ok(client, incident):
    # The JSON contract is asked for by name: run() defaults to text mode (what the program
    # printed is record.stdout), so a program printing its JSON object says output_mode="json".
    r = client.run(incident["code"], input=incident["input_payload"], output_mode="json")
    assert r.ok, r.stop_reason
    assert r.status == "ok" and r.stop_reason == "success"
    assert r.stop.kind is StopKind.SUCCESS and r.stop.detail is None
    assert isinstance(r.output, dict)
    assert r.output["incident_severity"] == "P1"
    assert r.output["sample_size"] == 60
    assert r.exit_code == 0
    assert r.run_id and r.raw["run_id"] == r.run_id
    assert r.wall_ms is not None and r.wall_ms >= 0
    assert r.raise_for_status() is r


def test_text_mode_print(client):
    r = client.run("print(2+2)", output_mode="text")
    assert r.ok, r.stop_reason
    assert r.stdout == "4\n"
    assert r.output is None


def test_the_default_is_text_mode(client):
    # The first line a newcomer writes works: no schema, no mode, what it printed comes back.
    r = client.run("print(2+2)")
    assert r.ok, r.stop_reason
    assert r.stdout == "4\n" and r.output is None
    # check() judges what run() would send: text mode, where input() is an ordinary builtin.
    assert client.check("for _ in range(2):\n    print(input())").allowed
    assert not client.check("for _ in range(2):\n    print(input())", output_mode="json").allowed


def test_json_mode_print_is_invalid_output(client):
    r = client.run("print(2+2)", output_mode="json")
    assert not r.ok
    assert r.stop_reason == "invalid_code_output:not_object"
    assert r.stop.kind is StopKind.INVALID_CODE_OUTPUT and r.stop.detail == "not_object"
    with pytest.raises(agentjail.InvalidOutput) as e:
        r.raise_for_status()
    assert e.value.record is r


def test_stdin_arrives_byte_for_byte(client):
    r = client.run("print(repr(input()))", stdin="a\x00b\tzé\n", output_mode="text")
    assert r.ok, r.stop_reason
    assert r.stdout == "'a\\x00b\\tzé'\n"
    r = client.run("print(int(input()) * 2)", stdin=b"21\n", output_mode="text")
    assert r.stdout == "42\n"


def test_input_payload(client):
    code = "import json\nd = json.loads(input())\nprint(json.dumps({'twice': d['n'] * 2}))"
    r = client.run(code, input={"n": 21}, output_mode="json")
    assert r.ok and r.output == {"twice": 42}


def test_timeout_stops_the_code(client):
    r = client.run("while True:\n    pass", timeout=0.5)
    assert not r.ok
    assert r.stop.kind is StopKind.CODE_TIMEOUT
    with pytest.raises(agentjail.CodeTimeout):
        r.raise_for_status()
    with pytest.raises(agentjail.StoppedError):
        r.raise_for_status()


def test_runtime_error_has_the_exception(client):
    r = client.run("x = 1\n1/0", output_mode="text")
    assert r.stop.kind is StopKind.CODE_RUNTIME_ERROR and r.stop.detail == "1"
    assert r.error["type"] == "ZeroDivisionError"
    with pytest.raises(agentjail.CodeRuntimeError, match="ZeroDivisionError"):
        r.raise_for_status()


def test_static_check_blocks_before_running(client):
    r = client.run("import os\nos.system('id')")
    assert not r.ok
    assert r.stop.kind is StopKind.POLICY_BLOCK
    assert "import_not_allowed:os" in r.stop.detail
    with pytest.raises(agentjail.PolicyBlocked):
        r.raise_for_status()


def test_check(client):
    d = client.check("import os\nos.system('id')")
    assert not d.allowed and d.decision == "deny"
    assert any(v["rule"] == "import_not_allowed:os" for v in d.violations)
    d = client.check("import json\nprint(json.dumps({}))")
    assert d.allowed, d.raw


def test_output_schema(client):
    schema = {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}}
    r = client.run("import json\nprint(json.dumps({'a': 1}))", output_schema=schema)
    assert r.stop_reason == "invalid_code_output:a"
    r = client.run("import json\nprint(json.dumps({'a': 'x'}))", output_schema=schema)
    assert r.ok and r.output == {"a": "x"}


def test_bad_arguments_are_refused_before_sending(client):
    with pytest.raises(ValueError):
        client.run("print(1)", input={}, stdin="")
    with pytest.raises(ValueError):
        client.run("print(1)", output_mode="html")
    with pytest.raises(ValueError):
        client.run("print(1)", timeout=0)
    with pytest.raises(TypeError):
        client.run(b"print(1)")


def test_a_contract_error_is_a_record(client):
    # The server, not the client, judges the entrypoint: the answer is a stopped record.
    r = client.run("print(1)", entrypoint="../x.py")
    assert r.stop.kind is StopKind.INVALID_ACTION
    with pytest.raises(agentjail.InvalidAction):
        r.raise_for_status()


def test_files_in_and_artifacts_out(binary):
    import pathlib

    from conftest import needs_cgroups

    needs_cgroups()

    policy = pathlib.Path(__file__).resolve().parents[2] / "policies" / "data.toml"
    code = (
        "import json\n"
        "text = open('/app/in/a.txt').read()\n"
        "raw = open('/app/in/b.bin', 'rb').read()\n"
        "f = open('out.bin', 'wb')\nf.write(bytes(range(256)))\nf.close()\n"
        "print(json.dumps({'text': text, 'raw': list(raw)}))"
    )
    with agentjail.Client(binary=binary, policy=str(policy)) as c:
        r = c.run(code, files={"a.txt": "hé", "b.bin": b"\x00\xff"}, output_mode="json")
        assert r.ok, (r.stop_reason, r.error)
        assert r.output == {"text": "hé", "raw": [0, 255]}
        (art,) = r.artifacts
        assert art.path == "out.bin" and art.bytes == 256
        assert art.content == bytes(range(256))
        # The list form passes through as the action's own.
        r = c.run(code, files=[{"path": "a.txt", "content": "x"}, {"path": "b.bin", "content_base64": "AQ=="}],
                  output_mode="json")
        assert r.ok and r.output["raw"] == [1]


def test_stats(client):
    s = client.stats()
    assert "pool" in s and "sessions" in s
