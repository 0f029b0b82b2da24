"""Issue 19: with several targets (--pid A,B, --match) each process must be
recorded "with the same options". When each had a child ebpfprof, the
children got a list copied by hand that left out -t, -M, --full-filenames
and --nolineno: parsed, then silently ignored. Since issue 33 every process
is a member of the one recording session, recorded with the options
themselves: these tests run every output-shaping option through both modes,
check that no child recording is started, and look at what was written."""
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from conftest import EBPFPROF, need_bpf, require_interpreter
from test_match_bounds import children_of

# every option that shapes what is recorded or written for each process
SHAPING = ["-f", "collapsed", "-t", "--full-filenames", "--nolineno", "-M", "5",
           "-r", "97", "-W", "20", "--idle", "-F", "-s", "--label", "x=no_such:0", "--dask"]


def cmdline(pid):
    return (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")[:-1]


def record_and_watch(args, want_children):
    """Runs ebpfprof with args; returns (exit status, stderr, the argv lists of
    any children it started, watched for 20 s or until want_children)."""
    rec = subprocess.Popen([str(EBPFPROF), *args], stderr=subprocess.PIPE, text=True)
    seen = {}
    try:
        deadline = time.monotonic() + 20
        while rec.poll() is None and time.monotonic() < deadline and len(seen) < want_children:
            for kid in children_of(rec.pid):
                try:
                    seen.setdefault(kid, [a.decode() for a in cmdline(kid)])
                except OSError:
                    pass
            time.sleep(0.05)
        _, err = rec.communicate(timeout=90)
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()
    return rec.returncode, err, list(seen.values())


def check_collapsed(path, pid):
    lines = path.read_text().splitlines()
    assert lines, f"{path} is empty"
    for line in lines:
        stack, _, count = line.rpartition(" ")
        assert int(count) > 0
        # -t: every stack under its thread
        assert re.match(r'Thread \d+ "[^"]*";', stack), line
        for frame in stack.split(";")[1:]:
            # --nolineno: "f (file.py)", no line anywhere
            assert re.fullmatch(r".+ \([^():]+\)|\[[a-zA-Z0-9 ]+\]", frame), frame
    # --full-filenames: the standard library with its whole path
    assert any("/lib/python3.11/json/encoder.py)" in line for line in lines), lines[:3]


@pytest.mark.parametrize("mode", ["pid-list", "match"])
def test_every_shaping_option_reaches_every_process(mode, workloads, tmp_path):
    need_bpf()
    interp = require_interpreter("debian-3.11")
    marker = f"fwd-{os.getpid()}-{mode}"
    # the marker goes into their command lines, for --match
    a = workloads(interp, "stdlib_hot.py", seconds=30, truth=str(tmp_path / f"{marker}-a"))
    b = workloads(interp, "stdlib_hot.py", seconds=30, truth=str(tmp_path / f"{marker}-b"))
    out = tmp_path / "out"
    select = ["--pid", f"{a.pid},{b.pid}"] if mode == "pid-list" else ["--match", re.escape(marker)]
    rc, err, kids = record_and_watch([*select, *SHAPING, "-d", "4", "-o", str(out)], 2)
    assert rc == 0, err
    assert kids == [], f"child recordings started: {kids}\n{err}"
    assert "2 processes recorded" in err, err
    for w in (a, b):
        check_collapsed(out / f"ebpfprof-{w.pid}.collapsed.txt", w.pid)
