#!/bin/bash
# scripts/check-layers.sh - user/ is layered, lowest first:
#   base cpython native model output diff record live cli
# A file may include headers of its own folder and of the folders below it,
# never of one above: base knows nothing of CPython, the model nothing of how
# it is written out, only cli of the commands. Prints each include that goes
# up and exits 1 if there is one; prints one line and exits 0 otherwise.
set -u
cd "$(dirname "$0")/.."
layers=(base cpython native model output diff record live cli)
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
[ $bad = 0 ] && echo "check-layers: user/ includes go down only (${layers[*]})"
exit $bad
