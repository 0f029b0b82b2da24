"""Threads in every state ebpfprof dump tells apart, held there for --seconds:
a GIL-bound pair, a queue.Queue.get, a socket.recv on a connected TCP socket,
a sleeper, and a thread blocked on a lock from the start. The truth file
(written once every thread is in place) has their tids and the socket's ends;
--progress names a file where the spinners' counter is written every 20 ms,
so a test can see the process never stopped. Lines the tests look for carry
a `# at:NAME` marker."""
import os
import queue
import socket
import threading
import time

from common import parse, write_truth

args = parse({"--progress": {"help": "write the spinners' counter here"}})
counter = [0]
tids = {}
blocked_since = [None]
ready = threading.Barrier(6)


def note():
    tids[threading.current_thread().name] = threading.get_native_id()


def spin_a():
    note()
    ready.wait()
    while True:  # at:spin_a
        counter[0] += 1  # at:spin_a


def spin_b():
    note()
    ready.wait()
    while True:  # at:spin_b
        counter[0] += 1  # at:spin_b


def queue_waiter(q):
    note()
    ready.wait()
    q.get()  # at:queue_get


def reader(conn):
    note()
    ready.wait()
    conn.recv(1)  # at:recv


def sleeper():
    note()
    ready.wait()
    time.sleep(3600)  # at:sleep


def blocked_forever(lock):
    note()
    # the truth of "for how long": it last runs after this, in acquire()
    blocked_since[0] = time.monotonic()
    lock.acquire()  # at:lock


server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(1)
client = socket.create_connection(server.getsockname())
conn, _ = server.accept()

never = threading.Lock()
never.acquire()
threads = [
    threading.Thread(target=blocked_forever, args=(never,), name="blocked-early", daemon=True),
    threading.Thread(target=spin_a, name="spin-a", daemon=True),
    threading.Thread(target=spin_b, name="spin-b", daemon=True),
    threading.Thread(target=queue_waiter, args=(queue.Queue(),), name="queue-waiter", daemon=True),
    threading.Thread(target=reader, args=(conn,), name="reader", daemon=True),
    threading.Thread(target=sleeper, name="sleeper", daemon=True),
]
for t in threads:
    t.start()
ready.wait()
time.sleep(0.3)  # let the waiters reach their syscalls
tids["MainThread"] = threading.get_native_id()
write_truth(args, {"tids": tids, "blocked_since": blocked_since[0], "reader_local": "%s:%d" % conn.getsockname(),
                   "reader_peer": "%s:%d" % conn.getpeername()})
end = time.monotonic() + args.seconds
while time.monotonic() < end:
    if args.progress:
        with open(args.progress + ".tmp", "w") as f:
            f.write(str(counter[0]))
        os.replace(args.progress + ".tmp", args.progress)
    time.sleep(0.02)
