"""Shared by the test workloads: argument parsing, the pid handshake, the truth file."""
import argparse
import json
import os
import sys
import time


def parse(extra=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--truth", help="write what really happened here, as JSON")
    ap.add_argument("--go", help="wait until this file exists before the measured part")
    for name, kw in (extra or {}).items():
        ap.add_argument(name, **kw)
    args = ap.parse_args()
    # The test harness waits for this line before it attaches.
    print(f"pid={os.getpid()}", file=sys.stderr, flush=True)
    return args


def wait_for_go(args):
    """Lets the harness attach the profiler before the part it measures."""
    while args.go and not os.path.exists(args.go):
        time.sleep(0.005)


def write_truth(args, truth):
    if args.truth:
        truth["pid"] = os.getpid()
        tmp = args.truth + ".tmp"
        with open(tmp, "w") as f:
            json.dump(truth, f)
        os.replace(tmp, args.truth)
