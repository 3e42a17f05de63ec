#!/usr/bin/env bash
# soak.sh [RUNS] — run RUNS mixed agentjail runs (every way a run can end) with 4 in flight
# and RUNS/4 attacked session calls (scripts/soak-sessions.py), RUNS/20 workspaces
# (scripts/soak-workspaces.py) and RUNS/50 rounds of HTTP callers (scripts/soak-http.py),
# then compare the host's
# processes, mounts, cgroups and temp entries with before.
# Prints the figures; exits non-zero when anything was left behind or a run misbehaved.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000}
bin=${AGENTJAIL_BIN:-target/x86_64-unknown-linux-gnu/release/agentjail}
[ -x "$bin" ] || cargo build --release --quiet
data=policies/data.toml
work=$(mktemp -d /tmp/soak.XXXXXX)
trap 'rm -rf "$work"' EXIT

snapshot() {
    {
        echo "## processes owned by the jail uid (host nobody when launched as root)"
        ps -e -o uid=,comm= | awk '$1 == 65534 {print $2}' | sort | uniq -c
        echo "## mounts"
        awk '{print $5, $9}' /proc/self/mountinfo | sort
        echo "## cgroups"
        find /sys/fs/cgroup -type d -name 'agentjail-*' 2>/dev/null | { grep -v agentjail-supervisor || true; } | sort
        echo "## temp entries"
        ls -A /tmp /dev/shm /var/tmp 2>/dev/null | { grep -i jail || true; } | sort
    } > "$1"
}

# One case per way a run ends: "expected exit code|command".
cases=(
    "0|$bin exec -- /bin/true"
    "3|$bin exec --policy $data -- /bin/sh -c 'exit 3'"
    "137|$bin exec --policy $data -- /bin/sh -c 'kill -9 \$\$'"
    "124|$bin exec --time-limit 0.05 -- /bin/sleep 5"
    "124|$bin exec --output-limit 100 -- /usr/bin/python3 -I -S -c 'print(\"x\" * 1000)'"
    "124|$bin exec -- /usr/bin/python3 -I -S -c 'import socket; socket.socket()'"
    "125|$bin exec -- /nonexistent"
    "124|$bin exec --policy $data --time-limit 0.3 -- /bin/sh -c '(setsid sleep 100 &); trap \"\" TERM; kill -STOP \$\$'"
    "124|$bin exec --memory-limit 32MiB -- /usr/bin/python3 -I -S -c 'b = bytearray(1 << 30)'"
    "0|$bin run examples/incident/action.json"
    "1|$bin run examples/incident/variants/import_os.json"
    "1|$bin run examples/incident/variants/sample_size_zero.json"
    "2|$bin run --policy /nonexistent.toml examples/incident/action.json"
)

snapshot "$work/before"
start=$(date +%s.%N)
run_case() {
    local i=$1 c=${cases[$(( $1 % ${#cases[@]} ))]}
    local want=${c%%|*} cmd=${c#*|} got=0
    eval "$cmd" > /dev/null 2>&1 < /dev/null || got=$?
    if [ "$got" != "$want" ]; then echo "run $i: exit $got, expected $want: $cmd"; fi
}
export -f run_case
bad=0
for ((i = 0; i < runs; i += 4)); do
    for j in 0 1 2 3; do
        [ $((i + j)) -lt "$runs" ] || break
        run_case $((i + j)) > "$work/out.$j" &
    done
    wait
    for j in 0 1 2 3; do
        if [ -s "$work/out.$j" ]; then cat "$work/out.$j"; bad=$((bad + 1)); fi
        rm -f "$work/out.$j"
    done
done
# Sessions too: one `serve`, a quarter as many session calls, every session attacked by a
# process its first call left running (scripts/soak-sessions.py says how).
/usr/bin/python3 scripts/soak-sessions.py "$bin" $(( (runs + 3) / 4 )) || bad=$((bad + 1))
# Workspaces: one `serve` under policies/workspace.toml, one workspace per 20 runs, every
# kind of command (scripts/soak-workspaces.py says which), some left for SIGTERM to close.
/usr/bin/python3 scripts/soak-workspaces.py "$bin" $(( (runs + 19) / 20 )) || bad=$((bad + 1))
# HTTP: `serve --http` on loopback with and without tokens, one round per 50 runs (a run
# and a session call as one token, another token and no token refused, tokenless sessions
# refused), then clients that never read past a 1 MiB --unread-budget
# (scripts/soak-http.py says what is checked; ~10 s at 1000 runs).
/usr/bin/python3 scripts/soak-http.py "$bin" $(( (runs + 49) / 50 )) || bad=$((bad + 1))
end=$(date +%s.%N)
# A server exits only once its jails' processes are gone and reaped (tests/frontends/serve
# /workspace.rs, sigterm_exits_only_after_every_workspace_process_is_gone), so the first
# look must find the host as before. The loop stays as a diagnostic: it compares again
# every 0.2 s for at most 10 s and prints how long the host took to settle (0 ms unless
# something exited late); what is still there after that was left behind, and fails the soak.
settle=0
while :; do
    snapshot "$work/after"
    leftovers=$(diff "$work/before" "$work/after" | grep -c '^>' || true)
    if [ "$leftovers" = 0 ] || [ "$settle" -ge 50 ]; then break; fi
    settle=$((settle + 1))
    sleep 0.2
done
echo "soak: the host settled $(( settle * 200 )) ms after the last server exited"
printf 'soak: %d runs (%d kinds of ending) in %.1f s, %d misbehaved, %d leftover lines\n' \
    "$runs" "${#cases[@]}" "$(echo "$end - $start" | bc)" "$bad" "$leftovers"
if [ "$leftovers" != 0 ]; then diff "$work/before" "$work/after" || true; fi
[ "$bad" = 0 ] && [ "$leftovers" = 0 ]
