"""A process of 300 threads, its busiest the oldest: the main thread and
the first thread started sit at the end of the interpreter's thread list
(newest first), past where a short scan stops (test_many_threads.py)."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402


def spin(until):
    while time.monotonic() < until:
        sum(range(300))


def early_busy(until):
    spin(until)


def sleeper(until):
    while time.monotonic() < until:
        time.sleep(0.05)


if __name__ == "__main__":
    args = common.parse({"--sleepers": {"type": int, "default": 300}})
    until = time.monotonic() + args.seconds
    early = threading.Thread(target=early_busy, args=(until,), name="early-busy", daemon=True)
    early.start()
    for _ in range(args.sleepers):
        threading.Thread(target=sleeper, args=(until,), daemon=True).start()
    # the busy threads' ids, written at once: a reader need not wait for the end
    common.write_truth(args, {"main": threading.main_thread().native_id,
                              "early_busy": early.native_id})
    spin(until)
