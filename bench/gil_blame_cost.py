"""The GIL blame's cost on the switch path (issue 21, docs/benchmarks.md
section 6): the off-CPU programs' BPF run time per switch and per GIL wait,
and the target's undisturbed time per unit of work, with NEW (this tree's
ebpfprof) against BASE (one built without the blame, e.g. from the commit
before it), on the ping-pong (bench/pingpong.py: lock waits, where nothing of
the GIL is read) and on GIL waits (bench/gil_pingpong.py). Sessions alternate
BASE and NEW; each is one workload process with an unprofiled and a profiled
phase (ebpfprof -r 1, so the sampler adds almost nothing), target and
profiler pinned as in make bench.

    sudo python3 bench/gil_blame_cost.py --base /tmp/base/ebpfprof --reps 5
"""
import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402

CNT_OFFCPU, CNT_GIL_BLAMED = 4, 12      # enum ep_counter


def figures(unprof, prof, round_trips):
    bpf = prof["bpf"]
    offcpu_ns = sum(t for name, (t, _) in bpf["progs"].items() if name.startswith("offcpu_"))
    switch = [v for name, v in bpf["progs"].items() if name.startswith("offcpu_switch")]
    runs = sum(c for _, c in switch)
    return {"switches_per_s": prof["switches"] / prof["seconds"],
            "switch_outs": bpf["counters"].get(CNT_OFFCPU, 0),
            "gil_waits": bpf["counters"].get(CNT_GIL_BLAMED, 0),
            "switch_runs": runs,
            "offcpu_ns": offcpu_ns,
            "ns_per_switch": offcpu_ns / runs if runs else float("nan"),
            "switch_prog_ns": sum(t for t, _ in switch) / runs if runs else float("nan"),
            "undisturbed": prof["undisturbed_mean_us"] / unprof["undisturbed_mean_us"],
            "trip_switches_unprof": unprof["switches"] / round_trips,
            "trip_switches": prof["switches"] / round_trips}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="an ebpfprof built without the GIL blame")
    ap.add_argument("--new", default=str(run.ROOT / "ebpfprof"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cases", default="ping-pong,GIL waits", help="which, comma-separated")
    ap.add_argument("--output", default=str(run.ROOT / "build" / "bench" / "gil_blame_cost.json"))
    args = ap.parse_args()
    # copies: a rebuild during the run changes nothing
    bindir = Path(tempfile.mkdtemp(prefix="ebpfprof-gil-blame-"))
    for side in ("base", "new"):
        shutil.copy2(getattr(args, side), bindir / side)
        setattr(args, side, str(bindir / side))
    target_cpu, ep_cpu = run.pinning()
    plain = run.bpf_figures
    run.bpf_figures = lambda s0, s1: dict(plain(s0, s1), counters={
        k: s1["counters"].get(k, 0) - s0["counters"].get(k, 0) for k in s1["counters"]})
    old = run.STATS_SYSCTL.read_text().strip()
    run.STATS_SYSCTL.write_text("1\n")
    run.STATS["on"] = True
    cases = (("ping-pong", "pingpong.py", ["--round-trips", 40000]),
             ("GIL waits", "gil_pingpong.py", ["--wakes", 1000]),
             ("relay", "pingpong.py", ["--round-trips", 20000, "--hog"]))
    cases = [c for c in cases if c[0] in args.cases.split(",")]
    results = {case: {"base": [], "new": []} for case, _, _ in cases}
    try:
        for case, script, wargs in cases:
            for rep in range(args.reps):
                for side in ("base", "new"):
                    run.EBPFPROF = Path(getattr(args, side))
                    run.STATS_SYSCTL.write_text("1\n")     # in case another run turned it off
                    res = run.session(run.DEBIAN_PY, script, wargs, [None, (["-r", "1"], ep_cpu)],
                                      target_cpu=target_cpu, label=f"{case} {side} {rep + 1}")
                    results[case][side].append(figures(*res, wargs[1]))
    finally:
        run.STATS_SYSCTL.write_text(old + "\n")
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(results, indent=1))
    print(f"{'case':<10} {'side':<5} {'switches/s':>10} {'GIL waits/s':>11} {'BPF ns/switch':>14} "
          f"{'undisturbed x':>13} {'switches/unit unprof -> prof':>28}")
    for case, sides in results.items():
        for side, rows in sides.items():
            med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
            print(f"{case:<10} {side:<5} {med['switches_per_s']:10.0f} "
                  f"{med['gil_waits'] / max(med['switch_outs'], 1) * med['switches_per_s']:11.0f} "
                  f"{med['ns_per_switch']:14.1f} {med['switch_prog_ns']:14.1f} {med['undisturbed']:13.3f} "
                  f"{med['trip_switches_unprof']:13.2f} -> {med['trip_switches']:.2f}")
        b, n = sides["base"], sides["new"]
        extra = [(y["offcpu_ns"] - x["offcpu_ns"]) for x, y in zip(b, n)]
        waits = statistics.median(r["gil_waits"] for r in n)
        d_switch = statistics.median(y["ns_per_switch"] - x["ns_per_switch"] for x, y in zip(b, n))
        print(f"{case:<10} NEW - BASE: {d_switch:+.1f} ns per switch (median of pairs)"
              + (f"; {statistics.median(extra) / waits:+.0f} ns per GIL wait attributed" if waits else ""))


if __name__ == "__main__":
    main()
