"""A GC-heavy multi-threaded workload, to compare with and without GC: the
main thread ("allocator") builds cyclic garbage over a large live heap, so
collections are frequent and the full ones long, while two "worker" threads
spin in pure Python and wait for the GIL, often behind a collection.
--nogc runs the same with gc.disable(). The truth is the allocator's GC time
from gc.callbacks."""
import gc
import sys
import threading
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402
from gc_churn import churn  # noqa: E402  cyclic garbage, some of it kept

stop = threading.Event()
gc_seconds = [0.0]
started = [0.0]


def on_gc(phase, info):
    if phase == "start":
        started[0] = time.monotonic()
    else:
        gc_seconds[0] += time.monotonic() - started[0]


def worker():
    x = 0
    while not stop.is_set():
        for i in range(2000):
            x += i % 7


def main():
    args = common.parse({"--nogc": {"action": "store_true"},
                         "--heap": {"type": int, "default": 200000}})
    heap = [[i, {}] for i in range(args.heap)]  # what every full collection walks
    gc.set_threshold(5000, 5, 5)
    if args.nogc:
        gc.disable()
    threads = [threading.Thread(target=worker, name=f"worker-{i}") for i in (1, 2)]
    for t in threads:
        t.start()
    common.wait_for_go(args)
    gc.callbacks.append(on_gc)
    survivors = []
    begin = time.monotonic()
    while time.monotonic() - begin < args.seconds:
        churn(500, survivors)
        if len(survivors) > 50000:
            del survivors[:45000]
    gc.callbacks.remove(on_gc)
    stop.set()
    for t in threads:
        t.join()
    common.write_truth(args, {"gc_seconds": gc_seconds[0], "heap": len(heap)})


if __name__ == "__main__":
    main()
