"""Makes cyclic garbage until the collector has run a FIXED number of times
(--collections), with the generation-0 threshold --threshold setting how much
garbage each collection finds, hence the rate. Nothing survives, so every
collection does the same work. Counts collections with gc.get_stats(), which
costs nothing per collection (no gc.callbacks)."""
import gc
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402


class Pair:
    __slots__ = ("other", "payload")

    def __init__(self):
        self.other = None
        self.payload = [self]


def churn(n):
    for _ in range(n):
        a, b = Pair(), Pair()
        a.other, b.other = b, a


def collections():
    return sum(s["collections"] for s in gc.get_stats())


def run(target, batch=50):
    start = collections()
    while collections() - start < target:
        churn(batch)
    return collections() - start


def main():
    args = common.parse({"--collections": {"type": int, "default": 5000},
                         "--threshold": {"type": int, "default": 700}})
    gc.collect()
    gc.freeze()             # the interpreter's own objects: out of every collection
    gc.set_threshold(args.threshold, 10, 10)
    run(max(10, args.collections // 50))    # warm-up
    common.wait_for_go(args)
    per_gen0 = [s["collections"] for s in gc.get_stats()]
    v0, i0 = common.context_switches()
    t0, c0 = time.perf_counter(), time.process_time()
    done = run(args.collections)
    t1, c1 = time.perf_counter(), time.process_time()
    v1, i1 = common.context_switches()
    per_gen = [s["collections"] - p for s, p in zip(gc.get_stats(), per_gen0)]
    common.finish(args, {"seconds": t1 - t0, "cpu_seconds": c1 - c0, "collections": done, "per_generation": per_gen,
                         "threshold": args.threshold, "voluntary": v1 - v0, "involuntary": i1 - i0})


if __name__ == "__main__":
    main()
