"""The node agent's cost (issue 33, docs/benchmarks.md): one `ebpfprof
--match` recording N processes in one BPF session, for N = 1, 8 and 32,
against 8 separate `ebpfprof --pid` recordings of 8 processes. The targets
are Debian's python3.11 each busy ~10% of a CPU (5 ms of work, 45 ms asleep),
so 32 of them do not saturate the 2 CPUs. Each recording runs --seconds;
its CPU is user + system time from wait4() at its exit (the BPF programs
run in the targets and are charged there), its memory the peak RSS
(ru_maxrss) and its BPF maps' memory (the memlock of each map descriptor
in /proc/PID/fdinfo, read half-way through: what the kernel charges to
the recording's memory cgroup besides its RSS); the 8 separate recordings
are summed. Medians over --reps,
every configuration once per round, so the ratios come from one run.

    sudo python3 bench/agent_scale.py --reps 3 --seconds 10
"""
import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
EBPFPROF = HERE.parent / "ebpfprof"
PY = "/usr/bin/python3.11"
TARGET = ("import time\n"
          "while True:\n"
          "    end = time.monotonic() + 0.005\n"
          "    while time.monotonic() < end: pass\n"
          "    time.sleep(0.045)\n")


def targets(n, marker):
    procs = [subprocess.Popen([PY, "-c", TARGET, marker]) for _ in range(n)]
    time.sleep(1)		# their interpreters initialised
    return procs


def map_mib(pid):
    """The memlock of the BPF maps process pid holds a descriptor of."""
    total = 0
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            info = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
        except OSError:
            continue
        if "\nmap_type:" in "\n" + info:
            total += int(info.split("memlock:")[1].split()[0])
    return total / 2**20


def waited(procs, seconds):
    """(CPU seconds, peak RSS MiB, BPF map MiB) summed over the recordings
    procs, each reaped."""
    time.sleep(seconds / 2)
    maps = sum(map_mib(p.pid) for p in procs)
    cpu = rss = 0.0
    for p in procs:
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            raise SystemExit(f"a recording failed: {p.args}")
        cpu += ru.ru_utime + ru.ru_stime
        rss += ru.ru_maxrss / 1024
    return cpu, rss, maps


def one_session(n, seconds, out):
    marker = f"agent-scale-{os.getpid()}-{n}"
    procs = targets(n, marker)
    try:
        rec = subprocess.Popen([str(EBPFPROF), "--match", marker, "--max-processes", str(n),
                                "-d", str(seconds), "-o", out], stderr=subprocess.DEVNULL)
        return waited([rec], seconds)
    finally:
        for p in procs:
            p.kill()
            p.wait()


def separate(n, seconds, out):
    procs = targets(n, f"agent-scale-{os.getpid()}-sep")
    try:
        recs = [subprocess.Popen([str(EBPFPROF), "--pid", str(p.pid), "-d", str(seconds),
                                  "-o", f"{out}/sep-{p.pid}.json"], stderr=subprocess.DEVNULL)
                for p in procs]
        return waited(recs, seconds)
    finally:
        for p in procs:
            p.kill()
            p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=10)
    args = ap.parse_args()
    configs = [("one session, 1 process", lambda o: one_session(1, args.seconds, o)),
               ("one session, 8 processes", lambda o: one_session(8, args.seconds, o)),
               ("one session, 32 processes", lambda o: one_session(32, args.seconds, o)),
               ("8 separate recordings", lambda o: separate(8, args.seconds, o))]
    got = {name: [] for name, _ in configs}
    for rep in range(args.reps):
        for name, run in configs:
            with tempfile.TemporaryDirectory() as out:
                got[name].append(run(out))
            cpu, rss, maps = got[name][-1]
            print(f"round {rep + 1} {name}: {cpu:.2f} s CPU, {rss:.1f} MiB RSS, "
                  f"{maps:.1f} MiB maps", flush=True)
    sep = [statistics.median(x[i] for x in got["8 separate recordings"]) for i in range(3)]
    print(f"\n{args.seconds:g} s recordings, medians of {args.reps}\n")
    print("| recording | CPU s | / 8 separate | peak RSS MiB | / 8 separate | BPF maps MiB | / 8 separate |")
    print("|---|---|---|---|---|---|---|")
    for name, _ in configs:
        med = [statistics.median(x[i] for x in got[name]) for i in range(3)]
        print(f"| {name} | " + " | ".join(f"{m:.{2 if i == 0 else 1}f} | {m / s:.2f}"
                                         for i, (m, s) in enumerate(zip(med, sep))) + " |")


if __name__ == "__main__":
    main()
