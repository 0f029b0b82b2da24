"""Issue 24: kernels older than the host's. EBPFPROF_FORCE_MISSING makes
ebpfprof act as on a kernel without the features named: a required one gives
one line naming it and the Linux that brings it; the others switch to their
fallbacks (vmtests boots Debian 11's 5.10, where they are the real ones)."""
import os
import re
import time

from conftest import (Profile, SchedStat, check_exact_states, interpreters, need_bpf, read_gc_log,
                      require_interpreter, run_ebpfprof)

RELEASE = os.uname().release


def test_a_missing_required_feature_is_one_line(workloads, monkeypatch):
    need_bpf()
    require_interpreter("debian-3.11")
    w = workloads(interpreters()["debian-3.11"], "two_hot.py", seconds=20)
    monkeypatch.setenv("EBPFPROF_FORCE_MISSING", "ringbuf")
    res = run_ebpfprof("--pid", w.pid, "-d", 1)
    assert res.returncode == 1
    assert res.stdout == ""
    assert res.stderr == (f"ebpfprof: this kernel ({RELEASE}) lacks BPF ring buffers (Linux 5.8): "
                          "ebpfprof needs Linux 5.8 or later\n")


def test_an_unknown_forced_feature_is_refused(workloads, monkeypatch):
    need_bpf()
    require_interpreter("debian-3.11")
    w = workloads(interpreters()["debian-3.11"], "two_hot.py", seconds=20)
    monkeypatch.setenv("EBPFPROF_FORCE_MISSING", "bpf_loop,warp_drive")
    res = run_ebpfprof("--pid", w.pid, "-d", 1)
    assert res.returncode == 1
    assert res.stderr.count("\n") == 1
    assert res.stderr.startswith("ebpfprof: EBPFPROF_FORCE_MISSING: unknown kernel feature 'warp_drive'")


def test_the_fallbacks_walk_deep_stacks_and_time_waits(workloads, out, monkeypatch):
    """Every fallback at once, as on 5.10: a 300-frame stack walked whole by
    the chunked walk, off-CPU totals kept in the tid hash, and the summary
    saying what the kernel lacks."""
    need_bpf()
    require_interpreter("debian-3.11")
    interp = interpreters()["debian-3.11"]
    deep = workloads(interp, "recurse.py", "--depth", "300", seconds=30)
    path = out()
    monkeypatch.setenv("EBPFPROF_FORCE_MISSING", "fallbacks")
    res = run_ebpfprof("--pid", deep.pid, "-d", 2, "-o", path, check=True)
    for line in ("this kernel lacks task storage maps (Linux 5.11)",
                 "this kernel lacks bpf_loop (Linux 5.17)",
                 "this kernel lacks BPF atomic exchanges (Linux 5.12)",
                 "this kernel lacks bpf_task_pt_regs (Linux 5.15)",
                 "this kernel lacks task iterators of one process (Linux 6.1)"):
        assert line in res.stderr
    stacks = [(names, w) for names, w in Profile(path, check=False).stacks() if names[-1] == "floor"]
    assert stacks, res.stderr
    depth = max(names.count("dive") for names, _ in stacks)
    assert depth == 300, f"the deepest stack has {depth} dive() frames"

    assert_thread_table(workloads, out, interp)


def thread_cells(stderr, name):
    """The thread table's cells (seconds, percent) in the rows of threads named name."""
    return [re.findall(r"(\d+\.\d+)s\s+(\d+)%", l) for l in stderr.splitlines()
            if re.match(r"\s+\d+ %s " % name, l)]


def assert_thread_table(workloads, out, interp, *flags):
    """thread_mix.py under --idle: the thread table's exact totals, through
    the fallback, against each thread's own kernel account (schedstat): the
    locker, blocked since before the recording, in lock wait but for its
    runnable time; the spinners' on-CPU time and the rest GIL wait. Returns
    ebpfprof's stderr."""
    mix = workloads(interp, "thread_mix.py", seconds=30)
    time.sleep(0.5)  # its locker blocks before the recording starts
    path, log = out(), out(".gc.jsonl")
    stat = SchedStat(mix.pid)
    try:
        res = run_ebpfprof("--pid", mix.pid, "-d", 2, "--idle", "--gc-log", log, *flags, "-o", path,
                           check=True)
    finally:
        stat.finish()
    head, _, _ = read_gc_log(log)
    threads = {t["name"]: t for t in Profile(path, check=False).doc["ebpfprof"]["threads"]}
    for name, blocked in (("locker", ["lock-wait"]), ("spinner-1", ["gil-wait"]), ("spinner-2", ["gil-wait"])):
        check_exact_states(threads[name], stat, head, blocked)
    assert threads["spinner-1"]["states_s"]["gil-wait"] > 0.05, threads["spinner-1"]
    # and the summary's table says the same
    locker = thread_cells(res.stderr, "locker")
    assert len(locker) == 1 and len(locker[0]) == 9, res.stderr[-1500:]
    assert abs(float(locker[0][4][0]) - threads["locker"]["states_s"]["lock-wait"]) <= 0.005, res.stderr[-1500:]
    return res.stderr


def test_without_exchanges_totals_go_to_the_map(workloads, out, monkeypatch):
    """Linux 5.11: task storage, but no BPF exchange (5.12), which the
    verifier refuses even in code never reached: the switch without one is
    loaded, no drain iterator, the totals in the hash map."""
    need_bpf()
    require_interpreter("debian-3.11")
    monkeypatch.setenv("EBPFPROF_FORCE_MISSING", "atomics")
    err = assert_thread_table(workloads, out, interpreters()["debian-3.11"], "-v")
    assert "this kernel lacks BPF atomic exchanges (Linux 5.12)" in err
    assert re.search(r"off-CPU totals of \d+: in a hash map \(no BPF exchanges in this kernel\)",
                     err), err[-1500:]
