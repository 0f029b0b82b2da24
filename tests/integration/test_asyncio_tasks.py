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


# record --tasks: task -> what tops its stack in the [asyncio tasks] profile
AWAITS = {
    "sleeper": "[await sleep]",
    "reader": "[await StreamReader.read]",
    "consumer": "[await Queue.get]",
    "gatherer": "[await gather: Task child-1, Task child-2]",
    "child-1": "[await sleep]",
    "child-2": "[await Event.wait]",
}
RECORD_INTERPRETERS = ["debian-3.11", "chroot-3.13", "chroot-3.14", "chroot-3.15"]
TASK_SECONDS = 4


def own_task(names):
    """The task a suspended-task stack is of: its last <task NAME> frame."""
    return [n for n in names if n.startswith("<task ")][-1][len("<task "):-1]


def tasks_profile(prof, pid):
    found = [p for p in prof.doc["profiles"] if re.fullmatch(r"\[asyncio tasks\] .+ \(pid %d\)" % pid, p["name"])]
    assert len(found) == 1, prof.threads()
    return found[0]


def task_seconds(stacks):
    """{(task, top): seconds} of a tasks profile's (names, ns) stacks."""
    seconds = {}
    for names, ns in stacks:
        key = (own_task(names), names[-1])
        seconds[key] = seconds.get(key, 0) + ns / 1e9
    return seconds


@pytest.mark.parametrize("interp_name", RECORD_INTERPRETERS)
def test_record_tasks_profiles_each_suspended_task(interp_name, workloads, tmp_path, out):
    """record --tasks: each suspended task's await chain under what it
    awaits, for as long as it was suspended: within 10% of the recording's
    length; a gathered child through its gatherer; the running task not."""
    interp = require_interpreter(interp_name)
    w = start_tasks(workloads, interp, tmp_path)
    path = out()
    run_ebpfprof("--pid", w.pid, "-d", TASK_SECONDS, "--tasks", "-o", path, check=True)
    prof = Profile(path)
    length = prof.doc["ebpfprof"]["duration_s"]
    stacks = list(prof.stacks(tasks_profile(prof, int(w.pid))))
    seconds = task_seconds(stacks)
    for task, top in AWAITS.items():
        got = seconds.get((task, top), 0)
        assert abs(got - length) <= 0.1 * length, (task, top, got, length, seconds)
    main = [k for k in seconds if k[1] == "[await Task cpu]"]
    assert len(main) == 1 and abs(seconds[main[0]] - length) <= 0.1 * length, seconds
    assert not [k for k in seconds if k[0] == "cpu"], seconds
    child = next(names for names, _ in stacks if own_task(names) == "child-1")
    assert child.index("<task gatherer>") < child.index("<task child-1>") < child.index("child_sleep"), child
    assert child[-2] == "sleep", child
    # the threads' profiles are as without --tasks
    threads = [p for p in prof.doc["profiles"] if not p["name"].startswith("[asyncio tasks]")]
    assert {n for p in threads for names, _ in prof.stacks(p) for n in names if n.startswith("<task ")} == \
        {"<task cpu>"}


def test_record_tasks_in_every_format(workloads, tmp_path, out):
    """The suspended-task profile in collapsed (a root of its own, counts at
    the rate), Chrome (a process of tasks, a track per task) and pprof (a
    task_suspended sample type, go tool pprof reads it)."""
    import shutil

    interp = require_interpreter("debian-3.11")
    w = start_tasks(workloads, interp, tmp_path)
    pid = int(w.pid)
    folded, trace, pb = out(".txt"), out(".json"), out(".pb.gz")
    for fmt, path in (("collapsed", folded), ("chrome", trace), ("pprof", pb)):
        run_ebpfprof("--pid", pid, "-d", TASK_SECONDS, "-r", 100, "--tasks", "-f", fmt, "-o", path, check=True)
    lines = [l.rsplit(" ", 1) for l in folded.read_text().splitlines()]
    root = re.compile(r"\[asyncio tasks\] .+ \(pid %d\);" % pid)
    sleeper = [int(c) for st, c in lines if root.match(st) and ";<task sleeper>;" in st]
    assert len(sleeper) == 1 and abs(sleeper[0] - 100 * TASK_SECONDS) <= 10 * TASK_SECONDS, sleeper
    assert not [st for st, _ in lines if not root.match(st) and "[await " in st]
    events = json.loads(trace.read_text())["traceEvents"]
    names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in events if e.get("ph") == "M"}
    task_pid = (1 << 22) + pid
    assert re.fullmatch(r"\[asyncio tasks\] .+ \(pid %d\)" % pid, names[(task_pid, None)]), names
    track = next(tid for (p, tid), n in names.items() if p == task_pid and n == "<task reader>")
    tops = [e for e in events if e.get("ph") == "X" and (e["pid"], e["tid"]) == (task_pid, track)
            and e["name"] == "[await StreamReader.read]"]
    assert len(tops) == 1 and abs(tops[0]["dur"] / 1e6 - TASK_SECONDS) <= 0.1 * TASK_SECONDS, tops
    if not shutil.which("go"):
        cannot_run("go is not installed (scripts/deps.sh installs golang-go)")
    env = dict(os.environ, HOME=str(tmp_path), GOCACHE=str(tmp_path / "gocache"))
    top = subprocess.run(["go", "tool", "pprof", "-sample_index=task_suspended", "-top", "-nodecount=200",
                          str(pb)], capture_output=True, text=True, timeout=120, env=env)
    assert top.returncode == 0, top.stderr
    queue = re.search(r"^ +([0-9.]+)s .*\[await Queue.get\]$", top.stdout, re.M)
    assert queue and abs(float(queue.group(1)) - TASK_SECONDS) <= 0.1 * TASK_SECONDS, top.stdout
    # -top shortens "<task consumer>" away as if a C++ template's arguments: -raw keeps it
    raw = subprocess.run(["go", "tool", "pprof", "-raw", str(pb)], capture_output=True, text=True,
                         timeout=120, env=env)
    assert raw.returncode == 0 and "<task consumer>" in raw.stdout, raw.stderr
    assert "PeriodType: cpu nanoseconds" in raw.stdout and "task_suspended/nanoseconds" in raw.stdout, \
        raw.stdout[:400]


def test_top_tasks_shows_the_tasks_suspended_longest(workloads, tmp_path):
    """top --tasks: the tasks suspended longest, each with what it awaits,
    for about as long as the view has run (the workload's tasks wait from
    before it started)."""
    interp = require_interpreter("debian-3.11")
    w = start_tasks(workloads, interp, tmp_path)
    res = run_ebpfprof("top", "--pid", w.pid, "--tasks", "-d", 4.5, "--interval", 1, check=True)
    last = res.stdout.split("ebpfprof top: pid")[-1]
    rows = re.findall(r"^<task (\S+)>\s+([0-9.]+)s\s+(\[.*\])$", last, re.M)
    assert len(rows) == 5 and "ASYNCIO TASK" in last, last
    for name, seconds, awaits in rows:
        want = dict(AWAITS, **{"Task-1": "[await Task cpu]"})
        assert awaits == want[name], (name, awaits, last)
        assert 2.5 <= float(seconds) <= 4.6, (name, seconds, last)


def test_diff_gives_task_lines(workloads, tmp_path, out):
    """diff of two --tasks recordings: a line per process, task and what it
    awaits, in task-seconds per second (1 for a task suspended throughout),
    within noise when nothing changed."""
    interp = require_interpreter("debian-3.11")
    w = start_tasks(workloads, interp, tmp_path)
    a, b = out(), out()
    for path in (a, b):
        run_ebpfprof("--pid", w.pid, "-d", 3, "--tasks", "-o", path, check=True)
    rep = json.loads(run_ebpfprof("diff", "--json", a, b, check=True).stdout)
    lines = {l["task"]: l for l in rep["tasks_suspended"]}
    sleeper = lines["<task sleeper> [await sleep]"]
    assert sleeper["kind"] == "task" and sleeper["verdict"] == "within noise", sleeper
    assert 0.85 <= sleeper["base_per_s"] <= 1.05 and 0.85 <= sleeper["new_per_s"] <= 1.05, sleeper
    assert "<task gatherer> [await gather: Task child-1, Task child-2]" in lines, sorted(lines)
    text = run_ebpfprof("diff", a, b, check=True).stdout.split("asyncio tasks suspended (--tasks)")
    assert len(text) == 2 and "none outside the noise" in text[1], text


def test_record_tasks_on_a_dask_scheduler(cluster, out):
    """A real asyncio program: a Dask scheduler's comm handlers in its
    suspended-task profile, each waiting on its comm (TCP.read), for about
    as long as the recording when they live throughout."""
    client, _, scheduler_pid = cluster
    futures = client.map(time.sleep, [0.2] * 40, pure=False)
    path = out()
    run_ebpfprof("--pid", scheduler_pid, "-d", 4, "--tasks", "-o", path, check=True)
    client.gather(futures)
    prof = Profile(path)
    length = prof.doc["ebpfprof"]["duration_s"]
    stacks = list(prof.stacks(tasks_profile(prof, int(scheduler_pid))))
    handlers = [(names, ns) for names, ns in stacks if "Server._handle_comm" in names]
    assert handlers, [names for names, _ in stacks]
    reading = [ns / 1e9 for names, ns in handlers if names[-2:] == ["TCP.read", "[await Future]"]]
    assert reading and max(reading) >= 0.9 * length, ([names for names, _ in handlers], length)
