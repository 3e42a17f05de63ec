#!/usr/bin/env bash
# Prints the path of a cached minimal Debian bookworm root filesystem (a tar) with python3,
# building it with debootstrap the first time. scripts/test-container.sh runs agentjail in
# containers made from it.
#
# The cache lives outside the clone (CI clones fresh each run; debootstrap takes minutes):
# $AGENTJAIL_ROOTFS_CACHE, default /var/cache/agentjail. Its name carries a hash of
# everything that decides its content (suite, variant, packages, mirror), so changing the
# package list builds a new one and never reuses a stale tar. A build is made in a temporary
# directory next to the cache and renamed into place only when complete: an interrupted
# build leaves no half tar that a later run would trust.
set -euo pipefail
suite=bookworm
variant=minbase
# python3: the interpreter the jail runs. util-linux (setpriv, for the unprivileged launch
# variant of the tests) is Essential and always in minbase.
packages=python3
mirror=${AGENTJAIL_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${AGENTJAIL_ROOTFS_CACHE:-/var/cache/agentjail}

key=$(printf '%s\n' "$suite" "$variant" "$packages" "$mirror" | sha256sum | cut -c1-16)
tar_path=$cache/rootfs-$suite-$key.tar
if [ -s "$tar_path" ]; then
    echo "$tar_path"
    exit 0
fi
[ "$(id -u)" = 0 ] || { echo "container-rootfs: debootstrap needs root" >&2; exit 2; }
if ! command -v debootstrap >/dev/null; then
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >/dev/null
fi
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.build-rootfs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)
echo "container-rootfs: debootstrap --variant=$variant --include=$packages $suite (once; cached as $tar_path)" >&2
if ! debootstrap --variant="$variant" --include="$packages" "$suite" "$tmp/root" "$mirror" >"$tmp/log" 2>&1; then
    tail -n 30 "$tmp/log" >&2
    echo "container-rootfs: debootstrap failed" >&2
    exit 1
fi
# Nothing the tests need from apt's caches: a smaller tar extracts faster on every run.
rm -rf "$tmp/root/var/cache/apt/archives/"*.deb "$tmp/root/var/lib/apt/lists/"*
tar -C "$tmp/root" --numeric-owner -cf "$tmp/rootfs.tar" .
mv "$tmp/rootfs.tar" "$tar_path"
echo "container-rootfs: built in $(($(date +%s) - t0)) s, $(du -h "$tar_path" | cut -f1)" >&2
echo "$tar_path"
