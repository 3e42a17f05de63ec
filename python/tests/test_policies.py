"""The client's default policy (policies/python.toml, shipped in the package) and policies
named by name, from a directory outside the checkout."""

import agentjail
from conftest import REPO


def test_the_packaged_default_is_the_repository_one():
    with open(agentjail.DEFAULT_POLICY, "rb") as a, open(REPO / "policies" / "python.toml", "rb") as b:
        assert a.read() == b.read()


def test_the_default_policy_allows_the_stdlib_ordinary_programs_use(client):
    code = (
        "import math, re, datetime, collections, itertools, functools, dataclasses, typing\n"
        "import json, random, statistics, string, decimal, fractions, heapq, bisect, enum, textwrap\n"
        "@dataclasses.dataclass\nclass P:\n    x: int\n"
        "c = collections.Counter(re.findall(r'\\w', 'abca'))\n"
        "print(math.isqrt(17), c['a'], P(3).x, decimal.Decimal('0.1') + decimal.Decimal('0.2'),\n"
        "      fractions.Fraction(1, 3) * 3, datetime.date(2024, 2, 29).isoformat())"
    )
    r = client.run(code)
    assert r.ok, (r.stop_reason, r.raw.get("decision"), r.stderr)
    assert r.stdout == "4 2 3 0.3 1 2024-02-29\n"
    assert r.raw["policy"]["path"] == agentjail.DEFAULT_POLICY
    # The README's files= snippet: open() reads /app/in, and /app/out comes back.
    r = client.run("open('out.txt', 'w').write(open('/app/in/data.csv').read().upper())",
                   files={"data.csv": "a,b\n1,2\n"})
    assert r.ok, (r.stop_reason, r.raw.get("decision"), r.stderr)
    assert r.artifacts[0].path == "out.txt" and r.artifacts[0].content == b"A,B\n1,2\n"
    # The jail is the default's: no os, no network.
    assert client.run("import os").stop.kind is agentjail.StopKind.POLICY_BLOCK


def test_a_policy_is_named_by_name_from_any_directory(binary, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no policies/ here: the binary resolves the name
    for name in ("python", "default", "judge"):
        with agentjail.Client(binary=binary, policy=name) as c:
            r = c.run("print(6 * 7)")
            assert r.ok and r.stdout == "42\n", (name, r.stop_reason)
            assert r.raw["policy"]["path"].endswith(f"/policies/{name}.toml"), r.raw["policy"]
    # A path still works, relative to the client's working directory.
    (tmp_path / "mine.toml").write_bytes((REPO / "policies" / "default.toml").read_bytes())
    with agentjail.Client(binary=binary, policy="mine.toml") as c:
        r = c.run("print(1)")
        assert r.ok and r.raw["policy"]["path"] == "mine.toml", r.raw["policy"]


def test_the_constructor_raises_what_the_first_call_would(binary, tmp_path, monkeypatch):
    import asyncio

    import pytest

    monkeypatch.chdir(tmp_path)
    with pytest.raises(agentjail.PolicyError, match='no policy named "no-such-policy"') as e:
        agentjail.Client(binary=binary, policy="no-such-policy")
    assert "/usr/share/agentjail/policies" in str(e.value)
    (tmp_path / "bad.toml").write_text('version = 1\n[limits]\nmemory = "lots"\n')
    with pytest.raises(agentjail.PolicyError, match="limits.memory") as e:
        agentjail.Client(binary=binary, policy="bad.toml")
    assert "bad.toml:3" in str(e.value)
    with pytest.raises(agentjail.PolicyError, match="cannot read"):
        agentjail.Client(binary=binary, policy="missing.toml")
    with pytest.raises(agentjail.AgentjailError, match="not an executable file"):
        agentjail.Client(binary=str(tmp_path / "no-agentjail"))
    # A flag serve refuses: the server exits at start, and its words are the error.
    with pytest.raises(agentjail.ConnectionClosed, match="--no-such-flag"):
        agentjail.Client(binary=binary, args=["--no-such-flag"])
    # A zygote that cannot work, required: serve --zygote starts its template before it answers (the
    # template's own refusals, of the policy's interpreter or arguments, come at that same
    # start); here the template binary is not next to agentjail, and the constructor says so.
    import shutil

    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(binary, alone / "agentjail")
    with pytest.raises(agentjail.ConnectionClosed, match="--zygote: no .*agentjail-zygote next to agentjail"):
        agentjail.Client(binary=str(alone / "agentjail"), args=["--zygote"])

    async def main():
        with pytest.raises(agentjail.PolicyError, match="no-such-policy"):
            agentjail.AsyncClient(binary=binary, policy="no-such-policy")
        with pytest.raises(agentjail.ConnectionClosed, match="--no-such-flag"):
            async with agentjail.AsyncClient(binary=binary, args=["--no-such-flag"]):
                pass
        async with agentjail.AsyncClient(binary=binary, policy="python") as c:
            assert (await c.run("print(3)")).stdout == "3\n"

    asyncio.run(main())


def test_no_start_up_noise_in_a_data_record(binary, tmp_path):
    # matplotlib's font list (fc-list) printed "Fontconfig error: Cannot load default config
    # file" into every warm data.toml record, the preload imports it; FONTCONFIG_FILE
    # (environment.extra) gives fontconfig a config under /usr.
    import json
    import subprocess

    from conftest import needs_cgroups

    needs_cgroups()
    action = {"id": "t", "language": "python", "entrypoint": "main.py", "code": "print(1)",
              "output_mode": "text", "stdin": ""}
    plot = ("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.title('t')\n"
            "plt.savefig('p.png')\nprint(1)")
    for code in ("print(1)", plot):  # cold: agentjail run
        p = subprocess.run([binary, "run", "--policy", "data", "-"], cwd=tmp_path, capture_output=True,
                           input=json.dumps(dict(action, code=code)).encode(), timeout=120)
        r = json.loads(p.stdout)
        assert (r["status"], r["execution"]["stdout"], r["execution"]["stderr"]) == ("ok", "1\n", ""), r
    with agentjail.Client(binary=binary, policy="data", args=["--pool", "1"]) as c:
        for code in ("print(1)", plot):  # warm: serve's pool, matplotlib preloaded
            r = c.run(code)
            assert (r.ok, r.stdout, r.stderr, r.jail_start) == (True, "1\n", "", "warm"), r.raw
        with c.session() as s:
            r = s.exec("print(1)")
            assert (r.ok, r.stdout, r.stderr) == (True, "1\n", ""), r.raw


def test_the_client_knows_what_its_policy_allows(client, binary):
    info = client.policy_info
    assert info.name == "python" and info.network == "none" and info.allowed_hosts == []
    assert {"math", "re", "datetime"} <= set(info.allowed_imports) and "os" not in info.allowed_imports
    assert "Imports allowed: json, statistics, math," in info.describe() and "No network." in info.describe()
    # AsyncClient loads it in its constructor too (the server starts at connect()).
    net = agentjail.AsyncClient(binary=binary, policy="net").policy_info
    assert (net.name, net.network, net.allowed_hosts) == ("net", "allowlist", ["example.com:443"])
    assert {"urllib.request", "http.client", "requests"} <= set(net.allowed_imports)
    # The loader lifted the network names from the check's denials (policies/net.toml).
    assert not {"connect", "request", "urlopen"} & set(net.raw["check"]["denied_attributes"])
    assert {"connect", "request", "urlopen"} <= set(info.raw["check"]["denied_attributes"])


def test_no_start_up_noise_under_any_shipped_policy(binary, tmp_path):
    # Every shipped policy's cold `run` and warm serve jail (its preload imported ahead) of
    # print(1): exactly "1\n" on stdout and nothing on stderr (no interpreter, site,
    # preload or fontconfig chatter a model would read as its own error).
    import json
    import subprocess

    from conftest import needs_cgroups

    needs_cgroups()  # data, smolagents, workspace and judge-open require the memory cgroup
    names = sorted(p.stem for p in (REPO / "policies").glob("*.toml"))
    assert {"python", "net", "data", "smolagents", "workspace", "judge", "default"} <= set(names)
    action = {"id": "t", "language": "python", "entrypoint": "main.py", "code": "print(1)",
              "output_mode": "text", "stdin": ""}
    for name in names:
        p = subprocess.run([binary, "run", "--policy", name, "-"], cwd=tmp_path, capture_output=True,
                           input=json.dumps(action).encode(), timeout=120)
        r = json.loads(p.stdout)
        assert (r["status"], r["execution"]["stdout"], r["execution"]["stderr"]) == ("ok", "1\n", ""), (name, r)
    for name in ("python", "net", "smolagents"):
        with agentjail.Client(binary=binary, policy=name, args=["--pool", "1"]) as c:
            for _ in range(2):
                r = c.run("print(1)")
                assert (r.ok, r.stdout, r.stderr) == (True, "1\n", ""), (name, r.raw)
