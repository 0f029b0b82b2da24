"""The sched_switch program piece by piece (issue 29, docs/benchmarks.md):
binaries built with a piece left out (make BPF_EXTRA=-DEP_BENCH_NO_GIL ...,
see bpf/offcpu.bpf.h), taken in turn in each round, on the ping-pong and the
GIL-heavy relay; the switch program's BPF time per run and the off-CPU
programs' per switch, medians of the rounds. The difference of a binary to
the full one is what its piece costs.

    sudo python3 bench/switch_pieces.py --reps 3 full=/tmp/ep-FULL no-gil=/tmp/ep-NO_GIL
"""
import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gil_blame_cost  # noqa: E402
import run  # noqa: E402

CASES = (("ping-pong", "pingpong.py", ["--round-trips", 40000]),
         ("relay", "pingpong.py", ["--round-trips", 20000, "--hog"]))


def copy_binaries(specs, prefix):
    """NAME=PATH specs -> {name: a copy of the binary}: a rebuild meanwhile
    changes nothing measured."""
    bindir = Path(tempfile.mkdtemp(prefix=prefix))
    sides = {}
    for spec in specs:
        name, path = spec.split("=", 1)
        sides[name] = bindir / name
        shutil.copy2(path, sides[name])
    return sides


def figures(r, round_trips):
    f = gil_blame_cost.figures(*r, round_trips)
    # as make bench gives it: every run of the machine's switches over the target's own
    f["ns_per_switch_out"] = f["offcpu_ns"] / f["switch_outs"] if f["switch_outs"] else float("nan")
    return f


def slowdown(unprof, prof, round_trips):
    nan = float("nan")
    return {"switch_prog_ns": nan, "ns_per_switch": nan, "ns_per_switch_out": nan,
            "undisturbed": prof["undisturbed_mean_us"] / unprof["undisturbed_mean_us"],
            "trip_switches_unprof": unprof["switches"] / round_trips,
            "trip_switches": prof["switches"] / round_trips}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binaries", nargs="+", help="name=path")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--stats-off", action="store_true",
                    help="kernel.bpf_stats_enabled off, as users run: the slowdown without "
                         "the kernel's timing of each program run (no BPF figures then)")
    args = ap.parse_args()
    sides = copy_binaries(args.binaries, "ebpfprof-pieces-")
    target_cpu, ep_cpu = run.pinning()
    plain = run.bpf_figures
    run.bpf_figures = lambda s0, s1: dict(plain(s0, s1), counters={
        k: s1["counters"].get(k, 0) - s0["counters"].get(k, 0) for k in s1["counters"]})
    old = run.STATS_SYSCTL.read_text().strip()
    run.STATS["on"] = not args.stats_off
    stats = "0\n" if args.stats_off else "1\n"
    res = {(c, n): [] for c, _, _ in CASES for n in sides}
    try:
        for case, script, wargs in CASES:
            for rep in range(args.reps):
                for name, path in sides.items():
                    run.EBPFPROF = path
                    run.STATS_SYSCTL.write_text(stats)
                    r = run.session(run.DEBIAN_PY, script, wargs, [None, (["-r", "1"], ep_cpu)],
                                    target_cpu=target_cpu, label=f"{case} {name} {rep + 1}")
                    res[case, name].append(figures(r, wargs[1]) if not args.stats_off
                                           else slowdown(*r, wargs[1]))
    finally:
        run.STATS_SYSCTL.write_text(old + "\n")
    print(f"{'case':<10} {'binary':<14} {'switch prog ns/run':>18} {'off-CPU progs ns/switch':>23} {'per target switch-out':>21} "
          f"{'undisturbed x (range)':>21} {'switches/round trip unprof -> prof':>34}")
    for (case, name), rows in res.items():
        def m(k):
            return statistics.median(r[k] for r in rows)
        lo = min(r["switch_prog_ns"] for r in rows)
        hi = max(r["switch_prog_ns"] for r in rows)
        print(f"{case:<10} {name:<14} {m('switch_prog_ns'):8.1f} ({lo:.0f}-{hi:.0f}) "
              f"{m('ns_per_switch'):23.1f} {m('ns_per_switch_out'):21.1f} {m('undisturbed'):6.3f} "
              f"({min(r['undisturbed'] for r in rows):.2f}-{max(r['undisturbed'] for r in rows):.2f}) "
              f"{m('trip_switches_unprof'):16.2f} -> {m('trip_switches'):.2f}")


if __name__ == "__main__":
    main()
