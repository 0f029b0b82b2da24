"""A multiprocessing pool of 2 workers, each spinning in pool_work() for a
while, then the parent itself spinning in parent_work() (so it has on-CPU
samples of its own, not only the few of starting the pool); --method picks
fork, spawn or forkserver."""
import multiprocessing
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402


def spin(seconds):
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        for i in range(1000):
            x += i


def pool_work(seconds):
    spin(seconds)
    return os.getpid()


def parent_work(seconds):
    spin(seconds)


def main():
    args = common.parse({"--method": {"default": "fork"}})
    multiprocessing.set_start_method(args.method)
    common.wait_for_go(args)
    with multiprocessing.Pool(2) as pool:
        pids = sorted(set(pool.map(pool_work, [args.seconds / 2] * 4, chunksize=1)))
    parent_work(args.seconds / 6)
    common.write_truth(args, {"workers": pids})


if __name__ == "__main__":
    main()
