"""MCP round trip for scripts/bench.sh: `run_python` through the official MCP client against
bare cold `python3 -I -S main.py` of the same code, interleaved. Runs in the venv
scripts/setup.sh makes (.venv-mcp, mcp==2.3.0); bench.py's report prints the rows.

    .venv-mcp/bin/python scripts/bench/mcp_roundtrip.py ROUNDS OUT AGENTJAIL ACTION [--policy FILE]

Samples written to OUT, one per line:
  mcp_connect NS        start `agentjail mcp`, connect (mcp.Client: server/discover), first
                        run_python answered: what an agent pays once per session
  mcp_call NS STATUS START
                        one run_python round trip on the open connection (START: the jail
                        was warm, from the pool, or cold, started for the call)
  mcp_bare NS RC        /usr/bin/python3 -I -S main.py, the same code and payload on stdin

Between samples the harness idles GAP seconds, so the pool's background refill after a
call never lands inside the next sample of either side: this measures the warm path an
agent sees when it thinks between calls (it always does: a model turn takes seconds).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import anyio
from mcp import Client, StdioServerParameters

GAP = 0.15


def args_of(action):
    return {"code": action["code"], "input": action["input_payload"],
            "output_schema": action["output_schema"]}


def bare(main_py, stdin):
    t0 = time.perf_counter_ns()
    p = subprocess.run(["/usr/bin/python3", "-I", "-S", main_py], input=stdin,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return time.perf_counter_ns() - t0, p.returncode


async def main(rounds, out, aj, action_path, policy):
    with open(action_path) as f:
        action = json.load(f)
    server = StdioServerParameters(command=aj, args=["mcp", *policy])
    stdin = (json.dumps(action["input_payload"]) + "\n").encode()
    lines = []
    with tempfile.TemporaryDirectory() as d:
        main_py = os.path.join(d, "main.py")
        with open(main_py, "w") as f:
            f.write(action["code"])
        for _ in range(max(2, rounds // 10)):
            t0 = time.perf_counter_ns()
            async with Client(server) as c:
                r = await c.call_tool("run_python", args_of(action))
                lines.append("mcp_connect %d %s" % (time.perf_counter_ns() - t0, r.structured_content["status"]))
            await anyio.sleep(GAP)
        async with Client(server) as c:
            await c.call_tool("run_python", args_of(action))  # warm-up: the pool is full after it
            for i in range(rounds):
                pair = ["call", "bare"] if i % 2 == 0 else ["bare", "call"]
                for which in pair:
                    await anyio.sleep(GAP)
                    if which == "bare":
                        ns, rc = bare(main_py, stdin)
                        lines.append("mcp_bare %d %d" % (ns, rc))
                    else:
                        t0 = time.perf_counter_ns()
                        r = await c.call_tool("run_python", args_of(action))
                        ns = time.perf_counter_ns() - t0
                        rec = r.structured_content
                        lines.append("mcp_call %d %s %s" % (ns, rec["status"], rec.get("jail_start", "-")))
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    a = sys.argv[1:]
    pol = a[a.index("--policy"):a.index("--policy") + 2] if "--policy" in a else []
    anyio.run(main, int(a[0]), a[1], a[2], a[3], pol)
