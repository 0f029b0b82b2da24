"""Issue 28, item 8: a target that keeps rewriting its GIL's last holder (and
holds its switch number still) makes the GIL waits of every millisecond name
a holder never seen before. The blame kept for holders no sample names is
bounded (the first 4096 apart, the rest as "a holder not known", said once):
the recording ends on time with its profile, ebpfprof's memory stays flat,
and the spinners' GIL waits still add up to their blame."""
import subprocess
import time
from pathlib import Path

from conftest import EBPFPROF, Profile, cannot_run, peak_rss_kib, start_ready, with_peak_rss

HERE = Path(__file__).resolve().parent
DEBIAN_PYTHON = Path("/usr/bin/python3.11")
# 12 s: RSS read each second from the 5th to the 10th, flat within
# FLAT_KIB: a growth of 80 KiB a second fails it, as it failed the 20 s
# version's 1 MiB over its 13 seconds (measured: 68-184 KiB over the 5
# seconds; the same with the 4096 bound and the 5 s aging of unnamed
# holders both taken out, which the message said once catches).
SECONDS = 12
FLAT_KIB = 400
RSS_MAX_KIB = 256 * 1024


def rss_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return None


def ebpfprof_pid(time_pid):
    """The ebpfprof process GNU time started."""
    for _ in range(100):
        children = Path(f"/proc/{time_pid}/task/{time_pid}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.02)
    raise AssertionError("ebpfprof did not start")


def test_a_target_rewriting_its_gil_holder_costs_bounded_memory(tmp_path, out):
    if not DEBIAN_PYTHON.exists():
        cannot_run("Debian's python3.11 (it exports _PyRuntime) is not installed")
    lib = tmp_path / "libscribbler.so"
    subprocess.run(["gcc", "-O1", "-fPIC", "-shared", "-pthread", str(HERE / "gil_scribbler.c"), "-o", str(lib)],
                   check=True)
    target = start_ready([DEBIAN_PYTHON, HERE / "target_gil_scribbler.py", lib])
    path, peak = out(), tmp_path / "peak.txt"
    try:
        t0 = time.monotonic()
        rec = subprocess.Popen(with_peak_rss([EBPFPROF, "--pid", target.pid, "-d", SECONDS, "-o", path], peak),
                               stderr=subprocess.PIPE, text=True)
        pid, rss = ebpfprof_pid(rec.pid), {}
        while rec.poll() is None:
            at = round(time.monotonic() - t0)
            if 5 <= at <= SECONDS - 2:
                rss[at] = rss_kib(pid) or rss.get(at)
            time.sleep(1)
        err = rec.stderr.read()
        took = time.monotonic() - t0
    finally:
        target.kill()
        target.wait()
    assert rec.returncode == 0, err
    assert took <= SECONDS + 5, f"the recording took {took:.1f} s"
    assert peak_rss_kib(peak) < RSS_MAX_KIB
    # more holders than the bound were seen: the rest are said to be unknown, once
    assert err.count("behind PyThreadStates past the first 4096 never seen in a sample") == 1, err
    # flat from the fifth second on: a holder a millisecond kept for the
    # whole recording
    values = [v for v in rss.values() if v]
    print(f"RSS by second: {rss}")
    assert len(values) >= SECONDS - 8 and max(values) - values[0] < FLAT_KIB, rss
    for t in Profile(path).doc["ebpfprof"]["threads"]:
        if t["name"].startswith("spinner-"):
            blamed = sum(t["gil_wait_by_holder"].values()) + t["gil_wait_unattributed_s"]
            assert abs(blamed - t["states_s"]["gil-wait"]) <= 0.05, t
            assert t["gil_wait_unattributed_s"] > 1.0, t    # the scribbler's holders
