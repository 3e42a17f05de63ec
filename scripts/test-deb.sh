#!/usr/bin/env bash
# The Debian package, installed for real on this host and removed again (run as root):
#
#   scripts/test-deb.sh [PACKAGE.SH FLAGS]     e.g. --no-zygote, --zygote
#
# 1. scripts/package.sh builds the .deb (the release build is reused, or built), lintian
#    finds no error and no warning in it.
# 2. Before installing: a snapshot of every place the package could touch (its own paths
#    from dpkg-deb -c, /usr/bin, /usr/share/agentjail, /etc/apparmor.d, the systemd and
#    sysusers directories, agentjail's entries in /var/lib/dpkg/info, the users and groups).
# 3. dpkg -i; then from the INSTALLED files only: agentjail doctor, the incident job (the
#    example the package ships) with the embedded and with the installed default policy,
#    checked number by number, the same job as nobody, agentjail mcp, man pages.
# 4. dpkg -r (the conffile stays), dpkg -P, and then the snapshot again: every path the
#    package brought is gone (directories that were there before stay), no new file in the
#    snapshot directories, no new user or group (purge removes the group agentjail when the
#    package's postinst made it, and keeps one that was there before).
#
# The machine is left as it was found on every exit path (a trap purges the package), and a
# package left installed by a run that died is purged first.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
# The man pages come from an example binary; CI has the dev build of it from `cargo test`.
export GEN_DOCS_PROFILE="${GEN_DOCS_PROFILE:-dev}"
fail=0
t0=$(date +%s)
pass() { echo "ok   - $*  [$(($(date +%s) - t0)) s]"; }
bad() { echo "FAIL - $*"; fail=1; }
die() { echo "FAIL - $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "test-deb.sh installs a package: run it as root"
command -v dpkg-deb >/dev/null || die "dpkg-deb missing"
# package.sh needs dpkg-shlibdeps (dpkg-dev, which build-essential brings).
if ! command -v dpkg-shlibdeps >/dev/null && [ "${CI:-}" = true ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends dpkg-dev >/dev/null 2>&1 || true
fi

tmp=$(mktemp -d /tmp/agentjail-test-deb.XXXXXX)
chmod 0755 "$tmp"
pkg_state() { dpkg-query -W -f='${db:Status-Status}' agentjail 2>/dev/null || true; }
# dpkg with a wait for its lock: other work on this host may run apt at the same time.
dpkg_retry() {
    for _ in $(seq 1 60); do
        if dpkg "$@" >"$tmp/dpkg.log" 2>&1; then return 0; fi
        grep -q 'locked' "$tmp/dpkg.log" || { cat "$tmp/dpkg.log"; return 1; }
        sleep 2
    done
    cat "$tmp/dpkg.log"
    return 1
}
purge_if_known() {
    local st
    st=$(pkg_state)
    if [ -n "$st" ] && [ "$st" != not-installed ]; then
        echo "purging agentjail ($st)"
        dpkg_retry --purge agentjail || dpkg_retry --purge --force-remove-reinstreq agentjail || true
    fi
}
cleanup() {
    local rc=$?
    purge_if_known
    rm -rf "$tmp"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
# A reader that went away (`| head`) must not kill the script before the trap has run.
trap '' PIPE

# What a run that died left: its scratch directory, and the package.
for d in /tmp/agentjail-test-deb.*; do
    [ "$d" != "$tmp" ] && [ -d "$d" ] && echo "removing $d (left by a run that died)" && rm -rf "$d"
done
# A package left by a run that died is removed before anything is measured. (This test
# owns the package name on the host it runs on.)
if [ -n "$(pkg_state)" ] && [ "$(pkg_state)" != not-installed ]; then
    echo "a previous agentjail package is known to dpkg ($(pkg_state)): purging it first"
    purge_if_known
fi
# Files at the package's paths that dpkg does not know would be overwritten, then deleted.
for f in /usr/bin/agentjail /usr/bin/agentjail-mcp /usr/bin/agentjail-http /usr/bin/agentjail-zygote /etc/apparmor.d/agentjail; do
    [ -e "$f" ] && die "$f exists and is not the package's (scripts/install.sh --prefix /usr?): remove it first"
done

# --- 1. build ---------------------------------------------------------------------------
# The release build is reused when no source is newer than it (CI's "build (release)"
# stage has just made it); otherwise package.sh builds it.
bin=target/x86_64-unknown-linux-gnu/release/agentjail
flags=()
if [ -x "$bin" ] && [ -x "$bin-mcp" ] &&
    [ -z "$(find src crates Cargo.toml Cargo.lock policies -newer "$bin" -type f -print -quit)" ]; then
    flags=(--no-build)
fi
scripts/package.sh "${flags[@]}" "$@" --out "$tmp/dist" >"$tmp/package.log" 2>&1 || { cat "$tmp/package.log"; die "package.sh failed"; }
grep -i warning "$tmp/package.log" || true
deb=$(ls "$tmp"/dist/agentjail_*_amd64.deb)
pass "built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB): $(tail -1 "$tmp/package.log" | sed 's/^[^(]*//')"
version=$(dpkg-deb -f "$deb" Version)
dpkg-deb -c "$deb" >"$tmp/contents"
zygote=0
grep -q ' \./usr/bin/agentjail-zygote$' "$tmp/contents" && zygote=1

if ! command -v lintian >/dev/null && [ "${CI:-}" = true ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends lintian >/dev/null 2>&1 || true
fi
if command -v lintian >/dev/null; then
    # Errors and warnings fail; infos are printed (lintian refuses to run as root only in
    # name: it warns and goes on).
    if lintian --fail-on error,warning "$deb" >"$tmp/lintian.log" 2>&1; then
        pass "lintian $(lintian --version | awk '{print $2}'): no error, no warning"
    else
        bad "lintian: $(grep -E '^(E|W):' "$tmp/lintian.log" | tr '\n' ' ')"
    fi
else
    echo "SKIP - lintian not installed (apt-get install lintian)"
fi

# --- 2. the snapshot ------------------------------------------------------------------
# The package's own paths, absolute, directories included.
awk '{print $NF}' "$tmp/contents" | sed 's#^\./#/#; s#/$##' | grep -v '^\.\?$' | sort -u >"$tmp/paths"
while read -r p; do
    [ -e "$p" ] && echo "$p"
done <"$tmp/paths" >"$tmp/paths.before"
dirs=(/usr/bin /usr/share/agentjail /usr/share/doc/agentjail /usr/share/man/man1 /etc/apparmor.d
    /usr/lib/systemd/system /lib/systemd/system /etc/systemd/system /usr/lib/sysusers.d
    /usr/share/bash-completion/completions /usr/share/zsh/site-functions
    /usr/share/fish/vendor_completions.d /usr/share/lintian/overrides /var/lib/agentjail-package
    /var/cache/apparmor /run/agentjail)
snapshot() {
    {
        find "${dirs[@]}" 2>/dev/null || true
        # The dpkg database: agentjail's entries (other packages may change meanwhile).
        find /var/lib/dpkg/info -name 'agentjail.*' 2>/dev/null || true
        getent passwd | cut -d: -f1 | sed 's/^/user:/'
        getent group | cut -d: -f1 | sed 's/^/group:/'
    } | sort -u
}
snapshot >"$tmp/snap.before"
group_before=0
getent group agentjail >/dev/null && group_before=1

# --- 3. install and run from the installed files ----------------------------------------
dpkg_retry --install "$deb" || die "dpkg -i $deb failed"
[ "$(pkg_state)" = installed ] && pass "dpkg -i: agentjail $version installed" || bad "dpkg status after -i: $(pkg_state)"
dpkg -L agentjail | grep -v '^/\.$' | sort -u >"$tmp/dpkg-L"
if diff <(grep -v '^/$' "$tmp/paths") <(grep -v '^/$' "$tmp/dpkg-L") >/dev/null; then
    pass "dpkg -L lists the $(wc -l <"$tmp/dpkg-L") paths of the .deb"
else
    bad "dpkg -L differs from dpkg-deb -c: $(diff <(grep -v '^/$' "$tmp/paths") <(grep -v '^/$' "$tmp/dpkg-L") | grep '^[<>]' | tr '\n' ' ')"
fi
getent group agentjail >/dev/null && pass "group agentjail exists (the socket's SocketGroup)" || bad "no group agentjail after install"
grep -q ' /usr/bin/agentjail ' /etc/apparmor.d/agentjail && pass "AppArmor profile attaches to /usr/bin/agentjail" ||
    bad "/etc/apparmor.d/agentjail does not name /usr/bin/agentjail"
grep -q '^ExecStart=/usr/bin/agentjail serve' /usr/lib/systemd/system/agentjail.service &&
    grep -q "^ExecStart=/bin/sh -c '/usr/bin/agentjail run" /usr/lib/systemd/system/agentjail-job@.service &&
    pass "the units' ExecStart run /usr/bin/agentjail" || bad "a unit's ExecStart does not name /usr/bin/agentjail"

v=$(/usr/bin/agentjail --version) && pass "installed: $v" || bad "/usr/bin/agentjail --version failed"
if /usr/bin/agentjail doctor >"$tmp/doctor.log" 2>&1; then
    pass "agentjail doctor: $(tail -1 "$tmp/doctor.log")"
else
    bad "agentjail doctor failed: $(grep -Ev '^ok' "$tmp/doctor.log" | head -5 | tr '\n' ' ')"
fi
if [ "$zygote" = 1 ]; then
    grep -Eq '^ok +zygote .*/usr/bin/agentjail-zygote' "$tmp/doctor.log" &&
        pass "doctor finds the installed zygote" || bad "doctor: $(grep zygote "$tmp/doctor.log" | head -1)"
fi

example=/usr/share/doc/agentjail/examples/incident/action.json
# judge NAME RECORD: status ok and the seed's numbers.
judge() {
    python3 - "$2" <<'EOF' && pass "$1: status ok, incident_severity P1, sample_size 60" || bad "$1: $(head -c 600 "$2")"
import json, sys
r = json.load(open(sys.argv[1]))
o = r.get("output") or {}
assert r["status"] == "ok", r["status"]
assert o["incident_severity"] == "P1", o
assert o["sample_size"] == 60, o
assert o["chargeback_alerts"] == 1, o
assert abs(o["failed_payment_rate"] - 2 / 60) < 1e-12, o
EOF
}
(cd / && /usr/bin/agentjail run "$example") >"$tmp/r-root.json" 2>"$tmp/r-root.err" || true
judge "root: /usr/bin/agentjail run $example" "$tmp/r-root.json"
(cd / && /usr/bin/agentjail run --policy /usr/share/agentjail/policies/default.toml "$example") \
    >"$tmp/r-policy.json" 2>"$tmp/r-policy.err" || true
judge "root: the same with --policy /usr/share/agentjail/policies/default.toml" "$tmp/r-policy.json"
(cd / && setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/agentjail run "$example") \
    >"$tmp/r-nobody.json" 2>"$tmp/r-nobody.err" || true
judge "nobody: /usr/bin/agentjail run $example" "$tmp/r-nobody.json"

init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test-deb","version":"1"}}}'
r=$(echo "$init" | timeout 30 /usr/bin/agentjail mcp --pool 0 2>&1) || true
case "$r" in *'"protocolVersion":"2025-11-25"'*) pass "installed agentjail mcp answers initialize" ;;
    *) bad "installed agentjail mcp: $r" ;; esac
if command -v man >/dev/null; then
    MANPATH=/usr/share/man man agentjail-run 2>/dev/null | grep -q -- '--policy' &&
        pass "man agentjail-run (installed, gzipped) documents --policy" || bad "man agentjail-run does not render"
fi

# The maintainer scripts' AppArmor steps, with stand-ins for aa-enabled and apparmor_parser
# first in PATH (this host has no AppArmor; dpkg hands PATH on to the scripts). Running
# postinst again also shows it is idempotent: no second group, no error.
stubs=$tmp/stubs
mkdir -p "$stubs"
printf '#!/bin/sh\necho "apparmor_parser $*" >>%s/aa.log\n' "$tmp" >"$stubs/apparmor_parser"
printf '#!/bin/sh\n[ -e %s/aa-on ]\n' "$tmp" >"$stubs/aa-enabled"
chmod 0755 "$stubs"/*
groups_before=$(getent group | cut -d: -f1 | sort)
PATH=$stubs:$PATH /var/lib/dpkg/info/agentjail.postinst configure "$version" || bad "postinst configure, run again, failed"
[ ! -e "$tmp/aa.log" ] && pass "postinst: AppArmor disabled (aa-enabled says no): no apparmor_parser call" ||
    bad "postinst called apparmor_parser with AppArmor disabled: $(cat "$tmp/aa.log")"
touch "$tmp/aa-on"
PATH=$stubs:$PATH /var/lib/dpkg/info/agentjail.postinst configure "$version" || bad "postinst configure (AppArmor on) failed"
[ "$(cat "$tmp/aa.log" 2>/dev/null)" = "apparmor_parser -r -T -W /etc/apparmor.d/agentjail" ] &&
    pass "postinst: AppArmor enabled: apparmor_parser -r -T -W /etc/apparmor.d/agentjail" ||
    bad "postinst with AppArmor on: $(cat "$tmp/aa.log" 2>/dev/null)"
[ "$(getent group | cut -d: -f1 | sort)" = "$groups_before" ] && pass "postinst run twice more: no new group" ||
    bad "postinst run again changed the groups"
rm -f "$tmp/aa.log"

# --- 4. remove, purge, compare ------------------------------------------------------------
PATH=$stubs:$PATH dpkg_retry --remove agentjail || bad "dpkg -r failed"
[ "$(cat "$tmp/aa.log" 2>/dev/null)" = "apparmor_parser -R /etc/apparmor.d/agentjail" ] &&
    pass "prerm remove: apparmor_parser -R /etc/apparmor.d/agentjail (AppArmor enabled)" ||
    bad "prerm remove with AppArmor on: $(cat "$tmp/aa.log" 2>/dev/null)"
[ "$(pkg_state)" = config-files ] && [ -f /etc/apparmor.d/agentjail ] && [ ! -e /usr/bin/agentjail ] &&
    pass "dpkg -r: binaries gone, the conffile /etc/apparmor.d/agentjail kept (config-files)" ||
    bad "after dpkg -r: status $(pkg_state), conffile $([ -f /etc/apparmor.d/agentjail ] && echo kept || echo gone)"
dpkg_retry --purge agentjail || bad "dpkg -P failed"
[ "$(pkg_state)" = not-installed ] || [ -z "$(pkg_state)" ] && pass "dpkg -P: dpkg no longer knows agentjail" ||
    bad "after dpkg -P: status $(pkg_state)"

left=()
while read -r p; do
    [ "$p" = / ] && continue
    if grep -qxF "$p" "$tmp/paths.before"; then
        [ -e "$p" ] || bad "$p existed before the install and is gone"
    elif [ -e "$p" ] || [ -L "$p" ]; then
        left+=("$p")
    fi
done <"$tmp/dpkg-L"
[ "${#left[@]}" = 0 ] && pass "every path of dpkg -L that the package brought is gone ($(wc -l <"$tmp/dpkg-L") listed, $(wc -l <"$tmp/paths.before") were there before and stay)" ||
    bad "left by the package: ${left[*]}"

snapshot >"$tmp/snap.after"
new=$(comm -13 "$tmp/snap.before" "$tmp/snap.after")
gone=$(comm -23 "$tmp/snap.before" "$tmp/snap.after")
# A file that another package now owns was put there by other work on this host meanwhile.
ours=
for p in $new; do
    case "$p" in /*) dpkg -S "$p" >/dev/null 2>&1 && { echo "note: $p is new but belongs to $(dpkg -S "$p" 2>/dev/null | cut -d: -f1)"; continue; } ;; esac
    ours="$ours $p"
done
[ -z "$ours" ] && pass "no new file, user or group in the snapshot (${#dirs[@]} directories, agentjail's dpkg entries, passwd, group)" ||
    bad "new after purge:$ours"
[ -z "$gone" ] && pass "nothing of the snapshot went missing" || bad "missing after purge: $(echo "$gone" | tr '\n' ' ')"
if [ "$group_before" = 0 ]; then
    getent group agentjail >/dev/null && bad "group agentjail left after purge" ||
        pass "purge removed the group agentjail that postinst had made"
else
    getent group agentjail >/dev/null && pass "group agentjail was there before and is kept" ||
        bad "purge removed a group agentjail that was there before the install"
fi
exit $fail
