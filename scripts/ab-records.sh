#!/usr/bin/env bash
# A/B records: the refactor's proof (issue 37, docs/TESTING.md "A/B records").
#
#   scripts/ab-records.sh BASE_REV [--out DIR] [--only SUBSTRING]
#
# Builds BASE_REV's agentjail, agentjail-http and agentjail-mcp (dev profile) in a
# temporary git worktree, builds the working tree's, and runs one corpus through both
# (scripts/ab_records.py): exit 0 when every transcript is byte-identical after the
# run-to-run fields are normalised, 1 with a unified diff per differing transcript, 2 when
# the harness itself failed. BASE_REV = HEAD compares the working tree with its own commit.
#
# BASE_REV's build uses a persistent CARGO_TARGET_DIR, ~/.cache/agentjail/ab-target
# (AB_CACHE overrides ~/.cache/agentjail), so the dependencies are built once per machine;
# the worktree sits at a fixed path beside it (same path, same artifacts: nothing piles up)
# and a lock keeps two runs from sharing it at once. The working tree builds into its own
# target/ as `cargo build` does.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export PATH="$HOME/.cargo/bin:$PATH"

base=${1:?usage: scripts/ab-records.sh BASE_REV [--out DIR] [--only SUBSTRING]}
shift
sha=$(git rev-parse --verify --quiet "$base^{commit}") || {
    echo "ab-records: $base is not a commit here" >&2
    exit 2
}

cache=${AB_CACHE:-$HOME/.cache/agentjail}
target=$cache/ab-target
src=$cache/ab-src
mkdir -p "$cache"
exec 9>"$cache/ab.lock"
flock 9

# Not named agentjail-* or aj*: the tests compare those host-wide.
bins=$(mktemp -d /tmp/abrec-bins.XXXXXX)
cleanup() {
    rm -rf "$bins"
    git -C "$root" worktree remove --force "$src" 2>/dev/null || rm -rf "$src"
    git -C "$root" worktree prune
}
trap cleanup EXIT

# Leftovers of a run that was killed: the same path is reused.
git worktree remove --force "$src" 2>/dev/null || rm -rf "$src"
git worktree prune
git worktree add --quiet --detach "$src" "$sha"

build() { # build DIR TARGET_DIR OUT: the three binaries, copied to OUT
    local t0=$SECONDS
    (cd "$1" && CARGO_TARGET_DIR=$2 cargo build --quiet -p agentjail -p agentjail-http \
        -p agentjail-mcp --bins)
    mkdir -p "$3"
    for b in agentjail agentjail-http agentjail-mcp; do
        cp "$2/x86_64-unknown-linux-gnu/debug/$b" "$3/"
    done
    echo "ab-records: built $1 in $((SECONDS - t0)) s" >&2
}

build "$src" "$target" "$bins/base"
build "$root" "${CARGO_TARGET_DIR:-$root/target}" "$bins/head"
echo "ab-records: base $(git rev-parse --short=12 "$sha") ($base), head: the working tree" \
    "at $(git rev-parse --short=12 HEAD)$(git diff --quiet HEAD || echo ' + changes')" >&2

rc=0
python3 "$root/scripts/ab_records.py" --base-bin "$bins/base" --head-bin "$bins/head" \
    --repo "$root" "$@" || rc=$?
exit "$rc"
