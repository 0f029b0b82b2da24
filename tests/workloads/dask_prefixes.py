"""A distributed.LocalCluster (2 worker processes, 2 threads each) running
three task prefixes of known cost for --dask: crunch (pure-Python CPU,
~15 ms), garbage (cyclic garbage, so collections, ~15 ms), nap (sleeps 20 ms).
Tasks of some length: the task runner's own work per task (apply_function
around the function) is under the task's label but not in the truth the
task measures, and must stay small beside it. Writes the
workers' pids to --pids, waits for --go, submits tasks for --seconds, and
writes the truth: each prefix's thread_time() and wall time as the tasks
measured them, summed over the tasks."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402


def crunch(i):
    t, w = time.thread_time(), time.monotonic()
    acc = 0
    for k in range(200000):
        acc ^= (k * 31) % 11
    return "crunch", time.thread_time() - t, time.monotonic() - w


def garbage(i):
    t, w = time.thread_time(), time.monotonic()
    for _ in range(100):
        junk = []
        for _ in range(300):
            a = []
            a.append(a)
            junk.append(a)
        del junk
    return "garbage", time.thread_time() - t, time.monotonic() - w


def nap(i):
    t, w = time.thread_time(), time.monotonic()
    time.sleep(0.02)
    return "nap", time.thread_time() - t, time.monotonic() - w


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
        wall = dict(cpu)
        tasks = dict.fromkeys(cpu, 0)
        deadline = time.monotonic() + args.seconds
        batch = 0
        while time.monotonic() < deadline:
            futures = []
            for fn in (crunch, garbage, nap):
                futures += client.map(fn, range(batch * 8, batch * 8 + 8), pure=False)
            for name, c, w in client.gather(futures):
                cpu[name] += c
                wall[name] += w
                tasks[name] += 1
            batch += 1
        common.write_truth(args, {"cpu_s": cpu, "wall_s": wall, "tasks": tasks, "workers": pids})


if __name__ == "__main__":
    main()
