#!/usr/bin/env bash
# Build agentjail-zygote next to agentjail (crates/agentjail-engine/src/zygote/mod.rs: what
# it is, and why it is a
# binary of its own): the zygote/ crate as a static library, linked here against libpython.
#
#   scripts/build-zygote.sh [--release] [--python PATH]
#
# PATH is the interpreter the policies that `serve --zygote` runs name (`interpreter.python`;
# default /usr/bin/python3, the embedded default's). Its version (3.10 to 3.13) is read from
# the link chain (python3 -> python3.N) or the one lib/python3.N beside its bin/, as the
# policy loader does, and the template embeds that installation's shared libpython:
#   - under /usr (Debian/Ubuntu): /usr/lib/<multiarch>/libpython3.N.so.1.0 (the libpython3.N
#     package is installed when it is missing);
#   - any other prefix (pyenv, /opt, /usr/local): <prefix>/lib/libpython3.N.so.1.0, found
#     at run time through the binary's RUNPATH. A Python built without --enable-shared has
#     no libpython to embed: this says so and `serve --zygote` cannot be used with it.
# The template refuses a policy whose interpreter is not that file (serve --zygote says so).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
profile=debug
flags=()
python=/usr/bin/python3
while [ $# -gt 0 ]; do
    case "$1" in
    --release)
        profile=release
        flags=(--release)
        ;;
    --python)
        python=${2:?--python needs a path}
        shift
        ;;
    *)
        echo "usage: $0 [--release] [--python PATH]" >&2
        exit 2
        ;;
    esac
    shift
done
die() {
    echo "build-zygote: $*" >&2
    exit 1
}
[ -e "$python" ] || die "$python does not exist"
binary=$(readlink -f -- "$python")
prefix=$(dirname -- "$(dirname -- "$binary")")
# The version: a python3.N on the link chain, else the one lib/python3.N of the prefix.
version=
link=$python
for _ in $(seq 40); do
    name=$(basename -- "$link")
    if [[ $name =~ ^python(3\.[0-9]+)$ ]]; then
        version=${BASH_REMATCH[1]}
        break
    fi
    [ -L "$link" ] || break
    target=$(readlink -- "$link")
    case $target in /*) link=$target ;; *) link=$(dirname -- "$link")/$target ;; esac
done
if [ -z "$version" ]; then
    mapfile -t found < <(find "$prefix/lib" -maxdepth 2 -path "$prefix/lib/python3.*/os.py" 2>/dev/null |
        sed -E 's|.*/python(3\.[0-9]+)/os.py|\1|' | sort -u)
    [ ${#found[@]} = 1 ] || die "cannot tell which Python $python is (lib/python3.N beside it: ${found[*]:-none})"
    version=${found[0]}
fi
[[ $version =~ ^3\.(10|11|12|13)$ ]] || die "$python is Python $version; agentjail supports 3.10 to 3.13"
[ -f "$prefix/lib/python$version/os.py" ] || die "$prefix/lib/python$version has no standard library (os.py): is $python a CPython installation?"
rpath=()
if [ "$prefix" = /usr ]; then
    multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
    libpython=/usr/lib/$multiarch/libpython$version.so.1.0
    if [ ! -e "$libpython" ]; then
        echo "build-zygote: installing libpython$version" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "libpython$version" >&2 ||
            die "no $libpython and libpython$version could not be installed"
    fi
else
    libpython=$prefix/lib/libpython$version.so.1.0
    [ -e "$libpython" ] || die "$python has no shared libpython ($libpython): it was built without --enable-shared, so the zygote cannot embed it; serve then starts a fresh interpreter per job (it says so), or use a Python built with --enable-shared"
    rpath=(-Wl,-rpath,"$prefix/lib")
fi
# The zygote is built in the same cargo invocation, and so with the same features of every
# dependency, as the binaries it runs beside: cargo resolves features over the packages a
# command selects, and `-p agentjail-zygote` alone chose other features of libc, serde,
# regex, clap... than the workspace does, so every dependency was compiled a second time
# (68 s of CI's 2-core run for the debug build, ~2 min for the release one). Debug: the
# template sits beside the binary `cargo test` runs, so the same selection as `cargo test`
# (every test target, dev-dependencies included; the zygote's lib has test = false: its
# `main` is the program's); release: the same as `cargo build --release`. Cargo's
# fingerprints make the part already built free.
if [ "$profile" = release ]; then
    what=(--workspace)
else
    what=(--workspace --lib --bins --tests)
fi
AGENTJAIL_ZYGOTE_PYTHON=$python AGENTJAIL_ZYGOTE_PYTHON_BINARY=$binary \
    AGENTJAIL_ZYGOTE_PYTHON_HOME=$prefix AGENTJAIL_ZYGOTE_PYTHON_VERSION=$version \
    cargo build -q "${flags[@]}" "${what[@]}"
dir=target/x86_64-unknown-linux-gnu/$profile
# The Rust standard library's native dependencies (`--print native-static-libs`), linked
# dynamically: libpython brings glibc's shared libc, so this binary must use it too.
cc -pie -o "$dir/agentjail-zygote.new" "$dir/libagentjail_zygote.a" "$libpython" "${rpath[@]}" \
    -lgcc_s -lutil -lrt -lpthread -lm -ldl -Wl,--gc-sections -Wl,--as-needed
mv -f "$dir/agentjail-zygote.new" "$dir/agentjail-zygote"
echo "build-zygote: $dir/agentjail-zygote embeds Python $version ($binary)" >&2
echo "$dir/agentjail-zygote"
