"""CPU-bound pure Python, a fixed amount of work per phase: --rounds calls of
crunch(), made at the bottom of a --depth frame recursion (1: no recursion).
The sampler walks every frame of the stack on each sample, so a deep stack
makes each sample dearer. Each call is timed too (common.Units)."""
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402


def crunch(n):
    acc = 0
    for i in range(n):
        acc = (acc + i * i) % 1000003
    return acc


def spin(rounds, units):
    clock, tick = time.perf_counter, units.tick
    acc = 0
    tick(clock())
    for _ in range(rounds):
        acc ^= crunch(1000)
        tick(clock())
    return acc


def dive(level, rounds, units):
    if level <= 1:
        return spin(rounds, units)
    return dive(level - 1, rounds, units)


def main():
    args = common.parse({"--rounds": {"type": int, "default": 20000},
                         "--depth": {"type": int, "default": 1}})
    sys.setrecursionlimit(args.depth + 200)
    dive(args.depth, max(1, args.rounds // 50), common.Units())     # warm-up

    def work():
        units = common.Units()
        with common.Timed() as t:
            dive(args.depth, args.rounds, units)
        return t.result(rounds=args.rounds, **units.summary())
    common.run_phases(args, work)


if __name__ == "__main__":
    main()
