"""The run history's workload: the main thread runs steady() and changed()
back to back, all the time (it keeps a CPU busy, so when changed() does more
its share of the process's on-CPU time grows, not the process's on-CPU
seconds per second). --slower N makes changed() do N times steady()'s work.
--collector adds a thread that keeps a large object graph and collects it
every 20 ms, holding the GIL (the main thread then waits for the GC);
--gc-off makes that thread sleep instead: the same run without GC."""
import gc
import sys
import threading
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402

stop = threading.Event()


def steady(rounds):
    acc = 0
    for i in range(rounds):
        acc ^= (i * 31) % 11
    return acc


def changed(rounds):
    acc = 0
    for i in range(rounds):
        acc ^= (i * 31) % 11
    return acc


def collector(graph_size, collect):
    graph = [[i, {}] for i in range(graph_size)]
    while not stop.is_set():
        if collect:
            gc.collect()
        time.sleep(0.02)
    return graph


def main():
    args = common.parse({"--slower": {"type": float, "default": 1.0},
                         "--rounds": {"type": int, "default": 20000},
                         "--collector": {"action": "store_true"},
                         "--gc-off": {"action": "store_true"},
                         "--graph": {"type": int, "default": 300000}})
    gc.disable()  # only the collector's explicit collections
    threads = []
    if args.collector:
        threads.append(threading.Thread(target=collector, name="collector",
                                        args=(args.graph, not args.gc_off)))
    for t in threads:
        t.start()
    slower = int(args.rounds * args.slower)
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        steady(args.rounds)
        changed(slower)
    stop.set()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
