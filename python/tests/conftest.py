"""Fixtures: the REAL release binary (AGENTJAIL_BINARY, or the repo's release build), and
one shared client per module. A missing binary is an error, never a skip."""

import json
import os
import pathlib
import subprocess
import threading

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
RELEASE = REPO / "target" / "x86_64-unknown-linux-gnu" / "release" / "agentjail"


@pytest.fixture(scope="session")
def binary():
    path = os.environ.get("AGENTJAIL_BINARY") or str(RELEASE)
    if not os.access(path, os.X_OK):
        pytest.fail(
            f"agentjail binary not found at {path}: run `cargo build --release` or set AGENTJAIL_BINARY",
            pytrace=False,
        )
    # A policy named by name (`policy="data"`) is found in the checkout whose target/ holds
    # the binary's real path. Under .ci/run target/ is a link to a build cache outside the
    # clone, so there the tests name this checkout's policies/ themselves (the binary's own
    # lookups, checkout and install, are tests/check/policy_files.rs's).
    real = pathlib.Path(os.path.realpath(path))
    if REPO not in real.parents and "AGENTJAIL_POLICY_DIR" not in os.environ:
        os.environ["AGENTJAIL_POLICY_DIR"] = str(REPO / "policies")
    return path


@pytest.fixture(scope="module")
def client(binary):
    import agentjail

    with agentjail.Client(binary=binary, args=["--pool", "2"]) as c:
        yield c


@pytest.fixture(scope="session")
def incident():
    with open(REPO / "examples" / "incident" / "action.json") as f:
        return json.load(f)


def descendants(pid):
    """Every live process below pid (walking /proc's ppid links)."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def needs_cgroups():
    """policies/data.toml and smolagents.toml require the memory cgroup (fail closed). Root
    has it here; another user needs delegation (systemd Delegate=yes). Outside CI a run as
    another user skips those tests, saying why; under CI=true they always run."""
    if os.getuid() != 0 and os.environ.get("CI") != "true":
        pytest.skip("SKIPPED LOUDLY: not root, so policies requiring the memory cgroup stop with "
                    "sandbox_unavailable:cgroup_memory here (run as root, or under Delegate=yes)")


class HttpServer:
    """`agentjail serve --http ADDR` as a subprocess; `url` is what a client passes."""

    def __init__(self, binary, addr, token_file=None, extra=()):
        argv = [binary, "serve", "--http", addr, "--pool", "1", *extra]
        if token_file is not None:
            argv += ["--token-file", str(token_file)]
        self.proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
        self.lines = []
        shown = None
        for line in self.proc.stderr:
            self.lines.append(line)
            if line.startswith("agentjail: serving HTTP on "):
                shown = line.split(" on ", 1)[1].strip()
                break
        if shown is None:
            self.proc.wait()
            raise AssertionError(f"agentjail serve --http did not start: {''.join(self.lines)}")
        threading.Thread(target=lambda: [self.lines.append(x) for x in self.proc.stderr], daemon=True).start()
        self.url = shown if shown.startswith("unix:") else "http://" + shown

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        assert self.proc.wait(30) == 0, "".join(self.lines)
