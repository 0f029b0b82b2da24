"""Issue 9, item 4: whatever the target does, the profiler's memory stays
bounded (the symbolizer's cache has a byte budget)."""
import subprocess
import threading
import time

from conftest import EBPFPROF, require_interpreter

from pathlib import Path

HERE = Path(__file__).resolve().parent


def peak_rss_kib(proc):
    """Peak resident set (VmHWM) of proc, sampled until it exits."""
    peak = 0
    while proc.poll() is None:
        try:
            for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.05)
    return peak


def test_code_objects_with_1mib_line_tables_do_not_grow_the_profiler(out):
    """Main grew to 933 MB in 3 s: one 1 MiB table cached per sampled code
    object. Now the cache keeps 32 MiB at most (ebpfprof peaked near 100 MB here,
    main 200 MB to 1 GB within 6 s at this rate, depending on the load)."""
    interp = require_interpreter("debian-3.11")
    target = subprocess.Popen(interp.argv + [str(HERE / "target_code_churn.py"), "--seconds", "30"],
                              stderr=subprocess.PIPE, text=True)
    try:
        line = target.stderr.readline()
        assert line.startswith("pid="), line
        path = out()
        prof = subprocess.Popen([str(EBPFPROF), "--pid", str(target.pid), "-d", "6", "-r", "3000",
                                 "-o", str(path)], stderr=subprocess.PIPE, text=True)
        peak = peak_rss_kib(prof)
        err = prof.stderr.read()
        assert prof.returncode == 0, err
        assert peak < 160 * 1024, f"peak RSS {peak} KiB: {err}"
        assert path.exists()
        print(f"peak RSS {peak} KiB")
    finally:
        target.kill()
        target.wait()
