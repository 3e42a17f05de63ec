#!/usr/bin/python3
"""Where one `agentjail exec -- /bin/true` launch spends its time, from `perf trace -f`
(kernel tracepoints: no ptrace stops, so the syscalls are not slowed the way strace
slows them).

    profile.py N AGENTJAIL [--policy FILE]

Runs N launches pinned to CPU 1 and prints the median and min of each segment:
    startup+prepare   agentjail's execve to clone3 (std runtime, policy, plan, host probes,
                      pipes, seccomp/landlock preparation)
    clone3            the clone3 call itself (7 namespaces)
    maps+handshake    clone3 return to the child's first mount (uid/gid maps, setgroups,
                      the sync byte, setresuid/gid, PDEATHSIG)
    mounts            first to last mount of the root (tmpfs root, binds, proc, masks)
    pivot_root        pivot_root(".", ".")
    umount old root   umount2(".", MNT_DETACH): detaching every host mount copied in
    pre-exec rest     hostname, setsid, no_new_privs, caps, landlock, fds, rlimits,
                      signals, seccomp
    execve            the program's execve
    program           execve return to the program's exit_group (ld.so + /bin/true)
    exit → wake       the program's exit_group to the supervisor's ppoll waking
                      (namespace teardown in the kernel's exit path)
    wake → exit       the supervisor's wake to agentjail's own exit_group (reap, record)
    total             agentjail's execve to its exit_group
"""
import re
import statistics
import subprocess
import sys

LINE = re.compile(r"^\s*([\d.]+) \(\s*([\d.]+)? ?(?:ms)?\): (\S+)/(\d+) +(\.\.\. \[continued\]: )?(\w+)\(")


def parse(path):
    ev = []
    with open(path) as f:
        for ln in f:
            m = LINE.match(ln)
            if m:
                ts, dur, comm, pid, cont, name = m.groups()
                ev.append((float(ts), float(dur) if dur else None, comm, int(pid), bool(cont), name))
    return ev


def segments(ev):
    pids = sorted({e[3] for e in ev})
    if len(pids) < 2:
        return None
    parent, child = pids[0], pids[1]
    P = [e for e in ev if e[3] == parent]
    C = [e for e in ev if e[3] == child]
    # A call interrupted by another task's line shows up twice: "name(...) ..." without a
    # duration, then "... [continued]: name()" with it; keep the one with the duration.
    done = lambda evs, name: [e for e in evs if e[5] == name and e[1] is not None]
    clone = done(P, "clone3")[0]
    mounts = done(C, "mount")
    pivot = done(C, "pivot_root")[0]
    umnt = done(C, "umount2")[0]
    execve = done(C, "execve")[0]
    cexit = next(e for e in C if e[5] == "exit_group")
    wake = next(e for e in P if e[5] == "ppoll" and e[1] is not None and e[0] + e[1] >= cexit[0])
    pexit = [e for e in P if e[5] == "exit_group"][-1]
    end = lambda e: e[0] + (e[1] or 0.0)
    return {
        "startup+prepare": clone[0],
        "clone3": clone[1],
        "maps+handshake": mounts[0][0] - end(clone),
        "mounts (%d)" % len(mounts): end(mounts[-1]) - mounts[0][0],
        "pivot_root": pivot[1],
        "umount old root": umnt[1],
        "pre-exec rest": execve[0] - end(umnt),
        "execve": execve[1],
        "program": cexit[0] - end(execve),
        "exit -> wake": end(wake) - cexit[0],
        "wake -> exit": pexit[0] - end(wake),
        "total": pexit[0],
    }


def main():
    n, aj, rest = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    rows = []
    for i in range(n):
        out = "/tmp/agentjail-profile-%d.txt" % i
        subprocess.run(["taskset", "-c", "1", "perf", "trace", "-f", "-o", out, "--", aj, "exec", *rest,
                        "--", "/bin/true"], check=False, stdin=subprocess.DEVNULL)
        try:
            s = segments(parse(out))
        except StopIteration:
            s = None
        if s:
            rows.append(s)
    if not rows:
        print("no usable trace")
        return 1
    print("%-22s %10s %10s   (ms, %d launches under perf trace)" % ("segment", "median", "min", len(rows)))
    for k in rows[0]:
        v = [r[k] for r in rows if k in r]
        print("%-22s %10.3f %10.3f" % (k, statistics.median(v), min(v)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
