"""A distributed.LocalCluster (2 worker processes, 2 threads each) running
three task prefixes of known cost for --dask: crunch (pure-Python CPU,
~15 ms), garbage (cyclic garbage, so collections, ~15 ms), nap (sleeps 20 ms).
Tasks of some length: the task runner's own work per task (apply_function
around the function) is under the task's label but not in the truth the
task measures, and must stay small beside it. Writes the
workers' pids to --pids, waits for --go, submits tasks for --seconds, and
writes the truth: each prefix's thread_time() and wall time as the tasks
measured them, summed over the tasks, and the CPU time of the collections
that ran in each task's own thread while it ran (gc.callbacks): a collection runs
in whichever thread allocates past the threshold, not always a garbage task."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402


def gc_clock():
    """CPU seconds this thread has spent in collections, as gc.callbacks saw
    them (the report's GC is on-CPU time too: a collection preempted is not).
    One watch per process, kept on the gc module: the tasks come pickled by
    value, each with globals of its own."""
    import gc
    import threading

    def on_gc(phase, info):
        tid, now = threading.get_ident(), time.thread_time()
        if phase == "start":
            on_gc.started[tid] = now
        elif tid in on_gc.started:
            on_gc.spent[tid] = on_gc.spent.get(tid, 0.0) + now - on_gc.started.pop(tid)

    on_gc.started, on_gc.spent = {}, {}
    watch = gc.__dict__.setdefault("_dask_prefixes_watch", on_gc)
    if watch is on_gc:
        gc.callbacks.append(on_gc)
    return watch.spent.get(threading.get_ident(), 0.0)


def start():
    """The clocks a task reads at its start."""
    return gc_clock(), time.thread_time(), time.monotonic()


def finish(name, started):
    """(name, thread_time, wall time, collections' time in this thread) since started."""
    g, t, w = started
    return name, time.thread_time() - t, time.monotonic() - w, gc_clock() - g


def crunch(i):
    started = start()
    acc = 0
    for k in range(200000):
        acc ^= (k * 31) % 11
    return finish("crunch", started)


def garbage(i):
    started = start()
    for _ in range(100):
        junk = []
        for _ in range(300):
            a = []
            a.append(a)
            junk.append(a)
        del junk
    return finish("garbage", started)


def nap(i):
    started = start()
    time.sleep(0.02)
    return finish("nap", started)


def main():
    args = common.parse({"--pids": {"required": True}})
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True, dashboard_address=None,
                      silence_logs=40) as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        pids = sorted(client.run(os.getpid).values())
        with open(args.pids + ".tmp", "w") as f:
            json.dump(pids, f)
        os.replace(args.pids + ".tmp", args.pids)
        common.wait_for_go(args)
        cpu = {"crunch": 0.0, "garbage": 0.0, "nap": 0.0}
        wall, gc_s = dict(cpu), dict(cpu)
        tasks = dict.fromkeys(cpu, 0)
        deadline = time.monotonic() + args.seconds
        batch = 0
        while time.monotonic() < deadline:
            futures = []
            for fn in (crunch, garbage, nap):
                futures += client.map(fn, range(batch * 8, batch * 8 + 8), pure=False)
            for name, c, w, g in client.gather(futures):
                cpu[name] += c
                wall[name] += w
                gc_s[name] += g
                tasks[name] += 1
            batch += 1
        common.write_truth(args, {"cpu_s": cpu, "wall_s": wall, "gc_s": gc_s, "tasks": tasks, "workers": pids})


if __name__ == "__main__":
    main()
