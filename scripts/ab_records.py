#!/usr/bin/env python3
"""A/B records: run one corpus through two builds of agentjail and diff what they answer.

Issue 37's refactor promises "the same records byte for byte". This is the proof: the same
jobs go through the previous binaries (A, `--base-bin`) and the new ones (B, `--head-bin`)
in the same run on the same machine, so the machine's facts (Python version, cgroup v1/v2,
landlock ABI) are the same on both sides and cancel out. Only what varies from one run to
the next (run and session ids, durations, peak memory, ports, temp paths) is normalised,
each by its path in the record or answer, never by a key name alone: the program's own
`output` may hold a key like `avg_latency_ms`, and that must still be compared.

Every JSON answer is also checked for its layout: it must be exactly what
`json.dumps` gives for the parsed value in serde_json's pretty or compact style, so a
change in key order, spacing or escaping is caught even though the comparison is made on
the parsed and normalised value.

    ab_records.py --base-bin DIR --head-bin DIR [--repo DIR] [--out DIR]

DIR holds agentjail, agentjail-http and agentjail-mcp side by side (`agentjail mcp` and
`serve --http` exec their sibling). scripts/ab-records.sh builds them; this script only
runs and compares. Exit 0 when every transcript is identical, 1 otherwise (a unified diff
per differing transcript on stdout), 2 when the harness itself failed.
Standard library only.
"""

import argparse
import copy
import difflib
import fnmatch
import http.client
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

# A job that hangs would hang the harness: every process gets this long, far past any
# limit the corpus sets (the longest is the seed variant's 2 s wall limit).
HANG_S = 60

VARIES = "<varies>"

# ---------------------------------------------------------------------------------------
# Normalisation: what varies run to run, by path.
#
# A pattern is a tuple of path components; "*" matches any key or list index, and a
# component with a glob matches keys by fnmatch. Patterns apply only at a record's root
# (the front-end drivers below say where records are), so `output.avg_latency_ms` is never
# touched.

RECORD_VARIES = [
    ("run_id",),  # a fresh UUID per run
    # Measured, never equal twice.
    ("execution", "wall_ms"),
    ("execution", "cpu_ms"),
    ("execution", "peak_memory_bytes"),
    ("compile", "wall_ms"),
    ("compile", "cpu_ms"),
    ("compile", "peak_memory_bytes"),
    ("trace", "*", "duration_us"),
    ("trace", "*", "detail", "*_us"),
    ("trace", "*", "detail", "*_ms"),
    ("session", "exec_ms"),  # a session's running total of execution time
    ("network", "requests", "*", "ms"),  # how long each proxied request took
]

# /run_code's answer: its timing.
RUN_CODE_VARIES = [("run_result", "execution_time"), ("compile_result", "execution_time")]

# The engine's stats: the warm pools refill in the background, so how many jails are ready
# or starting at the moment of the answer depends on timing, not on the build.
STATS_VARIES = [
    ("pool", "ready"),
    ("pool", "starting"),
    ("pools", "*", "ready"),
    ("pools", "*", "starting"),
    ("session_pool", "ready"),
    ("session_pool", "starting"),
    ("workspace_pool", "ready"),
    ("workspace_pool", "starting"),
]


def _match(component, key):
    if component == "*":
        return True
    if isinstance(key, int):
        return component == str(key)
    return component == key or ("*" in component and fnmatch.fnmatchcase(key, component))


def blank(value, patterns, prefix=()):
    """Replace, in place, every value whose path matches a pattern with VARIES."""
    items = (
        value.items() if isinstance(value, dict)
        else enumerate(value) if isinstance(value, list) else ()
    )
    for key, child in list(items):
        path = prefix + (key,)
        hit = False
        for pat in patterns:
            if len(pat) == len(path) and all(_match(c, k) for c, k in zip(pat, path)):
                hit = True
                break
        if hit:
            value[key] = VARIES
        else:
            blank(child, patterns, path)


class Ids:
    """Session and workspace ids are random: each distinct one becomes <kind-N> in order of
    appearance, in one transcript, so that the same id still reads the same everywhere."""

    def __init__(self):
        self.names = {}

    def add(self, real, kind):
        if isinstance(real, str) and real not in self.names:
            self.names[real] = f"<{kind}-{len(self.names) + 1}>"

    def replace(self, value):
        if isinstance(value, str):
            for real, name in self.names.items():
                value = value.replace(real, name)
            return value
        if isinstance(value, list):
            return [self.replace(v) for v in value]
        if isinstance(value, dict):
            return {self.replace(k): self.replace(v) for k, v in value.items()}
        return value


def strip_paths(value, scratch):
    """Temp paths (the run's scratch directory) become <scratch>: every string, any depth."""
    if isinstance(value, str):
        return value.replace(scratch, "<scratch>")
    if isinstance(value, list):
        return [strip_paths(v, scratch) for v in value]
    if isinstance(value, dict):
        return {k: strip_paths(v, scratch) for k, v in value.items()}
    return value


# Answers whose text is neither layout (then only their value is compared): counted, and
# the summary says so, since such a one is compared less strictly than byte for byte.
UNMATCHED_LAYOUTS = []


def layout(raw, value):
    """How the JSON text was laid out, when it is exactly serde_json's pretty or compact
    form of its parsed value (then comparing the parsed value loses nothing but what was
    normalised); "other" otherwise, which the transcript shows."""
    body = raw[:-1] if raw.endswith("\n") else raw
    nl = "+newline" if raw.endswith("\n") else ""
    if json.dumps(value, ensure_ascii=False, indent=2) == body:
        return "pretty" + nl
    if json.dumps(value, ensure_ascii=False, separators=(",", ":")) == body:
        return "compact" + nl
    UNMATCHED_LAYOUTS.append(body[:80])
    return "other" + nl


def parse_json(raw):
    try:
        return json.loads(raw)
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------
# The corpus: command-line cases, as data.
#
# Each case: argv after the binary ({scratch} is the case's own temp directory), stdin as
# text (or None), files to write into {scratch} first, and `record_at`: where its stdout's
# record is ("root", or None for a decision or plain output). Paths are relative to the
# repository the corpus comes from (--repo), the cwd of every command, so a policy's path
# reads the same in both builds' records.

SEED = "examples/incident/action.json"
VARIANTS = [
    "import_os",
    "infinite_loop",
    "javascript",
    "sample_size_zero",
    "severity_p0",
]
FORCING = "tests/policies/forcing.toml"


def action(code, **extra):
    """An action as tests/common's action_json builds it, with an empty input payload."""
    a = {"id": "t", "language": "python", "entrypoint": "main.py", "code": code,
         "input_payload": {}}
    a.update(extra)
    return json.dumps({k: v for k, v in a.items() if v is not None})


def seed_with(**changes):
    with open(SEED, encoding="utf-8") as f:
        a = json.load(f)
    for key, value in changes.items():
        if value is None:
            a.pop(key, None)
        elif key == "policy_hints":
            a.setdefault("policy_hints", {}).update(value)
        else:
            a[key] = value
    return json.dumps(a)


def network_policy():
    """The default policy with an allowlist that stops on a denial, as tests/jail/network.rs
    derives it."""
    with open("policies/default.toml", encoding="utf-8") as f:
        base = f.read()
    net = ('[network]\nmode = "allowlist"\nallow = ["localhost:9"]\n'
           'allow_private = ["127.0.0.1/32"]\nallow_http = true\ndeny_is_stop = true\n\n')
    start = base.index("[network]")
    end = start + base[start:].index("[seccomp]")
    text = base[:start] + net + base[end:]
    return text.replace('"pipes", "exec", "system_info",\n]',
                        '"pipes", "exec", "system_info", "network",\n]')


def cli_cases():
    """The command-line corpus. Built lazily: some cases read the seed from --repo."""
    cases = []

    def add(name, argv, stdin=None, files=None, record_at="root"):
        cases.append({"name": name, "argv": argv, "stdin": stdin, "files": files or {},
                      "record_at": record_at})

    # The seed job, its five variants, the JavaScript seed and the plot example.
    jobs = [("seed", SEED, [])]
    jobs += [(f"variant-{v}", f"examples/incident/variants/{v}.json", []) for v in VARIANTS]
    jobs += [("seed-js", "examples/incident/action.js.json", []),
             ("seed-js-data", "examples/incident/action.js.json",
              ["--policy", "policies/data.toml"]),
             ("plot-data", "examples/plot/action.json", ["--policy", "policies/data.toml"])]
    for name, path, flags in jobs:
        add(f"run-{name}", ["run", *flags, path])
        add(f"check-{name}", ["check", *flags, path], record_at=None)

    # One action per stop reason the tests force (tests/pipeline/run_pipeline.rs,
    # contract.rs, judge_mode.rs; DESIGN.md's table), with the exit code each gives.
    stops = [
        ("language-denied-policy", action("print(1)", language="ruby"), []),
        ("network-hint", seed_with(policy_hints={"network_access": "allowed"}), []),
        ("runtime-error", action("x = 1\ny = x / 0\n"), []),
        ("runtime-error-3", action("raise SystemExit(3)\n"), []),
        ("output-too-large", action("print('x' * 100000)"), []),
        ("stderr-too-large", action("raise ValueError('y' * 100000)"), []),
        ("empty-stdout", action("pass"), []),
        ("non-json", action("print('hello')"), []),
        ("not-object", action("print('[1, 2]')"), []),
        ("schema-failure", action(
            "import json\nprint(json.dumps({'n': 'x'}))\n",
            output_schema={"type": "object", "properties": {"n": {"type": "integer"}},
                           "required": ["n"]}), []),
        ("cpu-limit", action("while True:\n    pass\n"), ["--policy", FORCING]),
        ("memory-limit", action("b = []\nwhile True:\n    b.append(bytearray(8 << 20))\n"),
         ["--policy", FORCING]),
        ("pids-limit", action(
            "import os, time\nfor i in range(64):\n    if os.fork() == 0:\n"
            "        time.sleep(5)\n        raise SystemExit(0)\n"), ["--policy", FORCING]),
        ("forbidden-syscall", action("import os\nos.setuid(0)\nprint('{}')\n"),
         ["--policy", FORCING]),
        ("killed-sigsegv", action("import ctypes\nctypes.string_at(0)\n"),
         ["--policy", FORCING]),
        ("max-seconds", action("while True:\n    pass\n"),
         ["--policy", "{scratch}/budget.toml"]),
        ("static-violation", action("import os\nprint('{}')\n"), []),
        ("syntax-error", action("def (:\n"), []),
        ("text-mode", action("print(input())", input_payload=None, stdin="hi\n",
                             output_mode="text"), []),
        # The contract (tests/pipeline/contract.rs).
        ("bad-json", "{not json", []),
        ("not-object-action", "[1,2,3]", []),
        ("no-id", seed_with(id=None), []),
        ("no-code", seed_with(code=None), []),
        ("entrypoint-path", seed_with(entrypoint="../main.py"), []),
        ("entrypoint-denied", seed_with(entrypoint="run.py"), []),
        ("code-too-long", seed_with(code="x = 1\n" * 500), []),
        ("unknown-field", seed_with(extra=1), []),
        ("duplicate-key", '{"id": "t", "id": "u"}', []),
        ("bad-hints", seed_with(policy_hints={"exec_timeout_seconds": "soon"}), []),
        ("payload-too-large", action("print('{}')", input_payload={"x": "y" * (2 << 20)}), []),
        ("too-deep", '{"id": "t", "input_payload": ' + "[" * 300 + "]" * 300 + "}", []),
        ("schema-not-a-schema", action("print('{}')", output_schema={"type": 5}), []),
        ("bad-output-mode", action("print('{}')", output_mode="xml"), []),
        ("output-mode-denied", action("print(2+2)", input_payload=None, stdin="",
                                      output_mode="text"),
         ["--policy", "{scratch}/json-only.toml"]),
        # agentjail_error: a policy that cannot be used (exit 2, the record still printed).
        ("missing-policy", action("print('{}')"), ["--policy", "{scratch}/nope.toml"]),
        ("invalid-policy", action("print('{}')"), ["--policy", "{scratch}/bad.toml"]),
    ]
    files = {
        "budget.toml": "version = 1\n[budget]\nmax_seconds = 1\n[limits]\n"
                       "wall_time_ms = 1000\ncpu_time_ms = 5000\n",
        "bad.toml": "version = 1\n[limits]\nwall_time_ms = \"soon\"\n",
        "json-only.toml": "version = 1\nname = \"json-only\"\n[languages]\n"
                          "output_modes = [\"json\"]\n",
    }
    for name, text, flags in stops:
        add(f"run-{name}", ["run", *flags, "-"], stdin=text, files=files)
        if name in ("static-violation", "syntax-error", "bad-json", "unknown-field",
                    "language-denied-policy", "code-too-long", "missing-policy"):
            add(f"check-{name}", ["check", *flags, "-"], stdin=text, files=files,
                record_at=None)
    # agentjail_error:flags (an --input that cannot be used) and a flag clap refuses.
    add("run-bad-input-flag", ["run", "--input", "{scratch}/missing.csv", SEED])
    add("run-unknown-flag", ["run", "--no-such-flag", SEED], record_at=None)

    # `exec`: the jail alone. Exit codes are the command's own, 124 for a stop, 125 setup.
    add("exec-true", ["exec", "--record", "{scratch}/rec.json", "--", "/bin/true"],
        record_at="file")
    add("exec-exit-3", ["exec", "--record", "{scratch}/rec.json", "--",
                        "/bin/sh", "-c", "echo out; echo err >&2; exit 3"], record_at="file")
    add("exec-stdin", ["exec", "--", "/bin/cat"], stdin="through the jail\n", record_at=None)
    # A shell builtin loop: a pipeline would fork, which the default seccomp refuses.
    add("exec-output-cap", ["exec", "--record", "{scratch}/rec.json", "--output-limit", "100",
                            "--", "/bin/sh", "-c", "while :; do echo xxxxxxxxx; done"],
        record_at="file")
    add("exec-memory-limit", ["exec", "--record", "{scratch}/rec.json", "--memory-limit",
                              "64MiB", "--", "/usr/bin/python3", "-c",
                              "b = bytearray(200 << 20)"], record_at="file")
    add("exec-time-limit", ["exec", "--record", "{scratch}/rec.json", "--time-limit", "0.5",
                            "--", "/bin/sleep", "5"], record_at="file")
    add("exec-forbidden-syscall", ["exec", "--record", "{scratch}/rec.json", "--",
                                   "/usr/bin/python3", "-c", "import os; os.setuid(0)"],
        record_at="file")
    # code_network_denied: the allowlist's proxy refuses an unlisted host, and the policy
    # stops the run on a denial (tests/jail/network.rs; nothing listens on the listed port,
    # and nothing is ever sent to it).
    add("exec-network-denied", ["exec", "--record", "{scratch}/rec.json", "--policy",
                                "{scratch}/net.toml", "--", "/usr/bin/python3", "-I", "-S",
                                "-c", "import urllib.request as u\nu.urlopen("
                                "'http://evil.test/', timeout=20)\n"],
        files={"net.toml": network_policy()}, record_at="file")
    add("exec-signal", ["exec", "--", "/bin/sh", "-c", "kill -TERM $$"], record_at=None)
    add("exec-missing", ["exec", "--", "/no/such/command"], record_at=None)
    return cases


# ---------------------------------------------------------------------------------------
# Drivers: each returns a transcript (a list of steps, JSON-able) for one build.


class Run:
    """One build's side of the run: its binaries, the repo (cwd), a scratch root."""

    def __init__(self, bindir, repo, scratch):
        self.bin = os.path.join(bindir, "agentjail")
        self.repo = repo
        self.scratch = scratch

    def case_dir(self, name):
        d = os.path.join(self.scratch, name)
        os.makedirs(d, exist_ok=True)
        return d


def normal_json(raw, record_paths, scratch, ids=None):
    """A JSON text as a step shows it: its layout and its normalised value; the text itself
    when it is not JSON."""
    value = parse_json(raw)
    if value is None:
        return {"text": strip_paths(raw, scratch)}
    out = {"layout": layout(raw, value)}
    value = copy.deepcopy(value)
    if record_paths is not None:
        blank(value, record_paths)
    value = strip_paths(value, scratch)
    if ids is not None:
        value = ids.replace(value)
    out["json"] = value
    return out


def run_cli_case(run, case):
    d = run.case_dir(case["name"])
    for fname, text in case["files"].items():
        with open(os.path.join(d, fname), "w", encoding="utf-8") as f:
            f.write(text)
    argv = [a.replace("{scratch}", d) for a in case["argv"]]
    proc = subprocess.run([run.bin, *argv], cwd=run.repo, capture_output=True,
                          input=None if case["stdin"] is None else case["stdin"].encode(),
                          timeout=HANG_S)
    stdout = proc.stdout.decode("utf-8", "replace")
    stderr = proc.stderr.decode("utf-8", "replace")
    paths = RECORD_VARIES if case["record_at"] == "root" else None
    step = {"argv": case["argv"], "exit": proc.returncode}
    step["stdout"] = normal_json(stdout, paths, d) if stdout else ""
    step["stderr"] = strip_paths(stderr, d)
    if case["record_at"] == "file":
        rec = os.path.join(d, "rec.json")
        if os.path.exists(rec):
            with open(rec, encoding="utf-8") as f:
                step["record_file"] = normal_json(f.read(), RECORD_VARIES, d)
        else:
            step["record_file"] = None
    return [step]


class Lines:
    """A child process spoken to in JSON lines: one request written, one line read back
    (within HANG_S)."""

    def __init__(self, argv, cwd):
        self.proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.buf = b""

    def send(self, line):
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def read(self):
        deadline = time.monotonic() + HANG_S
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                raise RuntimeError("no answer within %ss" % HANG_S)
            chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
            if not chunk:
                raise RuntimeError("the server closed its stdout")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode("utf-8", "replace") + "\n"

    def close(self):
        """EOF on stdin: the server finishes and exits 0; its exit code and stderr are part
        of the transcript."""
        try:
            rest, err = self.proc.communicate(timeout=HANG_S)  # closes stdin first
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rest, err = self.proc.communicate()
        return self.proc.returncode, (self.buf + rest).decode("utf-8", "replace"), \
            err.decode("utf-8", "replace")


def serve_settle(srv, what):
    """Wait until every warm pool is full, so each job finds a warm jail (the record's
    `jail_start` would otherwise depend on timing). The polls are not in the transcript."""
    for i in range(600):
        srv.send(json.dumps({"id": f"settle-{i}", "op": "stats"}))
        stats = json.loads(srv.read())["stats"]
        pools = [p for p in (stats.get(k) for k in what) if p]
        if all(p["starting"] == 0 and p["ready"] >= p["target"] for p in pools):
            return
        time.sleep(0.05)
    raise RuntimeError("the warm pools never filled")


def serve_answer_paths(answer):
    """Where the varying parts of one serve answer are."""
    if "record" in answer:
        return [("record",) + p for p in RECORD_VARIES]
    if "stats" in answer:
        return [("stats",) + p for p in STATS_VARIES]
    return []


def serve_requests():
    """The JSON-lines transcript: (request, is_raw_line). {session} / {workspace} are
    filled with the last one started."""
    with open(SEED, encoding="utf-8") as f:
        seed = json.load(f)
    bad = dict(seed, entrypoint="run.py")
    denied = dict(seed, code="import os\n")
    return [
        {"id": "r1", "op": "run", "action": seed},
        {"id": 2, "op": "run", "action": bad},
        {"id": "c1", "op": "check", "action": seed},
        {"id": "c2", "op": "check", "action": denied},
        {"id": "s1", "op": "session_start"},
        {"id": "s2", "op": "session_exec", "session": "{session}", "code": "x = 41"},
        {"id": "s3", "op": "session_exec", "session": "{session}", "code": "x + 1"},
        {"id": "s4", "op": "session_exec", "session": "{session}", "code": "1 / 0"},
        {"id": "s5", "op": "session_close", "session": "{session}"},
        {"id": "s6", "op": "session_exec", "session": "{session}", "code": "x"},
        {"id": "s7", "op": "session_close", "session": "ffff"},
        {"id": "st", "op": "stats"},
        "{not json",
        {"id": "u1", "op": "no_such_op"},
        {"id": "x" * 129, "op": "stats"},
        {"id": "m1", "op": "run"},
        "[1, 2]",
    ]


def fill(req, ids_real):
    text = req if isinstance(req, str) else json.dumps(req)
    for kind, real in ids_real.items():
        text = text.replace("{%s}" % kind, real)
    return text


def drive_serve(run, flags, requests, name, files=None):
    """One `agentjail serve` on stdin/stdout, requests sent one at a time (its answers
    come in the order they finish; one at a time keeps that order fixed)."""
    d = run.case_dir(name)
    for fname, text in (files or {}).items():
        with open(os.path.join(d, fname), "w", encoding="utf-8") as f:
            f.write(text)
    flags = [a.replace("{scratch}", d) for a in flags]
    srv = Lines([run.bin, "serve", *flags, *audit_flag(d)], run.repo)
    ids, real, steps = Ids(), {}, []
    try:
        for req in requests:
            serve_settle(srv, ("pool", "session_pool", "workspace_pool"))
            line = fill(req, real)
            srv.send(line)
            raw = srv.read()
            answer = parse_json(raw) or {}
            for kind in ("session", "workspace"):
                if isinstance(answer.get(kind), str):
                    real[kind] = answer[kind]
                    ids.add(answer[kind], kind)
            step = {"request": req if not isinstance(req, str) else {"raw_line": req}}
            step["answer"] = normal_json(raw, None, d, ids)
            if "json" in step["answer"]:
                blank(step["answer"]["json"], serve_answer_paths(answer))
            steps.append(step)
    finally:
        steps += closing_steps(srv, d, ids)
    return steps


def closing_steps(srv, d, ids):
    """A JSON-lines server's last steps: EOF on its stdin, its exit code, what it wrote
    after, its stderr, and the audit log it leaves."""
    code, rest, err = srv.close()
    return [{"exit": code, "stdout_after_eof": rest,
             "stderr": ids.replace(strip_paths(err, d))}, audit_step(d, ids)]


def audit_flag(d):
    """Every server of the corpus appends its records to an audit log in its scratch
    directory: which records reach the log, and their audit copies (redacted, the caller
    named or not), are the front end's promise as much as its answers are."""
    return ["--audit-log", os.path.join(d, "audit.jsonl")]


def audit_step(d, ids):
    """The audit log a server wrote, line by line, normalised like a record."""
    path = os.path.join(d, "audit.jsonl")
    if not os.path.exists(path):
        return {"audit": None}
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    return {"audit": [normal_json(l, RECORD_VARIES, d, ids) for l in lines]}


# A session that spends its budget: the third call is refused with a record, and so is
# every call after it (tests/frontends/serve: session_budget_and_idle_timeout_...).
BUDGET_POLICY = "version = 1\nname = \"budget\"\n[session]\nmax_calls = 2\n"


def session_budget_requests():
    return [
        {"id": "b1", "op": "session_start"},
        {"id": "b2", "op": "session_exec", "session": "{session}", "code": "1"},
        {"id": "b3", "op": "session_exec", "session": "{session}", "code": "2"},
        {"id": "b4", "op": "session_exec", "session": "{session}", "code": "3"},
        {"id": "b5", "op": "session_exec", "session": "{session}", "code": "4"},
        {"id": "b6", "op": "session_close", "session": "{session}"},
    ]


def workspace_requests():
    return [
        {"id": "w1", "op": "workspace_start"},
        {"id": "w2", "op": "workspace_put", "workspace": "{workspace}",
         "files": [{"path": "a.py", "content": "print(6 * 7)\n"}]},
        {"id": "w3", "op": "workspace_exec", "workspace": "{workspace}",
         "argv": ["python3", "a.py"]},
        {"id": "w4", "op": "workspace_exec", "workspace": "{workspace}",
         "command": "echo hi; exit 4"},
        {"id": "w5", "op": "workspace_get", "workspace": "{workspace}",
         "paths": ["a.py", "missing.txt"]},
        {"id": "w6", "op": "workspace_exec", "workspace": "{workspace}",
         "command": "true", "env": {"BAD=NAME": "x"}},
        {"id": "w7", "op": "workspace_close", "workspace": "{workspace}"},
        {"id": "w8", "op": "workspace_exec", "workspace": "{workspace}", "command": "true"},
        {"id": "w9", "op": "workspace_close", "workspace": "0000"},
    ]


# HTTP -------------------------------------------------------------------------------------

TOKEN = "abtest 0123456789abcdef0123456789abcdef"
HEADERS_KEPT = ("content-type", "www-authenticate", "allow", "retry-after")


class HttpServer:
    """`agentjail serve --http 127.0.0.1:0`; the port is read from its start line."""

    def __init__(self, run, flags, d):
        tokens = os.path.join(d, "tokens")
        with open(tokens, "w", encoding="utf-8") as f:
            f.write(TOKEN + "\n")
        os.chmod(tokens, 0o600)
        argv = [run.bin, "serve", "--http", "127.0.0.1:0", "--token-file", tokens, *flags,
                *audit_flag(d)]
        self.proc = subprocess.Popen(argv, cwd=run.repo, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.err = b""
        deadline = time.monotonic() + HANG_S
        while True:
            m = re.search(rb"serving HTTP on 127\.0\.0\.1:(\d+)", self.err)
            if m:
                self.port = int(m.group(1))
                break
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stderr], [], [], left)[0]:
                raise RuntimeError("serve --http did not start: %r" % self.err)
            chunk = os.read(self.proc.stderr.fileno(), 65536)
            if not chunk:
                raise RuntimeError("serve --http exited: %r" % self.err)
            self.err += chunk

    def request(self, method, path, body=None, token=True, raw_body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=HANG_S)
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = "Bearer " + TOKEN.split()[1]
        data = raw_body if raw_body is not None else (
            None if body is None else json.dumps(body).encode())
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        out = resp.status, {k.lower(): v for k, v in resp.getheaders()}, \
            resp.read().decode("utf-8", "replace")
        conn.close()
        return out

    def settle(self):
        for _ in range(600):
            _, _, body = self.request("GET", "/v1/stats")
            stats = json.loads(body)
            pools = [p for p in (stats.get(k) for k in
                                 ("pool", "session_pool", "workspace_pool")) if p]
            if all(p["starting"] == 0 and p["ready"] >= p["target"] for p in pools):
                return
            time.sleep(0.05)
        raise RuntimeError("the warm pools never filled")

    def stop(self):
        """SIGTERM: the server ends its jails and exits 0."""
        self.proc.terminate()
        try:
            _, err = self.proc.communicate(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return self.proc.returncode, (self.err + err).decode("utf-8", "replace")


def http_paths(path, status, body):
    """Where the varying parts of one HTTP answer are, by route."""
    value = parse_json(body)
    if not isinstance(value, dict):
        return []
    if path == "/run_code":
        return RUN_CODE_VARIES
    if path == "/v1/stats":
        return STATS_VARIES + [("http", "connections"), ("http", "requests_in_flight")]
    if status == 200 and "run_id" in value:
        return RECORD_VARIES
    return []


def http_requests(ws):
    """(method, path, body, options) for the HTTP transcript. {session}/{workspace} are
    the last ones started."""
    with open(SEED, encoding="utf-8") as f:
        seed = json.load(f)
    if ws:
        return [
            ("POST", "/v1/workspaces", None, {}),
            ("POST", "/v1/workspaces/{workspace}/put",
             {"files": [{"path": "a.py", "content": "print(6 * 7)\n"}]}, {}),
            ("POST", "/v1/workspaces/{workspace}/exec", {"argv": ["python3", "a.py"]}, {}),
            ("POST", "/v1/workspaces/{workspace}/exec", {"command": "exit 5"}, {}),
            ("POST", "/v1/workspaces/{workspace}/get", {"paths": ["a.py", "nope"]}, {}),
            ("POST", "/v1/workspaces/{workspace}/exec", {"comand": "typo"}, {}),
            ("DELETE", "/v1/workspaces/{workspace}", None, {}),
            ("POST", "/v1/workspaces/{workspace}/exec", {"command": "true"}, {}),
            ("DELETE", "/v1/workspaces/00ff", None, {}),
        ]
    return [
        ("GET", "/healthz", None, {"token": False}),
        ("POST", "/v1/run", seed, {}),
        ("POST", "/v1/run", dict(seed, code="import os\n"), {}),
        ("POST", "/v1/run", None, {"raw_body": b"{not json"}),
        ("POST", "/v1/check", seed, {}),
        ("POST", "/v1/check", dict(seed, code="import os\n"), {}),
        ("POST", "/v1/sessions", None, {}),
        ("POST", "/v1/sessions/{session}/exec", {"code": "x = 41"}, {}),
        ("POST", "/v1/sessions/{session}/exec", {"code": "x + 1"}, {}),
        ("POST", "/v1/sessions/{session}/exec", {"code": "x", "bogus": 1}, {}),
        ("DELETE", "/v1/sessions/{session}", None, {}),
        ("POST", "/v1/sessions/{session}/exec", {"code": "x"}, {}),
        ("POST", "/run_code", {"code": "print(input())", "language": "python",
                               "stdin": "hi\n"}, {}),
        ("POST", "/run_code", {"code": "raise SystemExit(3)", "language": "python"}, {}),
        ("POST", "/run_code", {"code": "print(1)", "language": "cobol"}, {}),
        ("POST", "/v1/run", seed, {"token": False}),
        ("GET", "/v1/run", None, {}),
        ("GET", "/v1/nowhere", None, {}),
        ("GET", "/v1/sessions/../stats", None, {}),
        ("POST", "/v1/workspaces", None, {}),
        ("GET", "/v1/stats", None, {}),
        ("GET", "/metrics", None, {}),
    ]


def drive_http(run, flags, ws, name):
    d = run.case_dir(name)
    srv = HttpServer(run, flags, d)
    ids, real, steps = Ids(), {}, []
    try:
        for method, path, body, opts in http_requests(ws):
            srv.settle()
            real_path = fill(path, real)
            status, headers, text = srv.request(method, real_path, body,
                                                token=opts.get("token", True),
                                                raw_body=opts.get("raw_body"))
            value = parse_json(text)
            for kind in ("session", "workspace"):
                if isinstance(value, dict) and isinstance(value.get(kind), str):
                    real[kind] = value[kind]
                    ids.add(value[kind], kind)
            step = {"request": [method, path, body if "raw_body" not in opts
                                else opts["raw_body"].decode(), opts.get("token", True)],
                    "status": status,
                    "headers": {k: headers[k] for k in HEADERS_KEPT if k in headers}}
            if path == "/metrics":
                # Counts and histograms are timings; the families and their help are not.
                text = "".join(l + "\n" for l in text.splitlines() if l.startswith("# "))
            step["body"] = normal_json(text, None, d, ids)
            if "json" in step["body"]:
                blank(step["body"]["json"], http_paths(path, status, text))
            steps.append(step)
    finally:
        code, err = srv.stop()
    err = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<port>", err)  # port 0: the kernel's pick
    steps.append({"exit": code, "stderr": ids.replace(strip_paths(err, d))})
    steps.append(audit_step(d, ids))
    return steps


# MCP --------------------------------------------------------------------------------------


def mcp_requests():
    """JSON-RPC messages for `agentjail mcp` (2025-11-25 handshake); None: no answer."""
    with open(SEED, encoding="utf-8") as f:
        seed = json.load(f)
    call = lambda i, name, args: {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                  "params": {"name": name, "arguments": args}}
    return [
        ({"jsonrpc": "2.0", "id": 1, "method": "initialize",
          "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                     "clientInfo": {"name": "ab-records", "version": "1"}}}, True),
        ({"jsonrpc": "2.0", "method": "notifications/initialized"}, False),
        ({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, True),
        (call(3, "run_python", {"code": seed["code"], "input": seed["input_payload"]}), True),
        (call(4, "run_python", {"code": "print('x' * 100000)"}), True),
        (call(5, "check_python", {"code": "import os\nos.system('id')\n"}), True),
        (call(6, "check_python", {"code": "print(1)"}), True),
        (call(7, "python_session_start", {}), True),
        (call(8, "python_session_exec", {"session": "{session}", "code": "x = 41"}), True),
        (call(9, "python_session_exec", {"session": "{session}", "code": "x + 1"}), True),
        (call(10, "python_session_close", {"session": "{session}"}), True),
        (call(11, "run_python", {"code": "print(1)", "timeout": 3}), True),
        (call(12, "no_such_tool", {}), True),
        ({"jsonrpc": "2.0", "id": 13, "method": "no/such/method"}, True),
        ("{not json", True),
    ]


def mcp_normalise(value, ids):
    """A tools/call result holds the record twice: structuredContent, and a text block
    with the same JSON compact. Both are normalised by the record's paths."""
    result = value.get("result") if isinstance(value, dict) else None
    if not isinstance(result, dict):
        return
    sc = result.get("structuredContent")
    if isinstance(sc, dict) and "run_id" in sc:
        blank(sc, RECORD_VARIES)
    for block in result.get("content") or []:
        if isinstance(block, dict) and block.get("type") == "text":
            inner = parse_json(block.get("text", ""))
            if isinstance(inner, dict) and "run_id" in inner:
                shown = normal_json(block["text"], RECORD_VARIES, "\0", ids)
                block["text"] = shown


def drive_mcp(run, flags, name):
    d = run.case_dir(name)
    srv = Lines([run.bin, "mcp", *flags, *audit_flag(d)], run.repo)
    ids, real, steps = Ids(), {}, []
    try:
        for msg, answered in mcp_requests():
            line = fill(msg, real)
            srv.send(line)
            step = {"request": msg if not isinstance(msg, str) else {"raw_line": msg}}
            if answered:
                raw = srv.read()
                value = parse_json(raw)
                sc = (value or {}).get("result", {}).get("structuredContent")
                if isinstance(sc, dict) and isinstance(sc.get("session"), str):
                    real["session"] = sc["session"]
                    ids.add(sc["session"], "session")
                step["answer"] = normal_json(raw, None, d, ids)
                if "json" in step["answer"]:
                    mcp_normalise(step["answer"]["json"], ids)
            steps.append(step)
    finally:
        steps += closing_steps(srv, d, ids)
    return steps


# ---------------------------------------------------------------------------------------
# The run: every transcript for one build.


def transcripts(run, only=""):
    """name -> transcript (a list of steps), for one build, in a fixed order; `only`
    keeps the names that contain it (for working on the harness itself)."""
    ws = ["--policy", "policies/workspace.toml"]
    jobs = [("cli/" + c["name"], lambda c=c: run_cli_case(run, c)) for c in cli_cases()]
    jobs += [
        ("serve/jsonl", lambda: drive_serve(run, ["-j", "1"], serve_requests(), "serve")),
        ("serve/workspace", lambda: drive_serve(run, ["-j", "1", *ws], workspace_requests(),
                                                "serve-ws")),
        ("serve/session-budget", lambda: drive_serve(
            run, ["-j", "1", "--policy", "{scratch}/budget.toml"], session_budget_requests(),
            "serve-budget", {"budget.toml": BUDGET_POLICY})),
        ("http/routes", lambda: drive_http(run, [], False, "http")),
        ("http/workspace", lambda: drive_http(run, ws, True, "http-ws")),
        ("mcp/stdio", lambda: drive_mcp(run, [], "mcp")),
    ]
    return {name: fn() for name, fn in jobs if only in name}


def render(steps):
    return json.dumps(steps, ensure_ascii=False, indent=2).splitlines(keepends=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-bin", required=True, help="A: the previous build's binaries")
    ap.add_argument("--head-bin", required=True, help="B: the new build's binaries")
    ap.add_argument("--repo", default=os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), help="where the corpus's files are (the cwd)")
    ap.add_argument("--out", help="write each side's transcripts here (base/, head/)")
    ap.add_argument("--only", help="run only transcripts whose name contains this")
    args = ap.parse_args()
    os.chdir(args.repo)  # the corpus reads the seed relative to the repository

    # Not named agentjail-* or aj*: the tests compare those host-wide.
    scratch_root = tempfile.mkdtemp(prefix="abrec-")
    try:
        sides = {}
        for side, bindir in (("base", args.base_bin), ("head", args.head_bin)):
            run = Run(os.path.abspath(bindir), args.repo,
                      os.path.join(scratch_root, side))
            t0 = time.monotonic()
            sides[side] = transcripts(run, args.only or "")
            print(f"ab-records: {side}: {len(sides[side])} transcripts in "
                  f"{time.monotonic() - t0:.0f} s", file=sys.stderr)
    finally:
        shutil.rmtree(scratch_root, ignore_errors=True)

    names = list(sides["head"])
    same = 0
    for name in names:
        a, b = render(sides["base"].get(name, [])), render(sides["head"][name])
        if args.out:
            for side, lines in (("base", a), ("head", b)):
                path = os.path.join(args.out, side, name + ".json")
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    f.writelines(lines)
        if a == b:
            same += 1
        else:
            sys.stdout.writelines(difflib.unified_diff(a, b, f"base/{name}", f"head/{name}"))
    if UNMATCHED_LAYOUTS:
        print(f"ab-records: {len(UNMATCHED_LAYOUTS)} JSON answers in neither serde_json "
              "layout were compared by value only, e.g. " + repr(UNMATCHED_LAYOUTS[0]),
              file=sys.stderr)
    print(f"ab-records: {len(names)} transcripts, {same} identical")
    return 0 if same == len(names) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        print(f"ab-records: the harness failed: {e}", file=sys.stderr)
        sys.exit(2)
