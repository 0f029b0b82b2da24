"""A multi-threaded mix for measuring the profiler itself, for --seconds after
each go file: two CPU spinners at the bottom of 40-frame stacks, a thread
making cyclic garbage, a ping-pong pair, a thread sleeping 1 ms at a time
and a socket reader fed by a writer: samples, collections and thousands of
context switches a second. Writes how many collections and context
switches happened, so the profiler's cost can be put per event."""
import gc
import socket
import sys
import threading
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402

stop = threading.Event()


def deep(level, fn, *a):
    if level <= 1:
        return fn(*a)
    return deep(level - 1, fn, *a)


def spin():
    x = 0
    while not stop.is_set():
        for i in range(3000):
            x = (x + i * i) % 1000003


class Pair:
    __slots__ = ("other", "payload")

    def __init__(self):
        self.other = None
        self.payload = [self]


def churn():
    while not stop.is_set():
        for _ in range(200):
            a, b = Pair(), Pair()
            a.other, b.other = b, a
        time.sleep(0.0005)


def ping(a, b):
    while not stop.is_set():
        a.set()
        b.wait(0.1)
        b.clear()


def pong(a, b):
    while not stop.is_set():
        if a.wait(0.1):
            a.clear()
            b.set()


def sleeper():
    while not stop.is_set():
        time.sleep(0.001)


def reader(sock):
    while sock.recv(64):
        pass


def writer(sock):
    while not stop.is_set():
        sock.send(b"x" * 64)
        time.sleep(0.002)
    sock.close()


def main():
    args = common.parse({"--seconds": {"type": float, "default": 10.0}})
    gc.set_threshold(2000, 10, 10)
    r, w = socket.socketpair()
    ea, eb = threading.Event(), threading.Event()
    plan = [("spinner-1", deep, (40, spin)), ("spinner-2", deep, (40, spin)),
            ("churner", deep, (10, churn)), ("ping", ping, (ea, eb)), ("pong", pong, (ea, eb)),
            ("sleeper", sleeper, ()), ("reader", reader, (r,)), ("writer", writer, (w,))]
    threads = [threading.Thread(target=f, args=a, name=n) for n, f, a in plan]
    for t in threads:
        t.start()

    def work():
        g0 = sum(s["collections"] for s in gc.get_stats())
        with common.Timed() as t:
            time.sleep(args.seconds)
        g1 = sum(s["collections"] for s in gc.get_stats())
        return t.result(collections=g1 - g0, threads=len(threads) + 1)
    try:
        common.run_phases(args, work)
    finally:
        stop.set()
        for t in threads:
            t.join()
        r.close()


if __name__ == "__main__":
    main()
