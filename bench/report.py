"""The benchmarks' report: the compact table, the observations and
docs/benchmarks.md, from the results run.py measured (or a saved
build/bench/results.json: run.py --report)."""
import json
from pathlib import Path

from settings import BRACKET_TOLERANCE, DEBIAN_PY, PYENV_PY, SETTLE_S, WARMUP_PHASES, med  # noqa: F401


CPU_FLOOR = "bare per-CPU cpu-clock 1000 Hz (perf's handler)"    # the name run.py gives the row


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
        elif row["rate"].startswith("bare per-CPU"):
            line(f"1 ref: per-CPU bare clock 1 kHz", row, "sample", "tick")
        elif row["rate"].startswith("bare"):
            line(f"1 floor: bare clock 1 kHz, depth {row['depth']}", row, "sample", "tick")
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


def soak_figures():
    """The last `make soak` run's memory figures (tests/integration/test_memory.py), or None."""
    path = Path(__file__).resolve().parents[1] / "build" / "bench" / "soak.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def sample_breakdown(R):
    """Where a 1 kHz sample's cost goes, per depth: the bare clock's tick
    (timer interrupt and perf's overflow path), the BPF program's run time,
    and the rest (program dispatch, ring buffer, reader, cache effects).
    Returns [(depth, total, tick, bpf, rest)] in us, undisturbed."""
    rows = {(r["rate"], r["depth"]): r for r in R["sampling"]["rows"]}
    floor = rows.get(("bare cpu-clock 1000 Hz (floor)", 1))
    if not floor or floor.get("und_us_per_event") is None:
        return []
    out = []
    for depth in (1, 300):
        mine = rows.get(("1000 Hz", depth))
        if not mine or mine.get("und_us_per_event") is None or bpf_us(mine, "sample") is None:
            continue
        total, tick, bpf = mine["und_us_per_event"], floor["und_us_per_event"], bpf_us(mine, "sample")
        out.append((depth, total, tick, bpf, total - tick - bpf))
    return out


def breakdown_lines(R):
    b = sample_breakdown(R)
    if not b:
        return []
    def rest(r):
        if r >= 0:
            return f"the rest {r:.1f} (program dispatch, ring buffer, reader, cache)"
        return (f"nothing measurable beyond those two (they add up to {-r:.1f} us more than the "
                "whole: the tick varies by that much between phases)")
    return ["Where a sample's cost goes at 1 kHz (undisturbed, us per sample): " + "; ".join(
        f"{d}-frame stack {t:.1f} = timer tick {k:.1f} (a bare cpu-clock event, no handler) + "
        f"BPF program {p:.1f} + {rest(r)}" for d, t, k, p, r in b) + "."]


def targets_section(R):
    """Issue 8's targets next to this run's figures."""
    o, deep = R["offcpu"], R["offcpu"].get("deep") or {}
    rows = {(r["rate"], r["depth"]): r for r in R["sampling"]["rows"]}   # rate: "100 Hz"
    gc = [r for r in R["gc"]["rows"] if "missing" not in r]
    soak = soak_figures()

    def und(row):
        return pct(row["undisturbed"]["ratio"], 1) if row and row.get("undisturbed") else "n/a"

    def reader_cpu(row):
        runs = (row.get("runs") or {}).get("prof") or []
        v = med((r["ep_cpu_done"] - r["ep_cpu_go"]) / r["seconds"] for r in runs
                if "ep_cpu_done" in r and "ep_cpu_go" in r)
        return f"{v * 100:.0f}% of a CPU" if v is not None else "n/a"

    deep_sample = rows.get(("1000 Hz", 300)) or rows.get(("100 Hz", 300))
    wc = walk_costs(R)
    out = ["## Issue 8: targets and where this run stands", "",
           "| figure | before (issue 8, load ~1) | target | this run |", "|---|---|---|---|",
           "| BPF time per switch (out + in), shallow / 300 frames | 2.4-3.1 / 20 us | <= 0.5 us average at both | "
           f"{num(bpf_us(o, 'offcpu'))} / {num(bpf_us(deep, 'offcpu'))} us |",
           f"| ping-pong undisturbed slowdown, shallow / 300 frames | +10-15% / +330% at 50k switches/s | <= +3% / <= +5% at 50k switches/s | "
           f"{und(o)} / {und(deep)} at {num(o['base_rates']['switches_per_s'], '.0f')} switches/s (pinned): "
           f"{num(o['und_us_per_event'])} / {num(deep.get('und_us_per_event'))} us per switch, so "
           f"{num(o['und_us_per_event'] * 5 if o.get('und_us_per_event') is not None else None, '.1f')}% / "
           f"{num(deep['und_us_per_event'] * 5 if deep.get('und_us_per_event') is not None else None, '.1f')}% at 50k switches/s"
           + (f"; one per-task perf event alone costs it {und(o['task_event'])}, as a uprobe attached "
              f"for the pid would" if o.get("task_event") else "") + " |",
           f"| events lost, ping-pong (worst recording) | 27k-75k | 0 | {o['lost']} / {deep.get('lost', 'n/a')} |",
           f"| reader CPU on the 300-frame ping-pong | 95% of a CPU | <= 5% | {reader_cpu(deep) if deep else 'n/a'} |"]
    if soak:
        out.append(f"| RSS growth of a 9-thread switch-heavy target at 100 Hz, {soak['seconds']:.0f} s "
                   f"(`make soak`, {soak['date']}) | 0.4-0.5 MiB/s (1.5-1.9 GiB/h) | <= 10 MiB per hour | {soak['mib_per_hour']:.1f} MiB per "
                   f"hour ({soak['bytes_per_switch']:.3f} bytes per switch, {soak['switches_per_s']:.0f} "
                   f"switches/s) |")
    else:
        out.append("| RSS growth, 9-thread target at 100 Hz, >= 10 minutes | 0.4-0.5 MiB/s | <= 10 MiB per hour | "
                   "run `make soak` (writes build/bench/soak.json) |")
    out += ["| slowdown at 100 Hz / 1 kHz (bench/cpu.py, undisturbed) | 1-2% / 5-7% | <= +0.5% / <= +2% | "
            f"{und(rows.get(('100 Hz', 1)))} / {und(rows.get(('1000 Hz', 1)))} "
            f"(perf record -F 1000: {und(rows.get(('perf record -F 1000 (reference)', 1)))}; "
            f"a bare clock at 1 kHz on the main thread: {und(rows.get(('bare cpu-clock 1000 Hz (floor)', 1)))}; "
            f"on every CPU, as ebpfprof opens it, with perf's handler: "
            f"{und(rows.get((CPU_FLOOR, 1)))}) |",
            "| BPF time per sample, 300 frames | 16 us (2.2 us at 1 frame) | <= 6 us | "
            f"{num(bpf_us(deep_sample, 'sample')) if deep_sample else 'n/a'} us "
            f"(1 frame: {num(bpf_us(rows.get(('1000 Hz', 1)), 'sample'))} us)"
            + (f"; benchmark 1c: {wc['thin']:.1f} us at 300 frames, {wc['distinct']:.1f} us at 300 "
               f"distinct functions, {wc['per_frame'] * 1000:.0f} ns a frame; out of reach for a full "
               f"walk here: the fixed part and the copy of ~{wc['thin_kb']:.0f} KB of frames alone "
               f"take ~{wc['one'] + wc['copy_share']:.1f} us (see 1c) |" if wc else " |"),
            "| GC probe cost per collection (undisturbed) | 12-31 us | <= 10 us | "
            + ", ".join(f"{r['name']}: {num(r['und_us_per_event'], '.1f')} us (empty collection, the "
                        f"probes alone: {num(r['empty']['und_us_per_event'], '.1f')} us)" for r in gc) + " |", ""]
    out += [f"This run's load average went from {R['loadavg_before']} to {R['loadavg_after']} on "
            f"{R['machine']['nproc']} CPUs (the 'before' column was measured at about 1): figures that "
            "are times inside the kernel (BPF run time per event) grow with such load too, through "
            "cache misses and preemption, so compare them with care.", ""]
    out += ["How the off-CPU figures are reached: the `sched_switch` program no longer walks the "
            "Python stack on every switch-out, nor reads the target's memory there at all (each "
            "`bpf_probe_read_user` costs ~0.1 us in this VM, the largest part of a switch). It notes "
            "the time and reason in task storage. Time is summed per thread and reason in the "
            "kernel, in the thread's own task storage (two atomic adds at switch-in, where a "
            "hash map update had cost ~0.12 us), taken out by a task iterator every 50 ms and "
            "at the thread's exit; only intervals over the threshold, and shorter ones holding one of "
            "the sampling points spread a period apart on average over the thread's short waits, are sent, and only those need a stack. A blocked thread's Python stack "
            "cannot change before it returns to user mode, and on that return the kernel notifies "
            "the thread's rseq area (glibc 2.35+ registers one per thread), which runs the "
            "`rseq_update` tracepoint in the thread's own context: a second small program "
            "(`offcpu_stack_at_return`) takes the stack there for the few intervals sent, by a "
            "fingerprint of the two innermost frames (a thread blocking where it blocked before "
            "reuses its last walk) or a walk. Threads without rseq (older glibc, musl) are "
            "fingerprinted at switch-out as before, the thread state and its frame field in one "
            "read.", "",
            "How the per-sample figures are reached: on 3.11+ frames live on the thread's data stack, "
            "each caller just below its callee, so the walk reads the memory below a frame, up to its "
            "page, in one probe read (~30 frames) instead of one read per frame; fields are plain word "
            "loads (a memcpy from the buffer had compiled to eight byte loads per field); the code "
            "object's identity comes from a per-CPU cache (2048 slots, refreshed every ~67 ms), and "
            "the previous frame's identity serves a frame of the same code (recursion). Most of all, a stack's "
            "frames go through the ring buffer once: the program hashes the frames as it walks, and a "
            "sample (or a collection) at a stack already sent carries only its id. Copying 16 bytes "
            "per frame into the ring buffer had cost more than the walk itself (about 5 of 9 us at 300 "
            "frames, measured by leaving the copy out).", ""]
    out += breakdown_lines(R)
    out += floor_lines(R)
    out += [""]
    out += walk_lines(R)
    return out


# the bench's Pythons are 3.11: a frame's header (_PyInterpreterFrame up to
# localsplus) is 72 bytes there, its slots 8 bytes each
FRAME_HEADER_311 = 72


def walk_costs(R):
    """Per-frame, per-KB and per-function costs from benchmark 1c, or None."""
    W = (R.get("walk") or {}).get("shapes") or {}
    one, thin, fat, dist = (W.get(k) for k in ("1 frame", "300 frames", "300 fat frames",
                                                "300 distinct functions"))
    if not all(x and x.get("us") is not None and x.get("slots") for x in (one, thin, fat, dist)):
        return None
    thin_kb = 300 * (FRAME_HEADER_311 + 8 * thin["slots"]) / 1024
    extra_kb = 299 * 8 * (fat["slots"] - thin["slots"]) / 1024
    per_kb = (fat["us"] - thin["us"]) / extra_kb
    per_frame = (thin["us"] - one["us"]) / 299
    return {"one": one["us"], "thin": thin["us"], "fat": fat["us"], "distinct": dist["us"],
            "thin_kb": thin_kb, "per_kb": per_kb, "per_frame": per_frame,
            "copy_share": per_kb * thin_kb, "per_function": (dist["us"] - thin["us"]) / 299}


def fast_copy(R):
    f = R["machine"].get("fast_string_copy")
    if f is None:
        return "whether the CPU copies strings fast was not recorded"
    if not f:
        return "this CPU has neither ERMS nor FSRM, the fast string copy copy_from_user uses"
    return "this CPU has " + " and ".join(x.upper() for x in f)


def walk_lines(R):
    """Benchmark 1c: a sample's BPF time by the shape of the stack."""
    W = (R.get("walk") or {}).get("shapes")
    if not W:
        return []
    out = ["### Where a sample's BPF time goes (benchmark 1c)", "",
           f"The same CPU-bound loop at 1000 Hz, target and profiler pinned, under four stacks "
           f"(`bench/cpu.py --shape`); the sampler's run time over {R['walk']['seconds']:.0f} s "
           f"divided by the target's samples, medians of {R['walk']['reps']} interleaved runs.", "",
           "| stack | slots a frame past its header | BPF us per sample, median (range) |",
           "|---|---|---|"]
    for label, v in W.items():
        out.append(f"| {label} | {v['slots']} | {num(v['us'])} ({num(v['lo'])}-{num(v['hi'])}) |")
    out.append("")
    c = walk_costs(R)
    if c:
        out += [f"What that says: the fixed part of a sample (program entry, the thread-state check "
                f"and frame field in one read, the GIL in one read, the first window, the record sent by "
                f"stack id) is {c['one']:.1f} us. Each further frame costs {c['per_frame'] * 1000:.0f} ns, "
                f"about {min(100, c['copy_share'] / 300 / c['per_frame'] * 100):.0f}% of it copying the "
                f"frame's memory: the walk copies every byte from a frame down to "
                f"its caller (one read per page), and each KB copied costs {c['per_kb'] * 1000:.0f} ns "
                f"here ({fast_copy(R)}). A "
                f"300-frame stack of thin 3.11 frames is ~{c['thin_kb']:.0f} KB, so "
                f"~{c['copy_share']:.1f} us of its {c['thin']:.1f} us is the copy, and fixed part plus "
                f"copy is ~{c['one'] + c['copy_share']:.1f} us before any frame is decoded: the 6 us "
                "target is below what a full walk costs on this machine. Reading only each frame's "
                "header instead (one read per frame; a build made for the purpose, once, not part of "
                "this run) took 41 us at 300 thin frames: ~0.1 us a read, so it pays only for frames "
                "over ~1 KB apart, and the walk keeps reading by page.",
                f"A stack of 300 distinct functions costs {c['per_function'] * 1000:+.0f} ns a frame "
                f"against one function recursing ({c['distinct']:.1f} us a sample): each code object's "
                "identity (first line, file name) comes from a per-CPU cache of 2048 slots hashed by "
                "address, refreshed every ~67 ms. With the earlier 256 slots indexed by address bits "
                "the same stack cost 68 us: small code objects sit at regular strides that the bits "
                "folded onto 144 slots, and every miss took two reads.", ""]
    return out


def floor_lines(R):
    """What the hardware (here, the VM) costs before any profiler code runs."""
    out = []
    rows = {(r["rate"], r["depth"]): r for r in R["sampling"]["rows"]}
    floor = rows.get(("bare cpu-clock 1000 Hz (floor)", 1))
    if floor and floor.get("undisturbed"):
        out.append(f"The floor of sampling: a bare cpu-clock event at 1 kHz on the target's main "
                   f"thread with no handler costs it {pct(floor['undisturbed']['ratio'], 1)} undisturbed "
                   f"({num(floor['und_us_per_event'], '.1f')} us per tick: the timer interrupt and "
                   "perf's overflow path, in a VM where every interrupt exits to the hypervisor). Any "
                   "sampler at 1 kHz pays that, so where it is over 2% the 1 kHz target is out of "
                   "reach here; 100 Hz pays a tenth of it.")
    cpu_floor = rows.get((CPU_FLOOR, 1))
    if cpu_floor and cpu_floor.get("undisturbed"):
        out.append(f"ebpfprof opens its clock on every CPU, not per task (a per-task event is switched "
                   f"out and in with the task, which a switch-heavy target pays on every switch: "
                   f"benchmark 3). The same clock on every CPU with perf's own overflow handler (no "
                   f"BPF program, no buffer) cost the target {pct(cpu_floor['undisturbed']['ratio'], 1)} "
                   f"undisturbed ({num(cpu_floor['und_us_per_event'], '.1f')} us per tick, pairs "
                   f"{cpu_floor['undisturbed']['lo']:.3f}-{cpu_floor['undisturbed']['hi']:.3f}), more "
                   "than with ebpfprof's program as the handler: it is no floor, and why perf's "
                   "handler costs more there is not known. In this VM some phases of any 1 kHz clock "
                   "cost several times the others, whoever opened it.")
    for r in R["gc"]["rows"]:
        e = r.get("empty")
        if "missing" in r or not e or e.get("und_us_per_event") is None:
            continue
        bpf = bpf_us(e, "gc") or 0
        out.append(f"The floor of GC timing, {r['name']}: an empty collection costs "
                   f"{num(e['und_us_per_event'], '.1f')} us profiled, {num(bpf, '.1f')} us of it in "
                   f"the BPF programs, so each of the two probe hits (start and end: no single probe "
                   f"sees both) costs about {num((e['und_us_per_event'] - bpf) / 2, '.1f')} us of "
                   "trap and return.")
    return out


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
    L.extend(targets_section(R))
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
      "perf's own handler, no BPF and no Python stacks); its *samples* are 1000 per CPU second. "
      "As the floor, it also runs under a bare cpu-clock event at 1 kHz (`bench/bare_clock.py`: "
      "`perf_event_open` with no BPF program and no buffer), which costs the target the timer "
      "interrupt and perf's overflow path and nothing else: once on the target's main thread, as "
      "perf record opens it, and once on every CPU, as ebpfprof opens its sampler (there with perf's handler, not a BPF program). The target runs "
      "on CPU 1 and ebpfprof on CPU 0.")
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
      "`threading.Event`s, pinned to one CPU (CPU 1, ebpfprof on CPU 0: unpinned, the pair runs at "
      "34k or 55k round trips a second by placement alone). Every switch of a profiled thread runs the "
      "`sched_switch` BPF program: at switch-out it classifies the wait and notes it in the task's "
      "storage; at switch-in it adds the exact time to the thread's in-kernel totals and decides to "
      "send a record only for an interval over the threshold or, for shorter ones, when it holds a "
      "sampling point (points a period apart on average); such a record gets its stack when the thread returns to user mode "
      "(`offcpu_stack_at_return`, whose run time is counted here too). Context switches of both "
      "threads are counted with `getrusage` (voluntary + involuntary). Profiled with `-r 1`. The "
      "second row has both threads wait at the bottom of a 300-frame recursion: a walk there would "
      "cost 300 frames.")
    a("")
    a("Every row here ran with `kernel.bpf_stats_enabled` off, as users run: the kernel's own timing "
      "of each program run (two clock reads) costs more than a tenth of a microsecond per switch on "
      "this ping-pong. The BPF column comes from separate phases with it on, whose slowdown is given "
      "below the table.")
    a("")
    a("| stack depth | round trips | switches per run, unprofiled | unprofiled s | profiled s | wall ratio (range) | CPU ratio (range) | undisturbed ratio (range) | target switches/s unprof -> prof | profiler wake-ups/s | cost per switch us, wall / CPU / undisturbed | BPF us per switch |")
    a("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for depth, row in ((1, O), (300, O.get("deep"))):
        if not row:
            continue
        s, wk = sw(row)
        a(f"| {depth} | {O['round_trips']} | {row['switches_base']:.0f} | {row['wall']['base']:.3f} | "
          f"{row['wall']['prof']:.3f} | {fmt_ratio(row['wall'])} | {fmt_ratio(row['cpu'])} | "
          f"{fmt_ratio(row['undisturbed'], 3)} | {s} | {wk} | {costs(row)} | {num(bpf_us(row, 'offcpu'))} |")
    a("")
    a("The pinned ping-pong switches about 4 times as often as issue 8's 50k a second; at that rate "
      "the same cost per switch is " + " and ".join(
          f"{num(r['und_us_per_event'] * 5, '.1f')}% of the target's time at {d} frame{'s' if d > 1 else ''}"
          for d, r in ((1, O), (300, O.get("deep"))) if r and r.get("und_us_per_event") is not None) +
      " (us per switch x 50,000/s). Slowing the ping-pong down to 50k switches/s by work between the "
      "hand-offs (a Python loop, or hashing with the GIL let go) made it bimodal: unprofiled phases "
      "of one process ran at 35k-57k switches/s as the scheduler and the GIL took the pair through "
      "2 to 4 switches a round trip, ratios between phases moved by 10-50%, too much to resolve 2-3%. "
      "The cost per switch of the full-speed ping-pong is the figure that holds from run to run.")
    ws = [(d, r["with_stats"]) for d, r in ((1, O), (300, O.get("deep") or {})) if r.get("with_stats")]
    if ws:
        a("")
        a("With `kernel.bpf_stats_enabled` on (the phases the BPF column comes from), the full-speed "
          "ping-pong costs " + ", ".join(f"{pct(w['undisturbed']['ratio'], 1)} undisturbed, "
                                         f"{num(w['und_us_per_event'])} us per switch at {d} frame{'s' if d > 1 else ''}"
                                         for d, w in ws) + ".")
    te = O.get("task_event")
    if te:
        a("")
        a(f"For comparison, the same ping-pong with one per-task perf event on its main "
          f"thread and nothing else (`bench/bare_clock.py` at 1 Hz, which never fires here) costs "
          f"{pct(te['undisturbed']['ratio'], 1)} undisturbed ({num(te['und_us_per_event'])} us per "
          "switch): perf switches a task's events out and in with the task. A uprobe attached for "
          "one process is such an event on its main thread, which is why ebpfprof attaches the GC "
          "probes to the interpreter's file for every process and filters by pid in BPF instead "
          "(the programs return at once for other processes).")
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
    path.write_text("\n".join(L) + "\n" + kept_sections(path))


# Sections measured by their own commands (diff's calibration, the peer
# comparison, the feature benchmarks) follow this line in docs/benchmarks.md:
# a new make bench rewrites what is above it and keeps what is below.
KEPT_MARKER = "<!-- make bench rewrites the sections above this line and keeps those below -->"


def kept_sections(path):
    """The marker and what follows it in the current file ("" if none)."""
    try:
        old = path.read_text()
    except OSError:
        return "\n" + KEPT_MARKER + "\n"
    at = old.find(KEPT_MARKER)
    return "\n" + (old[at:] if at >= 0 else KEPT_MARKER + "\n")


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
    out += breakdown_lines(R)
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
            line += ": most of the off-CPU overhead is the `sched_switch` program itself"
    out.append(line + ".")
    out.append(f"At issue 8's 50k switches/s, that cost per switch comes to "
               f"{num(o['und_us_per_event'] * 5, '.1f')}% of the target's time with shallow stacks"
               + (f" and {num(o['deep']['und_us_per_event'] * 5, '.1f')}% with 300 frames"
                  if o.get("deep") else "") + " (cost per switch x 50,000/s).")
    for row in R["self"]["rows"]:
        out.append(f"ebpfprof at {row['rate']} Hz on a {row['threads']}-thread target: "
                   f"{row['cpu_per_s'] * 100:.1f}% of a CPU while recording "
                   f"({row['wakeups_per_s']:.0f} wake-ups/s for {row['samples_per_s']:.0f} samples/s and "
                   f"{row['switches_per_s']:.0f} target switches/s, {row['switches_alone_per_s']:.0f}/s "
                   f"unprofiled), {row['startup_cpu']:.2f} s of CPU to "
                   f"start, peak RSS {row['maxrss_mib']:.1f} MiB.")
    deep = o.get("deep")
    if deep and kern and bpf_us(deep, "offcpu"):
        out.append(f"The `sched_switch` program per switch (out and in): {kern:.2f} us of BPF with the "
                   f"ping-pong's shallow stacks, {bpf_us(deep, 'offcpu'):.2f} us with 300 frames (no "
                   f"stack is read at a switch; the few sent intervals get theirs on the thread's "
                   f"return to user mode), where profiling costs {pct(deep['undisturbed']['ratio'], 1)} undisturbed "
                   f"({num(deep['und_us_per_event'])} us per switch).")
        prof_runs = deep["runs"]["prof"]
        ep_cpu = med((r["ep_cpu_done"] - r["ep_cpu_go"]) / r["seconds"] for r in prof_runs)
        lost_deep = [r["lost"] for r in prof_runs]
        out.append(f"Reading the records of that ping-pong ({num(deep['prof_rates']['switches_per_s'], '.0f')} "
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
