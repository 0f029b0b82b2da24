#!/bin/sh
# Runs each cmocka unit test binary given; fails if any fails. cmocka prints
# its own closing lines ([  PASSED  ] / [  FAILED  ]) for each.
failed=0
for t in "$@"; do
	echo "== $t"
	"$t" 2>&1 || { echo "FAILED: $t"; failed=1; }
done
exit $failed
