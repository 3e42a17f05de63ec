#!/usr/bin/env bash
# Build the Debian package: dist/agentjail_<version>_amd64.deb.
#
#   scripts/package.sh [--no-build] [--zygote | --no-zygote] [--out DIR]
#
#   --no-build    package the release binaries in target/ as they are (default: build them
#                 first, with agentjail-zygote for /usr/bin/python3: scripts/build-zygote.sh
#                 --release, the same cargo build --release and the template linked after).
#                 With --no-build a release zygote is put in when one exists and none of
#                 its sources (src/, crates/, zygote/, Cargo.*) is newer; a stale or missing
#                 one is left out, with a warning: the package never pairs an agentjail with
#                 an older zygote.
#   --zygote      build agentjail-zygote even with --no-build, and put it in.
#   --no-zygote   leave agentjail-zygote out even when it was built: the package then holds
#                 only static binaries and depends on nothing, so it installs on any amd64
#                 Linux with dpkg (`serve` then starts a fresh interpreter per Python job and
#                 says so; doctor too).
#   --out DIR     where the .deb goes (default dist/, which git ignores).
#
# The files are scripts/install.sh's (--prefix /usr --package): agentjail, agentjail-mcp, agentjail-http,
# agentjail-zygote (built by default, above), the policies, the man
# pages and completions, the systemd units and sysusers.d file under /usr/lib, the AppArmor
# profile in /etc/apparmor.d (the one conffile). Then the Debian parts: copyright,
# changelog, the incident example, gzipped man pages, control, md5sums and the maintainer
# scripts (scripts/deb/). Depends is what dpkg-shlibdeps finds in the ELF files: nothing for
# the static binaries, libc6 and the libpython3.X the zygote was linked against when it is in.
# Version is Cargo.toml's; the package is built as root:root with dpkg-deb --root-owner-group
# (no fakeroot), timestamps clamped to the commit's time (SOURCE_DATE_EPOCH).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

build=1
zygote=1
out=dist
while [ $# -gt 0 ]; do
    case "$1" in
        --no-build) build=0; shift ;;
        --zygote) zygote=2; shift ;;
        --no-zygote) zygote=0; shift ;;
        --out) out=${2:?--out needs a directory}; shift 2 ;;
        --out=*) out=${1#*=}; shift ;;
        -h | --help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "package.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
for t in dpkg-deb dpkg-shlibdeps; do
    command -v "$t" >/dev/null || { echo "package.sh: $t missing (apt-get install dpkg-dev)" >&2; exit 2; }
done

rel=target/x86_64-unknown-linux-gnu/release
# `serve` forks its Python jails from the zygote by default: a package built here ships it.
if [ "$build" = 1 ] && [ "$zygote" = 1 ]; then
    zygote=2
elif [ "$build" = 1 ]; then
    cargo build --release --quiet
fi
if [ "$zygote" = 2 ]; then
    scripts/build-zygote.sh --release >/dev/null
elif [ "$zygote" = 1 ] && [ -e "$rel/agentjail-zygote" ]; then
    newer=$(find src crates zygote Cargo.toml Cargo.lock -newer "$rel/agentjail-zygote" -type f -print -quit)
    if [ -n "$newer" ]; then
        echo "package.sh: WARNING: $rel/agentjail-zygote is older than $newer: left out" \
            "(scripts/build-zygote.sh --release, or package.sh --zygote, puts a current one in)" >&2
        zygote=0
    fi
elif [ "$zygote" = 1 ]; then
    echo "package.sh: WARNING: no $rel/agentjail-zygote: left out, so the package's serve starts" \
        "a fresh interpreter per Python job (package.sh without --no-build, or --zygote, builds it)" >&2
fi

# The version of the [package] table (the first `version =` of Cargo.toml). No git suffix:
# `agentjail --version` names the commit, and the changelog entry below does too.
version=$(awk -F'"' '/^\[package\]/ { p = 1; next } /^\[/ { p = 0 } p && /^version *=/ { print $2; exit }' Cargo.toml)
case "$version" in
    [0-9]*) ;;
    *) echo "package.sh: no version in Cargo.toml's [package] table" >&2; exit 2 ;;
esac
arch=amd64
commit=$(git rev-parse --short=12 HEAD)
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
maintainer=${DEB_MAINTAINER:-$(git log -1 --format='%an <%ae>')}

work=$(mktemp -d /tmp/agentjail-package.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/src/debian/agentjail

# Stage with the project's installer (it takes agentjail-zygote when one was built).
# Never with SOURCE_DATE_EPOCH in cargo's environment (install.sh builds the man pages'
# generator): the cc crate's build scripts (psm, ring) track it, so cargo would rebuild half
# the dependency tree here and again in the next build without it (~40 s each in CI).
env -u SOURCE_DATE_EPOCH scripts/install.sh --prefix /usr --destdir "$root" --no-build --package >"$work/install.log"
# From here on, the tools that clamp or stamp times (dpkg-deb) read it.
export SOURCE_DATE_EPOCH
if [ "$zygote" = 0 ]; then
    rm -f "$root/usr/bin/agentjail-zygote"
fi
have_zygote=0
[ -e "$root/usr/bin/agentjail-zygote" ] && have_zygote=1

# Debian policy 10.1: binaries shipped stripped (the release profile keeps symbol tables;
# no debug info). The same sections dh_strip removes from an executable.
for f in "$root"/usr/bin/*; do
    strip --remove-section=.comment --remove-section=.note "$f"
done

doc=$root/usr/share/doc/agentjail
install -d -m 0755 "$doc/examples/incident"
install -m 0644 examples/incident/action.json "$doc/examples/incident/action.json"
install -m 0644 examples/incident/action.js.json "$doc/examples/incident/action.js.json"
# Debian policy 12.3: man pages compressed with gzip -9, no timestamp in the gzip header.
gzip -9n "$root"/usr/share/man/man1/*.1

# copyright in the machine-readable format; the MIT text in full, Apache-2.0 by reference
# to the copy every Debian system has.
{
    cat <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: agentjail
Comment: Built from git commit $commit by scripts/package.sh.

Files: *
Copyright: 2026 The agentjail developers
License: MIT or Apache-2.0

License: MIT
EOF
    # The MIT section of LICENSE (between its header and the Apache text), each line
    # indented one space, empty lines as " ." (the format's continuation lines).
    awk '/^MIT License/ { p = 1; next } /^=+$/ && p { exit } p' LICENSE |
        sed -e '/./,$!d' | sed -e 's/^$/./' -e 's/^/ /'
    cat <<EOF

License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License"); you may not
 use this file except in compliance with the License.
 .
 On Debian systems, the complete text of the Apache License, Version 2.0 can be
 found in /usr/share/common-licenses/Apache-2.0.
EOF
} >"$doc/copyright"
chmod 0644 "$doc/copyright"
date_rfc=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
cat >"$work/changelog" <<EOF
agentjail ($version) unstable; urgency=medium

  * Package built by scripts/package.sh from git commit $commit.

 -- $maintainer  $date_rfc
EOF
# A version without a Debian revision makes this a native package: changelog.gz.
gzip -9n -c "$work/changelog" >"$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz"

# What lintian says that is true of the files but not a fault, each with the reason
# (scripts/test-deb.sh runs lintian when it is installed).
install -d -m 0755 "$root/usr/share/lintian/overrides"
cat >"$root/usr/share/lintian/overrides/agentjail" <<'EOF'
# agentjail, agentjail-mcp and agentjail-http are static PIE executables: ELF type ET_DYN with no NEEDED
# entries by design (no runtime dependency at all), which this check takes for a library.
agentjail: shared-library-lacks-prerequisites [usr/bin/agentjail]
agentjail: shared-library-lacks-prerequisites [usr/bin/agentjail-mcp]
agentjail: shared-library-lacks-prerequisites [usr/bin/agentjail-http]
# /var/lib/dpkg/status, read-only: its mtime goes into the record's environment digest
# (crates/agentjail-engine/src/environment.rs), so a package change on the host changes the
# digest; and a toolchain with no version file of its own (Debian's rustc) gets its version
# from its package's entry (crates/agentjail-engine/src/policy/toolchain.rs, `agentjail
# doctor`). Never written.
agentjail: uses-dpkg-database-directly [usr/bin/agentjail]
agentjail: uses-dpkg-database-directly [usr/bin/agentjail-mcp]
agentjail: uses-dpkg-database-directly [usr/bin/agentjail-http]
agentjail: uses-dpkg-database-directly [usr/bin/agentjail-zygote]
# What `agentjail serve --http` executes from the directory agentjail is in (same arguments);
# its manual is agentjail-serve(1).
agentjail: no-manual-page [usr/bin/agentjail-http]
EOF
if [ -e "$root/usr/bin/agentjail-zygote" ]; then
    cat >>"$root/usr/share/lintian/overrides/agentjail" <<'EOF'
# An internal helper that `agentjail serve --zygote` executes from the directory agentjail
# is in; no one runs it by hand.
agentjail: no-manual-page [usr/bin/agentjail-zygote]
EOF
fi
chmod 0644 "$root/usr/share/lintian/overrides/agentjail"

# Depends: what the ELF files need, as dpkg-shlibdeps computes it from the installed
# libraries' shlibs/symbols files. It reads debian/control of its working directory.
mkdir -p "$work/src/debian"
# (It finds the package's root by its DEBIAN directory.)
install -d -m 0755 "$root/DEBIAN"
printf 'Source: agentjail\n\nPackage: agentjail\nArchitecture: %s\n' "$arch" >"$work/src/debian/control"
# Only ELF files with NEEDED entries have anything to resolve (the static ones have none).
dynamic=()
for f in "$root"/usr/bin/*; do
    if readelf -d "$f" 2>/dev/null | grep -q '(NEEDED)'; then
        dynamic+=("debian/agentjail/usr/bin/$(basename "$f")")
    fi
done
depends=
if [ "${#dynamic[@]}" -gt 0 ]; then
    depends=$(cd "$work/src" && dpkg-shlibdeps -O "${dynamic[@]}" 2>"$work/shlibdeps.err" |
        sed -n 's/^shlibs:Depends=//p') || {
        cat "$work/shlibdeps.err" >&2
        exit 1
    }
    cat "$work/shlibdeps.err" >&2
fi

for s in postinst prerm postrm; do
    install -m 0755 "scripts/deb/$s" "$root/DEBIAN/$s"
done
# Everything under /etc is a conffile: dpkg keeps the administrator's edits on upgrade.
(cd "$root" && find etc -type f | sort | sed 's#^#/#') >"$root/DEBIAN/conffiles"
chmod 0644 "$root/DEBIAN/conffiles"

installed_size=$(du -s -k --apparent-size --exclude=DEBIAN "$root" | cut -f1)
{
    echo "Package: agentjail"
    echo "Version: $version"
    echo "Architecture: $arch"
    echo "Maintainer: $maintainer"
    echo "Installed-Size: $installed_size"
    [ -n "$depends" ] && echo "Depends: $depends"
    echo "Recommends: python3"
    echo "Section: admin"
    echo "Priority: optional"
    cat <<'EOF'
Description: execution boundary for AI-agent-generated code
 agentjail runs Python or JavaScript that an AI agent wrote in a jail made of
 unprivileged Linux namespaces (user, mount, pid, net, ipc, uts, cgroup), a
 read-only root, landlock, seccomp, cgroup limits and rlimits, after a static
 policy check of the code, and returns one validated JSON record of what
 happened. It needs no setuid bit and no daemon.
 .
 The package ships agentjail, agentjail-mcp (an MCP server), agentjail-http (an
 HTTP server), the example policies, man pages, shell completions, systemd
 units (one job per instance, or a socket-activated server; neither is
 enabled) and the AppArmor profile
 that lets the binaries create user namespaces where AppArmor restricts them
 (Ubuntu 23.10 and later). `agentjail doctor` says what the host enforces.
EOF
} >"$root/DEBIAN/control"
chmod 0644 "$root/DEBIAN/control"

(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
    xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums"

# Modes a package should have whatever the umask was; times clamped for a reproducible .deb.
find "$root" -type d -exec chmod 0755 {} +
find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

mkdir -p "$out"
deb=$out/agentjail_${version}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb.part" >/dev/null
mv -f "$deb.part" "$deb"
echo "$deb (zygote: $([ "$have_zygote" = 1 ] && echo yes || echo no); Depends: ${depends:-none})"
