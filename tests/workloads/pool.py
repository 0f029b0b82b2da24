"""A multiprocessing pool of 2 workers, each spinning in pool_work() for a
while; --method picks fork, spawn or forkserver."""
import multiprocessing
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402


def pool_work(seconds):
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        for i in range(1000):
            x += i
    return os.getpid()


def main():
    args = common.parse({"--method": {"default": "fork"}})
    multiprocessing.set_start_method(args.method)
    common.wait_for_go(args)
    with multiprocessing.Pool(2) as pool:
        pids = sorted(set(pool.map(pool_work, [args.seconds / 2] * 4, chunksize=1)))
    common.write_truth(args, {"workers": pids})


if __name__ == "__main__":
    main()
