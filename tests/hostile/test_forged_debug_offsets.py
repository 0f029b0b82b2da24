"""Issue 9, item 2: a process whose _Py_DebugOffsets (3.13+) lie. The fake
(fake_debug_offsets.c) is a C program that says it is CPython 3.13 and holds
the interpreter, thread, frame, dict and str it describes, so every forged
offset is really followed. Main read 64 KiB past a stack buffer (SIGSEGV) for
"frame" and "unicode"; now each is refused with one line."""
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, cannot_run, run_ebpfprof

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def fake_python(tmp_path_factory):
    exe = tmp_path_factory.mktemp("fake") / "fakepy"
    res = subprocess.run(["cc", "-O0", "-g", "-o", str(exe), str(HERE / "fake_debug_offsets.c")],
                         capture_output=True, text=True)
    if res.returncode:
        cannot_run(f"cannot build the fake target: {res.stderr}")
    return exe


def start_fake(exe, mode):
    proc = subprocess.Popen([str(exe), mode], stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    assert line.startswith("pid="), line
    return proc


def test_fake_with_true_offsets_is_profiled(fake_python, out):
    """The control: with offsets that match its objects the fake is read
    as a CPython 3.13 (so the forged cases below really reach the reads)."""
    proc = start_fake(fake_python, "valid")
    try:
        path = out()
        res = run_ebpfprof("--pid", proc.pid, "-d", 1, "-o", path, timeout=30)
        assert res.returncode == 0, res.stderr
        assert "CPython 3.13" in res.stderr
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("mode", ["frame", "unicode", "huge"])
def test_forged_offsets_are_refused_in_one_line(fake_python, out, mode):
    proc = start_fake(fake_python, mode)
    try:
        path = out()
        res = run_ebpfprof("--pid", proc.pid, "-d", 2, "-o", path, timeout=30)
        assert res.returncode == 1, f"{res.returncode}: {res.stderr}"
        lines = [l for l in res.stderr.splitlines() if l.strip()]
        assert len(lines) == 1, res.stderr
        assert "_Py_DebugOffsets" in lines[0] and "no CPython has" in lines[0], lines[0]
        assert not path.exists()
    finally:
        proc.kill()
        proc.wait()
