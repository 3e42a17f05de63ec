#!/usr/bin/env bash
# install.sh + uninstall.sh into a temporary DESTDIR: every manifest entry exists, the
# installed binary runs (--version names the git commit), the man pages render, and after
# uninstall the tree is exactly what it was before (pre-existing directories kept).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
# The man pages come from an example binary; in CI the dev build from `cargo test` is at
# hand, while a release build of it would cost another LTO link (~1 min).
export GEN_DOCS_PROFILE="${GEN_DOCS_PROFILE:-dev}"
fail=0
pass() { echo "ok   - $*"; }
bad() { echo "FAIL - $*"; fail=1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
prefix=/opt/agentjail-test
# A host with AppArmor and a pre-existing, non-empty share dir that uninstall must keep.
mkdir -p "$root/etc/apparmor.d" "$root$prefix/share/man/man1"
echo keep >"$root$prefix/share/man/man1/other.1"
before=$(cd "$root" && find . | sort)

scripts/install.sh --prefix "$prefix" --destdir "$root" --with-systemd >"$tmp/install.log"
manifest=$root$prefix/share/agentjail/install-manifest.txt
[ -f "$manifest" ] && pass "manifest written" || bad "no manifest at $manifest"
missing=0
while read -r kind path; do
    case "$kind" in
        f) [ -f "$root$path" ] || { bad "listed file missing: $path"; missing=1; } ;;
        d) [ -d "$root$path" ] || { bad "listed dir missing: $path"; missing=1; } ;;
        *) bad "bad manifest line: $kind $path"; missing=1 ;;
    esac
done <"$manifest"
[ "$missing" = 0 ] && pass "every manifest entry exists ($(wc -l <"$manifest") entries)"
# Nothing installed that the manifest does not list.
after=$(cd "$root" && find . | sort)
unlisted=$(comm -13 <(echo "$before") <(echo "$after") | sed 's#^\.##' |
    grep -vxFf <(awk '{print $2}' "$manifest") || true)
[ -z "$unlisted" ] && pass "nothing installed outside the manifest" || bad "unlisted: $unlisted"

for f in bin/agentjail bin/agentjail-mcp bin/agentjail-http share/agentjail/policies/default.toml \
    share/agentjail/policies/python.toml share/agentjail/policies/net.toml share/man/man1/agentjail.1 \
    share/man/man1/agentjail-run.1 share/man/man1/agentjail-exec.1 share/man/man1/agentjail-check.1 \
    share/man/man1/agentjail-policy-show.1 share/man/man1/agentjail-doctor.1 \
    share/bash-completion/completions/agentjail share/zsh/site-functions/_agentjail \
    share/fish/vendor_completions.d/agentjail.fish; do
    [ -s "$root$prefix/$f" ] && pass "$prefix/$f" || bad "missing or empty: $prefix/$f"
done
for f in /etc/systemd/system/agentjail-job@.service /etc/apparmor.d/agentjail; do
    if grep -q "$prefix/bin/agentjail" "$root$f" 2>/dev/null; then
        pass "$f points at $prefix/bin/agentjail"
    else
        bad "$f missing or not rewritten to $prefix/bin/agentjail"
    fi
done
grep -q "$prefix/bin/agentjail-mcp" "$root/etc/apparmor.d/agentjail" 2>/dev/null &&
    pass "/etc/apparmor.d/agentjail has the agentjail-mcp profile at $prefix/bin/agentjail-mcp" ||
    bad "/etc/apparmor.d/agentjail lacks $prefix/bin/agentjail-mcp"
grep -q "$prefix/bin/agentjail-http" "$root/etc/apparmor.d/agentjail" 2>/dev/null &&
    pass "/etc/apparmor.d/agentjail has the agentjail-http profile at $prefix/bin/agentjail-http" ||
    bad "/etc/apparmor.d/agentjail lacks $prefix/bin/agentjail-http"
v=$("$root$prefix/bin/agentjail" --version) && pass "installed binary runs: $v" || bad "--version failed"
# Shipped policies by name, from the share directory beside the installed binary.
for name in python net; do
    src=$(cd / && AGENTJAIL_POLICY_DIR= "$root$prefix/bin/agentjail" policy show "$name" 2>&1 | sed -n 's/^# source: //p')
    [ "$src" = "$root$prefix/share/agentjail/policies/$name.toml" ] &&
        pass "policy show $name resolves to $src" || bad "policy show $name: source '$src'"
done
# `agentjail mcp` execs the installed agentjail-mcp: it answers initialize, then EOF ends it.
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test-install","version":"1"}}}'
r=$(echo "$init" | timeout 30 "$root$prefix/bin/agentjail" mcp --pool 0 2>&1) &&
    case "$r" in *'"protocolVersion":"2025-11-25"'*) pass "installed agentjail mcp answers initialize" ;;
        *) bad "installed agentjail mcp: $r" ;; esac || bad "installed agentjail mcp failed: $r"
commit=$(git rev-parse --short=12 HEAD)
case "$v" in *"$commit"*) pass "--version names the commit $commit" ;; *) bad "--version lacks commit $commit: $v" ;; esac
if command -v man >/dev/null; then
    man -l "$root$prefix/share/man/man1/agentjail-run.1" 2>/dev/null | grep -q -- '--policy' &&
        pass "man agentjail-run renders and documents --policy" || bad "man page does not render"
fi
bash -n "$root$prefix/share/bash-completion/completions/agentjail" && pass "bash completion parses"

scripts/uninstall.sh --prefix "$prefix" --destdir "$root" >"$tmp/uninstall.log"
final=$(cd "$root" && find . | sort)
if [ "$final" = "$before" ]; then
    pass "after uninstall the tree is exactly as before"
else
    bad "left behind: $(diff <(echo "$before") <(echo "$final") | grep '^[<>]' | tr '\n' ' ')"
fi
exit $fail
