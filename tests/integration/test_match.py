"""Several targets: --match REGEX profiles every CPython process whose command
line matches, those running when ebpfprof starts and those started later, one
profile (and GC log) per process; --pid takes a comma list."""
import os
import re
import signal
import subprocess
import time

from conftest import EBPFPROF, Profile, read_gc_log, require_interpreter


def profiles_in(d):
    return {int(re.match(r"ebpfprof-(\d+)\.speedscope\.json$", p.name).group(1)): p
            for p in d.glob("ebpfprof-*.speedscope.json")}


def check_own_profile(path, pid):
    """The profile holds pid's threads and only them: each profile's tid is one
    of pid's own (its /proc/PID/task, read while it runs), its main thread is
    there under its Python name, and crunch_a ran in it."""
    p = Profile(path)
    own = {int(t) for t in os.listdir(f"/proc/{pid}/task")}
    threads = {}
    for name in p.threads():
        if name.startswith("["):
            continue
        m = re.fullmatch(r'(?:.* )?Thread (\d+)(?: "(.*)")?', name)
        assert m, f"{path}: a profile named {name!r}"
        threads[int(m.group(1))] = m.group(2)
    assert threads and set(threads) <= own, f"{path}: threads {threads} not all of {pid}'s {own}"
    assert threads.get(pid) == "MainThread", f"{path}: {pid}'s main thread missing from {threads}"
    main = p.profile(f'Thread {pid} "MainThread"')
    assert p.weight_with("crunch_a", main) > 0, f"{path}: no samples in crunch_a"
    return p


def test_match_now_and_later(workloads, tmp_path):
    interp = require_interpreter("debian-3.11")
    marker = tmp_path / "marked"
    running = workloads(interp, "two_hot.py", seconds=30, truth=str(marker) + "-running.json")
    unmarked = workloads(interp, "two_hot.py", seconds=30, truth=str(tmp_path / "other.json"))
    # matches too, but is no Python: left alone without failing the run
    shell = subprocess.Popen(["sh", "-c", f"sleep 30; : {marker}"])
    outdir = tmp_path / "out"
    rec = subprocess.Popen([str(EBPFPROF), "--match", re.escape(str(marker)), "-d", "7",
                            "-o", str(outdir), "--gc-log", str(outdir)],
                           stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(2.5)
        later = workloads(interp, "two_hot.py", seconds=30, truth=str(marker) + "-later.json")
        _, err = rec.communicate(timeout=90)
    finally:
        shell.kill()
        if rec.poll() is None:
            rec.kill()
    assert rec.returncode == 0, err
    got = profiles_in(outdir)
    assert set(got) == {running.pid, later.pid}, err
    assert unmarked.pid not in got and shell.pid not in got
    for pid, path in got.items():
        check_own_profile(path, pid)
        head, gcs, waits = read_gc_log(outdir / f"ebpfprof-{pid}.gc.jsonl")
        assert head["duration_s"] > 0
        assert {e["pid"] for e in gcs + waits} <= {pid}
    assert f"profiling process {later.pid}: " in err
    assert "2 processes recorded" in err and "0 failed" in err
    # the process that started later was recorded for what was left of the 7 s
    later_p = Profile(got[later.pid], check=False)
    first_p = Profile(got[running.pid], check=False)
    assert sum(sum(p["weights"]) for p in later_p.doc["profiles"]) < \
        sum(sum(p["weights"]) for p in first_p.doc["profiles"])


def test_match_waits_for_nothing_yet(tmp_path):
    res = subprocess.run([str(EBPFPROF), "--match", "no-such-process-[0-9]{40}", "-d", "1",
                          "-o", str(tmp_path / "none")], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "0 processes recorded" in res.stderr
    assert list((tmp_path / "none").iterdir()) == []


def test_pid_list(workloads, tmp_path):
    interp = require_interpreter("debian-3.11")
    a = workloads(interp, "two_hot.py", seconds=30)
    b = workloads(interp, "two_hot.py", seconds=30)
    res = subprocess.run([str(EBPFPROF), "--pid", f"{a.pid},{b.pid}", "-d", "3", "-o", str(tmp_path)],
                         capture_output=True, text=True, timeout=90)
    assert res.returncode == 0, res.stderr
    got = profiles_in(tmp_path)
    assert set(got) == {a.pid, b.pid}
    for pid, path in got.items():
        check_own_profile(path, pid)


def test_pid_list_ends_when_all_targets_exit(workloads, tmp_path):
    interp = require_interpreter("debian-3.11")
    # long enough to be found alive on a loaded machine
    a = workloads(interp, "two_hot.py", seconds=6)
    b = workloads(interp, "two_hot.py", seconds=9)
    start = time.monotonic()
    res = subprocess.run([str(EBPFPROF), "--pid", f"{a.pid},{b.pid}", "-o", str(tmp_path)],
                         capture_output=True, text=True, timeout=90)
    assert res.returncode == 0, res.stderr
    assert time.monotonic() - start < 40
    assert set(profiles_in(tmp_path)) == {a.pid, b.pid}
    assert res.stderr.count("(target exited)") == 2


def test_bad_lists_and_patterns(tmp_path):
    for args, needle in ((["--pid", "12,x"], "invalid pid list: 12,x"),
                         (["--pid", "12,12"], "invalid pid list"),
                         (["--match", "worker("], "invalid --match regular expression 'worker('"),
                         (["--match", "x", "--pid", "1"], "give either --pid, --match or a command, not both")):
        res = subprocess.run([str(EBPFPROF), *args], capture_output=True, text=True, timeout=30)
        assert res.returncode == 2, res.stderr
        assert needle in res.stderr.splitlines()[0], res.stderr


def test_pid_list_with_a_missing_pid(workloads, tmp_path):
    interp = require_interpreter("debian-3.11")
    a = workloads(interp, "two_hot.py", seconds=30)
    res = subprocess.run([str(EBPFPROF), "--pid", f"{a.pid},999999999", "-d", "1", "-o", str(tmp_path)],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 1
    assert res.stderr.strip() == "ebpfprof: no such process: 999999999"
    assert not profiles_in(tmp_path)


def test_match_merges_cut_requests_close_together(workloads, tmp_path):
    """--match --rotate cuts its processes' periods on SIGUSR1 the way a
    single recording does (one controller): two requests within a quarter
    second are one cut (SIGUSR1 reaches every ebpfprof process, and a parent
    passes it on), a request later is another. Before the controllers were
    one, the group path cut twice for the pair: 4 files here, not 3."""
    interp = require_interpreter("debian-3.11")
    marker = tmp_path / "cutme"
    w = workloads(interp, "two_hot.py", seconds=30, truth=str(marker) + ".json")
    outdir = tmp_path / "out"
    rec = subprocess.Popen([str(EBPFPROF), "--match", re.escape(str(marker)), "--rotate", "3600",
                            "-d", "5", "-o", str(outdir)], stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(2.0)
        rec.send_signal(signal.SIGUSR1)
        time.sleep(0.06)
        rec.send_signal(signal.SIGUSR1)
        time.sleep(1.2)
        rec.send_signal(signal.SIGUSR1)
        _, err = rec.communicate(timeout=60)
    finally:
        if rec.poll() is None:
            rec.kill()
    assert rec.returncode == 0, err
    files = sorted(outdir.glob(f"ebpfprof-{w.pid}-*.speedscope.json"))
    assert len(files) == 3, ([f.name for f in files], err)
