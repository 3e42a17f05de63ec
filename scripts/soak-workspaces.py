#!/usr/bin/python3
"""soak-workspaces.py BIN COUNT — COUNT workspaces through one `agentjail serve`.

Run by scripts/soak.sh between its snapshots (so what a workspace leaves behind counts as a
leftover there). Each workspace, with policies/workspace.toml and a 4 MiB /workspace: a put,
commands of every kind (an argv, a shell line, one that leaves processes (in and out of its
group), one started in the background (its id at once, its record from workspace_wait,
its process left running), one stopped at its timeout, one that fills the
workspace, one that exits 3), a get, then the close; every fifth workspace is left for the
server's SIGTERM instead. Every answer is checked. Prints one line; exits 1 when any
request misbehaved.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    bin_, count = sys.argv[1], int(sys.argv[2])
    text = open(os.path.join(ROOT, "policies/workspace.toml")).read()
    text = text.replace('size = "512MiB"', 'size = "4MiB"').replace("inodes = 65536", "inodes = 512")
    # Every fifth workspace stays open for SIGTERM: let one client hold them all.
    text = text.replace("max_per_client = 8", "max_per_client = %d" % max(8, count))
    d = tempfile.mkdtemp(prefix="soak-ws-")
    policy = os.path.join(d, "workspace.toml")
    with open(policy, "w") as f:
        f.write(text)
    os.chmod(d, 0o755)
    os.chmod(policy, 0o644)
    p = subprocess.Popen([bin_, "serve", "--policy", policy, "--pool", "1"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    n = [0]
    bad = []

    def call(**req):
        n[0] += 1
        req["id"] = n[0]
        p.stdin.write(json.dumps(req).encode() + b"\n")
        p.stdin.flush()
        r = json.loads(p.stdout.readline())
        if r.get("id") != n[0]:
            bad.append("answer to another request: %s" % r)
        return r

    def expect(what, ok, r):
        if not ok:
            bad.append("%s: %s" % (what, json.dumps(r)[:300]))

    t = time.monotonic()
    cmds = 0
    for i in range(count):
        r = call(op="workspace_start")
        ws = r.get("workspace")
        if not ws:
            bad.append("workspace_start failed: %s" % json.dumps(r)[:300])
            continue
        r = call(op="workspace_put", workspace=ws, files=[{"path": "in/a.txt", "content": "w%d" % i}])
        expect("put", "files" in r, r)
        steps = [
            (dict(argv=["cat", "in/a.txt"]), "success", "w%d" % i),
            (dict(command="sleep 60 & setsid sleep 61 & (sleep 62 &); echo left"), "success", "left\n"),
            (dict(command="ps -eo args | grep -c '^sleep' || true"), "success", "0\n"),
            (dict(command="sleep 63 >/dev/null 2>&1 &", background=True), "success", ""),
            (dict(command="sleep 30", timeout_s=0.2), "code_timeout", ""),
            (dict(command="dd if=/dev/zero of=fill bs=1M count=16 2>/dev/null; rm fill; echo ok"), "success", "ok\n"),
            (dict(command="exit 3"), "code_runtime_error:3", ""),
        ]
        for req, reason, out in steps:
            r = call(op="workspace_exec", workspace=ws, **req)
            if req.get("background"):
                # Started: its id at once; its record (the shell's: it exits at once, its
                # sleep left running in the workspace) from workspace_wait.
                cid = r.get("command")
                expect("background start", isinstance(cid, str) and len(cid) == 32, r)
                r = call(op="workspace_wait", workspace=ws, command=cid or "", timeout_s=10)
            rec = r.get("record") or {}
            got = rec.get("execution", {}).get("stdout")
            expect(json.dumps(req), rec.get("stop_reason") == reason and (not out or got == out), r)
            cmds += 1
        r = call(op="workspace_get", workspace=ws, paths=["in/a.txt"])
        expect("get", (r.get("files") or [{}])[0].get("bytes") == len("w%d" % i), r)
        if i % 5 != 4:
            expect("close", call(op="workspace_close", workspace=ws).get("closed") is True, {})
    p.send_signal(15)
    try:
        code = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        code = "hung"
    if code != 0:
        bad.append("serve exited %s" % code)
    os.unlink(policy)
    os.rmdir(d)
    print("soak-workspaces: %d workspaces, %d commands in %.1f s, %d misbehaved"
          % (count, cmds, time.monotonic() - t, len(bad)))
    for b in bad[:10]:
        print("  " + b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
