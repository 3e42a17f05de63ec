#!/usr/bin/python3
"""Helpers for scripts/bench.sh: the measurements that need stdin or a clock around one
process (run vs bare interpreter, timeout precision, output cap), and the final report.

    bench.py run ROUNDS OUT AGENTJAIL ACTION [--policy FILE]
                               the action's language decides the bare side: python3 -I -S -c
                               CODE, or node main.js (CODE after a one-line input() shim: the
                               runner's input(), which bare node lacks)
    bench.py timeout REPEATS OUT AGENTJAIL [--policy FILE]
    bench.py outcap REPEATS OUT AGENTJAIL [--policy FILE]
    bench.py report DIR        print the table; exit 1 when a target is missed

Every timed launch goes through subprocess with the same arguments shape, so the
harness overhead is the same on both sides of each comparison.
"""
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# What agentjail's JavaScript runner gives the program and bare node does not: input(), the
# next stdin line.
NODE_INPUT_SHIM = ("globalThis.input = () => require('fs').readFileSync(0, 'utf8')"
                   ".split('\\n')[0];\n")


def policy_args(argv):
    return argv[argv.index("--policy"):argv.index("--policy") + 2] if "--policy" in argv else []


def timed(cmd, stdin_bytes=b"", env=None):
    t0 = time.perf_counter_ns()
    p = subprocess.run(cmd, input=stdin_bytes, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    return time.perf_counter_ns() - t0, p


def cmd_run(argv):
    rounds, out, aj, action = int(argv[0]), argv[1], argv[2], argv[3]
    pol = policy_args(argv)
    with open(action) as f:
        act = json.load(f)
    stdin = (json.dumps(act.get("input_payload")) + "\n").encode()
    code = act["code"]
    bare = ["/usr/bin/python3", "-I", "-S", "-c", code]
    bare_env = None
    if act.get("language") == "javascript":
        # The jail's environment, not the host's: node acts on some variables at start
        # (NODE_EXTRA_CA_CERTS loads a CA bundle), python3 -I ignores its own.
        bare_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}
        d = tempfile.mkdtemp(prefix="agentjail-bench-")
        atexit.register(shutil.rmtree, d, True)
        main = os.path.join(d, "main.js")
        with open(main, "w") as f:
            f.write(NODE_INPUT_SHIM + code)
        bare = ["/usr/bin/node", main]
    run = [aj, "run", *pol, action]
    lines = []
    # Probe once: `run` may not exist yet in this build.
    _, p = timed(run)
    try:
        json.loads(p.stdout)
    except ValueError:
        lines.append("run_unavailable %d %s" % (p.returncode,
                     json.dumps((p.stderr or p.stdout).decode(errors="replace")[-300:])))
        with open(out, "w") as f:
            f.write("\n".join(lines) + "\n")
        return 0
    for r in range(rounds):
        pair = [("bare", bare), ("run", run)]
        if r % 2:
            pair.reverse()
        for name, cmd in pair:
            ns, p = timed(cmd, stdin if name == "bare" else b"", bare_env if name == "bare" else None)
            if name == "bare":
                lines.append("bare %d %d" % (ns, p.returncode))
            else:
                try:
                    rec = json.loads(p.stdout)
                except ValueError:
                    rec = {}
                lines.append("run %d %d %s" % (ns, p.returncode,
                                               json.dumps(rec.get("trace", []), separators=(",", ":"))))
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


def cmd_timeout(argv):
    n, out, aj = int(argv[0]), argv[1], argv[2]
    rec = out + ".record.json"
    cmd = [aj, "exec", *policy_args(argv), "--record", rec, "--time-limit", "1", "--",
           "/bin/sleep", "10"]
    with open(out, "w") as f:
        for _ in range(n):
            ns, p = timed(cmd)
            # Inside agentjail: the execute phase minus its setup is the time from the
            # program's exec to the jail being dead and reaped; minus 1 s, the overshoot.
            inner = -1
            try:
                with open(rec) as r:
                    t = json.load(r)["trace"][0]
                inner = t["duration_us"] - t["detail"]["setup_us"] - 1_000_000
            except (OSError, ValueError, KeyError, IndexError):
                pass
            f.write("timeout %d %d %d\n" % (ns, p.returncode, inner))
    return 0


def cmd_outcap(argv):
    n, out, aj = int(argv[0]), argv[1], argv[2]
    # `yes` itself, not through a shell: the default policy allows no process creation.
    cmd = [aj, "exec", *policy_args(argv), "--output-limit", "4096", "--", "/usr/bin/yes"]
    with open(out, "w") as f:
        for _ in range(n):
            ns, p = timed(cmd)
            f.write("outcap %d %d %d\n" % (len(p.stdout), p.returncode, ns))
    return 0


# ---------------------------------------------------------------- report

def load(path):
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            rows = [ln.split(" ", 3) if ln.startswith("run ") else ln.split()
                    for ln in f if ln.strip()]
    return rows


def ms(ns):
    return ns / 1e6


class Report:
    def __init__(self):
        self.missed = []
        self.lines = []

    def row(self, what, med, lo, hi, ratio="", target="", ok=None):
        mark = "" if ok is None else ("ok" if ok else "MISSED")
        if ok is False:
            self.missed.append(what)
        self.lines.append("%-44s %12s %22s %10s %-22s %s" % (what, med, "%s .. %s" % (lo, hi) if lo != "" else "",
                                                                ratio, target, mark))

    def note(self, text):
        self.lines.append("  " + text)


def run_rows(rep, path, bare_label, run_label):
    """The rows of one run-vs-bare file: both medians, the difference, the trace's phases."""
    runrows = load(path)
    if runrows and runrows[0][0] == "run_unavailable":
        rep.row(run_label, "run: not available", "", "")
        rep.note("exit %s: %s" % (runrows[0][1], " ".join(runrows[0][2:])[:200]))
        return
    bare = [int(r[1]) for r in runrows if r[0] == "bare"]
    runs = [r for r in runrows if r[0] == "run"]
    rw = [int(r[1]) for r in runs]
    if not (bare and rw):
        return
    rep.row("%s (ms)" % bare_label, "%.2f" % ms(statistics.median(bare)),
            "%.2f" % ms(min(bare)), "%.2f" % ms(max(bare)))
    rep.row("%s (ms)" % run_label, "%.2f" % ms(statistics.median(rw)),
            "%.2f" % ms(min(rw)), "%.2f" % ms(max(rw)),
            "+%.2f ms" % ms(statistics.median(rw) - statistics.median(bare)))
    bad = sum(1 for r in runrows if r[2] != "0")
    if bad:
        rep.note("%d of %d launches exited non-zero" % (bad, len(runrows)))
    phases = {}
    for r in runs:
        for t in json.loads(r[3]) if len(r) > 3 else []:
            phases.setdefault(t["phase"], []).append(t["duration_us"])
            for k, val in (t.get("detail") or {}).items():
                if k.endswith("_us") and isinstance(val, (int, float)):
                    phases.setdefault("%s.%s" % (t["phase"], k), []).append(val)
    for ph, v in phases.items():
        rep.row("  trace %s (ms)" % ph, "%.3f" % (statistics.median(v) / 1e3),
                "%.3f" % (min(v) / 1e3), "%.3f" % (max(v) / 1e3))


def cmd_report(argv):
    d = argv[0]
    rep = Report()
    rep.lines.append("%-44s %12s %22s %10s %-22s %s" % ("measure", "median", "min .. max", "ratio", "target", ""))
    rep.lines.append("-" * 120)

    # 1-4, 6: interleaved launches.
    samples, rss, fails = {}, {}, {}
    for name, ns, kb, st in load(os.path.join(d, "rounds.txt")):
        samples.setdefault(name, []).append(int(ns))
        rss.setdefault(name, []).append(int(kb))
        if st != "0":
            fails[name] = fails.get(name, 0) + 1
    med = {k: statistics.median(v) for k, v in samples.items()}
    for name in ["bare_true", "bwrap_true", "floor_true", "agentjail_true", "bare_python", "agentjail_python",
                 "bare_node", "agentjail_node"]:
        if name not in samples:
            continue
        v = samples[name]
        ratio, target, ok = "", "", None
        if name == "bwrap_true" and "bare_true" in med:
            ratio = "%.2fx bare" % (med[name] / med["bare_true"])
        if name == "floor_true" and "bwrap_true" in med:
            ratio = "%.2fx bwrap" % (med[name] / med["bwrap_true"])
        if name == "agentjail_true" and "bwrap_true" in med:
            ratio = "%.2fx bwrap" % (med[name] / med["bwrap_true"])
            target, ok = "<= 0.50x bwrap", med[name] <= 0.5 * med["bwrap_true"]
        if name == "agentjail_python" and "bare_python" in med:
            ratio = "%.2fx bare" % (med[name] / med["bare_python"])
            target, ok = "<= 1.10x bare python", med[name] <= 1.10 * med["bare_python"]
        if name == "agentjail_node" and "bare_node" in med:
            ratio = "%.2fx bare (+%.2f ms)" % (med[name] / med["bare_node"], ms(med[name] - med["bare_node"]))
        if fails.get(name):
            ok = False
        rep.row("launch %s (ms, n=%d)" % (name, len(v)), "%.3f" % ms(med[name]),
                "%.3f" % ms(min(v)), "%.3f" % ms(max(v)), ratio, target, ok)
        if fails.get(name):
            rep.note("%s: %d of %d launches exited non-zero" % (name, fails[name], len(v)))
        if name == "floor_true":
            rep.note("floor = scripts/bench/floor.c: the same namespaces, root, landlock and a seccomp filter "
                     "of the same size, nothing else (no cgroup, /proc masks, devices, init, record)")
        if name == "agentjail_true" and "floor_true" in med and "bwrap_true" in med:
            f, b = med["floor_true"], med["bwrap_true"]
            rep.note("agentjail = %.2fx the floor (+%.2f ms); 0.5x bwrap = %.3f ms is %s the floor (%.3f ms)"
                     % (med[name] / f, ms(med[name] - f), ms(0.5 * b),
                        "BELOW" if 0.5 * b < f else "above", ms(f)))

    # 4b: the same launches after an idle gap (launch idle): ratios within those rounds.
    idle = {}
    for name, ns, _kb, st in load(os.path.join(d, "rounds_idle.txt")):
        idle.setdefault(name, []).append((int(ns), st))
    imed = {k: statistics.median(ns for ns, _ in v) for k, v in idle.items()}
    for name in ["bare_true", "bwrap_true", "agentjail_true", "bare_python", "agentjail_python"]:
        if name not in idle:
            continue
        v = [ns for ns, _ in idle[name]]
        bad = sum(1 for _, st in idle[name] if st != "0")
        ratio, target = "", ""
        if name == "bwrap_true" and "bare_true" in imed:
            ratio = "%.2fx bare" % (imed[name] / imed["bare_true"])
        if name == "agentjail_true" and "bwrap_true" in imed:
            ratio = "%.2fx bwrap" % (imed[name] / imed["bwrap_true"])
            target = "issue 40: <= 1.0x bwrap"
        if name == "agentjail_python" and "bare_python" in imed:
            ratio = "%.2fx bare" % (imed[name] / imed["bare_python"])
            target = "issue 40: <= 1.3x bare"
        rep.row("after idle %s (ms, n=%d)" % (name, len(v)), "%.3f" % ms(imed[name]),
                "%.3f" % ms(min(v)), "%.3f" % ms(max(v)), ratio, target, False if bad else None)
        if bad:
            rep.note("%s after idle: %d of %d launches exited non-zero" % (name, bad, len(v)))
    if idle:
        rep.note("after idle: each launch follows an untimed sleep (BENCH_IDLE_GAP_MS, default 50 ms); "
                 "informational targets, ratios within these rounds")

    # 5: throughput.
    thr = {}
    for name, w, done, el, bad in load(os.path.join(d, "throughput.txt")):
        thr.setdefault((name, int(w)), []).append((int(done) / (int(el) / 1e9), int(bad)))
    for w in (1, 2):
        for name in ("bwrap", "agentjail"):
            v = thr.get((name, w))
            if not v:
                continue
            rates = [r for r, _ in v]
            bad = sum(b for _, b in v)
            m = statistics.median(rates)
            ratio, target, ok = "", "", None
            if name == "agentjail" and thr.get(("bwrap", w)):
                b = statistics.median(r for r, _ in thr[("bwrap", w)])
                ratio = "%.2fx bwrap" % (m / b)
                target, ok = ">= 2x bwrap", m >= 2 * b and bad == 0
            rep.row("throughput %s, %d worker(s) (jobs/s)" % (name, w), "%.0f" % m,
                    "%.0f" % min(rates), "%.0f" % max(rates), ratio, target, ok)
            if bad:
                rep.note("%s x%d: %d launches failed" % (name, w, bad))

    # 6: launcher peak RSS.
    if "agentjail_true" in rss:
        v = rss["agentjail_true"]
        m = statistics.median(v)
        rep.row("agentjail peak RSS, wait4 ru_maxrss (KiB)", "%d" % m, "%d" % min(v), "%d" % max(v),
                "", "<= 4096 KiB", m <= 4096 and not fails.get("agentjail_true"))
        if fails.get("agentjail_true"):
            rep.note("not counted: agentjail refused to launch, so this is a launcher that stopped early")
        rep.note("ru_maxrss from wait4 = max(launcher, children it reaped); the child is /bin/true")
        for row in load(os.path.join(d, "hwm.txt")):
            if int(row[1]) < 0:
                rep.note("VmHWM: agentjail exited before the first sample")
                continue
            rep.row("agentjail VmHWM sampled while running (KiB)", row[1], "", "", "", "(launcher alone)")
        if "bwrap_true" in rss:
            rep.note("for scale: bwrap ru_maxrss median %d KiB" % statistics.median(rss["bwrap_true"]))

    # 7: run vs bare, Python and JavaScript.
    run_rows(rep, os.path.join(d, "run.txt"), "bare python3 -I -S incident code", "agentjail run incident")
    run_rows(rep, os.path.join(d, "run_js.txt"), "bare node main.js incident code",
             "agentjail run incident.js")

    # 8: timeout and output cap.
    launch = med.get("agentjail_true", 0)
    tos = load(os.path.join(d, "timeout.txt"))
    if tos:
        v = [int(r[1]) - 1_000_000_000 for r in tos]
        inner = [int(r[3]) * 1000 for r in tos if len(r) > 3 and int(r[3]) >= 0]
        adj = inner or [x - launch for x in v]
        m = statistics.median(adj)
        rep.row("timeout 1 s: overshoot, exec to reaped (ms)", "%.2f" % ms(m), "%.2f" % ms(min(adj)),
                "%.2f" % ms(max(adj)), "", "<= 10 ms", m <= 10e6 and all(r[2] == "124" for r in tos))
        rep.note("%s; seen from outside, wall - 1 s: median %.2f ms (includes launch, median %.2f ms); exit codes %s"
                 % ("from the exec record: execute duration_us - setup_us - 1 s (an upper bound: includes plan build and kill, reap, teardown)" if inner else
                    "no record: outside wall - 1 s - launch median", ms(statistics.median(v)), ms(launch),
                    sorted({r[2] for r in tos})))
    caps = load(os.path.join(d, "outcap.txt"))
    if caps:
        b = [int(r[1]) for r in caps]
        rep.row("output cap 4096: bytes passed out", "%d" % statistics.median(b), "%d" % min(b), "%d" % max(b),
                "", "<= 4096", 0 < min(b) and max(b) <= 4096 and all(r[2] == "124" for r in caps))
        rep.note("exit codes %s" % sorted({r[2] for r in caps}))

    # 9: run_python through the official MCP client vs bare cold python, side by side.
    mcp = load(os.path.join(d, "mcp.txt"))
    if mcp and mcp[0][0] == "mcp_unavailable":
        rep.row("MCP run_python round trip", "not available", "", "")
        rep.note(" ".join(mcp[0][1:])[:200])
    elif mcp:
        calls = [r for r in mcp if r[0] == "mcp_call"]
        bare = [int(r[1]) for r in mcp if r[0] == "mcp_bare"]
        conn = [int(r[1]) for r in mcp if r[0] == "mcp_connect"]
        cw = [int(r[1]) for r in calls]
        if bare and cw:
            mb, mc = statistics.median(bare), statistics.median(cw)
            rep.row("bare python3 -I -S main.py, cold (ms)", "%.2f" % ms(mb), "%.2f" % ms(min(bare)),
                    "%.2f" % ms(max(bare)))
            rep.row("MCP run_python round trip (ms)", "%.2f" % ms(mc), "%.2f" % ms(min(cw)),
                    "%.2f" % ms(max(cw)), "%.2fx bare" % (mc / mb))
            starts = {}
            for r in calls:
                starts[r[3] if len(r) > 3 else "-"] = starts.get(r[3] if len(r) > 3 else "-", 0) + 1
            bad = sum(1 for r in calls if r[2] != "ok") + sum(1 for r in mcp if r[0] == "mcp_bare" and r[2] != "0")
            rep.note("incident example through mcp.Client on one open connection (server/discover, "
                     "protocol 2026-07-28), %d interleaved rounds; jails: %s%s"
                     % (len(cw), ", ".join("%s %d" % kv for kv in sorted(starts.items())),
                        "; %d samples did not succeed" % bad if bad else ""))
        if conn:
            rep.row("MCP start + connect + first run_python (ms)", "%.2f" % ms(statistics.median(conn)),
                    "%.2f" % ms(min(conn)), "%.2f" % ms(max(conn)))

    print("\n".join(rep.lines))
    if rep.missed:
        print("\nmissed targets: " + "; ".join(rep.missed))
        return 1
    print("\nall targets met")
    return 0


def main():
    cmd, rest = sys.argv[1], sys.argv[2:]
    return {"run": cmd_run, "timeout": cmd_timeout, "outcap": cmd_outcap, "report": cmd_report}[cmd](rest)


if __name__ == "__main__":
    sys.exit(main())
