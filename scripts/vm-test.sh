#!/bin/bash
# vm-test.sh — build the cgroup v2 test (tests/cgroup_v2.rs) and the doctor's unit tests and run
# them as root inside the QEMU VM (scripts/vm.sh), whose kernel has a real cgroup v2 hierarchy
# with memory, pids and cpu delegated. Runs `scripts/vm.sh setup` first when the VM assets are
# missing. Prints its timings; exits non-zero when any VM run fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$(dirname "$here")"
assets=${AGENTJAIL_VM_ASSETS:-$PWD/target/vm-assets}
t0=$(date +%s)
[ -s "$assets/base.cpio" ] || "$here/vm.sh" setup
t1=$(date +%s)
# test executables from cargo's JSON messages: "executable":"/abs/path" for the named targets
exe() {
    cargo test --no-run "$@" --message-format=json 2>/dev/null \
        | grep -o '"executable":"[^"]*"' | cut -d'"' -f4 | tail -n1
}
v2=$(exe --test cgroup_v2)
lib=$(exe --lib)
[ -x "$v2" ] && [ -x "$lib" ] || { echo "vm-test.sh: could not build the tests" >&2; exit 2; }
t2=$(date +%s)
rc=0
"$here/vm.sh" run "$v2" --test-threads=1 --nocapture || rc=$?
t3=$(date +%s)
"$here/vm.sh" run "$lib" doctor --test-threads=1 --nocapture || rc=$?
t4=$(date +%s)
echo "vm-test.sh: setup $((t1 - t0)) s, build $((t2 - t1)) s, VM runs: cgroup_v2 $((t3 - t2)) s, doctor $((t4 - t3)) s; status $rc"
exit "$rc"
