"""Issue 9, items 1 and 11: the target's files are opened once, by
descriptor, checked before use; names it controls never reach a host file."""
import os
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import PYENV, Interpreter, Profile, cannot_run, run_ebpfprof


def _pyenv311():
    hits = sorted(PYENV.glob("3.11.*/bin/python3.11"))
    if not hits:
        cannot_run("pyenv 3.11 (shared libpython) not installed")
    lib = hits[-1].parents[1] / "lib" / "libpython3.11.so.1.0"
    if not lib.exists():
        cannot_run(f"{lib} missing")
    return hits[-1], lib


@pytest.fixture
def tmpfs_pair(tmp_path):
    """Two fresh tmpfs mounts: inode numbers restart in each, so a file in
    one and a FIFO in the other can have the same inode number."""
    dirs = [tmp_path / "a", tmp_path / "b"]
    mounted = []
    try:
        for d in dirs:
            d.mkdir()
            if subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(d)]).returncode:
                cannot_run("cannot mount a tmpfs")
            mounted.append(d)
        yield dirs
    finally:
        for d in reversed(mounted):
            subprocess.run(["umount", "-l", str(d)])


def _fifo_with_inode(directory, ino):
    """A FIFO in directory whose inode number is ino (tmpfs counts up)."""
    for i in range(10000):
        p = directory / f"fifo{i}"
        os.mkfifo(p)
        got = p.stat().st_ino
        if got == ino:
            return p
        p.unlink()
        if got > ino:
            break
    cannot_run(f"could not make a FIFO with inode {ino}")


def test_deleted_libpython_replaced_by_symlink_to_host_fifo(workloads, tmpfs_pair, out):
    """The target maps a libpython it then deletes, and puts at its name
    (as /proc/PID/maps shows it, " (deleted)" included) an absolute symlink
    to a FIFO with the same inode number on another file system. Main
    blocked in open() on the FIFO forever; now the mapped file itself is
    read through map_files, the FIFO is never opened, and the profile is
    complete."""
    python, lib = _pyenv311()
    a, b = tmpfs_pair
    copy = a / lib.name
    copy.write_bytes(lib.read_bytes())
    interp = Interpreter("pyenv-3.11-libcopy", ["env", f"LD_LIBRARY_PATH={a}", str(python)], (3, 11))
    w = workloads(interp, "two_hot.py", seconds=20)
    maps = Path(f"/proc/{w.pid}/maps").read_text()
    assert str(copy) in maps, "the copied libpython must be the one mapped"
    fifo = _fifo_with_inode(b, copy.stat().st_ino)
    copy.unlink()
    os.symlink(fifo, f"{copy} (deleted)")
    path = out()
    res = run_ebpfprof("--pid", w.pid, "-d", 2, "-o", path, timeout=40)
    assert res.returncode == 0, res.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    prof = Profile(path)
    assert prof.weight_with("crunch_a") + prof.weight_with("crunch_b") > 0, res.stderr
