"""Least privilege: ebpfprof run by an ordinary user holding only CAP_BPF,
CAP_PERFMON and CAP_SYS_PTRACE (as ambient capabilities, or as the file
capabilities `make install-caps` sets) profiles targets of that user and of
another; without them it names what is missing."""
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import EBPFPROF, ROOT, Interpreter, Profile, require_interpreter

THREE = "-all,+bpf,+perfmon,+sys_ptrace"


def as_nobody(caps=None):
    argv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    if caps:
        argv += [f"--inh-caps={caps}", f"--ambient-caps={caps}", f"--bounding-set={caps}"]
    return argv


@pytest.fixture
def shared_dir():
    """A directory nobody can write into (pytest's tmp_path is root's only)."""
    d = Path(tempfile.mkdtemp(prefix="ebpfprof-caps-", dir="/tmp"))
    d.chmod(0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def target_as(user, workloads):
    require_interpreter("debian-3.11")
    interp = Interpreter(f"python3.11-as-{user}",
                         ["setpriv", f"--reuid={user}", f"--regid={user if user != 'nobody' else 'nogroup'}",
                          "--clear-groups", "/usr/bin/python3.11"], (3, 11))
    return workloads(interp, "two_hot.py", seconds=20)


def effective_caps(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return None


def check_profiled(res, path, target):
    assert res.returncode == 0, res.stderr
    p = Profile(path)
    assert p.weight_with("crunch_a") > 0 and p.weight_with("crunch_b") > 0
    # the one thing the three capabilities do not give: uprobes for GC timing
    assert "GC timed by the collecting flag only" in res.stderr
    assert "only for CAP_SYS_ADMIN" in res.stderr


@pytest.mark.parametrize("target_user", ["nobody", "daemon"])
def test_three_capabilities_suffice(workloads, shared_dir, target_user):
    target = target_as(target_user, workloads)
    assert Path(f"/proc/{target.pid}").stat().st_uid != 0
    out = shared_dir / "p.speedscope.json"
    res = subprocess.run(as_nobody(THREE) + [str(EBPFPROF), "-d", "2", "--pid", str(target.pid),
                                             "-o", str(out)],
                         capture_output=True, text=True, timeout=60)
    check_profiled(res, out, target)
    assert out.stat().st_uid == 65534


def test_a_missing_capability_is_named(workloads, shared_dir):
    target = target_as("daemon", workloads)
    res = subprocess.run(as_nobody("-all,+bpf,+perfmon") + [str(EBPFPROF), "-d", "1", "--pid",
                                                             str(target.pid), "-o", str(shared_dir / "x.json")],
                         capture_output=True, text=True, timeout=60)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 1 and len(lines) == 1, res.stderr
    assert "lacks CAP_SYS_PTRACE " in lines[0] and "lacks CAP_BPF" not in lines[0], lines[0]
    assert not (shared_dir / "x.json").exists()


def test_install_caps_for_one_group(workloads, shared_dir):
    if not shutil.which("setcap") or not shutil.which("getcap"):
        pytest.fail("setcap/getcap missing (libcap2-bin, scripts/deps.sh)")
    dest = shared_dir / "root"
    res = subprocess.run(["make", "-s", "-C", str(ROOT), "install-caps", f"DESTDIR={dest}",
                          "PREFIX=/usr", "CAPS_GROUP=nogroup"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    for d in [dest, *dest.rglob("*")]:
        if d.is_dir():
            d.chmod(0o755)
    binary = dest / "usr" / "bin" / "ebpfprof"
    st = binary.stat()
    assert st.st_mode & 0o777 == 0o750 and st.st_gid == 65534
    caps = subprocess.run(["getcap", str(binary)], capture_output=True, text=True).stdout
    assert "cap_sys_ptrace,cap_perfmon,cap_bpf=ep" in caps, caps
    # a member of the group, with no capability of its own
    target = target_as("daemon", workloads)
    out = shared_dir / "p.speedscope.json"
    # through a shell: setpriv itself still holds root's capabilities when it
    # execs, and the kernel checks the file's mode against those
    res = subprocess.run(as_nobody() + ["sh", "-c", 'exec "$0" "$@"', str(binary), "-d", "2",
                                        "--pid", str(target.pid), "-o", str(out)],
                         capture_output=True, text=True, timeout=60)
    check_profiled(res, out, target)
    # anyone else cannot even run it
    res = subprocess.run(["setpriv", "--reuid=daemon", "--regid=daemon", "--clear-groups", "sh", "-c",
                          'exec "$0" --version', str(binary)], capture_output=True, text=True, timeout=60)
    assert res.returncode != 0 and "Permission denied" in res.stderr
