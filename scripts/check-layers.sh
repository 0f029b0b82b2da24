#!/bin/bash
# scripts/check-layers.sh - user/ is layered, lowest first:
#   base cpython native model output diff history push record live cli
# A file may include headers of its own folder and of the folders below it,
# never of one above: base knows nothing of CPython, the model nothing of how
# it is written out, only cli of the commands. Within a layer no two files
# include each other in a circle: x.c and x.h are one module, and a module
# that includes another's header depends on it (a circle of modules is one
# concern split in two, or two that should share a third). Prints each
# include that goes up and each circle, and exits 1 if there is one; prints
# one line and exits 0 otherwise.
set -u
cd "$(dirname "$0")/.."
layers=(base cpython native model output diff history push record live cli)
declare -A rank home
for i in "${!layers[@]}"; do
	rank[${layers[$i]}]=$i
done
for d in user/*/; do
	d=${d%/}; d=${d#user/}
	[ -n "${rank[$d]+x}" ] || { echo "check-layers: user/$d is no layer (add it to scripts/check-layers.sh)"; exit 1; }
done
for h in user/*/*.h; do
	l=${h#user/}; home[$(basename "$h")]=${l%%/*}
done
bad=0
for f in user/*/*.[ch]; do
	l=${f#user/}; l=${l%%/*}
	for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
		to=${home[$inc]:-}
		[ -n "$to" ] || continue	# include/, build/: below every layer
		if [ "${rank[$to]}" -gt "${rank[$l]}" ]; then
			echo "check-layers: $f ($l) includes $inc ($to), a layer above it"
			bad=1
		fi
	done
done
# module -> module edges, for tsort to find the circles in (x_priv.h, the
# inside of module x shared by its files, is part of x)
edges=$(for f in user/*/*.[ch]; do
	m=$(basename "${f%.*}"); m=${m%_priv}
	for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
		t=${inc%.h}; t=${t%_priv}
		[ -n "${home[$inc]:-}" ] && [ "$t" != "$m" ] && echo "$m $t"
	done
done | sort -u)
circles=$(tsort <<<"$edges" 2>&1 >/dev/null | sed -n 's/^tsort: \([^ :]*\)$/\1/p')
if [ -n "$circles" ]; then
	echo "check-layers: modules that include each other in a circle:" $circles
	bad=1
fi
[ $bad = 0 ] && echo "check-layers: user/ includes go down only (${layers[*]}), in no circle"
exit $bad
