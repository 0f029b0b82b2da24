"""Imports N modules written for the run, each spinning MS milliseconds of
its CPU time (so a loaded machine does not thin its samples) in its body: module-level code objects are freed once their import ends, so
the profiler must name them while they run (test_short_lived_code.py)."""
import importlib
import sys
import tempfile
import time
from pathlib import Path

MODULES = int(sys.argv[1]) if len(sys.argv) > 1 else 10
MS = int(sys.argv[2]) if len(sys.argv) > 2 else 60
BODY = """import time
_t = time.thread_time()
while time.thread_time() - _t < {s}:
    pass
"""

# what runs while the profiler still sets up is read at its first drain
time.sleep(0.5)
with tempfile.TemporaryDirectory() as d:
    for k in range(MODULES):
        Path(d, f"spinmod{k}.py").write_text(BODY.format(s=MS / 1000))
    sys.path.insert(0, d)
    for k in range(MODULES):
        importlib.import_module(f"spinmod{k}")
time.sleep(0.05)
