"""client.workspace(host_dir=...): /workspace is a host directory beneath the policy's
[workspace] host_roots, through the private server, asyncio and HTTP. The directory keeps
what the commands wrote, owned by the jail's host uid and never set-id; one live workspace
per directory; anything else is refused with ``bad_host_dir``."""

import asyncio
import os
import pathlib
import shutil
import stat
import tempfile

import pytest

import agentjail
from conftest import REPO, needs_cgroups

SHIPPED = (REPO / "policies" / "workspace.toml").read_text()
# The uid the jail's user is on the host: nobody when the server runs as root.
JAIL_UID = 65534 if os.geteuid() == 0 else os.geteuid()


@pytest.fixture()
def roots(tmp_path):
    # Not beneath tmp_path: pytest's base directory is 0700, and the jail's user must be
    # able to search every directory down to its workspace (agentjail refuses one it cannot).
    base = pathlib.Path(tempfile.mkdtemp(prefix="ajtest-pyhost-", dir="/tmp"))
    root = base / "roots"
    root.mkdir()
    for d in (base, root):
        d.chmod(0o755)
    dirs = {}
    for name in ("a", "b"):
        d = root / name
        d.mkdir()
        if os.geteuid() == 0:
            os.chown(d, JAIL_UID, JAIL_UID)
        dirs[name] = str(d)
    policy = tmp_path / "ws-host.toml"
    # A second root under pytest's 0700 base directory: as root, the jail's user (nobody)
    # cannot search its way there.
    hidden = tmp_path / "hidden"
    (hidden / "w").mkdir(parents=True)
    if os.geteuid() == 0:
        os.chown(hidden / "w", JAIL_UID, JAIL_UID)
    dirs["hidden"] = str(hidden / "w")
    policy.write_text(SHIPPED + f'\nhost_roots = ["{root}", "{hidden}"]\nhost_quota_acknowledged = true\n')
    yield str(policy), str(root), dirs
    shutil.rmtree(base, ignore_errors=True)


def test_a_host_directory_keeps_the_files_and_no_setid_bit(binary, roots):
    needs_cgroups()
    policy, root, dirs = roots
    with agentjail.Client(binary=binary, policy=policy, args=["--pool", "1"]) as c:
        with c.workspace(host_dir=dirs["a"]) as ws:
            ws.put({"in.txt": "put"})
            rec = ws.exec("cat in.txt > out.txt; cp /bin/sh sh; chmod 4755 sh; chmod g+s out.txt")
            assert "not permitted" in rec.stderr, rec.raw
            assert rec.raw["workspace"]["host_dir"] == dirs["a"]
            with pytest.raises(agentjail.ServerError) as e:
                c.workspace(host_dir=dirs["a"])
            assert e.value.code == "host_dir_in_use"
        bad_dirs = ["/etc", root, dirs["a"] + "/../b", dirs["a"] + "/missing"]
        if os.geteuid() == 0:
            bad_dirs.append(dirs["hidden"])
        for bad in bad_dirs:
            with pytest.raises(agentjail.ServerError) as e:
                c.workspace(host_dir=bad)
            assert e.value.code == "bad_host_dir", bad
        with pytest.raises(TypeError):
            c.workspace(host_dir=7)
    out = os.path.join(dirs["a"], "out.txt")
    assert open(out).read() == "put"
    for name in ("out.txt", "sh", "in.txt"):
        st = os.lstat(os.path.join(dirs["a"], name))
        assert st.st_uid == JAIL_UID and not st.st_mode & (stat.S_ISUID | stat.S_ISGID), (name, oct(st.st_mode))


def test_async_and_http_clients_take_host_dir(binary, roots, tmp_path):
    import secrets

    from conftest import HttpServer

    needs_cgroups()
    policy, _root, dirs = roots

    async def main():
        async with agentjail.AsyncClient(binary=binary, policy=policy, args=["--pool", "1"]) as c:
            async with c.workspace(host_dir=dirs["b"]) as ws:
                return (await ws.exec("echo async > f.txt; cat f.txt")).stdout

    assert asyncio.run(main()) == "async\n"
    token = secrets.token_hex(16)
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {token}\n")
    tokens.chmod(0o600)
    server = HttpServer(binary, "127.0.0.1:0", tokens, extra=["--policy", policy])
    try:
        with agentjail.Client(url=server.url, token=token) as c:
            with c.workspace(host_dir=dirs["b"]) as ws:
                assert ws.exec("cat f.txt").stdout == "async\n"
                with pytest.raises(agentjail.ServerError) as e:
                    c.workspace(host_dir=dirs["b"])
                assert e.value.code == "host_dir_in_use"
            with pytest.raises(agentjail.ServerError) as e:
                c.workspace(host_dir="/etc")
            assert e.value.code == "bad_host_dir"
    finally:
        server.stop()
