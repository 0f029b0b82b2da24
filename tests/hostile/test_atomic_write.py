"""Issue 18 item 4: `ebpfprof diff -o` writes through the same atomic write as
every other output. Main's diff had its own: it replaced a device node, a
FIFO or a symlink with a regular file (`diff -o /dev/null` as root replaced
the system's device), fchmod'ed 0644 whatever the umask, and left the file
root's under sudo. The recordings are real: one short recording of a real
Python process, compared with itself."""
import os
import socket
import stat
import subprocess

import pytest

from conftest import EBPFPROF, require_interpreter
from test_outputs import one_line_error, shared_dir  # noqa: F401 (a fixture)

BUSY = "import time\nt = time.time()\nwhile time.time() - t < {s}: sum(range(100))\n"


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    python = require_interpreter("debian-3.11").argv
    path = tmp_path_factory.mktemp("rec") / "r.speedscope.json"
    res = subprocess.run([str(EBPFPROF), "-d", "1", "-o", str(path), "--", *python, "-c",
                          BUSY.format(s=3)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return path


def diff(recording, *args, env=None, umask=None):
    argv = [str(EBPFPROF), "diff", str(recording), str(recording), *map(str, args)]
    if umask is not None:
        argv = ["sh", "-c", f'umask {umask:03o} && exec "$@"', "sh", *argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)


def make_node(path, kind, victim):
    if kind == "chardev":      # a /dev/null of our own: main's binary replaced it
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        os.symlink(victim, path)
    else:
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        s.close()


@pytest.mark.parametrize("fmt", ["text", "json", "html", "collapsed", "pprof"])
@pytest.mark.parametrize("kind", ["chardev", "fifo", "symlink", "socket"])
def test_diff_never_replaces_what_is_not_a_regular_file(tmp_path, recording, kind, fmt):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    path = tmp_path / "out"
    make_node(path, kind, victim)
    before = os.lstat(path)
    res = diff(recording, "-f", fmt, "-o", path)
    one_line_error(res, "ebpfprof diff: cannot write", "not a regular file")
    after = os.lstat(path)
    assert (stat.S_IFMT(after.st_mode), after.st_ino, after.st_rdev) == \
        (stat.S_IFMT(before.st_mode), before.st_ino, before.st_rdev)
    assert victim.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "victim"], "a temporary file was left"


def test_diff_pprof_base_is_checked_too(tmp_path, recording):
    new, base = tmp_path / "d.pb.gz", tmp_path / "d.base.pb.gz"
    make_node(base, "chardev", None)
    res = diff(recording, "-f", "pprof", "-o", new)
    one_line_error(res, "cannot write", "d.base.pb.gz", "not a regular file")
    assert stat.S_ISCHR(os.lstat(base).st_mode)
    assert not new.exists()


def test_diff_output_respects_the_umask(tmp_path, recording):
    """Main fchmod'ed diff's output 0644."""
    for fmt, umask, mode in (("text", 0o077, 0o600), ("html", 0o027, 0o640), ("json", 0o022, 0o644)):
        out = tmp_path / f"d.{fmt}"
        res = diff(recording, "-f", fmt, "-o", out, umask=umask)
        assert res.returncode == 0, res.stderr
        assert stat.S_IMODE(out.stat().st_mode) == mode, (fmt, oct(out.stat().st_mode))


SUDO = dict(os.environ, SUDO_UID="65534", SUDO_GID="65534", SUDO_USER="nobody")


def test_diff_output_under_sudo(shared_dir, recording):
    """A file diff creates is the sudo user's (main: root's); one it replaces
    keeps its owner and mode."""
    made, roots = shared_dir / "made.txt", shared_dir / "roots.txt"
    roots.write_text("root's")
    roots.chmod(0o640)
    for out in (made, roots):
        res = diff(recording, "-o", out, env=SUDO)
        assert res.returncode == 0, res.stderr
    st = made.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (65534, 65534, 0o644)
    st = roots.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, 0, 0o640)
    assert "base 1 run" in roots.read_text()
