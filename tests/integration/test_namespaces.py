"""Issue 4: PID namespaces both ways, and --subprocesses."""
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (EBPFPROF, Attached, ROOT, WORKLOADS, Profile, go_file, require_interpreter, run_ebpfprof,
                      wait_for_go)


def child_of(pid, timeout=5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        if kids:
            return int(kids[0])
        time.sleep(0.05)
    raise AssertionError(f"{pid} has no child")


def test_target_in_its_own_pid_namespace_is_profiled_from_the_host(out):
    require_interpreter("debian-3.11")
    unshare = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "/usr/bin/python3.11",
                                str(WORKLOADS / "two_hot.py"), "--seconds", "30"],
                               stderr=subprocess.PIPE, text=True)
    try:
        assert unshare.stderr.readline().strip() == "pid=1"  # it sees itself as pid 1
        host_pid = child_of(unshare.pid)
        time.sleep(0.5)
        path = out()
        run_ebpfprof("--pid", host_pid, "-d", 1.5, "-o", path, check=True)
        prof = Profile(path)
        assert prof.threads() == [f'Thread {host_pid} "MainThread"']
        assert prof.weight_with("crunch_a") > 0 and prof.weight_with("crunch_b") > 0
    finally:
        unshare.kill()
        unshare.wait()


def test_profiler_inside_a_pid_namespace_takes_the_namespaced_pid(tmp_path):
    require_interpreter("debian-3.11")
    path = tmp_path / "ns.speedscope.json"
    script = (f'/usr/bin/python3.11 {WORKLOADS}/two_hot.py --seconds 30 2>/dev/null & '
              f'sleep 0.7; echo "target=$!"; '
              f'{EBPFPROF} --pid $! -d 1.5 -o {path}; echo "rc=$?"; kill $! 2>/dev/null; wait')
    res = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "bash", "-c", script],
                         capture_output=True, text=True, timeout=60)
    assert "rc=0" in res.stdout, res.stdout + res.stderr
    ns_pid = int(res.stdout.split("target=")[1].split()[0])
    assert ns_pid < 10, "the pid given was the namespace's own"
    prof = Profile(path)
    assert prof.threads() == [f'Thread {ns_pid} "MainThread"']
    assert prof.weight_with("crunch_a") > 0


def beside_thread_mix_in_a_pid_namespace(args, out):
    """Runs `ebpfprof ARGS` ($! the target's pid) inside a new PID namespace
    beside thread_mix.py, started a second before (its locker, holder and
    reader blocked throughout); its stdout and stderr go to out, whose text
    is returned."""
    script = (f'/usr/bin/python3.11 {WORKLOADS}/thread_mix.py --seconds 30 2>/dev/null & '
              f'sleep 1; {EBPFPROF} {args} >{out} 2>&1; '
              f'echo "rc=$?"; kill $! 2>/dev/null; wait')
    res = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "bash", "-c", script],
                         capture_output=True, text=True, timeout=60)
    text = out.read_text()
    assert "rc=0" in res.stdout, res.stdout + res.stderr + text
    return text


def test_threads_blocked_throughout_are_seeded_inside_a_pid_namespace(tmp_path):
    """The kernel side finds a thread's storage by its tid in the profiler's
    namespace (a task iterator translates): the locker and the reader, blocked
    from before the recording to after it, are in the thread table, all in
    lock wait and I/O."""
    require_interpreter("debian-3.11")
    text = beside_thread_mix_in_a_pid_namespace(f'--pid $! -d 1.5 -o {tmp_path / "p.json"}',
                                                tmp_path / "err.txt")
    rows = {m.group(1): re.findall(r"(\d+\.\d+)s\s+(\d+)%", line) for line in text.splitlines()
            if (m := re.match(r"\s+\d+ (\S+) ", line))}
    # by name: threads never on the CPU are named too (from Python's threading)
    assert int(rows["locker"][4][1]) >= 90 and int(rows["holder"][4][1]) >= 90, text
    assert int(rows["reader"][5][1]) >= 90, text
    assert not re.search(r"[1-9]\d* blocked threads not seeded", text), text


def test_top_inside_a_pid_namespace_seeds_blocked_threads_like_record(tmp_path):
    """Issue 35: top did not seed the threads blocked since before it started
    when it ran inside a PID namespace (record did); both now start through
    one controller. top's view has no /proc fallback of its own: the locker,
    the holder and the reader, blocked throughout, show their whole interval
    in lock wait and I/O only if the kernel was told they were off the CPU."""
    require_interpreter("debian-3.11")
    text = beside_thread_mix_in_a_pid_namespace("top --pid $! -d 2.5 -i 1", tmp_path / "top.txt")
    view = text.split("ebpfprof top: pid")[-1]
    lines = view.split("THREAD (last interval)", 1)[1].splitlines()
    head = lines[0].split()
    rows = {}
    for line in lines[1:]:
        m = re.match(r"^\d+\s+(\S+)\s+((?:\s*\d+%)+)\s*$", line)
        if not m:
            break
        rows[m.group(1)] = dict(zip(head, map(int, re.findall(r"(\d+)%", m.group(2)))))
    assert rows["locker"]["lock"] >= 90 and rows["holder"]["lock"] >= 90, view
    assert rows["reader"]["I/O"] >= 90, view


@pytest.mark.parametrize("interp_name", ["debian-3.11", "chroot-3.15", "chroot-3.15-dbg"])
# forkserver (3.14's default): the server is exec'd, then forks the workers
# as soon as it is up, before or after ebpfprof has found it to be Python
@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_subprocesses_gives_a_profile_per_process(method, interp_name, workloads, out, tmp_path):
    interp = require_interpreter(interp_name)
    go, go_inside = go_file(interp, tmp_path)
    w = workloads(interp, "pool.py", "--method", method, "--go", go_inside, seconds=3,
                  truth=str(tmp_path / "truth.json"))
    path = out()
    rec = Attached(w.pid, "--subprocesses", "-d", 30, "-o", path)
    wait_for_go(go)
    status, err = rec.finish(timeout=60)
    assert status == 0, err
    workers = w.truth()["workers"]
    assert len(workers) == 2
    prof = Profile(path)
    pids = {int(name.split("(pid ")[1].split(")")[0]) for name in prof.threads()}
    assert {w.pid, *workers} <= pids, (prof.threads(), workers)
    for worker in workers:
        worker_profile = next(p for p in prof.doc["profiles"] if f"(pid {worker})" in p["name"])
        assert prof.seconds(worker_profile, "pool_work") > 0.3
    parent_profile = prof.profile(f"(pid {w.pid})")
    # its own work is there (0.5 s of spinning by the wall clock; under CI load it got
    # as little as 0.2 s of CPU)
    assert prof.seconds(parent_profile, "parent_work") > 0.05
