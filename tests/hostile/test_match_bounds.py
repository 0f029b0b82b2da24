"""Issue 18 items 1 and 2: --match runs as root and any process on the host can
put the pattern in its command line. A matching process ebpfprof refuses (a
GIL build named like a free-threaded one) or whose recording fails must not
be retried (it was, every 200 ms, each time a child loading the whole BPF
object); and the number of processes recorded at once is bounded. Since
issue 33 they are members of one recording session, never children."""
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from conftest import EBPFPROF, cannot_run, need_bpf

PY = "/usr/bin/python3.11"
SLEEPER = "import time; time.sleep(60)"


def children_of(pid):
    """The pids whose parent is pid now, but its reader of target memory
    (user/base/remote_reader.c), which records nothing: a fork with no exit
    signal (stat's field 38 is 0), named REMOTE_READER_COMM once it has set
    its name (a fresh one is caught now and then before it has)."""
    kids = set()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            fields = stat.rsplit(")", 1)[1].split()   # from field 3, the state
            if int(fields[1]) == pid and "(ebpfprof-read) " not in stat and int(fields[35]) != 0:
                kids.add(int(d.name))
        except (OSError, ValueError, IndexError):
            pass
    return kids


def watch(args, seconds):
    """Runs ebpfprof; returns (exit status, stderr, every child seen, the most at once)."""
    rec = subprocess.Popen([str(EBPFPROF), *args], stderr=subprocess.PIPE, text=True)
    seen, most = set(), 0
    try:
        end = time.monotonic() + seconds
        while rec.poll() is None and time.monotonic() < end:
            kids = children_of(rec.pid)
            seen |= kids
            most = max(most, len(kids))
            time.sleep(0.02)
        _, err = rec.communicate(timeout=120)
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()
    return rec.returncode, err, seen, most


def sleepers(exe, marker, n):
    if not os.path.exists(PY):
        cannot_run(f"{PY} is not installed")
    procs = [subprocess.Popen([exe, "-c", SLEEPER, marker]) for _ in range(n)]
    time.sleep(0.5)		# their interpreters initialised
    return procs


def test_refused_target_is_not_retried(tmp_path):
    need_bpf()
    # a process that says it is CPython 3.13 with _Py_DebugOffsets no CPython
    # has (tests/hostile/fake_debug_offsets.c, "huge"): refused by what it holds
    exe = tmp_path / "fakepy"
    res = subprocess.run(["cc", "-O0", "-o", str(exe),
                          str(Path(__file__).parent / "fake_debug_offsets.c")],
                         capture_output=True, text=True)
    if res.returncode:
        cannot_run(f"cannot build the fake target: {res.stderr}")
    marker = f"refused-{os.getpid()}"
    procs = [subprocess.Popen([str(exe), "huge", marker], stderr=subprocess.PIPE, text=True)]
    assert procs[0].stderr.readline().startswith("pid=")
    try:
        rc, err, seen, _ = watch(["--match", re.escape(marker), "-d", "5",
                                  "-o", str(tmp_path / "out")], 30)
    finally:
        for p in procs:
            p.kill()
    # checked before any BPF is loaded: no child at all, one line
    assert seen == set(), f"{len(seen)} recordings started for a refused target\n{err}"
    pid = procs[0].pid
    assert err.count(f"not profiling process {pid}: ") == 1, err
    assert "no CPython has" in err and "not tried again" in err
    assert rc == 1 and "0 processes recorded" in err and "1 refused" in err, err


def test_failed_recording_is_not_retried(tmp_path):
    need_bpf()
    marker = f"failing-{os.getpid()}"
    procs = sleepers(PY, marker, 1)
    out = tmp_path / "out"
    # its profile cannot be written: it is given up on before it is recorded
    (out / f"ebpfprof-{procs[0].pid}.speedscope.json").mkdir(parents=True)
    try:
        rc, err, seen, _ = watch(["--match", re.escape(marker), "-d", "5", "-o", str(out)], 30)
    finally:
        for p in procs:
            p.kill()
    assert seen == set(), f"{len(seen)} child recordings started\n{err}"
    assert err.count(f"not profiling process {procs[0].pid}: cannot write ") == 1, err
    assert "it is a directory; not tried again" in err, err
    assert rc == 1 and "0 processes recorded" in err and "1 failed" in err, err


def profiled(err):
    return len(re.findall(r"^ebpfprof: profiling process \d+: ", err, re.M))


def test_processes_at_once_are_bounded(tmp_path):
    need_bpf()
    marker = f"many-{os.getpid()}"
    procs = sleepers(PY, marker, 18)
    try:
        rc, err, seen, _ = watch(["--match", re.escape(marker), "-d", "8",
                                  "-o", str(tmp_path / "out")], 60)
    finally:
        for p in procs:
            p.kill()
    assert seen == set(), f"{len(seen)} child recordings started\n{err}"
    assert profiled(err) == 16, err
    # said once, and counted at the end: not silently dropped
    assert err.count("16 processes recorded at once already, the most") == 1, err
    assert "16 processes recorded" in err and "2 not recorded (more than 16 at once)" in err, err
    assert rc == 1


def test_max_processes(tmp_path):
    need_bpf()
    marker = f"bounded-{os.getpid()}"
    procs = sleepers(PY, marker, 5)
    try:
        rc, err, _, _ = watch(["--match", re.escape(marker), "--max-processes", "3", "-d", "4",
                               "-o", str(tmp_path / "out")], 60)
    finally:
        for p in procs:
            p.kill()
    assert profiled(err) == 3, err
    assert err.count("3 processes recorded at once already, the most (--max-processes)") == 1, err
    assert "3 processes recorded" in err and "2 not recorded (more than 3 at once)" in err, err
    assert len(list((tmp_path / "out").glob("ebpfprof-*.speedscope.json"))) == 3
    assert rc == 1
    for args, needle in ((["--match", "x", "--max-processes", "0"], "invalid --max-processes: 0 (1 to 256)"),
                         (["--match", "x", "--max-processes", "257"], "invalid --max-processes: 257"),
                         (["--pid", "1", "--max-processes", "2"], "--max-processes needs --match or --pid A,B")):
        res = subprocess.run([str(EBPFPROF), *args], capture_output=True, text=True, timeout=30)
        assert res.returncode == 2 and needle in res.stderr.splitlines()[0], res.stderr


def test_a_write_failing_at_the_end_fails_that_process_alone(tmp_path):
    """One session for every process: the profile of one that cannot be
    written at the end (its name taken by a directory meanwhile) is that
    process's failure, said in one line; the other's is written."""
    need_bpf()
    marker = f"late-fail-{os.getpid()}"
    procs = sleepers(PY, marker, 2)
    out = tmp_path / "out"
    rec = subprocess.Popen([str(EBPFPROF), "--pid", f"{procs[0].pid},{procs[1].pid}", "-d", "3",
                            "-o", str(out)], stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.5)
        (out / f"ebpfprof-{procs[0].pid}.speedscope.json").mkdir()
        _, err = rec.communicate(timeout=60)
    finally:
        for p in procs:
            p.kill()
    assert rec.returncode == 1, err
    assert err.count(f"ebpfprof: process {procs[0].pid}: cannot write ") == 1, err
    assert "1 process recorded" in err and "1 failed" in err, err
    assert (out / f"ebpfprof-{procs[1].pid}.speedscope.json").is_file()
