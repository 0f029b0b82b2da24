"""Hostile to per-thread kernel state: starts and ends --threads short-lived
threads (each leaves the CPU once, so the profiler's kernel side sees it),
then the main thread sleeps --naps times for 20 ms. The truth file has when
the naps began and ended."""
import sys
import threading
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402


def short_life():
    time.sleep(0.0001)


def nap():
    time.sleep(0.020)


def main():
    args = common.parse({"--threads": {"type": int, "default": 20000},
                         "--naps": {"type": int, "default": 40}})
    common.wait_for_go(args)
    churn_begin = time.monotonic()
    for _ in range(args.threads // 50):
        batch = [threading.Thread(target=short_life) for _ in range(50)]
        for t in batch:
            t.start()
        for t in batch:
            t.join()
    begin = time.monotonic()
    for _ in range(args.naps):
        nap()
    common.write_truth(args, {"churn_begin": churn_begin, "begin": begin, "end": time.monotonic(),
                              "threads": args.threads, "naps": args.naps})


main()
