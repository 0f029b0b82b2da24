"""Who held the GIL (issue 21). --mode two: "hog" holds the GIL in two
pure-Python functions, tally_orders about 70% (--share) and audit_ledger
about 30% of its time, while "loop" wakes every millisecond and waits for the GIL. The
truth is hog's own thread_time() per function.

--mode three: "hog" (tally_orders) and "churner" (builds cyclic garbage over
a large heap, so its allocations trigger collections while it holds the GIL)
contend with "loop" for the GIL. The truth: each holder notes when it runs
Python (notes less than HELD_GAP apart make one stretch; its collections,
from gc.callbacks, are stretches too), "loop" notes each wait (from its
sleep's end to its return), and at any moment of a wait the GIL is the
thread's that noted last (see behind_whom)."""
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
gc_count = [0]
gc_started = [0.0]
waits = []          # loop's (start, end)
loop_points = []    # when loop ran Python
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
    return keep


def on_gc(phase, info):
    if threading.current_thread().name != "churner" or not measuring.is_set():
        return
    now = time.monotonic()
    if phase == "start":
        gc_started[0] = now
    elif gc_started[0]:     # not a collection that began before measuring
        gc_seconds[0] += now - gc_started[0]
        gc_count[0] += 1
        held.setdefault("churner", []).append([gc_started[0], now])
        gc_started[0] = 0.0


def loop():
    mono = time.monotonic
    while not stop.is_set():
        t0 = mono()
        time.sleep(SLEEP)
        t1 = mono()
        if measuring.is_set():
            waits.append((t0 + SLEEP, t1))
            loop_points.extend((t0, t1))


def behind_whom(waits, held, loop_points):
    """Seconds of loop's waits behind each thread: at any moment the GIL is
    the thread's that last ran Python (noted it) before then, since the
    next to take it notes at once; a holder preempted while it holds the GIL
    keeps it (nobody else notes meanwhile)."""
    marks = sorted([(t, who) for who, spans in held.items() for span in spans for t in span] +
                   [(t, "loop") for t in loop_points])
    times = [t for t, _ in marks]
    behind = {}
    for a, b in waits:
        i = bisect.bisect_right(times, a) - 1
        at = a
        while True:
            owner = marks[i][1] if i >= 0 else None
            nxt = times[i + 1] if i + 1 < len(times) else b
            end = min(nxt, b)
            if owner and end > at:
                behind[owner] = behind.get(owner, 0.0) + end - at
            if nxt >= b:
                break
            at = max(at, nxt)
            i += 1
    return behind


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
    # hog and loop start once the profiler is attached: their exact totals
    # cover the same stretch as the truth; churner builds its heap before
    if three:
        threads[2].start()
    common.wait_for_go(args)
    for t in threads[:2]:
        t.start()
    measuring.set()
    begin = time.monotonic()
    time.sleep(args.seconds)
    measuring.clear()
    end = time.monotonic()
    stop.set()
    for t in threads:
        t.join()
    behind = behind_whom([w for w in waits if w[1] > w[0]], held, loop_points)
    common.write_truth(args, {"cpu": cpu, "gc_seconds": gc_seconds[0], "gc_count": gc_count[0], "wakes": len(waits),
                              "loop_wait_s": sum(b - a for a, b in waits if b > a),
                              "begin": begin, "end": end,
                              "loop_behind_s": behind,
                              "threads": {t.name: t.native_id for t in threads}})


if __name__ == "__main__":
    main()
