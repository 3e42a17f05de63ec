#!/usr/bin/env bash
# Run each cargo-fuzz target for a bounded time and print how many inputs it executed.
#
# usage: scripts/fuzz.sh [SECONDS_PER_TARGET [TARGET...]]   (default 30, every target)
#
# The targets are built first, all in one cargo command, then run FUZZ_JOBS at a time
# (default: the number of CPUs). libFuzzer runs one process per target on one core, so each
# target gets the same SECONDS on a core of its own whichever way they are scheduled; the
# results are printed in the targets' order.
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`). libFuzzer builds use -Zsanitizer flags,
# so a nightly toolchain is used when installed; without one the script falls back to
# stable with RUSTC_BOOTSTRAP=1 and `--sanitizer none` (coverage-guided, no ASan).
#
# FUZZ_PROFILE=release builds the targets optimised (~6x the executions per second, but a
# fresh optimised ASan build of every dependency takes ~6 min on the CI machine). The
# default, dev, builds in ~3 min and runs with debug assertions and overflow checks on,
# which suits the short bounded runs CI makes; long fuzzing sessions want release.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-30}"
targets=(contract checker policy strict_json schema js_check serve_request runner_reports http_request)
named=0
if [ "$#" -gt 1 ]; then
    shift
    targets=("$@")
    named=1
fi

# A fresh machine has no cargo-fuzz: install it from crates.io (once, ~1-2 min).
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz"
    cargo install --quiet --locked cargo-fuzz
fi

if [ "${FUZZ_TOOLCHAIN:-auto}" != stable ] && rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    fuzz=(cargo +nightly fuzz)
    opts=()
    how="nightly, address sanitizer"
else
    export RUSTC_BOOTSTRAP=1
    fuzz=(cargo fuzz)
    opts=(--sanitizer none)
    how="stable + RUSTC_BOOTSTRAP=1, no sanitizer"
fi
if [ "${FUZZ_PROFILE:-dev}" = dev ]; then
    opts+=(--dev)
    how="$how, dev profile"
fi
# The fuzz build (every dependency, hyper and oxc included, with libFuzzer's instrumentation)
# is most of this script's time in CI, which starts from a clean clone each time: keep its
# target directory outside the checkout so the dependencies are built once per machine.
# Cargo's fingerprints still rebuild whatever changed, this project's crates included.
# Cargo's fingerprints rebuild whatever changed, and this project's crates (every package
# named agentjail*) always: their fingerprints are removed first, so a checkout older than
# the cache's last build can never look up to date to cargo.
target_dir="${FUZZ_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agentjail/fuzz-target}"
mkdir -p "$target_dir"
find "$target_dir" -mindepth 3 -maxdepth 4 -path '*/.fingerprint/agentjail*' -prune -exec rm -rf {} +
opts+=(--target-dir "$target_dir")
jobs=${FUZZ_JOBS:-$(nproc)}
echo "fuzzing with ${how}; ${secs}s per target, $jobs at a time; build in $target_dir"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Every target in one command (no name: cargo fuzz builds them all), or each one named.
if [ "$named" = 0 ]; then
    build=(all)
else
    build=("${targets[@]}")
fi
for t in "${build[@]}"; do
    name=()
    [ "$t" = all ] || name=("$t")
    if ! "${fuzz[@]}" build "${opts[@]}" "${name[@]}" --fuzz-dir fuzz >"$work/build.log" 2>&1; then
        tail -50 "$work/build.log"
        echo "fuzz: the build failed" >&2
        exit 1
    fi
done
fuzz_one() {
    local t=$1
    # -rss_limit_mb guards the host; -max_len keeps single inputs near the contract's scale.
    if "${fuzz[@]}" run "${opts[@]}" "$t" --fuzz-dir fuzz -- -max_total_time="$secs" -max_len=65536 \
        -rss_limit_mb=2048 -print_final_stats=1 >"$work/$t.log" 2>&1; then
        echo ok >"$work/$t.verdict"
    else
        echo failed >"$work/$t.verdict"
    fi
}
running=0
for t in "${targets[@]}"; do
    if [ "$running" -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
    fuzz_one "$t" &
    running=$((running + 1))
done
wait

status=0
for t in "${targets[@]}"; do
    log=$work/$t.log
    if [ "$(cat "$work/$t.verdict" 2>/dev/null)" = ok ]; then
        verdict=ok
    else
        verdict="FAILED (see artifacts in fuzz/artifacts/$t)"
        status=1
    fi
    execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo "?")
    speed=$(grep -Eo 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo "?")
    printf '%-14s %-6s execs=%s exec/s=%s\n' "$t" "$verdict" "$execs" "$speed"
    if [ "$verdict" != ok ]; then tail -30 "$log"; fi
done
exit "$status"
