"""Continuous mode: --rotate writes one complete profile and GC log per period
without detaching, named with the period's start time; --keep deletes the
oldest; SIGUSR1 writes the current period at once; memory stays flat (a
60-second benchmark: test_rotate_soak, under make soak)."""
import os
import re
import signal
import subprocess
import time

import json

import jsonschema

from conftest import EBPFPROF, SCHEMA, Profile, cannot_run, read_gc_log, require_interpreter

STAMP = r"\d{8}-\d{6}\.\d{3}Z-\d+"  # UTC, then a sequence number (never a name twice)


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def rotate(workloads, tmp_path, seconds, rss=None):
    """--rotate 2 for `seconds` on a thread mix with --idle and a GC log;
    rss, if given, gets ebpfprof's RSS (kB) by whole second meanwhile.
    Checks what each period holds; returns the periods' profiles."""
    interp = require_interpreter("debian-3.11")
    w = workloads(interp, "thread_mix.py", seconds=seconds + 30)
    rec = subprocess.Popen([str(EBPFPROF), "--pid", str(w.pid), "--rotate", "2", "-d", str(seconds), "--idle",
                            "--gc-log", str(tmp_path / "gc.jsonl"), "-o", str(tmp_path / "app.speedscope.json")],
                           stderr=subprocess.PIPE, text=True)
    start = time.monotonic()
    while rec.poll() is None:
        t = time.monotonic() - start
        kb = rss_kb(rec.pid) if rss is not None and t < seconds - 1 else None
        if kb:
            rss[round(t)] = kb
        time.sleep(1)
    err = rec.stderr.read()
    assert rec.returncode == 0, err
    profiles = sorted(tmp_path.glob("app-*.speedscope.json"))
    logs = sorted(tmp_path.glob("gc-*.jsonl"))
    assert len(profiles) == seconds // 2, [p.name for p in profiles]
    assert len(logs) == seconds // 2
    assert all(re.fullmatch(f"app-{STAMP}.speedscope.json", p.name) for p in profiles)
    assert [p.name[4:23] for p in profiles] == [l.name[3:22] for l in logs]
    total = 0.0
    if not SCHEMA.exists():
        cannot_run("speedscope schema not installed (scripts/deps-speedscope.sh)")
    schema = json.loads(SCHEMA.read_text())
    for i, (path, log) in enumerate(zip(profiles, logs)):
        # every period follows speedscope's schema; three of them (first,
        # middle, last) are also imported in speedscope's app at the end
        if i in (0, len(profiles) // 2, len(profiles) - 1):
            p = Profile(path)
        else:
            p = Profile(path, check=False)
            jsonschema.validate(p.doc, schema)
        head, _, waits = read_gc_log(log)
        total += head["duration_s"]
        assert 1.5 < head["duration_s"] < 2.6, (path.name, head)
        # the reader is blocked in recv the whole run: every period has its
        # wait, continued across the cuts, and nearly the whole period of it
        reader = p.profile("reader")
        io = sum(w for s, w in zip(reader["samples"], reader["weights"])
                 if s and p.frames[s[-1]]["name"] == "[I/O wait]")
        assert io / 1e9 > 0.8 * head["duration_s"], (path.name, io, head)
        assert p.weight_with("spinner") > 0, path.name
    assert seconds - 3 < total < seconds + 1
    return profiles


def test_rotate_2s_for_12s_writes_6_complete_profiles(workloads, tmp_path):
    rotate(workloads, tmp_path, 12)


def test_rotate_soak(workloads, tmp_path):
    """A memory target, so a benchmark (make soak, which make bench runs; the
    suite deselects it): 30 periods in 60 s, and what the profiler holds
    after 20 s is what it holds at the end."""
    if not os.environ.get("EBPFPROF_SOAK"):
        cannot_run("a 60-second memory benchmark: make soak (make bench runs it); the suite deselects it")
    rss = {}
    rotate(workloads, tmp_path, 60, rss)
    later = [kb for t, kb in rss.items() if t >= 20]
    assert rss and later, rss
    base = rss[min(t for t in rss if t >= 20)]
    print(f"ebpfprof RSS (kB) by second: {rss}")
    assert max(later) - base < max(2048, base // 10), rss


def test_keep_and_sigusr1(workloads, tmp_path):
    interp = require_interpreter("debian-3.11")
    w = workloads(interp, "two_hot.py", seconds=60)
    rec = subprocess.Popen([str(EBPFPROF), "--pid", str(w.pid), "--rotate", "3600", "--keep", "2", "-d", "6",
                            "--gc-log", str(tmp_path / "gc.jsonl"), "-o", str(tmp_path / "p.speedscope.json")],
                           stderr=subprocess.PIPE, text=True)
    for _ in range(3):
        time.sleep(1.5)
        rec.send_signal(signal.SIGUSR1)
    _, err = rec.communicate(timeout=60)
    assert rec.returncode == 0, err
    # three periods on request and the last: only the newest two are kept
    assert len(re.findall(r"ebpfprof: period \d: ", err)) == 3, err
    profiles = sorted(tmp_path.glob("p-*.speedscope.json"))
    assert len(profiles) == 2 and len(list(tmp_path.glob("gc-*.jsonl"))) == 2
    for path in profiles:
        assert Profile(path).weight_with("crunch_a") > 0


def test_rotate_option_errors():
    for args, needle in ((["--rotate", "0", "--pid", "1"], "invalid rotation period: 0"),
                         (["--rotate", "x", "--pid", "1"], "invalid rotation period: x"),
                         (["--keep", "3", "--pid", "1"], "--keep needs --rotate"),
                         (["--rotate", "5", "--keep", "0", "--pid", "1"], "invalid --keep: 0")):
        res = subprocess.run([str(EBPFPROF), *args], capture_output=True, text=True, timeout=30)
        assert res.returncode == 2 and needle in res.stderr.splitlines()[0], res.stderr


def test_cut_periods_account_each_moment_once(workloads, tmp_path):
    """80 threads napping 10 ms, cut into periods on request (the first right
    after attaching): in every period, each napper's states add up to the
    period's window. Stacks walked during a cut take long enough that naps
    end meanwhile; those were counted twice (once by the cut, once by the
    switch-in) or in the period before (0.12 s a thread)."""
    interp = require_interpreter("debian-3.11")
    w = workloads(interp, "many_nappers.py", seconds=60)
    time.sleep(0.5)
    rec = subprocess.Popen([str(EBPFPROF), "--pid", str(w.pid), "--rotate", "3600", "-d", "5", "--idle",
                            "--gc-log", str(tmp_path / "gc.jsonl"), "-o", str(tmp_path / "p.speedscope.json")],
                           stderr=subprocess.PIPE, text=True)
    time.sleep(0.8)
    for _ in range(12):
        rec.send_signal(signal.SIGUSR1)
        time.sleep(0.3)
    _, err = rec.communicate(timeout=60)
    assert rec.returncode == 0, err
    profiles = sorted(tmp_path.glob("p-*.speedscope.json"))
    logs = sorted(tmp_path.glob("gc-*.jsonl"))
    # a request during a cut of 80 threads' stacks (0.2-0.4 s under load) is
    # merged into it: 12 requests make 7-13 periods here, and 6 were seen
    assert len(profiles) >= 5 and len(profiles) == len(logs), err
    for path, log in zip(profiles, logs):
        head, _, _ = read_gc_log(log)
        nappers = [t for t in Profile(path, check=False).doc["ebpfprof"]["threads"]
                   if t["name"].startswith("nap-")]
        assert len(nappers) == 80, path.name
        for t in nappers:
            # one nap (10 ms) may go missing where the interval's cut and
            # the thread's wake-up meet; 0.03 s is three
            assert abs(sum(t["states_s"].values()) - head["duration_s"]) <= 0.03, \
                (path.name, t["name"], t["states_s"], head["duration_s"])
