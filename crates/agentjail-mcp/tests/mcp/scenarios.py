"""Drive `agentjail mcp` through the official MCP Python client (mcp==2.3.0).

    scenarios.py SCENARIO CONFIG_JSON

CONFIG_JSON: {"command": [argv of the server, e.g. [".../agentjail-mcp", "mcp"] or setpriv ...],
              "apis": ["client", "session"], "marker": "...", "action": "examples/incident/action.json"}

Every scenario runs through each API in "apis":
  client   mcp.Client(StdioServerParameters(...)): mode "auto", so it probes
           `server/discover` (protocol 2026-07-28) first and falls back to `initialize`;
  session  stdio_client(...) + ClientSession(...).initialize(): the v1-style handshake.

Prints one line per checked fact ("ok ...") and exits 1 with the reason on the first
failure. Run by
crates/agentjail-mcp/tests/mcp.rs (cargo test), which launches the server as root and as nobody.
"""
import base64
import json
import sys
from contextlib import asynccontextmanager

import os

import anyio
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../../examples/agent"))
import agent  # noqa: E402  (the example agent's PNG writer and artifact directory)

CFG = {}


def fail(msg):
    raise AssertionError(msg)


def check(cond, msg):
    if not cond:
        fail(msg)


def say(*parts):
    print(*parts, flush=True)


class Conn:
    """The two client APIs behind one face."""

    def __init__(self, api, obj):
        self.api = api
        self.obj = obj

    async def tools(self):
        return (await self.obj.list_tools()).tools

    async def call(self, name, args, progress=None):
        return await self.obj.call_tool(name, args, progress_callback=progress)

    @property
    def version(self):
        return self.obj.protocol_version


def params():
    cmd = CFG["command"]
    return StdioServerParameters(command=cmd[0], args=cmd[1:])


@asynccontextmanager
async def connect(api):
    if api == "client":
        async with Client(params()) as c:
            yield Conn(api, c)
    else:
        async with stdio_client(params()) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                yield Conn(api, s)


def record_of(r):
    """The record in structuredContent, checked against the text copy."""
    rec = r.structured_content
    check(isinstance(rec, dict), "no structuredContent: %r" % (r,))
    text = [c for c in r.content if getattr(c, "type", None) == "text"]
    check(text, "no text block: %r" % (r.content,))
    copy = json.loads(text[0].text)
    for k in ("run_id", "status", "stop_reason"):
        check(copy.get(k) == rec.get(k), "text copy differs at %s: %r vs %r" % (k, copy.get(k), rec.get(k)))
    check(r.is_error == (rec.get("status") != "ok"),
          "isError %r but status %r (%s)" % (r.is_error, rec.get("status"), rec.get("stop_reason")))
    return rec


# ----------------------------------------------------------------- scenarios

async def s_tools(c):
    tools = {t.name: t for t in await c.tools()}
    names = ["run_python", "check_python", "python_session_start", "python_session_exec", "python_session_close"]
    check(sorted(tools) == sorted(names), "tools: %r" % sorted(tools))
    run = tools["run_python"]
    check(run.input_schema["required"] == ["code"], "run_python requires %r" % run.input_schema.get("required"))
    check(run.input_schema.get("additionalProperties") is False, "run_python takes extra arguments")
    check(set(run.input_schema["properties"]) == {"code", "input", "stdin", "output_mode", "files", "output_schema", "timeout_s"},
          "run_python arguments: %r" % sorted(run.input_schema["properties"]))
    for name in ("run_python", "python_session_exec"):
        out = tools[name].output_schema
        check(out and {"run_id", "status", "stop_reason", "phase"} <= set(out["required"]),
              "%s outputSchema: %r" % (name, out))
        check({"output", "execution", "decision", "error", "artifacts"} <= set(out["properties"]),
              "%s outputSchema lacks record keys" % name)
    check(tools["check_python"].output_schema["properties"]["decision"]["enum"] == ["allow", "deny"],
          "check_python outputSchema")
    d = run.description
    for fact in ("Imports allowed: json, statistics", "wall 2 s", "memory 256MiB", "stdout 4KiB",
                 "json.loads(input())", "isError is true whenever status is not ok"):
        check(fact in d, "run_python description lacks %r" % fact)
    check(tools["python_session_exec"].input_schema["required"] == ["session", "code"], "exec requires")
    say("ok tools", c.api, "protocol", c.version, "; run_python description: %d chars" % len(d))


def incident_args():
    with open(CFG["action"]) as f:
        a = json.load(f)
    return {"code": a["code"], "input": a["input_payload"], "output_schema": a["output_schema"]}


async def s_incident(c):
    r = await c.call("run_python", incident_args())
    rec = record_of(r)
    check(rec["status"] == "ok", "incident stopped: %s %s" % (rec["stop_reason"], rec.get("error")))
    out = r.structured_content["output"]
    want = {"incident_severity": "P1", "chargeback_alerts": 1, "avg_latency_ms": 167.0,
            "p95_latency_ms": 187.0, "sample_size": 60}
    for k, v in want.items():
        check(out[k] == v, "%s = %r, want %r" % (k, out[k], v))
    check(abs(out["failed_payment_rate"] - 1 / 30) < 1e-12, "failed rate %r" % out["failed_payment_rate"])
    check(rec["action"]["language"] == "python" and rec["action"]["entrypoint"] == "main.py", "action")
    say("ok incident", c.api, json.dumps(out, sort_keys=True))


async def s_denied_import(c):
    code = "import json\nimport os\nprint(json.dumps({'cwd': os.getcwd()}))\n"
    r = await c.call("run_python", {"code": code})
    rec = record_of(r)
    check(rec["stop_reason"].startswith("policy_block:static_policy_violation:import_not_allowed:os"), rec["stop_reason"])
    v = rec["decision"]["violations"][0]
    check((v["rule"], v["line"], v["column"]) == ("import_not_allowed:os", 2, 8), "violation %r" % v)
    check("execution" not in rec, "a denied program ran")
    # The operator's key that would allow it, for the model (a stop a policy could lift).
    hint = rec.get("hint") or {}
    check('check.allowed_imports += "os"' in hint.get("text", ""), "hint: %r" % hint)
    check(hint["edits"][0]["key"] == "check.allowed_imports", "hint edits: %r" % hint)
    text = [b for b in r.content if getattr(b, "type", None) == "text"]
    check(json.loads(text[0].text).get("hint") == hint, "the text block lacks the hint")
    r = await c.call("check_python", {"code": code})
    d = r.structured_content
    check(d["decision"] == "deny" and d["violations"][0]["line"] == 2, "check_python: %r" % d)
    check(not r.is_error, "a deny is the check's answer, not a tool error")
    r = await c.call("check_python", {"code": "import json\nprint(json.dumps({}))"})
    check(r.structured_content["decision"] == "allow", "check allow: %r" % r.structured_content)
    say("ok denied_import", c.api, json.dumps(v))


async def s_timeout(c):
    code = ("import json\nn = 0\nwhile True:\n    n += 1\n"
            "    if n % 200000 == 0:\n        print('tick', n, flush=True)\n")
    seen = []

    async def progress(p, total, message):
        seen.append((p, total, message))

    rec = record_of(await c.call("run_python", {"code": code, "timeout_s": 1.5}, progress))
    check(rec["stop_reason"] == "code_timeout", "stop: %s" % rec["stop_reason"])
    out = rec["execution"]["stdout"]
    check("tick 200000" in out, "partial stdout lost: %r" % out[:200])
    check(1400 <= rec["execution"]["wall_ms"] <= 3000, "wall %r" % rec["execution"]["wall_ms"])
    check(len(seen) >= 3, "progress: %r" % seen)
    check(seen[0][2] == "started" and seen[-1][2] == "done", "progress ends: %r" % seen)
    ps = [p for p, _, _ in seen]
    check(ps == sorted(ps) and len(set(ps)) == len(ps), "progress not increasing: %r" % ps)
    check(any(m and m.startswith("running for") for _, _, m in seen), "no periodic progress: %r" % seen)
    # An output cap keeps what was printed too.
    cap = "print('x' * 100, flush=True)\nwhile True:\n    print('y' * 1000, flush=True)\n"
    rec = record_of(await c.call("run_python", {"code": cap}))
    check(rec["stop_reason"] == "code_output_too_large", rec["stop_reason"])
    check(rec["execution"]["stdout"].startswith("x" * 100), "cap output lost")
    say("ok timeout", c.api, "stdout kept: %d bytes, progress %r" % (len(out), [m for _, _, m in seen]))


async def start_session(c, hints=None):
    args = {} if hints is None else {"policy_hints": hints}
    r = await c.call("python_session_start", args)
    check(not r.is_error, "session start failed: %r" % (r.structured_content,))
    return r.structured_content["session"]


async def s_session(c):
    sid = await start_session(c)
    rec = record_of(await c.call("python_session_exec", {"session": sid, "code": "import statistics\nx = 41\nxs = [1, 2, 3]"}))
    check(rec["status"] == "ok", "call 1: %s %s" % (rec["stop_reason"], rec.get("error")))
    rec = record_of(await c.call("python_session_exec", {"session": sid, "code": "print('mean', statistics.mean(xs))\nx + 1"}))
    check(rec["status"] == "ok", "call 2: %s %s" % (rec["stop_reason"], rec.get("error")))
    check(rec["value"] == "42", "value %r" % rec.get("value"))
    check(rec["execution"]["stdout"] == "mean 2\n", "stdout %r" % rec["execution"]["stdout"])
    check(rec["session"]["calls"] == 2, "session %r" % rec["session"])
    # A Python exception fails the call, not the session.
    rec = record_of(await c.call("python_session_exec", {"session": sid, "code": "1 / 0"}))
    check(rec["error"]["type"] == "ZeroDivisionError", "error %r" % rec.get("error"))
    rec = record_of(await c.call("python_session_exec", {"session": sid, "code": "x * 2"}))
    check(rec["value"] == "82", "after an exception: %r" % rec.get("value"))
    # The check still applies, in the context of earlier calls.
    rec = record_of(await c.call("python_session_exec", {"session": sid, "code": "import os"}))
    check(rec["stop_reason"].endswith("import_not_allowed:os"), rec["stop_reason"])
    r = await c.call("python_session_close", {"session": sid})
    check(r.structured_content == {"closed": True}, "close: %r" % r.structured_content)
    rec = record_of(await c.call("python_session_exec", {"session": sid, "code": "x"}))
    check(rec["stop_reason"] == "invalid_request:unknown_session", "after close: %s" % rec["stop_reason"])
    say("ok session", c.api, "value 42, then 82 after a ZeroDivisionError")


async def s_isolation(c):
    a = await start_session(c)
    b = await start_session(c)
    check(a != b, "same id twice")
    rec = record_of(await c.call("python_session_exec", {"session": a, "code": "secret = 'only-in-a'"}))
    check(rec["status"] == "ok", rec["stop_reason"])
    rec = record_of(await c.call("python_session_exec", {"session": b, "code": "secret"}))
    check(rec["status"] == "stopped" and rec["error"]["type"] == "NameError", "b saw a: %r" % rec.get("error"))
    rec = record_of(await c.call("python_session_exec", {"session": a, "code": "secret"}))
    check(rec["value"] == "'only-in-a'", "a lost its variable: %r" % rec.get("value"))
    # Another connection (another client, another server process) cannot use a's id.
    async with connect(c.api) as other:
        rec = record_of(await other.call("python_session_exec", {"session": a, "code": "secret"}))
        check(rec["stop_reason"] == "invalid_request:unknown_session", "other connection: %s" % rec["stop_reason"])
        check("only-in-a" not in json.dumps(rec), "other connection saw the value")
        r = await other.call("python_session_close", {"session": a})
        check(r.is_error and r.structured_content["error"]["code"] == "unknown_session", "close from other: %r" % r.structured_content)
    rec = record_of(await c.call("python_session_exec", {"session": a, "code": "secret"}))
    check(rec["value"] == "'only-in-a'", "a was touched by the other connection")
    say("ok isolation", c.api)


async def s_concurrent(c):
    n = 20
    results = [None] * n

    async def one(i):
        code = "import json\nprint(json.dumps({'i': %d, 'sq': %d * %d}))" % (i, i, i)
        results[i] = await c.call("run_python", {"code": code})

    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(one, i)
    ids = set()
    for i, r in enumerate(results):
        rec = record_of(r)
        check(rec["status"] == "ok", "call %d: %s %s" % (i, rec["stop_reason"], rec.get("error")))
        check(rec["output"] == {"i": i, "sq": i * i}, "call %d got %r" % (i, rec["output"]))
        ids.add(rec["run_id"])
    check(len(ids) == n, "run ids repeat")
    say("ok concurrent", c.api, "%d calls" % n)


async def s_bad_arguments(c):
    rec = record_of(await c.call("run_python", {"code": "print(1)", "timeout": 3}))
    check(rec["stop_reason"] == "invalid_request:arguments" and "timeout" in rec["error"]["message"], rec)
    rec = record_of(await c.call("run_python", {"code": "x = (", "input": {"a": 1}}))
    check(rec["stop_reason"].startswith("policy_block:static_policy_violation:syntax_error"), rec["stop_reason"])
    check("hint" not in rec, "a syntax error has no policy hint: %r" % rec.get("hint"))
    rec = record_of(await c.call("run_python", {"code": "print(1)"}))
    check(rec["stop_reason"] == "invalid_code_output:not_object", rec["stop_reason"])
    check("hint" not in rec, "invalid output has no policy hint: %r" % rec.get("hint"))
    say("ok bad_arguments", c.api)


async def s_long_run(c):
    """For the kill test: a session holding a variable, and one call that runs until the
    client is killed (both jails must go with the connection)."""
    sid = await start_session(c)
    rec = record_of(await c.call("python_session_exec", {"session": sid, "code": "kept = 1"}))
    check(rec["status"] == "ok", "session call: %s" % rec["stop_reason"])
    started = anyio.Event()

    async def progress(p, total, message):
        started.set()

    async def run():
        await c.call("run_python", {"code": CFG["long_code"]}, progress)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await started.wait()
        await anyio.sleep(0.3)
        say("RUNNING")
        await anyio.sleep(60)


async def s_plot(c):
    """Plots (matplotlib, under policies/data.toml) come back as image/png: from a session
    call, and from run_python with an input file, a text artifact beside it."""
    sid = await start_session(c)
    r = await c.call("python_session_exec", {"session": sid, "code": agent.chart_code([150, 152, 160, 167, 171, 187])})
    rec = record_of(r)
    check(rec["status"] == "ok", "plot: %s %s" % (rec["stop_reason"], rec.get("error")))
    check([a["path"] for a in rec["artifacts"]] == ["latency.png"], "artifacts %r" % rec["artifacts"])
    check(all("content_base64" not in a for a in rec["artifacts"]), "bytes sent twice")
    images = [b for b in r.content if getattr(b, "type", None) == "image"]
    check(len(images) == 1 and images[0].mime_type == "image/png", "image content: %r" % [getattr(b, "type", None) for b in r.content])
    data = base64.b64decode(images[0].data)
    check(data.startswith(b"\x89PNG\r\n\x1a\n"), "not a PNG")
    check(len(data) == rec["artifacts"][0]["bytes"], "size %d vs %r" % (len(data), rec["artifacts"][0]))
    # The next call reports only what is new or changed.
    rec = record_of(await c.call("python_session_exec", {"session": sid, "code": "1 + 1"}))
    check(rec.get("artifacts", []) == [], "unchanged files reported again: %r" % rec.get("artifacts"))
    # plt.show() (a rich result, no file): the PNG is image content, the record keeps its text.
    r = await c.call("python_session_exec", {"session": sid, "code": "plt.close('all')\nplt.plot([3, 1, 2])\nplt.show()"})
    rec = record_of(r)
    check(rec["status"] == "ok", "show: %s %s" % (rec["stop_reason"], rec.get("error")))
    check(rec.get("results") == [{"text/plain": "<Figure size 640x480 with 1 Axes>"}], "results %r" % rec.get("results"))
    images = [b for b in r.content if getattr(b, "type", None) == "image"]
    check(len(images) == 1 and images[0].mime_type == "image/png", "show content: %r" % [getattr(b, "type", None) for b in r.content])
    check(base64.b64decode(images[0].data).startswith(b"\x89PNG\r\n\x1a\n"), "plt.show() sent no PNG")
    await c.call("python_session_close", {"session": sid})
    code = ("import csv\nimport json\nimport matplotlib.pyplot as plt\n"
            "rows = list(csv.DictReader(open('/app/in/latency.csv')))\n"
            "ms = [float(r['ms']) for r in rows]\n"
            "plt.plot(ms)\nplt.savefig('trend.png')\n"
            "open('summary.txt', 'w').write('max %s' % max(ms))\n"
            "print(json.dumps({'n': len(ms)}))\n")
    r = await c.call("run_python", {"code": code, "files": [{"path": "latency.csv", "content": "ms\n150\n187\n167\n"}]})
    rec = record_of(r)
    check(rec["status"] == "ok", "run plot: %s %s" % (rec["stop_reason"], rec.get("error")))
    check(rec["output"] == {"n": 3}, "output %r" % rec["output"])
    kinds = sorted((getattr(b, "type", None), getattr(b, "mime_type", None) or getattr(getattr(b, "resource", None), "mime_type", None)) for b in r.content[1:])
    check(kinds == [("image", "image/png"), ("resource", "text/plain")], "content %r" % kinds)
    text = [b.resource.text for b in r.content if getattr(b, "type", None) == "resource"]
    check(text == ["max 187.0"], "summary %r" % text)
    say("ok plot", c.api, "%d bytes of image/png from a session; run_python: %r" % (len(data), kinds))


async def s_files(c):
    """Input files land read-only under /app/in (policies/data.toml: open allowed)."""
    code = "import json\nprint(json.dumps({'text': open('/app/in/data/a.csv').read()}))\n"
    rec = record_of(await c.call("run_python", {"code": code, "files": [
        {"path": "data/a.csv", "content": "a,b\n1,2\n"},
        {"path": "raw.bin", "content_base64": base64.b64encode(bytes(range(4))).decode()}]}))
    check(rec["status"] == "ok", "files: %s %s" % (rec["stop_reason"], rec.get("error")))
    check(rec["output"] == {"text": "a,b\n1,2\n"}, "file content %r" % rec["output"])
    code = "import json\nopen('/app/in/data.csv', 'w')\nprint(json.dumps({}))\n"
    rec = record_of(await c.call("run_python", {"code": code, "files": [{"path": "data.csv", "content": "x"}]}))
    check(rec["stop_reason"] == "code_runtime_error:1" and rec["error"]["type"] in ("OSError", "PermissionError"),
          "input files must be read-only: %s %s" % (rec["stop_reason"], rec.get("error")))
    rec = record_of(await c.call("run_python", {"code": "print(1)", "files": [{"path": "../etc/passwd", "content": "x"}]}))
    check(rec["stop_reason"] == "invalid_action:files:path_traversal", rec["stop_reason"])
    say("ok files", c.api)


async def s_workspace(c):
    """The workspace tools under policies/workspace.toml: files and commands that last
    across calls, text back as text, and another connection sees none of it."""
    names = {t.name for t in await c.tools()}
    want = {"workspace_start", "workspace_exec", "workspace_put", "workspace_get", "workspace_close"}
    check(want <= names, "workspace tools missing: %r" % sorted(names))
    r = await c.call("workspace_start", {})
    check(not r.is_error, "start: %r" % (r.structured_content,))
    ws = r.structured_content["workspace"]
    r = await c.call("workspace_put", {"workspace": ws, "files": [
        {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"},
        {"path": "test_calc.py", "content": "from calc import add\nassert add(2, 3) == 5\nprint('passed')\n"}]})
    check(not r.is_error, "put: %r" % (r.structured_content,))
    rec = record_of(await c.call("workspace_exec", {"workspace": ws, "command": "python3 test_calc.py | tee result.txt"}))
    check(rec["status"] == "ok" and rec["execution"]["stdout"] == "passed\n", "exec: %s %r" % (rec["stop_reason"], rec["execution"]))
    rec = record_of(await c.call("workspace_exec", {"workspace": ws, "argv": ["sh", "-c", "exit 3"]}))
    check(rec["execution"]["exit_code"] == 3, "exit code: %r" % rec["execution"])
    r = await c.call("workspace_get", {"workspace": ws, "paths": ["result.txt", "missing"]})
    files = r.structured_content["files"]
    check(files[0].get("content") == "passed\n", "get: %r" % files)
    check(files[1].get("error") == "not_found", "get missing: %r" % files)
    rec = record_of(await c.call("workspace_exec", {"workspace": ws, "command": "true", "env": {"A=B": "x"}}))
    check(rec["stop_reason"].startswith("invalid_request:"), "A=B: %s" % rec["stop_reason"])
    async with connect(c.api) as other:
        rec = record_of(await other.call("workspace_exec", {"workspace": ws, "command": "cat result.txt"}))
        check(rec["status"] == "stopped" and "passed" not in json.dumps(rec), "other connection: %r" % rec)
        for tool, args in (("workspace_list", {}), ("workspace_exists", {"path": "calc.py"}),
                           ("workspace_remove", {"path": "calc.py"})):
            r = await other.call(tool, dict(args, workspace=ws))
            code = (r.structured_content or {}).get("error", {}).get("code")
            check(r.is_error and code == "unknown_workspace", "other connection %s: %r" % (tool, r.structured_content))
    await s_workspace_agent_ops(c, ws)
    r = await c.call("workspace_close", {"workspace": ws})
    check(r.structured_content == {"closed": True}, "close: %r" % r.structured_content)
    rec = record_of(await c.call("workspace_exec", {"workspace": ws, "command": "true"}))
    check(rec["status"] == "stopped", "after close: %s" % rec["stop_reason"])
    say("ok workspace", c.api)


async def s_workspace_agent_ops(c, ws):
    """workspace_list / exists / remove, and a background command's wait and kill, as a
    coding agent uses them; paths that leave the workspace are refused with path_refused."""
    def err_of(r):
        return (r.structured_content or {}).get("error", {})

    rec = record_of(await c.call("workspace_exec", {"workspace": ws, "command": "mkdir -p build/o && echo x > build/o/a && ln -s /etc link"}))
    check(rec["status"] == "ok", "setup: %r" % rec["stop_reason"])
    r = await c.call("workspace_list", {"workspace": ws})
    entries = [(e["name"], e["type"]) for e in r.structured_content["listing"]["entries"]]
    check(("build", "dir") in entries and ("link", "symlink") in entries and ("calc.py", "file") in entries, "list: %r" % entries)
    r = await c.call("workspace_exists", {"workspace": ws, "path": "/workspace/build/o/a"})
    stat = r.structured_content["stat"]
    check(stat["exists"] is True and stat["type"] == "file", "exists: %r" % r.structured_content)
    for tool, path, why in (("workspace_list", "link", "symlink"), ("workspace_exists", "link/passwd", "symlink"),
                            ("workspace_remove", "../etc/passwd", "bad_path"), ("workspace_list", "/etc", "bad_path")):
        r = await c.call(tool, {"workspace": ws, "path": path})
        e = err_of(r)
        check(r.is_error and e.get("code") == "path_refused" and "(%s)" % why in e.get("message", ""), "%s %s: %r" % (tool, path, e))
    r = await c.call("workspace_remove", {"workspace": ws, "path": "build"})
    check(err_of(r).get("code") == "path_refused" and "(is_a_directory)" in err_of(r)["message"], "remove dir: %r" % err_of(r))
    r = await c.call("workspace_remove", {"workspace": ws, "path": "build", "recursive": True})
    check(r.structured_content.get("removed") is True, "remove -r: %r" % r.structured_content)
    r = await c.call("workspace_exists", {"workspace": ws, "path": "build"})
    check(r.structured_content["stat"]["exists"] is False, "gone: %r" % r.structured_content)
    r = await c.call("workspace_exec", {"workspace": ws, "command": "echo up; sleep 60", "background": True})
    cmd = r.structured_content.get("command")
    check(not r.is_error and isinstance(cmd, str), "background: %r" % r.structured_content)
    r = await c.call("workspace_exec", {"workspace": ws, "command": "echo done; exit 4", "background": True})
    quick = r.structured_content["command"]
    rec = record_of(await c.call("workspace_wait", {"workspace": ws, "command": quick, "timeout_s": 20}))
    check(rec["execution"]["exit_code"] == 4 and rec["execution"]["stdout"] == "done\n", "wait: %r" % rec["execution"])
    r = await c.call("workspace_wait", {"workspace": ws, "command": quick})
    check(err_of(r).get("code") == "unknown_command", "waited twice: %r" % r.structured_content)
    r = await c.call("workspace_wait", {"workspace": ws, "command": cmd, "timeout_s": 0.5})
    check(r.structured_content.get("running", {}).get("command") == cmd, "still running: %r" % r.structured_content)
    rec = record_of(await c.call("workspace_kill", {"workspace": ws, "command": cmd}))
    check(rec["stop_reason"] == "code_killed:SIGKILL" and rec["execution"]["stdout"] == "up\n", "kill: %s %r" % (rec["stop_reason"], rec["execution"]))
    rec = record_of(await c.call("workspace_exec", {"workspace": ws, "command": "echo alive"}))
    check(rec["execution"]["stdout"] == "alive\n", "after kill: %r" % rec["execution"])
    say("ok workspace agent ops", c.api)


async def s_network(c):
    """run_python and a session under a network allowlist (tests/common/site.rs): the listed
    host answers, another is refused by the proxy, and each record lists both requests."""
    want = [("localhost", True, "ok"), ("evil.test", False, "not_allowlisted")]

    def verdicts(rec):
        return [(e["host"], e["allowed"], e["reason"]) for e in rec["network"]["requests"]]

    rec = record_of(await c.call("run_python", {"code": CFG["fetch_code"]}))
    check(rec["status"] == "ok", "run: %s %s" % (rec["stop_reason"], rec.get("error")))
    check(rec["output"] == {"ok": "OK-BODY", "other": "HTTP Error 403: Forbidden"}, "run output %r" % rec.get("output"))
    check(verdicts(rec) == want, "run requests %r" % verdicts(rec))
    sid = await start_session(c)
    code = ("import urllib.request as u\nb = u.urlopen('http://localhost:%d/ok', timeout=20).read().decode()\n"
            "try:\n    u.urlopen('http://evil.test/', timeout=20)\nexcept Exception as e:\n    b += ' ' + str(e)\nb") % CFG["port"]
    rec = record_of(await c.call("python_session_exec", {"session": sid, "code": code}))
    check(rec["status"] == "ok", "session call: %s %s" % (rec["stop_reason"], rec.get("error")))
    check(rec["value"] == repr("OK-BODY HTTP Error 403: Forbidden"), "session value %r" % rec.get("value"))
    check(verdicts(rec) == want, "session requests %r" % verdicts(rec))
    r = await c.call("python_session_close", {"session": sid})
    check(r.structured_content == {"closed": True}, "close: %r" % r.structured_content)
    say("ok network", c.api, "run and session: %r" % (want,))


async def s_net_policy(c):
    """The shipped policies/net.toml pointed at the test site: run_python fetches with
    urllib.request, http.client and (where installed) requests; a port no list names is
    refused; the record lists every request. The tool's description says so first."""
    tools = {t.name: t for t in await c.tools()}
    d = tools["run_python"].description
    check("urllib.request" in d and "Network: only the hosts localhost:%d" % CFG["port"] in d, "description: %s" % d)
    rec = record_of(await c.call("run_python", {"code": CFG["fetch_code"], "files": None, "timeout_s": None}))
    check(rec["status"] == "ok", "run: %s %s %s" % (rec["stop_reason"], rec.get("error"), rec["execution"]["stderr"]))
    got = rec["output"]
    want = {"urllib": "OK-BODY", "http_client": "OK-BODY", "requests": CFG["requests"],
            "other_port": "HTTP Error 403: Forbidden"}
    check(got == want, "run output %r" % got)
    verdicts = [(e["host"], e["port"], e["allowed"], e["reason"]) for e in rec["network"]["requests"]]
    site = ("localhost", CFG["port"], True, "ok")
    expect = [site, site] + ([site] if CFG["requests"] == "OK-BODY" else []) + [("localhost", 9, False, "not_allowlisted")]
    check(verdicts == expect, "requests %r" % verdicts)
    say("ok net_policy", c.api, "%d requests" % len(verdicts))


async def s_stream(c):
    """With a progressToken, a workspace command's and a session call's output come as
    progress messages while they run, before the result; their text is the record's output.
    (policies/workspace.toml.)"""
    import re
    import time

    def output_of(seen):
        return "".join(m for _, _, m in seen[1:-1] if not re.fullmatch(r"running for \d+ s", m or ""))

    r = await c.call("workspace_start", {})
    ws = r.structured_content["workspace"]
    seen, at = [], []

    async def progress(p, total, message):
        seen.append((p, total, message))
        at.append(time.monotonic())

    sent = time.monotonic()
    cmd = "for i in 0 1 2 3 4 5 6 7 8 9; do echo tick $i; sleep 0.1; done"
    rec = record_of(await c.call("workspace_exec", {"workspace": ws, "command": cmd}, progress))
    got = time.monotonic()
    check(rec["status"] == "ok", "exec: %s" % rec["stop_reason"])
    check(seen[0][2] == "started" and seen[-1][2] == "done", "progress ends: %r" % seen)
    check(output_of(seen) == rec["execution"]["stdout"], "streamed %r, record %r" % (output_of(seen), rec["execution"]["stdout"]))
    ps = [p for p, _, _ in seen]
    check(ps == sorted(ps) and len(set(ps)) == len(ps), "progress not increasing: %r" % ps)
    first = at[1]
    check(got - first >= 0.5, "the first chunk came %.0f ms before the result" % (1000 * (got - first)))
    await c.call("workspace_close", {"workspace": ws})
    sid = await start_session(c)
    seen.clear()
    rec = record_of(await c.call("python_session_exec", {"session": sid, "code": "print('a')\nprint('b')"}, progress))
    check(output_of(seen) == rec["execution"]["stdout"] == "a\nb\n", "session: %r" % seen)
    # Without a progressToken: no notification, the same record.
    rec = record_of(await c.call("python_session_exec", {"session": sid, "code": "print('c')"}))
    check(rec["execution"]["stdout"] == "c\n", "plain: %r" % rec["execution"])
    await c.call("python_session_close", {"session": sid})
    say("ok stream", c.api, "first chunk %.0f ms after the call, %.0f ms before the result" % (1000 * (first - sent), 1000 * (got - first)))


SCENARIOS = {
    "net_policy": s_net_policy,
    "tools": s_tools, "incident": s_incident, "denied_import": s_denied_import,
    "timeout": s_timeout, "session": s_session, "isolation": s_isolation,
    "concurrent": s_concurrent, "bad_arguments": s_bad_arguments, "long_run": s_long_run,
    "plot": s_plot, "files": s_files, "workspace": s_workspace, "network": s_network,
    "stream": s_stream,
}


async def main(name):
    for api in CFG.get("apis", ["client", "session"]):
        async with connect(api) as c:
            await SCENARIOS[name](c)


if __name__ == "__main__":
    CFG.update(json.loads(sys.argv[2]))
    try:
        anyio.run(main, sys.argv[1])
    except AssertionError as e:
        print("FAIL %s: %s" % (sys.argv[1], e), flush=True)
        sys.exit(1)
