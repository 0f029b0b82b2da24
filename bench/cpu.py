"""CPU-bound pure Python, a fixed amount of work per phase: --rounds calls of
crunch(), made at the bottom of a --depth frame recursion (1: no recursion).
The sampler walks every frame of the stack on each sample, so a deep stack
makes each sample dearer. Each call is timed too (common.Units).

--shape picks what the frames above crunch() are: "thin" (one recursive
function with three locals), "fat" (the same with 64 locals more: with its
evaluation stack ~1 KB more of frame), "distinct" (a chain of --depth different functions, as a
deep application stack has), for the BPF cost per sample by stack shape."""
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


FAT_LOCALS = 64


def make_fat_dive():
    """dive() with FAT_LOCALS locals more: each frame 8 bytes a local larger."""
    names = ", ".join(f"v{i}" for i in range(FAT_LOCALS))
    src = (f"def fat_dive(level, rounds, units):\n"
           f"    if level <= 1:\n"
           f"        return spin(rounds, units)\n"
           f"    {names} = {'0, ' * FAT_LOCALS}\n"
           f"    return fat_dive(level - 1, rounds, units)\n")
    scope = {"spin": spin}
    exec(src, scope)
    return scope["fat_dive"]


def make_distinct_dive(depth):
    """A chain of depth different functions, d_<depth> down to d_1 -> spin."""
    scope = {"spin": spin}
    exec("def d_1(rounds, units):\n    return spin(rounds, units)\n", scope)
    for k in range(2, depth + 1):
        exec(f"def d_{k}(rounds, units):\n    return d_{k - 1}(rounds, units)\n", scope)
    top = scope[f"d_{depth}"]

    def distinct_dive(level, rounds, units):
        return top(rounds, units)
    distinct_dive.repeated = scope["d_1"]
    return distinct_dive


def frame_slots(fn):
    """Pointer-sized slots of a frame of fn beyond the frame's header (its
    locals, cells and evaluation stack): what the walk reads past each frame."""
    code = getattr(fn, "repeated", fn).__code__
    return code.co_nlocals + len(code.co_cellvars) + len(code.co_freevars) + code.co_stacksize


def main():
    args = common.parse({"--rounds": {"type": int, "default": 20000},
                         "--depth": {"type": int, "default": 1},
                         "--shape": {"choices": ["thin", "fat", "distinct"], "default": "thin"}})
    sys.setrecursionlimit(args.depth + 200)
    walk = {"thin": lambda: dive, "fat": make_fat_dive,
            "distinct": lambda: make_distinct_dive(args.depth)}[args.shape]()
    walk(args.depth, max(1, args.rounds // 50), common.Units())     # warm-up

    def work():
        units = common.Units()
        with common.Timed() as t:
            walk(args.depth, args.rounds, units)
        return t.result(rounds=args.rounds, frame_slots=frame_slots(walk), **units.summary())
    common.run_phases(args, work)


if __name__ == "__main__":
    main()
