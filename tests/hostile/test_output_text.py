"""Issue 9, items 3 and 9: names from the target reach files escaped as JSON
and the terminal escaped as text; never a raw control character on stderr."""
import shutil
import subprocess
from pathlib import Path

from conftest import Profile, require_interpreter, run_ebpfprof

HERE = Path(__file__).resolve().parent


def start(interp, script, seconds):
    proc = subprocess.Popen(interp.argv + [str(HERE / script), "--seconds", str(seconds)],
                            stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    assert line.startswith("pid="), line
    return proc


def no_raw_controls(text):
    bad = [c for c in text if (ord(c) < 0x20 and c not in "\n") or 0x7f <= ord(c) < 0xa0]
    assert not bad, f"raw control characters on stderr: {bad!r} in {text!r}"


def test_thread_names_and_comm_with_escapes(out):
    """Main printed the thread name's ESC ] 0 ; ... BEL (retitles the
    terminal) and ESC [ 2 J (clears it) raw in the summary table."""
    interp = require_interpreter("debian-3.11")
    target = start(interp, "target_names.py", 20)
    try:
        path = out()
        res = run_ebpfprof("--pid", target.pid, "-d", 2, "-o", path, timeout=60)
        assert res.returncode == 0, res.stderr
        no_raw_controls(res.stderr)
        assert "\\x1b" in res.stderr, res.stderr
        prof = Profile(path)
        # item 3: the name whose escape ends at the 512-byte buffer's end is whole
        assert prof.weight_with("a" * 505 + "\x01") > 0
        assert any("\x1b]0;owned" in name for name in prof.threads()), prof.threads()
    finally:
        target.kill()
        target.wait()


def test_comm_with_escapes_in_an_error(tmp_path, out):
    """A process that is not Python, whose comm clears the screen: the one-line
    error names it escaped."""
    evil = tmp_path / "\x1b[2Jsleep"
    shutil.copy("/bin/sleep", evil)
    proc = subprocess.Popen([str(evil), "30"])
    try:
        res = run_ebpfprof("--pid", proc.pid, "-o", out(), timeout=30)
        assert res.returncode == 1
        no_raw_controls(res.stderr)
        assert "is not a CPython process" in res.stderr and "\\x1b[2Jsleep" in res.stderr, res.stderr
    finally:
        proc.kill()
        proc.wait()
