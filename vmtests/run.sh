#!/bin/bash
# vmtests/run.sh - prove that ebpfprof's CO-RE BPF programs load and work on
# Debian 12's kernels (6.1 and 6.12), not only on the host's: boots each kernel
# under QEMU with vmtests/boot.sh and runs vmtests/smoke.sh inside, against the
# ./ebpfprof already built (`make vmtest` builds it first).
#
# Usage: vmtests/run.sh [--kernel 6.1|6.12]...     (default: every kernel)
#
# Prints the guest's output as it comes, then one line per kernel
#   vmtest 6.1: PASS (kernel 6.1.0-56-amd64, booted in 4.2 s, result at 31.0 s, 32 s in all)
#   vmtest 6.12: FAIL (reason)
# and last the closing line "N passed, N failed". Exits 1 if any kernel failed,
# 2 on usage errors.
#
# Kernels come from vmtests/setup.sh's cache ($EBPFPROF_KERNELS,
# /var/cache/ebpfprof/kernels/SERIES). If a kernel, QEMU or another tool is
# missing and we are root, setup.sh is run first (EBPFPROF_VMTEST_SETUP=0: do
# not; just fail).
#
# Each kernel's artefacts (guest output, the guest kernel's console log,
# profiles, ebpfprof's -v stderr with any verifier log, the --gc-log file) are
# kept on the host in $EBPFPROF_VMTEST_LOGS/SERIES (default
# build/vmtest/SERIES in this repository), emptied at the start of each run.
#
# Environment: VMTEST_SMP (guest CPUs, default 1: BPF attach under TCG is
# fastest that way), VMTEST_MEM (default 1G), EBPFPROF_VMTEST_TIMEOUT (seconds
# per kernel, default 600: a guard against a hung guest, not a speed limit;
# on a busy machine one kernel took over 3 minutes), SMOKE_EBPFPROF (test
# another ebpfprof binary than ./ebpfprof, e.g. a candidate fix built
# elsewhere; passed into the guest).
set -uo pipefail
prog=vmtests/run.sh
ALL_KERNELS="5.10 6.1 6.12"

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
KCACHE=${EBPFPROF_KERNELS:-/var/cache/ebpfprof/kernels}
LOGROOT=${EBPFPROF_VMTEST_LOGS:-$REPO/build/vmtest}
export VMTEST_TIMEOUT=${EBPFPROF_VMTEST_TIMEOUT:-600}
export VMTEST_SMP=${VMTEST_SMP:-1} VMTEST_MEM=${VMTEST_MEM:-1G}

# Problems that fail every kernel alike: one FAIL line per kernel, then the total.
fail_all() {
    echo "$prog: $1" >&2
    n=0
    for k in $KERNELS; do echo "vmtest $k: FAIL ($1)"; n=$((n + 1)); done
    echo "0 passed, $n failed"
    exit 1
}

EBPFPROF=${SMOKE_EBPFPROF:-$REPO/ebpfprof}
[ -x "$EBPFPROF" ] || fail_all "$EBPFPROF is not built (run make)"
[ -x "$REPO/vmtests/smoke.sh" ] || fail_all "$REPO/vmtests/smoke.sh missing or not executable"

# ready SERIES: is that kernel unpacked and prepared in the cache?
ready() {
    local v
    for v in "$KCACHE/$1"/boot/vmlinuz-*; do
        [ -r "$v" ] && [ -e "$KCACHE/$1/lib/modules/${v##*/vmlinuz-}/modules.dep" ] && return 0
    done
    return 1
}

need_setup=0
for tool in qemu-system-x86_64 busybox cpio modprobe depmod readelf xz zstd; do
    command -v $tool >/dev/null || need_setup=1
done
for k in $KERNELS; do ready "$k" || need_setup=1; done
if [ $need_setup = 1 ]; then
    if [ "$(id -u)" = 0 ] && [ "${EBPFPROF_VMTEST_SETUP:-1}" = 1 ]; then
        echo "$prog: QEMU, a tool or a kernel is missing: running vmtests/setup.sh"
        "$REPO/vmtests/setup.sh" || fail_all "vmtests/setup.sh failed"
    else
        fail_all "QEMU, a tool or a kernel is missing: run vmtests/setup.sh as root"
    fi
fi

passed=0 failed=0
SUMMARY=()
for k in $KERNELS; do
    if ! ready "$k"; then
        SUMMARY+=("vmtest $k: FAIL (no $k kernel in $KCACHE/$k: run vmtests/setup.sh)")
        failed=$((failed + 1)); continue
    fi
    logs=$LOGROOT/$k
    rm -rf "$logs"; mkdir -p "$logs"
    kver=$(ls "$KCACHE/$k"/boot/vmlinuz-* | head -n1); kver=${kver##*/vmlinuz-}
    echo "=== vmtest $k: booting $kver ($VMTEST_SMP CPU, $VMTEST_MEM, timeout ${VMTEST_TIMEOUT}s); artefacts in $logs"
    "$REPO/vmtests/boot.sh" "$KCACHE/$k" "$logs"
    rc=$?
    read -r _ boot _ result _ total 2>/dev/null < "$logs/timing" || boot=? result=? total=?
    result_line=$(grep -a '^smoke-result: ' "$logs/output.log" 2>/dev/null | tail -n1)
    if [ "$rc" = 0 ] && [ "$result_line" = "smoke-result: PASS" ]; then
        SUMMARY+=("vmtest $k: PASS (kernel $kver, booted in $boot s, result at $result s, $total s in all)")
        passed=$((passed + 1))
    else
        case $result_line in
            "smoke-result: FAIL ("*) reason=${result_line#smoke-result: FAIL (}; reason=${reason%)} ;;
            *) case $rc in
                   124) reason="no result after ${VMTEST_TIMEOUT}s" ;;
                   125) reason="the guest ended without a status (kernel panic or init failure, see the console's tail above)" ;;
                   2)   reason="vmtests/boot.sh could not start the VM (see above)" ;;
                   0)   reason="smoke.sh printed no result line" ;;
                   *)   reason="smoke.sh exited $rc without a result line" ;;
               esac ;;
        esac
        SUMMARY+=("vmtest $k: FAIL (kernel $kver, $total s: $reason)")
        failed=$((failed + 1))
    fi
done

echo
for line in "${SUMMARY[@]}"; do echo "$line"; done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
