#!/bin/bash
# vm.sh — run a test binary as root inside a throw-away QEMU VM whose kernel has a real cgroup v2
# hierarchy with the cpu, memory, pids and io controllers enabled at the root. This project's CI
# host has cgroup v1 controllers only; the v2 code path is proven here.
#
#   scripts/vm.sh setup                  install qemu + busybox (apt), fetch a Debian kernel
#   scripts/vm.sh selftest               boot once, check memory.max/pids.max/cgroup.kill by hand
#   scripts/vm.sh run BINARY [ARGS...]   run BINARY in a fresh VM; exit with its status
#
# Environment: AGENTJAIL_VM_ASSETS (default <repo>/target/vm-assets), AGENTJAIL_VM_TIMEOUT
# (seconds, default 600), AGENTJAIL_VM_MEM (MiB, default 768), AGENTJAIL_VM_CPUS (default 2),
# AGENTJAIL_VM_FILES (extra host files/dirs copied to the same paths in the guest, e.g. the
# agentjail binary a test finds through CARGO_BIN_EXE_agentjail).
# The guest runs under TCG (software emulation; KVM is used when /dev/kvm is usable). Exit status:
# the binary's; 124 when the VM timed out; 125 when the VM gave no result.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
assets=${AGENTJAIL_VM_ASSETS:-$repo/target/vm-assets}
timeout_s=${AGENTJAIL_VM_TIMEOUT:-600}
mem=${AGENTJAIL_VM_MEM:-768}
cpus=${AGENTJAIL_VM_CPUS:-2}

fail() { echo "vm.sh: $*" >&2; exit 125; }

# The guest's /init (busybox sh). It prints AJVM-RC=<status> on the console for the host to read.
make_init() {
    cat > "$1" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/usr/bin:/sbin:/usr/sbin HOME=/root
mkdir -p /proc /sys /dev /tmp /run
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
for c in cpu memory pids io; do echo "+$c" > /sys/fs/cgroup/cgroup.subtree_control; done
echo "AJVM: kernel $(uname -r); root subtree_control: $(cat /sys/fs/cgroup/cgroup.subtree_control)"
out=/dev/ttyS1
stty -F $out raw -echo 2>/dev/null || out=/dev/console
rc=0
if [ -x /job/run ]; then
    set --
    while IFS= read -r a; do set -- "$@" "$a"; done < /job/argv
    while IFS= read -r kv; do [ -n "$kv" ] && export "$kv"; done < /job/env
    export AGENTJAIL_IN_VM=1
    echo "AJVM: start $(cut -d' ' -f1 /proc/uptime)s"
    /job/run "$@" > $out 2>&1 < /dev/null || rc=$?
    echo "AJVM: end $(cut -d' ' -f1 /proc/uptime)s"
else
    # selftest: the kernel features the cgroup tests rely on, checked with the shell alone
    cg=/sys/fs/cgroup/selftest; mkdir $cg
    echo 16M > $cg/memory.max; echo 0 > $cg/memory.swap.max; echo 8 > $cg/pids.max
    sh -c "echo \$\$ > $cg/cgroup.procs; exec tail /dev/zero" 2>/dev/null || true
    grep -q '^oom_kill [1-9]' $cg/memory.events && echo "AJVM: ok oom_kill" || { echo "AJVM: FAIL oom_kill"; rc=1; }
    [ -f $cg/memory.peak ] && echo "AJVM: ok memory.peak" || { echo "AJVM: FAIL memory.peak"; rc=1; }
    sh -c "echo \$\$ > $cg/cgroup.procs; exec sleep 60" & sleep 0.3
    echo 1 > $cg/cgroup.kill; wait
    grep -q '^populated 0' $cg/cgroup.events && echo "AJVM: ok cgroup.kill" || { echo "AJVM: FAIL cgroup.kill"; rc=1; }
    i=0; until rmdir $cg 2>/dev/null; do i=$((i+1)); [ $i -gt 50 ] && break; sleep 0.1; done
    [ -d $cg ] && { echo "AJVM: FAIL rmdir"; rc=1; }
fi
echo "AJVM-RC=$rc"
sync
poweroff -f
EOF
    chmod 755 "$1"
}

# bzImage -> uncompressed ELF vmlinux. QEMU boots an ELF kernel through its PVH entry point,
# which skips the real-mode setup and the in-guest decompression (both slow under TCG).
unpack_kernel() {
    local img=$1 out=$2 pair tool magic off
    for pair in 'xz:\xfd7zXZ\x00' 'zstd:\x28\xb5\x2f\xfd' 'gzip:\x1f\x8b\x08'; do
        tool=${pair%%:*}; magic=${pair#*:}
        command -v "$tool" >/dev/null || continue
        off=$(LC_ALL=C grep -obUaP "$magic" "$img" | head -n1 | cut -d: -f1 || true)
        [ -n "$off" ] || continue
        tail -c +$((off + 1)) "$img" | "$tool" -dc > "$out" 2>/dev/null || true
        [ "$(head -c 4 "$out" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] && return 0
    done
    rm -f "$out"
    return 1
}

setup() {
    local pkgs=()
    command -v qemu-system-x86_64 >/dev/null || pkgs+=(qemu-system-x86)
    [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 || pkgs+=(busybox-static)
    command -v cpio >/dev/null || pkgs+=(cpio)
    command -v xz >/dev/null || pkgs+=(xz-utils)
    if [ ${#pkgs[@]} -gt 0 ]; then
        echo "vm.sh: apt-get install ${pkgs[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
    fi
    mkdir -p "$assets"
    if [ ! -s "$assets/vmlinuz" ]; then
        # the kernel linux-image-amd64 points at, e.g. linux-image-6.1.0-xx-amd64
        local pkg
        pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
        [ -n "$pkg" ] || { apt-get update -qq; pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-/ {print $2; exit}'); }
        [ -n "$pkg" ] || fail "no linux-image-amd64 in the apt sources"
        local work; work=$(mktemp -d)
        (cd "$work" && apt-get download -qq "$pkg" && dpkg-deb --fsys-tarfile ./*.deb | tar -x --wildcards './boot/vmlinuz-*')
        cp "$work"/boot/vmlinuz-* "$assets/vmlinuz"
        echo "$pkg" > "$assets/kernel-package"
        rm -rf "$work"
    fi
    if [ ! -s "$assets/vmlinux" ]; then
        unpack_kernel "$assets/vmlinuz" "$assets/vmlinux" || echo "vm.sh: could not unpack vmlinux; booting the bzImage" >&2
    fi
    local root; root=$(mktemp -d)
    mkdir -p "$root/bin" "$root/dev" "$root/etc" "$root/root"
    cp /bin/busybox "$root/bin/busybox"
    make_init "$root/init"
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' > "$root/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"
    (cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) > "$assets/base.cpio"
    rm -rf "$root"
    echo "vm.sh: ready: $(cat "$assets/kernel-package") in $assets"
}

# boot INITRD: run the VM, stream the job's output, return its status
boot() {
    local initrd=$1 work=$2
    local accel=tcg
    [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo && accel=kvm
    local kernel=$assets/vmlinux
    [ -s "$kernel" ] || kernel=$assets/vmlinuz
    : > "$work/console"; : > "$work/out"
    local rc=0
    timeout -k 5 "$timeout_s" qemu-system-x86_64 -accel "$accel" -m "$mem" -smp "$cpus" \
        -nodefaults -no-user-config -display none -no-reboot \
        -kernel "$kernel" -initrd "$initrd" \
        -append "console=ttyS0 quiet loglevel=3 panic=-1 mitigations=off" \
        -serial "file:$work/console" -serial "file:$work/out" < /dev/null > "$work/qemu.log" 2>&1 || rc=$?
    tr -d '\r' < "$work/out"
    grep -a '^AJVM:' "$work/console" | tr -d '\r' >&2 || true
    local status
    status=$(grep -a -o 'AJVM-RC=[0-9]*' "$work/console" | tail -n1 | cut -d= -f2 || true)
    if [ -z "$status" ]; then
        [ "$rc" = 124 ] && { echo "vm.sh: VM timed out after ${timeout_s}s" >&2; return 124; }
        echo "vm.sh: the VM gave no result (qemu status $rc)" >&2
        tail -n 30 "$work/qemu.log" "$work/console" >&2
        return 125
    fi
    return "$status"
}

run() {
    [ $# -ge 1 ] || fail "run: no binary"
    [ -s "$assets/base.cpio" ] || fail "no VM assets in $assets: run '$0 setup'"
    local bin; bin=$(readlink -f "$1") || fail "no such binary: $1"; shift
    local work; work=$(mktemp -d)
    trap 'rm -rf "$work"' RETURN
    local root=$work/root
    mkdir -p "$root/job"
    cp "$bin" "$root/job/run"
    : > "$root/job/argv"; for a in "$@"; do printf '%s\n' "$a" >> "$root/job/argv"; done
    : > "$root/job/env"
    local v
    for v in RUST_BACKTRACE RUST_TEST_THREADS CI; do
        [ -n "${!v:-}" ] && printf '%s=%s\n' "$v" "${!v}" >> "$root/job/env"
    done
    # the binary's shared libraries and loader, at their host paths; AGENTJAIL_VM_FILES (host
    # files or directories, space-separated) go to the same absolute paths, with their libraries
    add_libs() {
        # a script or a static binary has none: ldd and grep fail, which is fine here
        { ldd "$1" 2>/dev/null || true; } | { grep -oE '/[^ ]+' || true; } | while read -r lib; do
            [ -e "$lib" ] && cp -L --parents "$lib" "$root/"
        done
        return 0
    }
    add_libs "$bin"
    local f
    for f in ${AGENTJAIL_VM_FILES:-}; do
        f=$(readlink -f "$f") || fail "no such file: $f"
        # from / : coreutils 9.1's cp -a --parents fails ("No such file") on the parents'
        # attributes when the working directory is elsewhere
        (cd / && cp -a --parents "$f" "$root/")
        [ -f "$f" ] && [ -x "$f" ] && add_libs "$f"
    done
    cp "$assets/base.cpio" "$work/initrd"
    (cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) >> "$work/initrd"
    local rc=0
    boot "$work/initrd" "$work" || rc=$?
    return "$rc"
}

case "${1:-}" in
    setup) setup ;;
    selftest)
        [ -s "$assets/base.cpio" ] || fail "no VM assets in $assets: run '$0 setup'"
        work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
        boot "$assets/base.cpio" "$work" ;;
    run) shift; run "$@" ;;
    *) sed -n '2,14p' "$0"; exit 2 ;;
esac
