"""Shared by the benchmark workloads: the pid handshake, the phases, timing.

A workload prints pid=N on stderr first and warms up. Then it runs --phases
phases, each the same FIXED amount of work: for phase K it waits for the file
go-K in --dir (the harness creates it once it has attached the profiler, or
at once for an unprofiled phase), does the work, timing it itself, and writes
what it measured to result-K.json. After the last phase it waits for the file
release, so the harness can still read the profiler's counters while the
target is alive, and exits. Comparing phases of one process, adjacent in time,
takes out most of what differs between processes on a busy machine."""
import argparse
import json
import os
import resource
import statistics
import sys
import time


def parse(extra=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", help="control directory: go-K, result-K.json, release")
    ap.add_argument("--phases", type=int, default=1)
    for name, kw in (extra or {}).items():
        ap.add_argument(name, **kw)
    args = ap.parse_args()
    print(f"pid={os.getpid()}", file=sys.stderr, flush=True)
    return args


def wait_file(path, timeout=300.0):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            sys.exit(f"{path} did not appear in {timeout:.0f} s")
        time.sleep(0.005)


def write_json(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def run_phases(args, work):
    """Calls work() once per phase, between the harness's go and result files;
    work returns a dict of measurements."""
    for k in range(args.phases):
        if args.dir:
            wait_file(os.path.join(args.dir, f"go-{k}"))
        result = work()
        result["pid"] = os.getpid()
        if args.dir:
            write_json(os.path.join(args.dir, f"result-{k}.json"), result)
        else:
            print(json.dumps(result))
    if args.dir:
        wait_file(os.path.join(args.dir, "release"))


def context_switches():
    """Voluntary and involuntary context switches of this process, every
    thread, exited ones included (getrusage)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_nvcsw, ru.ru_nivcsw


class Timed:
    """Times a block: wall and process CPU time (and its user/system split,
    sampled at the tick), and context switches."""

    def __enter__(self):
        self.r0 = resource.getrusage(resource.RUSAGE_SELF)
        self.t0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.t1, self.c1 = time.perf_counter(), time.process_time()
        self.r1 = resource.getrusage(resource.RUSAGE_SELF)

    def result(self, **more):
        r0, r1 = self.r0, self.r1
        return {"seconds": self.t1 - self.t0, "cpu_seconds": self.c1 - self.c0,
                "user_seconds": r1.ru_utime - r0.ru_utime, "sys_seconds": r1.ru_stime - r0.ru_stime,
                "voluntary": r1.ru_nvcsw - r0.ru_nvcsw, "involuntary": r1.ru_nivcsw - r0.ru_nivcsw,
                **more}


class Units:
    """Wall time of each unit of work (one call, one collection cycle, one round
    trip). On a busy machine a unit during which the process was descheduled
    takes a time slice longer; those are left out of the undisturbed mean, which
    keeps what the profiler adds in the process's own context (BPF programs,
    traps, interrupts) and drops what other jobs do to it. The profiler's own
    preemptions are dropped too: the whole-phase times keep those."""

    def __init__(self):
        self.stamps = []
        self.tick = self.stamps.append       # call with time.perf_counter()

    def summary(self):
        d = [b - a for a, b in zip(self.stamps, self.stamps[1:])]
        if not d:
            return {}
        median = statistics.median(d)
        cutoff = 1.5 * median + 200e-6
        kept = [x for x in d if x <= cutoff]
        return {"units": len(d), "unit_median_us": median * 1e6,
                "unit_mean_us": sum(d) / len(d) * 1e6,
                "undisturbed_mean_us": sum(kept) / len(kept) * 1e6,
                "undisturbed_units": len(kept), "cutoff_us": cutoff * 1e6}
