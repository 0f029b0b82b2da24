"""Two threads hand a token back and forth through two threading.Events, a
FIXED number of round trips (--round-trips). Each hand-off blocks one thread
in futex() and wakes the other, so the process makes tens of thousands of
context switches a second: the off-CPU tracker (sched_switch) runs on every
one of them and sends the blocked thread's Python stack."""
import sys
import threading
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402


def my_switches():
    """This thread's (voluntary, involuntary) context switches so far."""
    vol = invol = 0
    with open("/proc/thread-self/status") as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches"):
                vol = int(line.split()[1])
            elif line.startswith("nonvoluntary_ctxt_switches"):
                invol = int(line.split()[1])
    return vol, invol


def ponger(ping, pong, n, out):
    v0, i0 = my_switches()
    for _ in range(n):
        ping.wait()
        ping.clear()
        pong.set()
    v1, i1 = my_switches()
    out.append((v1 - v0, i1 - i0))


def play(n):
    """n round trips; returns the context switches of both threads."""
    ping, pong = threading.Event(), threading.Event()
    out = []
    t = threading.Thread(target=ponger, args=(ping, pong, n, out), name="ponger")
    t.start()
    v0, i0 = my_switches()
    for _ in range(n):
        ping.set()
        pong.wait()
        pong.clear()
    v1, i1 = my_switches()
    t.join()
    return v1 - v0 + out[0][0], i1 - i0 + out[0][1]


def main():
    args = common.parse({"--round-trips": {"type": int, "default": 50000}})
    play(max(100, args.round_trips // 50))      # warm-up
    common.wait_for_go(args)
    t0, c0 = time.perf_counter(), time.process_time()
    vol, invol = play(args.round_trips)
    t1, c1 = time.perf_counter(), time.process_time()
    common.finish(args, {"seconds": t1 - t0, "cpu_seconds": c1 - c0,
                         "round_trips": args.round_trips,
                         "voluntary": vol, "involuntary": invol})


if __name__ == "__main__":
    main()
