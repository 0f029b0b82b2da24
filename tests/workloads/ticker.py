"""A service that works on a 10 ms timer: after each tick the main thread
computes for about 30% of the period, then sleeps until the next tick (an
asyncio call_later loop, a game or control loop, a batch ticker). A second
thread, `logger`, only ever sleeps. The truth file has the main thread's
CPU time (time.thread_time()) and the wall time of the measured part."""
import sys
import threading
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402

PERIOD = 0.010


def work(seconds):
    end = time.thread_time() + seconds
    n = 0
    while time.thread_time() < end:
        n += 1
    return n


def logger(stop):
    while not stop.wait(0.2):
        pass


def main():
    args = common.parse({"--busy": {"type": float, "default": 0.30}})
    stop = threading.Event()
    threading.Thread(target=logger, args=(stop,), name="logger", daemon=True).start()
    common.wait_for_go(args)
    cpu0, begin = time.thread_time(), time.monotonic()
    tick = begin
    while time.monotonic() - begin < args.seconds:
        work(PERIOD * args.busy)
        tick += PERIOD
        now = time.monotonic()
        if tick < now:      # late (a busy machine): the next tick to come, as a timer would
            tick += (now - tick) // PERIOD * PERIOD + PERIOD
        time.sleep(tick - now)
    end = time.monotonic()
    cpu = time.thread_time() - cpu0
    # cpu_total_s: the main thread's CPU time since it started, for a
    # recording of the whole process (ebpfprof -- python3 ticker.py)
    common.write_truth(args, {"cpu_s": cpu, "begin": begin, "end": end,
                              "share": cpu / (end - begin), "cpu_total_s": time.thread_time()})
    stop.set()


main()
