"""The target of bench/startup.py, already running when ebpfprof starts, as
users attach: --mode idle sleeps; busy keeps both CPUs of this VM busy with
a thread ping-pong (two threads hand a token through two Events, each
hand-off a futex wake across CPUs) beside a thread of pure Python and one
hashing without the GIL (a C extension's work); spin is
one thread of pure Python (the samples a sampler owes). Prints pid=N on
stderr and runs until killed."""
import argparse
import hashlib
import os
import sys
import threading
import time


def ponger(ping, pong):
    while True:
        ping.wait()
        ping.clear()
        pong.set()


def pinger(ping, pong):
    while True:
        ping.set()
        pong.wait()
        pong.clear()


def spin():
    x = 0
    while True:
        for i in range(200):
            x += i & 7


def hash_forever():
    data = bytes(32 << 20)      # ~50 ms a call, without the GIL
    while True:
        hashlib.sha256(data).digest()   # releases the GIL


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("idle", "busy", "spin"), default="idle")
    ap.add_argument("--tag", default="", help="a word for --match to find")
    mode = ap.parse_args().mode
    print(f"pid={os.getpid()}", file=sys.stderr, flush=True)
    if mode == "idle":
        while True:
            time.sleep(3600)
    if mode == "busy":
        ping, pong = threading.Event(), threading.Event()
        threading.Thread(target=ponger, args=(ping, pong), daemon=True).start()
        threading.Thread(target=spin, daemon=True).start()
        threading.Thread(target=hash_forever, daemon=True).start()
        pinger(ping, pong)
    spin()


if __name__ == "__main__":
    main()
