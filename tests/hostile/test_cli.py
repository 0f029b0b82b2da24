"""Issue 9, item 10: numbers are parsed strictly, a thread id is not taken
for a process, and a second interrupt ends ebpfprof at once."""
import os
import signal
import subprocess
import time

import pytest

from conftest import EBPFPROF, require_interpreter, run_ebpfprof


@pytest.mark.nobpf
@pytest.mark.parametrize("args,needle", [
    (["-d", "inf"], "invalid duration"),
    (["-d", "1e300"], "invalid duration"),
    (["-d", "nan"], "invalid duration"),
    (["-d", "0x10"], "invalid duration"),
    (["-d", "-1"], "invalid duration"),
    (["-W", "inf"], "invalid wait threshold"),
    (["-W", "nan"], "invalid wait threshold"),
    (["-W", "1e30"], "invalid wait threshold"),
    (["-W", "-0.5"], "invalid wait threshold"),
    (["-o", ""], "invalid output"),
    (["--gc-log", ""], "invalid --gc-log"),
])
def test_numbers_and_names_are_strict(args, needle):
    """Main took -d inf and -W nan and converted them to integers (undefined
    behaviour)."""
    res = subprocess.run([str(EBPFPROF), "--pid", "1", *args], capture_output=True, text=True, timeout=10)
    assert res.returncode == 2, res
    assert needle in res.stderr


THREADED = ("import os, sys, threading, time\n"
            "def spin():\n    t = time.time()\n    while time.time() - t < 30: sum(range(100))\n"
            "th = threading.Thread(target=spin); th.start()\n"
            "print(f'pid={os.getpid()} tid={th.native_id}', file=sys.stderr, flush=True)\nth.join()\n")


def test_pid_of_a_thread_is_refused(out):
    """Main recorded '0 samples' for a thread id and said nothing."""
    interp = require_interpreter("debian-3.11")
    proc = subprocess.Popen(interp.argv + ["-c", THREADED], stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline().split()
        pid, tid = int(line[0].split("=")[1]), int(line[1].split("=")[1])
        path = out()
        res = run_ebpfprof("--pid", tid, "-d", 1, "-o", path, timeout=30)
        assert res.returncode == 1, res.stderr
        assert f"{tid} is a thread of process {pid}, not a process: give --pid {pid}" in res.stderr
        assert not path.exists()
    finally:
        proc.kill()
        proc.wait()


def test_second_interrupt_stops_at_once(tmp_path):
    """An interrupt during the drain or the write (here a SIGTERM right after
    the SIGINT) ends ebpfprof there: exit 130, no profile, no temporary file,
    the launched command ended. Main went on and wrote the profile."""
    interp = require_interpreter("debian-3.11")
    pidfile, path = tmp_path / "pid", tmp_path / "p.json"
    script = (f"import os, time\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
              "t = time.time()\nwhile time.time() - t < 60: sum(range(100))\n")
    prof = subprocess.Popen([str(EBPFPROF), "-o", str(path), "--", *interp.argv, "-c", script],
                            stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(200):
            if pidfile.exists() and pidfile.read_text():
                break
            time.sleep(0.05)
        time.sleep(1)
        prof.send_signal(signal.SIGINT)
        prof.send_signal(signal.SIGTERM)
        err = prof.communicate(timeout=30)[1]
        assert prof.returncode == 130, err
        assert "interrupted again" in err
        assert os.listdir(tmp_path) == ["pid"], os.listdir(tmp_path)
        child = int(pidfile.read_text())
        time.sleep(0.2)
        assert not os.path.exists(f"/proc/{child}") or \
            open(f"/proc/{child}/stat").read().split(")")[1].split()[0] in "ZX"
    finally:
        if prof.poll() is None:
            prof.kill()
            prof.wait()
