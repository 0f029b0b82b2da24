"""What issue 23's sampling and on-CPU accounting cost, against ebpfprof as
it was before (commit 7767610: a fixed cpu-clock period, off-CPU totals only).
Each figure is measured with both binaries in turn, in alternating order,
ROUNDS times; the table shows medians.

  per tick:   the perf_event program's BPF time per run (kernel.bpf_stats_enabled)
              at 1000 Hz on a CPU-bound 1-frame target (tests/workloads/recurse.py
              --depth 1): the walk is short, so the tick_weight map lookup shows
  re-arm:     the PERF_EVENT_IOC_PERIOD ioctl's cost (timed here on a cpu-clock
              event per CPU, as the drain loop re-arms them) times the ioctls a
              second the drain loop makes (rearm_per_s)
  per switch: the sched_switch program's BPF time per run while
              tests/workloads/switch_heavy.py ping-pongs (four pairs of threads)
  profiler:   the recording process's own CPU (utime + stime) over the same
              windows, which holds the drain loop: the re-arms, the totals

Only the programs of the profiler started here are counted (their ids from
its /proc/PID/fdinfo), whatever else runs BPF on the machine. The base binary
is built once from `git archive 7767610` into build/bench/ (a minute or two)
unless --base names one. Run as root (scripts/bench.sh runs it); prints the
table and puts it into docs/benchmarks.md as the section "Sampling and exact
on-CPU time". --quick: 1 round of 2 s windows."""
import argparse
import fcntl
import os
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bare_clock import open_clock
from base_build import build_at
from bpfprogs import owned_prog_ids, prog_stats

ROOT = Path(__file__).resolve().parents[1]
NEW = ROOT / "ebpfprof"
BASE_COMMIT = "7767610"
BASE = ROOT / "build" / "bench" / f"ebpfprof-{BASE_COMMIT}"
PY = "/usr/bin/python3.11"
STATS = Path("/proc/sys/kernel/bpf_stats_enabled")
DOC = ROOT / "docs" / "benchmarks.md"
TITLE = "## Sampling and exact on-CPU time (issue 23)"
DRAIN_S = 0.050                 # EP_DRAIN_MS: the drain loop re-arms at most once a drain
PERF_EVENT_IOC_PERIOD = 0x40082404      # _IOW('$', 4, __u64)


def build_base():
    """The binary before issue 23."""
    return build_at(BASE_COMMIT, BASE, "sampling")


def cpu_s(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(binary, workload, wargs, prog, rate, seconds, extra=()):
    """(BPF ns per run, runs, profiler CPU s per s) over `seconds`. The run
    statistics are the kernel's, global: another run of a benchmark on a
    shared machine may turn them off meanwhile (restoring what it found),
    and a window that saw them off is measured again."""
    for _ in range(5):
        STATS.write_text("1\n")
        got = measure_once(binary, workload, wargs, prog, rate, seconds, extra)
        if got and STATS.read_text().strip() == "1":
            return got
    sys.exit("sampling: kernel.bpf_stats_enabled keeps being turned off (another benchmark?)")


def measure_once(binary, workload, wargs, prog, rate, seconds, extra=()):
    w = subprocess.Popen([PY, str(ROOT / "tests" / "workloads" / workload), "--seconds", "120",
                          *wargs], stderr=subprocess.PIPE, text=True)
    pid = int(w.stderr.readline().strip().split("=")[1])
    out = tempfile.NamedTemporaryFile(prefix="ebpfprof-bench-", suffix=".json")
    prof = subprocess.Popen([str(binary), "--pid", str(pid), "-r", str(rate),
                             "-d", str(seconds + 60), "-o", out.name, *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline, ids = time.monotonic() + 60, set()
        while not (ids and prog_stats(ids, prog)[1]):
            if prof.poll() is not None:
                sys.exit(f"sampling: {binary} did not start: {prof.stderr.read()[-300:]}")
            if time.monotonic() > deadline or STATS.read_text().strip() != "1":
                return None
            ids = owned_prog_ids(prof.pid)
            time.sleep(0.3)
        time.sleep(1)
        ns0, n0 = prog_stats(ids, prog)
        c0, t0 = cpu_s(prof.pid), time.monotonic()
        time.sleep(seconds)
        ns1, n1 = prog_stats(ids, prog)
        c1, t1 = cpu_s(prof.pid), time.monotonic()
    finally:
        prof.kill()
        w.kill()
        prof.wait()
        w.wait()
        out.close()
    return (ns1 - ns0) / max(n1 - n0, 1), n1 - n0, (c1 - c0) / (t1 - t0)


def ioctl_cost(calls=2000):
    """Seconds per PERF_EVENT_IOC_PERIOD on a per-CPU cpu-clock event, less
    the same loop's cost with an ioctl the event refuses at once (Python's)."""
    cpus = sorted(os.sched_getaffinity(0))
    fds = [open_clock(-1, 100, cpu) for cpu in cpus]
    period = struct.pack("=Q", 10_000_000)
    try:
        def loop(request):
            t = time.perf_counter()
            for i in range(calls):
                try:
                    fcntl.ioctl(fds[i % len(fds)], request, period)
                except OSError:
                    pass
            return (time.perf_counter() - t) / calls
        runs = [(loop(PERF_EVENT_IOC_PERIOD), loop(0x40082499)) for _ in range(5)]
    finally:
        for fd in fds:
            os.close(fd)
    return max(statistics.median(a - b for a, b in runs), 0.0)


def rearm_per_s(rate, ncpu):
    """The drain loop's ioctls a second (session.c rearm_samplers): every CPU
    (16 at most) once per max(4 mean periods, one drain)."""
    every = max(4.0 / rate, DRAIN_S)
    return min(ncpu, 16) / every


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", help=f"ebpfprof built at {BASE_COMMIT} (default: build it)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/sampling.py: needs root (BPF, bpf_stats, perf events)")
    if args.quick:
        args.rounds, args.seconds = 1, 2
    binaries = {"before (7767610)": Path(args.base) if args.base else build_base(), "now": NEW}
    started, load = time.monotonic(), os.getloadavg()
    old = STATS.read_text().strip()
    STATS.write_text("1\n")
    got = {label: {"tick": [], "switch": [], "cpu_tick": [], "cpu_switch": []}
           for label in binaries}
    try:
        for r in range(args.rounds):
            order = list(binaries.items())
            for label, binary in (order if r % 2 == 0 else order[::-1]):
                tick = measure(binary, "recurse.py", ["--depth", "1"], "sample_on_cpu", 1000,
                               args.seconds)
                switch = measure(binary, "switch_heavy.py", [], "offcpu_switch", 100,
                                 args.seconds)
                g = got[label]
                g["tick"].append(tick[0])
                g["switch"].append(switch[0])
                g["cpu_tick"].append(tick[2])
                g["cpu_switch"].append(switch[2])
                print(f"round {r + 1} {label:17} per tick {tick[0]:.0f} ns ({tick[1]} runs), "
                      f"per switch {switch[0]:.0f} ns ({switch[1]} runs), profiler CPU "
                      f"{100 * tick[2]:.2f}% / {100 * switch[2]:.2f}%", flush=True)
        ioctl = ioctl_cost()
    finally:
        STATS.write_text(old + "\n")
    ncpu = len(os.sched_getaffinity(0))
    elapsed = time.monotonic() - started
    print(f"re-arm ioctl {ioctl * 1e6:.2f} us; {rearm_per_s(100, ncpu):.0f}/s at 100 Hz on "
          f"{ncpu} CPUs: {ioctl * rearm_per_s(100, ncpu) * 1e6:.0f} us of CPU a second; "
          f"took {elapsed:.0f} s", flush=True)
    if not args.no_doc:
        write_doc(got, ioctl, ncpu, args, elapsed, load)


def spread(values, scale, fmt):
    """The median, and the range of the rounds: on a shared machine the
    range says how far a difference of medians can be trusted."""
    v = [x * scale for x in values]
    med = statistics.median(v)
    return med, f"{fmt.format(med)} ({fmt.format(min(v))}–{fmt.format(max(v))})", v


def overlap(a, b):
    return max(min(a), min(b)) <= min(max(a), max(b))


def write_doc(got, ioctl, ncpu, args, elapsed, load):
    before, now = got["before (7767610)"], got["now"]
    L = [TITLE, "",
         f"`bench/sampling.py` on {os.uname().release}, {ncpu} CPUs, "
         f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {args.rounds} rounds of "
         f"{args.seconds:g} s windows per binary, alternating, medians ({elapsed:.0f} s in all, the base binary already built). "
         "Against ebpfprof before issue 23 (commit 7767610: one fixed cpu-clock period, "
         "off-CPU totals only). BPF time per program run from kernel.bpf_stats_enabled, "
         "counting only the programs of the profiler under test. Per tick: the perf_event "
         "program at 1000 Hz on a 1-frame CPU-bound target (`recurse.py --depth 1`), where the "
         "`tick_weight` lookup is a visible part of a short walk. Per switch: the sched_switch "
         "program while `switch_heavy.py` ping-pongs (four pairs), every switch of the machine "
         "counted (most of them the pairs'); now it also notes the switch-in time and adds the "
         "run to the thread's on-CPU total. Profiler CPU: the recording process's own CPU "
         "(the drain loop: the re-arms, the totals), in % of one CPU, read in clock ticks "
         f"({100 / (os.sysconf('SC_CLK_TCK') * args.seconds):.2f}% steps). Each cell: the "
         "median (the rounds' range). Load average "
         f"{load[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end: where it is well "
         "over the CPUs (a shared machine, other work running), a difference whose ranges "
         "overlap is that work's noise, not ebpfprof's.", "",
         "| | before (7767610) | now | difference |", "|---|---|---|---|"]
    for key, what, unit, scale in (("tick", "BPF per tick (1 frame, 1000 Hz)", "ns", 1),
                                   ("switch", "BPF per switch (ping-pong)", "ns", 1),
                                   ("cpu_tick", "profiler CPU, CPU-bound target 1000 Hz", "%", 100),
                                   ("cpu_switch", "profiler CPU, ping-pong 100 Hz", "%", 100)):
        fmt = "{:.0f}" if unit == "ns" else "{:.2f}"
        (b, bs, bv), (n, ns, nv) = spread(before[key], scale, fmt), spread(now[key], scale, fmt)
        noise = " (ranges overlap: noise)" if overlap(bv, nv) else ""
        L.append(f"| {what} | {bs} {unit} | {ns} {unit} | "
                 f"{'+' if n >= b else ''}{fmt.format(n - b)} {unit}{noise} |")
    per_s = rearm_per_s(100, ncpu)
    L += ["",
          f"The re-arm: one `PERF_EVENT_IOC_PERIOD` ioctl costs {ioctl * 1e6:.2f} us here "
          "(timed on a cpu-clock event per CPU, less the same loop with an ioctl refused at "
          f"once); the drain loop makes {per_s:.0f} a second at 100 Hz on {ncpu} CPUs (each CPU "
          "once per max(4 mean periods, one 50 ms drain), 16 CPUs at most per drain), "
          f"{ioctl * per_s * 1e6:.0f} us of CPU a second, "
          f"{100 * ioctl * per_s:.3f}% of one CPU; at most {ioctl * 320 * 1e6:.0f} us a second "
          "on 16 CPUs or more.", ""]
    doc = DOC.read_text() if DOC.exists() else ""
    doc = re.sub(r"\n" + re.escape(TITLE) + r"\n.*?(?=\n## |\Z)", "\n", doc, flags=re.S)
    DOC.write_text(doc.rstrip("\n") + "\n\n" + "\n".join(L))


if __name__ == "__main__":
    main()
