"""Issue 8: the profiler's memory grows with distinct stacks, threads and the
profile's own samples, not with the target's context switches (it kept ~157
bytes per switch-out before: ~1.5 GiB an hour on a busy server). The long
version, a benchmark, runs 10 minutes under `make soak` (EBPFPROF_SOAK_SECONDS);
the suite keeps the per-switch bound, measured over 6 seconds."""
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

import conftest
from conftest import cannot_run, require_interpreter


def rss_anon_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    raise AssertionError("no RssAnon")


def switches(pid):
    n = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            for line in (task / "status").read_text().splitlines():
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    n += int(line.split()[1])
        except FileNotFoundError:
            pass
    return n


def measure(workloads, tmp_path, warmup_s, measured_s, *extra):
    interp = require_interpreter("debian-3.11")
    w = workloads(interp, "switch_heavy.py", seconds=warmup_s + measured_s + 30)
    prof = subprocess.Popen([str(conftest.EBPFPROF), "--pid", str(w.pid), "-d",
                             str(warmup_s + measured_s + 5), *extra, "-o", str(tmp_path / "p.json")],
                            stderr=subprocess.PIPE, text=True)
    time.sleep(warmup_s)
    rss0, sw0 = rss_anon_kib(prof.pid), switches(w.pid)
    time.sleep(measured_s)
    rss1, sw1 = rss_anon_kib(prof.pid), switches(w.pid)
    # measured: the recording ends now (its -d is a bound), as at Ctrl-C
    prof.send_signal(signal.SIGINT)
    _, err = prof.communicate(timeout=120)
    assert prof.returncode == 0, err
    return (rss1 - rss0) * 1024, sw1 - sw0, samples_in(tmp_path / "p.json", measured_s), err


def samples_in(path, seconds):
    """The samples the profile kept in `seconds` of the recording, at its
    average rate: what the profile's own storage grows by."""
    info = json.loads(path.read_text())["ebpfprof"]
    return info["samples"] * seconds / info["duration_s"]


@pytest.mark.parametrize("extra", [(), ("--idle",)])
def test_memory_does_not_grow_with_switches(workloads, tmp_path, extra):
    grown, switched, samples, err = measure(workloads, tmp_path, 4, 6, *extra)
    print(f"memory{extra}: {grown} bytes over {switched} switches: {grown / switched:.3f} B/switch, "
          f"{samples:.0f} samples: {grown / samples:.1f} B/sample")
    assert switched > 50000, switched
    # 157 bytes per switch before; 0.04-0.14 now over 12 s (~110k switches
    # a second here), in the recording's first seconds (its stacks and
    # threads first seen, its samples' log): a step or two of the
    # allocator's 132 KiB, under 0.5 B/switch over 6 s's ~600k switches.
    # A leak of a byte a switch grows as much as the bound, at any length:
    # 6 s catch it as 12 did. What an hour may grow, 10 MiB, is the soak's
    # (below; a benchmark that make bench runs).
    assert grown / switched < 1, (grown, switched, err)


def test_soak(workloads, tmp_path):
    if not os.environ.get("EBPFPROF_SOAK"):
        cannot_run("a 10-minute benchmark: make soak (make bench runs it); the suite deselects it")
    # 10 minutes under make soak; 5 still hold the bound: 10 MiB an hour
    # is 0.83 MiB in 300 s, 6 of the allocator's 132 KiB steps
    seconds = int(os.environ.get("EBPFPROF_SOAK_SECONDS") or 600)
    assert seconds >= 300, f"EBPFPROF_SOAK_SECONDS={seconds}: 300 at least"
    grown, switched, samples, err = measure(workloads, tmp_path, 30, seconds)
    per_hour = grown * 3600 / seconds
    print(f"soak: {grown / 2**20:.2f} MiB in {seconds} s over {switched} switches, "
          f"{per_hour / 2**20:.1f} MiB/h, {grown / switched:.3f} B/switch, "
          f"{grown / samples:.1f} B/sample")
    # for docs/benchmarks.md (bench/report.py reads it)
    figures = conftest.ROOT / "build" / "bench" / "soak.json"
    figures.parent.mkdir(parents=True, exist_ok=True)
    figures.write_text(json.dumps({
        "date": time.strftime("%Y-%m-%d %H:%M %Z"), "seconds": seconds, "grown_bytes": grown,
        "switches": switched, "switches_per_s": switched / seconds, "mib_per_hour": per_hour / 2**20,
        "bytes_per_switch": grown / switched, "bytes_per_sample": grown / samples}))
    assert grown / switched < 2, (grown, switched, err)
    # issue 8: samples in a compact log (~6 bytes each); 22-26 MiB/h before
    assert per_hour / 2**20 <= 10, (per_hour, samples, err)
