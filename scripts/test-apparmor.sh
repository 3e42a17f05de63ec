#!/usr/bin/env bash
# Validates contrib/apparmor/agentjail with apparmor_parser, without loading it into a kernel
# (-Q: skip kernel load, -K/-T: no cache).
#
# The profile uses AppArmor 4.0 (abi <abi/4.0> and the `userns` rule, what Ubuntu >= 23.10
# needs). With a parser >= 4.0 the file is checked as is. Debian 12 ships apparmor 3.0.8,
# which knows neither; then this checks everything else (the 4.0-only lines replaced by
# their 3.0 equivalents or removed), checks the `userns,` rule is present, and says
# PARTIAL, so a pass on an old parser is never mistaken for a full one.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=contrib/apparmor/agentjail
if ! command -v apparmor_parser >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -q >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends apparmor >/dev/null
    else
        echo "test-apparmor: apparmor_parser missing (Debian package apparmor)" >&2
        exit 2
    fi
fi
ver=$(apparmor_parser --version | sed -n 's/.*version \([0-9][0-9.]*\).*/\1/p' | head -1)
major=${ver%%.*}
echo "# apparmor_parser $ver"
parse() { apparmor_parser -Q -K -T "$1" 2>&1 | grep -v '^Cache read/write disabled' || true; }

grep -Eq '^[[:space:]]*userns,' "$profile" || { echo "FAIL - no 'userns,' rule"; exit 1; }
grep -Eq '^profile agentjail /usr/local/bin/agentjail flags=\(unconfined\)' "$profile" ||
    { echo "FAIL - attachment is not /usr/local/bin/agentjail flags=(unconfined)"; exit 1; }
grep -Eq '^profile agentjail-mcp /usr/local/bin/agentjail-mcp flags=\(unconfined\)' "$profile" ||
    { echo "FAIL - no profile for /usr/local/bin/agentjail-mcp flags=(unconfined)"; exit 1; }
grep -Eq '^profile agentjail-zygote /usr/local/bin/agentjail-zygote flags=\(unconfined\)' "$profile" ||
    { echo "FAIL - no profile for /usr/local/bin/agentjail-zygote flags=(unconfined)"; exit 1; }
[ "$(grep -Ec '^[[:space:]]*userns,' "$profile")" = "$(grep -Ec '^profile ' "$profile")" ] || { echo "FAIL - each profile needs its 'userns,' rule"; exit 1; }

if [ "${major:-0}" -ge 4 ]; then
    out=$(parse "$profile")
    if apparmor_parser -Q -K -T "$profile" >/dev/null 2>&1; then
        echo "ok   - $profile parses (full check)"
    else
        echo "FAIL - $profile: $out"
        exit 1
    fi
else
    tmp=$(mktemp)
    trap 'rm -f "$tmp"' EXIT
    sed -e 's#abi <abi/4.0>#abi <abi/3.0>#' -e '/^[[:space:]]*userns,/d' "$profile" >"$tmp"
    if apparmor_parser -Q -K -T "$tmp" >/dev/null 2>&1; then
        echo "ok   - PARTIAL: $profile parses with parser $ver once the 4.0-only 'userns,' rule and abi are"
        echo "       replaced; the full check needs apparmor_parser >= 4.0 (Ubuntu >= 23.10, Debian >= 13)"
    else
        echo "FAIL - $profile (3.0 subset): $(parse "$tmp")"
        exit 1
    fi
fi
