"""The GC probes' own cost: gc.collect(0) in a loop, --n times per phase,
with nothing to collect (the interpreter's objects frozen out), so a
collection costs next to nothing and what the profiler adds to each one
(the probes' traps, the BPF programs, the event) stands alone. Batches of
100 calls are the timed units (common.Units)."""
import gc
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402


def main():
    args = common.parse({"--n": {"type": int, "default": 20000}})
    gc.collect()
    gc.freeze()
    collect = gc.collect
    for _ in range(1000):       # warm-up
        collect(0)

    def work():
        units = common.Units()
        clock, tick = time.perf_counter, units.tick
        batches = args.n // 100
        with common.Timed() as t:
            tick(clock())
            for _ in range(batches):
                for _ in range(100):
                    collect(0)
                tick(clock())
        return t.result(collections=batches * 100, **units.summary())
    common.run_phases(args, work)


if __name__ == "__main__":
    main()
