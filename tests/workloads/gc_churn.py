"""Makes cyclic garbage so the collector runs thousands of times a second, and
records every collection with gc.callbacks (generation, start, duration), on
the clock of time.monotonic(), i.e. CLOCK_MONOTONIC."""
import gc
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402

collections = []
started = [0.0]


def on_gc(phase, info):
    if phase == "start":
        started[0] = time.monotonic()
    else:
        collections.append([info["generation"], started[0], time.monotonic() - started[0]])


class Pair:
    def __init__(self):
        self.other = None
        self.payload = [self]


def churn(n, keep):
    for i in range(n):
        a, b = Pair(), Pair()
        a.other, b.other = b, a
        if i % 50 == 0:
            keep.append(a)


def main():
    args = common.parse({"--threshold": {"type": int, "default": 20000,
                                         "help": "gen-0 threshold: larger, fewer collections"}})
    gc.set_threshold(args.threshold, 10, 10)
    survivors = []
    common.wait_for_go(args)
    gc.callbacks.append(on_gc)
    begin = time.monotonic()
    while time.monotonic() - begin < args.seconds:
        churn(1000, survivors)
        if len(survivors) > 100000:
            del survivors[:90000]
    end = time.monotonic()
    gc.callbacks.remove(on_gc)
    common.write_truth(args, {"begin": begin, "end": end, "collections": collections})


if __name__ == "__main__":
    main()
