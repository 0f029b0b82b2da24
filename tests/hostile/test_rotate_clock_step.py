"""Issue 18 item 8: --rotate named each period's files by local time. After a
DST fall-back or a clock step a name repeated: the rename replaced the older
period's file and --keep then deleted the newer one. Names are now in UTC
with a sequence number, and --keep deletes in the order files were written.

The wall clock is stepped for ebpfprof alone: an LD_PRELOAD shim makes
clock_gettime(CLOCK_REALTIME) (and time()) return one frozen instant, the
worst a clock can do: every period starts "at the same time"."""
import re
import subprocess

from conftest import EBPFPROF, cannot_run, need_bpf, require_interpreter

SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <time.h>
static int (*real)(clockid_t, struct timespec *);
int clock_gettime(clockid_t id, struct timespec *ts)
{
	if (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE) {
		ts->tv_sec = 1792888200;	/* 2026-10-25 00:30 UTC, 02:30 in Paris */
		ts->tv_nsec = 0;
		return 0;
	}
	if (!real)
		real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
	return real(id, ts);
}
time_t time(time_t *t)
{
	if (t)
		*t = 1792888200;
	return 1792888200;
}
"""


def build_shim(tmp_path):
    src = tmp_path / "frozen_clock.c"
    src.write_text(SHIM)
    lib = tmp_path / "frozen_clock.so"
    res = subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(lib), str(src), "-ldl"],
                         capture_output=True, text=True)
    if res.returncode:
        cannot_run(f"cannot build the clock shim: {res.stderr}")
    return lib


def test_periods_never_replace_each_other(workloads, tmp_path):
    need_bpf()
    interp = require_interpreter("debian-3.11")
    lib = build_shim(tmp_path)
    w = workloads(interp, "two_hot.py", seconds=30)
    out = tmp_path / "out"
    out.mkdir()
    res = subprocess.run([str(EBPFPROF), "--pid", str(w.pid), "--rotate", "1", "--keep", "3",
                          "-d", "4.6", "-o", str(out / "app.speedscope.json")],
                         capture_output=True, text=True, timeout=90,
                         env={"LD_PRELOAD": str(lib), "TZ": "Europe/Paris", "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    wrote = re.findall(r"period (\d+): .* wrote (\S+)", res.stderr)
    assert len(wrote) == 4, res.stderr		# cut at 1, 2, 3 and 4 s; the 5th at the end
    last = re.findall(r"wrote speedscope profile to (\S+)", res.stderr)
    written = [p for _, p in wrote] + last
    assert len(set(written)) == 5, f"names repeat: {written}"
    for name in written:
        assert re.search(r"-20261025-003000\.000Z-\d+\.speedscope\.json$", name), name
    # --keep 3: the three newest periods, each its own file
    assert sorted(p.name for p in out.iterdir()) == sorted(p.rsplit("/", 1)[1] for p in written[2:])
