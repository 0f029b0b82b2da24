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
to build/bench/results.json. Needs root. This module measures; report.py
writes the table and the markdown (also from a saved run: --report)."""
import argparse
import contextlib
import datetime
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from report import observations, summary_table, write_markdown
from settings import (BRACKET_TOLERANCE, DEBIAN_PY, PYENV_PY, SETTLE_S, WARMUP_PHASES,  # noqa: F401
                      med)

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
BUILT = ROOT / "ebpfprof"
EBPFPROF = BUILT            # main() points this at a copy
CLK_TCK = os.sysconf("SC_CLK_TCK")
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
            if step is not None and step[0] in ("clock", "cpu clock"):
                # the floor: the same clock with no handler at all (bench/bare_clock.py),
                # on the target's main thread, or on every CPU as ebpfprof opens it
                per_cpu = ["--per-cpu"] if step[0] == "cpu clock" else []
                ep = subprocess.Popen([sys.executable, str(BENCH / "bare_clock.py"), str(pid), str(step[1]),
                                       *per_cpu],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(0.5)
                if ep.poll() is not None:
                    raise BenchError(f"bare_clock.py exited ({ep.returncode})")
            elif step is not None and step[0] == "perf":
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
            if step is not None and step[0] in ("perf", "clock", "cpu clock"):
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
    """configs: [(name, (ebpfprof options, profiler CPU), ("perf", options) or ("clock", Hz))].
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
    # pinned as the GC and ping-pong benchmarks are: unpinned, the target's speed moves
    # with where the scheduler puts it and the profiler
    target_cpu, ep_cpu = pinning()
    for depth in (1, 300):
        configs = [("none", None), ("100 Hz", (["-r", 100], ep_cpu)), ("1000 Hz", (["-r", 1000], ep_cpu))]
        if depth == 1:
            configs.append(("clock 1000 Hz", ("clock", 1000)))
            configs.append(("cpu clock 1000 Hz", ("cpu clock", 1000)))
        if perf and depth == 1:
            configs.append(("perf 1000 Hz", ("perf", ["-F", 1000])))
        res = phases(DEBIAN_PY, "cpu.py", ["--rounds", rounds, "--depth", depth], configs,
                     cfg.reps, target_cpu=target_cpu, label=f"depth {depth}")
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
        if "clock 1000 Hz" in res:
            row = versus(res["none"]["clock 1000 Hz"], res["clock 1000 Hz"],
                         events=med(r["cpu_seconds"] for r in res["clock 1000 Hz"]) * 1000)
            row.update(depth=depth, rate="bare cpu-clock 1000 Hz (floor)")
            rows.append(row)
        if "cpu clock 1000 Hz" in res:
            row = versus(res["none"]["cpu clock 1000 Hz"], res["cpu clock 1000 Hz"],
                         events=med(r["cpu_seconds"] for r in res["cpu clock 1000 Hz"]) * 1000)
            row.update(depth=depth, rate="bare per-CPU cpu-clock 1000 Hz (perf's handler)")
            rows.append(row)
    return {"rounds": rounds, "rows": rows}


# (label, depth, cpu.py --shape): what a sample's BPF time grows with
WALK_SHAPES = (("1 frame", 1, "thin"), ("300 frames", 300, "thin"),
               ("300 fat frames", 300, "fat"), ("300 distinct functions", 300, "distinct"))


def frame_slots(shape):
    """cpu.py's slots per repeated frame for a shape (a tiny unprofiled run)."""
    res = subprocess.run([DEBIAN_PY, str(BENCH / "cpu.py"), "--rounds", "20", "--depth", "3",
                          "--shape", shape], capture_output=True, text=True, timeout=60)
    for line in res.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line).get("frame_slots")
    return None


def walk_once(depth, shape, seconds, target_cpu, ep_cpu):
    """BPF time per sample of a CPU-bound target at 1000 Hz whose stack has
    this shape: the sampler's run time (bpf_stats) over `seconds`, divided by
    the target's samples. The target runs cpu.py's warm-up, long enough."""
    pin = (lambda cpu: ["taskset", "-c", str(cpu)] if cpu is not None else [])
    target = subprocess.Popen(pin(target_cpu) + [DEBIAN_PY, str(BENCH / "cpu.py"), "--rounds",
                              "10000000", "--depth", str(depth), "--shape", shape],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = Path(tempfile.mkdtemp(prefix="ebpfprof-walk-")) / "p.json"
    prof = None
    try:
        time.sleep(0.5)
        newest = max_procs_id()
        prof = subprocess.Popen(pin(ep_cpu) + [str(EBPFPROF), "--pid", str(target.pid), "-r", "1000",
                                "-o", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        inst = None
        while inst is None and time.monotonic() < deadline and prof.poll() is None:
            time.sleep(0.2)
            inst = find_instance(target.pid, newest)
        if inst is None:
            raise BenchError(f"ebpfprof did not attach to cpu.py --shape {shape}")
        time.sleep(SETTLE_S)
        s0 = inst.snapshot()
        time.sleep(seconds)
        f = bpf_figures(s0, inst.snapshot())
        return f["ns"]["sample"] / f["samples"] / 1e3 if f["samples"] else None
    finally:
        for p in (prof, target):
            if p and p.poll() is None:
                p.send_signal(signal.SIGINT if p is prof else signal.SIGKILL)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(out.parent, ignore_errors=True)


def bench_walk(cfg):
    """Where a sample's BPF time goes: the same CPU-bound loop under stacks of
    four shapes, interleaved, medians of cfg.walk_reps. Needs bpf_stats."""
    if not STATS["on"]:
        return {"skipped": "needs kernel.bpf_stats_enabled"}
    log("1c. BPF time per sample by stack shape (1000 Hz)")
    target_cpu, ep_cpu = pinning()
    runs = {label: [] for label, _, _ in WALK_SHAPES}
    for rep in range(cfg.walk_reps):
        for label, depth, shape in (WALK_SHAPES if rep % 2 == 0 else WALK_SHAPES[::-1]):
            us = walk_once(depth, shape, cfg.walk_seconds, target_cpu, ep_cpu)
            if us is not None:
                runs[label].append(us)
    shapes = {label: {"depth": depth, "shape": shape, "slots": frame_slots(shape),
                      "us": med(runs[label]), "lo": min(runs[label], default=None),
                      "hi": max(runs[label], default=None), "runs": runs[label]}
              for label, depth, shape in WALK_SHAPES}
    log("  " + "; ".join(f"{k}: {num_or(v['us'])} us" for k, v in shapes.items()))
    return {"shapes": shapes, "reps": cfg.walk_reps, "seconds": cfg.walk_seconds}


def num_or(v):
    return "n/a" if v is None else f"{v:.2f}"


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


def pinning():
    """Target on CPU 1, profiler on CPU 0, when there are two CPUs: on this
    shared VM an unpinned target's speed moves with where the scheduler puts
    it (a two-thread ping-pong runs at 34k or 55k round trips a second by
    placement alone), which hides what the profiler adds."""
    if (os.cpu_count() or 1) < 2 or not shutil.which("taskset"):
        return None, None
    return 1, 0


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
        target_cpu, ep_cpu = pinning()
        res = phases(py, "gc_rate.py", ["--threshold", threshold, "--collections", cfg.collections],
                     [("none", None), ("profiled -r 1", (["-r", 1], ep_cpu))], cfg.reps,
                     target_cpu=target_cpu, label=name.split()[0])
        row = versus(res["none"]["profiled -r 1"], res["profiled -r 1"], events_key="collections")
        empty = phases(py, "gc_empty.py", ["--n", cfg.empty_collections],
                       [("profiled -r 1", (["-r", 1], ep_cpu))], cfg.reps, target_cpu=target_cpu,
                       label=name.split()[0] + " empty")
        row["empty"] = versus(empty["none"]["profiled -r 1"], empty["profiled -r 1"],
                              events_key="collections")
        row.update(name=name, threshold=threshold, expected_probe=expect,
                   per_generation=res["profiled -r 1"][0]["per_generation"],
                   rate=row["events"] / row["wall"]["base"],
                   gc_probe=sorted({r["gc_probe"] for r in res["profiled -r 1"]}))
        rows.append(row)
    return {"rows": rows}


@contextlib.contextmanager
def bpf_stats_off():
    """kernel.bpf_stats_enabled times every program run with two clock reads
    (~0.14 us per ping-pong switch here, whose programs run ~4 times a switch):
    phases timing the off-CPU slowdown run without it, as users do."""
    was = STATS["on"]
    if was:
        STATS_SYSCTL.write_text("0\n")
        STATS["on"] = False
    try:
        yield
    finally:
        if was:
            STATS_SYSCTL.write_text("1\n")
            STATS["on"] = True


def bench_offcpu(cfg):
    log("3. off-CPU tracking cost (ping-pong, fixed round trips)")
    target_cpu, ep_cpu = pinning()
    probe = session(DEBIAN_PY, "pingpong.py", ["--round-trips", 5000], [None], target_cpu)[0]
    trips = max(1000, int(5000 * cfg.pingpong_seconds / probe["seconds"]))
    log(f"  calibrated: {trips} round trips ~ {cfg.pingpong_seconds:.1f} s")
    prof = ("profiled -r 1", (["-r", 1], ep_cpu))

    def slowdown(wargs, configs, label):
        res = phases(DEBIAN_PY, "pingpong.py", wargs, configs, cfg.reps, target_cpu=target_cpu,
                     label=label)
        row = versus(res["none"]["profiled -r 1"], res["profiled -r 1"], events_key="switches")
        row["switches_base"] = med(r["switches"] for r in res["none"]["profiled -r 1"])
        return row, res

    # the floor: one per-task perf event on the main thread, no handler (bare_clock.py at
    # 1 Hz: it never fires here). libbpf's uprobes for the GC probes are such events, and
    # perf switches a task's events out and in with the task.
    with bpf_stats_off():
        row, res = slowdown(["--round-trips", trips],
                            [("none", None), prof, ("per-task perf event", ("clock", 1))], "ping-pong")
        row["task_event"] = versus(res["none"]["per-task perf event"], res["per-task perf event"],
                                   events_key="switches")
        row["deep"], _ = slowdown(["--round-trips", trips, "--depth", 300], [prof],
                                  "ping-pong 300 frames")
    row["round_trips"] = trips
    # BPF run time per switch: phases of their own, with kernel.bpf_stats_enabled on
    if STATS["on"]:
        for target, extra in ((row, []), (row["deep"], ["--depth", 300])):
            r = phases(DEBIAN_PY, "pingpong.py", ["--round-trips", trips] + extra, [prof],
                       max(2, cfg.reps // 2), target_cpu=target_cpu,
                       label="ping-pong, BPF run time" + (" 300 frames" if extra else ""))
            target["with_stats"] = versus(r["none"]["profiled -r 1"], r["profiled -r 1"],
                                          events_key="switches")
            target["bpf"] = target["with_stats"]["bpf"]
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
        cpuinfo = f.read()
    virt = "a virtual machine" if " hypervisor" in cpuinfo else "bare metal"
    flags = next((line.split(":", 1)[1].split() for line in cpuinfo.splitlines()
                  if line.startswith("flags")), [])
    mitigations = []
    for v in ("meltdown", "spectre_v2", "spec_rstack_overflow"):
        try:
            mitigations.append(f"{v}: " + Path(f"/sys/devices/system/cpu/vulnerabilities/{v}").read_text().strip())
        except OSError:
            pass
    return {"nproc": os.cpu_count(), "kernel": platform.release(), "cpu": model, "mem": mem,
            "os": os_name, "ebpfprof": ver or "?", "virt": virt, "mitigations": mitigations,
            "fast_string_copy": [f for f in ("erms", "fsrm") if f in flags],
            "pythons": {p: subprocess.run([p, "-VV"], capture_output=True, text=True).stdout.strip()
                        for p in (DEBIAN_PY, PYENV_PY) if os.access(p, os.X_OK)}}


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
    cfg.walk_reps = 1 if args.quick else 5
    cfg.walk_seconds = 2.0 if args.quick else 4.0
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
        R["walk"] = bench_walk(cfg)
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
