"""Issue 4: every CPython from 3.8 to 3.15 (issue 20) that this machine has, static or
shared, stripped or not, release or debug, on the host or in a chroot (its
own root, as in a container): correct function names, files and lines."""
import time
from pathlib import Path

import pytest

from conftest import Profile, require_interpreter, run_ebpfprof

INTERPRETERS = [
    "pyenv-3.8", "pyenv-3.9", "pyenv-3.10", "pyenv-3.11", "pyenv-3.12", "pyenv-3.13",
    "debian-3.11", "debian-3.11-dbg",
    "chroot-3.9", "chroot-3.9-dbg", "chroot-3.13", "chroot-3.13-dbg", "chroot-3.14", "chroot-3.14-dbg",
    "chroot-3.15", "chroot-3.15-dbg",
]


@pytest.mark.parametrize("interp_name", INTERPRETERS)
def test_names_files_and_lines(interp_name, workloads, out):
    interp = require_interpreter(interp_name)
    w = workloads(interp, "two_hot.py", seconds=4, truth=str(out(".truth.json")))
    time.sleep(0.8)
    path = out()
    res = run_ebpfprof("--pid", w.pid, "-d", 1.5, "-r", 200, "-o", path, check=True)
    assert "CPython %d.%d" % interp.version in res.stderr
    prof = Profile(path)
    # the names carry the time: crunch_a's share of the two against the
    # workload's own thread_time() (steady: its whole run stands for the
    # recording's), within 4 binomial errors of the samples behind it
    truth = w.truth()["cpu_seconds"]
    a, b = prof.seconds(None, "crunch_a"), prof.seconds(None, "crunch_b")
    want, n = truth["crunch_a"] / (truth["crunch_a"] + truth["crunch_b"]), (a + b) * 200
    assert n >= 100 and abs(a / (a + b) - want) <= 4 * (want * (1 - want) / n) ** 0.5 + 0.01, (a, b, want)
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
