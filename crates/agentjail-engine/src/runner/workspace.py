# agentjail's workspace runner: the first program of a workspace's jail (src/engine/workspace.rs).
# Trusted code; it runs no code of its own choosing, only the commands agentjail sends.
#
#   fd 1, 2  what the commands print, forwarded here under the caps agentjail sends
#   fd 3     commands from agentjail: "AJ1 <verb> <length> <call>\n" then <length> bytes of a
#            JSON request; <call> is a nonce the `done` report must repeat. Verbs: exec
#            {argv, cwd, env, stdin_b64, timeout_ms, background, stdout_cap, stderr_cap};
#            wait {command, timeout_ms}; kill {command}
#   fd 4     reports to agentjail: one JSON object per line
#
# Between commands the runner rings agentjail's doorbell, ioctl(3, DOORBELL), which the
# seccomp filter hands to agentjail; agentjail answers this thread only, installing at fds 3
# and 4 a socket made for the next command alone (as in a session: src/runner/python.py).
# A command never holds them: it is started (vfork and exec) with only fds 0-2, pipes of
# this runner. Each command gets its own process group; when it exits, the group is killed, and,
# when no command was left running in the background, every other process of the jail too
# (kill(-1) spares only init and this runner), so nothing an ordinary command started
# survives it. A `background` command (exec with background) is started and reported at
# once (`started`): a thread of this runner reads its pipes into buffers under the caps and
# reaps it; `wait` reports it when it ends (or, at the wait's timeout, `running` with its
# output so far), its output forwarded on fds 1 and 2 within that call; `kill` ends its
# process group (SIGKILL) and reports it. Its processes outlive its exit until `kill`, the
# workspace's end, or the end of a command when no background command is left running.
# SIGUSR1 (agentjail's, after a command's forbidden syscall) kills every
# other process at once, so what the command printed is forwarded before the jail ends.
# Reports are informational (a command can signal this runner, which ends the
# workspace); agentjail takes limits, CPU and the workspace's verdicts from the kernel.
import posix
import sys

JOB_FD = 3
REPORT_FD = 4
# crates/agentjail-jail/src/seccomp.rs, SESSION_DOORBELL.
DOORBELL = 0x4A410001
CHUNK = 65536


def read_exact(n):
    parts = []
    while n > 0:
        b = posix.read(JOB_FD, min(n, 1 << 20))
        if not b:
            return None
        parts.append(b)
        n -= len(b)
    return b"".join(parts)


def read_frame():
    header = b""
    while not header.endswith(b"\n"):
        c = posix.read(JOB_FD, 1)
        if not c or len(header) > 64:
            return None
        header += c
    fields = header.decode("ascii").split()
    if len(fields) != 4 or fields[0] != "AJ1" or fields[1] not in ("exec", "wait", "kill"):
        return None
    body = read_exact(int(fields[2]))
    return None if body is None else (body, fields[3], fields[1])


def report(obj):
    import json

    line = (json.dumps(obj, ensure_ascii=True) + "\n").encode("ascii")
    while line:
        n = posix.write(REPORT_FD, line)
        line = line[n:]


def wait_for_call():
    """Ring and wait for the next command's channel. SIGCHLD (a background command's exit)
    and SIGUSR1 are held meanwhile, so no handler can interrupt the wait (the filter does
    not make it killable-only, and fcntl.ioctl makes no promise to retry on EINTR): they
    run once the wait is over, before the command starts."""
    import errno
    import fcntl
    import signal

    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD, signal.SIGUSR1})
    try:
        fcntl.ioctl(JOB_FD, DOORBELL, 0)
    except OSError as e:
        if e.errno != errno.ENOTTY:
            posix.write(2, b"agentjail workspace runner: no channel for the next command\n")
            posix._exit(70)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def spawn(req, fds):
    """Start the command: its own process group, the pipes at 0-2 and nothing else open,
    the signals Python changed restored, in its cwd, with its environment. Started with
    _posixsubprocess (vfork and exec: a fork of this interpreter cost several times more).
    The pid, or None when it could not start (the reason is on stderr, as a shell says it)
    and the exit status a shell would give."""
    import errno
    import os
    import subprocess

    env = dict(os.environ)
    env.update(req.get("env") or {})
    argv = req["argv"]
    group = {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}
    try:
        p = subprocess.Popen(
            argv, stdin=fds[0], stdout=fds[1], stderr=fds[2], cwd=req["cwd"], env=env,
            close_fds=True, restore_signals=True, **group)
    except OSError as e:
        if getattr(e, "filename", None) == req["cwd"]:
            msg, code = "agentjail: cannot enter %s: %s\n" % (req["cwd"], e.strerror), 126
        else:
            what = e.strerror or type(e).__name__
            msg = "agentjail: cannot run %r: %s\n" % (argv[0], what)
            code = 127 if e.errno == errno.ENOENT else 126
        global SPAWN_ERROR
        SPAWN_ERROR = msg.encode("utf-8", "replace")
        os.write(2, SPAWN_ERROR)
        return None, code
    # Reaped by wait4 below, never by the Popen object (its finaliser would poll the pid).
    p.returncode = 0
    return p.pid, None


class Pipe:
    """One of the command's output pipes: `pump` reads what is there (False at its end),
    counts it in `total` and hands it to `take`, which keeps at most the cap."""

    def __init__(self, fd, cap):
        self.fd, self.cap = fd, cap
        self.total = 0

    def pump(self):
        import os

        try:
            b = os.read(self.fd, CHUNK)
        except BlockingIOError:
            return True
        if not b:
            return False
        self.total += len(b)
        self.take(b)
        return True


class Stream(Pipe):
    """A pipe forwarded to our fd `to` up to `cap` bytes."""

    def __init__(self, fd, to, cap):
        super().__init__(fd, cap)
        self.to = to
        self.sent = 0

    def take(self, b):
        import os

        room = max(self.cap - self.sent, 0)
        if room:
            out = b[:room]
            while out:
                n = os.write(self.to, out)
                out = out[n:]
                self.sent += n


class Kept(Pipe):
    """A background command's output pipe, read into memory: the first `cap` bytes kept,
    the rest counted and dropped (the command never blocks on a full pipe)."""

    def __init__(self, fd, cap):
        super().__init__(fd, cap)
        self.data = bytearray()

    def take(self, b):
        room = self.cap - len(self.data)
        if room > 0:
            self.data += b[:room]


class Job:
    """A background command: its process group, its output so far, and, once it ended,
    its result (run()'s fields). Its thread reads the pipes and reaps it."""

    def __init__(self, pid, out_r, err_r, req, t0):
        import threading

        self.pid, self.t0 = pid, t0
        self.out = Kept(out_r, req["stdout_cap"])
        self.err = Kept(err_r, req["stderr_cap"])
        timeout_ms = req.get("timeout_ms")
        self.deadline = None if timeout_ms is None else t0 + timeout_ms / 1000.0
        self.result = None
        self.killed = False
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        import os
        import select
        import signal
        import time

        # The runner's main thread takes the signals (SIGCHLD's wakeup, SIGUSR1).
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD, signal.SIGUSR1})
        streams = {self.out.fd: self.out, self.err.fd: self.err}
        status = None
        exited = None
        timed_out = False
        while True:
            now = time.monotonic()
            if status is None:
                w, st, ru = os.wait4(self.pid, os.WNOHANG)
                if w == self.pid:
                    status, exited = (st, ru), now
                elif self.deadline is not None and now >= self.deadline:
                    timed_out = True
                    try:
                        os.killpg(self.pid, signal.SIGKILL)
                    except OSError:
                        pass
                    _, st, ru = os.wait4(self.pid, 0)
                    status, exited = (st, ru), now
            # Its pipes to their end, or what is there within a moment of its exit (a
            # process it left behind may hold them open).
            if status is not None and (not streams or now >= exited + 0.1):
                break
            if streams:
                r, _, _ = select.select(list(streams), [], [], 0.05)
                for fd in r:
                    if not streams[fd].pump():
                        os.close(fd)
                        del streams[fd]
            else:
                time.sleep(0.02)
        # Bounded: a process left writing keeps its pipe readable forever.
        until = time.monotonic() + 0.1
        for fd in list(streams):
            while time.monotonic() < until and select.select([fd], [], [], 0)[0]:
                if not streams[fd].pump():
                    break
            os.close(fd)
        st, ru = status
        self.result = {
            "stdout_bytes": self.out.total,
            "stderr_bytes": self.err.total,
            "exit_code": os.WEXITSTATUS(st) if os.WIFEXITED(st) else None,
            "signal": os.WTERMSIG(st) if os.WIFSIGNALED(st) else None,
            "timed_out": timed_out,
            "wall_us": int((exited - self.t0) * 1e6),
            "cpu_us": int((ru.ru_utime + ru.ru_stime) * 1e6),
            "maxrss_kb": ru.ru_maxrss,
        }
        self.done.set()


# Background commands by the id agentjail gave them (the frame's `command`).
JOBS = {}
# Why the last command could not start (spawn's message, as a shell says it).
SPAWN_ERROR = b""


def start_job(req):
    """exec with background: start it, hand its pipes to its thread, report `started`."""
    import os
    import time

    cid = req.get("command")
    if not isinstance(cid, str) or cid in JOBS:
        return {"started": False}
    stdin = base64_decode(req.get("stdin_b64"))
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    t0 = time.monotonic()
    pid, failed = spawn(req, (in_r, out_w, err_w))
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    if pid is not None and stdin:
        BACKGROUND.add(pid)
        try:
            # At most a pipe's worth of stdin (the caller's text): the rest is dropped.
            os.set_blocking(in_w, False)
            os.write(in_w, stdin[:65536])
        except OSError:
            pass
    elif pid is not None:
        BACKGROUND.add(pid)
    os.close(in_w)
    for fd in (out_r, err_r):
        os.set_blocking(fd, False)
    if pid is None:
        job = Job(0, out_r, err_r, req, t0)
        for fd in (out_r, err_r):
            os.close(fd)
        job.err.data += SPAWN_ERROR[: job.err.cap]
        job.err.total = len(SPAWN_ERROR)
        job.result = {"stdout_bytes": job.out.total, "stderr_bytes": job.err.total,
                      "exit_code": failed, "signal": None, "timed_out": False,
                      "wall_us": 0, "cpu_us": 0, "maxrss_kb": 0}
        job.done.set()
    else:
        job = Job(pid, out_r, err_r, req, t0)
        job.thread.start()
    JOBS[cid] = job
    return {"started": True}


def base64_decode(b):
    import base64

    return base64.b64decode(b or "")


def forward(data, to):
    import os

    view = memoryview(bytes(data))
    while view:
        n = os.write(to, view)
        view = view[n:]


def wait_job(req, kill):
    """wait (up to timeout_ms) or kill a background command; its output so far goes out on
    fds 1 and 2; its result once it ended (the job is then forgotten), else `running`."""
    import os
    import signal

    job = JOBS.get(req.get("command"))
    if job is None:
        return {"unknown": True}
    if kill and job.pid:
        try:
            os.killpg(job.pid, signal.SIGKILL)
        except OSError:
            pass
        job.killed = True
        job.done.wait(2.0)
    else:
        job.done.wait(max(0, req.get("timeout_ms") or 0) / 1000.0)
    ended = job.done.is_set()
    forward(job.out.data, 1)
    forward(job.err.data, 2)
    if not ended:
        return {"running": True, "stdout_bytes": job.out.total, "stderr_bytes": job.err.total,
                "wall_us": 0}
    del JOBS[req.get("command")]
    return dict(job.result)


BACKGROUND = set()
# Set by SIGUSR1 (end_all): no command starts after it.
ENDING = False
# Readable when a child has exited (SIGCHLD's wakeup fd), so the loop below waits on the
# command's pipes and its exit at once, without polling.
WAKE = None


def watch_children():
    global WAKE
    import os
    import signal

    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGUSR1, end_all)
    WAKE = r


def end_all(*_):
    """SIGUSR1, from agentjail: a command made a forbidden syscall, and the workspace ends.
    Kill every other process of the jail now; the loop then forwards what the command
    printed before it and reports, which agentjail waits for (briefly) before it ends the
    jail. A command may send it too: it ends every process of the workspace but this runner,
    and the command that is running; the next command starts as usual (main resets ENDING)."""
    global ENDING
    ENDING = True
    kill_all_others()


def kill_all_others():
    """SIGKILL to every process of the jail but init and this runner (kill(-1))."""
    import os
    import signal

    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass


def background_alive():
    import os

    for pg in list(BACKGROUND):
        try:
            os.killpg(pg, 0)
        except OSError:
            BACKGROUND.discard(pg)
    return bool(BACKGROUND)


def end_processes(pid, background):
    """The command has exited (or is being stopped): kill what it started."""
    import os
    import signal

    if background:
        BACKGROUND.add(pid)
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    if not background_alive():
        kill_all_others()


def run(req):
    import base64
    import os
    import select
    import signal
    import time

    stdin = base64.b64decode(req.get("stdin_b64") or "")
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    t0 = time.monotonic()
    pid, failed = spawn(req, (in_r, out_w, err_w))
    if pid is not None and ENDING:
        # SIGUSR1 came while this command was being started (handlers run between
        # bytecodes: either its kill(-1) came after the start, or ENDING is seen here).
        end_all()
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    if pid is None:
        for fd in (in_w, out_r, err_r):
            os.close(fd)
        return {"stdout_bytes": 0, "stderr_bytes": 0, "exit_code": failed, "signal": None,
                "timed_out": False, "wall_us": int((time.monotonic() - t0) * 1e6),
                "cpu_us": 0, "maxrss_kb": 0}
    so = Stream(out_r, 1, req["stdout_cap"])
    se = Stream(err_r, 2, req["stderr_cap"])
    streams = {out_r: so, err_r: se}
    for fd in (out_r, err_r, in_w):
        os.set_blocking(fd, False)
    pending = stdin
    if not pending:
        os.close(in_w)
        in_w = None
    deadline = t0 + req["timeout_ms"] / 1000.0
    status = None
    exited = t0
    timed_out = False
    while True:
        now = time.monotonic()
        if status is None:
            w, st, ru = os.wait4(pid, os.WNOHANG)
            if w == pid:
                status = (st, ru)
                exited = now
                end_processes(pid, False)
        if status is None and now >= deadline:
            timed_out = True
            os.killpg(pid, signal.SIGKILL)
            _, st, ru = os.wait4(pid, 0)
            status = (st, ru)
            exited = now
            end_processes(pid, False)
        if not streams:
            if status is not None:
                break
        elif status is not None and now >= exited + 1.0:
            # What is there now, then the call ends: a background command's processes (and
            # one that left its group while another command runs in the background) write
            # to a closed pipe afterwards (their output is theirs to redirect).
            # Bounded: a process left writing keeps its pipe readable forever.
            until = time.monotonic() + 0.1
            for fd in list(streams):
                while time.monotonic() < until and select.select([fd], [], [], 0)[0]:
                    if not streams[fd].pump():
                        break
            break
        readers = list(streams) + [WAKE]
        writers = [in_w] if in_w is not None else []
        # The wakeup fd ends the wait when the command exits; the timeout bounds it.
        wait = min(0.5, deadline - now) if status is None else 0.1
        r, w, _ = select.select(readers, writers, [], max(0.0, wait))
        for fd in r:
            if fd == WAKE:
                try:
                    while os.read(WAKE, 512):
                        pass
                except BlockingIOError:
                    pass
                continue
            if not streams[fd].pump():
                os.close(fd)
                del streams[fd]
        if w:
            try:
                n = os.write(in_w, pending[:CHUNK])
                pending = pending[n:]
            except (BrokenPipeError, BlockingIOError) as e:
                if isinstance(e, BrokenPipeError):
                    pending = b""
            if not pending:
                os.close(in_w)
                in_w = None
    for fd in list(streams):
        os.close(fd)
    if in_w is not None:
        os.close(in_w)
    st, ru = status
    return {
        "stdout_bytes": so.total,
        "stderr_bytes": se.total,
        "exit_code": os.WEXITSTATUS(st) if os.WIFEXITED(st) else None,
        "signal": os.WTERMSIG(st) if os.WIFSIGNALED(st) else None,
        "timed_out": timed_out,
        "wall_us": int((time.monotonic() - t0) * 1e6),
        "cpu_us": int((ru.ru_utime + ru.ru_stime) * 1e6),
        "maxrss_kb": ru.ru_maxrss,
    }


def main():
    import os

    for fd in (JOB_FD, REPORT_FD):
        try:
            os.set_inheritable(fd, False)
        except OSError:
            pass
    watch_children()
    import base64  # noqa: F401
    import json  # noqa: F401
    import select  # noqa: F401
    import subprocess  # noqa: F401
    import threading  # noqa: F401
    posix.write(REPORT_FD, b'{"event": "ready"}\n')
    global ENDING
    while True:
        # A SIGUSR1 of agentjail's ends the jail within its call: one before this is a
        # command's own, and the next command runs.
        ENDING = False
        wait_for_call()
        frame = read_frame()
        if frame is None:
            posix._exit(0)
        import json

        body, call, verb = frame
        req = json.loads(body)
        if verb == "exec" and req.get("background"):
            result = start_job(req)
        elif verb == "exec":
            result = run(req)
        else:
            result = wait_job(req, verb == "kill")
        result["event"] = "done"
        result["call"] = call
        report(result)


if __name__ == "__main__":
    main()
