# agentjail's workspace runner: the first program of a workspace's jail (src/engine/workspace.rs).
# Trusted code; it runs no code of its own choosing, only the commands agentjail sends.
#
#   fd 1, 2  what the commands print, forwarded here under the caps agentjail sends
#   fd 3     commands from agentjail: "AJ1 exec <length> <call>\n" then <length> bytes of a
#            JSON request {argv, cwd, env, stdin_b64, timeout_ms, background, stdout_cap,
#            stderr_cap}; <call> is a nonce the `done` report must repeat
#   fd 4     reports to agentjail: one JSON object per line
#
# Between commands the runner rings agentjail's doorbell, ioctl(3, DOORBELL), which the
# seccomp filter hands to agentjail; agentjail answers this thread only, installing at fds 3
# and 4 a socket made for the next command alone (as in a session: src/runner/python.py).
# A command never holds them: it is started (vfork and exec) with only fds 0-2, pipes of
# this runner. Each command gets its own process group; when it exits, the group is killed, and,
# when no command was left running in the background, every other process of the jail too
# (kill(-1) spares only init and this runner), so nothing an ordinary command started
# survives it. SIGUSR1 (agentjail's, after a command's forbidden syscall) kills every
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
    if len(fields) != 4 or fields[0] != "AJ1" or fields[1] != "exec":
        return None
    body = read_exact(int(fields[2]))
    return None if body is None else (body, fields[3])


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
        os.write(2, msg.encode("utf-8", "replace"))
        return None, code
    # Reaped by wait4 below, never by the Popen object (its finaliser would poll the pid).
    p.returncode = 0
    return p.pid, None


class Stream:
    """One of the command's output pipes, forwarded to our fd `to` up to `cap` bytes."""

    def __init__(self, fd, to, cap):
        self.fd, self.to, self.cap = fd, to, cap
        self.total = 0
        self.sent = 0

    def pump(self):
        import os

        try:
            b = os.read(self.fd, CHUNK)
        except BlockingIOError:
            return True
        if not b:
            return False
        self.total += len(b)
        room = max(self.cap - self.sent, 0)
        if room:
            out = b[:room]
            while out:
                n = os.write(self.to, out)
                out = out[n:]
                self.sent += n
        return True


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
                end_processes(pid, req.get("background"))
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
        elif status is not None and (req.get("background") or now >= exited + 1.0):
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

        body, call = frame
        req = json.loads(body)
        result = run(req)
        result["event"] = "done"
        result["call"] = call
        report(result)


if __name__ == "__main__":
    main()
