"""A target for --label req=handle:0 whose handle() gets values a label must
survive: terminal controls in a latin-1 str, a str beyond latin-1, a 10 MB
str, a str whose length field says 2^62 (written with ctypes; CPython never
reads it again for this object), a tuple of 1000 ints, a nested tuple, an
int of 200 bits. Prints pid=N, then calls handle() in turn until --seconds."""
import argparse
import ctypes
import os
import sys
import time

LENGTH_OFFSET = 16      # PyASCIIObject.length, every 3.x on x86-64


def forged_length_str():
    s = "".join(["forged", "-", "len"])    # made at run time: not interned, not shared
    ctypes.c_ssize_t.from_address(id(s) + LENGTH_OFFSET).value = 1 << 62
    return s


VALUES = [
    "".join(["\x1b[2J", "\x9b2J", "-esc"]),
    "\u202eright-to-left",
    "x" * 10_000_000,
    forged_length_str(),
    tuple(range(1000)),
    ((1, 2), 3),
    1 << 200,
]


def handle(request_id):
    acc = 0
    for i in range(20000):
        acc ^= i
    return acc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5)
    args = ap.parse_args()
    print(f"pid={os.getpid()}", file=sys.stderr, flush=True)
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        for v in VALUES:
            handle(v)


if __name__ == "__main__":
    main()
