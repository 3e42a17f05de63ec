#!/usr/bin/env bash
# The project's test command (README; .ci/run calls it).
#
#   scripts/test.sh            everything, in this order: lints; unit and integration tests
#                              (jail tests launched as root AND as nobody); cgroup v2 and jail
#                              tests in a QEMU VM with a real cgroup v2 kernel; the systemd
#                              unit, AppArmor profile, install/uninstall and the .deb; fuzzing (bounded);
#                              a 1000-run soak; a short benchmark (printed, never fails CI)
#   QUICK=1 scripts/test.sh    lints and cargo tests only
#
# Installs what it needs (Debian packages, the VM's kernel) through the project's own
# scripts. Exits non-zero when any stage fails; the last line says how many stages passed.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TERM_COLOR=never
# A clean clone builds once: incremental caches would only cost disk (gigabytes) and time.
if [ "${CI:-}" = true ]; then export CARGO_INCREMENTAL=0; fi
passed=0
failed=0
failures=()
t_all=$(date +%s)

stage() {
    local name=$1
    shift
    local t0
    t0=$(date +%s)
    printf '\n=== %s\n' "$name"
    if "$@"; then
        passed=$((passed + 1))
        printf '=== %s: ok (%d s)\n' "$name" $(($(date +%s) - t0))
    else
        failed=$((failed + 1))
        failures+=("$name")
        printf '=== %s: FAILED (%d s)\n' "$name" $(($(date +%s) - t0))
    fi
}

cargo_tests() {
    # The cgroup v2 test re-runs itself inside the VM under CI=true: have the VM ready.
    if [ "${CI:-}" = true ] && [ "${QUICK:-0}" != 1 ]; then
        [ -s "${AGENTJAIL_VM_ASSETS:-target/vm-assets}/base.cpio" ] || scripts/vm.sh setup || return 1
    fi
    # Dev profile: the same code paths, and the ~20 test binaries link without LTO.
    local stamp rc=0 left
    stamp=$(mktemp /tmp/agentjail-test-stamp.XXXXXX)
    cargo test -- --test-threads=2 || rc=1
    # The tests clean up after themselves: nothing they made under /tmp or /dev/shm (every
    # name starts "agentjail-" or "aj") may outlive the run, or each run would eat disk.
    left=$(find /tmp /dev/shm -mindepth 1 -maxdepth 1 \( -name 'agentjail-*' -o -name 'aj*' \) \
        -newer "$stamp" ! -path "$stamp" 2>/dev/null)
    rm -f "$stamp"
    if [ -n "$left" ]; then
        printf 'the tests left these behind:\n%s\n' "$left"
        rc=1
    fi
    return $rc
}

stage "setup (packages)" scripts/setup.sh
stage "cargo fmt --check" cargo fmt --all --check
stage "cargo clippy -D warnings" cargo clippy --workspace --all-targets --quiet -- -D warnings
stage "build (release)" cargo build --release --quiet
# agentjail-zygote next to the debug binary the tests run (tests/zygote.rs; `serve --zygote`).
stage "build agentjail-zygote (scripts/build-zygote.sh)" scripts/build-zygote.sh
stage "cargo test (unit, contract, checker, policy, jail attacks as root and nobody, pipeline, cleanup)" cargo_tests

# Debug profile on purpose: the fault-injection build must never overwrite the release binary.
stage "fault injection at every setup stage (tests/faults.rs)" cargo test --features fault-injection --test faults

if [ "${QUICK:-0}" != 1 ]; then
    stage "cgroup v2 and jail tests in a VM (scripts/vm-test.sh)" scripts/vm-test.sh
    stage "systemd unit (scripts/test-systemd.sh)" scripts/test-systemd.sh
    stage "systemd socket + serve service (scripts/test-systemd-serve.sh)" scripts/test-systemd-serve.sh
    stage "install/uninstall (scripts/test-install.sh)" scripts/test-install.sh
    stage "Debian package: dpkg -i, run installed, dpkg -r/-P (scripts/test-deb.sh)" scripts/test-deb.sh
    stage "AppArmor profile (scripts/test-apparmor.sh)" scripts/test-apparmor.sh
    if [ -x scripts/fuzz.sh ]; then
        stage "fuzz (scripts/fuzz.sh, bounded)" scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
    fi
    stage "soak (scripts/soak.sh ${SOAK_RUNS:-1000})" scripts/soak.sh "${SOAK_RUNS:-1000}"
    stage "benchmark, short (printed; never fails)" env BENCH_SHORT=1 BENCH_NO_FAIL=1 scripts/bench.sh
    # The checker benchmark needs its own LTO-linked release test binary (~4 min on 2
    # cores): opt in with BENCH_CHECK=1, or run scripts/bench-check.sh.
    if [ "${BENCH_CHECK:-0}" = 1 ]; then
        stage "check benchmark vs CPython ast.parse (printed; never fails)" bash -c 'scripts/bench-check.sh tests/data/bench_main.py 2000 || true'
    fi
fi

printf '\nscripts/test.sh: %d s in all\n' $(($(date +%s) - t_all))
for f in "${failures[@]}"; do printf 'FAILED: %s\n' "$f"; done
printf '%d passed, %d failed\n' "$passed" "$failed"
[ "$failed" = 0 ]
