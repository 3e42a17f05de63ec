#!/bin/bash
# vm-test.sh — prove the cgroup v2 path inside the QEMU VM (scripts/vm.sh), whose kernel has a
# real cgroup v2 hierarchy with memory, pids and cpu delegated:
#   cgroup  the cgroup v2 test (tests/jail/cgroup_v2.rs) and the doctor's unit tests, as root
#   jail    the release agentjail binary itself (tests/vm_jail.sh): OOM -> code_memory_limit,
#           pids.max -> code_pids_limit, cpu.stat -> code_cpu_limit, a clean run with every
#           cgroup control enforced by v2, doctor --json, no job cgroup left behind
#   scripts/vm-test.sh [all|cgroup|jail]     (default all)
# Runs `scripts/vm.sh setup` first when the VM assets are missing. Prints its timings; exits
# non-zero when any VM run fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$(dirname "$here")"
what=${1:-all}
case "$what" in all | cgroup | jail) ;; *) sed -n '2,10p' "$0"; exit 2 ;; esac
assets=${AGENTJAIL_VM_ASSETS:-$PWD/target/vm-assets}
t0=$(date +%s)
[ -s "$assets/base.cpio" ] || "$here/vm.sh" setup
t1=$(date +%s)
# test executables from cargo's JSON messages: "executable":"/abs/path" for the named targets
# Only test artifacts ("test":true in their profile): the agentjail binary the integration
# tests need is in the same stream and must not be picked.
exe() {
    cargo test --no-run "$@" --message-format=json 2>/dev/null \
        | grep -E '"profile":\{[^}]*"test":true' | grep -o '"executable":"[^"]*"' | cut -d'"' -f4 | tail -n1
}
rc=0
times="setup $((t1 - t0)) s"
if [ "$what" != jail ]; then
    v2=$(exe --test jail)
    # doctor's unit tests are the agentjail binary's (src/commands/doctor.rs).
    lib=$(exe --bin agentjail)
    [ -x "$v2" ] && [ -x "$lib" ] || { echo "vm-test.sh: could not build the tests" >&2; exit 2; }
    t2=$(date +%s)
    # The jail test binary holds every jail subject: only its cgroup_v2 module runs here.
    "$here/vm.sh" run "$v2" cgroup_v2:: --test-threads=1 --nocapture || rc=$?
    t3=$(date +%s)
    "$here/vm.sh" run "$lib" doctor --test-threads=1 --nocapture || rc=$?
    t4=$(date +%s)
    times="$times, test build $((t2 - t1)) s, VM runs: cgroup_v2 $((t3 - t2)) s, doctor $((t4 - t3)) s"
fi
if [ "$what" != cgroup ]; then
    # the real binary, at its host path in the guest (outside /tmp: the guest mounts a tmpfs there)
    t5=$(date +%s)
    cargo build --release --quiet || { echo "vm-test.sh: cargo build --release failed" >&2; exit 2; }
    # The guest mounts a fresh tmpfs on /tmp, and a CI clone may live under /tmp: stage the
    # binary under /var/tmp (same absolute path in the guest), removed afterwards.
    stage=$(mktemp -d /var/tmp/agentjail-vm.XXXXXX)
    trap 'rm -rf "$stage"' EXIT
    cp target/x86_64-unknown-linux-gnu/release/agentjail "$stage/agentjail"
    aj=$stage/agentjail
    t6=$(date +%s)
    out=$(mktemp)
    jrc=0
    # payloads: the host's dash, tail, sleep and cat (busybox applets die in the jail: see vm_jail.sh)
    tools=()
    for t in dash tail sleep cat; do
        tools+=("$(readlink -f "$(command -v $t)")") || { echo "vm-test.sh: no $t on this host" >&2; exit 2; }
    done
    AGENTJAIL_VM_FILES="$aj ${tools[*]}" "$here/vm.sh" run "$PWD/tests/vm_jail.sh" "$aj" "${tools[@]}" \
        | tee "$out" || jrc=$?
    t7=$(date +%s)
    # the guest script ends with "N passed, M failed"; no such line is a failure too
    summary=$(grep -aE '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n1 || true)
    rm -f "$out"
    if [ "$jrc" = 0 ] && [ -z "$summary" ]; then
        echo "vm-test.sh: vm_jail.sh printed no summary line" >&2
        jrc=1
    fi
    [ "$jrc" = 0 ] || { echo "vm-test.sh: jail tests in the VM failed (status $jrc): ${summary:-no summary}" >&2; rc=$jrc; }
    times="$times, release build $((t6 - t5)) s, VM run: jail $((t7 - t6)) s (${summary:-no summary})"
fi
echo "vm-test.sh: $times; status $rc"
exit "$rc"
