#!/bin/bash
# vmtests/setup.sh - everything `make vmtest` (vmtests/run.sh) needs. Idempotent:
# installs only the missing Debian packages, fetches only the missing kernels.
#
#   * QEMU, busybox-static and the tools vmtests/boot.sh uses (cpio, kmod's
#     modprobe and depmod, readelf, xz, zstd: Debian's 6.1 kernel is
#     xz-compressed, 6.12 zstd-compressed with .ko.xz modules);
#   * three Debian kernels, unpacked (dpkg-deb -x, never installed: the host's
#     /boot is left alone) into $EBPFPROF_KERNELS (/var/cache/ebpfprof/kernels):
#       5.10/  Debian 11's 5.10 (linux-image-5.10.0-32-amd64-unsigned, the kernel
#              of the report in issue 24), from the bullseye suite
#       6.1/   the 6.1 kernel that linux-image-amd64 points at (6.1.0-NN-amd64)
#       6.12/  a 6.12.x+deb12 kernel from bookworm-backports/updates
#     The host is Debian 12, whose apt knows no bullseye package: 5.10 is
#     fetched through an apt configuration of its own (sources list, lists
#     and cache under $EBPFPROF_KERNELS/.apt-bullseye, Debian's keyring), so
#     neither the host's apt state nor a chroot is touched or needed.
#     each holding boot/vmlinuz-<release> and lib/modules/<release>, to which
#     this script adds what a package's installation would have made
#     (modules.dep, for modprobe) and boot/vmlinux-<release>, the kernel
#     uncompressed, which QEMU boots seconds faster under software emulation.
#
# Environment:
#   EBPFPROF_KERNELS      cache directory              [/var/cache/ebpfprof/kernels]
#   EBPFPROF_KERNEL_5_10  5.10 package to fetch        [linux-image-5.10.0-32-amd64-unsigned if
#                         bullseye has it, else its newest linux-image-5.10.0-*-amd64-unsigned]
#   EBPFPROF_KERNEL_6_1   6.1 package to fetch         [what linux-image-amd64 depends on]
#   EBPFPROF_KERNEL_6_12  6.12 package to fetch        [linux-image-6.12.117+deb12-amd64 if
#                         apt knows it, else the newest linux-image-6.12.*+deb12-amd64]
# Needs root (apt-get). Prints one line per item; exits non-zero on failure.
set -euo pipefail
prog=vmtests/setup.sh
KCACHE=${EBPFPROF_KERNELS:-/var/cache/ebpfprof/kernels}
die() { echo "$prog: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (apt-get, /var/cache)"

# --- Debian packages ------------------------------------------------------------
pkgs="qemu-system-x86 busybox-static cpio kmod binutils xz-utils zstd"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
updated=0
apt_update() { [ $updated = 1 ] || { apt-get update -qq; updated=1; }; }
if [ -n "$missing" ]; then
    echo "setup: installing$missing"
    apt_update
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
echo "setup: packages present ($pkgs)"

# --- kernels ----------------------------------------------------------------------
# have SERIES: is an unpacked kernel of that series (with its modules) in the cache?
have() {
    local v
    for v in "$KCACHE/$1"/boot/vmlinuz-*; do
        [ -r "$v" ] && [ -d "$KCACHE/$1/lib/modules/${v##*/vmlinuz-}" ] && return 0
    done
    return 1
}

# fetch SERIES PACKAGE [APT OPTIONS...]: download PACKAGE and unpack it into $KCACHE/SERIES
fetch() {
    local series=$1 pkg=$2 tmp
    shift 2
    mkdir -p "$KCACHE"
    tmp=$(mktemp -d "$KCACHE/.fetch-$series.XXXXXX")
    echo "setup: downloading $pkg"
    if ! (cd "$tmp" && apt-get "$@" download -q -o APT::Sandbox::User=root "$pkg" >/dev/null); then
        rm -rf "$tmp"; die "apt-get download $pkg failed"
    fi
    mkdir -p "$tmp/root"
    dpkg-deb -x "$tmp"/*.deb "$tmp/root"
    ls "$tmp"/root/boot/vmlinuz-* >/dev/null 2>&1 || { rm -rf "$tmp"; die "$pkg holds no boot/vmlinuz-*"; }
    mv "$tmp"/*.deb "$tmp/root/"          # kept for reference (what was unpacked)
    rm -rf "${KCACHE:?}/$series"
    mv "$tmp/root" "$KCACHE/$series"
    rmdir "$tmp"
}

# 5.10: Debian 11's, from bullseye through apt options of our own (see above).
BULLSEYE=$KCACHE/.apt-bullseye
BULLSEYE_APT=(-o "Dir::Etc::sourcelist=$BULLSEYE/sources.list" -o Dir::Etc::sourceparts=-
              -o "Dir::Etc::preferencesparts=$BULLSEYE/preferences.d"
              -o "Dir::State::Lists=$BULLSEYE/lists" -o "Dir::Cache=$BULLSEYE/cache"
              -o APT::Architecture=amd64)
bullseye_update() {
    mkdir -p "$BULLSEYE"/lists/partial "$BULLSEYE"/cache/archives/partial "$BULLSEYE"/preferences.d
    cat > "$BULLSEYE/sources.list" <<'EOF'
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bullseye main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bullseye-security main
EOF
    apt-get "${BULLSEYE_APT[@]}" update -qq || die "apt-get update of the bullseye suite failed"
}
if have 5.10; then
    echo "setup: kernel 5.10 present: $(ls "$KCACHE"/5.10/boot/vmlinuz-*)"
else
    [ -r /usr/share/keyrings/debian-archive-keyring.gpg ] ||
        die "/usr/share/keyrings/debian-archive-keyring.gpg missing (apt-get install debian-archive-keyring)"
    bullseye_update
    pkg=${EBPFPROF_KERNEL_5_10:-}
    if [ -z "$pkg" ]; then
        avail=$(apt-cache "${BULLSEYE_APT[@]}" search --names-only '^linux-image-5\.10\.0-[0-9]+-amd64-unsigned$' |
                cut -d' ' -f1 | sort -V)
        [ -n "$avail" ] || die "the bullseye suite has no linux-image-5.10.0-*-amd64-unsigned package"
        if grep -qx 'linux-image-5.10.0-32-amd64-unsigned' <<<"$avail"; then
            pkg=linux-image-5.10.0-32-amd64-unsigned
        else
            pkg=$(tail -n1 <<<"$avail")
        fi
    fi
    fetch 5.10 "$pkg" "${BULLSEYE_APT[@]}"
    echo "setup: kernel 5.10 fetched: $(ls "$KCACHE"/5.10/boot/vmlinuz-*)"
fi

# 6.1: the package linux-image-amd64 (Debian 12's default kernel) depends on.
if have 6.1; then
    echo "setup: kernel 6.1 present: $(ls "$KCACHE"/6.1/boot/vmlinuz-*)"
else
    pkg=${EBPFPROF_KERNEL_6_1:-}
    if [ -z "$pkg" ]; then
        apt_update
        pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
              sed -n 's/^ *Depends: \(linux-image-6\.1\.[^ ]*-amd64\)$/\1/p' | head -n1)
        [ -n "$pkg" ] || die "cannot tell which 6.1 kernel linux-image-amd64 depends on"
    fi
    fetch 6.1 "$pkg"
    echo "setup: kernel 6.1 fetched: $(ls "$KCACHE"/6.1/boot/vmlinuz-*)"
fi

# 6.12: Debian 12 ships it as linux-image-6.12.N+deb12-amd64.
if have 6.12; then
    echo "setup: kernel 6.12 present: $(ls "$KCACHE"/6.12/boot/vmlinuz-*)"
else
    pkg=${EBPFPROF_KERNEL_6_12:-}
    if [ -z "$pkg" ]; then
        apt_update
        avail=$(apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb12-amd64$' | cut -d' ' -f1 | sort -V)
        [ -n "$avail" ] || die "apt knows no linux-image-6.12.*+deb12-amd64 package"
        if grep -qx 'linux-image-6.12.117+deb12-amd64' <<<"$avail"; then
            pkg=linux-image-6.12.117+deb12-amd64
        else
            pkg=$(tail -n1 <<<"$avail")
        fi
    fi
    fetch 6.12 "$pkg"
    echo "setup: kernel 6.12 fetched: $(ls "$KCACHE"/6.12/boot/vmlinuz-*)"
fi
# --- what installing the package would have made, and the uncompressed kernel ------
# unpack_vmlinux VMLINUZ OUT: the ELF kernel inside a bzImage. Its setup header
# says where the compressed payload starts (after the setup sectors) and how
# long it is; the payload ends with its uncompressed size (4 bytes).
unpack_vmlinux() {
    local setup_sects offset length start unz
    setup_sects=$(od -An -tu1 -j $((0x1f1)) -N1 "$1" | tr -d ' ')
    [ "$setup_sects" = 0 ] && setup_sects=4
    offset=$(od -An -tu4 -j $((0x248)) -N4 "$1" | tr -d ' ')
    length=$(od -An -tu4 -j $((0x24c)) -N4 "$1" | tr -d ' ')
    start=$(( (setup_sects + 1) * 512 + offset ))
    case $(od -An -tx1 -j $start -N4 "$1" | tr -d ' ') in
        fd377a58) unz="xz -dc" ;;
        28b52ffd) unz="zstd -qdc" ;;
        1f8b08*)  unz="gzip -dc" ;;
        *) return 1 ;;
    esac
    dd if="$1" iflag=skip_bytes,count_bytes skip=$start count=$((length - 4)) bs=1M status=none |
        $unz > "$2"
}

prepare() {
    local series=$1 vmlinuz rel
    vmlinuz=$(ls "$KCACHE/$series"/boot/vmlinuz-* | head -n1)
    rel=${vmlinuz##*/vmlinuz-}
    if [ ! -e "$KCACHE/$series/lib/modules/$rel/modules.dep" ]; then
        depmod -b "$KCACHE/$series" "$rel" || die "depmod for $rel failed"
        echo "setup: kernel $series: modules.dep made"
    fi
    [ -s "$KCACHE/$series/boot/vmlinux-$rel" ] && return
    # QEMU boots an ELF kernel only through its PVH entry (an ELF note Xen type 0x12)
    if unpack_vmlinux "$vmlinuz" "$KCACHE/$series/boot/.vmlinux.tmp" &&
       readelf -n "$KCACHE/$series/boot/.vmlinux.tmp" 2>/dev/null | grep -q 'Xen.*0x00000012\|PHYS32_ENTRY'; then
        mv "$KCACHE/$series/boot/.vmlinux.tmp" "$KCACHE/$series/boot/vmlinux-$rel"
        echo "setup: kernel $series: uncompressed vmlinux-$rel made (PVH boot)"
    else
        rm -f "$KCACHE/$series/boot/.vmlinux.tmp"
        echo "setup: kernel $series: no PVH entry in $rel; QEMU boots the compressed kernel"
    fi
}
prepare 5.10
prepare 6.1
prepare 6.12
echo "setup: done (kernels in $KCACHE)"
