#!/usr/bin/env bash
# agentjail inside a real container: runc (Debian's package) running a Debian bookworm
# rootfs made by debootstrap (cached outside the clone: scripts/container-rootfs.sh), with
# the release binaries, policies and examples copied in as contrib/containers/Dockerfile
# does. The containers are what Docker (and containerd, Kubernetes) make by default: Docker's
# capability set, masked and read-only /proc paths, read-only /sys/fs/cgroup, and Docker's
# default seccomp profile (compiled for those capabilities as Docker does:
# scripts/container-bundle.py).
#
#   1. default settings: `run` fails closed (sandbox_unavailable:setup, exit 1), `exec`
#      exits 125, `doctor` exits 1 and names what to change; as root and as uid 65534.
#   2. the shipped profile, /proc still masked: fails closed at the fresh /proc mount; the
#      host's /proc is never bound in its place.
#   3. the shipped profile with /proc unmasked (`systempaths=unconfined`, `procMount:
#      Unmasked`): the seed job gives the seed's numbers as root and as uid 65534, `doctor`
#      passes; under contrib/containers/pod.yaml's settings (a user-namespaced container as
#      with hostUsers: false, uid 65534, no capability, read-only root) `serve --socket`
#      answers a run and doctor passes; the escape tests (tests/jail: python_attacks, the
#      Python twins and redteam, launching agentjail as root and as nobody) pass with CI=true,
#      so none may skip, in both kinds of container.
#   4. each rule the profile adds is needed: without any one, the jail fails at setup.
#   5. contrib/containers/seccomp.json is what scripts/gen-container-seccomp.py makes.
#   6. podman (Debian's, on runc): contrib/containers/Dockerfile builds on the same rootfs,
#      podman's defaults fail closed with podman's fix, contrib/containers/README.md's
#      podman line gives the seed's numbers (AGENTJAIL_CONTAINER_PODMAN=0 skips this part).
#
# Needs root (runc). Installs runc, debootstrap and podman from Debian when missing. Leaves nothing
# behind on any exit path: containers deleted (their cgroups with them), the scratch
# directory removed; checked at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
export PATH="$HOME/.cargo/bin:$PATH"
t_all=$(date +%s)

# ---- What agentjail must say; every expected string of this test is here. ----
# The seed's numbers (README "The two commands").
SEED_EXPECT='{"incident_severity": "P1", "sample_size": 60, "avg_latency_ms": 167.0, "p95_latency_ms": 187.0, "chargeback_alerts": 1}'
STOP_SETUP=sandbox_unavailable:setup
# Docker's default profile answers clone3 with ENOSYS (no CAP_SYS_ADMIN).
DEFAULT_STAGE=clone3
DEFAULT_ERRNO=38
# A masked /proc: the kernel refuses the jail's fresh procfs (EPERM).
MASKED_STAGE='mount proc on /proc'
MASKED_ERRNO=1
# Container-aware advice (issue 24, item 2) and doctor's check that starts a real jail.
# The containers carry Docker's mark (/.dockerenv); the Kubernetes runs add the variable
# kubelet sets (KUBERNETES_SERVICE_HOST), so each runtime's own fix is asserted.
PROBE_CHECK=probe_jail
HINT_SECCOMP_DOCKER='--security-opt seccomp=contrib/containers/seccomp.json'
HINT_SECCOMP_K8S='seccompProfile {type: Localhost'
HINT_PROC_DOCKER='systempaths=unconfined'
HINT_PROC_K8S='procMount: Unmasked'

[ "$(id -u)" = 0 ] || { echo "test-container: needs root (runc)" >&2; exit 2; }
need=()
command -v runc >/dev/null || need+=(runc)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v dpkg-deb >/dev/null || need+=(dpkg)
if [ ${#need[@]} -gt 0 ]; then
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null ||
        { echo "test-container: apt-get install ${need[*]} failed" >&2; exit 1; }
fi
cache=${AGENTJAIL_ROOTFS_CACHE:-/var/cache/agentjail}
rootfs_tar=$(scripts/container-rootfs.sh) || { echo "test-container: no rootfs" >&2; exit 1; }

# Docker's default profile, from the Debian package the shipped profile is generated from
# (downloaded once into the cache; the version apt offers names the file).
pkg=golang-github-docker-docker-dev
ver=$(apt-cache policy "$pkg" 2>/dev/null | sed -n 's/^  Candidate: //p')
if [ -z "$ver" ] || [ "$ver" = "(none)" ]; then
    apt-get update -q >/dev/null
    ver=$(apt-cache policy "$pkg" | sed -n 's/^  Candidate: //p')
fi
deb=$cache/${pkg}_${ver//:/%3a}_all.deb
if [ ! -s "$deb" ]; then
    dl=$(mktemp -d "$cache/.dl.XXXXXX")
    chmod 755 "$dl"
    (cd "$dl" && apt-get download -q "$pkg" >/dev/null 2>&1) && mv "$dl"/*.deb "$deb"
    rm -rf "$dl"
    [ -s "$deb" ] || { echo "test-container: apt-get download $pkg failed" >&2; exit 1; }
fi

echo "# building the release binaries and the escape-test binaries"
cargo build --release --quiet || exit 1
mapfile -t test_bins < <(cargo test --test jail --no-run --message-format=json 2>/dev/null |
    python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(m["executable"])')
[ ${#test_bins[@]} = 1 ] || { echo "test-container: could not build the escape tests" >&2; exit 1; }
jail_tests=${test_bins[0]}
# The escape suites, modules of the jail test binary (tests/jail): a name and its filters.
suites=("jail_attacks:python_attacks:: twins::python::" "redteam_jail:redteam::")
rel=target/x86_64-unknown-linux-gnu/release

work=$(mktemp -d /tmp/agentjail-ctr.XXXXXX)
chmod 755 "$work" # the user-namespaced containers' root (host uid 100000) must reach its rootfs
state=$work/runc
tag=agentjail-ctr-$$
podman_images=()
cleanup() {
    local id
    if [ -d "$state" ]; then
        for id in $(runc --root "$state" list -q 2>/dev/null); do
            runc --root "$state" delete -f "$id" >/dev/null 2>&1
        done
    fi
    if [ ${#podman_images[@]} -gt 0 ]; then
        podman rmi -f "${podman_images[@]}" >/dev/null 2>&1
        podman_images=()
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "# rootfs: $rootfs_tar"
mkdir -p "$work/rootfs" "$state"
tar -C "$work/rootfs" -xf "$rootfs_tar" || exit 1
install -m 0755 "$rel/agentjail" "$rel/agentjail-mcp" "$rel/agentjail-http" "$work/rootfs/usr/local/bin/"
mkdir -p "$work/rootfs/usr/local/share/agentjail"
cp -r policies examples "$work/rootfs/usr/local/share/agentjail/"
: >"$work/rootfs/.dockerenv" # what Docker puts in every container
# Where the escape tests find the repository (the paths compiled into them); made here
# because root of a user-namespaced container may not create it.
mkdir -p "$work/rootfs$repo"
# Under .ci/run the clone's target/ is a link into the build cache, outside the clone: the
# escape tests' binary is there, so its real directory is bound at its own path too.
target_binds=()
if [ -L target ]; then
    real_target=$(readlink -f target)
    mkdir -p "$work/rootfs$real_target"
    target_binds=(--bind "$real_target:$real_target")
fi
docker_profile=$work/docker-default.json
mkdir -p "$work/deb" && dpkg-deb -x "$deb" "$work/deb" &&
    cp "$work/deb/usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json" "$docker_profile" || exit 1
rm -rf "$work/deb"
shipped=contrib/containers/seccomp.json
SEED=(/usr/local/bin/agentjail run /usr/local/share/agentjail/examples/incident/action.json)

pass=0
failed=0
t_section=$(date +%s)
section() {
    printf '# (%d s)\n# %s\n' $(($(date +%s) - t_section)) "$*"
    t_section=$(date +%s)
}
ok() { pass=$((pass + 1)); printf 'ok   - %s\n' "$*"; }
fail() { failed=$((failed + 1)); printf 'FAIL - %s\n' "$*"; }

n=0
# ctr NAME [container-bundle.py options] -- ARGS...: run ARGS in a fresh container; sets
# $rc and leaves $work/NAME.out and $work/NAME.err.
ctr() {
    local name=$1 limit=${CTR_LIMIT:-120}
    shift
    n=$((n + 1))
    local id=$tag-$n b=$work/bundle-$n
    mkdir -p "$b"
    python3 scripts/container-bundle.py --rootfs "$work/rootfs" --out "$b/config.json" \
        --cgroups-path "/$id" "$@" || { rc=99; return; }
    timeout -k 5 "$limit" runc --root "$state" run --bundle "$b" "$id" \
        </dev/null >"$work/$name.out" 2>"$work/$name.err"
    rc=$?
    runc --root "$state" delete -f "$id" >/dev/null 2>&1
    rm -rf "$b"
}
# rec FILE PYEXPR: evaluate PYEXPR on the first JSON object in FILE (as `r`).
rec() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
t = open(sys.argv[1]).read()
try:
    r = json.JSONDecoder().raw_decode(t[t.index("{"):])[0]
except ValueError:
    r = {}
v = eval(sys.argv[2], {"r": r, "json": json})
print(v if isinstance(v, str) else json.dumps(v))
EOF
}
show() { sed 's/^/       | /' "$work/$1.out" "$work/$1.err" | head -n "${2:-12}"; }

expect_seed() {
    local name=$1 what=$2
    local got
    got=$(rec "$work/$name.out" "{k: (r.get('output') or {}).get(k) for k in json.loads('$SEED_EXPECT')}")
    if [ "$rc" = 0 ] && [ "$(rec "$work/$name.out" "r.get('status')")" != stopped ] &&
        python3 -c "import json,sys; sys.exit(json.loads(sys.argv[1]) != json.loads(sys.argv[2]))" "$got" "$SEED_EXPECT"; then
        ok "$what: the seed's numbers ($got)"
    else
        fail "$what: rc $rc, output $got"
        show "$name"
    fi
}
# expect_fail_closed NAME WHAT STAGE ERRNO: run exited 1, stopped at setup at STAGE.
expect_fail_closed() {
    local name=$1 what=$2 stage=$3 errno=$4
    local reason st en out
    reason=$(rec "$work/$name.out" "r.get('stop_reason')")
    st=$(rec "$work/$name.out" "(r.get('error') or {}).get('stage', '')")
    en=$(rec "$work/$name.out" "(r.get('error') or {}).get('errno')")
    out=$(rec "$work/$name.out" "r.get('output')")
    if [ "$rc" = 1 ] && [ "$reason" = "$STOP_SETUP" ] && [[ "$st" == *"$stage"* ]] && [ "$en" = "$errno" ] &&
        [ "$out" = null ]; then
        ok "$what: fails closed (exit 1, $reason at '$st', errno $en)"
    else
        fail "$what: want exit 1, $STOP_SETUP at '$stage' errno $errno; got exit $rc, $reason at '$st' errno $en, output $out"
        show "$name"
    fi
}
# expect_hint NAME WHAT TEXT: the record's error.hint carries the container fix TEXT.
expect_hint() {
    local name=$1 what=$2 re=$3 hint
    hint=$(rec "$work/$name.out" "(r.get('error') or {}).get('hint', '')")
    if grep -qF -- "$re" <<<"$hint"; then ok "$what: error.hint names '$re'"; else fail "$what: error.hint lacks '$re': $hint"; fi
}

default=(--seccomp "$docker_profile" --proc masked)
fixed=(--seccomp "$shipped" --proc unmasked --no-new-privs)

section "1. Docker's default settings"
ctr doctor-default "${default[@]}" -- /usr/local/bin/agentjail doctor
if [ "$rc" = 1 ] && grep -q MISSING "$work/doctor-default.out"; then
    ok "default: doctor exits 1 and marks $(grep -c '^MISSING' "$work/doctor-default.out") checks MISSING"
else
    fail "default: doctor exit $rc (want 1 with MISSING checks)"
    show doctor-default 40
fi
grep -qF -- "$HINT_SECCOMP_DOCKER" "$work/doctor-default.out" && ok "default: doctor names '$HINT_SECCOMP_DOCKER'" ||
    { fail "default: doctor does not name '$HINT_SECCOMP_DOCKER'"; show doctor-default 60; }
grep -q "^MISSING *$PROBE_CHECK" "$work/doctor-default.out" && ok "default: doctor's $PROBE_CHECK is MISSING" ||
    fail "default: doctor's $PROBE_CHECK is not MISSING"
for who in 0:0 65534:65534; do
    ctr "seed-default-$who" "${default[@]}" --user "$who" -- "${SEED[@]}"
    expect_fail_closed "seed-default-$who" "default, uid ${who%%:*}: run" "$DEFAULT_STAGE" "$DEFAULT_ERRNO"
    expect_hint "seed-default-$who" "default, uid ${who%%:*}" "$HINT_SECCOMP_DOCKER"
done
ctr seed-default-k8s "${default[@]}" --user 65534:65534 --env KUBERNETES_SERVICE_HOST=10.0.0.1 -- "${SEED[@]}"
expect_fail_closed seed-default-k8s "default, as a Kubernetes pod: run" "$DEFAULT_STAGE" "$DEFAULT_ERRNO"
expect_hint seed-default-k8s "default, as a Kubernetes pod" "$HINT_SECCOMP_K8S"
ctr exec-default "${default[@]}" -- /usr/local/bin/agentjail exec -- /bin/echo BREACH
if [ "$rc" = 125 ] && ! grep -q BREACH "$work/exec-default.out"; then
    ok "default: exec exits 125 and runs nothing"
else
    fail "default: exec exit $rc"
    show exec-default
fi

section "2. the shipped profile, /proc masked"
for who in 0:0 65534:65534; do
    ctr "seed-masked-$who" --seccomp "$shipped" --proc masked --no-new-privs --user "$who" -- "${SEED[@]}"
    expect_fail_closed "seed-masked-$who" "masked /proc, uid ${who%%:*}: run" "$MASKED_STAGE" "$MASKED_ERRNO"
    expect_hint "seed-masked-$who" "masked /proc, uid ${who%%:*}" "$HINT_PROC_DOCKER"
done
ctr seed-masked-k8s --seccomp "$shipped" --proc masked --no-new-privs --user 65534:65534 \
    --env KUBERNETES_SERVICE_HOST=10.0.0.1 -- "${SEED[@]}"
expect_fail_closed seed-masked-k8s "masked /proc, as a Kubernetes pod: run" "$MASKED_STAGE" "$MASKED_ERRNO"
expect_hint seed-masked-k8s "masked /proc, as a Kubernetes pod" "$HINT_PROC_K8S"
for flavour in docker k8s; do
    env=()
    hint=$HINT_PROC_DOCKER
    if [ $flavour = k8s ]; then env=(--env KUBERNETES_SERVICE_HOST=10.0.0.1); hint=$HINT_PROC_K8S; fi
    ctr "doctor-masked-$flavour" --seccomp "$shipped" --proc masked --no-new-privs "${env[@]}" -- /usr/local/bin/agentjail doctor
    if [ "$rc" = 1 ] && grep -qF -- "$hint" "$work/doctor-masked-$flavour.out" &&
        grep -q "^MISSING *$PROBE_CHECK" "$work/doctor-masked-$flavour.out"; then
        ok "masked /proc ($flavour): doctor exits 1, $PROBE_CHECK MISSING, names '$hint'"
    else
        fail "masked /proc ($flavour): doctor exit $rc, or no '$hint' / MISSING $PROBE_CHECK"
        show "doctor-masked-$flavour" 60
    fi
done

section "3. the shipped profile, /proc unmasked"
for who in 0:0 65534:65534; do
    ctr "seed-fixed-$who" "${fixed[@]}" --user "$who" -- "${SEED[@]}"
    expect_seed "seed-fixed-$who" "shipped profile, uid ${who%%:*}: run"
    ctr "doctor-fixed-$who" "${fixed[@]}" --user "$who" -- /usr/local/bin/agentjail doctor
    if [ "$rc" = 0 ] && grep -q 'all required protections are available' "$work/doctor-fixed-$who.out" &&
        grep -q "^ok *$PROBE_CHECK" "$work/doctor-fixed-$who.out"; then
        ok "shipped profile, uid ${who%%:*}: doctor exits 0, its $PROBE_CHECK ran"
    else
        fail "shipped profile, uid ${who%%:*}: doctor exit $rc"
        show "doctor-fixed-$who" 40
    fi
done
# serve --socket as in contrib/containers/kubernetes.yaml, as uid 65534, one run request.
cat >"$work/rootfs/usr/local/share/agentjail/socket-client.py" <<'EOF'
import json, os, socket, sys, time
path = sys.argv[1]
for _ in range(200):  # the server binds the socket once its pool is warm
    if os.path.exists(path):
        break
    time.sleep(0.05)
action = json.load(open("/usr/local/share/agentjail/examples/incident/action.json"))
s = socket.socket(socket.AF_UNIX)
s.connect(path)
s.sendall((json.dumps({"id": "k1", "op": "run", "action": action}) + "\n").encode())
buf = b""
while not buf.endswith(b"\n"):
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
print(json.dumps(json.loads(buf)["record"]))
EOF
# contrib/containers/pod.yaml's settings: a user-namespaced pod (hostUsers: false), uid
# 65534, no capability at all, read-only root, no_new_privs; serve --socket answers a run.
pod=(--seccomp "$shipped" --proc unmasked --no-new-privs --userns --caps none --readonly-root)
ctr serve-pod "${pod[@]}" --user 65534:65534 --env KUBERNETES_SERVICE_HOST=10.0.0.1 -- sh -c \
    '/usr/local/bin/agentjail serve --socket /tmp/agentjail.sock & s=$!; python3 /usr/local/share/agentjail/socket-client.py /tmp/agentjail.sock; rc=$?; kill -TERM $s; wait $s; exit $rc'
expect_seed serve-pod "pod.yaml's settings (userns, uid 65534, no caps, read-only root): serve --socket"
ctr doctor-pod "${pod[@]}" --user 65534:65534 --env KUBERNETES_SERVICE_HOST=10.0.0.1 -- /usr/local/bin/agentjail doctor
if [ "$rc" = 0 ] && grep -q "^ok *$PROBE_CHECK" "$work/doctor-pod.out"; then
    ok "pod.yaml's settings: doctor exits 0, its $PROBE_CHECK ran"
else
    fail "pod.yaml's settings: doctor exit $rc"
    show doctor-pod 40
fi

# The escape tests launch agentjail as root and as nobody (setpriv) from a root test
# process: in Docker's kind of container and in the pod's (user-namespaced) kind.
for setting in docker pod; do
    if [ $setting = docker ]; then opts=("${fixed[@]}"); else opts=(--seccomp "$shipped" --proc unmasked --no-new-privs --userns); fi
    for suite in "${suites[@]}"; do
        name=${suite%%:*}
        read -ra filters <<<"${suite#*:}"
        listed=$("$jail_tests" --list "${filters[@]}" 2>/dev/null | grep -c ': test$')
        CTR_LIMIT=600 ctr "tests-$setting-$name" "${opts[@]}" --bind "$repo:$repo" "${target_binds[@]}" --cwd "$repo" --env CI=true -- \
            "$jail_tests" --test-threads=2 "${filters[@]}"
        out=$work/tests-$setting-$name
        summary=$(grep '^test result:' "$out.out" | tail -1)
        passed=$(sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed.*/\1/p' <<<"$summary")
        if [ "$rc" = 0 ] && [ "${passed:-0}" = "$listed" ] && ! grep -q 'SKIPPED\|NOT exercised' "$out.out" "$out.err"; then
            ok "shipped profile, $setting container: $name, launched as root and as nobody: $passed/$listed passed, none skipped"
        else
            fail "shipped profile, $setting container: $name: exit $rc, $summary (listed $listed)"
            grep -E 'SKIPPED|NOT exercised' "$out.out" "$out.err" | head -10 | sed 's/^/       | /'
            # libtest's "failures:" section: each failed test's own output and panic message.
            sed -n '/^failures:$/,$p' "$out.out" | grep -v '^ *$' | head -80 | sed 's/^/       | /'
        fi
    done
done

section "4. each addition of the shipped profile is needed"
for name in $(python3 -c '
import importlib.util, sys
spec = importlib.util.spec_from_file_location("g", "scripts/gen-container-seccomp.py")
g = importlib.util.module_from_spec(spec); spec.loader.exec_module(g)
print(" ".join(n + (":optional" if a.get("optional") else "") for a in g.ADDITIONS for n in a["names"]))'); do
    optional=0
    case "$name" in *:optional) optional=1; name=${name%:optional} ;; esac
    python3 scripts/gen-container-seccomp.py --deb "$deb" --without "$name" >"$work/without-$name.json" || { fail "generate without $name"; continue; }
    ctr "without-$name" --seccomp "$work/without-$name.json" --proc unmasked --no-new-privs -- "${SEED[@]}"
    reason=$(rec "$work/without-$name.out" "r.get('stop_reason')")
    if [ "$optional" = 1 ]; then
        # A better path, not a requirement: without it the jail takes its fallback and runs.
        if [ "$rc" = 0 ] && [ "$reason" = success ]; then
            ok "without $name (optional): the jail runs on its fallback"
        else
            fail "without $name (optional) the jail did not run (exit $rc, $reason): its fallback is broken"
        fi
    elif [ "$rc" = 1 ] && [ "$reason" = "$STOP_SETUP" ]; then
        ok "without $name: fails closed at '$(rec "$work/without-$name.out" "(r.get('error') or {}).get('stage', '')")'"
    else
        fail "without $name the jail still ran (exit $rc, $reason): the addition is not needed"
    fi
done

section "5. the committed profile is the generator's output"
if python3 scripts/gen-container-seccomp.py --check --deb "$deb"; then ok "$shipped is current"; else fail "$shipped is stale"; fi

section "6. podman: contrib/containers/Dockerfile built on the same rootfs, README's run lines"
if [ "${AGENTJAIL_CONTAINER_PODMAN:-1}" = 1 ]; then
    if ! command -v podman >/dev/null; then
        apt-get update -q >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends podman >/dev/null ||
            fail "apt-get install podman"
    fi
    base=localhost/agentjail-test-base:$tag
    image=localhost/agentjail-test:$tag
    podman_images=("$image" "$base")
    # podman's default rlimits (nofile 1048576, nproc 4194304) are above this machine's hard
    # limits, which runc refuses to raise: pass ones it allows.
    prun=(podman run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=4096:4096)
    # The build context holds what the Dockerfile copies, as real files: a target/ that is
    # a link out of the clone (.ci/run's build cache) is not followed by the build.
    context=$work/podman-context
    mkdir -p "$context/$rel" &&
        cp "$rel/agentjail" "$rel/agentjail-mcp" "$rel/agentjail-http" "$context/$rel/" &&
        cp -r policies examples "$context/"
    if podman import -q "$rootfs_tar" "$base" >/dev/null &&
        podman build -q --layers=false --network host --build-arg "BASE=$base" \
            --ignorefile contrib/containers/Dockerfile.dockerignore \
            -f contrib/containers/Dockerfile -t "$image" "$context" >"$work/podman-build.log" 2>&1; then
        ok "podman build -f contrib/containers/Dockerfile (on the debootstrap rootfs)"
        "${prun[@]}" "$image" run "${SEED[2]}" >"$work/podman-default.out" 2>"$work/podman-default.err"
        rc=$?
        expect_fail_closed podman-default "podman defaults, uid 65534 (the image's USER)" "$MASKED_STAGE" "$MASKED_ERRNO"
        expect_hint podman-default "podman defaults" "unmask=/proc/*"
        "${prun[@]}" --security-opt unmask=/proc/* "$image" run "${SEED[2]}" >"$work/podman-unmask.out" 2>"$work/podman-unmask.err"
        rc=$?
        # podman's own default profile (containers-common) allows clone3, unshare, mount and
        # pivot_root but not sethostname without CAP_SYS_ADMIN.
        expect_fail_closed podman-unmask "podman, /proc unmasked, podman's default seccomp" sethostname 1
        for who in 65534:65534 0:0; do
            "${prun[@]}" --user "$who" --security-opt seccomp=contrib/containers/seccomp.json --security-opt unmask=/proc/* \
                "$image" run "${SEED[2]}" >"$work/podman-fixed-$who.out" 2>"$work/podman-fixed-$who.err"
            rc=$?
            expect_seed "podman-fixed-$who" "podman with README's flags, uid ${who%%:*}: run"
        done
    else
        fail "podman build -f contrib/containers/Dockerfile"
        tail -20 "$work/podman-build.log" | sed 's/^/       | /'
    fi
    podman rmi -f "${podman_images[@]}" >/dev/null 2>&1
    if podman image exists "$image" || podman image exists "$base"; then fail "podman images left"; fi
fi

section "cleanup"
cleanup
trap - EXIT
# (runc list would create its state directory: look at the directory instead.)
left=$(find /sys/fs/cgroup -maxdepth 2 -name "$tag-*" 2>/dev/null; [ -e "$work" ] && echo "$work")
if [ -z "$left" ]; then ok "nothing left behind (containers, cgroups, scratch)"; else fail "left behind: $left"; fi
printf '# test-container: %d passed, %d failed (%d s)\n' "$pass" "$failed" $(($(date +%s) - t_all))
[ "$failed" = 0 ]
