"""What the measuring (run.py) and the report (report.py) of the benchmarks
share: the interpreters, the method's constants, the median."""
import os
import statistics

DEBIAN_PY = os.environ.get("BENCH_DEBIAN_PYTHON", "/usr/bin/python3")
PYENV_PY = os.environ.get("BENCH_PYENV_PYTHON", "/root/.pyenv/versions/3.11.7/bin/python3.11")
SETTLE_S = 0.3          # after the profiler has attached, before the timed part
WARMUP_PHASES = 2       # unprofiled phases run and thrown away before the measured ones
BRACKET_TOLERANCE = 1.10  # the two unprofiled phases around a profiled one must agree this well


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None
