"""Issue 2: sampling, symbolizing, the speedscope output, launch/attach, endings."""
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import EBPFPROF, Profile, require_interpreter, run_ebpfprof

# 5 s at 400 Hz: ~2000 samples, so the sampling error of a share is ~1 pp,
# well inside the +-5 pp the check allows.
RATE = 400


@pytest.mark.parametrize("interp_name", ["debian-3.11", "pyenv-3.11", "chroot-3.15", "chroot-3.15-dbg"])
def test_hot_function_shares_match_truth(interp_name, workloads, out):
    interp = require_interpreter(interp_name)
    w = workloads(interp, "two_hot.py", seconds=9, truth=f"/tmp/ebpfprof-truth-{os.getpid()}.json")
    time.sleep(0.5)
    path = out()
    run_ebpfprof("--pid", w.pid, "-d", 5, "-r", RATE, "-o", path, check=True)
    truth = w.truth()["cpu_seconds"]
    prof = Profile(path)
    a, b = prof.weight_with("crunch_a"), prof.weight_with("crunch_b")
    # >= 1.5 s at 400 Hz: 600 samples, a share's sampling error ~2 pp
    assert a + b >= 1.5e9, "too few samples in the two functions"
    measured = a / (a + b)
    expected = truth["crunch_a"] / (truth["crunch_a"] + truth["crunch_b"])
    assert abs(measured - expected) <= 0.05, f"crunch_a share {measured:.3f}, truth {expected:.3f}"
    # names, files and lines come from the target's code objects
    frame = next(f for f in prof.frames if f["name"] == "crunch_a")
    assert frame["file"].endswith("two_hot.py") and frame["line"] == 18  # return body(rounds)


@pytest.mark.parametrize("interp_name", ["debian-3.11", "chroot-3.15", "chroot-3.15-dbg"])
def test_named_threads_get_one_profile_each(interp_name, workloads, out):
    interp = require_interpreter(interp_name)
    w = workloads(interp, "named_threads.py", seconds=30)
    time.sleep(0.5)
    path = out()
    run_ebpfprof("--pid", w.pid, "-d", 3, "-o", path, check=True)
    prof = Profile(path)
    names = prof.threads()
    for expected in ("MainThread", "worker-alpha", "wörker-beta", "работник-γ"):
        assert sum(f'"{expected}"' in n for n in names) == 1, f"{expected} not in {names}"
    main = prof.profile('"MainThread"')
    assert main["name"] == f'Thread {w.pid} "MainThread"'
    assert prof.weight_with("spin_until_main", main) > 0
    # a function name of the 4-byte PyUnicode kind comes out as UTF-8
    assert prof.weight_with("größe_𠀀", main) > 0
    assert prof.weight_with("spin_until", prof.profile("worker-alpha")) > 0


def test_threads_share_one_time_axis(workloads, out):
    interp = require_interpreter("debian-3.11")
    w = workloads(interp, "named_threads.py", seconds=30)
    time.sleep(0.5)
    path = out()
    run_ebpfprof("--pid", w.pid, "-d", 2, "-o", path, check=True)
    prof = Profile(path)
    # the threads' profiles; "[GIL holders] ..." weighs waits, not a timeline
    threads = [p for p in prof.doc["profiles"] if not p["name"].startswith("[GIL holders] ")]
    ends = {p["endValue"] for p in threads}
    assert len(ends) == 1 and {p["startValue"] for p in threads} == {0}
    for p in prof.doc["profiles"]:
        assert sum(p["weights"]) == p["endValue"], p["name"]


def test_300_deep_recursion_has_full_stacks(workloads, out):
    interp = require_interpreter("pyenv-3.11")
    w = workloads(interp, "recurse.py", "--depth", "300", seconds=30)
    time.sleep(1)
    path = out()
    run_ebpfprof("--pid", w.pid, "-d", 1, "-o", path, check=True)
    prof = Profile(path)
    deepest = max((names for names, _ in prof.stacks()), key=len)
    assert deepest[:2] == ["<module>", "main"]
    assert deepest.count("dive") == 300 and deepest[-1] == "floor"
    assert "[truncated]" not in deepest


def test_1000_deep_recursion_is_truncated_with_a_marker(workloads, out):
    interp = require_interpreter("debian-3.11")
    w = workloads(interp, "recurse.py", "--depth", "1000", seconds=30)
    time.sleep(1)
    path = out()
    res = run_ebpfprof("--pid", w.pid, "-d", 1, "-o", path, check=True)
    prof = Profile(path)
    stacks = [names for names, _ in prof.stacks()]
    assert stacks and all(names[0] == "[truncated]" for names in stacks)
    assert all(names[-1] == "floor" for names in stacks)
    # the contract (README, Using it): the innermost 512 frames under [truncated]
    assert {len(names) for names in stacks} == {1 + 512}, {len(names) for names in stacks}
    assert all(names[1:] == ["dive"] * 511 + ["floor"] for names in stacks)
    # exactly none lost: "10 lost" must not pass
    assert re.search(r"\d samples, 0 lost, ", res.stderr), res.stderr


def test_launch_mode_profiles_the_command_until_it_exits(out):
    interp = require_interpreter("debian-3.11")
    path = out()
    res = run_ebpfprof("-o", path, "--", *interp.argv,
                       str(__import__("conftest").WORKLOADS / "two_hot.py"), "--seconds", "2", check=True)
    assert "target exited" in res.stderr and str(path) in res.stderr
    prof = Profile(path)
    assert prof.weight_with("crunch_a") > 0 and prof.weight_with("crunch_b") > 0
    assert 1.5e9 < prof.doc["profiles"][0]["endValue"] < 4e9


def test_target_exiting_mid_run_still_gives_a_profile(workloads, out):
    interp = require_interpreter("pyenv-3.11")
    w = workloads(interp, "two_hot.py", seconds=5)
    path = out()
    res = run_ebpfprof("--pid", w.pid, "-d", 30, "-o", path, check=True)
    assert "target exited" in res.stderr
    prof = Profile(path)
    assert prof.weight_with("crunch_a") > 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_writes_a_valid_profile(sig, workloads, out):
    interp = require_interpreter("debian-3.11")
    w = workloads(interp, "two_hot.py", seconds=20)
    path = out()
    proc = subprocess.Popen([str(EBPFPROF), "--pid", str(w.pid), "-o", str(path)],
                            stderr=subprocess.PIPE, text=True)
    time.sleep(2)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert ("interrupted" if sig == signal.SIGINT else "terminated") in err
    prof = Profile(path)
    assert prof.weight_with("crunch_a") > 0
    assert w.proc.poll() is None, "the target must keep running"


def test_default_output_name(workloads, tmp_path):
    interp = require_interpreter("debian-3.11")
    w = workloads(interp, "two_hot.py", seconds=30)
    res = subprocess.run([str(EBPFPROF), "--pid", str(w.pid), "-d", "1"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    files = list(tmp_path.glob(f"ebpfprof-{w.pid}-*.speedscope.json"))
    assert len(files) == 1 and files[0].name in res.stderr
    Profile(files[0])


@pytest.mark.parametrize("fmt,suffix", [("collapsed", ".txt"), ("chrome", ".json"), ("pprof", ".pb.gz")])
def test_other_formats(fmt, suffix, workloads, out):
    interp = require_interpreter("debian-3.11")
    w = workloads(interp, "two_hot.py", seconds=30)
    path = out(suffix)
    run_ebpfprof("--pid", w.pid, "-d", 1, "-f", fmt, "-o", path, check=True)
    data = path.read_bytes()
    if fmt == "collapsed":
        assert b"crunch_a (" in data and data.endswith(b"\n")
    elif fmt == "chrome":
        assert b'"traceEvents"' in data and "crunch_a" in data.decode()
    else:
        import gzip
        assert b"crunch_a" in gzip.decompress(data)
