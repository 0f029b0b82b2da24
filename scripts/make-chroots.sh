#!/usr/bin/env bash
# Builds (once, then reuses) the Debian chroots the version tests profile:
#   bullseye -> CPython 3.9, trixie -> 3.13, sid -> 3.14 and 3.15, each with its -dbg build too;
#   sid also gets python3-distributed (2024.12: --dask's _run_task runner) for its python3.
# A process started inside one has its own root, the way a container's has, so the
# profiler must find its interpreter through /proc/PID/root.
# Usage: scripts/make-chroots.sh [SUITE...]   (default: bullseye trixie sid)
# The cache lives in $EBPFPROF_CHROOTS (default /var/cache/ebpfprof/chroots).
set -euo pipefail
root=${EBPFPROF_CHROOTS:-/var/cache/ebpfprof/chroots}
mirror=${EBPFPROF_MIRROR:-http://deb.debian.org/debian}
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(bullseye trixie sid)

# Pythons a suite must hold besides its default python3, each with its -dbg
# build: sid carries the current release (3.15) next to its default 3.14.
extra_pythons() {
	case $1 in
	sid) echo "3.14 3.15" ;;
	esac
}

# Installs Debian packages into the chroot DIR of suite.
# The registry's sid is a frozen snapshot: its Release file has expired.
apt_install() {
	local suite=$1 dir=$2
	shift 2
	echo "chroot $suite: installing $*"
	chroot "$dir" apt-get -o Acquire::Check-Valid-Until=false update -q \
		>>"$root/$suite.log" 2>&1 &&
	chroot "$dir" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends "$@" >>"$root/$suite.log" 2>&1 ||
		{ echo "chroot $suite: $* not installable (see $root/$suite.log)"; return 1; }
	chroot "$dir" apt-get clean >/dev/null 2>&1 || true
}

# Installs pythonX.Y and pythonX.Y-dbg for each extra version DIR lacks.
add_pythons() {
	local suite=$1 dir=$2 v missing=()
	for v in $(extra_pythons "$suite"); do
		[ -x "$dir/usr/bin/python$v" ] && [ -x "$dir/usr/bin/python${v}d" ] ||
			missing+=("python$v" "python$v-dbg")
	done
	[ ${#missing[@]} -eq 0 ] || apt_install "$suite" "$dir" "${missing[@]}"
}

# Debian packages a suite must hold besides its Pythons: sid's distributed
# (2024.12) runs tasks through _run_task, which --dask is tested on there.
extra_packages() {
	case $1 in
	sid) echo "python3-distributed" ;;
	esac
}

# Installs the suite's extra packages DIR lacks; a chroot built before a
# package was added gets it on the next run.
add_packages() {
	local suite=$1 dir=$2 p missing=()
	for p in $(extra_packages "$suite"); do
		chroot "$dir" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q ' installed$' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] || apt_install "$suite" "$dir" "${missing[@]}"
}

build_one() {
	local suite=$1 dir=$root/$1
	if [ -f "$dir/.ebpfprof-ready" ]; then
		echo "chroot $suite: cached at $dir"
		# a chroot cached before a version was added gets it now
		local rc=0
		add_pythons "$suite" "$dir" || rc=1
		add_packages "$suite" "$dir" || rc=1
		return $rc
	fi
	echo "chroot $suite: building at $dir (a few minutes, once)"
	rm -rf "$dir.tmp"
	mkdir -p "$root"
	debootstrap --variant=minbase --include=python3 "$suite" "$dir.tmp" "$mirror" \
		>"$root/$suite.log" 2>&1 || { tail -20 "$root/$suite.log"; return 1; }
	local pyver
	pyver=$(chroot "$dir.tmp" python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	# The debug interpreter (python3.X-dbg) is a second, differently built binary to test.
	chroot "$dir.tmp" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends "python$pyver-dbg" >>"$root/$suite.log" 2>&1 ||
		echo "chroot $suite: python$pyver-dbg not installable (see $root/$suite.log)"
	add_pythons "$suite" "$dir.tmp" || true
	add_packages "$suite" "$dir.tmp" || true
	chroot "$dir.tmp" apt-get clean >/dev/null 2>&1 || true
	touch "$dir.tmp/.ebpfprof-ready"
	rm -rf "$dir"
	mv "$dir.tmp" "$dir"
	echo "chroot $suite: python $pyver ready"
}

for s in "${suites[@]}"; do
	build_one "$s" &
done
rc=0
for job in $(jobs -p); do
	wait "$job" || rc=1
done
exit $rc
