"""Issue 2: bad input gives one clear line and a non-zero exit, never a file."""
import os
import subprocess
import time

import pytest

from conftest import EBPFPROF, PYENV, cannot_run, require_interpreter, run_ebpfprof


def one_line_error(res, *needles):
    assert res.returncode != 0
    lines = [l for l in res.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("ebpfprof: "), lines[0]
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def test_no_such_pid(out):
    path = out()
    res = run_ebpfprof("--pid", 4000000, "-o", path)
    one_line_error(res, "no such process: 4000000")
    assert not path.exists()


def test_not_a_python_process(out):
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        path = out()
        res = run_ebpfprof("--pid", sleeper.pid, "-o", path)
        one_line_error(res, f"process {sleeper.pid} (sleep) is not a CPython process")
        assert not path.exists()
    finally:
        sleeper.kill()


def test_unsupported_python_version_names_the_supported_ones(workloads, out):
    hits = sorted(PYENV.glob("3.7.*/bin/python3.7"))
    if not hits:
        cannot_run("no CPython 3.7 here to stand for an unsupported version")
    proc = subprocess.Popen([str(hits[-1]), "-c", "import time; time.sleep(30)"])
    try:
        time.sleep(0.5)
        res = run_ebpfprof("--pid", proc.pid, "-o", out())
        one_line_error(res, "CPython 3.7", "not supported", "3.8, 3.9, 3.10, 3.11, 3.12, 3.13, 3.14, 3.15")
    finally:
        proc.kill()


@pytest.mark.nobpf
def test_without_privileges_names_the_capabilities(tmp_path):
    if os.geteuid() != 0:
        cannot_run("needs root to switch to the unprivileged user")
    target = subprocess.Popen(["sleep", "30"])
    try:
        tmp_path.chmod(0o777)
        res = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                              str(EBPFPROF), "--pid", str(target.pid), "-o", str(tmp_path / "x.json")],
                             capture_output=True, text=True, timeout=30)
        one_line_error(res, "missing privileges", "CAP_BPF", "CAP_PERFMON", "CAP_SYS_PTRACE")
        assert not (tmp_path / "x.json").exists()
    finally:
        target.kill()


def test_unwritable_output_path(workloads, tmp_path):
    interp = require_interpreter("debian-3.11")
    w = workloads(interp, "two_hot.py", seconds=10)
    res = run_ebpfprof("--pid", w.pid, "-o", tmp_path / "no-such-dir" / "p.json")
    one_line_error(res, "cannot write", "No such file or directory")
    res = run_ebpfprof("--pid", w.pid, "-o", tmp_path)
    one_line_error(res, "cannot write", "is a directory")
    assert os.listdir(tmp_path) == []


@pytest.mark.nobpf
@pytest.mark.parametrize("args,needle", [
    ([], "nothing to profile"),
    (["--pid", "abc"], "invalid pid"),
    (["--pid", "1", "-r", "0"], "invalid rate"),
    (["--pid", "1", "-f", "svg"], "unknown format"),
    (["--pid", "1", "--", "python3"], "not both"),
])
def test_usage_errors(args, needle):
    res = subprocess.run([str(EBPFPROF), *args], capture_output=True, text=True, timeout=10)
    assert res.returncode == 64 or res.returncode == 2, res
    assert needle in res.stderr


@pytest.mark.nobpf
def test_version_and_help():
    res = subprocess.run([str(EBPFPROF), "--version"], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.startswith("ebpfprof ")
    res = subprocess.run([str(EBPFPROF), "--help"], capture_output=True, text=True)
    assert res.returncode == 0 and "--pid" in res.stdout and "--duration" in res.stdout
