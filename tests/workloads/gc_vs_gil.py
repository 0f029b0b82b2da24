"""collector: keeps a large object graph alive and runs full collections back
to back, each holding the GIL for tens of milliseconds; spinner: a pure-Python
loop that wants the GIL all the time, so it waits for the GC. The truth is the
collector's GC time, from gc.callbacks."""
import gc
import sys
import threading
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402

stop = threading.Event()
measuring = threading.Event()
gc_seconds = [0.0]
started = [0.0]
collections = []    # [start, duration] of each, on time.monotonic()'s clock


def on_gc(phase, info):
    if threading.current_thread().name != "collector":
        return
    if phase == "start":
        started[0] = time.monotonic()
    else:
        gc_seconds[0] += time.monotonic() - started[0]
        collections.append([started[0], time.monotonic() - started[0]])


def collector(graph_size):
    graph = [[i, {}] for i in range(graph_size)]
    measuring.wait()
    while not stop.is_set():
        gc.collect()
        time.sleep(0.02)
    return graph


def spinner():
    x = 0
    while not stop.is_set():
        for i in range(3000):
            x += i % 7


def main():
    args = common.parse({"--graph": {"type": int, "default": 600000}})
    gc.disable()  # only the collector's explicit collections
    threads = [threading.Thread(target=collector, args=(args.graph,), name="collector"),
               threading.Thread(target=spinner, name="spinner")]
    for t in threads:
        t.start()
    common.wait_for_go(args)
    gc.callbacks.append(on_gc)
    measuring.set()
    time.sleep(args.seconds)
    gc.callbacks.remove(on_gc)
    stop.set()
    for t in threads:
        t.join()
    common.write_truth(args, {"collector_gc_seconds": gc_seconds[0], "collections": collections,
                              "threads": {t.name: t.native_id for t in threads}})


if __name__ == "__main__":
    main()
