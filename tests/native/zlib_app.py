# The --native tests' zlib target: squeeze() compresses in a loop, so most of
# its time is in libz's deflate functions, below zlib.compress.
import os
import zlib

DATA = os.urandom(1 << 14) * 16 + bytes(range(256)) * 1024


def squeeze():
    return len(zlib.compress(DATA, 6))


def main():
    print("ready", flush=True)
    while True:
        squeeze()


main()
