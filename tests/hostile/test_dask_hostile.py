"""The Dask package (python/ebpfprof_dask) against what a scheduler or a
worker hands back: the client trusts the cluster no more than ebpfprof
trusts its target. A worker's host name and pid become file names, its GC
log is parsed into the index, its profile is written: garbage in any of
them is reported for that process alone, and every file stays inside the
output directory under a safe name. No cluster here: a stand-in client
answers as a hostile worker would."""
import json
import math
import os
import re
import stat
import sys
import types

import pytest

from conftest import ROOT, cannot_run

pytestmark = pytest.mark.nobpf

sys.path.insert(0, str(ROOT / "python"))


@pytest.fixture(scope="module")
def dask_pkg():
    try:
        import cloudpickle  # noqa: F401
    except ImportError:
        cannot_run("python3-cloudpickle is not installed (python3-distributed in scripts/deps.sh)")
    import ebpfprof_dask
    assert os.path.realpath(ebpfprof_dask.__file__).startswith(os.path.realpath(ROOT / "python"))
    return ebpfprof_dask


def recording(duration=2.0, **info):
    """A speedscope file as ebpfprof writes it, with its "ebpfprof" object."""
    obj = {"version": 1, "duration_s": duration, "rate_hz": 99, "samples": 190, "lost": 0,
           "python": "3.11", "idle": False, "gc_timing": "uprobes", "stop_reason": "duration",
           "threads": [], "gc": []}
    obj.update(info)
    doc = {"$schema": "https://www.speedscope.app/file-format-schema.json", "shared": {"frames": []},
           "profiles": [], "ebpfprof": obj}
    return json.dumps(doc).encode()


GOOD_LOG = b"\n".join([
    b'{"type":"session","monotonic_start_s":100.0,"duration_s":2.0}',
    b'{"type":"gc","pid":1,"tid":1,"thread":"t","start_s":0.1,"duration_s":0.25,"generation":2,"collected":3}',
    b'{"type":"wait","pid":1,"tid":1,"thread":"t","start_s":0.5,"duration_s":0.5,"reason":"io"}',
]) + b"\n"


def stopped(host, pid, profile=None, gc_log=GOOD_LOG, **extra):
    out = {"host": host, "pid": pid, "returncode": 0, "stderr": "",
           "profile": recording() if profile is None else profile, "gc_log": gc_log}
    out.update(extra)
    return out


class HostileClient:
    """Answers run_on_scheduler / run as the given processes do: each is
    (what start returns, what stop returns) by address."""

    def __init__(self, scheduler, workers):
        self.scheduler = types.SimpleNamespace(address="tcp://10.0.0.1:8786")
        self._sched = scheduler
        self._workers = workers

    def ncores(self):
        return {addr: 1 for addr in self._workers}

    def run_on_scheduler(self, fn, *args):
        return self._sched[fn.__name__]

    def run(self, fn, *args, workers, on_error):
        return {addr: self._workers[addr][fn.__name__] for addr in workers}


def run_session(pkg, outdir, scheduler, workers, **kw):
    client = HostileClient(scheduler, workers)
    return pkg.ClusterProfile(client, outdir, gc_log=True, command=["ebpfprof"], **kw).start().stop()


def proc(start, stop):
    return {"start": start, "stop": stop}


def strict_json(text):
    """JSON as the standard says it: NaN and Infinity are not JSON."""
    def refuse(name):
        raise ValueError(f"not JSON: {name}")
    return json.loads(text, parse_constant=refuse)


def files_under(top):
    return sorted(os.path.relpath(os.path.join(d, f), top)
                  for d, dirs, files in os.walk(top) for f in files + [x for x in dirs])


# -- the GC log ------------------------------------------------------------

GARBAGE_LINES = [
    b"[1, 2, 3]", b'"a string"', b"42", b"null", b"true", b"[]", b"{}",
    b'[{"type": "gc", "duration_s": 5}]',
    b"\xff\xfe\x00garbage\x1b[31m",
    b"{not json",
    b"[" * 100000 + b"]" * 100000,                    # deeper than json.loads recurses
    b'{"type": "gc", "duration_s": "0.5", "generation": 0}',
    b'{"type": "gc", "duration_s": NaN, "generation": 0}',
    b'{"type": "gc", "duration_s": Infinity, "generation": 0}',
    b'{"type": "gc", "duration_s": -1.0, "generation": 0}',
    b'{"type": "gc", "duration_s": 1e308, "generation": 0}',
    b'{"type": "gc", "duration_s": true, "generation": 0}',
    b'{"type": "gc", "duration_s": 0.1, "generation": [1]}',
    b'{"type": "gc", "duration_s": 0.1, "generation": "0/../x"}',
    b'{"type": "gc", "duration_s": 0.1, "generation": 99999999999999999999999}',
    b'{"type": "gc", "duration_s": [0.1], "generation": 0}',
    b'{"type": "wait", "duration_s": 0.1, "reason": "\\u001b[31mred"}',
    b'{"type": "wait", "duration_s": 0.1, "reason": ["io"]}',
    b'{"type": "wait", "duration_s": 0.1, "reason": "' + b"x" * 5000 + b'"}',
    b'{"type": "wait", "duration_s": 1e400, "reason": "io"}',
    b'{"type": "session", "duration_s": "forever", "monotonic_start_s": {}}',
    b'{"type": {"nested": 1}}',
    b'{"type": "session", "duration_s": -3, "monotonic_start_s": NaN}',
]


def test_gc_log_lines_that_are_not_records_are_counted_not_fatal(dask_pkg):
    data = b"\n".join(GARBAGE_LINES[:10] + [GOOD_LOG] + GARBAGE_LINES[10:])
    s = dask_pkg.summarize_gc_log(data)
    # exactly the three good records count; every other line is a bad line
    assert s["recorded_s"] == 2.0 and s["monotonic_start_s"] == 100.0
    assert s["gc_count"] == 1 and s["gc_total_s"] == 0.25 and s["gc_max_s"] == 0.25
    assert s["gc_by_generation"] == {"2": {"count": 1, "total_s": 0.25}}
    assert s["waits_s"] == {"io": 0.5}
    assert s["gc_log_bad_lines"] == len(GARBAGE_LINES)
    for value in (s["recorded_s"], s["gc_total_s"], s["gc_max_s"], *s["waits_s"].values()):
        assert math.isfinite(value)


def test_wait_reasons_are_the_states_the_recording_names(dask_pkg):
    """The package keeps no list of states: a recording of format 2 names
    them ("states", the binary's table), and a wait's reason outside them is
    a bad line; a format-1 recording names none, and any short word is taken
    (a control character or a long string never is)."""
    log = b"\n".join([b'{"type": "wait", "duration_s": 0.5, "reason": "io"}',
                      b'{"type": "wait", "duration_s": 0.25, "reason": "spin-wait"}',
                      b'{"type": "wait", "duration_s": 0.25, "reason": "\\u001b[31m"}'])
    v2 = {"ebpfprof": {"version": 2, "states": ["on-cpu", "io", "other"]}}
    s = dask_pkg.summarize_gc_log(log, dask_pkg.untrusted.state_names(v2))
    assert s["waits_s"] == {"io": 0.5} and s["gc_log_bad_lines"] == 2
    s = dask_pkg.summarize_gc_log(log, dask_pkg.untrusted.state_names({"ebpfprof": {"version": 1}}))
    assert s["waits_s"] == {"io": 0.5, "spin-wait": 0.25} and s["gc_log_bad_lines"] == 1
    for bad in (["io", "\x1b"], "io", [], ["x"] * 100, [1]):
        assert dask_pkg.untrusted.state_names({"ebpfprof": {"states": bad}}) is None, bad


@pytest.mark.parametrize("data", [b"[1]\n", b"42\n\"x\"\nnull\n", b"[" * 50000, b"\xff" * 1000, None, b""],
                         ids=["array", "scalars", "deep", "binary", "none", "empty"])
def test_gc_log_of_nothing_but_garbage(dask_pkg, data):
    s = dask_pkg.summarize_gc_log(data)
    assert (s["gc_count"], s["gc_total_s"], s["waits_s"], s["recorded_s"]) == (0, 0.0, {}, 0.0)


def test_a_garbage_gc_log_costs_its_process_nothing_else(dask_pkg, tmp_path):
    """A worker whose GC log is garbage still gets its profile and its index
    row, and the index stays JSON (no NaN) and one line per process."""
    garbage = b"\n".join(GARBAGE_LINES)
    out = tmp_path / "out"
    res = run_session(dask_pkg, out,
                      proc({"host": "s", "pid": 10}, stopped("s", 10)),
                      {"tcp://w1": proc({"host": "w", "pid": 11}, stopped("w", 11, gc_log=garbage)),
                       "tcp://w2": proc({"host": "w", "pid": 12}, stopped("w", 12, gc_log=b"[1,2]\n"))})
    assert [r.get("error") for r in res] == [None, None, None], res
    index = strict_json((out / "index.json").read_text())
    assert [p["gc_count"] for p in index["processes"]] == [1, 0, 0]
    assert index["processes"][1]["gc_log_bad_lines"] == len(GARBAGE_LINES)
    assert index["processes"][2]["gc_log_bad_lines"] == 1
    table = (out / "index.txt").read_text()
    assert len(table.splitlines()) == 1 + 3 + 1, table
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f]", table)


# -- names a worker supplies -------------------------------------------------

HOSTILE_HOSTS = ["../../etc/x", "a/b", "/abs/path", "x\x00y", "h" * 5000, "..", ".", "",
                 "\x1b[31mred\x1b[0m", "tab\there", "new\nline", "ünïcødé", "-rf", "a b", None, 7, ["x"]]
HOSTILE_PIDS = ["../1", "a/b", "1\x002", -5, 0, 2 ** 40, True, 1.5, None, "12", [3], 10 ** 400]

SAFE_NAME = re.compile(r"(scheduler|worker)-[A-Za-z0-9._-]{1,64}-(\d{1,10}|unknown)(-\d+)?"
                       r"\.(speedscope\.json|gc\.jsonl)")


def test_worker_host_and_pid_make_safe_file_names_inside_the_output(dask_pkg, tmp_path):
    workers = {}
    n = 0
    for host in HOSTILE_HOSTS:
        for pid in (HOSTILE_PIDS if host == "../../etc/x" else [4242]):
            n += 1
            workers[f"tcp://w{n}"] = proc({"host": host, "pid": pid}, stopped(host, pid))
    # two workers claiming the scheduler's own host and pid: no overwriting
    workers["tcp://dup1"] = proc({"host": "sched", "pid": 10}, stopped("sched", 10))
    workers["tcp://dup2"] = proc({"host": "sched", "pid": 10}, stopped("sched", 10))
    out = tmp_path / "a" / "b" / "out"
    res = run_session(dask_pkg, out, proc({"host": "sched", "pid": 10}, stopped("sched", 10)), workers)

    assert len(res) == 1 + len(workers)
    assert all("error" not in r for r in res), [r for r in res if "error" in r]
    # everything is inside out/, nothing beside or above it
    assert files_under(tmp_path) == ["a", os.path.join("a", "b"), os.path.join("a", "b", "out")] + \
        [os.path.join("a", "b", "out", f) for f in files_under(out)]
    names = [f for f in os.listdir(out) if f not in ("index.json", "index.txt")]
    assert len(names) == 2 * len(res), "one profile and one GC log per process, none overwritten"
    for name in names:
        assert SAFE_NAME.fullmatch(name), name
        assert stat.S_ISREG(os.lstat(out / name).st_mode)
    # the index names each file, and what it says a worker said is printable
    index = strict_json((out / "index.json").read_text())
    assert sorted(n for p in index["processes"] for n in (p["profile"], p["gc_log"])) == sorted(names)
    for p in index["processes"]:
        assert p["pid"] is None or (type(p["pid"]) is int and 0 < p["pid"] < 2 ** 31), p["pid"]
        assert p["host"] is None or (isinstance(p["host"], str) and len(p["host"]) <= 256), p["host"]
        assert p["host"] is None or not re.search(r"[\x00-\x1f\x7f]", p["host"]), p["host"]
    table = (out / "index.txt").read_text()
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f]", table)
    assert len(table.splitlines()) == 1 + len(res) + 1


def test_answers_that_are_not_descriptions_are_errors_of_their_process(dask_pkg, tmp_path):
    bad = {
        "tcp://list": proc({"host": "w", "pid": 20}, ["not", "a", "dict"]),
        "tcp://none": proc({"host": "w", "pid": 21}, None),
        "tcp://str-profile": proc({"host": "w", "pid": 22}, stopped("w", 22, profile="text, not bytes")),
        "tcp://not-json": proc({"host": "w", "pid": 23}, stopped("w", 23, profile=b"\x89PNG garbage")),
        "tcp://array": proc({"host": "w", "pid": 24}, stopped("w", 24, profile=b"[1, 2]")),
        "tcp://gc-not-bytes": proc({"host": "w", "pid": 25}, stopped("w", 25, gc_log={"a": 1})),
        "tcp://err-garbage": proc({"host": "w", "pid": 26}, {"host": "w", "pid": 26,
                                                            "error": "\x1b[2J" + "e" * 100000}),
        "tcp://start-list": proc([1, 2], stopped("w", 27)),
        "tcp://good": proc({"host": "w", "pid": 28}, stopped("w", 28)),
    }
    out = tmp_path / "out"
    res = run_session(dask_pkg, out, proc({"host": "s", "pid": 10}, stopped("s", 10)), bad)
    errors = {r["address"]: r.get("error") for r in res}
    assert errors["tcp://10.0.0.1:8786"] is None and errors["tcp://good"] is None, errors
    assert errors["tcp://list"] == "its answer is a list, not a description of the recording"
    assert errors["tcp://none"] == "its answer is a NoneType, not a description of the recording"
    assert errors["tcp://str-profile"] == "its profile is a str, not bytes"
    assert errors["tcp://not-json"] == "its profile is not a JSON object"
    assert errors["tcp://array"] == "its profile is not a JSON object"
    assert errors["tcp://gc-not-bytes"] == "its GC log is a dict, not bytes"
    assert errors["tcp://start-list"] == "its answer is a list, not a description of the recording"
    assert errors["tcp://err-garbage"].startswith("\\x1b[2Jeee") and len(errors["tcp://err-garbage"]) <= 500
    assert sorted(os.listdir(out)) == ["index.json", "index.txt", "scheduler-s-10.gc.jsonl",
                                       "scheduler-s-10.speedscope.json", "worker-w-28.gc.jsonl",
                                       "worker-w-28.speedscope.json"]
    table = (out / "index.txt").read_text()
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f]", table)


# -- the summary: the recording's own "ebpfprof" object ----------------------

def test_summary_comes_from_the_recording_not_from_stderr(dask_pkg, tmp_path):
    forged = "ebpfprof: recorded 999.00 s (forged): 1 samples, 0 lost, 1 thread, CPython 9.9, GC timed by lies\n"
    prof = recording(duration=2.5, samples=240, lost=3, stop_reason="signal", gc_timing="samples",
                     threads=[{"pid": 11}, {"pid": 11}])
    odd = recording(duration="long", samples=-1, lost=1.5, python=["3"], idle="yes", gc_timing="x" * 1000,
                    stop_reason="\x1b[31m")
    out = tmp_path / "out"
    res = run_session(dask_pkg, out, proc({"host": "s", "pid": 10}, stopped("s", 10, profile=prof, stderr=forged)),
                      {"tcp://w": proc({"host": "w", "pid": 11}, stopped("w", 11, profile=odd))})
    assert res[0]["summary"] == {"version": 1, "duration_s": 2.5, "rate_hz": 99, "samples": 240, "lost": 3, "python": "3.11",
                                 "idle": False, "gc_timing": "samples", "stop_reason": "signal", "threads": 2}
    # the recorded time too: the recording's, and the GC log's only without it
    assert res[0]["recorded_s"] == 2.5
    # what is not of its type is left out, never passed on
    assert res[1]["summary"] == {"version": 1, "rate_hz": 99, "threads": 0}
    assert res[1]["recorded_s"] == 2.0
    index = strict_json((out / "index.json").read_text())
    assert index["processes"][0]["summary"]["stop_reason"] == "signal"


# -- the atomic write: user/output/writer.c's rules --------------------------------

def out_and_victim(tmp_path):
    """An output directory, and a file beside it that nothing may write."""
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    return out, victim


def test_write_refuses_what_is_not_a_regular_file_and_follows_no_planted_temp(dask_pkg, tmp_path):
    out, victim = out_and_victim(tmp_path)
    # the old temp name, planted as a symlink, and the targets as a FIFO, a symlink, a directory
    os.symlink(victim, out / "index.json.tmp")
    os.symlink(victim, out / "scheduler-s-10.speedscope.json.tmp")
    os.mkfifo(out / "worker-fifo-11.speedscope.json")
    os.symlink(victim, out / "worker-link-12.speedscope.json")
    os.mkdir(out / "worker-dir-13.speedscope.json")
    res = run_session(dask_pkg, out, proc({"host": "s", "pid": 10}, stopped("s", 10)),
                      {"tcp://f": proc({"host": "fifo", "pid": 11}, stopped("fifo", 11)),
                       "tcp://l": proc({"host": "link", "pid": 12}, stopped("link", 12)),
                       "tcp://d": proc({"host": "dir", "pid": 13}, stopped("dir", 13))})
    assert victim.read_text() == "untouched"
    assert stat.S_ISFIFO(os.lstat(out / "worker-fifo-11.speedscope.json").st_mode)
    assert os.path.islink(out / "worker-link-12.speedscope.json")
    assert os.path.isdir(out / "worker-dir-13.speedscope.json")
    assert "error" not in res[0], res[0]
    for r in res[1:]:
        target = out / f"worker-{r['host']}-{r['pid']}.speedscope.json"
        assert r["error"] == f"cannot write {target}: it exists and is not a regular file " \
            "(devices, FIFOs, sockets and symlinks are never replaced)", r
    index = json.loads((out / "index.json").read_text())
    assert index["processes"][0]["profile"] == "scheduler-s-10.speedscope.json"
    # no temporary file left behind: only what was planted and what was written
    left = sorted(f for f in os.listdir(out) if f.startswith("."))
    assert left == [], left


def test_write_is_a_hidden_temp_beside_it_synced_then_renamed(dask_pkg, tmp_path, monkeypatch):
    from ebpfprof_dask import atomic

    calls = []
    real_fsync, real_rename = os.fsync, os.rename
    monkeypatch.setattr(atomic.os, "fsync", lambda fd: (calls.append(("fsync", fd)), real_fsync(fd))[1])
    monkeypatch.setattr(atomic.os, "rename", lambda a, b: (calls.append(("rename", a, b)), real_rename(a, b))[1])
    # a new name is taken without replacing (RENAME_NOREPLACE): a rename too
    real_noreplace = atomic._rename_noreplace
    monkeypatch.setattr(atomic, "_rename_noreplace",
                        lambda a, b: (calls.append(("rename", a, b)), real_noreplace(a, b))[1])
    old = os.umask(0o027)
    try:
        atomic.write_atomic(str(tmp_path / "f.json"), b"data")
    finally:
        os.umask(old)
    assert (tmp_path / "f.json").read_bytes() == b"data"
    assert stat.S_IMODE(os.stat(tmp_path / "f.json").st_mode) == 0o640
    renames = [c for c in calls if c[0] == "rename"]
    assert len(renames) == 1 and renames[0][2] == str(tmp_path / "f.json")
    assert os.path.dirname(renames[0][1]) == str(tmp_path)
    assert re.fullmatch(r"\.f\.json\.\w{6,}", os.path.basename(renames[0][1])), renames
    assert calls[0][0] == "fsync" and calls.index(renames[0]) > 0, "the data is synced before the rename"
    assert os.listdir(tmp_path) == ["f.json"]
    # a write that fails leaves the old file and no temporary
    monkeypatch.setattr(atomic.os, "rename", lambda a, b: (_ for _ in ()).throw(OSError(28, "No space left")))
    with pytest.raises(OSError):
        atomic.write_atomic(str(tmp_path / "f.json"), b"new")
    assert (tmp_path / "f.json").read_bytes() == b"data"
    assert os.listdir(tmp_path) == ["f.json"]


def test_an_index_that_cannot_be_written_is_one_error(dask_pkg, tmp_path):
    out, victim = out_and_victim(tmp_path)
    os.symlink(victim, out / "index.json")
    with pytest.raises(OSError) as e:
        run_session(dask_pkg, out, proc({"host": "s", "pid": 10}, stopped("s", 10)), {})
    assert str(e.value) == f"cannot write {out}/index.json: it exists and is not a regular file " \
        "(devices, FIFOs, sockets and symlinks are never replaced)"
    assert victim.read_text() == "untouched"


# -- ebpfprof's rules for owners and escapes (issue 28 item 9) -------------

def test_a_replaced_file_keeps_its_owner_and_mode_under_sudo(dask_pkg, tmp_path, monkeypatch):
    """As ebpfprof's atomic_file_write: under sudo only a file created is the
    sudo user's; a file replaced keeps its owner, group and permissions (its
    set-id bits dropped). Main gave a replaced root-owned file to SUDO_UID."""
    from ebpfprof_dask import atomic

    if os.geteuid() != 0:
        cannot_run("needs root (files of other owners, chown)")
    monkeypatch.setenv("SUDO_UID", "65534")
    monkeypatch.setenv("SUDO_GID", "65534")
    roots, users, new = tmp_path / "root.json", tmp_path / "user.json", tmp_path / "new.json"
    roots.write_bytes(b"old")
    os.chmod(roots, 0o640)
    users.write_bytes(b"old")
    os.chown(users, 1234, 1235)
    os.chmod(users, 0o4705)
    old = os.umask(0o022)
    try:
        for path in (roots, users, new):
            atomic.write_atomic(str(path), b"profile")
    finally:
        os.umask(old)
    got = {p.name: (os.stat(p).st_uid, os.stat(p).st_gid, stat.S_IMODE(os.stat(p).st_mode))
           for p in (roots, users, new)}
    assert got == {"root.json": (0, 0, 0o640), "user.json": (1234, 1235, 0o705),
                   "new.json": (65534, 65534, 0o644)}, got
    assert all(p.read_bytes() == b"profile" for p in (roots, users, new))
    assert sorted(os.listdir(tmp_path)) == ["new.json", "root.json", "user.json"]


def test_a_file_that_appears_at_a_new_name_is_not_handed_over(dask_pkg, tmp_path, monkeypatch):
    """The name checked free, a root-owned file appears there before the
    rename: it is replaced keeping root as owner, never given to SUDO_UID."""
    from ebpfprof_dask import atomic

    if os.geteuid() != 0:
        cannot_run("needs root (chown to the sudo user)")
    monkeypatch.setenv("SUDO_UID", "65534")
    monkeypatch.setenv("SUDO_GID", "65534")
    path = tmp_path / "race.json"
    real_fsync, planted = os.fsync, []

    def fsync_then_plant(fd):
        real_fsync(fd)
        if not planted:
            planted.append(1)
            path.write_bytes(b"root's")
            os.chmod(path, 0o600)
    monkeypatch.setattr(atomic.os, "fsync", fsync_then_plant)
    atomic.write_atomic(str(path), b"profile")
    st = os.stat(path)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, 0, 0o600)
    assert path.read_bytes() == b"profile"


BIDI = ["\u061c", "\u200e", "\u200f", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e",
        "\u2066", "\u2067", "\u2068", "\u2069"]


def test_index_txt_escapes_bidi_controls_as_ebpfprof_does(dask_pkg, tmp_path):
    """A worker's host name holding bidi controls (an override reorders the
    rest of its line: "exe.txt" shows as "txt.exe") or a backslash is
    written escaped, one \\xHH per byte, as ebpfprof's printable(); main
    wrote them as they were."""
    hosts = {f"tcp://w{i}": f"w{i}{c}gnp.exe\\x41" for i, c in enumerate(BIDI)}
    workers = {a: proc({"host": h, "pid": 100 + i}, stopped(h, 100 + i))
               for i, (a, h) in enumerate(hosts.items())}
    out = tmp_path / "out"
    res = run_session(dask_pkg, out, proc({"host": "s", "pid": 10}, stopped("s", 10)), workers)
    assert all("error" not in r for r in res), res
    table = (out / "index.txt").read_text()
    assert not any(c in table for c in BIDI), [l for l in table.splitlines() if any(c in l for c in BIDI)]
    for i, c in enumerate(BIDI):
        escaped = "".join(f"\\x{b:02x}" for b in c.encode())
        assert f"w{i}{escaped}gnp.exe\\x5cx41:{100 + i} " in table, (escaped, table)


def labelled(values, **info):
    """A format-4 recording whose dask_prefix label holds values."""
    fields = {"version": 4, "states": ["on-cpu", "gc", "gil-wait", "io", "sleep"],
              "start_unix_s": 1.8e9, "label_bin_s": 0.1,
              "labels": {"dask_key": {}, "dask_prefix": values}}
    fields.update(info)
    return json.loads(recording(**fields))


def test_cluster_report_columns_come_from_the_recordings_state_groups(dask_pkg, tmp_path):
    """The report's columns are the recording's "state_groups" (the binary's
    one list, include/ep_states.h): a state the package never heard of has a
    column through its group; a recording without groups (or with groups
    that are not valid) is read with the groups of before; a state no group
    names counts under "other", never in no column."""
    from ebpfprof_dask.core import write_cluster_report
    from ebpfprof_dask.report import OLD_GROUPS, read_prefixes
    groups = [{"key": key, "title": title, "on_cpu": on, "states": list(states)}
              for key, title, on, states in OLD_GROUPS]
    groups[-1]["states"].append("futex-wait")
    groups.append({"key": "new_wait", "title": "new <wait>", "on_cpu": False, "states": ["new-wait"]})
    states = {"on-cpu": 1.0, "futex-wait": 2.0, "new-wait": 3.0, "io": 0.5}
    new = read_prefixes(labelled({"p": {"states_s": states}}, state_groups=groups,
                                 states=["on-cpu", "futex-wait", "new-wait", "io"]))
    report = write_cluster_report(str(tmp_path), [("w1:1", 2, new)])
    row = report["prefixes"][0]
    assert [c["key"] for c in report["columns"]] == [f"{k}_s" for k, _, _, _ in OLD_GROUPS] + ["new_wait_s"]
    assert row["other_s"] == 2.0 and row["new_wait_s"] == 3.0 and row["io_sleep_s"] == 0.5
    assert sum(row[c["key"]] for c in report["columns"]) == row["time_s"] == 6.5
    assert row["on_cpu_share"] == pytest.approx(100 / 6.5)
    assert "new &lt;wait&gt;" in (tmp_path / "report.html").read_text()
    assert "new <wait>" in (tmp_path / "report.txt").read_text()
    # before the groups: the old columns, with the old states in them
    old = read_prefixes(labelled({"p": {"states_s": {"gil-wait": 1.0, "lock-wait": 2.0}}},
                                 states=["gil-wait", "lock-wait"]))
    assert old["groups"] == list(OLD_GROUPS)
    row = write_cluster_report(str(tmp_path), [("w1:1", 2, old)])["prefixes"][0]
    assert row["gil_wait_s"] == 1.0 and row["other_s"] == 2.0
    # groups that are not groups: a key a row has, a state in two, not a list
    for bad in ([{"key": "time", "title": "t", "on_cpu": False, "states": ["io"]}],
                [{"key": "a", "title": "a", "on_cpu": False, "states": ["io"]},
                 {"key": "b", "title": "b", "on_cpu": False, "states": ["io"]}],
                [{"key": "a", "title": "a", "on_cpu": "yes", "states": ["io"]}],
                [{"key": "A b", "title": "a", "on_cpu": False, "states": ["io"]}], "groups", []):
        assert read_prefixes(labelled({}, state_groups=bad))["groups"] == list(OLD_GROUPS), bad
    # a state its recording groups nowhere: under "other", counted once
    lone = read_prefixes(labelled({"p": {"states_s": {"on-cpu": 1.0, "odd": 4.0}}},
                                  states=["on-cpu", "odd"], state_groups=groups[:1]))
    row = write_cluster_report(str(tmp_path), [("w1:1", 2, lone)])["prefixes"][0]
    assert row["on_cpu_s"] == 1.0 and row["other_s"] == 4.0 and row["time_s"] == 5.0


def test_cluster_report_takes_only_checked_figures_and_bounded_names(dask_pkg, tmp_path):
    """The cluster report reads what a worker's recording says of its task
    prefixes: a figure that is not a finite second, a state the recording
    does not name, a series too long, a function that is not one are left
    out; names are escaped as ebpfprof escapes them, and HTML-escaped in the
    picture and the page; a worker with a thousand prefixes gives 64 rows."""
    from ebpfprof_dask.core import write_cluster_report
    from ebpfprof_dask.report import BINS_MAX, PREFIXES_MAX, read_prefixes
    evil = "<script>alert(1)</script>\x1b[31m\u202e"
    values = {
        "good": {"states_s": {"on-cpu": 2.0, "io": 1.0}, "sources": 7,
                 "series": {"on-cpu": [0.1] * 20, "io": [0.05] * 20},
                 "functions": [{"name": "crunch", "file": "w.py", "self_s": 1.5, "total_s": 2.0}]},
        evil: {"states_s": {"on-cpu": 1.0, "no-such-state": 5.0, "gc": float("nan"), "sleep": -1},
               "series": {"on-cpu": [0.1] * (BINS_MAX + 1), "gc": ["x"], "sleep": [1e300]},
               "functions": [{"name": evil, "file": 3, "self_s": 1.0, "total_s": 1.0}, "no", {"name": 5}],
               "sources": -3},
        "nonsense": ["not", "a", "value"],
    }
    rec = read_prefixes(labelled(values))
    good, bad = rec["prefixes"]["good"], rec["prefixes"][dask_pkg.untrusted.printable(evil, 200)]
    assert good["states"] == {"on-cpu": 2.0, "io": 1.0} and good["tasks"] == 7
    assert good["functions"] == [("crunch", "w.py", 1.5, 2.0)]
    assert bad["states"] == {"on-cpu": 1.0} and bad["tasks"] == 0
    assert bad["series"] == {} and bad["functions"] == []
    assert "\x1b" not in "".join(rec["prefixes"]) and "\u202e" not in "".join(rec["prefixes"])
    assert rec["prefixes"]["nonsense"]["states"] == {}
    assert read_prefixes({"ebpfprof": {"labels": {"dask_prefix": "x"}}}) is None
    assert read_prefixes({"ebpfprof": {"version": 1}}) is None
    assert read_prefixes(labelled({}, start_unix_s=float("inf")))["start_s"] is None

    many = {f"p{i}": {"states_s": {"on-cpu": 1.0 + i}} for i in range(1000)}
    crowd = read_prefixes(labelled(many))
    assert len(crowd["prefixes"]) == PREFIXES_MAX
    assert crowd["prefixes"]["[other prefixes]"]["states"]["on-cpu"] == pytest.approx(
        sum(1.0 + i for i in range(1000 - PREFIXES_MAX + 1)))

    import xml.etree.ElementTree as ET
    write_cluster_report(str(tmp_path), [("w1:1", 2, rec)])
    for name in ("balance.svg", "report.html"):
        text = (tmp_path / name).read_text()
        assert "<script>" not in text and "&lt;script&gt;" in text, name
        assert "\x1b" not in text
    ET.parse(tmp_path / "balance.svg")
    report = write_cluster_report(str(tmp_path), [("w1:1", 2, rec), ("w2:2", None, crowd)])
    assert len(report["prefixes"]) == PREFIXES_MAX      # across the cluster too
    assert sum(r["time_s"] for r in report["prefixes"]) == pytest.approx(
        3.0 + 1.0 + sum(1.0 + i for i in range(1000)))
    ET.parse(tmp_path / "balance.svg")
    # no worker with prefixes: no report, nothing written
    assert write_cluster_report(str(tmp_path / "none"), [("w", 2, read_prefixes(labelled({})))]) is None
    assert not (tmp_path / "none").exists()
