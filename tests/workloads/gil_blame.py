"""Who held the GIL (issue 21). --mode two: "hog" holds the GIL in two
pure-Python functions, tally_orders about 70% (--share) and audit_ledger
about 30% of its time, while "loop" wakes every millisecond and waits for the GIL. The
truth is hog's own thread_time() per function.

--mode three: "hog" (tally_orders) and "churner" (builds cyclic garbage over
a large heap, so its allocations trigger collections while it holds the GIL)
contend with "loop" for the GIL. The truth: each holder notes when it runs
Python (a gap under HELD_GAP between two of its notes is one stretch of
holding the GIL; its collections, from gc.callbacks, too), "loop" notes each
wait (from its sleep's end to its return), and the overlap of loop's waits
with each holder's stretches is how long loop waited behind it."""
import bisect
import gc
import sys
import threading
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402

HELD_GAP = 200e-6
SLEEP = 0.001

stop = threading.Event()
measuring = threading.Event()
cpu = {"tally_orders": 0.0, "audit_ledger": 0.0}
gc_seconds = [0.0]
gc_started = [0.0]
waits = []          # loop's (start, end)
held = {}           # holder -> [[start, end], ...]


def note(spans, now):
    """Extends the holder's current stretch to now, or starts a new one."""
    if spans and now - spans[-1][1] < HELD_GAP:
        spans[-1][1] = now
    else:
        spans.append([now, now])


def tally_orders(ms, spans):
    t0 = time.thread_time()
    mono = time.monotonic
    x = 0
    while time.thread_time() - t0 < ms / 1000:
        for i in range(100):
            x += i % 7
        if spans is not None:
            note(spans, mono())
    return time.thread_time() - t0


def audit_ledger(ms, spans):
    t0 = time.thread_time()
    mono = time.monotonic
    x = 0
    while time.thread_time() - t0 < ms / 1000:
        for i in range(100):
            x ^= i * 3
        if spans is not None:
            note(spans, mono())
    return time.thread_time() - t0


def hog(share_tally, track):
    spans = held.setdefault("hog", []) if track else None
    while not stop.is_set():
        a = tally_orders(10 * share_tally, spans if measuring.is_set() else None)
        b = audit_ledger(10 * (1 - share_tally), spans if measuring.is_set() else None)
        if measuring.is_set():
            cpu["tally_orders"] += a
            cpu["audit_ledger"] += b


class Node:
    def __init__(self, other):
        self.other = other
        self.payload = [other]


def churn_once(n, spans):
    # cycles: only the collector frees them
    mono = time.monotonic
    for i in range(n):
        a = Node(None)
        b = Node(a)
        a.other = b
        if spans is not None and i % 20 == 0:
            note(spans, mono())


def churner():
    keep = [[i, {}] for i in range(300000)]   # a heap for each collection to traverse
    spans = held.setdefault("churner", [])
    while not stop.is_set():
        churn_once(2000, spans if measuring.is_set() else None)
        time.sleep(0.0005)
    return keep


def on_gc(phase, info):
    if threading.current_thread().name != "churner" or not measuring.is_set():
        return
    now = time.monotonic()
    if phase == "start":
        gc_started[0] = now
    else:
        gc_seconds[0] += now - gc_started[0]
        held["churner"].append([gc_started[0], now])


def loop():
    mono = time.monotonic
    while not stop.is_set():
        t0 = mono()
        time.sleep(SLEEP)
        t1 = mono()
        if measuring.is_set():
            waits.append((t0 + SLEEP, t1))


def overlap(spans, a, b):
    """Seconds of [a, b] inside the sorted, disjoint spans."""
    starts = [s[0] for s in spans]
    total = 0.0
    i = max(bisect.bisect_right(starts, a) - 1, 0)
    while i < len(spans) and spans[i][0] < b:
        lo, hi = max(spans[i][0], a), min(spans[i][1], b)
        total += max(hi - lo, 0.0)
        i += 1
    return total


def merged(spans):
    out = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def main():
    args = common.parse({"--mode": {"default": "two", "choices": ["two", "three"]},
                         "--share": {"type": float, "default": 0.7,
                                     "help": "hog's share of its time in tally_orders"}})
    three = args.mode == "three"
    threads = [threading.Thread(target=hog, name="hog", args=(args.share, three)),
               threading.Thread(target=loop, name="loop")]
    if three:
        threads.append(threading.Thread(target=churner, name="churner"))
        gc.callbacks.append(on_gc)
    else:
        gc.disable()
    for t in threads:
        t.start()
    common.wait_for_go(args)
    measuring.set()
    time.sleep(args.seconds)
    measuring.clear()
    stop.set()
    for t in threads:
        t.join()
    behind = {}
    for name, spans in held.items():
        spans = merged(spans)
        behind[name] = sum(overlap(spans, a, b) for a, b in waits if b > a)
    common.write_truth(args, {"cpu": cpu, "gc_seconds": gc_seconds[0], "wakes": len(waits),
                              "loop_wait_s": sum(b - a for a, b in waits if b > a),
                              "loop_behind_s": behind,
                              "threads": {t.name: t.native_id for t in threads}})


if __name__ == "__main__":
    main()
