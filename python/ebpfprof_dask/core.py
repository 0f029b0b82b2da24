"""The client side: start ebpfprof next to the scheduler and the workers,
bring every profile back, write one speedscope file per process and an index
of GC and wait time per process, scheduler first."""
import concurrent.futures
import contextlib
import json
import os
import shlex
import time
import uuid

import cloudpickle

from . import history as run_history
from . import remote, untrusted
from .atomic import WriteError, write_atomic
from .balance import balance_svg, report_html
from .report import cluster_report, format_report, read_prefixes

DEFAULT_COMMAND = ("ebpfprof",)


def command_from_env():
    """EBPFPROF_DASK_COMMAND, e.g. "sudo -n /usr/local/bin/ebpfprof"."""
    value = os.environ.get("EBPFPROF_DASK_COMMAND")
    return tuple(shlex.split(value)) if value else DEFAULT_COMMAND


def _gc_record(rec, states=None):
    """(kind, fields) of one GC-log record ebpfprof writes, or None if rec is
    not one: every figure a finite, bounded number, a wait's reason one of
    states (the recording's: untrusted.state_names), or a short word when
    the recording names none."""
    if not isinstance(rec, dict):
        return None
    kind = rec.get("type")
    if kind == "session":
        duration, start = untrusted.seconds(rec.get("duration_s")), untrusted.seconds(rec.get("monotonic_start_s"))
        return None if duration is None or start is None else (kind, duration, start)
    duration = untrusted.seconds(rec.get("duration_s"))
    if duration is None:
        return None
    if kind == "gc":
        gen = rec.get("generation")
        return (kind, duration, str(gen)) if type(gen) is int and -1 <= gen <= 9 else None
    if kind == "wait":
        reason = untrusted.short_word(rec.get("reason"))
        return (kind, duration, reason) if reason and (states is None or reason in states) else None
    return None


def summarize_gc_log(data, states=None):
    """GC and wait figures of one --gc-log file (bytes), its waits' reasons
    among states (the recording's, None: any short word). A line that is not
    a record ebpfprof writes is counted in gc_log_bad_lines, never fatal."""
    out = {"recorded_s": 0.0, "monotonic_start_s": None, "gc_count": 0, "gc_total_s": 0.0,
           "gc_max_s": 0.0, "gc_by_generation": {}, "waits_s": {}, "gc_log_bad_lines": 0}
    for line in (data or b"").decode("utf-8", "replace").splitlines():
        if not line.strip():
            continue
        rec = _gc_record(untrusted.json_object(line.encode()), states)
        if rec is None:
            out["gc_log_bad_lines"] += 1
        elif rec[0] == "session":
            out["recorded_s"], out["monotonic_start_s"] = rec[1], rec[2]
        elif rec[0] == "gc":
            d = rec[1]
            out["gc_count"] += 1
            out["gc_total_s"] += d
            out["gc_max_s"] = max(out["gc_max_s"], d)
            g = out["gc_by_generation"].setdefault(rec[2], {"count": 0, "total_s": 0.0})
            g["count"] += 1
            g["total_s"] += d
        else:
            out["waits_s"][rec[2]] = out["waits_s"].get(rec[2], 0.0) + rec[1]
    return out


# the figures of a recording's "ebpfprof" object (user/output/writer_speedscope.c)
# kept in the index, each with the check its value must pass
_SUMMARY_FIELDS = (("version", untrusted.count), ("duration_s", untrusted.seconds), ("rate_hz", untrusted.count),
                   ("samples", untrusted.count), ("lost", untrusted.count),
                   ("python", untrusted.python_version),
                   ("idle", lambda v: v if isinstance(v, bool) else None),
                   ("gc_timing", untrusted.short_word), ("stop_reason", untrusted.short_word))


def summarize_recording(doc):
    """The summary of one speedscope file ebpfprof wrote (its parsed JSON):
    its "ebpfprof" object's figures, those of the right type only, and its
    number of threads."""
    info = doc.get("ebpfprof")
    if not isinstance(info, dict):
        return {}
    out = {}
    for key, check in _SUMMARY_FIELDS:
        value = check(info.get(key))
        if value is not None:
            out[key] = value
    if isinstance(info.get("threads"), list):
        out["threads"] = len(info["threads"])
    return out


class ClusterProfile:
    """One profiling session over a cluster. Use profile() or profile_cluster()."""

    def __init__(self, client, outdir, duration=None, gc_log=False, idle=False, workers="all",
                 command=None, options=(), wait_threshold_ms=None, dask=True, history=None,
                 history_db=None, tags=()):
        if workers != "all" and (not isinstance(workers, int) or workers < 0):
            raise ValueError(f"workers: 'all' or a count, not {workers!r}")
        # history: the series the cluster's run is stored in (ebpfprof history)
        self.history, self.history_db = history, history_db
        self.tags = [run_history.check_tag(t) for t in tags]
        self.history_run = None     # its number once stored
        self.client = client
        self.outdir = str(outdir)
        self.duration = duration
        self.keep_gc_log = gc_log
        self.workers = workers
        self.command = tuple(command) if command else command_from_env()
        opts = list(options)
        if dask:    # each task's key and prefix on its samples: the cluster report
            opts.append("--dask")
        if idle:
            opts.append("--idle")
        if wait_threshold_ms is not None:
            opts += ["--wait-threshold", str(wait_threshold_ms)]
        self.options = opts
        self.token = uuid.uuid4().hex
        self.started = []       # (role, address, start result)
        self.results = []       # entries of the index, scheduler first
        self.index_path = os.path.join(self.outdir, "index.json")
        self.report = None      # the cluster report per task prefix, if any
        self._prefixes = {}     # address: the prefixes its recording holds
        self._figures = []      # (role, history.process_figures(...)) per process
        self._prefix_gc = {}    # address: its prefixes' collections
        self._ncores = {}
        self._t0 = None

    def _worker_addresses(self):
        self._ncores = self.client.ncores()  # asked now: the cached info may be old
        addrs = sorted(self._ncores)
        return addrs if self.workers == "all" else addrs[:self.workers]

    def _run_at_once(self, fn, args, scheduler, workers):
        """fn(*args) on the scheduler (if scheduler) and on the workers, all
        at once: each waits for its ebpfprof, one after the other they took
        as many times as long. Returns (the scheduler's answer or None,
        {worker address: its answer})."""
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            sched = pool.submit(self.client.run_on_scheduler, fn, *args) if scheduler else None
            res = self.client.run(fn, *args, workers=workers, on_error="return") if workers else {}
            answers = {addr: _answer(res.get(addr, _NO_ANSWER)) for addr in workers}
            if sched is None:
                return None, answers
            try:
                return _answer(sched.result()), answers
            except Exception as e:  # noqa: BLE001 - reported in the index
                return _answer(e), answers

    def start(self):
        # the workers need the ebpfprof binary, not this package
        cloudpickle.register_pickle_by_value(remote)
        os.makedirs(self.outdir, exist_ok=True)
        self._t0 = time.monotonic()
        addrs = self._worker_addresses()
        # each start returns once its ebpfprof records (it loads its programs)
        sched, workers = self._run_at_once(remote.start, (self.token, self.command, self.options,
                                                          self.duration), True, addrs)
        self.started.append(("scheduler", self.client.scheduler.address, sched))
        self.started += [("worker", addr, workers[addr]) for addr in addrs]
        return self

    def stop(self):
        """Ends every recording (after the duration, if one was given), brings
        the files back and writes them with the index. Returns the index;
        raises WriteError if the index cannot be written."""
        wait = 0
        if self.duration:
            wait = max(self.duration - (time.monotonic() - self._t0), 0.001)
        live = [a for role, a, r in self.started if role == "worker" and "error" not in r]
        # each stop waits for its ebpfprof to write its files
        sched, done = self._run_at_once(remote.stop, (self.token, wait),
                                        "error" not in self.started[0][2], live)
        if sched is not None:
            done[self.started[0][1]] = sched
        names = set()
        for role, addr, started in self.started:
            self.results.append(self._write(role, addr, started, done.get(addr, started), names))
        self._write_index()
        self._write_report()
        if self.history:
            self._store_history()
        return self.results

    def _store_history(self):
        """The cluster's run in the history (raises history.HistoryError)."""
        prefixes = [(rec, self._prefix_gc.get(addr, {})) for addr, rec in self._prefixes.items()]
        nworkers = sum(1 for role, _ in self._figures if role == "worker")
        what = f"dask cluster {self.client.scheduler.address}: scheduler and {nworkers} workers"
        run = run_history.cluster_run(self._figures, prefixes, what, os.path.abspath(self.outdir))
        self.history_run = run_history.store(run, self.history, self.command, self.history_db, self.tags)

    def _write_report(self):
        """The report per task prefix, from the workers' recordings with
        --dask's labels; none when no worker has them."""
        workers = []
        for e in self.results:
            rec = self._prefixes.get(e["address"])
            if e["role"] == "worker" and rec is not None:
                workers.append((f"{e['host']}:{e['pid']}", e.get("nthreads"), rec))
        self.report = write_cluster_report(self.outdir, workers)

    def _write(self, role, addr, started, result, names):
        """The process's entry of the index, its files written. What the
        process says of itself is checked first: its host and pid name its
        files (made safe, and unique: names holds those taken)."""
        claimed_host, claimed_pid = result.get("host", started.get("host")), result.get("pid", started.get("pid"))
        entry = {"role": role, "address": addr, "host": untrusted.host(claimed_host),
                 "pid": untrusted.pid(claimed_pid)}
        if role == "worker" and untrusted.count(self._ncores.get(addr)):
            entry["nthreads"] = self._ncores[addr]
        error = result.get("error") or untrusted.bytes_error("profile", result.get("profile")) or \
            untrusted.bytes_error("GC log", result.get("gc_log"), optional=True)
        doc = None if error else untrusted.json_object(result["profile"])
        if not error and doc is None:
            error = "its profile is not a JSON object"
        if error:
            entry["error"] = untrusted.printable(error, untrusted.ERROR_MAX)
            return entry
        name = self._file_name(role, claimed_host, entry["pid"], names)
        try:
            write_atomic(os.path.join(self.outdir, name + ".speedscope.json"), result["profile"])
            entry["profile"] = name + ".speedscope.json"
            if self.keep_gc_log and result.get("gc_log") is not None:
                write_atomic(os.path.join(self.outdir, name + ".gc.jsonl"), result["gc_log"])
                entry["gc_log"] = name + ".gc.jsonl"
        except WriteError as e:
            entry["error"] = str(e)
            return entry
        entry.update(summarize_gc_log(result.get("gc_log"), untrusted.state_names(doc)))
        prefixes = read_prefixes(doc)
        if prefixes is not None:
            self._prefixes[addr] = prefixes
        if self.history:
            self._figures.append((role, run_history.process_figures(doc, result.get("gc_log"))))
            if prefixes is not None and role == "worker":
                self._prefix_gc[addr] = run_history.prefix_gc(doc)
        entry["summary"] = summarize_recording(doc)
        if "duration_s" in entry["summary"]:
            entry["recorded_s"] = entry["summary"]["duration_s"]
        return entry

    @staticmethod
    def _file_name(role, host, pid, names):
        base = f"{role}-{untrusted.name_part(host)}-{untrusted.name_part(pid)}"
        name, n = base, 1
        while name in names:
            n += 1
            name = f"{base}-{n}"
        names.add(name)
        return name

    def _write_index(self):
        doc = {"generated_by": "ebpfprof_dask", "command": list(self.command),
               "options": self.options, "processes": self.results}
        write_atomic(self.index_path, (json.dumps(doc, indent=1, allow_nan=False) + "\n").encode())
        write_atomic(os.path.join(self.outdir, "index.txt"), format_index(self.results).encode())


_NO_ANSWER = {"error": "the worker did not answer"}

REPORT_FILES = ("report.json", "report.txt", "balance.svg", "report.html")


def write_cluster_report(outdir, workers):
    """Writes the cluster report of workers ([(name, nthreads, prefixes)])
    into outdir: report.json, report.txt, balance.svg and report.html (the
    picture and the table). Returns the report; None (nothing written) when
    no worker's recording has task prefixes."""
    if not any(rec["prefixes"] for _, _, rec in workers):
        return None
    report = cluster_report(workers)
    svg = balance_svg(report)
    texts = {"report.json": json.dumps(report, indent=1, allow_nan=False) + "\n",
             "report.txt": format_report(report), "balance.svg": svg,
             "report.html": report_html(report, svg)}
    for name in REPORT_FILES:
        write_atomic(os.path.join(outdir, name), texts[name].encode())
    return report


def report_from_directory(outdir):
    """The cluster report again, from a directory profile_cluster wrote (its
    index.json and the workers' recordings there). Returns the report or
    None; raises OSError (WriteError) if a file cannot be read or written."""
    with open(os.path.join(outdir, "index.json"), "rb") as f:
        index = untrusted.json_object(f.read())
    procs = index.get("processes") if index else None
    if not isinstance(procs, list):
        raise WriteError(f"{outdir}/index.json: not an index ebpfprof_dask wrote")
    workers = []
    for e in procs:
        if not isinstance(e, dict) or e.get("role") != "worker" or not isinstance(e.get("profile"), str):
            continue
        # only a file of this directory, whatever the index says
        path = os.path.join(outdir, os.path.basename(e["profile"]))
        with open(path, "rb") as f:
            rec = read_prefixes(untrusted.json_object(f.read()) or {})
        if rec is not None:
            name = f"{untrusted.host(e.get('host')) or 'unknown'}:{untrusted.pid(e.get('pid')) or 'unknown'}"
            workers.append((name, untrusted.count(e.get("nthreads")), rec))
    return write_cluster_report(outdir, workers)


def _answer(answer):
    """A scheduler's or worker's answer as a dict: an exception raised
    there, or anything but a dict, becomes {"error": why}."""
    if isinstance(answer, BaseException):
        return {"error": f"{type(answer).__name__}: {answer}"}
    why = untrusted.answer_error(answer)
    return {"error": why} if why else answer


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
    outdir/index.json, index.txt and one speedscope file per process; with
    history="SERIES" (history_db=PATH, tags=["k=v"]) it also stores the
    cluster's run in ebpfprof's run history (session.history_run: its
    number)."""
    session = ClusterProfile(client, outdir, **kw).start()
    try:
        yield session
    finally:
        session.stop()


def profile_cluster(client, duration, outdir="ebpfprof-dask", **kw):
    """Profiles the cluster for `duration` seconds; returns the index entries."""
    session = ClusterProfile(client, outdir, duration=duration, **kw).start()
    return session.stop()
