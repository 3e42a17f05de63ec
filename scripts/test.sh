#!/usr/bin/env bash
# The project's test command (README, and .ci/run calls it).
#
#   scripts/test.sh          everything: lint, unit + integration tests (jail tests as root
#                            and as nobody), the cgroup v2 VM tests, fuzz smoke, soak, bench smoke
#   QUICK=1 scripts/test.sh  lint + cargo tests only
#
# Installs what it needs (Debian packages) itself. Fails when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TERM_COLOR=never

step() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }

step "setup"
scripts/setup.sh

step "format and lints"
cargo fmt --check
cargo clippy --all-targets --quiet -- -D warnings

step "build"
cargo build --release --quiet

step "unit and integration tests (jail tests as root and as nobody)"
cargo test --release --quiet -- --test-threads=2 2>&1 | tee target/test-output.txt
grep -q '^test result: ' target/test-output.txt

if [ "${QUICK:-0}" = 1 ]; then
    exit 0
fi

for extra in scripts/vm-test.sh scripts/fuzz.sh scripts/soak.sh scripts/bench.sh; do
    if [ -x "$extra" ]; then
        step "$extra"
        case "$extra" in
            scripts/fuzz.sh) "$extra" 45 ;;
            scripts/soak.sh) "$extra" 1000 ;;
            scripts/bench.sh) BENCH_SHORT=1 BENCH_NO_FAIL=1 "$extra" ;;
            *) "$extra" ;;
        esac
    fi
done
step "all tests passed"
