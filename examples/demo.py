"""A small service-like program for the ebpfprof demo: a request handler that
parses and scores records (CPU), a cache rebuild that makes cyclic garbage
(GC pauses), a background thread competing for the GIL, and a thread
waiting on a socket (I/O). Runs for --seconds (default 8)."""
import argparse
import json
import socket
import threading
import time


class Node:
    def __init__(self, key):
        self.key = key
        self.children = []
        self.parent = self


def parse_record(i):
    return json.loads(json.dumps({"id": i, "tags": ["a", "b", "c"], "score": i % 97}))


def score(record):
    total = 0
    for tag in record["tags"]:
        total += hash(tag) % 13
    return total + record["score"]


def handle_requests(n):
    return sum(score(parse_record(i)) for i in range(n))


def rebuild_cache(size):
    root = Node(0)
    for i in range(size):
        child = Node(i)
        child.parent = root
        root.children.append(child)
    return len(root.children)


def background_indexer(stop):
    x = 0
    while not stop.is_set():
        for i in range(5000):
            x += i * i % 11


def wait_for_peer(sock):
    try:
        sock.recv(1)
    except OSError:
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=8.0)
    args = ap.parse_args()
    stop = threading.Event()
    a, b = socket.socketpair()
    workers = [threading.Thread(target=background_indexer, args=(stop,), name="indexer"),
               threading.Thread(target=wait_for_peer, args=(a,), name="peer-listener")]
    for t in workers:
        t.start()
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        handle_requests(2000)
        rebuild_cache(50000)
    stop.set()
    b.close()
    for t in workers:
        t.join()
    a.close()


if __name__ == "__main__":
    main()
