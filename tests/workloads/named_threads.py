"""A main thread and three named worker threads, each spinning in its own
function, so every thread shows up in the samples with a known name."""
import sys
import threading
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402

NAMES = ["worker-alpha", "wörker-beta", "работник-γ"]


def spin_until(stop):
    x = 0
    while not stop.is_set():
        for i in range(2000):
            x += i
        time.sleep(0.001)


def main():
    args = common.parse()
    stop = threading.Event()
    threads = [threading.Thread(target=spin_until, args=(stop,), name=n) for n in NAMES]
    for t in threads:
        t.start()
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        spin_until_main(deadline)
    stop.set()
    for t in threads:
        t.join()
    common.write_truth(args, {"threads": {t.native_id: t.name for t in threads}})


def größe_𠀀():
    """Non-ASCII name: 𠀀 (U+20000) makes co_name a 4-byte-kind string."""
    x = 0
    for i in range(5000):
        x += i
    return x


def spin_until_main(deadline):
    x = größe_𠀀()
    for i in range(20000):
        x += i
    time.sleep(0.001)
    return x


if __name__ == "__main__":
    main()
