"""The client side: start ebpfprof next to the scheduler and the workers,
bring every profile back, write one speedscope file per process and an index
of GC and wait time per process, scheduler first."""
import contextlib
import json
import os
import shlex
import time
import uuid

import cloudpickle

from . import remote

DEFAULT_COMMAND = ("ebpfprof",)


def command_from_env():
    """EBPFPROF_DASK_COMMAND, e.g. "sudo -n /usr/local/bin/ebpfprof"."""
    value = os.environ.get("EBPFPROF_DASK_COMMAND")
    return tuple(shlex.split(value)) if value else DEFAULT_COMMAND


def summarize_gc_log(data):
    """GC and wait figures of one --gc-log file (bytes)."""
    out = {"recorded_s": 0.0, "monotonic_start_s": None, "gc_count": 0, "gc_total_s": 0.0,
           "gc_max_s": 0.0, "gc_by_generation": {}, "waits_s": {}}
    for line in (data or b"").decode("utf-8", "replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        kind = rec.get("type")
        if kind == "session":
            out["recorded_s"] = rec.get("duration_s", 0.0)
            out["monotonic_start_s"] = rec.get("monotonic_start_s")
        elif kind == "gc":
            d = float(rec.get("duration_s", 0.0))
            gen = str(rec.get("generation"))
            out["gc_count"] += 1
            out["gc_total_s"] += d
            out["gc_max_s"] = max(out["gc_max_s"], d)
            g = out["gc_by_generation"].setdefault(gen, {"count": 0, "total_s": 0.0})
            g["count"] += 1
            g["total_s"] += d
        elif kind == "wait":
            reason = str(rec.get("reason"))
            out["waits_s"][reason] = out["waits_s"].get(reason, 0.0) + float(rec.get("duration_s", 0.0))
    return out


class ClusterProfile:
    """One profiling session over a cluster. Use profile() or profile_cluster()."""

    def __init__(self, client, outdir, duration=None, gc_log=False, idle=False, workers="all",
                 command=None, options=(), wait_threshold_ms=None):
        if workers != "all" and (not isinstance(workers, int) or workers < 0):
            raise ValueError(f"workers: 'all' or a count, not {workers!r}")
        self.client = client
        self.outdir = str(outdir)
        self.duration = duration
        self.keep_gc_log = gc_log
        self.workers = workers
        self.command = tuple(command) if command else command_from_env()
        opts = list(options)
        if idle:
            opts.append("--idle")
        if wait_threshold_ms is not None:
            opts += ["--wait-threshold", str(wait_threshold_ms)]
        self.options = opts
        self.token = uuid.uuid4().hex
        self.started = []       # (role, address, start result)
        self.results = []       # entries of the index, scheduler first
        self.index_path = os.path.join(self.outdir, "index.json")
        self._t0 = None

    def _worker_addresses(self):
        addrs = sorted(self.client.ncores())  # asked now: the cached info may be old
        return addrs if self.workers == "all" else addrs[:self.workers]

    def start(self):
        # the workers need the ebpfprof binary, not this package
        cloudpickle.register_pickle_by_value(remote)
        os.makedirs(self.outdir, exist_ok=True)
        self._t0 = time.monotonic()
        args = (self.token, self.command, self.options, self.duration)
        try:
            sched = self.client.run_on_scheduler(remote.start, *args)
        except Exception as e:  # noqa: BLE001 - reported in the index
            sched = {"error": f"{type(e).__name__}: {e}"}
        self.started.append(("scheduler", self.client.scheduler.address, sched))
        addrs = self._worker_addresses()
        if addrs:
            res = self.client.run(remote.start, *args, workers=addrs, on_error="return")
            for addr in addrs:
                r = res.get(addr, {"error": "the worker did not answer"})
                if isinstance(r, BaseException):
                    r = {"error": f"{type(r).__name__}: {r}"}
                self.started.append(("worker", addr, r))
        return self

    def stop(self):
        """Ends every recording (after the duration, if one was given), brings
        the files back and writes them with the index. Returns the index."""
        wait = 0
        if self.duration:
            wait = max(self.duration - (time.monotonic() - self._t0), 0.001)
        done = {}
        if "error" not in self.started[0][2]:
            try:
                done[self.started[0][1]] = self.client.run_on_scheduler(remote.stop, self.token, wait)
            except Exception as e:  # noqa: BLE001
                done[self.started[0][1]] = {"error": f"{type(e).__name__}: {e}"}
        live = [a for role, a, r in self.started if role == "worker" and "error" not in r]
        if live:
            res = self.client.run(remote.stop, self.token, wait, workers=live, on_error="return")
            for addr in live:
                r = res.get(addr, {"error": "the worker did not answer"})
                done[addr] = r if not isinstance(r, BaseException) else {"error": f"{type(r).__name__}: {r}"}
        for role, addr, started in self.started:
            self.results.append(self._write(role, addr, started, done.get(addr, started)))
        self._write_index()
        return self.results

    def _write(self, role, addr, started, result):
        entry = {"role": role, "address": addr, "host": result.get("host", started.get("host")),
                 "pid": result.get("pid", started.get("pid"))}
        if result.get("error"):
            entry["error"] = result["error"]
            return entry
        name = f"{role}-{entry['host']}-{entry['pid']}"
        profile = os.path.join(self.outdir, name + ".speedscope.json")
        _write_file(profile, result["profile"])
        entry["profile"] = os.path.basename(profile)
        if self.keep_gc_log and result.get("gc_log") is not None:
            _write_file(os.path.join(self.outdir, name + ".gc.jsonl"), result["gc_log"])
            entry["gc_log"] = name + ".gc.jsonl"
        entry.update(summarize_gc_log(result.get("gc_log")))
        entry["summary"] = [line for line in result.get("stderr", "").splitlines()
                            if line.startswith("ebpfprof: recorded")][:1]
        return entry

    def _write_index(self):
        doc = {"generated_by": "ebpfprof_dask", "command": list(self.command),
               "options": self.options, "processes": self.results}
        _write_file(self.index_path, (json.dumps(doc, indent=1) + "\n").encode())
        _write_file(os.path.join(self.outdir, "index.txt"), format_index(self.results).encode())


def _write_file(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def format_index(results):
    """The index as a table a person reads, scheduler first."""
    reasons = sorted({r for e in results for r in e.get("waits_s", {})})
    head = f"{'process':<44} {'recorded':>9} {'GCs':>6} {'GC total':>9} {'GC max':>8}"
    head += "".join(f" {r + ' wait':>14}" for r in reasons)
    lines = [head]
    for e in results:
        label = f"{e['role']} {e['host']}:{e['pid']}"
        if "error" in e:
            lines.append(f"{label:<44} error: {e['error']}")
            continue
        row = f"{label:<44} {e['recorded_s']:>8.2f}s {e['gc_count']:>6} {e['gc_total_s']:>8.3f}s" \
              f" {e['gc_max_s'] * 1e3:>6.1f}ms"
        row += "".join(f" {e['waits_s'].get(r, 0.0):>13.3f}s" for r in reasons)
        lines.append(row)
    lines.append("waits: those over the --wait-threshold of each recording (default 10 ms)")
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def profile(client, outdir="ebpfprof-dask", **kw):
    """with profile(client, "out"): ...  profiles the scheduler and the workers
    for the duration of the block (or `duration` seconds), then writes
    outdir/index.json, index.txt and one speedscope file per process."""
    session = ClusterProfile(client, outdir, **kw).start()
    try:
        yield session
    finally:
        session.stop()


def profile_cluster(client, duration, outdir="ebpfprof-dask", **kw):
    """Profiles the cluster for `duration` seconds; returns the index entries."""
    session = ClusterProfile(client, outdir, duration=duration, **kw).start()
    return session.stop()
