"""CPU-bound pure Python, a fixed amount of work: --rounds calls of crunch(),
made at the bottom of a --depth frame recursion (1: no recursion). The
sampler walks every frame of the stack on each sample, so a deep stack makes
each sample dearer."""
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402


def crunch(n):
    acc = 0
    for i in range(n):
        acc = (acc + i * i) % 1000003
    return acc


def spin(rounds):
    acc = 0
    for _ in range(rounds):
        acc ^= crunch(1000)
    return acc


def dive(level, rounds):
    if level <= 1:
        return spin(rounds)
    return dive(level - 1, rounds)


def main():
    args = common.parse({"--rounds": {"type": int, "default": 20000},
                         "--depth": {"type": int, "default": 1}})
    sys.setrecursionlimit(args.depth + 200)
    dive(args.depth, max(1, args.rounds // 50))     # warm-up
    common.wait_for_go(args)
    v0, i0 = common.context_switches()
    t0, c0 = time.perf_counter(), time.process_time()
    dive(args.depth, args.rounds)
    t1, c1 = time.perf_counter(), time.process_time()
    v1, i1 = common.context_switches()
    common.finish(args, {"seconds": t1 - t0, "cpu_seconds": c1 - c0, "rounds": args.rounds,
                         "voluntary": v1 - v0, "involuntary": i1 - i0})


if __name__ == "__main__":
    main()
