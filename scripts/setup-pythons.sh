#!/usr/bin/env bash
# Copy this machine's pyenv builds of Python 3.10 to 3.13 to /opt/agentjail-py/3.N, where
# the tests bind them read-only into jails (a jail never sees /root, where pyenv keeps them).
#
#   scripts/setup-pythons.sh           make or refresh the copies (cached: a version whose
#                                      copy was made from the same build is left alone)
#   scripts/setup-pythons.sh --clean   remove them
#   scripts/setup-pythons.sh --list    print the interpreters that are ready, one a line
#   scripts/setup-pythons.sh --policy V write the embedded default policy for the copy of
#                                      Python V (its interpreter, its prefix bound read-only)
#                                      to target/agentjail-py/V.toml and print that path
#
# AGENTJAIL_TEST_PYTHONS overrides /opt/agentjail-py. Each copy holds what a jail runs:
# bin/python3.N (and python3 -> python3.N), lib/libpython3.N.so.1.0 (the pyenv builds are
# --enable-shared), and the standard library without its tests, site-packages, IDLE, tkinter
# and build files. The binary's RUNPATH, the pyenv prefix's lib/, is rewritten to
# $ORIGIN/../lib in place (the same string table entry, padded with NULs, as chrpath does),
# so the copy loads its own libpython wherever it is. CPython finds its prefix by looking
# for lib/python3.N/os.py upwards from the binary, so the copy imports its own stdlib.
set -euo pipefail
dest=${AGENTJAIL_TEST_PYTHONS:-/opt/agentjail-py}
versions=(3.10 3.11 3.12 3.13)

case "${1:-}" in
--clean)
    rm -rf -- "$dest"
    exit 0
    ;;
--list)
    for v in "${versions[@]}"; do
        [ -x "$dest/$v/bin/python$v" ] && [ -e "$dest/$v/.agentjail-source" ] &&
            echo "$dest/$v/bin/python$v"
    done
    exit 0
    ;;
--policy)
    v=${2:?usage: $0 --policy 3.N}
    [ -x "$dest/$v/bin/python$v" ] || { echo "setup-pythons: no $dest/$v (run $0 first)" >&2; exit 1; }
    cd "$(dirname "$0")/.."
    mkdir -p target/agentjail-py
    out=target/agentjail-py/$v.toml
    sed -e "s|^python = \"/usr/bin/python3\"|python = \"$dest/$v/bin/python3\"|" \
        -e "s|^read_only = \[\"/usr\"|read_only = [\"$dest/$v\", \"/usr\"|" \
        -e "s|^name = \"default\"|name = \"default-python$v\"|" policies/default.toml >"$out"
    grep -q "^python = \"$dest/$v/bin/python3\"" "$out" && grep -q "^read_only = \[\"$dest/$v\"" "$out" ||
        { echo "setup-pythons: policies/default.toml changed shape; cannot write $out" >&2; exit 1; }
    echo "$PWD/$out"
    exit 0
    ;;
"") ;;
*)
    echo "usage: $0 [--clean|--list|--policy 3.N]" >&2
    exit 2
    ;;
esac

root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
missing=()
mkdir -p -m 755 "$dest"
for v in "${versions[@]}"; do
    src=$(find "$root/versions" -maxdepth 1 -name "$v.*" 2>/dev/null | sort -V | tail -n 1)
    if [ -z "$src" ] || [ ! -x "$src/bin/python$v" ]; then
        missing+=("$v")
        continue
    fi
    want="$src $(stat -c '%s %Y' "$src/bin/python$v" "$src/lib/libpython$v.so.1.0" | tr '\n' ' ')"
    if [ "$(cat "$dest/$v/.agentjail-source" 2>/dev/null)" = "$want" ]; then
        continue
    fi
    if [ ! -e "$src/lib/libpython$v.so.1.0" ]; then
        echo "setup-pythons: $src is not built with --enable-shared (no lib/libpython$v.so.1.0)" >&2
        missing+=("$v")
        continue
    fi
    tmp="$dest/.$v.partial"
    rm -rf -- "$tmp"
    mkdir -p -m 755 "$tmp/bin" "$tmp/lib"
    trap 'rm -rf -- "$tmp"' EXIT
    cp "$src/bin/python$v" "$tmp/bin/python$v"
    ln -s "python$v" "$tmp/bin/python3"
    cp "$src/lib/libpython$v.so.1.0" "$tmp/lib/"
    ln -s "libpython$v.so.1.0" "$tmp/lib/libpython$v.so"
    tar -C "$src/lib" -cf - \
        --exclude="python$v/test" --exclude="python$v/site-packages" \
        --exclude="python$v/idlelib" --exclude="python$v/tkinter" \
        --exclude="python$v/turtledemo" --exclude="python$v/ensurepip" \
        --exclude="python$v/config-*" --exclude="python$v/lib2to3/tests" \
        "python$v" | tar -C "$tmp/lib" -xf -
    mkdir -m 755 "$tmp/lib/python$v/site-packages"
    /usr/bin/python3 - "$tmp/bin/python$v" "$src/lib" <<'EOF'
import sys
path, old = sys.argv[1], sys.argv[2].encode()
data = bytearray(open(path, "rb").read())
needle = b"\0" + old + b"\0"
at = data.find(needle)
if at < 0 or data.find(needle, at + 1) >= 0:
    sys.exit(f"setup-pythons: {path}: expected exactly one RUNPATH entry {old.decode()}")
new = b"$ORIGIN/../lib"
if len(new) > len(old):
    sys.exit(f"setup-pythons: {path}: RUNPATH {old.decode()} too short to rewrite")
data[at + 1:at + 1 + len(old)] = new + b"\0" * (len(old) - len(new))
open(path, "wb").write(data)
EOF
    chmod -R a+rX,go-w "$tmp"
    echo "$want" >"$tmp/.agentjail-source"
    # The version's copy is replaced whole, never left half made.
    rm -rf -- "$dest/$v"
    mv "$tmp" "$dest/$v"
    trap - EXIT
    echo "setup-pythons: $dest/$v from $src" >&2
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup-pythons: no usable pyenv build of ${missing[*]} under $root/versions (pyenv install ${missing[*]/%/.x} with --enable-shared)" >&2
    exit 1
fi
