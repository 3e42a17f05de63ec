#!/usr/bin/env bash
# Install agentjail: the binaries (agentjail, agentjail-mcp, which `agentjail mcp` runs,
# agentjail-http, which `agentjail serve --http` runs, and
# agentjail-zygote, which `serve --zygote` runs, when scripts/build-zygote.sh built it),
# the policies, the man pages, the shell completions, and —
# where the host has them — the systemd unit and the AppArmor profile.
#
#   scripts/install.sh [--prefix /usr/local] [--destdir DIR] [--with-systemd] [--no-build] [--package]
#
#   --prefix DIR     where bin/ and share/ go (default /usr/local). The unit's ExecStart and
#                    the AppArmor attachment path are rewritten to DIR/bin/agentjail.
#   --destdir DIR    stage everything under DIR (packaging; also read from $DESTDIR).
#   --with-systemd   install the unit even when DESTDIR/etc/systemd/system does not exist.
#   --no-build       use target/x86_64-unknown-linux-gnu/release/agentjail as it is.
#   --package        stage for a distribution package (needs --destdir; scripts/package.sh):
#                    no install manifest (the package manager keeps the file list); every
#                    systemd unit (the job template, the serve socket and service) under
#                    PREFIX/lib/systemd/system and the sysusers.d file as
#                    PREFIX/lib/sysusers.d/agentjail.conf, where a distribution ships them
#                    (/etc/systemd/system is the administrator's); the AppArmor profile in
#                    /etc/apparmor.d always. Nothing is loaded or reloaded: the package's
#                    maintainer scripts do that on the target host.
#
# Every path written (files, and the directories install created) is listed in
# PREFIX/share/agentjail/install-manifest.txt; scripts/uninstall.sh removes exactly those.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

prefix=/usr/local
destdir=${DESTDIR:-}
with_systemd=0
build=1
package=0
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
        --prefix=*) prefix=${1#*=}; shift ;;
        --destdir) destdir=${2:?--destdir needs a directory}; shift 2 ;;
        --destdir=*) destdir=${1#*=}; shift ;;
        --with-systemd) with_systemd=1; shift ;;
        --no-build) build=0; shift ;;
        --package) package=1; shift ;;
        -h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "install.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
case "$prefix" in
    /*) ;;
    *) echo "install.sh: --prefix must be absolute, got '$prefix'" >&2; exit 2 ;;
esac
prefix=${prefix%/}
destdir=${destdir%/}
if [ "$package" = 1 ] && [ -z "$destdir" ]; then
    echo "install.sh: --package stages files for a package and needs --destdir" >&2
    exit 2
fi

if [ "$build" = 1 ]; then
    # The workspace's default members: agentjail, agentjail-mcp and agentjail-http.
    cargo build --release --quiet
fi
bin=target/x86_64-unknown-linux-gnu/release/agentjail
for b in "$bin" "$bin-mcp" "$bin-http"; do
    [ -x "$b" ] || { echo "install.sh: $b missing; run cargo build --release" >&2; exit 2; }
done

docs=$(mktemp -d)
trap 'rm -rf "$docs"' EXIT
scripts/gen-docs.sh "$docs" >/dev/null

manifest_rel=$prefix/share/agentjail/install-manifest.txt
manifest_new=$(mktemp)
trap 'rm -rf "$docs" "$manifest_new"' EXIT

# A DESTDIR that does not exist yet is created first: the walk up in mkdirs stops at a
# directory that exists, and "$destdir/" is the last one it can reach.
if [ -n "$destdir" ]; then
    mkdir -p "$destdir"
fi
# mkdir -p that records each directory it creates, outermost first.
mkdirs() {
    local d=$1 missing=()
    while [ ! -d "$destdir$d" ]; do
        missing=("$d" "${missing[@]}")
        d=$(dirname "$d")
    done
    for d in "${missing[@]}"; do
        install -d -m 0755 "$destdir$d"
        echo "d $d" >>"$manifest_new"
    done
}
# put MODE SRC DEST (DEST without destdir)
put() {
    mkdirs "$(dirname "$3")"
    install -m "$1" "$2" "$destdir$3"
    echo "f $3" >>"$manifest_new"
    echo "installed $destdir$3"
}

put 0755 "$bin" "$prefix/bin/agentjail"
put 0755 "$bin-mcp" "$prefix/bin/agentjail-mcp"
put 0755 "$bin-http" "$prefix/bin/agentjail-http"
# `serve --zygote` needs agentjail-zygote next to agentjail (scripts/build-zygote.sh --release
# builds it; without it every other command works and `agentjail doctor` says it is absent).
if [ -x "$bin-zygote" ]; then
    put 0755 "$bin-zygote" "$prefix/bin/agentjail-zygote"
fi
for p in policies/*.toml; do
    put 0644 "$p" "$prefix/share/agentjail/policies/$(basename "$p")"
done
for m in "$docs"/man/*.1; do
    put 0644 "$m" "$prefix/share/man/man1/$(basename "$m")"
done
put 0644 "$docs/completions/agentjail.bash" "$prefix/share/bash-completion/completions/agentjail"
put 0644 "$docs/completions/_agentjail" "$prefix/share/zsh/site-functions/_agentjail"
put 0644 "$docs/completions/agentjail.fish" "$prefix/share/fish/vendor_completions.d/agentjail.fish"
for f in contrib/systemd/README.md contrib/systemd/example-dispatch.sh contrib/apparmor/README.md; do
    [ -f "$f" ] && put 0644 "$f" "$prefix/share/doc/agentjail/$(basename "$(dirname "$f")")-$(basename "$f")"
done

# The unit and the profile name the binary by path; point them at this prefix.
rewrite() { sed "s#/usr/local/bin/agentjail#$prefix/bin/agentjail#g" "$1" >"$2"; }
if [ "$package" = 1 ]; then
    for u in agentjail-job@.service agentjail.service agentjail.socket; do
        rewrite "contrib/systemd/$u" "$docs/$u"
        put 0644 "$docs/$u" "$prefix/lib/systemd/system/$u"
    done
    put 0644 contrib/systemd/agentjail.sysusers "$prefix/lib/sysusers.d/agentjail.conf"
elif [ "$with_systemd" = 1 ] || [ -d "$destdir/etc/systemd/system" ]; then
    rewrite contrib/systemd/agentjail-job@.service "$docs/unit"
    put 0644 "$docs/unit" /etc/systemd/system/agentjail-job@.service
    if [ -z "$destdir" ] && [ -d /run/systemd/system ]; then
        systemctl daemon-reload || echo "install.sh: systemctl daemon-reload failed; run it yourself" >&2
    fi
fi
if [ "$package" = 1 ] || [ -d "$destdir/etc/apparmor.d" ]; then
    rewrite contrib/apparmor/agentjail "$docs/aa"
    put 0644 "$docs/aa" /etc/apparmor.d/agentjail
    if [ -z "$destdir" ] && [ -d /sys/kernel/security/apparmor ] && command -v apparmor_parser >/dev/null; then
        apparmor_parser -r /etc/apparmor.d/agentjail ||
            echo "install.sh: apparmor_parser -r /etc/apparmor.d/agentjail failed (needs AppArmor >= 4.0 for 'userns')" >&2
    fi
fi

if [ "$package" = 1 ]; then
    # The package manager keeps the file list; a manifest in the package would be a file
    # that lists itself and that no one reads.
    exit 0
fi

# The manifest lists itself last, so uninstall removes it too. A re-install merges with the
# previous manifest so directories created by the first install are still removed.
mkdirs "$(dirname "$manifest_rel")"
echo "f $manifest_rel" >>"$manifest_new"
if [ -f "$destdir$manifest_rel" ]; then
    cat "$destdir$manifest_rel" "$manifest_new" | awk '!seen[$0]++' >"$manifest_new.all"
    mv "$manifest_new.all" "$manifest_new"
fi
install -m 0644 "$manifest_new" "$destdir$manifest_rel"
echo "manifest: $destdir$manifest_rel ($(wc -l <"$manifest_new") entries)"
