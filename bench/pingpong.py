"""Two threads hand a token back and forth through two threading.Events, a
FIXED number of round trips per phase (--round-trips). Each hand-off blocks
one thread in futex() and wakes the other, so the process makes tens of
thousands of context switches a second: the off-CPU tracker (sched_switch)
runs on every one of them and walks and sends the blocked thread's Python
stack, which --depth makes deeper (both threads wait at the bottom of a
recursion of that many frames). Every round trip is timed (common.Units). --hog adds a thread running pure
Python beside the pair (the GIL-heavy relay of issue 29): then most of the
pair's wake-ups wait for the GIL too."""
import sys
import threading
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402


def dive(level, fn, *args):
    if level <= 1:
        return fn(*args)
    return dive(level - 1, fn, *args)


def ponger(ping, pong, n):
    for _ in range(n):
        ping.wait()
        ping.clear()
        pong.set()


def hog(stop):
    x = 0
    while not stop.is_set():
        for i in range(200):
            x += i & 7


def play(n, units, depth, with_hog=False):
    ping, pong, stop = threading.Event(), threading.Event(), threading.Event()
    t = threading.Thread(target=dive, args=(depth, ponger, ping, pong, n), name="ponger")
    h = threading.Thread(target=hog, args=(stop,), name="hog") if with_hog else None
    t.start()
    if h:
        h.start()
    dive(depth, pinger, ping, pong, n, units)
    t.join()
    stop.set()
    if h:
        h.join()


def pinger(ping, pong, n, units):
    clock, tick = time.perf_counter, units.tick
    tick(clock())
    for _ in range(n):
        ping.set()
        pong.wait()
        pong.clear()
        tick(clock())


def main():
    args = common.parse({"--round-trips": {"type": int, "default": 50000},
                         "--depth": {"type": int, "default": 1},
                         "--hog": {"action": "store_true"}})
    sys.setrecursionlimit(args.depth + 200)
    threading.stack_size(16 << 20)
    play(max(100, args.round_trips // 50), common.Units(), args.depth, args.hog)      # warm-up

    def work():
        units = common.Units()
        with common.Timed() as t:       # its switch counts include the exited ponger's
            play(args.round_trips, units, args.depth, args.hog)
        return t.result(round_trips=args.round_trips, **units.summary())
    common.run_phases(args, work)


if __name__ == "__main__":
    main()
