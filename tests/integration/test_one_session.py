"""Issue 33, done-when 1: --match and --pid A,B,C record every process in ONE
ebpfprof process with one BPF session (user/record/group.c): as many BPF
programs as a single --pid recording loads, each process's own profile as
accurate as alone, and a process that exits has its profile written and its
memory freed then, so that a stream of short processes leaves ebpfprof's
memory and descriptors where they were."""
import math
import os
import re
import subprocess
import time
from pathlib import Path

from conftest import EBPFPROF, Profile, cannot_run, need_bpf, require_interpreter

PY = "/usr/bin/python3.11"


def bpf_programs(pid):
    """The BPF programs process pid holds a descriptor of (their fdinfo names
    a prog_type; a link's names the program it holds but no type)."""
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            if "\nprog_type:" in "\n" + Path(f"/proc/{pid}/fdinfo/{fd}").read_text():
                n += 1
        except OSError:
            pass
    return n


def children(pid):
    """ebpfprof's own processes: children but its reader of target memory."""
    kids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and "(ebpfprof-read) " not in stat:
                kids.append(int(d.name))
    return kids


def most_programs_while(rec, seconds):
    """The most BPF programs rec held while it ran (seconds at most), and
    every child it had meanwhile."""
    most, kids = 0, set()
    end = time.monotonic() + seconds
    while rec.poll() is None and time.monotonic() < end:
        try:
            most = max(most, bpf_programs(rec.pid))
            kids |= set(children(rec.pid))
        except OSError:
            break
        time.sleep(0.25)
    return most, kids


def share_a(stacks_weight_a, stacks_weight_b):
    return 100.0 * stacks_weight_a / (stacks_weight_a + stacks_weight_b)


def share_tolerance(share, seconds, rate_hz):
    """Points a sampled share may stray from the truth: four binomial
    standard errors of the samples behind it, plus a point of bias."""
    samples = seconds * rate_hz
    return 1 + 4 * 100 * math.sqrt(share / 100 * (1 - share / 100) / samples)


def test_match_eight_processes_one_session(workloads, tmp_path):
    need_bpf()
    interp = require_interpreter("debian-3.11")
    # a single --pid recording's programs, for the yardstick
    one = workloads(interp, "two_hot.py", seconds=30)
    single = subprocess.Popen([str(EBPFPROF), "--pid", str(one.pid), "-d", "2", "-r", "1000",
                               "-o", str(tmp_path / "single.json")], stderr=subprocess.PIPE, text=True)
    single_progs, _ = most_programs_while(single, 2)
    single.communicate(timeout=60)
    assert single.returncode == 0 and single_progs > 0
    one.stop()

    marker = f"one-session-{os.getpid()}"
    # 8 CPU-bound processes on 2 CPUs: each gets ~1/4 of one (less on this
    # loaded machine), ~1.8 s in 14 s, ~1800 samples at 1000 Hz: a share's
    # standard error ~1.2 points, the tolerance ~5.7 (measured over 10 s:
    # 8 separate recordings read up to 2.4 points off too, one of 8 in the
    # one session 3.5)
    ws = [workloads(interp, "two_hot.py", seconds=20, truth=str(tmp_path / f"{marker}-{i}.json"))
          for i in range(8)]
    out = tmp_path / "out"
    rec = subprocess.Popen([str(EBPFPROF), "--match", re.escape(marker), "-r", "1000", "-d", "14",
                            "-o", str(out)], stderr=subprocess.PIPE, text=True)
    progs, kids = most_programs_while(rec, 16)
    _, err = rec.communicate(timeout=90)
    assert rec.returncode == 0, err
    assert kids == set(), f"--match started {len(kids)} processes\n{err}"
    # one session's programs: a --pid recording's, plus the GC probes of
    # the other kind (uprobes), which a --pid recording of a USDT target
    # does not load, and --match cannot know it will not need
    assert progs == single_progs + 2, (progs, single_progs)
    assert "8 processes recorded" in err and "0 failed" in err, err
    for w in ws:
        truth = w.truth()["cpu_seconds"]
        prof = Profile(out / f"ebpfprof-{w.pid}.speedscope.json")
        main = prof.profile(f'Thread {w.pid} "MainThread"')
        a, b = prof.seconds(main, "crunch_a"), prof.seconds(main, "crunch_b")
        got, want = share_a(a, b), share_a(truth["crunch_a"], truth["crunch_b"])
        assert abs(got - want) <= share_tolerance(want, a + b, 1000), (w.pid, got, want, a + b)


def rss_kib_and_fds(pid):
    status = Path(f"/proc/{pid}/status").read_text()
    rss = int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.M).group(1))
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


BUSY = "import sys, time\nend = time.monotonic() + 0.8\nwhile time.monotonic() < end: pass\n"


def short_processes(marker, n, at_once):
    """n processes, at_once at a time, each busy ~0.8 s then gone."""
    for first in range(0, n, at_once):
        procs = [subprocess.Popen([PY, "-c", BUSY, marker]) for _ in range(min(at_once, n - first))]
        for p in procs:
            p.wait(timeout=60)


def wait_recorded(rec, err_path, count):
    """Until ebpfprof said it wrote count profiles (its per-process summaries),
    or, once it wrote one, wrote none for 5 s: the processes have all exited
    then, and one it missed (the assertions count them) would otherwise cost
    the whole 30 s."""
    end = time.monotonic() + 30
    done, since = 0, time.monotonic()
    while time.monotonic() < end and done < count and not (done and time.monotonic() - since > 5):
        now = err_path.read_text().count("(target exited)")
        if now != done:
            done, since = now, time.monotonic()
        time.sleep(0.2)


# Short processes after the first 8: enough for a leak per ended process to
# show (a descriptor: 60; memory: a leak of LEAK_KIB_PER_PROCESS each,
# 60 x 5 KiB = 300 KiB, what 200 processes under a 1 MiB bound caught).
SHORT_PROCESSES = 60
LEAK_KIB_PER_PROCESS = 5


def test_ended_processes_leave_memory_and_descriptors(tmp_path):
    need_bpf()
    if not os.path.exists(PY):
        cannot_run(f"{PY} is not installed")
    marker = f"short-lived-{os.getpid()}"
    out = tmp_path / "out"
    err_path = tmp_path / "err"
    with open(err_path, "w") as errf:
        rec = subprocess.Popen([str(EBPFPROF), "--match", re.escape(marker), "-r", "1000",
                                "-o", str(out)], stderr=errf)
    try:
        # caches that are made once (the interpreter's file, its GC probes)
        short_processes(marker, 8, 4)
        wait_recorded(rec, err_path, 8)
        time.sleep(1)
        before = rss_kib_and_fds(rec.pid)
        short_processes(marker, SHORT_PROCESSES, 4)
        wait_recorded(rec, err_path, 8 + SHORT_PROCESSES)
        time.sleep(1)
        after = rss_kib_and_fds(rec.pid)
    finally:
        rec.terminate()
        rec.wait(timeout=60)
    err = err_path.read_text()
    recorded = err.count("(target exited)")
    print(f"{recorded} recorded; RSS {before[0]} -> {after[0]} KiB, descriptors {before[1]} -> {after[1]}")
    # each process is recorded while it lives (the scan runs every 200 ms)
    assert recorded >= SHORT_PROCESSES, err[-3000:]
    assert len(list(out.glob("ebpfprof-*.speedscope.json"))) == recorded
    assert after[1] == before[1], f"descriptors {before[1]} -> {after[1]}"
    assert after[0] - before[0] < SHORT_PROCESSES * LEAK_KIB_PER_PROCESS, \
        f"RSS {before[0]} -> {after[0]} KiB"


def test_subprocesses_of_several_targets_go_to_their_own_profile(workloads, tmp_path):
    """-s with --pid A,B: each target's forked workers are followed in the one
    session and land in their parent's profile, none in the other's."""
    need_bpf()
    interp = require_interpreter("debian-3.11")
    gos = [tmp_path / f"go-{i}" for i in range(2)]
    ws = [workloads(interp, "pool.py", "--method", "fork", "--go", str(go), seconds=3,
                    truth=str(tmp_path / f"truth-{i}.json")) for i, go in enumerate(gos)]
    out = tmp_path / "out"
    rec = subprocess.Popen([str(EBPFPROF), "-s", "--pid", f"{ws[0].pid},{ws[1].pid}", "-d", "30",
                            "-o", str(out)], stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    for go in gos:
        go.write_text("go")
    _, err = rec.communicate(timeout=60)
    assert rec.returncode == 0, err
    assert "2 processes recorded" in err, err
    for w, other in ((ws[0], ws[1]), (ws[1], ws[0])):
        workers = w.truth()["workers"]
        prof = Profile(out / f"ebpfprof-{w.pid}.speedscope.json")
        pids = {int(name.split("(pid ")[1].split(")")[0]) for name in prof.threads()}
        assert {w.pid, *workers} <= pids, (prof.threads(), workers)
        assert not pids & {other.pid, *other.truth()["workers"]}, (pids, other.pid)
        # its samples, not only its start (4 workers spin on 2 loaded CPUs
        # here: one read 0.29 s of its 3 s)
        for worker in workers:
            worker_profile = next(p for p in prof.doc["profiles"] if f"(pid {worker})" in p["name"])
            assert prof.seconds(worker_profile, "pool_work") > 0.05


def test_matching_children_followed_are_not_recorded_twice(workloads, tmp_path):
    """-s with --match: forked workers share their parent's command line, so
    they match too; followed by their parent's member, they stay in its
    profile and get no member of their own."""
    need_bpf()
    interp = require_interpreter("debian-3.11")
    marker = f"followed-{os.getpid()}"
    go = tmp_path / "go"
    w = workloads(interp, "pool.py", "--method", "fork", "--go", str(go), seconds=4,
                  truth=str(tmp_path / f"{marker}.json"))
    out = tmp_path / "out"
    rec = subprocess.Popen([str(EBPFPROF), "-s", "--match", re.escape(marker), "-d", "8",
                            "-o", str(out)], stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    go.write_text("go")
    _, err = rec.communicate(timeout=60)
    assert rec.returncode == 0, err
    workers = w.truth()["workers"]
    assert [p.name for p in out.iterdir()] == [f"ebpfprof-{w.pid}.speedscope.json"], err
    assert "1 process recorded" in err, err
    prof = Profile(out / f"ebpfprof-{w.pid}.speedscope.json")
    pids = {int(name.split("(pid ")[1].split(")")[0]) for name in prof.threads()}
    assert {w.pid, *workers} <= pids, (prof.threads(), workers)
