"""Issue 18 item 5: terminal controls from the target (a thread and a function
named with ESC [2J, OSC 0 ... BEL, C1 CSI U+009B and a bidi override) never
reach the terminal raw from dump, top (plain text) or diff's text report, nor
from dump's and top's errors; every text output goes through one escaper.
Main let C1 and the bidi override through dump and top (frame_printable only
knew C0 and DEL), printed dump's interpreter path, diff's names and dump's and
top's errors raw."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import EBPFPROF, require_interpreter

HERE = Path(__file__).resolve().parent
CONTROLS = "\x1b[2J" + "\x1b]0;owned\x07" + "\x9b2J" + "\u202e"
# what printable() makes of CONTROLS: one \xHH per byte of each control
ESCAPED = "\\x1b[2J" + "\\x1b]0;owned\\x07" + "\\xc2\\x9b2J" + "\\xe2\\x80\\xae"
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def run(*args, timeout=90):
    """ebpfprof with stdout and stderr as bytes: invalid UTF-8 must show."""
    return subprocess.run([str(EBPFPROF), *map(str, args)], capture_output=True, timeout=timeout)


def shown(data):
    """The text, after checking that no control character, C1, bidi control
    or invalid UTF-8 is in it raw."""
    text = data.decode("utf-8")     # raises on invalid UTF-8
    bad = [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) < 0xa0 or c in BIDI]
    assert not bad, f"raw controls: {bad!r} in {text!r}"
    return text


def start(argv, seconds, *extra):
    proc = subprocess.Popen(argv + [str(HERE / "target_escapes.py"), "--seconds", str(seconds), *extra],
                            stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    assert line.startswith("pid="), line
    return proc


def stop(proc):
    proc.kill()
    proc.wait()


@pytest.fixture
def python311():
    return require_interpreter("debian-3.11").argv


@pytest.fixture
def evil_interpreter(tmp_path, python311):
    """The interpreter copied into a directory whose name holds controls."""
    d = tmp_path / ("py" + CONTROLS)
    d.mkdir()
    shutil.copy(python311[0], d / "python3.11")
    return [str(d / "python3.11")] + python311[1:]


def test_dump_text_escapes_names_file_and_interpreter_path(evil_interpreter):
    target = start(evil_interpreter, 30)
    try:
        for _ in range(50):     # until the thread is running its function
            res = run("dump", "--pid", target.pid, timeout=60)
            assert res.returncode == 0, res.stderr
            out = shown(res.stdout)
            if "fn" + ESCAPED + "end" in out:
                break
        assert f'"thr{ESCAPED}end"' in out, out
        assert f"fn{ESCAPED}end (/srv/app{ESCAPED}.py:" in out, out
        assert f"/py{ESCAPED}/python3.11)" in out, out
        shown(res.stderr)
    finally:
        stop(target)


def test_top_plain_text_escapes_names(python311):
    target = start(python311, 30)
    try:
        res = run("top", "--pid", target.pid, "-d", 2.5, "--interval", 1, timeout=60)
        assert res.returncode == 0, res.stderr
        out = shown(res.stdout)
        shown(res.stderr)
        # the thread column holds 18 bytes of the name, escaped after the cut
        assert "thr\\x1b[2J\\x1b]0;owned\\x07" in out, out
        assert f"fn{ESCAPED}end (/srv/app{ESCAPED}.py:" in out, out
    finally:
        stop(target)


@pytest.mark.parametrize("command", ["dump", "top"])
def test_errors_escape_the_comm(tmp_path, command):
    """A process that is not Python, whose comm clears the screen."""
    evil = tmp_path / "\x1b[2Jsleep"
    shutil.copy("/bin/sleep", evil)
    proc = subprocess.Popen([str(evil), "30"])
    try:
        res = run(command, "--pid", proc.pid, timeout=30)
        assert res.returncode == 1
        err = shown(res.stderr)
        assert err.startswith(f"ebpfprof {command}: "), err
        assert "\\x1b[2Jsleep" in err, err
        assert len(err.strip().splitlines()) == 1, err
    finally:
        proc.kill()
        proc.wait()


def test_diff_text_escapes_names_from_the_recordings(tmp_path, python311):
    """The names are JSON-escaped in the recordings and come back raw from
    them: BASE runs the named thread and function, NEW the same work under
    plain names, so both vanish and are listed."""
    evil = start(python311, 20)
    plain = start(python311, 20, "--plain")
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    try:
        recs = [subprocess.Popen([str(EBPFPROF), "--pid", str(p.pid), "-d", "3", "-o", str(o)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                for p, o in ((evil, base), (plain, new))]
        for r in recs:
            _, err = r.communicate(timeout=90)
            assert r.returncode == 0, err
    finally:
        stop(evil)
        stop(plain)
    res = run("diff", base, new)
    assert res.returncode == 0, res.stderr
    out = shown(res.stdout)
    shown(res.stderr)
    assert f"/ thr{ESCAPED}end: on-CPU" in out, out
    assert f"fn{ESCAPED}end (/srv/app{ESCAPED}.py)" in out, out
    assert os.path.basename(base) in out
