#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Generates the struct py_layout entries of user/cpython/py_layout_table.c by
# compiling scripts/layout_probe.c against a CPython version's headers,
# internal ones included (-DPy_BUILD_CORE), and running it. Every figure
# comes from offsetof/sizeof on the real structs; nothing is copied by hand.
#
# Usage:
#   gen-layout.sh [--sysroot DIR] [--label TEXT] [--name IDENT] INCDIR
#       one entry from the headers in INCDIR (the directory holding
#       Python.h, e.g. /root/.pyenv/versions/3.10.13/include/python3.10).
#       With --sysroot, INCDIR is inside a Debian chroot whose multiarch
#       pyconfig.h lives under DIR/usr/include; the host's libc headers
#       are still used (they come first).
#   gen-layout.sh --debug-offsets [--sysroot DIR] INCDIR
#       3.13+: the u64 indices of the _Py_DebugOffsets fields that
#       user/cpython/py_debug_offsets.c reads.
#   gen-layout.sh --all
#       every entry of the table, from the header sets listed in table_sets().
#   gen-layout.sh --compare
#       builds every other header set available here (Debian release and
#       debug, other patch releases) and diffs it with the table's set.
#
# The probe is built for x86-64 (-m64), the profiler's only target. The
# Debian chroots come from scripts/make-chroots.sh; their headers need
# "chroot DIR apt-get install -y python3.X-dev" once (python3.X-dbg, which
# that script installs, brings only the debug pyconfig.h).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
probe=$here/layout_probe.c
cc=${CC:-gcc}
pyenv=${PYENV_ROOT:-/root/.pyenv}/versions
chroots=${EBPFPROF_CHROOTS:-/var/cache/ebpfprof/chroots}

# The header sets the table is generated from: minor version, label,
# sysroot ("-" for the host), include directory. %V in a label becomes
# the headers' PY_VERSION (a Debian suite moves on to new patch releases).
table_sets() {
	cat <<EOF
8	pyenv 3.8.18	-	$pyenv/3.8.18/include/python3.8
9	pyenv 3.9.18	-	$pyenv/3.9.18/include/python3.9
10	pyenv 3.10.13	-	$pyenv/3.10.13/include/python3.10
11	pyenv 3.11.7	-	$pyenv/3.11.7/include/python3.11
12	pyenv 3.12.1	-	$pyenv/3.12.1/include/python3.12
13	pyenv 3.13.0	-	$pyenv/3.13.0/include/python3.13
14	Debian sid python3.14-dev %V	$chroots/sid	/usr/include/python3.14
15	Debian sid python3.15-dev %V	$chroots/sid	/usr/include/python3.15
EOF
}

# Further sets checked against the table's by --compare.
other_sets() {
	cat <<EOF
9	Debian bullseye python3.9-dev %V	$chroots/bullseye	/usr/include/python3.9
9	Debian bullseye python3.9-dbg %V (Py_DEBUG)	$chroots/bullseye	/usr/include/python3.9d
11	Debian 12 python3.11-dev %V	-	/usr/include/python3.11
11	Debian 12 python3.11-dbg %V (Py_DEBUG)	-	/usr/include/python3.11d
13	Debian trixie python3.13-dev %V	$chroots/trixie	/usr/include/python3.13
13	Debian trixie python3.13-dbg %V (Py_DEBUG)	$chroots/trixie	/usr/include/python3.13d
14	Debian sid python3.14-dbg %V (Py_DEBUG)	$chroots/sid	/usr/include/python3.14d
15	Debian sid python3.15-dbg %V (Py_DEBUG)	$chroots/sid	/usr/include/python3.15d
EOF
}

die() {
	echo "gen-layout.sh: $*" >&2
	exit 1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run_probe SYSROOT INCDIR [CFLAGS...]: compiles and runs the probe.
run_probe() {
	local sysroot=$1 inc=$2
	shift 2
	local flags=(-m64 -std=gnu11 -w -DPy_BUILD_CORE)
	if [ "$sysroot" != "-" ]; then
		[ -f "$sysroot/.ebpfprof-ready" ] ||
			die "$sysroot is not a finished chroot (scripts/make-chroots.sh)"
		inc=$sysroot$inc
		# After the host's own directories: only the chroot's
		# multiarch pyconfig.h is wanted from there.
		flags+=(-idirafter "$sysroot/usr/include")
	fi
	[ -f "$inc/Python.h" ] ||
		die "no Python.h in $inc (in a chroot: chroot DIR apt-get install -y python3.X-dev)"
	"$cc" "${flags[@]}" "$@" -I"$inc" "$probe" -o "$tmp/probe" ||
		die "probe does not compile against $inc"
	"$tmp/probe"
}

# PY_VERSION from a probe output's first line, e.g. "3.10.13".
probe_version() {
	sed -n '1s/^\t\/\* PY_VERSION \([^ ,]*\).*/\1/p'
}

# The version a probe output is for, e.g. "3_10".
probe_ident() {
	sed -n 's/^\t\.major = \([0-9]*\),$/\1/p; s/^\t\.minor = \([0-9]*\),$/\1/p' | paste -sd_
}

# entry SYSROOT INCDIR LABEL [NAME]: one static const struct py_layout.
entry() {
	local sysroot=$1 inc=$2 label=$3 name=${4:-}
	local out
	out=$(run_probe "$sysroot" "$inc")
	[ -n "$name" ] || name=py_$(probe_ident <<<"$out")
	label=${label//%V/$(probe_version <<<"$out")}
	printf 'static const struct py_layout %s = {\n' "$name"
	printf '%s\n' "$out" | sed -n '/^\t\/\*/p'
	printf '%s\n' "$out" | sed -n '/^\t\.major/,/^\t\.minor/p'
	printf '\t.source = "gen-layout.sh on %s headers",\n' "$label"
	printf '%s\n' "$out" | sed '/^\t\/\*/d; /^\t\.major/d; /^\t\.minor/d'
	printf '};\n'
}

mode=entry
sysroot=-
label=
name=
while [ $# -gt 0 ]; do
	case $1 in
	--sysroot) sysroot=$2; shift 2 ;;
	--label) label=$2; shift 2 ;;
	--name) name=$2; shift 2 ;;
	--debug-offsets) mode=debug; shift ;;
	--all) mode=all; shift ;;
	--compare) mode=compare; shift ;;
	-h|--help) sed -n '4,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) die "unknown option $1" ;;
	*) break ;;
	esac
done

case $mode in
entry)
	[ $# -eq 1 ] || die "usage: gen-layout.sh [--sysroot DIR] [--label TEXT] [--name IDENT] INCDIR"
	entry "$sysroot" "$1" "${label:-$1}" "$name"
	;;
debug)
	[ $# -eq 1 ] || die "usage: gen-layout.sh --debug-offsets [--sysroot DIR] INCDIR"
	run_probe "$sysroot" "$1" -DEP_PROBE_DEBUG_OFFSETS
	;;
all)
	first=1
	while IFS=$'\t' read -r minor lab root inc; do
		[ $first -eq 1 ] || echo
		first=0
		entry "$root" "$inc" "$lab" "py_3_$minor"
	done < <(table_sets)
	;;
compare)
	rc=0
	while IFS=$'\t' read -r minor lab root inc; do
		ref=$(table_sets | awk -F'\t' -v m="$minor" '$1 == m')
		IFS=$'\t' read -r _ rlab rroot rinc <<<"$ref"
		if ! other=$(run_probe "$root" "$inc" 2>&1); then
			echo "3.$minor ${lab//%V/?}: skipped ($other)"
			continue
		fi
		mine=$(run_probe "$rroot" "$rinc")
		lab=${lab//%V/$(probe_version <<<"$other")}
		rlab=${rlab//%V/$(probe_version <<<"$mine")}
		if d=$(diff <(sed '/^\t\/\*/d' <<<"$mine") <(sed '/^\t\/\*/d' <<<"$other")); then
			echo "3.$minor $lab: agrees with $rlab"
		else
			echo "3.$minor $lab: DIFFERS from $rlab:"
			printf '%s\n' "$d" | sed 's/^/    /'
			rc=1
		fi
	done < <(other_sets)
	exit $rc
	;;
esac
