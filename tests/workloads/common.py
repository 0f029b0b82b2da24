"""Shared by the test workloads: argument parsing, the pid handshake, the truth file."""
import argparse
import json
import os
import sys


def parse(extra=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--truth", help="write what really happened here, as JSON")
    for name, kw in (extra or {}).items():
        ap.add_argument(name, **kw)
    args = ap.parse_args()
    # The test harness waits for this line before it attaches.
    print(f"pid={os.getpid()}", file=sys.stderr, flush=True)
    return args


def write_truth(args, truth):
    if args.truth:
        truth["pid"] = os.getpid()
        tmp = args.truth + ".tmp"
        with open(tmp, "w") as f:
            json.dump(truth, f)
        os.replace(tmp, args.truth)
