"""The Python client's overhead over the raw serve protocol, p50 (issue 27: <= 0.2 ms).

Both sides talk to their own `agentjail serve` subprocess over pipes and send the same
`check` request (no jail: the server's cheapest real work), interleaved round by round so
load on the machine hits both alike. Raw: one json.dumps + write + readline + json.loads.
Client: client.check(code) (request build, id, the reader thread's hand-off, Decision).

    .venv-py/bin/python scripts/bench/pyclient_overhead.py [ROUNDS]   (AGENTJAIL_BINARY or PATH)
"""
import json
import statistics
import subprocess
import sys
import time

import agentjail

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
binary = agentjail.find_binary()
code = "import json\nprint(json.dumps({'x': 1}))"
action = agentjail.build_action(code)

raw = subprocess.Popen([binary, "serve", "--pool", "0", "--session-pool", "0"],
                       stdin=subprocess.PIPE, stdout=subprocess.PIPE)
client = agentjail.Client(binary=binary, args=["--pool", "0", "--session-pool", "0"])


def raw_check(i):
    raw.stdin.write(json.dumps({"id": i, "op": "check", "action": action}).encode() + b"\n")
    raw.stdin.flush()
    resp = json.loads(raw.stdout.readline())
    assert resp["decision"]["decision"] == "allow", resp


t_raw, t_client = [], []
for i in range(rounds + 100):
    a = time.perf_counter()
    raw_check(i)
    b = time.perf_counter()
    assert client.check(code).allowed
    c = time.perf_counter()
    if i >= 100:  # warm-up
        t_raw.append((b - a) * 1e3)
        t_client.append((c - b) * 1e3)
client.close()
raw.stdin.close()
raw.wait()
p50r, p50c = statistics.median(t_raw), statistics.median(t_client)
print(f"rounds {rounds}: raw p50 {p50r:.3f} ms, client p50 {p50c:.3f} ms, overhead {p50c - p50r:+.3f} ms "
      f"(target <= 0.2 ms: {'met' if p50c - p50r <= 0.2 else 'missed'})")
