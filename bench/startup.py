"""Start-up (issue 48): how soon ebpfprof records a process already running,
as users attach to one, this tree against older binaries in one run, each
case with every binary in turn (in alternating order) ROUNDS times; the
table shows medians (and the spread, min-max).

  record idle   wall time of `--pid P -d 1` on a sleeping target, less 1 s
  record busy   the same on a target keeping both CPUs busy (a thread
                ping-pong, a pure-Python thread and one hashing without the GIL)
  top           from launching `top --pid P` (idle target) to its first screen
  --match       wall time of `--match TOKEN -d 1` (idle target), less 1 s
  first sample  this tree only (-v): the busy target's first sample after
                ebpfprof started; idle: when the recording began
  PROG_LOAD     the sum of the BPF_PROG_LOAD calls' times (strace -T), one run
                on the idle target

and the per-event costs of the programs this work touched, against 9ca0104
(the tree before it): the perf_event program's BPF time per run at 1000 Hz on
a 30-frame spinner (tests/workloads/recurse.py), the sched_switch program's
per run while tests/workloads/switch_heavy.py ping-pongs (kernel.bpf_stats).

Older binaries are built once from `git archive REV` into build/bench/. Run as
root; prints the table and puts it into docs/benchmarks.md as the section
"Start-up (issue 48)". --quick: 1 round, no per-event costs."""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from base_build import build_at
import sampling

ROOT = Path(__file__).resolve().parents[1]
NEW = ROOT / "ebpfprof"
BASES = ("9ca0104", "9092b2a", "7767610")
PY = "/usr/bin/python3.11"
TARGET = ROOT / "bench" / "startup_target.py"
DOC = ROOT / "docs" / "benchmarks.md"
TITLE = "## Start-up (issue 48)"


def start_target(mode, tag):
    p = subprocess.Popen([PY, str(TARGET), "--mode", mode, "--tag", tag], stderr=subprocess.PIPE,
                         text=True)
    p.pid = int(p.stderr.readline().strip().split("=")[1])
    time.sleep(1.0)     # running well before ebpfprof comes, as users attach
    return p


def stop(p):
    p.kill()
    p.wait()


def timed(argv, seconds=1.0):
    """Wall time of argv less `seconds`, and its stderr."""
    argv = [str(a) for a in argv]
    t = time.monotonic()
    res = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    wall = time.monotonic() - t
    if res.returncode:
        sys.exit(f"startup: {' '.join(argv)} failed: {res.stderr[-400:]}")
    return wall - seconds, res.stderr


def first_screen(binary, pid):
    """Seconds from launching top to its first line of output."""
    t = time.monotonic()
    p = subprocess.Popen([str(binary), "top", "--pid", str(pid), "-d", "30"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    p.stdout.readline()
    got = time.monotonic() - t
    p.kill()
    p.wait()
    return got


def since_start(stderr, what):
    m = re.search(what + r" ([\d.]+) s after start", stderr)
    return float(m.group(1)) if m else None


def prog_load_sum(binary, pid, out):
    res = subprocess.run(["strace", "-f", "-T", "-e", "trace=bpf", str(binary), "--pid", str(pid),
                          "-d", "1", "-o", out], capture_output=True, text=True, timeout=120)
    return sum(float(t) for t in re.findall(r"BPF_PROG_LOAD.*<([\d.]+)>$", res.stderr, re.M))


def record(name, binary, pid, path, cases, first):
    """`--pid pid -d 1` into cases[`record CASE`]; this tree's -v line
    `first` (a pattern) into cases[`first sample CASE`]."""
    case, pattern = first
    v = ["-v"] if name == "this tree" else []
    wall, err = timed([binary, "--pid", pid, "-d", "1", "-o", path, *v])
    cases[f"record {case}"].append(wall)
    if v:
        cases["first sample" + ("" if case == "idle" else f" {case}")].append(since_start(err, pattern))


def round_of(sides, got, tmp, k):
    tag = f"ebpfprof-startup-{os.getpid()}-{k}"
    order = list(sides.items()) if k % 2 == 0 else list(reversed(sides.items()))
    idle = start_target("idle", tag)
    try:
        for name, binary in order:
            record(name, binary, idle.pid, f"{tmp}/i.json", got[name],
                   ("idle", rf"recording {idle.pid} from"))
            got[name]["top"].append(first_screen(binary, idle.pid))
            wall, _ = timed([binary, "--match", tag, "-d", "1", "-o", f"{tmp}/m{k}/"])
            got[name]["--match"].append(wall)
            if k == 0:
                got[name]["PROG_LOAD"].append(prog_load_sum(binary, idle.pid, f"{tmp}/s.json"))
    finally:
        stop(idle)
    busy = start_target("busy", tag)
    try:
        for name, binary in order:
            record(name, binary, busy.pid, f"{tmp}/b.json", got[name], ("busy", "first sample"))
    finally:
        stop(busy)


def event_costs(rounds, seconds):
    """{binary: {program: [ns per run]}}: this tree and 9ca0104 in turn."""
    base = build_at("9ca0104", ROOT / "build" / "bench" / "ebpfprof-9ca0104", "startup")
    got = {"this tree": {"sample": [], "switch": []}, "9ca0104": {"sample": [], "switch": []}}
    for k in range(rounds):
        sides = [("this tree", NEW), ("9ca0104", base)]
        for name, binary in sides if k % 2 == 0 else reversed(sides):
            got[name]["sample"].append(sampling.measure(binary, "recurse.py", ["--depth", "30"],
                                                        "sample_on_cpu", 1000, seconds)[0])
            got[name]["switch"].append(sampling.measure(binary, "switch_heavy.py", [],
                                                        "offcpu_switch", 100, seconds)[0])
    return got


def med(values, scale=1.0, fmt="{:.2f}"):
    values = [v for v in values if v is not None]
    if not values:
        return ""
    m = fmt.format(statistics.median(values) * scale)
    if len(values) < 2:
        return m
    return f"{m} ({fmt.format(min(values) * scale)}-{fmt.format(max(values) * scale)})"


def table(got, costs):
    cases = ("record idle", "record busy", "top", "--match", "first sample", "first sample busy",
             "PROG_LOAD")
    rows = ["| binary | " + " | ".join(cases) + " |", "|---" * (len(cases) + 1) + "|"]
    for name, by_case in got.items():
        rows.append(f"| {name} | " + " | ".join(med(by_case[c]) for c in cases) + " |")
    if costs:
        rows += ["", "| binary | sample_on_cpu ns/run (30 frames, 1000 Hz) | offcpu_switch ns/run |",
                 "|---|---|---|"]
        for name, c in costs.items():
            rows.append(f"| {name} | {med(c['sample'], fmt='{:.0f}')} | {med(c['switch'], fmt='{:.0f}')} |")
    return "\n".join(rows)


def write_doc(text, args, load):
    body = (f"{TITLE}\n\n`sudo python3 bench/startup.py` ({args.rounds} rounds; {time.strftime('%Y-%m-%d')}, "
            f"load average {load:.2f} at the start; seconds, medians, min-max in brackets). "
            "Each case launches the binary on a target already running, as users attach; "
            "see the script's docstring for what each column times.\n\n" + text + "\n")
    doc = DOC.read_text() if DOC.exists() else ""
    if TITLE in doc:
        start = doc.index(TITLE)
        end = doc.find("\n## ", start + len(TITLE))
        doc = doc[:start] + body + (doc[end + 1:] if end >= 0 else "")
    else:
        doc = doc.rstrip("\n") + "\n\n" + body
    DOC.write_text(doc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.rounds = 1
    if os.geteuid():
        sys.exit("startup: needs root")
    load = os.getloadavg()[0]
    sides = {"this tree": NEW}
    for rev in BASES:
        sides[rev] = build_at(rev, ROOT / "build" / "bench" / f"ebpfprof-{rev}", "startup")
    got = {name: {c: [] for c in ("record idle", "record busy", "top", "--match", "first sample",
                                  "first sample busy", "PROG_LOAD")} for name in sides}
    with tempfile.TemporaryDirectory(prefix="ebpfprof-startup-") as tmp:
        for k in range(args.rounds):
            round_of(sides, got, tmp, k)
            print(f"startup: round {k + 1} of {args.rounds} done", file=sys.stderr, flush=True)
    costs = None if args.quick else event_costs(args.rounds, 5)
    text = table(got, costs)
    print(text)
    if not args.no_doc:
        write_doc(text, args, load)


if __name__ == "__main__":
    main()
