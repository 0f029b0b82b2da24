"""ebpfprof_dask's side in each scheduler and worker (remote.py), on its own:
start() returns once its ebpfprof says, with -v, that it records this
process, not after a fixed wait: a recording that takes seconds to load its
programs misses none of the work that follows, one that loads at once costs
no wait. A stand-in ebpfprof (a shell script) sets when it says so."""
import asyncio
import importlib.util
import os
import time

import pytest

from conftest import ROOT

pytestmark = pytest.mark.nobpf


@pytest.fixture
def remote():
    # standard library only (it is sent to the workers by value): loaded alone
    spec = importlib.util.spec_from_file_location("ebpfprof_dask_remote",
                                                  ROOT / "python" / "ebpfprof_dask" / "remote.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def stand_in(tmp_path, body):
    """An ebpfprof that writes its pid to ./pid, finds --pid's value and
    whether -v was given, then runs body."""
    path = tmp_path / "ebpfprof"
    path.write_text("#!/bin/sh\n"
                    f"echo $$ > {tmp_path}/pid\n"
                    "verbose=0\n"
                    "for a; do [ \"$prev\" = --pid ] && pid=$a; [ \"$a\" = -v ] && verbose=1; prev=$a; done\n"
                    + body)
    path.chmod(0o755)
    return [str(path)]


def timed_start(remote, token, command):
    """remote.start's answer, and the seconds it took."""
    t0 = time.monotonic()
    info = asyncio.run(remote.start(token, command, [], 0))
    return info, time.monotonic() - t0


def test_start_returns_when_its_ebpfprof_says_it_records(remote, tmp_path):
    command = stand_in(tmp_path, "sleep 1.5\n"
                                 "[ $verbose = 1 ] && echo \"ebpfprof: recording $pid from 1.5 s after start\" >&2\n"
                                 "exec sleep 30\n")
    info, took = timed_start(remote, "ready", command)
    try:
        assert info == {"host": info["host"], "pid": os.getpid()}
        # the line came 1.5 s after the start: start waited for it, and no longer
        assert 1.5 <= took < 2.5, took
    finally:
        asyncio.run(remote.stop("ready", 0))


def test_a_recording_that_never_starts_is_an_error_and_is_ended(remote, tmp_path, monkeypatch):
    monkeypatch.setattr(remote, "_START_TIMEOUT_S", 1.0)
    command = stand_in(tmp_path, "exec sleep 30\n")
    info = asyncio.run(remote.start("never", command, [], 0))
    assert info["error"] == "ebpfprof did not start recording within 1 s"
    pid = int((tmp_path / "pid").read_text())
    assert not os.path.exists(f"/proc/{pid}")
    assert "never" not in remote._running()


def test_an_ebpfprof_that_fails_at_once_is_its_last_line(remote, tmp_path):
    command = stand_in(tmp_path, "echo 'libbpf: a verbose line' >&2\n"
                                 "echo 'ebpfprof: missing privileges: needs CAP_BPF and CAP_PERFMON' >&2\n"
                                 "exit 1\n")
    info, took = timed_start(remote, "fails", command)
    assert info["error"] == "ebpfprof: missing privileges: needs CAP_BPF and CAP_PERFMON"
    assert took < 1.0
