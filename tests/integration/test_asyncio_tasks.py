"""Issue 31: `ebpfprof dump --tasks` names every asyncio task of a live
process with what it awaits, read from the target's memory only."""
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from conftest import Profile, cannot_run, require_interpreter, run_ebpfprof
from test_dask import cluster  # noqa: F401 (the fixture: dask-scheduler, two workers, a client)

# task -> (await text, innermost coroutine frame)
EXPECTED = {
    "sleeper": ("sleep", "sleep"),
    "reader": ("StreamReader.read", "StreamReader._wait_for_data"),
    "consumer": ("Queue.get", "Queue.get"),
    "gatherer": ("gather: Task child-1, Task child-2", "gatherer"),
    "child-1": ("sleep", "sleep"),
    "child-2": ("Event.wait", "Event.wait"),
}
INTERPRETERS = ["debian-3.11", "pyenv-3.12", "pyenv-3.13", "chroot-3.13", "chroot-3.14", "chroot-3.15"]


def start_tasks(workloads, interp, tmp_path):
    name = f"truth-{interp.name}.json"  # a chroot's /tmp outlives the test: one file per case
    if interp.chroot:
        (Path(interp.chroot) / "tmp" / f"{os.getpid()}-{name}").unlink(missing_ok=True)
    w = workloads(interp, "asyncio_tasks.py", seconds=300,
                  truth=str(tmp_path / name) if not interp.chroot else name)
    path = Path(w.truth_path)
    deadline = time.monotonic() + 90  # a loaded machine starts Python slowly
    while not path.exists():
        assert time.monotonic() < deadline and w.proc.poll() is None, "asyncio_tasks.py did not start"
        time.sleep(0.05)
    return w


def dump_tasks(pid):
    doc = json.loads(run_ebpfprof("dump", "--tasks", "--json", "--pid", pid, check=True).stdout)
    assert not doc["truncated"], doc
    tasks = {t["name"]: t for t in doc["tasks"]}
    assert len(tasks) == len(doc["tasks"]), "two tasks with one name"
    return doc, tasks


def awaiter_pairs(tasks):
    """(awaiter address, awaited address) of every task that is awaited."""
    return {(int(b["address"], 16), int(t["address"], 16)) for t in tasks.values() for b in t["awaited_by"]}


@pytest.mark.parametrize("interp_name", INTERPRETERS)
def test_dump_tasks_names_each_task_and_what_it_awaits(interp_name, workloads, tmp_path):
    interp = require_interpreter(interp_name)
    w = start_tasks(workloads, interp, tmp_path)
    doc, tasks = dump_tasks(w.pid)
    assert doc["python"].startswith("%d.%d." % interp.version)
    for name, (awaits, innermost) in EXPECTED.items():
        t = tasks[name]
        assert t["state"] == "suspended", t
        assert t["await"]["text"] == awaits, t
        assert t["stack"][0]["function"] == innermost, t
        assert t["stack"][-1]["file"].endswith("asyncio_tasks.py"), t
    assert tasks["reader"]["stack"][1]["function"] == "StreamReader.read"
    assert tasks["gatherer"]["await"]["kind"] == "gather"
    assert [c["name"] for c in tasks["gatherer"]["await"]["tasks"]] == ["child-1", "child-2"]
    cpu = tasks["cpu"]
    assert cpu["state"] == "running" and cpu["stack"][0]["function"] == "cpu", cpu
    main = [t for t in tasks.values() if t["await"]["text"] == "Task cpu"]
    assert len(main) == 1 and main[0]["stack"][0]["function"] == "main", tasks
    assert awaiter_pairs(tasks) == {
        (int(tasks["gatherer"]["address"], 16), int(tasks["child-1"]["address"], 16)),
        (int(tasks["gatherer"]["address"], 16), int(tasks["child-2"]["address"], 16)),
        (int(main[0]["address"], 16), int(cpu["address"], 16)),
    }
    text = run_ebpfprof("dump", "--tasks", "--pid", w.pid, check=True).stdout
    assert re.search(r'Task "reader" \(0x[0-9a-f]+\): suspended \[await StreamReader.read\]', text), text
    assert 'Task "cpu" (' in text and "awaited by Task \"gatherer\"" in text, text


@pytest.mark.parametrize("interp_name", INTERPRETERS)
def test_samples_of_a_running_task_carry_its_task_frame(interp_name, workloads, tmp_path, out):
    """>= 90% of the CPU-bound task's samples have <task cpu> right between
    the loop's Handle._run and the task's coroutine; no other task shows."""
    interp = require_interpreter(interp_name)
    w = start_tasks(workloads, interp, tmp_path)
    path = out()
    run_ebpfprof("--pid", w.pid, "-d", 2, "-o", path, check=True)
    stacks = list(Profile(path).stacks())
    in_cpu = [(names, wt) for names, wt in stacks if "burn_until" in [n.split(" ")[0] for n in names]]
    assert in_cpu, stacks[:5]
    tagged = 0
    for names, wt in in_cpu:
        at = [n.split(" ")[0] for n in names].index("cpu")
        if names[at - 1] == "<task cpu>" and names[at - 2].startswith("Handle._run"):
            tagged += wt
    assert tagged >= 0.9 * sum(wt for _, wt in in_cpu), in_cpu[:3]
    assert {n for names, _ in stacks for n in names if n.startswith("<task ")} == {"<task cpu>"}


def chroot_python(interp):
    """argv running the chroot's python3.X from the host (asyncio ps must
    see the target's pid and /proc, which a chroot keeps)."""
    root = Path(interp.chroot)
    minor = "%d.%d" % interp.version
    loader = root / "lib64" / "ld-linux-x86-64.so.2"
    if not loader.exists():
        cannot_run(f"{loader} missing")
    return ([str(loader), "--library-path", str(root / "usr/lib/x86_64-linux-gnu"),
             str(root / "usr/bin" / f"python{minor}")], {**os.environ, "PYTHONHOME": str(root / "usr")})


def ps_pairs(interp, pid):
    """(awaiter id, task id) from `python3.X -m asyncio ps PID`."""
    argv, env = chroot_python(interp)
    res = subprocess.run(argv + ["-m", "asyncio", "ps", str(pid)], capture_output=True, text=True,
                         env=env, timeout=60)
    assert res.returncode == 0, res.stderr
    pairs = set()
    for line in res.stdout.splitlines():
        ids = re.findall(r"\b0x[0-9a-f]+\b", line)
        if len(ids) == 2 and int(ids[1], 16):
            pairs.add((int(ids[1], 16), int(ids[0], 16)))
    return pairs


@pytest.mark.parametrize("interp_name", ["chroot-3.14", "chroot-3.15"])
def test_dump_tasks_pairs_equal_asyncio_ps(interp_name, workloads, tmp_path):
    interp = require_interpreter(interp_name)
    w = start_tasks(workloads, interp, tmp_path)
    _, tasks = dump_tasks(w.pid)
    theirs = ps_pairs(interp, w.pid)
    assert len(theirs) == 3, theirs
    assert awaiter_pairs(tasks) == theirs, (tasks, theirs)


def test_dump_tasks_without_asyncio_says_none(workloads):
    w = workloads(require_interpreter("debian-3.11"), "named_threads.py", seconds=300)
    time.sleep(1)
    res = run_ebpfprof("dump", "--tasks", "--pid", w.pid, check=True)
    assert "No asyncio tasks" in res.stdout, res.stdout


def test_dump_tasks_and_native_refused():
    res = run_ebpfprof("dump", "--tasks", "--native", "--pid", os.getpid())
    assert res.returncode != 0 and "cannot be combined" in res.stderr, res.stderr


def test_dump_tasks_names_dask_schedulers_comm_handlers(cluster):
    """A real asyncio program: a Dask scheduler with two workers and a client
    whose tasks run. Each comm is a task in Server._handle_comm; the
    workers' and the client's streams wait in TCP.read on a Future."""
    client, _, scheduler_pid = cluster
    futures = client.map(time.sleep, [0.2] * 40, pure=False)
    time.sleep(1)
    _, tasks = dump_tasks(scheduler_pid)
    handlers = [t for t in tasks.values() if any(f["function"] == "Server._handle_comm" for f in t["stack"])]
    assert handlers, tasks
    reading = [t for t in handlers if t["stack"][0]["function"] == "TCP.read"]
    assert reading and all(t["await"]["kind"] == "future" for t in reading), handlers
    functions = {f["function"] for t in handlers for f in t["stack"]}
    assert {"Scheduler.add_client", "Scheduler.handle_worker"} <= functions, functions
    client.gather(futures)
