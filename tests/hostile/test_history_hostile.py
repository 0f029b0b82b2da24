"""Issue 44: a history database whose runs a hostile target filled (deep
stacks of distinct functions, names with terminal controls) or that anyone
wrote: `history check` and `plot` stay linear in its metrics, and no name
reaches the terminal raw."""
import sqlite3
import subprocess
import time

import pytest

from conftest import EBPFPROF

# user/history/history_store.c's schema 1, as ebpfprof writes it
SCHEMA = """
CREATE TABLE runs(id INTEGER PRIMARY KEY AUTOINCREMENT, series TEXT NOT NULL,
 at INTEGER NOT NULL, host TEXT NOT NULL, kernel TEXT NOT NULL,
 python TEXT NOT NULL, command TEXT NOT NULL, source TEXT NOT NULL,
 duration_s REAL NOT NULL, nmetrics INTEGER NOT NULL);
CREATE INDEX runs_by_series ON runs(series, id);
CREATE TABLE tags(run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
 key TEXT NOT NULL, value TEXT NOT NULL);
CREATE INDEX tags_by_run ON tags(run);
CREATE TABLE metrics(run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
 kind TEXT NOT NULL, process TEXT NOT NULL, thread TEXT NOT NULL,
 name TEXT NOT NULL, field TEXT NOT NULL, value REAL NOT NULL);
CREATE INDEX metrics_by_run ON metrics(run);
"""
EVIL = "fn\x1b]0;pwned\x07\x1b[2J\x9b31m\u202eevil"
CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e")


def make_db(path, runs):
    """runs: [(python, [(name, value)...])...], oldest first, series "s"."""
    with sqlite3.connect(path) as c:
        c.execute("PRAGMA application_id = 1700950118")
        c.execute("PRAGMA user_version = 1")
        c.executescript(SCHEMA)
        for k, (python, metrics) in enumerate(runs):
            cur = c.execute("INSERT INTO runs(series, at, host, kernel, python, command, source,"
                            " duration_s, nmetrics) VALUES ('s', ?, 'h', 'k', ?, 'c', 'x', 1, ?)",
                            (1796600000 + k, python, len(metrics)))
            c.executemany("INSERT INTO metrics VALUES (?, 'fn', 'proc', '', ?, 'self_share', ?)",
                          [(cur.lastrowid, name, value) for name, value in metrics])


def history(db, *args):
    return subprocess.run([str(EBPFPROF), "history", *args, "--history-db", str(db)],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.nobpf
def test_a_run_of_200k_metrics_is_checked_in_linear_time(tmp_path):
    """Each of a run's metrics was looked up in a list of all before it:
    120,000 took 106 s, 200,000 several minutes. By hash: under 2 s here."""
    db = tmp_path / "h.db"
    make_db(db, [("3.11", [(f"f{i}", 1e-6) for i in range(200_000)])])
    for action in (["check", "s"], ["plot", "s", "-o", str(tmp_path / "p.html")]):
        t0 = time.monotonic()
        res = history(db, *action)
        took = time.monotonic() - t0
        assert res.returncode == 0, res.stderr
        assert took < 20, f"history {action[0]} of 200,000 metrics took {took:.1f} s"


@pytest.mark.nobpf
def test_names_from_the_target_never_reach_the_terminal_raw(tmp_path):
    """A function name and a python column with ESC, OSC, C1 and a bidi
    override: check's regression line, list and show escape them."""
    db = tmp_path / "h.db"
    evil_python = "3.11\x1b[31m\x9b"
    make_db(db, [(evil_python, [(EVIL, 0.1)])] * 2 + [(evil_python, [(EVIL, 0.5)])])
    check = history(db, "check", "s", "--window", "2", "--last", "1")
    assert check.returncode == 1, check.stdout + check.stderr
    assert "evil" in check.stdout and "\\x1b" in check.stdout, check.stdout
    for res in (check, history(db, "list", "s"), history(db, "show", "1")):
        for c in CONTROLS:
            assert c not in res.stdout + res.stderr, (c, res.stdout)
