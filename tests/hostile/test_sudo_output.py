"""Issue 18 item 3: under sudo, `-o` and `--gc-log` must not hand a root-owned
file to the user who ran sudo (`sudo ebpfprof -o /etc/passwd` would give them
root). Main chown'ed every output to SUDO_UID, replaced files included. Now a
file ebpfprof creates is that user's, and a file it replaces keeps its owner,
group and mode. ebpfprof runs as `sudo` leaves it: root, with SUDO_UID and
SUDO_GID of nobody, recording a real Python process it launches."""
import os
import stat
import subprocess

import pytest

from conftest import EBPFPROF, require_interpreter
from test_outputs import shared_dir  # noqa: F401 (a fixture: a directory nobody may write in too)

BUSY = "import time\nt = time.time()\nwhile time.time() - t < 3: sum(range(100))\n"
NOBODY = 65534


def record_under_sudo(*args):
    python = require_interpreter("debian-3.11").argv
    env = dict(os.environ, SUDO_UID=str(NOBODY), SUDO_GID=str(NOBODY), SUDO_USER="nobody")
    res = subprocess.run([str(EBPFPROF), "-d", "1", *map(str, args), "--", *python, "-c", BUSY],
                         capture_output=True, text=True, timeout=60, env=env)
    assert res.returncode == 0, res.stderr
    return res


def owner(path):
    st = os.lstat(path)
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)


def roots_file(path, mode):
    path.write_text("root's own\n")
    os.chown(path, 0, 0)
    path.chmod(mode)
    return os.lstat(path).st_ino


@pytest.mark.parametrize("option", ["-o", "--gc-log"])
def test_a_replaced_root_file_stays_roots(shared_dir, option):
    """Main: the file at that name became nobody's."""
    target = shared_dir / "roots-file"
    old_ino = roots_file(target, 0o640)
    args = ["-o", target] if option == "-o" else ["-o", shared_dir / "p.json", "--gc-log", target]
    record_under_sudo(*args)
    assert os.lstat(target).st_ino != old_ino, "not replaced"
    assert "root's own" not in target.read_text()
    assert owner(target) == (0, 0, 0o640)


def test_a_users_own_file_and_a_new_file_are_the_users(shared_dir):
    theirs, new, log = shared_dir / "theirs.json", shared_dir / "new.json", shared_dir / "gc.jsonl"
    theirs.write_text("old")
    os.chown(theirs, NOBODY, NOBODY)
    theirs.chmod(0o600)
    record_under_sudo("-o", theirs)
    assert owner(theirs) == (NOBODY, NOBODY, 0o600)
    record_under_sudo("-o", new, "--gc-log", log)
    assert owner(new) == (NOBODY, NOBODY, 0o644)
    assert owner(log) == (NOBODY, NOBODY, 0o644)


def test_a_file_of_a_third_user_keeps_its_owner(shared_dir):
    """Neither root's nor the sudo user's: still not given to the sudo user."""
    other = shared_dir / "other.json"
    other.write_text("old")
    os.chown(other, 12345, 12345)
    other.chmod(0o664)
    record_under_sudo("-o", other)
    assert owner(other) == (12345, 12345, 0o664)
