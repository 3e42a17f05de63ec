#!/usr/bin/env bash
# Issue 41's proof, as a test stage: `agentjail learn` over the embedded default policy, from
# the seed job (examples/incident/action.json), two HumanEval-style programs that import
# beyond the default (re; collections) and a program that fetches from a local server on
# 127.0.0.1, writes a policy under which each of them succeeds; then the Python escape
# tests (tests/jail: python_attacks, twins::python) run again under that learned policy's
# widenings (AGENTJAIL_TEST_POLICY; its limits back at the default's, see below) and must
# still all be refused (the network attacks by the proxy's errno: common::test_policy_has_network).
#
#   scripts/test-learned.sh    (root; the release binary: cargo build --release first)
#
# Leaves nothing: the local server is this script's child, ended by its pid; the temp
# directory is removed.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${AGENTJAIL_BIN:-$PWD/target/x86_64-unknown-linux-gnu/release/agentjail}
tmp=$(mktemp -d /tmp/agentjail-learned.XXXXXX)
server=
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT

# The local allowed server: one file, /data.
mkdir "$tmp/site"
printf fetched >"$tmp/site/data"
python3 -c '
import functools, http.server, sys
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass
h = functools.partial(Quiet, directory=sys.argv[1])
s = http.server.HTTPServer(("127.0.0.1", 0), h)
open(sys.argv[2] + ".new", "w").write(str(s.server_port))
__import__("os").rename(sys.argv[2] + ".new", sys.argv[2])
s.serve_forever()
' "$tmp/site" "$tmp/port" &
server=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
port=$(cat "$tmp/port")

action() { # id code
    python3 -c 'import json, sys; print(json.dumps({"id": sys.argv[1], "language": "python",
        "entrypoint": "main.py", "code": sys.argv[2], "input_payload": {}}))' "$1" "$2" >"$tmp/$1.json"
}
action he-re $'import json, re\nprint(json.dumps({"words": re.findall(r"[a-z]+", "ab 12 cd")}))\n'
action he-coll $'import json\nfrom collections import Counter\nprint(json.dumps(dict(Counter("abca"))))\n'
action fetch "import json, urllib.request
body = urllib.request.urlopen('http://localhost:$port/data', timeout=10).read().decode()
print(json.dumps({'body': body}))
"
actions=(examples/incident/action.json "$tmp/he-re.json" "$tmp/he-coll.json" "$tmp/fetch.json")

"$bin" learn "${actions[@]}" -o "$tmp/learned.toml" >"$tmp/summary.txt" || {
    cat "$tmp/summary.txt"
    echo "learn did not reach a policy under which every action succeeds" >&2
    exit 1
}
for a in "${actions[@]}"; do
    out=$("$bin" run --policy "$tmp/learned.toml" "$a") || {
        echo "$a does not run under the learned policy: $out" >&2
        exit 1
    }
done
grep -q "fetched" <<<"$("$bin" run --policy "$tmp/learned.toml" "$tmp/fetch.json")"
echo "learned: $(grep -c '^# learned: differs' "$tmp/learned.toml") key(s) widened over the default; every action succeeds"
sed -n '/^# Widened/,/^# Limits/p' "$tmp/learned.toml"

# The escape tests under its widenings: each attack must still be refused. The learned
# limits are each at or below the default's (learn's limit rule), and the attacks assert the
# default's caps (a 4 KiB stdout, the /tmp and memory caps), so the file they run under is
# the learned one with its [limits] table dropped: the default's limits back, every widened
# key kept. `policy diff` proves it is exactly the widenings over the default (no limit line).
awk '/^\[/{skip=($0=="[limits]")} !skip' "$tmp/learned.toml" >"$tmp/escape.toml"
"$bin" policy diff --json policies/default.toml "$tmp/escape.toml" >"$tmp/diff.json" || [ $? = 1 ]
python3 - "$tmp/diff.json" "$tmp/learned.toml" <<'PY'
import json, sys
changes = json.load(open(sys.argv[1]))["changes"]
text = open(sys.argv[2]).read()
assert changes and all(c["direction"] == "weaker" for c in changes), changes
assert not any(c["key"].startswith("limits.") for c in changes), changes
for c in changes:  # each one is a widening the learned file's header states
    assert "  " + c["key"] + " " in text, c
PY
AGENTJAIL_TEST_POLICY=$tmp/escape.toml cargo test --test jail -- --test-threads=2 \
    python_attacks:: twins::python::
