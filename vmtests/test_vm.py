"""ebpfprof's BPF programs on Debian 12's kernels: one test per kernel, each
booting it under QEMU through vmtests/run.sh --kernel K (see that script).

    /usr/bin/python3 -m pytest -ra vmtests/test_vm.py

Needs root (QEMU's 9p share of the host's root, setup.sh's apt-get); without
it the tests are skipped with the reason printed, except under CI (CI=true),
where they fail instead, as tests/integration/conftest.py's cannot_run does.
Anything else that is missing (QEMU, a kernel, ./ebpfprof) is
reported by run.sh as a failure, never as a skip."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "vmtests" / "run.sh"
IN_CI = os.environ.get("CI") == "true"
# run.sh boots one kernel in 35-45 s on an idle machine, minutes when
# the machine is busy (software emulation gets what CPU is left); the guest's
# own timeout is 600 s (EBPFPROF_VMTEST_TIMEOUT), plus a possible first setup.sh.
TIMEOUT = int(os.environ.get("EBPFPROF_VMTEST_PYTEST_TIMEOUT", "1200"))


def cannot_run(reason):
    """Skip locally, fail in CI: CI must run every test."""
    if IN_CI:
        pytest.fail(f"cannot run in CI: {reason}")
    print(f"vmtests: skipped: {reason}", file=sys.stderr)
    pytest.skip(reason)


@pytest.mark.parametrize("kernel", ["5.10", "6.1", "6.12"])
def test_kernel(kernel):
    if os.geteuid() != 0:
        cannot_run("needs root (QEMU sharing the host's root file system, apt-get in vmtests/setup.sh)")
    try:
        res = subprocess.run([str(RUN), "--kernel", kernel], cwd=ROOT, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        print(out)
        pytest.fail(f"vmtests/run.sh --kernel {kernel} still running after {TIMEOUT} s")
    print(res.stdout)      # the guest's output: shown by pytest when the test fails
    verdict = [l for l in res.stdout.splitlines() if l.startswith(f"vmtest {kernel}: ")]
    assert res.returncode == 0 and verdict and verdict[-1].startswith(f"vmtest {kernel}: PASS"), (
        verdict[-1] if verdict else
        f"vmtests/run.sh --kernel {kernel} exited {res.returncode}:\n" + "\n".join(res.stdout.splitlines()[-30:]))
