"""One thread sleeping at three call sites, 50/30/20% of its sleep time:
nap_a in 2 ms naps and nap_c in 4 ms naps (shorter than the profiler's
10 ms threshold: sampled), nap_b in 30 ms sleeps (each shown whole). The
truth file has the time really spent in each, as measured here."""
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402

spent = {"nap_a": 0.0, "nap_b": 0.0, "nap_c": 0.0}
sleeps = [0]


def timed(name, seconds, times):
    t0 = time.monotonic()
    for _ in range(times):
        time.sleep(seconds)
    spent[name] += time.monotonic() - t0
    sleeps[0] += times


def nap_a():
    timed("nap_a", 0.002, 25)


def nap_b():
    timed("nap_b", 0.030, 1)


def nap_c():
    timed("nap_c", 0.004, 5)


def main():
    args = common.parse()
    common.wait_for_go(args)
    for k in spent:
        spent[k] = 0.0
    sleeps[0] = 0
    begin = time.monotonic()
    while time.monotonic() - begin < args.seconds:
        nap_a()
        nap_b()
        nap_c()
    common.write_truth(args, {"spent": spent, "sleeps": sleeps[0], "begin": begin, "end": time.monotonic()})


main()
