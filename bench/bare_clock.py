"""The floor of a sample's cost: a cpu-clock perf event on a process at a
fixed period, with no handler and no buffer (no BPF program, no perf ring
buffer), so each tick costs the target the timer interrupt and perf's own
overflow path and nothing else. Runs until SIGINT or SIGTERM. With
--per-cpu, one event per CPU for every task instead, as ebpfprof's sampler
opens them (a timer ticking on each CPU whatever runs there).

usage: bare_clock.py PID HZ [--per-cpu]"""
import ctypes
import os
import signal
import struct
import sys

PERF_TYPE_SOFTWARE = 1
PERF_COUNT_SW_CPU_CLOCK = 0
SYS_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}
ATTR_SIZE = 112     # PERF_ATTR_SIZE_VER5


def open_clock(pid, hz, cpu=-1):
    """perf_event_open(cpu-clock, one sample per 1/hz s of the task's CPU time,
    or of the CPU's with pid -1)."""
    # type, size, config, sample_period, sample_type, read_format, flag bits (none:
    # enabled, not inherited), then zeros up to ATTR_SIZE
    head = struct.pack("=IIQQQQQ", PERF_TYPE_SOFTWARE, ATTR_SIZE, PERF_COUNT_SW_CPU_CLOCK,
                       10**9 // hz, 0, 0, 0)
    attr = ctypes.create_string_buffer(head + bytes(ATTR_SIZE - len(head)), ATTR_SIZE)
    libc = ctypes.CDLL(None, use_errno=True)
    nr = SYS_PERF_EVENT_OPEN.get(os.uname().machine)
    if nr is None:
        sys.exit(f"bare_clock: no perf_event_open number for {os.uname().machine}")
    fd = libc.syscall(nr, attr, pid, cpu, -1, 0)
    if fd < 0:
        sys.exit(f"bare_clock: perf_event_open: {os.strerror(ctypes.get_errno())}")
    return fd


def main():
    if len(sys.argv) not in (3, 4) or sys.argv[3:] not in ([], ["--per-cpu"]):
        sys.exit(__doc__.split("\n\n")[-1])
    if sys.argv[3:]:
        fds = [open_clock(-1, int(sys.argv[2]), cpu) for cpu in sorted(os.sched_getaffinity(0))]
    else:
        fds = [open_clock(int(sys.argv[1]), int(sys.argv[2]))]
    # explicit handlers: a shell starts background jobs with SIGINT ignored
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: sys.exit(0))
    try:
        signal.pause()
    finally:
        for fd in fds:
            os.close(fd)


if __name__ == "__main__":
    main()
