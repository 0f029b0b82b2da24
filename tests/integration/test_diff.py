"""Issue 11: ebpfprof diff compares recordings (text, --json, HTML, collapsed,
pprof) with a noise model, and the Chrome trace holds every GC pause.

The recordings are real: real workloads under the real BPF programs. The two
sides of a comparison are recorded side by side (at the same time) so both see
the same load on this shared test machine: between minutes that load moves a
thread's CPU time per unit of work by 20-30%, more than any noise model can
know from one run per side (the README says so, and recommends several runs)."""
import copy
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (EBPFPROF, Interpreter, Profile, attach_label_requests, go_file, read_gc_log,
                      require_interpreter, run_ebpfprof, wait_for_go)


def diff(*args, check=True):
    res = subprocess.run([str(EBPFPROF), "diff", *map(str, args)], capture_output=True,
                         text=True, timeout=120)
    if check:
        assert res.returncode == 0, res.stderr
    return res


def diff_json(*args):
    return json.loads(diff("--json", *args).stdout)


# ab_ticks does a few ms of work per 100 ms tick: run real-time (SCHED_FIFO) it
# keeps that schedule exactly however loaded the shared machine is, so its
# time per state is the workload's own, not the machine's.
REALTIME = ["chrt", "-f", "10"]
# gc_toggle spins in three threads: it runs at a high CFS priority instead.
FAVOURED = ["nice", "-n", "-10"]


def record_side_by_side(workloads, tmp_path, script, variants, seconds=4, rate=100, tag="r",
                        need_truth=False, prefix=REALTIME, whole_work=False, go_first=False,
                        rates=None, flags=None, interp_name="debian-3.11"):
    """Starts one workload per variant (a list of extra argument lists), then
    records them all at once for `seconds`, or with whole_work until each has
    done `seconds` of work after the go and exited (every recording then
    holds all of it, however long each took to attach: a fixed window holds
    more of one side's work than the other's); returns [(speedscope path,
    truth)]. go_first starts the work before the profilers attach, for a
    steady workload compared over fixed windows: each window then holds only
    steady work, whenever its profiler got attached (two profilers loading at
    once on two CPUs can start recording a second apart, and a window that
    began before the go held that much idle time more than the other).
    rates and flags, when given, are each recording's -r and extra options.
    need_truth (a fixed window) ends each workload with SIGUSR1 once every
    recording has ended, and returns the truth it then writes."""
    base = require_interpreter(interp_name)
    interp = Interpreter(base.name, prefix + base.argv, base.version, chroot=base.chroot)
    ws, (go, go_inside) = [], go_file(base, tmp_path, f"go-{tag}")
    for i, extra in enumerate(variants):
        # else long enough for a loaded machine's slow attach; the fixture ends them
        ws.append(workloads(interp, script, "--go", go_inside, *extra,
                            seconds=seconds if whole_work else seconds + 15,
                            truth=str(tmp_path / f"truth-{tag}{i}.json")))
    if go_first:
        wait_for_go(go)
    time.sleep(1.0)  # the interpreters are up and past their imports
    paths = [tmp_path / f"{tag}{i}.speedscope.json" for i in range(len(variants))]
    logs = [tmp_path / f"{tag}{i}.gc.jsonl" for i in range(len(variants))]
    duration = seconds + 60 if whole_work else seconds
    rates = rates or [rate] * len(variants)
    flags = flags or [[]] * len(variants)
    procs = [subprocess.Popen([str(EBPFPROF), "-v", "--pid", str(w.pid), "-d", str(duration), "-r", str(r),
                               *fl, "--gc-log", str(log), "-o", str(p)], stderr=subprocess.PIPE, text=True)
             for w, p, log, r, fl in zip(ws, paths, logs, rates, flags)]
    # every profiler recording (-v says so) before the measured part: a
    # fixed wait once let one side miss the start of its work under load
    heads = []
    for w, p in zip(ws, procs):
        head = []
        while not head or not head[-1].startswith(f"ebpfprof: recording {w.pid} from "):
            head.append(p.stderr.readline())
            assert head[-1], "".join(head)
        heads.append("".join(head))
    wait_for_go(go)
    for p, head in zip(procs, heads):
        _, err = p.communicate(timeout=90)
        assert p.returncode == 0, head + err
    if need_truth and not whole_work:
        # every window has ended: the work ends too (ab_ticks.py writes its
        # truth at its next tick), not after the margin for a slow attach
        for w in ws:
            os.kill(w.pid, signal.SIGUSR1)
    out = []
    for p, w, log in zip(paths, ws, logs):
        Profile(p)  # imports in speedscope (schema now, the app at the end)
        truth = w.truth() if need_truth else {}
        truth["session"] = read_gc_log(log)[0]  # the recording's window, CLOCK_MONOTONIC
        out.append((p, truth))
    return out


def cpu_per_second_in_window(truth, fn):
    """The workload's own CPU time in fn per second, over the ticks that
    ended inside the recording's window."""
    begin = truth["session"]["monotonic_start_s"]
    end = begin + truth["session"]["duration_s"]
    inside = [t for t in truth["ticks"] if begin <= t[0] <= end]
    col = {"steady": 1, "changed": 2}[fn]
    return (inside[-1][col] - inside[0][col]) / (inside[-1][0] - inside[0][0])


def changes(report):
    return [c for c in report["changes"] if c["verdict"] in ("grew", "shrank")]


def flagged(report):
    """Every line the report calls a change, of any kind."""
    out = list(changes(report))
    for key in ("states", "gc_counts", "gc_totals", "functions_self", "functions_total"):
        out += [l for l in report[key] if l["verdict"] in ("grew", "shrank")]
    return out


def describe(lines):
    return [(l["kind"], l.get("thread"), l.get("state") or l.get("function"), l["base"], l["new"],
             l["change"], l["stat"]) for l in lines]


# ---- the command line ----

@pytest.mark.nobpf
def test_unknown_word_is_a_one_line_error_naming_the_subcommands():
    res = subprocess.run([str(EBPFPROF), "difff", "a", "b"], capture_output=True, text=True)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "unknown subcommand 'difff'" in lines[0]
    for name in ("record", "diff", "dump", "top"):
        assert name in lines[0]


@pytest.mark.nobpf
def test_a_command_to_launch_needs_dashdash():
    res = subprocess.run([str(EBPFPROF), "-d", "1", "python3", "-c", "pass"], capture_output=True, text=True)
    assert res.returncode == 2
    assert "a command to launch goes after --" in res.stderr


@pytest.mark.nobpf
def test_diff_is_not_a_program_to_launch(tmp_path):
    # once "ebpfprof diff a b" ran /usr/bin/diff: now it is the comparison
    res = diff(tmp_path / "a.json", tmp_path / "b.json", check=False)
    assert res.returncode == 1
    assert res.stderr.startswith("ebpfprof diff: ") and "a.json" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


@pytest.mark.nobpf
@pytest.mark.parametrize("content,reason", [
    ("{\"x\": 1}", "no \"ebpfprof\" object"),
    ("{\"ebpfprof\": {\"rate_hz\": 100, \"duration_s\": 1}, \"shared\": {\"frames\": []},"
     " \"profiles\": [{\"type\": \"sampled\", \"samples\": [[7]], \"weights\": [1]}]}", "not a valid stack"),
    ("{\"ebpfprof\": {\"rate_hz\": 0, \"duration_s\": 1}}", "invalid rate_hz"),
    ("{\"profiles\": [", "expected near end of file"),
])
def test_bad_recordings_get_a_one_line_error(tmp_path, content, reason):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    res = diff(bad, bad, check=False)
    assert res.returncode == 1, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert reason in res.stderr and "bad.json" in res.stderr


@pytest.mark.nobpf
def test_usage_errors(tmp_path):
    for args in (["only-one.json"], ["a", "b", "c"], ["a", "b", "-f", "html"], ["a", "--vs"]):
        res = diff(*args, check=False)
        assert res.returncode == 2, (args, res.stderr)
        assert res.stderr.startswith("ebpfprof diff: "), res.stderr


# ---- done-when 1: GC on vs gc.disable() ----

def test_gc_vs_nogc_shows_gc_and_waiting_for_gc_gone(workloads, tmp_path):
    (gc_on, _), (gc_off, _) = record_side_by_side(
        workloads, tmp_path, "gc_toggle.py", [[], ["--nogc"]], seconds=4, tag="gc", prefix=FAVOURED)
    rep = diff_json(gc_on, gc_off)
    top = changes(rep)[:2]
    assert {c["state"] for c in top} == {"gc", "waiting-for-gc"}, describe(rep["changes"][:4])
    for c in top:
        assert c["thread"] is None and c["verdict"] == "shrank"
        # (with GC disabled a few tiny collections remain, in the
        # interpreter's own housekeeping: a few % of the time at most)
        assert c["base"] > 0.1 and c["new"] <= 0.03 * c["base"] and c["change"] <= -0.97, c
    assert rep["base"]["gc_s"] > 0.3 and rep["new"]["gc_s"] <= 0.03 * rep["base"]["gc_s"]
    assert rep["base"]["waiting_for_gc_s"] > 0.1 and rep["new"]["waiting_for_gc_s"] <= 0.03 * rep["base"]["waiting_for_gc_s"]
    # the GC pauses side by side, per generation, with their statistics
    gen = {g["generation"]: g for g in rep["gc"]}
    assert gen[0]["base"]["count"] > 20 and gen[0]["base"]["max_s"] >= gen[0]["base"]["p99_s"] >= gen[0]["base"]["p50_s"] > 0
    # the summary line answers the GC question first
    assert rep["summary"].startswith("GC: ") and ("(-9" in rep["summary"] or "(-100%)" in rep["summary"])
    assert "waiting for GC: " in rep["summary"]
    text = diff(gc_on, gc_off).stdout
    assert text.splitlines()[0] == rep["summary"]
    ranked = [l for l in text.splitlines() if l.startswith("   1. ") or l.startswith("   2. ")]
    assert len(ranked) == 2 and all("GC" in l for l in ranked), text
    assert all(int(l.split("%")[0].split()[-1]) <= -97 for l in ranked), text


# ---- done-when 2: no change where there is none ----

# The same CPU time per tick on both sides, not the same work: two copies side
# by side on this VM got CPUs up to 30% apart in speed (the same rounds took
# 0.029 s/s of CPU in one and 0.036 in the other, by their own thread_time()):
# a true change, which the diff rightly flagged in a CI run.
AA = ["--cpu-ms", "3"]

def test_same_workload_twice_is_within_noise(workloads, tmp_path):
    (a, _), (b, _) = record_side_by_side(workloads, tmp_path, "ab_ticks.py", [AA, AA],
                                         seconds=4, rate=1000, tag="same", go_first=True)
    rep = diff_json(a, b)
    assert flagged(rep) == [], describe(flagged(rep))
    assert "none: every difference is within the noise" in diff(a, b).stdout
    # and the functions were there to compare
    names = {l["function"] for l in rep["functions_self"]}
    assert {"steady", "changed"} <= names


def test_same_workload_three_runs_per_side_is_within_noise(workloads, tmp_path):
    runs = record_side_by_side(workloads, tmp_path, "ab_ticks.py", [AA] * 6,
                               seconds=3, rate=1000, tag="three", go_first=True)
    paths = [p for p, _ in runs]
    rep = diff_json(paths[0], paths[2], paths[4], "--vs", paths[1], paths[3], paths[5])
    assert rep["noise"]["model"] == "spread"
    assert len(rep["base"]["runs"]) == 3 and len(rep["new"]["runs"]) == 3
    assert flagged(rep) == [], describe(flagged(rep))


def test_same_workload_at_different_rates_is_within_noise(workloads, tmp_path):
    # issue 23: time is per second whatever the rate (CPython's own profiler
    # once read unchanged functions -90% when the rates differed). The ticks are
    # jittered: a 100 ms tick in phase with a 100 Hz clock is always sampled
    # in the same function, whatever diff does
    # enough work that the 100 Hz side has ~100 samples in each function
    # (at the default 3% of a CPU it had ~11, and 30% of sampling noise)
    (a, _), (b, _) = record_side_by_side(workloads, tmp_path, "ab_ticks.py",
                                         [["--jitter", "0.013", "--cpu-ms", "17"]] * 2,
                                         seconds=8, rates=[100, 400], tag="rates", go_first=True)
    rep = diff_json(a, b)
    assert [r["rate_hz"] for r in rep["base"]["runs"] + rep["new"]["runs"]] == [100, 400]
    assert flagged(rep) == [], describe(flagged(rep))
    for fn in ("steady", "changed"):
        line = [l for l in rep["functions_self"] if l["function"] == fn][0]
        assert abs(line["change"]) < 0.35, line  # ~3 sigmas of sampling noise, not a bias


# ---- issue 23: more runs never learn less ----

def test_a_30_percent_change_is_found_with_1_2_and_3_runs_per_side(workloads, tmp_path):
    # changed() +30%, about half of the process's on-CPU time (bench/diff_calibration.py
    # measures the same over many rounds: docs/benchmarks.md)
    runs = record_side_by_side(workloads, tmp_path, "ab_ticks.py",
                               [["--cpu-ms", "10"]] * 3 + [["--cpu-ms", "10", "--slower", "1.3"]] * 3,
                               seconds=12, rate=2000, tag="thirty", go_first=True)
    a, b = [p for p, _ in runs[:3]], [p for p, _ in runs[3:]]
    seen = []
    for k in (1, 2, 3):
        rep = diff_json(*a[:k], "--vs", *b[:k])
        line = [l for l in rep["functions_self"] if l["function"] == "changed"][0]
        seen.append((k, line["change"], line["stat"], line["df"], line["verdict"]))
    print("1v1, 2v2, 3v3 (runs, change, stat, df, verdict):", seen)
    # what 1 vs 1 flags, 2 vs 2 and 3 vs 3 flag too, and each more run
    # makes the statistic larger: more runs never learn less. (1 vs 1 alone
    # sits near the bar for +30%: found in 6 of 6 calibration rounds, in 2 of
    # 3 CI runs on an idle machine.)
    assert seen[1][4] == "grew" and seen[2][4] == "grew", seen
    assert seen[0][2] < seen[1][2] < seen[2][2], seen
    # and the steady function did not move
    rep = diff_json(*a, "--vs", *b)
    steady = [l for l in rep["functions_self"] if l["function"] == "steady"][0]
    assert steady["verdict"] == "within noise", steady


def test_idle_recording_against_a_plain_one_is_refused(workloads, tmp_path):
    (a, _), (b, _) = record_side_by_side(workloads, tmp_path, "ab_ticks.py", [[], []],
                                         seconds=1, flags=[[], ["--idle"]], tag="idle", go_first=True)
    res = diff(a, b, check=False)
    assert res.returncode == 1, res.stdout[:500]
    assert res.stdout == ""
    assert res.stderr == (f"ebpfprof diff: {b} was recorded with --idle and {a} without: "
                          "they cannot be compared (record both with or both without it)\n")


# ---- done-when 3: a function made 2x slower ----

@pytest.mark.parametrize("interp_name", ["debian-3.11", "chroot-3.15", "chroot-3.15-dbg"])
def test_a_function_made_twice_slower_is_ranked_first(interp_name, workloads, tmp_path):
    # 40 ms of CPU per second in changed(), 80 on the slower side, in every
    # recording's whole window (the work starts before the profilers attach):
    # the change stays well above diff's 10 ms/s floor on a loaded machine.
    # (The default fixed rounds took 20 ms/s on 3.15, diluted to 13 by a
    # window that began 3 s before the work: CI saw +64% "within noise".)
    (a, ta), (b, tb) = record_side_by_side(workloads, tmp_path, "ab_ticks.py",
                                           [["--cpu-ms", "4"], ["--cpu-ms", "4", "--slower", "2"]],
                                           seconds=8, rate=2000, tag="slow", go_first=True,
                                           need_truth=True, interp_name=interp_name)
    rep = diff_json(a, b)
    first = rep["functions_self"][0]
    assert first["function"] == "changed" and first["verdict"] == "grew", rep["functions_self"][:3]
    # the truth: the workload's own CPU time in changed() per second, over the
    # recording's window (a loaded machine can starve the workload unevenly)
    true_ratio = cpu_per_second_in_window(tb, "changed") / cpu_per_second_in_window(ta, "changed")
    measured_ratio = 1 + first["change"]
    print(interp_name, "changed:", first, "true ratio", true_ratio)
    assert abs(measured_ratio / true_ratio - 1) <= 0.20, (measured_ratio, true_ratio)
    steady = [l for l in rep["functions_self"] if l["function"] == "steady"][0]
    assert steady["verdict"] == "within noise", steady


# ---- done-when 5: every collection an exact slice in the Chrome trace ----

def test_chrome_trace_has_one_gc_slice_per_collection(workloads, out, tmp_path):
    interp = require_interpreter("debian-3.11")
    go = tmp_path / "go"
    w = workloads(interp, "gc_churn.py", "--go", str(go), seconds=3, truth=str(tmp_path / "truth.json"))
    log, trace = tmp_path / "gc.jsonl", out(".trace.json")
    proc = subprocess.Popen([str(EBPFPROF), "--pid", str(w.pid), "-d", "30", "--gc-log", str(log),
                             "-f", "chrome", "-o", str(trace)], stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)  # attached: probes in place before the measured part
    wait_for_go(go)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    truth = w.truth()
    head, gcs, _ = read_gc_log(log)
    t0 = head["monotonic_start_s"]
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    slices = sorted((e for e in events if e.get("cat") == "gc"), key=lambda e: e["ts"])
    assert all(e["ph"] == "X" and e["pid"] == w.pid and e["tid"] == w.pid for e in slices)
    # every collection of the log is a slice, and only those
    assert len(slices) == len(gcs)

    def inside(start_s):
        return truth["begin"] <= t0 + start_s <= truth["end"]

    measured = [e for e in slices if inside(e["ts"] / 1e6)]
    true_n = len(truth["collections"])  # counted by gc.callbacks
    assert true_n > 50
    assert len(measured) == true_n, (len(measured), true_n)
    by_start = {round(g["start_s"] * 1e6): g for g in gcs}
    for e in measured:
        g = by_start[round(e["ts"])]
        assert abs(e["dur"] / 1e6 - g["duration_s"]) <= 0.05 * g["duration_s"], (e, g)
        assert e["name"] == f"GC gen {g['generation']}" and e["args"]["generation"] == g["generation"]
        assert e["args"]["collected"] == g["collected"]
    # and the stack that triggered it, innermost first
    assert any(e["args"]["stack"] and e["args"]["stack"][0].startswith("churn (") for e in measured)
    assert [e["args"]["generation"] for e in measured] == [c[0] for c in truth["collections"]]
    # the calls rebuilt from samples still nest: no call straddles a GC slice
    calls = [e for e in events if e.get("ph") == "X" and e.get("cat") != "gc" and e["tid"] == w.pid]
    eps = 1e-3  # the times are exact in ns; their sums in floats are not
    for e in measured[:200]:
        s, t = e["ts"] + eps, e["ts"] + e["dur"] - eps
        assert not any(c["ts"] < s < c["ts"] + c["dur"] < t or s < c["ts"] < t < c["ts"] + c["dur"]
                       for c in calls), e


# ---- done-when 4: the picture and the other formats ----

def chromium():
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def test_html_collapsed_and_pprof_outputs(workloads, tmp_path):
    (a, _), (b, _) = record_side_by_side(workloads, tmp_path, "ab_ticks.py",
                                         [[], ["--slower", "2"]], seconds=8, rate=2000, tag="out",
                                         whole_work=True)
    html = tmp_path / "diff.html"
    diff(a, b, "-o", html)
    page = html.read_text()
    # self-contained: nothing fetched from anywhere
    assert "http://" not in page and "https://" not in page and "src=" not in page
    browser = chromium()
    if not browser:
        pytest.fail("chromium is not installed (scripts/deps.sh installs it)")
    res = subprocess.run([browser, "--no-sandbox", "--headless", "--disable-gpu",
                          f"--user-data-dir={tmp_path / 'chromium'}", "--enable-logging=stderr",
                          "--v=0", "--dump-dom", f"file://{html}"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "Uncaught" not in res.stderr, res.stderr[-2000:]
    dom = res.stdout
    assert 'data-frames="' in dom, "the script did not draw the graph"
    # the changed function is drawn, coloured as grown (red: r=255, g=b<255)
    import re
    drawn = re.findall(r'class="f" style="[^"]*background: rgb\((\d+), (\d+), (\d+)\);">changed<', dom)
    assert drawn, "no frame for changed()"
    r, g, bl = map(int, drawn[0])
    assert r == 255 and g == bl < 235, drawn
    # collapsed: "stack count_base count_new", as flamegraph's difffolded writes
    folded = diff(a, b, "-f", "collapsed").stdout.splitlines()
    assert folded
    rows = []
    for line in folded:
        stack, base, new = line.rsplit(" ", 2)
        rows.append((stack.split(";"), int(base), int(new)))
    # 8 s at 2 kHz, four times the samples of 4 s at 1 kHz, with which CI once saw
    # steady()'s sampling noise as large as changed()'s growth (17201 against -17398);
    # here, five runs: growth 39k-49k, steady() within 9k
    grown = sum(n - o for s, o, n in rows if s[-1] == "changed")
    steady = sum(n - o for s, o, n in rows if s[-1] == "steady")
    assert grown > 0 and grown > abs(steady), (grown, steady)
    # pprof: NEW and BASE, read by go tool pprof as a diff
    new = tmp_path / "new.pb.gz"
    res = diff(a, b, "-f", "pprof", "-o", new)
    base = tmp_path / "new.base.pb.gz"
    assert base.exists() and "go tool pprof -top -diff_base" in res.stderr
    if not shutil.which("go"):
        pytest.fail("go is not installed (scripts/deps.sh installs golang-go)")
    env = dict(os.environ, HOME=str(tmp_path), GOCACHE=str(tmp_path / "gocache"))
    res = subprocess.run(["go", "tool", "pprof", "-top", "-diff_base", str(base), str(new)],
                         capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr
    top = [l.split() for l in res.stdout.splitlines() if l.strip().endswith(("changed", "steady"))]
    assert top and top[0][-1] == "changed" and not top[0][0].startswith("-"), res.stdout


# ---- issue 35: recordings of other versions still compare ----

OLD_RECORDING = Path(__file__).resolve().parents[1] / "fixtures" / "thread_mix-9092b2a.speedscope.json"


def with_states(doc, change):
    doc = copy.deepcopy(doc)
    for t in doc["ebpfprof"]["threads"]:
        change(t["states_s"])
    return doc


def test_old_unknown_state_and_missing_state_recordings_diff_against_a_new_one(workloads, tmp_path):
    """A recording made by main at 9092b2a (format 1, thread_mix.py for 1 s),
    the same with a state this binary does not know, and the same without one
    it knows ("other") all diff against a new recording, either side: exit 0,
    the states both sides have compared (the locker's lock wait, the reader's
    I/O), and one line on stderr saying what was left out or read as 0. diff
    refused the last two before ("invalid states_s.other")."""
    w = workloads(require_interpreter("debian-3.11"), "thread_mix.py", seconds=30)
    time.sleep(1.5)
    new = tmp_path / "new.json"
    run_ebpfprof("--pid", w.pid, "-d", 1, "-F", "-o", new, check=True)
    new_doc = json.loads(new.read_text())["ebpfprof"]
    assert new_doc["version"] == 5 and new_doc["states"][-1] == "other", new_doc["states"]
    old = json.loads(OLD_RECORDING.read_text())
    assert old["ebpfprof"]["version"] == 1 and "states" not in old["ebpfprof"]
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps(with_states(old, lambda s: s.update({"spin-wait": 0.25}))))
    lacking = tmp_path / "lacking.json"
    lacking.write_text(json.dumps(with_states(old, lambda s: s.pop("other"))))
    cases = [(OLD_RECORDING, None), (extra, "states this ebpfprof does not know, left out: spin-wait"),
             (lacking, "no time for states this ebpfprof has, read as 0: other")]
    for path, said in cases:
        for a, b in ((path, new), (new, path)):
            res = diff(a, b)
            if said:
                assert res.stderr == f"ebpfprof diff: {path}: {said}\n", res.stderr
            else:
                assert res.stderr == "", res.stderr
            states = {(s["thread"], s["state"]): s for s in diff_json(a, b)["states"]}
            for key in (("locker", "lock-wait"), ("reader", "io")):
                assert states[key]["base"] > 0.9 and states[key]["new"] > 0.9, states[key]


def test_diff_per_label_value(tmp_path):
    """diff compares each label value's time per state (format 3 on): the
    same request handler recorded without and with a fourth kind that sleeps
    (label_requests.py --sleeper); nap's sleep appears, in the text and the
    JSON, and every kind of both sides has its on-CPU line."""
    interp = require_interpreter("debian-3.11")
    paths = []
    for i, extra in enumerate(([], ["--sleeper"])):
        path = tmp_path / f"req{i}.speedscope.json"
        attach_label_requests(interp, path, "-r", 400, "--label", "req=handle:0", seconds=4, extra=extra)
        paths.append(path)
    rep = diff_json(*paths)
    lines = {(l["label"], l["value"], l["state"]): l for l in rep["labels"]}
    nap = lines[("req", "nap", "sleep")]
    assert nap["base"] == 0 and nap["new"] > 1 and nap["verdict"] == "grew", nap
    for kind in ("alpha", "beta", "gamma"):
        line = lines[("req", kind, "on-cpu")]
        assert line["base"] > 0 and line["new"] > 0, line
    text = diff(*paths).stdout
    assert "time per label value and state" in text, text
    assert any(l.lstrip().startswith("req=nap: ") and l.split()[-2:] == ["new", "grew"]
               for l in text.splitlines()), text
