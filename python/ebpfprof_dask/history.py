"""A cluster run kept in ebpfprof's run history (`ebpfprof history`): the
figures of one ClusterProfile session -- per role (the scheduler, the
workers summed) the states and GC as `history add` keeps a recording's,
per task prefix its tasks, time, time per state, GC and top functions --
handed to `ebpfprof history add-run`, the one writer of the database, as a
JSON document (user/history/history_import.c reads it; its "format" is
HIST_RUN_FORMAT_VERSION there).

Everything here comes from recordings the workers handed back: the names
and figures are checked (untrusted.py, report.read_prefixes) before use."""
import json
import os
import re
import socket
import subprocess
import time

from . import untrusted
from .report import LABEL, OTHER, PREFIXES_MAX, TEXT_MAX

RUN_FORMAT = 1
KIND = "dask-cluster"
ROLES = ("scheduler", "workers")
# a prefix's functions kept, by self on-CPU time summed over the workers
PREFIX_FUNCTIONS = 10
# what `history add-run` may take: ebpfprof's own bound (history_import.c)
TEXT_LIMIT = 4096
TAG = re.compile(r"[A-Za-z0-9_.-]{1,64}=[^\x00]{0,256}")


class HistoryError(OSError):
    """The run could not be stored: the reason in one line."""


def check_tag(tag):
    """A tag as `ebpfprof history` takes it, KEY=VALUE; ValueError if not."""
    if not isinstance(tag, str) or not TAG.fullmatch(tag):
        raise ValueError(f"a tag is KEY=VALUE, KEY of letters, digits, _.- : {tag!r}")
    return tag


def process_figures(doc, gc_log):
    """One process's part of its role's figures: its threads' seconds per
    state (the recording's "threads"), and each collection's duration per
    generation from its GC log (so that the role's p50 and p99 are of all
    its collections, not of each process's)."""
    known = untrusted.state_names(doc)
    info = doc.get("ebpfprof") if isinstance(doc, dict) else None
    threads = info.get("threads") if isinstance(info, dict) else None
    states = {}
    for t in threads if isinstance(threads, list) else ():
        values = t.get("states_s") if isinstance(t, dict) else None
        for name, s in (values.items() if isinstance(values, dict) else ()):
            s = untrusted.seconds(s)
            if s is not None and isinstance(name, str) and (known is None or name in known):
                states[name] = states.get(name, 0.0) + s
    gcs = {}
    for line in (gc_log or b"").decode("utf-8", "replace").splitlines():
        rec = untrusted.json_object(line.encode()) if line.strip() else None
        if not rec or rec.get("type") != "gc":
            continue
        gen, d = rec.get("generation"), untrusted.seconds(rec.get("duration_s"))
        if type(gen) is int and -1 <= gen <= 9 and d is not None:
            gcs.setdefault("gen ?" if gen < 0 else f"gen {gen}", []).append(d)
    duration = untrusted.seconds(info.get("duration_s")) if isinstance(info, dict) else None
    python = untrusted.python_version(info.get("python")) if isinstance(info, dict) else None
    return {"states": states, "gcs": gcs, "duration_s": duration or 0.0, "python": python}


def prefix_gc(doc):
    """{prefix as read_prefixes names it: (collections, seconds)} of a
    recording's dask_prefix values: the collections that ran under each."""
    info = doc.get("ebpfprof") if isinstance(doc, dict) else None
    labels = info.get("labels") if isinstance(info, dict) else None
    values = labels.get(LABEL) if isinstance(labels, dict) else None
    if not isinstance(values, dict):
        return {}
    known = untrusted.state_names(doc)

    def total(value):
        states = value.get("states_s") if isinstance(value, dict) else None
        if not isinstance(states, dict):
            return 0.0
        return sum(s for n, s in ((n, untrusted.seconds(v)) for n, v in states.items())
                   if s is not None and (known is None or n in known))

    # read_prefixes' order and names: the first PREFIXES_MAX - 1, then OTHER
    ranked = sorted(((k, v) for k, v in values.items() if isinstance(k, str)), key=lambda kv: -total(kv[1]))
    out = {}
    for i, (name, value) in enumerate(ranked):
        name = untrusted.printable(name, TEXT_MAX) if i < PREFIXES_MAX - 1 else OTHER
        count = untrusted.count(value.get("gc_count")) if isinstance(value, dict) else None
        seconds = untrusted.seconds(value.get("gc_s")) if isinstance(value, dict) else None
        c, s = out.get(name, (0, 0.0))
        out[name] = (c + (count or 0), s + (seconds or 0.0))
    return out


def _quantile(sorted_values, q):
    """The nearest-rank quantile, as ebpfprof's recordings give theirs."""
    rank = int(q * len(sorted_values) + 0.999999)
    return sorted_values[max(rank, 1) - 1]


def _role_figures(role, parts):
    figures, states, gcs = [], {}, {}
    for p in parts:
        for name, s in p["states"].items():
            states[name] = states.get(name, 0.0) + s
        for gen, durations in p["gcs"].items():
            gcs.setdefault(gen, []).extend(durations)
    for name in sorted(states):
        if states[name] > 0:
            figures.append(["state", role, "", name, "seconds", states[name]])
    for gen in sorted(gcs):
        d = sorted(gcs[gen])
        for field, value in (("count", len(d)), ("total_s", sum(d)), ("p50_s", _quantile(d, 0.5)),
                             ("p99_s", _quantile(d, 0.99)), ("max_s", d[-1])):
            figures.append(["gc", role, "", gen, field, value])
    return figures


def _prefix_figures(workers):
    """workers: [(read_prefixes(...), prefix_gc(...))], one per worker."""
    rows = {}
    for rec, gc in workers:
        for name, p in rec["prefixes"].items():
            row = rows.setdefault(name, {"tasks": 0, "states": {}, "gc": [0, 0.0], "fns": {}})
            row["tasks"] += p["tasks"]
            for state, s in p["states"].items():
                row["states"][state] = row["states"].get(state, 0.0) + s
            c, s = gc.get(name, (0, 0.0))
            row["gc"][0] += c
            row["gc"][1] += s
            for fname, ffile, self_s, total_s in p["functions"]:
                acc = row["fns"].setdefault(f"{fname} ({ffile})" if ffile else fname, [0.0, 0.0])
                acc[0] += self_s
                acc[1] += total_s
    figures = []
    for name in sorted(rows, key=lambda n: (-sum(rows[n]["states"].values()), n)):
        row = rows[name]
        figures += [["prefix", "workers", "", name, "tasks", row["tasks"]],
                    ["prefix", "workers", "", name, "time_s", sum(row["states"].values())],
                    ["prefix", "workers", "", name, "gc_count", row["gc"][0]],
                    ["prefix", "workers", "", name, "gc_s", row["gc"][1]]]
        figures += [["prefix_state", "workers", "", name, state, s] for state, s in sorted(row["states"].items())]
        top = sorted(row["fns"].items(), key=lambda kv: (-kv[1][0], kv[0]))[:PREFIX_FUNCTIONS]
        for fn, (self_s, total_s) in top:
            figures += [["prefix_fn", "workers", name, fn[:TEXT_LIMIT], "self_s", self_s],
                        ["prefix_fn", "workers", name, fn[:TEXT_LIMIT], "total_s", total_s]]
    return figures


def cluster_run(processes, prefixes, command, source):
    """The run's document: processes [(role, process_figures(...))], role
    "scheduler" or "worker"; prefixes [(read_prefixes(...),
    prefix_gc(...))] of the workers with task prefixes."""
    parts = {role: [p for r, p in processes if (r + "s" if r == "worker" else r) == role] for role in ROLES}
    figures = []
    for role in ROLES:
        figures += _role_figures(role, parts[role])
    figures += _prefix_figures(prefixes)
    pythons = sorted({p["python"] for _, p in processes if p["python"]})
    # ebpfprof takes no control character in a text: escaped as it escapes them
    return {"format": RUN_FORMAT, "kind": KIND, "at": int(time.time()),
            "host": untrusted.printable(socket.gethostname(), 256),
            "kernel": untrusted.printable(os.uname().release, 256), "python": ",".join(pythons),
            "command": untrusted.printable(command, 1000), "source": untrusted.printable(source, 1000),
            "duration_s": max((p["duration_s"] for _, p in processes), default=0.0),
            "figures": figures}


def store(run, series, ebpfprof=("ebpfprof",), db=None, tags=(), timeout=120):
    """Stores run (cluster_run's document) as a run of series through
    `ebpfprof history add-run`; returns its number. Raises HistoryError."""
    argv = list(ebpfprof) + ["history", "add-run", series, "-"]
    if db:
        argv += ["--history-db", str(db)]
    for tag in tags:
        argv += ["--tag", check_tag(tag)]
    data = json.dumps(run, allow_nan=False).encode()
    try:
        res = subprocess.run(argv, input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise HistoryError(f"cannot run {argv[0]} history: {e}") from None
    out = res.stdout.decode("utf-8", "replace")
    m = re.match(r"run #(\d+):", out)
    if res.returncode != 0 or not m:
        why = res.stderr.decode("utf-8", "replace").strip() or out.strip()
        raise HistoryError(f"the run was not stored in the history: {why}")
    return int(m.group(1))
