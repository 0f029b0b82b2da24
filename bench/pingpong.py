"""Two threads hand a token back and forth through two threading.Events, a
FIXED number of round trips per phase (--round-trips). Each hand-off blocks
one thread in futex() and wakes the other, so the process makes tens of
thousands of context switches a second: the off-CPU tracker (sched_switch)
runs on every one of them and sends the blocked thread's Python stack. Every
round trip is timed (common.Units)."""
import sys
import threading
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402


def ponger(ping, pong, n):
    for _ in range(n):
        ping.wait()
        ping.clear()
        pong.set()


def play(n, units):
    ping, pong = threading.Event(), threading.Event()
    t = threading.Thread(target=ponger, args=(ping, pong, n), name="ponger")
    t.start()
    clock, tick = time.perf_counter, units.tick
    tick(clock())
    for _ in range(n):
        ping.set()
        pong.wait()
        pong.clear()
        tick(clock())
    t.join()


def main():
    args = common.parse({"--round-trips": {"type": int, "default": 50000}})
    play(max(100, args.round_trips // 50), common.Units())      # warm-up

    def work():
        units = common.Units()
        with common.Timed() as t:       # its switch counts include the exited ponger's
            play(args.round_trips, units)
        return t.result(round_trips=args.round_trips, **units.summary())
    common.run_phases(args, work)


if __name__ == "__main__":
    main()
