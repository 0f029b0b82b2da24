"""Threads that live ~60 ms each, 4 at a time: each sleeps in 2 ms naps and
exits, so most of a thread's waits are still in the kernel's per-thread
totals when it ends. The truth file has the time all of them spent in
time.sleep, as measured here."""
import sys
import threading
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402

slept = []


def napper():
    spent = 0.0
    for _ in range(30):
        t0 = time.monotonic()
        time.sleep(0.002)
        spent += time.monotonic() - t0
    slept.append(spent)         # list.append is atomic under the GIL


def main():
    args = common.parse()
    common.wait_for_go(args)
    begin = time.monotonic()
    threads = 0
    while time.monotonic() - begin < args.seconds:
        batch = [threading.Thread(target=napper) for _ in range(4)]
        for t in batch:
            t.start()
        for t in batch:
            t.join()
        threads += len(batch)
    common.write_truth(args, {"slept": sum(slept), "threads": threads, "begin": begin,
                              "end": time.monotonic()})


main()
