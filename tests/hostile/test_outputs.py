"""Issue 9, items 6, 7 and 8: what ebpfprof writes, as whom, and that a
launched command never outlives it."""
import os
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import EBPFPROF, cannot_run, require_interpreter, run_ebpfprof

BUSY = "import time\nt = time.time()\nwhile time.time() - t < {s}: sum(range(100))\n"


def one_line_error(res, *needles):
    assert res.returncode != 0, res.stderr
    lines = [l for l in res.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, res.stderr
    for n in needles:
        assert n in lines[0], lines[0]


@pytest.fixture
def python311():
    return require_interpreter("debian-3.11").argv[0]


@pytest.mark.parametrize("kind", ["fifo", "symlink", "dangling-symlink", "socket"])
@pytest.mark.parametrize("option", ["-o", "--gc-log"])
def test_non_regular_output_is_refused_not_replaced(tmp_path, python311, kind, option):
    """Main replaced a FIFO, a symlink (sudo ebpfprof -o /dev/null: the
    system's node) with a regular root-owned file."""
    target = tmp_path / "victim"
    target.write_text("keep me")
    path = tmp_path / "out"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        os.symlink(target, path)
    elif kind == "dangling-symlink":
        os.symlink(tmp_path / "nowhere", path)
    else:
        import socket
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
    before = os.lstat(path)
    args = ["-o", tmp_path / "p.json", "--gc-log", path] if option == "--gc-log" else ["-o", path]
    res = run_ebpfprof("-d", 1, *args, "--", python311, "-c", BUSY.format(s=3), timeout=60)
    one_line_error(res, "cannot write", "not a regular file")
    after = os.lstat(path)
    assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode) and after.st_ino == before.st_ino
    assert target.read_text() == "keep me"
    assert not (tmp_path / "nowhere").exists()


def test_empty_output_is_rejected_before_recording(python311):
    """Main recorded the whole -d 20 and only then failed."""
    t0 = time.monotonic()
    res = run_ebpfprof("-d", 20, "-o", "", "--", python311, "-c", BUSY.format(s=30), timeout=60)
    assert res.returncode == 2 and "invalid output" in res.stderr, res.stderr
    assert time.monotonic() - t0 < 10


def test_output_mode_respects_the_umask(tmp_path, python311):
    """Main fchmod'ed every output 0644 whatever the umask."""
    out, log = tmp_path / "p.json", tmp_path / "gc.jsonl"
    res = subprocess.run(["sh", "-c", 'umask 077 && exec "$@"', "sh", str(EBPFPROF), "-d", "1",
                          "-o", str(out), "--gc-log", str(log), "--", python311, "-c", BUSY.format(s=3)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


WHO = ("import os, time\n"
       "open({path!r}, 'w').write(f'{{os.getuid()}} {{os.getgid()}} {{os.environ.get(\"HOME\")}} {{sorted(os.getgroups())}}')\n"
       "t = time.time()\nwhile time.time() - t < 3: sum(range(100))\n")


@pytest.fixture
def shared_dir():
    """A directory nobody can write in (pytest's tmp_path is root's alone)."""
    d = Path(tempfile.mkdtemp(prefix="ebpfprof-sudo-", dir="/tmp"))
    d.chmod(0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def run_as_sudo(shared_dir, python311, *extra):
    """ebpfprof as `sudo` leaves it: root, with SUDO_UID/SUDO_GID of nobody."""
    who, out = shared_dir / "who", shared_dir / "p.json"
    env = dict(os.environ, SUDO_UID="65534", SUDO_GID="65534", SUDO_USER="nobody", HOME="/root")
    res = subprocess.run([str(EBPFPROF), "-d", "1", "-o", str(out), *extra, "--", python311, "-c",
                          WHO.format(path=str(who))], capture_output=True, text=True, timeout=60, env=env)
    assert res.returncode == 0, res.stderr
    return who.read_text().split(" ", 3), out


def test_launch_under_sudo_runs_the_command_as_the_user(shared_dir, python311):
    """Main ran the command as root with HOME=/root, and its files were root's."""
    (uid, gid, home, groups), out = run_as_sudo(shared_dir, python311)
    assert (uid, gid) == ("65534", "65534")
    assert home == "/nonexistent", home        # nobody's HOME from the password file
    assert "0" not in groups.strip("[]").replace(" ", "").split(","), groups
    assert (out.stat().st_uid, out.stat().st_gid) == (65534, 65534)


def test_as_root_keeps_root(shared_dir, python311):
    (uid, gid, home, groups), out = run_as_sudo(shared_dir, python311, "--as-root")
    assert uid == "0"
    assert out.stat().st_uid == 65534   # the profile is still the user's


def test_failed_write_ends_the_launched_command(tmp_path, python311):
    """Disk full: main exited and left the launched command running."""
    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12k", "tmpfs", str(small)]).returncode:
        cannot_run("cannot mount a tmpfs")
    pidfile = tmp_path / "pid"
    try:
        # fill all but a few KiB: the check before recording passes, the write fails
        (small / "filler").write_bytes(b"x" * 6000)
        # 300 functions: a profile larger than the room left
        script = (f"import os, time\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
                  "ns = {}\nfor i in range(300): exec(f'def f{i}(): sum(range(1000))', ns)\n"
                  "fs = [ns[f'f{i}'] for i in range(300)]\nt = time.time()\n"
                  "while time.time() - t < 60:\n    for f in fs: f()\n")
        res = run_ebpfprof("-d", 2, "-o", small / "p.json", "--", python311, "-c", script, timeout=60)
        one_line_error(res, "cannot write", "No space left on device")
        pid = int(pidfile.read_text())
        time.sleep(0.2)
        assert not os.path.exists(f"/proc/{pid}") or \
            open(f"/proc/{pid}/stat").read().split(")")[1].split()[0] in "ZX", "the command still runs"
    finally:
        subprocess.run(["umount", "-l", str(small)])
