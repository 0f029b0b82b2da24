"""Issue 23: what the profiler says a thread did must be what it did.

A service that works on a 10 ms timer (tests/workloads/ticker.py: ~30% of
a CPU after each tick, asleep the rest) is where a fixed-period sampler
fails: at 100 Hz every sample landed in the same phase of the program's
cycle, and its on-CPU share came out anywhere from 0.00 to 0.98. The
sampling periods are now random, each sample weighted by its thread's
on-CPU time since its previous sample; the state table's on-CPU column is
the kernel's exact switch-in to switch-out time. Each rate is recorded for the whole
life of the process (launched by ebpfprof), so the truth is the main
thread's time.thread_time() at its end."""
import json
import math
import subprocess
import time

import pytest

import conftest
from conftest import Profile, require_interpreter

RATES = [None, 50, 100, 200, 250, 1000]    # None: the default rate (100 Hz)
SHARE_TOLERANCE = 0.03


def seconds_at(rate):
    """How long the ticker runs at a rate: long enough that the most a share
    can be off in seconds, over the run, is at most 1/1.3 of the tolerance.
    That most: the start before the profiler saw the thread (the exact
    column read 15-72 ms under thread_time() in six 20-30 s runs), the
    interpreter's start before its first frame (~30 ms) and the samples'
    edges (6 periods, as in the burst test below): 0.23 s at 50 Hz (10 s),
    where those runs read the sampled total 51-115 ms short. The 100 Hz run
    is the state table's too, whose bound is 2% of the thread's CPU time
    (~6 s of a 20 s run; 120 ms against those 15-72): it stays 20 s."""
    if rate == 100:
        return 20
    worst_s = 0.08 + 0.03 + 6 / (rate or 100)
    return math.ceil(1.3 * worst_s / SHARE_TOLERANCE)


# Two recordings at a time. When a sample weighed its CPU's busy time since
# the previous tick, whatever ran, other processes' time moved between the
# threads at random: six of these 30%-busy tickers and their profilers at
# once (the 2 CPUs ~90% busy) read the share ~1.3 points apart between runs,
# and one run in ~12 outside 3. A sample now weighs its own thread's time
# (within 0.5 points with six at once); two at a time keeps the machine's
# load, and the test's margin, as it was: the next starts as one ends.
AT_ONCE = 2


def two_at_a_time(jobs, tmp):
    """Runs [(argv, ...)], longest first, AT_ONCE at a time; returns each
    one's stderr, in the order given."""
    waiting = sorted(range(len(jobs)), key=lambda i: -jobs[i][1])
    running, errs = {}, {}
    while waiting or running:
        while waiting and len(running) < AT_ONCE:
            i = waiting.pop(0)
            with open(tmp / f"e{i}.txt", "w") as err:
                running[i] = subprocess.Popen(jobs[i][0], stdout=subprocess.DEVNULL, stderr=err)
        done = [i for i, p in running.items() if p.poll() is not None]
        if not done:
            time.sleep(0.05)
        for i in done:
            errs[i] = (tmp / f"e{i}.txt").read_text()
            assert running.pop(i).returncode == 0, errs[i]
    return [errs[i] for i in range(len(jobs))]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One recording per rate, two at a time (each alone would take minutes)."""
    interp = require_interpreter("debian-3.11")
    tmp = tmp_path_factory.mktemp("truth")
    jobs = []
    for i, rate in enumerate(RATES):
        argv = [str(conftest.EBPFPROF), "-o", str(tmp / f"r{i}.json")]
        if rate:
            argv += ["-r", str(rate)]
        argv += ["--", *interp.argv, str(conftest.WORKLOADS / "ticker.py"),
                 "--seconds", str(seconds_at(rate)), "--truth", str(tmp / f"t{i}.json")]
        jobs.append((argv, seconds_at(rate)))
    errs = two_at_a_time(jobs, tmp)
    return [(rate, Profile(tmp / f"r{i}.json", check=False),
             json.loads((tmp / f"t{i}.json").read_text()), errs[i])
            for i, rate in enumerate(RATES)]


def thread_entry(prof, tid):
    hits = [t for t in prof.doc["ebpfprof"]["threads"] if t["tid"] == tid]
    assert hits, prof.doc["ebpfprof"]["threads"]
    return hits[0]


def sampled_seconds(prof, tid):
    main = prof.profile(f"Thread {tid} ")
    return prof.seconds(main)


@pytest.mark.parametrize("index", range(len(RATES)), ids=[f"{r or 'default'}Hz" for r in RATES])
def test_periodic_program_share_at_every_rate(runs, index):
    rate, prof, truth, err = runs[index]
    main = thread_entry(prof, truth["pid"])
    observed = main["observed_s"]
    true_share = truth["cpu_total_s"] / observed
    summary_share = (main["states_s"]["on-cpu"] + main["states_s"]["gc"]) / observed
    sample_share = sampled_seconds(prof, truth["pid"]) / observed
    assert 0.05 < true_share < 0.5, truth       # the workload did what it says
    assert abs(summary_share - true_share) <= SHARE_TOLERANCE, (rate, summary_share, true_share, err)
    assert abs(sample_share - true_share) <= SHARE_TOLERANCE, (rate, sample_share, true_share, err)


def test_state_table_adds_up_and_on_cpu_is_exact(runs):
    _, prof, truth, err = runs[RATES.index(100)]
    duration = prof.doc["ebpfprof"]["duration_s"]
    for t in prof.doc["ebpfprof"]["threads"]:
        total = sum(t["states_s"].values())
        assert abs(total - t["observed_s"]) <= 1e-6 * max(1, total), t
        if t["tid"] == truth["pid"]:
            # the main thread lived through the whole recording
            assert abs(t["observed_s"] - duration) <= 0.02 * duration, (t, duration)
            on_cpu = t["states_s"]["on-cpu"] + t["states_s"]["gc"]
            assert abs(on_cpu - truth["cpu_total_s"]) <= 0.02 * truth["cpu_total_s"], (t, truth)


def test_thread_that_only_sleeps_is_named(runs):
    _, prof, truth, err = runs[RATES.index(100)]
    threads = prof.doc["ebpfprof"]["threads"]
    logger = [t for t in threads if t["name"] == "logger"]
    assert logger, threads
    assert logger[0]["process"] == "python3.11", logger
    assert logger[0]["states_s"]["lock-wait"] > 0.5 * logger[0]["observed_s"], logger
    # the summary's thread table names it too
    assert any(line.split()[1:2] == ["logger"] for line in err.splitlines()
               if line.startswith("  ") and line.split()[0].isdigit()), err


# A 100 ms ticker whose burst is two functions in turn (17 ms of CPU each,
# then asleep), at a low rate and a high one. At 97 Hz this read 10-25%
# short, the first function most: a sample was cut where the thread's next
# one began, and the busy time between a CPU's last tick and its going idle
# went to the idle tick. Each function's time (by its own thread_time()) and
# the thread's sampled total (against the exact on-CPU time) must hold.
BURST_RATES = [97, 400]


@pytest.fixture(scope="module")
def bursts(tmp_path_factory):
    """ab_ticks.py recorded at each burst rate, both at once (two ~35%-busy
    programs: the 2 CPUs' load of the ticker's pairs above)."""
    interp = require_interpreter("debian-3.11")
    tmp = tmp_path_factory.mktemp("bursts")
    jobs = [([str(conftest.EBPFPROF), "-r", str(rate), "-o", str(tmp / f"p{rate}.json"), "--",
              *interp.argv, str(conftest.WORKLOADS / "ab_ticks.py"), "--seconds", "12",
              "--cpu-ms", "17", "--jitter", "0.013", "--truth", str(tmp / f"t{rate}.json")], 12)
            for rate in BURST_RATES]
    errs = two_at_a_time(jobs, tmp)
    return {rate: (tmp / f"p{rate}.json", tmp / f"t{rate}.json", err)
            for rate, err in zip(BURST_RATES, errs)}


@pytest.mark.parametrize("rate", BURST_RATES)
def test_burst_functions_are_read_unbiased(rate, bursts):
    out, truth_path, stderr = bursts[rate]
    prof, truth = Profile(out, check=False), json.loads(truth_path.read_text())
    main = prof.profile(f"Thread {truth['pid']} ")
    by_fn, weights = {"steady": 0.0, "changed": 0.0}, []
    for names, w in prof.stacks(main):
        for fn in by_fn:
            if fn in names:
                by_fn[fn] += w / 1e9
                weights.append(w / 1e9)
    on_cpu = thread_entry(prof, truth["pid"])["states_s"]["on-cpu"]
    sampled = sampled_seconds(prof, truth["pid"])
    # the samples' sum is the thread's own exact on-CPU time but for the
    # stretches before its first sample and after its last (1.5 periods each
    # at most: gaps are drawn in [P/2, 3P/2)), a first sample weighed by its
    # CPU's busy time (a period), one period of margin, and the interpreter's
    # start before its first Python frame (~30 ms): 92 ms at 97 Hz, where
    # this binary read -57..+13 ms in 9 runs and the one before the weight
    # fix (114ae9f) 118-509 ms short in 8 (of ~4.1 s)
    slack = 6 / rate + 0.03
    assert abs(sampled - on_cpu) <= slack, (rate, sampled, on_cpu, slack, stderr)
    # which function each sample names is a draw: the share of one has the
    # binomial error sqrt(p(1-p)/n), n the samples' effective number (their
    # weights differ: (sum w)^2 / sum w^2); 4 sigmas (~400 samples at 97 Hz:
    # 10 share points; ~1600 at 400 Hz: 5)
    n_eff = sum(weights) ** 2 / sum(w * w for w in weights)
    total_want, total_got = sum(truth["cpu_seconds"].values()), sum(by_fn.values())
    for fn, got in by_fn.items():
        want = truth["cpu_seconds"][fn]
        p = want / total_want
        bound = 4 * (p * (1 - p) / n_eff) ** 0.5
        assert abs(got / total_got - p) <= bound, (rate, fn, got / total_got, p, bound, n_eff, by_fn)
        # and its time: that share of the total, whose bound is the slack's
        rel = bound / p + slack / total_want
        assert abs(got / want - 1) <= rel, (rate, fn, got, want, rel, by_fn)


# Threads of one process sharing the CPUs in short runs (an asyncio loop
# beside a pool of four, tests/workloads/thread_pool_timer.py) must not
# trade time: each one's samples add up to its own exact on-CPU time. When a
# sample weighed its CPU's busy time since the previous tick, whatever ran,
# a pool thread read 7-12% off in two of three runs at 200 Hz; now within
# 2.2%. The stretch after a thread's last sample (~5 ms of its CPU at 200
# Hz, of >= 0.5 s) is in no sample. The main thread is left out: its exact
# time holds the interpreter's start, before it has Python frames.
def test_pool_threads_keep_their_own_time(tmp_path):
    interp = require_interpreter("debian-3.11")
    out, truth_path = tmp_path / "p.json", tmp_path / "t.json"
    res = subprocess.run([str(conftest.EBPFPROF), "-r", "200", "-o", str(out), "--",
                          *interp.argv, str(conftest.WORKLOADS / "thread_pool_timer.py"),
                          "--seconds", "8", "--truth", str(truth_path)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    prof, truth = Profile(out, check=False), json.loads(truth_path.read_text())
    pool = [t for t in prof.doc["ebpfprof"]["threads"] if t["name"].startswith("pool-")]
    assert len(pool) == 4, prof.doc["ebpfprof"]["threads"]
    for t in pool:
        on_cpu = t["states_s"]["on-cpu"] + t["states_s"]["gc"]
        # the exact column against the thread's own clock, then the samples
        assert abs(on_cpu / truth["cpu_s"][str(t["tid"])] - 1) <= 0.02, (t, truth)
        sampled = sampled_seconds(prof, t["tid"])
        assert abs(sampled / on_cpu - 1) <= 0.06, (t["name"], sampled, on_cpu, res.stderr)
