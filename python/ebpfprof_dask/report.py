"""The cluster report per Dask task prefix: from every worker's recording
(made with --dask), each prefix's time across the cluster split into the
columns the recordings' "state_groups" give (on-CPU, GC, GIL wait, I/O and
sleep, and other waits), its tasks and its top functions; and each worker's task balance over time (balance.py draws it).

A recording comes from a worker: every figure and name in it is checked
(untrusted.py) before it is added up or shown, and its size is bounded."""
import math
import re

from . import untrusted

LABEL = "dask_prefix"
# a recording's prefixes beyond this many share one row
PREFIXES_MAX = 64
OTHER = "[other prefixes]"
# the longest series a recording has (user/model/label_series.h: 512)
BINS_MAX = 4096
FUNCTIONS_MAX = 20
TOP_FUNCTIONS = 5
TEXT_MAX = 200

# The report's columns come from each recording's "state_groups" (the
# binary's one list of states, include/ep_states.h). These are the groups of
# a recording made before it carried them, or whose groups are not valid:
# (key, title, on a CPU, states).
OLD_GROUPS = (("on_cpu", "on-CPU", True, ("on-cpu",)),
              ("gc", "GC", True, ("gc",)),
              ("gil_wait", "GIL wait", False, ("gil-wait", "waiting-for-gc")),
              ("io_sleep", "I/O+sleep", False, ("io", "sleep")),
              ("other", "other", False, ("lock-wait", "preempted", "other")))
# the column of a state no group of its recording names
UNGROUPED = ("other", "other", False, ())
GROUPS_MAX = 16
_GROUP_KEY = re.compile(r"[a-z][a-z0-9_]{0,31}\Z")
# a column's key is its row's key with "_s": never one of a row's own
_ROW_KEYS = {"prefix", "time_s", "tasks", "workers", "share", "on_cpu_share", "top_functions"}


def unix_time(value):
    """A wall-clock time in seconds since the epoch, or None."""
    if type(value) not in (int, float) or not math.isfinite(value) or not 0 < value < 2 ** 33:
        return None
    return float(value)


def _states(value, known):
    """A value's {state: seconds}, the states the recording names only."""
    states = value.get("states_s") if isinstance(value, dict) else None
    if not isinstance(states, dict):
        return {}
    out = {}
    for name, s in states.items():
        s = untrusted.seconds(s)
        if s is not None and isinstance(name, str) and (known is None or name in known):
            out[name] = s
    return out


def _series(value, known):
    """A value's {state: [seconds per bin]}, each at most BINS_MAX long."""
    series = value.get("series") if isinstance(value, dict) else None
    if not isinstance(series, dict):
        return {}
    out = {}
    for name, bins in series.items():
        if not isinstance(name, str) or (known is not None and name not in known) or \
                not isinstance(bins, list) or len(bins) > BINS_MAX:
            continue
        checked = [untrusted.seconds(b) for b in bins]
        if None not in checked:
            out[name] = checked
    return out


def _functions(value):
    """A value's top functions: [(name, file, self_s, total_s)]."""
    fns = value.get("functions") if isinstance(value, dict) else None
    if not isinstance(fns, list):
        return []
    out = []
    for fn in fns[:FUNCTIONS_MAX]:
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or \
                not isinstance(fn.get("file", ""), str):
            continue
        self_s, total_s = untrusted.seconds(fn.get("self_s")), untrusted.seconds(fn.get("total_s"))
        if self_s is None or total_s is None:
            continue
        out.append((untrusted.printable(fn["name"], TEXT_MAX),
                    untrusted.printable(fn.get("file", ""), TEXT_MAX), self_s, total_s))
    return out


def _group(value):
    """One of a recording's "state_groups": (key, title, on_cpu, states),
    or None if it is not one."""
    if not isinstance(value, dict):
        return None
    key, title, on_cpu, states = (value.get("key"), value.get("title"), value.get("on_cpu"),
                                  value.get("states"))
    if not isinstance(key, str) or not _GROUP_KEY.match(key) or f"{key}_s" in _ROW_KEYS or \
            not untrusted.short_word(title, 32) or type(on_cpu) is not bool or \
            not isinstance(states, list) or len(states) > untrusted.STATES_MAX:
        return None
    names = tuple(untrusted.short_word(n) for n in states)
    return None if None in names else (key, untrusted.printable(title, 32), on_cpu, names)


def state_groups(info):
    """The report's columns a recording's "ebpfprof" object says its states
    make: [(key, title, on_cpu, states)], each state in one group at most;
    OLD_GROUPS if it has none, or not valid ones."""
    value = info.get("state_groups") if isinstance(info, dict) else None
    if not isinstance(value, list) or not 0 < len(value) <= GROUPS_MAX:
        return list(OLD_GROUPS)
    groups = [_group(g) for g in value]
    keys = [g[0] for g in groups if g]
    states = [n for g in groups if g for n in g[3]]
    if None in groups or len(set(keys)) != len(keys) or len(set(states)) != len(states):
        return list(OLD_GROUPS)
    return groups


def read_prefixes(doc):
    """One recording's prefixes: {"bin_s", "start_s", "prefixes": {name:
    {"states": {...}, "series": {...}, "functions": [...], "tasks": n}}};
    None when it has no dask_prefix label."""
    info = doc.get("ebpfprof") if isinstance(doc, dict) else None
    labels = info.get("labels") if isinstance(info, dict) else None
    values = labels.get(LABEL) if isinstance(labels, dict) else None
    if not isinstance(values, dict):
        return None
    known = untrusted.state_names(doc)
    bin_s = untrusted.seconds(info.get("label_bin_s"))
    out = {"bin_s": bin_s if bin_s else None, "start_s": unix_time(info.get("start_unix_s")),
           "duration_s": untrusted.seconds(info.get("duration_s")), "groups": state_groups(info),
           "prefixes": {}}
    ranked = sorted(((k, v) for k, v in values.items() if isinstance(k, str)),
                    key=lambda kv: -sum(_states(kv[1], known).values()))
    for i, (name, value) in enumerate(ranked):
        name = untrusted.printable(name, TEXT_MAX) if i < PREFIXES_MAX - 1 else OTHER
        entry = out["prefixes"].setdefault(name, {"states": {}, "series": {}, "functions": [], "tasks": 0})
        for state, s in _states(value, known).items():
            entry["states"][state] = entry["states"].get(state, 0.0) + s
        if name != OTHER:   # an "other" row has no series or functions of its own
            entry["series"] = _series(value, known)
            entry["functions"] = _functions(value)
        tasks = untrusted.count(value.get("sources")) if isinstance(value, dict) else None
        entry["tasks"] += tasks or 0
    return out


def _columns(workers):
    """The report's columns: every recording's groups by key, in the order
    first seen (the first recording's title and on_cpu for a key), and the
    column of a state no group names. [{"key": "gc_s", "title", "on_cpu"}]"""
    out = {}
    for _, _, rec in workers:
        for key, title, on_cpu, _ in rec["groups"] + [UNGROUPED]:
            out.setdefault(f"{key}_s", {"key": f"{key}_s", "title": title, "on_cpu": on_cpu})
    return list(out.values())


def _group_of(groups):
    """{state: its column's key} of a recording's groups."""
    return {state: f"{key}_s" for key, _, _, states in groups for state in states}


def _groups(states, group_of):
    """states' seconds by column: every state in one, however it is named."""
    out = {}
    for state, s in states.items():
        key = group_of.get(state, f"{UNGROUPED[0]}_s")
        out[key] = out.get(key, 0.0) + s
    return out


def cluster_report(workers):
    """workers: [(name, nthreads or None, read_prefixes(...))]. The report
    per prefix across them, most time first, its columns (the recordings'
    state groups), and per worker what the picture draws."""
    rows, fn_time, columns = {}, {}, _columns(workers)
    for wname, _, rec in workers:
        group_of = _group_of(rec["groups"])
        for name, p in rec["prefixes"].items():
            row = rows.setdefault(name, {"prefix": name, "time_s": 0.0, "tasks": 0, "workers": [],
                                         **{c["key"]: 0.0 for c in columns}})
            total = sum(p["states"].values())
            row["time_s"] += total
            row["tasks"] += p["tasks"]
            if total > 0:
                row["workers"].append(wname)
            for key, value in _groups(p["states"], group_of).items():
                row[key] += value
            fns = fn_time.setdefault(name, {})
            for fname, ffile, self_s, total_s in p["functions"]:
                acc = fns.setdefault((fname, ffile), [0.0, 0.0])
                acc[0] += self_s
                acc[1] += total_s
    all_time = sum(r["time_s"] for r in rows.values())
    out = _bounded(sorted(rows.values(), key=lambda r: (-r["time_s"], r["prefix"])), columns)
    kept = {r["prefix"] for r in out}
    for row in out:
        row["share"] = 100 * row["time_s"] / all_time if all_time else 0.0
        running = sum(row[c["key"]] for c in columns if c["on_cpu"])
        row["on_cpu_share"] = 100 * running / row["time_s"] if row["time_s"] else 0.0
        fns = sorted(fn_time.get(row["prefix"], {}).items(), key=lambda kv: (-kv[1][0], kv[0]))
        row["top_functions"] = [{"name": n, "file": f, "self_s": s, "total_s": t}
                                for (n, f), (s, t) in fns[:TOP_FUNCTIONS]]
    return {"label": LABEL, "time_s": all_time, "columns": columns, "prefixes": out,
            "workers": _balance(workers, kept)}


def _bounded(rows, columns):
    """At most PREFIXES_MAX rows: the rest (every worker's own prefixes)
    added up in one, OTHER."""
    if len(rows) <= PREFIXES_MAX:
        return rows
    other = {"prefix": OTHER, "time_s": 0.0, "tasks": 0, "workers": [], **{c["key"]: 0.0 for c in columns}}
    for row in rows[PREFIXES_MAX - 1:]:
        for key in ("time_s", "tasks", *(c["key"] for c in columns)):
            other[key] += row[key]
        other["workers"] += [w for w in row["workers"] if w not in other["workers"]]
    return sorted(rows[:PREFIXES_MAX - 1] + [other], key=lambda r: (-r["time_s"], r["prefix"]))


def _balance(workers, kept):
    """Per worker its prefixes' series on the cluster's clock: bins from the
    earliest recording's start (a recording without its start: its own)."""
    starts = [rec["start_s"] for _, _, rec in workers if rec["start_s"] is not None]
    t0 = min(starts) if starts else 0.0
    out = []
    for wname, nthreads, rec in workers:
        series = {}
        on_cpu = {state for _, _, on, states in rec["groups"] if on for state in states}
        for name, p in rec["prefixes"].items():
            running = _sum_states(p["series"], [s for s in p["series"] if s in on_cpu])
            waiting = _sum_states(p["series"], [s for s in p["series"] if s not in on_cpu])
            if not any(running) and not any(waiting):
                continue
            name = name if name in kept else OTHER
            if name in series:
                running = _added(series[name]["running"], running)
                waiting = _added(series[name]["waiting"], waiting)
            series[name] = {"running": running, "waiting": waiting}
        out.append({"worker": wname, "nthreads": nthreads, "bin_s": rec["bin_s"],
                    "offset_s": rec["start_s"] - t0 if rec["start_s"] is not None else 0.0,
                    "duration_s": rec["duration_s"], "series": series})
    return out


def _added(a, b):
    return [x + y for x, y in zip(a + [0.0] * (len(b) - len(a)), b + [0.0] * (len(a) - len(b)))]


def _sum_states(series, states):
    """The bins' sum over those states of series."""
    n = max((len(series[s]) for s in states if s in series), default=0)
    out = [0.0] * n
    for s in states:
        for i, v in enumerate(series.get(s, ())):
            out[i] += v
    return out


def format_report(report):
    """The report as a table a person reads."""
    head = f"{'prefix':<28} {'tasks':>6} {'time':>9} {'share':>6}" + \
           "".join(f" {c['title']:>16}" for c in report["columns"])
    lines = [f"ebpfprof_dask: time per task prefix across {len(report['workers'])} workers "
             f"({report['time_s']:.2f} s of task time; each state's share of its prefix's time)", head]
    for r in report["prefixes"]:
        row = f"{r['prefix'][:28]:<28} {r['tasks']:>6} {r['time_s']:>8.2f}s {r['share']:>5.1f}%"
        for c in report["columns"]:
            share = 100 * r[c["key"]] / r["time_s"] if r["time_s"] else 0.0
            row += f" {r[c['key']]:>8.2f}s {share:>5.1f}%"
        lines.append(row)
    for r in report["prefixes"]:
        if r["top_functions"]:
            lines.append(f"top functions of {r['prefix']} (self on-CPU time, all workers):")
            for fn in r["top_functions"]:
                where = f"  ({fn['file']})" if fn["file"] else ""
                lines.append(f"  {fn['self_s']:>8.3f}s  {fn['name']}{where}")
    return "\n".join(lines) + "\n"
