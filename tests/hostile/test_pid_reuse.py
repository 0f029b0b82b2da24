"""Issue 18 item 9: with --subprocesses, every process ebpfprof reads is held
by a pidfd, however many. The table held 64 and overwrote the oldest entry,
and forked children were never held at all: their reads were unguarded, so a
child's pid reused by another process would have been read as the child.

A parent forks 72 long-lived Python children; while ebpfprof records, its
own /proc/PID/fdinfo must show a pidfd ("Pid:" line) of every one, and the
profile must still name the first children's functions. Then the bound: with
an open-file limit that leaves room for 30 pidfds, ebpfprof says so in one
line and stops following new children, and the first ones stay held."""
import json
import os
import resource
import signal
import subprocess
import time
from pathlib import Path

from conftest import EBPFPROF, Profile, require_interpreter

CHILDREN = 72
BUSY = 4	# the first children spin; the others sleep
# user/remote.h: REMOTE_FD_RESERVE descriptors are left to the rest of ebpfprof
FD_RESERVE = 256

PARENT = r'''
import json, os, sys, time
go, pids_file, n, busy, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
while not os.path.exists(go):
    time.sleep(0.02)
def child(i):
    # a function named after the child: its frames say whose they are
    ns = {}
    exec(f"""def work_{i}(busy, end):
    import time
    x = 0
    while time.monotonic() < end:
        if busy:
            for k in range(10000):
                x += k
        else:
            time.sleep(0.1)
""", ns)
    ns[f"work_{i}"](i < busy, time.monotonic() + seconds)
    os._exit(0)
pids = []
for i in range(n):
    pid = os.fork()
    if pid == 0:
        child(i)
    pids.append(pid)
with open(pids_file + ".tmp", "w") as f:
    json.dump(pids, f)
os.rename(pids_file + ".tmp", pids_file)
for _ in pids:
    os.wait()
'''


def held_pids(pid):
    """The pids ebpfprof holds pidfds of: "Pid:" lines of its fdinfo."""
    held = set()
    for fd in Path(f"/proc/{pid}/fdinfo").iterdir():
        try:
            for line in fd.read_text().splitlines():
                if line.startswith("Pid:"):
                    held.add(int(line.split()[1]))
        except (OSError, ValueError):
            pass
    return held


def record_children(tmp_path, path, fd_limit=None):
    """Records the parent with --subprocesses while it forks the children;
    returns (parent, child pids, the pids ebpfprof held then, its stderr)."""
    go, pids_file = tmp_path / "go", tmp_path / "pids.json"
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    parent = subprocess.Popen(["/usr/bin/python3.11", str(script), str(go), str(pids_file),
                               str(CHILDREN), str(BUSY), "8"], start_new_session=True)

    def limit():
        if fd_limit:
            resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, fd_limit))

    rec = subprocess.Popen([str(EBPFPROF), "--subprocesses", "--pid", str(parent.pid), "-d", "6",
                            "-o", str(path)], stderr=subprocess.PIPE, text=True, preexec_fn=limit)
    try:
        return watch_children(rec, parent, go, pids_file)
    finally:
        stop(parent)


def watch_children(rec, parent, go, pids_file):
    time.sleep(1.5)
    go.write_text("go")
    deadline = time.monotonic() + 10
    while not pids_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = json.loads(pids_file.read_text())
    assert len(pids) == CHILDREN
    time.sleep(1.0)	# the fork events are read
    held = held_pids(rec.pid)
    _, err = rec.communicate(timeout=60)
    assert rec.returncode == 0, err
    return parent, pids, held, err


def stop(parent):
    try:
        os.killpg(parent.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    parent.wait()


def test_every_child_is_held_by_a_pidfd(tmp_path, out):
    require_interpreter("debian-3.11")
    path = out()
    parent, pids, held, err = record_children(tmp_path, path)
    missing = sorted(set(pids) - held)
    assert not missing, f"{len(missing)} of {CHILDREN} children not held, first {missing[:5]}"
    assert parent.pid in held
    prof = Profile(path)
    for i in range(BUSY):
        child = prof.profile(f"(pid {pids[i]})")
        assert prof.weight_with(f"work_{i}", child) > 0, (i, prof.threads()[:8])
        # its frames are its own: no other child's function in its profile
        others = {f"work_{j}" for j in range(CHILDREN) if j != i}
        assert not any(others & set(names) for names, _ in prof.stacks(child)), i


def test_at_the_bound_new_children_are_not_followed_old_ones_stay_held(tmp_path, out):
    require_interpreter("debian-3.11")
    room = 30
    path = out()
    parent, pids, held, err = record_children(tmp_path, path, fd_limit=FD_RESERVE + room)
    lines = [l for l in err.splitlines() if "the most the open-file limit allows" in l]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"ebpfprof: {room} processes followed already, the most the "
                               f"open-file limit allows (ulimit -n less {FD_RESERVE}): process "), lines
    assert lines[0].endswith(" and any new process are not followed while so many live"), lines
    # the parent and the first children stay held; the others are not
    assert parent.pid in held
    assert set(pids[:room - 1]) <= held, sorted(set(pids[:room - 1]) - held)
    assert len(held & set(pids)) == room - 1
    prof = Profile(path)
    for i in range(BUSY):
        assert prof.weight_with(f"work_{i}", prof.profile(f"(pid {pids[i]})")) > 0
    followed = {int(t.split("(pid ")[1].split(")")[0]) for t in prof.threads() if "(pid " in t}
    assert not followed & set(pids[room:]), sorted(followed & set(pids[room:]))
