"""Issue 10: `ebpfprof dump` tells every thread's state, wait details and
Python stack of a live process, without stopping it."""
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from conftest import EBPFPROF, WORKLOADS, cannot_run, require_interpreter, run_ebpfprof

SOURCE = (WORKLOADS / "dump_mix.py").read_text().splitlines()


def marked(name):
    """Lines of dump_mix.py marked `# at:name`."""
    return {i + 1 for i, l in enumerate(SOURCE) if l.rstrip().endswith(f"# at:{name}")}


def start_mix(workloads, interp, tmp_path):
    """dump_mix.py with every thread in place; returns (workload, truth, progress path)."""
    inside = "/tmp" if interp.chroot else str(tmp_path)
    host = Path(interp.chroot) / "tmp" if interp.chroot else tmp_path
    for f in ("truth.json", "progress"):
        (host / f).unlink(missing_ok=True)
    w = workloads(interp, "dump_mix.py", "--progress", f"{inside}/progress", seconds=300,
                  truth=str(tmp_path / "truth.json") if not interp.chroot else "truth.json")
    truth_path = Path(w.truth_path)
    deadline = time.monotonic() + 90  # a loaded machine starts Python slowly
    while not truth_path.exists() or not (host / "progress").exists():
        assert w.proc.poll() is None, w.proc.stderr.read()
        assert time.monotonic() < deadline, "dump_mix.py never got its threads in place"
        time.sleep(0.05)
    return w, json.loads(truth_path.read_text()), host / "progress"


def progress(path):
    for _ in range(100):  # replaced atomically, but may be caught between writes
        try:
            return int(path.read_text())
        except (FileNotFoundError, ValueError):
            time.sleep(0.01)
    raise AssertionError("no progress counter")


def dump_json(pid, progress_path):
    """One dump; the target's own counter must advance across it."""
    before = progress(progress_path)
    ran_from = time.monotonic()
    res = run_ebpfprof("dump", "--pid", pid, "--json", check=True)
    doc = json.loads(res.stdout)
    doc["_ran"] = (ran_from, time.monotonic())  # when the dump looked, for "for how long"
    deadline = time.monotonic() + 10  # the writer competes for the GIL on a loaded machine
    while (after := progress(progress_path)) <= before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert after > before, f"the target's counter did not advance ({before} -> {after})"
    return doc


def by_name(doc):
    return {t["name"]: t for t in doc["threads"]}


def top_frame(thread, function, line_marker):
    f = thread["stack"][0]
    assert f["function"].endswith(function), thread
    assert f["file"].endswith("dump_mix.py"), thread
    assert f["line"] in marked(line_marker), (f, sorted(marked(line_marker)))


@pytest.mark.parametrize("interp_name", ["debian-3.11", "pyenv-3.8", "pyenv-3.12", "pyenv-3.13",
                                         "chroot-3.13", "chroot-3.14", "chroot-3.15", "chroot-3.15-dbg"])
def test_dump_states_stacks_and_details(interp_name, workloads, tmp_path):
    interp = require_interpreter(interp_name)
    w, truth, prog = start_mix(workloads, interp, tmp_path)
    tids = truth["tids"]
    # blocked a second at least: a "for how long" counted from later than the block fails
    time.sleep(max(0.0, truth["blocked_since"] + 1.0 - time.monotonic()))

    gil_pairs = 0
    for attempt in range(30):
        doc = dump_json(w.pid, prog)
        assert doc["pid"] == w.pid
        assert doc["python"].startswith("%d.%d." % interp.version)
        threads = by_name(doc)
        for name, tid in tids.items():
            assert name in threads, (name, list(threads))
            assert threads[name]["tid"] == tid and threads[name]["python"], threads[name]

        # blocked on a lock since before ebpfprof ever looked at the process
        early = threads["blocked-early"]
        assert early["state"] == "lock_wait", early
        top_frame(early, "blocked_forever", "lock")
        # it last ran between its own note of the time and the futex wait: at
        # most 0.25 s after the note (the GIL, a busy CPU), never before it
        ran_from, ran_to = doc["_ran"]
        blocked_for = (ran_from - truth["blocked_since"] - 0.25, ran_to - truth["blocked_since"] + 0.01)
        assert blocked_for[0] <= early["state_seconds"] <= blocked_for[1], (blocked_for, early)
        assert early["futex"].startswith("0x")

        q = threads["queue-waiter"]
        assert q["state"] == "lock_wait", q
        assert q["stack"][0]["function"].endswith("wait") and q["stack"][0]["file"].endswith("threading.py"), q
        assert q["stack"][1]["function"].endswith("get") and q["stack"][1]["file"].endswith("queue.py"), q
        assert q["stack"][2]["function"] == "queue_waiter" and q["stack"][2]["line"] in marked("queue_get"), q

        r = threads["reader"]
        assert r["state"] == "io", r
        top_frame(r, "reader", "recv")
        assert r["fd"]["kind"] == "tcp", r
        assert (r["fd"]["local"], r["fd"]["peer"]) == (truth["reader_local"], truth["reader_peer"]), r

        s = threads["sleeper"]
        assert s["state"] == "sleep", s
        top_frame(s, "sleeper", "sleep")

        for name, fn in (("spin-a", "spin_a"), ("spin-b", "spin_b")):
            t = threads[name]
            assert t["state"] in ("running", "gil_wait", "preempted"), (t["state"], t["syscall"])
            top_frame(t, fn, fn)
            # the thread holding the GIL is named, and it is the other spinner
            if t["state"] == "gil_wait" and doc["gil"]["holder"] in (tids["spin-a"], tids["spin-b"]):
                holder = next(x for x in doc["threads"] if x["tid"] == doc["gil"]["holder"])
                assert holder["holds_gil"] and holder["name"] in ("spin-a", "spin-b"), holder
                assert t["gil_holder"] == holder["tid"] != t["tid"], t
                assert doc["gil"]["collecting"] is False
                gil_pairs += 1
        if gil_pairs >= 2:
            break
    assert gil_pairs, "never saw a spinner waiting for the GIL held by the other"


def test_dump_text_is_what_py_spy_prints_plus_states(workloads, tmp_path):
    interp = require_interpreter("debian-3.11")
    w, truth, prog = start_mix(workloads, interp, tmp_path)
    res = run_ebpfprof("dump", "--pid", w.pid, check=True)
    out = res.stdout
    assert out.startswith(f"Process {w.pid}: ")
    tid = truth["tids"]["reader"]
    head = re.search(rf'^Thread {tid} "reader": io for [0-9.]+ s, on fd \d+: tcp (\S+) -> (\S+)$', out, re.M)
    assert head, out
    assert head.groups() == (truth["reader_local"], truth["reader_peer"])
    line = min(marked("recv"))
    assert re.search(rf'^Thread {tid} .*\n    reader \(\S*dump_mix.py:{line}\)\n    Thread.run \(threading.py:\d+\)$', out, re.M), out
    # standard library files are named from the library root, as py-spy does
    assert "(threading.py:" in out and "/threading.py" not in out


def test_dump_match_finds_the_process(workloads, tmp_path):
    interp = require_interpreter("debian-3.11")
    w, truth, prog = start_mix(workloads, interp, tmp_path)
    doc = json.loads(run_ebpfprof("dump", "--match", str(tmp_path / "progress"), "--json", check=True).stdout)
    assert doc["pid"] == w.pid


@pytest.mark.parametrize("args,code,text", [
    ([], 2, "give one of --pid PID or --match PATTERN"),
    (["--pid", "1", "--match", "x"], 2, "give one of --pid PID or --match PATTERN"),
    (["--match", "no-such-process-has-this-in-its-command-line-" * 2], 1, "no process's command line matches"),
    (["--pid", "999999999"], 1, "no such process"),
])
def test_dump_bad_input_is_one_clear_line(args, code, text):
    res = run_ebpfprof("dump", *args)
    assert res.returncode == code, res
    assert text in res.stderr and res.stdout == "", res


def test_dump_of_a_process_without_python_says_so():
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        res = run_ebpfprof("dump", "--pid", sleeper.pid)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert res.returncode == 1 and res.stdout == ""
    assert res.stderr.startswith("ebpfprof dump: ") and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "Python" in res.stderr or "python" in res.stderr, res.stderr


@pytest.mark.nobpf
def test_dump_unprivileged_says_what_it_needs(workloads):
    if os.geteuid() != 0:
        cannot_run("needs root to start the test as another user")
    w = workloads(require_interpreter("debian-3.11"), "two_hot.py", seconds=30)
    res = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                          str(EBPFPROF), "dump", "--pid", str(w.pid)], capture_output=True, text=True, timeout=30)
    assert res.returncode == 1 and res.stdout == ""
    assert res.stderr == (f"ebpfprof dump: cannot read process {w.pid}'s files and memory: Permission denied "
                          "(this needs CAP_SYS_PTRACE: run it as root, e.g. with sudo)\n"), res.stderr


def test_dump_target_in_its_own_pid_namespace(tmp_path):
    """A container's process, dumped from the host: its threads know their ids
    in their own namespace, /proc on the host by host ids."""
    require_interpreter("debian-3.11")
    truth = tmp_path / "truth.json"
    unshare = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "/usr/bin/python3.11",
                                str(WORKLOADS / "dump_mix.py"), "--seconds", "300", "--truth", str(truth)],
                               stderr=subprocess.PIPE, text=True)
    try:
        assert unshare.stderr.readline().strip() == "pid=1"
        host_pid = int(Path(f"/proc/{unshare.pid}/task/{unshare.pid}/children").read_text().split()[0])
        deadline = time.monotonic() + 90
        while not truth.exists():
            assert time.monotonic() < deadline and unshare.poll() is None, "dump_mix.py did not start"
            time.sleep(0.05)
        doc = json.loads(run_ebpfprof("dump", "--pid", host_pid, "--json", check=True).stdout)
        threads = by_name(doc)
        assert threads["MainThread"]["tid"] == host_pid
        top_frame(threads["sleeper"], "sleeper", "sleep")
        top_frame(threads["reader"], "reader", "recv")
        assert threads["blocked-early"]["state"] == "lock_wait"
        top_frame(threads["blocked-early"], "blocked_forever", "lock")
    finally:
        unshare.kill()
        unshare.wait()


def test_dump_event_loop_names_what_its_epoll_watches(workloads, tmp_path):
    w = workloads(require_interpreter("debian-3.11"), "dump_asyncio.py", seconds=300,
                  truth=str(tmp_path / "truth.json"))
    path = Path(w.truth_path)
    deadline = time.monotonic() + 90
    while not path.exists():
        assert time.monotonic() < deadline and w.proc.poll() is None, "dump_asyncio.py did not start"
        time.sleep(0.05)
    truth = json.loads(path.read_text())
    doc = json.loads(run_ebpfprof("dump", "--pid", w.pid, "--json", check=True).stdout)
    main = by_name(doc)["MainThread"]
    assert main["state"] == "io" and main["fd"]["kind"] == "epoll", main
    assert len(main["fd"]["watched"]) >= 3, main
    assert [f["function"] for f in main["stack"][:2]] == ["EpollSelector.select", "BaseEventLoop._run_once"], main
    assert main["stack"][1]["file"] == "asyncio/base_events.py"
    text = run_ebpfprof("dump", "--pid", w.pid, check=True).stdout
    assert re.search(rf"epoll watching .*fd \d+ \(tcp {re.escape(truth['listen'])}\)", text), text
    assert f"(tcp {truth['client']} -> {truth['listen']})" in text, text
