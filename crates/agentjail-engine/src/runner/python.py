# agentjail's runner: the first thing the interpreter runs in a jail. Trusted code, written
# for one job or one session; it never reads anything but agentjail's frames on fd 3.
#
#   fd 0  the program's stdin (the input payload, as today)
#   fd 1, 2  the program's stdout and stderr (captured under the caps by the supervisor)
#   fd 3  jobs from agentjail: "AJ1 <kind> <length>[ <call>]\n" then <length> bytes of
#         source; a session call carries <call>, a nonce its `done` report must repeat
#   fd 4  reports to agentjail: one JSON object per line
#
# fds 3 and 4 are the runner's alone: close-on-exec, and closed in every child the program
# forks (os.register_at_fork). In a session that is not all: between calls the runner rings
# agentjail's doorbell, ioctl(3, DOORBELL), which the seccomp filter hands to agentjail; it
# answers the runner's own thread only (the kernel tells it who rang) by installing, at
# fds 3 and 4, a socket made for the next call alone. A process the program leaves running
# (even one that copied fds 3 and 4 before it forked) holds only an earlier call's socket:
# it can neither read a later call's frame nor report for it; it can only print
# (stdout/stderr, under the caps of whichever call is running).
#
# The source arrives as the exact bytes the checker judged and is compiled from bytes, so a
# PEP 263 declaration means what it means to CPython; it runs as __main__ from /app/main.py.
# Reports are informational: the program runs in this same process and could write to fd 4
# itself, so no verdict of agentjail's depends on them (exit status, limits and usage come
# from the kernel).
import sys
import posix

JOB_FD = 3
REPORT_FD = 4
# crates/agentjail-jail/src/seccomp.rs, SESSION_DOORBELL.
DOORBELL = 0x4A410001
FILENAME = "/app/main.py"
MAX_MESSAGE = 2000


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
    """One job frame, or None at EOF (agentjail is done with this jail)."""
    header = b""
    while not header.endswith(b"\n"):
        c = posix.read(JOB_FD, 1)
        if not c or len(header) > 64:
            return None
        header += c
    fields = header.decode("ascii").split()
    if len(fields) not in (3, 4) or fields[0] != "AJ1":
        return None
    kind, length = fields[1], fields[2]
    call = fields[3] if len(fields) == 4 else None
    source = read_exact(int(length))
    return None if source is None else (kind, source, call)


def close_channels():
    """In a child the program forked: the job and report pipes are the runner's alone."""
    for fd in (JOB_FD, REPORT_FD):
        try:
            posix.close(fd)
        except OSError:
            pass


def keep_channels():
    """fds 3 and 4 reach no program the code executes and no child it forks."""
    for fd in (JOB_FD, REPORT_FD):
        try:
            posix.set_inheritable(fd, False)
        except OSError:
            pass
    posix.register_at_fork(after_in_child=close_channels)


# The runner's own pid, set in main(). A process the program forks is a copy of the runner:
# when that copy leaves the program (returns or raises) it must exit there, never report a
# result (it would stand in for the runner's) and never read the next job's frame.
RUNNER_PID = None


def leave_if_forked_copy(code):
    if posix.getpid() != RUNNER_PID:
        flush()
        posix._exit(code)


def report(obj):
    import json

    line = (json.dumps(obj, ensure_ascii=True) + "\n").encode("ascii")
    while line:
        n = posix.write(REPORT_FD, line)
        line = line[n:]


def qualified(t):
    module = getattr(t, "__module__", "builtins")
    name = getattr(t, "__qualname__", t.__name__)
    return name if module in ("builtins", "__main__") else module + "." + name


def user_tb(tb):
    """The traceback from the first frame of the program (the runner's own frames dropped)."""
    while tb is not None and tb.tb_frame.f_code.co_filename != FILENAME:
        tb = tb.tb_next
    return tb


def error_report(e):
    line = column = None
    if isinstance(e, SyntaxError) and e.filename == FILENAME:
        line, column = e.lineno, e.offset
    tb = user_tb(e.__traceback__)
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    try:
        message = e.msg if isinstance(e, SyntaxError) else str(e)
    except BaseException:
        message = "<unprintable>"
    return {
        "event": "error",
        "type": qualified(type(e)),
        "message": message[:MAX_MESSAGE],
        "line": line,
        "column": column,
    }


def print_exception(e):
    import traceback

    tb = user_tb(e.__traceback__)
    traceback.print_exception(type(e), e, tb, file=sys.stderr)


def flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


def remember_source(source):
    """Let tracebacks show the program's lines (there is no /app/main.py file to read)."""
    import linecache

    text = source.decode("utf-8", "replace")
    linecache.cache[FILENAME] = (len(text), None, text.splitlines(True), FILENAME)


def main_module():
    module = type(sys)("__main__")
    module.__file__ = FILENAME
    module.__builtins__ = __builtins__
    sys.modules["__main__"] = module
    sys.argv[:] = [FILENAME]
    return module


def run_once(source):
    """Single-use jail: run the program, exit as CPython would."""
    module = main_module()
    results_reset()
    try:
        code = compile(source, FILENAME, "exec", dont_inherit=True)
        exec(code, module.__dict__)
    except SystemExit as e:
        flush()
        code = e.code
        if code is None:
            posix._exit(0)
        if isinstance(code, int):
            posix._exit(code & 0xFF)
        print(code, file=sys.stderr)
        flush()
        posix._exit(1)
    except BaseException as e:
        flush()
        remember_source(source)
        print_exception(e)
        leave_if_forked_copy(1)
        flush()
        report(error_report(e))
        posix._exit(1)
    flush()
    posix._exit(0)


MAX_VALUE = 10000

# Rich results (src/pipeline/results.rs): each MIME bundle the program displays is one report
# line, {"event": "result", "data": {mime: text or base64}}. The policy's bounds come in
# AGENTJAIL_RESULTS ("max_count,max_bytes"; absent: results are off); a bundle past them is
# not sent, only noted ({"event": "result", "over": "count" | "bytes"}, at most MAX_NOTES
# per run or call). agentjail applies the same bounds and types every format from its
# content whatever arrives: the program runs in this process and can write such lines too.
MAX_NOTES = 100
# [max_count, max_bytes, sent, bytes used, notes] of the current run or call; None: off.
RESULTS = None
# The _repr_*_ methods that make a value rich, with _repr_mimebundle_.
RICH_METHODS = (
    "_repr_mimebundle_", "_repr_html_", "_repr_markdown_", "_repr_latex_", "_repr_svg_",
    "_repr_png_", "_repr_jpeg_", "_repr_json_",
)


def results_reset():
    """At the start of a run or a session call: the policy's bounds, nothing sent yet."""
    global RESULTS
    RESULTS = None
    raw = posix.environ.get(b"AGENTJAIL_RESULTS", b"")
    try:
        count, size = (int(x) for x in raw.split(b","))
    except ValueError:
        return
    if count > 0 and size > 0:
        RESULTS = [count, size, 0, 0, 0]


# What makes a bundle, compiled on first use only (display, pyplot's import, a rich value):
# most jobs never display anything, and a cold job compiles this file on its path.
RICH = r"""
import base64, io, json, sys

IMAGE_FORMATS = ("image/png", "image/jpeg", "image/gif", "image/webp")
REPR_METHODS = (
    ("text/html", "_repr_html_"),
    ("text/markdown", "_repr_markdown_"),
    ("text/latex", "_repr_latex_"),
    ("image/svg+xml", "_repr_svg_"),
    ("image/png", "_repr_png_"),
    ("image/jpeg", "_repr_jpeg_"),
    ("application/json", "_repr_json_"),
)


def figure_png(fig):
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png")
    except Exception:
        return None
    return buf.getvalue()


def mime_bundle(obj):
    # IPython's order: _repr_mimebundle_, the _repr_*_ methods, repr as text/plain; a
    # matplotlib figure is its PNG. Binary formats base64.
    data = {}
    if is_figure(obj):
        png = figure_png(obj)
        if png is not None:
            data["image/png"] = png
    else:
        try:
            m = getattr(obj, "_repr_mimebundle_", None)
            got = m(include=None, exclude=None) if callable(m) else None
        except Exception:
            got = None
        if isinstance(got, tuple) and got:
            got = got[0]
        if isinstance(got, dict):
            data.update((k, v) for k, v in got.items() if isinstance(k, str))
        for mime, name in REPR_METHODS:
            if mime in data:
                continue
            try:
                method = getattr(obj, name, None)
                value = method() if callable(method) else None
            except Exception:
                value = None
            if isinstance(value, tuple) and value:
                value = value[0]
            if value is not None:
                data[mime] = value
    if "text/plain" not in data:
        data["text/plain"] = value_text(obj) or ""
    bundle = {}
    for mime, value in data.items():
        if mime in IMAGE_FORMATS and isinstance(value, (bytes, bytearray)):
            value = base64.b64encode(bytes(value)).decode("ascii")
        elif mime == "application/json" and not isinstance(value, str):
            try:
                value = json.dumps(value)
            except (TypeError, ValueError):
                continue
        if isinstance(value, str):
            bundle[mime] = value
    return bundle


def emit(bundle):
    # One bundle (mime -> str) within the bounds, or a note that it was not sent.
    r = results_on()
    if r is None or not bundle:
        return
    line = (json.dumps({"event": "result", "data": bundle}, ensure_ascii=True) + "\n").encode("ascii")
    over = "count" if r[2] >= r[0] else ("bytes" if r[3] + len(line) > r[1] else None)
    if over is not None:
        if r[4] >= MAX_NOTES:
            return
        r[4] += 1
        line = ('{"event": "result", "over": "%s"}\n' % over).encode("ascii")
    else:
        r[2] += 1
        r[3] += len(line)
    try:
        while line:
            line = line[posix.write(REPORT_FD, line):]
    except OSError:
        pass


def patch_pyplot(plt):
    # plt.show(): each open figure becomes a result (PNG and text), then is closed.
    original = plt.show

    def show(*args, **kwargs):
        if results_on() is None:
            return original(*args, **kwargs)
        for number in plt.get_fignums():
            fig = plt.figure(number)
            emit(mime_bundle(fig))
            plt.close(fig)

    show.__doc__ = original.__doc__
    plt.show = show


def pyplot_spec(hook, name, path, target):
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        spec = find(name, path, target) if finder is not hook and find else None
        if spec is not None:
            break
    else:
        return None
    exec_module = getattr(spec.loader, "exec_module", None)
    if exec_module is not None:
        def run(module):
            exec_module(module)
            patch_pyplot(module)

        spec.loader.exec_module = run
    return spec
"""
RICH_NAMESPACE = None


def rich():
    global RICH_NAMESPACE
    if RICH_NAMESPACE is None:
        ns = {"value_text": value_text, "is_figure": is_figure, "posix": posix,
              "REPORT_FD": REPORT_FD, "MAX_NOTES": MAX_NOTES, "results_on": lambda: RESULTS,
              "__name__": "agentjail_rich"}
        exec(compile(RICH, "<agentjail rich results>", "exec", dont_inherit=True), ns)
        RICH_NAMESPACE = ns
    return RICH_NAMESPACE


def is_figure(obj):
    figure = sys.modules.get("matplotlib.figure")
    return figure is not None and isinstance(obj, figure.Figure)


def display(*objs):
    """IPython's display(): each object's MIME bundle becomes one of the record's `results`
    (its text on stdout when the policy turns results off)."""
    for obj in objs:
        if RESULTS is None:
            text = value_text(obj)
            if text is not None:
                print(text)
            continue
        r = rich()
        r["emit"](r["mime_bundle"](obj))


class PyplotHook:
    """Patches matplotlib.pyplot.show when the program (or a preload) imports pyplot."""

    def find_spec(self, name, path=None, target=None):
        if name != "matplotlib.pyplot":
            return None
        return rich()["pyplot_spec"](self, name, path, target)


def install_results():
    """display() as a builtin, and the pyplot hook (before any preload imports pyplot)."""
    import builtins

    builtins.display = display
    sys.meta_path.insert(0, PyplotHook())


def rich_value(value):
    """A session call's last expression: a result when its value has a rich form (a
    DataFrame's HTML, a figure's PNG), not only text."""
    if value is None or RESULTS is None:
        return
    try:
        kind = type(value)
        if not (is_figure(value) or any(hasattr(kind, name) for name in RICH_METHODS)):
            return
    except Exception:
        return
    r = rich()
    r["emit"](r["mime_bundle"](value))


def value_text(value):
    """The trailing expression's value as text, Jupyter-style (None shows nothing)."""
    if value is None:
        return None
    try:
        text = repr(value)
    except BaseException as e:
        text = "<unrepresentable: " + qualified(type(e)) + ">"
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE] + "..."


def session_call(source, namespace):
    """Run one call in the session's namespace; its report (done, with the value of a
    trailing expression or the error)."""
    import ast

    tree = compile(source, FILENAME, "exec", ast.PyCF_ONLY_AST | ast.PyCF_TYPE_COMMENTS, dont_inherit=True)
    last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    if last is not None:
        tree.body.pop()
    exec(compile(tree, FILENAME, "exec", dont_inherit=True), namespace)
    if last is None:
        return None
    expression = ast.Expression(last.value)
    return eval(compile(expression, FILENAME, "eval", dont_inherit=True), namespace)


def wait_for_call(fcntl):
    """Ring the doorbell: returns when agentjail has installed the next call's channel at
    fds 3 and 4. ENOTTY: no seccomp filter took the ring (a policy whose seccomp is
    best_effort, on a host that cannot install it): the frames then come on the jail's own
    pipes, as they always are there."""
    try:
        fcntl.ioctl(JOB_FD, DOORBELL, 0)
    except OSError as e:
        import errno

        if e.errno != errno.ENOTTY:
            print("agentjail runner: no channel for the next call: " + str(e), file=sys.stderr)
            flush()
            posix._exit(70)


def run_session():
    """A session's jail: call after call in one namespace until agentjail closes the pipe.
    SystemExit ends the session as it would end a Python REPL."""
    import fcntl

    module = main_module()
    while True:
        wait_for_call(fcntl)
        frame = read_frame()
        if frame is None or frame[0] != "exec":
            posix._exit(0)
        source, call = frame[1], frame[2]
        results_reset()
        try:
            value = session_call(source, module.__dict__)
            leave_if_forked_copy(0)
            rich_value(value)
            flush()
            report({"event": "done", "call": call, "ok": True, "value": value_text(value)})
        except SystemExit as e:
            flush()
            code = e.code
            posix._exit(code & 0xFF if isinstance(code, int) else (0 if code is None else 1))
        except BaseException as e:
            flush()
            remember_source(source)
            print_exception(e)
            leave_if_forked_copy(1)
            flush()
            error = error_report(e)
            del error["event"]
            report({"event": "done", "call": call, "ok": False, "error": error})


# Run once before the job arrives, in a jail started ahead of its job only (argv "warm";
# a cold `run` would pay it on the job's path): the first compile and exec of a
# process fault in the compiler's and evaluator's code and warm its caches, which otherwise
# costs the job ~1 ms of its latency. Synthetic code in a throwaway namespace, nothing of
# any job: the jail still starts clean for the one job it takes.
WARM_UP = """
import sys
def f(rows, k=2):
    out = {}
    for i, row in enumerate(rows):
        if row.get("a") is not None and row["a"] != "x":
            out[i] = [float(v) * k for v in row.values() if isinstance(v, (int, float))]
    total = sum(1 for r in rows if r) / max(len(rows), 1)
    return {"n": len(out), "t": round(total, 3), "s": sorted(out)[-1:], "m": f"{k:>3}"}
class C:
    def __init__(self, x):
        self.x = x
try:
    r = f([{"a": 1, "b": 2.5}, {"a": "x"}] * 20)
except (KeyError, ValueError) as e:
    r = str(e)
"""


def warm_up():
    namespace = {"__name__": "__warm_up__"}
    exec(compile(WARM_UP, "<warm-up>", "exec", dont_inherit=True), namespace)
    json = sys.modules.get("json")
    if json is not None:
        json.loads(json.dumps(namespace["r"]))
    # Clearing the namespace breaks the cycles through the functions' globals; what little
    # is left (the class) is the collector's, whenever it runs: a full collection here
    # would cost each jail half a millisecond of CPU for nothing.
    namespace.clear()


def ready():
    # Written by hand: importing json here would cost every run a few milliseconds.
    posix.write(REPORT_FD, b'{"event": "ready"}\n')


def serve_one():
    """Single-use jail: one job frame, run once, exit."""
    frame = read_frame()
    if frame is None:
        posix._exit(0)
    kind, source, _ = frame
    if kind == "run":
        run_once(source)
    posix._exit(2)


def main():
    global RUNNER_PID
    RUNNER_PID = posix.getpid()
    keep_channels()
    install_results()
    mode = sys.argv[1] if len(sys.argv) > 1 else "run"
    ahead = len(sys.argv) > 2 and sys.argv[2] == "warm"
    for name in sys.argv[3:]:
        __import__(name)
    if ahead:
        warm_up()
    if mode == "session":
        # Every call parses to an AST first (session_call); imported on the first call,
        # ast cost that call ~1.5 ms. A session jail is always started ahead of its calls.
        import ast  # noqa: F401
        import errno  # noqa: F401
        import fcntl  # noqa: F401
    ready()
    if mode == "session":
        run_session()
    serve_one()


# The zygote (src/zygote/): agentjail-zygote loads this file as the module
# `agentjail_runner` into an interpreter outside any jail, calls `template` once (the
# policy's preloads and the warm-up: nothing of any job), and each jail forked from it
# calls `zygote_job` once its jail is complete (seccomp installed). Run as a script (every
# other jail), it is `main`.
def template(preloads):
    # The template is not a job: ^C at the server's terminal must not leave a pending
    # KeyboardInterrupt for every program forked after it (zygote_job sets ^C back).
    import _signal

    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    install_results()
    for name in preloads:
        __import__(name)
    warm_up()
    flush()


def zygote_job():
    global RUNNER_PID
    RUNNER_PID = posix.getpid()
    # Here, in the job's own process: registered in the template, the hook would run in
    # every jail the zygote forks.
    keep_channels()
    # What a fresh `python3` sets up at start and the jail's setup reset (the child
    # restores default signal dispositions before the program; `_signal` is built in,
    # `signal` would import enum): ^C raises
    # KeyboardInterrupt, a write to a closed pipe is an error, not a signal.
    import _signal

    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    _signal.signal(_signal.SIGPIPE, _signal.SIG_IGN)
    _signal.signal(_signal.SIGXFSZ, _signal.SIG_IGN)
    warm_up()
    ready()
    serve_one()


if __name__ == "__main__":
    main()
