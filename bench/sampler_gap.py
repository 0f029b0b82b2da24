"""Issue 29's third criterion: the sampler's cost at 100 Hz and 1 kHz
against `perf record -F 1000` and a bare cpu-clock, with two or more
ebpfprof binaries in the same run (rounds alternating the binaries; each
round one bench/cpu.py process with bracketed phases, as make bench's
benchmark 1). Prints the undisturbed ratio of each configuration, medians
of the rounds, and ebpfprof's gap to perf at 1 kHz.

    sudo python3 bench/sampler_gap.py --rounds 3 ref=/tmp/ref/ebpfprof new=./ebpfprof
"""
import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402
import switch_pieces  # noqa: E402


def one_round(rounds, reps, target_cpu, ep_cpu, label):
    configs = [("100 Hz", (["-r", 100], ep_cpu)), ("1000 Hz", (["-r", 1000], ep_cpu)),
               ("perf 1000 Hz", ("perf", ["-F", 1000])), ("clock 1000 Hz", ("clock", 1000))]
    res = run.phases(run.DEBIAN_PY, "cpu.py", ["--rounds", rounds, "--depth", 1], configs, reps,
                     target_cpu=target_cpu, label=label)
    return {name: run.versus(res["none"][name], res[name], events_key="samples"
                             if "perf" not in name and "clock" not in name else None,
                             events=None if "perf" not in name and "clock" not in name else 1)
            ["undisturbed"]["ratio"] for name, _ in configs}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binaries", nargs="+", help="name=path")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3, help="phases per configuration in a round")
    args = ap.parse_args()
    sides = switch_pieces.copy_binaries(args.binaries, "ebpfprof-gap-")
    target_cpu, ep_cpu = run.pinning()
    probe = run.single(run.DEBIAN_PY, "cpu.py", ["--rounds", 300])
    rounds = max(100, int(300 / probe["cpu_seconds"]))
    out = {n: [] for n in sides}
    for r in range(args.rounds):
        for name, path in sides.items():
            run.EBPFPROF = path
            out[name].append(one_round(rounds, args.reps, target_cpu, ep_cpu, f"{name} {r + 1}"))
    print(f"{'binary':<10} {'100 Hz':>8} {'1000 Hz':>8} {'perf 1 kHz':>10} {'bare clock':>10} "
          f"{'gap to perf at 1 kHz':>20}")
    for name, rows in out.items():
        def m(k):
            return statistics.median(x[k] for x in rows)
        gaps = [x["1000 Hz"] - x["perf 1000 Hz"] for x in rows]
        print(f"{name:<10} {m('100 Hz'):8.3f} {m('1000 Hz'):8.3f} {m('perf 1000 Hz'):10.3f} "
              f"{m('clock 1000 Hz'):10.3f} {statistics.median(gaps):+20.3f} "
              f"({min(gaps):+.3f} to {max(gaps):+.3f})")


if __name__ == "__main__":
    main()
