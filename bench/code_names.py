"""The sampler's BPF time per run (kernel.bpf_stats_enabled) with and
without the kernel's code names (bpf/code_names.bpf.c, docs/benchmarks.md),
binaries taken in turn in each round, on two workloads at 1000 Hz: one
function spinning (its stack sent once: the steady state) and a fresh
exec()'d function every millisecond (nearly every sample a new stack with a
new code object: the worst case). Medians of the rounds, and of the
rounds' ratios to the first binary.

    sudo python3 bench/code_names.py --rounds 9 before=/tmp/ep-BEFORE now=./ebpfprof
"""
import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bpfprogs import owned_prog_ids, prog_stats  # noqa: E402

PYTHON = "/usr/bin/python3.11"
WORKLOADS = {
    "steady": """
import sys, time
def spin(n):
    x = 0
    for i in range(n):
        x += i
    return x
end = time.time() + float(sys.argv[1])
while time.time() < end:
    spin(10000)
""",
    "fresh": """
import sys, time
end = time.time() + float(sys.argv[1])
k = 0
while time.time() < end:
    k += 1
    exec(f"def f{k}():\\n    x = 0\\n    for i in range(20000):\\n        x += i\\n    return x\\nf{k}()")
""",
}


def one_run(binary, script, tmp):
    """The sampler's ns per run over 1 s of a 4 s recording, and its runs."""
    p = subprocess.Popen([binary, "-r", "1000", "--format", "collapsed", "-o", str(tmp / "out.txt"),
                          "--", PYTHON, str(script), "4"], stderr=subprocess.PIPE, text=True)
    time.sleep(2.5)
    ids = owned_prog_ids(p.pid)
    ns0, c0 = prog_stats(ids, "sample_on_cpu")
    time.sleep(1.0)
    ns1, c1 = prog_stats(ids, "sample_on_cpu")
    p.communicate()
    return (ns1 - ns0) / max(c1 - c0, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binaries", nargs="+", help="name=path; the first is the ratios' base")
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ep-code-names-"))
    sides = {}
    for spec in args.binaries:
        name, path = spec.split("=", 1)
        sides[name] = str(tmp / f"ebpfprof-{name}")
        shutil.copy(path, sides[name])
    scripts = {}
    for name, text in WORKLOADS.items():
        scripts[name] = tmp / f"{name}.py"
        scripts[name].write_text(text)
    subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=1"], check=True)
    ns = {}
    try:
        for r in range(args.rounds):
            for side, binary in sides.items():
                for w, script in scripts.items():
                    ns.setdefault((side, w), []).append(one_run(binary, script, tmp))
            print(f"round {r + 1} of {args.rounds}", file=sys.stderr)
    finally:
        subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=0"])
    base = next(iter(sides))
    print("| binary | workload | BPF per sample, median (range) | ratio to %s, median (range) |" % base)
    print("|---|---|---|---|")
    for (side, w), v in ns.items():
        ratios = [a / b for a, b in zip(v, ns[(base, w)])]
        print(f"| {side} | {w} | {statistics.median(v):.0f} ns ({min(v):.0f}-{max(v):.0f}) "
              f"| {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) |")


if __name__ == "__main__":
    main()
