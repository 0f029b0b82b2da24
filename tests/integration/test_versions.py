"""Issue 4: every CPython from 3.8 to 3.15 (issue 20) that this machine has, static or
shared, stripped or not, release or debug, on the host or in a chroot (its
own root, as in a container): correct function names, files and lines."""
import subprocess
import time
from pathlib import Path

import pytest

from conftest import EBPFPROF, Profile, read_gc_log, require_interpreter, run_ebpfprof, wait_for_go
from test_states import thread_totals

INTERPRETERS = [
    "pyenv-3.8", "pyenv-3.9", "pyenv-3.10", "pyenv-3.11", "pyenv-3.12", "pyenv-3.13",
    "debian-3.11", "debian-3.11-dbg",
    "chroot-3.9", "chroot-3.9-dbg", "chroot-3.13", "chroot-3.13-dbg", "chroot-3.14", "chroot-3.14-dbg",
    "chroot-3.15", "chroot-3.15-dbg",
]


@pytest.mark.parametrize("interp_name", INTERPRETERS)
def test_names_files_and_lines(interp_name, workloads, out):
    interp = require_interpreter(interp_name)
    w = workloads(interp, "two_hot.py", seconds=30)  # killed when done
    time.sleep(0.8)
    path = out()
    res = run_ebpfprof("--pid", w.pid, "-d", 1.5, "-r", 200, "-o", path, check=True)
    assert "CPython %d.%d" % interp.version in res.stderr
    prof = Profile(path)
    expected = [("<module>", 38), ("main", 32), ("crunch_a", 18)]
    hits = [s for s, _ in prof.stacks() if s[:3] == [n for n, _ in expected]]
    assert hits, f"no <module> > main > crunch_a stack in {list(prof.stacks())[:3]}"
    by_name = {}
    for f in prof.frames:
        by_name.setdefault(f["name"], set()).add((f.get("file", "").rsplit("/", 1)[-1], f.get("line")))
    for name, line in expected:
        assert ("two_hot.py", line) in by_name[name], (name, by_name[name])
    # 10 is the def line: CPython itself reports it for a frame sampled before
    # its first instruction ran (3.8-3.10: f_lasti == -1)
    assert by_name["body"] <= {("two_hot.py", n) for n in (10, 11, 12, 13, 14)}
    if interp.chroot:
        # names as the process itself sees them, not the host's path to them
        assert any(f.get("file", "").startswith("/ebpfprof-workloads/") for f in prof.frames)


CURRENT = ["chroot-3.15", "chroot-3.15-dbg"]


@pytest.mark.parametrize("interp_name", CURRENT)
def test_gc_pauses_match_gc_callbacks(interp_name, workloads, out, tmp_path):
    """3.15's collections, timed by its USDT probes, against the ones the
    workload saw through gc.callbacks (test_states does the same on 3.11)."""
    interp = require_interpreter(interp_name)
    go_inside = f"/tmp/go-{interp_name}"
    go = Path(interp.chroot) / go_inside.lstrip("/")
    go.unlink(missing_ok=True)
    w = workloads(interp, "gc_churn.py", "--go", go_inside, seconds=4, truth="truth.json")
    log, path = tmp_path / "gc.jsonl", out()
    proc = subprocess.Popen([str(EBPFPROF), "--pid", str(w.pid), "-d", "30", "--gc-log", str(log),
                             "-o", str(path)], stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    wait_for_go(go)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "GC timed by USDT probes" in err
    truth = w.truth()
    head, gcs, _ = read_gc_log(log)
    t0 = head["monotonic_start_s"]
    inside = [g for g in gcs if truth["begin"] - 1e-3 <= t0 + g["start_s"] <= truth["end"] + 1e-3]
    true_n, true_s = len(truth["collections"]), sum(c[2] for c in truth["collections"])
    assert true_n > 50
    assert abs(len(inside) - true_n) <= 0.02 * true_n, (len(inside), true_n)
    measured = sum(g["duration_s"] for g in inside)
    assert abs(measured - true_s) <= 0.10 * true_s, f"GC {measured:.3f}s vs truth {true_s:.3f}s"
    assert [g["generation"] for g in inside] == [c[0] for c in truth["collections"]][:len(inside)]
    gc_stacks = [names for names, _ in Profile(path).stacks() if names[-1].startswith("[GC gen ")]
    assert gc_stacks and all("churn" in names for names in gc_stacks if len(names) > 1)


@pytest.mark.parametrize("interp_name", CURRENT)
def test_thread_states_and_names(interp_name, workloads, out):
    """GIL, lock and I/O waits and thread names on 3.15 (as test_states on 3.11)."""
    interp = require_interpreter(interp_name)
    w = workloads(interp, "thread_mix.py", seconds=8)
    time.sleep(1)
    path = out()
    run_ebpfprof("--pid", w.pid, "-d", 4, "--idle", "-o", path, check=True)
    prof = Profile(path)
    for spinner in ("spinner-1", "spinner-2"):
        s = thread_totals(prof, spinner)
        assert 0.20 <= s["[GIL wait]"] <= 0.70, (spinner, s)
    locker = thread_totals(prof, "locker")
    assert locker["[lock wait]"] >= 0.9 and locker["[GIL wait]"] == 0, locker
    assert thread_totals(prof, "reader")["[I/O wait]"] >= 0.9


def test_gil_build_under_a_free_threaded_name_is_profiled(workloads, out):
    """The build is judged by the binary: Debian's GIL 3.15 copied to
    python3.13t (a free-threaded-looking name) is profiled as 3.15."""
    interp = require_interpreter("chroot-3.15")
    renamed = Path(interp.chroot) / "tmp" / "python3.13t"
    renamed.write_bytes((Path(interp.chroot) / "usr" / "bin" / "python3.15").read_bytes())
    renamed.chmod(0o755)
    try:
        w = workloads(type(interp)("renamed", ["chroot", interp.chroot, "/tmp/python3.13t"],
                                   (3, 15), chroot=interp.chroot), "two_hot.py", seconds=30)
        time.sleep(0.8)
        path = out()
        res = run_ebpfprof("--pid", w.pid, "-d", 1, "-r", 200, "-o", path)
        assert res.returncode == 0, res.stderr
        assert "CPython 3.15" in res.stderr and "free-threaded" not in res.stderr
        assert any(s[:3] == ["<module>", "main", "crunch_a"] for s, _ in Profile(path).stacks())
    finally:
        renamed.unlink(missing_ok=True)
