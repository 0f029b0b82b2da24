"""ebpfprof next to CPython 3.15's own sampling profiler (profiling.sampling,
"Tachyon"), on one 3.15 workload with a known split (issue 20).

    sudo python3 bench/peer_315.py [--reps 3] [--seconds 5] [--chroot DIR]

The target is Debian sid's python3.15 in the chroot scripts/make-chroots.sh
builds; this file is also the target (run with --target): one thread
alternating between crunch_a() and crunch_b() of tests/workloads/two_hot.py,
the same body called with twice the rounds in crunch_a, each call timed with time.thread_time(). It
warms up until the harness creates its go file (the profiler attaches in the
meantime), then measures for --seconds: the CPU time of each function (the
truth the profiles' shares are held against) and the work done per wall
second (its throughput).

Each repetition runs every configuration once, in a rotated order, so a load
from other jobs on the machine falls on all of them alike: no profiler,
ebpfprof at its default rate and at 1 kHz, Tachyon attached at its default
rate (which is 1 kHz) and at 10 kHz. Tachyon runs on the host with the
chroot's own loader and libraries: the target's /proc/PID/maps names its
files by their host paths (a chroot is not a mount namespace), which Tachyon
opens to find the PyRuntime section, so run inside the chroot it fails with
"Failed to find the PyRuntime section". The profiler's CPU time and peak RSS
come from wait4() of its process. ebpfprof's BPF programs run in the
target's context: their cost shows in the target's slowdown, not in
ebpfprof's CPU time."""
import argparse
import datetime
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROUNDS = {"crunch_a": 6000, "crunch_b": 3000}


# ---- the target (runs under python3.15 in the chroot) ----

def target(go, seconds, result):
    # the functions of tests/workloads/two_hot.py, copied next to this file
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from two_hot import crunch_a, crunch_b
    print(f"pid={os.getpid()}", file=sys.stderr, flush=True)
    calls = (("crunch_a", crunch_a), ("crunch_b", crunch_b))
    while not os.path.exists(go):
        for name, fn in calls:
            fn(ROUNDS[name])
    spent = dict.fromkeys(ROUNDS, 0.0)
    iterations = 0
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while time.perf_counter() < deadline:
        for name, fn in calls:
            t = time.thread_time()
            fn(ROUNDS[name])
            spent[name] += time.thread_time() - t
            iterations += ROUNDS[name]
    wall = time.perf_counter() - t0
    with open(result + ".tmp", "w") as f:
        json.dump({"cpu": spent, "iterations": iterations, "wall": wall}, f)
    os.replace(result + ".tmp", result)


# ---- the harness (runs as root on the host) ----

def configurations(chroot):
    ebpfprof = str(ROOT / "ebpfprof")
    py315 = [str(chroot / "lib64" / "ld-linux-x86-64.so.2"), "--library-path",
             str(chroot / "usr" / "lib" / "x86_64-linux-gnu"), str(chroot / "usr" / "bin" / "python3.15"),
             "-m", "profiling.sampling", "attach", "--collapsed"]
    return [
        ("no profiler", None),
        ("ebpfprof --pid (default 100 Hz)", lambda pid, out: [ebpfprof, "--pid", pid, "-f", "collapsed", "-o", out]),
        ("ebpfprof --pid -r 1000", lambda pid, out: [ebpfprof, "--pid", pid, "-r", "1000", "-f", "collapsed",
                                                     "-o", out]),
        ("Tachyon attach (default 1 kHz)", lambda pid, out: py315 + ["-o", out, pid]),
        ("Tachyon attach -r 10khz", lambda pid, out: py315 + ["-r", "10khz", "-o", out, pid]),
    ]


def shares(collapsed):
    """crunch_a's share of the weight of stacks under crunch_a or crunch_b."""
    weight = dict.fromkeys(ROUNDS, 0)
    for line in Path(collapsed).read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        for name in ROUNDS:
            if name in stack:
                weight[name] += int(count)
    total = sum(weight.values())
    return (weight["crunch_a"] / total if total else float("nan")), total


def reap(proc, timeout):
    """wait4() the profiler: (exit status, rusage); SIGINT if it overstays."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage
        if time.monotonic() > deadline:
            proc.send_signal(signal.SIGINT)
            deadline = time.monotonic() + 30
        time.sleep(0.05)


def run_once(chroot, name, command, seconds, work):
    go, result = work / "go", work / "result"
    inside = Path("/") / work.relative_to(chroot)
    for f in (go, result):
        f.unlink(missing_ok=True)
    target_proc = subprocess.Popen(["chroot", str(chroot), "python3.15", str(inside / "peer_315.py"),
                                    "--target", str(inside / "go"), str(seconds), str(inside / "result")],
                                   stderr=subprocess.PIPE, text=True)
    line = target_proc.stderr.readline()
    if not line.startswith("pid="):
        target_proc.kill()
        sys.exit(f"peer_315: the target did not start: {line!r}")
    pid = line.strip()[4:]
    prof, out = None, work / "profile.txt"
    out.unlink(missing_ok=True)
    if command:
        prof = subprocess.Popen(command(pid, str(out)), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.5)  # attach (ebpfprof loads its BPF programs); the target warms up meanwhile
    go.write_text("go")
    target_proc.wait(timeout=seconds + 60)
    row = {"config": name}
    row.update(json.loads(result.read_text()))
    if prof:
        code, usage = reap(prof, seconds + 30)
        err = prof.stderr.read().decode(errors="replace")
        if code != 0 or not out.exists():
            sys.exit(f"peer_315: {name} failed ({code}): {err.strip()[-400:]}")
        row["share"], row["weight"] = shares(out)
        row["prof_cpu"] = usage.ru_utime + usage.ru_stime
        row["prof_rss_mb"] = usage.ru_maxrss / 1024
    return row


def summarise(rows, names, reps):
    base = {r["rep"]: r for r in rows if r["config"] == names[0]}
    print("| profiler | crunch_a share (profile) | truth (thread_time) | target throughput vs none "
          "| target CPU per iteration vs none | profiler CPU | profiler max RSS |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name in names:
        mine = [r for r in rows if r["config"] == name]
        truth = statistics.median(r["cpu"]["crunch_a"] / sum(r["cpu"].values()) for r in mine)
        thr = statistics.median((r["iterations"] / r["wall"]) / (base[r["rep"]]["iterations"] / base[r["rep"]]["wall"])
                                for r in mine)
        cpi = statistics.median((sum(r["cpu"].values()) / r["iterations"])
                                / (sum(base[r["rep"]]["cpu"].values()) / base[r["rep"]]["iterations"])
                                for r in mine)
        if "share" in mine[0]:
            share = statistics.median(r["share"] for r in mine)
            weight = statistics.median(r["weight"] for r in mine)
            cpu = statistics.median(r["prof_cpu"] for r in mine)
            rss = max(r["prof_rss_mb"] for r in mine)
            cells = [f"{share:.3f} ({weight:.0f} samples)", f"{truth:.3f}", f"{thr:.3f}", f"{cpi:.3f}",
                     f"{cpu:.2f} s", f"{rss:.0f} MB"]
        else:
            cells = ["–", f"{truth:.3f}", "1", "1", "–", "–"]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"\nmedians of {reps} interleaved runs; throughput = the target's iterations per wall second in its "
          "measured window, over the no-profiler run of the same repetition; profiler CPU = user+sys of the "
          "whole profiler process (attach to exit); max RSS the highest of the runs")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--target":
        target(sys.argv[2], float(sys.argv[3]), sys.argv[4])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--chroot", type=Path, default=Path(os.environ.get("EBPFPROF_CHROOTS",
                                                                       "/var/cache/ebpfprof/chroots")) / "sid")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("peer_315: needs root (BPF, and reading the target's memory)")
    for need in (ROOT / "ebpfprof", args.chroot / "usr" / "bin" / "python3.15",
                 args.chroot / "lib64" / "ld-linux-x86-64.so.2"):
        if not need.exists():
            sys.exit(f"peer_315: {need} is missing (make; scripts/make-chroots.sh)")
    configs = configurations(args.chroot)
    names = [n for n, _ in configs]
    work = Path(tempfile.mkdtemp(prefix="peer315-", dir=args.chroot / "tmp"))
    for f in (Path(__file__), ROOT / "tests" / "workloads" / "two_hot.py", ROOT / "tests" / "workloads" / "common.py"):
        shutil.copy(f, work / f.name)
    print(f"# {datetime.datetime.now().isoformat(timespec='minutes')}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f} at start", flush=True)
    rows = []
    try:
        for rep in range(args.reps):
            for k in range(len(configs)):
                name, command = configs[(k + rep) % len(configs)]
                row = run_once(args.chroot, name, command, args.seconds, work)
                row["rep"] = rep
                rows.append(row)
                print(f"  rep {rep} {name}: " + (f"share {row['share']:.3f}, " if "share" in row else "")
                      + f"{row['iterations'] / row['wall'] / 1e6:.2f} M iterations/s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"# load average {os.getloadavg()[0]:.2f} at the end\n")
    summarise(rows, names, args.reps)


if __name__ == "__main__":
    main()
