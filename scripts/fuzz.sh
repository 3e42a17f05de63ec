#!/usr/bin/env bash
# Run each cargo-fuzz target for a bounded time and print how many inputs it executed.
#
# usage: scripts/fuzz.sh [SECONDS_PER_TARGET [TARGET...]]   (default 30, every target)
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
if [ "$#" -gt 1 ]; then
    shift
    targets=("$@")
fi

# A fresh machine has no cargo-fuzz: install it from crates.io (once, ~1-2 min).
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz"
    cargo install --quiet --locked cargo-fuzz
fi

if [ "${FUZZ_TOOLCHAIN:-auto}" != stable ] && rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    run=(cargo +nightly fuzz run)
    how="nightly, address sanitizer"
else
    export RUSTC_BOOTSTRAP=1
    run=(cargo fuzz run --sanitizer none)
    how="stable + RUSTC_BOOTSTRAP=1, no sanitizer"
fi
if [ "${FUZZ_PROFILE:-dev}" = dev ]; then
    run+=(--dev)
    how="$how, dev profile"
fi
# The fuzz build (every dependency, hyper and oxc included, with libFuzzer's instrumentation)
# is most of this script's time in CI, which starts from a clean clone each time: keep its
# target directory outside the checkout so the dependencies are built once per machine.
# Cargo's fingerprints still rebuild whatever changed, this project's crates included.
target_dir="${FUZZ_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agentjail/fuzz-target}"
mkdir -p "$target_dir"
run+=(--target-dir "$target_dir")
echo "fuzzing with ${how}; ${secs}s per target; build in $target_dir"

status=0
for t in "${targets[@]}"; do
    log="$(mktemp)"
    # -rss_limit_mb guards the host; -max_len keeps single inputs near the contract's scale.
    if "${run[@]}" "$t" --fuzz-dir fuzz -- -max_total_time="$secs" -max_len=65536 \
        -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
        verdict=ok
    else
        verdict="FAILED (see artifacts in fuzz/artifacts/$t)"
        status=1
    fi
    execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo "?")
    speed=$(grep -Eo 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo "?")
    printf '%-14s %-6s execs=%s exec/s=%s\n' "$t" "$verdict" "$execs" "$speed"
    if [ "$verdict" != ok ]; then tail -30 "$log"; fi
    rm -f "$log"
done
exit "$status"
