#!/bin/bash
# Builds bench/symbolizers.c against user/native and BCC's libbpfcc, and
# names the same 20000 pcs of a python3.11 running tests/native/zlib_app.py
# with each (run as root; needs libbpfcc-dev).
set -eu
cd "$(dirname "$0")/.."
out=build/bench/symbolizers
mkdir -p build/bench
srcs="bench/symbolizers.c user/native/native_unwind.c user/native/eh_frame_hdr.c
	user/base/mapped_file.c user/base/clock.c user/base/grow.c"
cc -O2 -Iuser/base -Iuser/native -Iinclude $srcs -lbcc -ldw -lelf -o "$out-bcc"
cc -O2 -DNO_BCC -Iuser/base -Iuser/native -Iinclude $srcs -ldw -lelf -o "$out-dw"
/usr/bin/python3.11 tests/native/zlib_app.py >/dev/null &
target=$!
trap 'kill $target' EXIT
sleep 1
for s in dw bcc dw bcc; do "$out-$s" "$s" "$target" 20000; done
