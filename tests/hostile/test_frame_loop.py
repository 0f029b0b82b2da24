"""A target whose frame chain leads back to itself through frames a walk
keeps none of (no code) holds neither the recorder nor dump: a userspace
walk visits at most EP_MAX_FRAMES + 1 frames (a705210). Before, the walk of
a thread blocked when the recording starts went round the loop until the
target exited, and nothing else was read meanwhile."""
import subprocess
import time
from pathlib import Path

from conftest import EBPFPROF, Profile, cannot_run, start_ready

HERE = Path(__file__).resolve().parent
DEBIAN_PYTHON = Path("/usr/bin/python3.11")
SECONDS = 3
LATE = 20       # a recording this late went round the loop


def run_bounded(argv):
    """(returncode, stdout, stderr, seconds taken); the process killed and
    the test failed if it is still running LATE seconds past its due end."""
    t0 = time.monotonic()
    proc = subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = proc.communicate(timeout=SECONDS + LATE)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"ebpfprof {argv[1]} still running {SECONDS + LATE} s later: the walk went round the loop")
    return proc.returncode, stdout, stderr, time.monotonic() - t0


def test_a_frame_chain_that_loops_ends_the_walk(out):
    if not DEBIAN_PYTHON.exists():
        cannot_run("Debian's python3.11 is not installed")
    target = start_ready([DEBIAN_PYTHON, HERE / "target_frame_loop.py"])
    path = out()
    try:
        rc, _, err, _ = run_bounded([EBPFPROF, "--pid", target.pid, "-d", SECONDS, "--idle", "-o", path])
        dump_rc, dump, dump_err, dump_took = run_bounded([EBPFPROF, "dump", "--pid", target.pid])
    finally:
        target.kill()
        target.wait()
    assert rc == 0, err
    assert "held up" not in err, err
    prof = Profile(path)
    main = prof.profile("MainThread")
    # the reader kept up: the spinning thread's samples are all there
    assert prof.weight_with("spin", main) >= 0.8 * SECONDS, list(prof.stacks(main))[:3]
    # the sleeping thread's wait is kept under its own frame, the loop cut
    looper = prof.profile("looper")
    assert prof.weight_with("looper", looper) >= 0.8 * SECONDS, list(prof.stacks(looper))[:5]
    assert dump_rc == 0 and dump_took < 10, dump_err
    assert "looper (" in dump and "spin (" in dump, dump
