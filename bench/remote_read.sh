#!/bin/bash
# Builds bench/remote_read.c against this tree's user/base/remote.c (reads
# through the reader process, each with a deadline) and, given a tree of
# 9092b2a or before as $1, against its remote.c (process_vm_readv in the
# caller), and runs each three times: microseconds per read.
set -eu
cd "$(dirname "$0")/.."
mkdir -p build/bench
cc -O2 -Iuser/base bench/remote_read.c user/base/remote.c user/base/remote_reader.c \
	user/base/grow.c -o build/bench/remote_read
if [ $# -gt 0 ]; then
	cc -O2 -I"$1/user/base" bench/remote_read.c "$1/user/base/remote.c" "$1/user/base/grow.c" \
		-o build/bench/remote_read-before
fi
for run in 1 2 3; do
	[ $# -gt 0 ] && { echo "before ($1), run $run:"; build/bench/remote_read-before "${N:-100000}"; }
	echo "after, run $run:"
	build/bench/remote_read "${N:-100000}"
done
