# A deep native stack for --native's benchmark: DEPTH levels of Python
# recursion, each through a C call (map), so each level is an eval-loop C
# frame on the native stack, then knap.solve at the bottom.
import os
import sys

sys.path.insert(0, os.environ.get("KNAP_DIR", os.path.dirname(os.path.abspath(__file__))))
import knap  # noqa: E402

DEPTH = int(sys.argv[1]) if len(sys.argv) > 1 else 50


def level(n):
    if n == 0:
        return knap.solve(2)
    return list(map(level, [n - 1]))[0]


def main():
    print("ready", flush=True)
    while True:
        level(DEPTH)


main()
