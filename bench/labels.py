"""What --label costs the sampler (issue 30): the perf_event program's BPF
time per run (kernel.bpf_stats_enabled) at 1000 Hz on a CPU-bound request
handler (tests/workloads/label_requests.py --key tuple: handle(request_id)
under main(), 4 Python frames), in four setups, ROUNDS times in turn, medians:

  main, no label:  ebpfprof before issue 30 (main, built once into
                   build/bench/)
  no label:        this ebpfprof without --label
  label, no frame: --label on request_id(), a function the stacks seldom
                   hold: its code object is given to the kernel, every
                   frame is compared with it, no value is read
  labelled frame:  --label on handle(request_id): every sample's stack holds
                   it, its tuple is read and sent

Each setup's ratio to "no label" is taken within each round (the setups of
a round run back to back, so the machine's load moves them together), and
its median given beside the medians of the times.

Only the programs of the profiler under test are counted (their ids from its
/proc/PID/fdinfo). Run as root; prints the table and puts it into
docs/benchmarks.md as the section "Labels (issue 30)". --quick: 1 round of 2 s."""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from base_build import build_at
from sampling import STATS, measure

ROOT = Path(__file__).resolve().parents[1]
NEW = ROOT / "ebpfprof"
DOC = ROOT / "docs" / "benchmarks.md"
TITLE = "## Labels (issue 30)"
SETUPS = [("main, no label", "base", []),
          ("no label", "new", []),
          ("label, no labelled frame", "new", ["--label", "r=request_id:0"]),
          ("labelled frame (tuple read)", "new", ["--label", "req=handle:0"])]


def build_base():
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "main"],
                            capture_output=True, text=True, check=True).stdout.strip()
    return build_at(commit, ROOT / "build" / "bench" / f"ebpfprof-{commit}", "labels")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/labels.py: needs root (BPF, bpf_stats, perf events)")
    if args.quick:
        args.rounds, args.seconds = 1, 2
    binaries = {"base": build_base(), "new": NEW}
    old = STATS.read_text().strip()
    load, started = os.getloadavg(), time.monotonic()
    got = {name: [] for name, _, _ in SETUPS}
    try:
        for r in range(args.rounds):
            order = SETUPS if r % 2 == 0 else SETUPS[::-1]
            for name, which, extra in order:
                ns, runs, _ = measure(binaries[which], "label_requests.py", ["--key", "tuple"],
                                      "sample_on_cpu", 1000, args.seconds, extra)
                got[name].append(ns)
                print(f"round {r + 1} {name:28} {ns:.0f} ns per tick ({runs} runs)", flush=True)
    finally:
        STATS.write_text(old + "\n")
    if not args.no_doc:
        write_doc(got, args, time.monotonic() - started, load)


def write_doc(got, args, elapsed, load):
    L = [TITLE, "",
         f"`bench/labels.py` on {os.uname().release}, {len(os.sched_getaffinity(0))} CPUs, "
         f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {args.rounds} rounds of "
         f"{args.seconds:g} s per setup, in turn, medians ({elapsed:.0f} s in all). The "
         "perf_event program's BPF time per run (kernel.bpf_stats_enabled) at 1000 Hz on "
         "`label_requests.py --key tuple` (handle(request_id) under main(), 4 Python frames, "
         "CPU-bound). A labelled frame's value is read by a global BPF function "
         "(bpf/label.bpf.c: a type's flags, then the tuple's items, each str or int: about ten "
         "probe reads) and 128 bytes more go with a stack sent whole. Each cell: the median "
         f"(the rounds' range). Load average {load[0]:.1f} at the start, "
         f"{os.getloadavg()[0]:.1f} at the end: on a shared machine, ranges that overlap are "
         "noise. The ratio: each setup's time over \"no label\"'s of the same round, the "
         "rounds' median (range).", "", "| setup | BPF per tick | ratio to no label |",
         "|---|---|---|"]
    for name, _, _ in SETUPS:
        v = got[name]
        ratios = [a / b for a, b in zip(v, got["no label"]) if b > 0]
        ratio = f"{statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f})" if ratios else "-"
        L.append(f"| {name} | {statistics.median(v):.0f} ns ({min(v):.0f}–{max(v):.0f}) | {ratio} |")
    L.append("")
    doc = DOC.read_text() if DOC.exists() else ""
    doc = re.sub(r"\n" + re.escape(TITLE) + r"\n.*?(?=\n## |\Z)", "\n", doc, flags=re.S)
    DOC.write_text(doc.rstrip("\n") + "\n\n" + "\n".join(L))


if __name__ == "__main__":
    main()
