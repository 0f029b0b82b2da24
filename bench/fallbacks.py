"""The BPF cost of the older kernels' mechanisms (issue 24), measured on this
kernel: each fallback forced with EBPFPROF_FORCE_MISSING=fallbacks, next to
the main paths, with kernel.bpf_stats_enabled's run time per program run.

  per switch: tests/workloads/switch_heavy.py (four ping-pong pairs), the
              sched_switch program's time per run (all switches of the machine)
  per sample: tests/workloads/recurse.py --depth 300 at 1000 Hz, the
              perf_event program's time per run (a 300-frame walk)

Run as root (scripts/bench.sh runs it after bench/run.py); prints the table
and puts it into docs/benchmarks.md as the section "Kernel fallbacks"."""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EBPFPROF = ROOT / "ebpfprof"
PY = "/usr/bin/python3.11"
STATS = Path("/proc/sys/kernel/bpf_stats_enabled")
DOC = ROOT / "docs" / "benchmarks.md"
MODES = (("main paths", ""), ("fallbacks forced", "fallbacks"))
PROGS = {"per switch": "offcpu_switch", "per sample": "sample_on_cpu"}


def prog_stats(prefix):
    """(run_time_ns, run_cnt) summed over the loaded programs named prefix*."""
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                         check=True).stdout
    ns = cnt = 0
    for p in json.loads(out):
        # bpftool shows names cut to 15 characters
        if p.get("name", "").startswith(prefix[:15]):
            ns += p.get("run_time_ns", 0)
            cnt += p.get("run_cnt", 0)
    return ns, cnt


def measure(workload, wargs, prog, force, seconds=6):
    w = subprocess.Popen([PY, str(ROOT / "tests" / "workloads" / workload), "--seconds", "60",
                          *wargs], stderr=subprocess.PIPE, text=True)
    pid = int(w.stderr.readline().strip().split("=")[1])
    env = dict(os.environ, EBPFPROF_FORCE_MISSING=force)
    prof = subprocess.Popen([str(EBPFPROF), "--pid", str(pid), "-r", "1000", "--idle",
                             "-d", str(seconds + 30), "-o", "/dev/null"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while prog_stats(prog)[1] == 0 and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(1)
        ns0, n0 = prog_stats(prog)
        time.sleep(seconds)
        ns1, n1 = prog_stats(prog)
    finally:
        prof.kill()
        w.kill()
        prof.wait()
        w.wait()
    return (ns1 - ns0) / max(n1 - n0, 1), n1 - n0


def main():
    if os.geteuid() != 0:
        sys.exit("bench/fallbacks.py: needs root (BPF, bpf_stats)")
    old = STATS.read_text().strip()
    STATS.write_text("1\n")
    rows = []
    try:
        for label, force in MODES:
            switch = measure("switch_heavy.py", [], PROGS["per switch"], force)
            sample = measure("recurse.py", ["--depth", "300"], PROGS["per sample"], force)
            rows.append((label, switch, sample))
            print(f"{label:18} per switch {switch[0] / 1e3:.2f} us ({switch[1]} runs), "
                  f"per sample at 300 frames {sample[0] / 1e3:.1f} us ({sample[1]} runs)",
                  flush=True)
    finally:
        STATS.write_text(old + "\n")
    write_doc(rows)


def write_doc(rows):
    kernel = os.uname().release
    L = ["## Kernel fallbacks (issue 24)", "",
         f"`bench/fallbacks.py` on {kernel}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
         "the BPF time per program run (kernel.bpf_stats_enabled) with the main paths, and with "
         "every older kernel's mechanism forced (`EBPFPROF_FORCE_MISSING=fallbacks`: the tid "
         "hash for task storage and its hash-map totals, pt_regs from the kernel stack, the "
         "walk in 2-frame global-function calls for bpf_loop, probe reads for the current task). "
         "Per switch: the sched_switch program over every switch of the machine while "
         "`switch_heavy.py` runs (most are of other threads and return at once); per sample: "
         "the perf_event program at 1000 Hz on a 300-frame stack (`recurse.py`).", "",
         "| paths | BPF per switch | BPF per sample (300 frames) |", "|---|---|---|"]
    for label, switch, sample in rows:
        L.append(f"| {label} | {switch[0] / 1e3:.2f} us | {sample[0] / 1e3:.1f} us |")
    L.append("")
    doc = DOC.read_text() if DOC.exists() else ""
    doc = re.sub(r"\n## Kernel fallbacks \(issue 24\)\n.*?(?=\n## |\Z)", "\n", doc, flags=re.S)
    DOC.write_text(doc.rstrip("\n") + "\n\n" + "\n".join(L))


if __name__ == "__main__":
    main()
