"""Makes cyclic garbage until the collector has run a FIXED number of times
per phase (--collections), with the generation-0 threshold --threshold
setting how much garbage each collection finds, hence the rate. Nothing
survives, so every collection does the same work. A gc.callbacks entry
stamps the end of every collection, so each collection cycle (allocating up
to the threshold, then collecting) is one timed unit (common.Units); it costs
the same with and without the profiler."""
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
    args = common.parse({"--collections": {"type": int, "default": 3000},
                         "--threshold": {"type": int, "default": 700}})
    gc.collect()
    gc.freeze()             # the interpreter's own objects: out of every collection
    gc.set_threshold(args.threshold, 10, 10)
    run(max(10, args.collections // 50))    # warm-up

    def work():
        units = common.Units()
        clock, tick = time.perf_counter, units.tick

        def on_gc(phase, info):
            if phase == "stop":
                tick(clock())
        before = [s["collections"] for s in gc.get_stats()]
        gc.callbacks.append(on_gc)
        with common.Timed() as t:
            done = run(args.collections)
        gc.callbacks.remove(on_gc)
        per_gen = [s["collections"] - b for s, b in zip(gc.get_stats(), before)]
        return t.result(collections=done, per_generation=per_gen, threshold=args.threshold,
                        **units.summary())
    common.run_phases(args, work)


if __name__ == "__main__":
    main()
