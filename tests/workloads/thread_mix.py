"""Named threads, each mostly in one state for the whole run:
spinner-1, spinner-2: pure-Python loops contending for the GIL
sleeper: time.sleep in a loop           reader: blocked in socket recv
holder: holds a threading.Lock the whole run (asleep)    locker: blocked acquiring it
hasher: hashlib on large buffers, which releases the GIL (on CPU without it)"""
import hashlib
import socket
import sys
import threading
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402

stop = threading.Event()
lock = threading.Lock()


def spinner():
    x = 0
    while not stop.is_set():
        for i in range(3000):
            x += i % 7


SLEEPS = []     # [asleep from, due] of each of sleeper's sleeps (time.monotonic())


def sleeper():
    while not stop.is_set():
        t0 = time.monotonic()
        time.sleep(0.2)
        SLEEPS.append([t0, t0 + 0.2])


def reader(sock):
    try:
        sock.recv(1)
    except OSError:
        pass


def holder(held):
    with lock:
        held.set()
        stop.wait()


def locker(held):
    held.wait()
    with lock:
        pass


def hasher():
    data = b"x" * (4 << 20)
    while not stop.is_set():
        hashlib.sha256(data).digest()


def main():
    args = common.parse({"--threads": {"default": "spinner-1,spinner-2,sleeper,reader,holder,locker"}})
    r, w = socket.socketpair()
    held = threading.Event()
    plan = {"spinner-1": (spinner, ()), "spinner-2": (spinner, ()), "sleeper": (sleeper, ()),
            "reader": (reader, (r,)), "holder": (holder, (held,)), "locker": (locker, (held,)),
            "hasher": (hasher, ())}
    wanted = args.threads.split(",")
    threads = [threading.Thread(target=plan[n][0], args=plan[n][1], name=n) for n in wanted]
    for t in threads:
        t.start()
    time.sleep(args.seconds)
    stop.set()
    w.close()
    for t in threads:
        t.join()
    r.close()
    common.write_truth(args, {"threads": {t.name: t.native_id for t in threads}, "sleeps": SLEEPS})


if __name__ == "__main__":
    main()
