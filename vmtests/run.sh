#!/bin/bash
# vmtests/run.sh - prove that ebpfprof's CO-RE BPF programs load and work on
# Debian 12's kernels (6.1 and 6.12), not only on the host's: boots each kernel
# under QEMU with run-in-vm.sh (../shared/vmtest/run-in-vm.sh next to the
# repository) and runs vmtests/smoke.sh inside, against the ./ebpfprof already
# built (`make vmtest` builds it first).
#
# Usage: vmtests/run.sh [--kernel 6.1|6.12]...     (default: every kernel)
#
# Prints the guest's output as it comes, then one line per kernel
#   vmtest 6.1: PASS (kernel 6.1.0-56-amd64, 27 s)
#   vmtest 6.12: FAIL (reason)
# and last the closing line "N passed, N failed". Exits 1 if any kernel failed,
# 2 on usage errors.
#
# Kernels come from vmtests/setup.sh's cache ($EBPFPROF_KERNELS,
# /var/cache/ebpfprof/kernels/SERIES/boot/vmlinuz-*; for 6.1 also an installed
# /boot/vmlinuz-6.1.*). If a kernel, QEMU or busybox is missing and we are root,
# setup.sh is run first (EBPFPROF_VMTEST_SETUP=0: do not; just fail).
#
# Each kernel's artefacts (guest output, profiles, ebpfprof's -v stderr with
# any verifier log, the --gc-log file) are kept on the host in
# $EBPFPROF_VMTEST_LOGS/SERIES (default ${TMPDIR:-/tmp}/ebpfprof-vmtest/SERIES),
# emptied at the start of each run.
#
# Environment: VMTEST_SMP (guest CPUs, default 1: BPF attach under TCG is
# fastest that way), VMTEST_MEM (default 1G), EBPFPROF_VMTEST_TIMEOUT (seconds
# per kernel, default 180), EBPFPROF_RUN_IN_VM (the run-in-vm.sh to use),
# SMOKE_EBPFPROF (test another ebpfprof binary than ./ebpfprof, e.g. a candidate
# fix built elsewhere; passed into the guest).
set -uo pipefail
prog=vmtests/run.sh
ALL_KERNELS="6.1 6.12"

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
KERNELS=""
while [ $# -gt 0 ]; do
    case $1 in
        --kernel|-k)
            [ $# -ge 2 ] || { echo "$prog: --kernel needs a value (6.1 or 6.12)" >&2; exit 2; }
            k=$2; shift 2 ;;
        --kernel=*) k=${1#*=}; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "$prog: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
    case " $ALL_KERNELS " in
        *" $k "*) case " $KERNELS " in *" $k "*) ;; *) KERNELS="${KERNELS:+$KERNELS }$k" ;; esac ;;
        *) echo "$prog: unknown kernel '$k' (known: $ALL_KERNELS)" >&2; exit 2 ;;
    esac
done
KERNELS=${KERNELS:-$ALL_KERNELS}

REPO=$(cd "$(dirname "$0")/.." && pwd)
RUNVM=${EBPFPROF_RUN_IN_VM:-$(dirname "$REPO")/shared/vmtest/run-in-vm.sh}
KCACHE=${EBPFPROF_KERNELS:-/var/cache/ebpfprof/kernels}
LOGROOT=${EBPFPROF_VMTEST_LOGS:-${TMPDIR:-/tmp}/ebpfprof-vmtest}
TIMEOUT=${EBPFPROF_VMTEST_TIMEOUT:-180}
SMP=${VMTEST_SMP:-1}
MEM=${VMTEST_MEM:-1G}

# Problems that fail every kernel alike: one FAIL line per kernel, then the total.
fail_all() {
    echo "$prog: $1" >&2
    n=0
    for k in $KERNELS; do echo "vmtest $k: FAIL ($1)"; n=$((n + 1)); done
    echo "0 passed, $n failed"
    exit 1
}

[ -f "$RUNVM" ] || fail_all "run-in-vm.sh not found at $RUNVM (expected in ../shared/vmtest next to the repository; or set EBPFPROF_RUN_IN_VM)"
[ -x "$RUNVM" ] || RUNVM_SH=bash
EBPFPROF=${SMOKE_EBPFPROF:-$REPO/ebpfprof}
[ -x "$EBPFPROF" ] || fail_all "$EBPFPROF is not built (run make)"
GUEST_ENV=(-e SMOKE_KEEP)
[ -n "${SMOKE_EBPFPROF:-}" ] && GUEST_ENV+=(-e SMOKE_EBPFPROF)
[ -x "$REPO/vmtests/smoke.sh" ] || fail_all "$REPO/vmtests/smoke.sh missing or not executable"

# kernel_image SERIES: the vmlinuz to boot, or nothing
kernel_image() {
    local v
    for v in $(ls -d "$KCACHE/$1"/boot/vmlinuz-* 2>/dev/null | sort -V -r); do
        [ -r "$v" ] && { echo "$v"; return; }
    done
    if [ "$1" = 6.1 ]; then
        for v in $(ls -d /boot/vmlinuz-6.1.* 2>/dev/null | sort -V -r); do
            [ -r "$v" ] && [ -d "/lib/modules/${v##*/vmlinuz-}" ] && { echo "$v"; return; }
        done
    fi
}

need_setup=0
command -v qemu-system-x86_64 >/dev/null || need_setup=1
[ -x /bin/busybox ] || need_setup=1
for k in $KERNELS; do [ -n "$(kernel_image "$k")" ] || need_setup=1; done
if [ $need_setup = 1 ]; then
    if [ "$(id -u)" = 0 ] && [ "${EBPFPROF_VMTEST_SETUP:-1}" = 1 ]; then
        echo "$prog: QEMU, busybox or a kernel is missing: running vmtests/setup.sh"
        "$REPO/vmtests/setup.sh" || fail_all "vmtests/setup.sh failed"
    else
        fail_all "QEMU, busybox or a kernel is missing: run vmtests/setup.sh as root"
    fi
fi

cd "$REPO" || exit 2     # run-in-vm.sh runs the command in this directory
passed=0 failed=0
SUMMARY=()
for k in $KERNELS; do
    img=$(kernel_image "$k")
    if [ -z "$img" ]; then
        SUMMARY+=("vmtest $k: FAIL (no $k kernel in $KCACHE/$k: run vmtests/setup.sh)")
        failed=$((failed + 1)); continue
    fi
    logs=$LOGROOT/$k
    rm -rf "$logs"; mkdir -p "$logs"
    echo "=== vmtest $k: booting ${img##*/} (${SMP} CPU, $MEM, timeout ${TIMEOUT}s); artefacts in $logs"
    t0=$(date +%s.%N)
    SMOKE_KEEP=$logs ${RUNVM_SH:-} "$RUNVM" -s "$SMP" -m "$MEM" -t "$TIMEOUT" -w "$logs" "${GUEST_ENV[@]}" \
        "$img" -- vmtests/smoke.sh 2>&1 | tee "$logs/output.log"
    rc=${PIPESTATUS[0]}
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
    result=$(grep -a '^smoke-result: ' "$logs/output.log" | tail -n1)
    kver=$(sed -n 's/^smoke: kernel \([^ ,]*\),.*/\1/p' "$logs/output.log" | head -n1)
    if [ "$rc" = 0 ] && [ "$result" = "smoke-result: PASS" ]; then
        SUMMARY+=("vmtest $k: PASS (kernel ${kver:-?}, ${secs} s)")
        passed=$((passed + 1))
    else
        case $result in
            "smoke-result: FAIL ("*) reason=${result#smoke-result: FAIL (}; reason=${reason%)} ;;
            *) case $rc in
                   124) reason="timed out after ${TIMEOUT}s" ;;
                   125) reason="the guest reported no exit status (kernel panic or init failure, see the console tail above)" ;;
                   2)   reason="run-in-vm.sh usage error or missing tool (see above)" ;;
                   0)   reason="smoke.sh printed no result line" ;;
                   *)   reason="smoke.sh exited $rc without a result line" ;;
               esac ;;
        esac
        SUMMARY+=("vmtest $k: FAIL (${kver:+kernel $kver, }${secs} s: $reason)")
        failed=$((failed + 1))
    fi
done

echo
for line in "${SUMMARY[@]}"; do echo "$line"; done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
