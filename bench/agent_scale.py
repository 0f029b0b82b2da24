"""The node agent's cost (issue 33, docs/benchmarks.md): one `ebpfprof
--match` recording N processes in one BPF session, for N = 1, 8 and 32,
against 8 separate `ebpfprof --pid` recordings of 8 processes. The targets
are Debian's python3.11 each busy ~10% of a CPU (5 ms of work, 45 ms asleep),
so 32 of them do not saturate the 2 CPUs. Each recording runs --seconds;
its CPU is user + system time from wait4() at its exit (the BPF programs
run in the targets and are charged there), its memory the peak RSS
(ru_maxrss); the 8 separate recordings are summed. Medians over --reps,
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


def waited(procs):
    """(CPU seconds, peak RSS MiB) summed over the recordings procs, each reaped."""
    cpu = rss = 0.0
    for p in procs:
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            raise SystemExit(f"a recording failed: {p.args}")
        cpu += ru.ru_utime + ru.ru_stime
        rss += ru.ru_maxrss / 1024
    return cpu, rss


def one_session(n, seconds, out):
    marker = f"agent-scale-{os.getpid()}-{n}"
    procs = targets(n, marker)
    try:
        rec = subprocess.Popen([str(EBPFPROF), "--match", marker, "--max-processes", str(n),
                                "-d", str(seconds), "-o", out], stderr=subprocess.DEVNULL)
        return waited([rec])
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
        return waited(recs)
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
            print(f"round {rep + 1} {name}: {got[name][-1][0]:.2f} s CPU, "
                  f"{got[name][-1][1]:.1f} MiB", flush=True)
    sep_cpu = statistics.median(c for c, _ in got["8 separate recordings"])
    sep_rss = statistics.median(r for _, r in got["8 separate recordings"])
    print(f"\n{args.seconds:g} s recordings, medians of {args.reps}\n")
    print("| recording | CPU s | CPU / 8 separate | peak RSS MiB | RSS / 8 separate |")
    print("|---|---|---|---|---|")
    for name, _ in configs:
        cpu = statistics.median(c for c, _ in got[name])
        rss = statistics.median(r for _, r in got[name])
        print(f"| {name} | {cpu:.2f} | {cpu / sep_cpu:.2f} | {rss:.1f} | {rss / sep_rss:.2f} |")


if __name__ == "__main__":
    main()
