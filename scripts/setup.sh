#!/usr/bin/env bash
# Install what agentjail's build, main job and tests need on a fresh Debian machine of this
# kind (Rust toolchain already present). Idempotent: installs only what is missing. The VM
# test (scripts/vm.sh setup) and the benchmark (bubblewrap) install their own extras.
#
#   scripts/setup.sh               the build's, main job's and tests' packages and venvs, and
#                                  the release build with agentjail-zygote (serve's default)
#   scripts/setup.sh --languages   also the toolchains of the languages beside Python (issue
#                                  39, `[languages.<lang>]` in a policy): gcc and g++ (c, cpp),
#                                  OpenJDK 17 (java), Go (go), rustc (rust), node (javascript);
#                                  Debian packages with --no-install-recommends, each only when
#                                  its binary is missing (a few file tests when all are there)
set -euo pipefail
cd "$(dirname "$0")/.."
languages=0
for arg in "$@"; do
    case $arg in
        --languages) languages=1 ;;
        *) echo "usage: scripts/setup.sh [--languages]" >&2; exit 2 ;;
    esac
done
need=()
if [ "$languages" = 1 ]; then
    # The paths the shipped policies' [languages.*] tables run (bash is Debian's essential
    # /usr/bin/bash; /usr/bin/node is node 20 where the project's node came from NodeSource,
    # Debian's own nodejs package otherwise).
    [ -x /usr/bin/gcc ] || need+=(gcc libc6-dev)
    [ -x /usr/bin/g++ ] || need+=(g++)
    [ -x /usr/lib/jvm/java-17-openjdk-amd64/bin/javac ] || need+=(openjdk-17-jdk-headless)
    [ -x /usr/bin/go ] || need+=(golang-go)
    [ -x /usr/bin/rustc ] || need+=(rustc)
    [ -x /usr/bin/node ] || need+=(nodejs)
fi
[ -x /usr/bin/python3 ] || need+=(python3)
command -v gcc >/dev/null || need+=(gcc libc6-dev)
# agentjail-zygote (scripts/build-zygote.sh) embeds the interpreter the jails run: the
# libpython of whichever 3.N /usr/bin/python3 is.
pyver=$(readlink -f /usr/bin/python3 2>/dev/null | sed -n 's|.*/python\(3\.[0-9]*\)$|\1|p')
if [ -n "$pyver" ]; then
    [ -e "/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)/libpython$pyver.so.1.0" ] ||
        need+=("libpython$pyver")
fi
command -v setpriv >/dev/null || need+=(util-linux)
command -v bc >/dev/null || need+=(bc)
command -v ps >/dev/null || need+=(procps)
# tests/frontends/zygote.rs attaches strace to the zygote's template to count the landlock
# rulesets it makes (one per jail).
[ -x /usr/bin/strace ] || need+=(strace)
# The brokered-credential tests make their CAs and certificates with the openssl command.
command -v openssl >/dev/null || need+=(openssl)
# policies/data.toml allows numpy, pandas and matplotlib; the checker's tests run programs
# using them (site-enabled: Debian installs them in /usr/lib/python3/dist-packages).
for pkg in numpy pandas matplotlib; do
    /usr/bin/python3 -I -c "import $pkg" 2>/dev/null || need+=("python3-$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "setup: missing ${need[*]}; run as root or install them" >&2
        exit 1
    fi
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi
if ! command -v cargo >/dev/null && ! [ -x "$HOME/.cargo/bin/cargo" ]; then
    echo "setup: no Rust toolchain (cargo) found; install rustup first" >&2
    exit 1
fi
# A venv of the checkout, NAME (.venv-mcp, .venv-py): its own directory, or, when
# AGENTJAIL_VENV_CACHE is set (.ci/run sets it for CI's clean clone: building both venvs
# from PyPI took ~2 min of every run), a link to $AGENTJAIL_VENV_CACHE/NAME-HASH, HASH being
# the pins' digest, so a venv is made once per set of pins on the machine. Prints the
# directory to make it in (a venv's scripts name the path it was made at: the real one).
venv_dir() {
    local name=$1 hash=$2
    if [ -n "${AGENTJAIL_VENV_CACHE:-}" ] && { [ -L "$name" ] || [ ! -e "$name" ]; }; then
        mkdir -p "$AGENTJAIL_VENV_CACHE"
        ln -sfn "$AGENTJAIL_VENV_CACHE/${name#.}-$hash" "$name"
        echo "$AGENTJAIL_VENV_CACHE/${name#.}-$hash"
    else
        echo "$name"
    fi
}
# The official MCP Python client (mcp==2.3.0, every dependency pinned in
# crates/agentjail-mcp/tests/mcp/requirements.txt) in a venv of the project's own,
# .venv-mcp/ (gitignored): crates/agentjail-mcp/tests/mcp.rs, examples/agent and
# scripts/bench.sh drive `agentjail mcp` with it. Rebuilt only when missing or when its
# pins changed.
venv=.venv-mcp
req=crates/agentjail-mcp/tests/mcp/requirements.txt
stamp=$venv/.requirements.sha256
want=$(sha256sum "$req" | cut -d' ' -f1)
venv_real=$(venv_dir "$venv" "$want")
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || ! "$venv/bin/python" -c 'import mcp' 2>/dev/null; then
    [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null || {
        [ "$(id -u)" = 0 ] || { echo "setup: python3-venv is missing; run as root or install it" >&2; exit 1; }
        apt-get update -q >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-venv >/dev/null
    }
    rm -rf "$venv_real"
    /usr/bin/python3 -m venv "$venv_real"
    if ! "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$req"; then
        rm -rf "$venv_real"
        echo "setup: cannot install the MCP client from PyPI (pip install -r $req failed):" >&2
        echo "setup: is https://pypi.org reachable from here (proxy: PIP_INDEX_URL / HTTPS_PROXY)?" >&2
        exit 1
    fi
    echo "$want" >"$stamp"
fi
# smolagents' own MCP client (ToolCollection.from_mcp: smolagents 1.26.0, mcpadapt 0.1.19,
# mcp 1.30.0, every dependency pinned in crates/agentjail-mcp/tests/mcp/requirements-smolagents.txt)
# in .venv-smolmcp/ (gitignored): crates/agentjail-mcp/tests/mcp.rs drives `agentjail mcp`
# with it as REFERENCE's smolagents snippet does. Its own venv: mcpadapt does not import
# under mcp 2.x, which .venv-mcp pins.
venv=.venv-smolmcp
req=crates/agentjail-mcp/tests/mcp/requirements-smolagents.txt
stamp=$venv/.requirements.sha256
want=$(sha256sum "$req" | cut -d' ' -f1)
venv_real=$(venv_dir "$venv" "$want")
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || ! "$venv/bin/python" -c 'import mcpadapt.core' 2>/dev/null; then
    rm -rf "$venv_real"
    /usr/bin/python3 -m venv "$venv_real"
    if ! "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$req"; then
        rm -rf "$venv_real"
        echo "setup: cannot install smolagents' MCP client from PyPI (pip install -r $req failed)" >&2
        exit 1
    fi
    echo "$want" >"$stamp"
fi
# The Python client's test venv, .venv-py/ (gitignored): pytest, smolagents, langchain-core and
# ray (the fleet's tests: an 80 MB wheel; the venv grows to ~410 MB) pinned in
# python/requirements-test.txt; verl pinned (by hash) in python/requirements-verl.txt, without
# its dependencies (its SandboxFusion client needs only requests); then the package itself,
# editable (`pip install -e ./python`, no build isolation: setuptools is among the pins).
# scripts/test-python.sh runs its tests.
pyvenv=.venv-py
pyreq=python/requirements-test.txt
pyverl=python/requirements-verl.txt
pystamp=$pyvenv/.requirements.sha256
pywant=$(cat "$pyreq" "$pyverl" python/pyproject.toml | sha256sum | cut -d' ' -f1)
pyvenv_real=$(venv_dir "$pyvenv" "$pywant")
# (Only the pins decide a rebuild: a cached venv whose editable install points at a clone
# that is gone cannot import agentjail, and is fixed below in a second, not rebuilt.)
if [ "$(cat "$pystamp" 2>/dev/null)" != "$pywant" ] || ! "$pyvenv/bin/python" -c 'import pytest' 2>/dev/null; then
    rm -rf "$pyvenv_real"
    /usr/bin/python3 -m venv "$pyvenv_real"
    if ! "$pyvenv/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$pyreq" ||
        ! "$pyvenv/bin/pip" install --quiet --disable-pip-version-check --no-input --no-deps -r "$pyverl" ||
        ! "$pyvenv/bin/pip" install --quiet --disable-pip-version-check --no-input --no-build-isolation --no-deps -e ./python; then
        rm -rf "$pyvenv_real"
        echo "setup: cannot install the Python client's test venv (pip install -r $pyreq, -r $pyverl, -e ./python failed):" >&2
        echo "setup: is https://pypi.org reachable from here (proxy: PIP_INDEX_URL / HTTPS_PROXY)?" >&2
        exit 1
    fi
    echo "$pywant" >"$pystamp"
fi
# The package must be this checkout's (a cached venv, or a checkout moved, has another's):
# its editable install is made again, alone, when `import agentjail` finds another file.
mine=$PWD/python/src/agentjail/__init__.py
if [ "$("$pyvenv/bin/python" -c 'import agentjail; print(agentjail.__file__)' 2>/dev/null)" != "$mine" ]; then
    if ! "$pyvenv/bin/pip" install --quiet --disable-pip-version-check --no-input --no-build-isolation --no-deps -e ./python ||
        [ "$("$pyvenv/bin/python" -c 'import agentjail; print(agentjail.__file__)' 2>/dev/null)" != "$mine" ]; then
        echo "setup: $pyvenv does not import agentjail from $mine" >&2
        exit 1
    fi
fi
# agentjail-zygote next to the release agentjail, for /usr/bin/python3: `serve` forks its
# Python jails from it by default (without it every job starts a fresh interpreter, and serve
# says so). build-zygote.sh --release is `cargo build --release` with the template linked
# after it, so the release binaries are built here too (main-job.sh's build is then free).
if ! scripts/build-zygote.sh --release >/dev/null; then
    echo "setup: cannot build agentjail-zygote (scripts/build-zygote.sh --release failed, above)" >&2
    exit 1
fi
echo "setup: ok"
