"""A batch job's shape: once the harness says go, the main thread naps
(--nap seconds, waiting for its input), then computes to the end without a
system call (time.monotonic is read through the vDSO). The truth file has
when the nap began and ended."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402


def main():
    args = common.parse({"--nap": {"type": float, "default": 0.5}})
    common.wait_for_go(args)
    begin = time.monotonic()
    time.sleep(args.nap)
    woke = time.monotonic()
    n = 0
    while time.monotonic() - begin < args.seconds:
        n += 1
    common.write_truth(args, {"begin": begin, "woke": woke, "end": time.monotonic(), "n": n})


if __name__ == "__main__":
    main()
