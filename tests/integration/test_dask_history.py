"""Issue 47: a Dask benchmark suite remembers what its clusters did.

- The store and the rule on synthetic runs (no BPF): ebpfprof_dask's run
  document through `ebpfprof history add-run`, `check` naming a task prefix
  with its state and figures and no other prefix, `show` and `plot`; a
  database of schema 1 and a recording of format 1 still read, into the one
  SQLite file.
- Real LocalClusters (2 worker processes) under the real BPF programs. With
  sid's distributed 2024.12 (its chroot): 13 short runs of a workload
  (dask_history.py), `history check` exits 0; then 3 in which one prefix
  (churn) makes twice the garbage: exit 1, naming churn and its GC and no
  other prefix; the same with bookworm's 2022.12 (the host's python3).
  Every run's work lies inside each of its recordings (their GC logs'
  clocks).
- The pytest plugin (entry point pytest11, installed with pip): a file of two
  tests each computing on a cluster stores a series per test, a second run
  appends to them; without --ebpfprof-history the file runs as before."""
import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from conftest import EBPFPROF, ROOT, WORKLOADS, cannot_run, require_interpreter

sys.path.insert(0, str(ROOT / "python"))
from ebpfprof_dask import history as run_history  # noqa: E402

PYTHON = "/usr/bin/python3"
STATES = ("on-cpu", "gc", "gil-wait", "waiting-for-gc", "lock-wait", "io", "sleep", "preempted", "other")


def history(db, *args, input=None, timeout=120):
    return subprocess.run([str(EBPFPROF), "history", *map(str, args), "--history-db", str(db)],
                          capture_output=True, text=True, input=input, timeout=timeout)


def prefixes_named(text):
    """{prefix: [its lines]} of what check printed about task prefixes."""
    out = {}
    for m in re.finditer(r"^  prefix (\S+): (.*)$", text, re.M):
        out.setdefault(m.group(1), []).append(m.group(2))
    return out


# ---- synthetic runs: the store and the rule, no BPF ----

def synthetic_run(i, gc):
    """A cluster's run as ebpfprof_dask builds it: a scheduler, two workers,
    prefixes crunch and churn; churn spends gc of each task-second in GC, and
    the machine preempts both prefixes by a different amount each run."""
    preempted = 0.3 * (i % 4)

    def recording(threads, prefixes):
        labels = {name: {"states_s": states, "gc_count": 10, "gc_s": states.get("gc", 0),
                         "sources": 50, "functions": [{"name": name, "file": "x.py", "self_s": 0.5,
                                                       "total_s": 0.6}]}
                  for name, states in prefixes.items()}
        return {"ebpfprof": {"states": list(STATES), "duration_s": 2.0, "python": "3.11",
                             "threads": [{"states_s": t} for t in threads], "labels": {"dask_prefix": labels}}}

    gc_log = b"\n".join(json.dumps({"type": "gc", "generation": g, "duration_s": 0.001 * (g + 1)}).encode()
                        for g in (0, 0, 1, 2))
    processes, prefixes = [], []
    sched = recording([{"on-cpu": 0.4, "io": 1.6}], {})
    processes.append(("scheduler", run_history.process_figures(sched, gc_log)))
    for _ in range(2):
        doc = recording([{"on-cpu": 1.0, "gc": gc, "preempted": preempted}],
                        {"crunch": {"on-cpu": 0.5, "preempted": preempted},
                         "churn": {"on-cpu": 1 - gc, "gc": gc, "preempted": preempted}})
        processes.append(("worker", run_history.process_figures(doc, gc_log)))
        from ebpfprof_dask.report import read_prefixes
        prefixes.append((read_prefixes(doc), run_history.prefix_gc(doc)))
    return run_history.cluster_run(processes, prefixes, "dask cluster tcp://x: scheduler and 2 workers", "/out")


def test_synthetic_runs_name_the_prefix(tmp_path):
    db = tmp_path / "h.db"
    for i in range(13):
        res = history(db, "add-run", "bench", "-", "--tag", "distributed=2022.12.1",
                      input=json.dumps(synthetic_run(i, 0.2 + 0.005 * (i % 2))))
        assert res.returncode == 0 and res.stdout == f"run #{i + 1}: -\n", res.stdout + res.stderr
    res = history(db, "check", "bench")
    assert res.returncode == 0 and "no change beyond the bar" in res.stdout, res.stdout
    for i in range(13, 16):
        history(db, "add-run", "bench", "-", input=json.dumps(synthetic_run(i, 0.5)))
    res = history(db, "check", "bench")
    print(res.stdout)
    assert res.returncode == 1, res.stdout + res.stderr
    assert prefixes_named(res.stdout) == {"churn": [
        "GC 0.20 -> 0.50 s per task-second",
    ]}, res.stdout
    assert "  prefix churn: GC 0.20 -> 0.50 s per task-second\n    was 0.203 (sd 0.0026), now 0.5 0.5 0.5 " \
           "(bar 0.01)\n" in res.stdout, res.stdout
    # the workers' GC per second of recording regressed with it: the roles are judged too
    assert "  workers: gc, s/s\n" in res.stdout, res.stdout
    res = history(db, "show", "16")
    assert res.returncode == 0, res.stderr
    assert "kind: dask-cluster\ntask prefixes (2; " in res.stdout, res.stdout
    assert re.search(r"^  churn: 100 tasks, [\d.]+ s; gc 1\.000 s \(0\.\d+ s per task-second\)", res.stdout, re.M), \
        res.stdout
    assert "  state  workers  gc  seconds = 1\n" in res.stdout, res.stdout
    assert "  gc     scheduler  gen 2  count = 1\n" in res.stdout, res.stdout
    res = history(db, "plot", "bench", "-o", tmp_path / "trend.html")
    assert res.returncode == 0, res.stderr
    page = (tmp_path / "trend.html").read_text()
    assert "Task prefixes: each state" in page and "prefix churn: GC" in page, page[:2000]
    # one file sqlite3 opens: schema 2, the runs' kinds
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA user_version").fetchone() == (2,)
    assert con.execute("SELECT DISTINCT kind FROM runs").fetchall() == [("dask-cluster",)]
    assert con.execute("SELECT count(*) FROM metrics WHERE kind = 'prefix_state'").fetchone()[0] > 0
    con.close()


SCHEMA_1 = """
CREATE TABLE runs(id INTEGER PRIMARY KEY AUTOINCREMENT, series TEXT NOT NULL, at INTEGER NOT NULL,
 host TEXT NOT NULL, kernel TEXT NOT NULL, python TEXT NOT NULL, command TEXT NOT NULL,
 source TEXT NOT NULL, duration_s REAL NOT NULL, nmetrics INTEGER NOT NULL);
CREATE INDEX runs_by_series ON runs(series, id);
CREATE TABLE tags(run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, key TEXT NOT NULL,
 value TEXT NOT NULL);
CREATE INDEX tags_by_run ON tags(run);
CREATE TABLE metrics(run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, kind TEXT NOT NULL,
 process TEXT NOT NULL, thread TEXT NOT NULL, name TEXT NOT NULL, field TEXT NOT NULL, value REAL NOT NULL);
CREATE INDEX metrics_by_run ON metrics(run);
PRAGMA application_id = 1700950118;
PRAGMA user_version = 1;
"""


def test_schema_1_database_and_format_1_recording_still_read(tmp_path):
    """A database an ebpfprof of schema 1 wrote opens (migrated), its runs
    read as recordings; a recording of format 1 (9092b2a) is still added;
    a cluster run joins them; the file stays one database sqlite3 reads."""
    db = tmp_path / "old.db"
    con = sqlite3.connect(db)
    con.executescript(SCHEMA_1)
    con.execute("INSERT INTO runs VALUES (1, 'old', 1700000000, 'h', 'k', '3.11', 'python3 x.py', 'x.json', 2, 1)")
    con.execute("INSERT INTO metrics VALUES (1, 'state', 'python3', '', 'on-cpu', 'seconds', 1.5)")
    con.commit()
    con.close()
    res = history(db, "show", "1")
    assert res.returncode == 0 and "kind: recording\n" in res.stdout, res.stdout + res.stderr
    assert "  state  python3  on-cpu  seconds = 1.5\n" in res.stdout, res.stdout
    fixture = ROOT / "tests/fixtures/thread_mix-9092b2a.speedscope.json"
    res = history(db, "add", "old", fixture)
    assert res.returncode == 0 and res.stdout == f"run #2: {fixture}\n", res.stdout + res.stderr
    res = history(db, "add-run", "old", "-", input=json.dumps(synthetic_run(0, 0.2)))
    assert res.returncode == 0 and res.stdout == "run #3: -\n", res.stdout + res.stderr
    res = history(db, "list", "old")
    assert res.returncode == 0 and len(res.stdout.splitlines()) == 4, res.stdout
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA user_version").fetchone() == (2,)
    assert con.execute("SELECT id, kind FROM runs ORDER BY id").fetchall() == \
        [(1, "recording"), (2, "recording"), (3, "dask-cluster")]
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("old.db")) <= \
        ["old.db", "old.db-shm", "old.db-wal"]
    # a document of a newer format, or not one, is refused in one line
    res = history(db, "add-run", "old", "-", input='{"format": 9, "figures": []}')
    assert res.returncode == 1 and res.stderr == \
        "ebpfprof history: -: format 9 is newer than this ebpfprof's (1): use a newer ebpfprof\n", res.stderr


# ---- real clusters: runs unchanged, then runs of twice the garbage ----

# 13 runs, `check` with its defaults (the last 3 against the 10 before)
# exits 0; then 3 changed runs, exit 1. (A shorter series, 6 runs then 2
# changed judged by `check --window 6 --last 2`, named a second prefix,
# crunch's GIL wait, in 1 of 4 runs: a window of 6 is within the machine's
# load; replayed over a 16-run series, any window under 10 runs flagged
# the workers' states in 3 of 6 stretches.)
BASE_RUNS, CHANGED_RUNS = 13, 3


def need_distributed(interp):
    """distributed importable by interp: the host's (bookworm's 2022.12) or
    the chroot's (sid's 2024.12, scripts/make-chroots.sh installs it)."""
    if not interp.chroot:
        try:
            import distributed  # noqa: F401
        except ImportError:
            cannot_run("python3-distributed is not installed (scripts/deps.sh)")
        return
    if not (Path(interp.chroot) / "usr/lib/python3/dist-packages/distributed").is_dir():
        cannot_run(f"{interp}: python3-distributed is not installed in {interp.chroot} "
                   "(scripts/make-chroots.sh sid)")


def cluster_workload(interp, tmp_path, *args):
    """The workload's argv and environment. In the chroot the cluster runs
    under its own root with /proc and a /dev/shm of a mount namespace of its
    own; ebpfprof, the package, the database and every file the workload
    shares with the host are reached through /proc/PID/root of this test's
    process (the host's root, from the same pid namespace), and ebpfprof
    runs there, chrooted back."""
    workload = str(WORKLOADS / "dask_history.py")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    if not interp.chroot:
        return [*interp.argv, workload, *args, "--command", json.dumps([str(EBPFPROF)])], env
    host = host_root()
    (tmp_path / "tmp").mkdir()
    # the workers' temporary files (ebpfprof's -o): the same path both sides
    env.update(PYTHONPATH=host + str(ROOT / "python"), TMPDIR=host + str(tmp_path / "tmp"))
    d = shlex.quote(interp.chroot)
    argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            f"mount -t proc proc {d}/proc && mount -t tmpfs tmpfs {d}/dev/shm && "
            f'exec chroot {d} {shlex.quote(interp.argv[-1])} "$@"', "sh", host + workload, *args,
            "--command", json.dumps(["/usr/sbin/chroot", host, str(EBPFPROF)])]
    return argv, env


def run_cluster_series(interp, tmp_path, base, changed):
    """base runs, the check; changed runs, the check again. Returns both
    checks and the truth."""
    import time

    db, paused, go = tmp_path / "h.db", tmp_path / "paused.json", tmp_path / "go"
    series = f"dask-history-{interp.name}"
    pause = ["--paused", inside_path(interp, paused), "--go", inside_path(interp, go)]
    argv, env = cluster_workload(
        interp, tmp_path, "--runs", str(base + changed), "--changed-after", str(base),
        "--garbage", "2", "--series", series, "--db", str(db), "--out", inside_path(interp, tmp_path / "out"),
        *pause, "--truth", inside_path(interp, tmp_path / "truth.json"), "--tag", f"python={interp.name}")
    proc = subprocess.Popen(argv, env=env, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 600
        while not paused.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.5)
        unchanged = history(db, "check", series)
        go.touch()
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
    finally:
        if proc.poll() is None:
            proc.kill()
    changed = history(db, "check", series)
    truth = json.loads((tmp_path / "truth.json").read_text())
    return unchanged, changed, truth, db, series


def host_root():
    """The host's root as a process in a chroot reaches it: this process's."""
    return f"/proc/{os.getpid()}/root"


def inside_path(interp, path):
    return (host_root() if interp.chroot else "") + str(path)


def check_cluster_series(name, tmp_path):
    """The series on interp name's cluster, and what check says of it."""
    interp = require_interpreter(name)
    need_distributed(interp)
    base, changed_runs = BASE_RUNS, CHANGED_RUNS
    unchanged, changed, truth, db, series = run_cluster_series(interp, tmp_path, base, changed_runs)
    print(f"{name}: distributed {truth['distributed']}, runs {[r['run'] for r in truth['runs']]}, "
          f"work {[round(r['work_s'], 2) for r in truth['runs']]} s, each run "
          f"{[round(r['run_s'], 2) for r in truth['runs']]} s, recordings began "
          f"{[round(r['margin_s'], 2) for r in truth['runs']]} s before the work")
    print(unchanged.stdout)
    print(changed.stdout)
    assert [r["run"] for r in truth["runs"]] == list(range(1, base + changed_runs + 1))
    assert unchanged.returncode == 0 and "no change beyond the bar" in unchanged.stdout, unchanged.stdout
    assert f"runs #{base + 1}-#{base + changed_runs} against the 10 before" in changed.stdout, changed.stdout
    assert changed.returncode == 1, changed.stdout + changed.stderr
    named = prefixes_named(changed.stdout)
    assert set(named) == {"churn"}, changed.stdout
    gc_line = [line for line in named["churn"] if line.startswith("GC ")]
    assert gc_line, changed.stdout
    was, now = map(float, re.match(r"GC ([\d.]+) -> ([\d.]+) s per task-second", gc_line[0]).groups())
    assert now > 1.3 * was, gc_line
    regressed = changed.stdout.split("improved (")[0]
    assert "  prefix churn: GC " in regressed, changed.stdout
    shown = history(db, "show", base + changed_runs)
    assert f"distributed={truth['distributed']}" not in shown.stdout     # tagged by the plugin only
    assert f"python={name}" in shown.stdout and "task prefixes (2; " in shown.stdout, shown.stdout
    return truth


def test_cluster_runs_bookworm_distributed(tmp_path):
    truth = check_cluster_series("debian-3.11", tmp_path)
    assert truth["distributed"].startswith("2022.12"), truth


def test_cluster_runs_sid_distributed(tmp_path):
    truth = check_cluster_series("chroot-3.14", tmp_path)
    assert truth["distributed"].startswith("2024.12"), truth


# ---- the pytest plugin ----

PLUGIN_TESTS = '''
import pytest
from distributed import Client, LocalCluster


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=40) as c:
        yield c


@pytest.fixture
def client(cluster):
    with Client(cluster) as c:
        yield c


def test_sums(client):
    def crunch(i):
        return sum(k * k for k in range(100000 + i))
    assert len(client.gather(client.map(crunch, range(40)))) == 40


def test_garbage(client):
    def churn(i):
        for _ in range(5000):
            a = [None] * 16
            a[0] = a
        return i
    assert sum(client.gather(client.map(churn, range(40)))) == sum(range(40))
'''


def installed_package(tmp_path):
    """A venv seeing Debian's packages (distributed, pytest), the package
    installed into it with pip, offline: its pytest11 entry point with it."""
    for module in ("setuptools", "pip", "venv", "pytest"):
        if subprocess.run([PYTHON, "-c", f"import {module}"], capture_output=True).returncode:
            cannot_run(f"python3-{module} is not installed (scripts/deps.sh)")
    src = tmp_path / "python"
    shutil.copytree(ROOT / "python", src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_INDEX_URL", "PIP_FIND_LINKS")}
    venv = tmp_path / "venv"
    subprocess.run([PYTHON, "-m", "venv", "--system-site-packages", str(venv)], check=True, env=env)
    res = subprocess.run([str(venv / "bin" / "pip"), "install", "--no-build-isolation", "--no-index", "./python"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    return venv / "bin" / "python3", env


def test_pytest_plugin_stores_a_series_per_test(tmp_path):
    need_distributed(require_interpreter("debian-3.11"))
    python, env = installed_package(tmp_path)
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_cluster.py").write_text(PLUGIN_TESTS)
    (suite / "pytest.ini").write_text("[pytest]\n")    # the rootdir: node ids from here
    db = tmp_path / "bench.db"

    def pytest_run(*args):
        return subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_cluster.py", *args],
                              cwd=suite, env=env, capture_output=True, text=True, timeout=600)

    # the entry point: the option is there, and without it nothing happens
    res = pytest_run("--help")
    assert "--ebpfprof-history=DB" in res.stdout, res.stdout
    res = pytest_run()
    assert res.returncode == 0 and "2 passed" in res.stdout, res.stdout + res.stderr
    assert not db.exists()
    for n in (1, 2):
        res = pytest_run("--ebpfprof-history", str(db), "--ebpfprof-command", str(EBPFPROF))
        assert res.returncode == 0 and "2 passed" in res.stdout, res.stdout + res.stderr
    import dask
    import distributed
    for test in ("test_sums", "test_garbage"):
        res = history(db, "list", f"test_cluster.py::{test}")
        lines = res.stdout.splitlines()
        assert res.returncode == 0 and len(lines) == 3, res.stdout + res.stderr
        for line in lines[1:]:
            assert f"dask={dask.__version__} distributed={distributed.__version__}" in line, line
    # each run holds its test's prefix: its tasks ran on the cluster while it was profiled
    con = sqlite3.connect(db)
    rows = con.execute("SELECT r.series, m.name, m.value FROM runs r JOIN metrics m ON m.run = r.id"
                       " WHERE m.kind = 'prefix' AND m.field = 'tasks' ORDER BY r.id").fetchall()
    con.close()
    seen = {(series, name) for series, name, tasks in rows if tasks > 0}
    assert {("test_cluster.py::test_sums", "crunch"), ("test_cluster.py::test_garbage", "churn")} <= seen, rows
