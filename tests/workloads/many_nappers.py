"""Many threads that each sleep in 10 ms naps for the whole run: at any
moment most of them are off the CPU with an interval open, and several wake
while a period is being cut (the shape of a thread pool waiting on timers)."""
import sys
import threading
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402


def napper():
    while True:
        time.sleep(0.010)


def main():
    args = common.parse({"--threads": {"type": int, "default": 80}})
    for i in range(args.threads):
        threading.Thread(target=napper, name=f"nap-{i}", daemon=True).start()
    time.sleep(args.seconds)


main()
