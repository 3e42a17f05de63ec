#!/bin/busybox sh
# vm_jail.sh AGENTJAIL — jail tests on a real cgroup v2 kernel, through the agentjail binary.
#
# Runs as /job/run inside the QEMU guest of scripts/vm.sh (root, root cgroup, cgroup2 mounted
# with cpu/memory/pids/io enabled at the root, busybox only). scripts/vm-test.sh builds the
# release binary and starts this with it (AGENTJAIL_VM_FILES copies it and its libraries).
# Each case runs agentjail as the only process of a fresh "launcher" cgroup below the root, the
# way systemd's Delegate=yes starts a service, so agentjail's own delegation is exercised: it
# must move itself into <launcher>/agentjail-supervisor, enable memory/pids/cpu in
# <launcher>/cgroup.subtree_control and create its job cgroup as a sibling of that leaf.
# Checks:
#   1. memory hog, --memory-limit 64MiB        -> code_memory_limit (oom_kill in memory.events)
#   2. pids bomb, policy pids = 16, fork allowed -> code_pids_limit (pids.max)
#   3. CPU burner, policy cpu_time_ms = 1500, wall 60 s -> code_cpu_limit (cpu.stat usage_usec)
#   4. a plain run exits 0 with every cgroup control enforced by v2; doctor --json: delegated v2
#   5. partial delegation (only memory granted to the launcher, as on Ubuntu 24.04 hosts):
#      the record and doctor say exactly which controls v2 enforces; four forked CPU
#      burners under cpu_time_ms = 1500 stop with code_cpu_limit, counted by the supervisor
# and after every run: no agentjail-<pid>-<run> cgroup anywhere.
# Prints PASS/FAIL lines and ends with "N passed, M failed"; exits 1 on any failure.
# Not run on the host: it moves processes between cgroups of the root hierarchy.
# The payloads are the host's dash, tail, sleep and cat (copied in with their libraries), not
# busybox: every busybox applet drops privileges with setgid/setuid first (xsetgid dies on
# EPERM), and those are in no seccomp group, so a busybox payload only ever shows
# code_forbidden_syscall:setgid.
aj=${1:?usage: vm_jail.sh AGENTJAIL SH TAIL SLEEP CAT}
sh_=${2:?}; tail_=${3:?}; sleep_=${4:?}; cat_=${5:?}
[ "${AGENTJAIL_IN_VM:-}" = 1 ] || { echo "vm_jail.sh: runs inside scripts/vm.sh only" >&2; exit 2; }
if [ ! -x "$aj" ]; then
    echo "FAIL no agentjail binary at $aj (the guest's /tmp is a fresh tmpfs: pass a path outside it)"
    echo "0 passed, 1 failed"
    exit 1
fi
# The guest's / is the initramfs (rootfs), where pivot_root(2) fails with EINVAL, as on no
# real host. Stage 0 copies it into a tmpfs mounted below it and re-runs this script chrooted
# there, moved over / (switch_root's way): the root is then a mount with a parent, which
# pivot_root accepts, and not a chroot, so user namespaces are allowed.
if [ "${VMJAIL_STAGE:-}" != chroot ]; then
    r=/vmjail-root
    mkdir -p $r && mount -t tmpfs -o mode=755 tmpfs $r || { echo "FAIL tmpfs root"; echo "0 passed, 1 failed"; exit 1; }
    for d in /*; do
        case $d in /proc | /sys | /dev | /tmp | /run | $r) mkdir -p $r$d ;; *) cp -a $d $r/ ;; esac
    done
    mount -t proc proc $r/proc && mount -o rbind /sys $r/sys && mount -o rbind /dev $r/dev \
        && mount -t tmpfs -o mode=1777 tmpfs $r/tmp || { echo "FAIL chroot mounts"; echo "0 passed, 1 failed"; exit 1; }
    # switch_root's way: move the tmpfs over / and chroot into it. The process's root is then
    # the namespace's (topmost) root, so it is not "chrooted" and may create user namespaces.
    cd $r && mount -o move . / || { echo "FAIL mount --move"; echo "0 passed, 1 failed"; exit 1; }
    VMJAIL_STAGE=chroot exec chroot . /job/run "$@"
fi
cg=/sys/fs/cgroup
work=/tmp/vmjail
mkdir -p $work /usr/bin
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
now() { cut -d' ' -f1 /proc/uptime; }
t_all=$(now)

# policy FILE PIDS CPU_MS [REQUIREMENT]: a policy for this guest: binds what exists here (/usr
# the payloads, /lib and /lib64 their libraries); it executes no language (the busybox guest
# has no Python, whose version the loader would detect; exec runs the payloads directly), so
# interpreter.python only has to lie under a bind; cgroups required (unless REQUIREMENT says
# best_effort) so a missing v2 control fails the case.
policy() {
    cat > "$1" <<EOF
version = 1
name = "vm"
description = "vm_jail.sh: busybox guest, fork allowed, cgroups required"
[budget]
max_seconds = 90
[languages]
execute = []
[interpreter]
python = "/usr/bin/python3"
[limits]
wall_time_ms = 60000
cpu_time_ms = $3
memory = "128MiB"
pids = $2
tmp_size = "16MiB"
stdout = "64KiB"
stderr = "64KiB"
[filesystem]
read_only = ["/usr", "/lib"]
optional = ["/bin", "/lib64"]
[seccomp]
allow_groups = ["basic_io", "files_read", "files_write_tmp", "memory", "process_self", "threads",
                "signals", "time", "sleep", "poll", "pipes", "exec", "system_info", "process_spawn"]
[cgroup]
requirement = "${4:-required}"
EOF
}
policy $work/vm.toml 32 60000
policy $work/pids.toml 16 60000
policy $work/cpu.toml 32 1500
policy $work/partial.toml 32 1500 best_effort

# launched NAME CMD...: run CMD as the only process of the fresh cgroup $cg/NAME (stdout and
# stderr to $work/NAME.out / .err, status to $work/NAME.rc, seconds to $work/NAME.s).
launched() {
    name=$1; shift
    mkdir "$cg/$name" || { bad "$name: mkdir $cg/$name"; return 1; }
    t0=$(now)
    sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg/$name" "$@" \
        > $work/$name.out 2> $work/$name.err
    echo $? > $work/$name.rc
    t1=$(now)
    echo "$t0 $t1" | awk '{printf "%.2f", $2 - $1}' > $work/$name.s
    echo "--- $name: exit $(cat $work/$name.rc) in $(cat $work/$name.s) s: $*"
    sed 's/^/    stderr: /' $work/$name.err | head -n 5
}

# field FILE KEY: the scalar value of "KEY" in a JSON record (first occurrence, quotes removed)
field() {
    tr -d '\n' < "$1" | grep -o "\"$2\": *[^,}]*" | head -n1 | sed 's/^[^:]*: *//; s/"//g'
}
# control FILE NAME: the enforcement entry {control: NAME, ...} of a record, on one line
control() {
    tr -d '\n' < "$1" | sed 's/  */ /g' | grep -o "{[^{}]*\"control\": *\"$2\"[^{}]*}" | head -n1
}

# expect_v2 CASE RECORD CONTROL MECHANISM: CONTROL enforced by MECHANISM (a cgroup v2 file)
expect_v2() {
    c=$(control "$2" "$3")
    case "$c" in
        *'"state": "enforced"'*"\"mechanism\": \"$4\""* | *"\"mechanism\": \"$4\""*'"state": "enforced"'*)
            ok "$1: $3 enforced by $4" ;;
        *) bad "$1: $3 not enforced by $4: ${c:-no such control}" ;;
    esac
}

# after CASE LAUNCHER: agentjail delegated below the launcher and left no job cgroup behind
after() {
    left=$(find $cg -name 'agentjail-[0-9]*' 2>/dev/null)
    if [ -z "$left" ]; then ok "$1: no agentjail-* cgroup left"; else bad "$1: left behind: $left"; fi
    if [ -d "$cg/$2/agentjail-supervisor" ] && grep -qw memory "$cg/$2/cgroup.subtree_control" \
        && grep -qw pids "$cg/$2/cgroup.subtree_control" && grep -qw cpu "$cg/$2/cgroup.subtree_control"; then
        ok "$1: delegation below $cg/$2 (supervisor leaf, subtree_control: $(cat $cg/$2/cgroup.subtree_control))"
    else
        bad "$1: no delegation below $cg/$2: $(ls $cg/$2 | grep agentjail); subtree_control: $(cat $cg/$2/cgroup.subtree_control)"
    fi
}

# expect_stop CASE REASON: exit 124, the stderr line and the record's stop_reason
expect_stop() {
    rc=$(cat $work/$1.rc)
    reason=$(field $work/$1.json stop_reason)
    if [ "$rc" = 124 ] && [ "$reason" = "$2" ] && grep -q "agentjail: stopped: $2" $work/$1.err; then
        ok "$1: exit 124, stop_reason $2 ($(cat $work/$1.s) s)"
    else
        bad "$1: expected exit 124 + $2, got exit $rc, stop_reason ${reason:-none}"
        [ -s $work/$1.json ] && sed 's/^/    record: /' $work/$1.json | head -n 60
    fi
}

echo "vm_jail.sh: kernel $(uname -r), agentjail $aj"

# 1. memory: tail buffers /dev/zero (no newline) until the OOM killer stops it at memory.max
launched mem "$aj" exec --policy $work/vm.toml --record $work/mem.json --memory-limit 64MiB \
    -- "$tail_" /dev/zero
expect_stop mem code_memory_limit
expect_v2 mem $work/mem.json cgroup_memory "cgroup v2 memory.max"
oom=$(field $work/mem.json oom_kills)
peak=$(field $work/mem.json peak_memory_bytes)
if [ "${oom:-0}" -ge 1 ] 2>/dev/null; then ok "mem: oom_kills $oom (memory.events)"; else bad "mem: oom_kills ${oom:-none}"; fi
if [ "$peak" -gt $((16 << 20)) ] 2>/dev/null && [ "$peak" -le $((64 << 20)) ]; then
    ok "mem: peak_memory_bytes $peak (memory.peak, <= 64MiB)"
else
    bad "mem: peak_memory_bytes ${peak:-none} not in (16MiB, 64MiB]"
fi
after mem mem

# 2. pids: background sleepers until fork fails at pids.max; dash then exits non-zero
# (the jail also sets RLIMIT_NPROC = limits.pids, counted per uid over the whole host: when it
# trips first, fork fails with pids.events max = 0 and the run ends as code_runtime_error)
launched pids "$aj" exec --policy $work/pids.toml --record $work/pids.json \
    -- "$sh_" -c "while :; do $sleep_ 30 & done"
expect_stop pids code_pids_limit
expect_v2 pids $work/pids.json cgroup_pids "cgroup v2 pids.max"
hits=$(field $work/pids.json pids_limit_hits)
if [ "${hits:-0}" -ge 1 ] 2>/dev/null; then ok "pids: pids_limit_hits $hits (pids.events max)"; else bad "pids: pids_limit_hits ${hits:-none}"; fi
after pids pids

# 3. CPU: a busy loop, 60 s of wall time but 1.5 s of CPU (counted from the job's cpu.stat)
launched cpu "$aj" exec --policy $work/cpu.toml --record $work/cpu.json \
    -- "$sh_" -c 'while :; do :; done'
expect_stop cpu code_cpu_limit
expect_v2 cpu $work/cpu.json cgroup_cpu "cgroup v2 cpu.max"
cpu_ms=$(field $work/cpu.json cpu_ms)
wall_ms=$(field $work/cpu.json wall_ms)
if [ "$cpu_ms" -ge 1500 ] 2>/dev/null && [ "$wall_ms" -lt 30000 ]; then
    ok "cpu: cpu_ms $cpu_ms >= 1500, wall_ms $wall_ms (stopped long before the 60 s wall limit)"
else
    bad "cpu: cpu_ms ${cpu_ms:-none}, wall_ms ${wall_ms:-none}"
fi
after cpu cpu

# 4. a plain run: exit 0, stdout through, every cgroup control enforced by v2
launched plain "$aj" exec --policy $work/vm.toml --record $work/plain.json \
    -- "$sh_" -c "echo hello from v2; $cat_ /proc/self/cgroup"
rc=$(cat $work/plain.rc)
reason=$(field $work/plain.json stop_reason)
if [ "$rc" = 0 ] && [ "$reason" = success ] && grep -q '^hello from v2$' $work/plain.out; then
    ok "plain: exit 0, stop_reason success ($(cat $work/plain.s) s)"
else
    bad "plain: exit $rc, stop_reason ${reason:-none}, stdout: $(head -c 200 $work/plain.out)"
    [ -s $work/plain.json ] && sed 's/^/    record: /' $work/plain.json | head -n 60
fi
# the job runs in its own cgroup namespace whose root is the job cgroup
if grep -qx '0::/' $work/plain.out; then ok "plain: /proc/self/cgroup in the jail is 0::/ (cgroup namespace)"
else bad "plain: /proc/self/cgroup in the jail: $(grep :: $work/plain.out)"; fi
expect_v2 plain $work/plain.json cgroup_memory "cgroup v2 memory.max"
expect_v2 plain $work/plain.json cgroup_pids "cgroup v2 pids.max"
expect_v2 plain $work/plain.json cgroup_cpu "cgroup v2 cpu.max"
after plain plain

# 4b. doctor, from a fresh launcher cgroup: cgroup v2 delegated, memory/pids/cpu via v2
launched doctor "$aj" doctor --json
tr -d '\n' < $work/doctor.out | sed 's/  */ /g' > $work/doctor.flat
v2=$(grep -o '{[^{}]*"control": *"cgroup_v2"[^{}]*}' $work/doctor.flat)
case "$v2" in
    *'"available": true'*'v2 only, delegated'* | *'v2 only, delegated'*'"available": true'*) ok "doctor: cgroup_v2 available, delegated" ;;
    *) bad "doctor: cgroup_v2: ${v2:-missing} (exit $(cat $work/doctor.rc))" ;;
esac
for c in memory pids cpu; do
    e=$(grep -o "{[^{}]*\"control\": *\"cgroup_$c\"[^{}]*}" $work/doctor.flat)
    case "$e" in
        *'"available": true'*'via cgroup v2'* | *'via cgroup v2'*'"available": true'*) ok "doctor: cgroup_$c via cgroup v2" ;;
        *) bad "doctor: cgroup_$c: ${e:-missing}" ;;
    esac
done

# 5. partial delegation: the launcher's parent grants memory only (pids and cpu are not in
# its cgroup.controllers), as a host that delegates just memory does.
mkdir -p $cg/partial && echo +memory > $cg/partial/cgroup.subtree_control
mkdir -p $work/partial
launched partial/cpu "$aj" exec --policy $work/partial.toml --record $work/partial-cpu.json \
    -- "$sh_" -c 'for i in 1 2 3 4; do (while :; do :; done) & done; while :; do '"$sleep_"' 1; done'
rc=$(cat $work/partial/cpu.rc)
reason=$(field $work/partial-cpu.json stop_reason)
cpu_ms=$(field $work/partial-cpu.json cpu_ms)
wall_ms=$(field $work/partial-cpu.json wall_ms)
if [ "$rc" = 124 ] && [ "$reason" = code_cpu_limit ] && [ "$cpu_ms" -ge 1500 ] 2>/dev/null \
    && [ "$cpu_ms" -lt 3000 ] && [ "$wall_ms" -lt 10000 ]; then
    ok "partial: forked burners stopped by the supervisor's count: cpu_ms $cpu_ms, wall_ms $wall_ms"
else
    bad "partial: exit $rc, stop_reason ${reason:-none}, cpu_ms ${cpu_ms:-none}, wall_ms ${wall_ms:-none}"
    [ -s $work/partial-cpu.json ] && sed 's/^/    record: /' $work/partial-cpu.json | head -n 80
fi
expect_v2 partial $work/partial-cpu.json cgroup_memory "cgroup v2 memory.max"
for c in cgroup_pids cgroup_cpu; do
    e=$(control $work/partial-cpu.json $c)
    case "$e" in
        *'"state": "enforced"'*) bad "partial: $c claims enforced without the controller: $e" ;;
        *'"state": '*) ok "partial: $c not claimed: $(echo "$e" | grep -o '"state": *"[a-z]*"')" ;;
        *) bad "partial: no $c entry" ;;
    esac
done
e=$(control $work/partial-cpu.json cpu_time)
case "$e" in
    *'"state": "enforced"'*) ok "partial: cpu_time enforced by the supervisor" ;;
    *) bad "partial: cpu_time: ${e:-missing}" ;;
esac
left=$(find $cg -name 'agentjail-[0-9]*' 2>/dev/null)
if [ -z "$left" ]; then ok "partial: no agentjail-* cgroup left"; else bad "partial: left behind: $left"; fi
launched partial/doctor "$aj" doctor --json
tr -d '\n' < $work/partial/doctor.out | sed 's/  */ /g' > $work/partial-doctor.flat
for c in memory pids cpu; do
    e=$(grep -o "{[^{}]*\"control\": *\"cgroup_$c\"[^{}]*}" $work/partial-doctor.flat)
    case "$c:$e" in
        memory:*'"available": true'*) ok "doctor (partial): cgroup_memory available" ;;
        pids:*'"available": false'* | cpu:*'"available": false'*) ok "doctor (partial): cgroup_$c not available" ;;
        *) bad "doctor (partial): cgroup_$c: ${e:-missing}" ;;
    esac
done

echo "vm_jail.sh: $(echo "$t_all $(now)" | awk '{printf "%.1f", $2 - $1}') s in the guest"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
