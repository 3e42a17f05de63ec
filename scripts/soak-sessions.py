#!/usr/bin/python3
"""soak-sessions.py BIN CALLS — session calls through one `agentjail serve`, under attack.

Run by scripts/soak.sh between its snapshots (so what a session leaves behind counts as a
leftover there). Sessions of five calls each, four sessions open at once, driven over the
JSON-lines protocol on stdio. In every session, call 1 leaves a process running that holds
copies of fds 3 and 4 (made before it forked) and, for as long as the session lives, forges
`done` reports on them and on the runner's fds reopened through /proc, and reads for
frames. Every later call must answer with its own value (a number only that call knows,
and the state its session kept); one session in eight ends on a call's time limit instead,
and its next call must say `invalid_request:session_ended`. Then every session is closed and
the server stopped with SIGTERM. Prints one line; exits 1 when any call misbehaved.
"""
import json
import os
import random
import subprocess
import sys
import tempfile
import time

POLICY = """version = 1
name = "soak-sessions"
description = "scripts/soak-sessions.py: fork allowed, the check opened up"
[check]
allowed_imports = ["json", "os", "time"]
denied_calls = []
denied_names = []
denied_attributes = []
deny_dunder = false
[limits]
wall_time_ms = 2000
cpu_time_ms = 2000
memory = "128MiB"
pids = 32
stdout = "64KiB"
[seccomp]
allow_groups = [
  "basic_io", "files_read", "files_write_tmp", "memory", "process_self", "threads",
  "signals", "time", "sleep", "poll", "pipes", "exec", "system_info", "process_spawn",
]
[cgroup]
requirement = "best_effort"
[session]
max_calls = 50
"""

LEFTOVER = r"""
import os, time
d3, d4 = os.dup(3), os.dup(4)
runner = os.getpid()
if os.fork() == 0:
    forged = b'{"event": "done", "ok": true, "value": "\'forged\'"}\n'
    while True:
        fds = [d3, d4]
        for n in (3, 4):
            try:
                fds.append(os.open("/proc/%d/fd/%d" % (runner, n), os.O_RDWR | os.O_NONBLOCK))
            except OSError:
                pass
        for fd in fds:
            try:
                os.write(fd, forged)
            except OSError:
                pass
            try:
                os.set_blocking(fd, False)
                if os.read(fd, 1 << 16):
                    print("STOLEN", flush=True)
            except OSError:
                pass
        for fd in fds[2:]:
            os.close(fd)
        time.sleep(0.002)
os.close(d3)
os.close(d4)
kept = []
'left'
"""


class Server:
    def __init__(self, binary, policy):
        self.p = subprocess.Popen(
            [binary, "serve", "--policy", policy, "--pool", "2"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.next_id = 0

    def send(self, req):
        self.next_id += 1
        req["id"] = self.next_id
        self.p.stdin.write((json.dumps(req) + "\n").encode())
        self.p.stdin.flush()
        return self.next_id

    def responses(self, ids):
        """The responses to `ids` (a server answers in completion order)."""
        got = {}
        while len(got) < len(ids):
            line = self.p.stdout.readline()
            if not line:
                raise SystemExit("soak-sessions: the server closed its output")
            r = json.loads(line)
            got[r.get("id")] = r
        return [got[i] for i in ids]

    def stop(self):
        self.p.stdin.close()
        self.p.terminate()
        try:
            self.p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            return "the server did not stop within 20 s of SIGTERM"
        return None


def main():
    binary, calls = sys.argv[1], int(sys.argv[2])
    work = tempfile.mkdtemp(prefix="soak-sessions.")
    policy = os.path.join(work, "policy.toml")
    with open(policy, "w") as f:
        f.write(POLICY)
    rng = random.Random(calls)
    s = Server(binary, policy)
    bad = []
    done = ended = 0
    start = time.monotonic()
    try:
        while done < calls:
            batch = 4
            sids = [
                r.get("session")
                for r in s.responses([s.send({"op": "session_start"}) for _ in range(batch)])
            ]
            if not all(sids):
                bad.append("session_start failed")
                break
            for r in s.responses(
                [s.send({"op": "session_exec", "session": sid, "code": LEFTOVER}) for sid in sids]
            ):
                if r.get("record", {}).get("value") != "'left'":
                    bad.append("call 1: %s" % json.dumps(r)[:300])
            done += batch
            timing_out = {sid for sid in sids if rng.random() < 0.125}
            for step in range(4):
                want, ids = {}, []
                for sid in sids:
                    n = rng.randrange(1 << 30)
                    if sid in timing_out and step == 1:
                        code = "import time\ntime.sleep(10)"
                        want[sid] = "code_timeout"
                    elif sid in timing_out and step > 1:
                        code = "1"
                        want[sid] = "invalid_request:session_ended"
                    else:
                        code = "import time\ntime.sleep(0.05)\nkept.append(%d)\n(%d, len(kept))" % (n, n)
                        want[sid] = "(%d, %d)" % (n, step + 1)
                    ids.append(s.send({"op": "session_exec", "session": sid, "code": code}))
                for sid, r in zip(sids, s.responses(ids)):
                    rec = r.get("record", {})
                    stdout = rec.get("execution", {}).get("stdout") or ""
                    if "STOLEN" in stdout:
                        bad.append("a leftover read a frame: %s" % stdout[:200])
                    if want[sid].startswith(("code_", "invalid_")):
                        if rec.get("stop_reason") != want[sid]:
                            bad.append("want %s: %s" % (want[sid], json.dumps(r)[:300]))
                        ended += want[sid] == "code_timeout"
                    elif rec.get("stop_reason") != "success" or rec.get("value") != want[sid]:
                        bad.append("want %s: %s" % (want[sid], json.dumps(r)[:300]))
                done += batch
            s.responses([s.send({"op": "session_close", "session": sid}) for sid in sids])
    finally:
        stopped = s.stop()
        if stopped:
            bad.append(stopped)
        stderr = s.p.stderr.read().decode("utf-8", "replace")
        if "panicked" in stderr:
            bad.append("the server panicked: " + stderr[-500:])
        os.unlink(policy)
        os.rmdir(work)
    print(
        "soak-sessions: %d session calls (%d sessions ended by a time limit) in %.1f s, "
        "every session attacked by a leftover; %d misbehaved"
        % (done, ended, time.monotonic() - start, len(bad))
    )
    for b in bad[:10]:
        print("  " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
