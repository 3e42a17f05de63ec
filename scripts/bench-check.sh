#!/usr/bin/env bash
# Time the static check on a 2.4 KB action (release build, median of many runs) next to
# CPython's ast.parse of the same source, measured in the same run. Target: <= 0.1 ms.
#
# usage: scripts/bench-check.sh [SOURCE.py] [ITERATIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
src="${1:-tests/data/bench_main.py}"
iters="${2:-5000}"
python="${PYTHON:-/usr/bin/python3}"

line=$(BENCH_SOURCE="$src" BENCH_ITERS="$iters" \
    cargo test --release --quiet --test check -- --ignored --nocapture bench:: 2>/dev/null | grep '^BENCH')
rust_ns=$(sed -E 's/.*median_ns=([0-9]+).*/\1/' <<<"$line")

py_ns=$("$python" - "$src" "$iters" <<'PY'
import ast, statistics, sys, timeit
src = open(sys.argv[1], encoding="utf-8").read()
n = int(sys.argv[2])
runs = timeit.repeat(lambda: ast.parse(src), number=1, repeat=n)
print(int(statistics.median(runs) * 1e9))
PY
)

echo "$line"
awk -v r="$rust_ns" -v p="$py_ns" -v py="$("$python" -V 2>&1)" 'BEGIN {
    printf "agentjail check (parse + rules): median %.1f us per check\n", r / 1000
    printf "%s ast.parse only:      median %.1f us per parse\n", py, p / 1000
    printf "ratio (check / ast.parse): %.2f\n", r / p
    printf "target <= 100 us: %s\n", (r <= 100000 ? "met" : "NOT met")
}'
