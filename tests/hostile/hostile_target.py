"""What the hostile targets of this directory do once they are set up: say
their pid (pid=N on stderr, as tests/workloads do) and run Python code,
crunch(), until `seconds` have passed."""
import os
import sys
import time


def crunch(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(500))


def announce_and_crunch(seconds):
    print(f"pid={os.getpid()}", file=sys.stderr, flush=True)
    crunch(seconds)
