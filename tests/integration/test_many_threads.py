"""A process with hundreds of threads: each sampled thread's PyThreadState
is found by scanning the interpreter's thread list, newest first. The scan
stopped at 128, so in a process of 300 threads the main thread and the
first ones started were never found: their samples were counted as
"without a Python thread state" and left out. It now reaches 4096 (with
bpf_loop, Linux 5.17+), and a thread found to have none is scanned for at
most every 100 ms."""
import json
import os
import re
import time

import pytest

from conftest import Profile, require_interpreter, run_ebpfprof


@pytest.mark.parametrize("name", ["debian-3.11", "chroot-3.14"])
def test_the_oldest_threads_of_three_hundred_are_profiled(name, workloads, out, tmp_path):
    """The two busy threads are found by their ids (the workload's truth),
    not by name: their names are read from the target's threading module,
    which 300 threads on a loaded machine can hold up past the recording."""
    interp = require_interpreter(name)
    w = workloads(interp, "many_threads.py", "--sleepers", "300", seconds=8,
                  truth=str(tmp_path / "truth.json"))
    deadline = time.monotonic() + 10   # written once its 300 threads are started
    while not os.path.exists(w.truth_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    with open(w.truth_path) as f:
        truth = json.load(f)
    path = out()
    res = run_ebpfprof("--pid", w.pid, "-d", 2, "-r", 200, "-o", path, check=True)
    prof = Profile(path)
    main = prof.seconds(prof.profile(f'Thread {truth["main"]} "'), "spin")
    early = prof.seconds(prof.profile(f'Thread {truth["early_busy"]} "'), "spin")
    # two threads taking turns with the GIL for the recording (2 s asked;
    # the names of 300 threads can hold its end up): about half of it on a
    # CPU each, never more than all of it together (the profile is on-CPU time)
    took = prof.doc["ebpfprof"]["duration_s"]
    assert main > 0.15 * took and early > 0.15 * took and main + early <= took * 1.02 + 0.02, \
        (main, early, took, res.stderr)
    # the default summary's loss line (-v adds the counter's own line)
    m = re.search(r"loss: (\d+) of (\d+) samples taken \([\d.]+%\) are not in the profile: "
                  r"their threads had no Python thread state", res.stderr)
    assert not m or int(m.group(1)) <= 0.05 * int(m.group(2)), m.group(0)
