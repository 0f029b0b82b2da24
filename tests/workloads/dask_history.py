"""Runs of one workload on a distributed.LocalCluster (2 worker processes,
1 thread each), each profiled by ebpfprof_dask.profile(history=SERIES) and
stored as a run of SERIES in the history database (issue 47). A run: the
prefix crunch (pure-Python CPU, ~6 ms a task), then the prefix churn (the same
CPU and cyclic garbage: --garbage times 30 rounds of 200 cycles, each a list
of 64 slots the collector walks: ~15% of the task's time in collections,
~25% with twice the garbage), a fixed number of tasks each, so that runs compare. The phases do not overlap and a
worker has one task thread: a collection churn's garbage sets off is
churn's, never another prefix's wait. Between runs, outside the
recordings, every process collects, so a run starts with no garbage of the
one before. With --changed-after N, the runs from the N-th on make
--garbage times churn's garbage, and after N runs the workload writes
--paused and waits for --go (the harness checks the series then). Writes
each run's number and the versions to --truth."""
import gc
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402

TASKS = 64      # per prefix and run
# after profile() returned, before the work: each start returned on its
# ebpfprof's -v "recording" line by then, and this margin is kept on top; that
# every recording began before the work is checked after each run (covered)
SETTLE_S = 0.3


def work():
    acc = 0
    for k in range(200000):
        acc ^= (k * 31) % 11
    return acc


def crunch(i):
    return work()


def churn(i, garbage):
    acc = work()
    for _ in range(int(30 * garbage)):
        junk = []
        for _ in range(200):
            a = [None] * 64     # a cycle the collector walks 64 slots of
            a[0] = a
            junk.append(a)
        del junk
    return acc


def covered(results, start, end):
    """How long before start the last of the recordings began (seconds);
    AssertionError unless every recording (the scheduler's and each
    worker's: their GC logs' session records, CLOCK_MONOTONIC as
    time.monotonic()) spans start to end: a run is all of its work."""
    spans = [(p["monotonic_start_s"], p["monotonic_start_s"] + p["recorded_s"]) for p in results]
    assert len(spans) == 3 and all(b <= start and e >= end for b, e in spans), (start, end, spans)
    return start - max(b for b, _ in spans)


def one_run(client, garbage):
    client.gather(client.map(crunch, range(TASKS), pure=False))
    client.gather(client.map(churn, range(TASKS), [garbage] * TASKS, pure=False))


def main():
    args = common.parse({"--runs": {"type": int, "required": True},
                         "--garbage": {"type": float, "default": 1.0},
                         "--changed-after": {"type": int, "default": 0},
                         "--paused": {},
                         "--series": {"required": True}, "--db": {"required": True},
                         "--out": {"required": True}, "--command": {"required": True},
                         "--tag": {"action": "append", "default": []}})
    import dask
    import distributed
    from distributed import Client, LocalCluster

    import ebpfprof_dask

    command = json.loads(args.command)
    runs = []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=40) as cluster, Client(cluster) as client:
        client.wait_for_workers(2, timeout=120)
        one_run(client, 1)     # imports, pickling: once, not in a run
        for i in range(args.runs):
            if i == args.changed_after and args.paused:
                with open(args.paused, "w") as f:
                    json.dump(runs, f)
                common.wait_for_go(args)
            began = time.monotonic()
            client.run(gc.collect)
            gc.collect()
            # ~1000 Hz: a prefix's on-CPU and GC time are sampled (at 500 Hz
            # churn's GC share moved by 0.03 between runs from sampling alone)
            with ebpfprof_dask.profile(client, os.path.join(args.out, f"run{i}"), command=command,
                                       options=["-r", "999"], history=args.series, history_db=args.db,
                                       tags=args.tag) as session:
                time.sleep(SETTLE_S)
                t0 = time.monotonic()
                one_run(client, args.garbage if i >= args.changed_after else 1)
                took = time.monotonic() - t0
            errors = [p for p in session.results if "error" in p]
            assert not errors, errors
            margin = covered(session.results, t0, t0 + took)
            runs.append({"run": session.history_run, "work_s": took, "margin_s": margin,
                         "run_s": time.monotonic() - began})
            print(f"run #{session.history_run}: {took:.2f} s of work in {runs[-1]['run_s']:.2f} s, the last "
                  f"recording began {margin:.2f} s before it", file=sys.stderr, flush=True)
    common.write_truth(args, {"runs": runs, "dask": dask.__version__,
                              "distributed": distributed.__version__})


if __name__ == "__main__":
    main()
