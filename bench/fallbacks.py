"""The BPF cost of the older kernels' mechanisms (issue 24), measured on this
kernel: each fallback forced with EBPFPROF_FORCE_MISSING=fallbacks, next to
the main paths, with kernel.bpf_stats_enabled's run time of the programs of
the one ebpfprof session measured (other sessions on the machine load the
same names), over the target's events its summary counts:

  per switch: tests/workloads/switch_heavy.py (four ping-pong pairs), the
              sched_switch program's time over the target's switch-ins
  per sample: tests/workloads/recurse.py --depth 300 at 1000 Hz, the
              perf_event program's time over the samples recorded

Both charge the target with the runs for other tasks (which return at once).
Medians of REPS alternating runs; about 2 minutes. Run as root (scripts/bench.sh runs it after bench/run.py); prints the table
and puts it into docs/benchmarks.md as the section "Kernel fallbacks"."""
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bpfprogs import owned_prog_ids, prog_stats

ROOT = Path(__file__).resolve().parents[1]
EBPFPROF = ROOT / "ebpfprof"
PY = "/usr/bin/python3.11"
STATS = Path("/proc/sys/kernel/bpf_stats_enabled")
DOC = ROOT / "docs" / "benchmarks.md"
MODES = (("main paths", ""), ("fallbacks forced", "fallbacks"))
REPS = 3
PROGS = {"per switch": "offcpu_switch", "per sample": "sample_on_cpu"}


def prog_stats_of(prefix, owner):
    """(run_time_ns, run_cnt) summed over owner's loaded programs named prefix*."""
    return prog_stats(owned_prog_ids(owner), prefix)


def measure(workload, wargs, prog, force, events, seconds=6):
    """prog's BPF time under ebpfprof --pid on the workload: (time per run in
    a steady window of `seconds`, runs in it, time per event of the target:
    all of prog's time from its load to the end, over the target's events
    that ebpfprof's summary counts (the regex events), so that the runs for
    other tasks are charged too)."""
    w = subprocess.Popen([PY, str(ROOT / "tests" / "workloads" / workload), "--seconds", "60",
                          *wargs], stderr=subprocess.PIPE, text=True)
    pid = int(w.stderr.readline().strip().split("=")[1])
    env = dict(os.environ, EBPFPROF_FORCE_MISSING=force)
    err = tempfile.TemporaryFile(mode="w+")
    out = tempfile.TemporaryDirectory()  # ebpfprof writes only regular files
    prof = subprocess.Popen([str(EBPFPROF), "--pid", str(pid), "-r", "1000", "--idle",
                             "-d", str(seconds + 30), "-o", f"{out.name}/profile.json"],
                            env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 60
        while (prog_stats_of(prog, prof.pid)[1] == 0 and prof.poll() is None
               and time.monotonic() < deadline):
            time.sleep(0.5)
        time.sleep(1)
        ns0, n0 = prog_stats_of(prog, prof.pid)
        time.sleep(seconds)
        ns1, n1 = prog_stats_of(prog, prof.pid)
        prof.send_signal(signal.SIGINT)  # its summary counts the samples
        prof.wait(timeout=60)
    finally:
        prof.kill()
        w.kill()
        prof.wait()
        w.wait()
        out.cleanup()
    err.seek(0)
    said = err.read()
    counted = re.search(events, said)
    if n1 <= n0 or not counted:
        sys.exit(f"bench/fallbacks.py: {prog} never ran under {workload}, or ebpfprof wrote "
                 f"no summary (EBPFPROF_FORCE_MISSING={force!r}); ebpfprof said: "
                 f"{said[-600:].strip()}")
    return (ns1 - ns0) / (n1 - n0), n1 - n0, ns1 / max(int(counted.group(1)), 1)


def main():
    if os.geteuid() != 0:
        sys.exit("bench/fallbacks.py: needs root (BPF, bpf_stats)")
    old = STATS.read_text().strip()
    STATS.write_text("1\n")
    runs = {label: ([], []) for label, _ in MODES}
    start, load = time.monotonic(), os.getloadavg()[0]
    try:
        for rep in range(REPS):  # the modes alternate: the machine's drift hits both
            for label, force in MODES:
                switch = measure("switch_heavy.py", [], PROGS["per switch"], force,
                                 r"off-CPU: (\d+) intervals timed")
                sample = measure("recurse.py", ["--depth", "300"], PROGS["per sample"], force,
                                 r"recorded [^:]*: (\d+) samples")
                runs[label][0].append(switch[2])
                runs[label][1].append(sample[2])
                print(f"{rep + 1}/{REPS} {label:18} per switch of the target "
                      f"{switch[2] / 1e3:.2f} us ({switch[0] / 1e3:.2f} us per run of "
                      f"{switch[1]}), per sample at 300 frames {sample[2] / 1e3:.1f} us "
                      f"({sample[0] / 1e3:.1f} us per run of {sample[1]})", flush=True)
    finally:
        STATS.write_text(old + "\n")
    took = time.monotonic() - start
    print(f"took {took:.0f} s")
    write_doc(runs, took, load)


def median_range(values, digits):
    """The median and the range of values (ns), in us."""
    v = sorted(x / 1e3 for x in values)
    return f"{statistics.median(v):.{digits}f} us ({v[0]:.{digits}f}-{v[-1]:.{digits}f})"


def write_doc(runs, took, load):
    busy = (": **the machine was shared** with other jobs, whose work slows the programs' "
            "memory accesses and adds switches: take the figures as an upper bound, the ratio "
            "of the two rows as the finding.")
    kernel = os.uname().release
    L = ["## Kernel fallbacks (issue 24)", "",
         f"`bench/fallbacks.py` on {kernel}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
         "the BPF run time (kernel.bpf_stats_enabled) per event of the target with the main paths, and with "
         "every older kernel's mechanism forced (`EBPFPROF_FORCE_MISSING=fallbacks`: the tid "
         "hash for task storage and its hash-map totals, pt_regs from the kernel stack, the "
         "walk in 2-frame global-function calls for bpf_loop, probe reads for the current task, "
         "the switch without BPF exchanges and no drain iterator). "
         "Per switch: the sched_switch program's whole time while `switch_heavy.py` runs "
         "(four ping-pong pairs) over the target's switches (the intervals the summary counts; "
         "the runs for other tasks' switches, which return at once, charged to them); per "
         "sample: the perf_event program's at 1000 Hz on a 300-frame stack (`recurse.py`) over "
         "the samples recorded (the same for other tasks' ticks). "
         f"Medians of {REPS} runs of each, alternating, and their range. "
         f"The run took {took:.0f} s; the load average was {load:.1f} at its start on "
         f"{os.cpu_count()} CPUs" + (busy if load > os.cpu_count() / 2 else ".") + "", "",
         "| paths | BPF per switch | BPF per sample (300 frames) |", "|---|---|---|"]
    for label, (switch, sample) in runs.items():
        L.append(f"| {label} | {median_range(switch, 2)} | {median_range(sample, 1)} |")
    (main_sw, main_sa), (fb_sw, fb_sa) = runs.values()
    L.append(f"| fallbacks / main | {statistics.median(fb_sw) / statistics.median(main_sw):.2f} "
             f"| {statistics.median(fb_sa) / statistics.median(main_sa):.2f} |")
    L.append("")
    doc = DOC.read_text() if DOC.exists() else ""
    doc = re.sub(r"\n## Kernel fallbacks \(issue 24\)\n.*?(?=\n## |\Z)", "\n", doc, flags=re.S)
    DOC.write_text(doc.rstrip("\n") + "\n\n" + "\n".join(L))


if __name__ == "__main__":
    main()
