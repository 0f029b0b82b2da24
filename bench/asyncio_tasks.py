"""What one walk of every asyncio task of a process costs (issue 31,
docs/benchmarks.md): `ebpfprof dump --tasks --json` of a target holding N
tasks (bench/asyncio_tasks_target.py), wall time per dump, the median of
--reps, for N = 0, 10, 1,000 and 10,000; N = 0 is the fixed cost (start,
finding the interpreter) the others are read against.

    sudo python3 bench/asyncio_tasks.py --python /usr/bin/python3.11
    sudo python3 bench/asyncio_tasks.py --chroot /var/cache/ebpfprof/chroots/sid --python python3.14
"""
import argparse
import json
import shutil
import statistics
import subprocess
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
EBPFPROF = HERE.parent / "ebpfprof"


def start(args, n):
    script = HERE / "asyncio_tasks_target.py"
    argv = [args.python, str(script), str(n)]
    if args.chroot:
        shutil.copy(script, Path(args.chroot) / "tmp" / script.name)
        argv = ["chroot", args.chroot, args.python, f"/tmp/{script.name}", str(n)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    if proc.stdout.readline().strip() != "ready":
        raise SystemExit("target did not start")
    return proc


def one(pid):
    t0 = time.monotonic()
    res = subprocess.run([str(EBPFPROF), "dump", "--tasks", "--json", "--pid", str(pid)],
                         capture_output=True, text=True, check=True)
    took = time.monotonic() - t0
    doc = json.loads(res.stdout)
    return took, len(doc["tasks"]), doc["truncated"], doc["reads"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("--chroot")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    for n in (0, 10, 1000, 10000):
        proc = start(args, n)
        try:
            runs = [one(proc.pid) for _ in range(args.reps)]
        finally:
            proc.kill()
            proc.wait()
        times = sorted(r[0] for r in runs)
        print(f"{n:6d} tasks: found {runs[0][1]:6d} truncated={runs[0][2]} reads {runs[0][3]:7d} "
              f"median {statistics.median(times) * 1e3:8.1f} ms (min {times[0] * 1e3:.1f}, max {times[-1] * 1e3:.1f})")


main()
