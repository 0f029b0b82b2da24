#!/bin/bash
# vmtests/boot.sh - boot one of vmtests/setup.sh's kernels under QEMU and run
# vmtests/smoke.sh inside it, as root, in this repository. vmtests/run.sh calls
# it once per kernel.
#
# Usage: vmtests/boot.sh KERNEL_DIR OUT_DIR
#   KERNEL_DIR  a kernel package unpacked by setup.sh: boot/vmlinuz-REL,
#               lib/modules/REL with its modules.dep, and (optional, faster)
#               boot/vmlinux-REL, the uncompressed kernel
#   OUT_DIR     an existing host directory, shared read-write with the guest; it
#               receives output.log (smoke.sh's output, also streamed to our
#               stdout), console.log (the guest kernel's log), smoke.sh's
#               artefacts (SMOKE_KEEP) and timing (see below)
#
# The guest: QEMU's software emulation (TCG: no KVM needed) boots the kernel
# with a small initramfs built here (and kept in KERNEL_DIR, named by a hash of
# what went in, for the next run): busybox, the modules that reach the host's
# files (virtio_pci, 9pnet_virtio, 9p, overlay and what they depend on, from
# the kernel's own module tree) and vmtests/init, which mounts
# the host's / (shared read-only over virtio-9p) under an in-memory overlay as
# the guest's root and runs smoke.sh there. Nothing the guest writes reaches
# the host except OUT_DIR.
#
# Environment: VMTEST_SMP (guest CPUs, default 1), VMTEST_MEM (default 1G),
# VMTEST_TIMEOUT (seconds, default 600), VMTEST_APPEND (more kernel arguments),
# SMOKE_EBPFPROF (passed to smoke.sh).
#
# Exit status: smoke.sh's; 124 when the guest ran out of time; 125 when it
# ended without a status (kernel panic, init failure: the console's tail is
# printed); 2 when the VM could not be started. OUT_DIR/timing holds
# "boot S result S total S": seconds from QEMU's start to smoke.sh's start, to
# its exit status, and to QEMU's exit.
set -uo pipefail
prog=vmtests/boot.sh
die() { echo "$prog: $*" >&2; exit 2; }
[ $# = 2 ] || die "usage: $prog KERNEL_DIR OUT_DIR"
KDIR=$(cd "$1" 2>/dev/null && pwd) || die "no directory $1"
OUT=$(cd "$2" 2>/dev/null && pwd) || die "no directory $2"
REPO=$(cd "$(dirname "$0")/.." && pwd)
SMP=${VMTEST_SMP:-1}
MEM=${VMTEST_MEM:-1G}
TIMEOUT=${VMTEST_TIMEOUT:-600}

vmlinuz=$(ls "$KDIR"/boot/vmlinuz-* 2>/dev/null | head -n1)
[ -r "$vmlinuz" ] || die "no boot/vmlinuz-* in $KDIR (run vmtests/setup.sh)"
REL=${vmlinuz##*/vmlinuz-}
MODS=$KDIR/lib/modules/$REL
[ -e "$MODS/modules.dep" ] || die "$MODS has no modules.dep (run vmtests/setup.sh)"
for tool in qemu-system-x86_64 busybox cpio modprobe xz zstd; do
	command -v $tool >/dev/null || die "$tool missing (run vmtests/setup.sh)"
done
# Under TCG, unpacking the compressed kernel is seconds of every boot; QEMU can
# start the uncompressed one directly at its PVH entry point instead.
image=$KDIR/boot/vmlinux-$REL
[ -s "$image" ] || image=$vmlinuz

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ebpfprof-vm.XXXXXX") || die "cannot make a work directory"
QEMU_PID=
cleanup() {
	[ -n "$QEMU_PID" ] && kill "$QEMU_PID" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- initramfs: busybox, init, the modules (uncompressed: busybox's insmod) ----
# modprobe lists each module after the ones it needs ("builtin NAME" for those
# compiled in); modules wanted by two of ours come twice.
KOS=$(modprobe -d "$KDIR" -S "$REL" --show-depends -a virtio_pci 9pnet_virtio 9p overlay |
      awk '$1 == "insmod" && !seen[$2]++ { print $2 }') || die "modprobe cannot list the modules of $REL"
# Built once and kept in KERNEL_DIR (when writable) under a name made of what
# goes in: this script, init, busybox and the modules (path, size, time): a
# change to any of them builds it anew.
key=$({ cat "$0" "$REPO/vmtests/init" "$(command -v busybox)"
	for ko in $KOS; do stat -L -c '%n %s %Y' "$ko"; done; } | sha256sum | cut -c1-16)
initramfs=$KDIR/initramfs-$key.cpio
if [ ! -s "$initramfs" ]; then
	ir=$WORK/initramfs
	mkdir -p "$ir"/{bin,dev,proc,host,upper,newroot,modules}
	cp "$(command -v busybox)" "$ir/bin/busybox"
	cp "$REPO/vmtests/init" "$ir/init"
	chmod 755 "$ir/init"
	n=0
	for ko in $KOS; do
		n=$((n + 1))
		dst=$ir/modules/$(printf %02d $n)-$(basename "${ko%%.ko*}").ko
		case $ko in
			*.ko.xz)  xz -dc "$ko" > "$dst" ;;
			*.ko.zst) zstd -qdc "$ko" > "$dst" ;;
			*.ko)     cp "$ko" "$dst" ;;
			*)        die "cannot unpack module $ko" ;;
		esac || die "cannot unpack module $ko"
	done
	# uncompressed: under TCG unpacking costs more than reading
	(cd "$ir" && find . | cpio -o -H newc -R 0:0 --quiet) > "$WORK/initramfs.cpio" ||
		die "cannot build the initramfs"
	initramfs=$WORK/initramfs.cpio
	if [ -w "$KDIR" ]; then        # kept for the next run, in place of older ones
		rm -f "$KDIR"/initramfs-*.cpio
		cp "$WORK/initramfs.cpio" "$KDIR/.initramfs-$key.tmp" &&
			mv "$KDIR/.initramfs-$key.tmp" "$KDIR/initramfs-$key.cpio"
	fi
fi

# --- what the guest runs -------------------------------------------------------
{
	echo "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	echo "export HOME=/root LANG=C.UTF-8 SMOKE_KEEP=/run/vmtest"
	[ -n "${SMOKE_EBPFPROF:-}" ] && printf 'export SMOKE_EBPFPROF=%q\n' "$SMOKE_EBPFPROF"
	printf 'cd %q || exit 2\n' "$REPO"
	echo "exec vmtests/smoke.sh"
} > "$OUT/guest.sh"
rm -f "$OUT/started" "$OUT/status" "$OUT/timing"
: > "$OUT/output.log"
: > "$OUT/console.log"

# --- QEMU --------------------------------------------------------------------
# thread=single: QEMU 7.2's multi-threaded TCG crashed guests while the kernel
# patched its own code (BPF attach/detach) on one vCPU as another ran it.
# panic=-1 with -no-reboot: a panic or an oops ends QEMU at once.
# (a comma in a path is doubled: QEMU's option syntax)
share=security_model=none,multidevs=remap
t0=$(date +%s.%N)
timeout -k 5 "$TIMEOUT" qemu-system-x86_64 -nodefaults -no-user-config -display none -no-reboot \
	-machine pc -accel tcg,thread=single -cpu max -smp "$SMP" -m "$MEM" \
	-kernel "$image" -initrd "$initramfs" \
	-append "console=ttyS0 quiet panic=-1 oops=panic${VMTEST_APPEND:+ $VMTEST_APPEND}" \
	-serial "file:$OUT/console.log" -monitor none \
	-virtfs "local,path=/,mount_tag=hostroot,readonly=on,$share" \
	-virtfs "local,path=${OUT//,/,,},mount_tag=out,$share" \
	< /dev/null > "$WORK/qemu.err" 2>&1 &
QEMU_PID=$!
tail -n +1 -s 0.2 -F --pid=$QEMU_PID "$OUT/output.log" 2>/dev/null &
tail_pid=$!
wait $QEMU_PID
qemu_rc=$?
QEMU_PID=
t_end=$(date +%s.%N)
wait $tail_pid

stamp() { stat -c %.3Y "$OUT/$1" 2>/dev/null || echo "$t_end"; }
awk -v t0="$t0" -v s="$(stamp started)" -v r="$(stamp status)" -v e="$t_end" \
	'BEGIN { printf "boot %.1f result %.1f total %.1f\n", s - t0, r - t0, e - t0 }' > "$OUT/timing"

if [ -s "$OUT/status" ]; then
	exit "$(cat "$OUT/status")"
fi
if [ "$qemu_rc" = 124 ] || [ "$qemu_rc" = 137 ]; then
	echo "$prog: no result after ${TIMEOUT}s; the guest console's last lines (quiet: errors only):" >&2
	tail -n 30 "$OUT/console.log" >&2
	exit 124
fi
echo "$prog: the guest ended without a status (QEMU exit $qemu_rc); the guest console's last lines (quiet: errors only):" >&2
tail -n 30 "$OUT/console.log" >&2
cat "$WORK/qemu.err" >&2
exit 125
