"""The example application of the sidecar Pod: a Python service that works,
makes garbage and sleeps, so its profile has something in each column."""
import gc
import os
import sys
import time


def handle_request(n):
    acc = 0
    for i in range(n):
        acc ^= (i * 31) % 11
    return acc


def make_garbage():
    junk = []
    for _ in range(20000):
        a = []
        a.append(a)
        junk.append(a)


def main():
    print(f"app: pid {os.getpid()}", flush=True)
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else float("inf")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        handle_request(200000)
        make_garbage()
        gc.collect(1)
        time.sleep(0.01)


if __name__ == "__main__":
    main()
