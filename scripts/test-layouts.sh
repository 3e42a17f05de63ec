#!/usr/bin/env bash
# The escape-test suites and the seed job, unchanged, inside the GPU-node / pod mount layout
# (tests/gpu_layout.sh: mounts beneath /usr, one read-only, one suid- and device-capable,
# one writable bind), built in a private mount namespace so the host's mounts never change.
# Inside a user namespace the kernel locks those mounts to /usr: every jail's bind of /usr
# is then the recursive, read-only-all-the-way-down one (crates/agentjail-jail/src/mount.rs).
#
#   scripts/test-layouts.sh        (root; scripts/test.sh runs it as a stage)
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
[ "$(id -u)" = 0 ] || { echo "test-layouts: needs root (unshare --mount)" >&2; exit 1; }
# test executables from cargo's JSON messages (only test artifacts: "test":true)
exe() {
    cargo test --no-run --test "$1" --message-format=json 2>/dev/null \
        | grep -E '"profile":\{[^}]*"test":true' | grep -o '"executable":"[^"]*"' | cut -d'"' -f4 | tail -n1
}
rc=0
bin=target/x86_64-unknown-linux-gnu/release/agentjail
[ -x "$bin" ] || cargo build --release --quiet || exit 1
out=$(unshare --mount --propagation private bash -c ". tests/gpu_layout.sh; exec $bin run examples/incident/action.json")
if printf '%s' "$out" | python3 -c '
import json, sys
r = json.load(sys.stdin)
o = r.get("output") or {}
ok = r["stop_reason"] == "success" and o.get("incident_severity") == "P1" and o.get("sample_size") == 60 \
    and o.get("avg_latency_ms") == 167.0 and o.get("p95_latency_ms") == 187.0
sys.exit(0 if ok else 1)'; then
    echo "ok   - the seed job on the GPU-node layout: P1, sample 60, avg 167.0, p95 187.0"
else
    echo "FAIL - the seed job on the GPU-node layout: $(printf '%s' "$out" | head -c 600)"
    rc=1
fi
# The escape suites are modules of the jail test binary (tests/jail): each picked by filters.
t=$(exe jail)
[ -x "$t" ] || { echo "FAIL - could not build the jail tests"; exit 1; }
for suite in "python_attacks:: twins::python::" "redteam::"; do
    # CI=true: a suite that needs a feature must fail, never skip.
    if CI=true unshare --mount --propagation private bash -c ". tests/gpu_layout.sh; exec $t --test-threads=2 -q $suite"; then
        echo "ok   - $suite holds inside the GPU-node layout (root and nobody variants)"
    else
        echo "FAIL - $suite inside the GPU-node layout"
        rc=1
    fi
done
# Nothing of the layout may have reached the host's namespace.
if grep -qE ' /usr/local(/nvidia)? | /usr/share/doc | /usr/lib/x86_64-linux-gnu/audit ' /proc/self/mountinfo; then
    echo "FAIL - a layout mount is visible in the host's namespace"
    rc=1
fi
exit $rc
