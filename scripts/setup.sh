#!/usr/bin/env bash
# Install what agentjail's build, main job and tests need on a fresh Debian machine of this
# kind (Rust toolchain already present). Idempotent: installs only what is missing. The VM
# test (scripts/vm.sh setup) and the benchmark (bubblewrap) install their own extras.
set -euo pipefail
need=()
[ -x /usr/bin/python3 ] || need+=(python3)
command -v gcc >/dev/null || need+=(gcc libc6-dev)
command -v setpriv >/dev/null || need+=(util-linux)
command -v bc >/dev/null || need+=(bc)
command -v ps >/dev/null || need+=(procps)
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
echo "setup: ok"
