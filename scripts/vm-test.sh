#!/bin/bash
# vm-test.sh — build the cgroup v2 test and run it as root inside the QEMU VM (scripts/vm.sh),
# where the kernel has a real cgroup v2 hierarchy with memory, pids and cpu delegated.
# Runs `scripts/vm.sh setup` first when the VM assets are missing. Prints its timings.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$(dirname "$here")"
assets=${AGENTJAIL_VM_ASSETS:-$PWD/target/vm-assets}
t0=$(date +%s)
[ -s "$assets/base.cpio" ] || "$here/vm.sh" setup
t1=$(date +%s)
bin=$(cargo test --no-run --test cgroup_v2 --message-format=json 2>/dev/null \
      | sed -n 's/.*"executable":"\([^"]*cgroup_v2[^"]*\)".*/\1/p' | tail -n1)
[ -x "$bin" ] || { echo "vm-test.sh: could not build the cgroup_v2 test" >&2; exit 2; }
t2=$(date +%s)
rc=0
"$here/vm.sh" run "$bin" --test-threads=1 --nocapture || rc=$?
t3=$(date +%s)
echo "vm-test.sh: setup $((t1 - t0)) s, build $((t2 - t1)) s, VM run $((t3 - t2)) s, status $rc"
exit "$rc"
