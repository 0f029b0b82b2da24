"""A target whose frame chain leads back to itself through frames a walk
keeps none of (no code) holds neither the recorder nor dump: a userspace
walk visits at most EP_MAX_FRAMES + 1 frames (a705210). Before, the walk of
a thread blocked when the recording starts went round the loop until the
target exited, and nothing else was read meanwhile."""
import subprocess
from pathlib import Path

from conftest import Profile, cannot_run, run_ebpfprof, start_ready

HERE = Path(__file__).resolve().parent
DEBIAN_PYTHON = Path("/usr/bin/python3.11")
SECONDS = 3
LATE = 20       # a recording this late went round the loop


def run_bounded(*args):
    """run_ebpfprof, the test failed if it is still running LATE seconds
    past its due end."""
    try:
        return run_ebpfprof(*args, timeout=SECONDS + LATE)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"ebpfprof {args[0]} still running {SECONDS + LATE} s later: "
                             "the walk went round the loop") from None


def test_a_frame_chain_that_loops_ends_the_walk(out):
    if not DEBIAN_PYTHON.exists():
        cannot_run("Debian's python3.11 is not installed")
    target = start_ready([DEBIAN_PYTHON, HERE / "target_frame_loop.py"])
    path = out()
    try:
        rec = run_bounded("--pid", target.pid, "-d", SECONDS, "--idle", "-o", path)
        dump = run_bounded("dump", "--pid", target.pid)
    finally:
        target.kill()
        target.wait()
    assert rec.returncode == 0, rec.stderr
    assert "held up" not in rec.stderr, rec.stderr
    prof = Profile(path)
    main = prof.profile("MainThread")
    # the reader kept up: the spinning thread's samples are all there
    assert 0.8 * SECONDS <= prof.seconds(main, "spin") <= 1.05 * SECONDS, list(prof.stacks(main))[:3]
    # the sleeping thread's wait is kept under its own frame, the loop cut
    looper = prof.profile("looper")
    assert 0.8 * SECONDS <= prof.seconds(looper, "looper") <= 1.05 * SECONDS, list(prof.stacks(looper))[:5]
    assert dump.returncode == 0, dump.stderr
    assert "looper (" in dump.stdout and "spin (" in dump.stdout, dump.stdout
