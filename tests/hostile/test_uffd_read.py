"""Issue 28, item 5: every read of the target's memory has a deadline that a
page which never arrives cannot defeat. The target backs a page with a
userfaultfd it never serves and points the file name of its hot function's
code object there: main's symbolizer waited in handle_userfault for good (D
state, killable only), so -d, Ctrl-C and dump stopped working. Now the
reads are made by a reader process given up on (killed) after 1 s, the
pages of that read are not read again, and the frame is named without its
file."""
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import EBPFPROF, Profile, cannot_run, require_interpreter

HERE = Path(__file__).resolve().parent
MARKER = f"uffd-{os.getpid()}"     # in the target's command line, for --match


@pytest.fixture
def uffd_target():
    interp = require_interpreter("debian-3.11")
    target = subprocess.Popen(interp.argv + [str(HERE / "target_uffd.py"), MARKER, "--seconds", "120"],
                              stderr=subprocess.PIPE, text=True)
    line = target.stderr.readline()
    if not line.startswith("pid="):
        target.kill()
        target.wait()
        rest = target.stderr.read()
        if "userfaultfd: errno" in line + rest:
            cannot_run(f"userfaultfd(2) refused here: {line + rest}")
        raise AssertionError(line + rest)
    yield target
    target.kill()
    target.wait()


def run_bounded(args, within, interrupt_after=None):
    """ebpfprof with args; SIGINT after interrupt_after s if given; killed and
    failed if still running `within` s after it started."""
    started = time.monotonic()
    # a session of its own: its reader of target memory is killed with it
    proc = subprocess.Popen([str(EBPFPROF), *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        if interrupt_after is not None:
            time.sleep(interrupt_after)
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=within - (time.monotonic() - started))
    except subprocess.TimeoutExpired:
        state = Path(f"/proc/{proc.pid}/wchan").read_text() if os.path.exists(f"/proc/{proc.pid}") else "?"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        pytest.fail(f"ebpfprof {' '.join(map(str, args))} still running after {within} s (in {state})")
    return proc.returncode, out, err, time.monotonic() - started


def check_profile(path):
    prof = Profile(path)
    files = {f["name"]: f.get("file") for f in prof.frames}
    assert files.get("free", "").endswith("target_uffd.py"), files
    assert "stuck" in files and not files["stuck"], files
    assert prof.weight_with("free") > 0 and prof.weight_with("stuck") > 0


def test_a_recording_ends_at_its_duration(uffd_target, out):
    path = out()
    rc, _, err, took = run_bounded(["--pid", uffd_target.pid, "-d", 2, "-o", path], within=2 + 5)
    assert rc == 0, err
    check_profile(path)
    assert "reads of the target's memory given up after 1000 ms" in err, err


def test_ctrl_c_ends_a_recording(uffd_target, out):
    path = out()
    rc, _, err, took = run_bounded(["--pid", uffd_target.pid, "-d", 60, "-o", path], within=3 + 5,
                                   interrupt_after=3)
    assert rc == 0, err
    check_profile(path)


def test_dump_returns(uffd_target):
    rc, out, err, took = run_bounded(["dump", "--pid", uffd_target.pid], within=5)
    assert rc == 0, err
    assert "stuck (<unknown>:" in out and "free (" in out, out


def test_match_records_and_ends(uffd_target, tmp_path):
    """--match examines the target, then records it in its session: both read
    its memory; the sidecar's recording ends at -d with its profile."""
    outdir = tmp_path / "out"
    rc, _, err, took = run_bounded(["--match", re.escape(MARKER), "-d", 3, "-o", outdir], within=3 + 5)
    assert f"profiling process {uffd_target.pid}" in err, err
    check_profile(outdir / f"ebpfprof-{uffd_target.pid}.speedscope.json")
