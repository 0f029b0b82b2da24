"""Issue 18 item 7: in launch mode the command shared the caller's terminal
and session (it could push input into the caller's shell with TIOCSTI where
the kernel allows it), and only the direct child got SIGTERM at the end, so
what it started outlived ebpfprof. Now it runs in a session and process
group of its own, and the whole group is ended."""
import os
import pty
import select
import subprocess
import time
from pathlib import Path

from conftest import EBPFPROF, need_bpf

PY = "/usr/bin/python3.11"

COMMAND = r"""
import os, subprocess, sys, time
facts = sys.argv[1]
child = subprocess.Popen(["sleep", "60"])
try:
    os.close(os.open("/dev/tty", os.O_RDWR))
    tty = "has a controlling terminal"
except OSError as e:
    tty = "no controlling terminal"
with open(facts + ".tmp", "w") as f:
    f.write(f"{os.getsid(0)} {os.getpgrp()} {os.getpid()} {child.pid} {tty}")
os.rename(facts + ".tmp", facts)
end = time.monotonic() + 30
while time.monotonic() < end:
    sum(range(1000))
"""


def alive(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def run_in_a_terminal(argv, timeout=60):
    """argv on a new pseudo-terminal, as from an interactive shell; its output."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(argv[0], argv)
    out, end = b"", time.monotonic() + timeout
    while time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 0.5)
        if r:
            try:
                data = os.read(fd, 4096)
            except OSError:
                break
            if not data:
                break
            out += data
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace"), pid


def test_command_runs_in_its_own_session_and_ends_whole(tmp_path):
    need_bpf()
    facts = tmp_path / "facts"
    script = tmp_path / "cmd.py"
    script.write_text(COMMAND)
    rc, out, term_pid = run_in_a_terminal(
        [str(EBPFPROF), "-d", "3", "-o", str(tmp_path / "p.speedscope.json"), "--",
         PY, str(script), str(facts)])
    assert rc == 0, out
    sid, pgrp, pid, grandchild, tty = facts.read_text().split(" ", 4)
    # a session of its own: not the terminal's (ebpfprof's, led by term_pid)
    assert int(sid) == int(pid) and int(pgrp) == int(pid), (sid, pgrp, pid, term_pid)
    assert tty == "no controlling terminal"
    # what the command started was ended with it
    deadline = time.monotonic() + 3
    while alive(int(grandchild)) and time.monotonic() < deadline:
        time.sleep(0.05)
    still = alive(int(grandchild))
    if still:
        os.kill(int(grandchild), 9)
    assert not still, "the command's own child outlived ebpfprof"


def test_ctrl_c_still_ends_the_recording_and_the_command(tmp_path):
    need_bpf()
    facts = tmp_path / "facts"
    script = tmp_path / "cmd.py"
    script.write_text(COMMAND)
    # stderr to a file: a pipe would be held open by whatever outlives ebpfprof
    log = open(tmp_path / "stderr", "w")
    rec = subprocess.Popen([str(EBPFPROF), "-o", str(tmp_path / "p.speedscope.json"), "--",
                            PY, str(script), str(facts)], stderr=log)
    deadline = time.monotonic() + 20
    while not facts.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1)
    rec.send_signal(2)
    rec.wait(timeout=60)
    log.close()
    err = (tmp_path / "stderr").read_text()
    assert rec.returncode == 0, err
    assert "interrupted" in err and (tmp_path / "p.speedscope.json").exists(), err
    _, _, pid, grandchild, _ = facts.read_text().split(" ", 4)
    time.sleep(0.5)
    for p in (int(pid), int(grandchild)):
        still = alive(p)
        if still:
            os.kill(p, 9)
        assert not still, f"process {p} outlived ebpfprof"
