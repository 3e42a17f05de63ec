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
    cgroup wait ...   hostname, setsid, the wait for the cgroup attach, no_new_privs,
                      caps, landlock, fds, rlimits, signals (in the jail's init)
    fork program      init forks the program (pid 2)
    program seccomp   the program's filter install (with the listener)
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
    # pids in order of appearance: the launcher, the jail's init (it builds the root), the
    # program (pid 2 in the jail: seccomp, execve, the program itself).
    order = []
    for e in ev:
        if e[3] not in order:
            order.append(e[3])
    if len(order) < 3:
        return None
    parent, init, prog = order[0], order[1], order[2]
    P = [e for e in ev if e[3] == parent]
    I = [e for e in ev if e[3] == init]
    G = [e for e in ev if e[3] == prog]
    # A call interrupted by another task's line shows up twice: "name(...) ..." without a
    # duration, then "... [continued]: name()" with it; keep the one with the duration.
    done = lambda evs, name: [e for e in evs if e[5] == name and e[1] is not None]
    end = lambda e: e[0] + (e[1] or 0.0)
    clone = done(P, "clone3")[0]
    mounts = done(I, "mount")
    pivot = done(I, "pivot_root")[0]
    umnt = done(I, "umount2")[0]
    fork = [e for e in I if e[5] in ("clone", "fork", "clone3") and e[1] is not None][0]
    seccomp = [e for e in G if e[5] == "seccomp" and e[1] is not None][0]
    execve = done(G, "execve")[0]
    gexit = next(e for e in G if e[5] == "exit_group")
    wake = next(e for e in P if e[5] == "ppoll" and e[1] is not None and end(e) >= gexit[0])
    pexit = [e for e in P if e[5] == "exit_group"][-1]
    return {
        "startup+prepare": clone[0],
        "clone3": clone[1],
        "maps+handshake": mounts[0][0] - end(clone),
        "mounts (%d)" % len(mounts): end(mounts[-1]) - mounts[0][0],
        "pivot_root": pivot[1],
        "umount old root": umnt[1],
        "cgroup wait, caps, landlock, fds, rlimits": fork[0] - end(umnt),
        "fork program": fork[1],
        "program seccomp": seccomp[1],
        "execve": execve[1],
        "program": gexit[0] - end(execve),
        "exit -> wake": end(wake) - gexit[0],
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
        except (StopIteration, IndexError):
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
