"""Rich results (issue 38, item 3): `plt.show()`, a DataFrame as a session call's last
expression and `display(obj)` come back as MIME bundles in `record.results`, typed from
their content; a bundle past the policy's bounds is listed, not kept. Real jails, real
binary: one data-policy session does the matplotlib and pandas checks, one default-policy
run the display, lying-type and bound checks."""

import base64

import pytest

import agentjail
from conftest import needs_cgroups

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def data_client(binary):
    needs_cgroups()
    with agentjail.Client(binary=binary, policy="data", args=["--pool", "1"]) as c:
        yield c


def test_plot_dataframe_and_html_in_one_data_session(data_client):
    with data_client.session() as s:
        r = s.exec(
            "import matplotlib.pyplot as plt\n"
            "plt.plot([1, 2, 3], [4, 1, 9])\n"
            "plt.show()\n"
        )
        assert r.ok, r.raw
        assert len(r.results) == 1, r.raw.get("results_skipped")
        fig = r.results[0]
        assert fig.png.startswith(PNG_SIGNATURE) and len(fig.png) > 1000
        assert fig.text.startswith("<Figure size")
        assert set(fig.formats()) == {"image/png", "text/plain"}
        # plt.show() closed the figure, and matplotlib printed nothing (no Agg warning,
        # no Fontconfig or cache complaint).
        assert r.stderr == "", r.stderr
        r = s.exec("len(plt.get_fignums())")
        assert (r.value, r.results) == ("0", ())
        # A figure left open is not shown by itself: plt.plot's value is no rich form.
        r = s.exec("plt.plot([1, 2])")
        assert r.results == () and r.value.startswith("[<matplotlib.lines.Line2D")
        r = s.exec("plt.close('all')")
        assert r.ok and r.results == ()
        # A figure as the last expression is its PNG (and it stays open: no plt.show()).
        r = s.exec("fig, ax = plt.subplots()\nax.bar([1, 2], [3, 4])\nfig")
        assert r.ok and len(r.results) == 1, r.raw
        assert r.results[0].png.startswith(PNG_SIGNATURE) and r.value.startswith("<Figure")
        s.exec("plt.close('all')")

        # A DataFrame as the call's last expression: its HTML table and its text.
        r = s.exec("import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': [3.5, 4.5]})")
        assert r.ok, r.raw
        assert len(r.results) == 1
        df = r.results[0]
        assert "<table" in df.html and "4.5" in df.html
        assert df.text == r.value and "a    b" in df.text
        assert df.png is None and df.formats() == ("text/html", "text/plain")
        # A plain value stays a value: no result.
        r = s.exec("41 + 1")
        assert (r.value, r.results, "results" in r.raw) == ("42", (), False)


def test_display_types_from_content_and_bounds_the_count(client):
    code = (
        "class HTML:\n"
        "    def __init__(self, s):\n"
        "        self.s = s\n"
        "    def _repr_html_(self):\n"
        "        return self.s\n"
        "class Liar:\n"
        "    def _repr_png_(self):\n"
        "        return b'<script>not a png</script>'\n"
        "    def _repr_html_(self):\n"
        "        return '<p>honest html</p>'\n"
        "class Bundle:\n"
        "    def _repr_mimebundle_(self, include=None, exclude=None):\n"
        "        return {'text/markdown': '**b**', 'application/json': {'a': [1]}}\n"
        "    def _repr_html_(self):\n"
        "        return '<p>from _repr_html_</p>'\n"
        "    def _repr_svg_(self):\n"
        "        return '<svg width=\"1\"></svg>'\n"
        "display(HTML('<h1>Title</h1>'))\n"
        "display(Liar())\n"
        "display(Bundle())\n"
        "for i in range(19):\n"
        "    display(HTML('<i>%d</i>' % i))\n"
        "print('printed')\n"
    )
    r = client.run(code)
    assert r.ok, r.raw
    assert r.stdout == "printed\n"
    bundles = r.raw["results"]
    # The default policy keeps 16 bundles; the rest are listed as over_count.
    assert len(r.results) == len(bundles) == 16
    assert r.results[0].html == "<h1>Title</h1>"
    assert r.results[0].text.startswith("<__main__.HTML object")
    # The liar's "PNG" is not PNG bytes: dropped, the record says so; its HTML stands.
    liar = r.results[1]
    assert liar.png is None and "image/png" not in liar.formats()
    assert liar.html == "<p>honest html</p>"
    skipped = r.raw["results_skipped"]
    assert {"result": 1, "format": "image/png", "reason": "content_mismatch"} in skipped
    # _repr_mimebundle_ first, then the _repr_*_ methods for formats it lacks.
    b = r.results[2]
    assert (b.markdown, b.json, b.svg) == ("**b**", {"a": [1]}, '<svg width="1"></svg>')
    assert b.html == "<p>from _repr_html_</p>"
    over = [s for s in skipped if s["reason"] == "over_count"]
    assert [s["result"] for s in over] == list(range(16, 22))
    assert r.results[15].html == "<i>12</i>"


def test_result_lines_printed_to_stdout_are_stdout_not_results(client):
    """Only the report pipe carries results; text shaped like one on stdout is stdout.
    (Lines the program writes to the report pipe itself: tests/pipeline/results.rs.)"""
    png = base64.b64encode(b"GIF89a" + b"\0" * 20).decode()
    code = (
        "import json\n"
        "line = json.dumps({'event': 'result', 'data': {'image/png': '%s', 'text/plain': 'x'}})\n"
        "for _ in range(40):\n"
        "    print(line)\n"
    ) % png
    # Printing is not the report pipe: stdout stays stdout, no result appears.
    r = client.run(code)
    assert r.ok and r.results == () and "results" not in r.raw
    assert r.stdout.count('"event": "result"') == 40


def test_record_results_are_parsed_strictly():
    base = {"status": "ok", "stop_reason": "success"}
    png = base64.b64encode(PNG_SIGNATURE + b"rest").decode()
    r = agentjail.Record.from_dict(dict(base, results=[{"image/png": png, "text/plain": "f"}]))
    assert r.results[0].png == PNG_SIGNATURE + b"rest"
    assert r.results[0].formats() == ("image/png", "text/plain")
    assert (r.results[0].html, r.results[0].jpeg) == (None, None)
    for bad in ([{"image/png": "%%%"}], [{"text/html": 5}], ["x"], {"a": 1}):
        with pytest.raises(agentjail.ProtocolError):
            agentjail.Record.from_dict(dict(base, results=bad))
    assert agentjail.Record.from_dict(base).results == ()
