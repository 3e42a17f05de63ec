#!/usr/bin/python3
"""soak-http.py BIN CALLS — `agentjail serve --http` under its callers, bounded, loopback only.

Run by scripts/soak.sh between its snapshots (so what the servers leave behind counts as a
leftover there). Three servers, two on 127.0.0.1 port 0:
- with a token file: CALLS rounds of a run and a session call as alice, bob refused alice's
  session (404 unknown_session), a call without a token refused (401), each session closed;
- without tokens: CALLS runs served, a session refused (403 caller_unidentified);
and one on a unix socket under --unread-budget 1MiB and judge-open.toml: 8 clients that
each ask for a ~900 KB record and never read it, at least one dropped
(agentjail_http_unread_dropped_total), and a client that reads still answered.
Each then stops on SIGTERM (exit 0). Every socket has a 60 s timeout and every server 30 s
to exit, so the script ends by itself. Prints one line; exits 1 when anything misbehaved.
"""
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

ALICE = "a" * 32
BOB = "b" * 32
TIMEOUT = 60


def start(bin_, extra, listen="127.0.0.1:0"):
    p = subprocess.Popen([bin_, "serve", "--http", listen, "--pool", "1", *extra],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        line = p.stderr.readline()
        if not line:
            break
        if line.startswith("agentjail: serving HTTP on "):
            return p, line.split()[-1]
    p.kill()
    raise SystemExit("soak-http: a server did not start")


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=TIMEOUT)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(TIMEOUT)
        self.sock.connect(self.path)


def call(addr, method, path, body=b"", token=None):
    if addr.startswith("unix:"):
        c = UnixConnection(addr[5:])
    else:
        host, port = addr.rsplit(":", 1)
        c = http.client.HTTPConnection(host, int(port), timeout=TIMEOUT)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    c.request(method, path, body=body, headers=headers)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def action(code, text=False):
    a = {"id": "soak", "language": "python", "entrypoint": "main.py", "code": code}
    if text:
        a["output_mode"] = "text"
    else:
        a["input_payload"] = {}
    return json.dumps(a).encode()


def stop(p):
    p.terminate()
    try:
        return p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return "hung"


def main():
    bin_, calls = sys.argv[1], int(sys.argv[2])
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    bad = []
    with tempfile.TemporaryDirectory(prefix="soak-http.") as d:
        tokens = os.path.join(d, "tokens")
        with open(tokens, "w") as f:
            f.write(f"alice {ALICE}\nbob {BOB}\n")
        os.chmod(tokens, 0o600)

        srv, addr = start(bin_, ["--token-file", tokens])
        try:
            for i in range(calls):
                st, body = call(addr, "POST", "/v1/run", action("print('{\"n\": %d}')" % i), ALICE)
                if st != 200 or json.loads(body).get("output") != {"n": i}:
                    bad.append(f"tokens run {i}: {st} {body[:200]!r}")
                st, body = call(addr, "POST", "/v1/sessions", b"", ALICE)
                if st != 200:
                    bad.append(f"session start {i}: {st} {body[:200]!r}")
                    continue
                sid = json.loads(body)["session"]
                st, body = call(addr, "POST", f"/v1/sessions/{sid}/exec", b'{"code": "x = 1"}', BOB)
                if st != 404 or json.loads(body)["error"]["code"] != "unknown_session":
                    bad.append(f"bob reached alice's session: {st} {body[:200]!r}")
                st, _ = call(addr, "POST", "/v1/run", action("print('{}')"))
                if st != 401:
                    bad.append(f"a call without a token: {st}")
                st, body = call(addr, "DELETE", f"/v1/sessions/{sid}", b"", ALICE)
                if st != 200:
                    bad.append(f"session close {i}: {st} {body[:200]!r}")
        finally:
            code = stop(srv)
        if code != 0:
            bad.append(f"the token server exited {code} on SIGTERM")

        srv, addr = start(bin_, [])
        try:
            for i in range(calls):
                st, body = call(addr, "POST", "/v1/run", action("print(%d)" % i, text=True))
                if st != 200 or json.loads(body)["execution"]["stdout"] != f"{i}\n":
                    bad.append(f"tokenless run {i}: {st} {body[:200]!r}")
            st, body = call(addr, "POST", "/v1/sessions")
            if st != 403 or json.loads(body)["error"]["code"] != "caller_unidentified":
                bad.append(f"a tokenless session: {st} {body[:200]!r}")
        finally:
            code = stop(srv)
        if code != 0:
            bad.append(f"the tokenless server exited {code} on SIGTERM")

        # Clients that never read, on a unix socket (whose ~200 KiB of buffers leave most
        # of each record with the server; loopback TCP's could take it all).
        policy = os.path.join(root, "policies", "judge-open.toml")
        sock = os.path.join(d, "http.sock")
        srv, addr = start(bin_, ["--policy", policy, "--unread-budget", "1MiB"], "unix:" + sock)
        silent = []
        try:
            big = action("import sys\nsys.stdout.write('x' * 900000)", text=True)
            for _ in range(8):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(TIMEOUT)
                s.connect(sock)
                s.sendall(b"POST /v1/run HTTP/1.1\r\nHost: soak\r\nContent-Length: %d\r\n\r\n"
                          % len(big) + big)
                silent.append(s)
            deadline = time.monotonic() + TIMEOUT
            dropped = 0
            while time.monotonic() < deadline:
                _, m = call(addr, "GET", "/metrics")
                for line in m.decode().splitlines():
                    if line.startswith("agentjail_http_unread_dropped_total "):
                        dropped = int(line.split()[1])
                if dropped >= 1:
                    break
                time.sleep(0.2)
            if dropped < 1:
                bad.append("8 clients that never read 900 KB each: none dropped past a 1 MiB budget")
            st, body = call(addr, "POST", "/v1/run", big)
            if st != 200 or json.loads(body)["execution"]["stdout_bytes"] != 900000:
                bad.append(f"a reading client beside the silent ones: {st}")
        finally:
            for s in silent:
                s.close()
            code = stop(srv)
        if code != 0:
            bad.append(f"the unread-budget server exited {code} on SIGTERM")
    for b in bad:
        print("soak-http:", b)
    print(f"soak-http: {calls} rounds with and without tokens, 8 silent clients: "
          f"{'ok' if not bad else f'{len(bad)} failures'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
