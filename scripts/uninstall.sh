#!/usr/bin/env bash
# Remove what scripts/install.sh installed, and nothing else: the files and the directories
# listed in PREFIX/share/agentjail/install-manifest.txt (directories only when empty).
#
#   scripts/uninstall.sh [--prefix /usr/local] [--destdir DIR]
set -euo pipefail
prefix=/usr/local
destdir=${DESTDIR:-}
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
        --prefix=*) prefix=${1#*=}; shift ;;
        --destdir) destdir=${2:?--destdir needs a directory}; shift 2 ;;
        --destdir=*) destdir=${1#*=}; shift ;;
        -h | --help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "uninstall.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
prefix=${prefix%/}
destdir=${destdir%/}
manifest=$destdir$prefix/share/agentjail/install-manifest.txt
if [ ! -f "$manifest" ]; then
    echo "uninstall.sh: no manifest at $manifest; was agentjail installed with this --prefix/--destdir?" >&2
    exit 2
fi
entries=$(cat "$manifest")

# Unload the AppArmor profile before its file goes, while we still know its name.
if [ -z "$destdir" ] && grep -qx 'f /etc/apparmor.d/agentjail' <<<"$entries" &&
    [ -d /sys/kernel/security/apparmor ] && command -v apparmor_parser >/dev/null; then
    apparmor_parser -R /etc/apparmor.d/agentjail 2>/dev/null || true
fi

# Files first, then directories deepest first (reverse of creation order).
while read -r kind path; do
    [ "$kind" = f ] || continue
    case "$path" in /*) ;; *) echo "uninstall.sh: skipping non-absolute '$path'" >&2; continue ;; esac
    rm -f -- "$destdir$path" && echo "removed $destdir$path"
done <<<"$entries"
tac <<<"$entries" | while read -r kind path; do
    [ "$kind" = d ] || continue
    rmdir -- "$destdir$path" 2>/dev/null && echo "removed $destdir$path/" ||
        echo "kept $destdir$path/ (not empty: something else lives there)"
done
if [ -z "$destdir" ] && grep -qx 'f /etc/systemd/system/agentjail-job@.service' <<<"$entries" &&
    [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
fi
