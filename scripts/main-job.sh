#!/usr/bin/env bash
# The main job: the seed's incident example through `agentjail run` on the embedded default
# policy. Installs what is missing, builds the release binary, prints the record.
#   scripts/main-job.sh            the record as pretty JSON on stdout; exit 0 when status is ok
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
scripts/setup.sh >&2
cargo build --release --quiet
exec target/x86_64-unknown-linux-gnu/release/agentjail run examples/incident/action.json
