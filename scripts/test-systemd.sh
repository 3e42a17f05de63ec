#!/usr/bin/env bash
# Tests contrib/systemd/agentjail-job@.service without a running systemd (this host's PID 1
# is not systemd), in three parts:
#
#   1. `systemd-analyze verify` on the unit: every key known to this systemd, no warnings
#      (verify exits 0 on unknown keys, so any output at all counts as a failure).
#      `systemd-analyze security --offline=yes` prints the exposure table for the record.
#   2. The unit's privilege shape, run directly: the release binary as a uid/gid with no
#      passwd entry from systemd's dynamic range (like DynamicUser), no supplementary groups,
#      no_new_privs, an empty capability bounding set, in a private mount namespace with
#      the OS read-only (ProtectSystem=strict) — the action must come back status "ok".
#   3. The /proc claims in the unit's comments: with /proc/sys over-mounted read-only
#      (ProtectKernelTunables) or /proc/kmsg masked (ProtectKernelLogs) the run must NOT come
#      back ok (the kernel refuses the jail's fresh /proc mount); with /proc remounted
#      hidepid=invisible (ProtectProc=invisible) it must not either (the jail's init is
#      non-dumpable, hence invisible to agentjail). If either flips, the unit is wrong.
#
# Not done here: the delegated cgroup v2 subtree. This host is hybrid v1/v2 with no
# controllers on the v2 hierarchy, so there is nothing to delegate; the cgroup v2 tests run
# in the VM (scripts/vm-test.sh).
#
# Needs root (setpriv to another uid, unshare -m). Installs Debian's systemd package only
# for systemd-analyze when it is missing (it does not start it).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
unit=contrib/systemd/agentjail-job@.service
uid=${AGENTJAIL_TEST_UID:-61234}
fail=0
pass() { echo "ok   - $*"; }
bad() { echo "FAIL - $*"; fail=1; }

if [ "$(id -u)" != 0 ]; then
    echo "test-systemd: needs root (setpriv --reuid, unshare -m)" >&2
    exit 2
fi
if ! command -v systemd-analyze >/dev/null; then
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends systemd >/dev/null
fi
echo "# PID 1 is $(ps -p 1 -o comm=); $(systemd-analyze --version | head -1)"

# ---- 1. the unit file ----------------------------------------------------------------------
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# verify checks that the ExecStart binary exists: ExecStart is /bin/sh, which does. Verify an
# instance name, since a bare template cannot be loaded.
cp "$unit" "$tmp/"
out=$(systemd-analyze verify --man=no "$tmp/agentjail-job@test-1.service" 2>&1) && rc=0 || rc=$?
if [ "$rc" = 0 ] && [ -z "$out" ]; then
    pass "systemd-analyze verify: no errors, no warnings"
else
    bad "systemd-analyze verify (rc=$rc): $out"
fi
# The directives that must stay off are present only as comments.
for key in RestrictNamespaces ProtectControlGroups ProtectKernelTunables ProtectKernelLogs \
    ProcSubset PrivateUsers; do
    if grep -Eq "^[[:space:]]*$key=" "$unit"; then bad "$key is set; it breaks the jail"; else pass "$key stays off"; fi
done
for key in DynamicUser=yes Delegate=yes NoNewPrivileges=yes 'CapabilityBoundingSet=$' \
    ProtectSystem=strict PrivateTmp=yes KillMode=control-group; do
    if grep -Eq "^$key" "$unit"; then pass "$key"; else bad "$key missing"; fi
done
systemd-analyze security --offline=yes "$tmp/agentjail-job@test-1.service" 2>&1 | tail -1 | sed 's/^/# /'

# ---- 2. the privilege shape ----------------------------------------------------------------
[ -x target/x86_64-unknown-linux-gnu/release/agentjail ] || cargo build --release --quiet
if getent passwd "$uid" >/dev/null; then
    echo "test-systemd: uid $uid has a passwd entry; set AGENTJAIL_TEST_UID to a free one" >&2
    exit 2
fi
# The binary and action where the dynamic uid can read them (the work tree may be 0700),
# and a state dir it owns, as StateDirectory= would give it.
install -d -m 0755 "$tmp/bin" "$tmp/spool"
install -m 0755 target/x86_64-unknown-linux-gnu/release/agentjail "$tmp/bin/agentjail"
install -m 0644 examples/incident/action.json "$tmp/spool/job.json"
install -d -m 0700 -o "$uid" -g "$uid" "$tmp/state"
chmod 0755 "$tmp"

# ProtectSystem=strict + ProtectHome + PrivateTmp, approximately: a private mount namespace,
# / read-only, a fresh /tmp, the state dir the only writable place. $EXTRA adds mounts (part 3).
# MODE=run: the unit's own command (prints the record). MODE=exec: `agentjail exec --record`
# on a python3 one-liner, then prints the record file.
shape='
    set -e
    mount --make-rprivate /
    mount -t tmpfs -o mode=1777 tmpfs /tmp
    mount --bind "$STATE" "$STATE"
    mount -o remount,bind,ro / /
    if [ -n "$EXTRA" ]; then eval "$EXTRA"; fi
    as() { setpriv --reuid="$AJ_UID" --regid="$AJ_UID" --clear-groups --no-new-privs \
        --inh-caps=-all --bounding-set=-all "$@"; }
    if [ "$MODE" = run ]; then
        as "$BIN" run ${POLICY:+--policy "$SPOOL/$POLICY"} --audit-log "$STATE/audit.jsonl" "$SPOOL/job.json"
    else
        rc=0
        as "$BIN" exec ${POLICY:+--policy "$SPOOL/$POLICY"} --record "$STATE/rec.json" -- /usr/bin/python3 -I -c "print(6*7)" >/dev/null || rc=$?
        cat "$STATE/rec.json"
        exit $rc
    fi
'
# run_shape MODE EXTRA: prints the record; returns agentjail's exit status.
run_shape() {
    # /tmp is replaced inside the namespace, so keep what the job needs outside it.
    local base rc
    base=$(mktemp -d /run/agentjail-test-systemd.XXXXXX)
    chmod 0755 "$base"
    cp -a "$tmp/bin" "$tmp/spool" "$tmp/state" "$base/"
    env STATE="$base/state" SPOOL="$base/spool" BIN="$base/bin/agentjail" AJ_UID="$uid" \
        MODE="$1" EXTRA="$2" POLICY="$policy_arg" unshare -m sh -c "$shape" && rc=0 || rc=$?
    rm -rf "$base"
    return $rc
}
status_of() { python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["status"], r.get("stop_reason"))' 2>/dev/null || echo "none (no record)"; }

# The default policy requires seccomp. While the branch's seccomp allow list is still empty
# (the policy work has not landed), exec stops with sandbox_unavailable:seccomp before the
# jail is even built; then use a stand-in policy with seccomp best_effort, and say so, so the
# rest of the shape is still tested. Once the allow list exists this falls away by itself.
policy_arg=""
probe=$("$tmp/bin/agentjail" exec -- /bin/true 2>&1 >/dev/null || true)
if grep -q 'sandbox_unavailable:seccomp: empty allowlist' <<<"$probe"; then
    printf '[seccomp]\nrequirement = "best_effort"\n' >"$tmp/spool/stand-in.toml"
    policy_arg=stand-in.toml
    echo "# NOTE: default seccomp allow list is empty on this branch; using seccomp best_effort"
fi
# Part 3 must fail for the /proc reason, not for another one.
proc_refused() { grep -q 'proc' <<<"$1"; }

# `run` is the unit's command; until it is wired on this branch, say so instead of failing.
modes="exec"
probe=$("$tmp/bin/agentjail" run "$tmp/spool/job.json" 2>&1 >/dev/null || true)
if grep -q 'not wired yet' <<<"$probe"; then
    echo "# SKIP run: 'agentjail run' is not wired on this branch yet; the shape is tested with exec"
else
    modes="exec run"
fi

for mode in $modes; do
    rec=$(run_shape "$mode" "") && rc=0 || rc=$?
    st=$(status_of <<<"$rec")
    if [ "$rc" = 0 ] && [ "${st%% *}" = ok ]; then
        pass "$mode as passwd-less uid $uid, no caps, no_new_privs, / read-only, private /tmp: $st"
    else
        bad "$mode in the unit's shape: exit $rc, $st: $(head -c 600 <<<"$rec")"
    fi

    # ---- 3. which /proc directives the jail survives --------------------------------------
    # ProtectKernelTunables: a read-only bind over /proc/sys. ProtectKernelLogs: a bind of an
    # inaccessible file over /proc/kmsg. Both must make the run fail.
    for extra in 'mount --bind /proc/sys /proc/sys; mount -o remount,bind,ro /proc/sys /proc/sys' \
        'touch /tmp/aj-inacc; chmod 0 /tmp/aj-inacc; mount --bind /tmp/aj-inacc /proc/kmsg'; do
        rec=$(run_shape "$mode" "$extra") && rc=0 || rc=$?
        st=$(status_of <<<"$rec")
        if [ "$rc" != 0 ] && [ "${st%% *}" != ok ] && proc_refused "$rec"; then
            pass "$mode with [$extra]: /proc mount refused as the unit comment says ($st)"
        else
            bad "$mode with [$extra]: expected a /proc mount refusal, got exit $rc, $st: $(head -c 600 <<<"$rec")"
        fi
    done
    # ProtectProc=invisible: a procfs with hidepid=invisible over /proc hides the jail's
    # non-dumpable init from agentjail; the unit keeps it off. Must NOT come back ok.
    rec=$(run_shape "$mode" 'mount -t proc -o hidepid=invisible proc /proc') && rc=0 || rc=$?
    st=$(status_of <<<"$rec")
    if [ "$rc" != 0 ] && [ "${st%% *}" != ok ]; then
        pass "$mode with /proc remounted hidepid=invisible: refused as the unit comment says ($st)"
    else
        bad "$mode with ProtectProc=invisible shape: expected a refusal, got exit $rc, $st"
    fi
done

echo "# cgroup: $(stat -fc %T /sys/fs/cgroup) at /sys/fs/cgroup; v2 controllers: '$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null || cat /sys/fs/cgroup/cgroup.controllers 2>/dev/null || true)'"
echo "# delegated cgroup v2 subtree: not testable on this host (no v2 controllers); see scripts/vm-test.sh"
exit $fail
