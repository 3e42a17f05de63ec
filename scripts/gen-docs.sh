#!/usr/bin/env bash
# Generate the man pages and shell completions from the clap definitions.
#
#   scripts/gen-docs.sh OUTDIR
#
# Writes OUTDIR/man/*.1 and OUTDIR/completions/{agentjail.bash,_agentjail,agentjail.fish}
# and prints each path written. The generator is examples/gen_docs.rs (clap_mangen and
# clap_complete are dev-dependencies, so the shipped binary does not carry them).
set -euo pipefail
if [ $# -ne 1 ]; then
    echo "usage: scripts/gen-docs.sh OUTDIR" >&2
    exit 2
fi
out=$1
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
mkdir -p "$out"
out=$(cd "$out" && pwd)
# Release by default: it shares the release build's dependencies. GEN_DOCS_PROFILE=dev
# reuses a `cargo test` build instead (what CI has at hand); the pages are the same.
profile=(--release)
if [ "${GEN_DOCS_PROFILE:-release}" = dev ]; then
    profile=()
fi
cargo run --quiet "${profile[@]}" --example gen_docs -- "$out"
