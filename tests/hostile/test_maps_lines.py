"""Issue 28, item 3: /proc/PID/maps is read a whole line at a time. A target
maps a file whose path is so long that main's fgets cut its maps line, and
whose path from the cut on reads as a line of its own: a mapping at offset 0
of a file named like libpython that the target never mapped, with that
file's device and inode. Main took the tail for a mapping and opened the
named file as root (O_PATH, then for reading); now the over-long line is
skipped whole and nothing but what the target maps is opened."""
import subprocess
from pathlib import Path

from conftest import EBPFPROF, Profile, cannot_run, require_interpreter

HERE = Path(__file__).resolve().parent


def test_a_maps_line_longer_than_the_buffer_is_skipped_whole(tmp_path, out):
    interp = require_interpreter("debian-3.11")
    build = tmp_path / "long"
    build.mkdir()
    # the file the forged line names: never mapped, only stat'ed by the target
    secret = tmp_path / "secret" / "libpython3.99.so"
    secret.parent.mkdir()
    secret.write_bytes(b"not the target's\n")
    target = subprocess.Popen(interp.argv + [str(HERE / "target_long_maps_line.py"), str(build),
                                             str(secret), "--seconds", "30"],
                              stderr=subprocess.PIPE, text=True)
    try:
        line = target.stderr.readline()
        assert line.startswith("pid="), line + target.stderr.read()
        path, trace = out(), tmp_path / "strace.log"
        try:
            res = subprocess.run(["strace", "-f", "-qq", "-e", "trace=%file", "-o", str(trace),
                                  str(EBPFPROF), "--pid", str(target.pid), "-d", "1", "-o", str(path)],
                                 capture_output=True, text=True, timeout=60)
        except FileNotFoundError:
            cannot_run("strace is not installed")
        assert res.returncode == 0, res.stderr
        assert Profile(path).weight_with("crunch") > 0
        opened = trace.read_text()
        assert "/proc/self/fd/" in opened, "strace saw the profiler's opens"
        assert str(secret) not in opened, [l for l in opened.splitlines() if str(secret) in l]
    finally:
        target.kill()
        target.wait()
