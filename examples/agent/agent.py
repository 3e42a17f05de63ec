#!/usr/bin/env python3
"""A small agent loop that uses agentjail as its code-execution tool over MCP.

The "model" is a scripted stand-in (no network, no API key): it reads the tool results the
way a model would and reacts to them. The loop and the MCP side are real: the official
`mcp` client (mcp==2.3.0, `scripts/setup.sh` installs it into .venv-mcp/) starts
`agentjail mcp` on stdio and calls its tools.

What it does:

1. asks for the seed's incident metrics (examples/incident/action.json: the transactions
   payload and its output schema); the model's first draft imports `os` to label the report
   with the host name, and gets `policy_block:static_policy_violation` back with the rule,
   line and column, without anything having run;
2. the model drops `os` and sends the fixed program: the record's `output` holds the
   numbers (P1, 1/30 failed, 1 chargeback, 167.0 ms average, 187.0 ms p95, 60 samples);
3. starts a session under policies/data.toml and draws a bar chart of the latencies with
   matplotlib into its working directory, /app/out; the file comes back with the call's
   record as an artifact, which the server returns as MCP image content (image/png).

    .venv-mcp/bin/python examples/agent/agent.py [--agentjail PATH] [--out DIR]

Exit: 0 done (the plot saved in --out), 1 failed.
"""
import argparse
import base64
import json
import os
import shutil
import sys

import anyio
from mcp import Client, StdioServerParameters

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

def chart_code(values, name="latency.png"):
    """The session call that draws `values`: matplotlib saves into the working directory,
    /app/out, whose files come back as artifacts (images as MCP image content)."""
    return ("import matplotlib.pyplot as plt\n"
            "values = %r\n"
            "fig, ax = plt.subplots(figsize=(6, 3))\n"
            "ax.bar(range(len(values)), values, color='#2a5ac8')\n"
            "ax.set_xlabel('payment')\n"
            "ax.set_ylabel('latency (ms)')\n"
            "fig.tight_layout()\n"
            "fig.savefig(%r, dpi=80)\n"
            "len(values)\n") % (list(values), name)


class ScriptedModel:
    """Stands in for the model: picks the next tool call from the conversation so far."""

    def __init__(self, seed):
        self.seed = seed
        # Its first draft wants the host name in the report; the policy forbids `os`.
        self.draft = "import json\nimport os\n\n" + seed["code"].replace(
            '"region": payload["region"],',
            '"region": payload["region"],\n            "host": os.uname().nodename,') \
            .replace("import json\n", "", 1)

    def next_call(self, transcript):
        last = transcript[-1] if transcript else None
        if last is None:
            return "run_python", {"code": self.draft, "input": self.seed["input_payload"],
                                  "output_schema": self.seed["output_schema"]}
        rec = last["record"]
        if rec["status"] == "ok":
            return None
        violations = (rec.get("decision") or {}).get("violations") or []
        if any(v["rule"] == "import_not_allowed:os" for v in violations):
            # What a model does with that answer: drop the forbidden module and what used it.
            fixed = "\n".join(line for line in self.draft.splitlines()
                              if line != "import os" and "os.uname()" not in line)
            return "run_python", {"code": fixed, "input": self.seed["input_payload"],
                                  "output_schema": self.seed["output_schema"]}
        raise RuntimeError("the scripted model has no answer to %s" % rec["stop_reason"])


def say(*parts):
    print(*parts, flush=True)


def summary(rec):
    s = {"status": rec["status"], "stop_reason": rec["stop_reason"]}
    if rec.get("decision", {}).get("violations"):
        s["violations"] = [{k: v[k] for k in ("rule", "line", "column")} for v in rec["decision"]["violations"]]
    if "output" in rec:
        s["output"] = rec["output"]
    return s


async def metrics(server, seed):
    """Steps 1 and 2: the model's drafts through run_python until one passes."""
    model = ScriptedModel(seed)
    transcript = []
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        say("tools:", ", ".join(tools))
        while True:
            call = model.next_call(transcript)
            if call is None:
                return transcript[-1]["record"]["output"]
            name, args = call
            result = await client.call_tool(name, args)
            rec = result.structured_content
            transcript.append({"call": name, "record": rec})
            say("model -> %s; agentjail -> %s" % (name, json.dumps(summary(rec))))
            if len(transcript) > 4:
                raise RuntimeError("no passing program after 4 attempts")


async def plot(server, values, out_dir):
    """Step 3: a chart drawn in a session; the image comes back as MCP image content."""
    async with Client(server) as client:
        started = await client.call_tool("python_session_start", {})
        sid = started.structured_content["session"]
        say("session", sid, "started:", json.dumps(started.structured_content["limits"]))
        r = await client.call_tool("python_session_exec", {"session": sid, "code": chart_code(values)})
        rec = r.structured_content
        await client.call_tool("python_session_close", {"session": sid})
        if r.is_error:
            raise RuntimeError("the chart call failed: %s %s" % (rec["stop_reason"], rec.get("error")))
        images = [b for b in r.content if getattr(b, "type", None) == "image" and b.mime_type == "image/png"]
        if not images:
            raise RuntimeError("records carry artifacts, but no image/png came back: %r" % rec["artifacts"])
        data = base64.b64decode(images[0].data)
        if not data.startswith(b"\x89PNG\r\n\x1a\n"):
            raise RuntimeError("the image is not a PNG")
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "latency.png")
        with open(path, "wb") as f:
            f.write(data)
        say("plot received: image/png, %d bytes -> %s" % (len(data), path))
        return path


def default_agentjail():
    for p in (shutil.which("agentjail"),
              os.path.join(ROOT, "target/x86_64-unknown-linux-gnu/release/agentjail"),
              os.path.join(ROOT, "target/x86_64-unknown-linux-gnu/debug/agentjail")):
        if p and os.path.exists(p):
            return p
    return "agentjail"


async def main(args):
    with open(os.path.join(ROOT, "examples/incident/action.json")) as f:
        seed = json.load(f)
    default = StdioServerParameters(command=args.agentjail, args=["mcp"])
    out = await metrics(default, seed)
    say("metrics: severity %s, failed rate %s, chargebacks %s, avg %s ms, p95 %s ms, sample %s" % (
        out["incident_severity"], out["failed_payment_rate"], out["chargeback_alerts"],
        out["avg_latency_ms"], out["p95_latency_ms"], out["sample_size"]))
    data = StdioServerParameters(command=args.agentjail, args=["mcp", "--policy", args.data_policy])
    latencies = [row["latency_ms"] for row in seed["input_payload"]["transactions"]]
    await plot(data, latencies, args.out)
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agentjail", default=default_agentjail())
    ap.add_argument("--data-policy", default=os.path.join(ROOT, "policies/data.toml"))
    ap.add_argument("--out", default="agent-out")
    try:
        sys.exit(anyio.run(main, ap.parse_args()))
    except RuntimeError as e:
        say("FAILED:", e)
        sys.exit(1)
