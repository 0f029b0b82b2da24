"""The on-CPU <task NAME> frame's cost on the sampling path (issue 31,
docs/benchmarks.md): sample_on_cpu's BPF run time per sample
(kernel.bpf_stats_enabled) with NEW (this tree's ebpfprof) against BASE (one
built without the task frame), on a CPU-bound asyncio task
(tests/workloads/asyncio_tasks.py, ~10 frames) and a 200-frame recursion
(tests/workloads/recurse.py). Sessions alternate BASE and NEW.

    sudo python3 bench/task_frame_cost.py --base /tmp/base/ebpfprof --reps 3
"""
import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bpfprogs  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = {
    "asyncio task": ["tests/workloads/asyncio_tasks.py", "--seconds", "60"],
    "recurse 200": ["tests/workloads/recurse.py", "--depth", "200", "--seconds", "60"],
}


def one(binary, workload, seconds, out):
    target = subprocess.Popen(["/usr/bin/python3.11", *WORKLOADS[workload]], cwd=ROOT,
                              stderr=subprocess.PIPE, text=True)
    target.stderr.readline()  # pid=N
    time.sleep(1)
    try:
        rec = subprocess.Popen([binary, "--pid", str(target.pid), "-d", str(seconds), "-o", str(out),
                                "-f", "collapsed"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(seconds / 2)
        ns, cnt = bpfprogs.prog_stats(bpfprogs.owned_prog_ids(rec.pid), "sample_on_cpu")
        rec.wait()
    finally:
        target.kill()
        target.wait()
    return ns / cnt if cnt else float("nan"), cnt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=6)
    args = ap.parse_args()
    subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=1"], check=True)
    try:
        for workload in WORKLOADS:
            got = {"base": [], "new": []}
            for _ in range(args.reps):
                for name, binary in (("base", args.base), ("new", str(ROOT / "ebpfprof"))):
                    with tempfile.TemporaryDirectory() as tmp:
                        got[name].append(one(binary, workload, args.seconds, Path(tmp) / "out.txt")[0])
            print(f"{workload}: base {statistics.median(got['base']):.0f} ns/sample "
                  f"({', '.join(f'{x:.0f}' for x in got['base'])}), new {statistics.median(got['new']):.0f} "
                  f"({', '.join(f'{x:.0f}' for x in got['new'])})")
    finally:
        subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=0"], check=True)


main()
