#!/usr/bin/python3
"""ebpfprof's overhead benchmarks (make bench, through scripts/bench.sh).

Every figure is a ratio measured within this one run: each workload process
does the same FIXED amount of work (not a fixed time) in several phases and
times each itself; a fresh `ebpfprof --pid` is attached for every other phase
(order reversed every other repetition) and stopped after it. Medians of the
phases are compared. The machine these run on is small and shared, so
absolute times mean little; ratios of adjacent phases of one process hold up.

  1. sampling: CPU-bound pure Python at 100 Hz and 1000 Hz, with a shallow
     and a 300-frame stack (the kernel walks every frame on every sample);
     1b. the same at 100 Hz with the target and the profiler pinned to the
     same CPU or to different CPUs
  2. GC probes: ~1000 collections a second, a fixed number of them, under
     Debian's python3.11 (USDT probes) and pyenv's 3.11.7 (uprobes)
  3. off-CPU tracking: two threads ping-ponging through threading.Event
  4. the profiler itself: its CPU time and peak RSS while it records a
     multi-threaded workload for 10 s
  +  the kernel side: BPF run time per event of every profiled run, from
     kernel.bpf_stats_enabled (turned on for the run, restored after)

Writes a compact table to stdout, docs/benchmarks.md, and the raw numbers
to build/bench/results.json. Needs root."""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
BUILT = ROOT / "ebpfprof"
EBPFPROF = BUILT            # main() points this at a copy
DEBIAN_PY = os.environ.get("BENCH_DEBIAN_PYTHON", "/usr/bin/python3")
PYENV_PY = os.environ.get("BENCH_PYENV_PYTHON", "/root/.pyenv/versions/3.11.7/bin/python3.11")
CLK_TCK = os.sysconf("SC_CLK_TCK")
SETTLE_S = 0.3          # after the profiler has attached, before the timed part
WARMUP_PHASES = 2       # unprofiled phases run and thrown away before the measured ones
BRACKET_TOLERANCE = 1.10  # the two unprofiled phases around a profiled one must agree this well
STATS_SYSCTL = Path("/proc/sys/kernel/bpf_stats_enabled")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- bpftool

def bpftool(*args):
    try:
        res = subprocess.run(["bpftool", "-j", *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if res.returncode or not res.stdout.strip():
        return None
    try:
        return json.loads(res.stdout)
    except ValueError:
        return None


def as_list(x):
    """bpftool prints one object, not a list, when one map matches a name."""
    if x is None:
        return []
    return x if isinstance(x, list) else [x]


def elements(dump):
    """Elements of `bpftool map dump id N` (a bare list, or wrapped)."""
    if isinstance(dump, list) and dump and isinstance(dump[0], dict) and "elements" in dump[0]:
        return [e for m in dump for e in m["elements"]]
    return dump or []


def le_int(hexbytes):
    return int.from_bytes(bytes(int(b, 16) for b in hexbytes), "little")


def key_of(elem):
    f = elem.get("formatted")
    if isinstance(f, dict) and isinstance(f.get("key"), int):
        return f["key"]
    return le_int(elem["key"])


class Instance:
    """The BPF side of one ebpfprof process: its procs map and counters map
    (maps of one instance share a BTF object)."""

    def __init__(self, procs_id, btf_id):
        self.procs_id, self.btf_id = procs_id, btf_id
        self.counters_id = None
        for m in as_list(bpftool("map", "show", "name", "counters")):
            if m.get("btf_id") == btf_id:
                self.counters_id = m["id"]

    def counters(self):
        """Counters summed over the CPUs: index -> value (enum ep_counter)."""
        out = {}
        if self.counters_id is None:
            return out
        for e in elements(bpftool("map", "dump", "id", str(self.counters_id))):
            out[key_of(e)] = sum(le_int(v["value"]) for v in e["values"])
        return out

    def prog_stats(self):
        """program name -> [run_time_ns, run_cnt] of this instance's programs."""
        out = {}
        for p in as_list(bpftool("prog", "show")):
            if self.procs_id in p.get("map_ids", []):
                s = out.setdefault(p["name"], [0, 0])
                s[0] += p.get("run_time_ns", 0)
                s[1] += p.get("run_cnt", 0)
        return out

    def snapshot(self):
        return {"counters": self.counters(), "progs": self.prog_stats()}


def find_instance(pid, newer_than=0):
    """The ebpfprof instance whose procs map holds pid, once it has attached;
    only maps with ids over newer_than (an instance just stopped may linger)."""
    maps = as_list(bpftool("map", "show", "name", "procs"))
    for m in sorted((m for m in maps if m["id"] > newer_than), key=lambda m: -m["id"]):
        for e in elements(bpftool("map", "dump", "id", str(m["id"]))):
            if key_of(e) == pid:
                return Instance(m["id"], m.get("btf_id"))
    return None


# ---------------------------------------------------------------- processes

def proc_cpu(pid):
    """user+system CPU seconds of a live process, from /proc/PID/stat."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, IndexError, ValueError):
        return None


def proc_status(pid):
    """VmRSS, VmHWM (KiB) and the context switches of a live process's main thread."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM", "voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"):
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


SUMMARY_RE = re.compile(r"recorded ([\d.]+) s \(([^)]*)\): (\d+) samples, (\d+) lost, (\d+) threads?, "
                        r"CPython ([\d.]+), GC timed by (.*)")


class BenchError(RuntimeError):
    pass


STATS = {"on": False}     # kernel.bpf_stats_enabled is on: snapshot the programs' run times


def max_procs_id():
    """The newest procs map id now: a profiler started later has a higher one."""
    return max((m["id"] for m in as_list(bpftool("map", "show", "name", "procs"))), default=0)


def session(py, script, wargs, plan, target_cpu=None, label="", names=None):
    """One workload process running len(plan) phases of the same fixed work;
    plan[k] is None for an unprofiled phase, or (ebpfprof options, CPU to pin
    ebpfprof to or None) to attach a fresh `ebpfprof --pid` for that phase
    only (stopped with SIGINT after it, as a user would). target_cpu pins the
    workload. Tried a second time if it fails (a busy machine)."""
    names = names or [""] * len(plan)
    try:
        return _session(py, script, wargs, plan, target_cpu, label, names)
    except BenchError as e:
        log(f"  session failed, trying again: {e}")
        return _session(py, script, wargs, plan, target_cpu, label, names)


def _session(py, script, wargs, plan, target_cpu, label, names, timeout=600):
    tmp = Path(tempfile.mkdtemp(prefix="ebpfprof-bench-"))
    argv = [py, str(BENCH / script), *map(str, wargs), "--dir", str(tmp), "--phases", str(len(plan))]
    if target_cpu is not None:
        argv = ["taskset", "-c", str(target_cpu)] + argv
    # the child appends to its own open file: sharing one file offset with a
    # reader that seeks would make it write in the wrong place
    with open(tmp / "workload.err", "a") as child_err:
        w = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=child_err)
    werr = open(tmp / "workload.err")
    ep = None
    results = []

    def workload_error(what):
        werr.seek(0)
        return BenchError(f"{script} {what}: {werr.read()[-2000:]}")
    try:
        deadline = time.monotonic() + 30
        pid = None
        while pid is None:
            werr.seek(0)
            first = werr.readline()
            if first.startswith("pid=") and first.endswith("\n"):
                pid = int(first[4:])
            elif w.poll() is not None or time.monotonic() > deadline:
                raise workload_error("did not start")
            else:
                time.sleep(0.005)
        for k, step in enumerate(plan):
            out = {}
            inst = None
            if step is not None and step[0] == "perf":
                # reference: perf's own sampler on the same clock (no BPF, no Python stacks)
                ep = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", *map(str, step[1]),
                                       "-p", str(pid), "-o", str(tmp / f"perf-{k}.data")],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(1.0)
                if ep.poll() is not None:
                    raise BenchError(f"perf record exited ({ep.returncode})")
            elif step is not None:
                prof, ep_cpu = step
                newer_than = max_procs_id()
                epargv = [str(EBPFPROF), "--pid", str(pid), "-o", str(tmp / f"profile-{k}.json"),
                          *map(str, prof)]
                if ep_cpu is not None:
                    epargv = ["taskset", "-c", str(ep_cpu)] + epargv
                errpath = tmp / f"ebpfprof-{k}.err"
                with open(errpath, "a") as child_err:
                    ep = subprocess.Popen(epargv, stdout=subprocess.DEVNULL, stderr=child_err)
                t_start = time.monotonic()
                while inst is None:
                    if ep.poll() is not None:
                        raise BenchError(f"ebpfprof exited ({ep.returncode}) before attaching: "
                                         f"{errpath.read_text()[-2000:]}")
                    if time.monotonic() - t_start > 120:
                        raise BenchError("ebpfprof did not attach within 120 s")
                    inst = find_instance(pid, newer_than)
                    if inst is None:
                        time.sleep(0.05)
                out["attach_s"] = time.monotonic() - t_start
                time.sleep(SETTLE_S)
                if STATS["on"]:
                    snap0 = inst.snapshot()
                out["ep_cpu_go"] = proc_cpu(ep.pid)
                out["ep_status_go"] = proc_status(ep.pid)
            (tmp / f"go-{k}").touch()
            result = tmp / f"result-{k}.json"
            deadline = time.monotonic() + timeout
            while not result.exists():
                if w.poll() is not None:
                    raise workload_error(f"exited ({w.returncode}) early")
                if time.monotonic() > deadline:
                    raise BenchError(f"{script} took over {timeout} s")
                time.sleep(0.01)
            with open(result) as f:
                out.update(json.load(f))
            out["switches"] = out["voluntary"] + out["involuntary"]
            if step is not None and step[0] == "perf":
                ep.send_signal(signal.SIGINT)
                ep.wait(timeout=60)
                ep = None
                (tmp / f"perf-{k}.data").unlink(missing_ok=True)
            if ep is not None:
                out["ep_cpu_done"] = proc_cpu(ep.pid)
                out["ep_status_done"] = proc_status(ep.pid)
                if STATS["on"]:
                    out["bpf"] = bpf_figures(snap0, inst.snapshot())
                ep.send_signal(signal.SIGINT)
                _, status, ru = os.wait4(ep.pid, 0)
                ep.returncode = os.waitstatus_to_exitcode(status)
                err = errpath.read_text()
                ep = None
                if ep_rc := os.waitstatus_to_exitcode(status):
                    raise BenchError(f"ebpfprof failed ({ep_rc}): {err[-2000:]}")
                out["ep_cpu_total"] = ru.ru_utime + ru.ru_stime
                out["ep_utime"], out["ep_stime"] = ru.ru_utime, ru.ru_stime
                out["ep_maxrss_kib"] = ru.ru_maxrss
                s0, s1 = out["ep_status_go"], out["ep_status_done"]
                # ebpfprof is one thread: its voluntary switches are its sleeps, one per wake-up
                out["ep_wakeups"] = (s1.get("voluntary_ctxt_switches", 0)
                                     - s0.get("voluntary_ctxt_switches", 0))
                m = SUMMARY_RE.search(err)
                if not m:
                    raise BenchError(f"no summary line from ebpfprof: {err[-2000:]}")
                out.update(recorded_s=float(m.group(1)), samples=int(m.group(3)), lost=int(m.group(4)),
                           ep_threads=int(m.group(5)), cpython=m.group(6), gc_probe=m.group(7).strip())
                prof_file = tmp / f"profile-{k}.json"
                out["profile_bytes"] = prof_file.stat().st_size if prof_file.exists() else 0
            out["name"] = names[k]
            results.append(out)
            if label:
                log(f"  {label} {k + 1:2}/{len(plan)} {names[k]:<18} "
                    f"{out['seconds']:7.3f} s wall {out['cpu_seconds']:7.3f} s CPU"
                    + (f" {out['undisturbed_mean_us']:9.2f} us/unit" if "undisturbed_mean_us" in out else "")
                    + f" {out['switches'] / out['seconds']:8.0f} sw/s"
                    + (f"  ({out['samples']} samples, {out['lost']} lost, "
                       f"{out['ep_wakeups'] / out['seconds']:.0f} profiler wake-ups/s)" if "samples" in out else ""))
        (tmp / "release").touch()
        w.wait(timeout=60)
        return results
    finally:
        for p in (w, ep):
            if p is not None and p.returncode is None and p.poll() is None:
                p.kill()
                p.wait()
        werr.close()
        shutil.rmtree(tmp, ignore_errors=True)


BRACKET_KEYS = ("seconds", "cpu_seconds", "undisturbed_mean_us", "undisturbed_units", "units",
                "switches", "voluntary", "involuntary", "user_seconds", "sys_seconds")


def phases(py, script, wargs, configs, reps, target_cpu=None, label=""):
    """configs: [(name, (ebpfprof options, profiler CPU) or ("perf", options))].
    Runs, in one process, WARMUP_PHASES unprofiled phases that are thrown away
    (a fresh process runs its first phases slower), then an unprofiled phase,
    and after it each profiled configuration followed by another unprofiled
    phase, reps times (the configurations' order rotating). Every profiled
    phase is so bracketed by two unprofiled ones; its baseline is their mean,
    which takes out a machine whose speed drifts. Returns name -> [profiled
    phase results] and "none" -> [their baselines], paired in order. When
    the machine's speed changes spoil most brackets, the whole session is run
    once more and the one with more usable brackets kept."""
    best = None
    for attempt in range(2):
        out = _phases(py, script, wargs, configs, reps, target_cpu, label)
        ok = [b["bracket_ok"] for bs in out["none"].values() for b in bs]
        score = sum(ok) / len(ok) if ok else 1
        if best is None or score > best[0]:
            best = (score, out)
        if score >= 0.5:
            break
        log(f"  {label or script}: only {sum(ok)} of {len(ok)} comparisons usable (the machine changed "
            "speed); running the session again")
    best[1]["usable"] = best[0]
    return best[1]


def _phases(py, script, wargs, configs, reps, target_cpu, label):
    configs = [c for c in configs if c[1] is not None]     # "none" comes by itself
    order = [("warm-up", None)] * WARMUP_PHASES + [("none", None)]
    for rep in range(reps):
        k = rep % len(configs)
        for cfg in configs[k:] + configs[:k]:
            order += [cfg, ("none", None)]
    if label:
        log(f"  {label}: {len(order)} phases in one process")
    results = session(py, script, wargs, [step for _, step in order], target_cpu, label,
                      [name for name, _ in order])[WARMUP_PHASES:]
    out = {name: [] for name, _ in configs}
    baselines = {name: [] for name, _ in configs}
    for i in range(1, len(results), 2):
        before, r, after = results[i - 1], results[i], results[i + 1]
        base = {k: (before[k] + after[k]) / 2 for k in BRACKET_KEYS if k in before and k in after}
        base.update({k: v for k, v in before.items() if k not in base and not isinstance(v, (dict, list))})
        # the machine changed speed within the bracket: the comparison means nothing
        key = "undisturbed_mean_us" if "undisturbed_mean_us" in before else "seconds"
        lo, hi = sorted((before[key], after[key]))
        base["bracket_ok"] = lo > 0 and hi / lo <= BRACKET_TOLERANCE
        out[r["name"]].append(r)
        baselines[r["name"]].append(base)
    out["none"] = baselines
    # how much the machine's own speed moved: the unprofiled phases' spread
    plain = [r.get("undisturbed_mean_us") or r["seconds"] for r in results if r["name"] == "none"]
    spread = max(plain) / min(plain) if plain and min(plain) > 0 else None
    for name in baselines:
        for b in baselines[name]:
            b["spread"] = spread
    return out


def single(py, script, wargs):
    """One unprofiled phase (calibration)."""
    return session(py, script, wargs, [None])[0]


def bpf_figures(s0, s1):
    """BPF run time of the timed part, by kind of program, and the target's
    events from the counters (enum ep_counter: 0 samples, 4 switch-outs)."""
    ns = {"sample": 0, "offcpu": 0, "gc": 0, "all": 0}
    runs = {}
    for name, (t, cnt) in s1["progs"].items():
        t0, cnt0 = s0["progs"].get(name, (0, 0))
        if cnt - cnt0 <= 0:
            continue
        runs[name] = [t - t0, cnt - cnt0]
        ns["all"] += t - t0
        for kind in ("sample", "offcpu", "gc"):
            if name.startswith(kind):
                ns[kind] += t - t0
    c0, c1 = s0["counters"], s1["counters"]
    return {"ns": ns, "progs": runs, "samples": c1.get(0, 0) - c0.get(0, 0),
            "switch_outs": c1.get(4, 0) - c0.get(4, 0)}


# ---------------------------------------------------------------- statistics

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def compare(base, prof, key="seconds"):
    """Paired comparison: the median of the per-pair ratios (profiled phase /
    its bracketing baseline) and their range, the median of the per-pair
    differences, and the medians of either side for display."""
    pairs = [(a[key], q[key]) for a, q in zip(base, prof) if a.get(key)]
    ratios = [q / a for a, q in pairs]
    return {"base": med(a for a, _ in pairs), "prof": med(q for _, q in pairs),
            "ratio": med(ratios), "delta": med(q - a for a, q in pairs),
            "lo": min(ratios) if ratios else None, "hi": max(ratios) if ratios else None}


def rates(runs):
    """Median target context switches/s and profiler wake-ups/s over runs."""
    return {"switches_per_s": med(r["switches"] / r["seconds"] for r in runs if "switches" in r),
            "involuntary_per_s": med(r["involuntary"] / r["seconds"] for r in runs if "involuntary" in r),
            "wakeups_per_s": med(r["ep_wakeups"] / r["seconds"] for r in runs if "ep_wakeups" in r)}


def versus(base, prof, events_key=None, events=None):
    """Everything one table row needs: wall and CPU ratios, per-event costs,
    context switches of the target with and without, profiler wake-ups.
    Pairs whose bracket shows the machine changing speed are left out (all
    are kept if that would leave fewer than two)."""
    ok = [(b, p) for b, p in zip(base, prof) if b.get("bracket_ok", True)]
    dropped = len(base) - len(ok)
    if len(ok) >= 2:
        base, prof = [b for b, _ in ok], [p for _, p in ok]
    else:
        dropped = None      # too few good brackets: everything kept, row unreliable
    wall = compare(base, prof)
    cpu = compare(base, prof, "cpu_seconds")
    n = events if events is not None else med(r[events_key] for r in prof)
    und = compare(base, prof, "undisturbed_mean_us")
    units = med(r["units"] for r in prof)
    row = {"wall": wall, "cpu": cpu, "undisturbed": und, "events": n, "units": units,
           "us_per_event": wall["delta"] / n * 1e6 if n else None,
           "cpu_us_per_event": cpu["delta"] / n * 1e6 if n else None,
           "und_us_per_event": und["delta"] * units / n if n else None,
           "kept": med(r["undisturbed_units"] / r["units"] for r in base + prof),
           "base_rates": rates(base), "prof_rates": rates(prof),
           "lost": max((r.get("lost", 0) for r in prof), default=0),
           "runs": {"base": base, "prof": prof},
           "base_spread": max((b.get("spread") or 1 for b in base), default=None),
           "pairs": len(base), "dropped": dropped}
    row["bpf"] = bpf_medians(prof)
    return row


def bpf_medians(runs):
    """Median BPF time per event of the target, over the runs that have it."""
    b = [r["bpf"] for r in runs if "bpf" in r]
    if not b:
        return None
    return {"sample_us": med(x["ns"]["sample"] / x["samples"] / 1e3 for x in b if x["samples"]),
            "offcpu_us": med(x["ns"]["offcpu"] / x["switch_outs"] / 1e3 for x in b if x["switch_outs"]),
            "gc_us": med(x["ns"]["gc"] / r["collections"] / 1e3
                         for x, r in zip(b, runs) if r.get("collections") and x["ns"]["gc"]),
            "switch_outs_per_s": med(x["switch_outs"] / r["seconds"] for x, r in zip(b, runs)),
            "share": med(x["ns"]["all"] / 1e9 / r["seconds"] for x, r in zip(b, runs)),
            "progs": {n: med(x["progs"].get(n, [0, 0])[0] / 1e6 for x in b)
                      for n in sorted({n for x in b for n in x["progs"]})}}


# ---------------------------------------------------------------- the benchmarks

def bench_sampling(cfg):
    log("1. sampling overhead (CPU-bound, fixed work)")
    probe = single(DEBIAN_PY, "cpu.py", ["--rounds", 300])
    rounds = max(100, int(300 * cfg.cpu_seconds / probe["cpu_seconds"]))
    log(f"  calibrated: {rounds} rounds of crunch(1000) ~ {cfg.cpu_seconds:.1f} s of CPU")
    rows = []
    perf = shutil.which("perf")
    for depth in (1, 300):
        configs = [("none", None), ("100 Hz", (["-r", 100], None)), ("1000 Hz", (["-r", 1000], None))]
        if perf and depth == 1:
            configs.append(("perf 1000 Hz", ("perf", ["-F", 1000])))
        res = phases(DEBIAN_PY, "cpu.py", ["--rounds", rounds, "--depth", depth], configs,
                     cfg.reps, label=f"depth {depth}")
        for rate in ("100 Hz", "1000 Hz"):
            row = versus(res["none"][rate], res[rate], events_key="samples")
            row.update(depth=depth, rate=rate)
            rows.append(row)
        if "perf 1000 Hz" in res:
            # perf reports no sample count here: count the clock's ticks over the CPU time
            row = versus(res["none"]["perf 1000 Hz"], res["perf 1000 Hz"],
                         events=med(r["cpu_seconds"] for r in res["perf 1000 Hz"]) * 1000)
            row.update(depth=depth, rate="perf record -F 1000 (reference)")
            rows.append(row)
    return {"rounds": rounds, "rows": rows}


def bench_placement(cfg, rounds):
    """Where the profiler runs: on the target's CPU, or on the other."""
    if (os.cpu_count() or 1) < 2 or not shutil.which("taskset"):
        return {"skipped": "needs 2 CPUs and taskset"}
    log("1b. sampling at 100 Hz, target pinned to CPU 1, profiler on CPU 0 or on CPU 1")
    res = phases(DEBIAN_PY, "cpu.py", ["--rounds", rounds, "--depth", 1],
                 [("none", None), ("profiler on CPU 0", (["-r", 100], 0)),
                  ("profiler on CPU 1", (["-r", 100], 1))],
                 cfg.placement_reps, target_cpu=1, label="placement")
    rows = []
    for name in ("profiler on CPU 0", "profiler on CPU 1"):
        row = versus(res["none"][name], res[name], events_key="samples")
        row["name"] = name
        rows.append(row)
    return {"rows": rows}


def calibrate_gc(py, target_rate, quick):
    threshold, n = 8000, (200 if quick else 500)
    for _ in range(3):
        r = single(py, "gc_rate.py", ["--threshold", threshold, "--collections", n])
        rate = n / r["cpu_seconds"]
        new = int(min(200000, max(100, threshold * rate / target_rate)))
        if abs(new - threshold) < 0.05 * threshold:
            break
        threshold = new
    return threshold


def bench_gc(cfg):
    log("2. GC probe cost (fixed number of collections)")
    rows = []
    for name, py, expect in (("Debian python3.11 (USDT)", DEBIAN_PY, "USDT"),
                             ("pyenv 3.11.7 (uprobes)", PYENV_PY, "uprobe")):
        if not os.access(py, os.X_OK):
            log(f"  {name}: {py} is missing, skipped")
            rows.append({"name": name, "missing": py})
            continue
        threshold = calibrate_gc(py, cfg.gc_rate, cfg.quick)
        log(f"  {name}: gen-0 threshold {threshold} for ~{cfg.gc_rate}/s")
        res = phases(py, "gc_rate.py", ["--threshold", threshold, "--collections", cfg.collections],
                     [("none", None), ("profiled -r 1", (["-r", 1], None))], cfg.reps,
                     label=name.split()[0])
        row = versus(res["none"]["profiled -r 1"], res["profiled -r 1"], events_key="collections")
        empty = phases(py, "gc_empty.py", ["--n", cfg.empty_collections],
                       [("profiled -r 1", (["-r", 1], None))], cfg.reps, label=name.split()[0] + " empty")
        row["empty"] = versus(empty["none"]["profiled -r 1"], empty["profiled -r 1"],
                              events_key="collections")
        row.update(name=name, threshold=threshold, expected_probe=expect,
                   per_generation=res["profiled -r 1"][0]["per_generation"],
                   rate=row["events"] / row["wall"]["base"],
                   gc_probe=sorted({r["gc_probe"] for r in res["profiled -r 1"]}))
        rows.append(row)
    return {"rows": rows}


def bench_offcpu(cfg):
    log("3. off-CPU tracking cost (ping-pong, fixed round trips)")
    probe = single(DEBIAN_PY, "pingpong.py", ["--round-trips", 5000])
    trips = max(1000, int(5000 * cfg.pingpong_seconds / probe["seconds"]))
    log(f"  calibrated: {trips} round trips ~ {cfg.pingpong_seconds:.1f} s")
    res = phases(DEBIAN_PY, "pingpong.py", ["--round-trips", trips],
                 [("none", None), ("profiled -r 1", (["-r", 1], None))], cfg.reps, label="ping-pong")
    row = versus(res["none"]["profiled -r 1"], res["profiled -r 1"], events_key="switches")
    row.update(round_trips=trips, switches_base=med(r["switches"] for r in res["none"]["profiled -r 1"]))
    deep = phases(DEBIAN_PY, "pingpong.py", ["--round-trips", trips, "--depth", 300],
                  [("profiled -r 1", (["-r", 1], None))], cfg.reps, label="ping-pong 300 frames")
    row["deep"] = versus(deep["none"]["profiled -r 1"], deep["profiled -r 1"], events_key="switches")
    row["deep"]["switches_base"] = med(r["switches"] for r in deep["none"]["profiled -r 1"])
    return row


def bench_self(cfg):
    log(f"4. the profiler's own CPU and memory ({cfg.record_seconds:.0f} s recordings)")
    # one process: an unprofiled phase, then 100 Hz and 1000 Hz alternately
    configs = [("100 Hz", (["-r", 100], None)), ("1000 Hz", (["-r", 1000], None))]
    order = [("none", None)]
    for rep in range(cfg.self_reps):
        order += configs if rep % 2 == 0 else configs[::-1]
    results = session(DEBIAN_PY, "multi.py", ["--seconds", cfg.record_seconds],
                      [step for _, step in order], label="multi", names=[n for n, _ in order])
    res = {"100 Hz": [], "1000 Hz": []}
    for r in results[1:]:
        res[r["name"]].append(r)
    alone_runs = results[:1]
    alone_sw = med(r["switches"] / r["seconds"] for r in alone_runs)
    alone_gc = med(r["collections"] / r["seconds"] for r in alone_runs)
    rows = []
    for rate in (100, 1000):
        runs = res[f"{rate} Hz"]
        for r in runs:
            log(f"  {rate} Hz: ebpfprof {r['ep_cpu_total']:.2f} s CPU, max RSS "
                f"{r['ep_maxrss_kib'] / 1024:.1f} MiB, {r['samples']} samples, {r['lost']} lost, "
                f"{r['ep_wakeups'] / r['seconds']:.0f} wake-ups/s")
        go = [r["ep_status_go"] for r in runs]
        done = [r["ep_status_done"] for r in runs]
        rows.append({
            "rate": rate, "seconds": med(r["seconds"] for r in runs),
            "startup_cpu": med(r["ep_cpu_go"] for r in runs),
            "attach_s": med(r["attach_s"] for r in runs),
            "cpu_per_s": med((r["ep_cpu_done"] - r["ep_cpu_go"]) / r["seconds"] for r in runs),
            "finish_cpu": med(r["ep_cpu_total"] - r["ep_cpu_done"] for r in runs),
            "total_cpu": med(r["ep_cpu_total"] for r in runs),
            "utime": med(r["ep_utime"] for r in runs), "stime": med(r["ep_stime"] for r in runs),
            "maxrss_mib": med(r["ep_maxrss_kib"] for r in runs) / 1024,
            "rss_go_mib": med(s.get("VmRSS", 0) for s in go) / 1024,
            "hwm_done_mib": med(s.get("VmHWM", 0) for s in done) / 1024,
            "growth_kib_per_s": med((d.get("VmHWM", 0) - g.get("VmRSS", 0)) / r["seconds"]
                                    for g, d, r in zip(go, done, runs)),
            "samples_per_s": med(r["samples"] / r["recorded_s"] for r in runs),
            "switches_per_s": med(r["switches"] / r["seconds"] for r in runs),
            "switches_alone_per_s": alone_sw, "gcs_alone_per_s": alone_gc,
            "cpu_alone": med(r["cpu_seconds"] / r["seconds"] for r in alone_runs),
            "cpu_prof": med(r["cpu_seconds"] / r["seconds"] for r in runs),
            "wakeups_per_s": med(r["ep_wakeups"] / r["seconds"] for r in runs),
            "gcs_per_s": med(r["collections"] / r["seconds"] for r in runs),
            "threads": runs[0]["threads"],
            "profile_mib": med(r["profile_bytes"] for r in runs) / 2**20,
            "bpf": bpf_medians(runs),
            "lost": max(r["lost"] for r in runs), "runs": runs})
    return {"rows": rows, "alone": alone_runs}


# ---------------------------------------------------------------- reporting

def binary_id(path):
    """sha256 (first 12 hex digits) and modification time of a binary."""
    import hashlib
    st = path.stat()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    when = datetime.datetime.fromtimestamp(st.st_mtime).astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")
    return f"sha256 {digest}, built {when}"


def machine():
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem = "?"
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 2**20:.1f} GiB"
    os_name = "?"
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    os_name = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    ver = subprocess.run([str(EBPFPROF), "--version"], capture_output=True, text=True).stdout.strip()
    with open("/proc/cpuinfo") as f:
        virt = "a virtual machine" if " hypervisor" in f.read() else "bare metal"
    mitigations = []
    for v in ("meltdown", "spectre_v2", "spec_rstack_overflow"):
        try:
            mitigations.append(f"{v}: " + Path(f"/sys/devices/system/cpu/vulnerabilities/{v}").read_text().strip())
        except OSError:
            pass
    return {"nproc": os.cpu_count(), "kernel": platform.release(), "cpu": model, "mem": mem,
            "os": os_name, "ebpfprof": ver or "?", "virt": virt, "mitigations": mitigations,
            "pythons": {p: subprocess.run([p, "-VV"], capture_output=True, text=True).stdout.strip()
                        for p in (DEBIAN_PY, PYENV_PY) if os.access(p, os.X_OK)}}


def pct(ratio, digits=0):
    return f"{(ratio - 1) * 100:+.{digits}f}%"


def fmt_ratio(c, digits=2):
    return f"{c['ratio']:.{digits}f} ({c['lo']:.{digits}f}-{c['hi']:.{digits}f})"


def num(x, fmt=".2f"):
    return "n/a" if x is None else format(x, fmt)


def sw(row):
    """target switches/s unprofiled -> profiled, and profiler wake-ups/s"""
    b, p = row["base_rates"], row["prof_rates"]
    return (f"{num(b['switches_per_s'], '.0f')} -> {num(p['switches_per_s'], '.0f')}",
            num(p["wakeups_per_s"], ".0f"))


def bpf_us(row, kind):
    """Median BPF run time per event of this kind (us), or None."""
    b = row.get("bpf")
    return b and b.get(f"{kind}_us")


def costs(row):
    return (f"{num(row['us_per_event'], '.1f')} / {num(row['cpu_us_per_event'], '.1f')} / "
            f"{num(row['und_us_per_event'], '.2f')}")


def summary_table(R):
    """The compact table printed at the end: one line per measurement."""
    head = (f"{'benchmark':<34} {'unprof s':>8} {'prof s':>8} {'wall x':>6} {'CPU x':>6} {'undist x':>8} "
            f"{'target sw/s':>15} {'prof wake/s':>11} {'BPF us/ev':>9}  cost us per event: wall / CPU / undisturbed")
    lines = [head, "-" * len(head)]

    def line(label, row, kind, what):
        s, wk = sw(row)
        lines.append(f"{label:<34} {row['wall']['base']:8.3f} {row['wall']['prof']:8.3f} "
                     f"{row['wall']['ratio']:6.2f} {row['cpu']['ratio']:6.2f} {row['undisturbed']['ratio']:8.3f} "
                     f"{s:>15} {wk:>11} {num(bpf_us(row, kind)):>9}  {costs(row)} per {what}")
    for row in R["sampling"]["rows"]:
        if row["rate"].startswith("perf"):
            line(f"1 ref: perf record -F 1000, depth {row['depth']}", row, "sample", "tick")
        else:
            line(f"1 sampling {row['rate']}, depth {row['depth']}", row, "sample", "sample")
    for row in R["placement"].get("rows", []):
        line(f"1b 100 Hz, {row['name']}", row, "sample", "sample")
    for row in R["gc"]["rows"]:
        if "missing" in row:
            lines.append(f"{'2 GC ' + row['name']:<34} skipped: {row['missing']} missing")
            continue
        line(f"2 GC {row['name']}", row, "gc", f"collection ({row['rate']:.0f}/s unprofiled)")
        e = row["empty"]
        lines.append(f"{'  same, empty collections':<34} {e['wall']['base']:8.3f} {e['wall']['prof']:8.3f} "
                     f"{'':>6} {'':>6} {'':>8} {'':>15} {'':>11} {num(bpf_us(e, 'gc')):>9}  "
                     f"{costs(e)} per collection (probe hit alone)")
    line("3 off-CPU ping-pong", R["offcpu"], "offcpu", "switch")
    if R["offcpu"].get("deep"):
        line("3 off-CPU ping-pong, 300 frames", R["offcpu"]["deep"], "offcpu", "switch")
    for row in R["self"]["rows"]:
        lines.append(f"{'4 ebpfprof itself, ' + str(row['rate']) + ' Hz':<34} "
                     f"{row['cpu_per_s'] * 100:.1f}% of a CPU while recording "
                     f"({row['wakeups_per_s']:.0f} wake-ups/s), startup {row['startup_cpu']:.2f} s CPU, "
                     f"write {row['finish_cpu']:.2f} s, peak RSS {row['maxrss_mib']:.1f} MiB, "
                     f"+{row['growth_kib_per_s']:.0f} KiB/s")
    return "\n".join(lines)


def write_markdown(R, path):
    M = R["machine"]
    cfg = R["config"]
    L = []
    a = L.append
    a("# ebpfprof benchmarks")
    a("")
    a("Overhead of profiling a CPython process with `ebpfprof --pid`, and the profiler's own cost. "
      "Generated by `make bench` (`scripts/bench.sh` -> `bench/run.py`); every figure below is from "
      "the run described here. Speed and memory targets are tracked here, not in timed tests.")
    a("")
    a(f"- **Date:** {R['date']} (the whole run took {R['elapsed_s'] / 60:.1f} min)")
    a(f"- **Machine:** nproc {M['nproc']}, {M['cpu']}, {M['mem']} RAM, kernel {M['kernel']}, {M['os']}, "
      f"{M['virt']}")
    if M.get("mitigations"):
        a(f"- **CPU vulnerability mitigations** (every kernel entry pays them; they weigh on trap and "
          f"interrupt costs): {'; '.join(M['mitigations'])}")
    a(f"- **Load average:** {R['loadavg_before']} before the run, {R['loadavg_after']} after "
      "(the VM is shared with other jobs; see *Method*)")
    a(f"- **ebpfprof:** {M['ebpfprof']}, binary {R['binary']}")
    if R.get("binary_after") != R["binary"]:
        a(f"- **Note:** ./ebpfprof was rebuilt during the run (now {R.get('binary_after')}); "
          "every figure here is of the copy taken at the start")
    for p, v in M["pythons"].items():
        a(f"- **{p}:** {v.splitlines()[0]}")
    a(f"- **Repetitions:** {cfg['reps']} alternating phases per configuration in one process per "
      f"benchmark ({cfg['placement_reps']} for 1b, {cfg['self_reps']} for 4); figures are medians")
    a("")
    a("## Summary")
    a("")
    for obs in R["observations"]:
        a(f"- {obs}")
    a("")
    a("```")
    a(R["table"])
    a("```")
    a("")
    a("*wall x*, *CPU x*: profiled / unprofiled median wall time and CPU time of the fixed work; "
      "*undist x*: the same for the mean time of undisturbed units of work (see *Method*). "
      "*target sw/s*: context switches per second of the target (all its threads), unprofiled -> "
      "profiled. *prof wake/s*: times per second the ebpfprof process went to sleep and was woken. "
      "*cost per event*: (profiled - unprofiled) / events, from the wall, CPU and undisturbed times. "
      "*BPF us/ev*: kernel-accounted run time of the BPF programs per event (see the last section).")
    a("")
    a("## Reproduce")
    a("")
    a("```sh")
    a("sudo make bench                     # builds ./ebpfprof first; 5 to 10 minutes")
    a("sudo scripts/bench.sh --reps 9      # more repetitions; --quick: a 1-minute smoke run")
    a("```")
    a("")
    a("Needs root (BPF, perf events, uprobes), `bpftool` (to see when the profiler has attached, and "
      f"to read BPF run times), `taskset`, Debian's `{DEBIAN_PY}` (3.11, USDT probes) and pyenv's "
      f"`{PYENV_PY}` (shared libpython, unstripped: GC timed by uprobes). "
      "Raw numbers of the last run, every repetition: `build/bench/results.json`.")
    a("")
    a("## Method")
    a("")
    a("Each workload (`bench/*.py`) runs in one process per benchmark and does the same **fixed "
      "amount of work** in several phases, timing each itself with `time.perf_counter()` (wall) and "
      "`time.process_time()` (CPU time of the whole process) and counting its context switches "
      "(`getrusage`). Before a profiled phase the harness starts a fresh `ebpfprof --pid PID`, waits "
      "until the profiler's BPF `procs` map holds the PID (attached and sampling), waits "
      f"{SETTLE_S} s more, then lets the phase start; after the phase it stops ebpfprof with SIGINT, "
      "as a user would. Every profiled phase sits between two unprofiled ones (none, 100 Hz, none, "
      "1000 Hz, none, 1000 Hz, none, 100 Hz, ..., the order of the configurations rotating), so each "
      "comparison is between phases of one process next to each other in time. "
      f"{WARMUP_PHASES} unprofiled warm-up phases come first and are thrown away (a fresh process "
      "runs its first phases slower). Profiler startup and writing the profile are outside the "
      "timed phases (benchmark 4 measures them).")
    a("")
    a("**Ratio**: each profiled phase is compared with the mean of the two unprofiled phases on "
      "either side of it; the ratio is the median of these per-phase ratios, the range in brackets "
      "their smallest and largest; *unprofiled s* and *profiled s* are medians of either side. A "
      "comparison whose two unprofiled phases differ by more than "
      f"{(BRACKET_TOLERANCE - 1) * 100:.0f}% (the machine changed speed meanwhile) is left out; the "
      "summary says how many were. "
      "The machine is a 2-CPU VM shared with other jobs and its speed drifts by tens of percent "
      "within seconds, so read a ratio with its range. The **CPU ratio** is the same comparison on "
      "the workload's own CPU time: the kernel has no IRQ time accounting "
      "(`CONFIG_IRQ_TIME_ACCOUNTING` unset), so the BPF programs that run in the target's context "
      "(sampling interrupt, uprobes, `sched_switch`) and the context switches the profiler causes "
      "are charged to the target's CPU time, while time other jobs take the CPU is not (time the "
      "hypervisor takes is: there is no steal-time accounting). **Cost per event** = median over "
      "the phases of (profiled - bracketing unprofiled time) / events, the events being the samples "
      "ebpfprof reports, or the collections or context switches the workload counted; within the "
      "noise it can come out negative.")
    a("")
    a("**Undisturbed** figures: the workload also times every unit of its work (a `crunch(1000)` "
      "call, an allocate-and-collect cycle, a round trip; tens of microseconds to a millisecond). A "
      "unit during which the process was descheduled takes a time slice longer; units over 1.5 x "
      f"the median + 200 us are dropped (typically {(1 - R['kept_median']) * 100:.0f}% of them in "
      "this run) and the rest averaged. That keeps what the profiler adds in the target's own "
      "context (BPF programs, perf interrupts, uprobe traps) and drops what other jobs do; it also "
      "drops preemptions the profiler itself causes, which the whole-phase wall and CPU figures "
      "keep. Undisturbed cost per event = (difference of the undisturbed means) x units / events.")
    a("")
    a("Benchmarks 2 and 3 profile with `-r 1` (one sample a second) so that the figure is the cost of "
      "the GC probes, or of the off-CPU tracker, without sampling; at the default 100 Hz add "
      "benchmark 1. The `sched_switch` tracker is always on (it feeds the thread state table and "
      "`--idle`), so every benchmark includes it for the switches the target makes.")
    a("")

    S = R["sampling"]
    a("## 1. Sampling overhead")
    a("")
    a(f"`bench/cpu.py`: {S['rounds']} calls of a pure-Python arithmetic loop (`crunch(1000)`), made "
      "at the bottom of a recursion of *depth* frames, under Debian's python3.11. On every sample the "
      "BPF program finds the thread's `PyThreadState` and walks every frame of its Python stack "
      "(up to 512), so the deep variant shows the cost of the walk. As a reference, the depth-1 "
      "workload also runs under `perf record -F 1000 -e cpu-clock -p PID` (the same software clock, "
      "perf's own handler, no BPF and no Python stacks); its *samples* are 1000 per CPU second.")
    a("")
    a("| stack depth | rate | unprofiled s | profiled s | wall ratio (range) | CPU ratio (range) | undisturbed ratio (range) | samples | target switches/s unprof -> prof | profiler wake-ups/s | cost per sample us, wall / CPU / undisturbed |")
    a("|---|---|---|---|---|---|---|---|---|---|---|")
    for row in S["rows"]:
        s, wk = sw(row)
        a(f"| {row['depth']} | {row['rate']} | {row['wall']['base']:.3f} | {row['wall']['prof']:.3f} | "
          f"{fmt_ratio(row['wall'])} | {fmt_ratio(row['cpu'])} | {fmt_ratio(row['undisturbed'], 3)} | "
          f"{row['events']:.0f} | {s} | {wk} | {costs(row)} |")
    a("")
    P = R["placement"]
    a("### 1b. Where the profiler runs")
    a("")
    if "skipped" in P:
        a(f"Skipped: {P['skipped']}.")
    else:
        a("The same depth-1 workload at 100 Hz with `taskset`: the target always on CPU 1 (the "
          "unprofiled baseline too), ebpfprof on CPU 0 or on CPU 1 with the target. Left to the "
          "scheduler (benchmark 1) the profiler lands on either.")
        a("")
        a("| profiler | unprofiled s | profiled s | wall ratio (range) | CPU ratio (range) | undisturbed ratio (range) | samples | target switches/s unprof -> prof | profiler wake-ups/s | cost per sample us, wall / CPU / undisturbed |")
        a("|---|---|---|---|---|---|---|---|---|---|")
        for row in P["rows"]:
            s, wk = sw(row)
            a(f"| {row['name']} | {row['wall']['base']:.3f} | {row['wall']['prof']:.3f} | "
              f"{fmt_ratio(row['wall'])} | {fmt_ratio(row['cpu'])} | {fmt_ratio(row['undisturbed'], 3)} | "
              f"{row['events']:.0f} | {s} | {wk} | {costs(row)} |")
    a("")

    G = R["gc"]
    a("## 2. GC probe cost")
    a("")
    a(f"`bench/gc_rate.py`: makes cyclic garbage until the collector has run {cfg['collections']} "
      f"times; the generation-0 threshold is calibrated per interpreter for about {cfg['gc_rate']} "
      "collections per second of CPU time (on a busy machine the wall-clock rate is lower). Nothing "
      "survives and the interpreter's own objects are frozen out with `gc.freeze()`, so every "
      "collection does the same work; a `gc.callbacks` entry stamps the end of each collection, so "
      "the undisturbed unit is one allocate-and-collect cycle. ebpfprof times every collection: a probe at its start, "
      "another at its end, which also walks the Python stack that triggered it and sends an event "
      "through the ring buffer. Profiled with `-r 1`. *Empty collection*: `bench/gc_empty.py` calls "
      f"`gc.collect(0)` {cfg['empty_collections']} times per phase with nothing to collect, so the "
      "probe hits (traps, BPF programs, event) stand alone.")
    a("")
    a("| interpreter (GC timed by) | threshold | collections/s unprofiled | unprofiled s | profiled s | wall ratio (range) | CPU ratio (range) | undisturbed ratio (range) | target switches/s unprof -> prof | profiler wake-ups/s | cost per collection us, wall / CPU / undisturbed | BPF us per collection | empty collection: cost us, wall / CPU / undisturbed (BPF us) |")
    a("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in G["rows"]:
        if "missing" in row:
            a(f"| {row['name']} | skipped: `{row['missing']}` is missing | | | | | | | | | | | |")
            continue
        s, wk = sw(row)
        a(f"| {row['name']} | {row['threshold']} | {row['rate']:.0f} | {row['wall']['base']:.3f} | "
          f"{row['wall']['prof']:.3f} | {fmt_ratio(row['wall'])} | {fmt_ratio(row['cpu'])} | "
          f"{fmt_ratio(row['undisturbed'], 3)} | {s} | {wk} | {costs(row)} | {num(bpf_us(row, 'gc'))} | "
          f"{costs(row['empty'])} ({num(bpf_us(row['empty'], 'gc'))}) |")
    a("")
    for row in G["rows"]:
        if "missing" not in row:
            a(f"- {row['name']}: generations 0/1/2 collected {'/'.join(map(str, row['per_generation']))} "
              f"times; ebpfprof reported GC timed by {', '.join(row['gc_probe'])}; "
              f"{row['lost']} events lost.")
    a("")

    O = R["offcpu"]
    a("## 3. Off-CPU tracking cost")
    a("")
    a(f"`bench/pingpong.py`: two threads pass a token {O['round_trips']} times through two "
      "`threading.Event`s. Every switch-out of a profiled thread runs the `sched_switch` BPF program, "
      "which classifies the wait, walks the Python stack and sends it; the switch-in sends a second, "
      "small record. Context switches of both threads are counted with `getrusage` (voluntary + "
      "involuntary). Profiled with `-r 1`. The second row has both threads wait at the bottom of "
      "a 300-frame recursion, so every switch-out walks 300 frames.")
    a("")
    a("| stack depth | round trips | switches per run, unprofiled | unprofiled s | profiled s | wall ratio (range) | CPU ratio (range) | undisturbed ratio (range) | target switches/s unprof -> prof | profiler wake-ups/s | cost per switch us, wall / CPU / undisturbed | BPF us per switch-out |")
    a("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for depth, row in ((1, O), (300, O.get("deep"))):
        if not row:
            continue
        s, wk = sw(row)
        a(f"| {depth} | {O['round_trips']} | {row['switches_base']:.0f} | {row['wall']['base']:.3f} | "
          f"{row['wall']['prof']:.3f} | {fmt_ratio(row['wall'])} | {fmt_ratio(row['cpu'])} | "
          f"{fmt_ratio(row['undisturbed'], 3)} | {s} | {wk} | {costs(row)} | {num(bpf_us(row, 'offcpu'))} |")
    a("")
    a(f"Events lost to a full ring buffer (worst recording): {O['lost']} at depth 1"
      + (f", {O['deep']['lost']} at 300 frames" if O.get("deep") else "") + ". The cost per switch divides by the profiled run's "
      "switches.")
    a("")

    F = R["self"]
    a("## 4. The profiler's own CPU and memory")
    a("")
    a(f"`bench/multi.py` under Debian's python3.11: "
      f"{F['rows'][0]['threads']} threads (two CPU spinners 40 frames deep, a garbage maker, a "
      "ping-pong pair, a 1 ms sleeper, a socket reader and writer, the main thread), in one process: "
      f"a {cfg['record_seconds']:.0f} s phase without the profiler, then {cfg['self_reps']} "
      f"{cfg['record_seconds']:.0f} s recordings at each rate, alternately, each by a fresh "
      "`ebpfprof --pid` stopped with SIGINT. CPU time of the ebpfprof process from `/proc/PID/stat` "
      "once it has attached (*startup*) and when the phase ends (*while recording*), and from "
      "`wait4()` rusage at exit (*to write the profile*, *total*): user + system time of the "
      "profiler process, which drains the ring buffer; its BPF programs run in the target's context "
      "and are charged there (benchmarks 1-3, and the kernel-side table). Peak RSS is `ru_maxrss`; "
      "RSS growth is VmHWM at the end of the phase less VmRSS at its start. Medians over the "
      "recordings at each rate.")
    a("")
    a("| rate | samples/s | target switches/s unprof -> prof | collections/s unprof -> prof | profiler wake-ups/s | startup CPU s (attach wall s) | CPU while recording, per s | CPU to write the profile s | total CPU s (user / sys) | RSS at go MiB | peak RSS MiB | RSS growth KiB/s | profile MiB | lost |")
    a("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in F["rows"]:
        a(f"| {row['rate']} Hz | {row['samples_per_s']:.0f} | {row['switches_alone_per_s']:.0f} -> {row['switches_per_s']:.0f} | "
          f"{row['gcs_alone_per_s']:.0f} -> {row['gcs_per_s']:.0f} | "
          f"{row['wakeups_per_s']:.0f} | {row['startup_cpu']:.2f} ({row['attach_s']:.2f}) | "
          f"{row['cpu_per_s'] * 1000:.0f} ms ({row['cpu_per_s'] * 100:.1f}% of a CPU) | "
          f"{row['finish_cpu']:.2f} | {row['total_cpu']:.2f} ({row['utime']:.2f} / {row['stime']:.2f}) | "
          f"{row['rss_go_mib']:.1f} | {row['maxrss_mib']:.1f} | {row['growth_kib_per_s']:.0f} | "
          f"{row['profile_mib']:.2f} | {row['lost']} |")
    a("")

    a("## Kernel side: BPF run time")
    a("")
    if not R.get("bpf_stats"):
        a(f"Not measured: {R.get('bpf_stats_why', 'kernel.bpf_stats_enabled is not available')}.")
    else:
        a("Every profiled run above ran with `kernel.bpf_stats_enabled=1` (restored afterwards; it adds "
          "two clock reads to each program run). From the run time the kernel accounts to the "
          "instance's BPF programs over the timed part: per event of the target (sample, collection, "
          "switch-out; medians over the runs), and all programs together as a share of the run's wall "
          "time. It is the time inside the programs only: the perf interrupt, the uprobe trap and the "
          "context switches come on top. The sampler and the `sched_switch` program also run, briefly, "
          "for every other task on the machine, so per-event figures are upper bounds.")
        a("")
        a("| case | sample us | collection us | switch-out us | target switch-outs/s | all programs, share of the run | median ms per program |")
        a("|---|---|---|---|---|---|---|")
        cases = ([(f"1 sampling {r['rate']}, depth {r['depth']}", r) for r in R["sampling"]["rows"]] +
                 [(f"1b 100 Hz, {r['name']}", r) for r in R["placement"].get("rows", [])] +
                 [(f"2 GC {r['name']}", r) for r in R["gc"]["rows"] if "missing" not in r] +
                 [("3 off-CPU ping-pong", R["offcpu"])] +
                 ([("3 off-CPU ping-pong, 300 frames", R["offcpu"]["deep"])] if R["offcpu"].get("deep") else []) +
                 [(f"4 ebpfprof itself, {r['rate']} Hz", r) for r in R["self"]["rows"]])
        for label, row in cases:
            b = row.get("bpf")
            if not b:
                continue
            progs = ", ".join(f"{n} {v:.1f}" for n, v in b["progs"].items() if v >= 0.05)
            a(f"| {label} | {num(b['sample_us'])} | {num(b['gc_us'])} | {num(b['offcpu_us'])} | "
              f"{num(b['switch_outs_per_s'], '.0f')} | {b['share'] * 100:.2f}% | {progs} |")
    a("")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(L) + "\n")


def noise(c):
    """A warning when the per-pair ratios straddle 1: the effect is within the noise."""
    if c.get("lo") is not None and c["lo"] < 1 < c["hi"]:
        return f"; within the noise, pairs range {c['lo']:.3f}-{c['hi']:.3f}"
    return ""


def observations(R):
    """Plain statements computed from the figures, for the doc and the log."""
    out = []
    rows = {(r["depth"], r["rate"]): r for r in R["sampling"]["rows"]}
    for depth in (1, 300):
        r1, r2 = rows.get((depth, "100 Hz")), rows.get((depth, "1000 Hz"))
        if r1 and r2:
            out.append(f"Sampling, {depth}-frame stack: at 100 Hz {pct(r1['wall']['ratio'])} wall, "
                       f"{pct(r1['cpu']['ratio'])} CPU, {pct(r1['undisturbed']['ratio'], 1)} undisturbed "
                       f"({num(r1['und_us_per_event'], '.1f')} us per sample{noise(r1['undisturbed'])}); "
                       f"at 1000 Hz {pct(r2['wall']['ratio'])} wall, {pct(r2['cpu']['ratio'])} CPU, "
                       f"{pct(r2['undisturbed']['ratio'], 1)} undisturbed "
                       f"({num(r2['und_us_per_event'], '.1f')} us per sample{noise(r2['undisturbed'])}).")
    ref = next((r for r in R["sampling"]["rows"] if r["rate"].startswith("perf")), None)
    mine = rows.get((1, "1000 Hz"))
    if ref and mine:
        out.append(f"Reference: `perf record -F 1000 -e cpu-clock` on the same target costs "
                   f"{pct(ref['undisturbed']['ratio'], 1)} undisturbed ({num(ref['und_us_per_event'], '.0f')} us "
                   f"per tick), ebpfprof at 1000 Hz {pct(mine['undisturbed']['ratio'], 1)} "
                   f"({num(mine['und_us_per_event'], '.0f')} us per sample, of which "
                   f"{num(bpf_us(mine, 'sample'), '.1f')} us in the BPF program): most of a sample's cost "
                   "here is the timer interrupt itself, which perf pays as well.")
    # the profiler's wake-ups preempting the target, each preemption waking it again
    loops = []
    for label, row in ([(f"sampling {r['rate']} depth {r['depth']}", r) for r in R["sampling"]["rows"]] +
                       [(f"GC {r['name']}", r) for r in R["gc"]["rows"] if "missing" not in r]):
        b, p = row["base_rates"], row["prof_rates"]
        if p["switches_per_s"] and p["switches_per_s"] > max(1000, 5 * (b["switches_per_s"] or 0)):
            loops.append((label, b["switches_per_s"], p["switches_per_s"], p["wakeups_per_s"]))
    if loops:
        worst = max(loops, key=lambda x: x[2])
        out.append(
            f"**Feedback loop between the off-CPU tracker and its reader.** A single-threaded, "
            f"CPU-bound target that switches {worst[1]:.0f} times a second alone switched "
            f"{worst[2]:.0f} times a second profiled ({worst[0]}), about as often as ebpfprof woke up "
            f"({worst[3]:.0f}/s); {len(loops)} of the {len(R['sampling']['rows']) + len(R['gc']['rows'])} "
            "single-threaded cases show it. Every switch-out of the target sends a ring-buffer record "
            "that wakes ebpfprof; woken on the target's CPU it preempts the target, which is a switch-out, "
            "which wakes it again. The time goes to context switches, not to the BPF programs (see the "
            "kernel-side table); most of the overhead measured here is this loop.")
    P = R["placement"]
    if "rows" in P:
        other, same = P["rows"]
        out.append(f"Placement (1b, 100 Hz): profiler on the other CPU {pct(other['wall']['ratio'])} wall "
                   f"({pct(other['cpu']['ratio'])} CPU, target {num(other['prof_rates']['switches_per_s'], '.0f')} "
                   f"switches/s); on the target's CPU {pct(same['wall']['ratio'])} wall "
                   f"({pct(same['cpu']['ratio'])} CPU, {num(same['prof_rates']['switches_per_s'], '.0f')} switches/s).")
    a = rows.get((1, "1000 Hz"))
    b = rows.get((300, "1000 Hz"))
    sa, sb = a and bpf_us(a, "sample"), b and bpf_us(b, "sample")
    if sa and sb:
        out.append(f"Kernel side, one sample: {sa:.1f} us of BPF with a 1-frame stack, {sb:.1f} us with "
                   f"300 frames (~{max(0, sb - sa) * 1000 / 299:.0f} ns per frame), i.e. "
                   f"{sb * 1000 / 1e6 * 100:.1f}% of a CPU at 1000 Hz on a 300-frame stack.")
    for row in R["gc"]["rows"]:
        if "missing" in row:
            continue
        kern = bpf_us(row, "gc")
        line = (f"GC, {row['name']}: {row['rate']:.0f} collections/s unprofiled; profiled "
                f"{pct(row['wall']['ratio'])} wall, {pct(row['cpu']['ratio'])} CPU, "
                f"{pct(row['undisturbed']['ratio'], 1)} undisturbed: "
                f"{num(row['und_us_per_event'], '.1f')} us per collection undisturbed "
                f"({num(row['us_per_event'], '.0f')} from wall time, {num(row['cpu_us_per_event'], '.0f')} "
                f"from CPU time{noise(row['undisturbed'])})")
        if kern:
            line += f"; {kern:.1f} us of it in the GC probes' BPF programs"
        e = row.get("empty")
        if e:
            line += (f". On an empty collection the probes alone cost {num(e['und_us_per_event'], '.1f')} us "
                     f"({num(bpf_us(e, 'gc'), '.1f')} us of BPF)")
        out.append(line + ".")
        if row["expected_probe"] not in " ".join(row["gc_probe"]):
            out.append(f"UNEXPECTED: {row['name']} was timed by {row['gc_probe']}, "
                       f"not {row['expected_probe']}.")
    o = R["offcpu"]
    kern = bpf_us(o, "offcpu")
    share = (o.get("bpf") or {}).get("share")
    line = (f"Off-CPU: {num(o['base_rates']['switches_per_s'], '.0f')} context switches/s unprofiled; "
            f"profiled {pct(o['wall']['ratio'])} wall, {pct(o['cpu']['ratio'])} CPU, "
            f"{pct(o['undisturbed']['ratio'], 1)} undisturbed: {num(o['und_us_per_event'])} us per "
            f"switch undisturbed ({num(o['us_per_event'])} from wall time, {num(o['cpu_us_per_event'])} "
            f"from CPU time)")
    if kern:
        line += f"; {kern:.2f} us per switch-out in the BPF program"
    if share:
        line += f", whose run time is {share * 100:.1f}% of the phase"
        extra = o["undisturbed"]["ratio"] - 1
        if extra > 0 and share >= 0.6 * extra:
            line += (": most of the off-CPU overhead is the `sched_switch` program itself, which walks "
                     "the Python stack on every switch-out")
    out.append(line + ".")
    for row in R["self"]["rows"]:
        out.append(f"ebpfprof at {row['rate']} Hz on a {row['threads']}-thread target: "
                   f"{row['cpu_per_s'] * 100:.1f}% of a CPU while recording "
                   f"({row['wakeups_per_s']:.0f} wake-ups/s for {row['samples_per_s']:.0f} samples/s and "
                   f"{row['switches_per_s']:.0f} target switches/s, {row['switches_alone_per_s']:.0f}/s "
                   f"unprofiled), {row['startup_cpu']:.2f} s of CPU to "
                   f"start, peak RSS {row['maxrss_mib']:.1f} MiB.")
    deep = o.get("deep")
    if deep and kern and bpf_us(deep, "offcpu"):
        out.append(f"The `sched_switch` program walks the whole Python stack on every switch-out of the "
                   f"target, like a sample: {kern:.1f} us of BPF per switch-out with the ping-pong's "
                   f"shallow stacks, {bpf_us(deep, 'offcpu'):.1f} us with 300 frames, where profiling "
                   f"costs {pct(deep['undisturbed']['ratio'], 1)} undisturbed "
                   f"({num(deep['und_us_per_event'])} us per switch). A thread that blocks often with a "
                   "deep stack pays this on every block, whatever the sampling rate.")
        prof_runs = deep["runs"]["prof"]
        ep_cpu = med((r["ep_cpu_done"] - r["ep_cpu_go"]) / r["seconds"] for r in prof_runs)
        lost_deep = [r["lost"] for r in prof_runs]
        out.append(f"Reading those 300-frame switch-out records ({num(deep['prof_rates']['switches_per_s'], '.0f')} "
                   f"switches/s) kept ebpfprof at {ep_cpu * 100:.0f}% of a CPU, and "
                   + (f"{sum(1 for x in lost_deep if x)} of {len(lost_deep)} recordings lost events "
                      f"(up to {max(lost_deep)} in one) to a full ring buffer."
                      if any(lost_deep) else "no events were lost."))
    for row in R["self"]["rows"]:
        b = row.get("bpf") or {}
        outs = b.get("switch_outs_per_s")
        if row["growth_kib_per_s"] > 256:
            per = f", about {row['growth_kib_per_s'] * 1024 / outs:.0f} bytes per switch-out of the target " \
                  f"({outs:.0f}/s)" if outs else ""
            out.append(f"ebpfprof's memory grows with the recording at {row['rate']} Hz: RSS "
                       f"{row['rss_go_mib']:.0f} MiB at the go, {row['hwm_done_mib']:.0f} MiB after "
                       f"{row['seconds']:.0f} s, {row['growth_kib_per_s'] / 1024:.1f} MiB per second{per}; "
                       f"at that rate an hour of recording needs "
                       f"{row['growth_kib_per_s'] * 3600 / 2**20:.1f} GiB.")
            break
    if R["binary_after"] != R["binary"]:
        out.insert(0, f"./ebpfprof was rebuilt during this run; the figures are of the build copied at "
                      f"the start ({R['binary']}).")
    shaky, dropped = [], []
    for label, row in ([(f"sampling {r['rate']} depth {r['depth']}", r) for r in R["sampling"]["rows"]] +
                       [(f"1b {r['name']}", r) for r in R["placement"].get("rows", [])] +
                       [(f"GC {r['name']}", r) for r in R["gc"]["rows"] if "missing" not in r] +
                       [("ping-pong", o)] + ([("ping-pong 300 frames", o["deep"])] if o.get("deep") else [])):
        if row.get("dropped") is None and "dropped" in row:
            shaky.append(f"{label} (no two usable)")
        elif row.get("dropped"):
            dropped.append(f"{label} {row['dropped']} of {row['dropped'] + row['pairs']}")
            if row["dropped"] > row["pairs"]:
                shaky.append(f"{label} (only {row['pairs']} usable)")
    if dropped:
        out.append("Comparisons left out because the machine changed speed between the two unprofiled "
                   f"phases around them (by more than {(BRACKET_TOLERANCE - 1) * 100:.0f}%): "
                   + ", ".join(dropped) + ".")
    if shaky:
        out.append("**Unreliable rows:** most comparisons of " + ", ".join(shaky) + " were spoilt by "
                   "the machine changing speed (other jobs on the host); run `make bench` again on a "
                   "quieter machine.")
    lost = [r["lost"] for r in R["sampling"]["rows"]] + \
           [r["lost"] for r in R["gc"]["rows"] if "lost" in r] + [o["lost"]] + \
           ([o["deep"]["lost"]] if o.get("deep") else []) + \
           [r["lost"] for r in R["self"]["rows"]]
    out.append(f"Events lost (ring buffer full): up to {max(lost)} in one run." if any(lost)
               else "No events were lost in any run.")
    noisy = [r for r in R["sampling"]["rows"] if r["wall"]["hi"] - r["wall"]["lo"] > 0.2]
    if noisy or float(R["loadavg_before"].split()[0]) > 1.5:
        out.append(f"The machine was busy (load average {R['loadavg_before']} at the start, "
                   f"{R['loadavg_after']} at the end, on {R['machine']['nproc']} CPUs): wall ratios vary a "
                   "lot between pairs of runs; the CPU ratios and the BPF run times are steadier.")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=7,
                    help="alternating phases per configuration (default 7)")
    ap.add_argument("--quick", action="store_true", help="small sizes, 2 repetitions: a smoke run")
    ap.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"))
    ap.add_argument("--no-doc", action="store_true", help="do not write the markdown file")
    ap.add_argument("--report", metavar="RESULTS_JSON",
                    help="measure nothing: write the table and the markdown again from a saved run")
    args = ap.parse_args()
    if args.report:
        R = json.loads(Path(args.report).read_text())
        R["table"] = summary_table(R)
        R["observations"] = observations(R)
        print(R["table"])
        if not args.no_doc:
            write_markdown(R, Path(args.output))
            print(f"wrote {args.output} from {args.report}")
        return
    if os.geteuid() != 0:
        sys.exit("bench: needs root: BPF programs, perf events and uprobes (run: sudo make bench)")
    if not BUILT.exists():
        sys.exit(f"bench: {BUILT} is not built (run make)")
    if not shutil.which("bpftool"):
        sys.exit("bench: bpftool is missing (apt-get install bpftool); it tells when ebpfprof has attached")
    if not os.access(DEBIAN_PY, os.X_OK):
        sys.exit(f"bench: {DEBIAN_PY} is missing")

    class Cfg:
        pass
    cfg = Cfg()
    cfg.quick = args.quick
    cfg.reps = 2 if args.quick else max(1, args.reps)
    cfg.placement_reps = 1 if args.quick else 3
    cfg.self_reps = 1 if args.quick else 3
    cfg.cpu_seconds = 0.5 if args.quick else 1.0
    cfg.gc_rate = 1000
    cfg.collections = 1000 if args.quick else 2000
    cfg.empty_collections = 10000 if args.quick else 30000
    cfg.pingpong_seconds = 0.5 if args.quick else 1.0
    cfg.record_seconds = 3.0 if args.quick else 10.0

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    # measure one build: a copy, so that a rebuild during the run changes nothing
    global EBPFPROF
    bindir = Path(tempfile.mkdtemp(prefix="ebpfprof-bench-bin-"))
    shutil.copy2(BUILT, bindir / "ebpfprof")
    EBPFPROF = bindir / "ebpfprof"
    t0 = time.monotonic()
    R = {"date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
         "machine": machine(), "config": dict(vars(cfg)),
         "loadavg_before": " ".join(open("/proc/loadavg").read().split()[:3]),
         "binary": binary_id(EBPFPROF)}
    log(f"bench: {R['machine']['nproc']} CPUs, {R['machine']['cpu']}, kernel {R['machine']['kernel']}, "
        f"load {R['loadavg_before']}")
    old_stats = None
    try:
        try:
            old_stats = STATS_SYSCTL.read_text().strip()
            STATS_SYSCTL.write_text("1\n")
            STATS["on"] = R["bpf_stats"] = True
        except OSError as e:
            R["bpf_stats_why"] = f"cannot turn on kernel.bpf_stats_enabled: {e}"
        R["sampling"] = bench_sampling(cfg)
        R["placement"] = bench_placement(cfg, R["sampling"]["rounds"])
        R["gc"] = bench_gc(cfg)
        R["offcpu"] = bench_offcpu(cfg)
        R["self"] = bench_self(cfg)
    except BenchError as e:
        sys.exit(f"bench: {e}")
    finally:
        if old_stats is not None:
            STATS_SYSCTL.write_text(old_stats + "\n")
    R["elapsed_s"] = time.monotonic() - t0
    R["binary_after"] = binary_id(BUILT)
    R["kept_median"] = med(r["kept"] for r in R["sampling"]["rows"] + R["placement"].get("rows", []) +
                           [g for g in R["gc"]["rows"] if "missing" not in g] + [R["offcpu"]] +
                           ([R["offcpu"]["deep"]] if R["offcpu"].get("deep") else []))
    R["loadavg_after"] = " ".join(open("/proc/loadavg").read().split()[:3])
    R["table"] = summary_table(R)
    R["observations"] = observations(R)
    raw = ROOT / "build" / "bench" / "results.json"
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.write_text(json.dumps(R, indent=1, default=str))
    print()
    print(R["table"])
    print()
    for o in R["observations"]:
        print(f"- {o}")
    if not args.no_doc:
        write_markdown(R, Path(args.output))
        print(f"\nwrote {args.output} and {raw} ({R['elapsed_s'] / 60:.1f} min)")
    shutil.rmtree(bindir, ignore_errors=True)


if __name__ == "__main__":
    main()
