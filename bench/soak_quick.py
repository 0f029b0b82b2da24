"""Quick memory-growth probe (the soak test in two minutes): records
tests/workloads/switch_heavy.py for -d 100 s at the default rate and reads
ebpfprof's RssAnon every 10 s from 20 s on; prints the growth per hour
(least-squares slope) and ebpfprof's CPU use over the same span, so a fix can be compared before the 11-minute soak.
Usage: bench/soak_quick.py [--binary ./ebpfprof] [--duration 100]"""
import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rss_anon_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    raise RuntimeError("no RssAnon")


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def slope_per_hour(points):
    n = len(points)
    mt = sum(t for t, _ in points) / n
    mv = sum(v for _, v in points) / n
    num = sum((t - mt) * (v - mv) for t, v in points)
    den = sum((t - mt) ** 2 for t, _ in points)
    return num / den * 3600


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(ROOT, "ebpfprof"))
    ap.add_argument("--duration", type=int, default=100)
    args = ap.parse_args()
    target = subprocess.Popen(["/usr/bin/python3.11", os.path.join(ROOT, "tests/workloads/switch_heavy.py"),
                               "--seconds", str(args.duration + 40)], stderr=subprocess.PIPE, text=True)
    line = target.stderr.readline()
    pid = int(line.strip().split("=")[1])
    time.sleep(1)
    prof = subprocess.Popen([args.binary, "--pid", str(pid), "-d", str(args.duration), "-o", "/tmp/soak_quick.json"])
    t0 = time.monotonic()
    points, cpu = [], []
    try:
        while prof.poll() is None:
            t = time.monotonic() - t0
            if t >= 20 and (not points or t - points[-1][0] >= 10):
                kib = rss_anon_kib(prof.pid)
                points.append((t, kib))
                cpu.append((t, cpu_s(prof.pid)))
                print(f"t={t:5.1f}s RssAnon={kib} KiB", flush=True)
            time.sleep(0.5)
            if t > args.duration - 5:
                break
        if len(points) >= 2:
            mib_h = slope_per_hour(points) / 1024
            print(f"growth: {mib_h:.1f} MiB/h ({(points[-1][1] - points[0][1]) / 1024:.1f} MiB in "
                  f"{points[-1][0] - points[0][0]:.0f} s), ebpfprof CPU "
                  f"{100 * (cpu[-1][1] - cpu[0][1]) / (cpu[-1][0] - cpu[0][0]):.1f}% of a CPU")
        prof.wait(timeout=120)
        print("ebpfprof exit", prof.returncode)
    finally:
        if prof.poll() is None:
            prof.kill()
        target.kill()
        target.wait()


if __name__ == "__main__":
    sys.exit(main())
