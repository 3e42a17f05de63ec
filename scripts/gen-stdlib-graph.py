#!/usr/bin/python3
"""Regenerate the module tables in crates/agentjail-check/src/tables.rs from the interpreters themselves.

usage: /usr/bin/python3 scripts/gen-stdlib-graph.py [--check] [--python PATH]... [--packages-python PATH]

The static check needs two facts it cannot see in a program's source:

* the standard library's module graph, per Python version (STDLIB_TABLES): for each module a
  policy may allow (and each standard-library module those reach), every plain attribute
  whose value is a module, as (attribute, module). The checker uses it to know that
  `json.codecs` is a module (so it must be an allowed import) and `policy lint` walks it to
  find paths to DANGEROUS_MODULES. Generated for 3.10 to 3.13 from the pyenv builds
  (`$(pyenv root)/versions/3.1x.*`) and /usr/bin/python3.1x where the host has one,
  imported under `-I -S`; when several builds of one version differ, the table holds the
  union of their edges (an edge only ever makes the checker stricter).
* what `from M import *` binds, per Python version (the `exports` of STDLIB_TABLES), for
  each module in STDLIB_ROOTS: `M.__all__` when M has one, else its names without a
  leading underscore; the union over the builds of a version. The checker allows a star
  import (`check.allow_star_imports`) only of a module listed here, judging every name it
  binds as if imported by name.
* the third-party packages' tables (PACKAGE_TABLE): the edges of the modules data.toml
  allows and, for each package, the attribute names through which any module reachable
  from it (its own submodules and everything they import) exposes a dangerous module. They
  hold for one Python version and the exact package versions they were generated from
  (Debian's numpy, pandas and matplotlib, imported under `/usr/bin/python3 -I`, because
  Debian installs them in /usr/lib/python3/dist-packages, which only `site` puts on
  sys.path); agentjail refuses at policy load a policy allowing a package whose installed
  version, or whose interpreter's version, is not the one the table was generated for.

`posix` is recorded as `os` (it is the same functions). With --check, nothing is written:
every interpreter found (or given with --python) is walked again and the run fails when it
exposes a module edge the table lacks (what the tables promise: every module-valued
attribute is listed); the package table is verified the same way when this host has exactly
the package versions it was generated for, and skipped (saying so) otherwise.
"""

import glob
import json
import os
import subprocess
import sys

PACKAGES_PYTHON = "/usr/bin/python3"
VERSIONS = ["3.10", "3.11", "3.12", "3.13"]
HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(HERE, "..", "crates", "agentjail-check", "src", "tables.rs")

# Keep in step with DANGEROUS_MODULES in stdlib.rs (a test compares them).
DANGEROUS = [
    "os", "sys", "builtins", "subprocess", "importlib", "ctypes", "io", "pathlib",
    "shutil", "socket", "pickle", "marshal", "types", "gc", "inspect", "runpy", "pydoc",
    "pkgutil", "code", "multiprocessing", "_pickle", "jinja2",
]

# Standard-library modules a policy may plausibly allow.
STDLIB_ROOTS = [
    "__future__", "abc", "array", "ast", "base64", "bisect", "calendar", "cmath", "codecs",
    "collections", "collections.abc", "contextlib", "copy", "csv", "dataclasses",
    "datetime", "decimal", "difflib", "dis", "encodings", "enum", "fractions",
    "functools", "graphlib", "hashlib", "heapq", "itertools", "json", "keyword",
    "linecache", "locale", "math", "numbers", "operator", "platform", "pprint", "random",
    "re", "secrets", "statistics", "string", "struct", "textwrap", "time", "tokenize",
    "typing", "unicodedata", "uuid", "warnings", "zlib",
    # What a program under a network allowlist fetches with (policies/net.toml).
    "http", "http.client", "urllib", "urllib.error", "urllib.parse", "urllib.request",
]

# Third-party modules data.toml allows (each package's closure is summarised).
PACKAGE_ROOTS = {
    "numpy": ["numpy", "numpy.random", "numpy.linalg", "numpy.fft"],
    "pandas": ["pandas", "pandas.errors"],
    "matplotlib": [
        "matplotlib", "matplotlib.pyplot", "matplotlib.cm", "matplotlib.colors",
        "matplotlib.ticker", "matplotlib.dates",
    ],
}

WALK = r"""
import importlib, json, sys, types, warnings
warnings.simplefilter("ignore")
dangerous, names = json.loads(sys.argv[1]), json.loads(sys.argv[2])
def canon(name):
    return "os" if name == "posix" else name
def edges(name):
    mod = sys.modules.get(name) or importlib.import_module(name)
    out = []
    for attr in dir(mod):
        if attr.startswith("__"):
            continue
        try:
            value = getattr(mod, attr)
        except Exception:
            continue
        if isinstance(value, types.ModuleType):
            out.append((attr, canon(value.__name__)))
    return sorted(out)
def is_dangerous(name):
    return name in dangerous or name.split(".")[0] in dangerous
def exports(name):
    # What `from name import *` binds: __all__ when the module has one, else every name
    # without a leading underscore.
    mod = importlib.import_module(name)
    if hasattr(mod, "__all__"):
        return sorted({str(n) for n in mod.__all__})
    return sorted(n for n in dir(mod) if not n.startswith("_"))
mode = sys.argv[3]
if mode == "exports":
    print(json.dumps({n: exports(n) for n in names}))
elif mode == "shallow":
    for n in names:
        importlib.import_module(n)
    print(json.dumps({n: edges(n) for n in names}))
elif mode == "graph":
    # The roots and every standard-library module they reach, stopping at dangerous ones.
    for n in names:
        importlib.import_module(n)
    table, queue = {}, list(names)
    while queue:
        n = queue.pop(0)
        if n in table:
            continue
        table[n] = edges(n)
        for _, t in table[n]:
            if not is_dangerous(t) and t not in table:
                queue.append(t)
    print(json.dumps(table))
else:
    # Every module reachable from the package's roots; the names of edges into danger.
    for n in names:
        importlib.import_module(n)
    seen, queue, reach = set(), list(names), set()
    while queue:
        n = queue.pop(0)
        if n in seen:
            continue
        seen.add(n)
        for attr, t in edges(n):
            if is_dangerous(t):
                reach.add(attr)
            elif t not in seen:
                queue.append(t)
    print(json.dumps({"modules": len(seen), "reach": sorted(reach)}))
"""



STDLIB_DOC = """\
/// The standard library's module graph per Python version: for each module a policy may
/// allow and each standard-library module those reach (stopping at [`DANGEROUS_MODULES`]),
/// every plain (non-dunder) attribute whose value is a module. E.g. `json.codecs.sys`,
/// `statistics.random._os`, `re.enum.bltns`. `posix` is recorded as `os`. Modules listed with
/// no edges were checked and expose none.
"""

PACKAGE_DOC = """\
/// The third-party packages data.toml allows, for exactly one Python version and the
/// package versions listed (agentjail refuses a policy allowing a package whose installed
/// version differs: `policy::python`). `graph`: the edges of the modules a policy may import
/// (their own attributes only). `reach`: for each package, the attribute names through which
/// some module reachable from it (its submodules and everything they import, hundreds of
/// modules) exposes a [`DANGEROUS_MODULES`] entry; a policy allowing the package must deny
/// every one of them, the backstop for modules held where the checker cannot see them
/// (`np.zeros(1).ctypes`).
"""

def run(python, args, names, mode):
    out = subprocess.run(
        [python, *args, "-c", WALK, json.dumps(DANGEROUS), json.dumps(names), mode],
        check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout)


def describe(python):
    code = ("import sys, json; print(json.dumps(['%d.%d' % sys.version_info[:2], "
            "sys.version.split()[0]]))")
    out = subprocess.run([python, "-I", "-S", "-c", code], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout)


def package_versions(python):
    code = ("import json, importlib.metadata as m\nout = {}\n"
            f"for p in {sorted(PACKAGE_ROOTS)!r}:\n"
            "    try: out[p] = m.version(p)\n"
            "    except m.PackageNotFoundError: out[p] = None\n"
            "print(json.dumps(out))")
    out = subprocess.run([python, "-I", "-c", code], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def interpreters(given):
    """(version, full version, label, path) of every interpreter to walk."""
    paths = list(given)
    if not paths:
        try:
            root = subprocess.run(["pyenv", "root"], check=True, capture_output=True,
                                  text=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            root = os.path.expanduser("~/.pyenv")
        for v in VERSIONS:
            paths += sorted(glob.glob(os.path.join(root, "versions", f"{v}.*", "bin", f"python{v}")))
            if os.path.exists(f"/usr/bin/python{v}"):
                paths.append(f"/usr/bin/python{v}")
    found = []
    for p in paths:
        version, full = describe(p)
        label = "pyenv" if "/.pyenv/" in p or "/pyenv/" in p else p
        found.append((version, full, label, p))
    return found


def stdlib_graphs(found):
    """{version: (union graph, [build labels], union exports)}."""
    graphs = {}
    for version, full, label, path in found:
        graph = run(path, ["-I", "-S"], STDLIB_ROOTS, "graph")
        table, builds, exported = graphs.setdefault(version, ({}, [], {}))
        builds.append(f"{full} ({label})")
        for module, edges in graph.items():
            merged = {tuple(e) for e in table.get(module, [])} | {tuple(e) for e in edges}
            table[module] = sorted(merged)
        for module, names in run(path, ["-I", "-S"], STDLIB_ROOTS, "exports").items():
            exported[module] = sorted(set(exported.get(module, [])) | set(names))
    return graphs


def render_exports(exported, indent):
    pad = " " * indent
    return "".join(f"{pad}({json.dumps(m)}, &[{', '.join(json.dumps(n) for n in exported[m])}]),\n"
                   for m in sorted(exported))


def render_graph(table, indent):
    pad = " " * indent
    lines = []
    for name in sorted(table):
        edges = table[name]
        if not edges:
            lines.append(f"{pad}({json.dumps(name)}, &[]),\n")
            continue
        lines.append(f"{pad}(\n{pad}    {json.dumps(name)},\n{pad}    &[\n")
        for attr, target in edges:
            lines.append(f"{pad}        ({json.dumps(attr)}, {json.dumps(target)}),\n")
        lines.append(f"{pad}    ],\n{pad}),\n")
    return "".join(lines)


def packages(python):
    roots = [r for rs in PACKAGE_ROOTS.values() for r in rs]
    shallow = run(python, ["-I"], roots, "shallow")
    reach = {pkg: run(python, ["-I"], rs, "reach") for pkg, rs in PACKAGE_ROOTS.items()}
    version, full = describe(python)
    return version, full, package_versions(python), shallow, reach


def render(graphs, pkgs):
    out = ["// GENERATED by scripts/gen-stdlib-graph.py: do not edit by hand.\n",
           "//! The module tables the Python check judges with (see scripts/gen-stdlib-graph.py).\n\n",
           "use super::table_types::{PackageTable, StdlibTable};\n\n"]
    out.append(STDLIB_DOC)
    out.append("#[rustfmt::skip]\npub const STDLIB_TABLES: &[StdlibTable] = &[\n")
    for version in VERSIONS:
        if version not in graphs:
            continue
        table, builds, exported = graphs[version]
        out.append("    StdlibTable {\n")
        out.append(f"        python: {json.dumps(version)},\n")
        out.append(f"        built_from: {json.dumps(', '.join(sorted(builds)))},\n")
        out.append("        graph: &[\n")
        out.append(render_graph(table, 12))
        out.append("        ],\n        exports: &[\n")
        out.append(render_exports(exported, 12))
        out.append("        ],\n    },\n")
    out.append("];\n\n")
    version, full, versions, shallow, reach = pkgs
    out.append(PACKAGE_DOC)
    out.append("#[rustfmt::skip]\npub const PACKAGE_TABLE: PackageTable = PackageTable {\n")
    out.append(f"    python: {json.dumps(version)},\n")
    out.append(f"    built_from: {json.dumps('CPython ' + full + ' (' + PACKAGES_PYTHON + ')')},\n")
    out.append("    versions: &[\n")
    for pkg in PACKAGE_ROOTS:
        out.append(f"        ({json.dumps(pkg)}, {json.dumps(versions[pkg])}),\n")
    out.append("    ],\n    graph: &[\n")
    out.append(render_graph(shallow, 8))
    out.append("    ],\n    reach: &[\n")
    for pkg, roots in PACKAGE_ROOTS.items():
        out.append(f"        // Reachable from {', '.join(roots)}.\n")
        out.append(f"        (\n            {json.dumps(pkg)},\n            &[\n")
        out.extend(f"                {json.dumps(n)},\n" for n in reach[pkg]["reach"])
        out.append("            ],\n        ),\n")
    out.append("    ],\n};\n")
    return "".join(out)


def parse_table(text):
    """The tables of a generated tables.rs, read back: {"stdlib": {version: {module: set}},
    "packages": (python, {pkg: version}, {module: set}, {pkg: set})}."""
    import re
    stdlib = {}
    blocks = re.split(r"\n    StdlibTable \{\n", text.split("pub const PACKAGE_TABLE")[0])[1:]
    for block in blocks:
        version = re.search(r'python: "([0-9.]+)"', block).group(1)
        graph_text, _, exports_text = block.partition("exports: &[")
        exported = {m: set(re.findall(r'"([^"]+)"', body))
                    for m, body in re.findall(r'^\s+\("([^"]+)", &\[(.*)\]\),$', exports_text, re.M)}
        stdlib[version] = (graph_of(graph_text), exported)
    pkg = text.split("pub const PACKAGE_TABLE")[1]
    python = re.search(r'python: "([0-9.]+)"', pkg).group(1)
    versions = dict(re.findall(r'\("([a-z]+)", "([^"]+)"\),', pkg.split("graph: &[")[0]))
    graph = graph_of(pkg.split("reach: &[")[0])
    reach = {}
    for name, body in re.findall(r'\(\n\s+"([a-z]+)",\n\s+&\[\n((?:\s+"[^"]+",\n)*)', pkg.split("reach: &[")[1]):
        reach[name] = set(re.findall(r'"([^"]+)"', body))
    return {"stdlib": stdlib, "packages": (python, versions, graph, reach)}


def graph_of(text):
    import re
    table = {}
    for name in re.findall(r'^\s+\("([^"]+)", &\[\]\),$', text, re.M):
        table[name] = set()
    for name, body in re.findall(r'\(\n\s+"([^"]+)",\n\s+&\[\n((?:\s+\("[^"]+", "[^"]+"\),\n)*)', text):
        table[name] = set(re.findall(r'\("([^"]+)", "([^"]+)"\)', body))
    return table


def missing(table, computed, what):
    """What `computed` exposes that `table` does not promise."""
    problems = []
    for module, edges in sorted(computed.items()):
        if module not in table:
            problems.append(f"{what}: module {module} is not in the table")
            continue
        for attr, target in sorted({tuple(e) for e in edges} - table[module]):
            problems.append(f"{what}: {module}.{attr} is the module {target}, not in the table")
    return problems


def check(found, packages_python):
    with open(TARGET, encoding="utf-8") as f:
        tables = parse_table(f.read())
    problems = []
    for version, full, label, path in found:
        if version not in tables["stdlib"]:
            problems.append(f"CPython {full} ({label}): no table for {version}")
            continue
        graph = run(path, ["-I", "-S"], STDLIB_ROOTS, "graph")
        table, exported = tables["stdlib"][version]
        problems += missing(table, graph, f"CPython {full} ({label})")
        for module, names in sorted(run(path, ["-I", "-S"], STDLIB_ROOTS, "exports").items()):
            for name in sorted(set(names) - exported.get(module, set())):
                problems.append(f"CPython {full} ({label}): `from {module} import *` binds "
                                f"{name}, not in the table's exports")
        print(f"checked the {version} table against CPython {full} ({label})")
    python, versions, graph, reach = tables["packages"]
    if not os.path.exists(packages_python):
        print(f"SKIPPED packages: {packages_python} is missing")
    else:
        host_python, full = describe(packages_python)
        host = package_versions(packages_python)
        wanted = {p: v for p, v in versions.items()}
        if host_python != python or host != wanted:
            print(f"SKIPPED packages: {packages_python} is {host_python} with {host}; the "
                  f"table is for {python} with {wanted} (agentjail refuses policies allowing "
                  "these packages on this host until the table is regenerated)")
        else:
            roots = [r for rs in PACKAGE_ROOTS.values() for r in rs]
            shallow = run(packages_python, ["-I"], roots, "shallow")
            problems += missing(graph, shallow, "packages")
            for pkg, rs in PACKAGE_ROOTS.items():
                got = set(run(packages_python, ["-I"], rs, "reach")["reach"])
                for name in sorted(got - reach.get(pkg, set())):
                    problems.append(f"packages: {pkg} reaches a dangerous module as .{name}, "
                                    "not in the table's reach")
            print(f"checked the package table against {packages_python} ({full})")
    if problems:
        print("crates/agentjail-check/src/tables.rs does not hold on this host (run scripts/gen-stdlib-graph.py):",
              file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        sys.exit(1)


def main():
    args = sys.argv[1:]
    given, packages_python, checking = [], PACKAGES_PYTHON, False
    while args:
        a = args.pop(0)
        if a == "--check":
            checking = True
        elif a == "--python" and args:
            given.append(args.pop(0))
        elif a == "--packages-python" and args:
            packages_python = args.pop(0)
        else:
            sys.exit(f"usage: {sys.argv[0]} [--check] [--python PATH]... [--packages-python PATH]")
    found = interpreters(given)
    if checking:
        check(found, packages_python)
        return
    text = render(stdlib_graphs(found), packages(packages_python))
    with open(TARGET, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
