"""Issue 32: the run history. Real recordings of a real workload
(history_mix.py) under the real BPF programs, stored in an SQLite database
and judged by Coiled's rule: 10 runs, then 3 in which changed() does 1.5x
its work, recorded with a CPU hog beside them (a loaded machine): `history
check` names changed() and nothing else as regressed and exits 1; the same
10 runs then 3 unchanged ones: exit 0. A gc-on series then a gc-off run: GC
and waiting for GC reported gone. The store: four writers at once lose no
run, a writer killed mid-insert leaves a database that opens and checks, a
newer schema and a corrupt file are refused in one line."""
import fcntl
import os
import signal
import sqlite3
import struct
import tempfile
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import EBPFPROF, WORKLOADS, require_interpreter

PY = "debian-3.11"
RUN_SECONDS = 2.5
# ~1000 samples of a run's on-CPU time: at the default 100 Hz, changed()'s
# share of a 50/50 split moved by 0.08 (sd) between runs from sampling alone,
# as much as the 1.5x it must find
RATE = 999


def history(db, *args, timeout=120):
    return subprocess.run([str(EBPFPROF), "history", *map(str, args), "--history-db", str(db)],
                          capture_output=True, text=True, timeout=timeout)


def start_recording(path, *workload_args, series=None, db=None, tags=()):
    """One recording of history_mix.py, launched; finish() waits for its end."""
    interp = require_interpreter(PY)
    opts = []
    if series:
        opts = ["--history", series, "--history-db", str(db)]
        for t in tags:
            opts += ["--tag", t]
    proc = subprocess.Popen([str(EBPFPROF), "-r", str(RATE), "-o", str(path), *opts, "--",
                             *interp.argv,
                             str(WORKLOADS / "history_mix.py"), "--seconds", str(RUN_SECONDS),
                             *workload_args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    return path, series, proc


def finish(recording):
    path, series, proc = recording
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    if series:
        assert "stored as run #" in err, err
    return path


def record(path, *workload_args, **kw):
    """One recording of history_mix.py, launched, to its end."""
    return finish(start_recording(path, *workload_args, **kw))


def record_at_once(*recordings):
    """Recordings made at the same time (each a start_recording argument
    tuple and its options), in the order given; returns their paths."""
    return [finish(r) for r in [start_recording(*args, **kw) for args, kw in recordings]]


def regressed_and_improved(stdout):
    """The labels of the check's two sections."""
    out, section = {"regressed": [], "improved": []}, None
    for line in stdout.splitlines():
        if line.startswith(("regressed (", "improved (")):
            section = line.split(" ")[0]
        elif section and line.startswith("  ") and not line.startswith("    "):
            out[section].append(line.strip())
    return out


@pytest.fixture(scope="module")
def series(tmp_path_factory):
    """13 runs as they are, then 3 with changed() at 1.5x, a CPU hog beside
    all of them; the first 10 and the slower 3 stored as they end
    (--history), the rest added from the files."""
    tmp = tmp_path_factory.mktemp("history")
    db = tmp / "history.db"
    base_runs = [((tmp / f"base{i}.speedscope.json",),
                  dict(series="slower" if i < 10 else None, db=db, tags=["phase=base"]))
                 for i in range(13)]
    slow_runs = [((tmp / f"slow{i}.speedscope.json", "--slower", "1.5"),
                  dict(series="slower", db=db, tags=["phase=slow"])) for i in range(3)]
    # two at a time (with the hog: three busy threads on the 2 CPUs, each run
    # 1480-1830 samples of its on-CPU time in one series, changed()'s self
    # share 49.6% with an sd of 1.5 points, the bar 4.6, the slower runs'
    # 58.7-61.3), in the series' order: the pairs of stored base runs, then
    # each slower run beside a base run not stored
    pairs = [base_runs[i:i + 2] for i in range(0, 10, 2)] + list(zip(base_runs[10:], slow_runs))
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        made = [p for pair in pairs for p in record_at_once(*pair)]
        base, slow = made[:10] + made[10::2], made[11::2]
    finally:
        hog.kill()
        hog.wait()
    return db, base, slow


def test_slower_function_flagged_alone(series):
    db, base, slow = series
    res = history(db, "check", "slower")
    print(res.stdout)
    assert res.returncode == 1, res.stdout + res.stderr
    found = regressed_and_improved(res.stdout)
    assert found["regressed"], res.stdout
    # changed()'s self and total share, nothing else: no state, no other function
    for label in found["regressed"]:
        assert label.startswith("changed ("), res.stdout
    assert any("self share" in label for label in found["regressed"]), res.stdout
    # steady()'s share fell only because changed()'s grew: not an improvement
    assert not any(label.startswith("steady (") for label in found["improved"]), res.stdout


def test_unchanged_runs_pass(series):
    db, base, slow = series
    res = history(db, "add", "same", *base, "--tag", "phase=base")
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("run #") == 13
    res = history(db, "check", "same")
    print(res.stdout)
    assert res.returncode == 0, res.stdout + res.stderr
    assert not regressed_and_improved(res.stdout)["regressed"]


def test_too_few_runs_says_how_many_more(series):
    db, base, slow = series
    assert history(db, "add", "short", *base[:4]).returncode == 0
    res = history(db, "check", "short")
    assert res.returncode == 0
    assert "4 runs, the check needs 13 (10 before the last 3): 9 more" in res.stdout


def test_list_and_show(series):
    db, base, slow = series
    res = history(db, "list", "slower")
    assert res.returncode == 0, res.stderr
    rows = [line for line in res.stdout.splitlines()[1:] if line.strip()]
    assert len(rows) == 13
    assert rows[-1].endswith("phase=slow") and rows[0].endswith("phase=base")
    run = rows[-1].split()[0]
    res = history(db, "show", run)
    assert res.returncode == 0, res.stderr
    assert "python: 3.11" in res.stdout
    assert "tags: phase=slow" in res.stdout
    assert "changed (" in res.stdout and "self_share" in res.stdout
    assert "state  python3.11  on-cpu  seconds" in res.stdout


def test_plot_is_one_page(series, tmp_path):
    db, base, slow = series
    page = tmp_path / "trend.html"
    res = history(db, "plot", "slower", "-o", page)
    assert res.returncode == 0, res.stderr
    html = page.read_text()
    assert "<svg" in html and "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    assert "<script" not in html
    assert "changed (" in html
    assert "fill='#d62728'" in html  # the flagged runs


def test_gc_off_run_reports_gc_gone(tmp_path):
    db = tmp_path / "history.db"
    # one after another: three at once on 2 CPUs (a CI run) spread their GC
    # time so widely (on-CPU 227 ms/s, sd 75) that its going was within the bar
    for i in range(3):
        record(tmp_path / f"gc{i}.json", "--collector", series="gc", db=db, tags=["gc=on"])
    record(tmp_path / "nogc.json", "--collector", "--gc-off", series="gc", db=db,
           tags=["gc=off"])
    res = history(db, "check", "gc", "--window", "3", "--last", "1")
    print(res.stdout)
    improved = regressed_and_improved(res.stdout)["improved"]
    assert any(": GC gen 2 time, s/s: gone" in label for label in improved), res.stdout
    assert any(label.startswith("[GC gen 2], self share") and label.endswith(": gone")
               for label in improved), res.stdout
    assert any(": gc, s/s: gone" in label for label in improved), res.stdout
    assert any(": waiting-for-gc, s/s: gone" in label for label in improved), res.stdout


@pytest.fixture(scope="module")
def one_recording(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("history-one")
    return record(tmp / "one.speedscope.json")


def count_runs(db, series):
    with sqlite3.connect(db) as c:
        return c.execute("SELECT count(*) FROM runs WHERE series = ?", (series,)).fetchone()[0]


def whole_runs(db):
    """Every run has all its figures: none is half written."""
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT r.id, r.nmetrics, (SELECT count(*) FROM metrics m WHERE "
                         "m.run = r.id) FROM runs r").fetchall()
    return [r for r in rows if r[1] != r[2]] == [] and all(r[1] > 0 for r in rows)


def test_four_writers_lose_nothing(one_recording, tmp_path):
    db = tmp_path / "history.db"
    per_writer = 15
    writers = [subprocess.Popen([str(EBPFPROF), "history", "add", "--history-db", str(db),
                                 "many", *[one_recording] * per_writer, "--tag", f"writer={w}"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for w in range(4)]
    for w in writers:
        out, err = w.communicate(timeout=300)
        assert w.returncode == 0, err
    assert count_runs(db, "many") == 4 * per_writer
    assert whole_runs(db)


def in_transaction(db):
    """Whether a writer holds the database's write lock (is inside a run's
    transaction). Asked of the kernel, not of SQLite: in WAL mode the write
    lock is a POSIX lock on byte 120 of the -shm file, which F_GETLK reports
    without touching the WAL index. (A connection that tries the lock reads
    the index first, and one stopped half-way through updating it made that
    read retry for 10 s before SQLITE_PROTOCOL: this test took 0.2-30 s.)"""
    try:
        fd = os.open(f"{db}-shm", os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        probe = struct.pack("hhqqixxxx", fcntl.F_WRLCK, os.SEEK_SET, 120, 1, 0)
        l_type = struct.unpack("hhqqixxxx", fcntl.fcntl(fd, fcntl.F_GETLK, probe))[0]
        return l_type != fcntl.F_UNLCK
    finally:
        os.close(fd)


def kill_mid_insert(db, recording):
    """Starts a writer of many runs, stops it now and then until it is
    stopped inside a transaction, and SIGKILLs it there."""
    w = subprocess.Popen([str(EBPFPROF), "history", "add", "--history-db", str(db), "k",
                          *[recording] * 400], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        for attempt in range(2000):
            time.sleep(0.001 * (attempt % 7))
            w.send_signal(signal.SIGSTOP)
            if in_transaction(db) is True:
                w.send_signal(signal.SIGKILL)
                w.wait()
                return True
            w.send_signal(signal.SIGCONT)
            if w.poll() is not None:
                return False
        return False
    finally:
        if w.poll() is None:
            w.kill()
            w.wait()


def test_killed_writer_leaves_a_consistent_database(one_recording, tmp_path):
    db = tmp_path / "history.db"
    assert history(db, "add", "k", one_recording).returncode == 0
    killed = sum(kill_mid_insert(db, one_recording) for _ in range(3))
    assert killed == 3, "the writer was never caught inside a transaction"
    assert whole_runs(db)
    res = history(db, "check", "k", "--window", "2", "--last", "1")
    assert res.returncode in (0, 1), res.stderr
    assert res.stdout.startswith("series k:")
    # and it takes runs again
    assert history(db, "add", "k", one_recording).returncode == 0
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert whole_runs(db)


@pytest.mark.nobpf
def test_newer_schema_refused_in_one_line(tmp_path):
    db = tmp_path / "history.db"
    assert history(db, "list", "x").returncode == 1  # none yet: said, not made
    assert not db.exists()
    with sqlite3.connect(db) as c:
        c.execute("PRAGMA application_id = 1700950118")  # "ebpf"
        c.execute("PRAGMA user_version = 99")
    res = history(db, "list", "x")
    assert res.returncode == 1
    assert res.stderr.count("\n") == 1, res.stderr
    assert "history schema 99 is newer than this ebpfprof's (2)" in res.stderr


@pytest.mark.nobpf
@pytest.mark.parametrize("damage", ["garbage", "truncated", "other"])
def test_corrupt_file_one_line(tmp_path, damage):
    db = tmp_path / "history.db"
    if damage == "garbage":
        db.write_bytes(os.urandom(8192))
    elif damage == "other":
        with sqlite3.connect(db) as c:
            c.execute("CREATE TABLE t(x)")
    else:
        with sqlite3.connect(db) as c:
            c.execute("PRAGMA application_id = 1700950118")
            c.execute("CREATE TABLE runs(id INTEGER PRIMARY KEY, series TEXT)")
            c.executemany("INSERT INTO runs(series) VALUES (?)", [("x" * 500,)] * 200)
        data = db.read_bytes()
        db.write_bytes(data[:len(data) // 2] + b"\xff" * 4096)
    for action in (["list", "x"], ["check", "x"], ["show", "1"]):
        res = history(db, *action)
        assert res.returncode == 1, (action, res.stdout, res.stderr)
        assert res.stderr.count("\n") == 1, (action, res.stderr)
        assert res.stderr.startswith("ebpfprof history: "), res.stderr


def test_diff_share(series):
    """diff --share: changed() grew as a share of the sampled time, steady() shrank,
    as seconds per second would too; the header says what is compared."""
    db, base, slow = series
    res = subprocess.run([str(EBPFPROF), "diff", "--share", *base[:10], "--vs", *slow],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    text = res.stdout
    self_part = text[text.index("functions, self time, share of the sampled time (--share):"):]
    grew = self_part[:self_part.index("shrank:")]
    assert "changed" in grew and "steady" not in grew, text
    assert "pts" in grew


def test_default_database_is_the_sudo_users(one_recording):
    """Under sudo the database and its folder are the user's who ran sudo:
    $XDG_DATA_HOME/ebpfprof/history.db, made as them (a folder they can
    reach: pytest's tmp_path is root's alone, and root no longer does this
    work for them)."""
    xdg = Path(tempfile.mkdtemp(prefix="ebpfprof-xdg-", dir="/tmp")) / "xdg"
    xdg.parent.chmod(0o777)
    # the recording too is read as them
    theirs = xdg.parent / "recording.speedscope.json"
    theirs.write_bytes(Path(one_recording).read_bytes())
    theirs.chmod(0o644)
    one_recording = theirs
    env = dict(os.environ, XDG_DATA_HOME=str(xdg), SUDO_UID="4321", SUDO_GID="4322")
    res = subprocess.run([str(EBPFPROF), "history", "add", "mine", str(one_recording)],
                         capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 0, res.stderr
    db = xdg / "ebpfprof" / "history.db"
    for path in (xdg / "ebpfprof", db):
        st = path.stat()
        assert (st.st_uid, st.st_gid) == (4321, 4322), path
    res = subprocess.run([str(EBPFPROF), "history", "list", "mine"], capture_output=True,
                         text=True, env=env, timeout=60)
    assert res.returncode == 0 and len(res.stdout.splitlines()) == 2, res.stdout + res.stderr
