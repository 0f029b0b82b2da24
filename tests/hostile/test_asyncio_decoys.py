"""Issue 44, item 1: a 3.14 target chooses which files named _asyncio.*.so
root parses, and how often (each may carry a 64 MiB section-name table).
Each file is parsed once per process (by device and inode), a few at
most, within the walk's deadline, and the answer is kept: a recording and
dump --tasks end on time and Ctrl-C stays prompt."""
import signal
import subprocess
import time
from pathlib import Path

from conftest import EBPFPROF, require_interpreter, start_ready

HERE = Path(__file__).resolve().parent


def start(copies):
    interp = require_interpreter("chroot-3.14")
    script = HERE / "target_asyncio_decoys.py"
    inside = Path(interp.chroot) / "tmp" / script.name
    inside.write_text(script.read_text())
    return start_ready(interp.argv + [f"/tmp/{script.name}", str(copies)])


def test_decoy_modules_cost_a_recording_nothing(out):
    """30 mappings of one decoy: `--pid P -d 3` ends within 5 s (9ca0104:
    117 s, the first SIGINT ignored for a minute), dump --tasks within 2 s."""
    target = start(30)
    try:
        t0 = time.monotonic()
        res = subprocess.run([str(EBPFPROF), "--pid", str(target.pid), "-d", "3", "-o", str(out())],
                             capture_output=True, text=True, timeout=200)
        took = time.monotonic() - t0
        assert res.returncode == 0, res.stderr
        assert took < 5, f"--pid P -d 3 took {took:.1f} s with 30 decoy _asyncio mappings"
        t0 = time.monotonic()
        res = subprocess.run([str(EBPFPROF), "dump", "--tasks", "--pid", str(target.pid)],
                             capture_output=True, text=True, timeout=200)
        took = time.monotonic() - t0
        assert res.returncode == 0, res.stderr
        assert took < 2, f"dump --tasks took {took:.1f} s with 30 decoy _asyncio mappings"
    finally:
        target.kill()
        target.wait()


def test_ctrl_c_ends_a_recording_among_decoys(out):
    """SIGINT one second in: the recording is written and ebpfprof gone
    within 3 s."""
    target = start(30)
    try:
        rec = subprocess.Popen([str(EBPFPROF), "--pid", str(target.pid), "-o", str(out())],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        t0 = time.monotonic()
        rec.send_signal(signal.SIGINT)
        try:
            _, err = rec.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            rec.kill()
            raise AssertionError("ebpfprof still running 60 s after SIGINT")
        took = time.monotonic() - t0
        assert rec.returncode == 0, err
        assert took < 3, f"SIGINT took {took:.1f} s to end the recording"
    finally:
        target.kill()
        target.wait()
