"""Recurses --depth frames through dive(), then spins in floor() at the bottom."""
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402


def floor(deadline):
    x = 0
    while time.monotonic() < deadline:
        for i in range(500):
            x += i
    return x


def dive(level, deadline):
    if level <= 1:
        return floor(deadline)
    return dive(level - 1, deadline)


def main():
    args = common.parse({"--depth": {"type": int, "default": 300}})
    sys.setrecursionlimit(args.depth + 200)
    common.write_truth(args, {"depth": args.depth})
    dive(args.depth, time.monotonic() + args.seconds)


if __name__ == "__main__":
    main()
