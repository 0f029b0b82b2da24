"""Who held the GIL (issue 21). --mode two: "hog" holds the GIL in two
pure-Python functions, tally_orders about 70% and audit_ledger about 30% of
its time, while "loop" wakes every millisecond and waits for the GIL. The
truth is hog's own thread_time() per function.

--mode three: "hog" (mostly tally_orders) and "churner" (builds cyclic
garbage over a large heap, so its allocations trigger collections while it
holds the GIL) contend with "loop" for the GIL. The truth is each thread's
CPU time, and the churner's time in its collections (gc.callbacks)."""
import gc
import sys
import threading
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402

stop = threading.Event()
measuring = threading.Event()
cpu = {"tally_orders": 0.0, "audit_ledger": 0.0}
gc_seconds = [0.0]
gc_started = [0.0]
wakes = [0]


def tally_orders(ms):
    t0 = time.thread_time()
    x = 0
    while time.thread_time() - t0 < ms / 1000:
        for i in range(200):
            x += i % 7
    return time.thread_time() - t0


def audit_ledger(ms):
    t0 = time.thread_time()
    x = 0
    while time.thread_time() - t0 < ms / 1000:
        for i in range(200):
            x ^= i * 3
    return time.thread_time() - t0


def hog(share_tally):
    while not stop.is_set():
        a = tally_orders(10 * share_tally)
        b = audit_ledger(10 * (1 - share_tally))
        if measuring.is_set():
            cpu["tally_orders"] += a
            cpu["audit_ledger"] += b


class Node:
    def __init__(self, other):
        self.other = other
        self.payload = [other]


def churn_once(n):
    # cycles: only the collector frees them
    for _ in range(n):
        a = Node(None)
        b = Node(a)
        a.other = b


def churner():
    keep = [[i, {}] for i in range(300000)]   # a heap for each collection to traverse
    while not stop.is_set():
        churn_once(2000)
        time.sleep(0.0005)
    return keep


def on_gc(phase, info):
    if threading.current_thread().name != "churner" or not measuring.is_set():
        return
    if phase == "start":
        gc_started[0] = time.monotonic()
    else:
        gc_seconds[0] += time.monotonic() - gc_started[0]


def loop():
    while not stop.is_set():
        time.sleep(0.001)
        wakes[0] += 1


def main():
    args = common.parse({"--mode": {"default": "two", "choices": ["two", "three"]}})
    threads = [threading.Thread(target=hog, name="hog",
                                args=(0.7 if args.mode == "two" else 0.9,)),
               threading.Thread(target=loop, name="loop")]
    if args.mode == "three":
        threads.append(threading.Thread(target=churner, name="churner"))
        gc.callbacks.append(on_gc)
    else:
        gc.disable()
    for t in threads:
        t.start()
    common.wait_for_go(args)
    measuring.set()
    time.sleep(args.seconds)
    stop.set()
    for t in threads:
        t.join()
    common.write_truth(args, {"cpu": cpu, "gc_seconds": gc_seconds[0], "wakes": wakes[0],
                              "threads": {t.name: t.native_id for t in threads}})


if __name__ == "__main__":
    main()
