"""Shared by the benchmark workloads: the pid handshake and the timed section.

A workload prints pid=N on stderr first, warms up, waits for the --go file
(the harness creates it once the profiler is attached, or at once when it
runs the workload unprofiled), does a FIXED amount of work timed with
time.perf_counter(), writes what it measured to --result as JSON, then waits
for the --release file (so the harness can read the profiler's counters
while the target is still alive) and exits."""
import argparse
import json
import os
import sys
import time


def parse(extra=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--go", help="wait until this file exists before the timed part")
    ap.add_argument("--result", help="write the measurements here, as JSON")
    ap.add_argument("--release", help="after writing --result, wait for this file before exiting")
    for name, kw in (extra or {}).items():
        ap.add_argument(name, **kw)
    args = ap.parse_args()
    print(f"pid={os.getpid()}", file=sys.stderr, flush=True)
    return args


def _wait_file(path, timeout=120.0):
    deadline = time.monotonic() + timeout
    while path and not os.path.exists(path):
        if time.monotonic() > deadline:
            sys.exit(f"{path} did not appear in {timeout:.0f} s")
        time.sleep(0.005)


def wait_for_go(args):
    _wait_file(args.go)


def finish(args, result):
    result["pid"] = os.getpid()
    if args.result:
        tmp = args.result + ".tmp"
        with open(tmp, "w") as f:
            json.dump(result, f)
        os.replace(tmp, args.result)
    _wait_file(args.release)


def context_switches():
    """Voluntary and involuntary context switches of every thread of this process."""
    vol = invol = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        vol += int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches"):
                        invol += int(line.split()[1])
        except FileNotFoundError:
            pass
    return vol, invol
