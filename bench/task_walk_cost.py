"""What record --tasks costs (issue 31, docs/benchmarks.md): the CPU time of
ebpfprof (and the reader process it starts) per second of recording, with
and without --tasks, on a target holding N asyncio tasks, each suspended in
asyncio.sleep under two coroutines of its own (bench/asyncio_tasks_target.py,
the loop idle), for N = 10, 1,000 and 10,000. --reps runs of each, the two
setups in turn; medians. Also the walks' count and whether one was cut at a
bound, from the recording's task profile.

    sudo python3 bench/task_walk_cost.py --python /usr/bin/python3.11
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
EBPFPROF = HERE.parent / "ebpfprof"


def start(python, n):
    proc = subprocess.Popen([python, str(HERE / "asyncio_tasks_target.py"), str(n)],
                            stdout=subprocess.PIPE, text=True)
    if proc.stdout.readline().strip() != "ready":
        raise SystemExit("target did not start")
    return proc


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def record(pid, seconds, tasks, out):
    before = children_cpu()
    argv = [str(EBPFPROF), "--pid", str(pid), "-d", str(seconds), "-o", str(out)]
    res = subprocess.run(argv + (["--tasks"] if tasks else []), capture_output=True, text=True)
    if res.returncode:
        raise SystemExit(res.stderr)
    cpu = children_cpu() - before
    doc = json.loads(Path(out).read_text())
    length = doc["ebpfprof"]["duration_s"]
    placed = sum(sum(p["weights"]) for p in doc["profiles"] if p["name"].startswith("[asyncio tasks]")) / 1e9
    cut = "stopped at a bound" in res.stderr
    return cpu / length, placed / length, cut


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=10)
    args = ap.parse_args()
    print(f"load average at the start: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (10, 1000, 10000):
            proc = start(args.python, n)
            try:
                runs = {False: [], True: []}
                for _ in range(args.reps):
                    for tasks in (False, True):
                        runs[tasks].append(record(proc.pid, args.seconds, tasks, Path(tmp) / "p.json"))
            finally:
                proc.kill()
                proc.wait()
            off = statistics.median(r[0] for r in runs[False])
            on = statistics.median(r[0] for r in runs[True])
            placed = statistics.median(r[1] for r in runs[True])
            print(f"{n:6d} tasks: without {off * 1e3:7.1f} ms/s {[round(r[0] * 1e3, 1) for r in runs[False]]}, "
                  f"with --tasks {on * 1e3:7.1f} ms/s {[round(r[0] * 1e3, 1) for r in runs[True]]}, "
                  f"ratio {on / off:5.2f}, task-seconds placed per second {placed:8.1f}, "
                  f"cut at a bound: {[r[2] for r in runs[True]]}")
    print(f"load average at the end: {os.getloadavg()}")


main()
