#!/usr/bin/env python3
"""Calibrates ebpfprof diff's noise model on real recordings (issue 23).

Each round starts three copies of tests/workloads/ab_ticks.py side by side,
A and A' unchanged and B whose changed() does 1.3x the work (+30%; changed()
holds about half of the process's on-CPU time), records the three at once,
then compares:

- A/A: A of some rounds against A' of as many later rounds (1 vs 1: A_i
  against A'_i+1; 2 vs 2 and 3 vs 3 likewise); every line diff judges
  (states, GC, functions) counts, and the false-positive rate is the share
  of them called a change;
- detection: the same with B for A'; the rate is the share of comparisons in
  which changed()'s self time "grew".

Rounds differ in time, so the machine's load between them is run-to-run
noise, as between a user's runs. Bounded: --rounds 6 of --seconds 8 take
about two minutes. --keep DIR keeps the recordings; --reuse DIR judges kept
ones again (with other --run-noise/--sigmas, say) without recording.

Needs root (BPF) and /usr/bin/python3.11; run from the repository root:
  sudo python3 bench/diff_calibration.py --rounds 6 --seconds 8
"""
import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EBPFPROF = ROOT / "ebpfprof"
WORKLOAD = ROOT / "tests" / "workloads" / "ab_ticks.py"
VARIANTS = {"A": [], "A2": [], "B": ["--slower", "1.3"]}


def start_workload(go, seconds, rounds, extra):
    # real-time: a fixed amount of work per tick, whatever the machine's load
    p = subprocess.Popen(["chrt", "-f", "10", "python3.11", str(WORKLOAD), "--go", str(go),
                          "--seconds", str(seconds + 30), "--rounds", str(rounds), *extra],
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    line = p.stderr.readline()
    if not line.startswith("pid="):
        raise SystemExit(f"workload did not start: {line!r}")
    return p


def record_round(out, index, args):
    go = out / f"go-{index}"
    works = {name: start_workload(go, args.seconds, args.work, extra)
             for name, extra in VARIANTS.items()}
    time.sleep(1.0)  # past the imports
    go.touch()  # steady work before the profilers attach: every window holds only it
    paths = {name: out / f"{name}-{index}.speedscope.json" for name in VARIANTS}
    profs = [subprocess.Popen([str(EBPFPROF), "--pid", str(w.pid), "-d", str(args.seconds),
                               "-r", str(args.rate), "-o", str(paths[name])],
                              stderr=subprocess.PIPE, text=True)
             for name, w in works.items()]
    try:
        for p in profs:
            _, err = p.communicate(timeout=args.seconds + 120)
            if p.returncode:
                raise SystemExit(f"ebpfprof failed: {err.strip()}")
    finally:
        for w in works.values():
            w.kill()
            w.wait()
    return paths


def judge(base, new, extra):
    args = [str(EBPFPROF), "diff", "--json", *extra, *map(str, base), "--vs", *map(str, new)]
    res = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if res.returncode:
        raise SystemExit(f"diff failed: {res.stderr.strip()}")
    rep = json.loads(res.stdout)
    lines = []
    for key in ("states", "gc_counts", "gc_totals", "functions_self", "functions_total"):
        lines += rep[key]
    return rep, lines


def is_change(line):
    return line["verdict"] in ("grew", "shrank")


def groups(nrounds, k, limit):
    """Sets of k rounds, at most `limit` of them."""
    return list(itertools.islice(itertools.combinations(range(nrounds), k), limit))


def calibrate(runs, extra, limit):
    rows = []
    for k in (1, 2, 3):
        sets = groups(len(runs), k, limit)
        if not sets:
            continue
        flagged = total = detected = 0
        stats = []
        for s in sets:
            # NEW from the next rounds: recorded at other times, under other
            # loads, as a user's runs before and after a change would be
            later = [(i + k) % len(runs) for i in s]
            a = [runs[i]["A"] for i in s]
            a2 = [runs[i]["A2"] for i in later]
            b = [runs[i]["B"] for i in later]
            _, lines = judge(a, a2, extra)
            total += len(lines)
            flagged += sum(map(is_change, lines))
            rep, _ = judge(a, b, extra)
            fn = [l for l in rep["functions_self"] if l["function"] == "changed"][0]
            detected += fn["verdict"] == "grew"
            stats.append(fn["stat"])
        rows.append({"runs_per_side": k, "comparisons": len(sets), "aa_lines": total,
                     "aa_flagged": flagged, "aa_rate": flagged / total if total else 0,
                     "detected": detected, "detection_rate": detected / len(sets),
                     "median_stat": sorted(stats)[len(stats) // 2]})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--work", type=int, default=150000, help="ab_ticks --rounds (per function per tick)")
    ap.add_argument("--limit", type=int, default=20, help="comparisons per runs-per-side")
    ap.add_argument("--keep", help="keep the recordings in this directory")
    ap.add_argument("--reuse", help="judge the recordings kept in this directory")
    ap.add_argument("--json", action="store_true", help="print the table as JSON")
    args, extra = ap.parse_known_args()  # the rest goes to ebpfprof diff
    if args.reuse:
        out = Path(args.reuse)
        n = len(list(out.glob("A-*.speedscope.json")))
        runs = [{name: out / f"{name}-{i}.speedscope.json" for name in VARIANTS} for i in range(n)]
    else:
        out = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ebpfprof-cal-"))
        out.mkdir(parents=True, exist_ok=True)
        begin = time.monotonic()
        runs = []
        for i in range(args.rounds):
            runs.append(record_round(out, i, args))
            print(f"round {i + 1}/{args.rounds} recorded ({time.monotonic() - begin:.0f} s)",
                  file=sys.stderr)
    rows = calibrate(runs, extra, args.limit)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"{len(runs)} rounds; diff options: {' '.join(extra) or '(defaults)'}")
        print("runs/side  comparisons  A/A lines flagged        +30% detected  median t")
        for r in rows:
            print(f"{r['runs_per_side']:>5} v {r['runs_per_side']:<3} {r['comparisons']:>8}  "
                  f"{r['aa_flagged']:>5} / {r['aa_lines']:<6} {100 * r['aa_rate']:5.2f}%  "
                  f"{r['detected']:>5} / {r['comparisons']:<3} {100 * r['detection_rate']:4.0f}%  "
                  f"{r['median_stat']:7.2f}")
    if not args.keep and not args.reuse:
        for p in out.iterdir():
            p.unlink()
        out.rmdir()


if __name__ == "__main__":
    main()
