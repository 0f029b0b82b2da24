"""Switch-heavy and long-lived, like a server: four pairs of threads hand a
token back and forth through threading.Events (each hand-off blocks one
thread in futex() and wakes the other) while the main thread waits: nine
threads, tens of thousands of context switches a second, for --seconds."""
import sys
import threading
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402

stop = threading.Event()


def ponger(ping, pong):
    while not stop.is_set():
        if ping.wait(0.5):
            ping.clear()
            pong.set()


def pinger(ping, pong):
    while not stop.is_set():
        ping.set()
        if pong.wait(0.5):
            pong.clear()


def main():
    args = common.parse()
    threads = []
    for i in range(4):
        ping, pong = threading.Event(), threading.Event()
        threads += [threading.Thread(target=ponger, args=(ping, pong), name=f"ponger-{i}"),
                    threading.Thread(target=pinger, args=(ping, pong), name=f"pinger-{i}")]
    for t in threads:
        t.start()
    time.sleep(args.seconds)
    stop.set()
    for t in threads:
        t.join()


main()
