"""Issue 44, items 4-6: under sudo, root does the user's file work only as
that user. The history database (its -wal and -shm), the folders on the way
to the default one and the push credential files are opened with the sudo
user's file-system identity: nothing outside what the run created changes
owner, whatever symlinks the user planted, and a file only root may read
is refused in one line. A throwaway user (useradd) stands for the one who
ran sudo; ebpfprof runs as root with their SUDO_UID and SUDO_GID."""
import os
import pwd
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from conftest import EBPFPROF, cannot_run, require_interpreter

BUSY = "import time\nt = time.time()\nwhile time.time() - t < 1: sum(range(100))\n"


def open_dir(mode=0o755):
    """A folder others can reach (pytest's tmp_path is root's alone)."""
    d = Path(tempfile.mkdtemp(prefix="ebpfprof-sudo-files-", dir="/tmp"))
    d.chmod(mode)
    return d


@pytest.fixture
def tmp_path():
    d = open_dir(0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def user():
    """(name, uid, gid, home): a user of its own, its home a fresh folder."""
    if os.geteuid() != 0:
        cannot_run("needs root (useradd, and ebpfprof under a simulated sudo)")
    home = open_dir() / "home"
    home.mkdir()
    name = "ep" + uuid.uuid4().hex[:10]
    res = subprocess.run(["useradd", "--no-create-home", "--home-dir", str(home), "--user-group",
                          "--shell", "/usr/sbin/nologin", name], capture_output=True, text=True)
    if res.returncode:
        cannot_run(f"useradd failed: {res.stderr.strip()}")
    pw = pwd.getpwnam(name)
    os.chown(home, pw.pw_uid, pw.pw_gid)
    os.chmod(home, 0o755)
    try:
        yield name, pw.pw_uid, pw.pw_gid, home
    finally:
        subprocess.run(["userdel", name], capture_output=True)
        shutil.rmtree(home.parent, ignore_errors=True)


def as_sudo(user, *args, timeout=60):
    name, uid, gid, _ = user
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_DATA_HOME", "HOME")}
    env.update(SUDO_UID=str(uid), SUDO_GID=str(gid), SUDO_USER=name, HOME="/root")
    return subprocess.run([str(EBPFPROF), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.fixture(scope="module")
def recording():
    """A recording for `history add` (made as root, readable by all)."""
    if os.geteuid() != 0:
        cannot_run("needs root")
    d = open_dir()
    path = d / "r.speedscope.json"
    python = require_interpreter("debian-3.11").argv
    subprocess.run([str(EBPFPROF), "-d", "1", "-o", path, "--", *python, "-c", BUSY],
                   capture_output=True, check=True, timeout=60)
    os.chmod(path, 0o644)
    yield path
    shutil.rmtree(d, ignore_errors=True)


def roots_secret(path):
    path.write_text("root's secret\n")
    os.chown(path, 0, 0)
    path.chmod(0o600)
    return os.lstat(path)


def unchanged(path, before):
    st = os.lstat(path)
    return (st.st_uid, st.st_gid, st.st_mode, st.st_size) == \
        (before.st_uid, before.st_gid, before.st_mode, before.st_size)


def test_a_root_file_named_as_the_database_is_refused(user, recording, tmp_path):
    """9ca0104 wrote root's file as a database and handed it to the user."""
    target = tmp_path / "roots.db"
    before = roots_secret(target)
    res = as_sudo(user, "history", "add", "s", recording, "--history-db", target)
    assert res.returncode != 0, res.stdout + res.stderr
    assert res.stderr.count("\n") == 1 and "ermission denied" in res.stderr, res.stderr
    assert unchanged(target, before) and target.read_text() == "root's secret\n"


@pytest.mark.parametrize("side", ["-wal", "-shm"])
def test_the_users_symlinks_beside_the_database_reach_nothing_of_roots(user, recording, tmp_path, side):
    """The user plants DB-wal or DB-shm as a symlink to a root-only file
    before the run (the race after SQLite made them is the next test's):
    the root file is neither written nor given away."""
    _, uid, gid, _ = user
    secret = tmp_path / "secret"
    before = roots_secret(secret)
    db = tmp_path / "theirs.db"
    os.symlink(secret, str(db) + side)
    os.lchown(str(db) + side, uid, gid)
    as_sudo(user, "history", "add", "s", recording, "--history-db", db)
    assert unchanged(secret, before) and secret.read_text() == "root's secret\n"


def swap_in_symlinks(db, to, stop):
    """The user's race: each of DB-wal and DB-shm, once SQLite has made it,
    replaced by a symlink to `to` (SQLite keeps its descriptor)."""
    while not stop.is_set():
        for side in ("-wal", "-shm"):
            p = str(db) + side
            try:
                if os.path.isfile(p) and not os.path.islink(p):
                    os.unlink(p)
                    os.symlink(to, p)
            except OSError:
                pass


def test_a_symlink_swapped_in_after_sqlite_made_its_file_reaches_nothing(user, recording, tmp_path):
    """9ca0104 gave DB-shm to the user by name, following the symlink the
    user swapped in right after SQLite made it: a root-only file became
    theirs, on the first try."""
    secret = tmp_path / "secret"
    before = roots_secret(secret)
    for k in range(5):
        db = tmp_path / f"race{k}.db"
        stop = threading.Event()
        racer = threading.Thread(target=swap_in_symlinks, args=(db, secret, stop))
        racer.start()
        try:
            as_sudo(user, "history", "add", "s", recording, "--history-db", db)
        finally:
            stop.set()
            racer.join()
        assert unchanged(secret, before), f"try {k}: {os.lstat(secret)}"
    assert secret.read_text() == "root's secret\n"


def test_a_new_database_and_its_folders_are_the_users(user, recording):
    """The default database, folders and all, made as the user: theirs."""
    _, uid, gid, home = user
    res = as_sudo(user, "history", "add", "s", recording)
    assert res.returncode == 0, res.stderr
    made = [home / ".local", home / ".local" / "share", home / ".local" / "share" / "ebpfprof"]
    db = made[-1] / "history.db"
    for p in made + [db] + [p for p in made[-1].iterdir()]:
        st = os.lstat(p)
        assert (st.st_uid, st.st_gid) == (uid, gid), p
    assert as_sudo(user, "history", "list", "s").returncode == 0


def test_folders_through_the_users_symlink_are_not_made_as_root(user, recording, tmp_path):
    """~/.local/share -> a root-only folder: 9ca0104 made ebpfprof/ in it as
    root and gave it to the user."""
    _, uid, gid, home = user
    theirs = tmp_path / "home2"
    theirs.mkdir()
    roots = tmp_path / "var-lib"
    roots.mkdir(mode=0o755)
    (theirs / ".local").mkdir()
    os.symlink(roots, theirs / ".local" / "share")
    for p in (theirs, theirs / ".local"):
        os.chown(p, uid, gid)
    os.lchown(theirs / ".local" / "share", uid, gid)
    subprocess.run(["usermod", "--home", str(theirs), user[0]], check=True, capture_output=True)
    try:
        res = as_sudo(user, "history", "add", "s", recording)
    finally:
        subprocess.run(["usermod", "--home", str(home), user[0]], check=True, capture_output=True)
    assert res.returncode != 0
    assert "ermission denied" in res.stderr and res.stderr.count("\n") == 1, res.stderr
    assert list(roots.iterdir()) == []
    st = os.lstat(roots)
    assert (st.st_uid, st.st_gid) == (0, 0)


@pytest.mark.parametrize("option", ["--push-token-file", "--push-basic-auth-file"])
def test_a_root_only_credential_file_is_refused(user, tmp_path, option):
    """9ca0104 read it as root and sent it to the URL the user chose."""
    _, uid, _, _ = user
    secret = tmp_path / "cred"
    secret.write_text("u:p\n")
    os.chown(secret, 0, 0)
    secret.chmod(0o600)
    python = require_interpreter("debian-3.11").argv
    res = as_sudo(user, "--push", "http://127.0.0.1:9", "--rotate", "1", option, secret, "-d", "1", "--",
                  *python, "-c", "pass")
    assert res.returncode != 0
    assert res.stderr.count("\n") == 1, res.stderr
    assert "Permission denied" in res.stderr and f"uid {uid}" in res.stderr, res.stderr
