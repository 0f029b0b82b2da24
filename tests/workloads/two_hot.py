"""One thread alternating between two functions of the same body: crunch_a()
gets about twice the CPU of crunch_b(). The truth is their measured CPU time."""
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402


def body(rounds):
    acc = 0
    for i in range(rounds):
        acc ^= (i * 31) % 11
    return acc


def crunch_a(rounds):
    return body(rounds)


def crunch_b(rounds):
    return body(rounds)


def main():
    args = common.parse()
    spent, draw = {"crunch_a": 0.0, "crunch_b": 0.0}, __import__("random").Random().uniform
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        for name, fn, rounds in (("crunch_a", crunch_a, 6000), ("crunch_b", crunch_b, 3000)):
            t = time.thread_time()
            fn(int(rounds * draw(0.5, 1.5)))  # a length drawn: see the end of this file
            spent[name] += time.thread_time() - t
    common.write_truth(args, {"cpu_seconds": spent})


if __name__ == "__main__":
    main()

# Each call's length is drawn at random (2:1 on average): a cycle of fixed
# length (~0.3 ms) beats against a fixed sampling period and makes the
# samples of one recording move together, far past binomial error. The
# lines above are the tests' (test_versions.py: main 32, <module> 38).
