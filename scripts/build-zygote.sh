#!/usr/bin/env bash
# Build agentjail-zygote next to agentjail (src/zygote/mod.rs: what it is, and why it is a
# binary of its own): the zygote/ crate as a static library, linked here against libpython.
#
#   scripts/build-zygote.sh            debug build (what `cargo test` runs)
#   scripts/build-zygote.sh --release  release build
#
# Installs libpython3.11 when it is missing (Debian package).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
profile=debug
flags=()
if [ "${1:-}" = --release ]; then
    profile=release
    flags=(--release)
fi
libpython=/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0
if [ ! -e "$libpython" ]; then
    echo "build-zygote: installing libpython3.11" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q libpython3.11 >&2
fi
cargo build -q "${flags[@]}" -p agentjail-zygote
dir=target/x86_64-unknown-linux-gnu/$profile
# The Rust standard library's native dependencies (`--print native-static-libs`), linked
# dynamically: libpython brings glibc's shared libc, so this binary must use it too.
cc -pie -o "$dir/agentjail-zygote.new" "$dir/libagentjail_zygote.a" "$libpython" \
    -lgcc_s -lutil -lrt -lpthread -lm -ldl -Wl,--gc-sections -Wl,--as-needed
mv -f "$dir/agentjail-zygote.new" "$dir/agentjail-zygote"
echo "$dir/agentjail-zygote"
