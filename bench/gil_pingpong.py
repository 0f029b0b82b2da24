"""GIL waits, the case the GIL blame (issue 21) reads the GIL for at
switch-out and at the wait's end: "hog" runs pure Python all the time while
"loop" sleeps 1 ms and then waits for the GIL, a FIXED number of times
(--wakes), with a 0.5 ms switch interval (so each wait is short and the
process makes a few thousand GIL waits a second: hog's forced switches wait
too). Each of loop's wakes is timed (common.Units)."""
import sys
import threading
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402


def hog(stop):
    x = 0
    while not stop.is_set():
        for i in range(200):
            x += i & 7


def loop(n, units):
    clock, sleep = time.perf_counter, time.sleep
    if units:
        units.tick(clock())
    for _ in range(n):
        sleep(0.001)
        if units:
            units.tick(clock())


def play(n, units=None):
    stop = threading.Event()
    t = threading.Thread(target=hog, args=(stop,), name="hog")
    t.start()
    loop(n, units)
    stop.set()
    t.join()


def main():
    args = common.parse({"--wakes": {"type": int, "default": 1000}})
    sys.setswitchinterval(0.0005)
    play(max(50, args.wakes // 20))          # warm-up

    def work():
        units = common.Units()
        with common.Timed() as t:
            play(args.wakes, units)
        return t.result(wakes=args.wakes, **units.summary())
    common.run_phases(args, work)


if __name__ == "__main__":
    main()
