#!/usr/bin/env bash
# Tests contrib/systemd/agentjail.socket + agentjail.service (`agentjail serve` behind a
# systemd socket), in the way scripts/test-systemd.sh tests agentjail-job@.service:
#
#   1. `systemd-analyze verify` on the pair (any output counts as a failure: verify exits 0
#      on unknown keys), the directives that must stay off are absent, the ones the shape
#      depends on are present; `systemd-analyze security --offline=yes` is printed.
#   2. The pair run for real:
#      - where systemd is PID 1: the units are installed as runtime units
#        (/run/systemd/system, renamed agentjail-test.*, socket under /run/agentjail-test),
#        the socket is started, and the client below talks to it; then both are stopped.
#      - otherwise (a container, like the development host): systemd's own
#        systemd-socket-activate plays PID 1's part of the protocol: it creates the listening
#        socket, waits for the first connection, and execs the service's command with the
#        socket as fd 3 and LISTEN_FDS/LISTEN_PID set, exactly as ListenStream=/Accept=no
#        do. SocketMode=0660/SocketGroup= are applied to the file as PID 1 would. The command
#        runs in the unit's privilege shape, as in test-systemd.sh: a passwd-less uid (like
#        DynamicUser), no supplementary groups, no capabilities, no_new_privs, a private mount
#        namespace with / read-only (ProtectSystem=strict), a private /tmp, the state
#        directory the only writable place.
#      In both, a client in the socket's group runs the seed incident action (status ok,
#      the seed's numbers, its uid in the record), a session (a value kept between calls,
#      closed), and checks that another connection cannot use that session; a uid outside
#      the group is refused by the socket's mode; the audit log has the records. Then a
#      job still running when the service is stopped gets its record (KillMode=mixed: the
#      service alone gets SIGTERM and lets jobs finish), the service exits 0, the socket file
#      is still there (it is the socket unit's), and nothing is left: no process of the
#      service's uid, no job cgroup, no mount, no temp entry.
#
# Not done here (see contrib/systemd/README.md): the delegated cgroup v2 subtree (this host
# has no v2 controllers; scripts/vm-test.sh covers cgroup v2), DynamicUser's chown of the
# delegated cgroup, IPAddressDeny, the syscall deny list and MemoryDenyWriteExecute as
# systemd applies them: those need systemd as PID 1 (part 2's first branch).
#
# Needs root. Installs Debian's systemd package only for systemd-analyze and
# systemd-socket-activate when they are missing (it does not start systemd).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
PY=/usr/bin/python3
socket_unit=contrib/systemd/agentjail.socket
service_unit=contrib/systemd/agentjail.service
svc_uid=${AGENTJAIL_TEST_UID:-61240}   # the service (DynamicUser stand-in)
grp=$((svc_uid + 1))                   # the socket's group (SocketGroup=agentjail stand-in)
client_uid=$((svc_uid + 2))            # a client in that group
outsider_uid=$((svc_uid + 3))          # a uid outside it
fail=0
pass() { echo "ok   - $*"; }
bad() { echo "FAIL - $*"; fail=1; }

if [ "$(id -u)" != 0 ]; then
    echo "test-systemd-serve: needs root" >&2
    exit 2
fi
if ! command -v systemd-analyze >/dev/null || ! command -v systemd-socket-activate >/dev/null; then
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends systemd >/dev/null
fi
echo "# PID 1 is $(ps -p 1 -o comm=); $(systemd-analyze --version | head -1)"
bin=target/x86_64-unknown-linux-gnu/release/agentjail
[ -x "$bin" ] || cargo build --release --quiet
for id in $svc_uid $grp $client_uid $outsider_uid; do
    if getent passwd "$id" >/dev/null || getent group "$id" >/dev/null; then
        echo "test-systemd-serve: id $id is taken; set AGENTJAIL_TEST_UID to a free range of 4" >&2
        exit 2
    fi
done

tmp=$(mktemp -d)
base=$(mktemp -d /run/agentjail-test-serve.XXXXXX)
cleanup() { rm -rf "$tmp" "$base" /var/lib/private/agentjail-test-serve /var/lib/agentjail-test-serve; }
trap cleanup EXIT
chmod 0755 "$base"

# ---- 1. the unit files ---------------------------------------------------------------------
# verify checks that ExecStart's binary exists: point it at this build.
cp "$socket_unit" "$tmp/"
sed "s|/usr/local/bin/agentjail|$PWD/$bin|" "$service_unit" >"$tmp/agentjail.service"
out=$(cd "$tmp" && systemd-analyze verify --man=no agentjail.socket agentjail.service 2>&1) && rc=0 || rc=$?
if [ "$rc" = 0 ] && [ -z "$out" ]; then
    pass "systemd-analyze verify agentjail.socket agentjail.service: no errors, no warnings"
else
    bad "systemd-analyze verify (rc=$rc): $out"
fi
for key in RestrictNamespaces ProtectControlGroups ProtectKernelTunables ProtectKernelLogs \
    ProcSubset ProtectProc PrivateUsers; do
    if grep -Eq "^[[:space:]]*$key=" "$service_unit"; then bad "$key is set; it breaks the jail"; else pass "$key stays off"; fi
done
for key in DynamicUser=yes Delegate=yes NoNewPrivileges=yes 'CapabilityBoundingSet=$' \
    ProtectSystem=strict PrivateTmp=yes KillMode=mixed Requires=agentjail.socket LimitCORE=0 \
    'ExecStart=.* serve --socket /run/agentjail/agentjail.sock '; do
    if grep -Eq "^$key" "$service_unit"; then pass "service: $key"; else bad "service: $key missing"; fi
done
for key in 'ListenStream=/run/agentjail/agentjail.sock$' SocketMode=0660 SocketGroup=agentjail \
    Accept=no; do
    if grep -Eq "^$key" "$socket_unit"; then pass "socket: $key"; else bad "socket: $key missing"; fi
done
(cd "$tmp" && systemd-analyze security --offline=yes agentjail.service 2>&1 | tail -1 | sed 's/^/# /')

# ---- 2. the pair, run ----------------------------------------------------------------------
install -d -m 0755 "$base/bin" "$base/run"
install -m 0755 "$bin" "$base/bin/agentjail"
install -m 0644 examples/incident/action.json "$base/action.json"

# The client: one connection runs the action and a session; a second one must not reach the
# session. Prints ok/FAIL lines.
cat >"$base/client.py" <<'EOF'
import json, os, socket, sys
path, action = sys.argv[1], sys.argv[2]
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(path)
    return s, s.makefile("rb")
def call(c, req):
    c[0].sendall((json.dumps(req) + "\n").encode())
    return json.loads(c[1].readline())
def check(what, cond, got):
    print(("ok   - " if cond else "FAIL - ") + what + ("" if cond else ": %s" % json.dumps(got)[:600]))
c = conn()
r = call(c, {"id": "r1", "op": "run", "action": json.load(open(action))})
rec = r.get("record", {})
out = rec.get("output") or {}
check("run: status ok with the seed's numbers (P1, 60 rows, 1 chargeback)",
      rec.get("status") == "ok" and out.get("incident_severity") == "P1"
      and out.get("sample_size") == 60 and out.get("chargeback_alerts") == 1, r)
check("run: the record names the client's uid %d" % os.getuid(),
      rec.get("caller") == {"uid": os.getuid()}, rec.get("caller"))
sid = call(c, {"id": "s1", "op": "session_start"}).get("session")
check("session_start", bool(sid), sid)
a = call(c, {"id": "s2", "op": "session_exec", "session": sid, "code": "x = 6 * 7"})
b = call(c, {"id": "s3", "op": "session_exec", "session": sid, "code": "x"})
check("session: a value kept between calls",
      a.get("record", {}).get("status") == "ok" and b.get("record", {}).get("value") == "42", [a, b])
other = conn()
e = call(other, {"id": "x", "op": "session_exec", "session": sid, "code": "x"})
check("another connection cannot use the session", e.get("error", {}).get("code") == "unknown_session", e)
other[0].close()
z = call(c, {"id": "s4", "op": "session_close", "session": sid})
check("session_close", z.get("closed") is True, z)
st = call(c, {"id": "st", "op": "stats"}).get("stats", {})
check("stats: the pool is there (%s)" % st.get("pool"), (st.get("pool") or {}).get("target", 0) >= 2, st)
c[0].close()
EOF
cat >"$base/outsider.py" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sys.argv[1])
    print("FAIL - a uid outside the socket's group could connect")
except PermissionError:
    print("ok   - a uid outside the socket's group is refused (EACCES)")
EOF
# A job still running when the service stops: it must come back with a record.
cat >"$base/slow.py" <<'EOF'
import json, socket, sys
a = json.load(open(sys.argv[2]))
a["code"] = "import json\njson.loads(input())\nwhile True:\n    pass\n"
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(60)
s.connect(sys.argv[1])
s.sendall((json.dumps({"id": "slow", "op": "run", "action": a}) + "\n").encode())
print("started", flush=True)
line = s.makefile("rb").readline()
r = json.loads(line) if line else {}
print(r.get("record", {}).get("stop_reason", "no record"), flush=True)
EOF
chmod 0644 "$base"/*.py
as_client() { setpriv --reuid="$client_uid" --regid="$client_uid" --groups="$grp" --no-new-privs "$@"; }
as_outsider() { setpriv --reuid="$outsider_uid" --regid="$outsider_uid" --clear-groups --no-new-privs "$@"; }

snapshot() {
    {
        echo "## processes of the service uid"
        ps -e -o uid=,comm= | awk -v u="$svc_uid" '$1 == u {print $2}' | sort | uniq -c
        echo "## mounts"
        awk '{print $5, $9}' /proc/self/mountinfo | sort
        echo "## temp entries"
        ls -A /tmp /dev/shm /var/tmp 2>/dev/null | { grep -i jail || true; } | sort
    } >"$1"
}

# Talk to the socket at $1 (as a client in its group and as an outsider), then stop a running
# job with the service: run_clients SOCKET STOP_COMMAND.
run_clients() {
    local sock=$1
    local rc=0
    as_client "$PY" "$base/client.py" "$sock" "$base/action.json" >"$tmp/client.out" 2>&1 || rc=$?
    cat "$tmp/client.out"
    if [ "$rc" != 0 ] || grep -q '^FAIL' "$tmp/client.out"; then
        bad "client (exit $rc); the service said: $(tail -5 "$tmp/service.err" 2>/dev/null)"
    fi
    local o
    o=$(as_outsider "$PY" "$base/outsider.py" "$sock" 2>&1)
    echo "$o"
    [[ $o == ok* ]] || bad "outsider check"
}

if [ -d /run/systemd/system ] && [ "$(ps -p 1 -o comm=)" = systemd ]; then
    # ---- systemd is PID 1: the units themselves, as runtime units ---------------------------
    unit_dir=/run/systemd/system
    sock=/run/agentjail-test/agentjail.sock
    created_group=0
    if ! getent group agentjail >/dev/null; then
        systemd-sysusers contrib/systemd/agentjail.sysusers
        created_group=1
    fi
    sed -e "s|/run/agentjail/|/run/agentjail-test/|" "$socket_unit" >"$unit_dir/agentjail-test.socket"
    sed -e "s|/usr/local/bin/agentjail|$base/bin/agentjail|" -e "s|/run/agentjail/|/run/agentjail-test/|" \
        -e "s|agentjail.socket|agentjail-test.socket|g" -e "s|agentjail-serve|agentjail-test-serve|g" \
        "$service_unit" >"$unit_dir/agentjail-test.service"
    systemctl daemon-reload
    systemctl start agentjail-test.socket
    [ "$(stat -c '%a %U %G' "$sock")" = "660 root agentjail" ] && pass "socket file root:agentjail 0660" ||
        bad "socket file: $(stat -c '%a %U %G' "$sock")"
    grp=$(getent group agentjail | cut -d: -f3)
    snapshot "$tmp/before"
    run_clients "$sock"
    svc=$(systemctl show -p MainPID --value agentjail-test.service)
    svc_uid=$(ps -o uid= -p "$svc" | tr -d ' ')
    as_client "$PY" "$base/slow.py" "$sock" "$base/action.json" >"$tmp/slow.out" &
    slow=$!
    until grep -q started "$tmp/slow.out" 2>/dev/null; do sleep 0.1; done
    sleep 0.3
    systemctl stop agentjail-test.service && rc=0 || rc=$?
    wait "$slow" || true
    result=$(systemctl show -p Result --value agentjail-test.service)
    [ "$rc" = 0 ] && [ "$result" = success ] && pass "service stopped cleanly (Result=$result)" ||
        bad "service stop: rc $rc, Result=$result"
    [ -S "$sock" ] && pass "socket file kept while the socket unit runs" || bad "socket file gone"
    systemctl stop agentjail-test.socket
    rm -f "$unit_dir"/agentjail-test.{socket,service}
    systemctl daemon-reload
    [ "$created_group" = 1 ] && groupdel agentjail
    journalctl -u agentjail-test.service --no-pager -n 20 | sed 's/^/# /' || true
else
    # ---- no systemd as PID 1: the protocol via systemd-socket-activate, the unit's shape ---
    echo "# systemd is not PID 1: socket activation by systemd-socket-activate, the unit's shape run directly"
    sock=$base/run/agentjail.sock
    install -d -m 0750 -o "$svc_uid" -g "$svc_uid" "$base/state"
    # ProtectSystem=strict + PrivateTmp + StateDirectory, approximately; ExecStart's command
    # as the dynamic user with no capabilities. Every step before the last execs in place,
    # so the service keeps the pid systemd-socket-activate put in LISTEN_PID.
    shape='
        set -e
        mount --make-rprivate /
        mount -t tmpfs -o mode=1777 tmpfs /tmp
        mount --bind "$STATE" "$STATE"
        mount -o remount,bind,ro / /
        exec setpriv --reuid="$AJ_UID" --regid="$AJ_UID" --clear-groups --no-new-privs \
            --inh-caps=-all --bounding-set=-all \
            "$BIN" serve --socket "$SOCK" --audit-log "$STATE/audit.jsonl"
    '
    snapshot "$tmp/before"
    # systemd-socket-activate passes only LISTEN_* and the -E variables (as PID 1 passes the
    # unit's Environment=).
    systemd-socket-activate -l "$sock" -E STATE="$base/state" -E BIN="$base/bin/agentjail" \
        -E AJ_UID="$svc_uid" -E SOCK="$sock" unshare -m sh -c "$shape" 2>"$tmp/service.err" &
    svc=$!
    for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
    # SocketUser=root, SocketGroup=, SocketMode=0660: what PID 1 does to the file.
    chgrp "$grp" "$sock" && chmod 0660 "$sock"
    [ "$(stat -c '%a %u %g' "$sock")" = "660 0 $grp" ] && pass "socket file root:$grp 0660 (as SocketMode/SocketGroup)" ||
        bad "socket file: $(stat -c '%a %u %g' "$sock")"
    run_clients "$sock"
    if [ "$(ps -o uid= -p "$svc" | tr -d ' ')" = "$svc_uid" ] &&
        tr '\0' '\n' <"/proc/$svc/environ" | grep -qx "LISTEN_PID=$svc"; then
        pass "the service runs as uid $svc_uid with the socket systemd-socket-activate passed (LISTEN_PID=$svc)"
    else
        bad "service process $svc: uid $(ps -o uid= -p "$svc"), environment $(tr '\0' ' ' <"/proc/$svc/environ" | grep -o 'LISTEN_[A-Z]*=[^ ]*' | tr '\n' ' ')"
    fi
    caps=$(awk '/^Cap(Eff|Prm|Bnd)/ {print $2}' "/proc/$svc/status" | sort -u)
    [ "$caps" = 0000000000000000 ] && pass "the service holds no capability (effective, permitted, bounding)" ||
        bad "service capabilities: $caps"
    as_client "$PY" "$base/slow.py" "$sock" "$base/action.json" >"$tmp/slow.out" &
    slow=$!
    until grep -q started "$tmp/slow.out" 2>/dev/null; do sleep 0.1; done
    sleep 0.3
    # systemctl stop with KillMode=mixed: SIGTERM to the main process only.
    kill -TERM "$svc"
    rc=0
    timeout 30 tail --pid="$svc" -f /dev/null || rc=$?
    wait "$svc" && code=0 || code=$?
    wait "$slow" || true
    [ "$rc" = 0 ] && [ "$code" = 0 ] && pass "service exited 0 on SIGTERM within TimeoutStopSec" ||
        bad "service stop: exit $code (timeout rc $rc): $(tail -5 "$tmp/service.err")"
    [ -S "$sock" ] && pass "socket file kept after the service exited (it is the socket unit's)" ||
        bad "the service removed the socket file"
    rm -f "$sock"   # RemoveOnStop= of the socket unit
    # The same protocol with the socket's directory writable by the service (root, no
    # shape): agentjail still leaves systemd's socket file alone when it exits.
    sock2=$base/run/plain.sock
    systemd-socket-activate -l "$sock2" "$base/bin/agentjail" serve --pool 0 --socket "$sock2" 2>/dev/null &
    plain=$!
    for _ in $(seq 100); do [ -S "$sock2" ] && break; sleep 0.05; done
    "$PY" -c 'import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"{\"id\": 1, \"op\": \"stats\"}\n")
sys.exit(0 if b"stats" in s.makefile("rb").readline() else 1)' "$sock2" || bad "plain socket activation: no stats"
    kill -TERM "$plain"
    wait "$plain" || true
    [ -S "$sock2" ] && pass "with a writable socket directory too, the socket file is left to systemd" ||
        bad "agentjail removed the socket file systemd passed it"
    rm -f "$sock2"
fi
slow_reason=$(tail -1 "$tmp/slow.out" 2>/dev/null || true)
case $slow_reason in
    code_timeout | interrupted:*) pass "a job running at stop got its record ($slow_reason)" ;;
    *) bad "a job running at stop: $slow_reason" ;;
esac
audit=$(find "$base/state" /var/lib/private/agentjail-test-serve -name audit.jsonl 2>/dev/null | head -1 || true)
n=$( [ -n "$audit" ] && wc -l <"$audit" || echo 0)
[ "$n" -ge 4 ] && pass "audit log: $n records" || bad "audit log: $n records (expected the run, 2 calls, the stopped job)"

sleep 0.5
snapshot "$tmp/after"
cgroups=$(find /sys/fs/cgroup -type d -name "agentjail-${svc:-none}-*" 2>/dev/null | wc -l)
if diff -q "$tmp/before" "$tmp/after" >/dev/null && [ "$cgroups" = 0 ]; then
    pass "nothing left: no process of uid $svc_uid, no job cgroup, no mount, no temp entry"
else
    bad "left behind: $cgroups job cgroups; $(diff "$tmp/before" "$tmp/after" | head -20)"
fi
exit $fail
